//! A year of memory (issue 62, part 4): `zblade context` and the warm prompt hook on a project
//! of a million chunks.
//!
//! The project: generated conversations (the foundation benchmark's generator: Zipf vocabulary,
//! user turns of 40–400 characters, assistant turns of 200–3,000) added through the engine until
//! the chunk count passes the target, then one synthetic vector per chunk CID written where the
//! engine reads them (embedding a million chunks with the real model would take seven hours on
//! two cores), and the ANN index built as `zblade index` builds it. The vectors are drawn in the
//! shape of the default model's embeddings of real text (`CalibratedVectors`): vectors drawn
//! alike in every direction would make any approximate index look worse than it is on real
//! memory. Queries are embedded by the real model, inside every timing: a prompt arrives as
//! text; recall is measured on new vectors of the drawn shape, and again on the contexts' own
//! prompts as the real model embeds them.
//!
//! Measured, each next to the raw library in the same run:
//! - the ANN index: build time, size on disk, and per probe count its query time and recall@10
//!   (and recall@50 of the top 55 that hybrid search asks for) against exact search on the same
//!   queries and table;
//! - `Project::context` in process (8,000-token budget), next to one LanceDB ANN query plus one
//!   bare FTS5 query on the project's own tables;
//! - the prompt hook as Claude Code runs it (`zblade hook prompt`, a new process per prompt, the
//!   event on stdin) and `zblade context --budget 8000` (a new process each too), taking turns,
//!   with the warm engine (`zblade serve`) running; and a few contexts with none.
//!
//! `cargo bench --workspace --bench million` writes the "million" section of docs/BENCHMARKS.md
//! (`ZBLADE_BENCH_MILLION_CHUNKS` sets the size, default 1,000,000); under `cargo test` it runs
//! a small smoke version and writes nothing. `ZBLADE_BENCH_MILLION_DIR=DIR` keeps the project in
//! DIR and reuses it on the next run; `ZBLADE_BENCH_MILLION_COMPARE=0` skips the other index
//! kinds (and then writes nothing), `=all` adds IVF-HNSW (a quarter of an hour to build).
//! `ZBLADE_BENCH_MILLION_ONLY_CONTEXT=1` with a kept project measures the contexts and the warm
//! hook alone and prints them (for tuning the search). `ZBLADE_BENCH_MILLION_GRID` (see `main`)
//! builds zblade's kind of index with other partition counts and prints the recall and query
//! times of each probe count given, for the recall queries and the contexts' own prompts.

#[path = "../../zblade-engine/benches/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::text::TextGen;
use common::vectors::CalibratedVectors;
use common::warm::{WarmEngine, run_hook};
use common::{Stats, dir_size, full_run, mb, write_section};
use zblade_engine::{CANDIDATES, ContextRequest, PROMPT_HOOK_BUDGET, Project, SearchKind, SearchMode, SearchQuery};
use zblade_search::VectorStore;
use zblade_search::vectors::{ANN_KIND, ANN_NPROBES, AnnKind, AnnQuery, WRITE_BATCH, ann_partitions, ann_query};

const ZBLADE: &str = env!("CARGO_BIN_EXE_zblade");
const MESSAGES_PER_CONVERSATION: usize = 50;
const BUDGET: usize = 8_000;

/// `zblade hook prompt --agent claude-code` in a new process, as Claude Code runs it on each
/// prompt: its `UserPromptSubmit` event on stdin, the context (the hook's own budget) printed.
/// The warm hook's target is measured on this.
fn prompt_hook(root: &Path, query: &str) -> Duration {
    let event = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "bench", "prompt": query});
    let mut command = Command::new(ZBLADE);
    command
        .arg("--project")
        .arg(root)
        .args(["hook", "prompt", "--agent", "claude-code"]);
    let (took, out) = run_hook(&mut command, event.to_string().as_bytes());
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "zblade hook prompt: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// `zblade context --budget 8000 QUERY` in a new process, as a script (or an older hook) asks.
fn hook(root: &Path, query: &str) -> Duration {
    let started = Instant::now();
    let out = Command::new(ZBLADE)
        .arg("--project")
        .arg(root)
        .args(["context", "--budget", &BUDGET.to_string(), query])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "zblade context: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty(), "zblade context printed nothing for {query:?}");
    took
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test` asks benches for their tests first
    }
    let full = full_run();
    let target: usize = std::env::var("ZBLADE_BENCH_MILLION_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 1_000_000 } else { 3_000 });
    let query_count = if full { 200 } else { 10 };
    let recall_queries = if full { 100 } else { 10 };
    let hook_runs = if full { 100 } else { 5 };
    let cold_runs = if full { 10 } else { 2 };

    // `ZBLADE_BENCH_MILLION_DIR` keeps the project (conversations and vectors) between runs:
    // building it takes minutes, and tuning the search does not change it.
    let kept = std::env::var_os("ZBLADE_BENCH_MILLION_DIR").map(std::path::PathBuf::from);
    let work = tempfile::tempdir().unwrap();
    let base = kept.clone().unwrap_or_else(|| work.path().to_path_buf());
    let root = base.join("project");
    let marker = base.join("built.json");
    let built: Built = match std::fs::read(&marker) {
        Ok(bytes) if kept.is_some() => serde_json::from_slice(&bytes).unwrap(),
        _ => {
            let _ = std::fs::remove_dir_all(&root);
            let _ = std::fs::remove_file(base.join("exact.json"));
            let built = build(&root, target, full);
            std::fs::write(&marker, serde_json::to_vec(&built).unwrap()).unwrap();
            built
        }
    };
    let mut text = TextGen::new(2_000_000);
    if std::env::var_os("ZBLADE_BENCH_MILLION_ONLY_CONTEXT").is_some() {
        only_contexts(&root, &mut text, query_count, hook_runs);
        return;
    }
    let project = Project::open(&root).unwrap();
    let (model_id, dim) = default_model(&project);
    let vectors_dir = project.layout().vectors_dir();
    drop(project);
    let mut store = VectorStore::open(&vectors_dir, &model_id, dim).unwrap();
    let mut generator = CalibratedVectors::new(built.cids);
    eprintln!("building the ANN index …");
    let started = Instant::now();
    store.build_ann_index().unwrap();
    store.compact().unwrap(); // prunes an earlier run's index files, for the size on disk
    let ann_build = started.elapsed();
    let vector_bytes = dir_size(&vectors_dir);
    let sqlite_bytes = dir_size(&root.join(".zblade/index")) - vector_bytes;

    // The index against exact search, per probe count.
    // Exact search reads every vector (about a second a query here): a kept project keeps the
    // answers too, for the same queries (the generator is seeded).
    let answers = base.join("exact.json");
    let exact: Vec<ExactAnswer> = match std::fs::read(&answers) {
        Ok(bytes) if kept.is_some() => serde_json::from_slice(&bytes).unwrap(),
        _ => {
            // New vectors of the same shape: prompts about topics memory holds.
            let exact: Vec<_> = (0..recall_queries)
                .map(|_| exact_answer(&store, generator.next()))
                .collect();
            std::fs::write(&answers, serde_json::to_vec(&exact).unwrap()).unwrap();
            exact
        }
    };
    let mut exact_times = Vec::new();
    for (query, _, _) in exact.iter().take(20) {
        let started = Instant::now();
        std::hint::black_box(store.nearest_exact(query, 10).unwrap());
        exact_times.push(started.elapsed());
    }
    let exact_stats = Stats::of(&mut exact_times);
    let hybrid_k = CANDIDATES + 5;
    // One row of the index table: query times of the top 10 and of the top 55 hybrid search
    // asks for, recall@10, and recall@50 of the top 55.
    let measure = |store: &VectorStore, ann: AnnQuery, exact: &[ExactAnswer]| {
        let (mut times, mut wide_times, mut recall10, mut recall50) = (Vec::new(), Vec::new(), 0.0, 0.0);
        for (query, ten, fifty) in exact {
            let started = Instant::now();
            let found = store.nearest_ann(query, 10, ann).unwrap();
            times.push(started.elapsed());
            recall10 += found.iter().filter(|n| ten.contains(&n.cid)).count() as f64 / ten.len() as f64;
            let started = Instant::now();
            let found = store.nearest_ann(query, hybrid_k, ann).unwrap();
            wide_times.push(started.elapsed());
            recall50 += found.iter().take(50).filter(|n| fifty.contains(&n.cid)).count() as f64 / fifty.len() as f64;
        }
        let n = exact.len() as f64;
        format!(
            "{} | {} | {:.3} | {:.3}",
            Stats::of(&mut times),
            Stats::of(&mut wide_times),
            common::sane("recall@10", recall10) / n,
            recall50 / n
        )
    };
    let how = |ann: AnnQuery| match ann.ef {
        Some(ef) => format!("ef {ef}"),
        None => format!(
            "nprobes {}, {}",
            ann.nprobes,
            ann.refine
                .map_or("no re-ranking".to_string(), |r| format!("refine ×{r}"))
        ),
    };
    let zblade_query = ann_query(ANN_KIND);
    let with = |nprobes, refine| AnnQuery {
        nprobes,
        refine,
        ..zblade_query
    };
    // `ZBLADE_BENCH_MILLION_GRID="246:64,96;123:32,48"`: zblade's kind of index built with
    // each partition count in turn, and asked with each probe count, by the recall queries and
    // by the contexts' own prompts; printed, nothing written (for choosing the two settings).
    if let Ok(grid) = std::env::var("ZBLADE_BENCH_MILLION_GRID") {
        let kept_prompts = base.join("prompts_exact.json");
        let prompts: Vec<ExactAnswer> = match std::fs::read(&kept_prompts) {
            Ok(bytes) if kept.is_some() => serde_json::from_slice(&bytes).unwrap(),
            _ => {
                // The first of the prompts the contexts below ask.
                let project = Project::open(&root).unwrap();
                let prompts: Vec<_> = context_prompts(&mut text, recall_queries)
                    .iter()
                    .map(|q| exact_answer(&store, project.query_vector(q).unwrap()))
                    .collect();
                std::fs::write(&kept_prompts, serde_json::to_vec(&prompts).unwrap()).unwrap();
                prompts
            }
        };
        println!(
            "| partitions | build | nprobes | top 10 | top {hybrid_k} | recall@10 | recall@50 | prompts: top 10 | \
             top {hybrid_k} | recall@10 | recall@50 |\n|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for cell in grid.split(';') {
            let (partitions, probes) = cell.split_once(':').expect("PARTITIONS:NPROBES,NPROBES;…");
            let partitions: u32 = partitions.trim().parse().expect("a partition count");
            let started = Instant::now();
            store.build_ann_index_of(ANN_KIND, Some(partitions)).unwrap();
            store.compact().unwrap();
            let took = started.elapsed().as_secs_f64();
            for nprobes in probes
                .split(',')
                .map(|p| p.trim().parse::<usize>().expect("a probe count"))
            {
                let ann = with(nprobes, None);
                println!(
                    "| {partitions} | {took:.1} s | {nprobes} | {} | {} |",
                    measure(&store, ann, &exact),
                    measure(&store, ann, &prompts)
                );
            }
        }
        return;
    }
    let mut index_rows = String::new();
    let index_cell = format!(
        "{} | {:.1} s | {}",
        ann_partitions(built.cids),
        ann_build.as_secs_f64(),
        mb(dir_size(&vectors_dir))
    );
    // zblade's index: its query, other probe counts, and re-ranking (exact distances of
    // 5 × k candidates, read from the table).
    let mut settings = vec![zblade_query];
    settings.extend([32, 48, 64, 128].map(|nprobes| with(nprobes, zblade_query.refine)));
    settings.push(with(ANN_NPROBES, Some(5)));
    for ann in settings {
        let marker = if ann == zblade_query { " (zblade)" } else { "" };
        index_rows.push_str(&format!(
            "| {ANN_KIND:?}{marker} | {index_cell} | {} | {} |\n",
            how(ann),
            measure(&store, ann, &exact)
        ));
    }
    // zblade's index with a quarter of the partitions: where a growing table can be just
    // before LanceDB splits partitions (at four times their target size), since a project's
    // index is built once and grows; then the kinds zblade built before, and IVF-HNSW.
    let quarter = (ann_partitions(built.cids) / 4).max(1);
    let query = |nprobes, refine, ef| AnnQuery { nprobes, refine, ef };
    let others: [(AnnKind, Option<u32>, Vec<AnnQuery>); 3] = [
        (ANN_KIND, Some(quarter), vec![zblade_query]),
        (AnnKind::IvfSq, None, vec![query(32, None, None), query(48, None, None)]),
        (
            AnnKind::IvfHnswSq,
            None,
            vec![query(1, None, Some(100)), query(1, None, Some(400))],
        ),
    ];
    // Building IVF-HNSW takes a quarter of an hour here: it is compared only with
    // `ZBLADE_BENCH_MILLION_COMPARE=all` (measured at commit bd20dc3: docs/BENCHMARKS.md).
    // `=0` compares nothing (and writes no section: the table would be partial).
    let compare = std::env::var("ZBLADE_BENCH_MILLION_COMPARE").unwrap_or_default();
    let compared = |kind: AnnKind| match compare.as_str() {
        "0" => false,
        "all" => true,
        _ => kind != AnnKind::IvfHnswSq,
    };
    // A partition needs vectors to train on: the smoke run's few thousand skip those rows.
    let trainable = |partitions: Option<u32>| partitions.is_none_or(|p| p as usize * 256 <= built.cids);
    let others = others
        .into_iter()
        .filter(|(kind, partitions, _)| compared(*kind) && trainable(*partitions));
    for (kind, partitions, settings) in others {
        eprintln!("building a {kind:?} index ({partitions:?} partitions) to compare …");
        let started = Instant::now();
        store.build_ann_index_of(kind, partitions).unwrap();
        store.compact().unwrap(); // prunes the replaced index's files, for the size on disk
        let index_cell = format!(
            "{} | {:.1} s | {}",
            partitions.map_or("LanceDB's".to_string(), |p| p.to_string()),
            started.elapsed().as_secs_f64(),
            mb(dir_size(&vectors_dir))
        );
        for ann in settings {
            index_rows.push_str(&format!(
                "| {kind:?} | {index_cell} | {} | {} |\n",
                how(ann),
                measure(&store, ann, &exact)
            ));
        }
    }
    if std::env::var_os("ZBLADE_BENCH_MILLION_ONLY_INDEX").is_some() {
        println!("{index_rows}");
        return;
    }
    // Back to the index zblade builds, for what follows.
    store.build_ann_index().unwrap();
    store.compact().unwrap();
    drop(store);

    // `Project::context` in process, each query new text (its embedding is in the time).
    let mut project = Project::open(&root).unwrap();
    let queries = context_prompts(&mut text, query_count);
    let contexts = Contexts::measure(&mut project, &queries);
    let Contexts {
        context,
        search,
        gather,
        pack,
        keyword,
        semantic,
        tokens,
    } = &contexts;

    // The raw libraries on the same tables: one LanceDB ANN query (top 55) and one bare FTS5
    // query (top 50, words OR-ed) per prompt.
    let store = VectorStore::open(&vectors_dir, &model_id, dim).unwrap();
    let mut lance_times = Vec::new();
    for q in &queries {
        let vector = project.query_vector(q).unwrap();
        let started = Instant::now();
        std::hint::black_box(store.nearest(&vector, hybrid_k).unwrap());
        lance_times.push(started.elapsed());
    }
    // The same index asked with the contexts' own prompts, embedded by the real model: the
    // recall table's queries are drawn like the stored vectors, and real prompts (a few words)
    // lie further from drawn memory than those do.
    let prompts_exact: Vec<_> = queries
        .iter()
        .take(recall_queries)
        .map(|q| exact_answer(&store, project.query_vector(q).unwrap()))
        .collect();
    let prompts_recall = measure(&store, zblade_query, &prompts_exact);
    drop(store);
    drop(project);
    let conn = rusqlite::Connection::open(Project::open(&root).unwrap().layout().database()).unwrap();
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
    drop(conn);
    let (lance, fts) = (Stats::of(&mut lance_times), Stats::of(&mut fts_times));

    // The hook: a new `zblade context` process per prompt, with no engine and with the warm one.
    let hook_queries: Vec<String> = (0..hook_runs).map(|i| format!("{} hook {i}", text.query())).collect();
    let (cold, warm, hooked) = hooks(&root, &hook_queries, cold_runs);

    let report = format!(
        "{} messages in {} conversations (the foundation benchmark's generator), {} chunks, \
         {} distinct CIDs, one synthetic {dim}-dimension vector per CID in the default \
         model's table (`{model_id}`), drawn in the shape of that model's embeddings of real text (topics around the real \
         mean along its principal components; `scripts/bench/calibrate_vectors.py` measured the shape and fitted the \
         generator); queries of 1–3 words (a third phrased as questions), each new text, embedded \
         by the real model inside every timing. Building it: conversations added in {:.0} s, vectors written and \
         compacted in {:.0} s.\n\n\
         | measure | p50 / p95 / p99 | raw libraries, same run | target |\n|---|---|---|---|\n\
         | `Project::context`, budget {BUDGET} (embedding, hybrid search, pack, render, count) | {context} | {} + {} (LanceDB ANN top {hybrid_k} + bare FTS5 top 50, p95 summed) | p95 ≤ 30 ms |\n\
         | of which search (the engine's own timing) | {search} | – | – |\n\
         | of which gathering (texts of the hits, recent turns) | {gather} | – | – |\n\
         | of which packing (rerank, budget, render, count) | {pack} | – | – |\n\
         | the prompt hook, warm engine (`zblade serve`): `zblade hook prompt --agent claude-code`, its event on stdin, budget {PROMPT_HOOK_BUDGET} | {hooked} | – | p95 ≤ 40 ms |\n\
         | `zblade context --budget {BUDGET}` per prompt, warm engine | {warm} | – | – |\n\
         | the same, no engine running ({cold_runs} prompts) | {cold} | – | – |\n\n\
         Packs held {:.0} tokens on average.\n\n\
         **The ANN index** ({:?}, as `zblade index` builds it past {} vectors): built in {:.1} s; the vector table \
         with it {} on disk against {} of raw vectors; the SQLite index (messages, FTS5, chunks) {}. Exact search \
         on the same table: {exact_stats} (top 10). Recall against exact search on {} new vectors of the same shape (prompts about topics memory holds):\n\n\
         | index | partitions | build | on disk (table) | query | top 10: p50 / p95 / p99 | top {hybrid_k}: p50 / p95 / p99 | recall@10 | recall@50 of the top {hybrid_k} |\n|---|---|---|---|---|---|---|---|---|\n{index_rows}\n\
         The same index and query asked with {} of the contexts' own prompts instead, embedded by the real model (a few \
         words each, against drawn memory):\n\n\
         | top 10: p50 / p95 / p99 | top {hybrid_k}: p50 / p95 / p99 | recall@10 | recall@50 of the top {hybrid_k} |\n|---|---|---|---|\n\
         | {prompts_recall} |\n\n\
         Where a context's search goes (same prompts, embeddings cached, {CANDIDATES} candidates): keyword half \
         {keyword}, vector half {semantic}.\n",
        built.messages,
        built.conversations,
        built.chunks,
        built.cids,
        built.ingest_s,
        built.vectors_s,
        lance.p95_ms(),
        fts.p95_ms(),
        tokens,
        ANN_KIND,
        zblade_engine::ANN_THRESHOLD,
        ann_build.as_secs_f64(),
        mb(vector_bytes),
        mb((built.cids * dim * 4) as u64),
        mb(sqlite_bytes),
        exact.len(),
        prompts_exact.len(),
    );
    println!("{report}");
    if full && compare != "0" {
        write_section("million", "A million chunks", "million", &report);
    }
}

/// `Project::context` in process over `queries` (each new text: its embedding is in the time),
/// with the engine's own timing of each phase, then the search's two halves alone.
struct Contexts {
    context: Stats,
    search: Stats,
    gather: Stats,
    pack: Stats,
    keyword: Stats,
    semantic: Stats,
    /// Tokens per pack, on average.
    tokens: f64,
}

impl Contexts {
    fn measure(project: &mut Project, queries: &[String]) -> Contexts {
        project.context(&ContextRequest::new("warm up the model")).unwrap();
        let (mut context_times, mut search_phase, mut gather_phase, mut pack_phase) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut tokens = 0usize;
        for q in queries {
            let request = ContextRequest {
                budget: Some(BUDGET),
                ..ContextRequest::new(q.as_str())
            };
            let started = Instant::now();
            let result = project.context(&request).unwrap();
            context_times.push(started.elapsed());
            search_phase.push(Duration::from_secs_f64(result.timings.search_ms / 1000.0));
            gather_phase.push(Duration::from_secs_f64(result.timings.gather_ms / 1000.0));
            pack_phase.push(Duration::from_secs_f64(result.timings.pack_ms / 1000.0));
            assert!(result.pack.tokens <= BUDGET);
            tokens += result.pack.tokens;
        }
        // The search's two halves alone, as a context asks (the embeddings are cached by now).
        let mut halves = |mode: SearchMode| {
            let mut times = Vec::new();
            for q in queries {
                let query = SearchQuery::new(q, CANDIDATES, SearchKind::All).in_mode(Some(mode));
                let started = Instant::now();
                std::hint::black_box(project.search(&query).unwrap());
                times.push(started.elapsed());
            }
            Stats::of(&mut times)
        };
        Contexts {
            context: Stats::of(&mut context_times),
            search: Stats::of(&mut search_phase),
            gather: Stats::of(&mut gather_phase),
            pack: Stats::of(&mut pack_phase),
            keyword: halves(SearchMode::Keyword),
            semantic: halves(SearchMode::Semantic),
            tokens: tokens as f64 / queries.len() as f64,
        }
    }
}

/// A new process per prompt: the first `cold_runs` prompts as `zblade context` with no
/// engine running, then every prompt with the warm engine (`zblade serve`), as `zblade
/// context` and as the prompt hook, taking turns. Returns (cold, warm context, warm hook).
fn hooks(root: &Path, queries: &[String], cold_runs: usize) -> (Stats, Stats, Stats) {
    let mut cold: Vec<Duration> = queries.iter().take(cold_runs).map(|q| hook(root, q)).collect();
    let engine = WarmEngine::start(ZBLADE, root);
    hook(root, "warm up the engine's model");
    let (mut warm, mut hooked) = (Vec::new(), Vec::new());
    for (i, q) in queries.iter().enumerate() {
        warm.push(hook(root, q));
        // Another text than the context's: a prompt the engine has not embedded yet.
        hooked.push(prompt_hook(root, &format!("{q} {i}")));
    }
    drop(engine);
    (Stats::of(&mut cold), Stats::of(&mut warm), Stats::of(&mut hooked))
}

/// The next `count` prompts the contexts ask: each a new text (a number added), so each is
/// embedded inside its timing.
fn context_prompts(text: &mut TextGen, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{} {i}", text.query())).collect()
}

/// A recall query and its exact answers: the vector, the CIDs of its exact top 10 and top 50.
type ExactAnswer = (Vec<f32>, Vec<String>, Vec<String>);

/// `query` with its exact top 10 and top 50 in `store` (exact search reads every vector).
fn exact_answer(store: &VectorStore, query: Vec<f32>) -> ExactAnswer {
    let fifty: Vec<String> = store
        .nearest_exact(&query, 50)
        .unwrap()
        .into_iter()
        .map(|n| n.cid)
        .collect();
    (query, fifty[..10].to_vec(), fifty)
}

/// `ZBLADE_BENCH_MILLION_ONLY_CONTEXT`: the context and hook figures alone, on a kept project
/// whose ANN index is zblade's (built when it is not), printed and not written: for tuning the
/// search, where building and comparing indexes would take most of the run.
fn only_contexts(root: &Path, text: &mut TextGen, query_count: usize, hook_runs: usize) {
    // Asking for the model loads it to embed batches (a thread per core, whose idle workers
    // spin): the project that measures is opened afresh, so its searches load their own.
    let project = Project::open(root).unwrap();
    let (model_id, dim) = default_model(&project);
    let mut store = VectorStore::open(&project.layout().vectors_dir(), &model_id, dim).unwrap();
    drop(project);
    if store.ann_index() != Some(ANN_KIND) {
        eprintln!("building the ANN index …");
        store.build_ann_index().unwrap();
        store.compact().unwrap();
    }
    drop(store);
    let mut project = Project::open(root).unwrap();
    let queries = context_prompts(text, query_count);
    let c = Contexts::measure(&mut project, &queries);
    drop(project);
    let hook_queries: Vec<String> = (0..hook_runs).map(|i| format!("{} hook {i}", text.query())).collect();
    let (cold, warm, hooked) = hooks(root, &hook_queries, 2);
    println!(
        "context {} (search {}, gathering {}, packing {}); keyword half {}, vector half {}; \
         warm hook {hooked}; warm `zblade context` {warm}; cold `zblade context` {cold}; {:.0} tokens a pack",
        c.context, c.search, c.gather, c.pack, c.keyword, c.semantic, c.tokens
    );
}

/// The id and vector length of the project's default embedding model.
fn default_model(project: &Project) -> (String, usize) {
    let embedder = project
        .embedder()
        .expect("the default model loads (scripts/setup.sh builds it)");
    let embedder = embedder.lock().unwrap();
    (embedder.model_id().to_string(), embedder.dim())
}

/// What building the project measured, kept beside it for runs that reuse it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Built {
    conversations: usize,
    messages: usize,
    chunks: usize,
    cids: usize,
    ingest_s: f64,
    vectors_s: f64,
}

/// A project at `root` with at least `target` chunks: generated conversations added through
/// the engine, then one calibrated synthetic vector per distinct chunk CID in the default
/// model's table (compacted; the ANN index is built by the caller).
fn build(root: &Path, target: usize, full: bool) -> Built {
    let (_, _) = Project::init(root).unwrap();
    let mut project = Project::open(root).unwrap();
    // Conversations until the chunks pass the target. Chunking reads every text again, so the
    // chunks are counted after a first thousand conversations, the rest planned from that rate
    // (plus 1 %), and counted again at the end.
    let mut text = TextGen::new(1_000_000);
    let started = Instant::now();
    let mut conversations = 0usize;
    let mut add = |project: &mut Project, conversations: &mut usize, count: usize| {
        let batch: Vec<_> = (*conversations..*conversations + count)
            .map(|i| {
                let json = text.conversation(i, MESSAGES_PER_CONVERSATION);
                (
                    zblade_core::parse_conversation(json.as_bytes(), "bench").unwrap(),
                    "bench".to_string(),
                )
            })
            .collect();
        *conversations += count;
        project.add_conversations(batch).unwrap();
    };
    let first = if full { 1_000 } else { 10 };
    add(&mut project, &mut conversations, first);
    let per_conversation = project.refresh_chunks().unwrap().len() as f64 / first as f64;
    let mut planned = (target as f64 / per_conversation * 1.01).ceil() as usize;
    eprintln!("{per_conversation:.1} chunks per conversation: {planned} conversations");
    let chunks = loop {
        while conversations < planned {
            let count = 100.min(planned - conversations);
            add(&mut project, &mut conversations, count);
            if conversations.is_multiple_of(1_000) {
                eprintln!(
                    "{conversations} conversations added ({:.0} s)",
                    started.elapsed().as_secs_f64()
                );
            }
        }
        let chunks = project.refresh_chunks().unwrap();
        if chunks.len() >= target {
            break chunks;
        }
        planned = conversations + ((target - chunks.len()) as f64 / per_conversation).ceil() as usize + 1;
    };
    let ingest_s = started.elapsed().as_secs_f64();
    let chunk_total = chunks.len();
    let mut cids: Vec<String> = chunks.iter().map(|c| c.cid.clone()).collect();
    drop(chunks);
    cids.sort();
    cids.dedup();

    // One vector per CID, in the default model's table.
    let (model_id, dim) = default_model(&project);
    let mut generator = CalibratedVectors::new(cids.len());
    assert_eq!(generator.dim(), dim, "the vector shape file is for {model_id}");
    let store = VectorStore::open(&project.layout().vectors_dir(), &model_id, dim).unwrap();
    let started = Instant::now();
    for (i, batch) in cids.chunks(WRITE_BATCH * 8).enumerate() {
        let rows: Vec<(String, Vec<f32>)> = batch.iter().map(|c| (c.clone(), generator.next())).collect();
        store.add(&rows).unwrap();
        if i % 10 == 0 {
            eprintln!(
                "{} of {} vectors written",
                ((i + 1) * WRITE_BATCH * 8).min(cids.len()),
                cids.len()
            );
        }
    }
    store.compact().unwrap();
    Built {
        conversations,
        messages: conversations * MESSAGES_PER_CONVERSATION,
        chunks: chunk_total,
        cids: cids.len(),
        ingest_s,
        vectors_s: started.elapsed().as_secs_f64(),
    }
}
