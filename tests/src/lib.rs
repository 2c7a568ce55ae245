//! Helpers for zblade's end-to-end journeys: fixture projects and the `zblade` binary.

use std::path::{Path, PathBuf};

/// The `zblade` binary built by the same `cargo test` run.
///
/// Cargo builds binaries for the integration tests of their own package only, so this finds it
/// next to the test executable (`target/<profile>/deps/…` → `target/<profile>/zblade`).
pub fn zblade_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let bin = profile_dir.join(format!("zblade{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: run the whole workspace (`cargo test --workspace`), which builds it",
        bin.display()
    );
    bin
}

/// A conversation in RFC-002 JSON about `topic`, with `messages` turns and a code reference.
pub fn conversation_json(id: &str, topic: &str, messages: usize) -> String {
    let turns: Vec<serde_json::Value> = (0..messages)
        .map(|i| {
            serde_json::json!({
                "id": format!("msg_{i}"),
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("Turn {i} about {topic}: how should the {topic} code handle retries and errors?"),
                "timestamp": format!("2026-01-17T14:{:02}:00Z", i % 60),
                "code_references": if i == 0 { serde_json::json!([{"file": "src/lib.rs", "lines": [1, 3]}]) } else { serde_json::json!([]) },
            })
        })
        .collect();
    serde_json::json!({"conversation_id": id, "title": format!("About {topic}"), "messages": turns}).to_string()
}
