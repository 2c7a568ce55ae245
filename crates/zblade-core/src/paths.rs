//! Validation of project-relative paths in code references.
//!
//! References point into the working tree and must never lead outside it: no absolute paths,
//! no `..`, and no symlink whose target lies outside the project.

use std::path::{Component, Path};

/// Normalises a reference path (`./src/a.rs` → `src/a.rs`) and refuses anything that is not a
/// plain project-relative path. Returns a human-readable reason on failure.
pub fn normalize_relative(file: &str) -> Result<String, String> {
    if file.is_empty() {
        return Err("must not be empty".into());
    }
    if file.contains('\0') {
        return Err("contains a NUL character".into());
    }
    let bytes = file.as_bytes();
    let windows_drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if file.starts_with('/') || file.starts_with('\\') || windows_drive {
        return Err(format!(
            "{file:?} is absolute; paths must be relative to the project root"
        ));
    }
    let mut parts = Vec::new();
    for component in Path::new(file).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!("{file:?} contains `..`; paths must stay inside the project"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{file:?} is absolute; paths must be relative to the project root"
                ));
            }
        }
    }
    if parts.is_empty() {
        return Err(format!("{file:?} names no file"));
    }
    Ok(parts.join("/"))
}

/// Checks that the already-normalised `relative` path, resolved inside `root`, does not escape
/// `root` through a symlink. Parts of the path that do not exist (yet) are fine.
pub fn check_inside(root: &Path, relative: &str) -> Result<(), String> {
    resolve_inside(root, relative).map(|_| ())
}

/// [`check_inside`], which also says where an existing file really is: its path relative to the
/// resolved root once every symlink is followed (`None` when it does not exist), so a caller can
/// apply its rules to the real file too (`notes.txt -> .env`).
pub fn resolve_inside(root: &Path, relative: &str) -> Result<Option<String>, String> {
    let Ok(root) = root.canonicalize() else {
        return Ok(None); // no project on disk to escape from
    };
    // Walk up to the deepest ancestor that exists and resolve it: a symlink anywhere on the way
    // shows up as a canonical path outside the root.
    let full = root.join(relative);
    for candidate in full.ancestors() {
        if candidate.symlink_metadata().is_ok() {
            return match candidate.canonicalize() {
                Ok(real) if real.starts_with(&root) => {
                    let inner = real.strip_prefix(&root).unwrap_or(&real);
                    Ok((candidate == full).then(|| inner.to_string_lossy().replace('\\', "/")))
                }
                Ok(real) => Err(format!(
                    "{relative:?} leads outside the project through a symlink (to {})",
                    real.display()
                )),
                // A dangling symlink: refuse, we cannot tell where it points.
                Err(_) => Err(format!("{relative:?} goes through a broken symlink")),
            };
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_are_normalised() {
        assert_eq!(normalize_relative("./src//a.rs").unwrap(), "src/a.rs");
        assert_eq!(normalize_relative("src/auth.ts").unwrap(), "src/auth.ts");
    }

    #[test]
    fn escaping_paths_are_refused() {
        for bad in [
            "/etc/passwd",
            "../x",
            "src/../../x",
            "C:\\x",
            "\\\\server\\x",
            "",
            ".",
            "a\0b",
        ] {
            assert!(normalize_relative(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_project_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), project.path().join("s.txt")).unwrap();
        assert!(check_inside(project.path(), "link/secret.txt").is_err());
        assert!(check_inside(project.path(), "s.txt").is_err());
        std::fs::create_dir(project.path().join("src")).unwrap();
        std::os::unix::fs::symlink(project.path().join("src"), project.path().join("inner")).unwrap();
        assert!(check_inside(project.path(), "inner/new.rs").is_ok());
        assert!(check_inside(project.path(), "does/not/exist.rs").is_ok());
    }
}
