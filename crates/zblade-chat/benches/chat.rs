//! `zblade chat`'s overhead on a turn (issue "Chat with the project's memory"): from Enter to
//! the request leaving for the model, less the turn's own memory assembly (target p95 ≤
//! 10 ms), next to the memory assembly alone (`Project::context`
//! with the same query on the same project, in the same run; the two take turns going first,
//! since the second finds the query's pages in cache).
//! The model is a loopback HTTP server written here that stamps the moment a request's first
//! byte arrives and answers with two tokens at once, so nothing but zblade is measured.
//!
//! `cargo bench --workspace --bench chat` writes the "chat" section of docs/BENCHMARKS.md
//! (`ZBLADE_BENCH_CHAT_CONVERSATIONS` sets the project size, default 2,000 conversations of 12
//! messages); under `cargo test` it runs a small smoke version and writes nothing.

#[path = "../../zblade-engine/benches/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::text::TextGen;
use common::{Stats, full_run, write_section};
use zblade_chat::{Chat, Endpoint, Model, TurnOptions};
use zblade_engine::{ContextRequest, Project};

/// A model server on loopback: for each request, sends the arrival time of its first byte on
/// `arrivals`, then answers with a two-token event stream.
fn model_server(arrivals: mpsc::Sender<Instant>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 64 * 1024];
            let mut first = None;
            // Headers, then as many body bytes as content-length says.
            loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                first.get_or_insert_with(Instant::now);
                request.extend_from_slice(&buf[..n]);
                if let Some(end) = find(&request, b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            if let Some(at) = first {
                let _ = arrivals.send(at);
            }
            let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n\
                        data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test` asks benches for their tests first
    }
    let full = full_run();
    let conversations: usize = std::env::var("ZBLADE_BENCH_CHAT_CONVERSATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 2_000 } else { 20 });
    let turns = if full { 60 } else { 3 };

    let dir = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(dir.path()).unwrap();
    let mut text = TextGen::new(27);
    let batch: Vec<(zblade_core::Conversation, String)> = (0..conversations)
        .map(|i| {
            (
                serde_json::from_str(&text.conversation(i, 12)).unwrap(),
                format!("c{i}.json"),
            )
        })
        .collect();
    project.add_conversations(batch).unwrap();

    let (sender, arrivals) = mpsc::channel();
    let endpoint = Model::Remote(Endpoint {
        base_url: model_server(sender),
        model: "bench".into(),
        api_key: None,
        api: zblade_chat::Api::ChatCompletions,
    });
    let options = TurnOptions {
        tools: true,
        ..TurnOptions::default()
    };
    let mut chat = Chat::start();
    let (mut leave, mut assemble, mut overhead) = (Vec::new(), Vec::new(), Vec::new());
    for turn in 0..turns + 2 {
        let query = text.query();
        // The assembly alone, as the same turn's first step runs it.
        let request = ContextRequest {
            query: query.clone(),
            budget: Some(options.memory_budget(&project)),
            conversation: None,
            format: Default::default(),
            tier: options.tier,
            mode: None,
            exclude_conversation: Some(chat.conversation().to_string()),
            min_relevance: None,
        };
        let assemble_alone = |project: &mut Project| {
            let started = Instant::now();
            project.context(&request).unwrap();
            started.elapsed()
        };
        // Whichever runs second finds the query's pages in cache: they take turns going first.
        let first = (turn % 2 == 0).then(|| assemble_alone(&mut project));
        // Enter: prepare (assembly + request) and send, until the server has the first byte.
        let enter = Instant::now();
        let prepared = chat.prepare(&mut project, &endpoint, &query, options).unwrap();
        let assembly = prepared.assembly;
        let sent = chat
            .send(
                &mut project,
                &endpoint,
                prepared,
                &mut |_: &str| {},
                &AtomicBool::new(false),
            )
            .unwrap();
        assert_eq!(sent.text, "ok");
        let arrived = arrivals.recv_timeout(Duration::from_secs(10)).unwrap();
        let alone = first.unwrap_or_else(|| assemble_alone(&mut project));
        // The first two turns warm caches (and the connection pool) up; they are not counted.
        if turn >= 2 {
            leave.push(arrived - enter);
            overhead.push((arrived - enter).saturating_sub(assembly));
            assemble.push(alone);
        }
    }
    let leave_stats = Stats::of(&mut leave);
    let assemble_stats = Stats::of(&mut assemble);
    let overhead_stats = Stats::of(&mut overhead);
    let overhead_ms = overhead_stats.p95.as_secs_f64() * 1000.0;
    eprintln!(
        "Enter → request leaves: {leave_stats}; assembly alone: {assemble_stats}; beyond the turn's own assembly: {overhead_stats}"
    );
    if full {
        assert!(overhead_ms <= 10.0, "p95 overhead {overhead_ms:.2} ms (target ≤ 10)");
        let body = format!(
            "{conversations} generated conversations of 12 messages; {turns} turns of one chat (after 2 warm-up turns), each with a generated query, \
             tools offered, the default budget and tier. The model is a loopback server written in the benchmark that stamps a request's first byte.\n\n\
             | measure | p50 / p95 / p99 |\n|---|---|\n\
             | `Project::context` alone, same query, same run (taking turns with the chat to go first) | {assemble_stats} |\n\
             | Enter → the request's first byte at the model (`Chat::prepare` + `Chat::send`) | {leave_stats} |\n\
             | **the same, minus that turn's own memory assembly** (target p95 ≤ 10 ms) | **{overhead_stats}** |\n"
        );
        write_section("chat", "Chat: from Enter to the model", "chat", &body);
    }
}
