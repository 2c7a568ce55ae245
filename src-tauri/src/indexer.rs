//! The background indexer: one thread per open project that brings the search index up to date
//! (files, embeddings, summaries) and then runs the engine's watch loop (file watcher + git),
//! keeping code references and the code index current while the window is closed.
//!
//! It owns its own [`Project`] (its own SQLite connection), so the UI never waits on it. It
//! knows nothing of Tauri: it reports through a callback, which the app turns into events and
//! the tray's status line, and which tests read directly.
//!
//! Stopping (pause, project closed, Quit) sets a flag the engine checks between two complete
//! batches, so a stop mid-index leaves a consistent index and the next start resumes the work.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use zblade_engine::{Error, IndexStage, Project, WatchEvent, WatchOptions};

use crate::events::{IndexerState, IndexerStatus};
use crate::updates::{IndexerUpdate, Sink};
use crate::worker::Worker;

/// A running indexer; [`Indexer::stop`] (or dropping it) stops it and waits for the thread.
pub struct Indexer {
    root: PathBuf,
    worker: Worker,
}

/// Progress is reported at most this often (a 100k-file index would otherwise flood the UI).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl Indexer {
    /// Starts indexing and watching the project at `root` on a new thread.
    pub fn start(root: PathBuf, sink: Sink) -> Indexer {
        let worker = {
            let root = root.clone();
            Worker::spawn("zblade-indexer", move |stop| run(root, stop, sink))
        };
        Indexer { root, worker }
    }

    /// The project it indexes.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Asks the thread to stop and waits for it: it finishes the batch it is writing (at most
    /// one SQLite transaction or one LanceDB append) and returns.
    pub fn stop(self) {
        self.worker.stop();
    }
}

fn status(state: IndexerState, message: Option<String>) -> IndexerUpdate {
    IndexerUpdate::Status(IndexerStatus {
        message,
        ..IndexerStatus::of(state)
    })
}

fn run(root: PathBuf, stop: Arc<AtomicBool>, sink: Sink) {
    sink(status(IndexerState::Starting, None));
    let outcome = index_then_watch(&root, &stop, &sink);
    match outcome {
        Ok(()) | Err(Error::Interrupted) => sink(status(IndexerState::Stopped, None)),
        Err(error) => sink(status(IndexerState::Error, Some(error.to_string()))),
    }
}

fn index_then_watch(root: &std::path::Path, stop: &Arc<AtomicBool>, sink: &Sink) -> zblade_engine::Result<()> {
    let mut project = Project::open(root)?;
    project.set_interrupt(stop.clone());

    let mut last = Instant::now() - PROGRESS_EVERY;
    let report = project.update_search_index(&mut |stage, done, total| {
        // Always report the first and last step of a stage; in between, at most every 100 ms.
        if done == 0 || done == total || last.elapsed() >= PROGRESS_EVERY {
            last = Instant::now();
            sink(IndexerUpdate::Status(IndexerStatus {
                state: IndexerState::Indexing,
                stage: Some(stage_name(stage).into()),
                done: done as u32,
                total: total as u32,
                message: None,
            }));
        }
    });
    // This project's models were loaded for that run only (the app's searches have models of
    // their own): let them go now rather than after the idle period. The watch below loads
    // them again when something new is to be embedded. Releasing also hands the memory back,
    // models or not: the pass read and chunked every message, so SQLite's page cache is full of
    // them and glibc keeps what was freed, and this process may idle in the tray for hours (a
    // pass that loaded no model left 69 MB allocated; docs/BENCHMARKS.md, "The lean install").
    project.release_models_unused_for(std::time::Duration::ZERO);
    let notice = match report {
        Ok(report) => report.notice,
        Err(Error::Interrupted) => return Err(Error::Interrupted),
        // Indexing failed (a model that will not load, a full disk): say so, and still watch,
        // so references stay current and keyword search keeps working.
        Err(error) => Some(format!("indexing failed: {error}")),
    };
    // "Watching" only once the watcher is registered (Ready): a change made before then is
    // caught by the watch's initial reference check, not reported as an event.
    let mut notice = notice;
    project.watch(WatchOptions::default(), stop, |event| match event {
        WatchEvent::Ready { .. } => sink(status(IndexerState::Watching, notice.take())),
        WatchEvent::Updated { changed, trigger, .. } if !changed.is_empty() => {
            sink(IndexerUpdate::References { changed, trigger });
        }
        WatchEvent::Notice(message) => sink(status(IndexerState::Watching, Some(message))),
        WatchEvent::Imported { source, messages, .. } => sink(status(
            IndexerState::Watching,
            Some(format!("imported {messages} new message(s) from {source}")),
        )),
        _ => {}
    })
}

fn stage_name(stage: IndexStage) -> &'static str {
    match stage {
        IndexStage::Conversations => "conversations",
        IndexStage::Files => "files",
        IndexStage::History => "history",
        IndexStage::Embedding => "embeddings",
        IndexStage::Summaries => "summaries",
    }
}
