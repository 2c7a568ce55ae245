//! How fast each JSON Lines reader turns its agent's store into sessions, beside a bare
//! `serde_json` parse of the same lines — the part of an import that differs between agents.
//!
//! Each agent's published fixture (the files tests/agents.rs checks against PROVENANCE.md) is
//! grown to about 32 MB by repeating its records after the first line (kept once: several
//! stores open with a header). The rest of an import — redaction, anchoring, the index — is the
//! same code for every agent and is measured by the engine's `import` benchmark (Claude Code's
//! store). `cargo bench -p zblade-import --bench readers` writes the `import-readers` section of
//! docs/BENCHMARKS.md; under `cargo test` it grows each store to 256 kB and writes nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use zblade_import::{Cursor, Source, read_file};

#[path = "../../zblade-engine/benches/common/report.rs"]
mod report;

/// Each JSON Lines reader with the fixture it is measured on and the file name its store uses
/// (some readers take the session id from the name or the folder).
const STORES: &[(&str, &str, &str)] = &[
    (
        "claude-code",
        "claude/0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl",
        "0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl",
    ),
    (
        "codex",
        "codex/rollout-2025-10-01T09-15-00-01999a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
        "rollout-2025-10-01T09-15-00-01999a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
    ),
    ("cursor", "agents/cursor/large.jsonl", "large.jsonl"),
    (
        "gemini-cli",
        "agents/gemini/jsonl_v040.jsonl",
        "session-2025-01-01T00-00-abcd1234.jsonl",
    ),
    (
        "copilot",
        "agents/copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl",
        "aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl",
    ),
    ("kimi-code", "agents/kimi-code/assistant_tools.jsonl", "context.jsonl"),
    ("pi", "agents/pi/small.jsonl", "2025-01-01T00-00-00-000Z_small.jsonl"),
    ("openclaw", "agents/openclaw/large.jsonl", "large.jsonl"),
    (
        "droid",
        "agents/droid/session_store_large.jsonl",
        "session_store_large.jsonl",
    ),
    ("grok", "agents/grok/chat_history.jsonl", "chat_history.jsonl"),
    ("antigravity", "agents/antigravity/cli_small.jsonl", "cli_small.jsonl"),
];

struct Measured {
    agent: &'static str,
    megabytes: f64,
    messages: usize,
    reader: Duration,
    bare: Duration,
    warnings: usize,
}

/// Writes the fixture's first line once and its other lines again and again up to `target` bytes.
fn grow(fixture: &Path, to: &Path, target: usize) -> usize {
    let text = std::fs::read_to_string(fixture).unwrap();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let head = lines.next().unwrap_or_default();
    let body: Vec<&str> = lines.collect();
    let mut out = String::with_capacity(target + 64 * 1024);
    out.push_str(head);
    out.push('\n');
    while out.len() < target {
        for line in &body {
            out.push_str(line);
            out.push('\n');
        }
        if body.is_empty() {
            break;
        }
    }
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(to, &out).unwrap();
    out.len()
}

/// Reading every line into a `serde_json::Value`: the least any JSON Lines reader must do.
fn bare_parse(path: &Path) -> Duration {
    let text = std::fs::read_to_string(path).unwrap();
    let started = Instant::now();
    let mut values = 0usize;
    for line in text.lines() {
        if serde_json::from_str::<serde_json::Value>(line).is_ok() {
            values += 1;
        }
    }
    assert!(values > 0);
    started.elapsed()
}

/// The best of `rounds` runs, so a busy moment on a shared machine does not decide the figure.
fn best(rounds: usize, mut run: impl FnMut() -> Duration) -> Duration {
    (0..rounds).map(|_| run()).min().unwrap()
}

fn measure(agent: &'static str, fixture: &str, name: &str, target: usize, dir: &Path) -> Measured {
    let source = Source::parse(agent).unwrap_or_else(|| panic!("{agent} is not registered"));
    let path = dir.join(agent).join(name);
    let bytes = grow(
        &report::manifest_dir().join("tests/fixtures").join(fixture),
        &path,
        target,
    );
    let rounds = if report::full_run() { 3 } else { 1 };
    let mut messages = 0;
    let mut warnings = 0;
    let reader = best(rounds, || {
        let started = Instant::now();
        let mut cursor = Cursor::default();
        let mut count = 0;
        warnings = 0;
        loop {
            let read = read_file(source, &path, &cursor).unwrap_or_else(|e| panic!("{agent}: {e}"));
            count += read.sessions.iter().map(|s| s.turns.len()).sum::<usize>();
            warnings += read.warnings.len();
            cursor = read.cursor;
            if !read.more {
                break;
            }
        }
        messages = count;
        started.elapsed()
    });
    let bare = best(rounds, || bare_parse(&path));
    assert!(messages > 0, "{agent}: no messages read from the grown store");
    Measured {
        agent,
        megabytes: bytes as f64 / 1e6,
        messages,
        reader,
        bare,
        warnings,
    }
}

fn main() {
    let full = report::full_run();
    let target = if full { 32_000_000 } else { 256 * 1024 };
    let dir = tempfile::tempdir().unwrap();
    let measured: Vec<Measured> = STORES
        .iter()
        .map(|(agent, fixture, name)| measure(agent, fixture, name, target, dir.path()))
        .collect();
    let mut body = String::from(
        "Each agent's published fixture grown to about 32 MB by repeating its records, read with \
         `read_file` from the start to the end (best of 3), beside `serde_json::Value` parsing \
         of the same lines. The rest of an import is the same code for every agent: see the \
         `import` section (Claude Code's store through `Project::import`).\n\n\
         | agent | store | messages | reader | bare JSON parse | reader / parse |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for m in &measured {
        let rate = |d: Duration| m.megabytes / d.as_secs_f64();
        body.push_str(&format!(
            "| {} | {:.1} MB | {} | {:.0} MB/s | {:.0} MB/s | {:.2} |\n",
            m.agent,
            m.megabytes,
            m.messages,
            rate(m.reader),
            rate(m.bare),
            m.bare.as_secs_f64() / m.reader.as_secs_f64(),
        ));
        eprintln!(
            "{}: {:.1} MB, {} messages, reader {:.0} MB/s, parse {:.0} MB/s, {} warnings",
            m.agent,
            m.megabytes,
            m.messages,
            rate(m.reader),
            rate(m.bare),
            m.warnings
        );
    }
    let slowest = measured
        .iter()
        .map(|m| m.megabytes / m.reader.as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    body.push_str(&format!(
        "\nSlowest reader: **{slowest:.0} MB/s** (the JSON Lines target for a whole import is ≥ 50 MB/s; \
         the reader is one stage of it, on its own thread).\n\n"
    ));
    if full {
        report::write_section("import-readers", "Each agent's reader", "readers", &body);
    }
}
