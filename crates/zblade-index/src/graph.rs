//! Questions about the conversation graph the index answers without reading artifacts:
//! lineage (who forked from whom, who merged from whom), which conversations share another's
//! messages, and the prompts a user typed (`zblade history`).

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use zblade_core::Result;

use crate::Index;

/// A conversation as lineage shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LineageNode {
    /// `conv_…`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Messages in it.
    pub messages: i64,
    /// When it was created.
    pub created_at: String,
    /// The conversation it was forked from, if any.
    pub forked_from: Option<String>,
    /// The index of the last message it kept from its parent.
    pub forked_after: Option<i64>,
}

/// One merge or cherry-pick between two conversations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeEdge {
    /// The conversation messages were brought into.
    pub into: String,
    /// The conversation they came from.
    pub from: String,
    /// How many messages.
    pub messages: i64,
    /// When.
    pub merged_at: String,
}

/// A prompt the user typed, as `zblade history` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Prompt {
    /// The text.
    pub text: String,
    /// The newest time it was typed.
    pub time: String,
    /// The conversation of that newest time.
    pub conversation_id: String,
    /// That conversation's title.
    pub title: String,
    /// How many times it was typed (duplicates collapsed into this entry).
    pub times: usize,
}

const NODE_COLUMNS: &str = "SELECT id, title, message_count, created_at, forked_from, forked_after FROM conversations";

fn node(r: &rusqlite::Row<'_>) -> rusqlite::Result<LineageNode> {
    Ok(LineageNode {
        id: r.get(0)?,
        title: r.get(1)?,
        messages: r.get(2)?,
        created_at: r.get(3)?,
        forked_from: r.get(4)?,
        forked_after: r.get(5)?,
    })
}

/// An FTS5 expression matching prompts holding every word typed, the last one as a prefix (as
/// a shell's reverse search narrows while one types); `None` when no word is left.
fn prompt_match(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    let (last, rest) = words.split_last()?;
    let mut parts: Vec<String> = rest.to_vec();
    parts.push(format!("{last}*"));
    Some(parts.join(" AND "))
}

impl Index {
    /// One conversation as a lineage node; `None` when it is not indexed.
    pub fn lineage_node(&self, id: &str) -> Result<Option<LineageNode>> {
        self.read(|conn| {
            conn.prepare_cached(&format!("{NODE_COLUMNS} WHERE id = ?1"))?
                .query_row([id], node)
                .optional()
        })
    }

    /// The conversations forked from `id`, oldest first.
    pub fn forks_of(&self, id: &str) -> Result<Vec<LineageNode>> {
        self.read(|conn| {
            conn.prepare_cached(&format!(
                "{NODE_COLUMNS} WHERE forked_from = ?1 ORDER BY created_at, id"
            ))?
            .query_map([id], node)?
            .collect()
        })
    }

    /// Merges into `id` and merges out of it (others that took its messages).
    pub fn merges_of(&self, id: &str) -> Result<Vec<MergeEdge>> {
        self.read(|conn| {
            conn.prepare_cached(
                "SELECT conversation_id, source_id, messages, merged_at FROM merges
                 WHERE conversation_id = ?1 OR source_id = ?1 ORDER BY merged_at",
            )?
            .query_map([id], |r| {
                Ok(MergeEdge {
                    into: r.get(0)?,
                    from: r.get(1)?,
                    messages: r.get(2)?,
                    merged_at: r.get(3)?,
                })
            })?
            .collect()
        })
    }

    /// Conversations whose first messages are stored as `id`'s, with how many.
    pub fn sharing_from(&self, id: &str) -> Result<Vec<(String, usize)>> {
        self.read(|conn| {
            conn.prepare_cached("SELECT id, shared_count FROM conversations WHERE shared_from = ?1 ORDER BY id")?
                .query_map([id], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize)))?
                .collect()
        })
    }

    /// The conversations that share message `message_id` of `conversation` through their
    /// shared prefixes: forks, forks of forks, … (never `conversation` itself).
    pub fn sharing_message(&self, conversation: &str, message_id: &str) -> Result<Vec<String>> {
        self.read(|conn| {
            let seq: Option<i64> = conn
                .prepare_cached("SELECT seq FROM messages WHERE conversation_id = ?1 AND id = ?2")?
                .query_row([conversation, message_id], |r| r.get(0))
                .optional()?;
            let Some(seq) = seq else {
                return Ok(Vec::new());
            };
            let mut forks =
                conn.prepare_cached("SELECT id FROM conversations WHERE shared_from = ?1 AND shared_count > ?2")?;
            let mut out: Vec<String> = Vec::new();
            let mut queue = vec![conversation.to_string()];
            while let Some(current) = queue.pop() {
                let found: Vec<String> = forks
                    .query_map(params![current, seq], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                for fork in found {
                    // A damaged index could name a cycle; each conversation is visited once.
                    if fork != conversation && !out.contains(&fork) {
                        out.push(fork.clone());
                        queue.push(fork);
                    }
                }
            }
            Ok(out)
        })
    }

    /// For each of the first `len` messages of `conversation`, the conversation it is indexed
    /// under: itself, or for a fork's shared messages the ancestor that wrote them.
    pub fn indexed_under(&self, conversation: &str, len: usize) -> Result<Vec<String>> {
        self.read(|conn| {
            let mut out = vec![conversation.to_string(); len];
            let mut shared =
                conn.prepare_cached("SELECT shared_from, shared_count FROM conversations WHERE id = ?1")?;
            let (mut current, mut limit) = (conversation.to_string(), len);
            // Each step moves to a parent over fewer messages; the bound stops a damaged index.
            for _ in 0..10_000 {
                let row: Option<(Option<String>, i64)> = shared
                    .query_row([&current], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                let Some((Some(parent), count)) = row else { break };
                limit = limit.min(count.max(0) as usize);
                if limit == 0 {
                    break;
                }
                for owner in &mut out[..limit] {
                    *owner = parent.clone();
                }
                current = parent;
            }
            Ok(out)
        })
    }

    /// Prompts the user typed, newest first, each text once (with how often it was typed);
    /// only those holding every word of `search` when given.
    pub fn prompts(&self, search: Option<&str>, limit: usize) -> Result<Vec<Prompt>> {
        let expression = match search.map(str::trim).filter(|s| !s.is_empty()) {
            Some(text) => match prompt_match(text) {
                Some(expression) => Some(expression),
                None => return Ok(Vec::new()),
            },
            None => None,
        };
        self.read(|conn| {
            let mut out: Vec<Prompt> = Vec::new();
            let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
            // Rows come newest first; duplicates fold into the first (newest) entry. Reading
            // stops once `limit` distinct prompts are found, so the common case reads a page.
            let batch = (limit.max(1) * 4) as i64;
            let mut offset = 0i64;
            loop {
                let rows: Vec<(String, String, String, String)> = match &expression {
                    // The matching rowids are collected first (FTS5 reads only its doclists),
                    // then prompts are walked newest first along idx_messages_role_time until
                    // the page is full: no join and no sort over every match.
                    Some(expression) => conn
                        .prepare_cached(
                            "SELECT m.content, m.timestamp, m.conversation_id, c.title
                             FROM messages m INDEXED BY idx_messages_role_time
                             JOIN conversations c ON c.id = m.conversation_id
                             WHERE m.role = 'user'
                               AND m.pk IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1)
                             ORDER BY m.timestamp DESC LIMIT ?2 OFFSET ?3",
                        )?
                        .query_map(params![expression, batch, offset], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                        })?
                        .collect::<rusqlite::Result<_>>()?,
                    None => conn
                        .prepare_cached(
                            "SELECT m.content, m.timestamp, m.conversation_id, c.title
                             FROM messages m JOIN conversations c ON c.id = m.conversation_id
                             WHERE m.role = 'user'
                             ORDER BY m.timestamp DESC LIMIT ?1 OFFSET ?2",
                        )?
                        .query_map(params![batch, offset], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                        })?
                        .collect::<rusqlite::Result<_>>()?,
                };
                let done = (rows.len() as i64) < batch;
                // Rows come newest first; duplicates fold into the first (newest) entry.
                // Reading stops once `limit` distinct prompts are found.
                for (text, time, conversation_id, title) in rows {
                    let key = text.trim().to_string();
                    match seen.get(&key) {
                        Some(&at) => out[at].times += 1,
                        None => {
                            seen.insert(key, out.len());
                            out.push(Prompt {
                                text,
                                time,
                                conversation_id,
                                title,
                                times: 1,
                            });
                        }
                    }
                }
                if done || out.len() >= limit {
                    break;
                }
                offset += batch;
            }
            out.truncate(limit);
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::prompt_match;

    #[test]
    fn every_word_must_match_and_the_last_is_a_prefix() {
        assert_eq!(prompt_match("binary recur").unwrap(), r#""binary" AND "recur"*"#);
        assert_eq!(prompt_match("\"*:^"), None);
    }
}
