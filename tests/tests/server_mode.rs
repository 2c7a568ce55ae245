//! Server mode through the `zblade` binary, and the privacy line of local mode: a recording
//! proxy sits between zblade and a real `zblade-server` and keeps every byte zblade sends.

use std::path::Path;
use std::process::Command;

use zblade_engine::Project;
use zblade_tests::{GitFixture, RecordingProxy, ServerProcess, conversation_json, zblade_bin};

fn run(root: &Path, config: &Path, args: &[&str]) -> String {
    let out = Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args(args)
        .env("ZBLADE_CONFIG_DIR", config)
        .env_remove("ZBLADE_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "zblade {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A sync server, a one-file git project moved onto it, and the CLI's config directory.
fn project_on_a_server() -> (ServerProcess, GitFixture, tempfile::TempDir) {
    let server = ServerProcess::start();
    let fixture = GitFixture::new(&[("src/lib.rs", zblade_tests::REFERENCED_CODE)]);
    let config = tempfile::tempdir().unwrap();
    Project::init(fixture.root()).unwrap();
    migrate_to_server(fixture.root(), config.path(), &server);
    (server, fixture, config)
}

/// `zblade migrate to-server` with the test user's token.
fn migrate_to_server(root: &Path, config: &Path, server: &ServerProcess) {
    run(root, config, &server.migrate_up(&["--yes"]));
}

fn set_storage(root: &Path, server_url: &str, sync_metadata: bool) {
    let path = root.join(".zblade/config/settings.json");
    let mut settings: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    settings["storage"]["server_url"] = server_url.into();
    settings["storage"]["sync_metadata"] = sync_metadata.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&settings).unwrap()).unwrap();
}

#[test]
fn local_mode_sends_nothing_and_metadata_only_when_allowed() {
    let server = ServerProcess::start();
    let proxy = RecordingProxy::start(&server.url);
    let fixture = GitFixture::new(&[("src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n")]);
    let root = fixture.root();
    let config = tempfile::tempdir().unwrap();
    Project::init(root).unwrap();
    // A server is configured and a token saved, but the project is in local mode.
    set_storage(root, &proxy.url, false);
    let conv = conversation_json("conv_secret", "zanzibarpassword", 4);
    let file = root.join("conv.json");
    std::fs::write(&file, &conv).unwrap();
    run(root, config.path(), &["add", "conversation", file.to_str().unwrap()]);
    let moment = root.join("moment.json");
    std::fs::write(
        &moment,
        r#"{"type": "decision", "content": "Quokkasecret decision: rotate keys daily"}"#,
    )
    .unwrap();
    run(root, config.path(), &["add", "moment", moment.to_str().unwrap()]);
    for args in [
        &["list", "conversations"][..],
        &["search", "zanzibarpassword"],
        &["context", "zanzibarpassword", "--budget", "2000"],
        &["show", "conv_secret"],
        &["reindex"],
        &["fsck"],
        &["status"],
    ] {
        run(root, config.path(), args);
    }
    // Turned off, sync-metadata refuses and sends nothing.
    let out = Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args(["sync-metadata", "--token", &server.token])
        .env("ZBLADE_CONFIG_DIR", config.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sync_metadata is off"));
    assert_eq!(
        *proxy.connections.lock().unwrap(),
        0,
        "local mode opened a connection: {}",
        proxy.sent()
    );

    // Allowed: titles, tags and counts go, nothing else.
    set_storage(root, &proxy.url, true);
    let out = run(root, config.path(), &["sync-metadata", "--json"]);
    let sent: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(sent["sent"], 2);
    let requests = proxy.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        let path = request.split(' ').nth(1).unwrap();
        let allowed = request.starts_with("PUT ")
            && (path.contains("/metadata/") || path.split('/').count() == 5/* /api/v0/projects/ID */);
        assert!(allowed, "local mode sent {request}");
    }
    let bytes = proxy.sent();
    // The title ("About zanzibarpassword") may go; the turns and the moment's content may not.
    for secret in ["Turn 0 about", "retries and errors", "Quokkasecret", "rotate keys"] {
        assert!(
            !bytes.contains(secret),
            "content left the machine: {secret:?} in {bytes}"
        );
    }
    assert!(
        bytes.contains("About zanzibarpassword"),
        "the title is what metadata is"
    );
}

#[test]
fn server_mode_story_on_every_backend() {
    for backend in zblade_tests::server_backends() {
        server_mode_story(backend);
    }
}

/// Migrate up, add, list, search through the server, migrate home; then the server goes away.
fn server_mode_story(backend: &str) {
    let server = ServerProcess::start_on(backend);
    let fixture = GitFixture::new(&[("src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n")]);
    let root = fixture.root();
    let config = tempfile::tempdir().unwrap();
    Project::init(root).unwrap();
    migrate_to_server(root, config.path(), &server);
    let file = root.join("conv.json");
    std::fs::write(&file, conversation_json("conv_s1", "wombatcache", 4)).unwrap();
    let added = run(
        root,
        config.path(),
        &["--json", "add", "conversation", file.to_str().unwrap()],
    );
    assert!(added.contains("conv_s1"), "{added}");
    // Nothing was written locally: the artifact is on the server.
    assert!(!root.join(".zblade/artifacts/conversations/conv_s1.json").exists());
    let listed = run(root, config.path(), &["--json", "list", "conversations"]);
    assert!(listed.contains("conv_s1"), "{listed}");
    let found = run(root, config.path(), &["--json", "search", "wombatcache"]);
    assert!(found.contains("conv_s1"), "{found}");
    let hits: serde_json::Value = serde_json::from_str(&found).unwrap();
    assert!(
        hits["hits"][0]["timestamp"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-")),
        "server hits carry their time: {found}"
    );
    server_mode_readers(root, config.path(), backend);
    // Home again: what was added in server mode is now a local artifact, found by local search.
    run(root, config.path(), &["migrate", "to-local", "--yes"]);
    assert!(
        root.join(".zblade/artifacts/conversations/conv_s1.json").exists(),
        "{backend}"
    );
    let found = run(root, config.path(), &["--json", "search", "wombatcache"]);
    assert!(found.contains("conv_s1"), "{backend}: {found}");
    // Back up, then stop the server: a clear offline error, not a hang or a local write.
    run(
        root,
        config.path(),
        &["migrate", "to-server", "--server", &server.url, "--yes"],
    );
    drop(server);
    let out = Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args(["search", "wombatcache"])
        .env("ZBLADE_CONFIG_DIR", config.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach the zblade server"));
}

/// `show`, `list moments`, `context`, `moments extract` and `summarize` in server mode read
/// the server (nothing local holds memory), and code references are checked here.
fn server_mode_readers(root: &Path, config: &Path, backend: &str) {
    let file = root.join("decision.json");
    let decision = serde_json::json!({
        "conversation_id": "conv_s2",
        "title": "Retry policy",
        "messages": [
            {"role": "user", "content": "How should the quokkasync client retry?"},
            {"role": "assistant",
             "content": "We decided to use exponential backoff in the quokkasync client because the upstream limits bursts.",
             "code_references": [{"file": "src/lib.rs", "lines": [1, 2]}]},
            {"role": "user", "content": "Unrelated: lunch at noon."}
        ]
    });
    std::fs::write(&file, decision.to_string()).unwrap();
    run(root, config, &["add", "conversation", file.to_str().unwrap()]);

    // show: the artifact from the server, its reference checked against the working tree.
    let shown: serde_json::Value = serde_json::from_str(&run(root, config, &["--json", "show", "conv_s2"])).unwrap();
    assert_eq!(shown["kind"], "conversation", "{backend}: {shown}");
    assert_eq!(shown["conversation"]["messages"].as_array().unwrap().len(), 3);
    assert_eq!(shown["references"][0]["status"], "ok", "{shown}");
    assert_eq!(shown["references"][0]["code"][0], "fn a() {}", "{shown}");
    let out = Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args(["show", "msg_0"])
        .env("ZBLADE_CONFIG_DIR", config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("server mode"));

    // context: the matching turn (not the unrelated one) and its code, read now.
    let context: serde_json::Value = serde_json::from_str(&run(
        root,
        config,
        &["context", "quokkasync backoff", "--json", "--budget", "2000"],
    ))
    .unwrap();
    let text = context["text"].as_str().unwrap();
    assert!(
        text.contains("exponential backoff in the quokkasync client"),
        "{backend}: {text}"
    );
    // As in local mode (hybrid search lets a matched turn lend score to the turns beside it),
    // the turn after the decision may come along, never before it.
    let decision_at = text.find("exponential backoff").unwrap();
    assert!(text.find("lunch at noon").is_none_or(|at| at > decision_at), "{text}");
    assert!(
        text.contains("fn b() {}"),
        "the referenced code, from the working tree: {text}"
    );
    assert!(context["tokens"].as_u64().unwrap() <= 2000);
    let recent: serde_json::Value = serde_json::from_str(&run(
        root,
        config,
        &["context", "anything", "--conversation", "conv_s2", "--json"],
    ))
    .unwrap();
    assert!(recent["text"].as_str().unwrap().contains("lunch at noon"), "{recent}");

    // moments extract: read from the server, moments written there; list and show find them.
    let extracted: serde_json::Value =
        serde_json::from_str(&run(root, config, &["--json", "moments", "extract", "conv_s2"])).unwrap();
    let written = extracted["written"].as_array().unwrap();
    assert!(!written.is_empty(), "{backend}: {extracted}");
    assert!(
        !root.join(".zblade/artifacts/moments").exists()
            || std::fs::read_dir(root.join(".zblade/artifacts/moments"))
                .unwrap()
                .next()
                .is_none()
    );
    let moments: serde_json::Value = serde_json::from_str(&run(root, config, &["--json", "list", "moments"])).unwrap();
    let listed = moments.as_array().or_else(|| moments["moments"].as_array()).unwrap();
    assert!(
        listed
            .iter()
            .any(|m| m["type"] == "decision" && m["content"].as_str().unwrap().contains("quokkasync")),
        "{moments}"
    );
    let id = written[0].as_str().unwrap();
    let moment: serde_json::Value = serde_json::from_str(&run(root, config, &["--json", "show", id])).unwrap();
    assert_eq!(moment["kind"], "moment", "{moment}");
    assert_eq!(moment["references"][0]["status"], "ok", "{moment}");

    // summarize: the conversation read from the server, the summary kept in the cache.
    run(root, config, &["summarize", "conv_s2"]);
    assert!(root.join(".zblade/cache/summaries/conv_s2.json").exists());
}

/// The model proxy in server mode: the turn it records goes to the server, not to a local
/// artifact. A minimal provider on loopback answers one chat completion.
#[test]
fn the_proxy_records_turns_on_the_server_in_server_mode() {
    use std::io::{Read, Write};
    let (_server, fixture, config) = project_on_a_server();
    let root = fixture.root();

    // The provider: one request, one fixed answer.
    let provider = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let provider_url = format!("http://{}", provider.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut socket, _) = provider.accept().unwrap();
        let request = read_http(&mut socket);
        assert!(
            request.contains("zblade-memory") || request.contains("wombat"),
            "{request}"
        );
        let body = r#"{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Answered through the proxy."},"finish_reason":"stop"}]}"#;
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(reply.as_bytes()).unwrap();
    });

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut proxy = Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args([
            "proxy",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--openai-upstream",
            &provider_url,
        ])
        .env("ZBLADE_CONFIG_DIR", config.path())
        .env_remove("ZBLADE_TOKEN")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut socket = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(socket) => break socket,
            Err(_) if started.elapsed() < std::time::Duration::from_secs(30) => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            Err(e) => panic!("the proxy did not start: {e}"),
        }
    };
    let body = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"Where does the wombat cache live?"}]}"#;
    write!(
        socket,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nauthorization: Bearer sk-test\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("Answered through the proxy."), "{response}");
    let conversation = response
        .lines()
        .find_map(|l| l.strip_prefix("x-zblade-conversation: "))
        .expect("the proxy names the conversation")
        .trim()
        .to_string();

    // Recorded once the answer ended: on the server (show reads it there), not locally.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let shown = loop {
        let out = Command::new(zblade_bin())
            .arg("--project")
            .arg(root)
            .args(["--json", "show", &conversation])
            .env("ZBLADE_CONFIG_DIR", config.path())
            .env_remove("ZBLADE_TOKEN")
            .output()
            .unwrap();
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never recorded: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    proxy.kill().unwrap();
    let _ = proxy.wait();
    assert!(
        shown.contains("Where does the wombat cache live?") && shown.contains("Answered through the proxy."),
        "{shown}"
    );
    assert!(
        !root
            .join(format!(".zblade/artifacts/conversations/{conversation}.json"))
            .exists(),
        "a server-mode turn was written locally"
    );
}

/// One HTTP request from `socket`: the head and a `content-length` body.
fn read_http(socket: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&bytes);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_string())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                break;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The conversation graph in server storage mode: fork, merge, cherry-pick, lineage, history,
/// rename and delete work against a real `zblade-server` (as whole conversations: a server
/// keeps every message inline), and nothing is written locally.
#[test]
fn the_conversation_graph_works_in_server_mode() {
    let (_server, fixture, config) = project_on_a_server();
    let root = fixture.root();
    for (id, topic) in [("conv_g1", "wombats"), ("conv_g2", "quokkas")] {
        let file = root.join(format!("{id}.json"));
        std::fs::write(&file, conversation_json(id, topic, 6)).unwrap();
        run(root, config.path(), &["add", "conversation", file.to_str().unwrap()]);
    }
    let json = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&run(root, config.path(), &all)).unwrap()
    };
    let fork = json(&["conv", "fork", "conv_g1", "--after", "2", "--title", "Wombats, again"]);
    let fork_id = fork["conversation_id"].as_str().unwrap().to_string();
    assert_eq!(fork["messages"], 3);
    json(&["conv", "merge", &fork_id, "conv_g2", "--messages", "4,5"]);
    json(&["conv", "cherry-pick", "conv_g1", "conv_g2", "3", "--context", "1"]);
    let exported = json(&["conv", "export", &fork_id, "--format", "json"]);
    let messages = exported["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[0]["origin"]["kind"], "inherited");
    assert_eq!(messages[3]["origin"]["conversation_id"], "conv_g2");
    let lineage = json(&["conv", "lineage", "conv_g1"]);
    assert_eq!(lineage["forks"][0]["conversation"]["id"], fork_id.as_str());
    assert_eq!(lineage["merges"][0]["from"], "conv_g2");
    let lineage = json(&["conv", "lineage", "conv_g2"]);
    assert_eq!(lineage["merges"].as_array().unwrap().len(), 2, "{lineage}");
    let history = json(&["history", "--search", "wombat"]);
    assert!(!history.as_array().unwrap().is_empty(), "{history}");
    json(&["conv", "rename", &fork_id, "Renamed on the server"]);
    assert_eq!(json(&["conv", "resume"])["title"], "Renamed on the server");
    json(&["conv", "delete", &fork_id]);
    let out = Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args(["conv", "export", &fork_id])
        .env("ZBLADE_CONFIG_DIR", config.path())
        .env_remove("ZBLADE_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the fork is gone");
    assert!(
        !root
            .join(format!(".zblade/artifacts/conversations/{fork_id}.json"))
            .exists()
            && !root.join(".zblade/artifacts/messages").exists(),
        "server mode wrote locally"
    );
}
