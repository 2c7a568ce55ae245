//! Vectors in an object store: `zblade-server serve --vectors s3://BUCKET/PREFIX` against moto's
//! S3 server (PyPI `moto[server]`, which scripts/setup.sh installs), an S3 API written by
//! others, reached over HTTP as a real deployment reaches S3 or MinIO. The server is the real
//! binary, configured by the standard `AWS_*` variables LanceDB reads. A hybrid search finds a
//! message by its vector alone; the tables are objects in the bucket; a restarted server still
//! has them; deleting the project deletes its objects.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{client, conversation};

const BUCKET: &str = "zblade-vectors";
const PROJECT: &str = "/api/v0/projects/proj_s3";

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits until `port` accepts connections, failing with the process's own words if it exits.
fn wait_for(port: u16, process: &mut Process, what: &str) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = process.0.try_wait().unwrap() {
            let mut stderr = String::new();
            if let Some(mut pipe) = process.0.stderr.take() {
                use std::io::Read;
                let _ = pipe.read_to_string(&mut stderr);
            }
            panic!("{what} exited ({status}) before it listened: {stderr}");
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{what} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// moto's S3 server on a free port, or `None` when this machine has no moto (outside CI).
fn start_moto() -> Option<(Process, u16)> {
    let python = std::env::var_os("ZBLADE_PYTHON").unwrap_or_else(|| "python3".into());
    let has_moto = Command::new(&python)
        .args(["-c", "import moto.server"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_moto {
        assert!(
            std::env::var_os("CI").is_none(),
            "moto is not installed in ZBLADE_PYTHON's environment; scripts/setup.sh installs it"
        );
        eprintln!("moto is not installed (scripts/setup.sh installs it): object store test skipped");
        return None;
    }
    let port = free_port();
    let mut moto = Process(
        Command::new(&python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_for(port, &mut moto, "moto's S3 server");
    Some((moto, port))
}

/// `zblade-server serve` with its vectors in the bucket, configured as for any S3 endpoint.
fn start_server(db: &std::path::Path, moto_port: u16, port: u16) -> Process {
    let mut server = Process(
        Command::new(env!("CARGO_BIN_EXE_zblade-server"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--db"])
            .arg(db)
            .args(["--vectors", &format!("s3://{BUCKET}/team")])
            .env("AWS_ENDPOINT", format!("http://127.0.0.1:{moto_port}"))
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "zblade-test")
            .env("AWS_SECRET_ACCESS_KEY", "zblade-test-secret")
            .env("AWS_REGION", "us-east-1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_for(port, &mut server, "zblade-server");
    server
}

/// The keys of the bucket's objects under `prefix` (S3 ListObjectsV2, read plainly).
fn objects(http: &reqwest::blocking::Client, moto_port: u16, prefix: &str) -> Vec<String> {
    let listing = http
        .get(format!(
            "http://127.0.0.1:{moto_port}/{BUCKET}?list-type=2&prefix={prefix}&max-keys=1000"
        ))
        .send()
        .unwrap()
        .text()
        .unwrap();
    listing
        .split("<Key>")
        .skip(1)
        .filter_map(|part| part.split_once("</Key>").map(|(key, _)| key.to_string()))
        .collect()
}

struct Caller {
    http: reqwest::blocking::Client,
    base: String,
    token: String,
}

impl Caller {
    fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (StatusCode, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if !body.is_null() {
            request = request.body(body.to_string());
        }
        let response = request.send().unwrap();
        let status = response.status();
        (status, response.json().unwrap_or(Value::Null))
    }

    fn search(&self, q: &str, vector: [f32; 4]) -> Value {
        let (status, answer) = self.send(
            reqwest::Method::POST,
            &format!("{PROJECT}/search"),
            json!({"q": q, "limit": 5, "vector": {"model": {"id": "test-4", "dims": 4}, "values": vector}}),
        );
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer
    }
}

#[test]
fn vectors_kept_in_an_s3_bucket_answer_hybrid_search_across_a_restart() {
    let Some((_moto, moto_port)) = start_moto() else {
        return;
    };
    let http = client();
    let created = http
        .put(format!("http://127.0.0.1:{moto_port}/{BUCKET}"))
        .send()
        .unwrap()
        .status();
    assert!(created.is_success(), "the bucket: {created}");

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.db");
    let out = Command::new(env!("CARGO_BIN_EXE_zblade-server"))
        .args(["user", "add", "alice", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let user: Value = serde_json::from_slice(&out.stdout).unwrap();
    let port = free_port();
    let mut server = start_server(&db, moto_port, port);
    let alice = Caller {
        http: client(),
        base: format!("http://127.0.0.1:{port}"),
        token: user["token"].as_str().unwrap().to_string(),
    };

    assert_eq!(
        alice.send(reqwest::Method::PUT, PROJECT, json!({})).0,
        StatusCode::CREATED
    );
    let conv = conversation("conv_a", "proj_s3", "Gateway decision", "token refresh");
    // The artifact as written: the vectors name its hash.
    let status = alice
        .http
        .put(format!("{}{PROJECT}/conversations/conv_a", alice.base))
        .bearer_auth(&alice.token)
        .body(conv.clone())
        .send()
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::CREATED);
    let (status, stored) = alice.send(
        reqwest::Method::PUT,
        &format!("{PROJECT}/vectors/conversations/conv_a"),
        json!({
            "model": {"id": "test-4", "dims": 4},
            "record_hash": zblade_core::sha256_hex(conv.as_bytes()),
            "pieces": [
                {"message": "msg_1", "seq": 0, "vector": [0.0, 1.0, 0.0, 0.0]},
                {"message": "msg_2", "seq": 0, "vector": [1.0, 0.0, 0.0, 0.0]}
            ],
        }),
    );
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(stored["stored"], 2);

    // Words that match nothing; the vector finds the answer.
    let found = |answer: &Value| answer["hits"][0]["message"].as_str().unwrap_or_default().to_string();
    let answer = alice.search("weekday schedule", [0.98, 0.2, 0.0, 0.0]);
    assert_eq!(answer["mode"], "hybrid", "{answer}");
    assert_eq!(found(&answer), "msg_2", "{answer}");

    // The project's table is objects in the bucket, not files on this disk.
    let tables = objects(&http, moto_port, "team/");
    assert!(
        tables.iter().any(|k| k.contains(".lance/_versions/")),
        "a LanceDB table in the bucket: {tables:?}"
    );
    assert!(!dir.path().join("server.db.vectors").exists(), "nothing local");

    // A restarted server reads them back from the bucket.
    drop(server);
    server = start_server(&db, moto_port, port);
    let answer = alice.search("weekday schedule", [0.1, 0.99, 0.0, 0.0]);
    assert_eq!(answer["mode"], "hybrid", "{answer}");
    assert_eq!(found(&answer), "msg_1", "{answer}");

    // Deleting the project deletes its table's objects.
    let (status, _) = alice.send(reqwest::Method::DELETE, PROJECT, Value::Null);
    assert!(status.is_success(), "{status}");
    let left = objects(&http, moto_port, "team/");
    assert!(left.is_empty(), "the project's vectors are gone: {left:?}");
    drop(server);
}
