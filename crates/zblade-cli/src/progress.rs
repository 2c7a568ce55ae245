//! A one-line progress bar on standard error, drawn only when it is a terminal.

use std::io::Write;
use std::time::{Duration, Instant};

/// Redraws at most this often, so a fast loop does not spend its time printing.
const REDRAW: Duration = Duration::from_millis(100);
const WIDTH: usize = 30;

/// Progress of a long command, stage by stage.
pub struct Bar {
    enabled: bool,
    stage: String,
    drawn: Option<Instant>,
}

impl Bar {
    /// A bar that draws when `enabled` (standard error is a terminal and output is not JSON).
    pub fn new(enabled: bool) -> Self {
        Bar {
            enabled,
            stage: String::new(),
            drawn: None,
        }
    }

    /// Shows `done` of `total` for `stage`; a new stage starts a new line.
    pub fn update(&mut self, stage: &str, done: usize, total: usize) {
        if !self.enabled || total == 0 {
            return;
        }
        if stage != self.stage {
            if !self.stage.is_empty() {
                eprintln!();
            }
            self.stage = stage.to_string();
            self.drawn = None;
        }
        let due = self.drawn.is_none_or(|t| t.elapsed() >= REDRAW);
        if !due && done < total {
            return;
        }
        self.drawn = Some(Instant::now());
        let filled = WIDTH * done.min(total) / total;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{stage:<10} [{}{}] {done}/{total}",
            "#".repeat(filled),
            ".".repeat(WIDTH - filled)
        );
        let _ = err.flush();
    }

    /// Ends the bar's line.
    pub fn finish(&mut self) {
        if self.enabled && !self.stage.is_empty() {
            eprintln!();
            self.stage.clear();
        }
    }
}
