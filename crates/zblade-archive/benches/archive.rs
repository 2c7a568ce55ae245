//! The archive's benchmark, against arlocal (a real local Arweave gateway) on loopback:
//!
//! 1. push of 10,000 conversations, next to the bare work in the same run: the same batches'
//!    bytes sealed with AES-256-GCM (ring) and POSTed as transactions to the same gateway, with
//!    no journal, vault, anchor, price or RSA signature (target: zblade ≥ 0.5× the bare rate);
//! 2. restore of 100,000 message chunks (2,000 conversations of 50 messages, in message packs
//!    as the engine writes them) from batches (seed target < 5 min) and from a snapshot (seed
//!    target < 30 s). Files only: rebuilding the index and embedding are measured by the
//!    engine's benchmarks (docs/BENCHMARKS.md, "semantic"), and reported there.
//!
//! `cargo bench -p zblade-archive --bench archive` writes docs/BENCHMARKS.md; under
//! `cargo test` it runs small and writes nothing.

#[path = "../../../tests/archive/arlocal.rs"]
mod arlocal;
#[path = "../../zblade-engine/benches/common/report.rs"]
mod report;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use zblade_archive::{Archive, BackendSpec, PushOptions, RestoreOptions, Retry, restore};

const PASS: &str = "benchmark passphrase, long enough";

fn http(port: u16, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let status = std::str::from_utf8(&answer[9..12]).unwrap().parse().unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    (status, answer[split + 4..].to_vec())
}

/// Words for generated text (deterministic).
fn text(seed: usize, words: usize) -> String {
    const WORDS: &[&str] = &[
        "retry", "token", "ledger", "index", "parser", "cache", "socket", "deploy", "schema", "review", "timeout",
        "branch", "merge", "vector", "budget", "compress",
    ];
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..words)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            WORDS[(x % WORDS.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A `.zblade/` with `conversations` manifests whose `messages` each live in packs of 64
/// conversations, laid out like the engine's.
fn project(root: &Path, conversations: usize, messages: usize) -> usize {
    let z = root.join(".zblade");
    std::fs::create_dir_all(z.join("artifacts/conversations")).unwrap();
    std::fs::create_dir_all(z.join("artifacts/messages/packs")).unwrap();
    std::fs::create_dir_all(z.join("config")).unwrap();
    std::fs::write(z.join("instructions.md"), "# Bench\n").unwrap();
    std::fs::write(z.join("config/settings.json"), "{}\n").unwrap();
    let mut files = 2;
    for start in (0..conversations).step_by(64) {
        let mut pack = String::new();
        for c in start..(start + 64).min(conversations) {
            let mut refs = Vec::new();
            for m in 0..messages {
                let line = format!(
                    "{{\"role\":\"{}\",\"content\":\"{}\"}}\n",
                    if m % 2 == 0 { "user" } else { "assistant" },
                    text(c * 1000 + m, 40)
                );
                refs.push(format!(
                    "{{\"id\":\"msg_{m}\",\"pack\":\"p{start}:{}:{}\"}}",
                    pack.len(),
                    line.len()
                ));
                pack.push_str(&line);
            }
            std::fs::write(
                z.join(format!("artifacts/conversations/conv_{c:06}.json")),
                format!(
                    "{{\"version\":\"2.0\",\"conversation_id\":\"conv_{c:06}\",\"title\":\"{}\",\"messages\":[{}]}}",
                    text(c, 6),
                    refs.join(",")
                ),
            )
            .unwrap();
            files += 1;
        }
        std::fs::write(z.join(format!("artifacts/messages/packs/p{start:06}.jsonl")), pack).unwrap();
        files += 1;
    }
    files
}

/// The bare work: the same files in the same batches, sealed with AES-256-GCM and POSTed.
fn bare_push(gateway: &arlocal::Arlocal, z: &Path, owner: &str) -> Duration {
    let files = zblade_archive::truth_files(z).unwrap();
    let mut batches: Vec<Vec<u8>> = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    let mut count = 0;
    for full in files.values() {
        let bytes = std::fs::read(full).unwrap();
        let alone = bytes.len() as u64 > zblade_archive::ALONE_OVER;
        if count > 0 && (alone || count >= zblade_archive::ITEMS_PER_BATCH) {
            batches.push(std::mem::take(&mut current));
            count = 0;
        }
        current.extend(bytes);
        count += 1;
    }
    batches.push(current);
    let anchor = String::from_utf8(gateway.get("/tx_anchor")).unwrap();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let started = Instant::now();
    for plain in batches {
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7u8; 32]).unwrap());
        let mut sealed = plain;
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key([1u8; 12]), Aad::empty(), &mut sealed)
            .unwrap();
        let signature: Vec<u8> = (0..512).map(|i| (i * 31 + sealed.len()) as u8).collect();
        let id = b64.encode(ring::digest::digest(&ring::digest::SHA256, &signature));
        let tx = serde_json::json!({
            "format": 2, "id": id, "last_tx": anchor, "owner": owner, "tags": [], "target": "", "quantity": "0",
            "data": b64.encode(&sealed), "data_size": sealed.len().to_string(), "data_root": "", "reward": "0",
            "signature": b64.encode(&signature),
        });
        let (status, body) = http(gateway.port, "POST", "/tx", tx.to_string().as_bytes());
        assert!(status < 300, "bare POST: {status} {}", String::from_utf8_lossy(&body));
    }
    started.elapsed()
}

/// Under `cargo test`: the same push and restores, small, on a directory (no gateway), so
/// the benchmark's code cannot rot.
fn smoke() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("p");
    let files = project(&root, 40, 5);
    let spec = BackendSpec::Dir {
        path: tmp.path().join("backup"),
    };
    let mut archive = Archive::setup(&root.join(".zblade"), spec, None, None, PASS, Retry::default()).unwrap();
    let pushed = archive
        .push(&PushOptions { snapshot: true }, &mut |_, _, _| {})
        .unwrap();
    assert_eq!(pushed.files, files);
    let vault = tmp.path().join("backup/vault.json");
    for (into, use_snapshot) in [("r1", false), ("r2", true)] {
        let report = restore_from(&vault, &tmp.path().join(into), use_snapshot);
        assert_eq!(report.files, files);
    }
}

/// Restores from `vault` into `into`, which must go without a problem.
fn restore_from(vault: &Path, into: &Path, use_snapshot: bool) -> zblade_archive::RestoreReport {
    let options = RestoreOptions {
        vault: vault.to_path_buf(),
        into: into.to_path_buf(),
        passphrase: PASS.into(),
        gateway: None,
        wallet: None,
        use_snapshot,
        retry: Retry::default(),
    };
    let report = restore(&options, &mut |_, _, _| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    report
}

fn main() {
    if !report::full_run() {
        return smoke();
    }
    let (push_conversations, restore_conversations) = (10_000, 2_000);
    let gateway = arlocal::Arlocal::start();
    let tmp = tempfile::tempdir().unwrap();
    let (wallet, _) = arlocal::funded_wallet(&gateway, tmp.path());
    let url = format!("http://127.0.0.1:{}", gateway.port);
    let spec = BackendSpec::Arweave {
        gateway: url.clone(),
        owner: String::new(),
    };

    // 1. Push: 10,000 conversations with 4 messages each.
    let push_root = tmp.path().join("push");
    let items = project(&push_root, push_conversations, 4);
    let z = push_root.join(".zblade");
    let vault = tmp.path().join("push-vault.json");
    let mut archive = Archive::setup(
        &z,
        spec.clone(),
        Some(vault.clone()),
        Some(wallet.clone()),
        PASS,
        Retry::default(),
    )
    .unwrap();
    let started = Instant::now();
    let pushed = archive.push(&PushOptions::default(), &mut |_, _, _| {}).unwrap();
    let zblade_push = started.elapsed();
    assert_eq!(pushed.files, items);
    let owner = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([9u8; 512]);
    let bare = bare_push(&gateway, &z, &owner);
    let zblade_rate = items as f64 / zblade_push.as_secs_f64();
    let bare_rate = items as f64 / bare.as_secs_f64();

    // 2. Restore: 2,000 conversations × 50 messages = 100,000 chunks, from batches and from a
    //    snapshot.
    let restore_root = tmp.path().join("restore-src");
    project(&restore_root, restore_conversations, 50);
    let chunks = restore_conversations * 50;
    let rz = restore_root.join(".zblade");
    let rvault = tmp.path().join("restore-vault.json");
    let mut archive = Archive::setup(&rz, spec, Some(rvault.clone()), Some(wallet), PASS, Retry::default()).unwrap();
    archive
        .push(&PushOptions { snapshot: true }, &mut |_, _, _| {})
        .unwrap();
    gateway.mine();
    let from_batches = restore_from(&rvault, &tmp.path().join("r1"), false);
    let from_snapshot = restore_from(&rvault, &tmp.path().join("r2"), true);
    assert!(from_snapshot.snapshot.is_some());

    let body = format!(
        "Against arlocal 1.1.66 on loopback (a real Arweave gateway in Node: transactions, GraphQL, SQLite).\n\n\
         | measure | zblade | bare | ratio | target |\n|---|---|---|---|---|\n\
         | push of {items} files ({push_conversations} conversations + packs), items/s | {zblade_rate:.0} ({} batches, {:.1} s) | {bare_rate:.0} (AES-256-GCM + POST /tx, {:.1} s) | {:.2} | ≥ 0.5 |\n\
         | restore of {chunks} message chunks from {} batches | {:.1} s ({:.1} MB fetched) | | | < 300 s |\n\
         | restore of {chunks} chunks from a snapshot | {:.1} s | | | < 30 s |\n\n\
         zblade's push also signs each transaction (RSA-PSS, 4096-bit), asks the gateway for an anchor and a price, \
         and makes the vault and the journal durable (fsync) before each send. Restores here are files only: \
         the index rebuild and embedding of {chunks} chunks are the engine's (see the semantic and indexing sections).\n",
        pushed.batches,
        zblade_push.as_secs_f64(),
        bare.as_secs_f64(),
        zblade_rate / bare_rate,
        from_batches.batches,
        from_batches.elapsed_ms as f64 / 1000.0,
        from_batches.bytes as f64 / 1e6,
        from_snapshot.elapsed_ms as f64 / 1000.0,
    );
    println!("{body}");
    report::write_section("archive", "Archive: push and restore on arlocal", "archive", &body);
}
