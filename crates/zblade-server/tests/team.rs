//! Team memory on a real server, SQLite and PostgreSQL: invitations, roles checked on every
//! route (a role × route matrix, outsiders included), provenance of every record, and removal.

use crate::common::{TestServer, backends, client, conversation, moment};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zblade_server::Limits;

const P: &str = "/api/v0/projects/team1";

struct Team<'a> {
    server: &'a TestServer,
    http: reqwest::blocking::Client,
}

impl Team<'_> {
    fn call(&self, token: &str, method: Method, path: &str, body: Option<String>) -> reqwest::blocking::Response {
        let mut request = self.http.request(method, self.server.url(path)).bearer_auth(token);
        if let Some(body) = body {
            request = request.body(body);
        }
        request.send().unwrap()
    }

    fn status(&self, token: &str, method: Method, path: &str, body: Option<String>) -> StatusCode {
        self.call(token, method, path, body).status()
    }

    fn json(&self, token: &str, method: Method, path: &str, body: Option<String>) -> Value {
        let response = self.call(token, method, path, body);
        assert!(response.status().is_success(), "{path}: {}", response.status());
        serde_json::from_str(&response.text().unwrap()).unwrap()
    }

    fn invite(&self, owner: &str, user: &str, role: &str) -> StatusCode {
        self.status(
            owner,
            Method::PUT,
            &format!("{P}/members/{user}"),
            Some(json!({ "role": role }).to_string()),
        )
    }

    fn accept(&self, token: &str) -> StatusCode {
        self.status(token, Method::POST, "/api/v0/invitations/alice/team1", None)
    }
}

/// What a route needs: `None` = any member may; otherwise at least this role.
#[derive(Clone, Copy, PartialEq, PartialOrd, Debug)]
enum Needs {
    Reader,
    Writer,
    Owner,
}

fn story(backend: &str) {
    let server = TestServer::start(backend, Limits::default());
    let team = Team {
        server: &server,
        http: client(),
    };
    let alice = server.user("alice");
    let bob = server.user("bob");
    let carol = server.user("carol");
    let dave = server.user("dave");
    let erin = server.user("erin");
    let frank = server.user("frank");
    let mallory = server.user("mallory");
    server.user("zed");

    // Alice's project with her conversation and moment.
    assert_eq!(
        team.status(&alice, Method::PUT, P, Some("{}".into())),
        StatusCode::CREATED
    );
    let put_alice_conv = || {
        team.status(
            &alice,
            Method::PUT,
            &format!("{P}/conversations/conv_a"),
            Some(conversation("conv_a", "team1", "Gateway decision", "token refresh")),
        )
    };
    assert_eq!(put_alice_conv(), StatusCode::CREATED);
    team.status(
        &alice,
        Method::PUT,
        &format!("{P}/moments/moment_a"),
        Some(moment("moment_a", "Use the gateway")),
    );

    // Invitations: nobody sees anything before accepting.
    assert_eq!(team.invite(&alice, "bob", "writer"), StatusCode::CREATED);
    assert_eq!(team.invite(&alice, "carol", "reader"), StatusCode::CREATED);
    assert_eq!(team.invite(&alice, "dave", "owner"), StatusCode::CREATED);
    assert_eq!(team.invite(&alice, "erin", "writer"), StatusCode::CREATED);
    assert_eq!(team.invite(&alice, "frank", "writer"), StatusCode::CREATED);
    assert_eq!(team.status(&bob, Method::GET, P, None), StatusCode::NOT_FOUND);
    let waiting = team.json(&bob, Method::GET, "/api/v0/invitations", None);
    assert_eq!(waiting["invitations"][0]["project"], "team1");
    assert_eq!(waiting["invitations"][0]["owner"], "alice");
    assert_eq!(waiting["invitations"][0]["role"], "writer");
    for token in [&bob, &carol, &dave, &frank] {
        assert_eq!(team.accept(token), StatusCode::OK);
    }
    assert_eq!(team.accept(&mallory), StatusCode::NOT_FOUND, "no invitation, no access");
    // Frank is removed again: his next request gets nothing.
    assert_eq!(
        team.status(&alice, Method::DELETE, &format!("{P}/members/frank"), None),
        StatusCode::NO_CONTENT
    );

    // Bad member requests.
    assert_eq!(team.invite(&alice, "nobody", "writer"), StatusCode::NOT_FOUND);
    assert_eq!(team.invite(&alice, "zed", "admin"), StatusCode::BAD_REQUEST);
    assert_eq!(
        team.invite(&alice, "alice", "reader"),
        StatusCode::CONFLICT,
        "the creator stays owner"
    );
    assert_eq!(
        team.status(&dave, Method::DELETE, &format!("{P}/members/alice"), None),
        StatusCode::CONFLICT
    );

    // The matrix: every route × every caller. Each route is (method, path, body, what it
    // needs, how to put back what it changed).
    type Reset<'a> = Box<dyn Fn() + 'a>;
    let noop: fn() -> Reset<'static> = || Box::new(|| {});
    let routes: Vec<(Method, String, Option<String>, Needs, Reset)> = vec![
        (Method::GET, P.into(), None, Needs::Reader, noop()),
        (Method::GET, format!("{P}/conversations"), None, Needs::Reader, noop()),
        (
            Method::GET,
            format!("{P}/conversations/conv_a"),
            None,
            Needs::Reader,
            noop(),
        ),
        (Method::GET, format!("{P}/moments"), None, Needs::Reader, noop()),
        (
            Method::GET,
            format!("{P}/moments/moment_a"),
            None,
            Needs::Reader,
            noop(),
        ),
        (
            Method::GET,
            format!("{P}/search?q=gateway"),
            None,
            Needs::Reader,
            noop(),
        ),
        (Method::GET, format!("{P}/metadata"), None, Needs::Reader, noop()),
        (Method::GET, format!("{P}/members"), None, Needs::Reader, noop()),
        (
            Method::POST,
            format!("{P}/search"),
            Some(json!({"q": "gateway", "limit": 5, "vector": {"model": {"id": "test-4", "dims": 4}, "values": [1.0, 0.0, 0.0, 0.0]}}).to_string()),
            Needs::Reader,
            noop(),
        ),
        // Vectors of Alice's conversation: a writer adds vectors only to what they wrote.
        (
            Method::PUT,
            format!("{P}/vectors/conversations/conv_a"),
            Some(
                json!({
                    "model": {"id": "test-4", "dims": 4},
                    "record_hash": zblade_core::sha256_hex(conversation("conv_a", "team1", "Gateway decision", "token refresh").as_bytes()),
                    "pieces": [{"message": "msg_1", "seq": 0, "vector": [1.0, 0.0, 0.0, 0.0]}]
                })
                .to_string(),
            ),
            Needs::Owner,
            noop(),
        ),
        (
            Method::PUT,
            format!("{P}/conversations/conv_new"),
            Some(conversation("conv_new", "team1", "New", "a new idea")),
            Needs::Writer,
            Box::new(|| {
                team.status(&alice, Method::DELETE, &format!("{P}/conversations/conv_new"), None);
            }),
        ),
        (
            Method::PUT,
            format!("{P}/metadata/conv_m"),
            Some(json!({"kind": "conversation", "title": "t"}).to_string()),
            Needs::Writer,
            noop(),
        ),
        // Alice's conversation: only owners change or delete what another member wrote.
        (
            Method::PUT,
            format!("{P}/conversations/conv_a"),
            Some(conversation("conv_a", "team1", "Rewritten", "something else")),
            Needs::Owner,
            Box::new(|| {
                team.status(&alice, Method::DELETE, &format!("{P}/conversations/conv_a"), None);
                put_alice_conv();
            }),
        ),
        (
            Method::DELETE,
            format!("{P}/conversations/conv_a"),
            None,
            Needs::Owner,
            Box::new(|| {
                put_alice_conv();
            }),
        ),
        (
            Method::PUT,
            format!("{P}/members/zed"),
            Some(json!({"role": "reader"}).to_string()),
            Needs::Owner,
            Box::new(|| {
                team.status(&alice, Method::DELETE, &format!("{P}/members/zed"), None);
            }),
        ),
        (
            Method::PUT,
            P.into(),
            Some(json!({"name": "renamed"}).to_string()),
            Needs::Owner,
            noop(),
        ),
        (
            Method::DELETE,
            format!("{P}/contributions/zed"),
            None,
            Needs::Owner,
            noop(),
        ),
    ];
    let callers: [(&str, &String, Option<Needs>); 7] = [
        ("alice (creator)", &alice, Some(Needs::Owner)),
        ("dave (owner)", &dave, Some(Needs::Owner)),
        ("bob (writer)", &bob, Some(Needs::Writer)),
        ("carol (reader)", &carol, Some(Needs::Reader)),
        ("erin (invited, not accepted)", &erin, None),
        ("frank (removed)", &frank, None),
        ("mallory (never invited)", &mallory, None),
    ];
    let mut checked = 0;
    for (method, path, body, needs, reset) in &routes {
        for (who, token, role) in &callers {
            let response = team.call(token, method.clone(), path, body.clone());
            let status = response.status();
            let text = response.text().unwrap_or_default();
            match role {
                // A project id names the caller's own project: an outsider's PUT makes a new
                // one of theirs, which touches nothing of Alice's (and goes again at once).
                None if *method == Method::PUT && path == P => {
                    assert_eq!(status, StatusCode::CREATED, "{who} {method} {path}: {text}");
                    assert_eq!(team.status(token, Method::DELETE, P, None), StatusCode::NO_CONTENT);
                }
                None => {
                    assert_eq!(status, StatusCode::NOT_FOUND, "{who} {method} {path}: {text}");
                    assert!(
                        !text.contains("Gateway") && !text.contains("alice"),
                        "{who} learned: {text}"
                    );
                }
                Some(role) if role < needs => {
                    assert_eq!(status, StatusCode::FORBIDDEN, "{who} {method} {path}: {text}");
                }
                Some(_) => assert!(status.is_success(), "{who} {method} {path}: {status} {text}"),
            }
            reset();
            checked += 1;
        }
    }
    assert_eq!(checked, routes.len() * callers.len());

    // Provenance: the server names who wrote each record, from the token, whatever the body says.
    let bobs = conversation("conv_b", "team1", "Bob's fix", "flaky test retry");
    assert_eq!(
        team.status(&bob, Method::PUT, &format!("{P}/conversations/conv_b"), Some(bobs)),
        StatusCode::CREATED
    );
    let got = team.call(&carol, Method::GET, &format!("{P}/conversations/conv_b"), None);
    assert_eq!(got.headers()["x-zblade-author"], "bob");
    let listed = team.json(&carol, Method::GET, &format!("{P}/conversations"), None);
    let authors: Vec<(String, String)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].as_str().unwrap().into(), i["author"].as_str().unwrap().into()))
        .collect();
    assert!(authors.contains(&("conv_a".into(), "alice".into())), "{authors:?}");
    assert!(authors.contains(&("conv_b".into(), "bob".into())), "{authors:?}");
    let hits = team.json(&carol, Method::GET, &format!("{P}/search?q=flaky"), None);
    assert_eq!(hits["hits"][0]["author"], "bob");
    // A writer changes and deletes what they wrote.
    let edited = conversation("conv_b", "team1", "Bob's fix, edited", "flaky test retry twice");
    assert_eq!(
        team.status(&bob, Method::PUT, &format!("{P}/conversations/conv_b"), Some(edited)),
        StatusCode::OK
    );
    // Shared projects are listed with the caller's role and their owner.
    let projects = team.json(&carol, Method::GET, "/api/v0/projects", None);
    let shared = &projects["projects"][0];
    assert_eq!(
        (shared["id"].as_str(), shared["role"].as_str(), shared["owner"].as_str()),
        (Some("team1"), Some("reader"), Some("alice"))
    );
    let members = team.json(&carol, Method::GET, &format!("{P}/members"), None);
    let roles: Vec<(String, String, bool)> = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["user"].as_str().unwrap().into(),
                m["role"].as_str().unwrap().into(),
                m["accepted_at"].is_string(),
            )
        })
        .collect();
    assert_eq!(roles[0], ("alice".into(), "owner".into(), true));
    assert!(roles.contains(&("erin".into(), "writer".into(), false)), "{roles:?}");
    assert!(!roles.iter().any(|r| r.0 == "frank"), "{roles:?}");

    // An owner removes a member's contributions, then the member: nothing of the project is
    // left to them.
    let removed = team.json(&dave, Method::DELETE, &format!("{P}/contributions/bob"), None);
    assert_eq!(removed["removed"], 1);
    assert_eq!(
        team.status(&alice, Method::GET, &format!("{P}/conversations/conv_b"), None),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        team.status(&dave, Method::DELETE, &format!("{P}/members/bob"), None),
        StatusCode::NO_CONTENT
    );
    for path in [
        P.to_string(),
        format!("{P}/conversations/conv_a"),
        format!("{P}/search?q=gateway"),
    ] {
        assert_eq!(
            team.status(&bob, Method::GET, &path, None),
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    assert!(
        team.json(&bob, Method::GET, "/api/v0/projects", None)["projects"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // A member leaves by removing themselves; the pending invitation can be declined.
    assert_eq!(
        team.status(&carol, Method::DELETE, &format!("{P}/members/carol"), None),
        StatusCode::NO_CONTENT
    );
    assert_eq!(team.status(&carol, Method::GET, P, None), StatusCode::NOT_FOUND);
    assert_eq!(
        team.status(&erin, Method::DELETE, "/api/v0/invitations/alice/team1", None),
        StatusCode::NO_CONTENT
    );
    assert_eq!(team.accept(&erin), StatusCode::NOT_FOUND);
    // A co-owner deletes the project; it is gone for everyone.
    assert_eq!(team.status(&dave, Method::DELETE, P, None), StatusCode::NO_CONTENT);
    assert_eq!(team.status(&alice, Method::GET, P, None), StatusCode::NOT_FOUND);
}

#[test]
fn roles_are_checked_on_every_route_and_every_record_names_its_author() {
    for backend in backends() {
        story(backend);
    }
}
