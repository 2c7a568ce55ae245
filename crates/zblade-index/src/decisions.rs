//! Decisions that no longer stand: a moment or conversation superseded by a later one, or
//! rejected with a reason. The artifacts are the truth (a moment's `decision`, a
//! conversation's `metadata.decision`); this table answers "does it stand?" for search and
//! packing without reading them.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use zblade_core::Result;

use crate::Index;

/// Why a moment or conversation no longer stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DecisionState {
    /// The moment or conversation.
    pub id: String,
    /// `superseded` or `rejected`.
    pub state: String,
    /// What superseded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Why (always given for a rejection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was decided (RFC 3339).
    pub decided_at: String,
    /// Found by zblade (time, shared code, similar text), not said by a person.
    #[serde(default)]
    pub automatic: bool,
}

impl DecisionState {
    /// The state in words, as a pack shows it: `superseded by conv_…`, `rejected: too slow`.
    pub fn describe(&self) -> String {
        match (self.state.as_str(), &self.by, &self.reason) {
            ("superseded", Some(by), _) => format!("superseded by {by}"),
            (state, _, Some(reason)) => format!("{state}: {reason}"),
            (state, _, None) => state.to_string(),
        }
    }
}

const COLUMNS: &str = "id, state, by_id, reason, decided_at, automatic";

fn state_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DecisionState> {
    Ok(DecisionState {
        id: r.get(0)?,
        state: r.get(1)?,
        by: r.get(2)?,
        reason: r.get(3)?,
        decided_at: r.get(4)?,
        automatic: r.get::<_, i64>(5)? != 0,
    })
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

    /// Records (or replaces) a state; `None` for `id` says it stands again.
    pub fn set_decision_state(&mut self, id: &str, state: Option<&DecisionState>) -> Result<()> {
        self.write(|tx| {
            match state {
                Some(s) => tx.execute(
                    "INSERT OR REPLACE INTO decision_states (id, state, by_id, reason, decided_at, automatic)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![id, s.state, s.by, s.reason, s.decided_at, i64::from(s.automatic)],
                )?,
                None => tx.execute("DELETE FROM decision_states WHERE id = ?1", [id])?,
            };
            Ok(())
        })
    }
}
