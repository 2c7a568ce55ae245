//! Whole texts of messages and moments, for context assembly: search hits carry snippets,
//! a context pack needs the full text and its metadata.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use zblade_core::Result;

use crate::{HitKind, Index};

/// A message or moment with its full text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryText {
    /// `CONV/MSG` for a message, the moment id for a moment (as in the chunk catalog).
    pub key: String,
    /// Message or moment.
    pub kind: HitKind,
    /// The conversation it belongs to.
    pub conversation_id: Option<String>,
    /// The conversation's title.
    pub title: Option<String>,
    /// Message id, or moment id.
    pub id: String,
    /// Role (message) or type (moment).
    pub label: String,
    /// The text (a moment's context follows its content).
    pub text: String,
    /// Moment tags.
    pub tags: Vec<String>,
    /// When it was written.
    pub time: Option<DateTime<Utc>>,
    /// Who wrote it, when a teammate did (server mode's shared projects); `None` otherwise.
    pub author: Option<String>,
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

fn message_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryText> {
    let conversation: String = r.get(0)?;
    let id: String = r.get(1)?;
    Ok(MemoryText {
        key: format!("{conversation}/{id}"),
        kind: HitKind::Message,
        conversation_id: Some(conversation),
        title: r.get(2)?,
        id,
        label: r.get(3)?,
        text: r.get(4)?,
        tags: Vec::new(),
        time: parse_time(&r.get::<_, String>(5)?),
        author: None,
    })
}

const MESSAGE_COLUMNS: &str = "SELECT m.conversation_id, m.id, c.title, m.role, m.content, m.timestamp
     FROM messages m JOIN conversations c ON c.id = m.conversation_id";

impl Index {
    /// The title of a conversation, or `None` when it is not in the index.
    pub fn conversation_title(&self, id: &str) -> Result<Option<String>> {
        self.read(|conn| {
            conn.query_row("SELECT title FROM conversations WHERE id = ?1", [id], |r| r.get(0))
                .optional()
        })
    }

    /// The last `n` messages of a conversation, newest first. A fork's messages shared with
    /// its parent count as its own: they are read from the parent (and its parent, …), indexed
    /// there once.
    pub fn recent_messages(&self, conversation: &str, n: usize) -> Result<Vec<MemoryText>> {
        self.read(|conn| {
            let run = || -> rusqlite::Result<Vec<MemoryText>> {
                let mut stmt = conn.prepare_cached(&format!(
                    "{MESSAGE_COLUMNS} WHERE m.conversation_id = ?1 AND m.seq < ?2 ORDER BY m.seq DESC LIMIT ?3"
                ))?;
                let mut shared =
                    conn.prepare_cached("SELECT shared_from, shared_count FROM conversations WHERE id = ?1")?;
                let mut out = Vec::new();
                let own_title: Option<String> = conn
                    .query_row("SELECT title FROM conversations WHERE id = ?1", [conversation], |r| {
                        r.get(0)
                    })
                    .optional()?;
                let (mut current, mut below) = (conversation.to_string(), i64::MAX);
                // Each step moves to a parent; the depth bound stops a damaged, cyclic index.
                for _ in 0..10_000 {
                    let mut rows: Vec<MemoryText> = stmt
                        .query_map(params![current, below, (n - out.len()) as i64], message_row)?
                        .collect::<rusqlite::Result<_>>()?;
                    // Inherited turns are the fork's own: named by it, under its title.
                    if current != conversation {
                        for row in &mut rows {
                            row.key = format!("{conversation}/{}", row.id);
                            row.conversation_id = Some(conversation.to_string());
                            row.title = own_title.clone();
                        }
                    }
                    out.extend(rows);
                    if out.len() >= n {
                        break;
                    }
                    let parent: Option<(Option<String>, i64)> = shared
                        .query_row([&current], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()?;
                    match parent {
                        Some((Some(parent), count)) if count > 0 => {
                            current = parent;
                            below = below.min(count);
                        }
                        _ => break,
                    }
                }
                Ok(out)
            };
            run()
        })
    }

    /// Full texts for keys (`CONV/MSG` or a moment id), in the order given; keys that name
    /// nothing are left out.
    pub fn memory_texts(&self, keys: &[String]) -> Result<Vec<MemoryText>> {
        self.read(|conn| {
            let run = || -> rusqlite::Result<Vec<MemoryText>> {
                let mut message =
                    conn.prepare_cached(&format!("{MESSAGE_COLUMNS} WHERE m.conversation_id = ?1 AND m.id = ?2"))?;
                let mut moment = conn.prepare_cached(
                    "SELECT m.conversation_id, c.title, m.type, m.content, m.context, m.tags, m.created_at
                     FROM moments m LEFT JOIN conversations c ON c.id = m.conversation_id WHERE m.id = ?1",
                )?;
                let mut out = Vec::with_capacity(keys.len());
                for key in keys {
                    let found = match key.split_once('/') {
                        Some((conv, msg)) => message.query_row(params![conv, msg], message_row).optional()?,
                        None => moment
                            .query_row([key], |r| {
                                let content: String = r.get(3)?;
                                let context: Option<String> = r.get(4)?;
                                let tags: Option<String> = r.get(5)?;
                                Ok(MemoryText {
                                    key: key.clone(),
                                    kind: HitKind::Moment,
                                    conversation_id: r.get(0)?,
                                    title: r.get(1)?,
                                    id: key.clone(),
                                    label: r.get(2)?,
                                    text: match context.filter(|c| !c.trim().is_empty()) {
                                        Some(context) => format!("{content}\n{context}"),
                                        None => content,
                                    },
                                    tags: tags
                                        .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
                                        .unwrap_or_default(),
                                    time: parse_time(&r.get::<_, String>(6)?),
                                    author: None,
                                })
                            })
                            .optional()?,
                    };
                    out.extend(found);
                }
                Ok(out)
            };
            run()
        })
    }
}
