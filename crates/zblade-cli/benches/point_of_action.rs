//! The decision at the point of action (issue 60), measured through the real `zblade` binary:
//! `zblade hook pre-tool` with Claude Code's `PreToolUse` event for a `Read` of 20 lines, on a
//! git repository whose history explains some lines (commits with a body) and not others
//! (subject only), after `zblade index`:
//! - a new process per call, as the agent runs it: with no warm engine (each process loads the
//!   tokenizer), with `zblade serve` running (the engine answers), and repeated within a session
//!   (the session's cache answers); target p95 ≤ 40 ms warm;
//! - how often it speaks: calls on explained lines told something, calls on unexplained lines
//!   told nothing (the gate).
//!
//! `cargo bench -p zblade-cli --bench point_of_action` writes the "point-of-action" section of
//! docs/BENCHMARKS.md (`ZBLADE_BENCH_ACTION_COMMITS` sets the history's length, default 400);
//! under `cargo test` a small smoke version runs and writes nothing.

#[path = "../../zblade-engine/benches/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Stats, full_run, write_section};
use serde_json::json;

const ZBLADE: &str = env!("CARGO_BIN_EXE_zblade");
/// Files in the repository, and lines in each.
const FILES: usize = 40;
const LINES: usize = 200;

fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(root)
        .args(["-c", "user.name=Bench", "-c", "user.email=bench@example.org"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn zblade(root: &Path, models: Option<&Path>, args: &[&str]) {
    let mut command = Command::new(ZBLADE);
    command
        .arg("--project")
        .arg(root)
        .args(args)
        .env("ZBLADE_NO_AUTO_SERVE", "1");
    if let Some(models) = models {
        command.env("ZBLADE_MODELS_DIR", models);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "zblade {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One `zblade hook pre-tool` process: how long it took and whether it said anything.
fn hook(root: &Path, session: &str, file: &Path, offset: usize) -> (Duration, bool) {
    let event = json!({
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": file, "offset": offset, "limit": 20},
    });
    let mut command = Command::new(ZBLADE);
    command
        .current_dir(root)
        .args(["hook", "pre-tool"])
        .env("ZBLADE_NO_AUTO_SERVE", "1");
    let (took, out) = common::warm::run_hook(&mut command, event.to_string().as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (took, !out.stdout.is_empty())
}

/// The models setup installs, when they are there (the index embeds commits and code).
fn installed_models() -> Option<PathBuf> {
    let dir = std::env::var_os("ZBLADE_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/zblade/models")))?;
    dir.join("all-minilm-l6-v2/model.onnx").exists().then_some(dir)
}

fn main() {
    let full = full_run();
    let commits: usize = std::env::var("ZBLADE_BENCH_ACTION_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 400 } else { 12 });
    let calls = if full { 100 } else { 6 };
    let models = installed_models();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    let file = |f: usize| root.join(format!("src/m{f}.rs"));
    std::fs::create_dir_all(root.join("src")).unwrap();
    let mut texts: Vec<Vec<String>> = (0..FILES)
        .map(|f| (0..LINES).map(|l| format!("fn m{f}_l{l}() {{}}")).collect())
        .collect();
    let write = |texts: &Vec<Vec<String>>| {
        for (f, lines) in texts.iter().enumerate() {
            std::fs::write(file(f), lines.join("\n") + "\n").unwrap();
        }
    };
    write(&texts);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "initial import"]);
    // Each commit rewrites 3 lines of one file; even commits explain themselves, odd ones give a
    // subject only. Commit c touches file c % FILES, lines starting at (c / FILES) * 5.
    for c in 0..commits {
        let (f, at) = (c % FILES, (c / FILES * 5) % (LINES - 3));
        for (l, line) in texts[f].iter_mut().enumerate().skip(at).take(3) {
            *line = format!("fn m{f}_l{l}() {{ step_{c}(); }}");
        }
        write(&texts);
        let message = if c % 2 == 0 {
            format!(
                "fix: step {c} before the cache\n\nThe cache keeps stale entries when step {c} runs after it, so the order matters here."
            )
        } else {
            format!("chore: tidy {c}")
        };
        git(root, &["commit", "-qam", &message]);
    }
    zblade(root, models.as_deref(), &["init"]);
    let indexed = Instant::now();
    zblade(root, models.as_deref(), &["index"]);
    let index_took = indexed.elapsed();

    // Questions: lines an explaining commit wrote (even commits), and lines no commit since the
    // first touched (near the end of the last file).
    let explained: Vec<(PathBuf, usize)> = (0..commits)
        .step_by(2)
        .map(|c| (file(c % FILES), (c / FILES * 5) % (LINES - 3) + 1))
        .collect();
    let quiet = (file(FILES - 1), LINES - 30);
    let mut cold = Vec::new();
    let mut told = 0;
    for i in 0..calls {
        let (f, at) = &explained[i % explained.len()];
        let (took, said) = hook(root, &format!("cold{i}"), f, *at);
        cold.push(took);
        told += usize::from(said);
    }
    let (_, quiet_said) = hook(root, "quiet", &quiet.0, quiet.1);

    // The warm engine, as the prompt hook starts it.
    let mut serve = Command::new(ZBLADE);
    serve
        .arg("--project")
        .arg(root)
        .arg("serve")
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    if let Some(models) = &models {
        serve.env("ZBLADE_MODELS_DIR", models);
    }
    let mut server = serve.spawn().unwrap();
    let mut ready = String::new();
    let mut lines = BufReader::new(server.stderr.take().unwrap());
    while !ready.contains("serving on") {
        ready.clear();
        if lines.read_line(&mut ready).unwrap() == 0 {
            panic!("zblade serve stopped before serving");
        }
    }
    let mut warm = Vec::new();
    let mut cached = Vec::new();
    for i in 0..calls {
        let (f, at) = &explained[i % explained.len()];
        warm.push(hook(root, &format!("warm{i}"), f, *at).0);
        cached.push(hook(root, &format!("warm{i}"), f, *at).0);
    }
    let _ = server.kill();
    let _ = server.wait();

    // The floor: starting the same executable and doing nothing (`--version`), as many times.
    let mut start = Vec::new();
    for _ in 0..calls {
        let started = Instant::now();
        let out = Command::new(ZBLADE).arg("--version").output().unwrap();
        assert!(out.status.success());
        start.push(started.elapsed());
    }

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (cold, warm, cached) = (Stats::of(&mut cold), Stats::of(&mut warm), Stats::of(&mut cached));
    let start = Stats::of(&mut start);
    let size_mb = std::fs::metadata(ZBLADE).map_or(0.0, |m| m.len() as f64 / 1e6);
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let body = format!(
        "Repository: {FILES} files of {LINES} lines, {commits} commits of 3 lines each (half with a body that \
         explains, half a subject only), indexed by `zblade index` in {:.1} s{}. {calls} `Read` calls of 20 lines \
         each way, a new `zblade hook pre-tool` process per call ({profile} build).\n\n\
         | measure | p50 | p95 | target |\n|---|---|---|---|\n\
         | no warm engine (the process loads the tokenizer) | {:.0} ms | {:.0} ms | — |\n\
         | `zblade serve` running (the engine answers) | {:.0} ms | {:.0} ms | p95 ≤ 40 ms |\n\
         | the same lines again in the session (its cache) | {:.0} ms | {:.0} ms | — |\n\
         | baseline: the same executable started to do nothing (`zblade --version`, {size_mb:.0} MB) | {:.0} ms | {:.0} ms | — |\n\n\
         Calls on explained lines told something: {told} of {calls}; a call on lines no commit body or memory \
         explains told {}.\n",
        index_took.as_secs_f64(),
        if models.is_some() {
            " (with the embedding model)"
        } else {
            " (no embedding model installed)"
        },
        ms(cold.p50),
        ms(cold.p95),
        ms(warm.p50),
        ms(warm.p95),
        ms(cached.p50),
        ms(cached.p95),
        ms(start.p50),
        ms(start.p95),
        if quiet_said { "something" } else { "nothing" },
    );
    println!("{body}");
    assert_eq!(told, calls, "a call on explained lines was told nothing");
    assert!(!quiet_said, "a call on unexplained lines was told something");
    if full {
        write_section(
            "point-of-action",
            "The decision at the point of action",
            "point_of_action",
            &body,
        );
    }
}
