//! Turning raw file-system events into debounced project changes.
//!
//! The watcher knows nothing about references or indexes: it classifies each event as a change
//! to a project file, a move of git's HEAD (checkout, switch, reset, rebase, commit), or noise
//! (ignored by `.gitignore`, inside `.zblade/`, or git internals), and hands batches to a
//! handler. The engine decides what to do with them. Dropping the [`Watcher`] stops it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use notify::event::{EventKind, ModifyKind, RenameMode};
use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

/// A change to one project file, with paths relative to the project root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileEvent {
    /// Created or written.
    Changed(String),
    /// Deleted (or moved out of the project).
    Removed(String),
    /// Renamed or moved within the project.
    Renamed {
        /// The old path.
        from: String,
        /// The new path.
        to: String,
    },
}

/// What the handler is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Project files changed.
    Files(Vec<FileEvent>),
    /// HEAD or a branch moved: everything may have changed.
    GitHead,
    /// Said once when live events are not available (e.g. inotify watches ran out); the
    /// watcher falls back to a [`Change::Rescan`] every `rescan_interval`.
    Degraded(String),
    /// Time to re-check everything (fallback mode only).
    Rescan,
}

/// How to watch.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Quiet time before a batch of events is delivered.
    pub debounce: Duration,
    /// Interval of full rescans when live events are not available.
    pub rescan_interval: Duration,
    /// Skip live events and only rescan (tests use it to exercise the fallback).
    pub force_rescan_mode: bool,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_millis(100),
            rescan_interval: Duration::from_secs(30),
            force_rescan_mode: false,
        }
    }
}

/// Decides which paths matter.
struct PathFilter {
    root: PathBuf,
    zblade_dir: PathBuf,
    git_dir: Option<PathBuf>,
    gitignore: Gitignore,
}

enum Class {
    Project(String),
    GitHead,
    Ignore,
}

impl PathFilter {
    fn new(root: &Path, git_dir: Option<&Path>) -> Self {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let mut builder = GitignoreBuilder::new(&root);
        builder.add(root.join(".gitignore"));
        // zblade's own ignore file (gitignore syntax): paths the user keeps out of zblade only.
        builder.add(root.join(".zbladeignore"));
        if let Some(git_dir) = git_dir {
            builder.add(git_dir.join("info/exclude"));
        }
        let gitignore = builder.build().unwrap_or_else(|_| Gitignore::empty());
        PathFilter {
            zblade_dir: root.join(".zblade"),
            git_dir: git_dir.map(|g| g.canonicalize().unwrap_or_else(|_| g.to_path_buf())),
            root,
            gitignore,
        }
    }

    fn classify(&self, path: &Path) -> Class {
        if let Some(git_dir) = &self.git_dir
            && let Ok(inside) = path.strip_prefix(git_dir)
        {
            let inside = inside.to_string_lossy();
            let moves_head = inside == "HEAD" || inside == "packed-refs" || inside.starts_with("refs/");
            return if moves_head && !inside.ends_with(".lock") {
                Class::GitHead
            } else {
                Class::Ignore
            };
        }
        if path.starts_with(&self.zblade_dir) || path.components().any(|c| c.as_os_str() == ".git") {
            return Class::Ignore;
        }
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return Class::Ignore;
        };
        if rel.as_os_str().is_empty()
            || self
                .gitignore
                .matched_path_or_any_parents(rel, path.is_dir())
                .is_ignore()
        {
            return Class::Ignore;
        }
        Class::Project(rel.to_string_lossy().replace('\\', "/"))
    }

    /// Turns one debounced batch into a change list (plus whether HEAD moved).
    fn translate(&self, events: &[notify_debouncer_full::DebouncedEvent]) -> (Vec<FileEvent>, bool) {
        let mut files = Vec::new();
        let mut head = false;
        let mut push = |e: FileEvent| {
            if !files.contains(&e) {
                files.push(e);
            }
        };
        for event in events {
            let classes: Vec<Class> = event.paths.iter().map(|p| self.classify(p)).collect();
            if classes.iter().any(|c| matches!(c, Class::GitHead)) {
                head = true;
                continue;
            }
            match (&event.kind, classes.as_slice()) {
                (EventKind::Modify(ModifyKind::Name(RenameMode::Both)), [from, to]) => match (from, to) {
                    (Class::Project(from), Class::Project(to)) => push(FileEvent::Renamed {
                        from: from.clone(),
                        to: to.clone(),
                    }),
                    // An editor's temp file renamed over the original is a write.
                    (_, Class::Project(to)) => push(FileEvent::Changed(to.clone())),
                    (Class::Project(from), _) => push(FileEvent::Removed(from.clone())),
                    _ => {}
                },
                (
                    EventKind::Modify(ModifyKind::Name(RenameMode::From)) | EventKind::Remove(_),
                    [Class::Project(p), ..],
                ) => push(FileEvent::Removed(p.clone())),
                (EventKind::Modify(ModifyKind::Metadata(_)) | EventKind::Access(_), _) => {}
                (EventKind::Create(_) | EventKind::Modify(_) | EventKind::Any | EventKind::Other, _) => {
                    for class in classes {
                        if let Class::Project(p) = class {
                            push(FileEvent::Changed(p));
                        }
                    }
                }
                _ => {}
            }
        }
        (files, head)
    }
}

/// A running watcher; dropping it stops watching.
pub struct Watcher {
    _debouncer: Option<Debouncer<RecommendedWatcher, RecommendedCache>>,
    stop_rescans: Arc<AtomicBool>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop_rescans.store(true, Ordering::Relaxed);
    }
}

/// Starts watching `root` (and `git_dir` for HEAD moves), calling `handler` from a background
/// thread with each debounced batch.
pub fn watch(
    root: &Path,
    git_dir: Option<&Path>,
    options: WatchOptions,
    handler: Arc<dyn Fn(Change) + Send + Sync>,
) -> Result<Watcher, String> {
    let stop_rescans = Arc::new(AtomicBool::new(false));
    if options.force_rescan_mode {
        start_rescans(&options, handler.clone(), stop_rescans.clone());
        handler(Change::Degraded(
            "live file events are off; checking every reference periodically".into(),
        ));
        return Ok(Watcher {
            _debouncer: None,
            stop_rescans,
        });
    }
    let filter = PathFilter::new(root, git_dir);
    let on_events = handler.clone();
    let mut debouncer = new_debouncer(options.debounce, None, move |result: DebounceEventResult| {
        // Errors from the backend (a watch limit reached while new directories appear) are
        // not fatal: the next full check catches up, so they are dropped here.
        if let Ok(events) = result {
            let (files, head) = filter.translate(&events);
            if head {
                on_events(Change::GitHead);
            }
            if !files.is_empty() {
                on_events(Change::Files(files));
            }
        }
    })
    .map_err(|e| format!("cannot start the file watcher: {e}"))?;

    let mut watch_all = || -> notify::Result<()> {
        debouncer.watch(root, RecursiveMode::Recursive)?;
        if let Some(git_dir) = git_dir
            && !git_dir.starts_with(root)
        {
            debouncer.watch(git_dir, RecursiveMode::Recursive)?;
        }
        Ok(())
    };
    match watch_all() {
        Ok(()) => Ok(Watcher {
            _debouncer: Some(debouncer),
            stop_rescans,
        }),
        Err(err) if is_out_of_watches(&err) => {
            drop(debouncer);
            start_rescans(&options, handler.clone(), stop_rescans.clone());
            handler(Change::Degraded(format!(
                "the system ran out of file watches ({err}); checking every reference every {} s instead. \
                 Raise fs.inotify.max_user_watches for live updates.",
                options.rescan_interval.as_secs()
            )));
            Ok(Watcher {
                _debouncer: None,
                stop_rescans,
            })
        }
        Err(err) => Err(format!("cannot watch {}: {err}", root.display())),
    }
}

fn is_out_of_watches(err: &notify::Error) -> bool {
    match &err.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        // ENOSPC from inotify_add_watch means the same.
        notify::ErrorKind::Io(io) => io.raw_os_error() == Some(28),
        _ => false,
    }
}

fn start_rescans(options: &WatchOptions, handler: Arc<dyn Fn(Change) + Send + Sync>, stop: Arc<AtomicBool>) {
    let interval = options.rescan_interval;
    std::thread::spawn(move || {
        let tick = Duration::from_millis(50).min(interval);
        let mut waited = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(tick);
            waited += tick;
            if waited >= interval {
                waited = Duration::ZERO;
                handler(Change::Rescan);
            }
        }
    });
}
