//! Foundation benchmark (issue: workspace, store, index, CLI).
//!
//! Measures, on 100,000 messages of realistic lengths:
//! - ingest rate through the engine (artifact files written atomically + index) and through
//!   the index alone, each next to a raw rusqlite insert of the same rows in one transaction;
//! - `reindex` time;
//! - keyword search latency p50/p95/p99 over 1,000 queries, next to a bare FTS5 query.
//!
//! `cargo bench -p zblade-engine --bench foundation` runs the full size and rewrites its
//! section of docs/BENCHMARKS.md. Under `cargo test` (no `--bench` argument) it runs a small
//! smoke version and writes nothing, so the benchmark cannot rot unnoticed.

use std::time::{Duration, Instant};

use zblade_core::{Conversation, parse_conversation};
use zblade_engine::{Project, SearchKind, SearchQuery};

mod common;
use common::{Stats, write_section};

const MESSAGES_PER_CONVERSATION: usize = 50;

fn main() {
    let full = common::full_run();
    let messages: usize = std::env::var("ZBLADE_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 100_000 } else { 2_000 });
    let conversations = messages / MESSAGES_PER_CONVERSATION;
    let query_count = if full { 1000 } else { 50 };
    let mut text = TextGen::new(42);

    eprintln!("generating {conversations} conversations × {MESSAGES_PER_CONVERSATION} messages …");
    let jsons: Vec<String> = (0..conversations).map(|i| text.conversation(i)).collect();
    let parsed: Vec<Conversation> = jsons
        .iter()
        .map(|j| parse_conversation(j.as_bytes(), "bench").unwrap())
        .collect();
    let content_bytes: usize = parsed.iter().flat_map(|c| &c.messages).map(|m| m.content.len()).sum();

    let work = tempfile::tempdir().unwrap();

    // Raw rusqlite, same rows, one transaction: plain table only, and table + FTS5 like ours.
    let raw_rows = raw_insert(&work.path().join("raw-rows.db"), &parsed, false);
    let raw_fts = raw_insert(&work.path().join("raw-fts.db"), &parsed, true);

    // The index layer alone: prepared conversations into zblade-index in one transaction.
    let index_only = {
        let dir = work.path().join("index-only");
        let (mut project, _) = Project::init(&dir).unwrap();
        let mut prepared = parsed.clone();
        for c in &mut prepared {
            c.prepare_for_store("proj_bench", &dir, "bench", chrono::Utc::now())
                .unwrap();
        }
        let mut index = zblade_index::Index::open(&project.layout().database()).unwrap();
        let items: Vec<_> = prepared.iter().map(|c| (c, "artifact.json", "sha")).collect();
        let started = Instant::now();
        index.put_conversations(&items).unwrap();
        let elapsed = started.elapsed();
        drop(index);
        let _ = project.reindex(); // keep the project consistent; not measured
        elapsed
    };

    // The engine: parse-validated conversations, artifact files (fsync + rename) + index,
    // in batches of 100 conversations as an importer would send them.
    let dir = work.path().join("project");
    let (mut project, _) = Project::init(&dir).unwrap();
    let started = Instant::now();
    for chunk in parsed.chunks(100) {
        let batch = chunk.iter().map(|c| (c.clone(), "bench".to_string())).collect();
        project.add_conversations(batch).unwrap();
    }
    let engine = started.elapsed();

    // One conversation per call, as `zblade add conversation FILE` does (own lock, fsync, transaction).
    let single_count = conversations.min(200);
    let single_dir = work.path().join("single");
    let (mut single, _) = Project::init(&single_dir).unwrap();
    let started = Instant::now();
    for json in jsons.iter().take(single_count) {
        single.add_conversation(json.as_bytes(), "bench").unwrap();
    }
    let single_elapsed = started.elapsed();

    let reindex = project.reindex().unwrap();
    assert_eq!(reindex.messages, messages);
    let status = project.status().unwrap();

    // Search latency.
    let queries: Vec<String> = (0..query_count).map(|_| text.query()).collect();
    for q in queries.iter().take(50) {
        project
            .search(&SearchQuery::new(q.clone(), 10, SearchKind::All))
            .unwrap(); // warm up
    }
    let mut ours = Vec::with_capacity(query_count);
    let mut hits_total = 0;
    for q in &queries {
        let started = Instant::now();
        hits_total += project
            .search(&SearchQuery::new(q.clone(), 10, SearchKind::All))
            .unwrap()
            .len();
        ours.push(started.elapsed());
    }
    let mut slowest: Vec<(Duration, &String)> = ours.iter().copied().zip(&queries).collect();
    slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (d, q) in slowest.iter().take(12) {
        eprintln!("slow query {:>7.2} ms  {q:?}", d.as_secs_f64() * 1000.0);
    }
    // The worst case, reported on its own: a single very common word (corpus ranks 30–100, in
    // 10–35% of all messages), which FTS5 must score in every message that holds it.
    let mut common = Vec::new();
    for i in 0..100 {
        let word = text.vocab[30 + i % 70].clone();
        let started = Instant::now();
        project.search(&SearchQuery::new(word, 10, SearchKind::All)).unwrap();
        common.push(started.elapsed());
    }
    let common_stats = Stats::of(&mut common);
    let bare = bare_fts_latencies(&work.path().join("raw-fts.db"), &queries);

    let rate = |d: Duration| messages as f64 / d.as_secs_f64();
    let ours_stats = Stats::of(&mut ours);
    let bare_stats = Stats::of(&mut bare.clone());
    let report = format!(
        "Corpus: {messages} messages in {conversations} conversations, {:.1} MB of message text \
         (user turns 40–400 chars, assistant turns 200–3,000 chars, Zipf-distributed vocabulary).\n\n\
         | measure | zblade | raw rusqlite, same rows, same run | ratio (target) |\n|---|---|---|---|\n\
         | ingest, index layer (one transaction) | {:.0} msg/s | {:.0} msg/s (table + FTS5) | {:.2} (≥ 0.5) |\n\
         | ingest, engine: artifacts (fsync + rename) + index, batches of 100 conversations | {:.0} msg/s | {:.0} msg/s (table + FTS5) | {:.2} (≥ 0.5) |\n\
         | ingest, raw table without FTS5 (reference) | – | {:.0} msg/s | – |\n\
         | `zblade add` one conversation per call ({single_count} calls) | {:.1} ms/call ({:.0} msg/s) | – | – |\n\
         | reindex from artifacts | {:.2} s ({:.0} msg/s) | – | – |\n\
         | search p50 / p95 / p99, {query_count} queries, limit 10, messages + moments with snippets | {} | {} (bare FTS5 top-10 of the same words OR-ed, no snippets) | p95 target ≤ 20 ms |\n\
         | search, worst case: one very common word (in 10–35% of messages), 100 queries | {} | – | – |\n\n\
         Queries: 1–3 content words drawn from corpus ranks 100–5,100 (skewed to the frequent end); one in three is phrased \
         as a question (\"how do we handle the …\"). Search plan: stopwords dropped, words found nowhere dropped, \
         messages holding all words first, then selective words, then any word; BM25 within each group.\n\n\
         Index on disk: {:.1} MB; artifacts: {:.1} MB. Queries returned {:.1} hits on average.\n",
        content_bytes as f64 / 1e6,
        rate(index_only),
        rate(raw_fts),
        rate(index_only) / rate(raw_fts),
        rate(engine),
        rate(raw_fts),
        rate(engine) / rate(raw_fts),
        rate(raw_rows),
        single_elapsed.as_secs_f64() * 1000.0 / single_count as f64,
        (single_count * MESSAGES_PER_CONVERSATION) as f64 / single_elapsed.as_secs_f64(),
        reindex.elapsed.as_secs_f64(),
        rate(reindex.elapsed),
        ours_stats,
        bare_stats,
        common_stats,
        status.index_bytes as f64 / 1e6,
        status.artifacts_bytes as f64 / 1e6,
        hits_total as f64 / query_count as f64,
    );
    println!("{report}");
    if full {
        write_section(
            "foundation",
            "Foundation: ingest, reindex, keyword search",
            "foundation",
            &report,
        );
    }
}

fn raw_insert(path: &std::path::Path, convs: &[Conversation], fts: bool) -> Duration {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch(
        "CREATE TABLE messages (pk INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL, id TEXT NOT NULL,
                                seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, timestamp TEXT NOT NULL);",
    )
    .unwrap();
    if fts {
        conn.execute_batch("CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=pk, tokenize='porter unicode61');").unwrap();
    }
    let started = Instant::now();
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx.prepare("INSERT INTO messages (conversation_id, id, seq, role, content, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6)").unwrap();
        let mut insert_fts = fts.then(|| {
            tx.prepare("INSERT INTO messages_fts (rowid, content) VALUES (?1, ?2)")
                .unwrap()
        });
        for c in convs {
            for (seq, m) in c.messages.iter().enumerate() {
                insert
                    .execute(rusqlite::params![
                        c.conversation_id,
                        m.id,
                        seq as i64,
                        m.role.as_str(),
                        m.content,
                        "2026-01-17T14:00:00.000Z"
                    ])
                    .unwrap();
                if let Some(stmt) = insert_fts.as_mut() {
                    stmt.execute(rusqlite::params![tx.last_insert_rowid(), m.content])
                        .unwrap();
                }
            }
        }
    }
    tx.commit().unwrap();
    started.elapsed()
}

fn bare_fts_latencies(path: &std::path::Path, queries: &[String]) -> Vec<Duration> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rank LIMIT 10")
        .unwrap();
    queries
        .iter()
        .map(|q| {
            let expr = zblade_index::fts::match_expression(q).unwrap_or_else(|| "\"x\"".into());
            let started = Instant::now();
            let rows: Vec<i64> = stmt
                .query_map([expr], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            std::hint::black_box(rows);
            started.elapsed()
        })
        .collect()
}

/// Deterministic text that looks like developer conversations: a Zipf-distributed vocabulary
/// of real words, programming terms and made-up identifiers.
struct TextGen {
    state: u64,
    vocab: Vec<String>,
    cdf: Vec<f64>,
}

const REAL_WORDS: &str = "the of and to a in is it you that he was for on are with as I his they be at one have this from or had by word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find any new work part take get place made live where after back little only round man year came show every good me give our under name very through just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three want air well also play small end put home read hand port large spell add even land here must big high such follow act why ask men change went light kind off need house picture try us again animal point mother world near build self earth father token refresh jwt cookie session cache redis postgres sqlite index migration schema query latency timeout retry backoff queue worker thread async await future tokio mutex lock deadlock panic error result option trait struct enum impl closure iterator vector hashmap btree serde json yaml toml config env docker kubernetes deploy build release test bench mock fixture assert coverage lint clippy format rustfmt compile linker crate module function method variable constant static lifetime borrow ownership reference pointer heap stack allocation memory leak profiler flamegraph trace span log metric alert dashboard endpoint route handler middleware auth oauth password hash salt encrypt decrypt signature certificate tls https websocket grpc protobuf schema api client server request response header body status payload upload download stream buffer chunk parse serialize validate sanitize escape inject";

impl TextGen {
    fn new(seed: u64) -> Self {
        let mut text_gen = TextGen {
            state: seed.wrapping_mul(6364136223846793005).wrapping_add(1),
            vocab: Vec::new(),
            cdf: Vec::new(),
        };
        let mut vocab: Vec<String> = REAL_WORDS.split_whitespace().map(String::from).collect();
        const SYLLABLES: [&str; 24] = [
            "ka", "lo", "mi", "ter", "zan", "por", "vek", "shi", "dra", "nu", "bel", "cor", "fin", "gra", "hul", "jex",
            "qua", "rin", "sol", "tav", "ulm", "wex", "yor", "zig",
        ];
        while vocab.len() < 30_000 {
            let n = 2 + text_gen.below(3);
            let word: String = (0..n).map(|_| SYLLABLES[text_gen.below(SYLLABLES.len())]).collect();
            vocab.push(word);
        }
        let weights: Vec<f64> = (1..=vocab.len()).map(|rank| 1.0 / (rank as f64).powf(1.07)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        text_gen.cdf = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        text_gen.vocab = vocab;
        text_gen
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545F4914F6CDD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn word(&mut self) -> &str {
        let u = self.unit();
        let i = self.cdf.partition_point(|c| *c < u).min(self.vocab.len() - 1);
        &self.vocab[i]
    }

    fn text(&mut self, min_chars: usize, max_chars: usize) -> String {
        let target = min_chars + self.below(max_chars - min_chars);
        let mut out = String::with_capacity(target + 16);
        while out.len() < target {
            if !out.is_empty() {
                out.push(if self.below(12) == 0 { '\n' } else { ' ' });
            }
            let w = self.word().to_string();
            out.push_str(&w);
        }
        out
    }

    fn conversation(&mut self, i: usize) -> String {
        let messages: Vec<serde_json::Value> = (0..MESSAGES_PER_CONVERSATION)
            .map(|m| {
                let user = m % 2 == 0;
                let content = if user { self.text(40, 400) } else { self.text(200, 3000) };
                serde_json::json!({
                    "id": format!("msg_{m:03}"),
                    "role": if user { "user" } else { "assistant" },
                    "content": content,
                    "timestamp": format!("2026-01-{:02}T{:02}:{:02}:00Z", 1 + i % 28, m / 60 % 24, m % 60),
                })
            })
            .collect();
        let title = self.text(10, 60);
        serde_json::json!({"conversation_id": format!("conv_{i:06}"), "title": title, "messages": messages}).to_string()
    }

    /// A user query: a few keywords, sometimes phrased as a question with stopwords.
    fn query(&mut self) -> String {
        let n = 1 + self.below(3);
        let words: Vec<String> = (0..n)
            .map(|_| {
                // Content words: the 100 most frequent words of the corpus play the part of
                // English function words ("but", "some", "out") that nobody searches for.
                let i = 100 + (self.unit().powf(2.0) * 5000.0) as usize;
                self.vocab[i].clone()
            })
            .collect();
        if self.below(3) == 0 {
            format!("how do we handle the {}", words.join(" "))
        } else {
            words.join(" ")
        }
    }
}
