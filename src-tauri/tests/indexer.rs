//! The background indexer against a real project: it indexes and then watches; a stop in the
//! middle of indexing (what Quit and Pause do) returns promptly and leaves an index that fsck
//! finds clean and that the next start completes.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zblade_app::events::IndexerState;
use zblade_app::indexer::Indexer;
use zblade_app::updates::IndexerUpdate;
use zblade_engine::Project;

/// A project with `files` Rust files, set to an embedding model that is not installed, so
/// indexing is keyword-only (fast, and independent of the machine's models).
fn project_with_files(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (project, _) = Project::init(dir.path()).unwrap();
    let mut settings = project.settings().clone();
    settings.search.embedding_model = "not-installed-model".into();
    settings.save(&project.layout().settings()).unwrap();
    for i in 0..files {
        let sub = dir.path().join(format!("src/m{}", i / 100));
        std::fs::create_dir_all(&sub).unwrap();
        let body: String = (0..40)
            .map(|l| format!("pub fn f_{i}_{l}(x: u32) -> u32 {{ x.wrapping_mul({l}) ^ {i} }}\n"))
            .collect();
        std::fs::write(sub.join(format!("f{i}.rs")), body).unwrap();
    }
    dir
}

fn collecting() -> (zblade_app::updates::Sink, mpsc::Receiver<IndexerUpdate>) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    (
        Arc::new(move |u| {
            let _ = tx.lock().unwrap().send(u);
        }),
        rx,
    )
}

fn wait_for(rx: &mpsc::Receiver<IndexerUpdate>, what: impl Fn(&IndexerUpdate) -> bool) -> IndexerUpdate {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let update = rx.recv_timeout(left).expect("the indexer said nothing in time");
        if let IndexerUpdate::Status(s) = &update
            && s.state == IndexerState::Error
        {
            panic!("indexer failed: {:?}", s.message);
        }
        if what(&update) {
            return update;
        }
    }
}

fn state_is(update: &IndexerUpdate, state: IndexerState) -> bool {
    matches!(update, IndexerUpdate::Status(s) if s.state == state)
}

#[test]
fn stop_in_the_middle_of_indexing_leaves_a_clean_index_and_the_next_run_finishes() {
    let files = 3_000;
    let dir = project_with_files(files);
    let (sink, rx) = collecting();
    let indexer = Indexer::start(dir.path().to_path_buf(), sink);
    wait_for(
        &rx,
        |u| matches!(u, IndexerUpdate::Status(s) if s.state == IndexerState::Indexing && s.done > 0 && s.done < s.total),
    );

    let asked = Instant::now();
    indexer.stop();
    let stopped_in = asked.elapsed();
    assert!(stopped_in < Duration::from_secs(5), "stop took {stopped_in:?}");
    wait_for(&rx, |u| state_is(u, IndexerState::Stopped));

    let mut project = Project::open(dir.path()).unwrap();
    let indexed = project.status().unwrap().code_files;
    assert!(
        indexed > 0 && (indexed as usize) < files,
        "stopped mid-way: {indexed} of {files} files indexed"
    );
    let report = project.fsck(false).unwrap();
    assert!(report.is_clean(), "fsck after a stop mid-index: {:?}", report.problems);
    drop(project);

    // The next start resumes and completes, then watches.
    let (sink, rx) = collecting();
    let indexer = Indexer::start(dir.path().to_path_buf(), sink);
    wait_for(&rx, |u| state_is(u, IndexerState::Watching));
    indexer.stop();
    let project = Project::open(dir.path()).unwrap();
    assert_eq!(project.status().unwrap().code_files as usize, files);
}

#[test]
fn watching_reports_a_reference_that_moved() {
    let dir = project_with_files(0);
    let mut project = Project::open(dir.path()).unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    let code: String = (1..=20).map(|i| format!("line {i} of the auth code\n")).collect();
    std::fs::write(dir.path().join("src/auth.ts"), &code).unwrap();
    let conversation = br#"{"title": "Auth", "messages": [{"role": "user", "content": "look here",
        "code_references": [{"file": "src/auth.ts", "lines": [5, 9]}]}]}"#;
    project.add_conversation(conversation, "<test>").unwrap();
    drop(project);

    let (sink, rx) = collecting();
    let indexer = Indexer::start(dir.path().to_path_buf(), sink);
    wait_for(&rx, |u| state_is(u, IndexerState::Watching));
    std::fs::write(
        dir.path().join("src/auth.ts"),
        format!("// new header\n// two lines\n{code}"),
    )
    .unwrap();
    let update = wait_for(&rx, |u| matches!(u, IndexerUpdate::References { .. }));
    let IndexerUpdate::References { changed, .. } = update else {
        unreachable!()
    };
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].status, zblade_engine::ReferenceStatus::Shifted);
    assert_eq!(changed[0].live.as_ref().unwrap().lines, [7, 11]);
    indexer.stop();
}
