//! Code references that stay valid while the code changes.
//!
//! A reference points at lines of a file in the working tree without copying them. At capture
//! time we record an [`Anchor`] ([`anchor::capture`]) — a hash per referenced line plus a few lines of context — and
//! the file's git blob hash. Later, [`resolve`] finds the lines again in the file as it is now
//! and says how they fared: [`ReferenceStatus::Ok`], `Shifted`, `Modified` (with a similarity),
//! `Moved` (another path), `Missing`, or `Unreadable` (binary, too large). [`drift`] tells
//! whether the file changed since capture and how many commits touched it. The [`watcher`]
//! turns file-system and git events into debounced changes so the engine can keep every
//! reference's live location current.
//!
//! ```
//! use zblade_refs::{ReferenceStatus, resolve, SourceFile, anchor};
//! let before = SourceFile::from_text("a\nb\nfn main() {}\nc\n");
//! let anchor = anchor::capture(&before, 3, 3).unwrap();
//! let after = SourceFile::from_text("new\nlines\na\nb\nfn main() {}\nc\n");
//! let found = resolve(&anchor, 3, &after).unwrap();
//! assert_eq!(found.status, ReferenceStatus::Shifted);
//! assert_eq!(found.lines, [5, 5]);
//! ```

pub mod anchor;
pub mod attribution;
pub mod checker;
pub mod drift;
pub mod history;
pub mod idents;
pub mod resolve;
pub mod source;
pub mod watcher;

pub use checker::{Checked, Checker, RefRecord};
pub use drift::{Drift, GitRepo, blob_hash};
pub use history::{CommitRecord, HistoryLimits, HistoryRead};
pub use resolve::{Found, resolve};
pub use source::{MAX_FILE_BYTES, ReadError, SourceFile, read_project_file, read_project_file_guarded};
pub use zblade_core::Anchor;
pub use zblade_core::ReferenceStatus;
