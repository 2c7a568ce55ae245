//! No network request happens before the user consents: the download path the app's Settings
//! uses is refused before any connection while consent is off, and reaches the server after.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use zblade_app::config::AppConfig;
use zblade_app::error::ErrorCode;
use zblade_engine::Project;

/// A server that counts connections and answers 404.
fn counting_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (url, count)
}

/// A known model that setup does not install.
const MODEL: &str = "bge-small-en-v1.5";

#[test]
fn downloads_are_refused_without_a_request_until_the_user_allows_the_network() {
    let (hub, requests) = counting_server();
    let dir = tempfile::tempdir().unwrap();
    let (project, _) = Project::init(dir.path()).unwrap();
    // Even a project whose own settings allow the network does not open the app's door.
    let mut settings = project.settings().clone();
    settings.privacy.allow_network = true;
    settings.save(&project.layout().settings()).unwrap();
    let mut project = Project::open(dir.path()).unwrap();

    let first_run = AppConfig::default();
    let refused =
        zblade_app::network::download_embedding_model(&first_run, &mut project, MODEL, &hub, &mut |_, _, _| {})
            .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ConsentRequired, "{}", refused.message);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(requests.load(Ordering::SeqCst), 0, "a request was made before consent");

    let consented = AppConfig {
        wizard_completed: true,
        allow_network: true,
        ..AppConfig::default()
    };
    let failed =
        zblade_app::network::download_embedding_model(&consented, &mut project, MODEL, &hub, &mut |_, _, _| {})
            .unwrap_err();
    assert!(
        requests.load(Ordering::SeqCst) > 0,
        "after consent the download reaches the server"
    );
    assert_eq!(failed.code, ErrorCode::Network, "{}", failed.message);
    let installed = project
        .list_models()
        .into_iter()
        .any(|m| m.name == MODEL && m.dir.is_some());
    assert!(!installed, "a failed download installs nothing");
}
