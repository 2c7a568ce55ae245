//! Server-mode search against local search on LoCoMo (issue 48: "the same search as local").
//!
//! Each LoCoMo conversation becomes a local project (as in `search_quality`), is embedded, and
//! its questions are asked in hybrid mode; then the project is moved to a real `zblade-server`
//! with `Project::migrate` (its vectors go with it) and the same questions are asked of the
//! server: its keywords (SQLite FTS5, or PostgreSQL when `ZBLADE_TEST_POSTGRES` names one) and
//! its LanceDB vectors, fused by the same function. Every project of a backend lives on one
//! server, as a team's would. Reported: recall@5 and @10 of the evidence turns, both ways, on
//! the split the fusion was tuned on (conversations 26, 30) and the one never tuned on.
//!
//! `cargo bench --workspace --bench server_search` writes docs/BENCHMARKS.md; under
//! `cargo test` it runs one conversation (or a synthetic one) and 20 questions, and writes
//! nothing. Needs the `zblade-server` binary of the same profile (a workspace build makes it).

use std::collections::HashSet;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use zblade_engine::{MigrationDirection, Project, SearchKind, SearchMode, SearchQuery};
use zblade_sync::Client;

mod common;
#[path = "common/locomo.rs"]
mod locomo;
use common::{full_run, write_section};

/// Conversations (in file-name order) of the split the fusion was tuned on.
const TUNE_FILES: usize = 2;

/// A running `zblade-server` with one user.
struct Server {
    child: std::process::Child,
    url: String,
    token: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let bin = dir.join("zblade-server");
    assert!(bin.exists(), "{} is missing: build the workspace first", bin.display());
    bin
}

/// Starts a server over `db` (`None`: a SQLite file in a temporary folder).
fn start_server(db: Option<&str>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = db.map_or_else(
        || dir.path().join("server.db").to_string_lossy().into_owned(),
        str::to_string,
    );
    let out = std::process::Command::new(server_bin())
        .args([
            "user",
            "add",
            &format!("bench{}", std::process::id()),
            "--json",
            "--db",
            &db,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = serde_json::from_slice::<Value>(&out.stdout).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let vectors = dir.path().join("vectors");
    let child = std::process::Command::new(server_bin())
        .args(["serve", "--rate", "1000000", "--burst", "1000000", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--db", &db, "--vectors"])
        .arg(&vectors)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
        token,
        _dir: dir,
    }
}

#[derive(Default, Clone, Copy)]
struct Recall {
    at5: f64,
    at10: f64,
    n: usize,
}

impl Recall {
    fn add(&mut self, ranked: &[String], evidence: &HashSet<String>) {
        let hits_at = |k: usize| ranked.iter().take(k).filter(|id| evidence.contains(*id)).count() as f64;
        self.at5 += hits_at(5) / evidence.len() as f64;
        self.at10 += hits_at(10) / evidence.len() as f64;
        self.n += 1;
    }

    fn at(&self, k: usize) -> f64 {
        let total = if k == 5 { self.at5 } else { self.at10 };
        total / self.n.max(1) as f64
    }
}

/// The ids of the top 10 messages for `text`, hybrid; and the milliseconds it took.
fn ask(project: &mut Project, text: &str) -> (Vec<String>, f64) {
    let query = SearchQuery::new(text, 10, SearchKind::Messages);
    let started = Instant::now();
    let results = project
        .search(&query.clone().in_mode(Some(SearchMode::Hybrid)))
        .unwrap();
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(results.mode, SearchMode::Hybrid, "{:?}", results.notice);
    (results.hits.iter().map(|h| h.hit.id.clone()).collect(), millis)
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    // The tokens this benchmark saves go to a private config folder: the benchmark runs itself
    // again with `ZBLADE_CONFIG_DIR` pointing there.
    if std::env::var_os("ZBLADE_BENCH_CONFIG").is_none() {
        let config = tempfile::tempdir().unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(std::env::args_os().skip(1))
            .env("ZBLADE_BENCH_CONFIG", "1")
            .env("ZBLADE_CONFIG_DIR", config.path())
            .env_remove("ZBLADE_TOKEN")
            .status()
            .unwrap();
        std::process::exit(status.code().unwrap_or(1));
    }
    let full = full_run();
    let synthetic = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = match locomo::locomo_dir() {
        Some(dir) => locomo::conversation_files(&dir),
        None if !full => vec![locomo::synthetic_locomo(synthetic.path())],
        None => panic!("LoCoMo not found: set ZBLADE_LOCOMO_DIR to the folder holding its JSON files"),
    };
    if !full {
        files.truncate(1);
    }
    let mut backends: Vec<(&str, Option<String>)> = vec![("SQLite", None)];
    if let Ok(url) = std::env::var("ZBLADE_TEST_POSTGRES") {
        backends.push(("PostgreSQL", Some(url)));
    }
    // [backend][split]: (local, server).
    let mut recalls = vec![[(Recall::default(), Recall::default()); 2]; backends.len()];
    let mut millis: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); backends.len()];
    let mut identical = vec![(0usize, 0usize); backends.len()];
    for (b, (_, db)) in backends.iter().enumerate() {
        let server = start_server(db.as_deref());
        let client = Client::new(&server.url, &server.token).unwrap();
        // Server-mode projects read their token from the credentials file, which `main` put
        // in a folder of its own (never the user's).
        zblade_sync::credentials::save(&server.url, &server.token).unwrap();
        for (f, file) in files.iter().enumerate() {
            let split = usize::from(f >= TUNE_FILES);
            let data: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
            let work = tempfile::tempdir().unwrap();
            let (mut project, _) = Project::init(work.path()).unwrap();
            let loaded = locomo::add_to_project(&mut project, &data, usize::MAX);
            project
                .index_semantic(&mut |_, _| {})
                .expect("the embedding model (run scripts/setup.sh)");
            let questions = locomo::questions(&data, &loaded.turn_ids);
            let questions = &questions[..questions.len().min(if full { usize::MAX } else { 20 })];
            let local: Vec<(Vec<String>, f64)> = questions.iter().map(|q| ask(&mut project, &q.text)).collect();
            project
                .migrate(MigrationDirection::ToServer, &client, &mut |_, _, _| {})
                .unwrap();
            let mut project = Project::open(work.path()).unwrap();
            for (q, (local_ranked, local_ms)) in questions.iter().zip(local) {
                let (server_ranked, server_ms) = ask(&mut project, &q.text);
                recalls[b][split].0.add(&local_ranked, &q.evidence);
                recalls[b][split].1.add(&server_ranked, &q.evidence);
                identical[b].0 += usize::from(local_ranked == server_ranked);
                identical[b].1 += 1;
                millis[b].0.push(local_ms);
                millis[b].1.push(server_ms);
            }
        }
    }
    let mut table = String::from(
        "| backend | split | questions | local recall@5 | server recall@5 | local recall@10 | server recall@10 | difference @10 (target ≤ 0.01) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (b, (name, _)) in backends.iter().enumerate() {
        for (split, label) in ["tuning (26, 30)", "reported (41, 42, 43), never tuned on"]
            .iter()
            .enumerate()
        {
            let (local, server) = recalls[b][split];
            if local.n == 0 {
                continue;
            }
            table.push_str(&format!(
                "| {name} | {label} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:+.3} |\n",
                local.n,
                local.at(5),
                server.at(5),
                local.at(10),
                server.at(10),
                server.at(10) - local.at(10)
            ));
        }
    }
    let mut timing = String::from(
        "| backend | same top 10 as local | local hybrid p50 / p95 | server hybrid p50 / p95 (HTTP on loopback, query embedded here) |\n|---|---|---|---|\n",
    );
    for (b, (name, _)) in backends.iter().enumerate() {
        let (local, server) = &mut millis[b];
        timing.push_str(&format!(
            "| {name} | {} of {} | {:.1} / {:.1} ms | {:.1} / {:.1} ms |\n",
            identical[b].0,
            identical[b].1,
            percentile(local, 0.5),
            percentile(local, 0.95),
            percentile(server, 0.5),
            percentile(server, 0.95),
        ));
    }
    let body = format!(
        "{} LoCoMo conversations as projects, every question with labelled evidence turns, messages only, top 10, hybrid, model `all-minilm-l6-v2-int8`. Local: the project's own index. Server: the same project after `Project::migrate` to a `zblade-server` (all of a backend's projects on one server, vectors sent by the migration), searched by `POST /projects/ID/search` (the server's keyword index — FTS5 with BM25 on SQLite, BM25 computed from an English `tsvector` on PostgreSQL, both after the local index's every-word / rarer-words / any-word plan — and the project's LanceDB table, fused by `zblade_search::fusion::hybrid_fusion`). Nothing was tuned for the server: the fusion is local search's, chosen on the tuning split (docs/BENCHMARKS.md, \"Search quality\").\n\n{table}\n{timing}\n",
        files.len()
    );
    println!("{body}");
    if full {
        write_section(
            "server-search",
            "Server-mode search against local search on LoCoMo",
            "server_search",
            &body,
        );
    }
}
