//! How long packing alone takes (rerank, token counting, rendering) for a context assembly's
//! worth of candidates: 50 retrieved texts of 100–1,500 tokens, 20 recent turns and the
//! instructions, into 8,000 tokens. The end-to-end number (search included, 100k chunks) is
//! the engine's `semantic` benchmark; this one isolates the part this crate owns.
//!
//! `cargo bench --workspace --bench pack`

use std::time::Instant;

use chrono::{Duration, Utc};
use zblade_context::{Candidate, Cl100k, Extractive, Format, Item, PackOptions, Source, Tier, pack};

/// The candidates of one assembly; `round` makes every text new, so no count is remembered.
fn candidates(round: usize) -> Vec<Candidate> {
    let now = Utc::now();
    let mut out = vec![Candidate {
        key: "instructions".into(),
        cid: "instructions".into(),
        source: Source::Instructions,
        item: Item::Instructions,
        text: "Use British spelling. Run `cargo test` before committing. Prefer small modules.".into(),
        time: None,
        retrieval: 0.0,
        author: None,
        standing: None,
    }];
    let sentence = |i: usize, j: usize| {
        format!(
            "Turn {i}.{j}: the refresh handler in src/auth/refresh_{i}.rs retries {j} times & logs <warn> after {} ms. ",
            i * 37 + j + round * 1000
        )
    };
    for i in 0..70 {
        let sentences = if i < 20 { 4 } else { 6 + (i * 13) % 60 };
        let text: String = (0..sentences).map(|j| sentence(i, j)).collect();
        let (source, conversation) = if i < 20 {
            (Source::Recent, "conv_active".to_string())
        } else {
            (Source::Retrieved, format!("conv_{}", i % 9))
        };
        out.push(Candidate {
            key: format!("{conversation}/msg_{i}"),
            cid: format!("cid_{i}"),
            source,
            item: Item::Message {
                conversation: conversation.clone(),
                title: format!("Title of {conversation}"),
                message: format!("msg_{i}"),
                role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
            },
            text,
            time: Some(now - Duration::minutes(i as i64 * 90)),
            retrieval: 1.0 - i as f64 / 100.0,
            author: None,
            standing: None,
        });
    }
    out
}

fn options() -> PackOptions<'static> {
    PackOptions {
        budget: 8_000,
        format: Format::Xml,
        tier: Tier::Balanced,
        query: "refresh handler retries",
        now: Utc::now(),
        active_conversation: Some("conv_active"),
        weights: Default::default(),
        gate: None,
    }
}

fn percentiles(times: &mut [f64]) -> String {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    format!("p50 {:.2} ms, p95 {:.2} ms", at(0.5), at(0.95))
}

fn main() {
    let counter = Cl100k::new();
    let tiktoken = tiktoken_rs::cl100k_base().unwrap();
    let fast = bpe_openai::cl100k_base();
    // `cargo bench` passes --bench; under `cargo test` this is a quick smoke run.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        40
    } else {
        2
    };
    // Cold: every text is new to the process (a first assembly, or a one-shot CLI call).
    let (mut cold, mut bare, mut bare_fast, mut tokens, mut packed) = (Vec::new(), Vec::new(), Vec::new(), 0, 0);
    for round in 0..rounds {
        let input = candidates(round);
        let started = Instant::now();
        tokens = input
            .iter()
            .map(|c| tiktoken.encode_ordinary(&c.text).len())
            .sum::<usize>();
        bare.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let fast_tokens = input.iter().map(|c| fast.count(&c.text)).sum::<usize>();
        bare_fast.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(fast_tokens, tokens, "bpe-openai and tiktoken disagree");
        let input = candidates(round + rounds);
        let started = Instant::now();
        packed = pack(input, &options(), &counter, &Extractive).unwrap().tokens;
        cold.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    // Warm: the same memory packed again (a server or app answering the next prompt).
    let input = candidates(0);
    let mut warm = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        pack(input.clone(), &options(), &counter, &Extractive).unwrap();
        warm.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    println!("pack: 71 candidates ({tokens} cl100k tokens) into 8,000 → {packed} tokens");
    println!("  cold (texts new to the process): {}", percentiles(&mut cold));
    println!("  warm (the same texts again):     {}", percentiles(&mut warm));
    println!(
        "  tiktoken-rs alone, each text counted once: {}",
        percentiles(&mut bare)
    );
    println!(
        "  bpe-openai alone (what zblade counts with), each text once: {}",
        percentiles(&mut bare_fast)
    );
}
