//! Decisions that stand (docs/DECISIONS.md): a person says that a later moment or conversation
//! supersedes an earlier one, or that an approach was rejected and why; the mark is written
//! into the artifact (so it syncs, is archived and survives `reindex`) and the pack shows it.
//! Amendments nobody marked are found when context is packed (`amendments.rs`).

use chrono::Utc;
use zblade_core::{Decision, DecisionStatus, Error, Result, ids};
use zblade_index::DecisionState;

use crate::project::Project;
use crate::storage::FoundMoment;

/// Longest rejection reason kept.
const MAX_REASON_CHARS: usize = 500;

impl Project {
    /// Marks `old` (a moment or conversation) as superseded by `new`, which must exist, be
    /// another one, and not itself be superseded by `old`.
    pub fn supersede(&mut self, old: &str, new: &str) -> Result<DecisionState> {
        if old == new {
            return Err(Error::Usage(format!("{old} cannot supersede itself")));
        }
        if let Some(Decision {
            by: Some(by), state, ..
        }) = self.decision_of(new)?
            && by == old
            && state == DecisionStatus::Superseded
        {
            return Err(Error::Usage(format!(
                "{new} is already superseded by {old}; mark `zblade moments reinstate {new}` first"
            )));
        }
        let decision = Decision {
            state: DecisionStatus::Superseded,
            by: Some(new.to_string()),
            reason: None,
            decided_at: Utc::now(),
            automatic: false,
        };
        self.set_decision(old, Some(decision.clone()))?;
        Ok(DecisionState {
            id: old.to_string(),
            decision,
        })
    }

    /// Marks `id` (a moment or conversation) as a rejected approach, with its reason.
    pub fn reject(&mut self, id: &str, reason: &str) -> Result<DecisionState> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::Usage(
                "say why it was rejected (--reason): the reason is what the next agent needs".into(),
            ));
        }
        let decision = Decision {
            state: DecisionStatus::Rejected,
            by: None,
            reason: Some(reason.chars().take(MAX_REASON_CHARS).collect()),
            decided_at: Utc::now(),
            automatic: false,
        };
        self.set_decision(id, Some(decision.clone()))?;
        Ok(DecisionState {
            id: id.to_string(),
            decision,
        })
    }

    /// Says that `id` stands again (undoes `supersede` or `reject`).
    pub fn reinstate(&mut self, id: &str) -> Result<()> {
        self.set_decision(id, None)
    }

    /// Moments and conversations that no longer stand, newest first (local storage; a sync
    /// server keeps the marks in the artifacts it serves).
    pub fn decision_states(&self) -> Result<Vec<DecisionState>> {
        if !self.storage.on_this_machine() {
            return Ok(Vec::new());
        }
        self.index()?.all_decision_states()
    }

    /// The mark a moment or conversation carries, read from its artifact.
    fn decision_of(&self, id: &str) -> Result<Option<Decision>> {
        if id.starts_with(ids::CONVERSATION) {
            return Ok(self.load_conversation(id)?.metadata.decision);
        }
        match self.storage.moment(&self.parts, id)? {
            Some(FoundMoment::Standalone(moment)) => Ok(moment.decision),
            Some(FoundMoment::Inline { .. }) => Ok(None),
            None => Err(Error::NotFound(format!("no moment {id} {}", self.storage.place()))),
        }
    }

    /// Writes `decision` into the artifact of `id`, through the storage (local or server).
    fn set_decision(&mut self, id: &str, decision: Option<Decision>) -> Result<()> {
        ids::check_id(id, None).map_err(|why| Error::Usage(format!("invalid id: {why}")))?;
        let storage = self.storage.clone();
        if id.starts_with(ids::CONVERSATION) {
            let mut conv = self.load_conversation(id)?;
            conv.metadata.decision = decision;
            storage.put_conversations(&mut self.parts, std::slice::from_ref(&conv))?;
            return Ok(());
        }
        if !id.starts_with(ids::MOMENT) {
            return Err(Error::Usage(format!(
                "{id} is neither a moment (moment_…) nor a conversation (conv_…)"
            )));
        }
        match storage.moment(&self.parts, id)? {
            Some(FoundMoment::Standalone(mut moment)) => {
                moment.decision = decision;
                let source = "decision".to_string();
                storage.put_moments(&mut self.parts, vec![(moment, source)])?;
                Ok(())
            }
            Some(FoundMoment::Inline { conversation_id, .. }) => Err(Error::Usage(format!(
                "{id} is stored inside conversation {conversation_id}; mark the conversation instead"
            ))),
            None => Err(Error::NotFound(format!("no moment {id} {}", storage.place()))),
        }
    }
}
