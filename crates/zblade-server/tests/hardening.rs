//! The server's side of issue "trust nothing over the wire": conditional deletes, token expiry,
//! disabled users, the token list, failed sign-ins seen through a trusted proxy, database errors
//! kept out of answers, and search scores that say nothing about other users' text.

use std::process::Command;

use crate::common::{TestServer, backends, client, conversation};
use reqwest::StatusCode;
use serde_json::Value;
use zblade_server::Limits;
use zblade_server::auth::{hash_token, new_token};
use zblade_server::store::Store;

const PROJECT: &str = "proj_hard";

fn json_of(response: reqwest::blocking::Response) -> Value {
    let status = response.status();
    let text = response.text().unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("status {status}: not JSON ({e}): {text}"))
}

fn put(server: &TestServer, token: &str, id: &str, body: &str) {
    let http = client();
    let response = http
        .put(server.url(&format!("/api/v0/projects/{PROJECT}")))
        .bearer_auth(token)
        .body(r#"{"name": "hard"}"#)
        .send()
        .unwrap();
    assert!(response.status().is_success());
    let response = http
        .put(server.url(&format!("/api/v0/projects/{PROJECT}/conversations/{id}")))
        .bearer_auth(token)
        .body(body.to_string())
        .send()
        .unwrap();
    assert!(response.status().is_success(), "{}", response.text().unwrap());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_delete_with_a_hash_keeps_a_record_that_changed() {
    for backend in backends() {
        let server = TestServer::start(backend, Limits::default());
        let token = server.user("ann");
        let first = conversation("conv_1", PROJECT, "One", "first words");
        put(&server, &token, "conv_1", &first);
        // Another device writes a newer version after the migration verified the first one.
        let newer = conversation("conv_1", PROJECT, "One, edited", "newer words");
        put(&server, &token, "conv_1", &newer);
        let url = server.url(&format!("/api/v0/projects/{PROJECT}/conversations/conv_1"));
        let http = client();
        let verified = zblade_core::sha256_hex(first.as_bytes());
        let kept = http
            .delete(&url)
            .bearer_auth(&token)
            .header("x-zblade-sha256", &verified)
            .send()
            .unwrap();
        assert_eq!(kept.status(), StatusCode::PRECONDITION_FAILED, "{backend}");
        assert_eq!(json_of(kept)["error"], "changed");
        assert_eq!(
            http.get(&url).bearer_auth(&token).send().unwrap().status(),
            StatusCode::OK
        );
        let current = zblade_core::sha256_hex(newer.as_bytes());
        let gone = http
            .delete(&url)
            .bearer_auth(&token)
            .header("x-zblade-sha256", &current)
            .send()
            .unwrap();
        assert_eq!(gone.status(), StatusCode::NO_CONTENT, "{backend}");
        let again = http
            .delete(&url)
            .bearer_auth(&token)
            .header("x-zblade-sha256", &current)
            .send()
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_FOUND, "{backend}");
    }
}

#[test]
fn expired_tokens_and_disabled_users_are_refused() {
    for backend in backends() {
        let server = TestServer::start(backend, Limits::default());
        let good = server.user("bob");
        let rt = runtime();
        let (expired_id, expired) = new_token();
        let (later_id, later) = new_token();
        let tokens = rt.block_on(async {
            zblade_server::with_store!(&server.db, store => {
                store
                    .add_token(
                        "bob",
                        &expired_id,
                        &hash_token(&expired),
                        Some("2020-01-01T00:00:00.000Z"),
                    )
                    .await
                    .unwrap();
                store
                    .add_token("bob", &later_id, &hash_token(&later), Some("2999-01-01T00:00:00.000Z"))
                    .await
                    .unwrap();
                store.list_tokens(Some("bob")).await.unwrap()
            })
            .unwrap()
        });
        assert_eq!(tokens.len(), 3, "{backend}: {tokens:?}");
        assert!(tokens.iter().any(|t| t.id == expired_id && t.expires_at.is_some()));
        let http = client();
        let me = |token: &str| {
            http.get(server.url("/api/v0/me"))
                .bearer_auth(token)
                .send()
                .unwrap()
                .status()
        };
        assert_eq!(me(&good), StatusCode::OK);
        assert_eq!(me(&later), StatusCode::OK, "{backend}: not expired yet");
        assert_eq!(me(&expired), StatusCode::UNAUTHORIZED, "{backend}: expired");
        let disabled = rt.block_on(async {
            zblade_server::with_store!(&server.db, store => {
                store.set_user_disabled("bob", true).await.unwrap()
            })
            .unwrap()
        });
        assert!(disabled);
        assert_eq!(me(&good), StatusCode::UNAUTHORIZED, "{backend}: disabled user");
        assert_eq!(me(&later), StatusCode::UNAUTHORIZED, "{backend}: disabled user");
        rt.block_on(async {
            zblade_server::with_store!(&server.db, store => {
                assert!(store.set_user_disabled("bob", false).await.unwrap());
                assert!(!store.set_user_disabled("nobody", true).await.unwrap());
            })
            .unwrap()
        });
        assert_eq!(me(&good), StatusCode::OK, "{backend}: enabled again");
    }
}

#[test]
fn the_admin_commands_list_tokens_expire_them_and_disable_users() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("admin.db");
    let server_bin = env!("CARGO_BIN_EXE_zblade-server");
    let run = |args: &[&str]| {
        let out = Command::new(server_bin)
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["user", "add", "dora", "--json"]);
    let made: Value =
        serde_json::from_str(&run(&["token", "add", "dora", "--expires-in-days", "30", "--json"])).unwrap();
    assert!(made["expires_at"].as_str().unwrap().starts_with("20"), "{made}");
    let listed: Value = serde_json::from_str(&run(&["token", "list", "--json"])).unwrap();
    let tokens = listed["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 2);
    let text = serde_json::to_string(&listed).unwrap();
    assert!(
        !text.contains(made["token"].as_str().unwrap()),
        "the secret is never listed"
    );
    assert!(run(&["token", "list"]).contains("expires 20"));
    assert!(run(&["user", "disable", "dora"]).contains("disabled"));
    assert!(run(&["user", "list"]).contains("disabled 20"));
    run(&["user", "enable", "dora"]);
    assert!(run(&["user", "list"]).contains("active"));
    let missing = Command::new(server_bin)
        .args(["user", "disable", "nobody", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no user named nobody"));
}

#[test]
fn failed_sign_ins_are_counted_per_client_behind_a_trusted_proxy() {
    let limits = Limits {
        failed_auth_burst: 2.0,
        failed_auth_per_minute: 0.1,
        trusted_proxies: vec!["127.0.0.1".parse().unwrap()],
        ..Limits::default()
    };
    let server = TestServer::start("sqlite", limits);
    let good = server.user("eve");
    let http = client();
    let me = |token: &str, client_ip: &str| {
        http.get(server.url("/api/v0/me"))
            .bearer_auth(token)
            .header("x-forwarded-for", client_ip)
            .send()
            .unwrap()
            .status()
    };
    // A client behind the proxy guesses until it is slowed down…
    assert_eq!(me("zbt_1", "198.51.100.7"), StatusCode::UNAUTHORIZED);
    assert_eq!(me("zbt_2", "198.51.100.7"), StatusCode::UNAUTHORIZED);
    assert_eq!(me("zbt_3", "198.51.100.7"), StatusCode::TOO_MANY_REQUESTS);
    // …while another client behind the same proxy is not punished for it.
    assert_eq!(me(&good, "203.0.113.5"), StatusCode::OK);
    // IPv6 counts by /64: another address of the same /64 is the same client.
    assert_eq!(me("zbt_4", "2001:db8:5:6::1"), StatusCode::UNAUTHORIZED);
    assert_eq!(me("zbt_5", "2001:db8:5:6::2"), StatusCode::UNAUTHORIZED);
    assert_eq!(me(&good, "2001:db8:5:6::3"), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(me(&good, "2001:db8:5:7::3"), StatusCode::OK);
}

#[test]
fn a_forged_forwarded_for_is_ignored_without_a_trusted_proxy() {
    let limits = Limits {
        failed_auth_burst: 2.0,
        failed_auth_per_minute: 0.1,
        ..Limits::default()
    };
    let server = TestServer::start("sqlite", limits);
    let http = client();
    // Each guess claims another address; they all count against the real one.
    for (n, fake) in ["1.1.1.1", "2.2.2.2"].iter().enumerate() {
        let status = http
            .get(server.url("/api/v0/me"))
            .bearer_auth(format!("zbt_{n}"))
            .header("x-forwarded-for", *fake)
            .send()
            .unwrap()
            .status();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let status = http
        .get(server.url("/api/v0/me"))
        .bearer_auth("zbt_x")
        .header("x-forwarded-for", "3.3.3.3")
        .send()
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

#[test]
fn database_errors_stay_in_the_log() {
    let server = TestServer::start("sqlite", Limits::default());
    let token = server.user("gus");
    put(
        &server,
        &token,
        "conv_1",
        &conversation("conv_1", PROJECT, "One", "words"),
    );
    // Break the database under the running server.
    let conn = rusqlite::Connection::open(&server.db).unwrap();
    conn.execute_batch("DROP TABLE records_fts").unwrap();
    drop(conn);
    let response = client()
        .get(server.url(&format!("/api/v0/projects/{PROJECT}/search?q=words")))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = response.text().unwrap();
    assert!(body.contains("database"), "{body}");
    for leak in ["records_fts", "no such table", "SELECT", ".db"] {
        assert!(!body.contains(leak), "the answer leaks {leak:?}: {body}");
    }
}

#[test]
fn sqlite_search_scores_do_not_carry_other_users_statistics() {
    let server = TestServer::start("sqlite", Limits::default());
    let alice = server.user("alice");
    put(
        &server,
        &alice,
        "conv_1",
        &conversation("conv_1", PROJECT, "Gateway", "the gateway token"),
    );
    put(
        &server,
        &alice,
        "conv_2",
        &conversation("conv_2", PROJECT, "Other", "the gateway"),
    );
    let search = || {
        json_of(
            client()
                .get(server.url(&format!("/api/v0/projects/{PROJECT}/search?q=gateway")))
                .bearer_auth(&alice)
                .send()
                .unwrap(),
        )
    };
    let scores = |v: &Value| {
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["score"].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    let before = scores(&search());
    // Another user writes many records with and without the word: BM25 over the whole table
    // would move alice's raw scores; rank-based scores cannot.
    let mallory = server.user("mallory");
    for n in 0..20 {
        let words = if n % 2 == 0 {
            "gateway everywhere"
        } else {
            "nothing here"
        };
        put(
            &server,
            &mallory,
            &format!("conv_m{n}"),
            &conversation(&format!("conv_m{n}"), PROJECT, "M", words),
        );
    }
    let after = scores(&search());
    assert_eq!(before, after);
    assert_eq!(before, vec![1.0, 0.5]);
}
