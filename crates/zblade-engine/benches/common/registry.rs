//! Real code nobody here wrote, for the benchmarks that index code (indexing, code_search):
//! crates' sources as the cargo registry holds them after any build. Kept out of
//! `common/mod.rs`, which other crates' benchmarks include.

// Each benchmark compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The crate's sources in the cargo registry, at the version Cargo.lock names.
pub fn registry_crate(name: &str) -> Option<PathBuf> {
    let lock = std::fs::read_to_string(crate::common::report::manifest_dir().join("../../Cargo.lock")).ok()?;
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

/// Every file under `dir` whose extension is one of `extensions`, relative to `dir`, sorted.
pub fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| extensions.iter().any(|e| x == *e)) {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Copies the first `limit` Rust and Markdown files of the code base `from` (in path order)
/// into `to`; returns how many files and lines were copied.
pub fn copy_code_base(from: &Path, to: &Path, limit: usize) -> (usize, usize) {
    let (mut files, mut lines) = (0, 0);
    for relative in files_under(from, &["rs", "md"]).into_iter().take(limit) {
        let target = to.join(&relative);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let text = std::fs::read_to_string(from.join(&relative)).unwrap_or_default();
        lines += text.lines().count();
        files += 1;
        std::fs::write(target, text).unwrap();
    }
    (files, lines)
}
