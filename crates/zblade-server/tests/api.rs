//! API v0 against a real server, on SQLite and (when given) PostgreSQL: the story (add, list,
//! search, update, delete), two users who cannot see each other, tokens, and bad input.

use std::time::Duration;

use crate::common::{TestServer, backends, client, conversation, moment};
use reqwest::StatusCode;
use serde_json::{Value, json};
use zblade_server::Limits;

const PROJECT: &str = "proj_story";

fn json_of(response: reqwest::blocking::Response) -> Value {
    let status = response.status();
    let text = response.text().unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("status {status}: not JSON ({e}): {text}"))
}

fn story(backend: &str) {
    let server = TestServer::start(backend, Limits::default());
    let alice = server.user("alice");
    let http = client();
    let put = |path: &str, body: String| {
        http.put(server.url(path))
            .bearer_auth(&alice)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .unwrap()
    };
    let get = |path: &str| http.get(server.url(path)).bearer_auth(&alice).send().unwrap();

    // Health needs no token.
    let health = json_of(http.get(server.url("/healthz")).send().unwrap());
    assert_eq!(health["status"], "ok");
    assert_eq!(health["backend"], backend);

    // A record needs its project first.
    let orphan = put(
        "/api/v0/projects/proj_none/conversations/conv_a",
        conversation("conv_a", "proj_none", "JWT refresh", "token rotation"),
    );
    assert_eq!(orphan.status(), StatusCode::NOT_FOUND, "{}", orphan.text().unwrap());

    let created = put(
        &format!("/api/v0/projects/{PROJECT}"),
        json!({"name": "Story"}).to_string(),
    );
    assert_eq!(created.status(), StatusCode::CREATED);
    let again = put(
        &format!("/api/v0/projects/{PROJECT}"),
        json!({"name": "Story"}).to_string(),
    );
    assert_eq!(again.status(), StatusCode::OK);

    // Add: created, then a replay changes nothing, then new bytes make version 2.
    let body = conversation("conv_a", PROJECT, "JWT refresh", "token rotation");
    let first = put(
        &format!("/api/v0/projects/{PROJECT}/conversations/conv_a"),
        body.clone(),
    );
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = json_of(first);
    assert_eq!(
        (first["status"].as_str(), first["version"].as_i64()),
        (Some("created"), Some(1))
    );
    assert_eq!(first["hash"], zblade_core::sha256_hex(body.as_bytes()));
    let replay = json_of(put(
        &format!("/api/v0/projects/{PROJECT}/conversations/conv_a"),
        body.clone(),
    ));
    assert_eq!(
        (replay["status"].as_str(), replay["version"].as_i64()),
        (Some("unchanged"), Some(1))
    );
    let changed = conversation("conv_a", PROJECT, "JWT refresh", "refresh token rotation with jitter");
    let update = json_of(put(
        &format!("/api/v0/projects/{PROJECT}/conversations/conv_a"),
        changed.clone(),
    ));
    assert_eq!(
        (update["status"].as_str(), update["version"].as_i64()),
        (Some("updated"), Some(2))
    );

    // GET gives the bytes back exactly, with their hash.
    let one = get(&format!("/api/v0/projects/{PROJECT}/conversations/conv_a"));
    assert_eq!(one.status(), StatusCode::OK);
    assert_eq!(
        one.headers()["x-zblade-sha256"].to_str().unwrap(),
        zblade_core::sha256_hex(changed.as_bytes())
    );
    assert_eq!(one.text().unwrap(), changed);

    // More records, then pages of two.
    for i in 0..4 {
        let id = format!("conv_b{i}");
        let response = put(
            &format!("/api/v0/projects/{PROJECT}/conversations/{id}"),
            conversation(&id, PROJECT, &format!("Cache {i}"), "cache invalidation"),
        );
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    let mut ids = Vec::new();
    let mut after = String::new();
    loop {
        let page = json_of(get(&format!(
            "/api/v0/projects/{PROJECT}/conversations?limit=2&after={after}"
        )));
        for item in page["items"].as_array().unwrap() {
            assert_eq!(item["hash"].as_str().unwrap().len(), 64);
            assert!(item.get("body").is_none(), "lists carry no content");
            ids.push(item["id"].as_str().unwrap().to_string());
        }
        match page["next"].as_str() {
            Some(next) => after = next.to_string(),
            None => break,
        }
    }
    assert_eq!(ids, ["conv_a", "conv_b0", "conv_b1", "conv_b2", "conv_b3"]);

    // Moments.
    let m = moment("moment_1", "Use argon2id for password hashing");
    assert_eq!(
        put(&format!("/api/v0/projects/{PROJECT}/moments/moment_1"), m).status(),
        StatusCode::CREATED
    );

    // Search: keyword, scoped to the project, kinds filterable.
    let hits = json_of(get(&format!("/api/v0/projects/{PROJECT}/search?q=jitter")));
    let hits = hits["hits"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["id"], "conv_a");
    assert!(hits[0]["snippet"].as_str().unwrap().contains("[jitter]"), "{hits:?}");
    let hits = json_of(get(&format!(
        "/api/v0/projects/{PROJECT}/search?q=argon2id&kind=moment"
    )));
    assert_eq!(hits["hits"][0]["id"], "moment_1");
    let hits = json_of(get(&format!(
        "/api/v0/projects/{PROJECT}/search?q=argon2id&kind=conversation"
    )));
    assert!(hits["hits"].as_array().unwrap().is_empty());
    // Query syntax is read as words, never as syntax.
    let odd = get(&format!("/api/v0/projects/{PROJECT}/search?q=%22cache%20OR%20NEAR(*"));
    assert_eq!(odd.status(), StatusCode::OK);

    // Project counts.
    let project = json_of(get(&format!("/api/v0/projects/{PROJECT}")));
    assert_eq!(
        (project["conversations"].as_i64(), project["moments"].as_i64()),
        (Some(5), Some(1))
    );

    // Metadata-only records: titles and tags, nothing else accepted.
    let meta = put(
        &format!("/api/v0/projects/{PROJECT}/metadata/conv_local"),
        json!({"kind": "conversation", "title": "Local only", "tags": ["x"], "message_count": 12}).to_string(),
    );
    assert_eq!(meta.status(), StatusCode::CREATED);
    let smuggled = put(
        &format!("/api/v0/projects/{PROJECT}/metadata/conv_local"),
        json!({"kind": "conversation", "title": "t", "messages": [{"content": "secret"}]}).to_string(),
    );
    assert_eq!(smuggled.status(), StatusCode::BAD_REQUEST);
    assert!(json_of(smuggled)["reason"].as_str().unwrap().contains("unknown field"));
    let listed = json_of(get(&format!("/api/v0/projects/{PROJECT}/metadata")));
    assert_eq!(listed["items"][0]["title"], "Local only");

    // Delete.
    let delete = http
        .delete(server.url(&format!("/api/v0/projects/{PROJECT}/conversations/conv_b3")))
        .bearer_auth(&alice)
        .send()
        .unwrap();
    assert_eq!(delete.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        get(&format!("/api/v0/projects/{PROJECT}/conversations/conv_b3")).status(),
        StatusCode::NOT_FOUND
    );
    let hits = json_of(get(&format!("/api/v0/projects/{PROJECT}/search?q=cache")));
    assert_eq!(
        hits["hits"].as_array().unwrap().len(),
        3,
        "a deleted record is not found"
    );
}

#[test]
fn story_on_every_backend() {
    for backend in backends() {
        story(backend);
    }
}

/// Every route, as bob, against alice's data: nothing readable, listable, searchable or
/// deletable; bob's own project of the same id is separate.
fn isolation(backend: &str) {
    let server = TestServer::start(backend, Limits::default());
    let alice = server.user("alice");
    let bob = server.user("bob");
    let http = client();
    let as_user = |token: &str, method: reqwest::Method, path: &str, body: Option<String>| {
        let mut request = http.request(method, server.url(path)).bearer_auth(token);
        if let Some(body) = body {
            request = request.body(body);
        }
        request.send().unwrap()
    };
    use reqwest::Method;
    as_user(&alice, Method::PUT, "/api/v0/projects/shared", Some("{}".into()));
    let secret = conversation("conv_s", "shared", "Secret plan", "alice private words");
    assert_eq!(
        as_user(
            &alice,
            Method::PUT,
            "/api/v0/projects/shared/conversations/conv_s",
            Some(secret)
        )
        .status(),
        StatusCode::CREATED
    );
    as_user(
        &alice,
        Method::PUT,
        "/api/v0/projects/shared/metadata/conv_m",
        Some(json!({"kind": "conversation", "title": "alice title"}).to_string()),
    );

    let denied = [
        (Method::GET, "/api/v0/projects/shared"),
        (Method::GET, "/api/v0/projects/shared/conversations"),
        (Method::GET, "/api/v0/projects/shared/conversations/conv_s"),
        (Method::GET, "/api/v0/projects/shared/moments"),
        (Method::GET, "/api/v0/projects/shared/search?q=private"),
        (Method::GET, "/api/v0/projects/shared/metadata"),
        (Method::DELETE, "/api/v0/projects/shared/conversations/conv_s"),
        (Method::DELETE, "/api/v0/projects/shared"),
    ];
    for (method, path) in &denied {
        let response = as_user(&bob, method.clone(), path, None);
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "bob {method} {path}");
        let text = response.text().unwrap();
        assert!(!text.contains("alice") && !text.contains("Secret"), "{text}");
    }
    let writes = [
        "/api/v0/projects/shared/conversations/conv_s",
        "/api/v0/projects/shared/metadata/conv_m",
    ];
    for path in writes {
        let body = if path.contains("metadata") {
            json!({"kind": "conversation", "title": "bob"}).to_string()
        } else {
            conversation("conv_s", "shared", "bob overwrite", "bob")
        };
        assert_eq!(
            as_user(&bob, Method::PUT, path, Some(body)).status(),
            StatusCode::NOT_FOUND,
            "bob PUT {path} into alice's project"
        );
    }
    let projects = json_of(as_user(&bob, Method::GET, "/api/v0/projects", None));
    assert!(projects["projects"].as_array().unwrap().is_empty());

    // Bob's own "shared" project is his alone.
    as_user(&bob, Method::PUT, "/api/v0/projects/shared", Some("{}".into()));
    let page = json_of(as_user(
        &bob,
        Method::GET,
        "/api/v0/projects/shared/conversations",
        None,
    ));
    assert!(page["items"].as_array().unwrap().is_empty());
    let hits = json_of(as_user(
        &bob,
        Method::GET,
        "/api/v0/projects/shared/search?q=private",
        None,
    ));
    assert!(hits["hits"].as_array().unwrap().is_empty());

    // Alice's data is intact.
    let mine = as_user(
        &alice,
        Method::GET,
        "/api/v0/projects/shared/conversations/conv_s",
        None,
    );
    assert_eq!(mine.status(), StatusCode::OK);
    let project = json_of(as_user(&alice, Method::GET, "/api/v0/projects/shared", None));
    assert_eq!(
        (project["conversations"].as_i64(), project["metadata"].as_i64()),
        (Some(1), Some(1))
    );
}

#[test]
fn two_users_never_see_each_other() {
    for backend in backends() {
        isolation(backend);
    }
}

#[test]
fn wrong_revoked_and_missing_tokens_are_refused() {
    for backend in backends() {
        let server = TestServer::start(backend, Limits::default());
        let good = server.user("carol");
        let (id, second) = server.token("carol");
        let http = client();
        let me = |token: Option<&str>| {
            let mut request = http.get(server.url("/api/v0/me"));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send().unwrap()
        };
        assert_eq!(json_of(me(Some(&good)))["user"], "carol");
        assert_eq!(me(Some(&second)).status(), StatusCode::OK);
        for (token, why) in [
            (None, "missing"),
            (Some("zbt_0000"), "wrong"),
            (Some(""), "empty"),
            (Some(&good[..good.len() - 1]), "truncated"),
        ] {
            let response = me(token);
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{why} token");
            assert_eq!(json_of(response)["error"], "unauthorized");
        }
        let basic = http
            .get(server.url("/api/v0/me"))
            .basic_auth("carol", Some(&good))
            .send()
            .unwrap();
        assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);
        assert!(server.revoke(&id));
        assert!(!server.revoke(&id), "revoking twice says so");
        assert_eq!(me(Some(&second)).status(), StatusCode::UNAUTHORIZED, "revoked");
        assert_eq!(me(Some(&good)).status(), StatusCode::OK, "the other token still works");
    }
}

#[test]
fn bad_input_gets_a_4xx_with_a_reason() {
    let limits = Limits {
        max_body: 64 * 1024,
        ..Limits::default()
    };
    let server = TestServer::start("sqlite", limits);
    let token = server.user("dave");
    let http = client();
    let send = |method: reqwest::Method, path: &str, body: Vec<u8>| {
        http.request(method, server.url(path))
            .bearer_auth(&token)
            .body(body)
            .send()
            .unwrap()
    };
    use reqwest::Method;
    send(Method::PUT, "/api/v0/projects/p1", b"{}".to_vec());
    let cases: Vec<(Method, String, Vec<u8>, StatusCode, &str)> = vec![
        (
            Method::PUT,
            "/api/v0/projects/p1/conversations/conv_big".into(),
            conversation("conv_big", "p1", "big", &"x".repeat(70 * 1024)).into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "larger",
        ),
        (
            Method::PUT,
            "/api/v0/projects/p1/conversations/conv_bad".into(),
            b"{\n  \"version\": \"1.0\",\n  \"conversation_id\": \"conv_bad\",\n  \"messages\": [\n}".to_vec(),
            StatusCode::BAD_REQUEST,
            "request body:5:1",
        ),
        (
            Method::PUT,
            "/api/v0/projects/p1/conversations/conv_x".into(),
            conversation("conv_other", "p1", "t", "w").into_bytes(),
            StatusCode::BAD_REQUEST,
            "conversation_id",
        ),
        (
            Method::PUT,
            "/api/v0/projects/p1/conversations/conv_x".into(),
            conversation("conv_x", "p2", "t", "w").into_bytes(),
            StatusCode::BAD_REQUEST,
            "project_id",
        ),
        (
            Method::PUT,
            "/api/v0/projects/p1/moments/moment_e".into(),
            moment("moment_e", " ").into_bytes(),
            StatusCode::BAD_REQUEST,
            "content",
        ),
        (
            Method::PUT,
            "/api/v0/projects/p1/conversations/conv_u".into(),
            vec![0xff, 0xfe, b'{'],
            StatusCode::BAD_REQUEST,
            "body",
        ),
        (
            Method::PUT,
            "/api/v0/projects/p1".into(),
            br#"{"name": "n", "owner": "mallory"}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "unknown field `owner`",
        ),
        (
            Method::PUT,
            "/api/v0/projects/p1".into(),
            b"{not json".to_vec(),
            StatusCode::BAD_REQUEST,
            "body",
        ),
        (
            Method::GET,
            "/api/v0/projects/p1/conversations?limit=5000".into(),
            vec![],
            StatusCode::BAD_REQUEST,
            "limit",
        ),
        (
            Method::GET,
            "/api/v0/projects/p1/conversations?limit=abc".into(),
            vec![],
            StatusCode::BAD_REQUEST,
            "query string",
        ),
        (
            Method::GET,
            "/api/v0/projects/p1/conversations?sort=id".into(),
            vec![],
            StatusCode::BAD_REQUEST,
            "unknown field",
        ),
        (
            Method::GET,
            "/api/v0/projects/p1/search?q=x&kind=code".into(),
            vec![],
            StatusCode::BAD_REQUEST,
            "kind",
        ),
        (
            Method::GET,
            "/api/v0/projects/p1/widgets".into(),
            vec![],
            StatusCode::NOT_FOUND,
            "no collection",
        ),
    ];
    for (method, path, body, status, reason) in cases {
        let response = send(method.clone(), &path, body);
        assert_eq!(response.status(), status, "{method} {path}");
        let value = json_of(response);
        let text = value["reason"].as_str().unwrap_or_default();
        assert!(
            text.contains(reason),
            "{method} {path}: {text:?} should mention {reason:?}"
        );
    }

    // Ids with path characters never reach the database and never crash the server.
    for id in [
        "..",
        "a%2Fb",
        "a%2F..%2Fb",
        "a%20b",
        "%2e%2e",
        "a.b",
        "conv%00x",
        &"x".repeat(200),
    ] {
        let response = send(Method::GET, &format!("/api/v0/projects/p1/conversations/{id}"), vec![]);
        assert!(
            response.status().is_client_error(),
            "{id}: {} (a 4xx is expected)",
            response.status()
        );
        let response = send(Method::PUT, &format!("/api/v0/projects/{id}"), b"{}".to_vec());
        assert!(
            response.status().is_client_error(),
            "project {id}: {}",
            response.status()
        );
    }

    // A body damaged on the way: the hash the client sent does not match.
    let body = conversation("conv_h", "p1", "hash", "w");
    let response = http
        .put(server.url("/api/v0/projects/p1/conversations/conv_h"))
        .bearer_auth(&token)
        .header("x-zblade-sha256", "0".repeat(64))
        .body(body.clone())
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = http
        .put(server.url("/api/v0/projects/p1/conversations/conv_h"))
        .bearer_auth(&token)
        .header("x-zblade-sha256", zblade_core::sha256_hex(body.as_bytes()))
        .body(body)
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);

    // Unknown routes answer JSON too.
    let response = send(Method::GET, "/api/v1/projects", vec![]);
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(json_of(response)["error"], "not_found");
}

#[test]
fn a_user_over_the_rate_gets_429_then_recovers() {
    let limits = Limits {
        rate: 5.0,
        burst: 5.0,
        ..Limits::default()
    };
    let server = TestServer::start("sqlite", limits);
    let token = server.user("erin");
    let http = client();
    let statuses: Vec<StatusCode> = (0..8)
        .map(|_| {
            http.get(server.url("/api/v0/me"))
                .bearer_auth(&token)
                .send()
                .unwrap()
                .status()
        })
        .collect();
    assert!(statuses[..5].iter().all(|s| *s == StatusCode::OK), "{statuses:?}");
    let limited = http.get(server.url("/api/v0/me")).bearer_auth(&token).send().unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("retry-after"));
    std::thread::sleep(Duration::from_millis(400));
    let again = http.get(server.url("/api/v0/me")).bearer_auth(&token).send().unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}

#[test]
fn an_address_sending_bad_tokens_is_slowed_down() {
    // The limiter's clock moves only when the test moves it: no race with the request times.
    let start = std::time::Instant::now();
    let elapsed = std::sync::Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let clock = {
        let elapsed = std::sync::Arc::clone(&elapsed);
        zblade_server::auth::Clock::from_fn(move || start + *elapsed.lock().unwrap())
    };
    let limits = Limits {
        failed_auth_burst: 3.0,
        failed_auth_per_minute: 6.0, // one back every 10 s of the test's clock
        clock,
        ..Limits::default()
    };
    let server = TestServer::start("sqlite", limits);
    let token = server.user("frank");
    let http = client();
    let me = |token: &str| http.get(server.url("/api/v0/me")).bearer_auth(token).send().unwrap();
    // Good tokens cost nothing.
    for _ in 0..10 {
        assert_eq!(me(&token).status(), StatusCode::OK);
    }
    for guess in 0..3 {
        assert_eq!(
            me(&format!("zbt_{guess}")).status(),
            StatusCode::UNAUTHORIZED,
            "guess {guess}"
        );
    }
    // Out of failures: refused before the token is looked up, whatever it is.
    let limited = me("zbt_guess");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("retry-after"));
    let body = json_of(limited);
    assert!(body["reason"].as_str().unwrap().contains("failed sign-ins"), "{body}");
    assert_eq!(me(&token).status(), StatusCode::TOO_MANY_REQUESTS);
    // Nine seconds later still no failure is earned back; at ten, one is: a valid token works.
    *elapsed.lock().unwrap() = Duration::from_secs(9);
    assert_eq!(me(&token).status(), StatusCode::TOO_MANY_REQUESTS);
    *elapsed.lock().unwrap() = Duration::from_secs(10);
    assert_eq!(me(&token).status(), StatusCode::OK);
}
