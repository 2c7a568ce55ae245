//! Helpers shared by the benchmarks: latency percentiles and writing docs/BENCHMARKS.md.
// Each benchmark compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod report;
pub mod text;
pub mod vectors;
pub mod warm;

pub use report::{full_run, write_section};

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

/// Bytes on disk under `path` (a file, or a folder and everything in it).
pub fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_dir() {
        std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .map(|e| dir_size(&e.path()))
            .sum()
    } else {
        meta.len()
    }
}

/// Bytes as megabytes for a report, e.g. `231.6 MB`.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
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
