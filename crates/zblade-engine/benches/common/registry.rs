//! Real code nobody here wrote, for the benchmarks that index code (indexing, code_search):
//! crates' sources as the cargo registry holds them after any build. Kept out of
//! `common/mod.rs`, which other crates' benchmarks include.

use std::path::{Path, PathBuf};

/// The crate's sources in the cargo registry, at the version Cargo.lock names.
pub fn registry_crate(name: &str) -> Option<PathBuf> {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock")).ok()?;
    let marker = format!("name = \"{name}\"\nversion = \"");
    let at = lock.find(&marker)? + marker.len();
    let version = &lock[at..at + lock[at..].find('"')?];
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|index| index.path().join(format!("{name}-{version}")))
        .find(|dir| dir.is_dir())
}
