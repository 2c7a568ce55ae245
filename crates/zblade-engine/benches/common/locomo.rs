//! LoCoMo conversations as zblade projects, for the benchmarks that ask its questions
//! (search_quality, relevance_gate): one conversation per session, one message per turn led by
//! its speaker's name, message ids from the turns' `dia_id`s so evidence can be checked.
//! Kept out of `common/mod.rs`, which other crates' benchmarks include.

// Each benchmark compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::Value;
use zblade_engine::Project;

/// Where the LoCoMo files are: `$ZBLADE_LOCOMO_DIR`, else `../shared/data/locomo` next to the
/// repository (the dataset's licence keeps it out of the repository itself).
pub fn locomo_dir() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("ZBLADE_LOCOMO_DIR").map(PathBuf::from),
        Some(crate::common::report::manifest_dir().join("../../../shared/data/locomo")),
        Some(PathBuf::from("/work/shared/data/locomo")),
    ];
    candidates.into_iter().flatten().find(|dir| dir.is_dir())
}

/// The conversation files in `dir`, in name order.
pub fn conversation_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// `D1:3` → `D1_3`: message ids may not contain `:`.
pub fn message_id(dia_id: &str) -> String {
    dia_id.replace(':', "_")
}

/// What [`add_to_project`] added.
pub struct Loaded {
    /// Every turn's message id.
    pub turn_ids: HashSet<String>,
    /// Turns added.
    pub turns: usize,
    /// cl100k_base tokens of all turn texts.
    pub whole_tokens: usize,
}

/// Adds the first `max_sessions` sessions of the LoCoMo conversation `data` to `project`.
pub fn add_to_project(project: &mut Project, data: &Value, max_sessions: usize) -> Loaded {
    let speaker_a = data["speaker_a"].as_str().unwrap_or_default().to_string();
    let counter = zblade_context::Cl100k::new();
    let mut loaded = Loaded {
        turn_ids: HashSet::new(),
        turns: 0,
        whole_tokens: 0,
    };
    let mut batch = Vec::new();
    let mut session = 1;
    while session <= max_sessions
        && let Some(list) = data.get(format!("session_{session}")).and_then(Value::as_array)
    {
        let messages: Vec<Value> = list
            .iter()
            .map(|turn| {
                let speaker = turn["speaker"].as_str().unwrap_or_default();
                let mut text = format!("{speaker}: {}", turn["text"].as_str().unwrap_or_default());
                if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                    text.push_str(&format!(" [shares {caption}]"));
                }
                loaded.turns += 1;
                loaded.whole_tokens += zblade_context::TokenCounter::count(&counter, &text);
                let id = message_id(turn["dia_id"].as_str().unwrap());
                loaded.turn_ids.insert(id.clone());
                serde_json::json!({"id": id,
                    "role": if speaker == speaker_a { "user" } else { "assistant" }, "content": text})
            })
            .collect();
        let json = serde_json::json!({"conversation_id": format!("conv_s{session}"),
            "title": format!("Session {session}"), "messages": messages});
        batch.push((
            zblade_engine::parse_conversation(json.to_string().as_bytes(), "locomo").unwrap(),
            "locomo".to_string(),
        ));
        session += 1;
    }
    project.add_conversations(batch).unwrap();
    loaded
}

/// A question with the turns that hold its answer.
pub struct Question {
    /// What is asked.
    pub text: String,
    /// Message ids of the evidence turns.
    pub evidence: HashSet<String>,
}

/// The questions of `data` with labelled evidence among `turns` (all of them when a question's
/// evidence lies in sessions that were not loaded, it is left out).
pub fn questions(data: &Value, turns: &HashSet<String>) -> Vec<Question> {
    data["qa"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|q| {
            let evidence: HashSet<String> = q["evidence"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .map(message_id)
                .collect();
            let known = !evidence.is_empty() && evidence.iter().all(|id| turns.contains(id));
            known.then(|| Question {
                text: q["question"].as_str().unwrap_or_default().to_string(),
                evidence,
            })
        })
        .collect()
}

/// A small conversation in LoCoMo's format, for smoke runs on machines without the dataset:
/// three sessions, and questions whose evidence turns are known.
pub fn synthetic_locomo(dir: &std::path::Path) -> PathBuf {
    let topics = [
        (
            "pottery",
            "I started a pottery class and made a blue vase last weekend.",
        ),
        (
            "marathon",
            "I ran my first marathon in Boston and finished in four hours.",
        ),
        (
            "adoption",
            "We are adopting a puppy named Biscuit from the shelter next month.",
        ),
        (
            "guitar",
            "My guitar teacher says I should practise scales every morning.",
        ),
    ];
    let mut data = serde_json::json!({"speaker_a": "Ana", "speaker_b": "Ben", "qa": []});
    let mut qa = Vec::new();
    for session in 1..=3 {
        let mut turns = Vec::new();
        for (i, (topic, text)) in topics.iter().enumerate() {
            let id = format!("D{session}:{}", i + 1);
            let speaker = if i % 2 == 0 { "Ana" } else { "Ben" };
            turns.push(
                serde_json::json!({"speaker": speaker, "dia_id": id, "text": format!("{text} (session {session})")}),
            );
            if session == 2 {
                qa.push(serde_json::json!({"question": format!("What happened with the {topic}?"), "evidence": [id]}));
            }
        }
        data[format!("session_{session}")] = serde_json::Value::Array(turns);
    }
    data["qa"] = serde_json::Value::Array(qa);
    let path = dir.join("synthetic.json");
    std::fs::write(&path, data.to_string()).unwrap();
    path
}
