//! The one door to the network. Every action of the app that could send a byte off the machine
//! goes through here, and here it is refused, before any connection is opened, until the user
//! has allowed network use (first-run wizard or Settings). A project's own
//! `privacy.allow_network` does not open this door: the app asks the person using it.

use zblade_engine::{ModelDownload, Project};

use crate::config::AppConfig;
use crate::error::{AppError, AppResult, ErrorCode};

/// Where models download from: `$ZBLADE_MODEL_HUB`, else Hugging Face.
pub fn model_hub() -> String {
    std::env::var("ZBLADE_MODEL_HUB").unwrap_or_else(|_| "https://huggingface.co".to_string())
}

/// Refuses unless the user allowed network use.
pub fn require_consent(config: &AppConfig, what: &str) -> AppResult<()> {
    if config.allow_network {
        Ok(())
    } else {
        Err(AppError::new(
            ErrorCode::ConsentRequired,
            format!(
                "{what} needs the network, which you have not allowed. Allow network use in Settings → Privacy \
                 (nothing is sent before you do)."
            ),
        ))
    }
}

/// Downloads the embedding model `name` from `hub` and makes search use it, if the user
/// allowed network use.
pub fn download_embedding_model(
    config: &AppConfig,
    project: &mut Project,
    name: &str,
    hub: &str,
    progress: &mut dyn FnMut(&str, u64, Option<u64>),
) -> AppResult<ModelDownload> {
    require_consent(config, &format!("Downloading the model {name}"))?;
    Ok(project.download_model(name, hub, true, false, true, progress)?)
}
