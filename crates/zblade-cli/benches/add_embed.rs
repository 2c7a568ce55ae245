//! "Memory is searchable when it is added" (issue 57), measured through the real `zblade`
//! binary on a project whose memory is embedded:
//! - `zblade add conversation` of one new conversation, process start to exit, with the model
//!   installed (the command embeds what it wrote) and without one (nothing to embed): what
//!   embedding at add time costs, as a ratio in the same run;
//! - whether a `--mode semantic` search run right after each add finds the new turn (asked in
//!   other words, within its conversation: semantic search sees only what is embedded) and
//!   says nothing is pending (target: every time);
//! - `zblade status` (which counts the pending texts).
//!
//! `cargo bench --workspace --bench add_embed` writes the "add-embed" section of
//! docs/BENCHMARKS.md (`ZBLADE_BENCH_ADD_CONVERSATIONS` sets the project size, default 2,000
//! conversations); under `cargo test` it runs a small smoke version and writes nothing.

#[path = "../../zblade-engine/benches/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::text::TextGen;
use common::{Stats, full_run, write_section};
use serde_json::{Value, json};

const ZBLADE: &str = env!("CARGO_BIN_EXE_zblade");

/// Runs `zblade` in `root` with `models` as the models folder; panics on failure.
fn zblade(root: &Path, models: &Path, args: &[&str]) -> (String, Duration) {
    let started = Instant::now();
    let out = Command::new(ZBLADE)
        .arg("--project")
        .arg(root)
        .args(args)
        .env("ZBLADE_MODELS_DIR", models)
        .env("ZBLADE_NO_AUTO_SERVE", "1")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "zblade {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let notes = String::from_utf8_lossy(&out.stderr);
    if !notes.trim().is_empty() {
        eprintln!("zblade {args:?}: {}", notes.trim());
    }
    (String::from_utf8_lossy(&out.stdout).into_owned(), took)
}

/// The models folder setup builds (the real all-MiniLM-L6-v2), or `None` when it is missing.
fn installed_models() -> Option<PathBuf> {
    let dir = std::env::var_os("ZBLADE_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/zblade/models")))?;
    dir.join("all-minilm-l6-v2/model.onnx").exists().then_some(dir)
}

/// The i-th new decision and a question that asks for it in other words.
fn decision(i: usize) -> (Value, String) {
    let topics = [
        (
            "the upload client waits two seconds, then four, before it retries a throttled request",
            "how long do we pause before sending a rejected file again",
        ),
        (
            "invoice totals are rounded per line and then summed, as the auditors asked",
            "in what order do we round money amounts on bills",
        ),
        (
            "session tokens are renewed thirty seconds before expiry, never after a 401",
            "when is the login credential refreshed",
        ),
        (
            "the nightly export skips archived tenants to keep the dump under an hour",
            "why are some customers missing from the overnight backup",
        ),
    ];
    let (said, asked) = topics[i % topics.len()];
    let conversation = json!({
        "title": format!("Decision {i}"),
        "messages": [
            {"role": "user", "content": format!("What did we settle on (case {i})?")},
            {"role": "assistant", "content": format!("We decided that {said}.")},
        ]
    });
    (conversation, asked.to_string())
}

fn main() {
    let Some(models) = installed_models() else {
        eprintln!("add_embed: no embedding model installed (run scripts/setup.sh); skipped");
        return;
    };
    let full = full_run();
    let conversations: usize = std::env::var("ZBLADE_BENCH_ADD_CONVERSATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 2000 } else { 20 });
    let adds = if full { 20 } else { 3 };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let no_models = tempfile::tempdir().unwrap();
    zblade(root, &models, &["init"]);

    // The project: generated conversations, added in batches and embedded once.
    let mut text = TextGen::new(57);
    let batch_dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for c in 0..conversations {
        let path = batch_dir.path().join(format!("c{c}.json"));
        std::fs::write(&path, text.conversation(c, 12)).unwrap();
        files.push(path.to_string_lossy().into_owned());
    }
    for chunk in files.chunks(200) {
        let mut args = vec!["add", "conversation"];
        args.extend(chunk.iter().map(String::as_str));
        zblade(root, no_models.path(), &args);
    }
    let (_, index_took) = zblade(root, &models, &["index"]);

    let mut with_model: Vec<Duration> = Vec::new();
    let mut without_model: Vec<Duration> = Vec::new();
    let mut found = 0;
    let mut pending_after = 0;
    for i in 0..adds {
        // Without a model first: its turns wait for a vector, which the add with the model
        // right after gives them too.
        for (models_dir, samples) in [
            (no_models.path(), &mut without_model),
            (models.as_path(), &mut with_model),
        ] {
            let (conversation, _) = decision(i);
            let path = batch_dir.path().join("new.json");
            // A new conversation each time (its id comes from its content).
            let mut conversation = conversation;
            let kind = if models_dir == models.as_path() { 0 } else { 1 };
            conversation["title"] = json!(format!("Decision {i} {kind}"));
            // Texts of their own, so the model's add has the other's to embed as well.
            conversation["messages"][0]["content"] = json!(format!("What did we settle on (case {i}, take {kind})?"));
            std::fs::write(&path, conversation.to_string()).unwrap();
            let (_, took) = zblade(root, models_dir, &["add", "conversation", path.to_str().unwrap()]);
            samples.push(took);
        }
        // Found by meaning at once: the turn added with the model, asked in other words, in
        // semantic mode within its conversation (semantic search sees only what is embedded).
        let (_, asked) = decision(i);
        let (listed, _) = zblade(root, &models, &["--json", "list", "conversations", "--limit", "5"]);
        let listed: Value = serde_json::from_str(&listed).unwrap();
        let id = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["title"] == format!("Decision {i} 0"))
            .map(|c| c["id"].as_str().unwrap().to_string())
            .expect("the conversation just added");
        let (out, _) = zblade(
            root,
            &models,
            &["--json", "search", "--mode", "semantic", "--conversation", &id, &asked],
        );
        let results: Value = serde_json::from_str(&out).unwrap();
        let hits = results["hits"].as_array().unwrap();
        found += usize::from(!hits.is_empty() && results["notice"].is_null());
        // The add without a model left its turns pending: the next add with one embeds them.
        let (status, _) = zblade(root, &models, &["--json", "status"]);
        let status: Value = serde_json::from_str(&status).unwrap();
        pending_after = status["pending_vectors"].as_u64().unwrap_or(u64::MAX) as usize;
    }
    let (_, status_took) = zblade(root, &models, &["status"]);
    if std::env::var_os("ZBLADE_BENCH_KEEP").is_some() {
        eprintln!("kept {}", root.display());
        std::mem::forget(dir);
        std::mem::forget(batch_dir);
    }
    let with_model = Stats::of(&mut with_model);
    let without_model = Stats::of(&mut without_model);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ratio = with_model.p50.as_secs_f64() / without_model.p50.as_secs_f64();
    let body = format!(
        "Project: {conversations} generated conversations of 12 messages, embedded by `zblade index` in {:.1} s; \
         {adds} additions of one new two-message conversation each way, through the `zblade` binary (a new process each).\n\n\
         | measure | result | target |\n|---|---|---|\n\
         | `zblade add conversation`, model installed (embeds what it wrote) p50 / p95 | {:.0} / {:.0} ms | — |\n\
         | `zblade add conversation`, no model (nothing embedded) p50 / p95 | {:.0} / {:.0} ms | — |\n\
         | embedding at add time, ratio of p50s | {ratio:.2}× | — |\n\
         | `--mode semantic` right after the add finds the new turn (by a paraphrase, within its conversation) | {found} of {adds} | every time |\n\
         | texts pending after the last add with a model (`zblade status`) | {pending_after} | 0 |\n\
         | `zblade status` (counts pending texts) | {:.0} ms | — |\n\n\
         The add without a model writes turns that wait for a vector; the next add with the model embeds them too, so \
         nothing stays pending. What the add with the model pays: loading the model, and one pass over every \
         message's text to find what changed since it was embedded (a hash per chunk, against the chunk catalog); \
         that pass grows with the project.\n",
        index_took.as_secs_f64(),
        ms(with_model.p50),
        ms(with_model.p95),
        ms(without_model.p50),
        ms(without_model.p95),
        status_took.as_secs_f64() * 1000.0,
    );
    println!("{body}");
    assert_eq!(
        pending_after, 0,
        "memory left without vectors after an add with the model"
    );
    if full {
        write_section("add-embed", "Memory searchable when added", "add_embed", &body);
    }
}
