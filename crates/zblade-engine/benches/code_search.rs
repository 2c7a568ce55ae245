//! Code search quality with the CodeSearchNet recipe, on real Rust crates nobody here wrote
//! (issue: code search that understands code).
//!
//! Each crate's sources (from the cargo registry, on disk after any build) are copied into a
//! fresh project with their doc comments blanked out (lines kept, so line numbers stay true);
//! each documented function's doc comment — its first paragraph — is a query, and a hit is a
//! result whose lines overlap the function. Reported per mode (keyword, semantic, hybrid):
//! recall@1/@5/@10 and MRR@10, next to the peer — plain BM25 over 40-line windows (SQLite FTS5,
//! the same words) — in the same run. Crates are split: the fusion weight and the keyword
//! weights are chosen on the tuning crates; the others are reported.
//!
//! Indexing cost: the same files chunked by syntax and by line windows, each written to a
//! keyword index and embedded with the same model, timed in the same run.
//!
//! `cargo bench -p zblade-engine --bench code_search` writes the "code-search" section of
//! docs/BENCHMARKS.md (needs `scripts/setup.sh` to have built the model); under `cargo test` it
//! runs one small crate and 20 queries and writes nothing.

mod common;
#[path = "common/fastembed_alone.rs"]
mod fastembed_alone;
#[path = "common/registry.rs"]
mod registry;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{full_run, write_section};
use registry::{files_under, registry_crate};

/// Every `.rs` file under `dir`, relative, sorted.
fn rust_files_under(dir: &Path) -> Vec<PathBuf> {
    files_under(dir, &["rs"])
}
use zblade_engine::{CANDIDATES, HYBRID_SEMANTIC_WEIGHT, Project, SearchKind, SearchMode, SearchQuery};
use zblade_search::fusion::relative_score_fusion;

/// Crates the weights are chosen on.
const TUNE: &[&str] = &["globset", "walkdir", "url", "notify", "serde_json"];
/// Crates reported, never tuned on.
const REPORT: &[&str] = &["ignore", "regex-syntax", "clap_builder", "bytes", "crossbeam-channel"];
/// Queries per crate, at most (spread evenly over its documented functions).
const QUERIES_PER_CRATE: usize = 150;
/// The peer's window.
const PEER_WINDOW_LINES: usize = 40;
/// Semantic weights tried for code fusion.
const SWEEP: &[f64] = &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0];

/// A documented function: its doc comment's first paragraph, where it is.
struct Query {
    text: String,
    path: String,
    start: u32,
    end: u32,
}

#[derive(Default, Clone, Copy)]
struct Scores {
    n: usize,
    at1: f64,
    at5: f64,
    at10: f64,
    mrr: f64,
}

impl Scores {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        if let Some(r) = rank {
            self.at1 += f64::from(u8::from(r < 1));
            self.at5 += f64::from(u8::from(r < 5));
            self.at10 += f64::from(u8::from(r < 10));
            self.mrr += if r < 10 { 1.0 / (r + 1) as f64 } else { 0.0 };
        }
    }

    fn row(&self) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "{:.3} | {:.3} | {:.3} | {:.3}",
            self.at1 / n,
            self.at5 / n,
            self.at10 / n,
            self.mrr / n
        )
    }
}

/// `[`Foo::bar`](crate::Foo)` → `Foo::bar`; backticks and markdown emphasis dropped.
fn plain(doc: &str) -> String {
    let mut out = String::new();
    let mut chars = doc.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' | '*' => {}
            '[' => {}
            ']' if chars.peek() == Some(&'(') => {
                // Skip the link target.
                for c in chars.by_ref() {
                    if c == ')' {
                        break;
                    }
                }
            }
            ']' => {}
            c => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Copies a crate's `src/` into `root/src` with doc comments blanked, and returns its
/// documented functions as queries.
fn prepare(krate: &Path, root: &Path) -> Vec<Query> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_rust::LANGUAGE.into()).unwrap();
    let mut queries = Vec::new();
    for rel in rust_files_under(&krate.join("src")) {
        let Ok(text) = std::fs::read_to_string(krate.join("src").join(&rel)) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let is_doc = |l: &str| {
            let t = l.trim_start();
            (t.starts_with("///") && !t.starts_with("////")) || t.starts_with("//!")
        };
        // Block doc comments (`/*! … */`, `/** … */`) are blanked too.
        let mut in_block = false;
        let blanked: String = lines
            .iter()
            .map(|l| {
                let t = l.trim_start();
                if !in_block && (t.starts_with("/*!") || (t.starts_with("/**") && !t.starts_with("/**/"))) {
                    in_block = true;
                }
                if in_block {
                    if l.contains("*/") {
                        in_block = false;
                    }
                    return "";
                }
                if is_doc(l) { "" } else { l }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let path = format!("src/{}", rel.to_string_lossy());
        let dest = root.join(&path);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, blanked + "\n").unwrap();
        // Functions, found in the original: their docs are the `///` lines just above them
        // (attributes may sit between).
        let tree = parser.parse(&text, None).unwrap();
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
            if node.kind() != "function_item" {
                continue;
            }
            let start = node.start_position().row;
            let end = node.end_position().row;
            if end < start + 2 {
                continue; // one-liners say too little to be found by
            }
            let mut above = start;
            while above > 0 && lines[above - 1].trim_start().starts_with("#[") {
                above -= 1;
            }
            let mut doc = Vec::new();
            while above > 0 && is_doc(lines[above - 1]) && lines[above - 1].trim_start().starts_with("///") {
                above -= 1;
                doc.push(lines[above].trim_start().trim_start_matches('/').trim());
            }
            doc.reverse();
            let first_paragraph: Vec<&str> = doc.iter().take_while(|l| !l.is_empty()).copied().collect();
            let query = plain(&first_paragraph.join(" "));
            if query.split_whitespace().count() >= 3 {
                queries.push(Query {
                    text: query,
                    path: path.clone(),
                    start: start as u32 + 1,
                    end: end as u32 + 1,
                });
            }
        }
    }
    queries.sort_by(|a, b| (&a.path, a.start).cmp(&(&b.path, b.start)));
    queries
}

/// Every `step`-th query, at most `n`.
fn spread(queries: Vec<Query>, n: usize) -> Vec<Query> {
    let step = queries.len().div_ceil(n).max(1);
    queries.into_iter().step_by(step).take(n).collect()
}

/// The peer: plain BM25 (SQLite FTS5, porter) over non-overlapping 40-line windows.
struct Peer {
    conn: rusqlite::Connection,
}

impl Peer {
    fn build(root: &Path) -> Peer {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE w USING fts5(path UNINDEXED, start UNINDEXED, end UNINDEXED, text, tokenize='porter unicode61')",
        )
        .unwrap();
        for rel in rust_files_under(&root.join("src")) {
            let path = format!("src/{}", rel.to_string_lossy());
            let text = std::fs::read_to_string(root.join(&path)).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, window) in lines.chunks(PEER_WINDOW_LINES).enumerate() {
                let start = i * PEER_WINDOW_LINES + 1;
                conn.execute(
                    "INSERT INTO w VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![path, start, start + window.len() - 1, window.join("\n")],
                )
                .unwrap();
            }
        }
        Peer { conn }
    }

    fn search(&self, query: &str) -> Vec<(String, u32, u32)> {
        let mut words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| format!("\"{}\"", w.to_lowercase()))
            .collect();
        words.dedup();
        if words.is_empty() {
            return Vec::new();
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, start, end FROM w WHERE w MATCH ?1 ORDER BY bm25(w) LIMIT 10")
            .unwrap();
        stmt.query_map([words.join(" OR ")], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }
}

/// The rank of the first result overlapping the query's function.
fn rank_of<'a>(results: impl IntoIterator<Item = (&'a str, u32, u32)>, q: &Query) -> Option<usize> {
    results
        .into_iter()
        .take(10)
        .position(|(path, start, end)| path == q.path && start <= q.end && end >= q.start)
}

/// `code:PATH:START-END` → its parts.
fn key_place(key: &str) -> Option<(&str, u32, u32)> {
    zblade_index::parse_code_key(key)
}

fn model_dir() -> PathBuf {
    zblade_engine::models_dir().join(zblade_core::SearchSettings::default().embedding_model)
}

/// Time to chunk these files, write them to a keyword index and embed every chunk, with
/// `rows` as the chunker.
fn indexing_cost(
    root: &Path,
    model: &mut fastembed::TextEmbedding,
    rows: &dyn Fn(&str, &str) -> Vec<zblade_index::CodeChunkRow>,
) -> (Duration, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut index = zblade_index::Index::open(&dir.path().join("index.db")).unwrap();
    let started = Instant::now();
    let mut updates = Vec::new();
    let mut texts = Vec::new();
    for rel in rust_files_under(&root.join("src")) {
        let path = format!("src/{}", rel.to_string_lossy());
        let text = std::fs::read_to_string(root.join(&path)).unwrap();
        let chunks = rows(&path, &text);
        let lines: Vec<&str> = text.lines().collect();
        for c in &chunks {
            let body = lines[c.start_line as usize - 1..c.end_line as usize].join("\n");
            texts.push(zblade_search::code::embedding_text(&path, c.symbol.as_deref(), &body));
        }
        updates.push(zblade_index::CodeFileUpdate {
            path,
            state: zblade_index::CodeFileState {
                size: text.len() as u64,
                mtime_ns: 0,
                sha256: String::new(),
            },
            modified_at: "2026-01-01T00:00:00Z".into(),
            chunks,
        });
    }
    index.put_code_files(&updates, &[]).unwrap();
    texts.sort_by_key(String::len);
    let n = texts.len();
    model.embed(texts, Some(zblade_search::embed::EMBED_BATCH)).unwrap();
    (started.elapsed(), n)
}

/// `0.563: missed` / `0.781: met`.
fn verdict(value: f64, target: f64) -> String {
    format!("{value:.3}: {}", if value >= target { "met" } else { "missed" })
}

fn main() {
    let full = full_run();
    let (tune, report): (Vec<&str>, Vec<&str>) = if full {
        (TUNE.to_vec(), REPORT.to_vec())
    } else {
        (vec![], vec!["walkdir"])
    };
    let per_crate = if full { QUERIES_PER_CRATE } else { 20 };
    let mut embedder = fastembed_alone::load(&model_dir());
    // [tune, report] × [keyword, semantic, hybrid, peer]
    let mut scores = [[Scores::default(); 4]; 2];
    let mut sweep = [[Scores::default(); SWEEP.len()]; 2];
    let mut per_crate_rows = Vec::new();
    let (mut syntax_time, mut window_time) = (Duration::ZERO, Duration::ZERO);
    let (mut syntax_chunks, mut window_chunks) = (0, 0);
    let mut files = 0;
    let mut lines = 0;
    let mut latencies = Vec::new();
    // `ZBLADE_BENCH_TUNE_ONLY=1` runs the tuning crates only (while choosing weights).
    let tune_only = std::env::var_os("ZBLADE_BENCH_TUNE_ONLY").is_some();
    for (split, names) in [(0, &tune), (1, &report)] {
        if tune_only && split == 1 {
            continue;
        }
        for name in names.iter() {
            let Some(krate) = registry_crate(name) else {
                assert!(
                    !full,
                    "{name} is not in the cargo registry's sources (build the workspace first)"
                );
                eprintln!("code_search: {name} not in the cargo registry; skipped");
                continue;
            };
            let work = tempfile::tempdir().unwrap();
            let root = work.path();
            let all = prepare(&krate, root);
            let documented = all.len();
            let queries = spread(all, per_crate);
            let crate_files = rust_files_under(&root.join("src"));
            files += crate_files.len();
            lines += crate_files
                .iter()
                .map(|f| {
                    std::fs::read_to_string(root.join("src").join(f))
                        .unwrap()
                        .lines()
                        .count()
                })
                .sum::<usize>();

            let (t, n) = indexing_cost(root, &mut embedder, &zblade_engine::chunk_rows);
            syntax_time += t;
            syntax_chunks += n;
            let (t, n) = indexing_cost(root, &mut embedder, &|_, text| zblade_engine::line_window_rows(text));
            window_time += t;
            window_chunks += n;

            let (mut project, _) = Project::init(root).unwrap();
            project
                .update_search_index(&mut |_, _, _| {})
                .expect("the embedding model (run scripts/setup.sh)");
            let peer = Peer::build(root);
            let mut crate_scores = [Scores::default(); 4];
            for q in &queries {
                for (m, mode) in [SearchMode::Keyword, SearchMode::Semantic, SearchMode::Hybrid]
                    .into_iter()
                    .enumerate()
                {
                    let started = Instant::now();
                    let found = project
                        .search_with(&SearchQuery::new(&q.text, 10, SearchKind::Code), Some(mode))
                        .unwrap();
                    if mode == SearchMode::Hybrid {
                        latencies.push(started.elapsed());
                    }
                    assert_eq!(found.mode, mode, "{:?}", found.notice);
                    let places = found.hits.iter().filter_map(|h| {
                        let (path, lines) = (h.hit.path.as_deref()?, h.hit.lines?);
                        Some((path, lines.0, lines.1))
                    });
                    let rank = rank_of(places, q);
                    // `ZBLADE_BENCH_MISSES=1` prints what hybrid search missed on the tuning crates.
                    if split == 0
                        && mode == SearchMode::Hybrid
                        && rank.is_none()
                        && std::env::var_os("ZBLADE_BENCH_MISSES").is_some()
                    {
                        let top: Vec<String> = found
                            .hits
                            .iter()
                            .take(3)
                            .map(|h| format!("{} {}", h.hit.title.clone().unwrap_or_default(), h.hit.id))
                            .collect();
                        eprintln!(
                            "MISS {name}: {:?} → wanted {}:{}-{}; got {top:?}",
                            q.text, q.path, q.start, q.end
                        );
                    }
                    scores[split][m].add(rank);
                    crate_scores[m].add(rank);
                }
                let peer_hits = peer.search(&q.text);
                let rank = rank_of(peer_hits.iter().map(|(p, s, e)| (p.as_str(), *s, *e)), q);
                scores[split][3].add(rank);
                crate_scores[3].add(rank);
                // The fusion sweep, on the same candidate lists.
                let wide = SearchQuery::new(&q.text, CANDIDATES, SearchKind::Code);
                let candidates = |mode| -> Vec<(String, f64)> {
                    project
                        .search_with(&wide, Some(mode))
                        .unwrap()
                        .hits
                        .iter()
                        .map(|h| (zblade_index::hit_key(&h.hit), h.hit.score))
                        .collect()
                };
                let (keyword, semantic) = (candidates(SearchMode::Keyword), candidates(SearchMode::Semantic));
                for (i, weight) in SWEEP.iter().enumerate() {
                    let fused = relative_score_fusion(&[(&keyword, 1.0 - weight), (&semantic, *weight)]);
                    let rank = rank_of(fused.iter().filter_map(|(key, _)| key_place(key)), q);
                    sweep[split][i].add(rank);
                }
            }
            per_crate_rows.push(format!(
                "| {} ({}) | {} | {} | {} | {} | {} | {} |",
                krate.file_name().unwrap().to_string_lossy(),
                if split == 0 { "tune" } else { "report" },
                crate_files.len(),
                queries.len(),
                documented,
                crate_scores[2].row().split(" | ").nth(2).unwrap(),
                crate_scores[3].row().split(" | ").nth(2).unwrap(),
                crate_scores[2].row().split(" | ").nth(3).unwrap(),
            ));
            eprintln!("code_search: {name}: {} queries", queries.len());
        }
    }
    let labels = [
        "zblade keyword",
        "zblade semantic",
        "zblade hybrid (default)",
        "peer: BM25 over 40-line windows",
    ];
    let mut table =
        String::from("| split | search | recall@1 | recall@5 | recall@10 | MRR@10 |\n|---|---|---|---|---|---|\n");
    for (split, name) in [(1, "report"), (0, "tune")] {
        for (m, label) in labels.iter().enumerate() {
            if scores[split][m].n > 0 {
                table.push_str(&format!("| {name} | {label} | {} |\n", scores[split][m].row()));
            }
        }
    }
    let mut sweep_table =
        String::from("| semantic weight | tune: recall@10 / MRR@10 | report: recall@10 / MRR@10 |\n|---|---|---|\n");
    let best = (0..SWEEP.len())
        .max_by(|&a, &b| {
            let key = |i: usize| sweep[0][i].at10 + sweep[0][i].mrr;
            key(a).total_cmp(&key(b))
        })
        .unwrap();
    for (i, weight) in SWEEP.iter().enumerate() {
        let cell = |s: &Scores| {
            let n = s.n.max(1) as f64;
            format!("{:.3} / {:.3}", s.at10 / n, s.mrr / n)
        };
        let mark = if i == best && sweep[0][i].n > 0 {
            " (best on tune)"
        } else {
            ""
        };
        let used = if (weight - HYBRID_SEMANTIC_WEIGHT).abs() < 1e-9 {
            " ← shipped"
        } else {
            ""
        };
        sweep_table.push_str(&format!(
            "| {weight}{mark}{used} | {} | {} |\n",
            cell(&sweep[0][i]),
            cell(&sweep[1][i])
        ));
    }
    let mut latencies_sorted = latencies.clone();
    latencies_sorted.sort();
    let p95 = latencies_sorted[(latencies_sorted.len() * 95 / 100).min(latencies_sorted.len() - 1)];
    let ratio = syntax_time.as_secs_f64() / window_time.as_secs_f64();
    let body = format!(
        "CodeSearchNet recipe: each documented function's doc comment (first paragraph) is the query; doc comments are \
         blanked in the indexed sources; a hit is a result overlapping the function. Crates from the cargo registry \
         ({files} files, {lines} lines); each crate is its own project; model `{}`.\n\n{table}\n\
         Per crate (hybrid vs the peer):\n\n| crate | files | queries | documented functions | hybrid recall@10 | peer recall@10 | hybrid MRR@10 |\n|---|---|---|---|---|---|---|\n{}\n\n\
         Code fusion (relative score fusion, semantic weight), on the same candidate lists:\n\n{sweep_table}\n\
         Indexing the same files (chunk, keyword index, embed every chunk with the same model), same run: syntax chunks \
         {:.1} s ({syntax_chunks} chunks), line windows {:.1} s ({window_chunks} chunks): **ratio {ratio:.2}** (target ≤ 1.3). \
         Hybrid code search p95 over these queries: {:.1} ms.\n\n\
         Targets on the report crates: recall@10 ≥ 0.75 ({}), MRR@10 ≥ 0.50 ({}).\n",
        zblade_core::SearchSettings::default().embedding_model,
        per_crate_rows.join("\n"),
        syntax_time.as_secs_f64(),
        window_time.as_secs_f64(),
        p95.as_secs_f64() * 1000.0,
        verdict(scores[1][2].at10 / scores[1][2].n.max(1) as f64, 0.75),
        verdict(scores[1][2].mrr / scores[1][2].n.max(1) as f64, 0.50),
    );
    println!("{body}");
    if full {
        write_section(
            "code-search",
            "Code search (CodeSearchNet recipe on crates nobody here wrote)",
            "code_search",
            &body,
        );
    } else {
        assert!(scores[1][3].n > 0, "queries were asked");
    }
}
