//! The local compressor in a project: which GGUF model runs (`context.compression.local_model`),
//! managing model files (list, import, download with a sha256 check), and running the model's
//! jobs with an output cache, one retry, and the extractive compressor as the fallback — so a
//! missing, broken or confused model costs quality, never a failed command.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zblade_context::TokenCounter;
use zblade_core::{Error, Result, fsio};
use zblade_llm::{Compressor, Generation, LlmError, ModelInfo, Options, Request};

use crate::model_places::{check_name, gguf_dir};
use crate::project::Project;

/// An installed compressor model.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CompressorModel {
    /// The name settings use.
    pub name: String,
    /// The file.
    pub path: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Whether the compressor is configured to use it.
    pub active: bool,
    /// Why the file is not a usable GGUF model, if it is not.
    pub problem: Option<String>,
}

/// What `zblade compressor status` shows.
#[derive(Debug, Clone, Serialize)]
pub struct CompressorStatus {
    /// `context.compression.local_model` (empty: none).
    pub configured: String,
    /// The loaded model, when one is configured and loads.
    pub model: Option<ModelInfo>,
    /// Which compressor the jobs use: `llama:NAME` or `extractive`.
    pub compressor: String,
    /// Why the extractive compressor is used although a model is configured.
    pub notice: Option<String>,
}

/// What an import or download installed.
#[derive(Debug, Clone, Serialize)]
pub struct CompressorInstall {
    /// The installed model.
    #[serde(flatten)]
    pub model: CompressorModel,
    /// sha256 of the file.
    pub sha256: String,
    /// Whether the sha256 was checked against one the user gave.
    pub verified: bool,
}

/// The name a file would be installed under: its stem, made safe.
fn name_from(path_or_url: &str) -> String {
    let last = path_or_url
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(path_or_url)
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    let stem = last.strip_suffix(".gguf").unwrap_or(last);
    let safe: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    safe.trim_start_matches('.').to_string()
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| Error::io(path, e))?;
    Ok(hex::encode(hasher.finalize()))
}

/// Checks a candidate model file the way the compressor will use it: header, then a real load.
fn check_loads(path: &Path) -> Result<()> {
    Compressor::load(path, &Options::default())
        .map(drop)
        .map_err(|e| Error::Usage(e.to_string()))
}

/// An output the cache holds for one job input.
#[derive(Serialize, Deserialize)]
struct CachedOutput<T> {
    compressor: String,
    output: T,
}

/// Counts tokens with the compressor model's own tokenizer.
pub(crate) struct ModelTokens<'a>(pub(crate) &'a Compressor);

impl TokenCounter for ModelTokens<'_> {
    fn count(&self, text: &str) -> usize {
        self.0.count_tokens(text)
    }

    fn name(&self) -> &str {
        &self.0.info().name
    }
}

impl Project {
    /// Installed compressor models (`*.gguf` in [`gguf_dir`]).
    pub fn compressor_models(&self) -> Vec<CompressorModel> {
        let configured = self.compressor_model_path();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(gguf_dir())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
            .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
            .collect();
        if let Some(configured) = &configured
            && configured.is_file()
            && !paths.contains(configured)
        {
            paths.push(configured.clone());
        }
        paths.sort();
        paths
            .into_iter()
            .map(|path| CompressorModel {
                name: path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                size_bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                active: configured.as_ref() == Some(&path),
                problem: zblade_llm::gguf::read_header(&path).err().map(|e| e.to_string()),
                path: path.display().to_string(),
            })
            .collect()
    }

    /// The configured model file: an installed name, or a path (relative to the project root).
    fn compressor_model_path(&self) -> Option<PathBuf> {
        crate::compressor_store::model_path(&self.settings().context.compression, self.layout().root())
    }

    /// Copies the GGUF file `file` into [`gguf_dir`] as `name` (default: the file's stem),
    /// after checking that llama.cpp loads it. With `activate`, the compressor uses it.
    pub fn import_compressor_model(
        &mut self,
        file: &Path,
        name: Option<&str>,
        replace: bool,
        activate: bool,
    ) -> Result<CompressorInstall> {
        let name = name.map_or_else(|| name_from(&file.to_string_lossy()), str::to_string);
        check_name(&name)?;
        check_loads(file)?;
        let target = gguf_dir().join(format!("{name}.gguf"));
        if target.exists() && !replace {
            return Err(Error::Usage(format!(
                "a compressor model named {name} is already installed at {}; pass --force to replace it, \
                 or --name to install under another name",
                target.display()
            )));
        }
        std::fs::create_dir_all(gguf_dir()).map_err(|e| Error::io(gguf_dir(), e))?;
        // Copied next to the target, then renamed: a half-copied model is never installed.
        let partial = gguf_dir().join(format!(".{name}.gguf.import-{}", std::process::id()));
        let copied = std::fs::copy(file, &partial)
            .map_err(|e| Error::io(file, e))
            .and_then(|_| sha256_file(&partial))
            .and_then(|digest| {
                std::fs::rename(&partial, &target)
                    .map(|()| digest)
                    .map_err(|e| Error::io(&target, e))
            });
        let sha256 = match copied {
            Ok(digest) => digest,
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                return Err(e);
            }
        };
        self.installed(name, target, sha256, false, activate)
    }

    /// Downloads a GGUF model from `url` into [`gguf_dir`] with progress, checks its sha256
    /// when `sha256` is given, and that llama.cpp loads it; only then is it installed. Refused
    /// unless the settings allow network use or `allow_network` is given for this call.
    #[allow(clippy::too_many_arguments)]
    pub fn download_compressor_model(
        &mut self,
        url: &str,
        sha256: Option<&str>,
        name: Option<&str>,
        allow_network: bool,
        replace: bool,
        activate: bool,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<CompressorInstall> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::Usage(format!(
                "{url:?} is not an http(s) URL; use `zblade compressor import FILE` for a local file"
            )));
        }
        if let Some(expected) = sha256
            && (expected.len() != 64 || !expected.chars().all(|c| c.is_ascii_hexdigit()))
        {
            return Err(Error::Usage(format!(
                "--sha256 {expected:?} is not 64 hexadecimal digits"
            )));
        }
        if !(allow_network || self.settings().privacy.allow_network) {
            return Err(Error::ConsentRequired(format!(
                "downloading {url} needs the network, which this project does not allow yet: pass \
                 --allow-network for this download, or set privacy.allow_network to true in {}",
                self.layout().relative(&self.layout().settings())
            )));
        }
        let name = name.map_or_else(|| name_from(url), str::to_string);
        check_name(&name)?;
        let target = gguf_dir().join(format!("{name}.gguf"));
        if target.exists() && !replace {
            return Err(Error::Usage(format!(
                "a compressor model named {name} is already installed at {}; pass --force to replace it",
                target.display()
            )));
        }
        std::fs::create_dir_all(gguf_dir()).map_err(|e| Error::io(gguf_dir(), e))?;
        let staged = gguf_dir().join(format!(".{name}.gguf.download-{}", std::process::id()));
        let client = zblade_models::client()?;
        let digest = zblade_models::download(&client, url, &staged, sha256, progress)?;
        if let Err(e) = check_loads(&staged) {
            let _ = std::fs::remove_file(&staged);
            return Err(Error::Usage(format!("the file at {url} is not a usable model: {e}")));
        }
        std::fs::rename(&staged, &target).map_err(|e| Error::io(&target, e))?;
        self.installed(name, target, digest, sha256.is_some(), activate)
    }

    fn installed(
        &mut self,
        name: String,
        path: PathBuf,
        sha256: String,
        verified: bool,
        activate: bool,
    ) -> Result<CompressorInstall> {
        if activate {
            self.use_compressor_model(&name)?;
        }
        Ok(CompressorInstall {
            model: CompressorModel {
                size_bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                active: activate,
                problem: None,
                path: path.display().to_string(),
                name,
            },
            sha256,
            verified,
        })
    }

    /// Makes the compressor use the installed model `name`, or no model for `none`.
    pub fn use_compressor_model(&mut self, name: &str) -> Result<()> {
        let value = if name == "none" {
            String::new()
        } else {
            check_name(name)?;
            let path = gguf_dir().join(format!("{name}.gguf"));
            if !path.is_file() {
                let installed: Vec<String> = self.compressor_models().into_iter().map(|m| m.name).collect();
                return Err(Error::NotFound(format!(
                    "no compressor model named {name} (installed: {}); add one with `zblade compressor import` \
                     or `zblade compressor download`",
                    if installed.is_empty() {
                        "none".into()
                    } else {
                        installed.join(", ")
                    }
                )));
            }
            name.to_string()
        };
        self.parts.settings.context.compression.local_model = value;
        self.settings().save(&self.layout().settings())?;
        self.parts.compressor.reset();
        Ok(())
    }

    /// The loaded compressor, loading it on first use; `Err` says why there is none (not
    /// configured, disabled, or it failed to load — then the extractive compressor is used).
    pub(crate) fn local_compressor(&self) -> std::result::Result<&Compressor, String> {
        self.parts
            .compressor
            .get(&self.settings().context.compression, self.layout().root())
    }

    /// Why the configured model cannot be used, when one is configured and cannot (the jobs
    /// then run extractively); `None` when it loads or none is configured.
    pub(crate) fn compressor_notice(&self) -> Option<String> {
        match self.local_compressor() {
            Err(why) if !self.settings().context.compression.local_model.is_empty() => Some(why),
            _ => None,
        }
    }

    /// What the compressor is and whether its model loads.
    pub fn compressor_status(&self) -> CompressorStatus {
        let configured = self.settings().context.compression.local_model.clone();
        match self.local_compressor() {
            Ok(compressor) => CompressorStatus {
                configured,
                model: Some(compressor.info().clone()),
                compressor: format!("llama:{}", compressor.info().name),
                notice: None,
            },
            Err(_) => CompressorStatus {
                notice: self.compressor_notice(),
                configured,
                model: None,
                compressor: "extractive".into(),
            },
        }
    }

    /// Identifies the model for cache keys: outputs of one model are not reused for another.
    pub(crate) fn compressor_id(compressor: &Compressor) -> String {
        let info = compressor.info();
        format!("llama:{}:{}", info.name, info.size_bytes)
    }

    /// Where the output of `request` on `compressor` is cached: `.zblade/cache/llm/JOB/KEY.json`,
    /// the key a hash of the model and every input of the request.
    fn model_job_cache(&self, compressor: &Compressor, job: &str, request: &Request) -> PathBuf {
        let key = hex::encode(
            Sha256::new()
                .chain_update(Self::compressor_id(compressor))
                .chain_update([0])
                .chain_update(&request.system)
                .chain_update([0])
                .chain_update(serde_json::to_vec(&request.turns).unwrap_or_default())
                .chain_update(&request.user)
                .chain_update([0])
                .chain_update(request.grammar.as_deref().unwrap_or_default())
                .chain_update(request.max_tokens.to_le_bytes())
                .finalize(),
        );
        self.layout()
            .cache_dir()
            .join("llm")
            .join(job)
            .join(format!("{key}.json"))
    }

    /// The cached output of `request`, if any; a corrupt cache file counts as none.
    pub(crate) fn cached_model_output<T: DeserializeOwned>(
        &self,
        compressor: &Compressor,
        job: &str,
        request: &Request,
    ) -> Option<T> {
        let model = Self::compressor_id(compressor);
        std::fs::read(self.model_job_cache(compressor, job, request))
            .ok()
            .and_then(|b| serde_json::from_slice::<CachedOutput<T>>(&b).ok())
            .filter(|c| c.compressor == model)
            .map(|c| c.output)
    }

    /// Runs `request` on the model through the cache: a cached output for the same model and
    /// input is returned (with `true`) without running anything. An answer that fails `parse`,
    /// or a timeout, is retried once with sampling; then the error is returned for the caller
    /// to fall back on. A corrupt cache file is ignored and rewritten.
    pub(crate) fn run_model_job<T: Serialize + DeserializeOwned>(
        &self,
        compressor: &Compressor,
        job: &str,
        request: Request,
        parse: impl Fn(&Generation) -> std::result::Result<T, LlmError>,
    ) -> std::result::Result<(T, bool), LlmError> {
        if let Some(output) = self.cached_model_output(compressor, job, &request) {
            return Ok((output, true));
        }
        let path = self.model_job_cache(compressor, job, &request);
        let first = compressor.generate(request.clone()).and_then(|g| parse(&g));
        let output = match first {
            Ok(output) => output,
            Err(LlmError::BadOutput(_) | LlmError::TimedOut(_)) => {
                let retry = Request {
                    temperature: 0.7,
                    seed: 1,
                    ..request
                };
                compressor.generate(retry).and_then(|g| parse(&g))?
            }
            Err(e) => return Err(e),
        };
        let entry = CachedOutput {
            compressor: Self::compressor_id(compressor),
            output,
        };
        // A cache that cannot be written costs a re-run later, nothing else.
        if let Some(dir) = path.parent()
            && std::fs::create_dir_all(dir).is_ok()
        {
            let _ = fsio::write_atomic(&path, &serde_json::to_vec(&entry).expect("an output serialises"));
        }
        Ok((entry.output, false))
    }

    /// The timeout of one model job, from settings.
    pub(crate) fn job_timeout(&self) -> Duration {
        Duration::from_secs(self.settings().context.compression.timeout_secs.max(1))
    }
}

/// Shrinks over-budget material at assembly time with the model, within a time budget per
/// assembly; cached outputs are free, and anything else falls back to the extractive
/// compressor (and says so in the notices).
pub(crate) struct ModelShrinker<'a> {
    pub(crate) project: &'a Project,
    pub(crate) compressor: &'a Compressor,
    pub(crate) deadline: Instant,
    pub(crate) name: String,
    pub(crate) notices: std::sync::Mutex<Vec<String>>,
}

impl zblade_context::Compressor for ModelShrinker<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn shrink(&self, text: &str, max_tokens: usize, query: &str, counter: &dyn TokenCounter) -> String {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        let request = zblade_llm::jobs::shrink_request(
            text,
            query,
            max_tokens as u32,
            remaining.min(self.project.job_timeout()),
        );
        let cached = self.project.cached_model_output(self.compressor, "shrink", &request);
        let result = match cached {
            Some(text) => Ok(text),
            None if remaining.is_zero() => Err(format!(
                "the model's time for shrinking in one assembly ({} s, context.compression.shrink_budget_secs) \
                 ran out",
                self.project.settings().context.compression.shrink_budget_secs
            )),
            None => self
                .project
                .run_model_job(self.compressor, "shrink", request, zblade_llm::jobs::parse_text)
                .map(|(text, _)| text)
                .map_err(|e| format!("the model could not shrink some material ({e})")),
        };
        match result {
            // The model may overshoot; cut what it wrote to the budget.
            Ok(short) => zblade_context::extractive::truncate(&short, max_tokens, counter),
            Err(why) => {
                if let Ok(mut notices) = self.notices.lock() {
                    let notice = format!("{why}; the rest was shrunk extractively");
                    if !notices.contains(&notice) {
                        notices.push(notice);
                    }
                }
                zblade_context::extractive::shrink(text, max_tokens, query, counter)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Project;

    #[test]
    fn an_unusable_answer_is_retried_once_then_given_up_and_never_cached() {
        let dir = tempfile::tempdir().unwrap();
        let (project, _) = Project::init(dir.path()).unwrap();
        let compressor = Compressor::load(&zblade_llm::test_model(), &Options::default()).unwrap();
        let attempts = std::cell::Cell::new(0);
        let request = Request::new("Summarise.", "We chose SQLite.", 8);
        let refuse = |_: &Generation| -> std::result::Result<String, LlmError> {
            attempts.set(attempts.get() + 1);
            Err(LlmError::BadOutput("not what was asked".into()))
        };
        let err = project
            .run_model_job(&compressor, "test", request.clone(), refuse)
            .unwrap_err();
        assert!(matches!(err, LlmError::BadOutput(_)), "{err}");
        assert_eq!(attempts.get(), 2, "one retry");
        assert!(
            project
                .cached_model_output::<String>(&compressor, "test", &request)
                .is_none()
        );

        // A usable answer is cached: the second call runs nothing.
        let accept = |g: &Generation| {
            attempts.set(attempts.get() + 1);
            Ok(g.text.clone())
        };
        let (first, hit) = project
            .run_model_job(&compressor, "test", request.clone(), accept)
            .unwrap();
        assert!(!hit);
        let (again, hit) = project
            .run_model_job(&compressor, "test", request.clone(), accept)
            .unwrap();
        assert!(hit && again == first);
        assert_eq!(attempts.get(), 3);
    }

    #[test]
    fn names_come_from_files_and_urls_and_bad_ones_are_refused() {
        assert_eq!(
            name_from("/models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf"),
            "Qwen2.5-0.5B-Instruct-Q4_K_M"
        );
        assert_eq!(
            name_from("https://h.example/a/b/tiny model.gguf?download=1"),
            "tiny-model"
        );
        assert_eq!(name_from("../.hidden.gguf"), "hidden");
        for bad in ["", "../x", "a/b", ".x", "a b"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("qwen2.5-0.5b_q4").unwrap();
    }
}
