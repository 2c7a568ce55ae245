//! The projects zblade knows on this machine: one root per line in
//! `$XDG_DATA_HOME/zblade/projects` (else `~/.local/share/zblade/projects`; the
//! `ZBLADE_PROJECT_REGISTRY` variable names another file). `zblade init` and the app add the projects they create;
//! `zblade history --all-projects` reads them. Roots whose `.zblade/` is gone are dropped the
//! next time the list is written. The list holds paths only, never memory.

use std::path::{Path, PathBuf};

use zblade_core::{Error, Layout, Result, fsio};
use zblade_index::Prompt;

use crate::project::Project;

/// The registry file, or `None` when no home folder is known.
fn registry_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ZBLADE_PROJECT_REGISTRY") {
        return Some(PathBuf::from(path));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))?;
    Some(data.join("zblade").join("projects"))
}

/// The known project roots that still hold a `.zblade/` folder.
pub fn known_projects() -> Vec<PathBuf> {
    let Some(file) = registry_file() else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut roots: Vec<PathBuf> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .filter(|root| root.is_absolute() && Layout::new(root).dir().is_dir())
        .collect();
    roots.dedup();
    roots
}

/// Adds `root` to the registry (once). Failing to write it never fails the caller's command:
/// the registry only serves `--all-projects`.
pub fn remember_project(root: &Path) {
    let Some(file) = registry_file() else {
        return;
    };
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut roots = known_projects();
    if roots.contains(&root) {
        return;
    }
    roots.push(root);
    let text: String = roots.iter().map(|r| format!("{}\n", r.display())).collect();
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = fsio::write_atomic(&file, text.as_bytes());
}

/// Prompts of every known project, newest first, each text once per project; each with
/// its project's root. A project that cannot be opened is skipped.
pub fn history_of_all_projects(search: Option<&str>, limit: usize) -> Result<Vec<(PathBuf, Prompt)>> {
    let mut all = Vec::new();
    for root in known_projects() {
        let Ok(project) = Project::open(&root) else {
            continue;
        };
        if let Ok(prompts) = project.history(search, limit) {
            all.extend(prompts.into_iter().map(|p| (root.clone(), p)));
        }
    }
    all.sort_by(|a, b| b.1.time.cmp(&a.1.time));
    all.truncate(limit);
    if all.is_empty() && known_projects().is_empty() {
        return Err(Error::NotFound(
            "no zblade projects are known on this machine yet (`zblade init` registers one)".into(),
        ));
    }
    Ok(all)
}
