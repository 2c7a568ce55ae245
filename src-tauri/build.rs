//! Build script: generates the Tauri context (config, capabilities, icons, the embedded ui/dist).
//!
//! The app's commands are declared to Tauri here, so each gets an `allow-<command>` permission
//! and none is callable unless a capability grants it: `permissions/*.toml` groups them by
//! what they touch (reading memory, changing it, models, the sync server, agents, chat, the
//! archive, leaving the app) and `capabilities/main.json` gives the main window its groups.

#[path = "src/command_names.rs"]
mod command_names;

fn main() {
    println!("cargo:rerun-if-changed=permissions");
    // The Debian package (`shared-engine`): the engine's library and Rust's std library are in
    // /usr/lib/zblade, found relative to the binary (crates/zblade-shared).
    if std::env::var_os("CARGO_FEATURE_SHARED_ENGINE").is_some() {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN/../lib/zblade");
    }
    let manifest = tauri_build::AppManifest::new().commands(command_names::COMMAND_NAMES);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)).expect("tauri-build failed");
}
