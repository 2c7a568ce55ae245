//! The SQL both backends run unchanged, written once with PostgreSQL's placeholders (`$1`):
//! `postgres.rs` runs it as it is, `sqlite.rs` through [`sqlite`], which writes the
//! placeholders as SQLite's numbered ones (`?1`). A statement whose dialects differ (upserts,
//! `RETURNING` types, full-text search) stays in its backend.

pub(crate) const ACCEPT_INVITATION: &str = "UPDATE members SET accepted_at = coalesce(accepted_at, $4)
                 WHERE user_id = $1 AND project_id = $3
                   AND owner_id = (SELECT id FROM users WHERE name = $2)";
pub(crate) const ADD_TOKEN: &str = "INSERT INTO tokens (id, user_id, hash, created_at, expires_at)
                 SELECT $1, id, $2, $3, $5 FROM users WHERE name = $4";
pub(crate) const DECLINE_INVITATION: &str =
    "DELETE FROM members WHERE user_id = $1 AND project_id = $3 AND accepted_at IS NULL
                   AND owner_id = (SELECT id FROM users WHERE name = $2)";
pub(crate) const DELETE_CONTRIBUTIONS: &str =
    "DELETE FROM records WHERE user_id = $1 AND project_id = $2 AND coalesce(author_id, user_id) = $3
                 RETURNING kind, id";
pub(crate) const DELETE_PROJECT: &str = "DELETE FROM projects WHERE user_id = $1 AND id = $2";
pub(crate) const EMBEDDING_MODEL: &str =
    "SELECT embedding_model, embedding_dims FROM projects WHERE user_id = $1 AND id = $2";
pub(crate) const INVITATIONS: &str = "SELECT m.project_id, p.name, o.name, m.role, i.name, m.invited_at FROM members m
                   JOIN projects p ON p.user_id = m.owner_id AND p.id = m.project_id
                   JOIN users o ON o.id = m.owner_id JOIN users i ON i.id = m.invited_by
                 WHERE m.user_id = $1 AND m.accepted_at IS NULL
                 ORDER BY m.invited_at, m.project_id";
pub(crate) const LIST_USERS: &str = "SELECT u.name, u.created_at,
                    (SELECT count(*) FROM tokens t WHERE t.user_id = u.id AND t.revoked_at IS NULL),
                    (SELECT count(*) FROM tokens t WHERE t.user_id = u.id AND t.revoked_at IS NOT NULL),
                    u.disabled_at
                 FROM users u ORDER BY u.name";
pub(crate) const PASSAGE_COUNT: &str = "SELECT count(*) FROM passages WHERE user_id = $1 AND project_id = $2";
pub(crate) const PROJECT_EXISTS: &str = "SELECT 1 FROM projects WHERE user_id = $1 AND id = $2";
pub(crate) const PROJECT_MEMBERS: &str = "SELECT o.name, 'owner', o.name, p.created_at, p.created_at, 0 FROM projects p
                   JOIN users o ON o.id = p.user_id
                 WHERE p.user_id = $1 AND p.id = $2
                 UNION ALL
                 SELECT u.name, m.role, i.name, m.invited_at, m.accepted_at, 1 FROM members m
                   JOIN users u ON u.id = m.user_id JOIN users i ON i.id = m.invited_by
                 WHERE m.owner_id = $1 AND m.project_id = $2
                 ORDER BY 6, 1";
pub(crate) const RECORD_AUTHOR: &str = "SELECT coalesce(author_id, user_id) FROM records
                     WHERE user_id = $1 AND project_id = $2 AND kind = $3 AND id = $4";
pub(crate) const RECORD_EXISTS: &str =
    "SELECT EXISTS (SELECT 1 FROM records WHERE user_id = $1 AND project_id = $2 AND kind = $3 AND id = $4)";
pub(crate) const RECORD_MIGRATION: &str = "INSERT INTO zblade_schema (version, applied_at) VALUES ($1, $2)";
pub(crate) const RECORD_VERSION: &str = "SELECT version, hash, coalesce(author_id, user_id) FROM records
                 WHERE user_id = $1 AND project_id = $2 AND kind = $3 AND id = $4";
pub(crate) const REMOVE_MEMBER: &str = "DELETE FROM members WHERE owner_id = $1 AND project_id = $2 AND user_id = $3";
pub(crate) const REVOKE_TOKEN: &str = "UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL";
pub(crate) const ROLE_IN_PROJECT: &str = "SELECT user_id, 'owner' FROM projects WHERE user_id = $1 AND id = $2
                 UNION ALL
                 SELECT owner_id, role FROM members
                 WHERE user_id = $1 AND project_id = $2 AND accepted_at IS NOT NULL";
pub(crate) const SET_USER_DISABLED: &str =
    "UPDATE users SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, $3) END WHERE name = $1";
pub(crate) const SET_VECTOR_ROWS: &str = "UPDATE records SET vector_rows = $6 WHERE user_id = $1 AND project_id = $2 AND kind = $3 AND id = $4 AND hash = $5";
pub(crate) const UNINDEXED_RECORDS: &str = "SELECT seq, user_id, project_id, kind, id, body FROM records r
                 WHERE seq > $1 AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.record_seq = r.seq)
                 ORDER BY seq LIMIT $2";
pub(crate) const USER_BY_TOKEN_HASH: &str = "SELECT u.id, u.name FROM tokens t JOIN users u ON u.id = t.user_id
                 WHERE t.hash = $1 AND t.revoked_at IS NULL AND u.disabled_at IS NULL
                   AND (t.expires_at IS NULL OR t.expires_at > $2)";
pub(crate) const USER_ID_BY_NAME: &str = "SELECT id FROM users WHERE name = $1";

/// `sql` with each `$N` written `?N`: the same numbered parameter in SQLite's spelling.
pub(crate) fn sqlite(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_written_in_sqlites_spelling() {
        assert_eq!(
            sqlite("DELETE FROM members WHERE user_id = $1 AND project_id = $3 AND note = '$x' AND n = $12"),
            "DELETE FROM members WHERE user_id = ?1 AND project_id = ?3 AND note = '$x' AND n = ?12"
        );
    }
}
