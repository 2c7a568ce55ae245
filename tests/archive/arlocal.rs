//! arlocal (a local Arweave gateway, npm) and arweave-js (the reference client) for the
//! archive's tests and benchmark, which include this file by path: the integration test
//! (`tests/tests/archive.rs`) and `crates/zblade-archive/benches/archive.rs`.
// Each includer uses part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Where setup.sh installed arlocal and arweave-js (`ZBLADE_ARCHIVE_CLIENTS`).
pub fn clients() -> PathBuf {
    let dir = PathBuf::from(std::env::var("ZBLADE_ARCHIVE_CLIENTS").unwrap_or_else(|_| {
        panic!("ZBLADE_ARCHIVE_CLIENTS is not set: run the tests through scripts/test.sh (scripts/setup.sh installs arlocal)")
    }));
    assert!(
        dir.join("node_modules/.bin/arlocal").exists(),
        "arlocal is not installed in {}: run scripts/setup.sh",
        dir.display()
    );
    dir
}

/// arlocal on a free port, in its own folder; killed on drop.
pub struct Arlocal {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Arlocal {
    /// Starts one and waits until it answers. Its database lives in its own folder: by
    /// default every arlocal shares one under the user's app data and deletes it on start,
    /// so a second instance wiped the first one's (it then answered 404). A port taken
    /// between our probe and arlocal's bind makes it exit; it is then started again on
    /// another port.
    pub fn start() -> Arlocal {
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let log = std::fs::File::create(dir.path().join("arlocal.log")).unwrap();
            let child = Command::new(clients().join("node_modules/.bin/arlocal"))
                .args([port.to_string().as_str(), "--hidelogs", "--dbpath", "db"])
                .current_dir(dir.path())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            let mut gateway = Arlocal { child, port, _dir: dir };
            let started = Instant::now();
            loop {
                if gateway.try_get("/info").is_some() {
                    return gateway;
                }
                if gateway.child.try_wait().unwrap().is_some() {
                    eprintln!("arlocal on port {port} exited: {}", gateway.log());
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "arlocal did not answer within 120 s: {}",
                    gateway.log()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        panic!("arlocal exited three times (see above)");
    }

    /// What it printed.
    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("arlocal.log")).unwrap_or_default()
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// GET, the body of a 200 answer.
    pub fn try_get(&self, path: &str) -> Option<Vec<u8>> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).ok()?;
        let split = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
        answer
            .starts_with(b"HTTP/1.1 200")
            .then(|| answer[split + 4..].to_vec())
    }

    /// GET that must succeed.
    pub fn get(&self, path: &str) -> Vec<u8> {
        self.try_get(path).unwrap_or_else(|| panic!("GET {path} failed"))
    }

    /// Mines the pending transactions into a block.
    pub fn mine(&self) {
        self.get("/mine");
    }
}

impl Drop for Arlocal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs arweave-js (the reference client) on a script; returns its standard output.
pub fn arweave_js(script: &str, args: &[&str]) -> String {
    let out = Command::new("node")
        .arg("-e")
        .arg(script)
        .args(args)
        .env("NODE_PATH", clients().join("node_modules"))
        .output()
        .unwrap();
    assert!(out.status.success(), "node: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A new wallet from arweave-js, funded on the gateway; returns its file and address.
pub fn funded_wallet(gateway: &Arlocal, dir: &Path) -> (PathBuf, String) {
    let out = arweave_js(
        "const A = require('arweave'); const a = A.init({}); \
         a.wallets.generate().then(async k => console.log(JSON.stringify({jwk: k, address: await a.wallets.jwkToAddress(k)})))",
        &[],
    );
    let value: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let path = dir.join("wallet.json");
    std::fs::write(&path, value["jwk"].to_string()).unwrap();
    let address = value["address"].as_str().unwrap().to_string();
    // arlocal answers /info before its database is ready: mint until it takes.
    let started = Instant::now();
    while gateway
        .try_get(&format!("/mint/{address}/100000000000000000"))
        .is_none()
    {
        assert!(started.elapsed() < Duration::from_secs(30), "arlocal never minted");
        std::thread::sleep(Duration::from_millis(200));
    }
    (path, address)
}
