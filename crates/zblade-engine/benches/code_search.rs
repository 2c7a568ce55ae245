//! Code search quality with the CodeSearchNet recipe, on real code nobody here wrote (issues:
//! code search that understands code; zblade's own code model).
//!
//! Each code base (Rust crates from the cargo registry, a Python package from the setup's
//! environment, a JavaScript package from the UI's node_modules) is copied into a fresh project
//! with its documentation blanked (`zblade_syntax::docs`, lines kept so line numbers stay
//! true); each documented function's first doc paragraph is a query, and a hit is a result
//! whose lines overlap the function. Reported per model (the conversation model alone, which
//! embedded code before; zblade's code model) and mode (keyword, semantic, hybrid): recall@1/5/10
//! and MRR@10, next to the peer — plain BM25 over 40-line windows (SQLite FTS5, the same words) —
//! in the same run. Sets are split: weights are chosen on the tuning crates; the report crates
//! and the non-Rust packages are reported, never tuned on. No package here gave the code model
//! a training pair (the miner excludes them).
//!
//! Indexing cost: the same files chunked by syntax and by line windows, each written to a
//! keyword index and embedded with the same model, timed in the same run.
//!
//! `cargo bench --workspace --bench code_search` writes the "code-search" section of
//! docs/BENCHMARKS.md (needs `scripts/setup.sh` to have installed the models); under `cargo
//! test` it runs one small crate and 20 queries and writes nothing.

mod common;
#[path = "common/fastembed_alone.rs"]
mod fastembed_alone;
#[path = "code_search/loss.rs"]
mod loss;
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
use zblade_engine::{CANDIDATES, CODE_SEMANTIC_WEIGHT, Project, SearchKind, SearchMode, SearchQuery};
use zblade_search::fusion::relative_score_fusion;

/// Crates the weights are chosen on.
const TUNE: &[&str] = &["globset", "walkdir", "url", "notify", "serde_json"];
/// Crates reported, never tuned on.
const REPORT: &[&str] = &["ignore", "regex-syntax", "clap_builder", "bytes", "crossbeam-channel"];
/// Queries per code base, at most (spread evenly over its documented functions).
const QUERIES_PER_SET: usize = 150;
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

/// Where a set's scores go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Split {
    Tune,
    Report,
    /// A non-Rust package, reported.
    Other(&'static str),
}

/// A code base: its name, the folder its files are under, and the files (relative).
struct CodeBase {
    name: String,
    split: Split,
    dir: PathBuf,
    files: Vec<PathBuf>,
}

/// The Python package: click, from the setup's Python environment.
fn python_set() -> Option<CodeBase> {
    let env = std::env::var_os("ZBLADE_PY_ENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/zblade-py")))?;
    let site = std::fs::read_dir(env.join("lib"))
        .ok()?
        .flatten()
        .map(|d| d.path().join("site-packages"))
        .find(|p| p.join("click").is_dir())?;
    let files = files_under(&site.join("click"), &["py"])
        .into_iter()
        .map(|f| Path::new("click").join(f))
        .collect();
    Some(CodeBase {
        name: "click (Python)".into(),
        split: Split::Other("Python: click"),
        dir: site,
        files,
    })
}

/// The JavaScript package: commander, from the UI's node_modules.
fn javascript_set() -> Option<CodeBase> {
    let dir = common::report::manifest_dir().join("../../ui/node_modules/commander");
    let files: Vec<PathBuf> = files_under(&dir.join("lib"), &["js"])
        .into_iter()
        .map(|f| Path::new("lib").join(f))
        .collect();
    (!files.is_empty()).then(|| CodeBase {
        name: "commander (JavaScript)".into(),
        split: Split::Other("JavaScript: commander"),
        dir,
        files,
    })
}

fn rust_set(name: &str, split: Split) -> Option<CodeBase> {
    let krate = registry_crate(name)?;
    let files = rust_files_under(&krate.join("src"))
        .into_iter()
        .map(|f| Path::new("src").join(f))
        .collect();
    Some(CodeBase {
        name: krate.file_name().unwrap().to_string_lossy().into_owned(),
        split,
        dir: krate,
        files,
    })
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

/// Copies a code base into `root` with its documentation blanked, and returns its documented
/// functions (three lines or more, three words of documentation or more) as queries.
fn prepare(base: &CodeBase, root: &Path) -> Vec<Query> {
    let mut queries = Vec::new();
    for rel in &base.files {
        let Ok(text) = std::fs::read_to_string(base.dir.join(rel)) else {
            continue;
        };
        let dest = root.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, zblade_syntax::docs::blank(rel, &text)).unwrap();
        let path = rel.to_string_lossy().replace('\\', "/");
        for item in zblade_syntax::docs::documented(rel, &text).unwrap_or_default() {
            if item.function && item.end_line >= item.start_line + 2 && item.summary.split_whitespace().count() >= 3 {
                queries.push(Query {
                    text: item.summary,
                    path: path.clone(),
                    start: item.start_line,
                    end: item.end_line,
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
    fn build(root: &Path, files: &[PathBuf]) -> Peer {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE w USING fts5(path UNINDEXED, start UNINDEXED, end UNINDEXED, text, tokenize='porter unicode61')",
        )
        .unwrap();
        for rel in files {
            let path = rel.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(root.join(rel)).unwrap();
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

fn model_dir(name: &str) -> PathBuf {
    zblade_engine::models_dir().join(name)
}

/// Code models shipped before the default one, compared beside it while installed (their
/// figures stay in the table when a new model is shipped).
const EARLIER_CODE_MODELS: &[&str] = &["zblade-code-v1"];
/// How `models()` labels an earlier code model.
const EARLIER: &str = "earlier code model";

/// The models compared: the conversation model alone (how code was embedded before the code
/// model), each earlier code model still installed, then the code model (the default for code,
/// always last).
fn models() -> Vec<(&'static str, String)> {
    let defaults = zblade_core::SearchSettings::default();
    let mut models = vec![("conversation model", defaults.embedding_model)];
    for earlier in EARLIER_CODE_MODELS {
        if *earlier != defaults.code_model && model_dir(earlier).join("model.onnx").is_file() {
            models.push((EARLIER, (*earlier).to_string()));
        }
    }
    models.push(("code model", defaults.code_model));
    models
}

/// Makes the project at `root` embed code with `model`, named by its directory's path so that
/// an earlier default is not taken for today's (`SearchSettings::code_model_in_use`).
fn use_code_model(root: &Path, model: &str) {
    set_code_model(root, &model_dir(model).to_string_lossy());
}

fn set_code_model(root: &Path, value: &str) {
    let path = root.join(".zblade/config/settings.json");
    let mut settings = zblade_core::Settings::load(&path).unwrap();
    settings.search.code_model = value.into();
    settings.save(&path).unwrap();
}

/// What upgrading costs a project whose code was embedded with an earlier default code model:
/// indexed with `earlier` as an older `zblade init` left it, then opened by this zblade (which
/// reads that name as today's default) and indexed again. Returns the time of that second
/// index and the code chunks it embedded.
fn upgrade_cost(root: &Path, earlier: &str) -> (Duration, usize) {
    Project::init(root).unwrap();
    use_code_model(root, earlier);
    Project::open(root)
        .unwrap()
        .update_search_index(&mut |_, _, _| {})
        .unwrap();
    set_code_model(root, earlier);
    let mut project = Project::open(root).unwrap();
    let started = Instant::now();
    let report = project.update_search_index(&mut |_, _, _| {}).unwrap();
    let took = started.elapsed();
    let embed = report.semantic.expect("the models are installed");
    assert_eq!(
        embed.code_model.as_deref(),
        Some(zblade_core::DEFAULT_CODE_MODEL),
        "the earlier default's name means today's default"
    );
    drop(project);
    std::fs::remove_dir_all(root.join(".zblade")).unwrap();
    (took, embed.code_embedded)
}

/// Time to chunk these files, write them to a keyword index and embed every chunk, with
/// `rows` as the chunker.
fn indexing_cost(
    root: &Path,
    files: &[PathBuf],
    model: &mut fastembed::TextEmbedding,
    rows: &dyn Fn(&str, &str) -> Vec<zblade_index::CodeChunkRow>,
) -> (Duration, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut index = zblade_index::Index::open(&dir.path().join("index.db")).unwrap();
    let started = Instant::now();
    let mut updates = Vec::new();
    let mut texts = Vec::new();
    for rel in files {
        let path = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        let chunks = rows(&path, &text);
        let lines: Vec<&str> = text.lines().collect();
        for c in &chunks {
            let body = lines[c.start_line as usize - 1..c.end_line as usize].join("\n");
            texts.push(zblade_syntax::embedding_text(&path, c.symbol.as_deref(), &body));
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

/// Scores of one split: per model, [keyword, semantic, hybrid]; the peer; the fusion sweep
/// per model; the pipeline's loss per model.
#[derive(Default, Clone)]
struct SplitScores {
    modes: Vec<[Scores; 3]>,
    peer: Scores,
    sweep: Vec<[Scores; SWEEP.len()]>,
    loss: Vec<loss::Loss>,
    /// Lines and count of the split's chunks.
    chunk_lines: (usize, usize),
}

impl SplitScores {
    fn new(models: usize) -> Self {
        SplitScores {
            modes: vec![[Scores::default(); 3]; models],
            sweep: vec![[Scores::default(); SWEEP.len()]; models],
            loss: vec![loss::Loss::default(); models],
            ..SplitScores::default()
        }
    }
}

fn main() {
    let full = full_run();
    let mut sets: Vec<CodeBase> = Vec::new();
    let names: Vec<(&str, Split)> = if full {
        TUNE.iter()
            .map(|n| (*n, Split::Tune))
            .chain(REPORT.iter().map(|n| (*n, Split::Report)))
            .collect()
    } else {
        vec![("walkdir", Split::Report)]
    };
    // `ZBLADE_BENCH_TUNE_ONLY=1` runs the tuning crates only (while choosing weights).
    let tune_only = std::env::var_os("ZBLADE_BENCH_TUNE_ONLY").is_some();
    for (name, split) in names {
        if tune_only && split != Split::Tune {
            continue;
        }
        match rust_set(name, split) {
            Some(set) => sets.push(set),
            None => {
                assert!(
                    !full,
                    "{name} is not in the cargo registry's sources (build the workspace first)"
                );
                eprintln!("code_search: {name} not in the cargo registry; skipped");
            }
        }
    }
    if full && !tune_only {
        sets.extend(python_set().or_else(|| panic!("click is not in the Python environment (run scripts/setup.sh)")));
        sets.extend(javascript_set().or_else(|| panic!("commander is not in ui/node_modules (run scripts/setup.sh)")));
    }
    let per_set = if full { QUERIES_PER_SET } else { 20 };
    let mut models = models();
    if tune_only {
        // Choosing settings: the default code model alone.
        models.drain(..models.len() - 1);
    }
    for (_, model) in &models {
        assert!(
            model_dir(model).join("model.onnx").is_file(),
            "the model {model} is not installed (run scripts/setup.sh)"
        );
    }
    // Each model alone, as fastembed loads it: for the indexing cost and the pipeline's loss.
    let mut embedders: Vec<fastembed::TextEmbedding> = models
        .iter()
        .map(|(_, model)| fastembed_alone::load(&model_dir(model)))
        .collect();
    let code = models.len() - 1;
    let mut conversation_model_time = Duration::ZERO;
    let mut splits: Vec<(Split, SplitScores)> = Vec::new();
    let mut per_set_rows = Vec::new();
    let (mut syntax_time, mut window_time) = (Duration::ZERO, Duration::ZERO);
    let (mut syntax_chunks, mut window_chunks) = (0, 0);
    let (mut files, mut lines) = (0, 0);
    let mut latencies = Vec::new();
    // Re-embedding after an upgrade from the earlier default code model: time, code chunks.
    let mut upgrade = (Duration::ZERO, 0);
    for set in &sets {
        let work = tempfile::tempdir().unwrap();
        let root = work.path();
        let all = prepare(set, root);
        let documented = all.len();
        let queries = spread(all, per_set);
        files += set.files.len();
        lines += set
            .files
            .iter()
            .map(|f| {
                std::fs::read_to_string(root.join(f))
                    .unwrap_or_default()
                    .lines()
                    .count()
            })
            .sum::<usize>();
        if set.split != Split::Tune {
            let (t, n) = indexing_cost(root, &set.files, &mut embedders[code], &zblade_engine::chunk_rows);
            syntax_time += t;
            syntax_chunks += n;
            let (t, n) = indexing_cost(root, &set.files, &mut embedders[code], &|_, text| {
                zblade_engine::line_window_rows(text)
            });
            window_time += t;
            window_chunks += n;
            // The same syntax chunks with the conversation model: the code model is the same
            // size, so it should index as fast.
            conversation_model_time += indexing_cost(root, &set.files, &mut embedders[0], &zblade_engine::chunk_rows).0;
            if let Some((_, earlier)) = models.iter().find(|(label, _)| *label == EARLIER) {
                let (took, chunks) = upgrade_cost(root, earlier);
                upgrade.0 += took;
                upgrade.1 += chunks;
            }
        }
        if !splits.iter().any(|(s, _)| *s == set.split) {
            splits.push((set.split, SplitScores::new(models.len())));
        }
        let at = splits.iter().position(|(s, _)| *s == set.split).unwrap();
        let peer = Peer::build(root, &set.files);
        let mut set_scores = vec![[Scores::default(); 3]; models.len()];
        let mut set_peer = Scores::default();
        for (m, (_, model)) in models.iter().enumerate() {
            // The model alone on every documented function of the set, before the product.
            let corpus = loss::Corpus::build(&set.dir, root, &set.files, &mut embedders[m]);
            if m == 0 {
                let (lines, count) = corpus.chunk_lines();
                splits[at].1.chunk_lines.0 += lines;
                splits[at].1.chunk_lines.1 += count;
            }
            let alone: Vec<Option<usize>> = queries
                .iter()
                .map(|q| corpus.alone_rank(&mut embedders[m], &q.text, &q.path, q.start, q.end))
                .collect();
            Project::init(root).unwrap();
            use_code_model(root, model);
            let mut project = Project::open(root).unwrap();
            project
                .update_search_index(&mut |_, _, _| {})
                .expect("the embedding models (run scripts/setup.sh)");
            for (qi, q) in queries.iter().enumerate() {
                let mut ranks = [None; 3];
                for (k, mode) in [SearchMode::Keyword, SearchMode::Semantic, SearchMode::Hybrid]
                    .into_iter()
                    .enumerate()
                {
                    let started = Instant::now();
                    let found = project
                        .search(&SearchQuery::new(&q.text, 10, SearchKind::Code).in_mode(Some(mode)))
                        .unwrap();
                    if mode == SearchMode::Hybrid && m == code {
                        latencies.push(started.elapsed());
                    }
                    assert_eq!(found.mode, mode, "{:?}", found.notice);
                    let places = found.hits.iter().filter_map(|h| {
                        let (path, lines) = (h.hit.path.as_deref()?, h.hit.lines?);
                        Some((path, lines.0, lines.1))
                    });
                    let rank = rank_of(places, q);
                    // `ZBLADE_BENCH_MISSES=1` prints what hybrid search missed on the tuning crates.
                    if set.split == Split::Tune
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
                            "MISS {} [{model}]: {:?} → wanted {}:{}-{}; got {top:?}",
                            set.name, q.text, q.path, q.start, q.end
                        );
                    }
                    splits[at].1.modes[m][k].add(rank);
                    set_scores[m][k].add(rank);
                    ranks[k] = rank;
                }
                if m == 0 {
                    let peer_hits = peer.search(&q.text);
                    let rank = rank_of(peer_hits.iter().map(|(p, s, e)| (p.as_str(), *s, *e)), q);
                    splits[at].1.peer.add(rank);
                    set_peer.add(rank);
                }
                // The fusion sweep, on the same candidate lists.
                let wide = SearchQuery::new(&q.text, CANDIDATES, SearchKind::Code);
                let mut candidates = |mode| -> Vec<(String, f64)> {
                    project
                        .search(&wide.clone().in_mode(Some(mode)))
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
                    splits[at].1.sweep[m][i].add(rank);
                }
                // What the pipeline lost of what the model alone found, and why.
                let (found_alone, found_semantic) = (alone[qi], ranks[1].is_some());
                let cause = (found_alone.is_some() && !found_semantic).then(|| {
                    let places: Vec<(String, u32, u32)> = semantic
                        .iter()
                        .filter_map(|(key, _)| key_place(key))
                        .map(|(p, s, e)| (p.to_string(), s, e))
                        .collect();
                    corpus.cause(&embedders[m], &q.path, q.start, q.end, &places)
                });
                splits[at].1.loss[m].add(found_alone, found_semantic, ranks[2].is_some(), cause);
            }
            drop(project);
            std::fs::remove_dir_all(root.join(".zblade")).unwrap();
        }
        let cell = |s: &Scores, i: usize| s.row().split(" | ").nth(i).unwrap().to_string();
        let hybrid_cells: Vec<String> = set_scores.iter().map(|s| cell(&s[2], 2)).collect();
        per_set_rows.push(format!(
            "| {} ({}) | {} | {} | {} | {} | {} | {} |",
            set.name,
            split_name(set.split),
            set.files.len(),
            queries.len(),
            documented,
            hybrid_cells.join(" | "),
            cell(&set_peer, 2),
            cell(&set_scores[code][2], 3),
        ));
        eprintln!("code_search: {}: {} queries", set.name, queries.len());
    }
    let labels = ["keyword", "semantic", "hybrid"];
    let mut table =
        String::from("| set | search | recall@1 | recall@5 | recall@10 | MRR@10 |\n|---|---|---|---|---|---|\n");
    let order = |s: &Split| match s {
        Split::Report => 0,
        Split::Other(_) => 1,
        Split::Tune => 2,
    };
    splits.sort_by_key(|(s, _)| order(s));
    for (split, scores) in &splits {
        for (m, (model_label, model)) in models.iter().enumerate() {
            for (k, label) in labels.iter().enumerate() {
                let default = if m == code && k == 2 { " (default)" } else { "" };
                table.push_str(&format!(
                    "| {} | {label}, {model_label} `{model}`{default} | {} |\n",
                    split_name(*split),
                    scores.modes[m][k].row()
                ));
            }
        }
        table.push_str(&format!(
            "| {} | peer: BM25 over 40-line windows | {} |\n",
            split_name(*split),
            scores.peer.row()
        ));
    }
    let tune = splits
        .iter()
        .find(|(s, _)| *s == Split::Tune)
        .map(|(_, s)| s.clone())
        .unwrap_or_else(|| SplitScores::new(models.len()));
    let report = splits
        .iter()
        .find(|(s, _)| *s == Split::Report)
        .map(|(_, s)| s.clone())
        .unwrap_or_else(|| SplitScores::new(models.len()));
    let mut sweep_table = String::from(
        "| semantic weight | code model, tune: recall@10 / MRR@10 | code model, report | conversation model, tune | conversation model, report |\n|---|---|---|---|---|\n",
    );
    let best = (0..SWEEP.len())
        .max_by(|&a, &b| {
            let key = |i: usize| tune.sweep[code][i].at10 + tune.sweep[code][i].mrr;
            key(a).total_cmp(&key(b))
        })
        .unwrap();
    for (i, weight) in SWEEP.iter().enumerate() {
        let cell = |s: &Scores| {
            let n = s.n.max(1) as f64;
            format!("{:.3} / {:.3}", s.at10 / n, s.mrr / n)
        };
        let mark = if i == best && tune.sweep[code][i].n > 0 {
            " (best on tune)"
        } else {
            ""
        };
        let used = if (weight - CODE_SEMANTIC_WEIGHT).abs() < 1e-9 {
            " ← shipped"
        } else {
            ""
        };
        sweep_table.push_str(&format!(
            "| {weight}{mark}{used} | {} | {} | {} | {} |\n",
            cell(&tune.sweep[code][i]),
            cell(&report.sweep[code][i]),
            cell(&tune.sweep[0][i]),
            cell(&report.sweep[0][i]),
        ));
    }
    let mut latencies_sorted = latencies.clone();
    latencies_sorted.sort();
    let p95 = latencies_sorted[(latencies_sorted.len() * 95 / 100).min(latencies_sorted.len() - 1)];
    let ratio = syntax_time.as_secs_f64() / window_time.as_secs_f64();
    let hybrid = &report.modes[code][2];
    let others: Vec<String> = splits
        .iter()
        .filter_map(|(s, scores)| match s {
            Split::Other(name) => Some(format!(
                "{name} recall@10 ≥ 0.75 ({})",
                verdict(scores.modes[code][2].at10 / scores.modes[code][2].n.max(1) as f64, 0.75)
            )),
            _ => None,
        })
        .collect();
    let mut per_set_header = String::from("| code base | files | queries | documented functions |");
    for (label, model) in &models {
        per_set_header.push_str(&format!(" hybrid, {label} `{model}` |"));
    }
    per_set_header.push_str(" peer | MRR@10, code model |\n|---|---|---|---|");
    per_set_header.push_str(&"---|".repeat(models.len() + 2));
    let chunk_lines = splits
        .iter()
        .map(|(split, s)| {
            let (lines, count) = s.chunk_lines;
            format!("{} {:.1}", split_name(*split), lines as f64 / count.max(1) as f64)
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut loss_table = String::from(
        "| set | model | model alone recall@10 / MRR@10 | product, semantic recall@10 | semantic ÷ alone | product, hybrid recall@10 |",
    );
    for cause in loss::Cause::ALL {
        loss_table.push_str(&format!(" lost: {} |", cause.label()));
    }
    loss_table.push_str(" found by the product only | fusion lost / won |\n|---|---|---|---|---|---|");
    loss_table.push_str(&"---|".repeat(loss::Cause::ALL.len() + 2));
    loss_table.push('\n');
    for (split, scores) in &splits {
        for (m, (_, model)) in models.iter().enumerate() {
            let l = &scores.loss[m];
            let n = l.queries.max(1) as f64;
            let causes: Vec<String> = l.causes.iter().map(usize::to_string).collect();
            loss_table.push_str(&format!(
                "| {} | `{model}` | {:.3} / {:.3} | {:.3} | {:.2} | {:.3} | {} | {} | {} / {} |\n",
                split_name(*split),
                l.alone as f64 / n,
                l.alone_mrr / n,
                l.semantic as f64 / n,
                l.semantic as f64 / l.alone.max(1) as f64,
                l.hybrid as f64 / n,
                causes.join(" | "),
                l.semantic_only,
                l.lost_in_fusion,
                l.won_in_fusion,
            ));
        }
    }
    let upgrade_line = match models.iter().find(|(label, _)| *label == EARLIER) {
        Some((_, earlier)) if upgrade.1 > 0 => format!(
            " Upgrading: the report sets indexed with `{earlier}` (as an older `zblade init` named it), then indexed \
             again by this zblade, re-embed {} code chunks with `{}` in {:.1} s ({:.0} chunks/s).",
            upgrade.1,
            models[code].1,
            upgrade.0.as_secs_f64(),
            upgrade.1 as f64 / upgrade.0.as_secs_f64()
        ),
        _ => String::new(),
    };
    let body = format!(
        "CodeSearchNet recipe: each documented function's documentation (first paragraph) is the query; documentation \
         is blanked in the indexed sources; a hit is a result overlapping the function. Rust crates from the cargo \
         registry, click (Python) from the setup's environment, commander (JavaScript) from the UI's node_modules \
         ({files} files, {lines} lines); each is its own project. No training pair of the code model came from any of \
         them. Weights were chosen on the tune crates only.\n\n{table}\n\
         Per code base (hybrid recall@10 of each model, the peer; MRR@10 of the code model):\n\n\
         {per_set_header}\n{}\n\n\
         The pipeline's loss: the model alone ranks every function of the code base (documented or not) by its own full text \
         (`path: symbol` and its lines, as if it were a chunk of its own; semantic only, the same queries), beside \
         `zblade search --kind code` (the product). A function the model alone has in its top ten and the product's \
         semantic search does not is put down to the first cause that holds. Mean chunk lines: {chunk_lines}.\n\n{loss_table}\n\
         Code fusion (relative score fusion, semantic weight), on the same candidate lists:\n\n{sweep_table}\n\
         Indexing the report sets (chunk, keyword index, embed every chunk with the code model), same run: syntax chunks \
         {:.1} s ({syntax_chunks} chunks), line windows {:.1} s ({window_chunks} chunks): **ratio {ratio:.2}** (target ≤ 1.3). \
         The syntax chunks with the conversation model instead: {:.1} s, so the code model indexes at **{:.2}×** its \
         chunks/s (target ≥ 0.9). \
         Hybrid code search p95 over these queries (code model): {:.1} ms.{upgrade_line}\n\n\
         Targets, report crates, hybrid with the code model: recall@10 ≥ 0.85 ({}), MRR@10 ≥ 0.60 ({}); semantic \
         search through the product ≥ 0.95 × the model alone ({}); {}.\n",
        per_set_rows.join("\n"),
        syntax_time.as_secs_f64(),
        window_time.as_secs_f64(),
        conversation_model_time.as_secs_f64(),
        conversation_model_time.as_secs_f64() / syntax_time.as_secs_f64(),
        p95.as_secs_f64() * 1000.0,
        verdict(hybrid.at10 / hybrid.n.max(1) as f64, 0.85),
        verdict(hybrid.mrr / hybrid.n.max(1) as f64, 0.60),
        verdict(
            report.loss[code].semantic as f64 / report.loss[code].alone.max(1) as f64,
            0.95
        ),
        others.join("; "),
    );
    println!("{body}");
    if full && !tune_only {
        write_section(
            "code-search",
            "Code search (CodeSearchNet recipe on code nobody here wrote)",
            "code_search",
            &body,
        );
    } else {
        assert!(report.peer.n > 0 || tune.peer.n > 0, "queries were asked");
    }
}

fn split_name(split: Split) -> &'static str {
    match split {
        Split::Tune => "tune",
        Split::Report => "report",
        Split::Other(name) => name,
    }
}
