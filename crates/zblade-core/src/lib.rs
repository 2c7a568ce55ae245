//! Domain types and on-disk formats of zblade.
//!
//! This crate owns everything that describes the durable record of a project's memory:
//! the `.zblade/` folder layout ([`Layout`]), `config/settings.json` ([`Settings`]), the
//! conversation and moment artifacts of RFC-002 ([`Conversation`], [`Moment`]), prefixed
//! ULID identifiers ([`ids`]), atomic file writes ([`fsio`]) and the one error type every
//! other crate reports through ([`Error`]). It has light dependencies on purpose: every
//! other crate builds on it.
//!
//! ```
//! use zblade_core::{Conversation, parse_conversation};
//! let json = br#"{"title": "JWT", "messages": [{"role": "user", "content": "How do I refresh a JWT?"}]}"#;
//! let mut conv: Conversation = parse_conversation(json, "input.json").unwrap();
//! conv.assign_missing_ids();
//! assert!(conv.conversation_id.starts_with("conv_"));
//! ```

pub mod artifact;
pub mod error;
pub mod fsio;
pub mod graph;
pub mod ids;
pub mod layout;
pub mod lineage;
pub mod paths;
pub mod protected;
pub mod reference_status;
pub mod settings;
pub mod text;
pub mod wire;

pub use artifact::{
    ARTIFACT_VERSION, Anchor, CodeReference, Conversation, ConversationMetadata, Decision, DecisionStatus,
    InlineMoment, Message, Moment, MomentType, Provenance, ReferenceDiff, Role, ToolCall, ToolResult,
    parse_conversation, parse_moment, sha256_hex,
};
pub use error::{Error, Result};
pub use graph::{
    Manifest, MessageRef, PackPlace, StoredConversation, is_pack_name, message_sha256, pack_name,
    parse_stored_conversation,
};
pub use layout::Layout;
pub use lineage::{Compaction, ForkPoint, MergeRecord, MessageOrigin, SharedPrefix, TokenUsage};
pub use protected::PathGuard;
pub use reference_status::ReferenceStatus;
pub use settings::{DEFAULT_CODE_MODEL, SearchSettings, Settings, StorageMode};
