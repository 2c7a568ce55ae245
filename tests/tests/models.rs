//! Downloading an embedding model by name (issue 4): against a real local HTTP server laid out
//! like the model hub, through the `zblade` binary, with the tiny real ONNX model as payload.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use zblade_tests::{HubFault, HubServer, ModelsProject, json, stderr, tiny_model};

const REPO: &str = "acme/Tiny-Embed";

/// `zblade models download REPO` from the hub at `hub`, network allowed, then `extra`.
fn download(setup: &ModelsProject, hub: &str, extra: &[&str]) -> Output {
    let args = [
        &["models", "download", REPO, "--hub", hub, "--allow-network"][..],
        extra,
    ]
    .concat();
    setup.zblade(&args)
}

fn same_files(a: &Path, b: &Path) {
    for name in zblade_search::embed::MODEL_FILES {
        assert_eq!(
            std::fs::read(a.join(name)).unwrap(),
            std::fs::read(b.join(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn download_needs_consent_and_sends_nothing_without_it() {
    let hub = HubServer::start(REPO, &tiny_model(), HubFault::None);
    let setup = ModelsProject::new();
    let out = setup.zblade(&["models", "download", REPO, "--hub", &hub.url]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-network"), "{}", stderr(&out));
    assert!(stderr(&out).contains("privacy.allow_network"), "{}", stderr(&out));
    assert!(hub.requests().is_empty(), "requests were sent: {:?}", hub.requests());
    assert!(setup.models_in("").is_empty());

    // Consent in settings works as well as the flag.
    let settings = setup.project.path().join(".zblade/config/settings.json");
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    value["privacy"]["allow_network"] = Value::Bool(true);
    std::fs::write(&settings, value.to_string()).unwrap();
    let out = setup.zblade(&["models", "download", REPO, "--hub", &hub.url, "--json"]);
    assert_eq!(json(&out)["name"], "tiny-embed");
    assert_eq!(hub.requests().len(), 5);
}

#[test]
fn downloaded_model_is_retried_installed_used_and_searchable() {
    // The first request fails with 503: the download retries and goes on.
    let hub = HubServer::start(REPO, &tiny_model(), HubFault::FirstRequest503);
    let setup = ModelsProject::new();
    let report = json(&download(&setup, &hub.url, &["--use", "--json"]));
    assert_eq!(report["name"], "tiny-embed");
    assert_eq!(report["active"], true);
    assert_eq!(report["files"].as_array().unwrap().len(), 5);
    let requests = hub.requests();
    assert_eq!(requests.len(), 6, "one retry: {requests:?}");
    assert_eq!(requests[0], requests[1]);
    assert!(requests[0].starts_with("/acme/Tiny-Embed/resolve/main/"));
    assert_eq!(
        setup.models_in(""),
        vec!["tiny-embed"],
        "no staging or .part left behind"
    );
    same_files(&setup.models.path().join("tiny-embed"), &tiny_model());

    // Listed as installed and active; known models are listed as downloadable.
    let list = json(&setup.zblade(&["models", "list", "--json"]));
    let entries = list.as_array().unwrap();
    let tiny = entries.iter().find(|m| m["name"] == "tiny-embed").unwrap();
    assert_eq!(tiny["active"], true);
    assert!(
        entries
            .iter()
            .any(|m| m["name"] == "all-minilm-l6-v2" && m["dir"].is_null())
    );

    // Search uses it: a conversation is embedded and found semantically.
    let conversation = zblade_tests::conversation_json("conv_a", "token expiry", 2);
    let file = setup.project.path().join("conv.json");
    std::fs::write(&file, conversation).unwrap();
    zblade_tests::write_referenced_code(setup.project.path());
    let added = setup.zblade(&["add", "conversation", "conv.json"]);
    assert!(added.status.success(), "{}", stderr(&added));
    // Embedded by the add itself: nothing is left for `zblade index`.
    let status = json(&setup.zblade(&["status", "--json"]));
    assert!(status["vectors"].as_u64().unwrap() >= 2, "{status}");
    assert_eq!(status["pending_vectors"], 0, "{status}");
    let indexed = json(&setup.zblade(&["index", "--json"]));
    assert!(indexed["semantic"].is_object(), "{indexed}");
    let results = json(&setup.zblade(&["search", "token expiry", "--mode", "semantic", "--json"]));
    assert_eq!(results["mode"], "semantic", "{results}");
    assert!(!results["hits"].as_array().unwrap().is_empty(), "{results}");

    // Installed already: refused without --force; --force replaces it in place.
    let again = download(&setup, &hub.url, &[]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    let forced = download(&setup, &hub.url, &["--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(setup.models_in(""), vec!["tiny-embed"]);
}

#[test]
fn failed_downloads_say_why_and_install_nothing() {
    let setup = ModelsProject::new();
    // An unknown repository: 404 is not retried.
    let hub = HubServer::start(REPO, &tiny_model(), HubFault::None);
    let out = setup.zblade(&[
        "models",
        "download",
        "acme/missing",
        "--hub",
        &hub.url,
        "--allow-network",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/acme/missing/resolve/main/model.onnx"),
        "{}",
        stderr(&out)
    );
    assert_eq!(hub.requests().len(), 1);
    assert!(setup.models_in("").is_empty(), "{:?}", setup.models_in(""));

    // A connection that always closes early: retried, then a clear error, nothing installed.
    let truncating = HubServer::start(REPO, &tiny_model(), HubFault::Truncate);
    let out = setup.zblade(&["models", "download", REPO, "--hub", &truncating.url, "--allow-network"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("closed after"), "{}", stderr(&out));
    assert_eq!(truncating.requests().len(), zblade_models::ATTEMPTS as usize);
    assert!(setup.models_in("").is_empty(), "{:?}", setup.models_in(""));

    // Nobody listening: a network error, not a crash.
    let out = setup.zblade(&[
        "models",
        "download",
        REPO,
        "--hub",
        "http://127.0.0.1:9",
        "--allow-network",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("network"), "{}", stderr(&out));
    assert!(setup.models_in("").is_empty());

    // A name that is neither known nor owner/repo.
    let out = setup.zblade(&["models", "download", "../etc", "--allow-network"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown model"), "{}", stderr(&out));
}

#[test]
fn a_model_folder_is_imported_checked_and_used_without_the_network() {
    let setup = ModelsProject::new();
    let report = json(&setup.zblade(&[
        "models",
        "import",
        tiny_model().to_str().unwrap(),
        "--name",
        "tiny-local",
        "--use",
        "--json",
    ]));
    assert_eq!(report["name"], "tiny-local");
    assert_eq!(report["active"], true);
    assert_eq!(setup.models_in(""), vec!["tiny-local"], "no staging left behind");
    same_files(&setup.models.path().join("tiny-local"), &tiny_model());
    let indexed = json(&setup.zblade(&["index", "--json"]));
    assert!(
        indexed["semantic"].is_object(),
        "search embeds with the imported model: {indexed}"
    );

    // Installed already: refused without --force.
    let again = setup.zblade(&[
        "models",
        "import",
        tiny_model().to_str().unwrap(),
        "--name",
        "tiny-local",
    ]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));

    // A folder that is not a model: the missing files are named, nothing is installed.
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("model.onnx"), b"not onnx").unwrap();
    let out = setup.zblade(&["models", "import", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("tokenizer.json"), "{}", stderr(&out));

    // All files there but the model is garbage: it does not load, nothing is installed.
    let broken = tempfile::tempdir().unwrap();
    for name in zblade_search::embed::MODEL_FILES {
        std::fs::copy(tiny_model().join(name), broken.path().join(name)).unwrap();
    }
    std::fs::write(broken.path().join("model.onnx"), b"not onnx").unwrap();
    let out = setup.zblade(&["models", "import", broken.path().to_str().unwrap(), "--name", "broken"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not load"), "{}", stderr(&out));
    assert_eq!(setup.models_in(""), vec!["tiny-local"]);

    // A missing folder.
    let out = setup.zblade(&["models", "import", "/no/such/folder"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no such folder"), "{}", stderr(&out));
}
