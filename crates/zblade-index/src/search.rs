//! Keyword search over messages, moments and conversations with FTS5 and BM25.
//!
//! Every query goes through [`crate::fts::match_expression`], so user text never reaches FTS5
//! as syntax. Ties in score are broken by stable ids, so an index rebuilt from the artifacts
//! returns exactly the same results as the one built incrementally.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use zblade_core::Result;

use crate::hit::{HitKind, SearchHit};
use crate::{Index, SearchFilter, fts};

/// Highlight markers placed around matched words in snippets.
pub const HIGHLIGHT: (&str, &str) = ("«", "»");

/// Which kinds of records a search covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    /// Messages, moments, project files and commits, merged by score.
    #[default]
    All,
    /// Messages only.
    Messages,
    /// Moments only.
    Moments,
    /// Conversations, by title, tags and their best-matching message.
    Conversations,
    /// Project files indexed by `zblade index`, as path and lines.
    Code,
    /// Commits of the project's repository, by message and changed paths.
    Commits,
}

/// How to search: by words, by meaning, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// FTS5 and BM25.
    Keyword,
    /// Nearest neighbours of the query's embedding.
    Semantic,
    /// Both, merged by relative score fusion (the default where vectors exist).
    Hybrid,
}

impl SearchMode {
    /// Its name, as JSON and the command line spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Keyword => "keyword",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

/// A search request, the one every face sends (`zblade search`, the app, MCP's `search`):
/// what to look for, how many, where and how. The engine decides the rest — it refuses a limit
/// of 0, caps one above [`SearchQuery::MAX_LIMIT`], cleans the path, checks the conversation
/// exists, and re-indexes files that changed since they were indexed before showing their code.
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SearchQuery {
    /// Free text, as the user typed it.
    pub text: String,
    /// Most results to return.
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// What to search.
    #[serde(default)]
    pub kind: SearchKind,
    /// What to leave out.
    #[serde(default)]
    pub filter: SearchFilter,
    /// How to search; `None`: hybrid where vectors exist, else keyword.
    #[serde(default)]
    pub mode: Option<SearchMode>,
}

/// [`SearchQuery::DEFAULT_LIMIT`], for a query that names no limit.
fn default_limit() -> usize {
    SearchQuery::DEFAULT_LIMIT
}

impl SearchQuery {
    /// Results a search returns when nobody says how many (`zblade search`, MCP's `search`).
    pub const DEFAULT_LIMIT: usize = 10;
    /// The most results one search returns; a larger limit is capped to it.
    pub const MAX_LIMIT: usize = 200;

    /// A query for `text`.
    pub fn new(text: impl Into<String>, limit: usize, kind: SearchKind) -> Self {
        SearchQuery {
            text: text.into(),
            limit,
            kind,
            filter: SearchFilter::default(),
            mode: None,
        }
    }

    /// The same query run in `mode` (`None`: the default).
    pub fn in_mode(mut self, mode: Option<SearchMode>) -> Self {
        self.mode = mode;
        self
    }

    /// The same query narrowed by `filter`.
    pub fn with_filter(mut self, filter: SearchFilter) -> Self {
        self.filter = filter;
        self
    }
}

impl Index {
    /// Runs a keyword search. Text without any searchable word returns no results.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        self.search_snippets(query, true)
    }

    /// Like [`Index::search`], but message hits come without a snippet (it is empty):
    /// cheaper when only some of the hits will be shown, as in hybrid search, which fuses
    /// fifty candidates and shows ten. [`Index::highlight`] adds the snippets afterwards.
    pub fn search_candidates(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        self.search_snippets(query, false)
    }

    /// Fills in the empty snippets of message hits with the words of `text` highlighted
    /// (« »), as [`Index::search`] would have; a message without those words gets its opening.
    pub fn highlight(&self, hits: &mut [SearchHit], text: &str) -> Result<()> {
        self.read(|conn| {
            let Some(terms) = fts::Terms::parse(text) else {
                return Ok(());
            };
            let expr = terms.any();
            let conn = &conn;
            let mut run = || -> rusqlite::Result<()> {
                let mut pk_of =
                    conn.prepare_cached("SELECT pk FROM messages WHERE conversation_id = ?1 AND id = ?2")?;
                let mut opening = conn.prepare_cached("SELECT substr(content, 1, 200) FROM messages WHERE pk = ?1")?;
                let mut snippet = conn.prepare_cached(
                    "SELECT snippet(messages_fts, 0, '«', '»', '…', 16) FROM messages_fts
                     WHERE messages_fts MATCH ?1 AND rowid = ?2",
                )?;
                for hit in hits.iter_mut() {
                    let (HitKind::Message, Some(conv), true) = (hit.kind, &hit.conversation_id, hit.snippet.is_empty())
                    else {
                        continue;
                    };
                    let Some(pk) = pk_of
                        .query_row(params![conv, hit.id], |r| r.get::<_, i64>(0))
                        .optional()?
                    else {
                        continue;
                    };
                    hit.snippet = match snippet.query_row(params![expr, pk], |r| r.get(0)).optional()? {
                        Some(text) => text,
                        None => opening.query_row([pk], |r| r.get(0))?,
                    };
                }
                Ok(())
            };
            run()
        })
    }

    fn search_snippets(&self, query: &SearchQuery, snippets: bool) -> Result<Vec<SearchHit>> {
        let Some(terms) = fts::Terms::parse(&query.text) else {
            return Ok(Vec::new());
        };
        let expr = terms.any();
        let limit = query.limit.max(1);
        let filter = &query.filter;
        self.read(|conn| match query.kind {
            SearchKind::Messages => search_messages(conn, &terms, limit, filter, snippets),
            SearchKind::Moments => search_moments(conn, &expr, limit, filter),
            SearchKind::Conversations => search_conversations(conn, &expr, limit),
            SearchKind::Code => crate::code::search_code(conn, &expr, limit, filter),
            SearchKind::Commits => crate::commits::search_commits(conn, &expr, limit, filter),
            SearchKind::All => search_messages(conn, &terms, limit, filter, snippets).and_then(|mut hits| {
                hits.extend(search_moments(conn, &expr, limit, filter)?);
                hits.extend(crate::code::search_code(conn, &expr, limit, filter)?);
                hits.extend(crate::commits::search_commits(conn, &expr, limit, filter)?);
                hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
                hits.truncate(limit);
                Ok(hits)
            }),
        })
    }
}

/// Rows fetched beyond the limit, so that ties at the cut can be detected without sorting
/// every match.
const TIE_MARGIN: usize = 8;

/// The best `limit` messages for an FTS expression, as (pk, rank), ties broken by
/// (conversation id, position). FTS5 scores every matching row (a B-tree lookup each for the
/// document length), so this is the cost that grows with the index: unfiltered, only the
/// newest [`RANKED_MATCHES`] are ranked. A filter ranks every match that passes it (the
/// newest matches may all fail it).
fn top_messages(
    conn: &Connection,
    expr: &str,
    limit: usize,
    min_pk: i64,
    filter: &SearchFilter,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    if !filter.is_empty() {
        // Filters are selective: join and order the matches that pass them exactly.
        let (clause, args) = filter.message_clause();
        let n = args.len() + 2;
        let sql = format!(
            "SELECT f.rowid, f.rank FROM messages_fts f JOIN messages m ON m.pk = f.rowid
             WHERE messages_fts MATCH ?1 AND f.rowid >= ?{n} {clause}
             ORDER BY f.rank, m.conversation_id, m.seq LIMIT {limit}"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut values: Vec<&dyn rusqlite::ToSql> = vec![&expr];
        values.extend(args.iter().map(|a| a as &dyn rusqlite::ToSql));
        values.push(&min_pk);
        return stmt
            .query_map(values.as_slice(), |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect();
    }
    let min_pk = newest_matches_start(conn, expr, min_pk)?;
    // Scored by `bm25()` and kept by SQLite's LIMIT sort, which holds only the best rows (a
    // join in the same query would make it sort every match). FTS5's own `ORDER BY rank LIMIT`
    // gives the same rows and scores, and made the keyword half of a context at a million
    // messages about a third slower (docs/BENCHMARKS.md, "The lean install").
    let fetch = limit + TIE_MARGIN;
    let mut native = conn.prepare_cached(
        "SELECT rowid, bm25(messages_fts) AS score FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid >= ?3
         ORDER BY score LIMIT ?2",
    )?;
    let rows: Vec<(i64, f64)> = native
        .query_map(params![expr, fetch as i64, min_pk], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let tie_at_cut = rows.len() == fetch && rows[limit - 1].1 == rows[fetch - 1].1;
    if tie_at_cut {
        // Rare (many identical scores): order every match exactly, so results never depend on
        // the order rows were inserted in.
        let mut exact = conn.prepare_cached(
            "SELECT f.rowid, f.rank FROM messages_fts f JOIN messages m ON m.pk = f.rowid
             WHERE messages_fts MATCH ?1 AND f.rowid >= ?3 ORDER BY f.rank, m.conversation_id, m.seq LIMIT ?2",
        )?;
        return exact
            .query_map(params![expr, limit as i64, min_pk], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect();
    }
    let mut position = conn.prepare_cached("SELECT conversation_id, seq FROM messages WHERE pk = ?1")?;
    let mut keyed = Vec::with_capacity(rows.len());
    for (pk, rank) in rows {
        let (conv, seq): (String, i64) = position.query_row([pk], |r| Ok((r.get(0)?, r.get(1)?)))?;
        keyed.push((rank, conv, seq, pk));
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    Ok(keyed
        .into_iter()
        .take(limit)
        .map(|(rank, _, _, pk)| (pk, rank))
        .collect())
}

/// At most this many matches of one expression are ranked, the newest. FTS5 computes BM25 for
/// every row a MATCH yields (about 1.5 µs each on this project's 2-core machine), so a word in
/// 40,000 messages of a million-chunk project cost 60 ms a search; the newest matches are the
/// likelier target, and the vector half still searches all of memory.
pub const RANKED_MATCHES: i64 = 5_000;

/// The lowest pk to rank for `expr` (at least `min_pk`): where its newest [`RANKED_MATCHES`]
/// matches begin, or `min_pk` when it has no more than that. Walking the matches newest first
/// reads only the doclists, which costs a fraction of scoring them.
fn newest_matches_start(conn: &Connection, expr: &str, min_pk: i64) -> rusqlite::Result<i64> {
    let mut start = conn.prepare_cached(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid >= ?2
         ORDER BY rowid DESC LIMIT 1 OFFSET ?3",
    )?;
    let pk: Option<i64> = start
        .query_row(params![expr, min_pk, RANKED_MATCHES - 1], |r| r.get(0))
        .optional()?;
    Ok(pk.map_or(min_pk, |pk| pk.max(min_pk)))
}

/// A word found in more than this share of messages (or in more than [`RANKED_MATCHES`]) is
/// "common": scoring every message that holds it is the slow part of a search, and BM25 gives
/// it little weight anyway.
const COMMON_TERM_SHARE: f64 = 0.05;

/// When every word of a query is common, only the most recently added messages are ranked:
/// otherwise one word like "new" would make FTS5 score a tenth of the whole index. Among so
/// many matches BM25 barely separates documents, and recent memory is the likelier target.
pub const COMMON_QUERY_WINDOW: i64 = 10_000;

fn search_messages(
    conn: &Connection,
    terms: &fts::Terms,
    limit: usize,
    filter: &SearchFilter,
    snippets: bool,
) -> rusqlite::Result<Vec<SearchHit>> {
    // Plan: messages holding every word first; then, if there are too few, messages holding
    // some of the selective (not common) words; then messages holding any word. Each group is
    // ordered by BM25. Words that occur nowhere are dropped first, so one unknown word does not
    // empty the AND group. This is what people expect of a search box, and it keeps latency
    // low: FTS5 computes BM25 for every row a MATCH yields, so small match sets are fast.
    let total: i64 = conn
        .prepare_cached("SELECT coalesce(max(pk), 0) FROM messages")?
        .query_row([], |r| r.get(0))?;
    // Counting stops at the cap, so a common word costs at most that many doclist entries; past
    // 100,000 messages the share would pass RANKED_MATCHES, more than a search ranks anyway.
    let cap = ((total as f64 * COMMON_TERM_SHARE) as i64).clamp(64, RANKED_MATCHES);
    let mut count =
        conn.prepare_cached("SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT ?2)")?;
    let mut frequency = Vec::with_capacity(terms.len());
    for term in terms.each() {
        frequency.push(count.query_row(params![term, cap], |r| r.get::<_, i64>(0))?);
    }
    let Some(present) = terms.subset(&frequency.iter().map(|&f| f > 0).collect::<Vec<_>>()) else {
        return Ok(Vec::new());
    };
    let all_common = frequency.iter().filter(|&&f| f > 0).all(|&f| f >= cap);
    let min_pk = if all_common { total - COMMON_QUERY_WINDOW } else { 0 };
    let mut top = top_messages(conn, &present.all(), limit, min_pk, filter)?;
    let fill = |expr: String, top: &mut Vec<(i64, f64)>| -> rusqlite::Result<()> {
        for row in top_messages(conn, &expr, limit, min_pk, filter)? {
            if top.len() == limit {
                break;
            }
            if !top.iter().any(|(pk, _)| *pk == row.0) {
                top.push(row);
            }
        }
        Ok(())
    };
    if top.len() < limit && present.len() > 1 {
        let selective: Vec<bool> = frequency.iter().filter(|&&f| f > 0).map(|&f| f < cap).collect();
        if let Some(rare) = present.subset(&selective).filter(|r| r.len() < present.len()) {
            fill(rare.any(), &mut top)?;
        }
        if top.len() < limit {
            fill(present.any(), &mut top)?;
        }
    }
    if !snippets {
        let mut detail = conn.prepare_cached(
            "SELECT m.id, m.conversation_id, c.title, m.role, m.timestamp, ''
             FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.pk = ?1",
        )?;
        return top
            .into_iter()
            .map(|(pk, rank)| detail.query_row(params![pk], |r| hit_from_row(HitKind::Message, r, -rank)))
            .collect();
    }
    // Snippets only for the rows that made the cut: snippet() re-reads and re-tokenises text.
    let expr = terms.any();
    let mut detail = conn.prepare_cached(
        "SELECT m.id, m.conversation_id, c.title, m.role, m.timestamp, snippet(messages_fts, 0, '«', '»', '…', 16)
         FROM messages_fts JOIN messages m ON m.pk = messages_fts.rowid JOIN conversations c ON c.id = m.conversation_id
         WHERE messages_fts MATCH ?1 AND messages_fts.rowid = ?2",
    )?;
    top.into_iter()
        .map(|(pk, rank)| detail.query_row(params![expr, pk], |r| hit_from_row(HitKind::Message, r, -rank)))
        .collect()
}

/// A hit from a row whose first six columns are: id, conversation id, conversation title,
/// label (role or moment type), timestamp, snippet. Shared by every query that returns hits.
pub(crate) fn hit_from_row(kind: HitKind, r: &rusqlite::Row<'_>, score: f64) -> rusqlite::Result<SearchHit> {
    Ok(SearchHit {
        kind,
        id: r.get(0)?,
        conversation_id: r.get(1)?,
        title: r.get(2)?,
        label: Some(r.get(3)?),
        timestamp: r.get(4)?,
        snippet: r.get(5)?,
        score,
        path: None,
        lines: None,
        cid: None,
    })
}

/// Column weights for moments: content, context, tags. A tag match is a strong signal.
const MOMENT_WEIGHTS: &str = "10.0, 5.0, 20.0";

fn search_moments(
    conn: &Connection,
    expr: &str,
    limit: usize,
    filter: &SearchFilter,
) -> rusqlite::Result<Vec<SearchHit>> {
    let (clause, args) = filter.moment_clause();
    let sql = format!(
        "SELECT m.id, m.conversation_id, c.title, m.type, m.created_at,
                snippet(moments_fts, -1, '«', '»', '…', 16), bm25(moments_fts, {MOMENT_WEIGHTS}) / 10.0 AS score
         FROM moments_fts JOIN moments m ON m.rowid = moments_fts.rowid
              LEFT JOIN conversations c ON c.id = m.conversation_id
         WHERE moments_fts MATCH ?1 {clause} ORDER BY score, m.id LIMIT {limit}"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut values: Vec<&dyn rusqlite::ToSql> = vec![&expr];
    values.extend(args.iter().map(|a| a as &dyn rusqlite::ToSql));
    let rows = stmt.query_map(values.as_slice(), |r| {
        hit_from_row(HitKind::Moment, r, -r.get::<_, f64>(6)?)
    })?;
    rows.collect()
}

fn search_conversations(conn: &Connection, expr: &str, limit: usize) -> rusqlite::Result<Vec<SearchHit>> {
    // A conversation scores by its title/tags match or its best message, whichever is better;
    // a title match counts double because a title summarises the whole conversation.
    let mut stmt = conn.prepare_cached(
        "WITH by_title AS (
             SELECT c.id AS id, 2.0 * f.rank AS rank,
                    snippet(conversations_fts, -1, '«', '»', '…', 16) AS snip
             FROM conversations_fts f JOIN conversations c ON c.rowid = f.rowid
             WHERE conversations_fts MATCH ?1),
         by_message AS (
             SELECT m.conversation_id AS id, min(f.rank) AS rank, NULL AS snip
             FROM messages_fts f JOIN messages m ON m.pk = f.rowid
             WHERE messages_fts MATCH ?1 GROUP BY m.conversation_id),
         best AS (
             SELECT id, min(rank) AS rank, max(snip) AS snip
             FROM (SELECT * FROM by_title UNION ALL SELECT * FROM by_message) GROUP BY id)
         SELECT c.id, c.title, c.updated_at, coalesce(best.snip, c.title), best.rank
         FROM best JOIN conversations c ON c.id = best.id
         ORDER BY best.rank, c.id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![expr, limit as i64], |r| {
        let id: String = r.get(0)?;
        Ok(SearchHit {
            kind: HitKind::Conversation,
            conversation_id: Some(id.clone()),
            id,
            title: Some(r.get(1)?),
            label: None,
            timestamp: r.get(2)?,
            snippet: r.get(3)?,
            score: -r.get::<_, f64>(4)?,
            path: None,
            lines: None,
            cid: None,
        })
    })?;
    let mut hits: Vec<SearchHit> = rows.collect::<rusqlite::Result<_>>()?;
    // Conversations found through a message show that message's snippet.
    let mut best_message = conn.prepare_cached(
        "SELECT snippet(messages_fts, 0, '«', '»', '…', 16) FROM messages_fts JOIN messages m ON m.pk = messages_fts.rowid
         WHERE messages_fts MATCH ?1 AND m.conversation_id = ?2 ORDER BY rank, m.seq LIMIT 1",
    )?;
    for hit in &mut hits {
        if !hit.snippet.contains(HIGHLIGHT.0)
            && let Some(snippet) = best_message.query_map(params![expr, hit.id], |r| r.get(0))?.next()
        {
            hit.snippet = snippet?;
        }
    }
    Ok(hits)
}
