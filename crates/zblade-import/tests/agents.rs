//! The readers of the agents added after the first five, each on the files its PROVENANCE.md
//! names (published captures, stored byte for byte, their blob ids checked here), installed in
//! the agent's own folder layout; plus the bad inputs those files do not show.

use std::path::{Path, PathBuf};

use zblade_core::Role;
use zblade_import::detect::{Places, find_session_files, session_cwd};
use zblade_import::{AGENTS, Cursor, FileRead, Source, TouchKind, read_file};

mod common;

fn agents_dir() -> PathBuf {
    common::fixtures().join("agents")
}

fn fixture(rel: &str) -> PathBuf {
    agents_dir().join(rel)
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
    for entry in std::fs::read_dir(agents_dir()).unwrap().flatten() {
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

/// A Cursor user folder holding one workspace (`project`) with one editor chat, built in the
/// shapes Cursor writes (checked against databases Cursor wrote: docs/IMPORT.md). Returns the
/// workspace database and the global one.
fn cursor_user_folder(home: &Path, project: &Path) -> (PathBuf, PathBuf) {
    let user = home.join(".config/Cursor/User");
    let workspace = user.join("workspaceStorage/9f1c0e6d2b7a4c3e8d5f6a1b2c3d4e5f");
    let global = user.join("globalStorage");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&global).unwrap();
    let folder = format!("file://{}", project.display().to_string().replace(' ', "%20"));
    std::fs::write(workspace.join("workspace.json"), format!(r#"{{"folder": "{folder}"}}"#)).unwrap();
    let table = |db: &rusqlite::Connection, name: &str| {
        db.execute_batch(&format!(
            "CREATE TABLE {name} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"
        ))
        .unwrap();
    };
    let ws = rusqlite::Connection::open(workspace.join("state.vscdb")).unwrap();
    table(&ws, "ItemTable");
    table(&ws, "cursorDiskKV");
    ws.execute(
        "INSERT INTO ItemTable VALUES ('composer.composerData', ?1)",
        [r#"{"allComposers":[{"type":"head","composerId":"6b4c3d09-b30f-4bf8-862f-39b6307657f7","createdAt":1748188531242,"unifiedMode":"agent","forceMode":"edit","lastUpdatedAt":1748206810452,"name":"Session tokens"},{"type":"head","composerId":"1957a580-f85e-4381-814a-058d4fedc7c8","createdAt":1748177567820,"unifiedMode":"chat","forceMode":"edit"}],"selectedComposerIds":["6b4c3d09-b30f-4bf8-862f-39b6307657f7"]}"#],
    )
    .unwrap();
    let gl = rusqlite::Connection::open(global.join("state.vscdb")).unwrap();
    table(&gl, "ItemTable");
    table(&gl, "cursorDiskKV");
    let chat = "6b4c3d09-b30f-4bf8-862f-39b6307657f7";
    let put = |key: &str, value: &str| {
        gl.execute("INSERT INTO cursorDiskKV VALUES (?1, ?2)", [key, value])
            .unwrap();
    };
    put(
        &format!("composerData:{chat}"),
        &format!(
            r#"{{"_v":3,"composerId":"{chat}","text":"","fullConversationHeadersOnly":[{{"bubbleId":"b1","type":1}},{{"bubbleId":"b2","type":2,"serverBubbleId":"s2"}},{{"bubbleId":"b3","type":2}},{{"bubbleId":"b4","type":2}},{{"bubbleId":"b5","type":2}},{{"bubbleId":"gone","type":2}}],"status":"completed","createdAt":1748188531242,"lastUpdatedAt":1748206810452,"name":"Session tokens","isAgentic":true}}"#
        ),
    );
    // An empty chat Cursor keeps for a closed tab: a value of NULL.
    gl.execute(
        "INSERT INTO cursorDiskKV VALUES ('composerData:1957a580-f85e-4381-814a-058d4fedc7c8', NULL)",
        [],
    )
    .unwrap();
    let read_args = r#"{\"target_file\": \"src/session.rs\", \"should_read_entire_file\": \"False\", \"start_line_one_indexed\": \"3\", \"end_line_one_indexed_inclusive\": \"4\"}"#;
    let edit_args = r#"{\"target_file\": \"src/session.rs\", \"instructions\": \"Rotate on login.\", \"code_edit\": \"// ... existing code ...\\nfn rotate(s: &mut Session) {\\n    s.token = new_token();\\n}\\n// ... existing code ...\"}"#;
    put(
        &format!("bubbleId:{chat}:b1"),
        r#"{"_v":2,"type":1,"bubbleId":"b1","text":"Rotate session tokens on login; we decided against JWTs","relevantFiles":["src/session.rs"],"isAgentic":true,"tokenCount":{"inputTokens":0,"outputTokens":0}}"#,
    );
    put(
        &format!("bubbleId:{chat}:b2"),
        r#"{"_v":2,"type":2,"bubbleId":"b2","text":"","thinking":{"text":"Looking at the session code."},"timingInfo":{"clientStartTime":219504.6,"clientRpcSendTime":1748189063978,"clientSettleTime":1748189135346,"clientEndTime":1748189135346},"toolFormerData":{"additionalData":{"status":"error"}}}"#,
    );
    put(
        &format!("bubbleId:{chat}:b3"),
        &format!(
            r#"{{"_v":2,"type":2,"bubbleId":"b3","text":"","capabilityType":15,"toolFormerData":{{"tool":5,"toolCallId":"tool_e7f66466","status":"completed","rawArgs":"{read_args}","name":"read_file","params":"{{}}","result":"{{\"contents\":\"pub struct Session {{\\n    token: String,\\n}}\"}}"}}}}"#
        ),
    );
    put(
        &format!("bubbleId:{chat}:b4"),
        &format!(
            r#"{{"_v":2,"type":2,"bubbleId":"b4","text":"","capabilityType":15,"toolFormerData":{{"tool":7,"toolCallId":"tool_f2f77053","status":"completed","rawArgs":"{edit_args}","name":"edit_file","userDecision":"accepted","result":"{{\"diff\":{{\"chunks\":[]}},\"isApplied\":true}}"}}}}"#
        ),
    );
    put(
        &format!("bubbleId:{chat}:b5"),
        r#"{"_v":2,"type":2,"bubbleId":"b5","text":"Tokens now rotate on every login.","modelInfo":{"modelName":"claude-4-sonnet"},"toolFormerData":{"additionalData":{"status":"error"}}}"#,
    );
    (workspace.join("state.vscdb"), global.join("state.vscdb"))
}

#[test]
fn cursor_editor_chats_from_its_databases() {
    let cursor = source("cursor");
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("my app");
    std::fs::create_dir_all(&project).unwrap();
    let (workspace_db, global_db) = cursor_user_folder(home.path(), &project);

    let stores = Places::at_home(home.path()).stores(cursor, &project);
    let files = find_session_files(cursor, &stores);
    assert_eq!(files.iter().map(|f| &f.path).collect::<Vec<_>>(), [&workspace_db]);
    assert_eq!(session_cwd(cursor, &workspace_db), Some(project.clone()));

    let read = read_stable(cursor, &workspace_db);
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    assert_eq!(read.sessions.len(), 1, "the empty chat makes no session");
    let s = &read.sessions[0];
    assert_eq!(s.id, "6b4c3d09-b30f-4bf8-862f-39b6307657f7");
    assert_eq!(s.title.as_deref(), Some("Session tokens"));
    assert_eq!(s.cwd.as_deref(), Some(project.as_path()));
    assert_eq!(
        roles(&read),
        [Role::User, Role::Assistant, Role::Assistant, Role::Assistant]
    );
    assert!(s.turns[0].message.content.contains("against JWTs"));
    let read_call = &s.turns[1].message.tool_calls[0];
    assert_eq!(read_call.name, "read_file");
    assert!(read_call.result.as_ref().unwrap().text.contains("pub struct Session"));
    let read_touch = &s.turns[1].touches[0];
    assert_eq!((read_touch.kind, read_touch.lines), (TouchKind::Read, Some([3, 5])));
    let edit = &s.turns[2].touches[0];
    assert_eq!(edit.kind, TouchKind::Edit);
    assert_eq!(edit.path, "src/session.rs");
    let edited = edit.text.as_deref().unwrap();
    assert!(
        edited.starts_with("fn rotate") && !edited.contains("existing code"),
        "{edited}"
    );
    assert_eq!(s.turns[3].message.content, "Tokens now rotate on every login.");
    assert_eq!(s.turns[3].message.model.as_deref(), Some("claude-4-sonnet"));
    // Undated bubbles take the time of the one before, the first the chat's start.
    assert_eq!(s.turns[0].message.timestamp, s.started);
    assert_eq!(s.turns[1].message.timestamp.unwrap().timestamp_millis(), 1748189063978);

    // Nothing changed: nothing new. A bubble added to the global database: news, read again
    // under the same ids plus the new one.
    assert!(!zblade_import::has_news(cursor, &workspace_db, &read.cursor));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let gl = rusqlite::Connection::open(&global_db).unwrap();
    let chat = "6b4c3d09-b30f-4bf8-862f-39b6307657f7";
    let data: String = gl
        .query_row(
            "SELECT value FROM cursorDiskKV WHERE key = ?1",
            [format!("composerData:{chat}")],
            |r| r.get(0),
        )
        .unwrap();
    let data = data.replace(r#"{"bubbleId":"gone","type":2}"#, r#"{"bubbleId":"b6","type":1}"#);
    gl.execute(
        "UPDATE cursorDiskKV SET value = ?1 WHERE key = ?2",
        [data, format!("composerData:{chat}")],
    )
    .unwrap();
    gl.execute(
        "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
        [
            format!("bubbleId:{chat}:b6"),
            r#"{"type":1,"bubbleId":"b6","text":"And expire them after a day"}"#.to_string(),
        ],
    )
    .unwrap();
    drop(gl);
    // Cursor stamps the chat's head in the workspace's list as it updates the chat; a later
    // read looks only at chats updated lately.
    let now = chrono::Utc::now().timestamp_millis().to_string();
    let ws = rusqlite::Connection::open(&workspace_db).unwrap();
    ws.execute(
        "UPDATE ItemTable SET value = replace(value, '\"lastUpdatedAt\":1748206810452', '\"lastUpdatedAt\":' || ?1) WHERE key = 'composer.composerData'",
        [now],
    )
    .unwrap();
    drop(ws);
    assert!(zblade_import::has_news(cursor, &workspace_db, &read.cursor));
    let next = read_file(cursor, &workspace_db, &read.cursor).unwrap();
    let turns = &next.sessions[0].turns;
    assert_eq!(turns.last().unwrap().message.content, "And expire them after a day");
    assert_eq!(turns[0].message.id, s.turns[0].message.id);
}

#[test]
fn broken_cursor_databases_are_refused_or_warned_with_the_place_named() {
    let cursor = source("cursor");
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("p");
    std::fs::create_dir_all(&project).unwrap();
    let (workspace_db, global_db) = cursor_user_folder(home.path(), &project);

    // A bubble that is not JSON and one of an unknown type: warnings naming the key; the
    // rest of the chat is still read.
    let gl = rusqlite::Connection::open(&global_db).unwrap();
    let chat = "6b4c3d09-b30f-4bf8-862f-39b6307657f7";
    gl.execute(
        "UPDATE cursorDiskKV SET value = '{not json' WHERE key = ?1",
        [format!("bubbleId:{chat}:b3")],
    )
    .unwrap();
    gl.execute(
        "UPDATE cursorDiskKV SET value = '{\"type\":7,\"text\":\"?\"}' WHERE key = ?1",
        [format!("bubbleId:{chat}:b4")],
    )
    .unwrap();
    drop(gl);
    let read = read_file(cursor, &workspace_db, &Cursor::default()).unwrap();
    let warnings: Vec<String> = read.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains(&format!("bubbleId:{chat}:b3")) && warnings[0].contains("not JSON"));
    assert!(warnings[1].contains("field `type`"));
    assert!(warnings.iter().all(|w| w.starts_with(&global_db.display().to_string())));
    assert_eq!(read.sessions[0].turns.len(), 2);

    // The global database gone: a warning, no failure.
    std::fs::rename(&global_db, global_db.with_extension("moved")).unwrap();
    let read = read_file(cursor, &workspace_db, &Cursor::default()).unwrap();
    assert!(
        read.warnings[0].message.contains("globalStorage"),
        "{:?}",
        read.warnings
    );

    // A workspace "database" that is not SQLite: refused, the file named.
    std::fs::write(&workspace_db, b"\x00\xff{{{ not a database at all, just bytes").unwrap();
    let e = read_file(cursor, &workspace_db, &Cursor::default()).unwrap_err();
    assert!(e.to_string().starts_with(&workspace_db.display().to_string()), "{e}");

    // A list that is not JSON: refused, the key named.
    std::fs::remove_file(&workspace_db).unwrap();
    let ws = rusqlite::Connection::open(&workspace_db).unwrap();
    ws.execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB); INSERT INTO ItemTable VALUES ('composer.composerData', x'00ff7b');")
        .unwrap();
    drop(ws);
    let e = read_file(cursor, &workspace_db, &Cursor::default()).unwrap_err();
    assert!(e.to_string().contains("composer.composerData"), "{e}");
}

/// Reads a real Cursor user folder when `ZBLADE_CURSOR_USER_DIR` names one (such folders are
/// people's private chats and are not redistributed; docs/IMPORT.md says which was read).
#[test]
fn a_real_cursor_user_folder_when_one_is_given() {
    let Some(user) = std::env::var_os("ZBLADE_CURSOR_USER_DIR") else {
        return;
    };
    let cursor = source("cursor");
    let mut databases = Vec::new();
    for dir in std::fs::read_dir(Path::new(&user).join("workspaceStorage"))
        .unwrap()
        .flatten()
    {
        let db = dir.path().join("state.vscdb");
        if db.is_file() {
            databases.push(db);
        }
    }
    assert!(!databases.is_empty());
    let (mut chats, mut messages, mut calls) = (0, 0, 0);
    for db in &databases {
        let read = read_stable(cursor, db);
        assert!(read.warnings.is_empty(), "{:?}", read.warnings);
        chats += read.sessions.len();
        for s in &read.sessions {
            messages += s.turns.len();
            calls += s.turns.iter().map(|t| t.message.tool_calls.len()).sum::<usize>();
        }
        eprintln!(
            "{}: {:?} skipped {:?}",
            db.display(),
            session_cwd(cursor, db),
            read.skipped
        );
    }
    eprintln!(
        "real Cursor folder: {} workspaces, {chats} chats, {messages} messages, {calls} calls",
        databases.len()
    );
    assert!(messages > 0);
}
