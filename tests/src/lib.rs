//! Helpers for zblade's end-to-end journeys: fixture projects and the `zblade` binary.

use std::path::{Path, PathBuf};

/// The `zblade` binary built by the same `cargo test` run.
///
/// Cargo builds binaries for the integration tests of their own package only, so this finds it
/// next to the test executable (`target/<profile>/deps/…` → `target/<profile>/zblade`).
pub fn zblade_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let bin = profile_dir.join(format!("zblade{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: run the whole workspace (`cargo test --workspace`), which builds it",
        bin.display()
    );
    bin
}

/// The code [`conversation_json`]'s reference points at (`src/lib.rs`, three lines), written
/// into `root`: a reference to lines a project does not have is refused when it is added.
pub fn write_referenced_code(root: &std::path::Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), REFERENCED_CODE).unwrap();
}

/// What [`write_referenced_code`] writes.
pub const REFERENCED_CODE: &str = "fn a() {}\nfn b() {}\nfn c() {}\n";

/// A conversation in RFC-002 JSON about `topic`, with `messages` turns and a code reference
/// to `src/lib.rs` lines 1–3 (see [`write_referenced_code`]).
pub fn conversation_json(id: &str, topic: &str, messages: usize) -> String {
    let turns: Vec<serde_json::Value> = (0..messages)
        .map(|i| {
            serde_json::json!({
                "id": format!("msg_{i}"),
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("Turn {i} about {topic}: how should the {topic} code handle retries and errors?"),
                "timestamp": format!("2026-01-17T14:{:02}:00Z", i % 60),
                "code_references": if i == 0 { serde_json::json!([{"file": "src/lib.rs", "lines": [1, 3]}]) } else { serde_json::json!([]) },
            })
        })
        .collect();
    serde_json::json!({"conversation_id": id, "title": format!("About {topic}"), "messages": turns}).to_string()
}

/// A real git repository in a temporary directory, driven by the `git` command.
pub struct GitFixture {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
}

impl GitFixture {
    /// A new repository with one commit holding `files` (path, content).
    pub fn new(files: &[(&str, &str)]) -> Self {
        let fixture = GitFixture {
            dir: tempfile::tempdir().unwrap(),
        };
        fixture.git(&["init", "-q", "-b", "main"]);
        for (path, text) in files {
            fixture.write(path, text);
        }
        fixture.commit("initial");
        fixture
    }

    /// The work tree.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git; panics with its output on failure.
    pub fn git(&self, args: &[&str]) -> String {
        self.git_with(args, &[])
    }

    /// Runs git with extra environment variables; panics with its output on failure.
    pub fn git_with(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=zblade",
                "-c",
                "user.email=zblade@example.com",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .envs(env.iter().copied())
            .current_dir(self.root())
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes a file (creating folders).
    pub fn write(&self, path: &str, text: &str) {
        let full = self.root().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    /// Reads a file.
    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root().join(path)).unwrap()
    }

    /// Commits everything.
    pub fn commit(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
    }

    /// Commits everything with author and committer date `date` (RFC 3339).
    pub fn commit_at(&self, message: &str, date: &str) {
        self.git(&["add", "-A"]);
        self.git_with(
            &["commit", "-q", "--allow-empty", "-m", message],
            &[("GIT_AUTHOR_DATE", date), ("GIT_COMMITTER_DATE", date)],
        );
    }
}

/// This package's folder (`tests/`), asked at run time: cargo sets `CARGO_MANIFEST_DIR` for the tests it
/// runs, while the value compiled in names the checkout the binary was built in, which cargo
/// may reuse for another checkout of the workspace (it hashes paths relative to the workspace).
pub fn source_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from)
}

/// A session file from `crates/zblade-import/tests/fixtures` (written from each agent's
/// format), with `__ROOT__` replaced by `root`, written to `dest`.
pub fn install_session(fixture: &str, dest: &Path, root: &Path) -> PathBuf {
    let dir = source_dir().join("../crates/zblade-import/tests/fixtures");
    let text = std::fs::read_to_string(dir.join(fixture)).unwrap();
    let root = root.display().to_string();
    let text = text.replace("__ROOT_URI__", &root).replace("__ROOT__", &root);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(dest, text).unwrap();
    dest.to_path_buf()
}

/// `n` distinct lines of plausible code.
pub fn code_lines(n: usize) -> String {
    (1..=n)
        .map(|i| format!("    let value_{i} = compute_{i}(input, {i});\n"))
        .collect()
}

/// A conversation JSON with one message referencing `file` lines `start..=end`.
pub fn referencing_conversation(id: &str, file: &str, start: u32, end: u32) -> String {
    serde_json::json!({
        "conversation_id": id,
        "title": format!("About {file}"),
        "messages": [{"id": "msg_1", "role": "user", "content": format!("Explain {file}"),
                      "code_references": [{"file": file, "lines": [start, end]}]}]
    })
    .to_string()
}

/// What a command printed on stderr.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON a successful command printed on stdout; panics with its stderr when it failed.
pub fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "zblade failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// The tiny random-weight llama GGUF model (`scripts/models/build_tiny_gguf.py`), which
/// scripts/setup.sh builds at `$ZBLADE_TEST_GGUF`.
pub fn tiny_gguf() -> PathBuf {
    zblade_llm::test_model()
}

/// A tiny real embedding model (random-weight BERT, 32 dimensions) built once per test process
/// by `scripts/models/build_bert_onnx.py --tiny`, with the Python environment `scripts/setup.sh`
/// creates. Returns the model directory.
pub fn tiny_model() -> PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let python = std::env::var_os("ZBLADE_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/zblade-py/bin/python"));
        let script = source_dir().join("../scripts/models/build_bert_onnx.py");
        let out = std::process::Command::new(&python)
            .arg(&script)
            .arg("--tiny")
            .arg(dir.path().join("tiny"))
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}; run scripts/setup.sh first", python.display()));
        assert!(
            out.status.success(),
            "building the tiny model failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .path()
    .join("tiny")
}

/// How [`HubServer`] answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubFault {
    /// Serve files as they are.
    None,
    /// Answer the first request with 503, then serve normally (tests retries).
    FirstRequest503,
    /// Promise the whole file but close the connection halfway, every time.
    Truncate,
}

/// A minimal HTTP/1.1 server laid out like a model hub (`/{owner}/{repo}/resolve/main/{file}`),
/// serving the files of one local directory as repository `repo`. It records every request
/// path, so tests can assert that nothing was fetched.
pub struct HubServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HubServer {
    /// Serves `dir` as `repo` on a free local port, answering with `fault`.
    pub fn start(repo: &str, dir: &Path, fault: HubFault) -> HubServer {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = requests.clone();
        let prefix = format!("/{repo}/resolve/main/");
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                // Skip the headers.
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
                let nth = {
                    let mut log = log.lock().unwrap();
                    log.push(path.clone());
                    log.len()
                };
                let file = path.strip_prefix(&prefix).map(|f| dir.join(f)).filter(|f| f.is_file());
                let _ = match (file, fault) {
                    (_, HubFault::FirstRequest503) if nth == 1 => stream.write_all(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                    (None, _) => {
                        stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    }
                    (Some(file), _) => {
                        let body = std::fs::read(file).unwrap();
                        let sent = if fault == HubFault::Truncate {
                            &body[..body.len() / 2]
                        } else {
                            &body[..]
                        };
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(sent))
                    }
                };
            }
        });
        HubServer { url, requests }
    }

    /// The paths requested so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// The `zblade-server` binary, which the workspace's test build makes (scripts/test.sh).
pub fn server_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let bin = profile_dir.join(format!("zblade-server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: `cargo test --workspace --no-run` (or scripts/test.sh) builds it",
        bin.display()
    );
    bin
}

/// A `zblade-server` process on a loopback port over a SQLite file; killed when dropped.
pub struct ServerProcess {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// A token of user `tester`.
    pub token: String,
    /// The database file.
    pub db: PathBuf,
    port: u16,
    child: Option<std::process::Child>,
    dir: tempfile::TempDir,
}

impl ServerProcess {
    /// `zblade migrate to-server` to this server with the test user's token, then `extra`.
    pub fn migrate_up<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["migrate", "to-server", "--server", &self.url, "--token", &self.token];
        args.extend_from_slice(extra);
        args
    }

    /// Starts a server with a fresh SQLite database and one user.
    pub fn start() -> ServerProcess {
        Self::start_on("sqlite")
    }

    /// Starts a server on a fresh database of `backend` (`sqlite` or `postgresql`).
    pub fn start_on(backend: &str) -> ServerProcess {
        let dir = tempfile::tempdir().unwrap();
        let db = match backend {
            "sqlite" => dir.path().join("server.db"),
            _ => PathBuf::from(fresh_postgres_database()),
        };
        let out = std::process::Command::new(server_bin())
            .args(["user", "add", "tester", "--json", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let user: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // A free port: bind, read it, let go (the server binds it again at once).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = ServerProcess {
            url: format!("http://127.0.0.1:{port}"),
            token: user["token"].as_str().unwrap().to_string(),
            db,
            port,
            child: None,
            dir,
        };
        server.restart();
        server
    }

    /// Adds another user (`zblade-server user add`); their token.
    pub fn add_user(&self, name: &str) -> String {
        let out = std::process::Command::new(server_bin())
            .args(["user", "add", name, "--json", "--db"])
            .arg(&self.db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let user: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        user["token"].as_str().unwrap().to_string()
    }

    /// Starts the process again (after [`ServerProcess::kill`]) on the same port and database.
    pub fn restart(&mut self) {
        let child = std::process::Command::new(server_bin())
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{}", self.port),
                "--rate",
                "100000",
                "--burst",
                "100000",
                "--db",
            ])
            .arg(&self.db)
            // Beside the database in the test's folder (with PostgreSQL the default is a
            // folder in the working directory).
            .arg("--vectors")
            .arg(self.dir.path().join("vectors"))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(started.elapsed().as_secs() < 20, "zblade-server did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Kills the process (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The sync server backends to run a story against: SQLite always, PostgreSQL when
/// `ZBLADE_TEST_POSTGRES` names a server (scripts/test.sh starts one; with `CI` set it must).
pub fn server_backends() -> Vec<&'static str> {
    match std::env::var("ZBLADE_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => vec!["sqlite", "postgresql"],
        _ if std::env::var_os("CI").is_some() => {
            panic!("ZBLADE_TEST_POSTGRES is not set; scripts/test.sh starts PostgreSQL with scripts/pg.sh")
        }
        _ => vec!["sqlite"],
    }
}

/// A new, empty database on the `ZBLADE_TEST_POSTGRES` server (made with `psql`); its URL.
pub fn fresh_postgres_database() -> String {
    let admin = std::env::var("ZBLADE_TEST_POSTGRES").expect("ZBLADE_TEST_POSTGRES");
    let name = format!(
        "zbt_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let out = std::process::Command::new("psql")
        .args(["-q", "-X", &admin, "-c", &format!("CREATE DATABASE {name}")])
        .output()
        .expect("psql (scripts/setup.sh installs postgresql-client)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    format!(
        "{}/{name}",
        &admin[..admin.rfind('/').expect("a URL ending in /DATABASE")]
    )
}

/// A private D-Bus session with GNOME Keyring's Secret Service, unlocked with a test
/// password: the real keyring zblade's keyring users talk to on Linux. Commands get
/// [`SecretService::env`]; both daemons are killed on drop.
pub struct SecretService {
    children: Vec<std::process::Child>,
    dir: tempfile::TempDir,
    bus: String,
}

impl SecretService {
    /// Starts dbus-daemon and gnome-keyring-daemon (scripts/setup.sh installs both).
    pub fn start() -> SecretService {
        use std::io::{BufRead, Write};
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (scripts/setup.sh installs dbus)");
        let mut address = String::new();
        std::io::BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_string();
        assert!(!address.is_empty(), "dbus-daemon printed no address");
        let mut service = SecretService {
            children: vec![bus],
            dir,
            bus: address,
        };
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets", "--foreground"])
            .envs(service.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon (scripts/setup.sh installs gnome-keyring)");
        keyring.stdin.take().unwrap().write_all(b"test-password").unwrap();
        service.children.push(keyring);
        // Ready when the bus knows the Secret Service's name.
        let started = std::time::Instant::now();
        loop {
            let names = Command::new("dbus-send")
                .args([
                    "--session",
                    "--print-reply",
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.ListNames",
                ])
                .envs(service.env())
                .output()
                .expect("dbus-send");
            if String::from_utf8_lossy(&names.stdout).contains("org.freedesktop.secrets") {
                return service;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "gnome-keyring-daemon did not register the Secret Service"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// What a process needs to reach this keyring.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("DBUS_SESSION_BUS_ADDRESS".into(), self.bus.clone()),
            (
                "XDG_RUNTIME_DIR".into(),
                self.dir.path().join("run").display().to_string(),
            ),
            (
                "XDG_DATA_HOME".into(),
                self.dir.path().join("data").display().to_string(),
            ),
        ]
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Forwards connections to `target` and records what clients send: what leaves the machine,
/// for the privacy tests.
pub struct RecordingProxy {
    /// Its URL (`http://127.0.0.1:PORT`).
    pub url: String,
    sent: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    /// Connections accepted so far.
    pub connections: std::sync::Arc<std::sync::Mutex<usize>>,
}

impl RecordingProxy {
    /// Listens on a free port and forwards to `target` (`http://host:port`).
    pub fn start(target: &str) -> RecordingProxy {
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let target = target.trim_start_matches("http://").to_string();
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let connections = std::sync::Arc::new(std::sync::Mutex::new(0));
        let (sent2, connections2) = (sent.clone(), connections.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                *connections2.lock().unwrap() += 1;
                let server = TcpStream::connect(&target).unwrap();
                let (mut c_read, mut s_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut s_read, mut c_write) = (server, client);
                let record = sent2.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16384];
                    while let Ok(n) = c_read.read(&mut buf) {
                        if n == 0 || s_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        record.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut s_read, &mut c_write);
                });
            }
        });
        RecordingProxy { url, sent, connections }
    }

    /// Every byte clients sent, as text (binary bytes replaced).
    pub fn sent(&self) -> String {
        String::from_utf8_lossy(&self.sent.lock().unwrap()).into_owned()
    }

    /// The request lines ("PUT /api/v0/… HTTP/1.1") sent so far.
    pub fn requests(&self) -> Vec<String> {
        self.sent()
            .lines()
            .filter(|l| {
                l.starts_with("GET ") || l.starts_with("PUT ") || l.starts_with("POST ") || l.starts_with("DELETE ")
            })
            .map(str::to_string)
            .collect()
    }
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A small deterministic generator (xorshift) for kill points, seeded from the clock unless
/// `ZBLADE_TEST_SEED` is set; the seed is printed under `what` so a failure can be replayed.
pub struct KillPoints(u64);

impl KillPoints {
    /// A generator for the journey `what` ("graph", "migration").
    pub fn new(what: &str) -> KillPoints {
        let seed = std::env::var("ZBLADE_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        eprintln!("{what} kill points: ZBLADE_TEST_SEED={seed}");
        KillPoints(seed)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A fresh project (`zblade init` run) with a models directory of its own
/// (`ZBLADE_MODELS_DIR`), for the journeys that install, download and use models.
pub struct ModelsProject {
    /// The project root.
    pub project: tempfile::TempDir,
    /// The models directory.
    pub models: tempfile::TempDir,
}

impl Default for ModelsProject {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelsProject {
    /// Makes both directories and initialises the project.
    pub fn new() -> ModelsProject {
        let setup = ModelsProject {
            project: tempfile::tempdir().unwrap(),
            models: tempfile::tempdir().unwrap(),
        };
        setup.json(&["init"]);
        setup
    }

    /// Runs `zblade` in the project with this models directory.
    pub fn zblade(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(zblade_bin())
            .args(args)
            .current_dir(self.project.path())
            .env("ZBLADE_MODELS_DIR", self.models.path())
            .output()
            .unwrap()
    }

    /// Runs `zblade --json` and parses what it printed (it must succeed).
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        json(&self.zblade(&all))
    }

    /// Everything in `sub` of the models directory (hidden partial files and staging
    /// directories included), sorted; empty when it does not exist.
    pub fn models_in(&self, sub: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.models.path().join(sub))
            .map(|dir| {
                dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The files in `.zblade/DIR` of the project, sorted.
    pub fn files_under(&self, dir: &str) -> Vec<PathBuf> {
        let dir = self.project.path().join(".zblade").join(dir);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        files.sort();
        files
    }
}
