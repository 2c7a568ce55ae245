//! Code references that stay valid: real git repositories in temp dirs, real inotify.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use zblade_engine::{Project, ReferenceReport, ReferenceStatus, WatchEvent, WatchOptions};
use zblade_tests::{GitFixture, code_lines, referencing_conversation};

const KEY: &str = "conv_ref/msg_1/0";

/// A git repo with `src/lib.rs` (100 lines) and a zblade project referencing lines 40–50.
fn project_with_reference() -> (GitFixture, Project) {
    let repo = GitFixture::new(&[("src/lib.rs", &code_lines(100)), ("README.md", "hello\n")]);
    let (mut project, _) = Project::init(repo.root()).unwrap();
    project
        .add_conversation(
            referencing_conversation("conv_ref", "src/lib.rs", 40, 50).as_bytes(),
            "c.json",
        )
        .unwrap();
    (repo, project)
}

fn check(project: &mut Project) -> ReferenceReport {
    project
        .check_references()
        .unwrap()
        .into_iter()
        .find(|r| r.key == KEY)
        .unwrap()
}

fn live(r: &ReferenceReport) -> (String, [u32; 2]) {
    let l = r.live.as_ref().expect("has a live location");
    (l.file.clone(), l.lines)
}

#[test]
fn capture_records_anchor_blob_and_commit() {
    let (repo, project) = project_with_reference();
    let stored = project.stored_references().unwrap();
    assert_eq!(stored.len(), 1);
    let reference = &stored[0];
    let anchor = reference.anchor.as_ref().expect("anchor captured");
    assert_eq!(anchor.len, 11);
    assert_eq!(anchor.before.len(), 3);
    assert_eq!(
        reference.commit.as_deref(),
        Some(repo.git(&["rev-parse", "HEAD"]).trim())
    );
    assert_eq!(
        reference.git_hash.as_deref(),
        Some(repo.git(&["hash-object", "src/lib.rs"]).trim())
    );
    // The artifact keeps hashes only, never the code.
    let artifact = std::fs::read_to_string(project.layout().conversation_path("conv_ref")).unwrap();
    assert!(!artifact.contains("compute_40"), "code was copied into the artifact");
}

#[test]
fn lines_inserted_above_shift_the_reference() {
    let (repo, mut project) = project_with_reference();
    assert_eq!(check(&mut project).status, ReferenceStatus::Ok);
    repo.write("src/lib.rs", &format!("// one\n// two\n// three\n{}", code_lines(100)));
    let r = check(&mut project);
    assert_eq!(r.status, ReferenceStatus::Shifted);
    assert_eq!(live(&r), ("src/lib.rs".into(), [43, 53]));
    let drift = r.drift.expect("the file changed");
    assert_eq!(drift.commits_since, Some(0), "not committed yet");
    repo.commit("header");
    assert_eq!(check(&mut project).drift.unwrap().commits_since, Some(1));
}

#[test]
fn a_partly_edited_range_is_modified_and_shows_current_code() {
    let (repo, mut project) = project_with_reference();
    let text = repo
        .read("src/lib.rs")
        .replace("compute_44(", "recompute_44(")
        .replace("compute_45(", "recompute_45(");
    repo.write("src/lib.rs", &text);
    let r = check(&mut project);
    assert_eq!(r.status, ReferenceStatus::Modified);
    assert_eq!(live(&r).1, [40, 50]);
    assert!(r.similarity > 0.7 && r.similarity < 1.0, "{}", r.similarity);
    // Hydration reads the working tree now: the edited line, never the captured one.
    let shown = project.reference(KEY).unwrap();
    let code = shown.code.unwrap();
    assert!(code.iter().any(|l| l.contains("recompute_44")), "{code:?}");
}

#[test]
fn git_mv_and_plain_mv_into_another_directory_are_followed() {
    let (repo, mut project) = project_with_reference();
    repo.git(&["mv", "src/lib.rs", "src/core.rs"]);
    let r = check(&mut project);
    assert_eq!(
        (r.status.as_str(), live(&r)),
        ("moved", ("src/core.rs".into(), [40, 50]))
    );
    std::fs::create_dir_all(repo.root().join("lib/deep")).unwrap();
    std::fs::rename(repo.root().join("src/core.rs"), repo.root().join("lib/deep/moved.rs")).unwrap();
    let r = check(&mut project);
    assert_eq!(
        (r.status.as_str(), live(&r)),
        ("moved", ("lib/deep/moved.rs".into(), [40, 50]))
    );
}

#[test]
fn deleting_the_file_makes_the_reference_missing() {
    let (repo, mut project) = project_with_reference();
    std::fs::remove_file(repo.root().join("src/lib.rs")).unwrap();
    let r = check(&mut project);
    assert_eq!(r.status, ReferenceStatus::Missing);
    assert!(r.live.is_none());
    assert!(r.reason.unwrap().contains("not found"));
    assert_eq!(
        project.live_location(KEY).unwrap().unwrap().status,
        ReferenceStatus::Missing,
        "stored in the index"
    );
}

#[test]
fn a_branch_switch_is_seen_and_switching_back_restores_ok() {
    let (repo, mut project) = project_with_reference();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let mut lines: Vec<String> = code_lines(100).lines().map(String::from).collect();
    lines.drain(0..20); // the referenced block moves up by 20 lines on this branch
    repo.write("src/lib.rs", &(lines.join("\n") + "\n"));
    repo.commit("shorter");
    let r = check(&mut project);
    assert_eq!((r.status.as_str(), live(&r).1), ("shifted", [20, 30]));
    assert_eq!(r.drift.unwrap().commits_since, Some(1));
    repo.git(&["checkout", "-q", "main"]);
    let r = check(&mut project);
    assert_eq!((r.status.as_str(), live(&r).1), ("ok", [40, 50]));
    assert!(r.drift.is_none());
}

#[test]
fn crlf_files_anchor_like_lf_files() {
    let crlf = code_lines(60).replace('\n', "\r\n");
    let repo = GitFixture::new(&[("win.cs", &crlf)]);
    let (mut project, _) = Project::init(repo.root()).unwrap();
    project
        .add_conversation(
            referencing_conversation("conv_ref", "win.cs", 10, 12).as_bytes(),
            "c.json",
        )
        .unwrap();
    assert_eq!(check(&mut project).status, ReferenceStatus::Ok);
    let code = project.reference(KEY).unwrap().code.unwrap();
    assert_eq!(code[0], "    let value_10 = compute_10(input, 10);", "no stray \\r");
    repo.write("win.cs", &code_lines(60)); // converted to LF: same lines, different bytes
    let r = check(&mut project);
    assert_eq!(r.status, ReferenceStatus::Ok);
    assert!(r.drift.is_some());
}

#[test]
fn binary_huge_and_past_the_end_references_are_refused_cleanly() {
    let repo = GitFixture::new(&[("small.rs", "fn a() {}\nfn b() {}\n")]);
    std::fs::write(repo.root().join("logo.png"), [0x89, b'P', b'N', b'G', 0, 0, 0, 13]).unwrap();
    let big = std::fs::File::create(repo.root().join("huge.log")).unwrap();
    big.set_len(11 * 1024 * 1024).unwrap();
    let (mut project, _) = Project::init(repo.root()).unwrap();
    let conv = |refs: serde_json::Value| {
        serde_json::json!({"conversation_id": "conv_bad", "messages": [{"id": "m", "role": "user", "content": "x", "code_references": refs}]})
            .to_string()
    };
    // Lines past the end of a file are refused when added, with the field named.
    let past_end =
        conv(serde_json::json!([{"file": "logo.png", "lines": [1, 2]}, {"file": "small.rs", "lines": [50, 60]}]));
    let err = project
        .add_conversation(past_end.as_bytes(), "c.json")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("code_references[1].lines") && err.contains("past the end"),
        "{err}"
    );
    assert!(!project.layout().conversation_path("conv_bad").exists());
    // Binary and huge files are kept, and reported unreadable rather than read.
    let unreadable =
        conv(serde_json::json!([{"file": "logo.png", "lines": [1, 2]}, {"file": "huge.log", "lines": [1, 2]}]));
    project.add_conversation(unreadable.as_bytes(), "c.json").unwrap();
    let reports = project.check_references().unwrap();
    let by = |file: &str| reports.iter().find(|r| r.captured.file == file).unwrap();
    assert_eq!(by("logo.png").status, ReferenceStatus::Unreadable);
    assert_eq!(by("logo.png").reason.as_deref(), Some("binary file"));
    assert_eq!(by("huge.log").status, ReferenceStatus::Unreadable);
    assert!(by("huge.log").reason.as_ref().unwrap().contains("10 MB"));
    // Lines that existed when added and are gone since: missing, past the end.
    std::fs::write(
        repo.root().join("small.rs"),
        "fn a() {}\nfn b() {}\nfn c() {}\nfn d() {}\n",
    )
    .unwrap();
    let later = serde_json::json!({"conversation_id": "conv_later", "messages": [{"id": "m", "role": "user", "content": "x",
        "code_references": [{"file": "small.rs", "lines": [3, 4]}]}]});
    project
        .add_conversation(later.to_string().as_bytes(), "later.json")
        .unwrap();
    std::fs::write(repo.root().join("small.rs"), "x\n").unwrap();
    let reports = project.check_references().unwrap();
    let shrunk = reports.iter().find(|r| r.captured.file == "small.rs").unwrap();
    assert_ne!(shrunk.status, ReferenceStatus::Ok, "{shrunk:?}");
}

#[test]
fn a_project_without_git_still_tracks_references() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), code_lines(100)).unwrap();
    let (mut project, _) = Project::init(dir.path()).unwrap();
    project
        .add_conversation(
            referencing_conversation("conv_ref", "src/lib.rs", 40, 50).as_bytes(),
            "c.json",
        )
        .unwrap();
    let stored = &project.stored_references().unwrap()[0];
    assert!(stored.commit.is_none());
    assert!(stored.git_hash.is_some(), "a content hash even without git");
    std::fs::write(dir.path().join("src/lib.rs"), format!("// new\n{}", code_lines(100))).unwrap();
    let r = check(&mut project);
    assert_eq!((r.status.as_str(), live(&r).1), ("shifted", [41, 51]));
    assert_eq!(r.drift.unwrap().commits_since, None);
}

/// Runs the watch loop on a thread; events arrive on the returned channel.
struct Watching {
    stop: Arc<AtomicBool>,
    events: mpsc::Receiver<WatchEvent>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Notices said before watching was ready.
    notices: Vec<String>,
}

impl Watching {
    fn start(root: &std::path::Path, options: WatchOptions) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (send, events) = mpsc::channel();
        let (root, flag) = (root.to_path_buf(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut project = Project::open(&root).unwrap();
            project.watch(options, &flag, |e| send.send(e).unwrap()).unwrap();
        });
        let mut watching = Watching {
            stop,
            events,
            thread: Some(thread),
            notices: Vec::new(),
        };
        loop {
            match watching.next() {
                WatchEvent::Ready { .. } => break,
                WatchEvent::Notice(message) => watching.notices.push(message),
                other => panic!("expected Ready, got {other:?}"),
            }
        }
        watching
    }

    fn next(&self) -> WatchEvent {
        self.events
            .recv_timeout(Duration::from_secs(20))
            .expect("a watch event within 20 s")
    }

    /// Waits until an update reports `key` with the given status.
    fn until(&self, status: ReferenceStatus) -> ReferenceReport {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(WatchEvent::Updated { changed, .. }) = self.events.recv_timeout(Duration::from_millis(200))
                && let Some(r) = changed.into_iter().find(|r| r.key == KEY && r.status == status)
            {
                return r;
            }
        }
        panic!("no update to {status} within 20 s");
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

#[test]
fn the_watcher_keeps_live_locations_current() {
    let (repo, project) = project_with_reference();
    drop(project);
    let watching = Watching::start(repo.root(), WatchOptions::default());

    // A save that inserts lines above the range.
    repo.write("src/lib.rs", &format!("// a\n// b\n{}", code_lines(100)));
    let r = watching.until(ReferenceStatus::Shifted);
    assert_eq!(live(&r).1, [42, 52]);

    // An editor that writes a temp file and renames it over the original.
    let tmp = repo.root().join("src/.lib.rs.swp");
    std::fs::write(&tmp, code_lines(100)).unwrap();
    std::fs::rename(&tmp, repo.root().join("src/lib.rs")).unwrap();
    assert_eq!(live(&watching.until(ReferenceStatus::Ok)).1, [40, 50]);

    // A rename seen by inotify as a pair of events.
    std::fs::rename(repo.root().join("src/lib.rs"), repo.root().join("src/renamed.rs")).unwrap();
    assert_eq!(live(&watching.until(ReferenceStatus::Moved)).0, "src/renamed.rs");

    // A move across directories by delete + create (the rename pair is lost).
    let text = repo.read("src/renamed.rs");
    std::fs::remove_file(repo.root().join("src/renamed.rs")).unwrap();
    watching.until(ReferenceStatus::Missing);
    repo.write("elsewhere/again.rs", &text);
    assert_eq!(live(&watching.until(ReferenceStatus::Moved)).0, "elsewhere/again.rs");

    // Live locations are in the index, for other processes to read.
    let reader = Project::open(repo.root()).unwrap();
    let stored = reader.live_location(KEY).unwrap().unwrap();
    assert_eq!(
        (stored.status.as_str(), stored.file.as_deref()),
        ("moved", Some("elsewhere/again.rs"))
    );
}

#[test]
fn the_watcher_rechecks_everything_when_head_moves() {
    let (repo, project) = project_with_reference();
    drop(project);
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.write("src/lib.rs", &format!("// other branch\n{}", code_lines(100)));
    repo.commit("other");
    repo.git(&["checkout", "-q", "main"]);
    let watching = Watching::start(repo.root(), WatchOptions::default());
    repo.git(&["checkout", "-q", "other"]);
    assert_eq!(live(&watching.until(ReferenceStatus::Shifted)).1, [41, 51]);
    repo.git(&["checkout", "-q", "main"]);
    assert_eq!(live(&watching.until(ReferenceStatus::Ok)).1, [40, 50]);
}

#[test]
fn without_live_events_the_watcher_says_so_once_and_rescans() {
    let (repo, project) = project_with_reference();
    drop(project);
    let options = WatchOptions {
        force_rescan_mode: true,
        rescan_interval: Duration::from_millis(300),
        ..Default::default()
    };
    let watching = Watching::start(repo.root(), options);
    assert!(
        watching.notices.iter().any(|m| m.contains("periodically")),
        "{:?}",
        watching.notices
    );
    repo.write("src/lib.rs", &format!("// x\n{}", code_lines(100)));
    assert_eq!(live(&watching.until(ReferenceStatus::Shifted)).1, [41, 51]);
    let notices = watching
        .events
        .try_iter()
        .filter(|e| matches!(e, WatchEvent::Notice(_)))
        .count();
    assert_eq!(notices, 0, "the notice is said once");
}

#[test]
fn ignored_and_internal_files_do_not_trigger_checks() {
    let (repo, project) = project_with_reference();
    drop(project);
    repo.write(".gitignore", "target/\n");
    let watching = Watching::start(repo.root(), WatchOptions::default());
    repo.write("target/debug/out.rs", "x\n");
    repo.write(".zblade/cache/x.json", "{}\n");
    repo.write("unreferenced.rs", "fn x() {}\n");
    std::thread::sleep(Duration::from_millis(600));
    let updates = watching
        .events
        .try_iter()
        .filter(|e| matches!(e, WatchEvent::Updated { .. }))
        .count();
    assert_eq!(updates, 0, "no reference is affected by those files");
}
