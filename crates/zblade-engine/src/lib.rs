//! The zblade engine: one API over a project's memory for every face of zblade.
//!
//! A [`Project`] is opened on a working tree that holds a `.zblade/` folder. It writes
//! artifacts (the truth) before the index (a cache), serialises writers across processes with
//! a lock file, and can always rebuild the index from the artifacts ([`Project::reindex`]) or
//! check the two against each other ([`Project::fsck`]).
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use zblade_engine::{Project, SearchKind, SearchQuery};
//! let (mut project, _) = Project::init(dir.path()).unwrap();
//! let json = br#"{"title": "Auth", "messages": [{"role": "user", "content": "Rotate the JWT signing key"}]}"#;
//! let added = project.add_conversation(json, "<stdin>").unwrap();
//! let hits = project.search(&SearchQuery::new("jwt", 10, SearchKind::All)).unwrap().hits;
//! assert_eq!(hits[0].hit.conversation_id.as_deref(), Some(added.id.as_str()));
//! ```

mod agents;
mod artifacts;
mod candidates;
mod code;
mod codeblocks;
mod compressor;
mod compressor_store;
mod context;
mod context_receipt;
mod decisions;
mod documents;
mod extract;
mod files;
mod fsck;
mod gate;
mod gate_null;
mod graph;
mod history;
mod hit_details;
mod import;
mod indexing;
mod lineage;
mod loaded;
mod lock;
mod migrate;
mod model_places;
mod models;
mod parts;
mod point_of_action;
mod project;
mod prompt_hook;
mod record;
mod redaction;
mod references;
mod refs;
mod registry;
mod remote;
mod scan;
mod search;
mod search_request;
mod selector;
mod semantic;
mod show;
mod sources;
mod standing;
mod status;
mod storage;
mod summaries;
mod team;
mod time;
mod upkeep;
#[cfg(unix)]
pub mod warm;
mod watch;
mod why;

pub use code::{CodeIndexReport, chunk_rows, line_window_rows};
pub use compressor::{CompressorInstall, CompressorModel, CompressorStatus};
pub use context::{ContextRequest, ContextResult, ContextTimings, DATA_NOTICE, MAX_QUERY_CHARS, RECENT_WINDOW};
pub use context_receipt::receipt_text;
pub use documents::{DOCUMENT_SOURCE, DocumentsAdded};
pub use extract::ExtractReport;
pub use files::{CodeNow, CodeSearchNow, DEFAULT_READ_LINES, MAX_READ_BYTES, ProjectFile};
pub use fsck::{FsckReport, Problem, ProblemKind};
pub use graph::{ExportFormat, GraphOutcome, MAX_HISTORY, StoreStats, local_conversation_json};
pub use history::{CommitView, HistoryReport, MAX_COMMITS_PAGE};
pub use import::{ImportProgress, ImportReport, ImportRequest, ImportSource, ImportedConversation};
pub use indexing::{IndexReport, IndexStage};
pub use lineage::{ForkTree, Lineage};
pub use migrate::{
    CleanupReport, Direction as MigrationDirection, MigrationReport, PendingMigration, Phase as MigrationPhase,
    Plan as MigrationPlan, PlannedItem,
};
pub use model_places::{gguf_dir, models_dir};
pub use models::{ModelDownload, ModelEntry, ModelImport};
pub use point_of_action::{ACTION_BUDGET, ActionAnswer, ActionCache};
pub use project::{InitReport, Project, ReindexReport};
pub use prompt_hook::{PROMPT_HOOK_BUDGET, PromptEvent, prompt_hook};
pub use record::{Exchange, Recorded};
pub use refs::{Location, ReferenceReport};
pub use registry::{history_of_all_projects, known_projects, remember_project};
pub use remote::connect;
pub use search::{Hit, SearchResults};
pub use selector::MessageSelector;
pub use semantic::{
    ANN_THRESHOLD, CANDIDATES, CODE_SEMANTIC_WEIGHT, EmbedReport, HYBRID_NEIGHBOUR_WEIGHT, HYBRID_SEMANTIC_WEIGHT,
    SearchMode,
};
pub use show::Shown;
pub use sources::{IGNORE_FILE, SourceStatus, sources_on_this_machine};
pub use status::Status;
pub use storage::{AddOutcome, MessageMatch};
pub use summaries::{REFRESH_EVERY, SUMMARY_TOKENS, SessionSummary, SummarizeReport};
pub use team::{Joined, invitations};
pub use time::{parse_time, parse_time_bound};
pub use watch::WatchEvent;
pub use why::{Why, WhyCommit, WhyMemory, parse_line_target};
pub use zblade_context::{
    DEFAULT_MIN_RELEVANCE, Format as ContextFormat, Gate as RelevanceGate, Source as ContextSource, Tier as ContextTier,
};
pub use zblade_core::settings::ProxySettings;
pub use zblade_core::text::one_line;
pub use zblade_core::{
    CodeReference, Conversation, Error, Message, Moment, MomentType, ReferenceStatus, Result, Role, StorageMode,
    ToolCall, parse_conversation, parse_moment,
};
pub use zblade_import::Detected as DetectedSource;
pub use zblade_import::detect::Places as AgentPlaces;
pub use zblade_import::path_argument as tool_file_argument;
pub use zblade_index::{
    ConversationSummary, DecisionState, HitKind, LineageNode, LiveLocation, MergeEdge, MomentSummary, Page, Prompt,
    SearchFilter, SearchHit, SearchKind, SearchQuery, StoredReference,
};
pub use zblade_refs::watcher::WatchOptions;
pub use zblade_search::embed::disable_onnx_telemetry;
/// Ends a process that answered once (a cold `zblade context`) once its answer is written,
/// without the C and C++ teardown.
pub use zblade_search::memory::exit_after_one_answer;
/// Sets the allocator up for a process that loads the models, answers once and exits (a cold
/// `zblade context`).
pub use zblade_search::memory::tune_allocator_for_one_answer;

/// The nearest ancestor of `start` (itself included) that holds a `.zblade/` folder.
pub fn find_project_root(start: &std::path::Path) -> Option<std::path::PathBuf> {
    zblade_core::Layout::discover(start).map(|layout| layout.root().to_path_buf())
}
