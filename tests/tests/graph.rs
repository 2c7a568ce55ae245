//! The conversation graph through the CLI: the five examples of seed 003 end to end, and the
//! graph's writers (fork, merge, delete, gc) killed with SIGKILL at random moments, alone and
//! racing each other: never a manifest naming a missing message, never a message lost that a
//! manifest names.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use zblade_tests::{KillPoints, zblade_bin};

fn zblade(root: &Path, args: &[&str]) -> Output {
    Command::new(zblade_bin())
        .args(args)
        .current_dir(root)
        .env("ZBLADE_PROJECT_REGISTRY", root.join("registry"))
        .output()
        .unwrap()
}

fn ok_json(root: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = zblade(root, &all);
    assert!(
        out.status.success(),
        "zblade {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ok_text(root: &Path, args: &[&str]) -> String {
    let out = zblade(root, args);
    assert!(
        out.status.success(),
        "zblade {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Adds a conversation whose messages are `texts` (user and assistant in turn), dated one
/// minute apart from `day`; returns its id.
fn add(root: &Path, name: &str, title: &str, day: &str, texts: &[String]) -> String {
    let messages: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            serde_json::json!({
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": text,
                "timestamp": format!("{day}T10:{:02}:{:02}Z", i / 60, i % 60),
            })
        })
        .collect();
    let path = root.join(name);
    std::fs::write(
        &path,
        serde_json::json!({"title": title, "messages": messages}).to_string(),
    )
    .unwrap();
    ok_json(root, &["add", "conversation", name])[0]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn contents(root: &Path, id: &str) -> Vec<String> {
    let exported = ok_json(root, &["conv", "export", id, "--format", "json"]);
    exported["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn numbered(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix} {i}")).collect()
}

#[test]
fn the_seeds_five_examples_run_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    ok_text(root, &["init"]);
    // Session B, earlier: its auth solution is at messages 15-18.
    let mut auth = numbered("auth chatter", 20);
    auth[15] = "How should the auth middleware validate tokens?".into();
    auth[16] = "Validate the JWT signature against the rotating key set, then the expiry.".into();
    auth[17] = "And refresh tokens?".into();
    auth[18] = "Rotate them on every use and store them in an httpOnly cookie.".into();
    let session_b = add(root, "b.json", "Auth", "2026-01-10", &auth);
    // Another session with a caching question (12) and its answer (13).
    let mut cache = numbered("cache chatter", 16);
    cache[12] = "What caching policy fits the catalogue?".into();
    cache[13] = "An LRU with a 10,000-entry cap and a 5-minute TTL.".into();
    let session_cache = add(root, "c.json", "Caching", "2026-01-12", &cache);
    // Day 1: working on a feature, with prompts to recall later.
    let mut feature = numbered("feature step", 8);
    feature[0] = "How do I implement a binary search?".into();
    feature[2] = "Can you show me a recursive version?".into();
    let session_a = add(root, "a.json", "Binary search feature", "2026-02-01", &feature);

    // 1. Resume after closing the terminal: the newest conversation, as a client reloads it.
    let resumed = ok_json(root, &["conv", "resume"]);
    assert_eq!(resumed["conversation_id"], session_a.as_str());
    assert_eq!(resumed["messages"].as_array().unwrap().len(), 8);
    let text = ok_text(root, &["conv", "resume", &session_b]);
    assert!(
        text.starts_with(&format!("Resuming {session_b}: Auth (20 messages)")),
        "{text}"
    );
    assert!(text.contains("Rotate them on every use"));

    // 2. Fork to try an alternative approach after message 5.
    let fork = ok_json(
        root,
        &[
            "conv",
            "fork",
            &session_a,
            "--after",
            "5",
            "--title",
            "Iterative instead",
        ],
    );
    let fork_id = fork["conversation_id"].as_str().unwrap().to_string();
    assert_eq!(fork["messages"], 6);
    assert_eq!(contents(root, &fork_id), contents(root, &session_a)[..6]);
    let lineage = ok_json(root, &["conv", "lineage", &session_a]);
    assert_eq!(lineage["forks"][0]["conversation"]["id"], fork_id.as_str());
    let lineage = ok_json(root, &["conv", "lineage", &fork_id]);
    assert_eq!(lineage["ancestors"][0]["id"], session_a.as_str());
    let tree = ok_text(root, &["conv", "lineage", &session_a]);
    assert!(tree.contains("└─") && tree.contains("Iterative instead"), "{tree}");

    // 3. Merge the auth solution (messages 15-18) of session B into the fork.
    let merged = ok_json(
        root,
        &["conv", "merge", &fork_id, &session_b, "--messages", "15,16,17,18"],
    );
    assert_eq!(merged["affected"], 4);
    let now = contents(root, &fork_id);
    assert_eq!(now.len(), 10);
    assert_eq!(now[6..], auth[15..19]);
    let lineage = ok_json(root, &["conv", "lineage", &session_b]);
    assert_eq!(lineage["merges"][0]["into"], fork_id.as_str());

    // 4. Cherry-pick the caching answer with its question.
    ok_json(
        root,
        &["conv", "cherry-pick", &fork_id, &session_cache, "13", "--context", "1"],
    );
    let now = contents(root, &fork_id);
    assert_eq!(now[10..], cache[12..14]);
    let exported = ok_text(root, &["conv", "export", &fork_id]);
    assert!(exported.contains(&format!("from `{session_cache}` #13")), "{exported}");
    assert!(exported.contains(&format!("inherited from `{session_a}`")));

    // A message the fork shares is one search hit naming both conversations.
    let hits = ok_json(root, &["search", "recursive version", "--mode", "keyword"]);
    let hit = &hits["hits"][0];
    assert_eq!(hit["conversation_id"], session_a.as_str(), "{hits}");
    assert_eq!(hit["also_in"][0], fork_id.as_str());

    // 5. Up-arrow / Ctrl-R history: every prompt once, newest first, searchable.
    let history = ok_json(root, &["history", "--search", "recur"]);
    assert_eq!(history.as_array().unwrap().len(), 1, "{history}");
    assert_eq!(history[0]["text"], "Can you show me a recursive version?");
    let all = ok_json(root, &["history", "--limit", "3"]);
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert_eq!(all[0]["text"], "feature step 6", "newest first");
    let others = ok_json(root, &["history", "--all-projects", "--search", "binary"]);
    assert_eq!(others[0]["text"], "How do I implement a binary search?");

    // Sharing, deleting, collecting.
    let stats = ok_json(root, &["stats"]);
    assert_eq!(stats["shared_messages"], 6 + 4 + 2, "{stats}");
    assert_eq!(stats["orphans"], 0);
    ok_json(root, &["conv", "delete", &session_a]);
    assert_eq!(contents(root, &fork_id).len(), 12, "the fork keeps what it shared");
    let gc = ok_json(root, &["gc"]);
    assert_eq!(gc["removed_messages"], 2, "session A's messages 6 and 7 were its alone");
    assert_eq!(ok_json(root, &["stats"])["orphans"], 0);
    ok_json(root, &["conv", "rename", &fork_id, "Binary search, iterative"]);
    assert_eq!(ok_json(root, &["conv", "resume"])["title"], "Binary search, iterative");
    assert!(zblade(root, &["fsck"]).status.success());

    // Clear errors for what makes no sense.
    let err = |args: &[&str]| {
        let out = zblade(root, args);
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8(out.stderr).unwrap()
    };
    assert!(err(&["conv", "fork", &fork_id, "--after", "99"]).contains("out of range"));
    assert!(err(&["conv", "merge", &fork_id, &fork_id, "--messages", "1"]).contains("into itself"));
    assert!(err(&["conv", "lineage", "conv_nope"]).contains("no conversation conv_nope"));
    assert!(err(&["conv", "export", "../../etc/passwd"]).contains("not a conversation id"));
}

/// Every conversation reads whole (no manifest names a missing or damaged message) once the
/// index is repaired, and `stats` sees no unreadable conversation.
fn assert_whole(root: &Path, what: &str) {
    let repaired = zblade(root, &["--json", "fsck", "--repair"]);
    let report: Value = serde_json::from_slice(&repaired.stdout).unwrap_or(Value::Null);
    let unreadable: Vec<&Value> = report["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["kind"] == "unreadable")
        .collect();
    assert!(unreadable.is_empty(), "{what}: {unreadable:?}");
    assert!(
        zblade(root, &["fsck"]).status.success(),
        "{what}: fsck is not clean after repair"
    );
    let stats = ok_json(root, &["stats"]);
    assert_eq!(stats["unreadable"].as_array().unwrap().len(), 0, "{what}: {stats}");
}

#[cfg(unix)]
#[test]
fn kill_dash_nine_during_fork_merge_delete_and_gc_leaves_every_conversation_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    ok_text(root, &["init"]);
    let long: Vec<String> = (0..1500)
        .map(|i| format!("long message {i} {}", "words ".repeat(i % 40)))
        .collect();
    let source = add(root, "long.json", "Long", "2026-03-01", &long);
    let target = add(root, "t.json", "Target", "2026-03-02", &numbered("target", 4));
    let keep = contents(root, &source);
    let mut rng = KillPoints::new("graph");
    let bin = zblade_bin();
    let script = format!(
        "set -e; z={bin}; r={root}; \
         f=$($z --project $r --json conv fork {source} --after $1 | sed -n 's/.*\"conversation_id\": \"\\(conv_[A-Z0-9]*\\)\".*/\\1/p'); \
         $z --project $r conv merge {target} {source} --messages $2 >/dev/null 2>&1 || true; \
         $z --project $r conv merge $f {target} --messages 0,1,2 --at 1 >/dev/null; \
         $z --project $r conv delete $f >/dev/null; \
         $z --project $r gc >/dev/null",
        bin = bin.display(),
        root = root.display()
    );
    let mut hit = 0;
    for round in 0..12u64 {
        let after = 200 + rng.below(1200);
        let first = rng.below(1400);
        let picks: Vec<String> = (first..first + 60).map(|i| i.to_string()).collect();
        let mut child = Command::new("bash")
            .args(["-c", &script, "graph-kill", &after.to_string(), &picks.join(",")])
            .env("ZBLADE_PROJECT_REGISTRY", root.join("registry"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let delay = Duration::from_millis(20 + rng.below(400));
        let started = Instant::now();
        while started.elapsed() < delay {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if child.try_wait().unwrap().is_none() {
            hit += 1;
            // The whole process group: bash and the zblade it is running.
            let _ = Command::new("pkill")
                .args(["-KILL", "-f", &root.display().to_string()])
                .status();
            let _ = child.kill();
        }
        let _ = child.wait();
        assert_whole(root, &format!("after kill {round}"));
        assert_eq!(contents(root, &source), keep, "the source never changes");
    }
    eprintln!("{hit} of 12 kills hit a running graph operation");
    assert!(hit >= 3, "too few kills landed while an operation ran ({hit})");
}

#[cfg(unix)]
#[test]
fn forks_and_gc_racing_on_one_project_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    ok_text(root, &["init"]);
    let source = add(root, "s.json", "Source", "2026-04-01", &numbered("shared", 300));
    let bin = zblade_bin();
    let forker = format!(
        "for i in $(seq 1 15); do f=$({bin} --project {root} --json conv fork {source} --after $((i * 10)) | \
         sed -n 's/.*\"conversation_id\": \"\\(conv_[A-Z0-9]*\\)\".*/\\1/p'); echo $f; done",
        bin = bin.display(),
        root = root.display()
    );
    let collector = format!(
        "for i in $(seq 1 15); do {bin} --project {root} gc >/dev/null; done",
        bin = bin.display(),
        root = root.display()
    );
    let forks = Command::new("bash")
        .args(["-c", &forker])
        .env("ZBLADE_PROJECT_REGISTRY", root.join("registry"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let gc = Command::new("bash").args(["-c", &collector]).spawn().unwrap();
    let forks = forks.wait_with_output().unwrap();
    assert!(gc.wait_with_output().unwrap().status.success());
    let ids: Vec<String> = String::from_utf8(forks.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), 15);
    let all = contents(root, &source);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(contents(root, id), all[..(i + 1) * 10 + 1], "fork {i}");
    }
    assert_whole(root, "after the race");
}
