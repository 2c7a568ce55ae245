//! The readers of the agents added after the first five, each on the files its PROVENANCE.md
//! names (published captures, stored byte for byte, their blob ids checked here), installed in
//! the agent's own folder layout; plus the bad inputs those files do not show.

use std::path::{Path, PathBuf};

use zblade_core::Role;
use zblade_import::detect::{Places, find_session_files, session_cwd};
use zblade_import::{AGENTS, Cursor, FileRead, Source, TouchKind, read_file};

const AGENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");

fn fixture(rel: &str) -> PathBuf {
    Path::new(AGENTS_DIR).join(rel)
}

/// Copies a fixture to `dest` under `home`, creating folders.
fn install(rel: &str, home: &Path, dest: &str) -> PathBuf {
    let to = home.join(dest);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(fixture(rel), &to).unwrap();
    to
}

fn source(name: &str) -> Source {
    Source::parse(name).unwrap_or_else(|| panic!("{name} is not registered"))
}

/// Reads a file twice from scratch: the same ids both times (a second import adds nothing).
fn read_stable(source: Source, path: &Path) -> FileRead {
    let first = read_file(source, path, &Cursor::default()).unwrap();
    let again = read_file(source, path, &Cursor::default()).unwrap();
    let ids = |r: &FileRead| -> Vec<String> {
        r.sessions
            .iter()
            .flat_map(|s| s.turns.iter().map(|t| t.message.id.clone()))
            .collect()
    };
    assert_eq!(ids(&first), ids(&again), "{source}: ids change between reads");
    assert!(
        ids(&first).iter().all(|id| !id.is_empty()),
        "{source}: a message without an id"
    );
    let mut unique = ids(&first);
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids(&first).len(), "{source}: two messages share an id");
    first
}

fn roles(read: &FileRead) -> Vec<Role> {
    read.sessions[0].turns.iter().map(|t| t.message.role).collect()
}

#[test]
fn every_fixture_is_the_published_file_byte_for_byte() {
    let mut checked = 0;
    for entry in std::fs::read_dir(AGENTS_DIR).unwrap().flatten() {
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let provenance = std::fs::read_to_string(dir.join("PROVENANCE.md"))
            .unwrap_or_else(|_| panic!("{} has no PROVENANCE.md", dir.display()));
        let rows: Vec<&str> = provenance.lines().filter(|l| l.starts_with("| `")).collect();
        assert!(!rows.is_empty(), "{}: PROVENANCE.md lists no file", dir.display());
        for row in rows {
            let cells: Vec<&str> = row.split('|').map(|c| c.trim().trim_matches('`')).collect();
            let (file, license, blob) = (cells[1], cells[6], cells[5]);
            assert!(!license.is_empty(), "{file}: no license");
            let bytes = std::fs::read(dir.join(file)).unwrap_or_else(|_| panic!("{file} is listed but missing"));
            let oid = git2::Oid::hash_object(git2::ObjectType::Blob, &bytes).unwrap();
            assert_eq!(
                oid.to_string(),
                blob,
                "{}/{file} is not the published file",
                dir.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} fixture files checked");
}

#[test]
fn gemini_cli_chats_in_both_generations() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let chats = ".gemini/tmp/proj/chats";
    let jsonl = install(
        "gemini/jsonl_v040.jsonl",
        home.path(),
        &format!("{chats}/session-2026-04-29T21-39-aaaa.jsonl"),
    );
    let json = install(
        "gemini/large.json",
        home.path(),
        &format!("{chats}/session-2026-01-16T18-34-bbbb.json"),
    );
    std::fs::write(
        home.path().join(".gemini/tmp/proj/.project_root"),
        project.display().to_string(),
    )
    .unwrap();
    let gemini = source("gemini-cli");
    let places = Places::at_home(home.path());
    let files = find_session_files(gemini, &places.stores(gemini, &project));
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(session_cwd(gemini, &jsonl), Some(project.clone()));

    let read = read_stable(gemini, &jsonl);
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    let s = &read.sessions[0];
    assert_eq!(s.id, "gemini_stage0_jsonl");
    assert_eq!(roles(&read), [Role::User, Role::Assistant, Role::Assistant]);
    let call = &s.turns[1].message.tool_calls[0];
    assert_eq!(call.name, "run_shell_command");
    assert!(call.result.as_ref().unwrap().text.contains("README.md"));
    assert_eq!(s.turns[2].message.content, "Hello! I listed the files.");
    assert_eq!(s.turns[2].message.model.as_deref(), Some("gemini-3-flash-preview"));

    let read = read_stable(gemini, &json);
    assert!(!read.sessions[0].turns.is_empty());
    assert!(read.sessions[0].turns.iter().any(|t| t.message.role == Role::Assistant));
}

#[test]
fn a_gemini_jsonl_rewind_drops_what_followed_and_a_rewrite_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".gemini/tmp/p/chats/session-x.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        concat!(
            r#"{"sessionId":"s1","startTime":"2026-08-06T09:00:00.000Z"}"#,
            "\n",
            r#"{"id":"m1","timestamp":"2026-08-06T09:00:01.000Z","type":"user","content":"use sqlite"}"#,
            "\n",
            r#"{"id":"m2","timestamp":"2026-08-06T09:00:02.000Z","type":"gemini","content":"draft"}"#,
            "\n",
            r#"{"id":"m2","timestamp":"2026-08-06T09:00:03.000Z","type":"gemini","content":"final answer"}"#,
            "\n",
            r#"{"id":"m3","timestamp":"2026-08-06T09:00:04.000Z","type":"user","content":"never mind"}"#,
            "\n",
            r#"{"$rewindTo":"m3"}"#,
            "\n",
            "not json\n",
        ),
    )
    .unwrap();
    let read = read_file(source("gemini-cli"), &path, &Cursor::default()).unwrap();
    let texts: Vec<&str> = read.sessions[0]
        .turns
        .iter()
        .map(|t| t.message.content.as_str())
        .collect();
    assert_eq!(texts, ["use sqlite", "final answer"]);
    assert_eq!(read.warnings.len(), 1, "the bad line is named: {:?}", read.warnings);
    assert_eq!(read.warnings[0].line, Some(7));
}

#[test]
fn copilot_cli_event_logs_old_and_new_layouts() {
    let copilot = source("copilot");
    let home = tempfile::tempdir().unwrap();
    let events = install(
        "copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl",
        home.path(),
        ".copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl",
    );
    install(
        "copilot/large.jsonl",
        home.path(),
        ".copilot/session-state/copilot_stage0_large.jsonl",
    );
    let places = Places::at_home(home.path());
    assert_eq!(
        find_session_files(copilot, &places.stores(copilot, Path::new("/tmp/project"))).len(),
        2
    );
    assert_eq!(session_cwd(copilot, &events), Some(PathBuf::from("/tmp/project")));
    let read = read_stable(copilot, &events);
    let s = &read.sessions[0];
    assert_eq!(s.id, "aaaabbbb-1111-2222-3333-ccccddddeeee");
    assert_eq!(roles(&read), [Role::User, Role::Assistant, Role::Assistant]);
    let call = &s.turns[1].message.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_1", "bash"));
    assert_eq!(call.result.as_ref().unwrap().text, "file1\nfile2\n");
    assert_eq!(s.turns[2].message.content, "The directory contains file1 and file2.");

    // Resumed after the first three events: the call's result arrives later, the id is kept.
    let all = std::fs::read_to_string(&events).unwrap();
    let head: String = all.lines().take(4).map(|l| format!("{l}\n")).collect();
    let partial = home.path().join("partial/events.jsonl");
    std::fs::create_dir_all(partial.parent().unwrap()).unwrap();
    std::fs::write(&partial, &head).unwrap();
    let first = read_file(copilot, &partial, &Cursor::default()).unwrap();
    std::fs::write(&partial, &all).unwrap();
    let rest = read_file(copilot, &partial, &first.cursor).unwrap();
    assert_eq!(rest.sessions[0].id, "aaaabbbb-1111-2222-3333-ccccddddeeee");
    assert_eq!(rest.sessions[0].turns.len(), 1, "only the new answer");
}

#[test]
fn cursor_transcripts_with_calls_and_their_project() {
    let cursor = source("cursor");
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("code/my-app");
    std::fs::create_dir_all(&project).unwrap();
    let encoded = project.display().to_string().replace('/', "-");
    let rel = format!(
        ".cursor/projects/{}/agent-transcripts/c0ffee.jsonl",
        encoded.trim_start_matches('-')
    );
    let path = install("cursor/large.jsonl", home.path(), &rel);
    assert_eq!(session_cwd(cursor, &path), Some(project));
    let read = read_stable(cursor, &path);
    let s = &read.sessions[0];
    assert_eq!(s.id, "c0ffee");
    assert_eq!(s.turns[0].message.content, "What files are here?");
    let calls: Vec<&str> = s
        .turns
        .iter()
        .flat_map(|t| t.message.tool_calls.iter().map(|c| c.name.as_str()))
        .collect();
    assert_eq!(calls, ["Bash", "Read"]);
    assert_eq!(s.turns.last().unwrap().message.content, "You are welcome.");
    assert!(Source::CURSOR.agent().mcp().is_some(), "Cursor keeps its MCP file");
}

#[test]
fn opencode_sessions_from_their_record_files() {
    let opencode = source("opencode");
    let path = fixture("opencode/storage/session/proj_test/ses_s_stage0_small.json");
    assert_eq!(session_cwd(opencode, &path), Some(PathBuf::from("/tmp/repo")));
    let read = read_stable(opencode, &path);
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    let s = &read.sessions[0];
    assert_eq!(
        (s.id.as_str(), s.title.as_deref()),
        ("s_stage0_small", Some("OpenCode Small"))
    );
    assert_eq!(roles(&read), [Role::User, Role::Assistant]);
    let answer = &s.turns[1].message;
    assert_eq!(answer.content, "Found 2 files.");
    assert_eq!(answer.model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(answer.tool_calls[0].result.as_ref().unwrap().text, "a.txt\nb.txt\n");
}

#[test]
fn kimi_code_journals_with_tool_calls() {
    let kimi = source("kimi-code");
    let home = tempfile::tempdir().unwrap();
    let dir = ".kimi-code/sessions/wd_project_ac3bb318f98e/session_1bcbe023-4f7e-4971-9dc9-43b8756045b0";
    let wire = install(
        "kimi-code/assistant_tools.jsonl",
        home.path(),
        &format!("{dir}/agents/main/wire.jsonl"),
    );
    install(
        "kimi-code/assistant_tools.state.json",
        home.path(),
        &format!("{dir}/state.json"),
    );
    let places = Places::at_home(home.path());
    assert_eq!(find_session_files(kimi, &places.stores(kimi, Path::new("/x"))), {
        find_session_files(kimi, &[home.path().join(".kimi-code/sessions")])
    });
    assert_eq!(
        session_cwd(kimi, &wire),
        Some(PathBuf::from("/private/tmp/as-agent-lab/kimi/project"))
    );
    let read = read_stable(kimi, &wire);
    let s = &read.sessions[0];
    assert_eq!(s.id, "1bcbe023-4f7e-4971-9dc9-43b8756045b0");
    assert!(
        s.turns
            .iter()
            .any(|t| t.message.role == Role::User && t.message.content == "run ls command")
    );
    let bash = s
        .turns
        .iter()
        .flat_map(|t| &t.message.tool_calls)
        .find(|c| c.name == "Bash")
        .expect("a Bash call");
    assert!(bash.result.as_ref().unwrap().text.contains("README.md"));
    assert!(
        s.turns
            .iter()
            .any(|t| t.message.role == Role::Assistant && t.message.content.contains("How can I help")),
        "assistant text from content parts"
    );
    // Injected reminders are not the user's words.
    assert!(
        !s.turns
            .iter()
            .any(|t| t.message.role == Role::User && t.message.content.contains("<system-reminder>"))
    );
}

#[test]
fn pi_openclaw_and_droid_share_one_format() {
    for (name, file, id, cwd, call) in [
        // pi's capture has no tool call; its compactions become system turns.
        (
            "pi",
            "pi/small.jsonl",
            "019e19b4-eb48-746a-aa6b-8dfcfa37954b",
            "/tmp/as-agent-fixture/project",
            None,
        ),
        (
            "openclaw",
            "openclaw/large.jsonl",
            "openclaw-stage0-large",
            "/tmp/large",
            Some("run_terminal"),
        ),
        (
            "droid",
            "droid/session_store_large.jsonl",
            "droid_large",
            "/tmp/large",
            Some("Execute"),
        ),
    ] {
        let agent = source(name);
        let path = fixture(file);
        assert_eq!(session_cwd(agent, &path), Some(PathBuf::from(cwd)), "{name}");
        let read = read_stable(agent, &path);
        let s = &read.sessions[0];
        assert_eq!(s.id, id, "{name}");
        if let Some(call) = call {
            let found = s
                .turns
                .iter()
                .flat_map(|t| &t.message.tool_calls)
                .find(|c| c.name == call);
            let found = found.unwrap_or_else(|| panic!("{name}: no {call} call"));
            assert!(found.result.is_some(), "{name}: the call's result is attached");
        } else {
            assert!(
                s.turns
                    .iter()
                    .any(|t| t.message.role == Role::System && t.message.content.contains("compacted"))
            );
        }
        assert_eq!(s.turns[0].message.role, Role::User, "{name}");
    }
    // OpenClaw's edit names the file it wrote.
    let read = read_file(source("openclaw"), &fixture("openclaw/large.jsonl"), &Cursor::default()).unwrap();
    let edit = read.sessions[0]
        .turns
        .iter()
        .flat_map(|t| &t.touches)
        .find(|t| t.kind == TouchKind::Edit);
    assert_eq!(edit.map(|t| t.path.as_str()), Some("/tmp/large/notes.md"));
}

#[test]
fn grok_histories_with_their_summary() {
    let grok = source("grok");
    let home = tempfile::tempdir().unwrap();
    let dir = ".grok/sessions/%2Ftmp%2Fproject/019f6851-7ec4-7ef0-97d3-03f3eee38755";
    let path = install(
        "grok/chat_history.jsonl",
        home.path(),
        &format!("{dir}/chat_history.jsonl"),
    );
    install("grok/summary.json", home.path(), &format!("{dir}/summary.json"));
    assert_eq!(
        session_cwd(grok, &path),
        Some(PathBuf::from("/tmp/as-agent-lab/grok/project"))
    );
    let read = read_stable(grok, &path);
    let s = &read.sessions[0];
    assert_eq!(s.title.as_deref(), Some("Read hello.py and summarize what it prints"));
    let first_user = s.turns.iter().find(|t| t.message.role == Role::User).unwrap();
    assert!(
        first_user.message.content.starts_with("Read hello.py"),
        "the preamble is not the user's"
    );
    let read_call = s
        .turns
        .iter()
        .flat_map(|t| &t.message.tool_calls)
        .find(|c| c.name == "read_file")
        .unwrap();
    assert!(
        read_call
            .result
            .as_ref()
            .unwrap()
            .text
            .contains("hello from the grok fixture")
    );
    let touch = s
        .turns
        .iter()
        .flat_map(|t| &t.touches)
        .find(|t| t.kind == TouchKind::Read)
        .unwrap();
    assert_eq!(touch.path, "/tmp/as-agent-lab/grok/project/hello.py");
}

#[test]
fn hermes_and_antigravity_sessions() {
    let read = read_stable(source("hermes"), &fixture("hermes/large.json"));
    let s = &read.sessions[0];
    assert_eq!(s.id, "20260429_hermes_large");
    assert_eq!(s.turns[0].message.content, "Check the current directory.");
    let shell = &s.turns[1].message.tool_calls[0];
    assert_eq!(shell.arguments["command"], "pwd");
    assert!(shell.result.as_ref().unwrap().text.ends_with("Codex-History"));

    let read = read_stable(source("antigravity"), &fixture("antigravity/cli_small.jsonl"));
    let s = &read.sessions[0];
    assert_eq!(s.turns[0].message.content.trim(), "List the files.");
    let calls: Vec<&str> = s
        .turns
        .iter()
        .flat_map(|t| t.message.tool_calls.iter().map(|c| c.name.as_str()))
        .collect();
    assert_eq!(calls, ["list_dir", "write_file"]);
    let list = s.turns.iter().flat_map(|t| &t.message.tool_calls).next().unwrap();
    assert!(list.result.as_ref().unwrap().text.contains("a.txt"));
}

#[test]
fn hostile_files_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    // Aider's history is markdown: any text is a chat to it.
    for agent in AGENTS
        .iter()
        .filter(|a| a.reads_sessions() && a.source().as_str() != "aider")
    {
        let source = agent.source();
        // Not JSON at all, a JSON value of the wrong shape, and an empty file.
        for (name, bytes) in [
            ("garbage", &b"\x00\xff{{{ not json"[..]),
            ("array", b"[1,2,3]"),
            ("empty", b""),
        ] {
            let path = dir.path().join(format!("{source}-{name}.jsonl"));
            std::fs::write(&path, bytes).unwrap();
            match read_file(source, &path, &Cursor::default()) {
                Ok(read) => {
                    assert!(
                        read.sessions.iter().all(|s| s.turns.is_empty()),
                        "{source} made turns from {name}"
                    );
                    for w in &read.warnings {
                        assert_eq!(w.file, path, "{source}: a warning names another file");
                    }
                }
                Err(e) => assert!(e.to_string().contains(&path.display().to_string()), "{source}: {e}"),
            }
        }
    }
}

#[test]
fn secrets_in_new_agents_sessions_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"type":"session","id":"s","cwd":"/p","timestamp":"2026-05-12T01:02:27.657Z"}"#, "\n",
            r#"{"type":"message","id":"u","timestamp":"2026-05-12T01:02:28Z","message":{"role":"user","content":[{"type":"text","text":"my key is AKIAIOSFODNN7EXAMPLE ok"}]}}"#, "\n",
        ),
    )
    .unwrap();
    let read = read_file(source("pi"), &path, &Cursor::default()).unwrap();
    let text = &read.sessions[0].turns[0].message.content;
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"), "{text}");
    assert_eq!(read.sessions[0].redacted, 1);
}
