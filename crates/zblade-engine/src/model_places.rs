//! Where models live on this machine: the user's models folder, the copy an installed package
//! ships, a model's folder from its name in the settings, and which names are safe as folder
//! and file names. Below every store that loads a model, so each can find its files.

use std::path::{Path, PathBuf};

use zblade_core::{Error, Result};

/// The directory models are installed in: `$ZBLADE_MODELS_DIR`, else `~/.cache/zblade/models`.
pub fn models_dir() -> PathBuf {
    std::env::var_os("ZBLADE_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
            home.join(".cache/zblade/models")
        })
}

/// The models an installed package ships, `/usr/share/zblade/models`: `../share/zblade/models`
/// from the running executable in `/usr/bin` (the app), `../../share/zblade/models` from one in
/// `/usr/lib/zblade` (the full CLI, which `/usr/bin/zblade` runs). Read-only, used when the
/// user's [`models_dir`] does not hold a model of that name. `None` outside an installation.
/// Found once per process: every search asks for its models' folders several times, and
/// resolving the executable's path costs a dozen system calls each time.
pub fn packaged_models_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(find_packaged_models_dir).clone()
}

fn find_packaged_models_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let up = if dir.ends_with("lib/zblade") {
        "../../share/zblade/models"
    } else {
        "../share/zblade/models"
    };
    std::fs::canonicalize(dir.join(up)).ok()
}

/// A model's directory from its name in the settings: an absolute path as it is; a name in the
/// user's [`models_dir`] when installed there (a model the user downloaded or imported wins),
/// else the package's copy ([`packaged_models_dir`]), else where the user's would be (so errors
/// and downloads name the user's folder).
pub(crate) fn model_dir(name: &str) -> PathBuf {
    find_model_dir(name, &models_dir(), packaged_models_dir().as_deref())
}

/// [`model_dir`] with the two places given.
pub(crate) fn find_model_dir(name: &str, users: &Path, packaged: Option<&Path>) -> PathBuf {
    if Path::new(name).is_absolute() {
        return PathBuf::from(name);
    }
    let users = users.join(name);
    if is_model_dir(&users) {
        return users;
    }
    packaged
        .map(|dir| dir.join(name))
        .filter(|dir| is_model_dir(dir))
        .unwrap_or(users)
}

pub(crate) fn is_model_dir(dir: &Path) -> bool {
    zblade_search::embed::MODEL_FILES.iter().all(|f| dir.join(f).is_file())
}

/// Model names (compressor and embedding): letters, digits, `.`, `_`, `-`; what file names and
/// settings can hold safely.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{name:?} is not a usable model name: use letters, digits, '.', '_' and '-' (at most 100)"
        )))
    }
}

/// Where compressor models are installed: `$ZBLADE_MODELS_DIR/gguf/NAME.gguf`.
pub fn gguf_dir() -> PathBuf {
    models_dir().join("gguf")
}
