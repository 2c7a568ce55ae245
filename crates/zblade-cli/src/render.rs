//! How each command's result is printed: as text for people, or as JSON with `--json`.

use std::io::Write;

use serde::Serialize;
use zblade_engine::SourceStatus;
use zblade_engine::{
    AddOutcome, CompressorInstall, CompressorModel, CompressorStatus, ContextResult, ConversationSummary, Error,
    ExtractReport, FsckReport, Hit, ImportReport, IndexReport, InitReport, ModelDownload, ModelEntry, ModelImport,
    MomentSummary, ReferenceReport, ReindexReport, SearchResults, Shown, Status, SummarizeReport, WatchEvent,
};
use zblade_engine::{CommitView, DecisionState, Why};

/// Lines of code shown under a search hit's reference (`zblade show` prints them all).
const SEARCH_CODE_LINES: usize = 8;

/// The output stream and how to write to it.
pub struct Out<W: Write> {
    w: W,
    json: bool,
    color: bool,
}

type R = Result<(), Error>;

/// A command's result. `--json` prints its `Serialize` form, so every command has JSON output
/// for free; text mode prints [`Render::text`], written for people.
pub trait Render: Serialize {
    /// The result as text.
    fn text<W: Write>(&self, out: &mut Out<W>) -> R;
}

fn io(e: std::io::Error) -> Error {
    Error::io("<stdout>", e)
}

macro_rules! line {
    ($out:expr) => { writeln!($out.w).map_err(io) };
    ($out:expr, $($arg:tt)*) => { writeln!($out.w, $($arg)*).map_err(io) };
}

use zblade_engine::one_line;

pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

impl<W: Write> Out<W> {
    /// Writes to `w`; `color` turns search highlights into bold text.
    pub fn new(w: W, json: bool, color: bool) -> Self {
        Out { w, json, color }
    }

    /// Prints a command's result: JSON with `--json`, else its text.
    pub fn print<T: Render + ?Sized>(&mut self, value: &T) -> R {
        if self.json { self.json(value) } else { value.text(self) }
    }

    /// The underlying writer.
    pub fn writer(&mut self) -> &mut W {
        &mut self.w
    }

    fn json<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        serde_json::to_writer_pretty(&mut self.w, value).map_err(|e| Error::io("<stdout>", e.into()))?;
        line!(self)
    }

    fn highlight(&self, snippet: &str) -> String {
        let flat = one_line(snippet, 400);
        if self.color {
            flat.replace('«', "\x1b[1m").replace('»', "\x1b[0m")
        } else {
            flat
        }
    }

    fn message(&mut self, m: &zblade_engine::Message, refs: &[&ReferenceReport], max_lines: usize) -> R {
        let when = m
            .timestamp
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let model = m.model.as_deref().map(|m| format!(" · {m}")).unwrap_or_default();
        line!(self, "── {} · {} · {}{model}", m.role.as_str(), when, m.id)?;
        if !m.content.trim().is_empty() {
            line!(self, "{}", m.content.trim_end())?;
        }
        for call in &m.tool_calls {
            let arguments = one_line(&call.arguments.to_string(), 80);
            let result = match &call.result {
                Some(r) if r.is_error => format!(" → error ({})", human_bytes(r.size)),
                Some(r) => format!(" → {}", human_bytes(r.size)),
                None => " → no result".to_string(),
            };
            line!(self, "  ⚙ {}({arguments}){result}", call.name)?;
        }
        for r in refs {
            self.reference_block(r, max_lines)?;
        }
        Ok(())
    }

    /// One reference: where it was, where it is now, its status, and the code there now.
    fn reference_block(&mut self, r: &ReferenceReport, max_lines: usize) -> R {
        let captured = format!("{}:{}-{}", r.captured.file, r.captured.lines[0], r.captured.lines[1]);
        let now = match &r.live {
            Some(live) if live.file == r.captured.file && live.lines == r.captured.lines => String::new(),
            Some(live) => format!(" → now {}:{}-{}", live.file, live.lines[0], live.lines[1]),
            None => String::new(),
        };
        let mut status = r.status_text();
        if let Some(drift) = &r.drift {
            let commits = match drift.commits_since {
                Some(0) => ", not committed yet".to_string(),
                Some(n) => format!(", {n} commit(s) since"),
                None => String::new(),
            };
            status = format!("{status}, file changed since capture{commits}");
        }
        let why = r.context.as_deref().map(|c| format!("  ({c})")).unwrap_or_default();
        line!(self, "  ↳ {captured}{now}  [{status}]{why}")?;
        if let Some(reason) = &r.reason {
            line!(self, "    {reason}")?;
        }
        if let (Some(code), Some(live)) = (&r.code, &r.live) {
            let width = (live.lines[1].to_string()).len();
            for (i, text) in code.iter().enumerate().take(max_lines) {
                line!(self, "    {:>width$} │ {}", live.lines[0] as usize + i, text)?;
            }
            if code.len() > max_lines {
                line!(
                    self,
                    "    {:>width$} │ … {} more line(s): zblade refs show {}",
                    "",
                    code.len() - max_lines,
                    r.key
                )?;
            }
        }
        Ok(())
    }

    /// Any value as JSON.
    pub fn value(&mut self, value: &serde_json::Value) -> R {
        self.json(value)
    }

    /// One line of text.
    pub fn note(&mut self, text: &str) -> R {
        line!(self, "{text}")
    }

    fn hits(&mut self, query: &str, hits: &[Hit]) -> R {
        if hits.is_empty() {
            return line!(self, "No results for {query:?}.");
        }
        for (i, found) in hits.iter().enumerate() {
            let h = &found.hit;
            let place = match (&h.conversation_id, h.kind) {
                (Some(conv), zblade_engine::HitKind::Message) => format!("{conv} › {}", h.id),
                _ => h.id.clone(),
            };
            if h.kind == zblade_engine::HitKind::Code {
                // A chunk cut by syntax is named by its symbols: `GitignoreBuilder::add_line`.
                match &h.title {
                    Some(symbol) => line!(self, "{:>2}. [code] {}  {place}", i + 1, one_line(symbol, 80))?,
                    None => line!(self, "{:>2}. [code] {place}", i + 1)?,
                }
                for (n, text) in h.snippet.lines().take(SEARCH_CODE_LINES).enumerate() {
                    let number = h.lines.map_or(0, |l| l.0 as usize) + n;
                    line!(self, "    {number:>5} │ {text}")?;
                }
                continue;
            }
            if h.kind == zblade_engine::HitKind::Commit {
                let author = h
                    .label
                    .as_deref()
                    .and_then(|a| a.split(" <").next())
                    .unwrap_or_default();
                line!(
                    self,
                    "{:>2}. [commit] {}  ({author}, {})",
                    i + 1,
                    &h.id[..h.id.len().min(12)],
                    &h.timestamp[..10.min(h.timestamp.len())]
                )?;
                line!(self, "    {}", one_line(h.title.as_deref().unwrap_or_default(), 80))?;
                let snippet = self.highlight(&h.snippet);
                line!(self, "    {}", one_line(&snippet, 120))?;
                continue;
            }
            let label = h.label.as_deref().map(|l| format!("{l}, ")).unwrap_or_default();
            let kind = serde_json::to_value(h.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            line!(
                self,
                "{:>2}. [{kind}] {place}  ({label}{})",
                i + 1,
                &h.timestamp[..10.min(h.timestamp.len())]
            )?;
            if let Some(title) = &h.title {
                line!(self, "    {}", one_line(title, 80))?;
            }
            let snippet = self.highlight(&h.snippet);
            line!(self, "    {snippet}")?;
            if !found.also_in.is_empty() {
                line!(self, "    also in: {}", found.also_in.join(", "))?;
            }
            for r in &found.references {
                self.reference_block(r, SEARCH_CODE_LINES)?;
            }
        }
        Ok(())
    }

    pub fn watch_event(&mut self, event: &WatchEvent) -> R {
        if self.json {
            let value = match event {
                WatchEvent::Ready { references, not_ok } => {
                    serde_json::json!({"event": "ready", "references": references, "not_ok": not_ok})
                }
                WatchEvent::Updated {
                    trigger,
                    checked,
                    changed,
                    elapsed,
                } => serde_json::json!({
                    "event": "updated", "trigger": trigger, "checked": checked, "changed": changed,
                    "elapsed_ms": elapsed.as_secs_f64() * 1000.0}),
                WatchEvent::Notice(message) => serde_json::json!({"event": "notice", "message": message}),
                WatchEvent::Imported {
                    source,
                    messages,
                    conversations,
                    elapsed,
                } => serde_json::json!({
                    "event": "imported", "source": source, "messages": messages,
                    "conversations": conversations, "elapsed_ms": elapsed.as_secs_f64() * 1000.0,
                }),
                WatchEvent::Indexed {
                    files,
                    embedded,
                    elapsed,
                } => serde_json::json!({
                    "event": "indexed", "files": files, "embedded": embedded,
                    "elapsed_ms": elapsed.as_secs_f64() * 1000.0,
                }),
            };
            return line!(self, "{value}");
        }
        match event {
            WatchEvent::Ready { references, not_ok } => {
                line!(
                    self,
                    "Watching: {references} reference(s) checked, {not_ok} not ok. Ctrl-C stops."
                )
            }
            WatchEvent::Updated {
                trigger,
                checked,
                changed,
                elapsed,
            } => {
                line!(
                    self,
                    "{trigger}: {checked} reference(s) re-checked in {:.0} ms, {} changed",
                    elapsed.as_secs_f64() * 1000.0,
                    changed.len()
                )?;
                for r in changed {
                    self.reference_block(r, 0)?;
                }
                Ok(())
            }
            WatchEvent::Notice(message) => line!(self, "note: {message}"),
            WatchEvent::Imported {
                source,
                messages,
                conversations,
                elapsed,
            } => line!(
                self,
                "imported {messages} new message(s) from {source} into {conversations} conversation(s) ({:.0} ms)",
                elapsed.as_secs_f64() * 1000.0
            ),
            WatchEvent::Indexed {
                files,
                embedded,
                elapsed,
            } => line!(
                self,
                "indexed {files} changed file(s) for search, {embedded} new chunk(s) embedded ({:.0} ms)",
                elapsed.as_secs_f64() * 1000.0
            ),
        }
    }
}

impl Render for InitReport {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        let dir = self.root.join(".zblade");
        if self.created.is_empty() && !self.settings_completed {
            line!(
                out,
                "zblade memory already set up in {} (nothing changed)",
                dir.display()
            )
        } else {
            line!(out, "zblade memory ready in {}", dir.display())?;
            for path in &self.created {
                line!(out, "  created {path}")?;
            }
            if self.settings_completed {
                line!(
                    out,
                    "  added missing fields to .zblade/config/settings.json (your values kept)"
                )?;
            }
            line!(
                out,
                "Next: zblade index (the project's files, for code search), zblade import --detect (your agents' sessions) or zblade add conversation FILE.json, then zblade search WORDS"
            )
        }
    }
}

/// `added`'s result and what its text needs besides; `--json` prints `outcomes` alone.
#[derive(Serialize)]
#[serde(transparent)]
pub struct Added<'a> {
    /// What `--json` prints.
    pub outcomes: &'a [AddOutcome],
    /// Text only.
    #[serde(skip)]
    pub is_moment: bool,
}

impl Render for Added<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        for o in self.outcomes {
            let verb = if o.created { "added" } else { "updated" };
            if self.is_moment {
                line!(out, "{verb} {} → {}", o.id, o.artifact_path)?;
            } else {
                line!(out, "{verb} {} ({} messages) → {}", o.id, o.messages, o.artifact_path)?;
            }
        }
        Ok(())
    }
}

impl Render for [ConversationSummary] {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.is_empty() {
            return line!(
                out,
                "No conversations yet. Add one with: zblade add conversation FILE.json"
            );
        }
        for c in self {
            let mut tags = if c.tags.is_empty() {
                String::new()
            } else {
                format!("  [{}]", c.tags.join(", "))
            };
            if let Some(source) = &c.source {
                tags.push_str(&format!("  ‹{source}›"));
            }
            line!(
                out,
                "{}  {}  {:>4} msgs  {}{}",
                c.id,
                &c.updated_at[..16.min(c.updated_at.len())],
                c.message_count,
                one_line(&c.title, 60),
                tags
            )?;
        }
        Ok(())
    }
}

impl Render for [CommitView] {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.is_empty() {
            return line!(
                out,
                "No commits indexed. `zblade index` reads the repository's history (a git repository is needed)."
            );
        }
        for view in self {
            let c = &view.commit;
            line!(
                out,
                "{}  {}  {}",
                c.short(),
                &c.committed_at[..10.min(c.committed_at.len())],
                one_line(&c.subject, 70)
            )?;
            if !view.fate.changed_by.is_empty() {
                line!(out, "         {}", view.status)?;
            }
        }
        Ok(())
    }
}

impl Render for Why {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        let lines = match self.lines {
            (1, u32::MAX) => String::new(),
            (a, b) if a == b => format!(":{a}"),
            (a, b) => format!(":{a}-{b}"),
        };
        line!(out, "Why {}{lines} is as it is", self.file)?;
        for note in &self.notes {
            line!(out, "  ({note})")?;
        }
        line!(out)?;
        if self.commits.is_empty() {
            line!(out, "Commits: none found for these lines.")?;
        } else {
            line!(out, "Commits, newest first:")?;
        }
        for c in &self.commits {
            let commit = &c.view.commit;
            let role = match c.role.as_str() {
                "wrote" => format!("wrote {} of these lines", c.lines),
                _ => format!("wrote {} line(s) these replaced", c.lines),
            };
            line!(
                out,
                "  {}  {}  {}",
                commit.short(),
                &commit.committed_at[..10.min(commit.committed_at.len())],
                one_line(&commit.subject, 70)
            )?;
            line!(out, "      {role}; {}", c.view.status)?;
            if let Some(first) = commit.body.lines().find(|l| !l.trim().is_empty()) {
                line!(out, "      {}", one_line(first, 90))?;
            }
        }
        line!(out)?;
        if self.memory.is_empty() {
            line!(out, "Conversations and moments: none reference these lines.")?;
            return Ok(());
        }
        line!(out, "Conversations and moments, standing first:")?;
        for m in &self.memory {
            let state = m
                .state
                .as_ref()
                .map(|s| format!("  [{}]", s.describe()))
                .unwrap_or_default();
            line!(
                out,
                "  {}  {}  {}{state}",
                m.id,
                m.time.as_deref().map(|t| &t[..10.min(t.len())]).unwrap_or(""),
                one_line(&m.title, 60)
            )?;
            line!(out, "      {}", one_line(&m.text, 100))?;
            line!(out, "      reference: {}", m.reference.status_text())?;
            if !m.changed_since.is_empty() {
                line!(out, "      changed since by {}", m.changed_since.join(", "))?;
            }
        }
        Ok(())
    }
}

impl Render for DecisionState {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(out, "{}: {}.", self.id, self.describe())
    }
}

impl Render for [DecisionState] {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.is_empty() {
            return line!(
                out,
                "Every moment and conversation stands (none superseded or rejected)."
            );
        }
        for state in self {
            let how = if state.decision.automatic {
                "  (found by zblade)"
            } else {
                ""
            };
            line!(
                out,
                "{}  {}  {}{how}",
                state.decision.decided_at.format("%Y-%m-%d"),
                state.id,
                state.describe()
            )?;
        }
        Ok(())
    }
}

/// What `zblade moments reinstate` did.
#[derive(Serialize)]
pub struct Stands<'a> {
    /// The moment or conversation.
    pub id: &'a str,
}

impl Render for Stands<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(out, "{} stands again.", self.id)
    }
}

impl Render for [MomentSummary] {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.is_empty() {
            return line!(out, "No moments yet. Add one with: zblade add moment FILE.json");
        }
        for m in self {
            let tags = if m.tags.is_empty() {
                String::new()
            } else {
                format!("  [{}]", m.tags.join(", "))
            };
            line!(out, "{}  {:<8}  {}{}", m.id, m.kind, one_line(&m.content, 70), tags)?;
        }
        Ok(())
    }
}

impl Render for Shown {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        match self {
            Shown::Conversation {
                conversation: c,
                references,
            } => {
                line!(out, "{}", c.title)?;
                line!(
                    out,
                    "{}  ·  {} messages  ·  created {}  ·  updated {}",
                    c.conversation_id,
                    c.messages.len(),
                    c.created_at
                        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                        .unwrap_or_default(),
                    c.updated_at
                        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                        .unwrap_or_default()
                )?;
                if !c.metadata.tags.is_empty() {
                    line!(out, "tags: {}", c.metadata.tags.join(", "))?;
                }
                if let Some(source) = &c.metadata.source {
                    line!(
                        out,
                        "imported from {} session {} ({})",
                        source.tool,
                        source.session_id,
                        source.file
                    )?;
                }
                for m in &c.messages {
                    line!(out)?;
                    let refs: Vec<&ReferenceReport> = references
                        .iter()
                        .filter(|r| r.message_id.as_deref() == Some(&m.id))
                        .collect();
                    out.message(m, &refs, usize::MAX)?;
                }
                for m in &c.moments {
                    line!(out)?;
                    line!(out, "◆ {} {}: {}", m.kind.as_str(), m.id, m.content)?;
                }
                Ok(())
            }
            Shown::Moment { moment: m, references } => {
                line!(
                    out,
                    "{} {}  (relevance {:.2})",
                    m.kind.as_str(),
                    m.id,
                    m.relevance_score
                )?;
                if let Some(conv) = &m.conversation_id {
                    line!(out, "from {conv}")?;
                }
                if !m.tags.is_empty() {
                    line!(out, "tags: {}", m.tags.join(", "))?;
                }
                line!(out)?;
                line!(out, "{}", m.content)?;
                if let Some(context) = &m.context {
                    line!(out)?;
                    line!(out, "Context: {context}")?;
                }
                for r in references {
                    out.reference_block(r, usize::MAX)?;
                }
                Ok(())
            }
            Shown::InlineMoment {
                conversation_id,
                moment: m,
            } => {
                line!(out, "{} {}  (in {conversation_id})", m.kind.as_str(), m.id)?;
                line!(out)?;
                line!(out, "{}", m.content)
            }
            Shown::Commit { commit } => {
                let c = &commit.commit;
                line!(out, "commit {}", c.sha)?;
                line!(out, "Author: {}", c.author)?;
                line!(out, "Date:   {}", c.committed_at)?;
                line!(out)?;
                line!(out, "    {}", c.subject)?;
                if !c.body.is_empty() {
                    line!(out)?;
                    for text in c.body.lines() {
                        line!(out, "    {text}")?;
                    }
                }
                line!(out)?;
                line!(
                    out,
                    "{} file(s), +{} -{}; its lines now: {}",
                    c.files_changed,
                    c.lines_added,
                    c.lines_removed,
                    commit.status
                )?;
                for path in c.paths.iter().take(20) {
                    line!(out, "  {path}")?;
                }
                if c.paths.len() > 20 {
                    line!(out, "  … and {} more", c.paths.len() - 20)?;
                }
                Ok(())
            }
            Shown::Messages { matches } => {
                for (i, found) in matches.iter().enumerate() {
                    if i > 0 {
                        line!(out)?;
                    }
                    line!(out, "in {} — {}", found.conversation_id, found.title)?;
                    let refs: Vec<&ReferenceReport> = found.references.iter().collect();
                    out.message(&found.message, &refs, usize::MAX)?;
                }
                Ok(())
            }
        }
    }
}

/// `results`'s result and what its text needs besides; `--json` prints `results` alone.
#[derive(Serialize)]
#[serde(transparent)]
pub struct Results<'a> {
    /// What `--json` prints.
    pub results: &'a SearchResults,
    /// Text only.
    #[serde(skip)]
    pub query: &'a str,
}

impl Render for Results<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        out.hits(self.query, &self.results.hits)
    }
}

/// `context`'s result and what its text needs besides; `--json` prints `result` alone.
#[derive(Serialize)]
#[serde(transparent)]
pub struct Assembled<'a> {
    /// What `--json` prints.
    pub result: &'a ContextResult,
    /// Text only.
    #[serde(skip)]
    pub receipt: bool,
}

impl Render for Assembled<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        write!(out.w, "{}", self.result.pack.text).map_err(io)?;
        if self.receipt {
            write!(out.w, "{}", zblade_engine::receipt_text(self.result)).map_err(io)?;
        }
        Ok(())
    }
}

impl Render for ExtractReport {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(
            out,
            "{} moment(s) written from {} conversation(s) ({} unchanged since the last run; {} extractor).",
            self.written.len(),
            self.conversations,
            self.unchanged,
            self.extractor
        )?;
        for id in &self.written {
            line!(out, "  {id}")?;
        }
        for notice in &self.notices {
            eprintln!("zblade: note: {notice}");
        }
        Ok(())
    }
}

impl Render for SummarizeReport {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(
            out,
            "Summaries: {} written, {} still fresh, of {} conversation(s) ({}).",
            self.refreshed.len(),
            self.unchanged,
            self.conversations,
            self.summarizer
        )?;
        for id in &self.refreshed {
            line!(out, "  {id}")?;
        }
        for notice in &self.notices {
            eprintln!("zblade: note: {notice}");
        }
        Ok(())
    }
}

impl Render for CompressorStatus {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        match &self.model {
            Some(m) => line!(
                out,
                "Compressor: {} ({}, {} parameters, {}, context {} tokens{}).",
                self.compressor,
                m.path.display(),
                m.parameters,
                human_bytes(m.size_bytes),
                m.context_tokens,
                if m.chat_template {
                    ", chat template"
                } else {
                    ", no chat template"
                }
            ),
            None => {
                line!(out, "Compressor: extractive (deterministic; no model is used).")?;
                if let Some(notice) = &self.notice {
                    line!(out, "Configured model {:?}: {notice}", self.configured)?;
                } else {
                    line!(
                        out,
                        "Install a model with `zblade compressor import FILE.gguf --use` (see docs/CONTEXT.md)."
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl Render for [CompressorModel] {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.is_empty() {
            return line!(
                out,
                "No compressor models installed (`zblade compressor import FILE.gguf`)."
            );
        }
        for m in self {
            let mark = if m.active { "*" } else { " " };
            let problem = m.problem.as_deref().map(|p| format!("  ({p})")).unwrap_or_default();
            line!(
                out,
                "{mark} {:<32} {:>9}  {}{problem}",
                m.name,
                human_bytes(m.size_bytes),
                m.path
            )?;
        }
        Ok(())
    }
}

impl Render for CompressorInstall {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(
            out,
            "Installed {} at {} ({}, sha256 {}{}).{}",
            self.model.name,
            self.model.path,
            human_bytes(self.model.size_bytes),
            self.sha256,
            if self.verified {
                ", verified"
            } else {
                ", not checked: no --sha256 given"
            },
            if self.model.active {
                " The compressor uses it now."
            } else {
                ""
            }
        )
    }
}

impl Render for [ModelEntry] {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        for m in self {
            let mark = if m.active { "*" } else { " " };
            let place = match (&m.dir, &m.repo) {
                (Some(dir), _) => dir.clone(),
                (None, Some(repo)) => format!("not installed; `zblade models download {}` fetches {repo}", m.name),
                (None, None) => "not installed".into(),
            };
            let used = match (m.active, m.code) {
                (true, true) => "conversations, code",
                (true, false) => "conversations",
                (false, true) => "code",
                (false, false) => "",
            };
            line!(out, "{mark} {:<22} {used:<20} {place}", m.name)?;
        }
        Ok(())
    }
}

impl Render for ModelDownload {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(
            out,
            "Installed {} in {} ({}).{}",
            self.name,
            self.dir,
            human_bytes(self.bytes),
            model_activation_note(self.active)
        )
    }
}

impl Render for ModelImport {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(
            out,
            "Installed {} in {} ({} files).{}",
            self.name,
            self.dir,
            self.files.len(),
            model_activation_note(self.active)
        )
    }
}

impl Render for IndexReport {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.converted > 0 {
            line!(
                out,
                "Conversations: {} converted to manifests over the message store (messages stored once).",
                self.converted
            )?;
        }
        let c = &self.code;
        line!(
            out,
            "Files: {} considered, {} indexed, {} unchanged, {} removed; {} code chunks in the index ({:.1} s).",
            c.files,
            c.indexed,
            c.unchanged,
            c.removed,
            c.chunks,
            c.elapsed.as_secs_f64()
        )?;
        for (reason, paths) in &c.skipped {
            let shown: Vec<&str> = paths.iter().take(3).map(String::as_str).collect();
            let more = if paths.len() > 3 {
                format!(" and {} more", paths.len() - 3)
            } else {
                String::new()
            };
            line!(out, "  skipped ({reason}): {}{more}", shown.join(", "))?;
        }
        if c.changed_while_reading > 0 {
            line!(
                out,
                "  {} file(s) changed while being read; they are read again on the next run.",
                c.changed_while_reading
            )?;
        }
        let h = &self.history;
        if h.commits > 0 || h.read > 0 {
            line!(
                out,
                "History: {} new commit(s) read{}, {} in the index ({:.1} s).",
                h.read,
                if h.redacted > 0 {
                    format!(", {} secret(s) redacted from messages", h.redacted)
                } else {
                    String::new()
                },
                h.commits,
                h.elapsed.as_secs_f64()
            )?;
        }
        for note in &h.notes {
            line!(out, "  history: {note}")?;
        }
        if let Some(s) = &self.semantic {
            let model = match &s.code_model {
                Some(code) => format!("{}, code: {code}", s.model),
                None => s.model.clone(),
            };
            line!(
                out,
                "Embeddings ({}): {} chunks, {} distinct texts, {} embedded now, {} already had vectors, {} stale removed{} ({:.1} s).",
                model,
                s.chunks,
                s.distinct,
                s.embedded,
                s.distinct - s.embedded.min(s.distinct),
                s.removed,
                if s.ann_index { ", ANN index in use" } else { "" },
                s.elapsed.as_secs_f64()
            )?;
            if let Some(code) = &s.code_model
                && s.code_embedded > 0
            {
                line!(
                    out,
                    "  {} code chunk(s) embedded with the code model {code}.",
                    s.code_embedded
                )?;
            }
        }
        let m = &self.summaries;
        line!(
            out,
            "Summaries ({}): {} written, {} still fresh.",
            m.summarizer,
            m.refreshed.len(),
            m.unchanged
        )?;
        for notice in &m.notices {
            eprintln!("zblade: note: {notice}");
        }
        Ok(())
    }
}

/// `references`'s result and what its text needs besides; `--json` prints `refs` alone.
#[derive(Serialize)]
#[serde(transparent)]
pub struct ReferencesChecked<'a> {
    /// What `--json` prints.
    pub refs: &'a [ReferenceReport],
    /// Text only.
    #[serde(skip)]
    pub total: usize,
}

impl Render for ReferencesChecked<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.total == 0 {
            return line!(
                out,
                "No code references yet. They come with conversations and moments that cite files."
            );
        }
        for r in self.refs {
            let live = match &r.live {
                Some(l) => format!("{}:{}-{}", l.file, l.lines[0], l.lines[1]),
                None => "—".into(),
            };
            let drift = if r.drift.is_some() { "  drift" } else { "" };
            line!(
                out,
                "{:<10} {}:{}-{} → {}{}  {}",
                r.status_text(),
                r.captured.file,
                r.captured.lines[0],
                r.captured.lines[1],
                live,
                drift,
                r.key
            )?;
        }
        let mut counts: Vec<(zblade_engine::ReferenceStatus, usize)> = Vec::new();
        for r in self.refs {
            match counts.iter_mut().find(|(s, _)| *s == r.status) {
                Some((_, n)) => *n += 1,
                None => counts.push((r.status, 1)),
            }
        }
        let summary: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        line!(
            out,
            "{} of {} reference(s) listed: {}",
            self.refs.len(),
            self.total,
            summary.join(", ")
        )
    }
}

impl Render for ReferenceReport {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(out, "{}", self.key)?;
        out.reference_block(self, usize::MAX)
    }
}

impl Render for ReindexReport {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.recreated_database {
            line!(out, "The old index was damaged; it was recreated.")?;
        }
        line!(
            out,
            "Reindexed {} conversations ({} messages) and {} moments, and checked {} code references, in {:.2} s.",
            self.conversations,
            self.messages,
            self.moments,
            self.references,
            self.elapsed.as_secs_f64()
        )?;
        if !self.skipped.is_empty() {
            line!(
                out,
                "Skipped {} artifact(s) that could not be indexed (the files are untouched):",
                self.skipped.len()
            )?;
            for (path, why) in &self.skipped {
                line!(out, "  {path}: {why}")?;
            }
        }
        Ok(())
    }
}

/// `fsck`'s result and what its text needs besides; `--json` prints `report` alone.
#[derive(Serialize)]
#[serde(transparent)]
pub struct FsckOutcome<'a> {
    /// What `--json` prints.
    pub report: &'a FsckReport,
    /// Text only.
    #[serde(skip)]
    pub repair: bool,
}

impl Render for FsckOutcome<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.report.problems.is_empty() {
            return line!(out, "ok: {} artifacts, index matches", self.report.artifacts);
        }
        for p in &self.report.problems {
            let kind = serde_json::to_value(p.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let fixed = if p.repaired { "  [repaired]" } else { "" };
            line!(out, "{kind:<13} {}  {}{fixed}", p.path, p.detail)?;
        }
        let open = self.report.problems.iter().filter(|p| !p.repaired).count();
        if open == 0 {
            line!(out, "{} problem(s) found and repaired.", self.report.problems.len())
        } else if self.repair {
            line!(
                out,
                "{open} problem(s) need you: fix the named files, then run `zblade fsck --repair` again."
            )
        } else {
            line!(
                out,
                "{open} problem(s). Run `zblade fsck --repair` to bring the index in line with the artifacts."
            )
        }
    }
}

/// What follows "Installed …" when a newly installed embedding model was made the active one.
fn model_activation_note(active: bool) -> &'static str {
    if active {
        " Search uses it now; run `zblade index` to embed with it."
    } else {
        ""
    }
}

/// `zblade status`: the status, and reference counts by live status.
pub struct ProjectStatus<'a> {
    /// Counts, sizes, storage mode, index health.
    pub status: &'a Status,
    /// References by live status (`unchecked` until first checked).
    pub health: &'a [(String, i64)],
}

/// JSON: the status with a `reference_health` object added.
impl Serialize for ProjectStatus<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(self.status).map_err(serde::ser::Error::custom)?;
        value["reference_health"] = self
            .health
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        value.serialize(serializer)
    }
}

impl Render for ProjectStatus<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(out, "project       {}  ({})", self.status.root, self.status.project_id)?;
        line!(out, "storage mode  {}", self.status.storage_mode)?;
        if self.status.outbox_waiting > 0 || self.status.outbox_rejected > 0 {
            line!(
                out,
                "outbox        {} write(s) waiting for the sync server (sent with the next write), {} refused by it (in .zblade/outbox/rejected/)",
                self.status.outbox_waiting,
                self.status.outbox_rejected
            )?;
        }
        line!(
            out,
            "artifacts     {} conversations, {} moments  ({})",
            self.status.conversation_artifacts,
            self.status.moment_artifacts,
            human_bytes(self.status.artifacts_bytes)
        )?;
        line!(
            out,
            "indexed       {} conversations, {} messages, {} moments, {} code references to {} files",
            self.status.indexed.conversations,
            self.status.indexed.messages,
            self.status.indexed.moments,
            self.status.indexed.code_references,
            self.status.indexed.referenced_files
        )?;
        line!(
            out,
            "code          {} files, {} chunks indexed for search",
            self.status.code_files,
            self.status.code_chunks
        )?;
        line!(
            out,
            "index         {}  (schema v{}; vectors {})",
            human_bytes(self.status.index_bytes),
            self.status.schema_version,
            human_bytes(self.status.vector_bytes)
        )?;
        let mut vectors = match self.status.vectors {
            Some(n) => format!("{n} vectors"),
            None => "nothing embedded yet".into(),
        };
        match self.status.pending_vectors {
            Some(0) | None => {}
            Some(n) => vectors.push_str(&format!(", {n} text(s) pending (run `zblade index`)")),
        }
        line!(out, "embeddings    {}: {vectors}", self.status.embedding_model)?;
        if let Some(problem) = &self.status.embedding_model_problem {
            line!(out, "              not usable: {problem}; search uses keywords only")?;
        }
        if let Some(code_model) = &self.status.code_model {
            let vectors = match self.status.code_vectors {
                Some(n) => format!("{n} vectors"),
                None => "nothing embedded yet (run `zblade index`)".into(),
            };
            line!(out, "code model    {code_model}: {vectors}")?;
        }
        if self.status.compressor_model.is_empty() {
            line!(out, "compressor    extractive (no model configured)")?;
        } else {
            line!(
                out,
                "compressor    {} (`zblade compressor status` checks it loads)",
                self.status.compressor_model
            )?;
        }
        line!(out, "cache         {}", human_bytes(self.status.cache_bytes))?;
        line!(out, "index health  {}", self.status.index_health)?;
        let refs: Vec<String> = self.health.iter().map(|(k, v)| format!("{v} {k}")).collect();
        if !refs.is_empty() {
            line!(out, "references    {}", refs.join(", "))?;
        }
        Ok(())
    }
}

/// `zblade import --detect`: each agent's store, sessions, and what was imported from it.
pub struct Detection<'a> {
    /// Each agent, with what the project follows and imported.
    pub sources: &'a [SourceStatus],
}

impl Serialize for Detection<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::json!({ "sources": self.sources }).serialize(serializer)
    }
}

impl Render for Detection<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        let day =
            |t: Option<chrono::DateTime<chrono::Utc>>| t.map_or("-".to_string(), |t| t.format("%Y-%m-%d").to_string());
        for row in self.sources {
            let d = &row.detected;
            let store = d
                .stores
                .first()
                .map_or("no store on this machine".to_string(), |p| p.display().to_string());
            line!(
                out,
                "{:<12} {:>5} session(s), {:>4} of this project ({} … {})  {}{}",
                d.source.as_str(),
                d.sessions,
                d.in_project,
                day(d.first),
                day(d.last),
                store,
                if d.experimental { "  (experimental reader)" } else { "" }
            )?;
            if row.last_import.is_some() || row.followed {
                line!(
                    out,
                    "{:<12} imported {} conversation(s), last {}{}",
                    "",
                    row.imported_conversations,
                    day(row.last_import),
                    if row.followed { "; followed live" } else { "" }
                )?;
            }
        }
        line!(
            out,
            "Import with: zblade import SOURCE   (add --follow to keep importing while you work)"
        )
    }
}

/// `zblade import SOURCE`.
#[derive(Serialize)]
#[serde(transparent)]
pub struct Imported<'a>(pub &'a ImportReport);

/// `zblade import --all`: one report per agent (`{"imports": [...]}` in JSON).
pub struct ImportedAll<'a>(pub &'a [ImportReport]);

impl Serialize for ImportedAll<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::json!({ "imports": self.0 }).serialize(serializer)
    }
}

impl Render for ImportedAll<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.0.is_empty() {
            return line!(
                out,
                "No agent on this machine has sessions of this project (zblade import --detect lists them)."
            );
        }
        for report in self.0 {
            Imported(report).text(out)?;
        }
        Ok(())
    }
}

impl Render for Imported<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        let r = self.0;
        if r.messages == 0 && r.warnings.is_empty() && r.conversations.iter().all(|c| c.new_messages == 0) {
            let files = if r.files_found == 0 {
                format!("no {} session found", r.source)
            } else {
                format!(
                    "{} session file(s) checked, {} of this project",
                    r.files_found,
                    r.files_found - r.other_projects
                )
            };
            return line!(out, "{}: nothing new since the last import ({files}).", r.source);
        }
        let created = r.conversations.iter().filter(|c| c.created).count();
        let verb = if r.dry_run { "would import" } else { "imported" };
        line!(
            out,
            "{}: {verb} {} message(s) into {} conversation(s) ({} new, {} extended) from {} of {} session file(s) ({}).",
            r.source,
            r.messages,
            r.conversations.len(),
            created,
            r.conversations.len() - created,
            r.files_read,
            r.files_found,
            human_bytes(r.bytes)
        )?;
        for c in r.conversations.iter().filter(|c| c.new_messages > 0).take(20) {
            line!(out, "  {}  +{:<4} {}", c.id, c.new_messages, one_line(&c.title, 60))?;
        }
        if r.conversations.len() > 20 {
            line!(
                out,
                "  … and {} more (--json lists them all)",
                r.conversations.len() - 20
            )?;
        }
        line!(
            out,
            "{} code reference(s) from the agents' reads and edits ({} outside the project, {} not found); {} moment(s); {} secret(s) redacted.",
            r.references,
            r.touches_outside,
            r.touches_not_found,
            r.moments,
            r.redacted
        )?;
        if r.other_projects > 0 {
            line!(
                out,
                "{} session file(s) of other projects left alone (--all-projects imports them).",
                r.other_projects
            )?;
        }
        let skipped: u64 = r.skipped.values().sum();
        if skipped > 0 {
            line!(
                out,
                "{skipped} record(s) skipped on purpose (tool progress, UI echoes, unknown types; --json lists them)."
            )?;
        }
        for warning in &r.warnings {
            eprintln!("zblade: warning: {warning}");
        }
        if !r.warnings.is_empty() {
            line!(out, "{} warning(s); everything else was imported.", r.warnings.len())?;
        }
        Ok(())
    }
}

/// What `zblade mcp install` and `zblade hooks install` wrote.
#[derive(Serialize)]
pub struct ConfigWritten(pub zblade_mcp::install::Written);

impl Render for ConfigWritten {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        let w = &self.0;
        if w.dry_run {
            line!(out, "# {} ({}; dry run, nothing written)", w.file.display(), w.change)?;
            write!(out.w, "{}", w.text).map_err(io)
        } else {
            line!(out, "{}: {} {}", w.client, w.change, w.file.display())
        }
    }
}

/// `zblade mcp clients`.
#[derive(Serialize)]
pub struct Clients(pub Vec<zblade_mcp::install::DetectedClient>);

impl Render for Clients {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        line!(
            out,
            "{:<12} {:<10} {:<16} {}",
            "CLIENT",
            "INSTALLED",
            "PROJECT CONFIG",
            "USER CONFIG"
        )?;
        let yes = |b: bool| if b { "zblade" } else { "-" };
        for c in &self.0 {
            line!(
                out,
                "{:<12} {:<10} {:<16} {}",
                c.client,
                if c.installed { "yes" } else { "no" },
                yes(c.in_project),
                yes(c.in_user)
            )?;
        }
        Ok(())
    }
}

/// A pack as a warm engine rendered it (`--json` prints the warm engine's JSON text instead:
/// `commands::context`).
pub struct WarmText {
    /// The pack's text.
    pub text: String,
    /// The receipt's lines, when asked for.
    pub receipt: Option<String>,
}

impl Serialize for WarmText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(serializer)
    }
}

impl Render for WarmText {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        write!(out.w, "{}", self.text).map_err(io)?;
        if let Some(receipt) = &self.receipt {
            write!(out.w, "{receipt}").map_err(io)?;
        }
        Ok(())
    }
}

/// `zblade proxy receipts`.
#[derive(Serialize)]
pub struct Receipts {
    /// Newest first.
    pub receipts: Vec<zblade_proxy::receipts::Receipt>,
    /// Receipt files that could not be read.
    pub unreadable: usize,
    /// One receipt asked for by id: print what was injected in full.
    #[serde(skip)]
    pub one: bool,
}

impl Render for Receipts {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        if self.receipts.is_empty() {
            return line!(
                out,
                "No receipts yet: the proxy writes one for each request it adds memory to (zblade proxy)."
            );
        }
        for r in &self.receipts {
            line!(
                out,
                "{}  {}  {} {}  {} tokens, {} entries, {:.0} ms  {}",
                r.id,
                r.time.format("%Y-%m-%d %H:%M:%S"),
                r.api,
                r.model,
                r.tokens,
                r.entries,
                r.elapsed_ms,
                r.conversation
            )?;
            line!(out, "  asked: {}", one_line(&r.query, 100))?;
            if let Some(error) = &r.error {
                line!(out, "  error: {error}")?;
            }
            for notice in &r.notices {
                line!(out, "  note: {notice}")?;
            }
            if self.one {
                line!(out, "--- injected ({} budget, {} tier) ---", r.budget, r.tier)?;
                line!(
                    out,
                    "{}",
                    if r.injected.is_empty() {
                        "(nothing)"
                    } else {
                        &r.injected
                    }
                )?;
            }
        }
        if self.unreadable > 0 {
            line!(out, "({} receipt files could not be read)", self.unreadable)?;
        }
        Ok(())
    }
}

/// `zblade doctor`'s table: one agent a line, then what to do about what is missing.
pub struct Doctor<'a>(pub &'a [zblade_mcp::doctor::AgentHealth]);

impl Serialize for Doctor<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::json!({ "agents": self.0 }).serialize(serializer)
    }
}

impl Render for Doctor<'_> {
    fn text<W: Write>(&self, out: &mut Out<W>) -> R {
        let mark = |yes: bool| if yes { "yes" } else { "no" };
        line!(
            out,
            "{:<26} {:>9} {:>9} {:>9}  {:<4} {:<5}",
            "agent",
            "sessions",
            "imported",
            "followed",
            "mcp",
            "hooks"
        )?;
        for a in self.0 {
            let label = if a.experimental {
                format!("{} (experimental)", a.label)
            } else {
                a.label.clone()
            };
            line!(
                out,
                "{:<26} {:>9} {:>9} {:>9}  {:<4} {:<5}",
                one_line(&label, 26),
                a.sessions,
                a.imported,
                mark(a.followed),
                mark(a.mcp.wired),
                mark(a.hooks.wired)
            )?;
        }
        // What to do: for agents with sessions of this project (or wired already), what is
        // missing; agents that are not here at all are one line.
        let present: Vec<_> = self
            .0
            .iter()
            .filter(|a| a.sessions > 0 || a.mcp.wired || a.hooks.wired || a.imported > 0)
            .collect();
        if !present.is_empty() {
            line!(out)?;
        }
        for a in &present {
            if a.sessions > a.imported {
                line!(
                    out,
                    "{}: {} session(s) of this project, {} imported: zblade import {}",
                    a.label,
                    a.sessions,
                    a.imported,
                    a.agent
                )?;
            }
            for (what, wiring) in [("MCP", &a.mcp), ("hooks", &a.hooks)] {
                if let Some(why) = &wiring.why_not {
                    line!(out, "{}: {what} — {why}", a.label)?;
                }
            }
        }
        let absent: Vec<&str> = self
            .0
            .iter()
            .filter(|a| a.sessions == 0 && !a.mcp.wired && !a.hooks.wired && a.imported == 0)
            .map(|a| a.label.as_str())
            .collect();
        if !absent.is_empty() {
            line!(
                out,
                "\nNo sessions of this project and nothing wired: {}.",
                absent.join(", ")
            )?;
        }
        Ok(())
    }
}
