//! Secrets are replaced before memory is written, whichever way it came in: `add`, a recorded
//! turn (proxy, hooks, chat), a teammate's share or the sync server's copy. Importers redact
//! their sessions with the same redactor (`zblade_import::redact`) while they read them.

use zblade_core::{Conversation, Moment};
use zblade_import::redact::{redact_in_place, redact_message};

/// Redacts a conversation's title, messages (text, tool calls) and inline moments; returns how
/// many secrets were replaced.
pub(crate) fn redact_conversation(conversation: &mut Conversation) -> usize {
    let mut count = redact_in_place(&mut conversation.title);
    for message in &mut conversation.messages {
        count += redact_message(message);
    }
    for moment in &mut conversation.moments {
        count += redact_in_place(&mut moment.content);
    }
    count
}

/// Redacts a moment's text and the discussion around it; returns how many were replaced.
pub(crate) fn redact_moment(moment: &mut Moment) -> usize {
    let mut count = redact_in_place(&mut moment.content);
    if let Some(context) = &mut moment.context {
        count += redact_in_place(context);
    }
    count
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use zblade_core::{Message, Role};

    use crate::{Exchange, ImportRequest, ImportSource, Project};

    /// Secret shapes, each inside ordinary text: at the start of a line, in the middle of one,
    /// in a URL, in JSON.
    const SECRETS: [&str; 6] = [
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789abcdefghijABCDEFGHIJ0123456789",
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "hunter2-zanzibar",
        "t0k3n-in-a-url",
        "s3cr3t-in-json",
    ];

    fn text() -> String {
        format!(
            "deploy with {} and {}, key {}\nthen run API_TOKEN={} npm publish\ncurl https://x.test/v1?API_KEY={}&q=1\n{{\"client_secret\": \"{}\"}}",
            SECRETS[0], SECRETS[1], SECRETS[2], SECRETS[3], SECRETS[4], SECRETS[5]
        )
    }

    /// Every file under `.zblade/`, as text.
    fn stored(root: &Path) -> String {
        fn walk(dir: &Path, out: &mut String) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    out.push_str(&String::from_utf8_lossy(&bytes));
                }
            }
        }
        let mut out = String::new();
        walk(&root.join(".zblade"), &mut out);
        out
    }

    /// One corpus through every way memory comes in: `add conversation`, `add moment`, `add
    /// document`, a recorded turn (proxy, chat), an agent's session (import, the Stop hook) and
    /// a teammate's share; not one secret reaches `.zblade/`.
    #[test]
    fn one_corpus_is_redacted_through_every_entrance() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (mut project, _) = Project::init(root).unwrap();
        let secret_text = text();

        let conversation = serde_json::json!({"title": "Deploy", "messages": [
            {"role": "user", "content": secret_text},
            {"role": "assistant", "content": "ok", "tool_calls": [{"id": "t1", "name": "bash",
              "arguments": {"command": format!("export DB_PASSWORD={}", SECRETS[3])}}]}]});
        let added = project
            .add_conversation(conversation.to_string().as_bytes(), "c.json")
            .unwrap();
        assert!(added.redacted >= SECRETS.len(), "{added:?}");

        let moment = serde_json::json!({"type": "context", "content": secret_text, "context": secret_text});
        let moment = crate::parse_moment(moment.to_string().as_bytes(), "m.json").unwrap();
        project.add_moments(vec![(moment, "m.json".into())]).unwrap();

        std::fs::write(root.join("notes.md"), format!("# Deploy\n\n{secret_text}\n")).unwrap();
        project.add_documents(&[&root.join("notes.md")]).unwrap();
        std::fs::remove_file(root.join("notes.md")).unwrap();

        let mut turn = Message::new(Role::User, secret_text.clone());
        turn.id = "msg_turn".into();
        project
            .record_exchange(Exchange {
                conversation: "conv_proxy".into(),
                messages: vec![turn],
                tool: "proxy".into(),
                channel: "POST /v1/messages".into(),
            })
            .unwrap();

        let session = tempfile::tempdir().unwrap();
        let line = serde_json::json!({"type": "user", "sessionId": "5e55-1011", "uuid": "u1",
            "cwd": root, "timestamp": "2026-11-20T10:00:00Z",
            "message": {"role": "user", "content": secret_text}});
        let file = session.path().join("5e55-1011.jsonl");
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let mut request = ImportRequest::new(ImportSource::CLAUDE_CODE);
        request.paths = vec![file];
        let report = project.import(&request, &mut |_, _, _| {}).unwrap();
        assert!(report.messages >= 1 && report.redacted >= 1, "{report:?}");

        let shared = serde_json::json!({"conversation_id": "conv_shared", "messages": [
            {"id": "m1", "role": "user", "content": secret_text}]});
        project
            .accept_conversation(shared.to_string().as_bytes(), "conversations/conv_shared.json")
            .unwrap();

        let everything = stored(root);
        for secret in SECRETS {
            assert!(!everything.contains(secret), "{secret} reached .zblade/");
        }
        assert!(everything.contains("[REDACTED:"), "nothing was redacted");
    }
}
