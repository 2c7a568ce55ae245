//! The desktop app's entry point; everything lives in the library so tests can reach it.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

// The Debian package links the engine from one shared library (crates/zblade-shared).
#[cfg(feature = "shared-engine")]
use zblade_shared as _;

fn main() {
    // Before any thread starts (docs/PRIVACY.md).
    zblade_engine::disable_onnx_telemetry();
    zblade_app::run();
}
