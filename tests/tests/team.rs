//! Team memory through the `zblade` binary and a real `zblade-server`: two users on two
//! folders (two config directories, two tokens), one invites the other, both record turns, each
//! finds and gets packed the other's decision with its author, a reader cannot write, a removed
//! member sees nothing more; writes survive the server going away; private conversations stay.

use std::path::Path;
use std::process::{Command, Output};

use zblade_tests::{GitFixture, ServerProcess, conversation_json, zblade_bin};

/// One person: their folder and their config directory (where their token is kept).
struct Person {
    folder: GitFixture,
    config: tempfile::TempDir,
}

impl Person {
    fn new() -> Person {
        Person {
            folder: GitFixture::new(&[("src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n")]),
            config: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> &Path {
        self.folder.root()
    }

    fn zblade(&self, args: &[&str]) -> Output {
        Command::new(zblade_bin())
            .arg("--project")
            .arg(self.root())
            .args(args)
            .env("ZBLADE_CONFIG_DIR", self.config.path())
            .env_remove("ZBLADE_TOKEN")
            .output()
            .unwrap()
    }

    /// Runs and expects success; its standard output.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.zblade(args);
        assert!(
            out.status.success(),
            "zblade {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Adds a conversation written from `json`.
    fn add(&self, name: &str, json: &str) -> Output {
        let file = self.config.path().join(format!("{name}.json"));
        std::fs::write(&file, json).unwrap();
        self.zblade(&["add", "conversation", file.to_str().unwrap()])
    }
}

fn decision(id: &str, words: &str) -> String {
    serde_json::json!({
        "conversation_id": id,
        "title": format!("Decision: {words}"),
        "messages": [
            {"id": "msg_0", "role": "user", "content": format!("What do we do about {words}?")},
            {"id": "msg_1", "role": "assistant", "content": format!("We decided {words} goes through the retry queue.")}
        ]
    })
    .to_string()
}

fn team_story(backend: &str) {
    let mut server = ServerProcess::start_on(backend);
    let alice_token = server.add_user("alice");
    let bob_token = server.add_user("bob");
    let alice = Person::new();
    let bob = Person::new();

    // Alice's project goes to the server, then she invites Bob.
    alice.ok(&["init"]);
    assert!(
        alice
            .add("a1", &decision("conv_alice", "zanzibar invoices"))
            .status
            .success()
    );
    alice.ok(&[
        "migrate",
        "to-server",
        "--server",
        &server.url,
        "--token",
        &alice_token,
        "--yes",
    ]);
    let out = alice.ok(&["team", "invite", "bob", "--role", "writer"]);
    assert!(out.contains("invited bob as writer"), "{out}");
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(alice.root().join(".zblade/config/settings.json")).unwrap()).unwrap();
    let project = settings["project"]["id"].as_str().unwrap().to_string();

    // Bob sees the invitation and joins from his own folder.
    let waiting = bob.ok(&[
        "team",
        "invitations",
        "--server",
        &server.url,
        "--token",
        &bob_token,
        "--json",
    ]);
    assert!(waiting.contains(&project), "{waiting}");
    let joined = bob.ok(&["team", "join", &server.url, &project, "--token", &bob_token, "--json"]);
    let joined: serde_json::Value = serde_json::from_str(&joined).unwrap();
    assert_eq!(
        (joined["owner"].as_str(), joined["role"].as_str()),
        (Some("alice"), Some("writer"))
    );
    let members = alice.ok(&["team", "members"]);
    assert!(members.contains("bob") && members.contains("writer"), "{members}");

    // Both record; each finds the other's decision, packed with its author.
    assert!(
        bob.add("b1", &decision("conv_bob", "quokka flaky tests"))
            .status
            .success()
    );
    let found = alice.ok(&["search", "quokka"]);
    assert!(found.contains("conv_bob"), "{found}");
    let packed = alice.ok(&["context", "quokka flaky tests"]);
    assert!(packed.contains("author=\"bob\""), "{packed}");
    let packed = bob.ok(&["context", "zanzibar invoices"]);
    assert!(
        packed.contains("author=\"alice\"") && packed.contains("retry queue"),
        "{packed}"
    );

    // A reader cannot write: a clear error, and the refused write is kept aside.
    alice.ok(&["team", "role", "bob", "reader"]);
    let refused = bob.add("b2", &decision("conv_bob2", "wombat cache"));
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("reader") && said.contains("outbox/rejected"), "{said}");
    let status: serde_json::Value = serde_json::from_str(&bob.ok(&["status", "--json"])).unwrap();
    let rejected: Vec<String> = std::fs::read_dir(bob.root().join(".zblade/outbox/rejected"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        (status["outbox_waiting"].as_u64(), status["outbox_rejected"].as_u64()),
        (Some(0), Some(1)),
        "{rejected:?}"
    );
    assert!(!alice.ok(&["search", "wombat"]).contains("conv_bob2"));
    assert!(
        bob.ok(&["search", "zanzibar"]).contains("conv_alice"),
        "a reader still reads"
    );

    // Offline: the server goes away; Alice's writes wait in the outbox and go, in order, once
    // it is back. A write queued by a client killed before sending (a file already in the
    // outbox) goes too.
    server.kill();
    let queued = alice.add("a2", &decision("conv_offline1", "platypus deploys"));
    assert!(queued.status.success(), "{}", String::from_utf8_lossy(&queued.stderr));
    assert!(String::from_utf8_lossy(&queued.stdout).contains("queued"));
    let status: serde_json::Value = serde_json::from_str(&alice.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["outbox_waiting"], 1, "{status}");
    server.restart();
    assert!(
        alice
            .add("a3", &decision("conv_offline2", "echidna backups"))
            .status
            .success()
    );
    let listed = alice.ok(&["list", "conversations", "--json"]);
    for id in ["conv_alice", "conv_bob", "conv_offline1", "conv_offline2"] {
        assert!(listed.contains(id), "{id} missing after the server came back: {listed}");
    }
    let outbox = alice.root().join(".zblade/outbox");
    let left: Vec<_> = std::fs::read_dir(&outbox)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .collect();
    assert!(left.is_empty(), "writes left in the outbox: {left:?}");
    let status: serde_json::Value = serde_json::from_str(&alice.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["outbox_waiting"], 0, "{status}");

    // Bob's agent records a session (Claude Code's transcript, imported as its Stop hook does):
    // its secret is redacted before it reaches the outbox or the server, and it is his.
    alice.ok(&["team", "role", "bob", "writer"]);
    let home = tempfile::tempdir().unwrap();
    let session = home
        .path()
        .join(".claude/projects/-bob/1f0c2a6b-0d1e-4b7a-9a55-1c2d3e4f5a60.jsonl");
    std::fs::create_dir_all(session.parent().unwrap()).unwrap();
    let root = bob.root().canonicalize().unwrap().display().to_string();
    let line = |uuid: &str, parent: Option<&str>, role: &str, text: &str| {
        let message = if role == "user" {
            serde_json::json!({"role": "user", "content": text})
        } else {
            serde_json::json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}})
        };
        serde_json::json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": root,
            "sessionId": "1f0c2a6b-0d1e-4b7a-9a55-1c2d3e4f5a60", "version": "2.1.14", "type": role, "message": message,
            "uuid": uuid, "timestamp": "2026-11-20T10:00:00.000Z"})
        .to_string()
    };
    let transcript = [
        line(
            "u1",
            None,
            "user",
            "Deploy the kiwi service with key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 please",
        ),
        line(
            "a1",
            Some("u1"),
            "assistant",
            "Deployed the kiwi service behind the gateway.",
        ),
    ]
    .join("\n");
    std::fs::write(&session, transcript + "\n").unwrap();
    let imported = Command::new(zblade_bin())
        .arg("--project")
        .arg(bob.root())
        .args(["import", "claude-code"])
        .env("ZBLADE_CONFIG_DIR", bob.config.path())
        .env("HOME", home.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("ZBLADE_TOKEN")
        .output()
        .unwrap();
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let found = alice.ok(&["search", "kiwi", "--json"]);
    let hits: serde_json::Value = serde_json::from_str(&found).unwrap();
    // A message of the recorded session: its conversation is what was recorded.
    let id = hits["hits"][0]["conversation_id"]
        .as_str()
        .expect("alice finds bob's recorded session")
        .to_string();
    let client = zblade_sync::Client::new(&server.url, &alice_token).unwrap();
    let listed = client.list_records(&project, zblade_sync::Kind::Conversation).unwrap();
    let record = listed.iter().find(|r| r.id == id).unwrap();
    assert_eq!(record.author.as_deref(), Some("bob"));
    let stored = client
        .get_record(&project, zblade_sync::Kind::Conversation, &id)
        .unwrap()
        .unwrap();
    let stored = String::from_utf8(stored).unwrap();
    assert!(stored.contains("Deploy the kiwi service"), "{stored}");
    assert!(
        !stored.contains("abcdefghijklmnopqrstuvwxyz0123456789"),
        "the secret reached the server: {stored}"
    );

    // Private conversations stay on this machine.
    let mut private: serde_json::Value = serde_json::from_str(&decision("conv_private", "narwhal salaries")).unwrap();
    private["metadata"] = serde_json::json!({"private": true});
    assert!(alice.add("a4", &private.to_string()).status.success());
    assert!(
        alice
            .root()
            .join(".zblade/artifacts/conversations/conv_private.json")
            .is_file()
    );
    assert!(!alice.ok(&["list", "conversations", "--json"]).contains("conv_private"));
    assert!(!bob.ok(&["search", "narwhal"]).contains("conv_private"));

    // Removed, Bob sees nothing more.
    alice.ok(&["team", "remove", "bob"]);
    let gone = bob.zblade(&["search", "zanzibar"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&gone.stdout),
        String::from_utf8_lossy(&gone.stderr)
    );
    assert!(
        !text.contains("conv_alice") && !text.contains("zanzibar invoices"),
        "{text}"
    );
}

#[test]
fn two_people_share_a_project_on_every_backend() {
    for backend in zblade_tests::server_backends() {
        team_story(backend);
    }
}

#[test]
fn joining_refuses_a_folder_with_memory_of_its_own() {
    let server = ServerProcess::start();
    let bob_token = server.add_user("bob");
    let bob = Person::new();
    bob.ok(&["init"]);
    assert!(
        bob.add("own", &conversation_json("conv_own", "mine", 2))
            .status
            .success()
    );
    let out = bob.zblade(&["team", "join", &server.url, "proj_nothing", "--token", &bob_token]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("no project proj_nothing"), "{said}");
}
