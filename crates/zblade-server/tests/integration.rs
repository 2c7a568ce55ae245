//! The sync server's integration tests in one binary (ripgrep's `tests/tests.rs` layout), over
//! every backend `common::backends` names.

mod api;
mod common;
mod hardening;
mod hybrid;
mod object_store;
mod team;
mod wire_skew;
