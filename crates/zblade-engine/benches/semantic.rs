//! Semantic search benchmark (issue: semantic and hybrid search).
//!
//! Measures, each next to the raw library in the same run:
//! - indexing throughput (chunks/s) of `index_semantic` with the real all-MiniLM-L6-v2, next
//!   to fastembed alone embedding the same texts with the same model, batch size and length;
//! - hybrid query latency at 100,000 chunks (keyword + vectors, ANN index), with the query
//!   embedding timed separately, next to one LanceDB ANN query and one bare FTS5 query;
//! - index size on disk next to the raw vectors (n × dim × 4 bytes) plus a bare FTS5 table of
//!   the same text;
//! - recall@10 of the ANN index against exact search on the same table.
//!
//! The 100,000 vectors are synthetic (embedding 100,000 chunks with MiniLM takes hours on two
//! cores): clustered unit vectors, one per chunk CID, written where the engine reads them, so
//! search runs exactly as for a user. Queries are embedded by the real model.
//!
//! `cargo bench --workspace --bench semantic` writes docs/BENCHMARKS.md; under `cargo
//! test` it runs a small smoke version and writes nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fastembed::TextEmbedding;
use zblade_core::{Conversation, parse_conversation};
use zblade_engine::{ContextRequest, Project, SearchKind, SearchMode, SearchQuery};
use zblade_search::VectorStore;

mod common;
use common::text::TextGen;
use common::vectors::ClusteredVectors;
use common::{Stats, dir_size, full_run, mb, raw_insert, write_section};
#[path = "common/fastembed_alone.rs"]
mod fastembed_alone;

const MODEL: &str = "all-minilm-l6-v2";
const MESSAGES_PER_CONVERSATION: usize = 50;
/// fastembed's batch size inside zblade's embedder; the raw run uses the same.
const FASTEMBED_BATCH: usize = zblade_search::embed::EMBED_BATCH;

fn model_dir() -> PathBuf {
    let dir = zblade_engine::models_dir().join(MODEL);
    assert!(
        dir.join("model.onnx").is_file(),
        "{}: the all-MiniLM-L6-v2 model is missing; run scripts/setup.sh",
        dir.display()
    );
    dir
}

fn use_model(root: &Path) {
    let path = root.join(".zblade/config/settings.json");
    let mut settings = zblade_core::Settings::load(&path).unwrap();
    settings.search.embedding_model = MODEL.into();
    settings.save(&path).unwrap();
}

fn conversations(text: &mut TextGen, count: usize) -> Vec<Conversation> {
    (0..count)
        .map(|i| parse_conversation(text.conversation(i, MESSAGES_PER_CONVERSATION).as_bytes(), "bench").unwrap())
        .collect()
}

fn main() {
    let full = full_run();
    let mut report = String::new();
    let throughput = indexing_throughput(if full { 400 } else { 16 }, if full { 2 } else { 1 });
    report.push_str(&throughput);
    let (at_scale, context) = search_at_scale(if full { 100_000 } else { 600 }, if full { 300 } else { 20 });
    report.push_str(&at_scale);
    println!("{report}{context}");
    if full {
        write_section("semantic", "Semantic and hybrid search", "semantic", &report);
        write_section("context-speed", "Context assembly speed", "semantic", &context);
    }
}

/// zblade's `index_semantic` next to fastembed alone, on the same `count` distinct texts,
/// alternating `rounds` times; the best round of each is kept (the machine is noisy).
fn indexing_throughput(count: usize, rounds: usize) -> String {
    let model_dir = model_dir();
    let mut text = TextGen::new(7);
    // One chunk per message (under the split size), lengths like real turns.
    let texts: Vec<String> = (0..count).map(|_| text.text(80, 1500)).collect();
    // What zblade embeds for them: each led by the end of the message before it.
    let embedded: Vec<String> = (0..count)
        .map(|i| {
            let previous = i.checked_sub(1).map(|p| texts[p].as_str());
            zblade_search::chunk::embedding_pieces(previous, &texts[i]).remove(0)
        })
        .collect();
    let json = |round: usize| {
        let messages: Vec<serde_json::Value> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"id": format!("m{i}"), "role": "user", "content": t}))
            .collect();
        serde_json::json!({"conversation_id": format!("conv_{round}"), "messages": messages}).to_string()
    };

    let max_length = {
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(model_dir.join("sentence_bert_config.json")).unwrap()).unwrap();
        config["max_seq_length"].as_u64().unwrap() as usize
    };
    let mut zblade_best = Duration::MAX;
    let mut raw_best = Duration::MAX;
    let mut raw: Option<TextEmbedding> = None;
    for round in 0..rounds {
        // zblade: a fresh project each round, so every chunk is embedded and stored.
        let work = tempfile::tempdir().unwrap();
        let (_, _) = Project::init(work.path()).unwrap();
        use_model(work.path());
        let mut project = Project::open(work.path()).unwrap();
        project
            .add_conversations(vec![(
                parse_conversation(json(round).as_bytes(), "bench").unwrap(),
                "bench".into(),
            )])
            .unwrap();
        project
            .embedder()
            .expect("model loads")
            .lock()
            .unwrap()
            .embed(&["warm up"])
            .unwrap();
        let started = Instant::now();
        let done = project.index_semantic(&mut |_, _| {}).unwrap();
        zblade_best = zblade_best.min(started.elapsed());
        assert_eq!(done.embedded, count, "one chunk per text");

        // fastembed alone (loaded after zblade has initialised ONNX Runtime).
        let raw = raw.get_or_insert_with(|| fastembed_alone::load(&model_dir));
        let started = Instant::now();
        let vectors = raw.embed(&embedded, Some(FASTEMBED_BATCH)).unwrap();
        raw_best = raw_best.min(started.elapsed());
        assert_eq!(vectors.len(), count);
    }
    let rate = |d: Duration| count as f64 / d.as_secs_f64();
    common::sane("indexing ratio", raw_best.as_secs_f64() / zblade_best.as_secs_f64());
    format!(
        "### Indexing throughput\n\n\
         {count} distinct chunks (80–1,500 characters), all-MiniLM-L6-v2 (384 dimensions, max length \
         {max_length} tokens), ONNX Runtime on the CPU; best of {rounds} alternating rounds.\n\n\
         | measure | zblade `index_semantic` | fastembed alone, same texts | ratio (target) |\n|---|---|---|---|\n\
         | chunks/s (chunking, CIDs, embedding, LanceDB writes, compaction) | {:.1} | {:.1} | {:.2} (≥ 0.85) |\n\n",
        rate(zblade_best),
        rate(raw_best),
        raw_best.as_secs_f64() / zblade_best.as_secs_f64(),
    )
}

/// A project of `messages` messages with one synthetic vector per chunk; hybrid query
/// latency, index size and ANN recall; and context assembly on the same project (issue 5).
fn search_at_scale(messages: usize, query_count: usize) -> (String, String) {
    let mut text = TextGen::new(42);
    let parsed = conversations(&mut text, messages / MESSAGES_PER_CONVERSATION);
    let work = tempfile::tempdir().unwrap();
    let raw_fts = work.path().join("raw-fts.db");
    raw_insert(&raw_fts, &parsed, true);

    let root = work.path().join("project");
    let (_, _) = Project::init(&root).unwrap();
    use_model(&root);
    let mut project = Project::open(&root).unwrap();
    eprintln!("adding {messages} messages …");
    for chunk in parsed.chunks(100) {
        project
            .add_conversations(chunk.iter().map(|c| (c.clone(), "bench".to_string())).collect())
            .unwrap();
    }
    let chunks = project.refresh_chunks().unwrap();
    let mut cids: Vec<String> = chunks.iter().map(|c| c.cid.clone()).collect();
    cids.sort();
    cids.dedup();

    // Vectors where the engine reads them, in the model's table.
    let dim = project.embedder().expect("model loads").lock().unwrap().dim();
    let vectors_dir = project.layout().vectors_dir();
    let mut store = VectorStore::open(&vectors_dir, MODEL, dim).unwrap();
    let mut generator = ClusteredVectors::new(dim, (cids.len() / 50).max(20));
    eprintln!("writing {} vectors …", cids.len());
    let mut sample = Vec::new();
    for batch in cids.chunks(zblade_search::vectors::WRITE_BATCH) {
        let rows: Vec<(String, Vec<f32>)> = batch.iter().map(|c| (c.clone(), generator.next())).collect();
        sample.extend(rows.iter().step_by(97).map(|(_, v)| v.clone()));
        store.add(&rows).unwrap();
    }
    store.compact().unwrap();
    eprintln!("building the ANN index …");
    let started = Instant::now();
    if cids.len() >= zblade_engine::ANN_THRESHOLD {
        assert!(store.ensure_ann_index(zblade_engine::ANN_THRESHOLD).unwrap());
    } else {
        store.build_ann_index().unwrap(); // the smoke run is below the threshold
    }
    let ann_build = started.elapsed();

    // ANN recall@10 against exact search, for queries near stored vectors.
    let mut recall = 0.0;
    let (mut ann_times, mut exact_times) = (Vec::new(), Vec::new());
    for i in 0..query_count {
        let query = generator.near(&sample[i % sample.len()].clone(), 0.08);
        let started = Instant::now();
        let ann = store.nearest(&query, 10).unwrap();
        ann_times.push(started.elapsed());
        let started = Instant::now();
        let exact = store.nearest_exact(&query, 10).unwrap();
        exact_times.push(started.elapsed());
        let found = ann.iter().filter(|n| exact.iter().any(|e| e.cid == n.cid)).count();
        recall += found as f64 / exact.len() as f64;
    }
    common::sane("ANN recall@10", recall);
    let recall = recall / query_count as f64;
    // The hybrid search's vector half: top 55 (50 candidates and a margin); recall@50
    // against exact search.
    let hybrid_k = zblade_engine::CANDIDATES + 5;
    let mut hybrid_ann_times = Vec::new();
    let mut hybrid_recall = 0.0;
    for i in 0..query_count {
        let query = generator.near(&sample[(i * 7 + 3) % sample.len()].clone(), 0.08);
        let exact: Vec<String> = store
            .nearest_exact(&query, 50)
            .unwrap()
            .into_iter()
            .map(|n| n.cid)
            .collect();
        let started = Instant::now();
        let found = store.nearest(&query, hybrid_k).unwrap();
        hybrid_ann_times.push(started.elapsed());
        hybrid_recall += found.iter().take(50).filter(|n| exact.contains(&n.cid)).count() as f64 / exact.len() as f64;
    }
    let hybrid_recall = hybrid_recall / query_count as f64;
    let hybrid_ann = Stats::of(&mut hybrid_ann_times);

    // Hybrid queries through the engine. Each query is embedded once first (timed on its own),
    // then searched with its embedding cached, so the search time excludes the model.
    drop(store);
    let mut project = Project::open(&root).unwrap();
    let queries: Vec<String> = (0..query_count).map(|_| text.query()).collect();
    let mut embed_times = Vec::new();
    for q in &queries {
        let started = Instant::now();
        project.query_vector(q).unwrap();
        embed_times.push(started.elapsed());
    }
    let mut timed = |mode: SearchMode| {
        let mut times = Vec::new();
        let mut hits = 0;
        for q in &queries {
            let query = SearchQuery::new(q, 10, SearchKind::All);
            let started = Instant::now();
            let results = project.search(&query.clone().in_mode(Some(mode))).unwrap();
            times.push(started.elapsed());
            assert_eq!(results.mode, mode, "{:?}", results.notice);
            hits += results.hits.len();
        }
        (Stats::of(&mut times), hits as f64 / queries.len() as f64)
    };
    let (hybrid, hybrid_hits) = timed(SearchMode::Hybrid);
    let (semantic, _) = timed(SearchMode::Semantic);
    let (keyword, _) = timed(SearchMode::Keyword);

    // Context assembly without the LLM (issue 5): hybrid candidates, rerank, budget of 8,000
    // real tokens, XML; next to the hybrid search of 50 candidates it starts from.
    let mut context_times = Vec::new();
    let mut candidate_times = Vec::new();
    let (mut search_phase, mut gather_phase, mut pack_phase) = (Vec::new(), Vec::new(), Vec::new());
    let (mut packed_tokens, mut packed_entries) = (0usize, 0usize);
    let counter = zblade_context::Cl100k::new(); // built once per process, as in a server
    for q in &queries {
        let request = ContextRequest {
            budget: Some(8_000),
            ..ContextRequest::new(q.as_str())
        };
        let started = Instant::now();
        let result = project.context(&request).unwrap();
        context_times.push(started.elapsed());
        let ms = |v: f64| Duration::from_secs_f64(v / 1000.0);
        search_phase.push(ms(result.timings.search_ms));
        gather_phase.push(ms(result.timings.gather_ms));
        pack_phase.push(ms(result.timings.pack_ms));
        assert!(result.pack.tokens <= 8_000);
        assert_eq!(
            result.pack.tokens,
            zblade_context::TokenCounter::count(&counter, &result.pack.text)
        );
        packed_tokens += result.pack.tokens;
        packed_entries += result.pack.entries.len();
        let query = SearchQuery::new(q, zblade_engine::CANDIDATES, SearchKind::All);
        let started = Instant::now();
        std::hint::black_box(project.search(&query.clone().in_mode(None)).unwrap());
        candidate_times.push(started.elapsed());
    }
    let context = Stats::of(&mut context_times);
    let candidates = Stats::of(&mut candidate_times);
    let (search_phase, gather_phase, pack_phase) = (
        Stats::of(&mut search_phase),
        Stats::of(&mut gather_phase),
        Stats::of(&mut pack_phase),
    );
    let context_report = format!(
        "Same project as \"Search at {} chunks\" above, same {query_count} queries (embedding cached), \
         budget 8,000 cl100k_base tokens, XML, balanced tier, no compressor model (extractive).\n\n\
         | measure | p50 / p95 / p99 | target |\n|---|---|---|\n\
         | `Project::context` (analyse, hybrid top 50, full texts, code hydration, rerank + MMR, pack, render, count) | {context} | p50 ≤ 30 ms, p95 ≤ 60 ms |\n\
         | of which (the engine's own timings): search | {search_phase} | – |\n\
         | of which: full texts, code hydration | {gather_phase} | – |\n\
         | of which: rerank + MMR, pack, render, count | {pack_phase} | – |\n\
         | hybrid search for 50 candidates, measured alone | {candidates} | – |\n\n\
         Packs held {:.0} tokens and {:.1} entries on average.\n\n",
        cids.len(),
        packed_tokens as f64 / queries.len() as f64,
        packed_entries as f64 / queries.len() as f64,
    );

    // Raw baselines in the same run: one LanceDB ANN query (top 50, as hybrid fetches) and
    // one bare FTS5 query per search.
    let store = VectorStore::open(&vectors_dir, MODEL, dim).unwrap();
    let mut lance_times = Vec::new();
    for q in &queries {
        let vector = project.query_vector(q).unwrap();
        let started = Instant::now();
        std::hint::black_box(store.nearest(&vector, 50).unwrap());
        lance_times.push(started.elapsed());
    }
    let conn = rusqlite::Connection::open(&raw_fts).unwrap();
    let mut fts_times = Vec::new();
    for q in &queries {
        let words: Vec<String> = q.split_whitespace().map(|w| format!("\"{w}\"")).collect();
        let started = Instant::now();
        let mut stmt = conn
            .prepare_cached("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rank LIMIT 50")
            .unwrap();
        let rows: Vec<i64> = stmt
            .query_map([words.join(" OR ")], |r| r.get(0))
            .unwrap()
            .flatten()
            .collect();
        std::hint::black_box(rows);
        fts_times.push(started.elapsed());
    }
    let lance = Stats::of(&mut lance_times);
    let fts = Stats::of(&mut fts_times);
    let embed = Stats::of(&mut embed_times);

    // Size on disk.
    drop((project, store, conn));
    let vector_bytes = dir_size(&vectors_dir);
    let sqlite_bytes = dir_size(&root.join(".zblade/index")) - vector_bytes;
    let raw_vector_bytes = (cids.len() * dim * 4) as u64;
    let raw_fts_bytes = dir_size(&raw_fts);
    let size_ratio = (vector_bytes + sqlite_bytes) as f64 / (raw_vector_bytes + raw_fts_bytes) as f64;
    let vector_ratio = vector_bytes as f64 / raw_vector_bytes as f64;
    common::sane("vectors on disk / raw vectors", vector_ratio);
    let ann = Stats::of(&mut ann_times);
    let exact = Stats::of(&mut exact_times);
    let hybrid_ratio = hybrid.p95.as_secs_f64() / (lance.p95 + fts.p95).as_secs_f64();

    let search_report = format!(
        "### Search at {} chunks\n\n\
         {messages} messages in {} conversations (the foundation benchmark's generator), {} chunks, {} distinct \
         CIDs, one synthetic 384-dimension vector per CID (clustered unit vectors), {:?} index built in \
         {:.1} s. {query_count} queries of 1–3 words (a third phrased as questions), embedded by the real \
         all-MiniLM-L6-v2; all kinds, limit 10.\n\n\
         | measure | p50 / p95 / p99 | baseline, same run | ratio or target |\n|---|---|---|---|\n\
         | hybrid search, query embedding excluded ({hybrid_hits:.1} hits/query) | {hybrid} | {} + {} (LanceDB ANN top 50 + bare FTS5 top 50, p95 summed) | {hybrid_ratio:.2}× baseline; p95 ≤ 50 ms |\n\
         | query embedding (all-MiniLM-L6-v2, one text) | {embed} | – | reported separately |\n\
         | semantic search, embedding excluded | {semantic} | {lance} (LanceDB ANN top 50) | – |\n\
         | keyword search | {keyword} | {fts} (bare FTS5 top 50) | – |\n\
         | ANN query (top 10, nprobes {}) | {ann} | {exact} (exact search, same table) | – |\n\
         | ANN query as hybrid search asks (top {hybrid_k}); recall@50 {hybrid_recall:.3} | {hybrid_ann} | – | – |\n\n\
         | measure | zblade | raw | ratio (target) |\n|---|---|---|---|\n\
         | ANN recall@10 against exact search | {recall:.3} | 1 | (≥ 0.95) |\n\
         | vectors on disk: the LanceDB table (CIDs, vectors, ANN index; compacted, old versions pruned) | {} | {} vectors ({} × {dim} × 4 B) | {vector_ratio:.2} (≤ 1.5) |\n\
         | index on disk: LanceDB {} + SQLite {} | {} | {} vectors + {} text and FTS5 table | {size_ratio:.2} (≤ 2) |\n\n",
        cids.len(),
        parsed.len(),
        chunks.len(),
        cids.len(),
        zblade_search::vectors::ANN_KIND,
        ann_build.as_secs_f64(),
        lance.p95_ms(),
        fts.p95_ms(),
        zblade_search::vectors::ANN_NPROBES,
        mb(vector_bytes),
        mb(raw_vector_bytes),
        cids.len(),
        mb(vector_bytes),
        mb(sqlite_bytes),
        mb(vector_bytes + sqlite_bytes),
        mb(raw_vector_bytes),
        mb(raw_fts_bytes),
    );
    (search_report, context_report)
}
