//! Behaviour of the SQLite index through its public API.

use std::path::Path;

use chrono::Utc;
use zblade_core::{Conversation, Moment, parse_conversation, parse_moment};
use zblade_index::{HitKind, Index, Page, SearchKind, SearchQuery};

fn conversation(json: &str) -> Conversation {
    let mut conv = parse_conversation(json.as_bytes(), "test.json").unwrap();
    conv.prepare_for_store("proj_test", Path::new("/nonexistent"), "test.json", Utc::now())
        .unwrap();
    conv
}

fn moment(json: &str) -> Moment {
    let mut m = parse_moment(json.as_bytes(), "m.json").unwrap();
    m.prepare_for_store(Path::new("/nonexistent"), "m.json", Utc::now())
        .unwrap();
    m
}

fn jwt_conversation(id: &str) -> Conversation {
    conversation(&format!(
        r#"{{"conversation_id": "{id}", "title": "Auth tokens", "metadata": {{"tags": ["auth"]}},
            "created_at": "2026-01-17T14:00:00Z",
            "messages": [
              {{"id": "msg_1", "role": "user", "content": "How do we refresh the JWT when it expires?",
                "code_references": [{{"file": "src/auth.ts", "lines": [10, 25]}}]}},
              {{"id": "msg_2", "role": "assistant", "content": "Store a refresh token in an httpOnly cookie and rotate it."}}
            ],
            "moments": [{{"id": "moment_{id}", "type": "decision", "content": "JWT in httpOnly cookies", "message_id": "msg_2"}}]}}"#
    ))
}

fn open() -> (tempfile::TempDir, Index) {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(&dir.path().join("index/conversations.db")).unwrap();
    (dir, index)
}

/// Indexes `count` conversations (`conv_0000`, …) of 50 user messages (`msg_0`, …) each, the
/// text of message m of conversation c being `text(c, m)`.
fn put_many(index: &mut Index, count: usize, text: impl Fn(usize, usize) -> String) {
    let convs: Vec<Conversation> = (0..count)
        .map(|c| {
            let messages: Vec<String> = (0..50)
                .map(|m| format!(r#"{{"id": "msg_{m}", "role": "user", "content": "{}"}}"#, text(c, m)))
                .collect();
            conversation(&format!(
                r#"{{"conversation_id": "conv_{c:04}", "messages": [{}]}}"#,
                messages.join(",")
            ))
        })
        .collect();
    let items: Vec<_> = convs.iter().map(|c| (c, "a.json", "h")).collect();
    index.put_conversations(&items).unwrap();
}

#[test]
fn messages_moments_and_conversations_are_searchable() {
    let (_dir, mut index) = open();
    index
        .put_conversation(&jwt_conversation("conv_a"), "artifacts/conversations/conv_a.json", "h1")
        .unwrap();
    let hits = index
        .search(&SearchQuery::new("jwt", 10, SearchKind::Messages))
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "msg_1");
    assert!(hits[0].snippet.contains("«JWT»"), "{}", hits[0].snippet);

    let hits = index
        .search(&SearchQuery::new("httpOnly", 10, SearchKind::All))
        .unwrap();
    let kinds: Vec<_> = hits.iter().map(|h| h.kind).collect();
    assert!(
        kinds.contains(&HitKind::Message) && kinds.contains(&HitKind::Moment),
        "{kinds:?}"
    );

    let hits = index
        .search(&SearchQuery::new("auth", 10, SearchKind::Conversations))
        .unwrap();
    assert_eq!(hits[0].id, "conv_a");

    let counts = index.counts().unwrap();
    assert_eq!(
        (
            counts.conversations,
            counts.messages,
            counts.moments,
            counts.code_references
        ),
        (1, 2, 1, 1)
    );
    assert_eq!(counts.referenced_files, 1);
}

#[test]
fn multi_word_queries_rank_documents_with_more_words_first() {
    let (_dir, mut index) = open();
    let conv = conversation(
        r#"{"conversation_id": "conv_r", "messages": [
            {"id": "msg_a", "role": "user", "content": "the cache is warm"},
            {"id": "msg_b", "role": "user", "content": "token expiry and cache eviction policy"},
            {"id": "msg_c", "role": "user", "content": "token rotation"}]}"#,
    );
    index.put_conversation(&conv, "a.json", "h").unwrap();
    let hits = index
        .search(&SearchQuery::new("token cache", 10, SearchKind::Messages))
        .unwrap();
    assert_eq!(hits.len(), 3, "OR semantics: partial matches are found");
    assert_eq!(hits[0].id, "msg_b", "the message holding both words ranks first");
}

#[test]
fn fts_syntax_in_user_text_never_errors() {
    let (_dir, mut index) = open();
    index
        .put_conversation(&jwt_conversation("conv_a"), "a.json", "h")
        .unwrap();
    for query in [
        r#"" * ( ) : ^ - + NEAR AND OR NOT { } [ ] ' . , ; \ / @ # $ % &"#,
        r#""unbalanced"#,
        r#"jwt" OR "x"#,
        "NEAR(jwt refresh, 2)",
        "col:jwt",
        "jwt*",
        "AND",
        "-",
        "",
    ] {
        index.search(&SearchQuery::new(query, 10, SearchKind::All)).unwrap();
        index
            .search(&SearchQuery::new(query, 10, SearchKind::Conversations))
            .unwrap();
    }
    let hits = index
        .search(&SearchQuery::new(r#"(jwt"#, 10, SearchKind::Messages))
        .unwrap();
    assert_eq!(hits.len(), 1, "words inside syntax characters are still found");
}

#[test]
fn reindexing_a_conversation_replaces_its_rows() {
    let (_dir, mut index) = open();
    index
        .put_conversation(&jwt_conversation("conv_a"), "a.json", "h1")
        .unwrap();
    let mut changed = jwt_conversation("conv_a");
    changed.messages.truncate(1);
    changed.messages[0].content = "nothing about tokens".into();
    changed.moments.clear();
    index.put_conversation(&changed, "a.json", "h2").unwrap();
    assert!(
        index
            .search(&SearchQuery::new("jwt", 10, SearchKind::All))
            .unwrap()
            .is_empty()
    );
    let counts = index.counts().unwrap();
    assert_eq!((counts.conversations, counts.messages, counts.moments), (1, 1, 0));
    assert!(index.remove_conversation("conv_a").unwrap());
    assert_eq!(index.counts().unwrap(), Default::default());
}

#[test]
fn a_moment_id_used_twice_is_refused() {
    let (_dir, mut index) = open();
    index
        .put_conversation(&jwt_conversation("conv_a"), "a.json", "h")
        .unwrap();
    let m = moment(r#"{"id": "moment_conv_a", "type": "pattern", "content": "x"}"#);
    let err = index
        .put_moment(&m, "artifacts/moments/moment_conv_a.json", "h")
        .unwrap_err();
    assert!(err.to_string().contains("already used by a.json"), "{err}");
}

#[test]
fn rebuild_gives_identical_results_and_skips_clashes() {
    let (_dir, mut incremental) = open();
    let convs: Vec<Conversation> = (0..5).map(|i| jwt_conversation(&format!("conv_{i}"))).collect();
    // Insert in reverse order so rowids differ from the rebuild's.
    for conv in convs.iter().rev() {
        incremental
            .put_conversation(conv, &format!("{}.json", conv.conversation_id), "h")
            .unwrap();
    }
    let standalone = moment(r#"{"id": "moment_s", "type": "solution", "content": "rotate refresh tokens daily"}"#);
    incremental.put_moment(&standalone, "moment_s.json", "h").unwrap();

    let (_dir2, mut rebuilt) = open();
    rebuilt
        .put_conversation(&jwt_conversation("conv_stale"), "stale.json", "h")
        .unwrap();
    let paths: Vec<String> = convs.iter().map(|c| format!("{}.json", c.conversation_id)).collect();
    let items: Vec<_> = convs.iter().zip(&paths).map(|(c, p)| (c, p.as_str(), "h")).collect();
    let clash = moment(r#"{"id": "moment_conv_1", "type": "pattern", "content": "clash"}"#);
    let skipped = rebuilt
        .rebuild(
            &items,
            &[(&standalone, "moment_s.json", "h"), (&clash, "clash.json", "h")],
        )
        .unwrap();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].0, "clash.json");

    for kind in [
        SearchKind::All,
        SearchKind::Messages,
        SearchKind::Moments,
        SearchKind::Conversations,
    ] {
        for text in ["jwt", "refresh token", "cookie rotate", "auth"] {
            let q = SearchQuery::new(text, 3, kind);
            assert_eq!(
                incremental.search(&q).unwrap(),
                rebuilt.search(&q).unwrap(),
                "{text} {kind:?}"
            );
        }
    }
    assert_eq!(incremental.counts().unwrap(), rebuilt.counts().unwrap());
    assert_eq!(
        incremental.list_conversations(Page::first(100), None).unwrap(),
        rebuilt.list_conversations(Page::first(100), None).unwrap()
    );
}

#[test]
fn concurrent_writers_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.db");
    Index::open(&path).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut index = Index::open(&path).unwrap();
                for i in 0..25 {
                    let conv = jwt_conversation(&format!("conv_{t}_{i}"));
                    index.put_conversation(&conv, &format!("{t}_{i}.json"), "h").unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let index = Index::open(&path).unwrap();
    assert_eq!(index.counts().unwrap().conversations, 100);
    assert_eq!(index.quick_check().unwrap(), "ok");
}

#[test]
fn a_damaged_database_file_is_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.db");
    std::fs::write(&path, vec![0x42; 8192]).unwrap();
    let err = Index::open(&path).unwrap_err();
    assert_eq!(err.code(), "index_corrupt", "{err}");
    assert!(err.to_string().contains("zblade reindex"));
    zblade_index::remove_database_files(&path).unwrap();
    Index::open(&path).unwrap();
}

#[test]
fn a_query_of_only_common_words_ranks_the_newest_messages() {
    let (_dir, mut index) = open();
    // 12,000 messages all holding "update"; the oldest holds it five times (best BM25).
    put_many(&mut index, 240, |c, m| {
        if c == 0 && m == 0 {
            "update update update update update".to_string()
        } else {
            format!("update number {c} {m}")
        }
    });
    let hits = index
        .search(&SearchQuery::new("update", 5, SearchKind::Messages))
        .unwrap();
    assert_eq!(hits.len(), 5);
    assert!(
        hits.iter().all(|h| h.conversation_id.as_deref() != Some("conv_0000")),
        "the oldest message is outside the window"
    );
    // A selective word still finds old messages.
    let hits = index
        .search(&SearchQuery::new("update 0", 5, SearchKind::Messages))
        .unwrap();
    assert!(hits.iter().any(|h| h.conversation_id.as_deref() == Some("conv_0000")));
}

#[test]
fn message_neighbours_are_the_messages_before_and_after_in_the_same_conversation() {
    let (_dir, mut index) = open();
    index
        .put_conversation(&jwt_conversation("conv_a"), "a.json", "h")
        .unwrap();
    index
        .put_conversation(&jwt_conversation("conv_b"), "b.json", "h")
        .unwrap();
    // conv_a grows by a message: its rows are written again, after conv_b's.
    let mut grown = jwt_conversation("conv_a");
    grown.messages.push(grown.messages[0].clone());
    grown.messages[2].id = "msg_3".into();
    index.put_conversation(&grown, "a.json", "h2").unwrap();
    let keys: Vec<String> = [
        "conv_a/msg_1",
        "conv_a/msg_2",
        "conv_b/msg_2",
        "moment_conv_a",
        "code:src/a.rs:1-9",
        "conv_a/nope",
    ]
    .map(String::from)
    .to_vec();
    let neighbours = index.message_neighbours(&keys).unwrap();
    assert_eq!(neighbours["conv_a/msg_1"], ["conv_a/msg_2"]);
    assert_eq!(neighbours["conv_a/msg_2"], ["conv_a/msg_1", "conv_a/msg_3"]);
    assert_eq!(
        neighbours["conv_b/msg_2"],
        ["conv_b/msg_1"],
        "never across conversations"
    );
    assert_eq!(
        neighbours.len(),
        3,
        "moments, code and unknown messages have none: {neighbours:?}"
    );
}

#[test]
fn unembedded_memory_is_counted_among_the_newest_records_only() {
    use zblade_index::ChunkRow;
    let (_dir, mut index) = open();
    for id in ["conv_a", "conv_b"] {
        index
            .put_conversation(&jwt_conversation(id), &format!("artifacts/conversations/{id}.json"), id)
            .unwrap();
    }
    // Nothing embedded: two messages and one moment per conversation.
    assert_eq!(index.memory_without_chunks().unwrap(), 6);
    assert_eq!(index.newest_memory_without_chunks(100).unwrap(), 6);
    // The window looks at the newest message and the newest moment only.
    assert_eq!(index.newest_memory_without_chunks(1).unwrap(), 2);
    // The first conversation embedded (as an indexing pass leaves it): the second's three remain.
    let row = |key: &str| ChunkRow {
        key: key.to_string(),
        seq: 0,
        cid: format!("cid of {key}"),
        kind: "message".to_string(),
    };
    index
        .replace_chunks(&[row("conv_a/msg_1"), row("conv_a/msg_2"), row("moment_conv_a")])
        .unwrap();
    assert_eq!(index.memory_without_chunks().unwrap(), 3);
    assert_eq!(index.newest_memory_without_chunks(100).unwrap(), 3);
    assert_eq!(index.newest_memory_without_chunks(2).unwrap(), 3);
    // All embedded.
    index
        .replace_chunks(&[
            row("conv_a/msg_1"),
            row("conv_a/msg_2"),
            row("moment_conv_a"),
            row("conv_b/msg_1"),
            row("conv_b/msg_2"),
            row("moment_conv_b"),
        ])
        .unwrap();
    assert_eq!(index.newest_memory_without_chunks(100).unwrap(), 0);
}

#[test]
fn the_write_ahead_log_is_folded_back_unless_another_connection_holds_it() {
    let (dir, mut index) = open();
    let wal = dir.path().join("index/conversations.db-wal");
    let log_size = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    index
        .put_conversation(
            &jwt_conversation("conv_a"),
            "artifacts/conversations/conv_a.json",
            "sha",
        )
        .unwrap();
    assert!(log_size() > 0, "the write went to the log");
    // Another connection in a read transaction: the fold gives up at once, and loses nothing.
    let reader = rusqlite::Connection::open(index.path()).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    index
        .put_conversation(
            &jwt_conversation("conv_b"),
            "artifacts/conversations/conv_b.json",
            "sha",
        )
        .unwrap();
    let started = std::time::Instant::now();
    assert!(!index.fold_write_ahead_log().unwrap());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "it must not wait"
    );
    assert!(log_size() > 0);
    reader.execute_batch("COMMIT").unwrap();
    // Nobody else: folded, the log emptied, both conversations in the database.
    assert!(index.fold_write_ahead_log().unwrap());
    assert_eq!(log_size(), 0);
    let messages: i64 = reader
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(messages, 4);
}

#[test]
fn replacing_the_chunk_catalog_writes_only_what_differs() {
    let (_dir, mut index) = open();
    use zblade_index::ChunkRow;
    let row = |key: &str, seq: i64, cid: &str, kind: &str| ChunkRow {
        key: key.to_string(),
        seq,
        cid: cid.to_string(),
        kind: kind.to_string(),
    };
    let first = vec![
        row("conv_a/msg_1", 0, "c1", "message"),
        row("conv_a/msg_1", 1, "c2", "message"),
        row("conv_a/msg_2", 0, "c3", "message"),
        row("moment_a", 0, "c4", "moment"),
        // Keys whose order differs between bytes and letters (upper case, accents, a key that
        // is a prefix of another): the catalog's order and the rows' must agree on them, or the
        // same catalog again would be written.
        row("conv_Z/msg_1", 0, "c9", "message"),
        row("conv_é/msg_1", 0, "c10", "message"),
        row("conv_e/msg_1", 0, "c11", "message"),
        row("conv_e/msg_1x", 0, "c12", "message"),
    ];
    index.replace_chunks(&first).unwrap();
    // Another connection sees a new data_version after each commit by this one, and only then.
    let watcher = rusqlite::Connection::open(index.path()).unwrap();
    let version = || {
        watcher
            .query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    let catalog = |index: &Index| {
        let mut rows: Vec<_> = index.chunk_map().unwrap().into_iter().collect();
        rows.sort();
        rows
    };
    let before = version();
    index.replace_chunks(&first).unwrap();
    assert_eq!(version(), before, "the same catalog again must not be written");
    // A changed CID, a piece gone, new keys before, between and after the listed ones (given
    // out of order) and a changed kind: the catalog becomes exactly the new rows, in one write.
    let second = vec![
        row("moment_a", 0, "c4", "commit"),
        row("zz_last", 0, "c7", "message"),
        row("conv_a/msg_2", 0, "c3 edited", "message"),
        row("conv_a/msg_10", 0, "c8", "message"),
        row("conv_a/msg_1", 0, "c1", "message"),
        row("conv_b/msg_1", 0, "c5", "message"),
        row("commit:0abc", 0, "c6", "commit"),
        row("conv_é/msg_1", 0, "c10", "message"),
    ];
    let rowid_of = |key: &str| {
        watcher
            .query_row("SELECT rowid FROM chunks WHERE key = ?1 AND seq = 0", [key], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
    };
    let unchanged = rowid_of("conv_a/msg_1");
    index.replace_chunks(&second).unwrap();
    assert_ne!(version(), before);
    // A row that did not change was left where it was, not deleted and inserted again.
    assert_eq!(rowid_of("conv_a/msg_1"), unchanged);
    let mut expected: Vec<_> = second.iter().map(|r| ((r.key.clone(), r.seq), r.cid.clone())).collect();
    expected.sort();
    assert_eq!(catalog(&index), expected);
    let kind: String = watcher
        .query_row("SELECT kind FROM chunks WHERE key = 'moment_a'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kind, "commit");
    // Emptied, then nothing to do.
    index.replace_chunks(&[]).unwrap();
    assert!(catalog(&index).is_empty());
    let emptied = version();
    index.replace_chunks(&[]).unwrap();
    assert_eq!(version(), emptied);
}

#[test]
fn words_in_more_messages_together_than_are_ranked_rank_their_newest_matches() {
    use zblade_index::RANKED_MATCHES;
    let (_dir, mut index) = open();
    // 110,000 messages; "flaky" and "brittle" are each in every 42nd (2,620 each: under the
    // RANKED_MATCHES that make a word common), together in 5,239: more than are ranked. The
    // oldest holds both, five times (best BM25).
    let holds = |i: usize| i.is_multiple_of(21);
    put_many(&mut index, 2_200, |c, m| match c * 50 + m {
        0 => "flaky brittle flaky brittle flaky origin".to_string(),
        i if i % 42 == 0 => format!("flaky test {i}"),
        i if holds(i) => format!("brittle test {i}"),
        i => format!("filler number {i}"),
    });
    let matching: Vec<usize> = (0..110_000).filter(|&i| holds(i)).collect();
    assert!(matching.len() as i64 > RANKED_MATCHES && matching.len() < 5_500);
    assert!(matching.len() / 2 + 1 < RANKED_MATCHES as usize);
    let oldest_ranked = matching[matching.len() - RANKED_MATCHES as usize];
    let hits = index
        .search(&SearchQuery::new("flaky brittle", 20, SearchKind::Messages))
        .unwrap();
    assert_eq!(hits.len(), 20);
    // The only message holding both words comes first; the rest hold either.
    assert_eq!(hits[0].conversation_id.as_deref(), Some("conv_0000"));
    for hit in &hits[1..] {
        let c: usize = hit.conversation_id.as_deref().unwrap()[5..].parse().unwrap();
        let m: usize = hit.id[4..].parse().unwrap();
        assert!(
            c * 50 + m >= oldest_ranked,
            "{hit:?} is older than the newest {RANKED_MATCHES} matches"
        );
    }
}

#[test]
fn a_word_is_held_when_any_turn_holds_it_however_common() {
    let (_dir, mut index) = open();
    // "cache" in every turn, "rotation" in one: both held, "caroline" nowhere.
    put_many(&mut index, 3, |c, m| match (c, m) {
        (1, 7) => "cache key rotation".to_string(),
        _ => format!("cache warm {c} {m}"),
    });
    let held = index.held_words("Caroline's cache ROTATION?").unwrap().unwrap();
    assert_eq!(
        held.terms,
        [
            ("caroline".to_string(), false),
            ("cache".to_string(), true),
            ("rotation".to_string(), true)
        ]
    );
}
