//! The `zblade` binary as a user runs it: real processes in temporary project folders.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// An empty models folder: these tests search by keyword, so their expected hits do not depend
/// on an embedding model (tests that need one set `ZBLADE_MODELS_DIR` themselves).
fn no_models() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn zblade_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zblade"))
        .args(args)
        .current_dir(dir)
        .env("ZBLADE_MODELS_DIR", no_models())
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "zblade panicked: {}", run.stderr);
    run
}

fn zblade(dir: &Path, args: &[&str]) -> Run {
    zblade_in(dir, args, None)
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let run = zblade(dir, args);
    assert_eq!(run.code, 0, "zblade {args:?} failed: {}", run.stderr);
    run.stdout
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(dir, &all)).unwrap()
}

/// The hits of `zblade --json search …`.
fn search_hits(dir: &Path, args: &[&str]) -> Value {
    let results = json(dir, args);
    assert!(results["mode"].is_string(), "{results}");
    results["hits"].clone()
}

/// A project with the code its sample conversations reference (`src/auth.ts`, 30 lines): a
/// reference to lines a file does not have is refused when it is added.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    let code: String = (1..=30).map(|i| format!("export const step{i} = {i};\n")).collect();
    write(dir.path(), "src/auth.ts", &code);
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

const JWT: &str = r#"{"title": "Implement JWT authentication", "metadata": {"tags": ["auth"]},
  "messages": [
    {"role": "user", "content": "How do I refresh the JWT when it expires?",
     "code_references": [{"file": "src/auth.ts", "lines": [10, 25]}]},
    {"role": "assistant", "content": "Keep a refresh token in an httpOnly cookie and rotate it on use."}
  ]}"#;

fn artifact_count(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(".zblade/artifacts/conversations"))
        .unwrap()
        .count()
        + std::fs::read_dir(dir.join(".zblade/artifacts/moments"))
            .unwrap()
            .count()
}

#[test]
fn init_creates_the_rfc_layout_and_is_idempotent() {
    let dir = project();
    let z = dir.path().join(".zblade");
    for path in [
        "instructions.md",
        "config/settings.json",
        "artifacts/conversations",
        "artifacts/moments",
        "index/conversations.db",
        "cache",
        ".gitignore",
    ] {
        assert!(z.join(path).exists(), "{path} missing");
    }
    let gitignore = std::fs::read_to_string(z.join(".gitignore")).unwrap();
    assert!(gitignore.lines().any(|l| l == "index/") && gitignore.lines().any(|l| l == "cache/"));
    let settings: Value = serde_json::from_slice(&std::fs::read(z.join("config/settings.json")).unwrap()).unwrap();
    assert_eq!(settings["storage"]["mode"], "local");
    assert_eq!(settings["privacy"]["telemetry"], false);
    assert!(settings["project"]["id"].as_str().unwrap().starts_with("proj_"));

    // The user's words are never overwritten; unknown settings survive while missing ones are added.
    std::fs::write(z.join("instructions.md"), "Use tabs.\n").unwrap();
    std::fs::write(
        z.join("config/settings.json"),
        r#"{"storage": {"mode": "local", "future": 1}, "theme": "dark"}"#,
    )
    .unwrap();
    let report = json(dir.path(), &["init"]);
    assert_eq!(report["settings_completed"], true);
    assert_eq!(
        std::fs::read_to_string(z.join("instructions.md")).unwrap(),
        "Use tabs.\n"
    );
    let settings: Value = serde_json::from_slice(&std::fs::read(z.join("config/settings.json")).unwrap()).unwrap();
    assert_eq!(settings["theme"], "dark");
    assert_eq!(settings["storage"]["future"], 1);
    assert_eq!(settings["context"]["max_tokens"], 8000);
    let again = json(dir.path(), &["init"]);
    assert_eq!(again["created"], serde_json::json!([]));
    assert_eq!(again["settings_completed"], false);
}

#[test]
fn commands_find_the_project_from_a_subdirectory_or_say_how_to_start() {
    let dir = project();
    std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    let status = json(&dir.path().join("src/deep"), &["status"]);
    assert_eq!(status["storage_mode"], "local");

    let empty = tempfile::tempdir().unwrap();
    let run = zblade(empty.path(), &["list", "conversations"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("zblade init"), "{}", run.stderr);
    let run = zblade(empty.path(), &["--project", "/no/such/dir", "status"]);
    assert_eq!(run.code, 1);
}

#[test]
fn add_search_show_and_update_a_conversation() {
    let dir = project();
    write(dir.path(), "jwt.json", JWT);
    let added = json(dir.path(), &["add", "conversation", "jwt.json"]);
    let id = added[0]["id"].as_str().unwrap().to_string();
    assert_eq!(added[0]["created"], true);

    let hits = search_hits(dir.path(), &["search", "jwt"]);
    assert_eq!(hits[0]["conversation_id"], id.as_str());
    assert!(hits[0]["snippet"].as_str().unwrap().contains("«JWT»"));
    let hits = search_hits(dir.path(), &["search", "cookie", "rotation", "--kind", "messages"]);
    assert_eq!(hits[0]["label"], "assistant");

    let shown = json(dir.path(), &["show", &id]);
    assert_eq!(shown["kind"], "conversation");
    assert_eq!(
        shown["conversation"]["messages"][0]["code_references"][0]["file"],
        "src/auth.ts"
    );
    let msg_id = shown["conversation"]["messages"][1]["id"].as_str().unwrap().to_string();
    let shown = json(dir.path(), &["show", &msg_id]);
    assert_eq!(shown["matches"][0]["conversation_id"], id.as_str());

    // Adding the same conversation again (same id, new content) updates it.
    let mut conv: Value = shown_conversation(dir.path(), &id);
    conv["messages"][0]["content"] = "How do we rotate signing keys?".into();
    let updated = json_stdin(dir.path(), &["add", "conversation", "-"], conv.to_string().as_bytes());
    assert_eq!(updated[0]["created"], false);
    assert_eq!(updated[0]["id"], id.as_str());
    assert_eq!(
        json(dir.path(), &["list", "conversations"]).as_array().unwrap().len(),
        1
    );
    assert!(
        search_hits(dir.path(), &["search", "expires"])
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        search_hits(dir.path(), &["search", "signing"])
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let text = ok(dir.path(), &["show", &id]);
    assert!(text.contains("↳ src/auth.ts:10-25"), "{text}");
}

fn shown_conversation(dir: &Path, id: &str) -> Value {
    json(dir, &["show", id])["conversation"].clone()
}

fn json_stdin(dir: &Path, args: &[&str], stdin: &[u8]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let run = zblade_in(dir, &all, Some(stdin));
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn moments_are_added_listed_and_filtered() {
    let dir = project();
    write(
        dir.path(),
        "m.json",
        r#"{"type": "decision", "content": "Refresh tokens live 7 days in Redis", "tags": ["auth"],
        "code_references": [{"file": "src/auth.ts", "lines": [1, 5], "purpose": "token store"}]}"#,
    );
    let added = json(dir.path(), &["add", "moment", "m.json"]);
    let id = added[0]["id"].as_str().unwrap();
    assert!(id.starts_with("moment_"));
    assert_eq!(
        json(dir.path(), &["list", "moments", "--type", "decision"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        json(dir.path(), &["list", "moments", "--type", "pattern"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        search_hits(dir.path(), &["search", "redis", "--kind", "moments"])[0]["id"],
        id
    );
    assert_eq!(
        json(dir.path(), &["show", id])["moment"]["content"],
        "Refresh tokens live 7 days in Redis"
    );

    write(
        dir.path(),
        "orphan.json",
        r#"{"type": "pattern", "content": "x", "conversation_id": "conv_nope"}"#,
    );
    let run = zblade(dir.path(), &["add", "moment", "orphan.json"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("orphan.json") && run.stderr.contains("conversation_id"),
        "{}",
        run.stderr
    );
}

/// Each bad input exits 1 with one line on stderr naming the file and field, and writes nothing.
#[test]
fn bad_input_is_refused_with_file_and_field_and_loses_nothing() {
    let dir = project();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.rs"), "x").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), dir.path().join("src/escape")).unwrap();

    let reference = |file: &str, lines: &str| {
        format!(
            r#"{{"messages": [{{"role": "user", "content": "a", "code_references": [{{"file": "{file}", "lines": {lines}}}]}}]}}"#
        )
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated.json", b"{\"messages\": [{\"role\": \"user\", ".to_vec(), "truncated.json:1:"),
        ("types.json", br#"{"messages": [{"role": "user", "content": ["x"]}]}"#.to_vec(), "messages[0].content"),
        ("role.json", br#"{"messages": [{"role": "robot", "content": "x"}]}"#.to_vec(), "messages[0].role"),
        ("utf8.json", [&b"{\"title\": \"caf"[..], &[0xC3, 0x28], &b"\", \"messages\": []}"[..]].concat(), "utf8.json:1:"),
        ("dup.json", br#"{"messages": [{"id": "m1", "role": "user", "content": "a"}, {"id": "m1", "role": "user", "content": "b"}]}"#.to_vec(), "messages[1].id"),
        ("range.json", reference("src/a.rs", "[50, 10]").into_bytes(), "messages[0].code_references[0].lines"),
        ("abs.json", reference("/etc/passwd", "[1, 2]").into_bytes(), "messages[0].code_references[0].file"),
        ("dotdot.json", reference("../outside.rs", "[1, 2]").into_bytes(), "messages[0].code_references[0].file"),
        ("version.json", br#"{"version": "2.0", "messages": []}"#.to_vec(), "version 2.0"),
        ("id.json", br#"{"conversation_id": "conv_../../x", "messages": []}"#.to_vec(), "conversation_id"),
    ];
    #[cfg(unix)]
    let cases = [
        cases,
        vec![(
            "symlink.json",
            reference("src/escape/secret.rs", "[1, 1]").into_bytes(),
            "symlink",
        )],
    ]
    .concat();
    for (name, bytes, expected) in cases {
        std::fs::write(dir.path().join(name), &bytes).unwrap();
        let run = zblade(dir.path(), &["add", "conversation", name]);
        assert_eq!(run.code, 1, "{name}: {}", run.stderr);
        assert_eq!(
            run.stderr.lines().count(),
            1,
            "{name}: one line expected: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(name) && run.stderr.contains(expected),
            "{name}: {}",
            run.stderr
        );
        assert_eq!(artifact_count(dir.path()), 0, "{name} wrote an artifact");
    }
    let run = zblade(dir.path(), &["--json", "add", "conversation", "missing.json"]);
    assert_eq!(run.code, 1);
    let err: Value = serde_json::from_str(run.stderr.trim()).unwrap();
    assert_eq!(err["error"]["code"], "not_found");
    let run = zblade(dir.path(), &["show", "conv_nothing"]);
    assert_eq!(run.code, 1);
    let run = zblade(dir.path(), &["search", "--limit", "many", "x"]);
    assert_eq!(run.code, 1, "a usage mistake is the user's: exit 1");
}

#[test]
fn any_search_text_is_safe() {
    let dir = project();
    write(dir.path(), "jwt.json", JWT);
    ok(dir.path(), &["add", "conversation", "jwt.json"]);
    for query in [
        r#"" * ( ) : ^ - + { } [ ] NEAR AND OR NOT"#,
        r#""jwt"#,
        r#"jwt""#,
        r#"a"b"c"#,
        "NEAR(",
        "jwt*",
        "\\",
    ] {
        let run = zblade(dir.path(), &["search", query]);
        assert_eq!(run.code, 0, "{query}: {}", run.stderr);
    }
    assert_eq!(
        search_hits(dir.path(), &["search", r#"("jwt"#])
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn fsck_sees_edits_behind_the_index_and_repair_fixes_them() {
    let dir = project();
    for i in 0..3 {
        write(
            dir.path(),
            &format!("c{i}.json"),
            &JWT.replace("JWT authentication", &format!("JWT part {i}")),
        );
    }
    let added = json(dir.path(), &["add", "conversation", "c0.json", "c1.json", "c2.json"]);
    let path = |i: usize| dir.path().join(added[i]["artifact_path"].as_str().unwrap());
    assert_eq!(zblade(dir.path(), &["fsck"]).code, 0);

    std::fs::remove_file(path(0)).unwrap(); // deleted behind the index's back
    // Edited by hand: the conversation with its messages inline (format 1, as `conv export`
    // writes it) put in place of its manifest.
    let id1 = added[1]["id"].as_str().unwrap();
    let exported = zblade(dir.path(), &["conv", "export", id1, "--format", "json"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let edited = exported.stdout.replace("rotate it on use", "rotate it hourly");
    assert_ne!(edited, exported.stdout);
    std::fs::write(path(1), edited).unwrap();
    let unreadable = std::fs::read_to_string(path(2)).unwrap();
    std::fs::write(path(2), &unreadable[..unreadable.len() / 2]).unwrap(); // truncated
    let copy = dir.path().join(".zblade/artifacts/conversations/conv_01NEWFILE.json");
    std::fs::write(
        &copy,
        std::fs::read_to_string(path(1))
            .unwrap()
            .replace(added[1]["id"].as_str().unwrap(), "conv_01NEWFILE"),
    )
    .unwrap();
    std::fs::write(
        dir.path()
            .join(".zblade/artifacts/conversations/.x.json.zblade-tmp-1-2"),
        "partial",
    )
    .unwrap();

    let run = zblade(dir.path(), &["--json", "fsck"]);
    assert_eq!(run.code, 1);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let kinds: Vec<(String, String)> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let has = |kind: &str, path: &Path| kinds.iter().any(|(k, p)| k == kind && path.ends_with(p));
    assert!(has("extra", &path(0)), "{kinds:?}");
    assert!(has("changed", &path(1)), "{kinds:?}");
    assert!(has("unreadable", &path(2)), "{kinds:?}");
    assert!(has("missing", &copy), "{kinds:?}");
    assert!(kinds.iter().any(|(k, _)| k == "leftover"), "{kinds:?}");

    let run = zblade(dir.path(), &["fsck", "--repair"]);
    assert_eq!(
        run.code, 1,
        "the truncated artifact still needs the user: {}",
        run.stdout
    );
    assert!(run.stdout.contains("unreadable"));
    // Changed and missing are both indexed; the copy holds the same message (same id), so it
    // is one hit naming both conversations.
    let hits = search_hits(dir.path(), &["search", "hourly"]);
    assert_eq!(hits.as_array().unwrap().len(), 1, "{hits}");
    let mut holders = vec![
        hits[0]["conversation_id"].as_str().unwrap().to_string(),
        hits[0]["also_in"][0].as_str().unwrap().to_string(),
    ];
    holders.sort();
    let mut expected = vec![id1.to_string(), "conv_01NEWFILE".to_string()];
    expected.sort();
    assert_eq!(holders, expected, "changed + missing indexed");
    let titles = search_hits(dir.path(), &["search", "part", "--kind", "conversations"]);
    assert_eq!(
        titles.as_array().unwrap().len(),
        2,
        "part 1 and its copy; part 0 deleted, part 2 unreadable: {titles}"
    );
    std::fs::write(path(2), unreadable).unwrap();
    assert_eq!(zblade(dir.path(), &["fsck", "--repair"]).code, 0);
    assert_eq!(zblade(dir.path(), &["fsck"]).code, 0);
}

/// Search results without the time they took, which differs from run to run.
fn without_timing(mut results: Value) -> Value {
    results.as_object_mut().map(|o| o.remove("elapsed_ms"));
    results
}

#[test]
fn reindex_gives_the_same_results_as_incremental_indexing() {
    let dir = project();
    let topics = [
        "jwt refresh",
        "cache eviction",
        "jwt rotation",
        "database migration",
        "cache warmup",
    ];
    for (i, topic) in topics.iter().enumerate() {
        write(
            dir.path(),
            &format!("t{i}.json"),
            &format!(
                r#"{{"title": "{topic}", "messages": [{{"role": "user", "content": "tell me about {topic}"}}, {{"role": "assistant", "content": "{topic} works like this, with a cache and a jwt"}}],
                "moments": [{{"type": "pattern", "content": "{topic} pattern"}}]}}"#
            ),
        );
        ok(dir.path(), &["add", "conversation", &format!("t{i}.json")]);
    }
    let queries = [
        vec!["jwt"],
        vec!["cache", "jwt"],
        vec!["pattern", "--kind", "moments"],
        vec!["jwt", "--kind", "conversations"],
        vec!["works", "--limit", "3"],
    ];
    let before: Vec<Value> = queries
        .iter()
        .map(|q| without_timing(json(dir.path(), &[&["search"][..], q].concat())))
        .collect();
    let list_before = json(dir.path(), &["list", "conversations"]);
    let report = json(dir.path(), &["reindex"]);
    assert_eq!(report["conversations"], 5);
    assert_eq!(report["messages"], 10);
    let after: Vec<Value> = queries
        .iter()
        .map(|q| without_timing(json(dir.path(), &[&["search"][..], q].concat())))
        .collect();
    assert_eq!(before, after);
    assert_eq!(list_before, json(dir.path(), &["list", "conversations"]));

    // Deleting the whole index loses nothing: reindex recreates it from the artifacts.
    std::fs::remove_dir_all(dir.path().join(".zblade/index")).unwrap();
    ok(dir.path(), &["reindex"]);
    let rebuilt: Vec<Value> = queries
        .iter()
        .map(|q| without_timing(json(dir.path(), &[&["search"][..], q].concat())))
        .collect();
    assert_eq!(before, rebuilt);
}

#[test]
fn a_damaged_index_is_reported_and_rebuilt() {
    let dir = project();
    write(dir.path(), "jwt.json", JWT);
    ok(dir.path(), &["add", "conversation", "jwt.json"]);
    let db = dir.path().join(".zblade/index/conversations.db");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::write(&db, vec![0x5a; 16384]).unwrap();
    let run = zblade(dir.path(), &["search", "jwt"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("zblade reindex"), "{}", run.stderr);
    assert!(
        json(dir.path(), &["status"])["index_health"]
            .as_str()
            .unwrap()
            .starts_with("corrupt")
    );
    let report = json(dir.path(), &["reindex"]);
    assert_eq!(report["recreated_database"], true);
    assert_eq!(search_hits(dir.path(), &["search", "jwt"]).as_array().unwrap().len(), 1);
}

#[test]
fn unreadable_artifacts_do_not_block_the_others() {
    let dir = project();
    write(dir.path(), "jwt.json", JWT);
    ok(dir.path(), &["add", "conversation", "jwt.json"]);
    write(
        dir.path(),
        ".zblade/artifacts/conversations/conv_broken.json",
        "{\"version\": \"1.0\", \"conversation_id\": \"conv_broken\", \"messages\": [",
    );
    write(
        dir.path(),
        ".zblade/artifacts/conversations/conv_future.json",
        r#"{"version": "9.0", "conversation_id": "conv_future"}"#,
    );
    let report = json(dir.path(), &["reindex"]);
    assert_eq!(report["conversations"], 1);
    let skipped = report["skipped"].to_string();
    assert!(
        skipped.contains("conv_broken.json") && skipped.contains("conv_future.json") && skipped.contains("version 9.0"),
        "{skipped}"
    );
    assert_eq!(search_hits(dir.path(), &["search", "jwt"]).as_array().unwrap().len(), 1);
}

#[test]
fn two_processes_adding_at_once_both_land() {
    let dir = project();
    let files: Vec<String> = (0..16)
        .map(|i| {
            let name = format!("c{i}.json");
            write(
                dir.path(),
                &name,
                &JWT.replace("JWT authentication", &format!("parallel {i}")),
            );
            name
        })
        .collect();
    // Two batches of processes, each batch started together, hammer the same project.
    let children: Vec<_> = files
        .iter()
        .map(|f| {
            Command::new(env!("CARGO_BIN_EXE_zblade"))
                .args(["add", "conversation", f])
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            !stderr.to_lowercase().contains("busy") && !stderr.contains("locked"),
            "{stderr}"
        );
    }
    assert_eq!(
        json(dir.path(), &["list", "conversations", "--limit", "100"])
            .as_array()
            .unwrap()
            .len(),
        16
    );
    assert_eq!(zblade(dir.path(), &["fsck"]).code, 0);
    assert_eq!(json(dir.path(), &["status"])["index_health"], "ok");
}

#[test]
fn help_explains_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(dir.path(), &["--help"]);
    for command in ["init", "add", "list", "show", "search", "reindex", "fsck", "status"] {
        assert!(help.contains(command), "{command} missing from --help");
    }
    assert!(ok(dir.path(), &["search", "--help"]).contains("--kind"));
}

#[test]
fn one_bad_file_among_several_adds_nothing() {
    let dir = project();
    write(dir.path(), "good.json", JWT);
    write(dir.path(), "bad.json", r#"{"messages": [{"role": "user"}]}"#);
    let run = zblade(dir.path(), &["add", "conversation", "good.json", "bad.json"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("bad.json") && run.stderr.contains("content"),
        "{}",
        run.stderr
    );
    assert_eq!(artifact_count(dir.path()), 0);
}

#[test]
fn secrets_are_never_captured_or_shown() {
    let dir = project();
    let root = dir.path();
    write(root, ".env", "API_KEY=sk-live-zanzibar\n");
    write(root, "deploy/server.pem", "-----BEGIN PRIVATE KEY-----\nzanzibar\n");
    write(
        root,
        ".git/config",
        "[remote \"origin\"]\nurl = https://zanzibar:token@example.com/x\n",
    );
    write(root, "src/app.rs", "fn zanzibar_handler() {}\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join(".env"), root.join("notes.txt")).unwrap();

    // Capture: a conversation naming a secret is refused with the field, and nothing is added.
    for file in [
        ".env",
        "deploy/server.pem",
        ".git/config",
        ".zblade/config/settings.json",
    ] {
        let conv = format!(
            r#"{{"title": "t", "messages": [{{"role": "user", "content": "see", "code_references": [{{"file": "{file}", "lines": [1, 1]}}]}}]}}"#
        );
        write(root, "c.json", &conv);
        let run = zblade(root, &["add", "conversation", "c.json"]);
        assert_eq!(run.code, 1, "{file}: {}", run.stderr);
        assert!(run.stderr.contains("code_references[0].file"), "{file}: {}", run.stderr);
        assert_eq!(artifact_count(root), 0);
    }

    // An artifact that arrived some other way (an older zblade, a hand edit) still never shows them.
    let artifact = r#"{"version": "1.0", "conversation_id": "conv_SECRETS", "project_id": "", "title": "Secrets",
      "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
      "messages": [{"id": "msg_1", "role": "user", "content": "look at these", "timestamp": "2026-01-01T00:00:00Z",
        "code_references": [{"file": ".env", "lines": [1, 1]}, {"file": "notes.txt", "lines": [1, 1]},
                            {"file": "deploy/server.pem", "lines": [1, 2]}, {"file": "src/app.rs", "lines": [1, 1]}]}]}"#;
    write(root, ".zblade/artifacts/conversations/conv_SECRETS.json", artifact);
    ok(root, &["reindex"]);
    ok(root, &["index"]);
    let mut seen = String::new();
    for args in [
        &["show", "conv_SECRETS"][..],
        &["--json", "show", "conv_SECRETS"],
        &["search", "zanzibar", "--mode", "keyword"],
        &["search", "zanzibar", "--kind", "code", "--mode", "keyword"],
        &[
            "context",
            "zanzibar @file:.env @file:notes.txt @file:deploy/server.pem",
            "--budget",
            "4000",
        ],
        &["refs", "check"],
    ] {
        let run = zblade(root, args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        seen.push_str(&run.stdout);
        for secret in ["sk-live", "BEGIN PRIVATE KEY", "token@example"] {
            assert!(!run.stdout.contains(secret), "{args:?} showed {secret}: {}", run.stdout);
        }
    }
    // The project's own code is still there.
    assert!(seen.contains("zanzibar_handler"), "{seen}");
}

/// Issue 57: each bad input gets a non-zero exit naming the file and the field, and nothing is
/// written.
#[test]
fn bad_input_is_refused_with_the_file_and_field_named() {
    let dir = project();
    let root = dir.path();
    let refused = |args: &[&str], expect: &[&str]| {
        let run = zblade(root, args);
        assert_ne!(run.code, 0, "zblade {args:?} was accepted: {}", run.stdout);
        for word in expect {
            assert!(
                run.stderr.contains(word),
                "zblade {args:?}: {word:?} missing from {}",
                run.stderr
            );
        }
        assert_eq!(artifact_count(root), 0, "zblade {args:?} wrote something");
    };
    // A moment given as a conversation, and a misspelt `messages`.
    write(
        root,
        "moment.json",
        r#"{"type": "decision", "content": "Tokens live 7 days"}"#,
    );
    refused(
        &["add", "conversation", "moment.json"],
        &["moment.json", "messages", "add moment"],
    );
    write(
        root,
        "typo.json",
        r#"{"title": "t", "mesages": [{"role": "user", "content": "hi"}]}"#,
    );
    refused(
        &["add", "conversation", "typo.json"],
        &["typo.json", "messages", "mesages"],
    );
    // References past the end of a file, or to a file that is not there.
    let past_end = JWT.replace("[10, 25]", "[20, 40]");
    write(root, "past.json", &past_end);
    refused(
        &["add", "conversation", "past.json"],
        &["past.json", "code_references[0].lines", "30 line"],
    );
    write(root, "gone.json", &JWT.replace("src/auth.ts", "src/gone.ts"));
    refused(
        &["add", "conversation", "gone.json"],
        &["gone.json", "code_references[0].file", "src/gone.ts"],
    );
    write(
        root,
        "m.json",
        r#"{"type": "decision", "content": "x", "code_references": [{"file": "src/auth.ts", "lines": [31, 31]}]}"#,
    );
    refused(&["add", "moment", "m.json"], &["m.json", "code_references[0].lines"]);

    write(root, "jwt.json", JWT);
    ok(root, &["add", "conversation", "jwt.json"]);
    // Impossible searches are usage errors; an unknown conversation is not found.
    for (args, expect) in [
        (vec!["search", "jwt", "--limit", "0"], "at least 1"),
        (vec!["search", "jwt", "--path", "../"], ".."),
        (vec!["search", "jwt", "--path", "/etc"], "absolute"),
        (
            vec!["search", "jwt", "--conversation", "conv_doesnotexist"],
            "conv_doesnotexist",
        ),
    ] {
        let run = zblade(root, &args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stdout);
        assert!(run.stderr.contains(expect), "{args:?}: {}", run.stderr);
    }
    // `--path .` and `./src` mean the project and src.
    assert_eq!(zblade(root, &["search", "jwt", "--path", "./src"]).code, 0);
    assert_eq!(zblade(root, &["search", "jwt", "--path", "."]).code, 0);
    // Semantic search without a model says so and how to fix it, instead of searching keywords.
    let no_models = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_zblade"))
        .args(["search", "jwt", "--mode", "semantic"])
        .current_dir(root)
        .env("ZBLADE_MODELS_DIR", no_models.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stdout));
    assert!(
        stderr.contains("semantic search cannot run") && stderr.contains("model"),
        "{stderr}"
    );
}

#[test]
fn a_conversation_without_an_id_added_twice_is_updated_not_copied() {
    let dir = project();
    write(dir.path(), "jwt.json", JWT);
    let first = json(dir.path(), &["add", "conversation", "jwt.json"]);
    let again = json(dir.path(), &["add", "conversation", "jwt.json"]);
    assert_eq!(first[0]["id"], again[0]["id"]);
    assert_eq!(again[0]["created"], false);
    assert_eq!(
        json(dir.path(), &["list", "conversations"]).as_array().unwrap().len(),
        1
    );
    // Another conversation is another id.
    write(dir.path(), "other.json", &JWT.replace("JWT authentication", "Sessions"));
    let other = json(dir.path(), &["add", "conversation", "other.json"]);
    assert_ne!(other[0]["id"], first[0]["id"]);
}

#[test]
fn an_import_that_reads_nothing_exits_1() {
    let dir = project();
    write(
        dir.path(),
        "garbage.jsonl",
        "this is not a session\n{\"neither\": \"is this\"\n",
    );
    let run = zblade(dir.path(), &["import", "claude-code", "garbage.jsonl"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("garbage.jsonl"), "{}", run.stderr);
}

/// One corpus of secret shapes, through `add conversation`, `add moment` and `add document`:
/// none of them reaches the artifacts, the index or `history`.
#[test]
fn secrets_anywhere_in_a_line_are_redacted_by_every_add() {
    let dir = project();
    let root = dir.path();
    let secrets = [
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789abcdefghijABCDEFGHIJ0123456789",
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "hunter2-zanzibar",
    ];
    let line = format!(
        "deploy with aws key {} and {} then run API_TOKEN=hunter2-zanzibar npm publish using {}",
        secrets[0], secrets[1], secrets[2]
    );
    let conversation = serde_json::json!({"title": "Deploy", "messages": [
        {"role": "user", "content": line},
        {"role": "assistant", "content": "ok", "tool_calls": [{"id": "t1", "name": "bash",
          "arguments": {"command": format!("export DB_PASSWORD={}", secrets[3])}}]}]});
    write(root, "c.json", &conversation.to_string());
    let added = zblade(root, &["add", "conversation", "c.json"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(added.stderr.contains("redacted"), "{}", added.stderr);
    write(
        root,
        "m.json",
        &serde_json::json!({"type": "context", "content": line}).to_string(),
    );
    ok(root, &["add", "moment", "m.json"]);
    write(root, "notes.md", &format!("# Deploy\n\nWe ran `{line}` last time.\n"));
    ok(root, &["add", "document", "notes.md"]);
    let mut stored = String::new();
    for entry in walk(&root.join(".zblade")) {
        if let Ok(text) = std::fs::read(&entry) {
            stored.push_str(&String::from_utf8_lossy(&text));
        }
    }
    stored.push_str(&ok(root, &["history"]));
    for secret in secrets {
        assert!(!stored.contains(secret), "{secret} was stored");
    }
    assert!(stored.contains("[REDACTED:"), "nothing was redacted");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The smart tier's pointers print `zblade show CONVERSATION/MESSAGE`: that command works, and a
/// message of another conversation under that name is not found.
#[test]
fn show_takes_the_pointer_form_conversation_slash_message() {
    let dir = project();
    write(dir.path(), "jwt.json", JWT);
    let id = json(dir.path(), &["add", "conversation", "jwt.json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let message = shown_conversation(dir.path(), &id)["messages"][1]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = json(dir.path(), &["show", &format!("{id}/{message}")]);
    assert_eq!(shown["matches"].as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(shown["matches"][0]["conversation_id"], id.as_str());
    let run = zblade(dir.path(), &["show", &format!("conv_other/{message}")]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("conv_other"), "{}", run.stderr);
    let run = zblade(dir.path(), &["show", &format!("{id}/../x")]);
    assert_eq!(run.code, 1, "{}", run.stdout);
}

/// A `zblade serve` for a project, stopped when dropped.
struct Served(std::process::Child);

impl Served {
    /// Starts one and waits until it says it serves.
    fn start(root: &Path) -> Served {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_zblade"))
            .arg("--project")
            .arg(root)
            .arg("serve")
            .env("ZBLADE_MODELS_DIR", no_models())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = String::new();
        for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            said.push_str(&line);
            if line.contains("serving on") {
                return Served(child);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("zblade serve stopped before serving: {said}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `zblade` is a front door (src/front.rs): with a warm engine it answers `zblade context`
/// without the full program (shown by a copy of it with no `zblade-cli` beside it), exactly as
/// the full program prints it; everything else, and everything without an engine, it hands to
/// the full program, and alone it says what is missing.
#[test]
fn the_front_door_answers_a_warm_context_itself_and_hands_on_the_rest() {
    let dir = project();
    let root = dir.path();
    write(root, "jwt.json", JWT);
    ok(root, &["add", "conversation", "jwt.json"]);
    let full = Path::new(env!("CARGO_BIN_EXE_zblade")).with_file_name("zblade-cli");
    let full_program = |args: &[&str]| {
        let out = Command::new(&full)
            .args(args)
            .current_dir(root)
            .env("ZBLADE_MODELS_DIR", no_models())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let alone = tempfile::tempdir().unwrap();
    let lone_front = alone.path().join("zblade");
    std::fs::copy(env!("CARGO_BIN_EXE_zblade"), &lone_front).unwrap();
    let lone = |args: &[&str]| {
        Command::new(&lone_front)
            .args(args)
            .current_dir(root.join("src")) // the project is found from below, as the CLI finds it
            .output()
            .unwrap()
    };
    let ask = ["context", "--budget", "600", "refresh", "the", "JWT"];
    let cold = full_program(&ask);
    assert!(cold.contains("httpOnly cookie"), "{cold}");

    // No engine: the lone front door cannot answer and says why.
    let out = lone(&ask);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot find the zblade-cli program"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let _engine = Served::start(root);
    let out = lone(&ask);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        cold,
        "the warm answer is the cold one"
    );
    // The whole result too: the same pack as the full program's JSON.
    let mut whole = vec!["--json"];
    whole.extend_from_slice(&ask);
    let out = lone(&whole);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let front: Value = serde_json::from_slice(&out.stdout).unwrap();
    let theirs: Value = serde_json::from_str(&full_program(&whole)).unwrap();
    assert_eq!(front["text"], theirs["text"]);
    assert_eq!(front["text"].as_str().unwrap(), cold);
    // What the front door does not answer goes to the full program, which the lone copy lacks.
    for other in [&["search", "jwt"][..], &["context", "--receipt", "jwt"], &["--help"]] {
        let out = lone(other);
        assert_eq!(out.status.code(), Some(2), "{other:?}");
    }
    // Through the real front door (the full program beside it), all of it works.
    assert_eq!(ok(root, &ask), cold);
    assert!(ok(root, &["context", "--receipt", "refresh", "JWT"]).contains("httpOnly cookie"));
    assert!(ok(root, &["--help"]).contains("Usage: zblade"));
}

/// `zblade hook prompt` on the fast path: with a warm engine the front door prints the hook's
/// answer itself, byte for byte what the full program prints cold; without one it hands the
/// event it read from stdin on to the full program, which answers it.
#[test]
fn the_front_door_answers_a_prompt_hook_from_the_warm_engine_and_hands_the_event_on_without_one() {
    use std::io::Write as _;
    let dir = project();
    let root = dir.path();
    write(root, "jwt.json", JWT);
    ok(root, &["add", "conversation", "jwt.json"]);
    let hook_bytes = |program: &Path, agent: &str, event: &[u8]| {
        let mut child = Command::new(program)
            .args(["hook", "prompt", "--agent", agent])
            .current_dir(root)
            .env("ZBLADE_MODELS_DIR", no_models())
            .env("ZBLADE_NO_AUTO_SERVE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(event).unwrap();
        child.wait_with_output().unwrap()
    };
    let hook = |program: &Path, agent: &str, event: &Value| hook_bytes(program, agent, event.to_string().as_bytes());
    let front = Path::new(env!("CARGO_BIN_EXE_zblade"));
    let alone = tempfile::tempdir().unwrap();
    let lone_front = alone.path().join("zblade");
    std::fs::copy(front, &lone_front).unwrap();
    let claude = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "s-1",
        "prompt": "how do we refresh the JWT?"});
    let gemini = serde_json::json!({"hook_event_name": "BeforeAgent", "prompt": "how do we refresh the JWT?"});

    // No engine: the front door hands the event on, and the full program answers it cold.
    let cold = hook(front, "claude-code", &claude);
    assert!(cold.status.success());
    let cold_text = String::from_utf8(cold.stdout).unwrap();
    assert!(cold_text.starts_with(zblade_engine::DATA_NOTICE), "{cold_text}");
    assert!(cold_text.contains("httpOnly cookie"), "{cold_text}");
    let cold_gemini = String::from_utf8(hook(front, "gemini-cli", &gemini).stdout).unwrap();
    let parsed: Value = serde_json::from_str(&cold_gemini).unwrap();
    assert_eq!(parsed["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
    // The lone copy cannot hand it on, and says so.
    let out = hook(&lone_front, "claude-code", &claude);
    assert_eq!(out.status.code(), Some(2));

    let _engine = Served::start(root);
    // A point-of-action answer kept for the session is stale once a new prompt comes.
    let actions = root.join(".zblade/cache/actions");
    std::fs::create_dir_all(&actions).unwrap();
    std::fs::write(actions.join("s-1.json"), "{}").unwrap();
    let warm = hook(&lone_front, "claude-code", &claude);
    assert!(warm.status.success(), "{}", String::from_utf8_lossy(&warm.stderr));
    assert_eq!(
        String::from_utf8(warm.stdout).unwrap(),
        cold_text,
        "the warm answer is the cold one"
    );
    assert!(
        !actions.join("s-1.json").exists(),
        "the session's point-of-action answers were cleared"
    );
    let warm_gemini = hook(&lone_front, "gemini-cli", &gemini);
    assert_eq!(String::from_utf8(warm_gemini.stdout).unwrap(), cold_gemini);
    // Nothing asked: nothing printed, by the engine's word.
    let empty = hook(&lone_front, "claude-code", &serde_json::json!({"prompt": "  "}));
    assert!(empty.status.success() && empty.stdout.is_empty());
    // What the engine refuses (an agent it does not know) and what is not JSON go to the full
    // program, which the lone copy lacks; through the real front door it says what is wrong.
    assert_eq!(hook(&lone_front, "no-such-agent", &claude).status.code(), Some(2));
    let unknown = hook(front, "no-such-agent", &claude);
    assert!(unknown.status.success(), "a hook never fails the prompt");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown agent"));
    let garbage = b"\xff{not json";
    assert_eq!(hook_bytes(&lone_front, "claude-code", garbage).status.code(), Some(2));
    let garbled = hook_bytes(front, "claude-code", garbage);
    assert!(garbled.status.success() && garbled.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&garbled.stderr).contains("not JSON"),
        "the full program read the same bytes"
    );
}
