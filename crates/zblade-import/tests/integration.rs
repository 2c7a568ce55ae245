//! The readers against session files written from each tool's format
//! (`../shared/reference/AGENT_SESSION_FORMATS.md`, docs/IMPORT.md), and every bad input the
//! import issue lists that a reader alone can show.

use std::path::{Path, PathBuf};

use zblade_core::Role;
use zblade_import::detect::{Places, find_session_files, is_inside, session_cwd};
use zblade_import::{Cursor, Source, TouchKind, read_file};

mod common;

use common::fixtures;

const CLAUDE: &str = "claude/0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl";
const CODEX: &str = "codex/rollout-2025-10-01T09-15-00-01999a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b.jsonl";

/// A fixture with `__ROOT__` replaced by `root`, written to `dest`.
fn install(fixture: &str, dest: &Path, root: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixtures().join(fixture)).unwrap();
    let text = text
        .replace("__ROOT_URI__", &root.display().to_string())
        .replace("__ROOT__", &root.display().to_string());
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(dest, text).unwrap();
    dest.to_path_buf()
}

#[test]
fn claude_code_sessions_become_messages_tool_calls_and_touches() {
    let dir = tempfile::tempdir().unwrap();
    let path = install(
        CLAUDE,
        &dir.path().join("s/0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl"),
        Path::new("/home/u/proj"),
    );
    let read = read_file(Source::CLAUDE_CODE, &path, &Cursor::default()).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    let s = &read.sessions[0];
    assert_eq!(s.id, "0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10");
    assert_eq!(s.conversation_id(), "conv_cc-0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10");
    assert_eq!(s.cwd.as_deref(), Some(Path::new("/home/u/proj")));
    assert_eq!(s.title.as_deref(), Some("Switch password hashing to argon2id"));
    let roles: Vec<Role> = s.turns.iter().map(|t| t.message.role).collect();
    // prompt, response 1 (text + Read), response 2 (thinking dropped, text + Edit), caveat, command
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Assistant, Role::System, Role::User]
    );
    let first = &s.turns[1].message;
    assert_eq!(first.id, "msg_cc-msg_01AbCdEf");
    assert_eq!(first.content, "I'll read the auth module first.");
    assert_eq!(first.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    let read_call = &first.tool_calls[0];
    assert_eq!(
        (read_call.id.as_str(), read_call.name.as_str()),
        ("toolu_01Read", "Read")
    );
    let result = read_call.result.as_ref().unwrap();
    assert!(result.text.contains("hash_password"));
    assert_eq!(result.size as usize, result.text.len());
    let touch = &s.turns[1].touches[0];
    assert_eq!((touch.kind, touch.lines), (TouchKind::Read, Some([1, 6])));
    assert!(touch.text.as_deref().unwrap().starts_with("use sha2::Sha256;"));
    let second = &s.turns[2];
    assert!(
        second
            .message
            .content
            .starts_with("Decision: we hash passwords with argon2id")
    );
    assert!(
        !second.message.content.contains("brute-force. sha256 is fast"),
        "thinking is not content"
    );
    let kinds: Vec<TouchKind> = second.touches.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, [TouchKind::Cite, TouchKind::Edit]);
    assert_eq!(second.touches[0].lines, Some([3, 6]));
    // The slash command reads as typed, and the key in its arguments is gone.
    assert_eq!(
        s.turns[4].message.content,
        "/commit with the deploy key [REDACTED:aws-access-key]"
    );
    assert_eq!(s.redacted, 1);
    assert_eq!(read.skipped.get("claude-code `progress` line"), Some(&1));
    assert_eq!(
        read.skipped.get("unknown claude-code line type `some-future-record`"),
        Some(&1)
    );
}

#[test]
fn codex_rollouts_keep_the_protocol_stream_and_patches() {
    let dir = tempfile::tempdir().unwrap();
    let path = install(CODEX, &dir.path().join(CODEX), Path::new("/home/u/proj"));
    let read = read_file(Source::CODEX, &path, &Cursor::default()).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    let s = &read.sessions[0];
    assert_eq!(s.id, "01999a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b");
    assert_eq!(s.cwd.as_deref(), Some(Path::new("/home/u/proj")));
    let roles: Vec<Role> = s.turns.iter().map(|t| t.message.role).collect();
    // developer + environment context are system; the prompt; one assistant turn holding both
    // calls; the final answer.
    assert_eq!(
        roles,
        [Role::System, Role::System, Role::User, Role::Assistant, Role::Assistant]
    );
    let calls = &s.turns[3].message.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "exec_command");
    assert_eq!(calls[0].arguments["cmd"], "sed -n '1,6p' src/auth.rs");
    assert!(!calls[0].result.as_ref().unwrap().is_error);
    assert_eq!(calls[1].name, "apply_patch");
    assert_eq!(
        calls[1].result.as_ref().unwrap().text,
        "Success. Updated the following files:\nM src/login.rs\n"
    );
    let touches = &s.turns[3].touches;
    assert_eq!((touches[0].kind, touches[0].lines), (TouchKind::Read, Some([1, 6])));
    assert_eq!(touches[1].kind, TouchKind::Edit);
    assert_eq!(touches[1].path, "src/login.rs");
    assert!(touches[1].text.as_deref().unwrap().contains("LIMITER.check"));
    let answer = &s.turns[4];
    assert_eq!(answer.message.model.as_deref(), Some("gpt-5-codex"));
    assert_eq!(answer.touches[0].lines, Some([1, 3]));
    assert_eq!(read.skipped.get("codex `event_msg` (repeats response items)"), Some(&3));
    assert_eq!(read.skipped.get("unknown codex line type `world_state`"), Some(&1));
}

#[test]
fn aider_history_splits_sessions_and_finds_search_replace_edits() {
    let dir = tempfile::tempdir().unwrap();
    let path = install(
        "aider/.aider.chat.history.md",
        &dir.path().join(".aider.chat.history.md"),
        dir.path(),
    );
    let read = read_file(Source::AIDER, &path, &Cursor::default()).unwrap();
    assert_eq!(read.sessions.len(), 2);
    let s = &read.sessions[0];
    let roles: Vec<Role> = s.turns.iter().map(|t| t.message.role).collect();
    assert_eq!(
        roles,
        [
            Role::Tool,
            Role::User,
            Role::Tool,
            Role::User,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert_eq!(
        s.turns[3].message.content,
        "The cache never expires entries. Add a TTL of 300 seconds\nand keep the API the same."
    );
    let reply = &s.turns[4];
    assert_eq!(reply.message.model.as_deref(), Some("gpt-4o"));
    assert_eq!(reply.touches[0].path, "src/cache.py");
    assert!(reply.touches[0].text.as_deref().unwrap().contains("self.ttl"));
    assert!(s.started.is_some());
    // Reading again gives the same ids: nothing is duplicated on re-import.
    let again = read_file(Source::AIDER, &path, &Cursor::default()).unwrap();
    assert_eq!(again.sessions[1].id, read.sessions[1].id);
    assert_eq!(
        again.sessions[1].turns[1].message.id,
        read.sessions[1].turns[1].message.id
    );
    assert_ne!(read.sessions[0].id, read.sessions[1].id);
}

#[test]
fn continue_sessions_pair_tool_calls_and_keep_attached_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new("/home/u/proj");
    install(
        "continue/sessions.json",
        &dir.path().join("sessions/sessions.json"),
        root,
    );
    let path = install(
        "continue/5f1c2d3e-aaaa-bbbb-cccc-0123456789ab.json",
        &dir.path().join("sessions/5f1c2d3e-aaaa-bbbb-cccc-0123456789ab.json"),
        root,
    );
    let read = read_file(Source::CONTINUE, &path, &Cursor::default()).unwrap();
    let s = &read.sessions[0];
    assert_eq!(s.title.as_deref(), Some("Retry policy for the HTTP client"));
    assert_eq!(s.cwd.as_deref(), Some(root));
    assert_eq!(s.started.unwrap().timestamp_millis(), 1734518111194);
    assert_eq!(s.turns.len(), 2);
    let user = &s.turns[0];
    assert_eq!(user.touches[0].lines, Some([1, 3]));
    assert_eq!(user.touches[1].path, "/home/u/proj/src/client.rs");
    let assistant = &s.turns[1].message;
    assert_eq!(assistant.model.as_deref(), Some("Claude 3.5 Sonnet"));
    assert_eq!(assistant.tool_calls[0].arguments["filepath"], "src/client.rs");
    assert!(
        assistant.tool_calls[0]
            .result
            .as_ref()
            .unwrap()
            .text
            .contains("send(url)")
    );
    assert_eq!(read.skipped.get("continue thinking"), Some(&1));
}

#[test]
fn cline_tasks_pair_results_and_drop_environment_details() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new("/home/u/proj");
    let path = install(
        "cline/1733000000000/api_conversation_history.json",
        &dir.path().join("tasks/1733000000000/api_conversation_history.json"),
        root,
    );
    let read = read_file(Source::CLINE, &path, &Cursor::default()).unwrap();
    let s = &read.sessions[0];
    assert_eq!(s.id, "1733000000000");
    assert_eq!(s.cwd.as_deref(), Some(root));
    assert_eq!(
        s.title.as_deref(),
        Some("Move the database URL out of main.rs into config.")
    );
    let roles: Vec<Role> = s.turns.iter().map(|t| t.message.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Assistant]);
    assert!(!s.turns[0].message.content.contains("environment_details"));
    let read_call = &s.turns[1].message.tool_calls[0];
    assert!(
        read_call
            .result
            .as_ref()
            .unwrap()
            .text
            .contains("postgres://localhost/app")
    );
    let touch = &s.turns[1].touches[0];
    assert_eq!((touch.path.as_str(), touch.kind), ("src/main.rs", TouchKind::Read));
    assert!(touch.text.as_deref().unwrap().starts_with("fn main() {\n    let url"));
    assert_eq!(
        s.turns[2].touches[0].text.as_deref(),
        Some("    let url = config::database_url();")
    );
    assert_eq!(s.turns[2].message.model.as_deref(), Some("claude-sonnet-4-20250514"));
}

/// Lines of the Claude Code fixture, for building bad files.
fn claude_lines(root: &Path) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = install(CLAUDE, &dir.path().join("x.jsonl"), root);
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_malformed_line_in_the_middle_is_named_and_the_rest_imported() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = claude_lines(Path::new("/p"));
    lines.insert(4, "{\"type\":\"user\",\"message\":".into());
    let path = dir.path().join("0b5c.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let read = read_file(Source::CLAUDE_CODE, &path, &Cursor::default()).unwrap();
    assert_eq!(read.warnings.len(), 1);
    let warning = read.warnings[0].to_string();
    assert!(warning.contains("0b5c.jsonl:5: not valid JSON"), "{warning}");
    assert_eq!(read.sessions[0].turns.len(), 5);
}

#[test]
fn a_growing_file_is_read_in_pieces_without_duplicates_or_lost_results() {
    let dir = tempfile::tempdir().unwrap();
    let lines = claude_lines(Path::new("/p"));
    let path = dir.path().join("0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl");
    // First piece: up to the Read call, plus half of the line with its result.
    let cut = lines[4].len() / 2;
    std::fs::write(&path, format!("{}\n{}", lines[..4].join("\n"), &lines[4][..cut])).unwrap();
    let first = read_file(Source::CLAUDE_CODE, &path, &Cursor::default()).unwrap();
    assert!(
        first.warnings.is_empty(),
        "a half-written line is not a problem: {:?}",
        first.warnings
    );
    assert_eq!(first.cursor.line, 4);
    let call = &first.sessions[0].turns[1].message.tool_calls[0];
    assert!(call.result.is_none());
    // The writer finishes the line and goes on.
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let second = read_file(Source::CLAUDE_CODE, &path, &first.cursor).unwrap();
    let s = &second.sessions[0];
    assert_eq!(
        s.id, "0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10",
        "the session id survives the resume"
    );
    assert_eq!(
        s.late_results.len(),
        1,
        "the Read result arrives for a call read earlier"
    );
    assert_eq!(s.late_results[0].call_id, "toolu_01Read");
    assert_eq!(s.late_results[0].touches[0].lines, Some([1, 6]));
    assert!(
        s.turns.iter().all(|t| t.message.id != "msg_cc-msg_01AbCdEf"),
        "nothing read twice"
    );
    let third = read_file(Source::CLAUDE_CODE, &path, &second.cursor).unwrap();
    assert!(third.sessions.is_empty());
}

#[test]
fn a_fifty_megabyte_tool_output_is_kept_trimmed_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let lines = claude_lines(Path::new("/p"));
    let big = "x".repeat(50 * 1024 * 1024);
    let result_line = format!(
        r#"{{"type":"user","uuid":"big","sessionId":"s","timestamp":"2025-09-03T00:47:23.000Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_01Read","content":"{big}"}}]}}}}"#
    );
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, format!("{}\n{result_line}\n", lines[..4].join("\n"))).unwrap();
    let read = read_file(Source::CLAUDE_CODE, &path, &Cursor::default()).unwrap();
    let result = read.sessions[0].turns[1].message.tool_calls[0].result.clone().unwrap();
    assert_eq!(result.size, 50 * 1024 * 1024);
    assert!(result.text.len() < 5000);
}

#[test]
fn invalid_utf8_is_repaired_and_the_line_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut bytes = br#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"caf"#.to_vec();
    bytes.extend_from_slice(b"\xe9 au lait\"}}\n");
    std::fs::write(&path, bytes).unwrap();
    let read = read_file(Source::CLAUDE_CODE, &path, &Cursor::default()).unwrap();
    assert_eq!(read.sessions[0].turns[0].message.content, "caf\u{fffd} au lait");
    assert_eq!(read.warnings[0].line, Some(1));
}

#[test]
fn whole_file_stores_that_are_not_json_fail_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    std::fs::write(&path, "{\n  \"sessionId\": \"x\",\n  \"history\": [\n").unwrap();
    let err = read_file(Source::CONTINUE, &path, &Cursor::default()).unwrap_err();
    assert!(
        err.to_string().contains("broken.json: line 4: not a Continue session"),
        "{err}"
    );
}

#[test]
fn stores_are_found_through_symlinks_and_sessions_matched_to_projects() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let real = dir.path().join("elsewhere/projects");
    install(
        CLAUDE,
        &real.join("-p/0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl"),
        Path::new("/work/proj"),
    );
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::os::unix::fs::symlink(&real, home.join(".claude/projects")).unwrap();
    install(
        CODEX,
        &home
            .join(".codex/sessions/2025/10/01")
            .join(Path::new(CODEX).file_name().unwrap()),
        Path::new("/other"),
    );
    let places = Places::at_home(&home);
    let project = Path::new("/work/proj");
    let claude = find_session_files(Source::CLAUDE_CODE, &places.stores(Source::CLAUDE_CODE, project));
    assert_eq!(claude.len(), 1);
    assert_eq!(
        session_cwd(Source::CLAUDE_CODE, &claude[0].path).as_deref(),
        Some(project)
    );
    let codex = find_session_files(Source::CODEX, &places.stores(Source::CODEX, project));
    assert_eq!(codex.len(), 1);
    assert!(!is_inside(
        &session_cwd(Source::CODEX, &codex[0].path).unwrap(),
        project
    ));
    // A session in a subfolder of the project is the project's; a sibling with a common
    // prefix is not; a folder deleted since still matches as written.
    assert!(is_inside(Path::new("/work/proj/crates/x"), project));
    assert!(!is_inside(Path::new("/work/project2"), project));
}
