//! Decisions that stand (issue 59): a real git repository's commits as memory, line
//! attribution that names the commit that broke a decision, `zblade why`, and amended
//! decisions marked superseded — through the CLI and the engine.

use std::process::Command;

use zblade_engine::{ContextRequest, Project};
use zblade_tests::{GitFixture, code_lines, json, stderr, zblade_bin};

fn zblade(root: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(zblade_bin())
        .current_dir(root)
        .args(args)
        .output()
        .unwrap()
}

fn ok_json(root: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = zblade(root, args);
    assert!(out.status.success(), "zblade {args:?}: {}", stderr(&out));
    json(&out)
}

/// `src/auth.rs` with its lines 5-6 replaced by `lines`.
fn auth_with(lines: [&str; 2]) -> String {
    let mut all: Vec<String> = code_lines(20).lines().map(String::from).collect();
    all[4] = lines[0].to_string();
    all[5] = lines[1].to_string();
    all.join("\n") + "\n"
}

#[test]
fn a_commits_decision_is_searched_packed_with_its_lines_status_and_named_by_why() {
    let repo = GitFixture::new(&[("src/auth.rs", &code_lines(20)), ("README.md", "auth\n")]);
    let root = repo.root();
    std::fs::write(
        root.join("src/auth.rs"),
        auth_with(["refresh_ahead(token, 30)", "never_refresh_on_401()"]),
    )
    .unwrap();
    repo.commit(
        "fix: refresh tokens before expiry, not on 401\n\nThe gateway double-counts retried calls, so a refresh after a 401 cost two attempts.",
    );
    let fix = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    // A later commit on other lines of the same file leaves the decision's lines standing.
    let mut text = std::fs::read_to_string(root.join("src/auth.rs")).unwrap();
    text.push_str("fn later() {}\n");
    std::fs::write(root.join("src/auth.rs"), &text).unwrap();
    repo.commit("feat: a later helper");
    assert!(zblade(root, &["init"]).status.success());
    let index = zblade(root, &["index"]);
    assert!(index.status.success(), "{}", stderr(&index));

    let found = ok_json(
        root,
        &["search", "--kind", "commits", "gateway", "double", "counts", "--json"],
    );
    assert_eq!(found["hits"][0]["kind"], "commit");
    assert_eq!(found["hits"][0]["id"], fix);
    let why = ok_json(root, &["why", "src/auth.rs:5-6", "--json"]);
    assert_eq!(why["commits"][0]["sha"], fix, "{why:#}");
    assert_eq!(why["commits"][0]["role"], "wrote");
    assert_eq!(why["commits"][0]["status"], "its 2 line(s) are unchanged");

    // The regression: a commit with a misleading subject rewrites one of the decision's lines.
    let text = text.replace("never_refresh_on_401()", "refresh_on_401()");
    std::fs::write(root.join("src/auth.rs"), text).unwrap();
    repo.commit("refactor: tidy auth");
    let tidy = repo.git(&["rev-parse", "--short=7", "HEAD"]).trim().to_string();
    let index = ok_json(root, &["index", "--json"]);
    assert_eq!(index["history"]["read"], 1, "only the new commit is read: {index:#}");
    let why = ok_json(root, &["why", "src/auth.rs:6", "--json"]);
    let commits = why["commits"].as_array().unwrap();
    assert_eq!(commits[0]["subject"], "refactor: tidy auth");
    let replaced = commits
        .iter()
        .find(|c| c["sha"] == fix.as_str())
        .expect("the fix is named");
    assert_eq!(replaced["role"], "replaced");
    let status = replaced["status"].as_str().unwrap();
    assert!(
        status.contains(&format!("changed since by {tidy} 'refactor: tidy auth'")),
        "{status}"
    );

    // The pack names the regression beside the decision, and never shows the old code.
    let pack = ok_json(
        root,
        &[
            "context",
            "--budget",
            "2000",
            "--no-gate",
            "--json",
            "gateway double counts retried calls",
        ],
    );
    let text = pack["text"].as_str().unwrap();
    assert!(text.contains(&format!("<commit sha=\"{}\"", &fix[..12])), "{text}");
    assert!(text.contains("changed since by"), "{text}");
    assert!(
        !text.contains("never_refresh_on_401"),
        "old code presented as current:\n{text}"
    );

    let shown = ok_json(root, &["show", &fix[..8], "--json"]);
    assert_eq!(shown["kind"], "commit");
    assert_eq!(shown["commit"]["sha"], fix);
    let listed = ok_json(root, &["list", "commits", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 4);
    assert_eq!(listed[0]["subject"], "refactor: tidy auth");
    // Bad input is a clear error.
    let bad = zblade(root, &["why", "src/auth.rs:9-3"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("START-END"), "{}", stderr(&bad));
    let outside = zblade(root, &["why", "../etc/passwd"]);
    assert!(!outside.status.success());
}

#[test]
fn rewritten_history_and_a_folder_without_git_are_notes_not_errors() {
    let repo = GitFixture::new(&[("a.txt", "one\n")]);
    let root = repo.root();
    std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
    repo.commit("two");
    let (mut project, _) = Project::init(root).unwrap();
    assert_eq!(project.index_history().unwrap().read, 2);
    repo.git(&["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(root.join("b.txt"), "b\n").unwrap();
    repo.commit("other");
    let again = project.index_history().unwrap();
    assert!(again.from_scratch);
    assert!(again.notes.iter().any(|n| n.contains("rewritten")), "{:?}", again.notes);
    assert_eq!(project.list_commits(10, 0).unwrap().len(), 2);

    let plain = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(plain.path()).unwrap();
    let report = project.index_history().unwrap();
    assert_eq!(report.commits, 0);
    assert!(report.notes[0].contains("not a git repository"));
    assert!(project.why("a.txt", None).unwrap().notes[0].contains("not a git repository"));
}

fn chat(id: &str, day: u32, text: &str) -> String {
    serde_json::json!({
        "conversation_id": id,
        "title": text.chars().take(40).collect::<String>(),
        "messages": [
            {"id": "m0", "role": "user", "content": "How do we round invoice totals?",
             "timestamp": format!("2026-03-{day:02}T09:00:00Z")},
            {"id": "m1", "role": "assistant", "content": text,
             "timestamp": format!("2026-03-{day:02}T09:01:00Z")}
        ]
    })
    .to_string()
}

#[test]
fn an_amended_decision_is_packed_with_its_amendment_and_marked_superseded() {
    let dir = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(dir.path()).unwrap();
    project
        .add_conversation(
            chat(
                "conv_old",
                1,
                "Invoice totals: round each line item to cents, then sum the lines.",
            )
            .as_bytes(),
            "old.json",
        )
        .unwrap();
    project
        .add_conversation(
            chat("conv_new", 20, "Amended: invoice totals sum the unrounded line items and round the total once, as the auditors now ask.").as_bytes(),
            "new.json",
        )
        .unwrap();
    let ask = |project: &Project| {
        let request = ContextRequest {
            min_relevance: Some(0.0),
            budget: Some(2000),
            ..ContextRequest::new("how are invoice totals rounded")
        };
        project.context(&request).unwrap().pack.text
    };
    // Unmarked, the later conversation is found to revisit the earlier one.
    let text = ask(&project);
    assert!(text.contains("state=\"earlier; revisited by conv_new\""), "{text}");
    assert!(
        text.find("conv_new") < text.find("conv_old"),
        "the amendment comes first:\n{text}"
    );

    // Said by a person: written into the artifact, kept by reindex, shown in the pack.
    let state = project.supersede("conv_old", "conv_new").unwrap();
    assert_eq!(state.describe(), "superseded by conv_new");
    let artifact = std::fs::read_to_string(project.layout().conversation_path("conv_old")).unwrap();
    assert!(artifact.contains("\"superseded\""), "{artifact}");
    project.reindex().unwrap();
    assert_eq!(project.decision_states().unwrap().len(), 1);
    let text = ask(&project);
    assert!(text.contains("state=\"superseded by conv_new\""), "{text}");
    assert!(project.supersede("conv_new", "conv_old").is_err(), "a loop is refused");
    assert!(project.supersede("conv_old", "conv_missing").is_err());
    assert!(
        project.reject("conv_old", "  ").is_err(),
        "a rejection needs its reason"
    );
    project.reject("conv_new", "the auditors withdrew the request").unwrap();
    let text = ask(&project);
    assert!(
        text.contains("state=\"rejected: the auditors withdrew the request\""),
        "{text}"
    );
    project.reinstate("conv_new").unwrap();
    project.reinstate("conv_old").unwrap();
    assert!(project.decision_states().unwrap().is_empty());
}

/// Runs `zblade hook pre-tool` with `event` on stdin.
fn pre_tool(root: &std::path::Path, event: &serde_json::Value) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(zblade_bin())
        .current_dir(root)
        .args(["hook", "pre-tool"])
        .env("ZBLADE_NO_AUTO_SERVE", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn an_agent_about_to_edit_lines_is_told_the_decision_behind_them_and_nothing_elsewhere() {
    let repo = GitFixture::new(&[("src/auth.rs", &code_lines(20)), ("src/other.rs", &code_lines(20))]);
    let root = repo.root();
    std::fs::write(
        root.join("src/auth.rs"),
        auth_with(["refresh_ahead(token, 30)", "never_refresh_on_401()"]),
    )
    .unwrap();
    repo.commit(
        "fix: refresh tokens before expiry, not on 401\n\nThe gateway double-counts retried calls, so a refresh after a 401 cost two attempts.",
    );
    assert!(zblade(root, &["init"]).status.success());
    assert!(zblade(root, &["index"]).status.success());
    let auth = root.join("src/auth.rs");
    // Claude Code's PreToolUse for an Edit of the decision's lines.
    let edit = serde_json::json!({
        "session_id": "s-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": auth, "old_string": "never_refresh_on_401()", "new_string": "refresh_on_401()"},
    });
    let out = pre_tool(root, &edit);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON answer");
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    let context = answer["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains("double-counts retried calls"), "{context}");
    assert!(context.contains("src/auth.rs lines 6-6"), "{context}");
    // Asked again in the same turn: the same answer, from the session's cache.
    let again = pre_tool(root, &edit);
    assert_eq!(again.stdout, out.stdout);
    assert!(root.join(".zblade/cache/actions/s-1.json").is_file());

    // With a warm engine running, a new session's question is answered by it, the same way.
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&asked);
    let project = std::sync::Mutex::new(Project::open(root).unwrap());
    let server = zblade_engine::warm::serve(root, move |request| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        zblade_engine::warm::handle(&project.lock().unwrap(), &request)
    })
    .unwrap();
    let mut fresh = edit.clone();
    fresh["session_id"] = "s-2".into();
    let warm = pre_tool(root, &fresh);
    assert_eq!(warm.stdout, out.stdout, "{}", stderr(&warm));
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    drop(server);

    // A file whose lines carry no explained decision: nothing at all.
    let other = serde_json::json!({
        "session_id": "s-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": root.join("src/other.rs"), "offset": 1, "limit": 5},
    });
    let out = pre_tool(root, &other);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Outside the project, a path that escapes it, and garbage: nothing, and exit 0.
    for input in [
        serde_json::json!({"tool_input": {"file_path": "/etc/passwd"}}),
        serde_json::json!({"tool_input": {"file_path": "../../etc/passwd"}}),
        serde_json::json!({"tool_input": {"file_path": 42}}),
    ] {
        let out = pre_tool(root, &input);
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "{input}: {}",
            stderr(&out)
        );
    }
}
