//! Import throughput and live-follow latency (issue "Capture"). Generates realistic Claude Code
//! sessions from the format (prompts, split assistant responses, Read results with file
//! content, Bash output, edits, an occasional huge tool output), then measures:
//! - MB/s through `Project::import` (parse, redaction, anchoring against git, artifacts, index,
//!   moments) next to a bare `serde_json` parse of the same lines in the same run — target
//!   ratio ≥ 0.3, with the CPU time the import used on all its threads, and the same import
//!   into a project on tmpfs (what the file system adds apart); embedding the imported
//!   messages is timed separately;
//! - live follow: a line appended to a followed session → found by search, p95 ≤ 2 s;
//! - Cursor's editor database (`state.vscdb`, ~1 GB in a full run, `ZBLADE_BENCH_CURSOR_MB`):
//!   MB/s through `Project::import` beside a bare scan of its values, and peak resident memory.
//!
//! `cargo bench --workspace --bench import` writes the "import" and "import-cursor" sections of
//! docs/BENCHMARKS.md (`ZBLADE_BENCH_IMPORT_MB` sets the size, default 500;
//! `ZBLADE_BENCH_IMPORT_ONLY=cursor` runs the Cursor part alone); under `cargo test` it runs a
//! 2 MB smoke test and writes nothing.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::text::TextGen;
use common::{Stats, full_run, write_section};
use zblade_engine::{
    AgentPlaces, ImportRequest, ImportSource, Project, SearchKind, SearchMode, SearchQuery, WatchEvent, WatchOptions,
};

const FILES: &[&str] = &["src/auth.rs", "src/server.rs", "src/cache.rs", "src/db.rs"];

fn git(root: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// A git project with a few source files the sessions read and edit.
fn project_root(dir: &Path) -> PathBuf {
    let root = dir.join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    for (i, file) in FILES.iter().enumerate() {
        let text: String = (1..=300)
            .map(|n| format!("    let v{n} = step_{i}_{n}(input);\n"))
            .collect();
        std::fs::write(root.join(file), text).unwrap();
    }
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "initial"]);
    root.canonicalize().unwrap()
}

/// Writes Claude Code sessions totalling about `target` bytes; returns (files, bytes, lines).
fn generate(store: &Path, root: &Path, target: u64, text: &mut TextGen) -> (usize, u64, Vec<Vec<u8>>) {
    let mut written = 0u64;
    let mut files = 0;
    let mut sample = Vec::new();
    while written < target {
        let sid = format!("00000000-0000-4000-8000-{files:012}");
        let path = store.join(format!("{sid}.jsonl"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut line = |value: serde_json::Value, out: &mut std::io::BufWriter<std::fs::File>| {
            let bytes = serde_json::to_vec(&value).unwrap();
            written += bytes.len() as u64 + 1;
            if sample.len() < 2000 {
                sample.push(bytes.clone());
            }
            out.write_all(&bytes).unwrap();
            out.write_all(b"\n").unwrap();
        };
        let envelope = |kind: &str, uuid: String, minute: usize| {
            serde_json::json!({
                "type": kind, "uuid": uuid, "sessionId": sid, "cwd": root, "version": "2.1.14",
                "gitBranch": "main", "userType": "external", "isSidechain": false,
                "timestamp": format!("2025-09-{:02}T{:02}:{:02}:00.000Z", 1 + files % 28, minute / 60 % 24, minute % 60),
            })
        };
        for turn in 0..40 {
            let mut user = envelope("user", format!("u{turn}"), turn * 2);
            user["message"] = serde_json::json!({"role": "user", "content": text.text(80, 400)});
            line(user, &mut out);
            // A response split over lines: text, then a tool call.
            let file = FILES[turn % FILES.len()];
            let mut a = envelope("assistant", format!("a{turn}"), turn * 2);
            a["message"] = serde_json::json!({"id": format!("msg_{turn}"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text.text(200, 900)}]});
            line(a, &mut out);
            let mut call = envelope("assistant", format!("c{turn}"), turn * 2);
            let (name, input) = if turn % 3 == 2 {
                (
                    "Edit",
                    serde_json::json!({"file_path": root.join(file), "old_string": "x", "new_string": format!("    let v{} = step_{}_{}(input);", 10 + turn, turn % FILES.len(), 10 + turn)}),
                )
            } else if turn % 3 == 1 {
                ("Bash", serde_json::json!({"command": "cargo test"}))
            } else {
                ("Read", serde_json::json!({"file_path": root.join(file)}))
            };
            call["message"] = serde_json::json!({"id": format!("msg_{turn}"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": format!("toolu_{turn}"), "name": name, "input": input}]});
            line(call, &mut out);
            // The result: file content for reads, build output, and now and then a huge one.
            let body = match name {
                "Read" => std::fs::read_to_string(root.join(file)).unwrap(),
                // One session in ten has a runaway output (a log dumped to the terminal).
                _ if turn == 7 && files % 10 == 0 => "x".repeat(2_000_000),
                _ => (0..60).map(|_| text.text(40, 120)).collect::<Vec<_>>().join("\n"),
            };
            let mut result = envelope("user", format!("r{turn}"), turn * 2 + 1);
            result["message"] = serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{turn}"), "content": body}]});
            if name == "Read" {
                result["toolUseResult"] = serde_json::json!({"type": "text", "file": {"filePath": root.join(file), "content": body, "startLine": 1, "numLines": 300, "totalLines": 300}});
            }
            line(result, &mut out);
            line(
                serde_json::json!({"type": "progress", "data": {"type": "hook_progress"}}),
                &mut out,
            );
        }
        out.flush().unwrap();
        files += 1;
    }
    (files, written, sample)
}

/// The same bytes through a bare serde_json parse of each line, as the baseline.
fn bare_parse(store: &Path) -> Duration {
    let started = Instant::now();
    for entry in std::fs::read_dir(store).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let value: serde_json::Value = serde_json::from_slice(line).unwrap();
            std::hint::black_box(value);
        }
    }
    started.elapsed()
}

fn places(home: &Path) -> AgentPlaces {
    AgentPlaces::at_home(home)
}

fn main() {
    let full = full_run();
    // `ZBLADE_BENCH_IMPORT_ONLY=cursor` measures (and rewrites) the Cursor section alone.
    if std::env::var("ZBLADE_BENCH_IMPORT_ONLY").as_deref() == Ok("cursor") {
        cursor_database(full, &mut TextGen::new(21));
        return;
    }
    let mb: u64 = std::env::var("ZBLADE_BENCH_IMPORT_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 500 } else { 2 });
    let dir = tempfile::tempdir().unwrap();
    let root = project_root(dir.path());
    let home = dir.path().join("home");
    let store = home.join(".claude/projects/-project");
    std::fs::create_dir_all(&store).unwrap();
    let mut text = TextGen::new(21);
    let (files, bytes, _) = generate(&store, &root, mb * 1_000_000, &mut text);
    let megabytes = bytes as f64 / 1e6;
    eprintln!("generated {files} session files, {megabytes:.0} MB");

    // Page cache warm for both: read once before timing either.
    let _ = bare_parse(&store);
    let parse = bare_parse(&store);
    let (mut project, _) = Project::init(&root).unwrap();
    project.use_agent_places(places(&home));
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let report = project
        .import(&ImportRequest::new(ImportSource::CLAUDE_CODE), &mut |_, _, _| {})
        .unwrap();
    let import = started.elapsed();
    let import_cpu = cpu_seconds().zip(cpu_before).map(|(after, before)| after - before);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    // The same import into a project in memory (tmpfs), where creating files costs no disk
    // work: the import's own speed, apart from what this machine's file system adds.
    let in_memory = if full { import_in_memory(&mut text, bytes) } else { None };
    let parse_rate = megabytes / parse.as_secs_f64();
    let import_rate = megabytes / import.as_secs_f64();
    eprintln!(
        "bare parse {parse_rate:.1} MB/s, import {import_rate:.1} MB/s ({} messages; parse {} ms, anchor + store {} ms, moments {} ms)",
        report.messages, report.parse_ms, report.store_ms, report.moments_ms
    );

    // Embedding, reported separately: what `zblade index` then does for the new messages.
    // Skipped in an unoptimised build: tokenizing tens of thousands of messages there takes
    // longer than everything else together and says nothing about a real build.
    let embed = if zblade_search::embed::load_onnx_runtime().is_ok() && !cfg!(debug_assertions) {
        let started = Instant::now();
        match project.index_semantic(&mut |_, _| {}) {
            Ok(r) => Some((started.elapsed(), r.embedded)),
            Err(e) => {
                eprintln!("embedding skipped: {e}");
                None
            }
        }
    } else {
        None
    };

    // Live follow: append → searchable.
    let rounds = if full { 20 } else { 3 };
    let live = follow_latency(&root, &home, &store, rounds);
    let stats = Stats::of(&mut live.clone());
    eprintln!("live follow p50/p95/p99 {stats}");
    assert!(stats.p95 < Duration::from_secs(2) || !full, "live follow p95 {stats}");
    common::sane("import / bare parse ratio", import_rate / parse_rate);
    cursor_database(full, &mut text);

    if full {
        let ratio = import_rate / parse_rate;
        let embed_line = match embed {
            Some((time, n)) => format!(
                "| embedding the imported messages (`zblade index`, local all-MiniLM-L6-v2, separate) | {n} chunks in {:.1} s |\n",
                time.as_secs_f64()
            ),
            None => "| embedding (separate) | not measured in this run (no ONNX Runtime, or an unoptimised build) |\n"
                .to_string(),
        };
        let cpu_line = match import_cpu {
            Some(cpu) => format!(
                "| CPU time of the import, all threads (2 cores: at best half of it is wall time) | {cpu:.1} s = {:.1}× the bare parse |\n",
                cpu / parse.as_secs_f64()
            ),
            None => String::new(),
        };
        let memory_line = match in_memory {
            Some((parse_rate, import_rate)) => format!(
                "| the same import into a project on tmpfs (`/dev/shm`, no disk work): bare parse / import / ratio | {parse_rate:.1} MB/s / {import_rate:.1} MB/s / **{:.2}** |\n",
                import_rate / parse_rate
            ),
            None => "| the same import into a project on tmpfs | not measured (no `/dev/shm`) |\n".to_string(),
        };
        let body = format!(
            "{files} generated Claude Code sessions, {megabytes:.0} MB of JSON Lines ({} messages, {} tool results — file reads, build output, a 2 MB output in one session of ten — and {} references anchored against git).\n\n\
             | measure | result |\n|---|---|\n\
             | bare `serde_json` parse of every line (baseline) | {parse_rate:.1} MB/s ({:.1} s) |\n\
             | `Project::import` (parse, redact, anchor, artifacts, index, moments) | {import_rate:.1} MB/s ({:.1} s) |\n\
             | **ratio import / bare parse** (target ≥ 0.3) | **{ratio:.2}** |\n\
             {cpu_line}\
             {memory_line}\
             {embed_line}\
             | live follow: append → searchable, p50 / p95 / p99 over {rounds} appends (target p95 ≤ 2 s) | {stats} |\n\n\
             Import time split: parse {} ms (on a reader thread, beside the store), anchor + store {} ms, moments {} ms (extracted on a third thread as conversations are stored; this is the writing after the last one).\n",
            report.messages,
            files * 40,
            report.references,
            parse.as_secs_f64(),
            import.as_secs_f64(),
            report.parse_ms,
            report.store_ms,
            report.moments_ms,
        );
        let body = if cfg!(debug_assertions) {
            format!(
                "{body}\nThis run is an unoptimised build (`--profile dev`): the ratio target is for `cargo bench` \
                 (release), where our code and `serde_json` both speed up by different factors, so this ratio \
                 does not predict that one.\n"
            )
        } else {
            body
        };
        write_section("import", "Import of agent sessions and live follow", "import", &body);
    }
}

/// CPU time this process has used (user + system, all threads), from `/proc/self/stat`;
/// `None` where there is no such file.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (in parentheses, which may hold spaces): utime is the
    // 14th field of the line, stime the 15th, in clock ticks (100 per second on Linux).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Generates sessions of about `bytes` again for a project under `/dev/shm` and imports
/// them there; returns (bare parse MB/s, import MB/s) of that run.
fn import_in_memory(text: &mut TextGen, bytes: u64) -> Option<(f64, f64)> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return None;
    }
    let dir = tempfile::tempdir_in(shm).ok()?;
    let root = project_root(dir.path());
    let home = dir.path().join("home");
    let store = home.join(".claude/projects/-project");
    std::fs::create_dir_all(&store).unwrap();
    let (_, written, _) = generate(&store, &root, bytes, text);
    let megabytes = written as f64 / 1e6;
    let _ = bare_parse(&store);
    let parse = bare_parse(&store);
    let (mut project, _) = Project::init(&root).unwrap();
    project.use_agent_places(places(&home));
    let started = Instant::now();
    let report = project
        .import(&ImportRequest::new(ImportSource::CLAUDE_CODE), &mut |_, _, _| {})
        .unwrap();
    let import = started.elapsed();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let rates = (megabytes / parse.as_secs_f64(), megabytes / import.as_secs_f64());
    eprintln!("in memory: bare parse {:.1} MB/s, import {:.1} MB/s", rates.0, rates.1);
    Some(rates)
}

/// Runs the watch loop with Claude Code followed, appends a prompt `rounds` times, and times
/// each from the write to the moment search finds it.
fn follow_latency(root: &Path, home: &Path, store: &Path, rounds: usize) -> Vec<Duration> {
    let path = store.join("live-session.jsonl");
    std::fs::write(&path, "").unwrap();
    follow_rounds(root, home, ImportSource::CLAUDE_CODE, rounds, |round, word| {
        let line = serde_json::json!({"type": "user", "uuid": format!("live{round}"), "sessionId": "live-session",
            "cwd": root, "timestamp": "2025-10-01T10:00:00.000Z",
            "message": {"role": "user", "content": format!("Remember the {word} plan")}});
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        writeln!(file, "{line}").unwrap();
    })
}

/// Follows `source` as the watcher (the tray, `zblade watch`) does; each round `write`s a turn
/// holding a new word the way the agent would, and the time until a search finds the word is
/// one sample.
fn follow_rounds(
    root: &Path,
    home: &Path,
    source: ImportSource,
    rounds: usize,
    mut write: impl FnMut(usize, &str),
) -> Vec<Duration> {
    let mut project = Project::open(root).unwrap();
    project.use_agent_places(places(home));
    project.set_source_enabled(source, true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || {
        project
            .watch(WatchOptions::default(), &flag, |event| {
                let _ = tx.send(event);
            })
            .unwrap();
    });
    while !matches!(rx.recv().unwrap(), WatchEvent::Ready { .. }) {}
    let mut reader = Project::open(root).unwrap();
    let mut samples = Vec::new();
    for round in 0..rounds {
        let word = format!("zebrafinch{round}");
        let written = Instant::now();
        write(round, &word);
        loop {
            let hits = reader
                .search(&SearchQuery::new(&word, 1, SearchKind::Messages).in_mode(Some(SearchMode::Keyword)))
                .unwrap();
            if !hits.hits.is_empty() {
                break;
            }
            assert!(written.elapsed() < Duration::from_secs(30), "never found {word}");
            std::thread::sleep(Duration::from_millis(10));
        }
        samples.push(written.elapsed());
        while rx.try_recv().is_ok() {}
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    samples
}

/// One new user bubble in the first chat of the generated Cursor folder, written as Cursor
/// does: the bubble, its header appended to the chat's record, the chat's head in the
/// workspace's list stamped with the time.
fn cursor_add_bubble(home: &Path, round: usize, word: &str) {
    let user = home.join(".config/Cursor/User");
    let global = rusqlite::Connection::open(user.join("globalStorage/state.vscdb")).unwrap();
    let chat = "00000000-0000-4000-8000-000000000000";
    let key = format!("composerData:{chat}");
    let data: Vec<u8> = global
        .query_row(
            "SELECT CAST(value AS BLOB) FROM cursorDiskKV WHERE key = ?1",
            [&key],
            |r| r.get(0),
        )
        .unwrap();
    let mut data: serde_json::Value = serde_json::from_slice(&data).unwrap();
    let bubble = format!("live-{round}");
    data["fullConversationHeadersOnly"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"bubbleId": bubble, "type": 1}));
    let now = chrono::Utc::now().timestamp_millis();
    data["lastUpdatedAt"] = now.into();
    global
        .execute(
            "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
            rusqlite::params![
                format!("bubbleId:{chat}:{bubble}"),
                serde_json::json!({"_v": 2, "type": 1, "bubbleId": bubble, "text": format!("Remember the {word} plan")}).to_string()
            ],
        )
        .unwrap();
    global
        .execute(
            "UPDATE cursorDiskKV SET value = ?1 WHERE key = ?2",
            rusqlite::params![data.to_string(), key],
        )
        .unwrap();
    let workspace =
        rusqlite::Connection::open(user.join("workspaceStorage/0f3e9a1c5b7d4e2f8a6c1b3d5e7f9a0b/state.vscdb")).unwrap();
    let list: String = workspace
        .query_row(
            "SELECT value FROM ItemTable WHERE key = 'composer.composerData'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut list: serde_json::Value = serde_json::from_str(&list).unwrap();
    list["allComposers"][0]["lastUpdatedAt"] = now.into();
    workspace
        .execute(
            "UPDATE ItemTable SET value = ?1 WHERE key = 'composer.composerData'",
            [list.to_string()],
        )
        .unwrap();
}

/// Writes a Cursor user folder under `home` whose global database holds about `target` bytes
/// of editor chats for the project at `root`, in the shapes Cursor writes: per chat a
/// `composerData` record (with the bulky `codeBlockData`/`originalModelLines` it keeps) and
/// ~100 bubbles (a user prompt with its attached context; assistant text, thinking, and tool
/// calls whose results hold file contents and terminal output), plus checkpoint rows zblade
/// does not read. Returns (chats, bubbles, database bytes).
fn generate_cursor(home: &Path, root: &Path, target: u64, text: &mut TextGen) -> (usize, usize, u64) {
    let user = home.join(".config/Cursor/User");
    let workspace = user.join("workspaceStorage/0f3e9a1c5b7d4e2f8a6c1b3d5e7f9a0b");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(user.join("globalStorage")).unwrap();
    std::fs::write(
        workspace.join("workspace.json"),
        serde_json::json!({"folder": format!("file://{}", root.display())}).to_string(),
    )
    .unwrap();
    let global_path = user.join("globalStorage/state.vscdb");
    let global = rusqlite::Connection::open(&global_path).unwrap();
    global
        .execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
             CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
             CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
             BEGIN;",
        )
        .unwrap();
    let file_body = std::fs::read_to_string(root.join(FILES[0])).unwrap();
    let context = serde_json::json!({"notepads": [], "composers": [], "quotes": [], "selectedCommits": [],
        "fileSelections": [{"uri": {"$mid": 1, "fsPath": root.join(FILES[0]), "scheme": "file"}}],
        "mentions": {"fileSelections": {}, "selections": {}, "terminalFiles": {}, "useLinterErrors": [], "diffHistory": []}});
    let capabilities = serde_json::json!({"mutate-request": [6], "start-submit-chat": [], "before-submit-chat": [15],
        "after-submit-chat": [], "after-apply": [], "composer-settled": [], "composer-done": [], "process-stream": [15, 14]});
    let (mut written, mut chats, mut bubbles) = (0u64, 0usize, 0usize);
    let mut heads = Vec::new();
    let put = |key: String, value: serde_json::Value, written: &mut u64| {
        let bytes = serde_json::to_vec(&value).unwrap();
        *written += bytes.len() as u64 + key.len() as u64;
        global
            .execute(
                "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
                rusqlite::params![key, bytes],
            )
            .unwrap();
    };
    let start_ms: i64 = 1_748_000_000_000;
    while written < target {
        let id = format!("00000000-0000-4000-8000-{chats:012x}");
        let created = start_ms + chats as i64 * 3_600_000;
        let mut headers = Vec::new();
        for n in 0..100 {
            let bubble_id = format!("{chats:06}-{n:04}-4000-8000-000000000000");
            let file = root.join(FILES[n % FILES.len()]);
            let value = if n % 10 == 0 {
                serde_json::json!({"_v": 2, "type": 1, "bubbleId": bubble_id, "text": text.text(80, 400),
                    "richText": text.text(200, 600), "relevantFiles": [FILES[n % FILES.len()]], "context": context,
                    "capabilitiesRan": capabilities, "isAgentic": true, "checkpointId": bubble_id,
                    "attachedFileCodeChunksUris": [{"scheme": "file", "path": file}], "tokenCount": {"inputTokens": 0, "outputTokens": 0}})
            } else if n % 3 == 1 {
                serde_json::json!({"_v": 2, "type": 2, "bubbleId": bubble_id, "text": text.text(200, 900),
                    "thinking": {"text": text.text(300, 1200)}, "capabilitiesRan": capabilities,
                    "timingInfo": {"clientStartTime": 219504.6, "clientRpcSendTime": created + n as i64 * 20_000},
                    "codeBlocks": [{"content": text.text(200, 800), "languageId": "rust", "codeBlockIdx": 0}],
                    "toolFormerData": {"additionalData": {"status": "error"}}})
            } else {
                let (name, args, result) = match n % 3 {
                    0 => ("read_file", serde_json::json!({"target_file": FILES[n % FILES.len()], "should_read_entire_file": "True"}).to_string(),
                          serde_json::json!({"contents": file_body}).to_string()),
                    _ if n % 4 == 0 => ("edit_file", serde_json::json!({"target_file": FILES[n % FILES.len()], "instructions": text.text(40, 120),
                          "code_edit": format!("// ... existing code ...\n    let v{n} = step_0_{n}(input);\n// ... existing code ...")}).to_string(),
                          serde_json::json!({"diff": {"chunks": [{"diffString": text.text(400, 1600), "oldStart": n, "newStart": n}]}, "isApplied": true}).to_string()),
                    _ => ("run_terminal_cmd", serde_json::json!({"command": "cargo test", "is_background": "False"}).to_string(),
                          serde_json::json!({"output": (0..60).map(|_| text.text(40, 120)).collect::<Vec<_>>().join("\n"), "notInterrupted": true}).to_string()),
                };
                serde_json::json!({"_v": 2, "type": 2, "bubbleId": bubble_id, "text": "", "capabilityType": 15, "capabilitiesRan": capabilities,
                    "toolFormerData": {"tool": 5, "toolCallId": format!("tool_{bubble_id}"), "status": "completed", "name": name,
                        "rawArgs": args, "params": "{}", "additionalData": "{}", "userDecision": "accepted", "result": result}})
            };
            put(format!("bubbleId:{id}:{bubble_id}"), value, &mut written);
            headers.push(serde_json::json!({"bubbleId": bubble_id, "type": if n % 10 == 0 { 1 } else { 2 }}));
            if n % 20 == 19 {
                put(
                    format!("checkpointId:{id}:{bubble_id}"),
                    serde_json::json!({"files": [{"uri": file, "originalModelDiffWrtV0": text.text(500, 3000)}]}),
                    &mut written,
                );
            }
        }
        bubbles += headers.len();
        let updated = created + 2_000_000;
        put(
            format!("composerData:{id}"),
            serde_json::json!({"_v": 3, "composerId": id, "name": text.text(20, 60), "createdAt": created, "lastUpdatedAt": updated,
                "status": "completed", "isAgentic": true, "fullConversationHeadersOnly": headers, "context": context,
                "originalModelLines": {format!("file://{}", root.join(FILES[0]).display()): file_body.lines().collect::<Vec<_>>()}}),
            &mut written,
        );
        heads.push(serde_json::json!({"type": "head", "composerId": id, "createdAt": created, "lastUpdatedAt": updated, "name": "chat"}));
        chats += 1;
    }
    global.execute_batch("COMMIT;").unwrap();
    drop(global);
    let ws = rusqlite::Connection::open(workspace.join("state.vscdb")).unwrap();
    ws.execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB); CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);")
        .unwrap();
    ws.execute(
        "INSERT INTO ItemTable VALUES ('composer.composerData', ?1)",
        [serde_json::json!({"allComposers": heads}).to_string()],
    )
    .unwrap();
    let bytes = std::fs::metadata(&global_path).unwrap().len();
    (chats, bubbles, bytes)
}

/// Peak resident memory of this process (`VmHWM`), in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Resets the peak (`VmHWM`) to the current resident size, so the next reading is what follows.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Cursor's editor database through `Project::import`: MB/s of the database and the peak
/// resident memory the import added, beside a bare scan of every value of the same table.
fn cursor_database(full: bool, text: &mut TextGen) {
    let mb: u64 = std::env::var("ZBLADE_BENCH_CURSOR_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 1000 } else { 12 }); // 12 MB: more than one part
    // `ZBLADE_BENCH_CURSOR_KEEP=DIR` generates there and keeps it (to run the CLI on it).
    let dir = tempfile::tempdir().unwrap();
    let base = std::env::var_os("ZBLADE_BENCH_CURSOR_KEEP").map_or_else(|| dir.path().to_path_buf(), PathBuf::from);
    let root = project_root(&base);
    let home = base.join("home");
    let (chats, bubbles, bytes) = generate_cursor(&home, &root, mb * 1_000_000, text);
    let megabytes = bytes as f64 / 1e6;
    let global = home.join(".config/Cursor/User/globalStorage/state.vscdb");
    // Baseline: every value of the table read and parsed as JSON, nothing kept (warms the
    // page cache for the import as well).
    let started = Instant::now();
    {
        let db = rusqlite::Connection::open(&global).unwrap();
        let mut rows = db.prepare("SELECT value FROM cursorDiskKV").unwrap();
        let mut rows = rows.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let value: Vec<u8> = row.get(0).unwrap();
            std::hint::black_box(serde_json::from_slice::<serde_json::Value>(&value).unwrap());
        }
    }
    let scan = started.elapsed();
    let (mut project, _) = Project::init(&root).unwrap();
    project.use_agent_places(places(&home));
    let reset = reset_peak_rss();
    let before = peak_rss_mb();
    let started = Instant::now();
    let report = project
        .import(&ImportRequest::new(ImportSource::CURSOR), &mut |_, _, _| {})
        .unwrap();
    let import = started.elapsed();
    let peak = peak_rss_mb();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.files_read, 1, "the workspace's database is read");
    assert!(
        report.messages > bubbles / 2,
        "{} messages of {bubbles} bubbles",
        report.messages
    );
    let again = project
        .import(&ImportRequest::new(ImportSource::CURSOR), &mut |_, _, _| {})
        .unwrap();
    assert_eq!(again.messages, 0, "a second import adds nothing");
    // Live: a bubble Cursor writes → found by search (the watcher polls both databases). In
    // a project of its own whose chats are embedded already: after an import of thousands of
    // turns that nobody embedded, the first live round embeds them all first (as `zblade index`
    // would), which says nothing about following.
    let rounds = if full { 20 } else { 3 };
    let live_dir = tempfile::tempdir().unwrap();
    let live_root = project_root(live_dir.path());
    let live_home = live_dir.path().join("home");
    generate_cursor(&live_home, &live_root, 2_000_000, text);
    let (mut live_project, _) = Project::init(&live_root).unwrap();
    live_project.use_agent_places(places(&live_home));
    live_project
        .import(&ImportRequest::new(ImportSource::CURSOR), &mut |_, _, _| {})
        .unwrap();
    let _ = live_project.embed_new_memory();
    drop(live_project);
    let mut live = follow_rounds(&live_root, &live_home, ImportSource::CURSOR, rounds, |round, word| {
        cursor_add_bubble(&live_home, round, word)
    });
    let live = Stats::of(&mut live);
    let scan_rate = megabytes / scan.as_secs_f64();
    let rate = megabytes / import.as_secs_f64();
    let peak_line = match (reset, before, peak) {
        (true, Some(before), Some(peak)) => format!("{peak:.0} MB (resident before it: {before:.0} MB)"),
        _ => "not measured (no /proc/self/clear_refs)".to_string(),
    };
    eprintln!(
        "cursor: {megabytes:.0} MB, {chats} chats, {bubbles} bubbles → {} messages; bare scan {scan_rate:.1} MB/s, import {rate:.1} MB/s, peak RSS {peak_line}; live follow p50/p95/p99 {live}",
        report.messages
    );
    if full {
        let body = format!(
            "A generated Cursor user folder: one workspace of this project, its {chats} chats in a {megabytes:.0} MB \
             `globalStorage/state.vscdb` ({bubbles} bubbles in Cursor's record shapes — prompts with their attached \
             context, assistant text with thinking and code blocks, tool calls whose results hold file contents and \
             terminal output — plus checkpoint rows zblade does not read), imported with `Project::import` \
             (`zblade import cursor`).\n\n\
             | measure | result |\n|---|---|\n\
             | bare scan: every value of `cursorDiskKV` read and parsed as JSON (baseline) | {scan_rate:.1} MB/s ({:.1} s) |\n\
             | `Project::import` of the workspace's chats (target ≥ 20 MB/s) | **{rate:.1} MB/s** ({:.1} s, {} messages) |\n\
             | peak resident memory of the process during the import (target ≤ 300 MB) | **{peak_line}** |\n\
             | a second import | {} messages added |\n\
             | live follow: a bubble written as Cursor writes it → found by search, p50 / p95 / p99 over {rounds} bubbles, in a 2 MB folder whose chats are embedded (target p95 ≤ 1 s) | {live} |\n",
            scan.as_secs_f64(),
            import.as_secs_f64(),
            report.messages,
            again.messages,
        );
        write_section("import-cursor", "Import of Cursor's editor database", "import", &body);
    }
}
