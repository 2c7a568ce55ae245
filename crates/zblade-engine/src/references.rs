//! What the faces ask of code references: check every one against the working tree, one by
//! id, where a stored one is now, the stored rows, and the project's reference health. The
//! checking itself is `refs.rs`'s, on the parts.

use zblade_core::{Error, Result};
use zblade_index::StoredReference;

use crate::project::Project;
use crate::refs::ReferenceReport;

impl Project {
    /// Checks every reference against the working tree and stores the live locations.
    pub fn check_references(&mut self) -> Result<Vec<ReferenceReport>> {
        let stored = self.index()?.references()?;
        let reports = self.parts.check_and_store(&stored, &[])?;
        self.index_mut()?.prune_live_locations()?;
        Ok(reports)
    }

    /// One reference, checked now, with its current code.
    pub fn reference(&self, key: &str) -> Result<ReferenceReport> {
        let stored = self.index()?.reference(key)?.ok_or_else(|| {
            Error::NotFound(format!(
                "no code reference {key} in this project (see `zblade refs check`)"
            ))
        })?;
        Ok(self.parts.hydrate(&[stored]).remove(0))
    }

    /// Where a reference was last recorded to be (by `check_references` or the watch loop).
    pub fn live_location(&self, key: &str) -> Result<Option<zblade_index::LiveLocation>> {
        self.index()?.live_location(key)
    }

    /// Every reference as captured, in key order.
    pub fn stored_references(&self) -> Result<Vec<StoredReference>> {
        self.index()?.references()
    }

    /// Counts of references by live status (`unchecked` until first checked).
    pub fn reference_health(&self) -> Result<Vec<(String, i64)>> {
        self.index()?.reference_health()
    }
}
