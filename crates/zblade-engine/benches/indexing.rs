//! Indexing speed and memory (issue 24, item 3): the first `zblade index` of a real code base,
//! with the default model's int8 build and length-bucketed batches, next to what indexing cost
//! before — ONNX Runtime (through fastembed) embedding the same chunks with the fp32 model in
//! file order, batch 64 — in the same run.
//!
//! The code base is `regex-automata` from the cargo registry (the version in Cargo.lock, on
//! disk after any build): real, well-documented Rust that nobody here wrote. The int8 model is
//! made offline by `scripts/setup.sh` (`scripts/models/quantize_int8.py`).
//!
//! Reported: chunks/s of each (target ≥ 2.5× the fp32 baseline), wall time of the whole first
//! index (files, chunks, embeddings, vectors; target < 30 s for a 50k-line code base), peak
//! resident memory while indexing (target ≤ 400 MB), and how close int8 vectors stay to fp32
//! ones. Recall on LoCoMo with each model: `cargo bench --bench search_quality` with
//! `ZBLADE_BENCH_MODEL=all-minilm-l6-v2-int8`.
//!
//! `cargo bench --workspace --bench indexing` writes docs/BENCHMARKS.md; under `cargo test`
//! it indexes a few files and checks the int8 vectors against fp32 ones, writing nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use zblade_engine::Project;
use zblade_search::code;

mod common;
use common::{full_run, write_section};
use registry::{copy_code_base, registry_crate};
#[path = "common/fastembed_alone.rs"]
mod fastembed_alone;
#[path = "common/registry.rs"]
mod registry;

const FP32: &str = "all-minilm-l6-v2";
const INT8: &str = "all-minilm-l6-v2-int8";
const CODE_BASE: &str = "regex-automata";

fn main() {
    let full = full_run();
    let models = zblade_engine::models_dir();
    for model in [FP32, INT8] {
        if !models.join(model).join("model.onnx").is_file() {
            eprintln!(
                "{model} is not installed in {} (scripts/setup.sh builds it); skipped",
                models.display()
            );
            return;
        }
    }
    if let Err(e) = zblade_search::embed::load_onnx_runtime() {
        eprintln!("{e}; skipped");
        return;
    }
    let Some(source) = registry_crate(CODE_BASE) else {
        eprintln!("{CODE_BASE} is not in the cargo registry; skipped");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let files_limit = if full { usize::MAX } else { 4 };
    let (files, lines) = copy_code_base(&source, &work.path().join("code"), files_limit);
    let texts = chunk_texts(&work.path().join("code"));
    eprintln!(
        "{CODE_BASE}: {files} files, {lines} lines, {} distinct chunks",
        texts.len()
    );

    // zblade, int8 + buckets: the whole first index, with its peak memory.
    let root = work.path().join("code");
    Project::init(&root).unwrap();
    use_model(&root, INT8);
    let (int8_index, int8_peak, embedded) = first_index(&root);
    assert_eq!(embedded, texts.len(), "every chunk embedded once");

    // The same with the fp32 model (buckets alone), in a copy of the code base.
    let root32 = work.path().join("code32");
    copy_code_base(&source, &root32, files_limit);
    Project::init(&root32).unwrap();
    use_model(&root32, FP32);
    let (fp32_index, fp32_peak, _) = first_index(&root32);

    // Before: fastembed alone, fp32, the chunks in file order, batch 64.
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut fp32 = fastembed_alone::load(&models.join(FP32));
    let started = Instant::now();
    let fp32_vectors = fp32.embed(&refs, Some(64)).unwrap();
    let raw_fp32 = started.elapsed();
    let mut int8 = fastembed_alone::load(&models.join(INT8));
    let started = Instant::now();
    let int8_vectors = int8.embed(&refs, Some(64)).unwrap();
    let raw_int8 = started.elapsed();

    // How far int8 moves the vectors: cosine to the fp32 vector of the same chunk.
    let mut cosines: Vec<f64> = fp32_vectors
        .iter()
        .zip(&int8_vectors)
        .map(|(a, b)| cosine(a, b))
        .collect();
    cosines.sort_by(f64::total_cmp);
    let mean = cosines.iter().sum::<f64>() / cosines.len() as f64;
    let worst = cosines[0];
    assert!(worst > 0.9, "an int8 vector drifted from fp32: cosine {worst:.3}");

    let rate = |d: Duration| texts.len() as f64 / d.as_secs_f64();
    let speedup = common::sane("indexing speedup", rate(int8_index) / rate(raw_fp32));
    eprintln!(
        "first index: int8 {:.1} s ({:.1} chunks/s, peak {} MB), fp32 {:.1} s ({:.1} chunks/s, peak {} MB); \
         fastembed alone fp32 {:.1} chunks/s, int8 {:.1} chunks/s; speedup {speedup:.2}x; cosine int8/fp32 mean {mean:.4}, worst {worst:.4}",
        int8_index.as_secs_f64(),
        rate(int8_index),
        int8_peak / 1_000_000,
        fp32_index.as_secs_f64(),
        rate(fp32_index),
        fp32_peak / 1_000_000,
        rate(raw_fp32),
        rate(raw_int8)
    );
    if !full {
        return;
    }
    let body = format!(
        "The first index of `{CODE_BASE}` (the cargo registry's copy, {files} files, {lines} lines, {} distinct chunks) from an empty \
         project: files, chunks, embeddings, vector writes, compaction. *Before* is what zblade's indexing amounted to until now: \
         ONNX Runtime through fastembed with the fp32 model over the chunks in file order, batch 64 (zblade ran at 0.98–1.00× of it).\n\n\
         | measure | result | target |\n|---|---|---|\n\
         | before: fastembed alone, fp32, file order | {:.1} chunks/s | – |\n\
         | fastembed alone, int8, file order | {:.1} chunks/s | – |\n\
         | `zblade index`, fp32 model, length-bucketed batches | {:.1} chunks/s ({:.1} s) | – |\n\
         | **`zblade index`, int8 model, length-bucketed batches (the default)** | **{:.1} chunks/s ({:.1} s)** | – |\n\
         | speedup over before, same chunks, same run | **{speedup:.2}×** | ≥ 2.5× |\n\
         | first index of the code base, int8 | {:.1} s for {lines} lines ({:.1} s per 50k lines) | < 30 s for 50k lines |\n\
         | peak resident memory during the index (int8 / fp32) | {} MB / {} MB | ≤ 400 MB |\n\
         | cosine of int8 to fp32 vectors, same chunk: mean / worst | {mean:.4} / {worst:.4} | – |\n",
        texts.len(),
        rate(raw_fp32),
        rate(raw_int8),
        rate(fp32_index),
        fp32_index.as_secs_f64(),
        rate(int8_index),
        int8_index.as_secs_f64(),
        int8_index.as_secs_f64(),
        int8_index.as_secs_f64() * 50_000.0 / lines as f64,
        int8_peak / 1_000_000,
        fp32_peak / 1_000_000,
    );
    write_section("indexing-speed", "Indexing speed and memory", "indexing", &body);
}

/// The distinct chunk texts zblade embeds for the code base, in file order.
fn chunk_texts(root: &Path) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut texts = Vec::new();
    for relative in code::project_files(root) {
        let path = root.join(&relative);
        let Ok(text) = code::decode(&path, &std::fs::read(&path).unwrap()) else {
            continue;
        };
        // The chunks zblade makes (cut along the syntax), embedded as zblade embeds them.
        let rel = relative.to_string_lossy().replace('\\', "/");
        let lines: Vec<&str> = text.lines().collect();
        for chunk in zblade_engine::chunk_rows(&rel, &text) {
            if seen.insert(chunk.vector_cid) {
                let body = lines[chunk.start_line as usize - 1..chunk.end_line as usize].join("\n");
                texts.push(zblade_syntax::embedding_text(&rel, chunk.symbol.as_deref(), &body));
            }
        }
    }
    texts
}

fn use_model(root: &Path, model: &str) {
    let path = root.join(".zblade/config/settings.json");
    let mut settings = zblade_core::Settings::load(&path).unwrap();
    settings.search.embedding_model = model.into();
    settings.save(&path).unwrap();
}

/// Runs the first index of the project at `root`; returns its wall time, the peak resident
/// memory of this process during it, and how many chunks were embedded.
fn first_index(root: &Path) -> (Duration, u64, usize) {
    reset_peak_memory();
    let started = Instant::now();
    let mut project = Project::open(root).unwrap();
    let report = project.update_search_index(&mut |_, _, _| {}).unwrap();
    let elapsed = started.elapsed();
    let embedded = report.semantic.expect("the model loaded").embedded;
    (elapsed, peak_memory(), embedded)
}

/// Resets the kernel's peak-RSS counter of this process (Linux: `echo 5 > clear_refs`).
fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident memory of this process since the last reset, in bytes (VmHWM).
fn peak_memory() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64) * (*y as f64)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}
