//! Hybrid passage search under load (issue 48's target: search p99 ≤ 100 ms under 50 clients at
//! 100,000 chunks per project, on PostgreSQL). Five projects of 100,000 messages each (20,000
//! conversations of five turns of 12–30 words drawn from a 4,000-word vocabulary with a skewed,
//! Zipf-like frequency, as words in real text are) with one 384-dimension vector per
//! message (clustered unit vectors, as the engine's semantic benchmark makes them; each project
//! past 20,000 vectors gets its ANN index as in service), then 50 clients (10 per project)
//! search through `zblade-sync`'s client — `POST /projects/ID/search` with one to three words
//! and a query vector — each at an agent's pace: a search, then a pause of 0–2 s (one search a
//! second on average; 50 a second in all; each client starts within the first 2 s). Reported:
//! p50 / p95 / p99 of what the clients saw, and the same with no pause (closed loop), which
//! shows the machine's throughput instead.
//! SQLite, and PostgreSQL when `ZBLADE_TEST_POSTGRES` names a server.
//!
//! `cargo bench --workspace --bench passage_search` runs it in full and writes the
//! "passage-search" section of docs/BENCHMARKS.md; without `--bench` (as in `cargo test
//! --all-targets`) one project of 2,000 messages, 5 clients, 3 s, writing nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{fresh_postgres, percentile};
use zblade_server::auth::{hash_token, new_token};
use zblade_server::store::{EmbeddingModel, Kind, NewPassage, NewRecord};
use zblade_server::{Limits, Store, Vectors};
use zblade_sync::{Client, EmbeddingModel as WireModel, PassageQuery, QueryVector};

mod common;
#[path = "../../zblade-engine/benches/common/report.rs"]
mod report;

const DIMS: usize = 384;
const TURNS: usize = 5;
const VOCABULARY: u64 = 4_000;

/// Word `n` of the vocabulary: syllables, so words read as words and stem as themselves.
fn word(n: u64) -> String {
    const SYLLABLES: [&str; 20] = [
        "ka", "lo", "mi", "ran", "tu", "se", "vo", "quil", "dra", "pen", "zo", "fi", "gor", "bel", "na", "tre", "wu",
        "sim", "ox", "ley",
    ];
    let mut out = String::new();
    let mut n = n + 20;
    while n > 0 {
        out.push_str(SYLLABLES[(n % 20) as usize]);
        n /= 20;
    }
    out
}

/// A word drawn with a skewed frequency: rank r about as often as 1/r (a few words are in
/// most messages, most words in few).
fn skewed_word(rng: &mut Rng) -> String {
    let u = f64::from(rng.unit()).max(1e-6);
    word(
        ((VOCABULARY as f64).powf(u) as u64)
            .saturating_sub(1)
            .min(VOCABULARY - 1),
    )
}

/// A conversation of `TURNS` messages of 12–30 skewed words.
fn conversation(id: &str, project: &str, rng: &mut Rng) -> String {
    let messages: Vec<serde_json::Value> = (0..TURNS)
        .map(|i| {
            let words = 12 + rng.next() % 19;
            let text: Vec<String> = (0..words).map(|_| skewed_word(rng)).collect();
            serde_json::json!({"id": format!("msg_{i}"), "role": if i % 2 == 0 { "user" } else { "assistant" }, "content": text.join(" ")})
        })
        .collect();
    serde_json::json!({"version": "1.0", "conversation_id": id, "project_id": project, "title": id, "messages": messages})
        .to_string()
}

/// A query of one to three words, none of the very commonest.
fn query_words(rng: &mut Rng) -> String {
    let n = 1 + rng.next() % 3;
    (0..n)
        .map(|_| word(20 + rng.next() % (VOCABULARY - 20)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A small deterministic generator (xorshift), so every run searches the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn unit(&mut self) -> f32 {
        (self.next() % 1_000_000) as f32 / 1_000_000.0
    }
}

/// A unit vector near one of 64 cluster centres.
fn vector(rng: &mut Rng, centres: &[Vec<f32>]) -> Vec<f32> {
    let centre = &centres[(rng.next() % centres.len() as u64) as usize];
    let v: Vec<f32> = centre.iter().map(|c| c + (rng.unit() - 0.5) * 0.3).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

struct Outcome {
    backend: &'static str,
    chunks: usize,
    seed_seconds: f64,
    paced: Vec<Duration>,
    closed: Vec<Duration>,
    hybrid: usize,
    errors: Vec<String>,
}

fn run_backend(
    backend: &'static str,
    db: String,
    projects: usize,
    conversations: usize,
    clients: usize,
    seconds: u64,
) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let vectors = Vectors::new(dir.path().join("vectors").to_string_lossy());
    let mut rng = Rng(0x5eed);
    let centres: Vec<Vec<f32>> = (0..64).map(|_| (0..DIMS).map(|_| rng.unit() - 0.5).collect()).collect();
    let model = EmbeddingModel {
        id: "bench-384".into(),
        dims: DIMS as u32,
    };
    let seeding = Instant::now();
    let (listener, tokens, names) = runtime.block_on(async {
        let (tokens, names) = zblade_server::with_store!(&db, store => {
            store.migrate().await.unwrap();
            let mut tokens = Vec::new();
            let mut names = Vec::new();
            let vectors = Arc::new(vectors);
            for p in 0..projects {
                let user = store.add_user(&format!("owner{p}")).await.unwrap();
                let (id, token) = new_token();
                store
                    .add_token(&user.name, &id, &hash_token(&token), None)
                    .await
                    .unwrap();
                let project = format!("proj_bench{p}");
                store.put_project(user.id, &project, "bench").await.unwrap();
                store.set_embedding(user.id, &project, &model).await.unwrap();
                let mut rows = Vec::new();
                for n in 0..conversations {
                    let cid = format!("conv_{n:06}");
                    let body = conversation(&cid, &project, &mut rng);
                    let conv = zblade_core::parse_conversation(body.as_bytes(), "bench").unwrap();
                    let passages = conv
                        .messages
                        .iter()
                        .enumerate()
                        .map(|(i, m)| NewPassage {
                            key: format!("{cid}/{}", m.id),
                            message: m.id.clone(),
                            position: i as i64,
                            label: m.role.as_str().into(),
                            time: String::new(),
                            text: m.content.clone(),
                        })
                        .collect::<Vec<_>>();
                    for passage in &passages {
                        rows.push((format!("{}#0", passage.key), vector(&mut rng, &centres)));
                    }
                    let record = NewRecord {
                        kind: Kind::Conversation,
                        id: cid,
                        hash: zblade_core::sha256_hex(body.as_bytes()),
                        title: conv.title.clone(),
                        tags: Vec::new(),
                        updated_at: String::new(),
                        search_text: String::new(),
                        body,
                        passages,
                    };
                    store
                        .put_record(user.id, &project, &record, user.id, false)
                        .await
                        .unwrap();
                }
                // One write, so the ANN index covers every vector.
                vectors
                    .replace(user.id, &project, Vec::new(), rows, DIMS)
                    .await
                    .unwrap();
                tokens.push(token);
                names.push(project);
            }
            (tokens, names)
        })
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        (listener, tokens, names)
    });
    let seed_seconds = seeding.elapsed().as_secs_f64();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let limits = Limits {
        rate: 1e9,
        burst: 1e9,
        ..Limits::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = Vectors::new(dir.path().join("vectors").to_string_lossy());
    let served_db = db.clone();
    let server = runtime.spawn(async move {
        zblade_server::with_store!(&served_db, store => zblade_server::serve(listener, store, served, &limits, async {
            let _ = stop_rx.await;
        })
        .await
        .unwrap())
        .unwrap();
    });
    let hybrid = Arc::new(Mutex::new(0usize));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let measure = |pause: bool| -> Vec<Duration> {
        let latencies = Arc::new(Mutex::new(Vec::new()));
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let threads: Vec<_> = (0..clients)
            .map(|c| {
                let client = Client::new(&base, &tokens[c % projects]).unwrap();
                let project = names[c % projects].clone();
                let (latencies, hybrid, errors) = (latencies.clone(), hybrid.clone(), errors.clone());
                let mut rng = Rng(0xc0ffee + c as u64);
                let centres = centres.clone();
                std::thread::spawn(move || {
                    // Paced clients start spread over the first pause, as agents do; started
                    // together, all 50 would ask at the same instant and measure the queue.
                    if pause {
                        std::thread::sleep(Duration::from_millis(rng.next() % 2_000));
                    }
                    while Instant::now() < deadline {
                        let query = PassageQuery {
                            q: query_words(&mut rng),
                            limit: 10,
                            kind: None,
                            vector: Some(QueryVector {
                                model: WireModel {
                                    id: "bench-384".into(),
                                    dims: DIMS as u32,
                                },
                                values: vector(&mut rng, &centres),
                            }),
                        };
                        let t = Instant::now();
                        match client.search_passages(&project, &query) {
                            Ok(answer) => {
                                latencies.lock().unwrap().push(t.elapsed());
                                *hybrid.lock().unwrap() += usize::from(answer.mode == "hybrid");
                            }
                            Err(e) => errors.lock().unwrap().push(e.to_string()),
                        }
                        if pause {
                            std::thread::sleep(Duration::from_millis(rng.next() % 2_000));
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut out = std::mem::take(&mut *latencies.lock().unwrap());
        out.sort();
        out
    };
    let paced = measure(true);
    let closed = measure(false);
    let _ = stop_tx.send(());
    runtime.block_on(server).unwrap();
    let hybrid = *hybrid.lock().unwrap();
    let errors = std::mem::take(&mut *errors.lock().unwrap());
    Outcome {
        backend,
        chunks: conversations * TURNS,
        seed_seconds,
        paced,
        closed,
        hybrid,
        errors,
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (projects, conversations, clients, seconds) = if full { (5, 20_000, 50, 60) } else { (1, 400, 5, 3) };
    let dir = tempfile::tempdir().unwrap();
    let mut outcomes = vec![run_backend(
        "SQLite",
        dir.path().join("server.db").to_string_lossy().into_owned(),
        projects,
        conversations,
        clients,
        seconds,
    )];
    if let Ok(admin) = std::env::var("ZBLADE_TEST_POSTGRES") {
        outcomes.push(run_backend(
            "PostgreSQL",
            fresh_postgres(&admin),
            projects,
            conversations,
            clients,
            seconds,
        ));
    }
    let mut body = format!(
        "{projects} projects of {} messages (one vector of {DIMS} dimensions each), {clients} clients ({} per project) searching through `zblade-sync`'s client for {seconds} s each way: paced (a pause of 0–2 s after each search, one search a second per client) and closed loop (no pause). Every search is hybrid: one to three words and a query vector.\n\n\
         | backend | chunks per project | seeding | paced: searches, p50 / p95 / p99 (target p99 ≤ 100 ms) | closed loop: searches/s, p50 / p99 | hybrid answers | errors |\n|---|---|---|---|---|---|---|\n",
        conversations * TURNS,
        clients / projects
    );
    for o in &outcomes {
        body.push_str(&format!(
            "| {} | {} | {:.0} s | {}, {:.1} / {:.1} / {:.1} ms | {:.0}, {:.1} / {:.1} ms | {} of {} | {} |\n",
            o.backend,
            o.chunks,
            o.seed_seconds,
            o.paced.len(),
            percentile(&o.paced, 0.5),
            percentile(&o.paced, 0.95),
            percentile(&o.paced, 0.99),
            o.closed.len() as f64 / seconds as f64,
            percentile(&o.closed, 0.5),
            percentile(&o.closed, 0.99),
            o.hybrid,
            o.paced.len() + o.closed.len(),
            o.errors.len(),
        ));
    }
    println!("{body}");
    for o in &outcomes {
        assert!(
            o.errors.is_empty(),
            "{}: {:?}",
            o.backend,
            &o.errors[..o.errors.len().min(5)]
        );
        assert_eq!(
            o.hybrid,
            o.paced.len() + o.closed.len(),
            "{}: every answer hybrid",
            o.backend
        );
    }
    if full {
        report::write_section(
            "passage-search",
            "Hybrid passage search under load",
            "passage_search",
            &body,
        );
    }
}
