//! Decisions that no longer stand: a moment or conversation superseded by a later one, or
//! rejected with a reason. The artifacts are the truth (a moment's `decision`, a
//! conversation's `metadata.decision`); this table answers "does it stand?" for search and
//! packing without reading them.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use zblade_core::{Decision, DecisionStatus, Result};

use crate::Index;

/// Why a moment or conversation no longer stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DecisionState {
    /// The moment or conversation.
    pub id: String,
    /// What happened to it, as its artifact says.
    #[serde(flatten)]
    pub decision: Decision,
}

impl DecisionState {
    /// The state in words, as a pack shows it: `superseded by conv_…`, `rejected: too slow`.
    pub fn describe(&self) -> String {
        let d = &self.decision;
        match (d.state, &d.by, &d.reason) {
            (DecisionStatus::Superseded, Some(by), _) => format!("superseded by {by}"),
            (state, _, Some(reason)) => format!("{}: {reason}", state.as_str()),
            (state, _, None) => state.as_str().to_string(),
        }
    }
}

const COLUMNS: &str = "id, state, by_id, reason, decided_at, automatic";

fn state_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DecisionState> {
    let state: String = r.get(1)?;
    let decided_at: String = r.get(4)?;
    Ok(DecisionState {
        id: r.get(0)?,
        decision: Decision {
            state: match state.as_str() {
                "rejected" => DecisionStatus::Rejected,
                _ => DecisionStatus::Superseded,
            },
            by: r.get(2)?,
            reason: r.get(3)?,
            decided_at: chrono::DateTime::parse_from_rfc3339(&decided_at)
                .map(|t| t.with_timezone(&chrono::Utc))
                .unwrap_or_default(),
            automatic: r.get::<_, i64>(5)? != 0,
        },
    })
}

/// Records the state an artifact carries (`None`: it stands) — called wherever a moment or
/// conversation row is written, so `reindex` rebuilds the table from the artifacts.
pub(crate) fn put_state(conn: &rusqlite::Connection, id: &str, decision: Option<&Decision>) -> rusqlite::Result<()> {
    match decision {
        Some(d) => conn
            .prepare_cached(
                "INSERT OR REPLACE INTO decision_states (id, state, by_id, reason, decided_at, automatic)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                id,
                d.state.as_str(),
                d.by,
                d.reason,
                crate::timestamp(d.decided_at),
                i64::from(d.automatic)
            ])?,
        None => conn
            .prepare_cached("DELETE FROM decision_states WHERE id = ?1")?
            .execute([id])?,
    };
    Ok(())
}

impl Index {
    /// The state of one moment or conversation (`None`: it stands).
    pub fn decision_state(&self, id: &str) -> Result<Option<DecisionState>> {
        self.read(|conn| {
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM decision_states WHERE id = ?1"))?
                .query_row([id], state_row)
                .optional()
        })
    }

    /// The states of those of `ids` that no longer stand.
    pub fn decision_states(&self, ids: &[&str]) -> Result<HashMap<String, DecisionState>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM decision_states WHERE id = ?1"))?;
            let mut out = HashMap::new();
            for id in ids {
                if let Some(state) = stmt.query_row([id], state_row).optional()? {
                    out.insert(id.to_string(), state);
                }
            }
            Ok(out)
        })
    }

    /// Every state, newest first.
    pub fn all_decision_states(&self) -> Result<Vec<DecisionState>> {
        self.read(|conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM decision_states ORDER BY decided_at DESC, id"
            ))?
            .query_map([], state_row)?
            .collect()
        })
    }
}
