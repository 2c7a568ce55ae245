//! A background thread with a stop flag, joined when stopped or dropped: what the indexer and
//! the background archive push run on. The work checks the flag at points where stopping
//! leaves everything consistent; stopping waits for it to get there.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// A running background thread; [`Worker::stop`] (or dropping it) stops it and waits.
pub struct Worker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Runs `work` on a new thread named `name`; it gets the stop flag to check.
    pub fn spawn(name: &str, work: impl FnOnce(Arc<AtomicBool>) + Send + 'static) -> Worker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(flag))
            .unwrap_or_else(|e| panic!("spawn the {name} thread: {e}"));
        Worker {
            stop,
            thread: Some(thread),
        }
    }

    /// Raises the stop flag and waits for the thread to return.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
