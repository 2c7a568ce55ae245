//! Every end-to-end journey in one test binary (ripgrep's `tests/tests.rs` layout): one link
//! of the engine, LanceDB and llama.cpp instead of one per file. Each module is one story;
//! run one with `cargo test --workspace … integration -- MODULE::`.

mod archive;
mod code_search;
mod compressor;
mod context;
mod decisions;
mod documents;
mod graph;
mod hostile_server;
mod import;
mod journeys;
mod migration;
mod models;
mod references;
mod search;
mod server_mode;
mod team;
