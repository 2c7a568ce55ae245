//! Semantic and hybrid search with a real (tiny) ONNX model, real ONNX Runtime and LanceDB.

use zblade_engine::{Project, SearchFilter, SearchKind, SearchMode, SearchQuery};
use zblade_search::{EmbedError, Embedder, LocalModel, VectorStore, Workload};
use zblade_tests::tiny_model;

#[test]
fn the_tiny_model_embeds_with_onnx_runtime() {
    let mut model = LocalModel::load(&tiny_model(), "tiny", Workload::Batches).unwrap();
    assert_eq!(model.dim(), 32);
    let v = model
        .embed(&[
            "refresh the jwt token",
            "cache eviction policy",
            "refresh the jwt token",
        ])
        .unwrap();
    assert_eq!(v.len(), 3);
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    assert_eq!(v[0], v[2], "same text, same vector");
    assert_ne!(v[0], v[1]);
}

#[test]
fn a_model_for_queries_embeds_as_the_one_for_batches() {
    let texts = ["refresh the jwt token", "cache eviction policy"];
    let batches = LocalModel::load(&tiny_model(), "tiny", Workload::Batches)
        .unwrap()
        .embed(&texts)
        .unwrap();
    let queries = LocalModel::load(&tiny_model(), "tiny", Workload::Queries)
        .unwrap()
        .embed(&texts)
        .unwrap();
    for (a, b) in batches.iter().zip(&queries) {
        let cosine: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        assert!(cosine > 0.9999, "one thread or many, the same vector: {cosine}");
    }
}

#[test]
fn the_tokenizer_parsed_beside_the_session_tokenizes_as_fastembeds_own() {
    use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
    zblade_search::embed::load_onnx_runtime().unwrap();
    let dir = tiny_model();
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let files = TokenizerFiles {
        tokenizer_file: read("tokenizer.json"),
        config_file: read("config.json"),
        special_tokens_map_file: read("special_tokens_map.json"),
        tokenizer_config_file: read("tokenizer_config.json"),
    };
    let model = UserDefinedEmbeddingModel::new(read("model.onnx"), files).with_pooling(Pooling::Mean);
    let mut own = TextEmbedding::try_new_from_user_defined(model, InitOptionsUserDefined::new()).unwrap();
    // Lengths that need padding in one batch, special tokens written out, and a text past the
    // model's 512 tokens (truncation).
    let long = "refresh the jwt token before it expires ".repeat(120);
    let texts = [
        "jwt",
        "[CLS] cache [SEP] eviction [MASK] policy [PAD]",
        long.as_str(),
        "x",
    ];
    let expected = own.embed(texts, Some(texts.len())).unwrap();
    let ours = LocalModel::load(&dir, "tiny", Workload::Batches)
        .unwrap()
        .embed(&texts)
        .unwrap();
    for ((text, a), b) in texts.iter().zip(&expected).zip(&ours) {
        // zblade scales fastembed's vectors to unit length once more (`Embedder::embed`).
        let norm = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        let a: Vec<f32> = a.iter().map(|x| x / norm).collect();
        assert_eq!(&a, b, "{text:.40}: bitwise fastembed's vector");
    }
}

/// The session starts from ONNX Runtime's optimised copy of the model, saved on the first load
/// (zblade_search::onnx_cache): the copy gives bitwise the vectors the model's own file gives,
/// a broken copy is made again, and a changed model gets a new copy that replaces the old one.
#[test]
fn the_saved_optimised_copy_embeds_as_the_model_and_is_remade_when_broken_or_outdated() {
    let dir = tempfile::tempdir().unwrap();
    for file in zblade_search::embed::MODEL_FILES {
        std::fs::copy(tiny_model().join(file), dir.path().join(file)).unwrap();
    }
    let source = dir.path().join("model.onnx").canonicalize().unwrap();
    let copies = || -> Vec<std::path::PathBuf> {
        let root = zblade_search::onnx_cache::cache_root().unwrap();
        std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| std::fs::read(p.join("source")).is_ok_and(|s| s == source.as_os_str().as_encoded_bytes()))
            .collect()
    };
    let texts = ["refresh the jwt token", "cache eviction policy", "x"];
    let embed = || {
        LocalModel::load(dir.path(), "tiny", Workload::Queries)
            .unwrap()
            .embed(&texts)
            .unwrap()
    };
    let first = embed(); // made from model.onnx, and the copy saved
    let saved = copies();
    assert_eq!(saved.len(), 1, "one copy of the model: {saved:?}");
    assert!(saved[0].join("model.onnx").is_file());
    assert_eq!(embed(), first, "from the copy, bitwise the same vectors");

    // A copy cut short (a full disk, a crash before the flush) is made again.
    let weights = saved[0].join("weights.bin");
    assert!(weights.is_file(), "the weights are in a file of their own");
    std::fs::write(&weights, b"cut short").unwrap();
    assert_eq!(embed(), first);
    assert_ne!(
        std::fs::read(&weights).unwrap(),
        b"cut short",
        "the copy was made again"
    );

    // A changed model file gets a new copy, and the old one is removed.
    let model = std::fs::File::options()
        .append(true)
        .open(dir.path().join("model.onnx"))
        .unwrap();
    model
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    drop(model);
    assert_eq!(embed(), first);
    let now = copies();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, saved, "a new copy for the changed file");
}

#[test]
fn a_config_that_misstates_the_vector_length_is_caught_at_the_first_embedding() {
    let dir = tempfile::tempdir().unwrap();
    for file in zblade_search::embed::MODEL_FILES {
        std::fs::copy(tiny_model().join(file), dir.path().join(file)).unwrap();
    }
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    let mut config: serde_json::Value = serde_json::from_str(&config).unwrap();
    config["hidden_size"] = 48.into();
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let mut model = LocalModel::load(dir.path(), "misstated", Workload::Queries).unwrap();
    assert_eq!(model.dim(), 48, "the length is read from config.json, not probed");
    let err = model.embed(&["refresh the jwt token"]).unwrap_err();
    assert!(matches!(err, EmbedError::BadModel(_)), "{err}");
    assert!(
        err.to_string().contains("32") && err.to_string().contains("48"),
        "{err}"
    );
}

#[test]
fn missing_and_corrupt_models_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        LocalModel::load(dir.path(), "none", Workload::Queries),
        Err(EmbedError::NoModel(_))
    ));
    for file in zblade_search::embed::MODEL_FILES {
        std::fs::copy(tiny_model().join(file), dir.path().join(file)).unwrap();
    }
    std::fs::write(dir.path().join("model.onnx"), b"this is not an onnx graph").unwrap();
    let err = LocalModel::load(dir.path(), "broken", Workload::Queries).unwrap_err();
    assert!(matches!(err, EmbedError::BadModel(_)), "{err}");
}

#[test]
fn vectors_are_stored_found_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = VectorStore::open(dir.path(), "test-model", 3).unwrap();
    let rows = vec![
        ("a".to_string(), vec![1.0, 0.0, 0.0]),
        ("b".to_string(), vec![0.0, 1.0, 0.0]),
        ("c".to_string(), vec![0.7, 0.7, 0.0]),
    ];
    store.add(&rows).unwrap();
    assert_eq!(store.len().unwrap(), 3);
    let near = store.nearest(&[0.9, 0.1, 0.0], 2).unwrap();
    assert_eq!(near[0].cid, "a");
    assert_eq!(near[1].cid, "c");
    store.remove(&["a".to_string()]).unwrap();
    store.compact().unwrap();
    assert_eq!(store.cids().unwrap().len(), 2);
    assert!(
        store.add(&[("d".to_string(), vec![1.0])]).is_err(),
        "wrong dimension is refused"
    );
    // Reopening finds the same table.
    drop(store);
    assert_eq!(
        VectorStore::open(dir.path(), "test-model", 3).unwrap().len().unwrap(),
        2
    );
}

fn project_with_tiny_model() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let (project, _) = Project::init(dir.path()).unwrap();
    let settings_path = project.layout().settings();
    let mut settings = zblade_core::Settings::load(&settings_path).unwrap();
    settings.search.embedding_model = tiny_model().to_string_lossy().into_owned();
    settings.search.code_model = settings.search.embedding_model.clone();
    settings.save(&settings_path).unwrap();
    let mut project = Project::open(dir.path()).unwrap();
    for (i, (title, text)) in [
        ("Auth", "How do we refresh the jwt token when it expires?"),
        ("Cache", "The cache eviction policy uses lru with a ttl."),
        ("Deploy", "Build the release and deploy it to the server."),
    ]
    .iter()
    .enumerate()
    {
        let json = serde_json::json!({"conversation_id": format!("conv_{i}"), "title": title,
            "messages": [{"id": "msg_1", "role": "user", "content": text},
                         {"id": "msg_2", "role": "assistant", "content": text}]});
        project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
    }
    (dir, project)
}

#[test]
fn index_embeds_each_text_once_and_semantic_search_finds_it() {
    let (_dir, mut project) = project_with_tiny_model();
    let query = SearchQuery::new("jwt token refresh", 5, SearchKind::All);
    // Before indexing: keyword search, with a notice saying why.
    let before = project.search(&query.clone().in_mode(None)).unwrap();
    assert_eq!(before.mode, SearchMode::Keyword);
    assert!(before.notice.unwrap().contains("zblade index"));

    let mut calls = Vec::new();
    let report = project
        .index_semantic(&mut |done, total| calls.push((done, total)))
        .unwrap();
    assert_eq!(report.chunks, 6);
    // Each text appears twice, but the second time after itself: what is embedded for a
    // message is led by the end of the message before it, so the reply is its own chunk.
    assert_eq!(report.distinct, 6);
    assert_eq!(report.embedded, 6);
    assert_eq!(calls.last(), Some(&(6, 6)));
    let again = project.index_semantic(&mut |_, _| {}).unwrap();
    assert_eq!(again.embedded, 0, "a CID is embedded once per model");

    // An exact text is its own nearest neighbour.
    let exact = SearchQuery::new(
        "The cache eviction policy uses lru with a ttl.",
        2,
        SearchKind::Messages,
    );
    let semantic = project
        .search(&exact.clone().in_mode(Some(SearchMode::Semantic)))
        .unwrap();
    assert_eq!(semantic.mode, SearchMode::Semantic);
    assert_eq!(semantic.hits[0].hit.conversation_id.as_deref(), Some("conv_1"));
    assert!(semantic.hits[0].hit.score > 0.99);

    let hybrid = project.search(&query.clone().in_mode(None)).unwrap();
    assert_eq!(hybrid.mode, SearchMode::Hybrid);
    assert!(hybrid.notice.is_none());
    assert_eq!(hybrid.hits[0].hit.conversation_id.as_deref(), Some("conv_0"));

    // The same text opening another conversation is the same chunk: embedded once.
    let json = serde_json::json!({"conversation_id": "conv_again", "title": "Again",
        "messages": [{"id": "msg_1", "role": "user", "content": "Build the release and deploy it to the server."}]});
    project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
    let report = project.index_semantic(&mut |_, _| {}).unwrap();
    assert_eq!((report.chunks, report.distinct, report.embedded), (7, 6, 0));
}

#[test]
fn stale_vectors_are_removed_when_memory_changes() {
    let (_dir, mut project) = project_with_tiny_model();
    project.index_semantic(&mut |_, _| {}).unwrap();
    let json = serde_json::json!({"conversation_id": "conv_1", "title": "Cache",
        "messages": [{"id": "msg_1", "role": "user", "content": "a completely new text about redis"}]});
    project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
    let report = project.index_semantic(&mut |_, _| {}).unwrap();
    assert_eq!(report.embedded, 1);
    assert_eq!(
        report.removed, 2,
        "the old cache message and its reply are no longer used"
    );
}

#[test]
fn gc_drops_tables_of_models_no_longer_used() {
    let (dir, mut project) = project_with_tiny_model();
    project.index_semantic(&mut |_, _| {}).unwrap();
    let vectors = project.layout().vectors_dir();
    // A table left by an earlier model.
    VectorStore::open(&vectors, "old-model", 4)
        .unwrap()
        .add(&[("x".to_string(), vec![1.0, 0.0, 0.0, 0.0])])
        .unwrap();
    assert_eq!(VectorStore::tables(&vectors).unwrap().len(), 2);
    let (dropped, removed) = project.gc().unwrap();
    assert_eq!(dropped, vec!["chunks_old_model".to_string()]);
    assert_eq!(removed, 0);
    assert_eq!(VectorStore::count_in(&vectors, "tiny").unwrap(), Some(6));
    drop(dir);
}

/// Hybrid search lends a matched message's score to the messages next to it (the answer after
/// a question), but a neighbour that a time filter kept out stays out.
#[test]
fn a_matched_question_brings_its_answer_unless_a_filter_keeps_it_out() {
    let (_dir, mut project) = project_with_tiny_model();
    let json = serde_json::json!({"conversation_id": "conv_port", "title": "Ports",
        "messages": [
            {"id": "msg_q", "role": "user", "content": "Which port does the staging proxy listen on?",
             "timestamp": "2026-03-01T10:00:00Z"},
            {"id": "msg_a", "role": "assistant", "content": "It is 8443, set in the deploy notes.",
             "timestamp": "2026-02-01T10:00:00Z"},
            {"id": "msg_x", "role": "user", "content": "Thanks, noted.", "timestamp": "2026-03-01T10:05:00Z"}]});
    project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
    project.index_semantic(&mut |_, _| {}).unwrap();

    let mut ids = |filter: SearchFilter| -> Vec<String> {
        let query = SearchQuery::new("staging proxy port", 10, SearchKind::Messages).with_filter(filter);
        let results = project
            .search(&query.clone().in_mode(Some(SearchMode::Hybrid)))
            .unwrap();
        assert_eq!(results.mode, SearchMode::Hybrid);
        results.hits.iter().map(|h| h.hit.id.clone()).collect()
    };
    let all = ids(SearchFilter::default());
    assert_eq!(all[0], "msg_q", "{all:?}");
    assert!(all.contains(&"msg_a".to_string()), "{all:?}");
    let march = ids(SearchFilter {
        since: Some("2026-03-01T00:00:00.000Z".into()),
        ..SearchFilter::default()
    });
    assert_eq!(march[0], "msg_q", "{march:?}");
    assert!(!march.contains(&"msg_a".to_string()), "written in February: {march:?}");
}

#[test]
fn the_idle_time_before_models_are_let_go_is_saved_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(dir.path()).unwrap();
    project.set_release_models_after_minutes(0).unwrap();
    let reopened = Project::open(dir.path()).unwrap();
    assert_eq!(reopened.settings().search.release_models_after_minutes, 0);
    assert_eq!(reopened.settings().search.release_models_after(), None, "0 keeps them");
    let err = project.set_release_models_after_minutes(24 * 60 + 1).unwrap_err();
    assert!(err.to_string().contains("more than a day"), "{err}");
    let reopened = Project::open(dir.path()).unwrap();
    assert_eq!(
        reopened.settings().search.release_models_after_minutes,
        0,
        "a refused value is not saved"
    );
}

#[test]
fn idle_models_are_let_go_and_loaded_again_by_the_next_search() {
    let (dir, mut project) = project_with_tiny_model();
    project.index_semantic(&mut |_, _| {}).unwrap();
    let semantic = |text: &str| SearchQuery::new(text, 2, SearchKind::Messages).in_mode(Some(SearchMode::Semantic));
    let first = project.search(&semantic("cache eviction lru ttl")).unwrap();
    assert_eq!(first.mode, SearchMode::Semantic);
    // Used a moment ago: not idle for a minute, so kept.
    assert!(!project.release_models_unused_for(std::time::Duration::from_secs(60)));
    // Idle for any time at all: let go, and then there is nothing left to let go.
    assert!(project.release_models_unused_for(std::time::Duration::ZERO));
    assert!(!project.release_models_unused_for(std::time::Duration::ZERO));
    // The next search (a new text, so no cached query vector) loads the model again, and ranks
    // exactly as a process that never let it go. (The tiny model is random, so a different
    // text may well rank differently: compare the same text, not the first search.)
    let text = "the cache eviction policy: lru, ttl";
    let again = project.search(&semantic(text)).unwrap();
    assert_eq!(again.mode, SearchMode::Semantic);
    let fresh = Project::open(dir.path()).unwrap().search(&semantic(text)).unwrap();
    let ranked = |results: &zblade_engine::SearchResults| -> Vec<(Option<String>, String)> {
        results
            .hits
            .iter()
            .map(|h| (h.hit.conversation_id.clone(), h.hit.id.clone()))
            .collect()
    };
    assert!(!again.hits.is_empty());
    assert_eq!(
        ranked(&again),
        ranked(&fresh),
        "the reloaded model ranks as a fresh one"
    );
    assert!(
        project.release_models_unused_for(std::time::Duration::ZERO),
        "loaded again, so let go again"
    );
    // The setting: five minutes by default, 0 keeps the models.
    let mut search = zblade_core::Settings::default().search;
    assert_eq!(search.release_models_after(), Some(std::time::Duration::from_secs(300)));
    search.release_models_after_minutes = 0;
    assert_eq!(search.release_models_after(), None);
    assert!(!project.release_idle_models(), "five minutes have not passed");
}

/// `zblade index` (and the tray app's first pass at every start) with nothing new to embed
/// loads no model: the tables are opened without one.
#[test]
fn an_index_run_with_nothing_new_loads_no_model() {
    let (dir, mut project) = project_with_tiny_model();
    let first = project.update_search_index(&mut |_, _, _| {}).unwrap();
    assert!(first.semantic.as_ref().unwrap().embedded > 0, "{first:?}");
    assert!(
        project.release_models_unused_for(std::time::Duration::ZERO),
        "the first run embedded"
    );
    drop(project);

    let mut again = Project::open(dir.path()).unwrap();
    let report = again.update_search_index(&mut |_, _, _| {}).unwrap();
    assert_eq!(report.semantic.as_ref().unwrap().embedded, 0, "{report:?}");
    assert_eq!(report.notice, None);
    assert!(
        !again.release_models_unused_for(std::time::Duration::ZERO),
        "nothing was embedded, so nothing was loaded"
    );
    // Something new: the model is loaded for it.
    let json = serde_json::json!({"conversation_id": "conv_new", "title": "New",
        "messages": [{"id": "msg_1", "role": "user", "content": "A brand new question about queues."}]});
    again.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
    let report = again.update_search_index(&mut |_, _, _| {}).unwrap();
    assert!(report.semantic.as_ref().unwrap().embedded > 0, "{report:?}");
    assert!(again.release_models_unused_for(std::time::Duration::ZERO));
}
