//! Receipts: what the proxy added to each request, kept in `.zblade/proxy/receipts/` so a user
//! can see exactly what their provider was sent (`zblade proxy receipts`). A receipt holds the
//! injected text and why — never the request's headers (API keys live there) nor the client's
//! own messages. The newest [`KEEP`] are kept.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Receipts kept; older ones are removed as new ones are written.
pub const KEEP: usize = 500;

/// What the proxy did to one request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Receipt {
    /// `rcpt_…`, also sent back in `x-zblade-receipt`.
    pub id: String,
    /// When the request arrived.
    pub time: DateTime<Utc>,
    /// `chat.completions`, `responses` or `messages`.
    pub api: String,
    /// The model asked for.
    pub model: String,
    /// The conversation the turn is recorded in.
    pub conversation: String,
    /// The question memory was searched for (the first 500 characters).
    pub query: String,
    /// Token budget and tier used.
    pub budget: usize,
    /// `smart`, `balanced` or `fast`.
    pub tier: String,
    /// Tokens and entries injected (0 when nothing was).
    pub tokens: usize,
    /// Entries packed.
    pub entries: usize,
    /// Time spent assembling, in milliseconds.
    pub elapsed_ms: f64,
    /// The text added to the request, exactly.
    pub injected: String,
    /// Why nothing (or less) was added, when something inside zblade failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Notices of the assembly (a mode that could not run, a cut query).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// The relevance gate's verdict: its relevance, floor and evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<zblade_engine::RelevanceGate>,
}

/// Where a project's receipts live.
pub fn dir(zblade_dir: &Path) -> PathBuf {
    zblade_dir.join("proxy").join("receipts")
}

/// Writes `receipt` (atomically) and removes the oldest beyond [`KEEP`].
pub fn write(zblade_dir: &Path, receipt: &Receipt) -> Result<(), String> {
    let dir = dir(zblade_dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let bytes = serde_json::to_vec_pretty(receipt).map_err(|e| e.to_string())?;
    zblade_core::fsio::write_atomic(&dir.join(format!("{}.json", receipt.id)), &bytes).map_err(|e| e.to_string())?;
    let mut names = names(&dir);
    if names.len() > KEEP {
        names.sort(); // ULIDs sort by time
        for old in &names[..names.len() - KEEP] {
            let _ = std::fs::remove_file(dir.join(old));
        }
    }
    Ok(())
}

/// The newest `limit` receipts, newest first; unreadable ones are skipped and counted.
pub fn list(zblade_dir: &Path, limit: usize) -> (Vec<Receipt>, usize) {
    let dir = dir(zblade_dir);
    let mut names = names(&dir);
    names.sort();
    names.reverse();
    let mut unreadable = 0;
    let mut out = Vec::new();
    for name in names {
        if out.len() >= limit {
            break;
        }
        match read_file(&dir.join(&name)) {
            Ok(receipt) => out.push(receipt),
            Err(_) => unreadable += 1,
        }
    }
    (out, unreadable)
}

/// The receipt `id`.
pub fn get(zblade_dir: &Path, id: &str) -> Result<Receipt, String> {
    zblade_core::ids::check_id(id, Some("rcpt_")).map_err(|why| format!("receipt id {why}"))?;
    let path = dir(zblade_dir).join(format!("{id}.json"));
    if !path.exists() {
        return Err(format!("no receipt {id} (the newest {KEEP} are kept)"));
    }
    read_file(&path)
}

fn read_file(path: &Path) -> Result<Receipt, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("rcpt_") && n.ends_with(".json"))
        .collect()
}

/// A new receipt id.
pub fn new_id() -> String {
    zblade_core::ids::new_id("rcpt_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(id: String) -> Receipt {
        Receipt {
            id,
            time: Utc::now(),
            api: "messages".into(),
            model: "claude".into(),
            conversation: "conv_x".into(),
            query: "q".into(),
            budget: 100,
            tier: "balanced".into(),
            tokens: 3,
            entries: 1,
            elapsed_ms: 1.0,
            injected: "memory".into(),
            error: None,
            notices: vec![],
            gate: None,
        }
    }

    #[test]
    fn receipts_are_listed_newest_first_and_pruned() {
        let home = tempfile::tempdir().unwrap();
        let mut ids = Vec::new();
        for _ in 0..3 {
            // ULIDs order by their millisecond.
            std::thread::sleep(std::time::Duration::from_millis(2));
            ids.push(new_id());
            write(home.path(), &receipt(ids.last().unwrap().clone())).unwrap();
        }
        std::fs::write(dir(home.path()).join("rcpt_broken.json"), "{").unwrap();
        let (listed, unreadable) = list(home.path(), 10);
        assert_eq!(
            listed.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
            [ids[2].clone(), ids[1].clone(), ids[0].clone()]
        );
        assert_eq!(unreadable, 1);
        assert_eq!(get(home.path(), &ids[1]).unwrap().injected, "memory");
        assert!(
            get(home.path(), "rcpt_../../etc/passwd")
                .unwrap_err()
                .contains("receipt id")
        );
    }
}
