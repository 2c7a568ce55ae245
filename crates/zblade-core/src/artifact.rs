//! Conversation and moment artifacts: the RFC-002 JSON schema, parsing with precise errors,
//! and the validation every artifact passes before it is stored or indexed.
//!
//! Parsing names the file, line, column and JSON path of a problem
//! (`conv.json:12:17: field \`messages[1].role\`: unknown variant \`bot\``). Fields this version
//! does not know are kept in `extra` and written back unchanged; an artifact whose `version`
//! has a major number we do not know is refused rather than silently rewritten.

use std::collections::HashMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::lineage::{Compaction, ForkPoint, MergeRecord, MessageOrigin, SharedPrefix, TokenUsage};
use crate::{Error, PathGuard, Result, ids, paths};

/// The artifact version this build writes.
pub const ARTIFACT_VERSION: &str = "1.0";
/// The artifact versions this build reads, for error messages.
const SUPPORTED_VERSIONS: &str = "1.x";

/// A conversation artifact (`artifacts/conversations/<conversation_id>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Conversation {
    /// Format version, `1.0`.
    #[serde(default)]
    pub version: String,
    /// `conv_…`; assigned when missing.
    #[serde(default)]
    pub conversation_id: String,
    /// The project this conversation belongs to; filled from settings when missing.
    #[serde(default)]
    pub project_id: String,
    /// When the conversation started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// When it last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
    /// A short title; derived from the first message when missing.
    #[serde(default)]
    pub title: String,
    /// The turns, in order.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Moments recorded inline with the conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moments: Vec<InlineMoment>,
    /// Counters and tags.
    #[serde(default)]
    pub metadata: ConversationMetadata,
    /// Where this conversation was forked from (`zblade conv fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkPoint>,
    /// Merges and cherry-picks into this conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergeRecord>,
    /// What a compaction summarised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// Tokens used, as the client reported them.
    #[serde(default, skip_serializing_if = "TokenUsage::is_empty")]
    pub token_usage: TokenUsage,
    /// Local storage only: the first messages are stored (and indexed) as another
    /// conversation's, which a fork shares with its parent. Never part of the JSON.
    #[serde(skip)]
    pub shared_prefix: Option<SharedPrefix>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person.
    User,
    /// The AI assistant.
    Assistant,
    /// A system prompt.
    System,
    /// Output of a tool call.
    Tool,
}

impl Role {
    /// The lowercase name stored in the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Message {
    /// Unique within its conversation; `msg_…` assigned when missing.
    #[serde(default)]
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// When it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
    /// Code this message is about, as references into the working tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_references: Vec<CodeReference>,
    /// The model that wrote it (assistant messages of imported sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tools the assistant called in this message, each with its result when one came back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// How the message got into this conversation (inherited from a fork's parent, merged);
    /// kept by the conversation, not the stored message, so a message merged elsewhere is
    /// still stored once. `None`: written here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<MessageOrigin>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message with only a role and text; everything else empty.
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            id: String::new(),
            role,
            content: content.into(),
            timestamp: None,
            code_references: Vec::new(),
            model: None,
            tool_calls: Vec::new(),
            origin: None,
            extra: Map::new(),
        }
    }
}

/// One tool call made by an assistant, kept structured rather than flattened into prose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolCall {
    /// The source's call id (`toolu_…`, `call_…`), pairing the call with its result.
    #[serde(default)]
    pub id: String,
    /// The tool's name (`Read`, `exec_command`, `apply_patch`, `mcp__server__tool`, ...).
    pub name: String,
    /// The arguments as the tool received them (long strings trimmed by importers).
    #[serde(default)]
    pub arguments: Value,
    /// What came back, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolResult>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

impl ToolCall {
    /// A call without a result yet.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            result: None,
            extra: Map::new(),
        }
    }
}

/// The result of a tool call: its text, trimmed, and the size of the whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolResult {
    /// The result's text, trimmed to a few kilobytes (head and tail kept).
    pub text: String,
    /// Size of the full result in bytes, before trimming.
    pub size: u64,
    /// True when the tool reported an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

/// A pointer to lines of a file in the working tree (RFC-002 "Code Reference Format").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CodeReference {
    /// Path relative to the project root, `/`-separated.
    pub file: String,
    /// First and last line, 1-based and inclusive.
    pub lines: [u32; 2],
    /// Blob hash of the file when the reference was captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_hash: Option<String>,
    /// HEAD commit when the reference was captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Why this code was referenced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// What the code does (moments use this instead of `context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// A change proposed or made to these lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<ReferenceDiff>,
    /// Hashes of the referenced lines at capture, to find them again (filled in by zblade).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

/// Enough to find referenced lines again without storing them: a hash per line of the range
/// (xxh3-64 of the line without trailing whitespace, 16 hex digits) and of a few lines around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Anchor {
    /// Number of lines in the range at capture.
    pub len: u32,
    /// Hashes of the range's first lines (all of them when the range is short).
    pub head: Vec<String>,
    /// Hashes of the range's last lines, for long ranges whose middle is not stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tail: Vec<String>,
    /// Hashes of up to three lines before the range.
    #[serde(default)]
    pub before: Vec<String>,
    /// Hashes of up to three lines after the range.
    #[serde(default)]
    pub after: Vec<String>,
    /// Hashes of the range's most distinctive identifiers (xxh3-64 of the identifier, low 32
    /// bits, 8 hex digits): what finds code that moved to another place *and* changed, or was
    /// re-indented, when none of its lines is left as it was. Absent in anchors captured before
    /// zblade stored them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idents: Vec<String>,
}

/// A change attached to a code reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ReferenceDiff {
    /// `addition`, `modification`, `deletion`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The changed text.
    pub content: String,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

/// What kind of knowledge a moment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum MomentType {
    /// A choice that was made, and why.
    Decision,
    /// A convention the code follows.
    Pattern,
    /// How a problem was solved.
    Solution,
    /// Background worth remembering.
    Context,
}

impl MomentType {
    /// The lowercase name stored in the index.
    pub fn as_str(self) -> &'static str {
        match self {
            MomentType::Decision => "decision",
            MomentType::Pattern => "pattern",
            MomentType::Solution => "solution",
            MomentType::Context => "context",
        }
    }
}

/// A moment recorded inside a conversation artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct InlineMoment {
    /// `moment_…`; assigned when missing.
    #[serde(default)]
    pub id: String,
    /// The kind of moment.
    #[serde(rename = "type")]
    pub kind: MomentType,
    /// The knowledge itself.
    pub content: String,
    /// The message it came from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// When it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

/// Whether a decision stands: a moment or conversation that a later one superseded, or that
/// was rejected (docs/DECISIONS.md). Memory that stands has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Decision {
    /// What happened to it.
    pub state: DecisionStatus,
    /// The moment or conversation that superseded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Why (a rejection always says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was decided.
    pub decided_at: DateTime<Utc>,
    /// Found by zblade, not said by a person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automatic: bool,
}

/// What happened to a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum DecisionStatus {
    /// A later moment or conversation replaced it.
    Superseded,
    /// It was tried or proposed and turned down.
    Rejected,
}

impl DecisionStatus {
    /// Its name, as JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionStatus::Superseded => "superseded",
            DecisionStatus::Rejected => "rejected",
        }
    }
}

/// `metadata` of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConversationMetadata {
    /// Number of messages (recomputed on store).
    pub total_messages: u64,
    /// Tokens used, as reported by the source.
    pub total_tokens: u64,
    /// Models that took part.
    pub models_used: Vec<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Where an imported conversation came from; `None` for conversations added directly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Provenance>,
    /// Kept on this machine only: in server mode (a team's shared project) it is written to
    /// the local `.zblade/` and never sent to the server.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
    /// Set when what was decided in this conversation no longer stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

/// Provenance of an imported conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Provenance {
    /// The tool it came from: `claude-code`, `codex`, `aider`, `continue`, `cline`, `document`.
    pub tool: String,
    /// The file it was read from.
    pub file: String,
    /// The tool's own id of the session.
    pub session_id: String,
    /// When zblade last imported from it.
    pub imported_at: DateTime<Utc>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

/// A moment artifact (`artifacts/moments/<id>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Moment {
    /// Format version, `1.0`.
    #[serde(default)]
    pub version: String,
    /// `moment_…`; assigned when missing.
    #[serde(default)]
    pub id: String,
    /// The conversation it was extracted from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The kind of moment.
    #[serde(rename = "type")]
    pub kind: MomentType,
    /// The knowledge itself.
    pub content: String,
    /// The discussion around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Code it is about.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_references: Vec<CodeReference>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// When it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// How much it matters, 0..1.
    #[serde(default = "default_relevance")]
    pub relevance_score: f64,
    /// Set when it no longer stands: superseded by a later moment or conversation, or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Fields this version does not know.
    #[serde(flatten)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub extra: Map<String, Value>,
}

fn default_relevance() -> f64 {
    0.5
}

/// Parses a conversation document; no validation beyond the schema.
pub fn parse_conversation(bytes: &[u8], source_name: &str) -> Result<Conversation> {
    parse_json(bytes, source_name)
}

/// Parses one stored message (`artifacts/messages/…`); no validation beyond the schema.
pub fn parse_message(bytes: &[u8], source_name: &str) -> Result<Message> {
    parse_json(bytes, source_name)
}

/// Parses a moment document; no validation beyond the schema.
pub fn parse_moment(bytes: &[u8], source_name: &str) -> Result<Moment> {
    parse_json(bytes, source_name)
}

/// Parses JSON into `T`, reporting file, line, column and field path on failure.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8], source_name: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let field = err.path().to_string();
        json_error(err.into_inner(), source_name, Some(field))
    })?;
    de.end().map_err(|err| json_error(err, source_name, None))?;
    Ok(value)
}

fn json_error(err: serde_json::Error, source_name: &str, field: Option<String>) -> Error {
    let text = err.to_string();
    // serde_json appends " at line L column C"; we report the position in our own format.
    let message = match text.rfind(" at line ") {
        Some(pos) => text[..pos].to_string(),
        None => text,
    };
    Error::InvalidJson {
        source_name: source_name.to_string(),
        line: err.line(),
        column: err.column(),
        field,
        message,
    }
}

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn check_version(version: &str, source_name: &str) -> Result<()> {
    if version.is_empty() {
        return Err(Error::field(
            source_name,
            "version",
            "missing; artifacts must carry a version",
        ));
    }
    let major = version.split('.').next().unwrap_or_default();
    if major == "1" {
        Ok(())
    } else {
        Err(Error::UnsupportedVersion {
            source_name: source_name.to_string(),
            found: version.to_string(),
            supported: SUPPORTED_VERSIONS,
        })
    }
}

fn check_id_field(source: &str, field: &str, id: &str, prefix: Option<&str>) -> Result<()> {
    ids::check_id(id, prefix).map_err(|why| Error::field(source, field, why))
}

/// The capture-time checks of reference paths within one artifact: a reference may not point
/// at a secret, into `.git/` / `.zblade/`, or outside the project through a symlink. The guard
/// is built once and each distinct path checked once — an imported session cites the same
/// few files thousands of times, and each check reads settings and resolves symlinks.
struct CaptureCheck<'a> {
    root: &'a Path,
    guard: Option<PathGuard>,
    checked: HashMap<String, std::result::Result<(), String>>,
}

impl<'a> CaptureCheck<'a> {
    fn new(root: &'a Path) -> CaptureCheck<'a> {
        CaptureCheck {
            root,
            guard: None,
            checked: HashMap::new(),
        }
    }

    fn check(&mut self, normal: &str) -> std::result::Result<(), String> {
        if let Some(known) = self.checked.get(normal) {
            return known.clone();
        }
        let root = self.root;
        let guard = self.guard.get_or_insert_with(|| PathGuard::for_project(root));
        let verdict = guard.check(normal).and_then(|()| paths::check_inside(root, normal));
        self.checked.insert(normal.to_string(), verdict.clone());
        verdict
    }
}

/// Checks (and, with `normalize`, rewrites) the references' paths and line ranges.
fn check_references(
    refs: &mut [CodeReference],
    field: &str,
    source: &str,
    mut capture: Option<&mut CaptureCheck<'_>>,
    normalize: bool,
) -> Result<()> {
    for (i, reference) in refs.iter_mut().enumerate() {
        let here = || format!("{field}[{i}]");
        let normal = paths::normalize_relative(&reference.file)
            .map_err(|why| Error::field(source, format!("{}.file", here()), why))?;
        if let Some(capture) = capture.as_deref_mut() {
            capture
                .check(&normal)
                .map_err(|why| Error::field(source, format!("{}.file", here()), why))?;
        }
        if normalize {
            reference.file = normal;
        } else if normal != reference.file {
            return Err(Error::field(
                source,
                format!("{}.file", here()),
                format!("{:?} is not normalised", reference.file),
            ));
        }
        let [start, end] = reference.lines;
        if start == 0 {
            return Err(Error::field(
                source,
                format!("{}.lines", here()),
                "lines are 1-based; 0 is not a line",
            ));
        }
        if start > end {
            return Err(Error::field(
                source,
                format!("{}.lines", here()),
                format!("[{start}, {end}] ends before it starts"),
            ));
        }
    }
    Ok(())
}

fn first_line_title(content: &str) -> String {
    let line = content
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("Untitled conversation");
    let mut title: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        title.push('…');
    }
    title
}

impl Conversation {
    /// Gives every conversation, message and inline moment without an id one. A conversation
    /// without an id gets one derived from its content (and its messages without ids, ids
    /// derived from that and their place), so adding the same file twice updates it instead of
    /// making a copy; anything else gets a fresh prefixed ULID.
    pub fn assign_missing_ids(&mut self) {
        let derived = self.conversation_id.is_empty();
        if derived {
            self.conversation_id = self.content_id();
        }
        let started = self.id_time();
        for (i, message) in self.messages.iter_mut().enumerate() {
            if message.id.is_empty() {
                message.id = if derived {
                    let digest = Sha256::digest(format!("{}\n{i}", self.conversation_id));
                    ids::derived_id(ids::MESSAGE, started, &digest)
                } else {
                    ids::new_id(ids::MESSAGE)
                };
            }
        }
        for moment in &mut self.moments {
            if moment.id.is_empty() {
                moment.id = ids::new_id(ids::MOMENT);
            }
        }
    }

    /// The id of a conversation given without one: its title and every message's role, time
    /// and text, hashed; its ULID time is the conversation's start when known, so listings by
    /// id still follow age.
    fn content_id(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.title.as_bytes());
        for message in &self.messages {
            hasher.update([0]);
            hasher.update(message.role.as_str().as_bytes());
            hasher.update([0]);
            if let Some(time) = message.timestamp {
                hasher.update(time.to_rfc3339().as_bytes());
            }
            hasher.update([0]);
            hasher.update(message.content.as_bytes());
        }
        ids::derived_id(ids::CONVERSATION, self.id_time(), &hasher.finalize())
    }

    /// Milliseconds since the epoch of the conversation's start as given (its `created_at`, else
    /// its first message's time), 0 when it gives none: the time part of derived ids.
    fn id_time(&self) -> u64 {
        self.created_at
            .or_else(|| self.messages.iter().filter_map(|m| m.timestamp).min())
            .map_or(0, |t| t.timestamp_millis().max(0) as u64)
    }

    /// Refuses a conversation to be added that holds no messages of its own and is no fork or
    /// merge: almost always a file of another kind (a moment) or a misspelt `messages` key,
    /// which would otherwise be stored as an empty conversation without a word.
    pub fn check_has_messages(&self, source: &str) -> Result<()> {
        // An unknown version or a bad id is the first thing wrong with such a file: said first.
        if !self.version.is_empty() {
            check_version(&self.version, source)?;
        }
        if !self.conversation_id.is_empty() {
            check_id_field(
                source,
                "conversation_id",
                &self.conversation_id,
                Some(ids::CONVERSATION),
            )?;
        }
        if !self.messages.is_empty() || self.forked_from.is_some() || !self.merged_from.is_empty() {
            return Ok(());
        }
        let unknown: Vec<&str> = self.extra.keys().map(String::as_str).collect();
        let hint = if self.extra.contains_key("type") && self.extra.contains_key("content") {
            " (this looks like a moment: add it with `zblade add moment`)".to_string()
        } else if unknown.is_empty() {
            String::new()
        } else {
            format!(" (unknown field(s) {}: is one of them misspelt?)", unknown.join(", "))
        };
        Err(Error::field(
            source,
            "messages",
            format!("missing or empty; a conversation needs at least one message{hint}"),
        ))
    }

    /// Turns user input into a storable artifact: assigns missing ids, fills version, project,
    /// timestamps, title and counters, normalises reference paths, then validates everything.
    /// `root` is the project root, used to refuse references that escape it through symlinks.
    pub fn prepare_for_store(&mut self, project_id: &str, root: &Path, source: &str, now: DateTime<Utc>) -> Result<()> {
        if self.version.is_empty() {
            self.version = ARTIFACT_VERSION.to_string();
        }
        check_version(&self.version, source)?;
        self.assign_missing_ids();
        if self.project_id.is_empty() {
            self.project_id = project_id.to_string();
        }
        let first_ts = self.messages.iter().filter_map(|m| m.timestamp).min();
        let last_ts = self.messages.iter().filter_map(|m| m.timestamp).max();
        let created = *self.created_at.get_or_insert(first_ts.unwrap_or(now));
        self.updated_at = Some(self.updated_at.unwrap_or(last_ts.unwrap_or(now)).max(created));
        for message in &mut self.messages {
            message.timestamp.get_or_insert(created);
        }
        if self.title.trim().is_empty() {
            self.title = first_line_title(self.messages.first().map(|m| m.content.as_str()).unwrap_or(""));
        }
        self.metadata.total_messages = self.messages.len() as u64;
        let mut capture = CaptureCheck::new(root);
        for (i, message) in self.messages.iter_mut().enumerate() {
            if message.code_references.is_empty() {
                continue;
            }
            check_references(
                &mut message.code_references,
                &format!("messages[{i}].code_references"),
                source,
                Some(&mut capture),
                true,
            )?;
        }
        self.validate(source)
    }

    /// Checks an artifact as read from disk (or prepared for store): known version, valid and
    /// unique ids, sane references. Never touches the file system.
    pub fn validate(&self, source: &str) -> Result<()> {
        check_version(&self.version, source)?;
        check_id_field(
            source,
            "conversation_id",
            &self.conversation_id,
            Some(ids::CONVERSATION),
        )?;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, message) in self.messages.iter().enumerate() {
            check_id_field(source, &format!("messages[{i}].id"), &message.id, None)?;
            if let Some(first) = seen.insert(&message.id, i) {
                return Err(Error::field(
                    source,
                    format!("messages[{i}].id"),
                    format!(
                        "duplicate message id {:?} (first used by messages[{first}])",
                        message.id
                    ),
                ));
            }
            if !message.code_references.is_empty() {
                let mut refs = message.code_references.clone();
                check_references(
                    &mut refs,
                    &format!("messages[{i}].code_references"),
                    source,
                    None,
                    false,
                )?;
            }
        }
        let mut moment_ids: HashMap<&str, usize> = HashMap::new();
        for (i, moment) in self.moments.iter().enumerate() {
            check_id_field(source, &format!("moments[{i}].id"), &moment.id, Some(ids::MOMENT))?;
            if let Some(first) = moment_ids.insert(&moment.id, i) {
                return Err(Error::field(
                    source,
                    format!("moments[{i}].id"),
                    format!("duplicate moment id {:?} (first used by moments[{first}])", moment.id),
                ));
            }
            if let Some(message_id) = &moment.message_id
                && !seen.contains_key(message_id.as_str())
            {
                return Err(Error::field(
                    source,
                    format!("moments[{i}].message_id"),
                    format!("no message {message_id:?} in this conversation"),
                ));
            }
        }
        Ok(())
    }

    /// Tags of the conversation.
    pub fn tags(&self) -> &[String] {
        &self.metadata.tags
    }

    /// The artifact as pretty JSON with a trailing newline.
    pub fn to_artifact_json(&self) -> Vec<u8> {
        to_pretty(self)
    }
}

impl Moment {
    /// Turns user input into a storable artifact (see [`Conversation::prepare_for_store`]).
    pub fn prepare_for_store(&mut self, root: &Path, source: &str, now: DateTime<Utc>) -> Result<()> {
        if self.version.is_empty() {
            self.version = ARTIFACT_VERSION.to_string();
        }
        check_version(&self.version, source)?;
        if self.id.is_empty() {
            self.id = ids::new_id(ids::MOMENT);
        }
        self.created_at.get_or_insert(now);
        check_references(
            &mut self.code_references,
            "code_references",
            source,
            Some(&mut CaptureCheck::new(root)),
            true,
        )?;
        self.validate(source)
    }

    /// Checks a moment as read from disk (or prepared for store).
    pub fn validate(&self, source: &str) -> Result<()> {
        check_version(&self.version, source)?;
        check_id_field(source, "id", &self.id, Some(ids::MOMENT))?;
        if let Some(conv) = &self.conversation_id {
            check_id_field(source, "conversation_id", conv, Some(ids::CONVERSATION))?;
        }
        if self.content.trim().is_empty() {
            return Err(Error::field(source, "content", "must not be empty"));
        }
        if !(0.0..=1.0).contains(&self.relevance_score) {
            return Err(Error::field(
                source,
                "relevance_score",
                format!("{} is outside 0..1", self.relevance_score),
            ));
        }
        let mut refs = self.code_references.clone();
        check_references(&mut refs, "code_references", source, None, false)
    }

    /// The artifact as pretty JSON with a trailing newline.
    pub fn to_artifact_json(&self) -> Vec<u8> {
        to_pretty(self)
    }
}

fn to_pretty<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("artifacts always serialise");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC_EXAMPLE: &str = r#"{
  "version": "1.0",
  "conversation_id": "conv_abc123",
  "project_id": "proj_123",
  "created_at": "2026-01-17T14:00:00Z",
  "updated_at": "2026-01-17T15:30:00Z",
  "title": "Implement JWT authentication",
  "messages": [
    {"id": "msg_001", "role": "user", "content": "How do I implement JWT auth?",
     "timestamp": "2026-01-17T14:00:00Z",
     "code_references": [{"file": "src/auth.ts", "lines": [1, 50], "context": "User asked about this file"}]},
    {"id": "msg_002", "role": "assistant", "content": "Here's how...",
     "timestamp": "2026-01-17T14:01:00Z",
     "code_references": [{"file": "src/auth.ts", "lines": [10, 25], "context": "Generated this code",
       "diff": {"type": "addition", "content": "export function generateToken(user: User) { ... }"}}]}
  ],
  "moments": [{"id": "moment_001", "type": "decision", "content": "Use JWT with httpOnly cookies",
               "message_id": "msg_002", "timestamp": "2026-01-17T14:01:00Z", "tags": ["auth"]}],
  "metadata": {"total_messages": 15, "total_tokens": 12500,
               "models_used": ["anthropic/claude-sonnet-4"], "tags": ["authentication"]}
}"#;

    fn prepare(text: &str) -> Result<Conversation> {
        let mut conv = parse_conversation(text.as_bytes(), "c.json")?;
        let root = std::env::temp_dir();
        conv.prepare_for_store("proj_x", &root, "c.json", Utc::now())?;
        Ok(conv)
    }

    #[test]
    fn the_rfc_example_round_trips() {
        let conv = prepare(RFC_EXAMPLE).unwrap();
        assert_eq!(conv.metadata.total_messages, 2, "recomputed from the messages");
        assert_eq!(conv.project_id, "proj_123", "an explicit project id is kept");
        let again = parse_conversation(&conv.to_artifact_json(), "c.json").unwrap();
        assert_eq!(again, conv);
        again.validate("c.json").unwrap();
    }

    #[test]
    fn missing_ids_titles_and_timestamps_are_filled() {
        let conv = prepare(r#"{"messages": [{"role": "user", "content": "\n  Why JWT?  \nmore"}]}"#).unwrap();
        assert!(conv.conversation_id.starts_with("conv_"));
        assert!(conv.messages[0].id.starts_with("msg_"));
        assert_eq!(conv.title, "Why JWT?");
        assert!(conv.created_at.is_some() && conv.messages[0].timestamp.is_some());
        assert_eq!(conv.version, ARTIFACT_VERSION);
    }

    #[test]
    fn unknown_fields_are_kept() {
        let text = r#"{"messages": [{"role": "user", "content": "x", "model": "m1"}], "source": "cursor"}"#;
        let conv = prepare(text).unwrap();
        let back: Value = serde_json::from_slice(&conv.to_artifact_json()).unwrap();
        assert_eq!(back["source"], "cursor");
        assert_eq!(back["messages"][0]["model"], "m1");
    }

    fn error_of(text: &str) -> String {
        prepare(text).unwrap_err().to_string()
    }

    #[test]
    fn truncated_json_names_file_and_line() {
        let err = error_of("{\n  \"title\": \"x\",\n  \"messages\": [");
        assert!(err.starts_with("c.json:3:"), "{err}");
        assert!(err.contains("EOF"), "{err}");
    }

    #[test]
    fn wrong_types_name_the_field() {
        let err = error_of(r#"{"messages": [{"role": "user", "content": "x"}, {"role": "bot", "content": "y"}]}"#);
        assert!(err.contains("field `messages[1].role`"), "{err}");
        let err = error_of(r#"{"messages": [{"role": "user", "content": 5}]}"#);
        assert!(err.contains("field `messages[0].content`"), "{err}");
        let err = error_of(r#"[1, 2]"#);
        assert!(err.contains("c.json:1:"), "{err}");
    }

    #[test]
    fn invalid_utf8_is_reported_with_position() {
        let mut bytes = br#"{"title": "caf"#.to_vec();
        bytes.extend_from_slice(&[0xff, 0xfe]);
        bytes.extend_from_slice(br#"", "messages": []}"#);
        let err = parse_conversation(&bytes, "c.json").unwrap_err().to_string();
        assert!(err.starts_with("c.json:1:"), "{err}");
    }

    /// The capture checks are cached per path within an artifact: a path refused once is
    /// refused wherever it appears again, and an allowed path does not let a hostile one by.
    #[cfg(unix)]
    #[test]
    fn references_to_secrets_or_out_through_symlinks_are_refused_in_every_message() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join("src")).unwrap();
        std::fs::write(project.path().join("src/a.rs"), "fn a() {}\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join("out")).unwrap();
        let conversation = |files: &[&str]| {
            let messages: Vec<String> = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    format!(
                        r#"{{"id": "msg_{i}", "role": "user", "content": "x", "code_references": [{{"file": "{f}", "lines": [1, 1]}}]}}"#
                    )
                })
                .collect();
            format!(r#"{{"messages": [{}]}}"#, messages.join(", "))
        };
        let prepare_in = |text: &str| {
            let mut conv = parse_conversation(text.as_bytes(), "c.json").unwrap();
            conv.prepare_for_store("proj_x", project.path(), "c.json", Utc::now())
                .map(|()| conv)
        };
        let ok = prepare_in(&conversation(&["src/a.rs", "src/a.rs"])).unwrap();
        assert_eq!(ok.messages[1].code_references[0].file, "src/a.rs");
        for (files, field) in [
            (vec!["src/a.rs", ".env"], "messages[1].code_references[0].file"),
            (
                vec!["src/a.rs", "src/a.rs", "out/stolen.rs"],
                "messages[2].code_references[0].file",
            ),
            (vec!["src/./a.rs", ".git/config"], "messages[1].code_references[0].file"),
        ] {
            let err = prepare_in(&conversation(&files)).unwrap_err().to_string();
            assert!(err.contains(field), "{files:?}: {err}");
        }
    }

    #[test]
    fn duplicate_message_ids_are_refused() {
        let err = error_of(
            r#"{"messages": [{"id": "msg_1", "role": "user", "content": "a"}, {"id": "msg_1", "role": "assistant", "content": "b"}]}"#,
        );
        assert!(err.contains("messages[1].id") && err.contains("duplicate"), "{err}");
    }

    #[test]
    fn backwards_line_ranges_are_refused() {
        let err = error_of(
            r#"{"messages": [{"role": "user", "content": "a", "code_references": [{"file": "a.rs", "lines": [50, 10]}]}]}"#,
        );
        assert!(err.contains("messages[0].code_references[0].lines"), "{err}");
        let err = error_of(
            r#"{"messages": [{"role": "user", "content": "a", "code_references": [{"file": "a.rs", "lines": [0, 10]}]}]}"#,
        );
        assert!(err.contains("1-based"), "{err}");
    }

    #[test]
    fn escaping_reference_paths_are_refused() {
        for file in ["/etc/passwd", "../secret", "src/../../x"] {
            let text = format!(
                r#"{{"messages": [{{"role": "user", "content": "a", "code_references": [{{"file": "{file}", "lines": [1, 2]}}]}}]}}"#
            );
            let err = error_of(&text);
            assert!(err.contains("messages[0].code_references[0].file"), "{err}");
        }
    }

    #[test]
    fn future_versions_are_refused() {
        let err = prepare(r#"{"version": "2.0", "messages": []}"#).unwrap_err();
        assert_eq!(err.code(), "unsupported_version");
        assert!(prepare(r#"{"version": "1.4", "messages": []}"#).is_ok());
    }

    #[test]
    fn unsafe_conversation_ids_are_refused() {
        let err = error_of(r#"{"conversation_id": "conv_../../etc", "messages": []}"#);
        assert!(err.contains("field `conversation_id`"), "{err}");
    }

    #[test]
    fn moments_are_validated() {
        let mut m = parse_moment(
            br#"{"type": "decision", "content": "Use JWT", "tags": ["auth"]}"#,
            "m.json",
        )
        .unwrap();
        m.prepare_for_store(&std::env::temp_dir(), "m.json", Utc::now())
            .unwrap();
        assert!(m.id.starts_with("moment_"));
        assert_eq!(m.relevance_score, 0.5);
        let mut bad = parse_moment(
            br#"{"type": "decision", "content": "x", "relevance_score": 3}"#,
            "m.json",
        )
        .unwrap();
        let err = bad
            .prepare_for_store(&std::env::temp_dir(), "m.json", Utc::now())
            .unwrap_err();
        assert!(err.to_string().contains("relevance_score"));
        let err = parse_moment(br#"{"type": "idea", "content": "x"}"#, "m.json").unwrap_err();
        assert!(err.to_string().contains("field `type`"), "{err}");
    }
}
