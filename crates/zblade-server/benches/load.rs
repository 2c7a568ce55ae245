//! A bounded load test of the sync server on loopback (issue 7): 50 concurrent clients
//! mixing uploads, lists and searches for 60 s against each backend (SQLite, and PostgreSQL
//! when `ZBLADE_TEST_POSTGRES` names one), next to the bare database doing the same writes in
//! the same run. Writes the "server-load" section of docs/BENCHMARKS.md.
//!
//! `cargo bench --workspace --bench load` runs it in full; without `--bench` (as in
//! `cargo test --all-targets`) it runs 4 clients for 2 s and writes nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{conversation, fresh_postgres, percentile};
use zblade_server::auth::{hash_token, new_token};
use zblade_server::{Limits, Store};

mod common;
#[path = "../../zblade-engine/benches/common/report.rs"]
mod report;

struct Sample {
    op: &'static str,
    latency: Duration,
    ok: bool,
}

struct Outcome {
    backend: &'static str,
    requests: usize,
    errors: usize,
    seconds: f64,
    rows: Vec<(String, usize, f64, f64)>,
    raw_writes_per_s: f64,
}

fn run_backend(backend: &'static str, db: String, clients: usize, seconds: u64) -> Outcome {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (listener, token) = runtime.block_on(async {
        let token = zblade_server::with_store!(&db, store => {
            store.migrate().await.unwrap();
            store.add_user("load").await.unwrap();
            let (id, token) = new_token();
            store.add_token("load", &id, &hash_token(&token), None).await.unwrap();
            token
        })
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        (listener, token)
    });
    let base = format!("http://{}", listener.local_addr().unwrap());
    let limits = Limits {
        rate: 1e9,
        burst: 1e9,
        ..Limits::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served_db = db.clone();
    let server = runtime.spawn(async move {
        // This load sends no vectors: the folder is never created.
        let vectors = zblade_server::Vectors::new(
            std::env::temp_dir()
                .join(format!("zblade-load-vectors-{}", std::process::id()))
                .to_string_lossy(),
        );
        zblade_server::with_store!(&served_db, store => zblade_server::serve(listener, store, vectors, &limits, async {
            let _ = stop_rx.await;
        })
        .await
        .unwrap())
        .unwrap();
    });
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(clients)
        .build()
        .unwrap();
    let project = "proj_load";
    http.put(format!("{base}/api/v0/projects/{project}"))
        .bearer_auth(&token)
        .body("{}")
        .send()
        .unwrap();
    // Something to list and search from the start.
    for n in 0..200 {
        let id = format!("conv_seed{n:04}");
        http.put(format!("{base}/api/v0/projects/{project}/conversations/{id}"))
            .bearer_auth(&token)
            .body(conversation(&id, project, n, 6))
            .send()
            .unwrap();
    }
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (http, base, token, samples, stop) =
                (http.clone(), base.clone(), token.clone(), samples.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    // Half uploads (a third of them replays), a quarter lists, a quarter searches.
                    let (op, request) = match n % 4 {
                        0 | 1 => {
                            let k = if n.is_multiple_of(3) { n / 3 } else { n };
                            let id = format!("conv_c{c}_{k}");
                            let body = conversation(&id, project, c * 100_000 + k, 6);
                            (
                                "upload",
                                http.put(format!("{base}/api/v0/projects/{project}/conversations/{id}"))
                                    .body(body),
                            )
                        }
                        2 => (
                            "list",
                            http.get(format!("{base}/api/v0/projects/{project}/conversations?limit=100")),
                        ),
                        _ => {
                            let q = ["gateway caches", "retries", "tokens seconds", "conversation"][(n / 4) % 4];
                            (
                                "search",
                                http.get(format!("{base}/api/v0/projects/{project}/search"))
                                    .query(&[("q", q)]),
                            )
                        }
                    };
                    let t = Instant::now();
                    let ok = request
                        .bearer_auth(&token)
                        .send()
                        .map(|r| {
                            let good = r.status().is_success();
                            let _ = r.bytes();
                            good
                        })
                        .unwrap_or(false);
                    mine.push(Sample {
                        op,
                        latency: t.elapsed(),
                        ok,
                    });
                }
                samples.lock().unwrap().extend(mine);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    runtime.block_on(server).unwrap();
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    let errors = samples.iter().filter(|s| !s.ok).count();
    let mut rows = Vec::new();
    for op in ["upload", "list", "search", "all"] {
        let mut latencies: Vec<Duration> = samples
            .iter()
            .filter(|s| op == "all" || s.op == op)
            .map(|s| s.latency)
            .collect();
        latencies.sort();
        rows.push((
            op.to_string(),
            latencies.len(),
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
        ));
    }
    Outcome {
        backend,
        requests: samples.len(),
        errors,
        seconds: elapsed,
        rows,
        raw_writes_per_s: raw_writes(backend, &db, &runtime),
    }
}

/// The bare database doing what an upload does (one upsert of the same row shape), one
/// writer, for 3 s: the ceiling the server's writes are measured against.
fn raw_writes(backend: &str, db: &str, runtime: &tokio::runtime::Runtime) -> f64 {
    let deadline = Duration::from_secs(3);
    let body = conversation("conv_raw", "proj_raw", 1, 6);
    match backend {
        "sqlite" => {
            let conn = rusqlite::Connection::open(format!("{db}.raw")).unwrap();
            conn.execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
                 CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, hash TEXT, body TEXT);",
            )
            .unwrap();
            let started = Instant::now();
            let mut n = 0;
            while started.elapsed() < deadline {
                conn.execute(
                    "INSERT INTO t (id, hash, body) VALUES (?1, ?2, ?3)
                     ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, body = excluded.body",
                    rusqlite::params![format!("conv_{n}"), "h", body],
                )
                .unwrap();
                n += 1;
            }
            n as f64 / started.elapsed().as_secs_f64()
        }
        _ => runtime.block_on(async {
            let (client, conn) = tokio_postgres::connect(db, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(conn);
            client
                .batch_execute("CREATE TABLE IF NOT EXISTS raw_t (id TEXT PRIMARY KEY, hash TEXT, body TEXT)")
                .await
                .unwrap();
            let started = Instant::now();
            let mut n = 0;
            while started.elapsed() < deadline {
                client
                    .execute(
                        "INSERT INTO raw_t (id, hash, body) VALUES ($1, $2, $3)
                         ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, body = EXCLUDED.body",
                        &[&format!("conv_{n}"), &"h", &body],
                    )
                    .await
                    .unwrap();
                n += 1;
            }
            n as f64 / started.elapsed().as_secs_f64()
        }),
    }
}

fn main() {
    let full = report::full_run();
    let (clients, seconds) = if full { (50, 60) } else { (4, 2) };
    let dir = tempfile::tempdir().unwrap();
    let mut outcomes = vec![run_backend(
        "sqlite",
        dir.path().join("load.db").display().to_string(),
        clients,
        seconds,
    )];
    match std::env::var("ZBLADE_TEST_POSTGRES") {
        Ok(admin) if !admin.is_empty() => {
            outcomes.push(run_backend("postgresql", fresh_postgres(&admin), clients, seconds));
        }
        _ => eprintln!("load: ZBLADE_TEST_POSTGRES is not set; PostgreSQL not measured"),
    }
    let mut report = format!(
        "{clients} concurrent clients (one thread and keep-alive connection each) on loopback for {seconds} s per backend; each client loops: upload a conversation (6 turns, ~1.2 KB; a third are replays of an earlier one), upload another, list 100, keyword search. Rate limit off. The server and the clients share the machine's 2 cores.\n\n\
         | backend | requests | errors | throughput | upload p50 / p99 | list p50 / p99 | search p50 / p99 | all p50 / p99 | bare database upserts, one writer |\n|---|---|---|---|---|---|---|---|---|\n"
    );
    for o in &outcomes {
        let cell = |op: &str| {
            let (_, n, p50, p99) = o.rows.iter().find(|r| r.0 == op).unwrap();
            format!("{p50:.1} / {p99:.1} ms ({n})")
        };
        report.push_str(&format!(
            "| {} | {} | {} | {:.0} req/s | {} | {} | {} | {} | {:.0} /s |\n",
            o.backend,
            o.requests,
            o.errors,
            o.requests as f64 / o.seconds,
            cell("upload"),
            cell("list"),
            cell("search"),
            cell("all"),
            o.raw_writes_per_s
        ));
    }
    println!("{report}");
    for o in &outcomes {
        assert_eq!(o.errors, 0, "{}: {} requests failed", o.backend, o.errors);
    }
    if full {
        report::write_section("server-load", "Sync server under load", "load", &report);
    }
}
