//! How a code reference fared since it was captured: the one status every face shows (CLI,
//! app, context receipts), checked by `zblade-refs` and stored by the index.

use serde::{Deserialize, Serialize};

/// A code reference's live status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ReferenceStatus {
    /// The same lines at the same place.
    Ok,
    /// The same lines at another place in the same file.
    Shifted,
    /// Partly changed; the range is the best match and a similarity says how close.
    Modified,
    /// Found in another file (renamed or moved).
    Moved,
    /// The file or the lines are gone.
    Missing,
    /// The file cannot be read as text (binary, over 10 MB, outside the project, a secret).
    Unreadable,
}

impl ReferenceStatus {
    /// Every status, in order of increasing trouble.
    pub const ALL: [ReferenceStatus; 6] = [
        ReferenceStatus::Ok,
        ReferenceStatus::Shifted,
        ReferenceStatus::Modified,
        ReferenceStatus::Moved,
        ReferenceStatus::Missing,
        ReferenceStatus::Unreadable,
    ];

    /// The lowercase name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            ReferenceStatus::Ok => "ok",
            ReferenceStatus::Shifted => "shifted",
            ReferenceStatus::Modified => "modified",
            ReferenceStatus::Moved => "moved",
            ReferenceStatus::Missing => "missing",
            ReferenceStatus::Unreadable => "unreadable",
        }
    }

    /// The status a stored name stands for.
    pub fn parse(name: &str) -> Option<ReferenceStatus> {
        ReferenceStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether the code is still there to show (possibly moved or changed).
    pub fn has_code(self) -> bool {
        !matches!(self, ReferenceStatus::Missing | ReferenceStatus::Unreadable)
    }
}

impl std::fmt::Display for ReferenceStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for status in ReferenceStatus::ALL {
            assert_eq!(ReferenceStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{status}\""));
        }
        assert_eq!(ReferenceStatus::parse("fine"), None);
    }
}
