//! The conversation graph (issue 26): fork of a 10,000-message conversation (time, and bytes
//! written next to the conversation's bytes), lineage of a conversation with 1,000 forks, and
//! history search over 100,000 prompts; each next to what a peer does in the same run (a fork
//! by copy, as Claude Code's rewind and Zed's restore make one; a bare FTS5 query on the same
//! database). Writes the "graph" section of docs/BENCHMARKS.md.

mod common;

use std::time::{Duration, Instant};

use common::{Stats, full_run, write_section};
use zblade_engine::{MessageSelector, Project};

/// Words the synthetic prompts are made of; queries are drawn from them.
const WORDS: &[&str] = &[
    "token",
    "refresh",
    "cache",
    "binary",
    "search",
    "recursive",
    "parser",
    "config",
    "retry",
    "timeout",
    "schema",
    "migration",
    "index",
    "vector",
    "embedding",
    "watcher",
    "branch",
    "commit",
    "rebase",
    "lint",
    "test",
    "bench",
    "latency",
    "memory",
    "thread",
    "async",
    "socket",
    "header",
    "cookie",
    "session",
    "deploy",
    "docker",
    "kernel",
    "buffer",
    "stream",
    "frame",
    "render",
    "layout",
    "button",
    "modal",
    "router",
    "handler",
    "queue",
    "worker",
];

/// A small deterministic generator, so every run measures the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| WORDS[self.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn conversation_json(title: &str, messages: usize, rng: &mut Rng) -> Vec<u8> {
    let messages: Vec<serde_json::Value> = (0..messages)
        .map(|i| {
            let (role, words) = if i % 2 == 0 { ("user", 12) } else { ("assistant", 70) };
            serde_json::json!({"role": role, "content": format!("{i}: {}", rng.sentence(words))})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"title": title, "messages": messages})).unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let full = full_run();
    let (long, forks, conversations, prompts_each, queries) = if full {
        (10_000, 1_000, 1_000, 100, 300)
    } else {
        (200, 20, 20, 10, 20)
    };
    let mut rng = Rng(0x5eed_cafe);
    let mut report = String::new();

    // Fork of a long conversation, against a fork by copy of the same messages.
    let dir = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(dir.path()).unwrap();
    let parent = project
        .add_conversation(&conversation_json("Long", long, &mut rng), "long.json")
        .unwrap()
        .id;
    let copied = project
        .export_conversation(&parent, zblade_engine::ExportFormat::Json)
        .unwrap();
    let conversation_bytes = copied.len() as u64;
    let mut fork_times = Vec::new();
    let mut copy_times = Vec::new();
    let mut fork_bytes = 0u64;
    let samples = 30;
    for i in 0..samples {
        let after = long / 2 + i;
        let started = Instant::now();
        let fork = project
            .fork_conversation(&parent, &MessageSelector::Index(after), None)
            .unwrap();
        fork_times.push(started.elapsed());
        fork_bytes = fork_bytes.max(
            std::fs::metadata(
                dir.path()
                    .join(format!(".zblade/artifacts/conversations/{}.json", fork.conversation_id)),
            )
            .unwrap()
            .len(),
        );
        // The peer: the kept messages written as a new conversation file (and read first, as a
        // copy must), durably, as zblade's own writes are.
        let started = Instant::now();
        let mut conv = project.resume_conversation(Some(&parent)).unwrap();
        conv.messages.truncate(after + 1);
        conv.conversation_id = format!("conv_COPY{i}");
        let path = dir.path().join(format!("copy-{i}.json"));
        zblade_core::fsio::write_atomic(&path, &conv.to_artifact_json()).unwrap();
        copy_times.push(started.elapsed());
    }
    let fork_stats = Stats::of(&mut fork_times);
    let copy_stats = Stats::of(&mut copy_times);
    let share = fork_bytes as f64 / conversation_bytes as f64 * 100.0;
    report.push_str(&format!(
        "| Operation | p50 / p95 / p99 | target |\n|---|---|---|\n\
         | Fork of a {long}-message conversation ({:.1} MB) | {fork_stats} | p95 ≤ 20 ms |\n\
         | Peer: fork by copy (read, keep half, write durably) | {copy_stats} | — |\n",
        conversation_bytes as f64 / 1e6
    ));

    // Lineage of a conversation with many forks.
    let root = project
        .add_conversation(&conversation_json("Root", 20, &mut rng), "root.json")
        .unwrap()
        .id;
    let mut make_times = Vec::new();
    for i in 0..forks {
        let started = Instant::now();
        project
            .fork_conversation(&root, &MessageSelector::Index(i % 20), None)
            .unwrap();
        make_times.push(started.elapsed());
    }
    let mut lineage_times = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let lineage = project.lineage(&root).unwrap();
        lineage_times.push(started.elapsed());
        assert_eq!(lineage.forks.len(), forks);
    }
    let lineage_stats = Stats::of(&mut lineage_times);
    let small_fork_stats = Stats::of(&mut make_times);
    report.push_str(&format!(
        "| Lineage of a conversation with {forks} forks | {lineage_stats} | p95 ≤ 50 ms |\n\
         | Fork of a 20-message conversation (while making those {forks}) | {small_fork_stats} | — |\n"
    ));

    // History search over many prompts, against a bare FTS5 query on the same database.
    let dir = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(dir.path()).unwrap();
    let batch: Vec<(zblade_engine::Conversation, String)> = (0..conversations)
        .map(|c| {
            let json = conversation_json(&format!("Session {c}"), prompts_each * 2, &mut rng);
            (
                zblade_engine::parse_conversation(&json, "bench").unwrap(),
                format!("session-{c}.json"),
            )
        })
        .collect();
    let started = Instant::now();
    for chunk in batch.chunks(100) {
        project.add_conversations(chunk.to_vec()).unwrap();
    }
    let ingest = started.elapsed();
    let prompts = conversations * prompts_each;
    let raw = rusqlite::Connection::open(dir.path().join(".zblade/index/conversations.db")).unwrap();
    let mut history_times = Vec::new();
    let mut raw_times = Vec::new();
    let mut found = 0;
    for q in 0..queries {
        let first = WORDS[rng.below(WORDS.len())];
        let second = WORDS[rng.below(WORDS.len())];
        // Half the queries are one word being typed (a prefix), half two words.
        let query = if q % 2 == 0 {
            first[..3.min(first.len())].to_string()
        } else {
            format!("{first} {second}")
        };
        let started = Instant::now();
        let hits = project.history(Some(&query), 50).unwrap();
        history_times.push(started.elapsed());
        found += hits.len();
        let expression = query
            .split(' ')
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" AND ")
            + "*";
        let started = Instant::now();
        let mut stmt = raw
            .prepare_cached(
                "SELECT m.content FROM messages_fts f JOIN messages m ON m.pk = f.rowid
                 WHERE messages_fts MATCH ?1 AND m.role = 'user' ORDER BY m.timestamp DESC LIMIT 50",
            )
            .unwrap();
        let rows: Vec<String> = stmt
            .query_map([&expression], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        raw_times.push(started.elapsed());
        std::hint::black_box(rows);
    }
    let history_stats = Stats::of(&mut history_times);
    let raw_stats = Stats::of(&mut raw_times);
    report.push_str(&format!(
        "| `zblade history --search` over {prompts} prompts ({queries} queries, {:.1} hits each) | {history_stats} | p95 ≤ 20 ms |\n\
         | Peer: bare FTS5 query on the same database | {raw_stats} | — |\n\n",
        found as f64 / queries as f64
    ));
    report.push_str(&format!(
        "- **Fork bytes written**: the fork's manifest is {fork_bytes} bytes, {share:.3} % of the conversation's \
         {conversation_bytes} bytes (target ≤ 1 %); the index adds one row for the fork and none for its messages.\n\
         - **Fork vs a fork by copy**: p95 {:.2} ms vs {:.2} ms (ratio {:.2}).\n\
         - **History vs the bare query**: p95 ratio {:.2} (zblade also folds duplicates and reads until \
         it has 50 distinct prompts).\n\
         - Ingest of the {prompts} prompts (and as many answers) for the history test: {:.1} s.\n",
        ms(fork_stats.p95),
        ms(copy_stats.p95),
        ms(fork_stats.p95) / ms(copy_stats.p95),
        ms(history_stats.p95) / ms(raw_stats.p95).max(1e-6),
        ingest.as_secs_f64()
    ));
    println!("{report}");
    if full {
        write_section("graph", "Conversation graph: fork, lineage, history", "graph", &report);
    }
}
