//! Compressor throughput (issue 5): prompt and generation tokens per second through zblade's
//! wrapper (`zblade_llm::Compressor`: channel, worker thread, tokenizing, sampling,
//! detokenizing, cancellation checks), next to llama.cpp's own counters (`llama_perf_context`)
//! for the same jobs in the same run. The ratio is what the wrapper keeps of llama.cpp's speed.
//!
//! The model is `$ZBLADE_BENCH_GGUF` when set (e.g. a real Qwen2.5-0.5B-Instruct Q4_K_M), else
//! a random-weight llama of ~38M parameters that `scripts/models/build_tiny_gguf.py --size
//! bench` writes (no network here). Under `cargo test` it runs a smoke version on the tiny test
//! model and writes nothing.
//!
//! `cargo bench --workspace --bench compressor`

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{full_run, write_section};
use zblade_llm::{Compressor, Generation, Options, Request, jobs};

fn bench_model(full: bool) -> PathBuf {
    if let Some(path) = std::env::var_os("ZBLADE_BENCH_GGUF") {
        return PathBuf::from(path);
    }
    let test = zblade_llm::test_model();
    if !full {
        return test;
    }
    let path = test.with_file_name("bench-llama.gguf");
    if !path.exists() {
        let python = std::env::var("ZBLADE_PYTHON").expect("ZBLADE_PYTHON is not set: source scripts/env.sh");
        let script = common::report::manifest_dir().join("../../scripts/models/build_tiny_gguf.py");
        let status = std::process::Command::new(python)
            .arg(&script)
            .arg(&path)
            .args(["--size", "bench"])
            .status()
            .expect("the model builder runs");
        assert!(status.success(), "building the benchmark model failed");
    }
    path
}

/// Tokens per second of a count over milliseconds.
fn rate(tokens: f64, ms: f64) -> f64 {
    if ms > 0.0 { tokens * 1000.0 / ms } else { 0.0 }
}

struct Totals {
    prompt_tokens: f64,
    prompt_ms: f64,
    generated: f64,
    generation_ms: f64,
    llama_prompt_tokens: f64,
    llama_prompt_ms: f64,
    llama_generated: f64,
    llama_generation_ms: f64,
}

impl Totals {
    fn of(runs: &[Generation]) -> Totals {
        let sum = |f: &dyn Fn(&Generation) -> f64| runs.iter().map(f).sum::<f64>();
        Totals {
            prompt_tokens: sum(&|g| g.prompt_tokens as f64),
            prompt_ms: sum(&|g| g.prompt_ms),
            // Generation speed compares decoding steps: llama.cpp counts the tokens it
            // decoded, which is every generated token but the last.
            generated: sum(&|g| g.llama.generated_tokens as f64),
            generation_ms: sum(&|g| g.generation_ms),
            llama_prompt_tokens: sum(&|g| g.llama.prompt_tokens as f64),
            llama_prompt_ms: sum(&|g| g.llama.prompt_ms),
            llama_generated: sum(&|g| g.llama.generated_tokens as f64),
            llama_generation_ms: sum(&|g| g.llama.generation_ms),
        }
    }
}

fn main() {
    let full = full_run();
    let path = bench_model(full);
    let compressor = Compressor::load(&path, &Options::default()).expect("the benchmark model loads");
    let info = compressor.info().clone();
    // About 2,700 prompt tokens with the byte-level test vocabulary (fewer with a real one).
    let material: String = (0..if full { 20 } else { 6 })
        .map(|i| {
            format!(
                "assistant: We decided to keep sessions in SQLite (src/session/store_{i}.rs) with a TTL of {} s. ",
                3600 + i
            )
        })
        .collect();
    let (rounds, generate) = if full { (6, 128) } else { (2, 16) };
    let mut plain = Vec::new();
    for round in 0..rounds {
        let request = Request {
            // Greedy decoding: the same work every round.
            ..Request::new(
                "Summarise the conversation.",
                format!("{material}\nround {round}"),
                generate,
            )
        };
        let generation = compressor.generate(request).expect("generation runs");
        if round > 0 || !full {
            plain.push(generation); // the first full round warms caches and is left out
        }
    }
    let mut grammar = Vec::new();
    for round in 0..rounds.min(3) {
        // The grammar's longest answer must fit the context next to the prompt.
        let short: String = material.chars().take(1_500).collect();
        let mut request = jobs::moments_request(&format!("{short}\nround {round}"), Duration::from_secs(300));
        request.temperature = 1.0;
        request.seed = round as u32;
        grammar.push(compressor.generate(request).expect("generation runs"));
    }

    let t = Totals::of(&plain);
    let ours_prompt = rate(t.prompt_tokens, t.prompt_ms);
    let llama_prompt = rate(t.llama_prompt_tokens, t.llama_prompt_ms);
    let ours_gen = rate(t.generated, t.generation_ms);
    let llama_gen = rate(t.llama_generated, t.llama_generation_ms);
    let g = Totals::of(&grammar);
    let grammar_gen = rate(g.generated, g.generation_ms);
    let grammar_llama = rate(g.llama_generated, g.llama_generation_ms);
    let report = format!(
        "Model: {} ({} parameters, {:.1} MB, {}), context {} tokens, CPU threads: all cores. \
         {} greedy jobs of {:.0} prompt tokens and {generate} generated tokens each (a warm-up job first, \
         not counted).\n\n\
         | | zblade's wrapper (wall clock) | llama.cpp's own counters | ratio (target ≥ 0.9) |\n\
         |---|---|---|---|\n\
         | Prompt evaluation | {ours_prompt:.1} tokens/s | {llama_prompt:.1} tokens/s | {:.3} |\n\
         | Generation | {ours_gen:.1} tokens/s | {llama_gen:.1} tokens/s | {:.3} |\n\
         | Generation under the moments grammar ({} jobs, {:.0} tokens) | {grammar_gen:.1} tokens/s | {grammar_llama:.1} tokens/s | {:.3} |\n\n\
         The wrapper's clock covers everything between submitting a job and its result: tokenizing, the \
         channel to the worker thread, batching, sampling, detokenizing and the cancellation checks; \
         llama.cpp's counters cover evaluation alone. Grammar-constrained sampling (the grammar filters \
         every candidate token) runs outside llama.cpp's evaluation counters, so its cost shows in the \
         wrapper's column only; that row is reported, not targeted.\n",
        info.name,
        info.parameters,
        info.size_bytes as f64 / 1e6,
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        info.context_tokens,
        plain.len(),
        t.prompt_tokens / plain.len() as f64,
        ours_prompt / llama_prompt,
        ours_gen / llama_gen,
        grammar.len(),
        g.generated,
        grammar_gen / grammar_llama,
    );
    println!("{report}");
    assert!(ours_prompt > 0.0 && ours_gen > 0.0 && llama_prompt > 0.0 && llama_gen > 0.0);
    if full {
        write_section("compressor", "Compressor throughput", "compressor", &report);
    }
}
