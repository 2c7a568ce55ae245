"""Times the `context` tool through the official Python MCP SDK (PyPI `mcp`), for the benchmark
in crates/zblade-cli/benches/mcp.rs: one `zblade mcp` over stdio, each query once to warm up,
then each query timed. Prints the latencies in milliseconds as one JSON list.

usage: bench_context.py ZBLADE PROJECT QUERIES.json
"""

import json
import sys
import time

import anyio
from mcp import Client, StdioServerParameters


async def main(zblade, project, queries):
    params = StdioServerParameters(command=zblade, args=["--project", project, "mcp"])
    async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
        await client.call_tool("context", {"query": queries[0]})  # the model loads once
        timings = []
        for query in queries:
            started = time.perf_counter()
            result = await client.call_tool("context", {"query": query})
            timings.append((time.perf_counter() - started) * 1000.0)
            assert not result.is_error, result.content[0].text
    print(json.dumps(timings))


if __name__ == "__main__":
    zblade, project, queries_file = sys.argv[1:4]
    with open(queries_file) as f:
        queries = json.load(f)
    anyio.run(main, zblade, project, queries)
