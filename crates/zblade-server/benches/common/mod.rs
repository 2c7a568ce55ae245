//! What the sync server's benchmarks (`load`, `team_load`, `passage_search`) share: the
//! conversation the load benchmarks upload, percentiles, and a fresh PostgreSQL database.
//! Docs/BENCHMARKS.md is written by the engine's `benches/common/report.rs`, included by path.

// Each benchmark compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::time::Duration;

use zblade_server::auth::new_token;

/// A conversation artifact of `turns` messages (~200 bytes each) for project `project`.
pub fn conversation(id: &str, project: &str, n: usize, turns: usize) -> String {
    let messages: Vec<serde_json::Value> = (0..turns)
        .map(|i| {
            serde_json::json!({
                "id": format!("msg_{i}"),
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("Turn {i} of conversation {n}: the gateway caches tokens for {} seconds and retries {} times", n % 97, i + n % 5)
            })
        })
        .collect();
    serde_json::json!({
        "version": "1.0", "conversation_id": id, "project_id": project,
        "title": format!("Load {n}"), "messages": messages,
        "metadata": {"total_messages": turns, "total_tokens": 0, "models_used": [], "tags": ["load"]}
    })
    .to_string()
}

/// The `p` quantile of sorted latencies, in milliseconds.
pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// A new, empty database on the PostgreSQL server of `admin` (a URL ending in `/DATABASE`);
/// its URL.
pub fn fresh_postgres(admin: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (_, name) = new_token();
    let name = format!(
        "zbt_bench_{}",
        name.trim_start_matches("zbt_").get(..12).unwrap_or("x").to_lowercase()
    );
    runtime.block_on(async {
        let (client, conn) = tokio_postgres::connect(admin, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    });
    format!("{}/{name}", &admin[..admin.rfind('/').unwrap()])
}
