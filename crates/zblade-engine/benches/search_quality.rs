//! Retrieval quality on LoCoMo (issue: semantic and hybrid search).
//!
//! Each of the five development conversations in `../shared/data/locomo/` becomes a zblade
//! project (one conversation per session, one message per turn), is embedded with the real
//! all-MiniLM-L6-v2, and each question with labelled evidence turns is asked in keyword,
//! semantic and hybrid mode. Reported: recall@5, recall@10 and nDCG@10 of the evidence turns.
//!
//! `cargo bench --workspace --bench search_quality` (needs `scripts/setup.sh` to have built
//! the model) writes docs/BENCHMARKS.md; under `cargo test` it runs one conversation and 20
//! questions and writes nothing.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;
use zblade_engine::{
    CANDIDATES, ContextRequest, HYBRID_NEIGHBOUR_WEIGHT, HYBRID_SEMANTIC_WEIGHT, Project, SearchKind, SearchMode,
    SearchQuery,
};
use zblade_search::fusion::{relative_score_fusion, spread_to_neighbours, weighted_rank_fusion};

mod common;
#[path = "common/locomo.rs"]
mod locomo;
use common::{full_run, write_section};
use locomo::{locomo_dir, message_id};

/// Fusion methods compared on the same candidate lists.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Fusion {
    /// Weighted reciprocal rank fusion: (keyword weight, semantic weight, k).
    Rrf(f64, f64, f64),
    /// Relative score fusion with this semantic weight (see `zblade_search::fusion`); BM25
    /// scores for keyword hits, cosine similarity for vector neighbours.
    Relative(f64),
    /// The same, with keyword hits scored by position (the keyword plan's order) instead of BM25.
    RelativeRank(f64),
    /// Relative score fusion with this semantic weight, then each turn gains this share of
    /// its neighbouring turns' best score (`zblade_search::fusion::spread_to_neighbours`).
    Neighbours(f64, f64),
}

impl std::fmt::Display for Fusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fusion::Rrf(wk, ws, k) => write!(f, "reciprocal rank, weights {wk} / {ws}, k = {k}"),
            Fusion::Relative(ws) => write!(f, "relative score (BM25), semantic weight {ws}"),
            Fusion::RelativeRank(ws) => write!(f, "relative score (keyword position), semantic weight {ws}"),
            Fusion::Neighbours(ws, wn) => write!(
                f,
                "relative score (BM25), semantic weight {ws}, neighbouring turns lend {wn}"
            ),
        }
    }
}

impl Fusion {
    /// `turns`: every turn's message id, to find a turn's neighbours (`D3_7` → `D3_6`, `D3_8`).
    fn fuse(self, keyword: &[(String, f64)], semantic: &[(String, f64)], turns: &HashSet<String>) -> Vec<String> {
        let ids = |l: &[(String, f64)]| l.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
        let fused = match self {
            Fusion::Rrf(wk, ws, k) => weighted_rank_fusion(&[(&ids(keyword), wk), (&ids(semantic), ws)], k),
            Fusion::Relative(ws) => relative_score_fusion(&[(keyword, 1.0 - ws), (semantic, ws)]),
            Fusion::Neighbours(ws, wn) => {
                let fused = relative_score_fusion(&[(keyword, 1.0 - ws), (semantic, ws)]);
                let next_to = |id: &str| -> Vec<String> {
                    let Some((session, n)) = id.rsplit_once('_').and_then(|(s, n)| Some((s, n.parse::<i64>().ok()?)))
                    else {
                        return Vec::new();
                    };
                    [n - 1, n + 1]
                        .into_iter()
                        .map(|k| format!("{session}_{k}"))
                        .filter(|k| turns.contains(k))
                        .collect()
                };
                let neighbours = fused.iter().map(|(id, _)| (id.clone(), next_to(id))).collect();
                spread_to_neighbours(&fused, &neighbours, wn, true)
            }
            Fusion::RelativeRank(ws) => {
                let by_position: Vec<(String, f64)> = keyword
                    .iter()
                    .enumerate()
                    .map(|(i, (id, _))| (id.clone(), -(i as f64)))
                    .collect();
                relative_score_fusion(&[(&by_position, 1.0 - ws), (semantic, ws)])
            }
        };
        fused.into_iter().map(|(id, _)| id).take(10).collect()
    }
}

/// How many conversations (in file-name order) the fusion is tuned on; the rest are reported.
const TUNE_FILES: usize = 2;

/// What `SearchMode::Hybrid` does, in the sweep's terms.
const SHIPPED: Fusion = Fusion::Neighbours(HYBRID_SEMANTIC_WEIGHT, HYBRID_NEIGHBOUR_WEIGHT);

const SWEEP: [Fusion; 17] = [
    Fusion::Rrf(1.0, 1.0, 60.0),
    Fusion::Rrf(1.0, 0.5, 60.0),
    Fusion::Rrf(1.0, 0.5, 20.0),
    Fusion::Relative(0.2),
    Fusion::Relative(0.3),
    Fusion::Relative(0.4),
    Fusion::Relative(0.5),
    Fusion::Relative(0.6),
    Fusion::Relative(0.7),
    Fusion::RelativeRank(0.3),
    Fusion::RelativeRank(0.5),
    Fusion::Neighbours(0.3, 0.4),
    Fusion::Neighbours(0.4, 0.2),
    Fusion::Neighbours(0.4, 0.4),
    Fusion::Neighbours(0.4, 0.6),
    Fusion::Neighbours(0.4, 0.8),
    Fusion::Neighbours(0.5, 0.4),
];

const MODES: [(SearchMode, &str); 3] = [
    (SearchMode::Keyword, "keyword"),
    (SearchMode::Semantic, "semantic"),
    (SearchMode::Hybrid, "hybrid"),
];

#[derive(Default, Clone, Copy)]
struct Scores {
    recall5: f64,
    recall10: f64,
    ndcg10: f64,
    n: usize,
}

fn score(ranked: &[String], evidence: &HashSet<String>, s: &mut Scores) {
    let hits_at = |k: usize| ranked.iter().take(k).filter(|id| evidence.contains(*id)).count() as f64;
    s.recall5 += hits_at(5) / evidence.len() as f64;
    s.recall10 += hits_at(10) / evidence.len() as f64;
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, id)| evidence.contains(*id))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..evidence.len().min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
    s.ndcg10 += dcg / ideal;
    s.n += 1;
}

fn main() {
    let full = full_run();
    let synthetic = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = match locomo_dir() {
        Some(dir) => locomo::conversation_files(&dir),
        None if !full => {
            eprintln!(
                "search_quality: LoCoMo not found (set ZBLADE_LOCOMO_DIR); smoke run on a synthetic conversation"
            );
            vec![locomo::synthetic_locomo(synthetic.path())]
        }
        None => panic!("LoCoMo not found: set ZBLADE_LOCOMO_DIR to the folder holding its JSON files"),
    };
    files.sort();
    if !full {
        files.truncate(1);
    }
    // [tune, report]: the fusion is chosen on the first TUNE_FILES conversations only.
    let mut totals = [[Scores::default(); 3]; 2];
    let mut sweep = [[Scores::default(); SWEEP.len()]; 2];
    let mut turns = 0;
    let mut embed_time = 0.0;
    let mut packing = Packing::default();
    for (f, file) in files.iter().enumerate() {
        let split = usize::from(f >= TUNE_FILES);
        let data: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let work = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(work.path()).unwrap();
        if let Some(model) = std::env::var_os("ZBLADE_BENCH_MODEL") {
            // Another installed model (e.g. the fp32 build next to the int8 default).
            let path = work.path().join(".zblade/config/settings.json");
            let mut settings = zblade_core::Settings::load(&path).unwrap();
            settings.search.embedding_model = model.to_string_lossy().into_owned();
            settings.save(&path).unwrap();
            project = Project::open(work.path()).unwrap();
        }
        let loaded = locomo::add_to_project(&mut project, &data, usize::MAX);
        turns += loaded.turns;
        let (turn_ids, whole_tokens) = (loaded.turn_ids, loaded.whole_tokens);
        let started = Instant::now();
        project
            .index_semantic(&mut |_, _| {})
            .expect("the embedding model (run scripts/setup.sh)");
        embed_time += started.elapsed().as_secs_f64();

        let questions: Vec<&Value> = data["qa"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|q| q["evidence"].as_array().is_some_and(|e| !e.is_empty()))
            .take(if full { usize::MAX } else { 20 })
            .collect();
        for q in questions {
            let evidence: HashSet<String> = q["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .map(message_id)
                .collect();
            let text = q["question"].as_str().unwrap();
            for (i, (mode, _)) in MODES.iter().enumerate() {
                let query = SearchQuery::new(text, 10, SearchKind::Messages);
                let results = project.search(&query.clone().in_mode(Some(*mode))).unwrap();
                assert_eq!(results.mode, *mode, "{:?}", results.notice);
                let ranked: Vec<String> = results.hits.iter().map(|h| h.hit.id.clone()).collect();
                score(&ranked, &evidence, &mut totals[split][i]);
            }
            // The fusion weights, swept on the same candidate lists (top 50 of each retriever).
            let wide = SearchQuery::new(text, CANDIDATES, SearchKind::Messages);
            let mut candidates = |mode| -> Vec<(String, f64)> {
                let results = project.search(&wide.clone().in_mode(Some(mode))).unwrap();
                results.hits.iter().map(|h| (h.hit.id.clone(), h.hit.score)).collect()
            };
            let (keyword, semantic) = (candidates(SearchMode::Keyword), candidates(SearchMode::Semantic));
            for (j, fusion) in SWEEP.iter().enumerate() {
                score(
                    &fusion.fuse(&keyword, &semantic, &turn_ids),
                    &evidence,
                    &mut sweep[split][j],
                );
            }
            // Context assembly (issue 5): does an 8,000-token pack hold the evidence turns?
            let request = ContextRequest {
                budget: Some(PACK_BUDGET),
                ..ContextRequest::new(text)
            };
            let result = project.context(&request).unwrap();
            let packed: HashSet<&str> = result
                .pack
                .entries
                .iter()
                .filter_map(|e| match &e.candidate.item {
                    zblade_context::Item::Message { message, .. } => Some(message.as_str()),
                    _ => None,
                })
                .collect();
            let found = evidence.iter().filter(|id| packed.contains(id.as_str())).count();
            packing.questions += 1;
            packing.all_evidence += usize::from(found == evidence.len());
            packing.any_evidence += usize::from(found > 0);
            packing.pack_tokens += result.pack.tokens;
            packing.whole_tokens += whole_tokens;
            packing.millis += result.elapsed_ms;
        }
    }
    let cells = |s: Scores| {
        let n = s.n.max(1) as f64;
        format!("{:.3} | {:.3} | {:.3}", s.recall5 / n, s.recall10 / n, s.ndcg10 / n)
    };
    let header = "| recall@5 | recall@10 | nDCG@10 | recall@5 | recall@10 | nDCG@10 |\n|---|---|---|---|---|---|---|\n";
    let mut table = format!("| mode {header}");
    for (i, (_, name)) in MODES.iter().enumerate() {
        for split in totals.iter().filter(|split| split[i].n > 0) {
            common::sane(
                &format!("{name} recall@10"),
                split[i].recall10 / split[i].n.max(1) as f64,
            );
        }
        table.push_str(&format!(
            "| {name} | {} | {} |\n",
            cells(totals[0][i]),
            cells(totals[1][i])
        ));
    }
    let (held, n) = (totals[1][2], totals[1][2].n.max(1) as f64);
    eprintln!(
        "hybrid on the reported split: recall@5 {:.4}, recall@10 {:.4}",
        held.recall5 / n,
        held.recall10 / n
    );
    // The fusion the tuning conversations pick (by recall@10), and how it does on the others.
    let best = (0..SWEEP.len())
        .max_by(|&a, &b| sweep[0][a].recall10.total_cmp(&sweep[0][b].recall10))
        .unwrap();
    let mut sweep_table = format!("| fusion {header}");
    for (j, fusion) in SWEEP.iter().enumerate() {
        let mut marks = Vec::new();
        if *fusion == SHIPPED {
            marks.push("shipped");
        }
        if j == best {
            marks.push("best on the tuning split");
        }
        let marks = if marks.is_empty() {
            String::new()
        } else {
            format!(" ({})", marks.join(", "))
        };
        sweep_table.push_str(&format!(
            "| {fusion}{marks} | {} | {} |\n",
            cells(sweep[0][j]),
            cells(sweep[1][j])
        ));
    }
    let name = |f: &PathBuf| f.file_stem().unwrap().to_string_lossy().into_owned();
    let tune: Vec<String> = files.iter().take(TUNE_FILES).map(name).collect();
    let held: Vec<String> = files.iter().skip(TUNE_FILES).map(name).collect();
    let model =
        std::env::var("ZBLADE_BENCH_MODEL").unwrap_or_else(|_| zblade_core::SearchSettings::default().embedding_model);
    let report = format!(
        "{} conversations, {turns} turns, {} questions with labelled evidence turns (all five categories), \
         model `{model}` (all-MiniLM-L6-v2 converted offline; `-int8`: its int8 build), turn-level evidence, messages \
         only, top 10. Each message is embedded led by the end of the message before it. Tuning split: \
         conversations {} ({} questions); reported split, never tuned on: {} ({} questions). The first three \
         columns are the tuning split, the last three the reported one.\n\n{table}\n\
         Embedding the {turns} turns took {embed_time:.1} s in all. Hybrid is {SHIPPED} over the top {CANDIDATES} \
         of each mode, chosen by recall@10 on the tuning split with the sweep below (same candidate lists):\n\n{sweep_table}",
        files.len(),
        totals[0][0].n + totals[1][0].n,
        tune.join(", "),
        totals[0][0].n,
        held.join(", "),
        totals[1][0].n,
    );
    let n = packing.questions.max(1) as f64;
    let savings = format!(
        "Each question of the search-quality run above, asked of `zblade context` on its conversation \
         (hybrid retrieval, budget {PACK_BUDGET} cl100k_base tokens, XML, balanced tier, extractive compressor):\n\n\
         | measure | value |\n|---|---|\n\
         | questions | {} |\n\
         | tokens of the whole conversation (turn texts only), mean | {:.0} |\n\
         | tokens of the packed context, mean | {:.0} |\n\
         | packed / whole | {:.3} |\n\
         | questions with every evidence turn in the pack | {:.3} |\n\
         | questions with at least one evidence turn in the pack | {:.3} |\n\
         | assembly time, mean | {:.1} ms |\n\n",
        packing.questions,
        packing.whole_tokens as f64 / n,
        packing.pack_tokens as f64 / n,
        packing.pack_tokens as f64 / packing.whole_tokens.max(1) as f64,
        packing.all_evidence as f64 / n,
        packing.any_evidence as f64 / n,
        packing.millis / n,
    );
    println!("{report}\n{savings}");
    if full {
        write_section("search-quality", "Search quality on LoCoMo", "search_quality", &report);
        write_section(
            "context-savings",
            "Context token savings on LoCoMo",
            "search_quality",
            &savings,
        );
    }
}

/// Token budget of the packs in the savings measurement.
const PACK_BUDGET: usize = 8_000;

/// Totals of the context-assembly measurement.
#[derive(Default)]
struct Packing {
    questions: usize,
    all_evidence: usize,
    any_evidence: usize,
    pack_tokens: usize,
    whole_tokens: usize,
    millis: f64,
}
