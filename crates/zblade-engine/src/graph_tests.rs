//! Tests of the conversation graph on real projects in temporary folders: sharing (what is
//! written), keeping forks whole when what they share changes or goes, damage named by
//! `fsck`, hostile manifests, and the conversion of format-1 artifacts.

use super::*;
use crate::project::Project;
use crate::storage::manifests;
use zblade_core::StoredConversation;

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let (project, _) = Project::init(dir.path()).unwrap();
    (dir, project)
}

/// A conversation of `n` messages, alternating user and assistant, added to `project`.
fn add(project: &mut Project, title: &str, n: usize) -> String {
    let messages: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("{title} message {i}: about topic{i}"),
            })
        })
        .collect();
    let json = serde_json::json!({"title": title, "messages": messages});
    project
        .add_conversation(json.to_string().as_bytes(), "test.json")
        .unwrap()
        .id
}

fn contents(project: &Project, id: &str) -> Vec<String> {
    project
        .load_conversation(id)
        .unwrap()
        .messages
        .into_iter()
        .map(|m| m.content)
        .collect()
}

/// Messages in the store (entries of packs and files of their own).
fn stored_files(project: &Project) -> usize {
    manifests::stored_messages(project.layout()).unwrap().len()
}

fn manifest(project: &Project, id: &str) -> zblade_core::Manifest {
    match manifests::read_stored(project.layout(), id).unwrap().unwrap().0 {
        StoredConversation::Manifest(m) => m,
        StoredConversation::Inline(_) => panic!("{id} is not a manifest"),
    }
}

#[test]
fn a_fork_writes_only_a_manifest_and_reads_as_the_parents_prefix() {
    let (_dir, mut project) = project();
    let parent = add(&mut project, "Parent", 40);
    let before = stored_files(&project);
    assert_eq!(before, 40);
    let fork = project
        .fork_conversation(&parent, &MessageSelector::Index(9), Some("Try B"))
        .unwrap();
    assert_eq!(fork.messages, 10);
    assert_eq!(stored_files(&project), before, "no message is copied");
    let m = manifest(&project, &fork.conversation_id);
    assert!(m.messages.is_empty());
    assert_eq!(m.shared_prefix.as_ref().unwrap().messages, 10);
    assert_eq!(
        contents(&project, &fork.conversation_id),
        contents(&project, &parent)[..10]
    );
    let loaded = project.load_conversation(&fork.conversation_id).unwrap();
    assert_eq!(loaded.forked_from.as_ref().unwrap().after_index, 9);
    assert!(matches!(
        loaded.messages[0].origin,
        Some(MessageOrigin::Inherited { ref conversation_id }) if *conversation_id == parent
    ));
    // The fork's own list has its turns as its own; a message id selects too.
    let second = loaded.messages[3].id.clone();
    let by_id = project
        .fork_conversation(&parent, &MessageSelector::Id(second), None)
        .unwrap();
    assert_eq!(by_id.messages, 4);
    assert!(by_id.title.ends_with("(fork)"));
    let recent = project
        .index()
        .unwrap()
        .recent_messages(&fork.conversation_id, 3)
        .unwrap();
    assert_eq!(recent.len(), 3, "recent turns follow the shared prefix");
    assert!(
        recent
            .iter()
            .all(|t| t.conversation_id.as_deref() == Some(fork.conversation_id.as_str()))
    );
    assert!(recent[0].text.contains("message 9"));
}

#[test]
fn forks_keep_their_messages_when_the_parent_is_rewritten_or_deleted() {
    let (_dir, mut project) = project();
    let parent = add(&mut project, "Parent", 12);
    let other = add(&mut project, "Other", 4);
    let fork = project
        .fork_conversation(&parent, &MessageSelector::Index(7), None)
        .unwrap()
        .conversation_id;
    let fork_of_fork = project
        .fork_conversation(&fork, &MessageSelector::Index(5), None)
        .unwrap()
        .conversation_id;
    let expected = contents(&project, &fork);
    let expected_2 = contents(&project, &fork_of_fork);
    // Inserting into the parent before the fork point changes what the fork shared.
    project.merge_messages(&parent, &other, &[1, 2], Some(3)).unwrap();
    assert_eq!(contents(&project, &fork), expected);
    assert_eq!(contents(&project, &fork_of_fork), expected_2);
    assert!(
        manifest(&project, &fork).shared_prefix.is_none(),
        "the fork was given its own list"
    );
    let merged = contents(&project, &parent);
    assert_eq!(merged.len(), 14);
    assert_eq!(merged[3], "Other message 1: about topic1");
    // Deleting the fork the other one shares from.
    project.delete_conversation(&fork).unwrap();
    assert_eq!(contents(&project, &fork_of_fork), expected_2);
    assert!(matches!(project.load_conversation(&fork), Err(Error::NotFound(_))));
    assert_eq!(project.gc_messages().unwrap(), 0, "every message is still used");
    project.delete_conversation(&parent).unwrap();
    project.delete_conversation(&other).unwrap();
    // Only the messages nobody uses go: the fork of the fork keeps its six (the parent's
    // pack is rewritten with only those).
    assert_eq!(project.gc_messages().unwrap(), 12 + 4 - 6);
    assert_eq!(project.store_stats().unwrap().orphans, 0);
    assert_eq!(contents(&project, &fork_of_fork), expected_2);
    assert!(project.fsck(false).unwrap().is_clean());
}

#[test]
fn merge_and_cherry_pick_refer_to_messages_and_refuse_what_makes_no_sense() {
    let (_dir, mut project) = project();
    let target = add(&mut project, "Target", 4);
    let source = add(&mut project, "Source", 20);
    let stored = stored_files(&project);
    let picked = project.cherry_pick(&target, &source, 13, 1).unwrap();
    assert_eq!(picked.affected, 2);
    assert_eq!(stored_files(&project), stored, "merged messages are not copied");
    let conv = project.load_conversation(&target).unwrap();
    assert_eq!(conv.messages[4].content, "Source message 12: about topic12");
    assert_eq!(conv.messages[5].content, "Source message 13: about topic13");
    assert_eq!(conv.merged_from[0].indices, vec![12, 13]);
    assert!(matches!(
        conv.messages[5].origin,
        Some(MessageOrigin::Merged { index: 13, .. })
    ));
    let lineage = project.lineage(&source).unwrap();
    assert_eq!(lineage.merges.len(), 1);
    assert_eq!(lineage.merges[0].into, target);

    let usage = |r: Result<GraphOutcome>| match r {
        Err(Error::Usage(message)) => message,
        other => panic!("expected a usage error, got {other:?}"),
    };
    assert!(usage(project.merge_messages(&target, &target, &[0], None)).contains("into itself"));
    assert!(usage(project.merge_messages(&target, &source, &[20], None)).contains("out of range"));
    assert!(usage(project.merge_messages(&target, &source, &[13], None)).contains("already in"));
    assert!(usage(project.merge_messages(&target, &source, &[0], Some(99))).contains("--at 99"));
    assert!(usage(project.fork_conversation(&target, &MessageSelector::Index(6), None)).contains("0–5"));
    assert!(matches!(
        project.fork_conversation("conv_NOPE", &MessageSelector::Index(0), None),
        Err(Error::NotFound(_))
    ));
    assert!(
        usage(project.fork_conversation("../etc", &MessageSelector::Index(0), None)).contains("not a conversation id")
    );
}

#[test]
fn a_corrupt_message_is_named_and_fails_only_the_conversations_using_it() {
    let (_dir, mut project) = project();
    let damaged = add(&mut project, "Damaged", 3);
    let fine = add(&mut project, "Fine", 3);
    let r = manifest(&project, &damaged).messages[1].clone();
    let (sha, place) = (r.sha256, r.pack.expect("written into a pack"));
    // The entry's bytes changed in place (same length: the pack's other entries stay put).
    let path = project.layout().pack_path(&place.name);
    let mut bytes = std::fs::read(&path).unwrap();
    let entry = &mut bytes[place.offset as usize..(place.offset + place.len) as usize];
    let at = entry.windows(5).position(|w| w == b"topic").unwrap();
    entry[at..at + 5].copy_from_slice(b"TOPIC");
    std::fs::write(&path, bytes).unwrap();
    let err = project.load_conversation(&damaged).unwrap_err().to_string();
    assert!(err.contains(&sha) && err.contains("corrupted"), "{err}");
    assert_eq!(contents(&project, &fine).len(), 3);
    let report = project.fsck(false).unwrap();
    let unreadable: Vec<&crate::fsck::Problem> = report
        .problems
        .iter()
        .filter(|p| p.kind == crate::fsck::ProblemKind::Unreadable)
        .collect();
    assert_eq!(unreadable.len(), 1, "{:?}", report.problems);
    assert!(unreadable[0].path.contains(&damaged));
    assert!(unreadable[0].detail.contains(&sha));
}

#[test]
fn hostile_or_broken_manifests_are_refused_with_the_field_named() {
    let (_dir, mut project) = project();
    let a = add(&mut project, "A", 2);
    let b = project
        .fork_conversation(&a, &MessageSelector::Index(1), None)
        .unwrap()
        .conversation_id;
    let path = project.layout().conversation_path(&a);
    let mut m = manifest(&project, &a);
    let good = m.clone();
    // A message name that would be a path out of the store.
    m.messages[0].sha256 = "../../../../etc/passwd".into();
    std::fs::write(&path, m.to_artifact_json()).unwrap();
    let err = project.load_conversation(&a).unwrap_err().to_string();
    assert!(
        err.contains("messages[0].sha256") && err.contains("not a SHA-256"),
        "{err}"
    );
    // Pack places that name no pack file, or bytes the pack does not hold.
    let original_b = manifest(&project, &b);
    let mut m = original_b.clone();
    m.messages = good.messages.clone();
    m.shared_prefix = None;
    m.messages[0].pack.as_mut().unwrap().name = "../packs/x".into();
    std::fs::write(project.layout().conversation_path(&b), m.to_artifact_json()).unwrap();
    let err = project.load_conversation(&b).unwrap_err().to_string();
    assert!(err.contains("messages[0].pack.name"), "{err}");
    m.messages[0].pack = good.messages[0].pack.clone();
    m.messages[0].pack.as_mut().unwrap().len = 200 * 1024 * 1024;
    std::fs::write(project.layout().conversation_path(&b), m.to_artifact_json()).unwrap();
    let err = project.load_conversation(&b).unwrap_err().to_string();
    assert!(err.contains("not a message of"), "{err}");
    m.messages[0].pack.as_mut().unwrap().len = u64::MAX;
    std::fs::write(project.layout().conversation_path(&b), m.to_artifact_json()).unwrap();
    let err = project.load_conversation(&b).unwrap_err().to_string();
    assert!(err.contains("messages[0].pack.len"), "{err}");
    std::fs::write(project.layout().conversation_path(&b), original_b.to_artifact_json()).unwrap();
    // A cycle of shared prefixes: a shares b's, b shares a's.
    let mut m = manifest(&project, &b);
    m.messages.clear();
    let mut cyclic = m.clone();
    cyclic.conversation_id = a.clone();
    cyclic.shared_prefix = Some(zblade_core::SharedPrefix {
        conversation_id: b.clone(),
        messages: 2,
    });
    std::fs::write(&path, cyclic.to_artifact_json()).unwrap();
    let err = project.load_conversation(&b).unwrap_err().to_string();
    assert!(err.contains("cycle"), "{err}");
    // More shared messages than the parent has.
    let mut short = manifest(&project, &b);
    short.shared_prefix.as_mut().unwrap().messages = 50;
    std::fs::write(project.layout().conversation_path(&b), short.to_artifact_json()).unwrap();
    let err = project.load_conversation(&b).unwrap_err().to_string();
    assert!(err.contains("shared_prefix"), "{err}");
}

#[test]
fn format_1_conversations_are_converted_in_place_and_read_the_same() {
    let (_dir, mut project) = project();
    let id = "conv_01JOLDFORMAT00000000000000";
    let json = serde_json::json!({
        "version": "1.0",
        "conversation_id": id,
        "project_id": project.settings().project.id,
        "title": "Old",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "messages": [
            {"id": "msg_1", "role": "user", "content": "How do I rotate keys?", "timestamp": "2026-01-01T00:00:00Z", "x-client": {"kept": true}},
            {"id": "msg_2", "role": "assistant", "content": "Like this.", "timestamp": "2026-01-01T00:00:01Z"}
        ],
        "metadata": {"total_messages": 2, "total_tokens": 0, "models_used": [], "tags": ["keys"]}
    });
    let path = project.layout().conversation_path(id);
    std::fs::write(&path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    project.reindex().unwrap();
    let before = project.load_conversation(id).unwrap();
    let mut seen = Vec::new();
    assert_eq!(project.convert_conversations(&mut |d, t| seen.push((d, t))).unwrap(), 1);
    assert_eq!(seen.last(), Some(&(1, 1)));
    assert!(matches!(
        manifests::read_stored(project.layout(), id).unwrap().unwrap().0,
        StoredConversation::Manifest(_)
    ));
    assert_eq!(
        project.load_conversation(id).unwrap(),
        before,
        "nothing lost, nothing added"
    );
    assert!(project.fsck(false).unwrap().is_clean(), "the index knows the new file");
    assert_eq!(project.convert_conversations(&mut |_, _| {}).unwrap(), 0, "once only");
}

#[test]
fn history_lists_each_prompt_once_newest_first_and_searches_by_prefix() {
    let (_dir, mut project) = project();
    let json = br#"{"title": "Search", "messages": [
        {"role": "user", "content": "How do I implement a binary search?", "timestamp": "2026-03-01T10:00:00Z"},
        {"role": "assistant", "content": "Halve the range.", "timestamp": "2026-03-01T10:00:01Z"},
        {"role": "user", "content": "Can you show me a recursive version?", "timestamp": "2026-03-01T10:01:00Z"},
        {"role": "user", "content": "How do I implement a binary search?", "timestamp": "2026-03-02T09:00:00Z"}
    ]}"#;
    project.add_conversation(json, "h.json").unwrap();
    let all = project.history(None, 10).unwrap();
    let texts: Vec<&str> = all.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "How do I implement a binary search?",
            "Can you show me a recursive version?"
        ]
    );
    assert_eq!(all[0].times, 2);
    assert!(all[0].time.starts_with("2026-03-02"));
    let found = project.history(Some("recur"), 10).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].text, "Can you show me a recursive version?");
    assert!(
        project.history(Some("binary recursive"), 10).unwrap().is_empty(),
        "every word must match"
    );
    assert!(project.history(Some("\"*("), 10).unwrap().is_empty());
}

#[test]
fn stats_count_sharing_and_orphans() {
    let (_dir, mut project) = project();
    let a = add(&mut project, "A", 10);
    project.fork_conversation(&a, &MessageSelector::Index(4), None).unwrap();
    let stats = project.store_stats().unwrap();
    assert_eq!(stats.conversations, 2);
    assert_eq!(stats.message_references, 15);
    assert_eq!(stats.stored_messages, 10);
    assert_eq!(stats.shared_messages, 5);
    assert!(stats.bytes_saved > 0 && stats.bytes_saved < stats.bytes_if_copied);
    assert_eq!(stats.orphans, 0);
}

#[test]
fn a_merged_message_whose_id_the_target_uses_is_named_apart_and_stored_once() {
    let (_dir, mut project) = project();
    let conv = |title: &str, text: &str| {
        serde_json::json!({"title": title, "messages": [
            {"id": "msg_1", "role": "user", "content": format!("{title}: {text}"), "timestamp": "2026-05-01T10:00:00Z"},
            {"id": "msg_2", "role": "assistant", "content": "Same answer in both.", "timestamp": "2026-05-01T10:00:01Z"}
        ]})
        .to_string()
    };
    let a = project
        .add_conversation(conv("A", "first").as_bytes(), "a.json")
        .unwrap()
        .id;
    let b = project
        .add_conversation(conv("B", "second").as_bytes(), "b.json")
        .unwrap()
        .id;
    // Identical messages written apart are stored in each writer's pack (no global lookup at
    // write time); a merge refers to the one it brings in.
    assert_eq!(stored_files(&project), 4);
    project.merge_messages(&a, &b, &[0], None).unwrap();
    assert_eq!(stored_files(&project), 4, "merged, not copied");
    let merged = project.load_conversation(&a).unwrap();
    assert_eq!(merged.messages.len(), 3);
    assert!(merged.messages[2].id.starts_with("msg_1-"), "{}", merged.messages[2].id);
    assert_eq!(merged.messages[2].content, "B: second");
    assert_eq!(stored_files(&project), 4, "the merged message is not stored again");
    let again = project.merge_messages(&a, &b, &[0], None).unwrap_err().to_string();
    assert!(again.contains("already in"), "{again}");
    let same = project.merge_messages(&a, &b, &[1], None).unwrap_err().to_string();
    assert!(
        same.contains("already in"),
        "the same message under the same id: {same}"
    );
}

#[test]
fn messages_sharing_an_id_but_not_a_text_are_separate_search_hits() {
    let (_dir, mut project) = project();
    for (title, text) in [("A", "wombat burrows are cubic"), ("B", "wombat diets are grassy")] {
        let json = serde_json::json!({"title": title, "messages": [
            {"id": "msg_1", "role": "user", "content": text}
        ]});
        project.add_conversation(json.to_string().as_bytes(), "w.json").unwrap();
    }
    let hits = project
        .search(
            &zblade_index::SearchQuery::new("wombat", 10, zblade_index::SearchKind::Messages)
                .in_mode(Some(zblade_index::SearchMode::Keyword)),
        )
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(hits.iter().all(|h| h.also_in.is_empty()));
}

#[test]
fn conversations_written_together_share_one_pack_and_a_common_message_is_stored_once() {
    let (_dir, mut project) = project();
    let conversation = |title: &str| -> zblade_core::Conversation {
        let json = serde_json::json!({"title": title, "messages": [
            {"role": "user", "content": format!("{title} asks about topic1")},
            {"role": "assistant", "content": "The same answer, word for word."},
            {"role": "user", "content": format!("{title} thanks")},
        ]});
        serde_json::from_value(json).unwrap()
    };
    let written = project
        .add_conversations(vec![
            (conversation("A"), "a.json".into()),
            (conversation("B"), "b.json".into()),
        ])
        .unwrap();
    let packs = std::fs::read_dir(project.layout().packs_dir()).unwrap().count();
    assert_eq!(packs, 1, "one pack for the whole write");
    assert_eq!(stored_files(&project), 5, "the common answer once");
    let (a, b) = (&written[0].id, &written[1].id);
    assert_eq!(
        manifest(&project, a).messages[1].pack,
        manifest(&project, b).messages[1].pack
    );
    assert_eq!(contents(&project, b)[1], "The same answer, word for word.");
    assert_eq!(contents(&project, a)[2], "A thanks");
    // Deleting one keeps what the other uses.
    project.delete_conversation(a).unwrap();
    assert_eq!(project.gc_messages().unwrap(), 2);
    assert_eq!(contents(&project, b).len(), 3);
    assert!(project.fsck(false).unwrap().is_clean());
}

#[test]
fn a_write_puts_its_new_messages_in_one_pack_and_gc_keeps_only_used_messages() {
    let (_dir, mut project) = project();
    let a = add(&mut project, "A", 6);
    let b = add(&mut project, "B", 4);
    let packs_dir = project.layout().packs_dir();
    let packs = || std::fs::read_dir(&packs_dir).unwrap().count();
    assert_eq!(packs(), 2, "one pack per write");
    assert!(!project.layout().messages_dir().join("00").exists());
    // A merge refers to the source's pack; nothing is written again.
    project.merge_messages(&b, &a, &[1, 2], None).unwrap();
    assert_eq!(packs(), 2);
    assert_eq!(stored_files(&project), 10);
    let merged = manifest(&project, &b);
    assert_eq!(merged.messages[4].pack, manifest(&project, &a).messages[1].pack);
    // A conversation extended later: only the new message goes into a new pack.
    let mut conv = project.load_conversation(&a).unwrap();
    conv.messages.push(zblade_core::Message::new(
        zblade_core::Role::User,
        "one more about topic9",
    ));
    let json = serde_json::to_vec(&conv).unwrap();
    project.add_conversation(&json, "again.json").unwrap();
    assert_eq!(packs(), 3);
    assert_eq!(stored_files(&project), 11);
    assert_eq!(contents(&project, &a).len(), 7);
    // B still uses two of A's first messages: A's first pack is rewritten with those two,
    // its second (the late message) removed.
    project.delete_conversation(&a).unwrap();
    assert_eq!(project.gc_messages().unwrap(), 5);
    assert_eq!(packs(), 2);
    assert_eq!(contents(&project, &b).len(), 6);
    assert_eq!(project.store_stats().unwrap().orphans, 0);
    assert!(project.fsck(false).unwrap().is_clean());
    project.delete_conversation(&b).unwrap();
    assert_eq!(project.gc_messages().unwrap(), 6);
    assert_eq!(packs(), 0);
}
