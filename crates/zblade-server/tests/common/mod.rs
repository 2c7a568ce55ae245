//! A real server on a loopback port, over SQLite in a temporary folder or over a fresh
//! PostgreSQL database (when `ZBLADE_TEST_POSTGRES` names a server; `scripts/pg.sh` starts one).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use zblade_server::auth::{hash_token, new_token};
use zblade_server::{Limits, Store};

/// The backends to run a story against: SQLite always; PostgreSQL when a server is given (CI
/// gives one; a run with `CI` set and none fails rather than skipping it quietly).
pub fn backends() -> Vec<&'static str> {
    let mut backends = vec!["sqlite"];
    match std::env::var("ZBLADE_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => backends.push("postgresql"),
        _ if std::env::var_os("CI").is_some() => {
            panic!("ZBLADE_TEST_POSTGRES is not set; scripts/test.sh starts PostgreSQL with scripts/pg.sh")
        }
        _ => eprintln!("ZBLADE_TEST_POSTGRES is not set: PostgreSQL stories skipped"),
    }
    backends
}

/// A running server and what a test needs to talk to it.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The database argument it was started with.
    pub db: String,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

/// A fresh, empty database for `backend`.
pub fn fresh_db(backend: &str, dir: &std::path::Path) -> String {
    match backend {
        "sqlite" => dir.join("server.db").display().to_string(),
        _ => {
            let admin = std::env::var("ZBLADE_TEST_POSTGRES").expect("ZBLADE_TEST_POSTGRES");
            let name = format!("zbt_{}", hex_id());
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let (client, conn) = tokio_postgres::connect(&admin, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(conn);
                client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
            });
            // Same server, the new database.
            match admin.rfind('/') {
                Some(slash) => format!("{}/{name}", &admin[..slash]),
                None => panic!("ZBLADE_TEST_POSTGRES must end in /DATABASE"),
            }
        }
    }
}

fn hex_id() -> String {
    let (id, _) = new_token();
    id.trim_start_matches("tok_").to_string()
}

impl TestServer {
    /// Starts a server over a fresh database of `backend`.
    pub fn start(backend: &str, limits: Limits) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let db = fresh_db(backend, dir.path());
        Self::start_on(db, limits, dir, "127.0.0.1:0".parse().unwrap())
    }

    /// Starts a server over `db` at `addr`.
    pub fn start_on(db: String, limits: Limits, dir: tempfile::TempDir, addr: SocketAddr) -> TestServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(async {
            zblade_server::with_store!(&db, store => store.migrate().await.unwrap()).unwrap();
            tokio::net::TcpListener::bind(addr).await.unwrap()
        });
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handle = runtime.handle().clone();
        // Vectors in the test's folder: a restarted server (same folder) finds them again.
        let vectors = zblade_server::Vectors::new(dir.path().join("vectors").to_string_lossy());
        let served_db = db.clone();
        let thread = std::thread::spawn(move || {
            handle.block_on(async {
                zblade_server::with_store!(&served_db, store => zblade_server::serve(listener, store, vectors, &limits, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap())
                .unwrap()
            });
        });
        TestServer {
            base,
            db,
            runtime: Some(runtime),
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// Adds a user and returns a working token.
    pub fn user(&self, name: &str) -> String {
        let (id, secret) = new_token();
        self.block_on(async {
            zblade_server::with_store!(&self.db, store => {
                store.add_user(name).await.unwrap();
                store.add_token(name, &id, &hash_token(&secret), None).await.unwrap();
            })
            .unwrap()
        });
        secret
    }

    /// Adds a token for an existing user: (id, secret).
    pub fn token(&self, name: &str) -> (String, String) {
        let (id, secret) = new_token();
        self.block_on(async {
            zblade_server::with_store!(&self.db, store => {
                store.add_token(name, &id, &hash_token(&secret), None).await.unwrap();
            })
            .unwrap()
        });
        (id, secret)
    }

    /// Revokes a token by id.
    pub fn revoke(&self, id: &str) -> bool {
        self.block_on(async {
            zblade_server::with_store!(&self.db, store => {
                store.revoke_token(id).await.unwrap()
            })
            .unwrap()
        })
    }

    fn block_on<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.runtime.as_ref().unwrap().block_on(f)
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops the server; returns its folder so it can be started again on the same database.
    pub fn stop(mut self) -> (String, tempfile::TempDir) {
        self.shutdown();
        let dir = std::mem::replace(&mut self._dir, tempfile::tempdir().unwrap());
        (self.db.clone(), dir)
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A blocking HTTP client with a short timeout.
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// A valid conversation artifact.
pub fn conversation(id: &str, project: &str, title: &str, words: &str) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "version": "1.0",
        "conversation_id": id,
        "project_id": project,
        "created_at": "2026-11-20T10:00:00Z",
        "updated_at": "2026-11-20T10:05:00Z",
        "title": title,
        "messages": [
            {"id": "msg_1", "role": "user", "content": format!("How do we handle {words}?")},
            {"id": "msg_2", "role": "assistant", "content": format!("We decided: {words} goes through the gateway.")}
        ],
        "metadata": {"total_messages": 2, "total_tokens": 0, "models_used": [], "tags": ["auth", "gateway"]}
    }))
    .unwrap()
}

/// A valid moment artifact.
pub fn moment(id: &str, content: &str) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "version": "1.0",
        "id": id,
        "type": "decision",
        "content": content,
        "tags": ["design"],
        "created_at": "2026-11-20T10:00:00Z",
        "relevance_score": 0.8
    }))
    .unwrap()
}
