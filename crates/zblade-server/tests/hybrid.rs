//! Passage search on a real server, SQLite and PostgreSQL, vectors in LanceDB: hybrid ranking
//! (keywords + vectors + neighbours), the project's model recorded and another refused with the
//! fix, stale and malformed uploads refused, and vectors gone with their record, member or
//! project. Vectors here are hand-made 4-dimension unit vectors, so what is nearest is known.

use crate::common::{TestServer, backends, client, conversation, moment};
use reqwest::StatusCode;
use serde_json::{Value, json};
use zblade_server::Limits;

const P: &str = "/api/v0/projects/hyb";

struct Caller<'a> {
    server: &'a TestServer,
    http: reqwest::blocking::Client,
    token: String,
}

impl Caller<'_> {
    fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (StatusCode, Value) {
        let response = self
            .http
            .request(method, self.server.url(path))
            .bearer_auth(&self.token)
            .body(body.to_string())
            .send()
            .unwrap();
        let status = response.status();
        let text = response.text().unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn put_raw(&self, path: &str, body: String) -> StatusCode {
        self.http
            .put(self.server.url(path))
            .bearer_auth(&self.token)
            .body(body)
            .send()
            .unwrap()
            .status()
    }

    fn search(&self, q: &str, vector: Option<[f32; 4]>, model: &str) -> (StatusCode, Value) {
        let mut body = json!({ "q": q, "limit": 10 });
        if let Some(values) = vector {
            body["vector"] = json!({ "model": { "id": model, "dims": 4 }, "values": values });
        }
        self.send(reqwest::Method::POST, &format!("{P}/search"), body)
    }

    fn vectors(&self, collection: &str, id: &str, body: &str, pieces: Value, model: &str) -> (StatusCode, Value) {
        self.send(
            reqwest::Method::PUT,
            &format!("{P}/vectors/{collection}/{id}"),
            json!({
                "model": { "id": model, "dims": 4 },
                "record_hash": zblade_core::sha256_hex(body.as_bytes()),
                "pieces": pieces,
            }),
        )
    }
}

/// Conversation conv_b of the project, with these messages.
fn bread(messages: &[&str]) -> String {
    let messages: Vec<Value> = messages
        .iter()
        .enumerate()
        .map(|(i, text)| json!({"id": format!("msg_{}", i + 1), "role": if i % 2 == 0 { "user" } else { "assistant" }, "content": text}))
        .collect();
    json!({
        "version": "1.0", "conversation_id": "conv_b", "project_id": "hyb", "title": "Bread",
        "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:05:00Z", "messages": messages,
        "metadata": {"total_messages": messages.len(), "total_tokens": 0, "models_used": [], "tags": []}
    })
    .to_string()
}

fn keys(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| match h["message"].as_str().unwrap() {
            "" => h["record"].as_str().unwrap().to_string(),
            message => format!("{}/{message}", h["record"].as_str().unwrap()),
        })
        .collect()
}

fn story(backend: &str) {
    let server = TestServer::start(backend, Limits::default());
    let alice = Caller {
        server: &server,
        http: client(),
        token: server.user("alice"),
    };
    let bob = Caller {
        server: &server,
        http: client(),
        token: server.user("bob"),
    };
    assert_eq!(alice.put_raw(P, "{}".into()), StatusCode::CREATED);
    // conv_a: "How do we handle token refresh?" / "We decided: token refresh goes through the gateway."
    let conv_a = conversation("conv_a", "hyb", "Gateway decision", "token refresh");
    assert_eq!(
        alice.put_raw(&format!("{P}/conversations/conv_a"), conv_a.clone()),
        StatusCode::CREATED
    );
    let conv_b = bread(&[
        "What flour feeds a sourdough starter?",
        "Rye flour feeds the starter best.",
    ]);
    assert_eq!(
        alice.put_raw(&format!("{P}/conversations/conv_b"), conv_b.clone()),
        StatusCode::CREATED
    );
    let moment_a = moment("moment_a", "Deploys happen on Tuesdays");
    assert_eq!(
        alice.put_raw(&format!("{P}/moments/moment_a"), moment_a.clone()),
        StatusCode::CREATED
    );

    // Before any vectors: keyword search of messages, stemmed ("handles" finds "handle").
    let (status, answer) = alice.search("handles token", Some([1.0, 0.0, 0.0, 0.0]), "test-4");
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["mode"], "keyword", "no vectors yet");
    assert_eq!(keys(&answer)[0], "conv_a/msg_1");
    assert_eq!(answer["hits"][0]["author"], "alice");
    assert!(answer["hits"][0]["text"].as_str().unwrap().contains("token refresh"));

    // Vectors: conv_a's answer points one way, conv_b's messages another, the moment a third.
    let (status, stored) = alice.vectors(
        "conversations",
        "conv_a",
        &conv_a,
        json!([
            {"message": "msg_1", "seq": 0, "vector": [0.0, 1.0, 0.0, 0.0]},
            {"message": "msg_2", "seq": 0, "vector": [1.0, 0.0, 0.0, 0.0]},
            {"message": "msg_2", "seq": 1, "vector": [0.9, 0.1, 0.0, 0.0]}
        ]),
        "test-4",
    );
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(stored["stored"], 3);
    assert_eq!(stored["model"]["id"], "test-4", "the first upload records the model");
    let (status, _) = alice.vectors(
        "conversations",
        "conv_b",
        &conv_b,
        json!([
            {"message": "msg_1", "seq": 0, "vector": [0.0, 0.0, 1.0, 0.0]},
            {"message": "msg_2", "seq": 0, "vector": [0.0, 0.0, 0.9, 0.1]}
        ]),
        "test-4",
    );
    assert_eq!(status, StatusCode::OK);
    let (status, _) = alice.vectors(
        "moments",
        "moment_a",
        &moment_a,
        json!([{"message": "", "seq": 0, "vector": [0.0, 0.0, 0.0, 1.0]}]),
        "test-4",
    );
    assert_eq!(status, StatusCode::OK);
    let (_, project) = alice.send(reqwest::Method::GET, P, Value::Null);
    assert_eq!(project["embedding"], json!({"id": "test-4", "dims": 4}));

    // Hybrid: words that match nothing, a vector nearest the moment.
    let (status, answer) = alice.search("weekday schedule", Some([0.0, 0.0, 0.1, 0.99]), "test-4");
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["mode"], "hybrid");
    assert_eq!(keys(&answer)[0], "moment_a", "{answer}");
    assert!(answer["nearest"].as_f64().unwrap() > 0.99);
    // Words and vector agree on conv_a's answer: it leads, its question follows (neighbours
    // lend score), conv_b comes after both.
    let (_, answer) = alice.search("gateway", Some([1.0, 0.0, 0.0, 0.0]), "test-4");
    let found = keys(&answer);
    assert_eq!(found[0], "conv_a/msg_2", "{answer}");
    assert_eq!(found[1], "conv_a/msg_1", "{answer}");
    assert!(
        found.iter().filter(|k| k.starts_with("conv_a/msg_2")).count() == 1,
        "each message once"
    );
    // Without a vector: keyword mode, the same first hit.
    let (_, answer) = alice.search("gateway", None, "test-4");
    assert_eq!(answer["mode"], "keyword");
    assert_eq!(keys(&answer), vec!["conv_a/msg_2"]);

    // Another model is refused with the fix, on upload and on search.
    let (status, refused) = alice.vectors(
        "conversations",
        "conv_a",
        &conv_a,
        json!([{"message": "msg_1", "seq": 0, "vector": [0.0, 1.0, 0.0, 0.0]}]),
        "other-model",
    );
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(refused["error"], "model_mismatch");
    let reason = refused["reason"].as_str().unwrap();
    assert!(
        reason.contains("test-4") && reason.contains("search.embedding_model"),
        "{reason}"
    );
    let (status, refused) = alice.search("gateway", Some([1.0, 0.0, 0.0, 0.0]), "other-model");
    assert_eq!(
        (status, refused["error"].as_str()),
        (StatusCode::CONFLICT, Some("model_mismatch"))
    );

    // Malformed and stale uploads.
    let bad = |pieces: Value| alice.vectors("conversations", "conv_a", &conv_a, pieces, "test-4").0;
    assert_eq!(
        bad(json!([{"message": "msg_9", "seq": 0, "vector": [1.0, 0.0, 0.0, 0.0]}])),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        bad(json!([{"message": "msg_1", "seq": 0, "vector": [1.0, 0.0]}])),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        bad(json!([{"message": "msg_1", "seq": 0, "vector": [1.0, null, 0.0, 0.0]}])),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        bad(json!([{"message": "../x", "seq": 0, "vector": [1.0, 0.0, 0.0, 0.0]}])),
        StatusCode::BAD_REQUEST
    );
    let (status, stale) = alice.vectors(
        "conversations",
        "conv_a",
        &conversation("conv_a", "hyb", "Gateway decision", "an older text"),
        json!([]),
        "test-4",
    );
    assert_eq!((status, stale["error"].as_str()), (StatusCode::CONFLICT, Some("stale")));
    let (status, answer) = alice.search("gateway", Some([f32::MAX, f32::MAX, 0.0, 0.0]), "test-4");
    assert_eq!(status, StatusCode::OK, "large but finite is a vector");
    assert!(
        answer["hits"].as_array().unwrap().iter().all(|h| h["score"].is_f64()),
        "{answer}"
    );
    let (status, _) = alice.search("gateway", Some([0.0, 0.0, 0.0, 0.0]), "test-4");
    assert_eq!(status, StatusCode::BAD_REQUEST, "a zero vector has no direction");
    let (status, _) = alice.send(
        reqwest::Method::POST,
        &format!("{P}/search"),
        json!({"q": "x", "limit": 0}),
    );
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // An outsider sees nothing of it, by either route.
    assert_eq!(
        bob.search("gateway", Some([1.0, 0.0, 0.0, 0.0]), "test-4").0,
        StatusCode::NOT_FOUND
    );
    let (status, _) = bob.vectors("conversations", "conv_a", &conv_a, json!([]), "test-4");
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A deleted record's vectors go with it: the moment is no longer found by its vector.
    let deleted = alice
        .http
        .delete(server.url(&format!("{P}/moments/moment_a")))
        .bearer_auth(&alice.token)
        .send()
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let (_, answer) = alice.search("weekday schedule", Some([0.0, 0.0, 0.0, 1.0]), "test-4");
    assert!(!keys(&answer).contains(&"moment_a".to_string()), "{answer}");
    // A changed conversation keeps its old vectors until new ones come; a message it lost is
    // never returned.
    let shorter = bread(&["What flour feeds a sourdough starter?"]);
    assert_eq!(
        alice.put_raw(&format!("{P}/conversations/conv_b"), shorter),
        StatusCode::OK
    );
    let (_, answer) = alice.search("rye flour starter", Some([0.0, 0.0, 0.9, 0.1]), "test-4");
    let found = keys(&answer);
    assert!(found.contains(&"conv_b/msg_1".to_string()), "{answer}");
    assert!(
        !found.contains(&"conv_b/msg_2".to_string()),
        "a removed message: {answer}"
    );

    // A deleted project's vectors are dropped: a new project with its id starts with none.
    let gone = alice
        .http
        .delete(server.url(P))
        .bearer_auth(&alice.token)
        .send()
        .unwrap();
    assert_eq!(gone.status(), StatusCode::NO_CONTENT);
    assert_eq!(alice.put_raw(P, "{}".into()), StatusCode::CREATED);
    assert_eq!(
        alice.put_raw(&format!("{P}/conversations/conv_a"), conv_a.clone()),
        StatusCode::CREATED
    );
    let (_, answer) = alice.search("gateway", Some([1.0, 0.0, 0.0, 0.0]), "test-4");
    assert_eq!(answer["mode"], "keyword", "no model recorded, no vectors: {answer}");
}

#[test]
fn passage_search_is_hybrid_with_the_projects_model_and_vectors_follow_their_records() {
    for backend in backends() {
        story(backend);
    }
}

/// Conversation conv_old of `project` as an older server stored it, with these passages.
fn old_conversation(
    project: &str,
    words: &str,
    passages: Vec<zblade_server::store::NewPassage>,
) -> zblade_server::store::NewRecord {
    let body = conversation("conv_old", project, "Old", words);
    zblade_server::store::NewRecord {
        kind: zblade_server::store::Kind::Conversation,
        id: "conv_old".into(),
        hash: zblade_core::sha256_hex(body.as_bytes()),
        title: "Old".into(),
        tags: Vec::new(),
        updated_at: "2026-11-20T10:05:00Z".into(),
        body,
        search_text: words.into(),
        passages,
    }
}

/// Records stored before passage search get their passages when the server starts.
#[test]
fn records_stored_before_passage_search_are_indexed_by_the_backfill() {
    use zblade_server::Store;
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::common::fresh_db(backend, dir.path());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            zblade_server::with_store!(&db, store => {
                store.migrate().await.unwrap();
                let user = store.add_user("old").await.unwrap();
                store.put_project(user.id, "proj_old", "old").await.unwrap();
                // As an older server stored it: no passages.
                let record = old_conversation("proj_old", "legacy cache", Vec::new());
                store
                    .put_record(user.id, "proj_old", &record, user.id, false)
                    .await
                    .unwrap();
                let legacy = store
                    .keyword_passages(user.id, "proj_old", "legacy", None, 10)
                    .await
                    .unwrap();
                assert!(legacy.is_empty(), "{backend}: nothing indexed yet");
                assert_eq!(zblade_server::backfill_passages(&store).await.unwrap(), 1);
                let hits = store
                    .keyword_passages(user.id, "proj_old", "legacy", None, 10)
                    .await
                    .unwrap();
                assert_eq!(hits.len(), 2, "{backend}: both messages: {hits:?}");
                assert_eq!(zblade_server::backfill_passages(&store).await.unwrap(), 0, "once");
            })
            .unwrap()
        });
    }
}

/// A database of schema version 5 (PostgreSQL's passage vectors without their project) keeps
/// its passages through migration 6, and they are found in their project only.
#[test]
fn passages_stored_under_schema_5_are_found_after_the_upgrade() {
    use zblade_server::Store;
    use zblade_server::store::{MIGRATIONS, NewPassage};
    if !backends().contains(&"postgresql") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = crate::common::fresh_db("postgresql", dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Schema 5 as a server of that version left it.
        let (client, conn) = tokio_postgres::connect(&db, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        client
            .batch_execute("CREATE TABLE zblade_schema (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)")
            .await
            .unwrap();
        for (version, _, sql) in MIGRATIONS.iter().filter(|m| m.0 <= 5) {
            client.batch_execute(sql).await.unwrap();
            client
                .execute("INSERT INTO zblade_schema VALUES ($1, 'then')", &[version])
                .await
                .unwrap();
        }
        zblade_server::with_store!(&db, store => {
            let user = store.add_user("old").await.unwrap();
            for project in ["proj_a", "proj_b"] {
                store.put_project(user.id, project, project).await.unwrap();
                let text = format!("the gateway retries in {project}");
                let passage = NewPassage {
                    key: "conv_old/msg_1".into(),
                    message: "msg_1".into(),
                    position: 0,
                    label: "user".into(),
                    time: String::new(),
                    text: text.clone(),
                };
                let record = old_conversation(project, &text, vec![passage]);
                store
                    .put_record(user.id, project, &record, user.id, false)
                    .await
                    .unwrap();
            }
            assert_eq!(store.migrate().await.unwrap(), 1, "migration 6 runs");
            for project in ["proj_a", "proj_b"] {
                let hits = store
                    .keyword_passages(user.id, project, "gateway retry", None, 10)
                    .await
                    .unwrap();
                assert_eq!(hits.len(), 1, "{project}: its own passage only: {hits:?}");
                let other = if project == "proj_a" { "proj_b" } else { "proj_a" };
                let mine = store.passages(user.id, project, &[hits[0].0.clone()]).await.unwrap();
                assert!(mine[0].text.contains(project) && !mine[0].text.contains(other));
            }
        })
        .unwrap()
    });
}
