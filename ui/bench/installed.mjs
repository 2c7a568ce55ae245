// The installed packages' benchmark (issue 47): the release binaries as `apt install` put them
// in /usr/bin, run as a user would, with the package's models and ONNX Runtime:
//   1. the app's cold start: process spawn → first view rendered and interactive (the UI calls
//      `ui_ready` after its first paint; ZBLADE_STARTUP_REPORT makes the app write the time);
//   2. its idle memory in the tray (`--hidden`, project open and watched), 20 s after start and
//      again after the default model release period (search.release_models_after_minutes, 5),
//      then what the first `zblade context` after the release costs (the app's warm engine
//      loads the models again) against the next one;
//   3. `zblade context QUERY` on a project of 2,000 conversations (12 messages each, embedded by
//      `zblade index` with the package's model), a new process per query and no warm engine —
//      what an agent's hook pays when nothing runs.
//
// Usage (scripts/package.sh --bench runs it after installing the packages):
//   node ui/bench/installed.mjs [--write]     (ZBLADE_APP / ZBLADE override /usr/bin/…)
// With --write it rewrites the "installed" section of docs/BENCHMARKS.md.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { coldStarts, fmt, idleMemory, machine, mb, quantile, rng, startDisplay, vocabulary, writeSection } from "./common.mjs";

const app = process.env.ZBLADE_APP ?? "/usr/bin/zblade-app";
// The package measured (scripts/package.sh --bench names it): its size is reported too.
const deb = process.env.ZBLADE_PACKAGE_DEB;
const cli = process.env.ZBLADE ?? "/usr/bin/zblade";
const write = process.argv.includes("--write");
const CONVERSATIONS = 2_000;
const PER_CONVERSATION = 12;
const STARTS = 7;
const QUERIES = 40;
// The default search.release_models_after_minutes, and the app's check interval (15 s) after it.
const RELEASE_MS = 5 * 60_000 + 30_000;
const repo = new URL("../..", import.meta.url).pathname;
const children = new Set();
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

const work = mkdtempSync(join(tmpdir(), "zblade-bench-installed-"));
// A user's environment with nothing of the developer's: an empty HOME (no models or Python
// environment in its cache), the app's settings as after the wizard.
const env = { PATH: "/usr/bin:/bin", HOME: join(work, "home"), LANG: "C.UTF-8", ZBLADE_CONFIG_DIR: join(work, "config") };

function buildProject(root) {
  const random = rng(47);
  const { vocab, word } = vocabulary(random);
  const text = (min, max) => {
    const target = min + Math.floor(random() * (max - min));
    const parts = [];
    for (let length = 0; length < target; ) {
      const w = word();
      parts.push(w);
      length += w.length + 1;
    }
    return parts.join(" ");
  };
  mkdirSync(root, { recursive: true });
  execFileSync("git", ["init", "-q"], { cwd: root });
  execFileSync(cli, ["init", "--project", root], { stdio: "ignore", env });
  const staging = join(work, "json");
  mkdirSync(staging);
  // `zblade add` embeds what it adds; `zblade index` then finds little left to do.
  const addStarted = performance.now();
  for (let first = 0; first < CONVERSATIONS; first += 100) {
    const files = [];
    for (let c = first; c < first + 100; c++) {
      const messages = Array.from({ length: PER_CONVERSATION }, (_, m) => ({
        role: m % 2 === 0 ? "user" : "assistant",
        content: m % 2 === 0 ? text(40, 300) : text(150, 900),
      }));
      const file = join(staging, `c${c}.json`);
      writeFileSync(file, JSON.stringify({ title: text(10, 40), messages }));
      files.push(file);
    }
    execFileSync(cli, ["add", "conversation", "--project", root, ...files], { stdio: "ignore", env });
  }
  rmSync(staging, { recursive: true, force: true });
  const indexStarted = performance.now();
  execFileSync(cli, ["index", "--project", root], { stdio: "ignore", env });
  const indexSeconds = (performance.now() - indexStarted) / 1000;
  const addSeconds = (indexStarted - addStarted) / 1000;
  const status = JSON.parse(execFileSync(cli, ["status", "--json", "--project", root], { encoding: "utf8", env }));
  const queries = Array.from({ length: QUERIES }, () => {
    const n = 2 + Math.floor(random() * 4);
    return Array.from({ length: n }, () => vocab[50 + Math.floor(random() ** 2 * 3000)]).join(" ");
  });
  return { status, queries, indexSeconds, addSeconds };
}

// Each query in a new process with no warm engine: the times, and the packs.
function contextLatency(project, queries) {
  spawnSync(cli, ["context", "--project", project, "warm the page cache"], { env, stdio: "ignore" });
  const packs = [];
  const times = queries.map((query) => {
    const started = performance.now();
    const run = spawnSync(cli, ["context", "--project", project, query], { env, encoding: "utf8" });
    const elapsed = performance.now() - started;
    if (run.status !== 0 || !run.stdout.trim()) throw new Error(`zblade context "${query}" failed: ${run.stderr}`);
    packs.push(run.stdout);
    return elapsed;
  });
  return { times, packs };
}

// How many of the cold packs the warm engine (`zblade serve`) packs the same: a cold process
// may not take a shortcut that changes the answer.
async function samePacksWarm(project, queries, coldPacks, children) {
  const serve = spawn(cli, ["--project", project, "serve"], { env, stdio: ["ignore", "ignore", "pipe"] });
  children.add(serve);
  await new Promise((resolve, reject) => {
    let seen = "";
    serve.stderr.on("data", (chunk) => {
      seen += chunk;
      if (seen.includes("serving")) resolve();
    });
    serve.on("exit", () => reject(new Error(`zblade serve ended: ${seen}`)));
  });
  let same = 0;
  queries.forEach((query, i) => {
    const run = spawnSync(cli, ["context", "--project", project, query], { env, encoding: "utf8" });
    if (run.status !== 0) throw new Error(`zblade context "${query}" (warm) failed: ${run.stderr}`);
    if (run.stdout === coldPacks[i]) same += 1;
    else process.stderr.write(`bench-installed: the warm pack of "${query}" differs from the cold one\n`);
  });
  const ended = new Promise((resolve) => serve.once("exit", resolve));
  serve.kill();
  await ended;
  children.delete(serve);
  return same;
}

try {
  mkdirSync(env.HOME, { recursive: true });
  const project = join(work, "project");
  process.stderr.write(`bench-installed: ${CONVERSATIONS} conversations, added and indexed by ${cli} …\n`);
  const { status, queries, indexSeconds, addSeconds } = buildProject(project);
  mkdirSync(env.ZBLADE_CONFIG_DIR, { recursive: true });
  writeFileSync(
    join(env.ZBLADE_CONFIG_DIR, "app.json"),
    JSON.stringify({ wizard_completed: true, storage_mode: "local", allow_network: false, indexer_paused: false,
      recent_projects: [{ path: project, name: "bench", opened_at: new Date().toISOString() }] }),
  );
  process.stderr.write("bench-installed: zblade context …\n");
  const { times: context, packs: coldPacks } = contextLatency(project, queries);
  process.stderr.write("bench-installed: the same prompts through the warm engine …\n");
  const samePacks = await samePacksWarm(project, queries, coldPacks, children);
  const display = await startDisplay(children);
  process.stderr.write("bench-installed: the app's cold start …\n");
  const { wall: starts } = await coldStarts({ app, project, env: { ...env, DISPLAY: display }, runs: STARTS, work, children });
  process.stderr.write("bench-installed: idle memory …\n");
  process.stderr.write(`bench-installed: … and after ${RELEASE_MS / 1000} s idle …\n`);
  const timedContext = (query) => {
    const started = performance.now();
    const run = spawnSync(cli, ["context", "--project", project, query], { env, encoding: "utf8" });
    if (run.status !== 0) throw new Error(`zblade context failed: ${run.stderr}`);
    return performance.now() - started;
  };
  const idle = await idleMemory({
    app, project, env: { ...env, DISPLAY: display }, settleMs: 20_000, children, releaseMs: RELEASE_MS,
    afterRelease: () => ({ first: timedContext(queries[0]), next: timedContext(queries[1]) }),
  });

  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: repo, encoding: "utf8" }).trim();
  const now = new Date().toISOString().slice(0, 16).replace("T", " ");
  const version = execFileSync(cli, ["--version"], { encoding: "utf8", env }).trim();
  const report = `## Installed packages: the app's start and memory, \`zblade context\` from /usr/bin

\`scripts/package.sh --bench\` — ${now} UTC, commit ${commit}, ${machine()}; ${version} installed from its Debian package (release build), run with an empty HOME: the package's models (\`${status.embedding_model}\`, \`${status.code_model}\`) and ONNX Runtime.

Project: ${status.indexed.messages} messages in ${status.indexed.conversations} generated conversations, added and embedded by the installed \`zblade add\` in ${fmt(addSeconds)} s (${fmt(status.indexed.messages / addSeconds)} messages/s), then \`zblade index\` in ${fmt(indexSeconds)} s. The debug build's figures are in "Desktop app" and "MCP server and the prompt hook" above.

| measure | installed (release) | target |
|---|---|---|
${deb ? `| \`${deb.split("/").pop()}\`: the package file | ${(statSync(deb).size / 1e6).toFixed(1)} MB | ≤ 120 MB |\n` : ""}| \`zblade-app\` cold start: spawn → first view rendered and interactive, p50 / max of ${STARTS} | ${fmt(quantile(starts, 0.5))} / ${fmt(Math.max(...starts))} ms | ≤ 1000 ms |
| \`zblade-app --hidden\` idle in the tray, project open and watched, 20 s after start | RSS ${mb(idle.ownRss)} MB (${mb(idle.ownAnon)} MB allocated) | – |
| … after ${RELEASE_MS / 1000} s idle (models let go after \`search.release_models_after_minutes\`, 5) | RSS ${mb(idle.released.ownRss)} MB (${mb(idle.released.ownAnon)} MB allocated) | ≤ 150 MB (≤ 40 MB allocated) |
| … then \`zblade context\` answered by the app's warm engine: the first (models loaded again) / the next | ${fmt(idle.reload.first)} / ${fmt(idle.reload.next)} ms | – |
| \`zblade context QUERY\`, a new process per query, no warm engine: p50 / p95 / max of ${QUERIES} | ${fmt(quantile(context, 0.5))} / ${fmt(quantile(context, 0.95))} / ${fmt(Math.max(...context))} ms | p95 ≤ 150 ms |
| … its packs, equal to the warm engine's (\`zblade serve\`) for the same prompts | ${samePacks} of ${QUERIES} | all |
`;
  console.log(report);
  if (write) writeSection("installed", report);
} finally {
  children.forEach((c) => c.kill("SIGKILL"));
  rmSync(work, { recursive: true, force: true });
}
