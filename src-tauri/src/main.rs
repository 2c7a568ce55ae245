//! The desktop app's entry point; everything lives in the library so tests can reach it.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // Before any thread starts (docs/PRIVACY.md).
    zblade_engine::disable_onnx_telemetry();
    zblade_app::run();
}
