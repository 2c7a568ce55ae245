//! Client/server skew: the real client (`zblade-sync`) reads the real server's answer on every
//! route it calls, on every backend. Both sides use `zblade_core::wire`, so a field renamed on
//! one side fails to compile; this test catches what types cannot — a route answering another
//! shape, a status word the client does not know, an error body it cannot read.

use crate::common::{TestServer, backends, conversation, moment};
use zblade_core::wire::{Page, RecordMeta};
use zblade_server::Limits;
use zblade_sync::{Client, Deleted, Kind, Metadata, PutStatus};

const PROJECT: &str = "proj_skew";

#[test]
fn the_client_reads_every_answer_the_server_gives() {
    for backend in backends() {
        let server = TestServer::start(backend, Limits::default());
        let token = server.user("ann");
        let client = Client::new(&server.url(""), &token).unwrap();

        assert_eq!(client.whoami().unwrap(), "ann", "{backend}: /me");
        client.put_project(PROJECT, "skew").unwrap();

        let first = conversation("conv_a", PROJECT, "Gateway", "token refresh");
        let put = client
            .put_record(PROJECT, Kind::Conversation, "conv_a", first.as_bytes())
            .unwrap();
        assert_eq!(
            (put.status, put.version, put.kind),
            (PutStatus::Created, 1, Kind::Conversation)
        );
        assert_eq!(put.hash, zblade_core::sha256_hex(first.as_bytes()), "{backend}");
        let again = client
            .put_record(PROJECT, Kind::Conversation, "conv_a", first.as_bytes())
            .unwrap();
        assert_eq!(again.status, PutStatus::Unchanged, "{backend}");
        let edited = conversation("conv_a", PROJECT, "Gateway, edited", "token refresh");
        let updated = client
            .put_record(PROJECT, Kind::Conversation, "conv_a", edited.as_bytes())
            .unwrap();
        assert_eq!((updated.status, updated.version), (PutStatus::Updated, 2), "{backend}");
        let note = moment("moment_a", "Decision: token refresh goes through the gateway");
        client
            .put_record(PROJECT, Kind::Moment, "moment_a", note.as_bytes())
            .unwrap();

        let listed = client.list_records(PROJECT, Kind::Conversation).unwrap();
        assert_eq!(listed.len(), 1, "{backend}");
        assert_eq!((listed[0].title.as_str(), listed[0].version), ("Gateway, edited", 2));
        let moments = client.list_records(PROJECT, Kind::Moment).unwrap();
        assert_eq!(moments[0].id, "moment_a", "{backend}");

        let body = client
            .get_listed_record(PROJECT, Kind::Conversation, "conv_a", &listed[0].hash)
            .unwrap()
            .unwrap();
        assert_eq!(body, edited.as_bytes(), "{backend}");
        assert_eq!(client.get_record(PROJECT, Kind::Moment, "moment_b").unwrap(), None);

        let hits = client.search(PROJECT, "gateway", None, 10).unwrap();
        assert_eq!(hits.len(), 2, "{backend}: {hits:?}");
        assert!(hits.iter().all(|h| h.score.is_finite() && !h.updated_at.is_empty()));

        client
            .put_metadata(
                PROJECT,
                &Metadata {
                    kind: Kind::Conversation,
                    id: "conv_m".into(),
                    title: "Only a title".into(),
                    tags: vec!["t".into()],
                    message_count: 3,
                    updated_at: "2026-11-20T10:00:00Z".into(),
                },
            )
            .unwrap();
        // The metadata list has no client method: its page reads as the wire's `Page`.
        let page: Page<serde_json::Value> = crate::common::client()
            .get(server.url(&format!("/api/v0/projects/{PROJECT}/metadata")))
            .bearer_auth(&token)
            .send()
            .and_then(|r| r.text())
            .map(|text| serde_json::from_str(&text).unwrap())
            .unwrap();
        assert_eq!(page.items.len(), 1, "{backend}");
        assert_eq!(page.next, None);

        // A raw listing page is the wire's `Page<RecordMeta>`, field for field.
        let raw: Page<RecordMeta> = crate::common::client()
            .get(server.url(&format!("/api/v0/projects/{PROJECT}/conversations")))
            .bearer_auth(&token)
            .send()
            .and_then(|r| r.text())
            .map(|text| serde_json::from_str(&text).unwrap())
            .unwrap();
        assert_eq!(raw.items, listed, "{backend}");

        let stale = zblade_core::sha256_hex(first.as_bytes());
        assert_eq!(
            client
                .delete_record_if(PROJECT, Kind::Conversation, "conv_a", &stale)
                .unwrap(),
            Deleted::Changed
        );
        assert_eq!(
            client
                .delete_record_if(PROJECT, Kind::Conversation, "conv_a", &listed[0].hash)
                .unwrap(),
            Deleted::Yes
        );
        assert_eq!(
            client
                .delete_record_if(PROJECT, Kind::Conversation, "conv_a", &listed[0].hash)
                .unwrap(),
            Deleted::NotFound
        );

        // The error body: the client shows the server's reason.
        let stranger = Client::new(&server.url(""), "zbt_not_a_token").unwrap();
        let refused = stranger.whoami().unwrap_err().to_string();
        assert!(refused.contains("token"), "{backend}: {refused}");
    }
}
