//! [`CompressorStore`]: the local compressor model a project holds once loaded. Which model the
//! settings name, and the jobs run on it, are `compressor.rs`'s; this store only owns the loaded
//! model, so a project that never compresses never loads one.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use zblade_core::settings::CompressionSettings as Compression;
use zblade_llm::{Compressor, Options};

use crate::model_places::gguf_dir;

/// The compressor store; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct CompressorStore {
    /// The model, loaded on first use; `Err` says why there is none.
    model: OnceLock<std::result::Result<Compressor, String>>,
}

impl CompressorStore {
    /// The loaded compressor for these settings, loading it on first use; `Err` says why there
    /// is none (not configured, disabled, or it failed to load — then the extractive compressor
    /// is used).
    pub(crate) fn get(&self, compression: &Compression, root: &Path) -> std::result::Result<&Compressor, String> {
        self.model
            .get_or_init(|| {
                if !compression.enabled {
                    return Err("compression is disabled (context.compression.enabled)".into());
                }
                let path =
                    model_path(compression, root).ok_or_else(|| "no compressor model is configured".to_string())?;
                if !path.is_file() {
                    return Err(format!(
                        "the compressor model {} is missing; the extractive compressor is used",
                        path.display()
                    ));
                }
                Compressor::load(&path, &Options::default())
                    .map_err(|e| format!("{e}; the extractive compressor is used"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether contexts count their tokens in cl100k_base rather than the model's own: no model
    /// loaded, or, before one was tried, none configured. (A configured model that fails to
    /// load falls back to cl100k_base too, which only trying it tells.)
    pub(crate) fn counts_in_cl100k(&self, compression: &Compression) -> bool {
        match self.model.get() {
            Some(tried) => tried.is_err(),
            None => !compression.enabled || compression.local_model.trim().is_empty(),
        }
    }

    /// Forgets the loaded model (the settings now name another): the next use loads that one.
    pub(crate) fn reset(&mut self) {
        self.model = OnceLock::new();
    }
}

/// The configured model file: an installed name, or a path (relative to the project root).
pub(crate) fn model_path(compression: &Compression, root: &Path) -> Option<PathBuf> {
    let configured = compression.local_model.trim();
    if configured.is_empty() {
        return None;
    }
    if configured.ends_with(".gguf") || configured.contains('/') {
        return Some(root.join(configured));
    }
    Some(gguf_dir().join(format!("{configured}.gguf")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contexts count in cl100k_base unless a model is configured and enabled and, once it
    /// was tried, loaded: a configured model file that is missing counts in cl100k_base too.
    #[test]
    fn cl100k_counts_unless_a_model_does() {
        let store = CompressorStore::default();
        let mut compression = Compression::default();
        assert!(store.counts_in_cl100k(&compression));
        compression.local_model = "tiny".into();
        assert!(!store.counts_in_cl100k(&compression));
        compression.enabled = false;
        assert!(store.counts_in_cl100k(&compression));

        compression.enabled = true;
        compression.local_model = "missing.gguf".into();
        let root = tempfile::tempdir().unwrap();
        assert!(store.get(&compression, root.path()).is_err());
        assert!(store.counts_in_cl100k(&compression));
    }
}
