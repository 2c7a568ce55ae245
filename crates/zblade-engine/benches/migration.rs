//! Migration of 10,000 conversations to a real `zblade-server` (SQLite) and back (issue 7):
//! time each way, and the bytes on the wire (counted by a proxy between client and server)
//! next to the raw size of the artifacts. Writes the "migration" section of docs/BENCHMARKS.md.
//! Needs the `zblade-server` binary of the same profile (a workspace build makes it:
//! `cargo bench --workspace --no-run`).

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{full_run, write_section};
use zblade_engine::{MigrationDirection, Project, parse_conversation};
use zblade_sync::Client;

/// Counts the bytes each way through a loopback proxy.
struct Counter {
    url: String,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
}

fn pipe(mut from: TcpStream, mut to: TcpStream, count: Arc<AtomicU64>) {
    let mut buf = [0u8; 65536];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

fn counting_proxy(target: String) -> Counter {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (up, down) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (u, d) = (up.clone(), down.clone());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&target) else {
                continue;
            };
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (u, d) = (u.clone(), d.clone());
            std::thread::spawn(move || pipe(client, server, u));
            std::thread::spawn(move || pipe(s2, c2, d));
        }
    });
    Counter { url, up, down }
}

fn server_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let bin = dir.join("zblade-server");
    assert!(
        bin.exists(),
        "{} is missing: build it first (`cargo bench --workspace --no-run`)",
        bin.display()
    );
    bin
}

fn main() {
    let full = full_run();
    let count = if full { 10_000 } else { 100 };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.db");
    let out = std::process::Command::new(server_bin())
        .args(["user", "add", "bench", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = std::process::Command::new(server_bin())
        .args([
            "serve",
            "--rate",
            "1000000",
            "--burst",
            "1000000",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--db",
        ])
        .arg(&db)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let proxy = counting_proxy(format!("127.0.0.1:{port}"));

    let root = dir.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    let (mut project, _) = Project::init(&root).unwrap();
    let mut text = common::text::TextGen::new(11);
    for batch in (0..count).collect::<Vec<_>>().chunks(500) {
        let convs = batch
            .iter()
            .map(|&i| {
                let json = text.conversation(i, 6);
                (
                    parse_conversation(json.as_bytes(), "bench").unwrap(),
                    "bench".to_string(),
                )
            })
            .collect();
        project.add_conversations(convs).unwrap();
    }
    let raw: u64 = std::fs::read_dir(root.join(".zblade/artifacts/conversations"))
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();

    let client = Client::new(&proxy.url, &token).unwrap();
    let started = Instant::now();
    let up = project
        .migrate(MigrationDirection::ToServer, &client, &mut |_, _, _| {})
        .unwrap();
    let up_time = started.elapsed();
    let (up_sent, up_received) = (
        proxy.up.swap(0, Ordering::Relaxed),
        proxy.down.swap(0, Ordering::Relaxed),
    );
    assert_eq!(up.verified, count);
    project.cleanup_migration_source(&client).unwrap();

    let started = Instant::now();
    let down = project
        .migrate(MigrationDirection::ToLocal, &client, &mut |_, _, _| {})
        .unwrap();
    let down_time = started.elapsed();
    let (down_sent, down_received) = (
        proxy.up.swap(0, Ordering::Relaxed),
        proxy.down.swap(0, Ordering::Relaxed),
    );
    assert_eq!(down.verified, count);
    let _ = server.kill();
    let _ = server.wait();

    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
    let report = format!(
        "{count} conversations of 6 turns (the foundation benchmark's generator), {} of artifacts, migrated through `Project::migrate` to a `zblade-server` over SQLite on loopback and back; one request per item, verification included (to-server lists every hash back; to-local re-reads every file and rebuilds the index). Bytes counted by a proxy between client and server.\n\n\
         | direction | time | items/s | bytes sent | bytes received | wire / raw artifacts |\n|---|---|---|---|---|---|\n\
         | to-server | {:.1} s | {:.0} | {} | {} | {:.2} |\n\
         | to-local | {:.1} s | {:.0} | {} | {} | {:.2} |\n",
        mb(raw),
        up_time.as_secs_f64(),
        count as f64 / up_time.as_secs_f64(),
        mb(up_sent),
        mb(up_received),
        (up_sent + up_received) as f64 / raw as f64,
        down_time.as_secs_f64(),
        count as f64 / down_time.as_secs_f64(),
        mb(down_sent),
        mb(down_received),
        (down_sent + down_received) as f64 / raw as f64,
    );
    println!("{report}");
    if full {
        write_section("migration", "Migration to a sync server and back", "migration", &report);
    }
}
