//! Search filters (conversation, path prefix, time range) as SQL conditions, shared by keyword
//! search and by the filtering of vector hits, so both modes filter the same way.

use rusqlite::OptionalExtension;
use zblade_core::Result;

use crate::Index;
use crate::code::parse_code_key;

/// Narrows a search. Empty fields do not filter.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SearchFilter {
    /// Only this conversation's messages and moments (code belongs to no conversation and is
    /// left out).
    pub conversation: Option<String>,
    /// Only code under this path, and messages and moments with a code reference under it.
    pub path_prefix: Option<String>,
    /// Written (or, for code, modified) at or after this index timestamp.
    pub since: Option<String>,
    /// Written (or modified) before this index timestamp.
    pub until: Option<String>,
}

/// `LIKE` pattern matching every path that starts with `prefix`.
fn like_prefix(prefix: &str) -> String {
    let escaped: String = prefix
        .chars()
        .flat_map(|c| match c {
            '%' | '_' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("{escaped}%")
}

impl SearchFilter {
    /// True when nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self == &SearchFilter::default()
    }

    /// Conditions on messages aliased `m`, each starting with ` AND`, and their arguments.
    pub(crate) fn message_clause(&self) -> (String, Vec<String>) {
        self.clause(
            "m.conversation_id",
            "m.timestamp",
            "r.conversation_id = m.conversation_id AND r.message_id = m.id",
        )
    }

    /// Conditions on moments aliased `m`.
    pub(crate) fn moment_clause(&self) -> (String, Vec<String>) {
        self.clause("m.conversation_id", "m.created_at", "r.moment_id = m.id")
    }

    fn clause(&self, conversation: &str, time: &str, owner: &str) -> (String, Vec<String>) {
        let mut sql = String::new();
        let mut args = Vec::new();
        if let Some(id) = &self.conversation {
            sql.push_str(&format!(" AND {conversation} = ?{}", args.len() + 2));
            args.push(id.clone());
        }
        if let Some(since) = &self.since {
            sql.push_str(&format!(" AND {time} >= ?{}", args.len() + 2));
            args.push(since.clone());
        }
        if let Some(until) = &self.until {
            sql.push_str(&format!(" AND {time} < ?{}", args.len() + 2));
            args.push(until.clone());
        }
        if let Some(prefix) = &self.path_prefix {
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM code_references r WHERE {owner} AND r.file_path LIKE ?{} ESCAPE '\\')",
                args.len() + 2
            ));
            args.push(like_prefix(prefix));
        }
        (sql, args)
    }

    /// Conditions on code chunks aliased `c` with their file `f`.
    pub(crate) fn code_clause(&self) -> (String, Vec<String>) {
        let mut sql = String::new();
        let mut args = Vec::new();
        if self.conversation.is_some() {
            sql.push_str(" AND 0");
        }
        if let Some(since) = &self.since {
            sql.push_str(&format!(" AND f.modified_at >= ?{}", args.len() + 2));
            args.push(since.clone());
        }
        if let Some(until) = &self.until {
            sql.push_str(&format!(" AND f.modified_at < ?{}", args.len() + 2));
            args.push(until.clone());
        }
        if let Some(prefix) = &self.path_prefix {
            sql.push_str(&format!(" AND c.path LIKE ?{} ESCAPE '\\'", args.len() + 2));
            args.push(like_prefix(prefix));
        }
        (sql, args)
    }
}

impl Index {
    /// Whether the message, moment or code chunk named by a search key passes `filter`.
    pub fn key_passes(&self, key: &str, filter: &SearchFilter) -> Result<bool> {
        self.read(|conn| {
            if filter.is_empty() {
                return Ok(true);
            }
            let (sql, first, second, clause) = if let Some(sha) = key.strip_prefix("commit:") {
                // A commit belongs to no conversation; its paths are not references.
                if filter.conversation.is_some() || filter.path_prefix.is_some() {
                    return Ok(false);
                }
                let (clause, args) = filter.clause("c.sha", "c.committed_at", "");
                (
                    format!("SELECT 1 FROM commits c WHERE c.sha = ?1 {clause}"),
                    sha.to_string(),
                    None,
                    args,
                )
            } else if let Some((path, start, end)) = parse_code_key(key) {
                let (clause, args) = filter.code_clause();
                let sql = format!(
                    "SELECT 1 FROM code_chunks c JOIN code_files f ON f.path = c.path
                     WHERE c.path = ?1 AND c.start_line = {start} AND c.end_line = {end} {clause}"
                );
                (sql, path.to_string(), None, args)
            } else if let Some((conv, msg)) = key.split_once('/') {
                let (clause, args) = filter.message_clause();
                // The message id is bound last, after the filter's own arguments.
                let n = args.len() + 2;
                let sql = format!("SELECT 1 FROM messages m WHERE m.conversation_id = ?1 AND m.id = ?{n} {clause}");
                (sql, conv.to_string(), Some(msg.to_string()), args)
            } else {
                let (clause, args) = filter.moment_clause();
                (
                    format!("SELECT 1 FROM moments m WHERE m.id = ?1 {clause}"),
                    key.to_string(),
                    None,
                    args,
                )
            };
            let mut values: Vec<&dyn rusqlite::ToSql> = vec![&first];
            values.extend(clause.iter().map(|a| a as &dyn rusqlite::ToSql));
            if let Some(second) = &second {
                values.push(second);
            }
            let found: Option<i64> = conn
                .prepare_cached(&sql)
                .and_then(|mut stmt| stmt.query_row(values.as_slice(), |r| r.get(0)).optional())?;
            Ok(found.is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_prefix("src/my_mod%"), "src/my\\_mod\\%%");
    }

    #[test]
    fn clauses_number_their_arguments_after_the_query() {
        let filter = SearchFilter {
            conversation: Some("conv_1".into()),
            since: Some("2026-01-01T00:00:00.000Z".into()),
            ..Default::default()
        };
        let (sql, args) = filter.message_clause();
        assert_eq!(sql, " AND m.conversation_id = ?2 AND m.timestamp >= ?3");
        assert_eq!(args.len(), 2);
        assert!(SearchFilter::default().is_empty());
        assert!(filter.code_clause().0.contains("AND 0"));
    }
}
