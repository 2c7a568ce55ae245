//! Helpers shared by the benchmarks: latency percentiles and writing docs/BENCHMARKS.md.
// Each benchmark compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod text;
pub mod vectors;

use std::time::{Duration, Instant};

use zblade_core::Conversation;

/// Latency percentiles of a set of samples.
pub struct Stats {
    pub p50: Duration,
    pub p95: Duration,
    pub p99: Duration,
}

impl Stats {
    /// Sorts `samples` and takes the percentiles.
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        Stats {
            p50: at(0.50),
            p95: at(0.95),
            p99: at(0.99),
        }
    }
}

impl Stats {
    /// The p95 alone, e.g. `12.34 ms`.
    pub fn p95_ms(&self) -> String {
        format!("{:.2} ms", self.p95.as_secs_f64() * 1000.0)
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        write!(f, "{:.2} / {:.2} / {:.2} ms", ms(self.p50), ms(self.p95), ms(self.p99))
    }
}

/// True when run by `cargo bench` (full size, results written); false under `cargo test`
/// (a small smoke run that writes nothing).
pub fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Replaces the section `key` of docs/BENCHMARKS.md (or appends it), stamped with the date,
/// commit and machine. Skipped when `ZBLADE_BENCH_NO_WRITE` is set.
pub fn write_section(key: &str, title: &str, bench: &str, body: &str) {
    if std::env::var_os("ZBLADE_BENCH_NO_WRITE").is_some() {
        return;
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/BENCHMARKS.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        "# Benchmarks\n\nNumbers measured on this project's machines; each section is rewritten by the benchmark named in it.\n".into()
    });
    let start = format!("<!-- {key}:start -->");
    let end = format!("<!-- {key}:end -->");
    let date = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC");
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // Say how it was built: a `--profile dev` run is slower and must not pass for a release one.
    let (flag, build) = if cfg!(debug_assertions) {
        (" --profile dev", "unoptimised build")
    } else {
        ("", "release build")
    };
    let section = format!(
        "{start}\n## {title}\n\n`cargo bench -p {} --bench {bench}{flag}` — {date}, commit {commit}, {}, {build}.\n\n{body}{end}",
        env!("CARGO_PKG_NAME"),
        machine()
    );
    let updated = match (existing.find(&start), existing.find(&end)) {
        (Some(s), Some(e)) => format!("{}{}{}", &existing[..s], section, &existing[e + end.len()..]),
        _ => format!("{}\n\n{}\n", existing.trim_end(), section),
    };
    std::fs::write(&path, updated).unwrap();
    eprintln!("wrote {}", path.display());
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| format!("{:.0} GiB", kb / 1048576.0))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {mem} RAM")
}

/// The baseline: the same messages inserted by bare rusqlite in one transaction, into a plain
/// table and (with `fts`) an external-content FTS5 table like zblade's. Returns the time taken.
pub fn raw_insert(path: &std::path::Path, convs: &[Conversation], fts: bool) -> Duration {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch(
        "CREATE TABLE messages (pk INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL, id TEXT NOT NULL,
                                seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, timestamp TEXT NOT NULL);",
    )
    .unwrap();
    if fts {
        conn.execute_batch("CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=pk, tokenize='porter unicode61');").unwrap();
    }
    let started = Instant::now();
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx.prepare("INSERT INTO messages (conversation_id, id, seq, role, content, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6)").unwrap();
        let mut insert_fts = fts.then(|| {
            tx.prepare("INSERT INTO messages_fts (rowid, content) VALUES (?1, ?2)")
                .unwrap()
        });
        for c in convs {
            for (seq, m) in c.messages.iter().enumerate() {
                insert
                    .execute(rusqlite::params![
                        c.conversation_id,
                        m.id,
                        seq as i64,
                        m.role.as_str(),
                        m.content,
                        "2026-01-17T14:00:00.000Z"
                    ])
                    .unwrap();
                if let Some(stmt) = insert_fts.as_mut() {
                    stmt.execute(rusqlite::params![tx.last_insert_rowid(), m.content])
                        .unwrap();
                }
            }
        }
    }
    tx.commit().unwrap();
    started.elapsed()
}

/// `value`, after checking it is a real measurement: finite and above zero. A smoke run whose
/// recall came out 0 or whose ratio divided by zero must fail, not pass unnoticed.
pub fn sane(what: &str, value: f64) -> f64 {
    assert!(value.is_finite() && value > 0.0, "{what} is {value}: not a measurement");
    value
}
