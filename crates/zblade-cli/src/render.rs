//! How each command's result is printed: as text for people, or as JSON with `--json`.

use std::io::Write;

use serde::Serialize;
use zblade_engine::{
    AddOutcome, CompressorInstall, CompressorModel, CompressorStatus, ContextResult, ConversationSummary, Error,
    ExtractReport, FsckReport, Hit, IndexReport, InitReport, ModelDownload, ModelEntry, ModelImport, MomentSummary,
    ReferenceReport, ReindexReport, SearchResults, Shown, Status, SummarizeReport, WatchEvent,
};

/// Lines of code shown under a search hit's reference (`zblade show` prints them all).
const SEARCH_CODE_LINES: usize = 8;

/// The output stream and how to write to it.
pub struct Out<W: Write> {
    w: W,
    json: bool,
    color: bool,
}

type R = Result<(), Error>;

fn io(e: std::io::Error) -> Error {
    Error::io("<stdout>", e)
}

macro_rules! line {
    ($out:expr) => { writeln!($out.w).map_err(io) };
    ($out:expr, $($arg:tt)*) => { writeln!($out.w, $($arg)*).map_err(io) };
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        flat.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
    } else {
        flat
    }
}

fn human_bytes(bytes: u64) -> String {
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

    pub fn init(&mut self, report: &InitReport) -> R {
        if self.json {
            return self.json(report);
        }
        let dir = report.root.join(".zblade");
        if report.created.is_empty() && !report.settings_completed {
            line!(
                self,
                "zblade memory already set up in {} (nothing changed)",
                dir.display()
            )
        } else {
            line!(self, "zblade memory ready in {}", dir.display())?;
            for path in &report.created {
                line!(self, "  created {path}")?;
            }
            if report.settings_completed {
                line!(
                    self,
                    "  added missing fields to .zblade/config/settings.json (your values kept)"
                )?;
            }
            line!(
                self,
                "Next: zblade add conversation FILE.json, then zblade search WORDS"
            )
        }
    }

    pub fn added(&mut self, outcomes: &[AddOutcome], is_moment: bool) -> R {
        if self.json {
            return self.json(outcomes);
        }
        for o in outcomes {
            let verb = if o.created { "added" } else { "updated" };
            if is_moment {
                line!(self, "{verb} {} → {}", o.id, o.artifact_path)?;
            } else {
                line!(self, "{verb} {} ({} messages) → {}", o.id, o.messages, o.artifact_path)?;
            }
        }
        Ok(())
    }

    pub fn conversations(&mut self, rows: &[ConversationSummary]) -> R {
        if self.json {
            return self.json(rows);
        }
        if rows.is_empty() {
            return line!(
                self,
                "No conversations yet. Add one with: zblade add conversation FILE.json"
            );
        }
        for c in rows {
            let tags = if c.tags.is_empty() {
                String::new()
            } else {
                format!("  [{}]", c.tags.join(", "))
            };
            line!(
                self,
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

    pub fn moments(&mut self, rows: &[MomentSummary]) -> R {
        if self.json {
            return self.json(rows);
        }
        if rows.is_empty() {
            return line!(self, "No moments yet. Add one with: zblade add moment FILE.json");
        }
        for m in rows {
            let tags = if m.tags.is_empty() {
                String::new()
            } else {
                format!("  [{}]", m.tags.join(", "))
            };
            line!(self, "{}  {:<8}  {}{}", m.id, m.kind, one_line(&m.content, 70), tags)?;
        }
        Ok(())
    }

    pub fn shown(&mut self, shown: &Shown) -> R {
        if self.json {
            return self.json(shown);
        }
        match shown {
            Shown::Conversation {
                conversation: c,
                references,
            } => {
                line!(self, "{}", c.title)?;
                line!(
                    self,
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
                    line!(self, "tags: {}", c.metadata.tags.join(", "))?;
                }
                for m in &c.messages {
                    line!(self)?;
                    let refs: Vec<&ReferenceReport> = references
                        .iter()
                        .filter(|r| r.message_id.as_deref() == Some(&m.id))
                        .collect();
                    self.message(m, &refs, usize::MAX)?;
                }
                for m in &c.moments {
                    line!(self)?;
                    line!(self, "◆ {} {}: {}", m.kind.as_str(), m.id, m.content)?;
                }
                Ok(())
            }
            Shown::Moment { moment: m, references } => {
                line!(
                    self,
                    "{} {}  (relevance {:.2})",
                    m.kind.as_str(),
                    m.id,
                    m.relevance_score
                )?;
                if let Some(conv) = &m.conversation_id {
                    line!(self, "from {conv}")?;
                }
                if !m.tags.is_empty() {
                    line!(self, "tags: {}", m.tags.join(", "))?;
                }
                line!(self)?;
                line!(self, "{}", m.content)?;
                if let Some(context) = &m.context {
                    line!(self)?;
                    line!(self, "Context: {context}")?;
                }
                for r in references {
                    self.reference_block(r, usize::MAX)?;
                }
                Ok(())
            }
            Shown::InlineMoment {
                conversation_id,
                moment: m,
            } => {
                line!(self, "{} {}  (in {conversation_id})", m.kind.as_str(), m.id)?;
                line!(self)?;
                line!(self, "{}", m.content)
            }
            Shown::Messages { matches } => {
                for (i, found) in matches.iter().enumerate() {
                    if i > 0 {
                        line!(self)?;
                    }
                    line!(self, "in {} — {}", found.conversation_id, found.title)?;
                    let refs: Vec<&ReferenceReport> = found.references.iter().collect();
                    self.message(&found.message, &refs, usize::MAX)?;
                }
                Ok(())
            }
        }
    }

    fn message(&mut self, m: &zblade_engine::Message, refs: &[&ReferenceReport], max_lines: usize) -> R {
        let when = m
            .timestamp
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        line!(self, "── {} · {} · {}", m.role.as_str(), when, m.id)?;
        line!(self, "{}", m.content.trim_end())?;
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
        let mut status = r.status.as_str().to_uppercase();
        if r.status == zblade_engine::ReferenceStatus::Modified {
            status = format!("{status} {:.0}%", r.similarity * 100.0);
        }
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

    pub fn results(&mut self, query: &str, results: &SearchResults) -> R {
        if self.json {
            return self.json(results);
        }
        self.hits(query, &results.hits)
    }

    /// An assembled context: the pack on stdout; with `receipt`, then the receipt (text mode
    /// puts it after a `---` line, so the pack can still be cut off by a script).
    pub fn context(&mut self, result: &ContextResult, receipt: bool) -> R {
        if self.json {
            return self.json(result);
        }
        let pack = &result.pack;
        write!(self.w, "{}", pack.text).map_err(io)?;
        if !receipt {
            return Ok(());
        }
        line!(self, "---")?;
        line!(
            self,
            "{} of {} tokens ({}), {} of {} candidates packed, in {:.1} ms; search: {}",
            pack.tokens,
            pack.budget,
            pack.tokenizer,
            pack.entries.len(),
            pack.receipt.len(),
            result.elapsed_ms,
            result
                .mode
                .map_or("none".to_string(), |m| format!("{m:?}").to_lowercase())
        )?;
        for l in &pack.receipt {
            let mark = if l.included { "+" } else { "-" };
            let score = l
                .score
                .as_ref()
                .map(|s| {
                    format!(
                        " score {:.3} (search {:.2} × recency {:.2} × affinity {:.2} × type {:.2})",
                        s.relevance, s.retrieval, s.recency, s.affinity, s.type_weight
                    )
                })
                .unwrap_or_default();
            line!(
                self,
                "{mark} {:>5} tok  {:<9} {}  {}{score}",
                if l.included { l.tokens } else { l.full_tokens },
                format!("{:?}", l.source).to_lowercase(),
                one_line(&l.label, 60),
                l.reason
            )?;
        }
        Ok(())
    }

    pub fn extracted(&mut self, report: &ExtractReport) -> R {
        if self.json {
            return self.json(report);
        }
        line!(
            self,
            "{} moment(s) written from {} conversation(s) ({} unchanged since the last run; {} extractor).",
            report.written.len(),
            report.conversations,
            report.unchanged,
            report.extractor
        )?;
        for id in &report.written {
            line!(self, "  {id}")?;
        }
        for notice in &report.notices {
            eprintln!("zblade: note: {notice}");
        }
        Ok(())
    }

    pub fn summarized(&mut self, report: &SummarizeReport) -> R {
        if self.json {
            return self.json(report);
        }
        line!(
            self,
            "Summaries: {} written, {} still fresh, of {} conversation(s) ({}).",
            report.refreshed.len(),
            report.unchanged,
            report.conversations,
            report.summarizer
        )?;
        for id in &report.refreshed {
            line!(self, "  {id}")?;
        }
        for notice in &report.notices {
            eprintln!("zblade: note: {notice}");
        }
        Ok(())
    }

    pub fn compressor_status(&mut self, status: &CompressorStatus) -> R {
        if self.json {
            return self.json(status);
        }
        match &status.model {
            Some(m) => line!(
                self,
                "Compressor: {} ({}, {} parameters, {}, context {} tokens{}).",
                status.compressor,
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
                line!(self, "Compressor: extractive (deterministic; no model is used).")?;
                if let Some(notice) = &status.notice {
                    line!(self, "Configured model {:?}: {notice}", status.configured)?;
                } else {
                    line!(
                        self,
                        "Install a model with `zblade compressor import FILE.gguf --use` (see docs/CONTEXT.md)."
                    )?;
                }
                Ok(())
            }
        }
    }

    pub fn compressor_models(&mut self, models: &[CompressorModel]) -> R {
        if self.json {
            return self.json(models);
        }
        if models.is_empty() {
            return line!(
                self,
                "No compressor models installed (`zblade compressor import FILE.gguf`)."
            );
        }
        for m in models {
            let mark = if m.active { "*" } else { " " };
            let problem = m.problem.as_deref().map(|p| format!("  ({p})")).unwrap_or_default();
            line!(
                self,
                "{mark} {:<32} {:>9}  {}{problem}",
                m.name,
                human_bytes(m.size_bytes),
                m.path
            )?;
        }
        Ok(())
    }

    pub fn compressor_installed(&mut self, install: &CompressorInstall) -> R {
        if self.json {
            return self.json(install);
        }
        line!(
            self,
            "Installed {} at {} ({}, sha256 {}{}).{}",
            install.model.name,
            install.model.path,
            human_bytes(install.model.size_bytes),
            install.sha256,
            if install.verified {
                ", verified"
            } else {
                ", not checked: no --sha256 given"
            },
            if install.model.active {
                " The compressor uses it now."
            } else {
                ""
            }
        )
    }

    /// Any value as JSON.
    pub fn value(&mut self, value: &serde_json::Value) -> R {
        self.json(value)
    }

    /// One line of text.
    pub fn note(&mut self, text: &str) -> R {
        line!(self, "{text}")
    }

    pub fn models(&mut self, models: &[ModelEntry]) -> R {
        if self.json {
            return self.json(models);
        }
        for m in models {
            let mark = if m.active { "*" } else { " " };
            let place = match (&m.dir, &m.repo) {
                (Some(dir), _) => dir.clone(),
                (None, Some(repo)) => format!("not installed; `zblade models download {}` fetches {repo}", m.name),
                (None, None) => "not installed".into(),
            };
            line!(self, "{mark} {:<20} {place}", m.name)?;
        }
        Ok(())
    }

    pub fn downloaded(&mut self, d: &ModelDownload) -> R {
        if self.json {
            return self.json(d);
        }
        line!(
            self,
            "Installed {} in {} ({}).{}",
            d.name,
            d.dir,
            human_bytes(d.bytes),
            model_activation_note(d.active)
        )
    }

    pub fn imported(&mut self, i: &ModelImport) -> R {
        if self.json {
            return self.json(i);
        }
        line!(
            self,
            "Installed {} in {} ({} files).{}",
            i.name,
            i.dir,
            i.files.len(),
            model_activation_note(i.active)
        )
    }

    pub fn indexed(&mut self, r: &IndexReport) -> R {
        if self.json {
            return self.json(r);
        }
        let c = &r.code;
        line!(
            self,
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
            line!(self, "  skipped ({reason}): {}{more}", shown.join(", "))?;
        }
        if c.changed_while_reading > 0 {
            line!(
                self,
                "  {} file(s) changed while being read; they are read again on the next run.",
                c.changed_while_reading
            )?;
        }
        if let Some(s) = &r.semantic {
            line!(
                self,
                "Embeddings ({}): {} chunks, {} distinct texts, {} embedded now, {} already had vectors, {} stale removed{} ({:.1} s).",
                s.model,
                s.chunks,
                s.distinct,
                s.embedded,
                s.distinct - s.embedded.min(s.distinct),
                s.removed,
                if s.ann_index { ", ANN index in use" } else { "" },
                s.elapsed.as_secs_f64()
            )?;
        }
        let m = &r.summaries;
        line!(
            self,
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
                line!(self, "{:>2}. [code] {place}", i + 1)?;
                for (n, text) in h.snippet.lines().take(SEARCH_CODE_LINES).enumerate() {
                    let number = h.lines.map_or(0, |l| l.0 as usize) + n;
                    line!(self, "    {number:>5} │ {text}")?;
                }
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
            for r in &found.references {
                self.reference_block(r, SEARCH_CODE_LINES)?;
            }
        }
        Ok(())
    }

    pub fn references(&mut self, refs: &[ReferenceReport], total: usize) -> R {
        if self.json {
            return self.json(refs);
        }
        if total == 0 {
            return line!(
                self,
                "No code references yet. They come with conversations and moments that cite files."
            );
        }
        for r in refs {
            let live = match &r.live {
                Some(l) => format!("{}:{}-{}", l.file, l.lines[0], l.lines[1]),
                None => "—".into(),
            };
            let drift = if r.drift.is_some() { "  drift" } else { "" };
            line!(
                self,
                "{:<10} {}:{}-{} → {}{}  {}",
                r.status,
                r.captured.file,
                r.captured.lines[0],
                r.captured.lines[1],
                live,
                drift,
                r.key
            )?;
        }
        let mut counts: Vec<(zblade_engine::ReferenceStatus, usize)> = Vec::new();
        for r in refs {
            match counts.iter_mut().find(|(s, _)| *s == r.status) {
                Some((_, n)) => *n += 1,
                None => counts.push((r.status, 1)),
            }
        }
        let summary: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        line!(
            self,
            "{} of {total} reference(s) listed: {}",
            refs.len(),
            summary.join(", ")
        )
    }

    pub fn reference(&mut self, r: &ReferenceReport) -> R {
        if self.json {
            return self.json(r);
        }
        line!(self, "{}", r.key)?;
        self.reference_block(r, usize::MAX)
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

    pub fn reindexed(&mut self, r: &ReindexReport) -> R {
        if self.json {
            return self.json(r);
        }
        if r.recreated_database {
            line!(self, "The old index was damaged; it was recreated.")?;
        }
        line!(
            self,
            "Reindexed {} conversations ({} messages) and {} moments, and checked {} code references, in {:.2} s.",
            r.conversations,
            r.messages,
            r.moments,
            r.references,
            r.elapsed.as_secs_f64()
        )?;
        if !r.skipped.is_empty() {
            line!(
                self,
                "Skipped {} artifact(s) that could not be indexed (the files are untouched):",
                r.skipped.len()
            )?;
            for (path, why) in &r.skipped {
                line!(self, "  {path}: {why}")?;
            }
        }
        Ok(())
    }

    pub fn fsck(&mut self, report: &FsckReport, repair: bool) -> R {
        if self.json {
            return self.json(report);
        }
        if report.problems.is_empty() {
            return line!(self, "ok: {} artifacts, index matches", report.artifacts);
        }
        for p in &report.problems {
            let kind = serde_json::to_value(p.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let fixed = if p.repaired { "  [repaired]" } else { "" };
            line!(self, "{kind:<13} {}  {}{fixed}", p.path, p.detail)?;
        }
        let open = report.problems.iter().filter(|p| !p.repaired).count();
        if open == 0 {
            line!(self, "{} problem(s) found and repaired.", report.problems.len())
        } else if repair {
            line!(
                self,
                "{open} problem(s) need you: fix the named files, then run `zblade fsck --repair` again."
            )
        } else {
            line!(
                self,
                "{open} problem(s). Run `zblade fsck --repair` to bring the index in line with the artifacts."
            )
        }
    }

    pub fn status(&mut self, s: &Status, health: &[(String, i64)]) -> R {
        if self.json {
            let mut value = serde_json::to_value(s).map_err(|e| Error::io("<stdout>", e.into()))?;
            value["reference_health"] = health
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::json!(v)))
                .collect::<serde_json::Map<_, _>>()
                .into();
            return self.json(&value);
        }
        line!(self, "project       {}  ({})", s.root, s.project_id)?;
        line!(self, "storage mode  {}", s.storage_mode)?;
        line!(
            self,
            "artifacts     {} conversations, {} moments  ({})",
            s.conversation_artifacts,
            s.moment_artifacts,
            human_bytes(s.artifacts_bytes)
        )?;
        line!(
            self,
            "indexed       {} conversations, {} messages, {} moments, {} code references to {} files",
            s.indexed.conversations,
            s.indexed.messages,
            s.indexed.moments,
            s.indexed.code_references,
            s.indexed.referenced_files
        )?;
        line!(
            self,
            "code          {} files, {} chunks indexed for search",
            s.code_files,
            s.code_chunks
        )?;
        line!(
            self,
            "index         {}  (schema v{}; vectors {})",
            human_bytes(s.index_bytes),
            s.schema_version,
            human_bytes(s.vector_bytes)
        )?;
        let vectors = match s.vectors {
            Some(n) => format!("{n} vectors"),
            None => "nothing embedded yet (run `zblade index`)".into(),
        };
        line!(self, "embeddings    {}: {vectors}", s.embedding_model)?;
        if s.compressor_model.is_empty() {
            line!(self, "compressor    extractive (no model configured)")?;
        } else {
            line!(
                self,
                "compressor    {} (`zblade compressor status` checks it loads)",
                s.compressor_model
            )?;
        }
        line!(self, "cache         {}", human_bytes(s.cache_bytes))?;
        line!(self, "index health  {}", s.index_health)?;
        let refs: Vec<String> = health.iter().map(|(k, v)| format!("{v} {k}")).collect();
        if !refs.is_empty() {
            line!(self, "references    {}", refs.join(", "))?;
        }
        Ok(())
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
