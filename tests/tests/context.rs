//! `zblade context` end to end: a real git working tree, the `zblade` binary, and the bad cases
//! of issue 5 (a budget smaller than the instructions, a 100 KB query, references that name
//! nothing or lead outside the project).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use zblade_tests::{GitFixture, json, zblade_bin};

const AUTH: &str = "//! Authentication.\n\npub fn refresh_jwt(expired: &str) -> String {\n    rotate_signing_key(expired)\n}\n\npub fn logout() {}\n";

fn zblade(root: &Path, args: &[&str]) -> Output {
    Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args(args)
        .output()
        .expect("zblade runs")
}

fn add(root: &Path, kind: &str, name: &str, body: &Value) {
    let file = root.join(name);
    std::fs::write(&file, body.to_string()).unwrap();
    json(&zblade(root, &["--json", "add", kind, file.to_str().unwrap()]));
    std::fs::remove_file(file).unwrap();
}

/// A project with a conversation about refreshing JWTs that references `src/auth.rs` lines
/// 3-5, an unrelated conversation, and a decision.
fn fixture() -> GitFixture {
    let repo = GitFixture::new(&[("src/auth.rs", AUTH)]);
    json(&zblade(repo.root(), &["--json", "init"]));
    std::fs::write(
        repo.root().join(".zblade/instructions.md"),
        "Answer in British English. Never log tokens.\n",
    )
    .unwrap();
    add(
        repo.root(),
        "conversation",
        "auth.json",
        &serde_json::json!({
            "conversation_id": "conv_auth",
            "title": "JWT refresh",
            "messages": [
                {"id": "msg_1", "role": "user", "content": "How do we refresh the JWT when it expires?",
                 "timestamp": "2026-11-01T10:00:00Z",
                 "code_references": [{"file": "src/auth.rs", "lines": [3, 5]}]},
                {"id": "msg_2", "role": "assistant", "content": "refresh_jwt rotates the signing key and returns a new token.",
                 "timestamp": "2026-11-01T10:01:00Z"},
                {"id": "msg_3", "role": "user", "content": "And logout just drops the session.",
                 "timestamp": "2026-11-01T10:02:00Z"}
            ]
        }),
    );
    add(
        repo.root(),
        "conversation",
        "cache.json",
        &serde_json::json!({
            "conversation_id": "conv_cache",
            "title": "Cache eviction",
            "messages": [{"id": "msg_1", "role": "user", "content": "Which cache eviction policy do we use? LRU with a TTL.",
                          "timestamp": "2026-10-01T09:00:00Z"}]
        }),
    );
    add(
        repo.root(),
        "moment",
        "decision.json",
        &serde_json::json!({
            "id": "moment_jwt",
            "type": "decision",
            "content": "JWT refresh rotates the signing key every time; refresh tokens expire after 7 days.",
            "tags": ["auth", "jwt"]
        }),
    );
    repo
}

fn context(root: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json", "context", "--mode", "keyword"];
    all.extend_from_slice(args);
    json(&zblade(root, &all))
}

fn receipt_line<'a>(result: &'a Value, key: &str) -> &'a Value {
    result["receipt"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["key"] == key)
        .unwrap_or_else(|| panic!("no receipt line for {key}: {:#}", result["receipt"]))
}

#[test]
fn packs_memory_and_current_code_within_the_budget() {
    let repo = fixture();
    let root = repo.root();
    let result = context(root, &["how do we refresh the jwt?", "--budget", "2000"]);
    let tokens = result["tokens"].as_u64().unwrap();
    assert!(tokens > 0 && tokens <= 2000, "{tokens}");
    assert_eq!(result["tokenizer"], "cl100k_base");
    let text = result["text"].as_str().unwrap();
    assert!(text.starts_with("<unlimited_context>"), "{text}");
    assert!(text.contains("Never log tokens."), "instructions are always in");
    assert!(text.contains("<moment id=\"moment_jwt\" type=\"decision\""), "{text}");
    assert!(
        text.contains("<session id=\"conv_auth\" title=\"JWT refresh\">"),
        "{text}"
    );
    // The referenced code, read from the working tree now, with its status next to it.
    assert!(
        text.contains("<code path=\"src/auth.rs\" lines=\"3-5\" status=\"ok\">\npub fn refresh_jwt"),
        "{text}"
    );
    // The receipt explains every candidate.
    assert_eq!(receipt_line(&result, "instructions")["reason"], "always included");
    let moment = receipt_line(&result, "moment_jwt");
    assert_eq!(moment["included"], true);
    assert_eq!(moment["score"]["type_weight"], 1.3);
    assert!(
        result["receipt"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["reason"].as_str().is_some_and(|r| !r.is_empty()))
    );

    // The code moves down two lines: the pack shows it where it is now, marked shifted.
    repo.write("src/auth.rs", &format!("// one\n// two\n{AUTH}"));
    let result = context(root, &["how do we refresh the jwt?", "--budget", "2000"]);
    let text = result["text"].as_str().unwrap();
    assert!(
        // (and drifted: the file changed since the reference was captured)
        text.contains("<code path=\"src/auth.rs\" lines=\"5-7\" status=\"shifted, drift\">\npub fn refresh_jwt"),
        "{text}"
    );

    // Markdown and a smaller budget: still within it, the lowest-priority material dropped.
    let result = context(root, &["refresh jwt", "--budget", "60", "--format", "markdown"]);
    assert!(result["tokens"].as_u64().unwrap() <= 60);
    assert!(result["text"].as_str().unwrap().starts_with("## Instructions"));
    assert!(
        result["receipt"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["included"] == false && l["reason"].as_str().unwrap().starts_with("over budget"))
    );

    // The text output is the pack itself; --receipt adds the receipt after a `---` line.
    let out = zblade(root, &["context", "--mode", "keyword", "refresh jwt", "--receipt"]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (pack, receipt) = stdout.split_once("\n---\n").expect("receipt separator");
    assert!(pack.ends_with("</unlimited_context>"));
    assert!(
        receipt.contains("moment_jwt") && receipt.contains("always included"),
        "{receipt}"
    );
}

#[test]
fn explicit_references_recent_turns_and_time_phrases() {
    let repo = fixture();
    let root = repo.root();
    let result = context(
        root,
        &[
            "explain @file:src/auth.rs:7-7 and @moment:moment_jwt",
            "--conversation",
            "conv_cache",
            "--budget",
            "3000",
        ],
    );
    assert_eq!(result["analysis"]["text"], "explain and");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("<code path=\"src/auth.rs\" lines=\"7-7\" status=\"current\">\npub fn logout() {}"),
        "{text}"
    );
    assert_eq!(receipt_line(&result, "moment_jwt")["reason"], "named in the query");
    assert_eq!(
        receipt_line(&result, "conv_cache/msg_1")["reason"],
        "recent turn of the active conversation"
    );

    // References that name nothing, or lead outside the project, are notices, not failures.
    let result = context(
        root,
        &[
            "jwt @file:../../etc/passwd @file:.zblade/config/settings.json @file:nope.rs @conv:conv_nope @moment:moment_nope",
        ],
    );
    let notices: Vec<&str> = result["notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(notices.len(), 5, "{notices:?}");
    assert!(notices[0].contains("inside the project"));
    assert!(notices[1].contains("never reads"), "{notices:?}");
    assert!(
        !result["text"].as_str().unwrap().contains("root:"),
        "nothing outside the project is read"
    );

    // "in October" keeps only October's memory.
    let result = context(root, &["cache or jwt in October 2026"]);
    assert_eq!(result["analysis"]["time"]["phrase"], "in October 2026");
    let keys: Vec<&str> = result["receipt"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["source"] == "retrieved")
        .map(|l| l["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, vec!["conv_cache/msg_1"]);
}

#[test]
fn bad_input_gets_clear_errors_and_huge_queries_still_work() {
    let repo = fixture();
    let root = repo.root();
    // A budget smaller than instructions.md.
    let out = zblade(root, &["context", "jwt", "--budget", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("smaller than instructions.md") && stderr.contains("--budget"),
        "{stderr}"
    );
    // An unknown active conversation.
    let out = zblade(root, &["context", "jwt", "--conversation", "conv_nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("conv_nope"));
    // A 100 KB query: searched with its start, packed within the budget.
    let huge = "refresh the jwt token please ".repeat(3600);
    assert!(huge.len() > 100_000);
    let result = context(root, &[&huge, "--budget", "1500"]);
    assert!(result["tokens"].as_u64().unwrap() <= 1500);
    assert!(
        result["notices"][0]
            .as_str()
            .unwrap()
            .contains("searched with its first")
    );
    assert!(result["text"].as_str().unwrap().contains("moment_jwt"));
}

#[test]
fn retrieval_is_hybrid_once_the_project_is_embedded() {
    let repo = fixture();
    let root = repo.root();
    let settings = root.join(".zblade/config/settings.json");
    let mut s = zblade_core::Settings::load(&settings).unwrap();
    s.search.embedding_model = zblade_tests::tiny_model().to_string_lossy().into_owned();
    s.search.code_model = s.search.embedding_model.clone();
    s.save(&settings).unwrap();
    json(&zblade(root, &["--json", "index"]));
    let result = json(&zblade(
        root,
        &["--json", "context", "rotating the signing key", "--budget", "1500"],
    ));
    assert_eq!(result["mode"], "hybrid", "{:#}", result["notices"]);
    assert!(result["tokens"].as_u64().unwrap() <= 1500);
    // Project files are candidates too, read from the working tree.
    assert!(
        result["receipt"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["key"].as_str().unwrap().starts_with("code:src/auth.rs")),
        "{:#}",
        result["receipt"]
    );
}

#[test]
fn moments_are_extracted_once_and_updated_in_place() {
    let repo = fixture();
    let root = repo.root();
    add(
        root,
        "conversation",
        "sessions.json",
        &serde_json::json!({
            "conversation_id": "conv_sessions",
            "title": "Session store",
            "messages": [
                {"id": "msg_1", "role": "user", "content": "Where should sessions live?"},
                {"id": "msg_2", "role": "assistant", "content": "We decided to keep sessions in SQLite, not Redis. Good question.",
                 "code_references": [{"file": "src/auth.rs", "lines": [7, 7]}]},
                {"id": "msg_3", "role": "assistant", "content": "The login bug was fixed by trimming the session cookie."}
            ]
        }),
    );
    let first = json(&zblade(root, &["--json", "moments", "extract", "conv_sessions"]));
    let written: Vec<&str> = first["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(written.len(), 2, "{first:#}");
    let shown = json(&zblade(root, &["--json", "show", written[0]]));
    assert_eq!(shown["moment"]["type"], "decision");
    assert_eq!(shown["moment"]["context"], "Where should sessions live?");
    assert_eq!(shown["moment"]["code_references"][0]["file"], "src/auth.rs");
    assert_eq!(shown["references"][0]["status"], "ok");

    // Unchanged: nothing is redone. A corrupt cache entry: redone, same moments, no copies.
    let all = json(&zblade(root, &["--json", "moments", "extract"]));
    assert_eq!(
        (all["conversations"].as_u64(), all["unchanged"].as_u64()),
        (Some(3), Some(1)),
        "{all:#}"
    );
    let again = json(&zblade(root, &["--json", "moments", "extract"]));
    assert_eq!(again["unchanged"], 3, "{again:#}");
    assert_eq!(again["written"].as_array().unwrap().len(), 0);
    std::fs::write(root.join(".zblade/cache/moments/conv_sessions.json"), "{not json").unwrap();
    let redone = json(&zblade(root, &["--json", "moments", "extract", "conv_sessions"]));
    assert_eq!(redone["written"], first["written"]);
    let moments = json(&zblade(root, &["--json", "list", "moments"]));
    assert_eq!(
        moments.as_array().unwrap().len(),
        3,
        "the decision added by hand and the two extracted"
    );

    // Extracted moments are found by context assembly.
    let result = context(root, &["sessions sqlite"]);
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("We decided to keep sessions in SQLite")
    );

    let out = zblade(root, &["moments", "extract", "conv_nope"]);
    assert_eq!(out.status.code(), Some(1));
}

/// Issue 45 through the `zblade` binary (keyword search: nothing is embedded here, so the gate
/// judges by words and names): a prompt about something the memory never mentions gets no
/// retrieved memory — the hook prints nothing, the receipt says why, `--no-gate` shows what was
/// left out — while a question the memory answers still gets its evidence.
#[test]
fn the_relevance_gate_keeps_unrelated_prompts_free_of_memory() {
    let repo = fixture();
    let root = repo.root();
    let hook = |prompt: &str| {
        let mut child = Command::new(zblade_bin())
            .arg("--project")
            .arg(root)
            .args(["hook", "prompt"])
            .env("ZBLADE_NO_AUTO_SERVE", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let event = serde_json::json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt});
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), event.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(hook("fix the typo in README"), "", "nothing remembered is about README");
    let answered = hook("how do we refresh the JWT when it expires?");
    assert!(answered.contains("refresh_jwt rotates the signing key"), "{answered}");

    // One word of it ("session") is in a remembered turn, so search finds a candidate to gate.
    let unrelated = "fix the typo in README about the session";
    assert_eq!(hook(unrelated), "");
    let gated = context(root, &[unrelated]);
    let gate = &gated["gate"];
    assert_eq!(gate["passed"], false, "{gate:#}");
    assert!(gate["relevance"].as_f64().unwrap() < gate["floor"].as_f64().unwrap());
    assert_eq!(gate["evidence"]["unknown_names"], serde_json::json!(["readme"]));
    let retrieved = |result: &Value| {
        result["receipt"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["source"] == "retrieved")
            .map(|l| {
                (
                    l["included"].as_bool().unwrap(),
                    l["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let lines = retrieved(&gated);
    assert!(!lines.is_empty(), "keyword search found the turn about the session");
    assert!(
        lines
            .iter()
            .all(|(included, reason)| !included && reason.starts_with("gated: relevance")),
        "{lines:?}"
    );
    assert!(
        gated["notices"]
            .to_string()
            .contains("nothing remembered bears on this prompt")
    );
    // --no-gate: the same candidates, packed; the relevance is still reported.
    let open = context(root, &[unrelated, "--no-gate"]);
    assert_eq!(open["gate"]["floor"], 0.0);
    assert!(retrieved(&open).iter().any(|(included, _)| *included));
    // A floor from the command line wins over the default; one outside 0..1 names the option.
    let strict = context(root, &["how do we refresh the JWT?", "--min-relevance", "1"]);
    assert_eq!(strict["gate"]["passed"], false);
    let bad = zblade(root, &["context", "refresh", "--min-relevance", "2"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--min-relevance is 2"));
    // The receipt in text says why, in one line.
    let text = zblade(root, &["context", "--mode", "keyword", "--receipt", unrelated]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("relevance gate closed: relevance"), "{text}");
}
