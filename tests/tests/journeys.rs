//! Journeys across crates and processes: what a user's project goes through over time.

use std::process::{Command, Stdio};
use std::time::Duration;

use zblade_engine::{ProblemKind, Project, SearchKind, SearchMode, SearchQuery};
use zblade_tests::{conversation_json, zblade_bin};

/// A writer killed with SIGKILL at any moment leaves every artifact whole (old or new, never
/// half-written), and `fsck --repair` brings the index back in line; nothing is lost.
#[cfg(unix)]
#[test]
fn kill_dash_nine_during_adds_never_corrupts_an_artifact() {
    let dir = tempfile::tempdir().unwrap();
    Project::init(dir.path()).unwrap();
    zblade_tests::write_referenced_code(dir.path());
    let conversations = dir.path().join(".zblade/artifacts/conversations");
    // (artifacts of `round` in place, and staged: temporary files `.conv_k…` not renamed yet)
    let written = |round: usize| {
        let names: Vec<String> = std::fs::read_dir(&conversations)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let done = names
            .iter()
            .filter(|n| n.starts_with(&format!("conv_k{round}_")))
            .count();
        let staged = names
            .iter()
            .filter(|n| n.starts_with(&format!(".conv_k{round}_")))
            .count();
        (done, staged)
    };
    const FILES: usize = 40;
    let mut mid_write = 0;
    for round in 0..5usize {
        // Each round adds conversations of its own, so what a kill cut short can be counted.
        let files: Vec<String> = (0..FILES)
            .map(|i| {
                let name = format!("c{round}_{i}.json");
                std::fs::write(
                    dir.path().join(&name),
                    conversation_json(&format!("conv_k{round}_{i}"), "payments", 200),
                )
                .unwrap();
                name
            })
            .collect();
        let mut child = Command::new(zblade_bin())
            .args(["add", "conversation"])
            .args(&files)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if round < 3 {
            // Kill as soon as the batch starts reaching the disk: mid-write.
            let started = std::time::Instant::now();
            while written(round) == (0, 0) && started.elapsed() < Duration::from_secs(30) {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        } else {
            std::thread::sleep(Duration::from_millis([5u64, 60][round - 3]));
        }
        child.kill().unwrap(); // SIGKILL (a no-op when it already finished)
        child.wait().unwrap();
        let (done, staged) = written(round);
        if (done > 0 || staged > 0) && done < FILES {
            mid_write += 1;
        }
    }
    assert!(
        mid_write >= 1,
        "no kill landed while artifacts were being written; the test would prove nothing"
    );
    let mut project = Project::open(dir.path()).unwrap();
    let report = project.fsck(true).unwrap();
    assert!(
        report.problems.iter().all(|p| p.kind != ProblemKind::Unreadable),
        "a killed writer left a damaged artifact: {:?}",
        report.problems
    );
    assert!(project.fsck(false).unwrap().problems.is_empty());
    // Every artifact on disk is complete and searchable.
    let status = project.status().unwrap();
    assert_eq!(status.index_health, "ok");
    assert_eq!(status.indexed.conversations as usize, status.conversation_artifacts);
    assert_eq!(status.indexed.messages as usize, status.conversation_artifacts * 200);
    eprintln!("add: {mid_write} of 5 kills landed mid-write");
}

/// Writers and a reindex running at the same time serialise on the project lock: after both,
/// the index holds exactly the artifacts.
#[test]
fn adds_racing_a_reindex_leave_a_consistent_index() {
    let dir = tempfile::tempdir().unwrap();
    Project::init(dir.path()).unwrap();
    zblade_tests::write_referenced_code(dir.path());
    let root = dir.path().to_path_buf();
    let writer = std::thread::spawn({
        let root = root.clone();
        move || {
            let mut project = Project::open(&root).unwrap();
            for i in 0..30 {
                let json = conversation_json(&format!("conv_w{i}"), "caching", 6);
                project.add_conversation(json.as_bytes(), "w.json").unwrap();
            }
        }
    });
    let mut project = Project::open(&root).unwrap();
    for _ in 0..10 {
        project.reindex().unwrap();
    }
    writer.join().unwrap();
    assert!(project.fsck(false).unwrap().problems.is_empty());
    let hits = project
        .search(&SearchQuery::new("caching", 100, SearchKind::Conversations).in_mode(Some(SearchMode::Keyword)))
        .unwrap();
    assert_eq!(hits.hits.len(), 30);
}

/// A crash between writing the artifact and indexing it is found by fsck and repaired.
#[test]
fn an_artifact_written_without_its_index_rows_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let (project, _) = Project::init(dir.path()).unwrap();
    let path = project.layout().conversation_path("conv_crashed");
    let mut conv =
        zblade_core::parse_conversation(conversation_json("conv_crashed", "billing", 4).as_bytes(), "x").unwrap();
    conv.prepare_for_store("proj_x", dir.path(), "x", Default::default())
        .unwrap();
    zblade_core::fsio::write_atomic(&path, &conv.to_artifact_json()).unwrap();
    drop(project);

    let mut project = Project::open(dir.path()).unwrap();
    let report = project.fsck(false).unwrap();
    assert_eq!(report.problems.len(), 1);
    assert_eq!(report.problems[0].kind, ProblemKind::Missing);
    assert!(project.fsck(true).unwrap().is_clean());
    assert_eq!(
        project
            .search(&SearchQuery::new("billing", 10, SearchKind::Messages).in_mode(Some(SearchMode::Keyword)))
            .unwrap()
            .hits
            .len(),
        4
    );
}

/// A project switched to server mode by hand, with no server set up, is not silently written
/// to locally: the error says what is missing.
#[test]
fn server_mode_is_refused_plainly_by_local_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (project, _) = Project::init(dir.path()).unwrap();
    zblade_tests::write_referenced_code(dir.path());
    let settings_path = project.layout().settings();
    let mut settings = zblade_core::Settings::load(&settings_path).unwrap();
    settings.storage.mode = zblade_core::StorageMode::Server;
    settings.save(&settings_path).unwrap();
    let mut project = Project::open(dir.path()).unwrap();
    let err = project
        .add_conversation(conversation_json("conv_s", "x", 1).as_bytes(), "s.json")
        .unwrap_err();
    assert!(err.is_user_error());
    assert!(err.to_string().contains("storage.server_url"), "{err}");
    assert!(!project.layout().conversation_path("conv_s").exists());
}
