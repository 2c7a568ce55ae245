//! The app's integration tests in one binary (ripgrep's `tests/tests.rs` layout): one link of
//! Tauri and the engine instead of one per file.

mod consent;
mod indexer;
