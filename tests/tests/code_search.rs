//! Project files in search, filters, and the bad cases of issue 4: real files, the real tiny
//! ONNX model, real ONNX Runtime, LanceDB and the `zblade` binary.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use zblade_engine::{HitKind, Project, SearchFilter, SearchKind, SearchMode, SearchQuery};
use zblade_tests::{GitFixture, tiny_model, zblade_bin};

const AUTH: &str = "//! Authentication.\n\npub fn refresh_jwt_token(expired: &str) -> String {\n    let rotated = rotate_signing_key(expired);\n    rotated\n}\n";
const CACHE: &str =
    "pub struct LruCache {\n    capacity: usize,\n}\n\nimpl LruCache {\n    pub fn evict_oldest(&mut self) {}\n}\n";

/// The tiny model for conversations and code alike (one model, one vector table).
fn use_tiny_model(root: &Path) {
    let path = root.join(".zblade/config/settings.json");
    let mut settings = zblade_core::Settings::load(&path).unwrap();
    settings.search.embedding_model = tiny_model().to_string_lossy().into_owned();
    settings.search.code_model = settings.search.embedding_model.clone();
    settings.save(&path).unwrap();
}

/// One conversation about rotating the jwt signing key.
fn add_jwt_conversation(project: &mut Project) {
    let json = serde_json::json!({"title": "jwt", "messages": [{"role": "user", "content": "we rotate the jwt signing key monthly"}]});
    project
        .add_conversations(vec![(
            zblade_engine::parse_conversation(json.to_string().as_bytes(), "jwt").unwrap(),
            "jwt".into(),
        )])
        .unwrap();
}

/// A copy of the tiny model under another name (another model id, so another vector table).
fn tiny_model_named(root: &Path, name: &str) -> String {
    let dir = root.join("models").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(tiny_model()).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    dir.to_string_lossy().into_owned()
}

/// Issue 44: code has a model of its own. Its vectors live in that model's table and
/// conversations stay with theirs; code search and message search each embed the query with
/// their own model; switching the code model re-embeds the code once, not the conversations,
/// and `zblade index` says so.
#[test]
fn code_is_embedded_with_its_own_model_and_again_once_when_that_model_changes() {
    let (repo, _) = fixture();
    std::fs::write(repo.root().join(".gitignore"), "target/\nmodels/\n").unwrap();
    let settings_path = repo.root().join(".zblade/config/settings.json");
    let mut settings = zblade_core::Settings::load(&settings_path).unwrap();
    settings.search.embedding_model = tiny_model_named(repo.root(), "tiny-conv");
    settings.search.code_model = tiny_model_named(repo.root(), "tiny-code");
    settings.save(&settings_path).unwrap();
    let mut project = Project::open(repo.root()).unwrap();
    add_jwt_conversation(&mut project);
    let report = project
        .update_search_index(&mut |_, _, _| {})
        .unwrap()
        .semantic
        .unwrap();
    // Besides code: the conversation and the fixture's commit message (history is memory).
    let code_chunks = report.chunks - 2;
    assert_eq!(report.model, "tiny-conv");
    assert_eq!(report.code_model.as_deref(), Some("tiny-code"));
    assert_eq!(
        (report.embedded, report.code_embedded),
        (code_chunks + 2, code_chunks),
        "{report:?}"
    );
    let vectors = project.layout().vectors_dir();
    assert_eq!(
        zblade_search::VectorStore::tables(&vectors).unwrap(),
        vec!["chunks_tiny_code".to_string(), "chunks_tiny_conv".to_string()]
    );
    assert_eq!(
        zblade_search::VectorStore::count_in(&vectors, "tiny-code").unwrap(),
        Some(code_chunks)
    );
    assert_eq!(
        zblade_search::VectorStore::count_in(&vectors, "tiny-conv").unwrap(),
        Some(2)
    );
    // Each kind is searched in its own table: code hits only from code, the message from
    // the conversation model's table, and both together for an unfiltered search.
    assert!(!code_hits(&mut project, "refresh jwt token", SearchMode::Semantic).is_empty());
    let messages = project
        .search(&SearchQuery::new("jwt signing key", 5, SearchKind::Messages).in_mode(Some(SearchMode::Semantic)))
        .unwrap();
    assert_eq!(
        (messages.mode, messages.hits.len()),
        (SearchMode::Semantic, 1),
        "{:?}",
        messages.notice
    );
    let all = project
        .search(&SearchQuery::new("jwt signing key", 10, SearchKind::All).in_mode(Some(SearchMode::Semantic)))
        .unwrap();
    let kinds: std::collections::BTreeSet<String> = all.hits.iter().map(|h| format!("{:?}", h.hit.kind)).collect();
    assert!(
        kinds.contains("Message") && kinds.contains("Code"),
        "messages and code: {:?}",
        all.hits
    );
    // `zblade models list` says which model serves what.
    let (code, stdout, stderr) = zblade(repo.root(), &["--json", "models", "list"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let entry = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        (entry("tiny-code")["code"].clone(), entry("tiny-code")["active"].clone()),
        (Value::Bool(true), Value::Bool(false))
    );
    assert_eq!(
        (entry("tiny-conv")["code"].clone(), entry("tiny-conv")["active"].clone()),
        (Value::Bool(false), Value::Bool(true))
    );

    // Another code model: the code is embedded again, once; the conversation is not.
    let mut settings = zblade_core::Settings::load(&settings_path).unwrap();
    settings.search.code_model = tiny_model_named(repo.root(), "tiny-code-2");
    settings.save(&settings_path).unwrap();
    let (code, stdout, stderr) = zblade(repo.root(), &["index"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "{code_chunks} code chunk(s) embedded with the code model tiny-code-2"
        )),
        "{stdout}"
    );
    let (code, stdout, stderr) = zblade(repo.root(), &["--json", "index"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let again: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(again["semantic"]["embedded"], 0, "{again}");
    // `zblade gc` drops the old code model's table and keeps both in use.
    let (code, _, stderr) = zblade(repo.root(), &["gc"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        zblade_search::VectorStore::tables(&vectors).unwrap(),
        vec!["chunks_tiny_code_2".to_string(), "chunks_tiny_conv".to_string()]
    );
}

fn fixture() -> (GitFixture, Project) {
    let repo = GitFixture::new(&[
        ("src/auth.rs", AUTH),
        ("src/cache.rs", CACHE),
        (".gitignore", "target/\n"),
        ("target/debug/build.rs", "pub fn refresh_jwt_token() {}\n"),
        (".env", "SECRET_TOKEN=refresh_jwt_token_hunter2\n"),
    ]);
    Project::init(repo.root()).unwrap();
    use_tiny_model(repo.root());
    let project = Project::open(repo.root()).unwrap();
    (repo, project)
}

fn code_hits(project: &mut Project, text: &str, mode: SearchMode) -> Vec<(String, (u32, u32), String)> {
    let query = SearchQuery::new(text, 10, SearchKind::Code);
    let results = project.search(&query.clone().in_mode(Some(mode))).unwrap();
    assert!(results.stale_files.is_empty(), "{:?}", results.stale_files);
    // A fallback to another mode would make the test pass for the wrong reason.
    assert_eq!(
        results.mode, mode,
        "asked for {mode:?}, ran {:?}: {:?}",
        results.mode, results.notice
    );
    results
        .hits
        .into_iter()
        .map(|h| (h.hit.path.unwrap(), h.hit.lines.unwrap(), h.hit.snippet))
        .collect()
}

#[test]
fn project_files_are_indexed_searched_and_kept_as_references() {
    let (repo, mut project) = fixture();
    let mut stages = Vec::new();
    let report = project
        .update_search_index(&mut |stage, done, total| stages.push((stage, done, total)))
        .unwrap();
    assert_eq!(report.code.files, 2, "ignored and hidden files are not considered");
    assert_eq!(report.code.indexed, 2);
    let semantic = report.semantic.expect("the tiny model is installed");
    // Two code chunks and the fixture's commit message.
    assert_eq!(semantic.embedded, 3);
    assert_eq!(report.history.commits, 1);
    assert!(stages.iter().any(|s| s.0 == zblade_engine::IndexStage::Embedding));

    // Keyword search finds identifiers by their parts, with path, lines and the current text.
    let hits = code_hits(&mut project, "rotate signing key", SearchMode::Keyword);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].0, "src/auth.rs");
    assert_eq!(hits[0].1, (1, 6));
    assert!(hits[0].2.contains("rotate_signing_key(expired)"));
    // Semantic search ranks the file's chunk first for the text embedded for it: its path and
    // symbol, then its lines (a tiny random model cannot be trusted with anything less exact).
    let embedded = format!("src/cache.rs: LruCache\n{}", CACHE.trim());
    let semantic = code_hits(&mut project, &embedded, SearchMode::Semantic);
    assert_eq!(semantic[0].0, "src/cache.rs");

    // No copy of the code in the index: not in SQLite (contentless FTS) nor in LanceDB.
    drop(project);
    let index_dir = repo.root().join(".zblade/index");
    for file in zblade_tests::files_under(&index_dir) {
        let bytes = std::fs::read(&file).unwrap();
        let needle = b"let rotated = rotate_signing_key(expired);";
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "{} holds code",
            file.display()
        );
    }

    // A second run reads nothing: the files did not change.
    let mut project = Project::open(repo.root()).unwrap();
    let again = project.update_search_index(&mut |_, _, _| {}).unwrap();
    assert_eq!((again.code.indexed, again.code.unchanged), (0, 2));
    assert_eq!(again.semantic.unwrap().embedded, 0);

    // A deleted file leaves the index.
    std::fs::remove_file(repo.root().join("src/cache.rs")).unwrap();
    let after = project.update_search_index(&mut |_, _, _| {}).unwrap();
    assert_eq!(after.code.removed, 1);
    assert!(code_hits(&mut project, "evict oldest", SearchMode::Keyword).is_empty());
}

#[test]
fn a_changed_file_is_reindexed_before_its_code_is_shown() {
    let (repo, mut project) = fixture();
    project.update_search_index(&mut |_, _, _| {}).unwrap();
    // The function is renamed behind the index's back (no watcher running).
    repo.write("src/auth.rs", &AUTH.replace("rotate_signing_key", "rotate_hmac_secret"));
    let query = SearchQuery::new("rotate signing key", 10, SearchKind::Code);
    // The file is indexed again before the answer: its old text is gone, nothing is stale.
    let stale = project
        .search(&query.clone().in_mode(Some(SearchMode::Keyword)))
        .unwrap();
    assert_eq!(stale.mode, SearchMode::Keyword);
    assert!(stale.hits.iter().all(|h| !h.hit.snippet.contains("rotate_signing_key")));
    assert!(stale.stale_files.is_empty(), "{:?}", stale.stale_files);
    // The new text is found.
    let fresh = project
        .search(&SearchQuery::new("rotate hmac secret", 10, SearchKind::Code).in_mode(None))
        .unwrap();
    assert!(fresh.stale_files.is_empty());
    assert_eq!(
        fresh.mode,
        SearchMode::Hybrid,
        "the default with a model installed: {:?}",
        fresh.notice
    );
    // Which of the two files ranks first is the tiny random model's call (code search gives
    // vectors 0.6 of the weight); that the renamed function is found, in its new text, is not.
    let auth = fresh.hits.iter().find(|h| h.hit.path.as_deref() == Some("src/auth.rs"));
    assert!(
        auth.is_some_and(|h| h.hit.snippet.contains("rotate_hmac_secret")),
        "{:?}",
        fresh.hits
    );
    assert!(fresh.hits.iter().all(|h| !h.hit.snippet.contains("rotate_signing_key")));
    // The old words still match the new text in part ("rotate"), never the old text.
    let old = project
        .search(&query.clone().in_mode(Some(SearchMode::Keyword)))
        .unwrap();
    assert!(old.hits.iter().all(|h| !h.hit.snippet.contains("rotate_signing_key")));
}

#[test]
fn huge_minified_binary_and_non_utf8_files() {
    let (repo, mut project) = fixture();
    // 50 MB of minified JavaScript: skipped by size without being read.
    let big = "var a=function(){return 1};".repeat(50 * 1024 * 1024 / 27);
    repo.write("web/bundle.js", &big);
    repo.write("web/app.min.js", "var a=1;");
    repo.write("web/minified.js", &"x=1;".repeat(100_000));
    std::fs::write(repo.root().join("logo.png"), [0x89, b'P', b'N', b'G', 0, 0, 1, 2]).unwrap();
    // Latin-1, not UTF-8: indexed, decoded lossily, and verified the same way when shown.
    std::fs::write(
        repo.root().join("src/legacy.c"),
        b"/* caf\xe9 cr\xe8me */\nint legacy_checksum(void) { return 42; }\n",
    )
    .unwrap();
    let report = project.update_search_index(&mut |_, _, _| {}).unwrap();
    let skipped = |reason: &str| report.code.skipped.get(reason).cloned().unwrap_or_default();
    assert_eq!(skipped("too large"), vec!["web/bundle.js".to_string()]);
    assert_eq!(skipped("minified"), vec!["web/minified.js".to_string()]);
    assert_eq!(skipped("binary"), vec!["logo.png".to_string()]);
    assert!(
        skipped("generated").is_empty(),
        "*.min.js is left out by name before reading"
    );
    let hits = code_hits(&mut project, "legacy checksum", SearchMode::Keyword);
    assert_eq!(hits.len(), 1);
    assert!(hits[0].2.contains("caf\u{fffd}"));
}

#[test]
fn filters_narrow_keyword_and_semantic_search_alike() {
    let (repo, mut project) = fixture();
    for (id, when, text) in [
        ("conv_old", "2025-01-10T10:00:00Z", "we refresh the jwt token in auth"),
        (
            "conv_new",
            "2026-06-10T10:00:00Z",
            "we refresh the jwt token in the gateway",
        ),
    ] {
        let json = serde_json::json!({"conversation_id": id, "title": id, "created_at": when,
            "messages": [{"id": "msg_1", "role": "user", "content": text, "timestamp": when,
                          "code_references": [{"file": "src/auth.rs", "lines": [3, 6]}]}]});
        project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
    }
    let json = serde_json::json!({"conversation_id": "conv_cache", "title": "cache",
        "created_at": "2026-06-11T10:00:00Z",
        "messages": [{"id": "msg_1", "role": "user", "content": "refresh the jwt token cache",
                      "timestamp": "2026-06-11T10:00:00Z",
                      "code_references": [{"file": "src/cache.rs", "lines": [1, 3]}]}]});
    project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
    project.update_search_index(&mut |_, _, _| {}).unwrap();
    let mut run = |filter: SearchFilter, mode: SearchMode| -> Vec<String> {
        let query = SearchQuery::new("refresh jwt token", 10, SearchKind::All).with_filter(filter);
        let results = project.search(&query.clone().in_mode(Some(mode))).unwrap();
        assert_eq!(
            results.mode, mode,
            "asked for {mode:?}, ran {:?}: {:?}",
            results.mode, results.notice
        );
        let mut ids: Vec<String> = results
            .hits
            .into_iter()
            .map(|h| match h.hit.kind {
                HitKind::Code => h.hit.path.unwrap(),
                _ => h.hit.conversation_id.unwrap(),
            })
            .collect();
        ids.sort();
        ids.dedup();
        ids
    };
    for mode in [SearchMode::Keyword, SearchMode::Semantic, SearchMode::Hybrid] {
        let conversation = SearchFilter {
            conversation: Some("conv_old".into()),
            ..Default::default()
        };
        assert_eq!(run(conversation, mode), ["conv_old"], "{mode:?}");
        let since = SearchFilter {
            since: Some("2026-01-01T00:00:00.000Z".into()),
            until: Some("2026-06-11T00:00:00.000Z".into()),
            ..Default::default()
        };
        // Code files were modified just now, after `until`.
        assert_eq!(run(since, mode), ["conv_new"], "{mode:?}");
        let path = SearchFilter {
            path_prefix: Some("src/cache".into()),
            ..Default::default()
        };
        let found = run(path, mode);
        assert!(
            found.iter().all(|id| id == "conv_cache" || id == "src/cache.rs"),
            "{mode:?}: {found:?}"
        );
        assert!(found.contains(&"conv_cache".to_string()), "{mode:?}: {found:?}");
    }
    drop(repo);
}

#[test]
fn the_watcher_keeps_the_code_index_current() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (repo, mut project) = fixture();
    project.update_search_index(&mut |_, _, _| {}).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (events, received) = std::sync::mpsc::channel();
    let root = repo.root().to_path_buf();
    let flag = stop.clone();
    let watcher = std::thread::spawn(move || {
        project
            .watch(zblade_engine::WatchOptions::default(), &flag, |event| {
                let _ = events.send(event);
            })
            .unwrap();
    });
    loop {
        if let zblade_engine::WatchEvent::Ready { .. } =
            received.recv_timeout(std::time::Duration::from_secs(20)).unwrap()
        {
            break;
        }
    }
    std::fs::write(root.join("src/new.rs"), "pub fn compute_invoice_total() -> u32 { 7 }\n").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut indexed = None;
    while std::time::Instant::now() < deadline {
        if let Ok(zblade_engine::WatchEvent::Indexed { files, embedded, .. }) =
            received.recv_timeout(std::time::Duration::from_millis(200))
        {
            indexed = Some((files, embedded));
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    assert_eq!(indexed, Some((1, 1)), "one file re-indexed, its one chunk embedded");
    let mut project = Project::open(&root).unwrap();
    let hits = code_hits(&mut project, "invoice total", SearchMode::Keyword);
    assert_eq!(hits[0].0, "src/new.rs");
}

fn zblade(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = Command::new(zblade_bin());
    command.args(args).current_dir(root);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 43: on a fresh machine nothing sets `ORT_DYLIB_PATH` (scripts/env.sh once set it only
/// when setup had already run). The CLI finds ONNX Runtime through zblade's own lookup: here in
/// a Python environment named by `ZBLADE_PY_ENV`, with `HOME` empty so the default place cannot
/// answer instead.
#[test]
fn cli_finds_onnx_runtime_with_ort_dylib_path_unset() {
    let (repo, _project) = fixture();
    let runtime = zblade_search::embed::find_onnx_runtime()
        .filter(|p| p.exists())
        .expect("ONNX Runtime is installed (scripts/setup.sh)");
    let places = tempfile::tempdir().unwrap();
    let capi = places.path().join("env/lib/python3.11/site-packages/onnxruntime/capi");
    std::fs::create_dir_all(&capi).unwrap();
    std::os::unix::fs::symlink(&runtime, capi.join("libonnxruntime.so.1.99.0")).unwrap();
    std::fs::create_dir_all(places.path().join("home")).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(zblade_bin())
            .args(args)
            .current_dir(repo.root())
            .env_remove("ORT_DYLIB_PATH")
            .env("ZBLADE_PY_ENV", places.path().join("env"))
            .env("HOME", places.path().join("home"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "zblade {args:?}: {stderr}");
        assert!(!stderr.contains("ONNX Runtime"), "zblade {args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let indexed: Value = serde_json::from_str(&run(&["--json", "index"])).unwrap();
    // Two code chunks and the fixture's commit message.
    assert_eq!(indexed["semantic"]["embedded"], 3, "{indexed}");
    let found: Value = serde_json::from_str(&run(&["--json", "search", "rotate", "--mode", "semantic"])).unwrap();
    assert_eq!(found["mode"], "semantic", "{found}");
}

#[test]
fn cli_without_onnx_runtime_still_indexes_and_searches_by_keyword() {
    let (repo, _project) = fixture();
    let no_ort = [("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so")];
    let (code, stdout, stderr) = zblade(repo.root(), &["index"], &no_ort);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("ONNX Runtime") && stderr.contains("keyword"),
        "{stderr}"
    );
    assert!(stdout.contains("2 indexed"), "{stdout}");
    let (code, stdout, stderr) = zblade(repo.root(), &["search", "rotate", "signing"], &no_ort);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("using keyword search"), "{stderr}");
    // Named by its symbol, with its place beside it.
    assert!(stdout.contains("[code] refresh_jwt_token  src/auth.rs:1-6"), "{stdout}");
    // Asked for by name, semantic search without a runtime is an error naming it, never a
    // keyword search passed off as one by meaning.
    let (code, stdout, stderr) = zblade(
        repo.root(),
        &["--json", "search", "rotate", "--mode", "semantic"],
        &no_ort,
    );
    assert_eq!(code, 1, "{stdout}");
    let error: Value = serde_json::from_str(stderr.trim()).unwrap();
    assert!(
        error["error"]["message"].as_str().unwrap().contains("ONNX Runtime"),
        "{stderr}"
    );
    // The default mode falls back to keywords and says why.
    let (code, stdout, _) = zblade(repo.root(), &["--json", "search", "rotate"], &no_ort);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["mode"], "keyword");
    assert!(json["notice"].as_str().unwrap().contains("ONNX Runtime"));
    assert_eq!(json["hits"][0]["path"], "src/auth.rs");
    assert_eq!(json["hits"][0]["lines"], serde_json::json!([1, 6]));
    // A bad time filter is a usage error that names the option.
    let (code, _, stderr) = zblade(repo.root(), &["search", "rotate", "--since", "someday"], &no_ort);
    assert_eq!(code, 1);
    assert!(stderr.contains("--since"), "{stderr}");
}

#[test]
fn cli_with_a_corrupt_model_explains_and_falls_back() {
    let (repo, _project) = fixture();
    let broken = repo.root().join("broken-model");
    std::fs::create_dir_all(&broken).unwrap();
    for file in zblade_search::embed::MODEL_FILES {
        std::fs::copy(tiny_model().join(file), broken.join(file)).unwrap();
    }
    std::fs::write(broken.join("model.onnx"), b"not a model").unwrap();
    let settings = repo.root().join(".zblade/config/settings.json");
    let mut s = zblade_core::Settings::load(&settings).unwrap();
    s.search.embedding_model = broken.to_string_lossy().into_owned();
    s.save(&settings).unwrap();
    let (code, _, stderr) = zblade(repo.root(), &["index"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("broken-model"), "the message names the model: {stderr}");
    let (code, stdout, _) = zblade(repo.root(), &["search", "evict", "oldest"], &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("src/cache.rs"), "{stdout}");
}

/// A code model that does not load never stops indexing: conversations are still embedded,
/// the report names the model and says code is searched by keyword, and code search answers
/// by keyword with a note.
#[test]
fn a_corrupt_code_model_leaves_code_to_keywords_and_embeds_the_rest() {
    let (repo, mut project) = fixture();
    let broken = repo.root().join("models/broken-code-model");
    std::fs::create_dir_all(&broken).unwrap();
    for file in zblade_search::embed::MODEL_FILES {
        std::fs::copy(tiny_model().join(file), broken.join(file)).unwrap();
    }
    std::fs::write(broken.join("model.onnx"), b"not a model").unwrap();
    std::fs::write(repo.root().join(".gitignore"), "target/\nmodels/\n").unwrap();
    let settings = repo.root().join(".zblade/config/settings.json");
    let mut s = zblade_core::Settings::load(&settings).unwrap();
    s.search.code_model = broken.to_string_lossy().into_owned();
    s.save(&settings).unwrap();
    add_jwt_conversation(&mut project);
    drop(project);
    let (code, stdout, stderr) = zblade(repo.root(), &["--json", "index"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let notice = report["notice"].as_str().unwrap_or_default();
    assert!(
        notice.contains("broken-code-model") && notice.contains("keyword"),
        "{report}"
    );
    assert_eq!(
        report["semantic"]["embedded"], 2,
        "the conversation and the fixture's commit are embedded: {report}"
    );
    let mut project = Project::open(repo.root()).unwrap();
    let found = project
        .search(&SearchQuery::new("evict oldest", 10, SearchKind::Code).in_mode(None))
        .unwrap();
    assert_eq!(found.mode, SearchMode::Keyword);
    assert!(found.notice.is_some_and(|n| n.contains("broken-code-model")));
    assert_eq!(found.hits[0].hit.path.as_deref(), Some("src/cache.rs"));
    let messages = project
        .search(&SearchQuery::new("jwt signing key", 5, SearchKind::Messages).in_mode(None))
        .unwrap();
    assert_eq!(messages.mode, SearchMode::Hybrid, "{:?}", messages.notice);
}

#[test]
fn switching_models_makes_a_new_table_and_gc_drops_the_old_one() {
    let (repo, mut project) = fixture();
    project.update_search_index(&mut |_, _, _| {}).unwrap();
    // A second model: the same tiny model under another name.
    let other = repo.root().join("models/tiny-v2");
    std::fs::create_dir_all(&other).unwrap();
    for entry in std::fs::read_dir(tiny_model()).unwrap().flatten() {
        std::fs::copy(entry.path(), other.join(entry.file_name())).unwrap();
    }
    std::fs::write(repo.root().join(".gitignore"), "target/\nmodels/\n").unwrap();
    let settings = repo.root().join(".zblade/config/settings.json");
    let mut s = zblade_core::Settings::load(&settings).unwrap();
    s.search.embedding_model = other.to_string_lossy().into_owned();
    s.search.code_model = s.search.embedding_model.clone();
    s.save(&settings).unwrap();
    let mut project = Project::open(repo.root()).unwrap();
    let report = project.update_search_index(&mut |_, _, _| {}).unwrap();
    assert_eq!(
        report.semantic.unwrap().embedded,
        3,
        "a new model embeds everything again (two code chunks, the fixture's commit)"
    );
    let vectors = project.layout().vectors_dir();
    assert_eq!(zblade_search::VectorStore::tables(&vectors).unwrap().len(), 2);
    let (code, stdout, stderr) = zblade(repo.root(), &["--json", "gc"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["dropped_tables"].as_array().unwrap().len(), 1);
    assert_eq!(
        zblade_search::VectorStore::tables(&vectors).unwrap(),
        vec!["chunks_tiny_v2".to_string()]
    );
}
