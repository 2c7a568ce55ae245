//! Embedding models for a project: which are installed, downloading one by name (only with
//! the user's consent to use the network), importing one from a folder, and choosing the one
//! search uses.

use std::path::{Path, PathBuf};

use serde::Serialize;
use zblade_core::{Error, Result};

use crate::model_places::{check_name, is_model_dir, model_dir, models_dir, packaged_models_dir};
use crate::project::Project;

/// An installed or downloadable embedding model.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ModelEntry {
    /// The name settings use.
    pub name: String,
    /// Its directory, when installed.
    pub dir: Option<String>,
    /// Whether search is configured to use it for conversations and moments.
    pub active: bool,
    /// Whether code search uses it (the code model, or the conversation model when no code
    /// model is installed).
    pub code: bool,
    /// The hub repository it downloads from, for known models.
    pub repo: Option<String>,
}

/// What a download did.
#[derive(Debug, Clone, Serialize)]
pub struct ModelDownload {
    /// The installed model's name.
    pub name: String,
    /// Where it was installed.
    pub dir: String,
    /// Bytes fetched.
    pub bytes: u64,
    /// Each file with its sha256.
    pub files: Vec<(String, String)>,
    /// Whether search now uses it.
    pub active: bool,
}

/// What an import from a folder did.
#[derive(Debug, Clone, Serialize)]
pub struct ModelImport {
    /// The installed model's name.
    pub name: String,
    /// Where it was installed.
    pub dir: String,
    /// The files copied.
    pub files: Vec<String>,
    /// Whether search now uses it.
    pub active: bool,
}

impl Project {
    /// Installed models (in [`models_dir`], and the package's in [`packaged_models_dir`] that
    /// the user's folder does not override) and the known ones that can be downloaded.
    pub fn list_models(&self) -> Vec<ModelEntry> {
        let configured = self.semantic().embedding_model_dir();
        let code = self.semantic().code_model_dir().unwrap_or_else(|| configured.clone());
        let mut out: Vec<ModelEntry> = Vec::new();
        let mut dirs: Vec<PathBuf> = std::iter::once(models_dir())
            .chain(packaged_models_dir())
            .flat_map(|place| std::fs::read_dir(place).into_iter().flatten().flatten())
            .map(|e| e.path())
            .filter(|p| is_model_dir(p) && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
            .filter_map(|p| p.file_name().map(|n| model_dir(&n.to_string_lossy())))
            .collect();
        for dir in [&configured, &code] {
            if is_model_dir(dir) && !dirs.contains(dir) {
                dirs.push(dir.clone());
            }
        }
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push(ModelEntry {
                repo: zblade_models::known_embedding_model(&name).map(|m| m.repo.to_string()),
                active: dir == configured,
                code: dir == code,
                dir: Some(dir.display().to_string()),
                name,
            });
        }
        for known in zblade_models::EMBEDDING_MODELS {
            if !out.iter().any(|e| e.name == known.name) {
                out.push(ModelEntry {
                    name: known.name.to_string(),
                    dir: None,
                    active: false,
                    code: false,
                    repo: Some(known.repo.to_string()),
                });
            }
        }
        out
    }

    /// Downloads the embedding model `name` (a known name or a hub `owner/repo`) from `hub`
    /// into [`models_dir`], checks that it loads, and installs it atomically. Refused unless
    /// the settings allow network use or `allow_network` is given for this call. With
    /// `activate`, search uses the model from now on (run `zblade index` to embed with it).
    pub fn download_model(
        &mut self,
        name: &str,
        hub: &str,
        allow_network: bool,
        replace: bool,
        activate: bool,
        progress: &mut dyn FnMut(&str, u64, Option<u64>),
    ) -> Result<ModelDownload> {
        if !(allow_network || self.settings().privacy.allow_network) {
            return Err(Error::ConsentRequired(format!(
                "downloading {name:?} needs the network, which this project does not allow yet: pass \
                 --allow-network for this download, or set privacy.allow_network to true in {}",
                self.layout().relative(&self.layout().settings())
            )));
        }
        let zblade_models::ModelSource {
            name: dir_name,
            repo,
            files,
        } = zblade_models::resolve(name)?;
        let target = models_dir().join(&dir_name);
        let client = zblade_models::client()?;
        let mut fetched = Vec::new();
        let mut bytes = 0;
        let staged = |staging: &Path| -> Result<()> {
            for (remote, local) in &files {
                let url = zblade_models::file_url(hub, &repo, remote);
                let mut last = 0;
                let digest = zblade_models::download(&client, &url, &staging.join(local), None, &mut |done, total| {
                    last = done;
                    progress(local, done, total);
                })?;
                bytes += last;
                fetched.push((local.clone(), digest));
            }
            Ok(())
        };
        self.install_model(&dir_name, replace, activate, staged)?;
        Ok(ModelDownload {
            name: dir_name,
            dir: target.display().to_string(),
            bytes,
            files: fetched,
            active: activate,
        })
    }

    /// Imports an embedding model from a local folder (ONNX model and tokenizer files, as
    /// [`zblade_search::embed::MODEL_FILES`] lists) into [`models_dir`] as `name` (default: the
    /// folder's name): the folder's files are copied, the copy is checked to load, and only
    /// then installed. Nothing uses the network.
    pub fn import_model(
        &mut self,
        source: &Path,
        name: Option<&str>,
        replace: bool,
        activate: bool,
    ) -> Result<ModelImport> {
        if !source.is_dir() {
            return Err(Error::NotFound(format!("{}: no such folder", source.display())));
        }
        let missing: Vec<&str> = zblade_search::embed::MODEL_FILES
            .iter()
            .copied()
            .filter(|f| !source.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(Error::Usage(format!(
                "{} is not an embedding model folder: {} missing (it needs {})",
                source.display(),
                missing.join(", "),
                zblade_search::embed::MODEL_FILES.join(", ")
            )));
        }
        let dir_name = match name {
            Some(name) => name.to_string(),
            None => source
                .canonicalize()
                .map_err(|e| Error::io(source, e))?
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        check_name(&dir_name)?;
        let target = models_dir().join(&dir_name);
        let mut files = Vec::new();
        let copy = |staging: &Path| -> Result<()> {
            // The folder's own files (configs included); sub-folders are not models' business.
            for entry in std::fs::read_dir(source).map_err(|e| Error::io(source, e))? {
                let entry = entry.map_err(|e| Error::io(source, e))?;
                if entry.file_type().map_err(|e| Error::io(entry.path(), e))?.is_file() {
                    std::fs::copy(entry.path(), staging.join(entry.file_name()))
                        .map_err(|e| Error::io(entry.path(), e))?;
                    files.push(entry.file_name().to_string_lossy().into_owned());
                }
            }
            Ok(())
        };
        self.install_model(&dir_name, replace, activate, copy)?;
        files.sort();
        Ok(ModelImport {
            name: dir_name,
            dir: target.display().to_string(),
            files,
            active: activate,
        })
    }

    /// Installs the model `dir_name` from files `fetch` puts in a staging folder (refused,
    /// before `fetch` runs, when it is installed and `replace` is not set): checked to load (when ONNX Runtime is present) before it replaces anything; with `activate`,
    /// search uses it from now on.
    fn install_model(
        &mut self,
        dir_name: &str,
        replace: bool,
        activate: bool,
        fetch: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let target = models_dir().join(dir_name);
        refuse_overwrite(&target, dir_name, replace)?;
        let check = |staging: &Path| -> Result<()> {
            // Load it and embed a text when ONNX Runtime is here; otherwise it is checked on
            // first use.
            if zblade_search::embed::find_onnx_runtime().is_some_and(|p| p.exists()) {
                use zblade_search::Embedder;
                zblade_search::LocalModel::load(staging, dir_name, zblade_search::Workload::Queries)
                    .and_then(|mut model| model.embed(&["a text to check the model with"]))
                    .map(drop)
                    .map_err(|e| Error::Usage(format!("the model does not load: {e}")))?;
            }
            Ok(())
        };
        if replace && target.exists() {
            // Fetch and check first; swap only when the new copy is good.
            let old = target.with_file_name(format!(".{dir_name}.old-{}", std::process::id()));
            let fresh = target.with_file_name(format!(".{dir_name}.new-{}", std::process::id()));
            zblade_models::install_dir(&fresh, fetch, check)?;
            std::fs::rename(&target, &old).map_err(|e| Error::io(&target, e))?;
            std::fs::rename(&fresh, &target).map_err(|e| Error::io(&target, e))?;
            let _ = std::fs::remove_dir_all(&old);
        } else {
            zblade_models::install_dir(&target, fetch, check)?;
        }
        if activate {
            self.parts.settings.search.embedding_model = dir_name.to_string();
            self.settings().save(&self.layout().settings())?;
            self.parts.semantic.use_embedding_model(dir_name);
        }
        Ok(())
    }
}

fn refuse_overwrite(target: &Path, name: &str, replace: bool) -> Result<()> {
    if target.exists() && !replace {
        return Err(Error::Usage(format!(
            "{name} is already installed at {}; pass --force to install it again",
            target.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model_places::find_model_dir;

    fn install(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for file in zblade_search::embed::MODEL_FILES {
            std::fs::write(dir.join(file), "{}").unwrap();
        }
    }

    #[test]
    fn the_users_model_wins_then_the_packages_then_the_users_place() {
        let tmp = tempfile::tempdir().unwrap();
        let (users, packaged) = (tmp.path().join("user"), tmp.path().join("usr/share/zblade/models"));
        install(&packaged.join("code"));
        install(&packaged.join("both"));
        install(&users.join("both"));
        // Only the package has it: the package's copy.
        assert_eq!(find_model_dir("code", &users, Some(&packaged)), packaged.join("code"));
        // Both have it: the user's (downloaded or imported) wins.
        assert_eq!(find_model_dir("both", &users, Some(&packaged)), users.join("both"));
        // Neither, or no package installed: where the user's would be, for errors and downloads.
        assert_eq!(find_model_dir("other", &users, Some(&packaged)), users.join("other"));
        assert_eq!(find_model_dir("code", &users, None), users.join("code"));
        // A half-copied model in the package is not a model.
        std::fs::remove_file(packaged.join("code").join(zblade_search::embed::MODEL_FILES[0])).unwrap();
        assert_eq!(find_model_dir("code", &users, Some(&packaged)), users.join("code"));
        // An absolute path is taken as it is.
        assert_eq!(
            find_model_dir("/opt/m", &users, Some(&packaged)),
            PathBuf::from("/opt/m")
        );
    }
}
