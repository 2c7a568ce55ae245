//! Rendering a pack: the `<unlimited_context>` XML block of seed 001 (section 5.3), Markdown,
//! or JSON. Every format is rendered by the same functions the budget is counted with, so the
//! token count of a pack is the count of exactly what is printed.

use serde::Serialize;

use crate::candidate::{Candidate, Item, Source};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `<unlimited_context>` with sessions, turns, moments and code.
    #[default]
    Xml,
    /// Headings and fenced code.
    Markdown,
    /// One JSON object.
    Json,
}

/// One packed piece: a candidate and the text it is packed with (shortened, or a pointer).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Entry {
    /// The candidate.
    #[serde(flatten)]
    pub candidate: Candidate,
    /// The text as packed.
    pub packed: String,
    /// True when `packed` is a pointer (path, lines, summary, size) rather than content.
    pub pointer: bool,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn attr(text: &str) -> String {
    escape(text).replace('"', "&quot;")
}

fn time_attr(c: &Candidate) -> String {
    c.time
        .map(|t| format!(" time=\"{}\"", t.format("%Y-%m-%dT%H:%MZ")))
        .unwrap_or_default()
}

/// ` author="NAME"` for a teammate's memory: whose words these are (the server's name for them,
/// escaped like every attribute; never an instruction).
fn author_attr(c: &Candidate) -> String {
    c.author
        .as_deref()
        .map(|a| format!(" author=\"{}\"", attr(a)))
        .unwrap_or_default()
}

/// ` state="superseded by conv_…"` for memory that no longer simply stands.
fn state_attr(c: &Candidate) -> String {
    c.standing
        .as_ref()
        .map(|s| format!(" state=\"{}\"", attr(&s.describe())))
        .unwrap_or_default()
}

/// `[superseded by conv_…] ` before a markdown entry that no longer simply stands.
fn state_prefix(c: &Candidate) -> String {
    c.standing
        .as_ref()
        .map(|s| format!("[{}] ", s.describe()))
        .unwrap_or_default()
}

/// A packed text as `format` prints it inside its wrapper (escaped for XML and JSON), so its
/// tokens can be counted once, apart from the wrapper.
pub(crate) fn rendered_body(text: &str, format: Format) -> std::borrow::Cow<'_, str> {
    match format {
        Format::Xml if text.contains(['&', '<', '>']) => escape(text).into(),
        Format::Json => {
            let quoted = serde_json::to_string(text).expect("a string serialises");
            if quoted.len() == text.len() + 2 {
                text.into()
            } else {
                quoted[1..quoted.len() - 1].to_string().into()
            }
        }
        _ => text.into(),
    }
}

/// At most about how many tokens escaping adds to `text` in `format` (2 per XML entity, 1 per
/// JSON escape), so a text's count can be reused without counting its escaped copy. It errs
/// high: the rendered pack is counted exactly at the end, and an estimate that was too low
/// would drop a whole entry there.
pub(crate) fn escape_overhead(text: &str, format: Format) -> usize {
    match format {
        // By bytes: the three are ASCII, and no byte of a multi-byte UTF-8 character is ASCII.
        Format::Xml => 2 * text.bytes().filter(|b| matches!(b, b'&' | b'<' | b'>')).count(),
        Format::Json => text.matches(|c: char| c == '"' || c == '\\' || c.is_control()).count(),
        Format::Markdown => 0,
    }
}

/// Renders `entries` (in packing order) in `format`.
pub fn render(entries: &[Entry], format: Format) -> String {
    match format {
        Format::Xml => render_xml(entries),
        Format::Markdown => render_markdown(entries),
        Format::Json => render_json(entries),
    }
}

/// Entries grouped for display, as indices into the entries.
struct Groups {
    instructions: Vec<usize>,
    moments: Vec<usize>,
    commits: Vec<usize>,
    /// Conversation id, title and its turns, in time order.
    sessions: Vec<(String, String, Vec<usize>)>,
    code: Vec<usize>,
}

/// Entries grouped for display: instructions, moments, conversations (their turns together,
/// in time order), then code.
fn display_order(entries: &[Entry]) -> Groups {
    let mut instructions = Vec::new();
    let mut moments = Vec::new();
    let mut commits = Vec::new();
    let mut sessions: Vec<(String, String, Vec<usize>)> = Vec::new();
    let mut code = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        match &e.candidate.item {
            Item::Instructions => instructions.push(i),
            Item::Moment { .. } => moments.push(i),
            Item::Commit { .. } => commits.push(i),
            Item::Code { .. } => code.push(i),
            Item::Message {
                conversation, title, ..
            }
            | Item::Summary { conversation, title } => match sessions.iter_mut().find(|(id, ..)| id == conversation) {
                Some((.., turns)) => turns.push(i),
                None => sessions.push((conversation.clone(), title.clone(), vec![i])),
            },
        }
    }
    // The summary first (it tells what came before), then the turns in time order.
    for (.., turns) in &mut sessions {
        turns.sort_by(|&a, &b| {
            let summary = |i: usize| !matches!(entries[i].candidate.item, Item::Summary { .. });
            summary(a)
                .cmp(&summary(b))
                .then(entries[a].candidate.time.cmp(&entries[b].candidate.time))
                .then(a.cmp(&b))
        });
    }
    Groups {
        instructions,
        moments,
        commits,
        sessions,
        code,
    }
}

fn render_xml(entries: &[Entry]) -> String {
    let groups = display_order(entries);
    let mut out = String::from("<unlimited_context>\n");
    for i in groups.instructions {
        out.push_str(&format!(
            "<instructions>\n{}\n</instructions>\n",
            escape(&entries[i].packed)
        ));
    }
    for i in groups.moments {
        let e = &entries[i];
        if let Item::Moment { id, moment_type, tags } = &e.candidate.item {
            out.push_str(&format!(
                "<moment id=\"{}\" type=\"{}\"{}{}{}{}{}>{}</moment>\n",
                attr(id),
                attr(moment_type),
                author_attr(&e.candidate),
                state_attr(&e.candidate),
                if tags.is_empty() {
                    String::new()
                } else {
                    format!(" tags=\"{}\"", attr(&tags.join(",")))
                },
                time_attr(&e.candidate),
                if e.pointer { " pointer=\"true\"" } else { "" },
                escape(&e.packed)
            ));
        }
    }
    for i in groups.commits {
        let e = &entries[i];
        if let Item::Commit {
            sha,
            author,
            date,
            status,
        } = &e.candidate.item
        {
            out.push_str(&format!(
                "<commit sha=\"{}\" author=\"{}\" date=\"{}\" lines=\"{}\"{}>{}</commit>\n",
                attr(&sha[..sha.len().min(12)]),
                attr(author),
                attr(date),
                attr(status),
                if e.pointer { " pointer=\"true\"" } else { "" },
                escape(&e.packed)
            ));
        }
    }
    for (id, title, turns) in groups.sessions {
        out.push_str(&format!("<session id=\"{}\" title=\"{}\">\n", attr(&id), attr(&title)));
        for i in turns {
            let e = &entries[i];
            if let Item::Summary { .. } = &e.candidate.item {
                out.push_str(&format!("  <summary>{}</summary>\n", escape(&e.packed)));
            }
            if let Item::Message { message, role, .. } = &e.candidate.item {
                out.push_str(&format!(
                    "  <turn id=\"{}\" role=\"{}\"{}{}{}{}{}>{}</turn>\n",
                    attr(message),
                    attr(role),
                    author_attr(&e.candidate),
                    state_attr(&e.candidate),
                    time_attr(&e.candidate),
                    if e.candidate.source == Source::Recent {
                        " recent=\"true\""
                    } else {
                        ""
                    },
                    if e.pointer { " pointer=\"true\"" } else { "" },
                    escape(&e.packed)
                ));
            }
        }
        out.push_str("</session>\n");
    }
    for i in groups.code {
        let e = &entries[i];
        if let Item::Code { path, lines, status } = &e.candidate.item {
            out.push_str(&format!(
                "<code path=\"{}\" lines=\"{}-{}\" status=\"{}\"{}>\n{}\n</code>\n",
                attr(path),
                lines.0,
                lines.1,
                attr(status),
                if e.pointer { " pointer=\"true\"" } else { "" },
                escape(&e.packed)
            ));
        }
    }
    out.push_str("</unlimited_context>\n");
    out
}

/// A fence longer than any run of backticks in `text`, so code cannot close it early.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

fn render_markdown(entries: &[Entry]) -> String {
    let groups = display_order(entries);
    let mut out = String::new();
    for i in groups.instructions {
        out.push_str(&format!("## Instructions\n\n{}\n\n", entries[i].packed));
    }
    if !groups.moments.is_empty() {
        out.push_str("## Moments\n\n");
        for i in groups.moments {
            let e = &entries[i];
            if let Item::Moment { id, moment_type, tags } = &e.candidate.item {
                let tags = if tags.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", tags.join(", "))
                };
                let by = e
                    .candidate
                    .author
                    .as_deref()
                    .map(|a| format!(" (by {a})"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "- **{moment_type}** `{id}`{tags}{by}: {}{}\n",
                    state_prefix(&e.candidate),
                    e.packed
                ));
            }
        }
        out.push('\n');
    }
    if !groups.commits.is_empty() {
        out.push_str("## Commits\n\n");
        for i in groups.commits {
            let e = &entries[i];
            if let Item::Commit {
                sha,
                author,
                date,
                status,
            } = &e.candidate.item
            {
                let body = e.packed.replace('\n', "\n  ");
                out.push_str(&format!(
                    "- `{}` ({author}, {date}; {status}): {body}\n",
                    &sha[..sha.len().min(12)]
                ));
            }
        }
        out.push('\n');
    }
    for (id, title, turns) in groups.sessions {
        out.push_str(&format!("## Conversation: {title} (`{id}`)\n\n"));
        for i in turns {
            let e = &entries[i];
            if let Item::Summary { .. } = &e.candidate.item {
                out.push_str(&format!("_Summary of what came before:_ {}\n\n", e.packed));
            }
            if let Item::Message { role, .. } = &e.candidate.item {
                let time = e
                    .candidate
                    .time
                    .map(|t| format!(" {}", t.format("%Y-%m-%d %H:%M")))
                    .unwrap_or_default();
                let by = e
                    .candidate
                    .author
                    .as_deref()
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "**{role}**{by}{time}: {}{}\n\n",
                    state_prefix(&e.candidate),
                    e.packed
                ));
            }
        }
    }
    for i in groups.code {
        let e = &entries[i];
        if let Item::Code { path, lines, status } = &e.candidate.item {
            if e.pointer {
                out.push_str(&format!(
                    "- `{path}` lines {}-{} ({status}): {}\n\n",
                    lines.0, lines.1, e.packed
                ));
            } else {
                let f = fence(&e.packed);
                out.push_str(&format!(
                    "### `{path}` lines {}-{} ({status})\n\n{f}\n{}\n{f}\n\n",
                    lines.0, lines.1, e.packed
                ));
            }
        }
    }
    out
}

fn render_json(entries: &[Entry]) -> String {
    // What a reader needs, once: not the candidate's full text next to the packed one.
    #[derive(Serialize)]
    struct Piece<'a> {
        key: &'a str,
        source: Source,
        #[serde(flatten)]
        item: &'a Item,
        #[serde(skip_serializing_if = "Option::is_none")]
        time: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        author: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        state: Option<String>,
        text: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pointer: bool,
    }
    let pieces: Vec<Piece<'_>> = entries
        .iter()
        .map(|e| Piece {
            key: &e.candidate.key,
            source: e.candidate.source,
            item: &e.candidate.item,
            time: e.candidate.time.map(|t| t.format("%Y-%m-%dT%H:%MZ").to_string()),
            author: e.candidate.author.as_deref(),
            state: e.candidate.standing.as_ref().map(|s| s.describe()),
            text: &e.packed,
            pointer: e.pointer,
        })
        .collect();
    serde_json::to_string(&serde_json::json!({ "context": pieces })).expect("entries serialise") + "\n"
}
