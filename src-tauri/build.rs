//! Build script: generates the Tauri context (config, capabilities, icons, the embedded ui/dist).
fn main() {
    tauri_build::build();
}
