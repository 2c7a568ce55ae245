//! Writing artifacts into the index, removing them, rebuilding everything, and the listings
//! and counts the CLI shows.

use std::collections::BTreeSet;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use zblade_core::{CodeReference, Conversation, Error, Moment, Result};

use crate::{Failure, Index};

/// Which kind of artifact file a row came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactKind {
    /// `artifacts/conversations/<id>.json`
    Conversation,
    /// `artifacts/moments/<id>.json`
    Moment,
}

/// An artifact file as the index remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedArtifact {
    /// Conversation or moment.
    pub kind: ArtifactKind,
    /// Its id.
    pub id: String,
    /// Path relative to the project root.
    pub artifact_path: String,
    /// sha256 of the file's bytes when it was indexed.
    pub sha256: String,
}

/// One line of `zblade list conversations`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConversationSummary {
    /// `conv_…`
    pub id: String,
    /// Title.
    pub title: String,
    /// RFC 3339, UTC, milliseconds.
    pub created_at: String,
    /// RFC 3339, UTC, milliseconds.
    pub updated_at: String,
    /// Number of messages.
    pub message_count: i64,
    /// Tags.
    pub tags: Vec<String>,
    /// Path of the artifact, relative to the project root.
    pub artifact_path: String,
    /// The agent an imported conversation came from (`claude-code`, ...), if imported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One line of `zblade list moments`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MomentSummary {
    /// `moment_…`
    pub id: String,
    /// decision, pattern, solution or context.
    #[serde(rename = "type")]
    pub kind: String,
    /// The moment's text.
    pub content: String,
    /// Tags.
    pub tags: Vec<String>,
    /// The conversation it came from.
    pub conversation_id: Option<String>,
    /// RFC 3339, UTC, milliseconds.
    pub created_at: String,
    /// 0..1
    pub relevance_score: f64,
    /// True when the moment is stored inside its conversation's artifact.
    pub inline: bool,
    /// Path of the artifact that holds it, relative to the project root.
    pub artifact_path: String,
}

/// Where a message lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageLocation {
    /// Its conversation.
    pub conversation_id: String,
    /// Its position in the conversation, from 0.
    pub seq: i64,
}

/// Which rows of a list: at most `limit`, after skipping `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// The most rows returned.
    pub limit: usize,
    /// Rows skipped first.
    pub offset: usize,
}

impl Page {
    /// `limit` rows after the first `offset`.
    pub fn new(limit: usize, offset: usize) -> Page {
        Page { limit, offset }
    }

    /// The first `limit` rows.
    pub fn first(limit: usize) -> Page {
        Page { limit, offset: 0 }
    }
}

/// Row counts for `zblade status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Counts {
    /// Conversations.
    pub conversations: i64,
    /// Messages.
    pub messages: i64,
    /// Moments (standalone and inline).
    pub moments: i64,
    /// Code references.
    pub code_references: i64,
    /// Distinct referenced files.
    pub referenced_files: i64,
}

/// Fixed-width UTC timestamps, so that text order is time order.
pub fn timestamp(time: DateTime<Utc>) -> String {
    ts(Some(time))
}

fn ts(time: Option<DateTime<Utc>>) -> String {
    time.unwrap_or_default().to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn tags_json(tags: &[String]) -> String {
    serde_json::to_string(tags).expect("tags serialise")
}

fn parse_tags(text: Option<String>) -> Vec<String> {
    text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

impl Index {
    /// Indexes (or re-indexes) one conversation artifact in its own transaction.
    pub fn put_conversation(&mut self, conv: &Conversation, artifact_path: &str, sha256: &str) -> Result<()> {
        self.put_conversations(&[(conv, artifact_path, sha256)])
    }

    /// Indexes several conversation artifacts in one transaction.
    pub fn put_conversations(&mut self, items: &[(&Conversation, &str, &str)]) -> Result<()> {
        self.write(|tx| {
            let mut files = BTreeSet::new();
            for (conv, artifact_path, sha) in items {
                insert_conversation(tx, conv, artifact_path, sha, &mut files)?;
            }
            Ok(refresh_file_references(tx, &files)?)
        })
    }

    /// Indexes (or re-indexes) one standalone moment artifact.
    pub fn put_moment(&mut self, moment: &Moment, artifact_path: &str, sha256: &str) -> Result<()> {
        self.put_moments(&[(moment, artifact_path, sha256)])
    }

    /// Indexes several standalone moment artifacts in one transaction.
    pub fn put_moments(&mut self, items: &[(&Moment, &str, &str)]) -> Result<()> {
        self.write(|tx| {
            let mut files = BTreeSet::new();
            for (moment, artifact_path, sha) in items {
                insert_moment(tx, moment, artifact_path, sha, &mut files)?;
            }
            Ok(refresh_file_references(tx, &files)?)
        })
    }

    /// Records that a conversation's artifact was rewritten without changing what it says
    /// (converted to another format), so `fsck` does not take it for an edit.
    pub fn set_artifact_sha256(&mut self, id: &str, sha256: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE conversations SET artifact_sha256 = ?2 WHERE id = ?1",
                params![id, sha256],
            )?;
            tx.execute(
                "UPDATE moments SET artifact_sha256 = ?2 WHERE inline = 1 AND conversation_id = ?1",
                params![id, sha256],
            )?;
            Ok(())
        })
    }

    /// Removes a conversation (its messages, inline moments and references); false if absent.
    pub fn remove_conversation(&mut self, id: &str) -> Result<bool> {
        self.write(|tx| {
            let mut files = BTreeSet::new();
            let found = delete_conversation_rows(tx, id, &mut files)?;
            refresh_file_references(tx, &files)?;
            Ok(found)
        })
    }

    /// Removes a standalone moment; false if absent.
    pub fn remove_moment(&mut self, id: &str) -> Result<bool> {
        self.write(|tx| {
            let mut files = BTreeSet::new();
            let found = delete_moment_rows(tx, id, &mut files)?;
            refresh_file_references(tx, &files)?;
            Ok(found)
        })
    }

    /// Replaces the whole index with exactly these artifacts, in one transaction: readers see
    /// the old index or the new one, never a half-built one. Items that cannot be indexed (an
    /// id clash between two artifacts) are skipped and returned with their error.
    pub fn rebuild<'a>(
        &mut self,
        conversations: &[(&'a Conversation, &'a str, &'a str)],
        moments: &[(&'a Moment, &'a str, &'a str)],
    ) -> Result<Vec<(String, Error)>> {
        let skipped = self.write(|tx| {
            // Dropping and recreating the schema is much faster than deleting row by row through
            // the FTS triggers, and leaves no trace of rows whose artifacts are gone.
            let objects: Vec<(String, String)> = {
                let mut stmt = tx
                    .prepare("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'trigger') AND name NOT LIKE 'sqlite_%' AND sql IS NOT NULL")?;
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?
            };
            for (kind, name) in objects
                .iter()
                .filter(|(k, _)| k == "trigger")
                .chain(objects.iter().filter(|(k, _)| k == "table"))
            {
                let sql = format!(
                    "DROP {} IF EXISTS \"{}\"",
                    kind.to_uppercase(),
                    name.replace('"', "\"\"")
                );
                tx.execute_batch(&sql)?;
            }
            for sql in crate::schema::MIGRATIONS {
                tx.execute_batch(sql)?;
            }
            tx.pragma_update(None, "user_version", crate::schema::SCHEMA_VERSION)?;

            // Moment ids must be unique across artifacts. Clashes are settled here, before any
            // insert, so the rebuild needs no per-item savepoints (each would flush FTS5's buffer).
            // The first artifact in path order keeps the id; later ones are skipped.
            let mut owners: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
            let mut skipped = Vec::new();
            let mut claim = |ids: Vec<&'a str>, path: &'a str, skipped: &mut Vec<(String, Error)>| -> bool {
                for id in &ids {
                    if let Some(owner) = owners.get(id) {
                        let err = Error::field(path, "moments", format!("moment id {id:?} is already used by {owner}"));
                        skipped.push((path.to_string(), err));
                        return false;
                    }
                }
                owners.extend(ids.into_iter().map(|id| (id, path)));
                true
            };
            let conversations: Vec<_> = conversations
                .iter()
                .filter(|(c, path, _)| claim(c.moments.iter().map(|m| m.id.as_str()).collect(), path, &mut skipped))
                .collect();
            let moments: Vec<_> = moments
                .iter()
                .filter(|(m, path, _)| claim(vec![m.id.as_str()], path, &mut skipped))
                .collect();
            let mut files = BTreeSet::new();
            for (conv, artifact_path, sha) in conversations {
                insert_conversation(tx, conv, artifact_path, sha, &mut files)?;
            }
            for (moment, artifact_path, sha) in moments {
                insert_moment(tx, moment, artifact_path, sha, &mut files)?;
            }
            refresh_file_references(tx, &files)?;
            Ok(skipped)
        })?;
        self.read(|conn| {
            // Merge FTS segments into one b-tree per table (faster queries, smaller file), then
            // fold the WAL back into the database so the rebuild does not leave a file as large
            // as the index beside it.
            for table in ["messages_fts", "moments_fts", "conversations_fts"] {
                conn.execute(&format!("INSERT INTO {table}({table}) VALUES ('optimize')"), [])?;
            }
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
            Ok(())
        })?;
        Ok(skipped)
    }

    /// Every artifact the index was built from, with the hash it had then.
    pub fn indexed_artifacts(&self) -> Result<Vec<IndexedArtifact>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(
                "SELECT 'conversation', id, artifact_path, artifact_sha256 FROM conversations
                     UNION ALL
                     SELECT 'moment', id, artifact_path, artifact_sha256 FROM moments WHERE inline = 0
                     ORDER BY 3",
            )?;
            let rows = stmt.query_map([], |r| {
                let kind: String = r.get(0)?;
                Ok(IndexedArtifact {
                    kind: if kind == "conversation" {
                        ArtifactKind::Conversation
                    } else {
                        ArtifactKind::Moment
                    },
                    id: r.get(1)?,
                    artifact_path: r.get(2)?,
                    sha256: r.get(3)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// Conversations, most recently updated first.
    /// Conversations, most recently updated first; only those imported from `source` when one
    /// is given. Documents (`source` = `document`, stored as conversations) are listed only
    /// when asked for by that source.
    pub fn list_conversations(&self, page: Page, source: Option<&str>) -> Result<Vec<ConversationSummary>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, title, created_at, updated_at, message_count, tags, artifact_path, source
                     FROM conversations
                     WHERE (?3 IS NULL AND (source IS NULL OR source != 'document')) OR source = ?3
                     ORDER BY updated_at DESC, id DESC LIMIT ?1 OFFSET ?2",
            )?;
            let rows = stmt.query_map(params![page.limit as i64, page.offset as i64, source], |r| {
                Ok(ConversationSummary {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    created_at: r.get(2)?,
                    updated_at: r.get(3)?,
                    message_count: r.get(4)?,
                    tags: parse_tags(r.get(5)?),
                    artifact_path: r.get(6)?,
                    source: r.get(7)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// Moments, newest first; optionally only one type.
    pub fn list_moments(&self, page: Page, kind: Option<&str>) -> Result<Vec<MomentSummary>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, type, content, tags, conversation_id, created_at, relevance_score, inline, artifact_path
                     FROM moments WHERE ?3 IS NULL OR type = ?3
                     ORDER BY created_at DESC, id DESC LIMIT ?1 OFFSET ?2",
            )?;
            let rows = stmt.query_map(params![page.limit as i64, page.offset as i64, kind], |r| {
                Ok(MomentSummary {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    content: r.get(2)?,
                    tags: parse_tags(r.get(3)?),
                    conversation_id: r.get(4)?,
                    created_at: r.get(5)?,
                    relevance_score: r.get(6)?,
                    inline: r.get(7)?,
                    artifact_path: r.get(8)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// The artifact path of a conversation, if indexed.
    pub fn conversation_artifact(&self, id: &str) -> Result<Option<String>> {
        self.read(|conn| {
            conn.query_row("SELECT artifact_path FROM conversations WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
        })
    }

    /// The artifact path of a moment (its own file, or its conversation's for inline moments).
    pub fn moment_artifact(&self, id: &str) -> Result<Option<String>> {
        self.read(|conn| {
            conn.query_row("SELECT artifact_path FROM moments WHERE id = ?1", [id], |r| r.get(0))
                .optional()
        })
    }

    /// Every message with this id (message ids are unique only within a conversation).
    pub fn locate_message(&self, id: &str) -> Result<Vec<MessageLocation>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT conversation_id, seq FROM messages WHERE id = ?1 ORDER BY conversation_id")?;
            let rows = stmt.query_map([id], |r| {
                Ok(MessageLocation {
                    conversation_id: r.get(0)?,
                    seq: r.get(1)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// Row counts.
    pub fn counts(&self) -> Result<Counts> {
        self.read(|conn| {
            conn.query_row(
                "SELECT (SELECT count(*) FROM conversations), (SELECT count(*) FROM messages),
                            (SELECT count(*) FROM moments), (SELECT count(*) FROM code_references),
                            (SELECT count(*) FROM file_references)",
                [],
                |r| {
                    Ok(Counts {
                        conversations: r.get(0)?,
                        messages: r.get(1)?,
                        moments: r.get(2)?,
                        code_references: r.get(3)?,
                        referenced_files: r.get(4)?,
                    })
                },
            )
        })
    }
}

/// Deletes a conversation's rows (messages, inline moments, references, FTS entries); true if
/// it existed. New conversations skip the deletes entirely: each `INSERT … SELECT` into an FTS
/// table flushes FTS5's pending terms, which would slow bulk ingest.
fn delete_conversation_rows(conn: &Connection, id: &str, files: &mut BTreeSet<String>) -> rusqlite::Result<bool> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM conversations WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some();
    if !exists {
        return Ok(false);
    }
    collect_files(
        conn,
        "SELECT file_path FROM code_references WHERE conversation_id = ?1",
        id,
        files,
    )?;
    conn.execute("DELETE FROM code_references WHERE conversation_id = ?1", [id])?;
    conn.execute(
        "INSERT INTO moments_fts(moments_fts, rowid, content, context, tags)
         SELECT 'delete', rowid, content, context, tags FROM moments WHERE inline = 1 AND conversation_id = ?1",
        [id],
    )?;
    conn.execute("DELETE FROM moments WHERE inline = 1 AND conversation_id = ?1", [id])?;
    conn.execute(
        "INSERT INTO messages_fts(messages_fts, rowid, content)
         SELECT 'delete', pk, content FROM messages WHERE conversation_id = ?1",
        [id],
    )?;
    conn.execute("DELETE FROM messages WHERE conversation_id = ?1", [id])?;
    conn.execute("DELETE FROM merges WHERE conversation_id = ?1", [id])?;
    conn.execute(
        "INSERT INTO conversations_fts(conversations_fts, rowid, title, tags)
         SELECT 'delete', rowid, title, tags FROM conversations WHERE id = ?1",
        [id],
    )?;
    conn.execute("DELETE FROM decision_states WHERE id = ?1", [id])?;
    conn.execute("DELETE FROM conversations WHERE id = ?1", [id])?;
    Ok(true)
}

/// Deletes a standalone moment's rows; true if it existed.
fn delete_moment_rows(conn: &Connection, id: &str, files: &mut BTreeSet<String>) -> rusqlite::Result<bool> {
    collect_files(
        conn,
        "SELECT file_path FROM code_references WHERE moment_id = ?1",
        id,
        files,
    )?;
    conn.execute("DELETE FROM code_references WHERE moment_id = ?1", [id])?;
    conn.execute(
        "INSERT INTO moments_fts(moments_fts, rowid, content, context, tags)
         SELECT 'delete', rowid, content, context, tags FROM moments WHERE id = ?1 AND inline = 0",
        [id],
    )?;
    conn.execute("DELETE FROM decision_states WHERE id = ?1", [id])?;
    Ok(conn.execute("DELETE FROM moments WHERE id = ?1 AND inline = 0", [id])? > 0)
}

fn collect_files(conn: &Connection, sql: &str, id: &str, files: &mut BTreeSet<String>) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    for file in stmt.query_map([id], |r| r.get::<_, String>(0))? {
        files.insert(file?);
    }
    Ok(())
}

/// Refuses a moment id that another artifact already uses.
fn check_moment_id_free(conn: &Connection, id: &str, owner_path: &str) -> Result<(), Failure> {
    let existing: Option<String> = conn
        .query_row("SELECT artifact_path FROM moments WHERE id = ?1", [id], |r| r.get(0))
        .optional()?;
    match existing {
        Some(other) if other != owner_path => Err(Failure::Invalid(Error::field(
            owner_path,
            "moments",
            format!("moment id {id:?} is already used by {other}"),
        ))),
        _ => Ok(()),
    }
}

fn insert_conversation(
    conn: &Connection,
    conv: &Conversation,
    artifact_path: &str,
    sha256: &str,
    files: &mut BTreeSet<String>,
) -> Result<(), Failure> {
    let id = conv.conversation_id.as_str();
    let shared = conv.shared_prefix.as_ref().map_or(0, |p| p.messages);
    delete_conversation_rows(conn, id, files)?;
    crate::decisions::put_state(conn, id, conv.metadata.decision.as_ref())?;
    conn.prepare_cached(
        "INSERT INTO conversations (id, project_id, title, created_at, updated_at, message_count, tags, artifact_path,
                                    artifact_sha256, source, shared_from, shared_count, forked_from, forked_after)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )
    .and_then(|mut s| {
        s.execute(params![
            id,
            conv.project_id,
            conv.title,
            ts(conv.created_at),
            ts(conv.updated_at),
            // A fresh fork is indexed from its manifest alone: no messages yet, `shared`
            // inherited.
            conv.messages.len().max(shared) as i64,
            tags_json(conv.tags()),
            artifact_path,
            sha256,
            conv.metadata.source.as_ref().map(|s| s.tool.as_str()),
            conv.shared_prefix.as_ref().map(|p| p.conversation_id.as_str()),
            shared as i64,
            conv.forked_from.as_ref().map(|f| f.conversation_id.as_str()),
            conv.forked_from.as_ref().map(|f| f.after_index as i64),
        ])
    })?;
    for merge in &conv.merged_from {
        conn.prepare_cached(
            "INSERT INTO merges (conversation_id, source_id, messages, merged_at) VALUES (?1, ?2, ?3, ?4)",
        )
        .and_then(|mut s| {
            s.execute(params![
                id,
                merge.conversation_id,
                merge.indices.len() as i64,
                ts(Some(merge.merged_at))
            ])
        })?;
    }
    conn.prepare_cached("INSERT INTO conversations_fts(rowid, title, tags) VALUES (last_insert_rowid(), ?1, ?2)")
        .and_then(|mut s| s.execute(params![conv.title, tags_json(conv.tags())]))?;
    {
        let mut insert_fts = conn.prepare_cached("INSERT INTO messages_fts(rowid, content) VALUES (?1, ?2)")?;
        let mut insert_message = conn.prepare_cached(
            "INSERT INTO messages (conversation_id, id, seq, role, content, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        // A fork's shared messages are indexed once, under the conversation that wrote them.
        for (seq, message) in conv.messages.iter().enumerate().skip(shared) {
            let timestamp = ts(message.timestamp.or(conv.created_at));
            insert_message.execute(params![
                id,
                message.id,
                seq as i64,
                message.role.as_str(),
                message.content,
                timestamp
            ])?;
            insert_fts.execute(params![conn.last_insert_rowid(), message.content])?;
            for (i, reference) in message.code_references.iter().enumerate() {
                let key = format!("{id}/{}/{i}", message.id);
                insert_reference(conn, &key, Some(id), Some(&message.id), None, reference, &timestamp)?;
                files.insert(reference.file.clone());
            }
        }
    }
    for moment in &conv.moments {
        check_moment_id_free(conn, &moment.id, artifact_path)?;
        conn.prepare_cached(
            "INSERT INTO moments (id, conversation_id, message_id, type, content, context, tags, created_at, relevance_score, inline, artifact_path, artifact_sha256)
             VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7, 0.5, 1, ?8, ?9)",
        )
        .and_then(|mut s| {
            s.execute(params![
                moment.id,
                id,
                moment.message_id,
                moment.kind.as_str(),
                moment.content,
                tags_json(&moment.tags),
                ts(moment.timestamp.or(conv.created_at)),
                artifact_path,
                sha256
            ])
        })?;
        index_moment_text(conn, &moment.content, None, &moment.tags)?;
    }
    Ok(())
}

/// Adds the moment just inserted (the last rowid) to `moments_fts`.
fn index_moment_text(conn: &Connection, content: &str, context: Option<&str>, tags: &[String]) -> Result<(), Failure> {
    conn.prepare_cached(
        "INSERT INTO moments_fts(rowid, content, context, tags) VALUES (last_insert_rowid(), ?1, ?2, ?3)",
    )
    .and_then(|mut s| s.execute(params![content, context, tags_json(tags)]))?;
    Ok(())
}

fn insert_moment(
    conn: &Connection,
    moment: &Moment,
    artifact_path: &str,
    sha256: &str,
    files: &mut BTreeSet<String>,
) -> Result<(), Failure> {
    check_moment_id_free(conn, &moment.id, artifact_path)?;
    delete_moment_rows(conn, &moment.id, files)?;
    let created = ts(moment.created_at);
    conn.prepare_cached(
        "INSERT INTO moments (id, conversation_id, message_id, type, content, context, tags, created_at, relevance_score, inline, artifact_path, artifact_sha256)
         VALUES (?1, ?2, NULL, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9, ?10)",
    )
    .and_then(|mut s| {
        s.execute(params![
            moment.id,
            moment.conversation_id,
            moment.kind.as_str(),
            moment.content,
            moment.context,
            tags_json(&moment.tags),
            created,
            moment.relevance_score,
            artifact_path,
            sha256
        ])
    })?;
    index_moment_text(conn, &moment.content, moment.context.as_deref(), &moment.tags)?;
    crate::decisions::put_state(conn, &moment.id, moment.decision.as_ref())?;
    for (i, reference) in moment.code_references.iter().enumerate() {
        let key = format!("{}/{i}", moment.id);
        insert_reference(
            conn,
            &key,
            moment.conversation_id.as_deref(),
            None,
            Some(&moment.id),
            reference,
            &created,
        )?;
        files.insert(reference.file.clone());
    }
    Ok(())
}

fn insert_reference(
    conn: &Connection,
    key: &str,
    conversation_id: Option<&str>,
    message_id: Option<&str>,
    moment_id: Option<&str>,
    reference: &CodeReference,
    created_at: &str,
) -> rusqlite::Result<()> {
    let context = reference.context.as_deref().or(reference.purpose.as_deref());
    conn.prepare_cached(
        "INSERT INTO code_references (ref_key, conversation_id, message_id, moment_id, file_path, start_line, end_line, context, git_hash, commit_id, anchor, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        key,
        conversation_id,
        message_id,
        moment_id,
        reference.file,
        reference.lines[0],
        reference.lines[1],
        context,
        reference.git_hash,
        reference.commit,
        reference.anchor.as_ref().map(|a| serde_json::to_string(a).expect("anchors serialise")),
        created_at
    ])?;
    Ok(())
}

/// Recomputes `file_references` rows for the files whose references changed.
fn refresh_file_references(conn: &Connection, files: &BTreeSet<String>) -> rusqlite::Result<()> {
    let mut delete = conn.prepare_cached("DELETE FROM file_references WHERE file_path = ?1")?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO file_references (file_path, reference_count, first_referenced, last_referenced)
         SELECT file_path, count(*), min(created_at), max(created_at) FROM code_references
         WHERE file_path = ?1 GROUP BY file_path",
    )?;
    for file in files {
        delete.execute([file])?;
        insert.execute([file])?;
    }
    Ok(())
}
