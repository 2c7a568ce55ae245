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
//! `cargo bench --workspace --bench archive` writes docs/BENCHMARKS.md; under
//! `cargo test` it runs small and writes nothing.

#[path = "../../../tests/archive/arlocal.rs"]
mod arlocal;
#[path = "../../zblade-engine/benches/common/report.rs"]
mod report;

use std::path::Path;
use std::time::{Duration, Instant};

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use zblade_archive::{Archive, BackendSpec, PushOptions, RestoreOptions, Retry, restore};

const PASS: &str = "benchmark passphrase, long enough";

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

/// The bare work: the same files in the same batches, sealed with AES-256-GCM, made into a
/// signed transaction (arlocal checks signatures, so this is the least a gateway takes) and
/// POSTed, with one anchor and one price for the whole run.
fn bare_push(gateway: &arlocal::Arlocal, z: &Path, wallet: &Path) -> Duration {
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
    let wallet = zblade_archive::Wallet::load(wallet).unwrap();
    let anchor = String::from_utf8(gateway.get("/tx_anchor")).unwrap();
    let largest = batches.iter().map(Vec::len).max().unwrap_or(0) + 16;
    let reward = String::from_utf8(gateway.get(&format!("/price/{largest}"))).unwrap();
    // The same HTTP client zblade's backend uses (reqwest, keep-alive).
    let client = reqwest::blocking::Client::new();
    let url = format!("{}/tx", gateway.url());
    let started = Instant::now();
    for plain in batches {
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7u8; 32]).unwrap());
        let mut sealed = plain;
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key([1u8; 12]), Aad::empty(), &mut sealed)
            .unwrap();
        let tx =
            zblade_archive::backend::arweave_tx::sign(&wallet, &sealed, &[], anchor.trim(), reward.trim()).unwrap();
        let answer = client
            .post(&url)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&tx).unwrap())
            .send()
            .unwrap();
        assert!(answer.status().is_success(), "bare POST: {}", answer.status());
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
    let tmp = tempfile::tempdir().unwrap();
    // Each part runs on a fresh arlocal, one at a time: arlocal slows as its database grows
    // (a second run on one gateway would pay for the first), and two runs side by side
    // would share the machine's two cores.
    let fresh = |name: &str| {
        let gateway = arlocal::Arlocal::start();
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let (wallet, _) = arlocal::funded_wallet(&gateway, &dir);
        let spec = BackendSpec::Arweave {
            gateway: gateway.url(),
            owner: String::new(),
        };
        (gateway, wallet, spec, dir)
    };

    // 1. Push: 10,000 conversations with 4 messages each, by zblade, then the bare work.
    let push_root = tmp.path().join("push");
    let items = project(&push_root, push_conversations, 4);
    let z = push_root.join(".zblade");
    let (gateway, wallet, spec, dir) = fresh("zblade-push");
    let mut archive = Archive::setup(
        &z,
        spec,
        Some(dir.join("vault.json")),
        Some(wallet),
        PASS,
        Retry::default(),
    )
    .unwrap();
    let started = Instant::now();
    let pushed = archive.push(&PushOptions::default(), &mut |_, _, _| {}).unwrap();
    let zblade_push = started.elapsed();
    assert_eq!(pushed.files, items);
    drop(gateway);
    let (gateway, wallet, _, _) = fresh("bare-push");
    let bare = bare_push(&gateway, &z, &wallet);
    drop(gateway);
    let zblade_rate = items as f64 / zblade_push.as_secs_f64();
    let bare_rate = items as f64 / bare.as_secs_f64();

    // 2. Restore: 2,000 conversations × 50 messages = 100,000 chunks, from batches and from a
    //    snapshot.
    let restore_root = tmp.path().join("restore-src");
    project(&restore_root, restore_conversations, 50);
    let chunks = restore_conversations * 50;
    let rz = restore_root.join(".zblade");
    let (gateway, wallet, spec, dir) = fresh("restore");
    let rvault = dir.join("vault.json");
    let mut archive = Archive::setup(&rz, spec, Some(rvault.clone()), Some(wallet), PASS, Retry::default()).unwrap();
    archive
        .push(&PushOptions { snapshot: true }, &mut |_, _, _| {})
        .unwrap();
    gateway.mine();
    let from_batches = restore_from(&rvault, &tmp.path().join("r1"), false);
    let from_snapshot = restore_from(&rvault, &tmp.path().join("r2"), true);
    assert!(from_snapshot.snapshot.is_some());

    let body = format!(
        "Against arlocal 1.1.66 on loopback (a real Arweave gateway in Node: transactions, GraphQL, SQLite; it checks signatures); zblade and the bare run each on a fresh instance.\n\n\
         | measure | zblade | bare | ratio | target |\n|---|---|---|---|---|\n\
         | push of {items} files ({push_conversations} conversations + packs), items/s | {zblade_rate:.0} ({} batches, {:.1} s) | {bare_rate:.0} (AES-256-GCM + signed POST /tx, {:.1} s) | {:.2} | ≥ 0.5 |\n\
         | restore of {chunks} message chunks from {} batches | {:.1} s ({:.1} MB fetched) | | | < 300 s |\n\
         | restore of {chunks} chunks from a snapshot | {:.1} s | | | < 30 s |\n\n\
         Both sign each transaction (RSA-PSS, 4096-bit: arlocal checks signatures); zblade's push also asks the gateway for an anchor and a price per transaction, \
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
