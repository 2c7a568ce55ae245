//! Model files for zblade: which embedding models can be fetched by name, and downloading
//! files safely — streamed to a temporary file with progress, retried with backoff, checked
//! against a sha256 when one is known, and moved into place only when complete, so an
//! interrupted download never leaves a half-written model where zblade would load it.
//!
//! Nothing here decides whether the network may be used: callers check the user's consent
//! (`privacy.allow_network`, or `--allow-network` for one command) before calling.
//!
//! ```
//! let model = zblade_models::known_embedding_model("all-minilm-l6-v2").unwrap();
//! assert_eq!(model.repo, "Qdrant/all-MiniLM-L6-v2-onnx");
//! let url = zblade_models::file_url("https://huggingface.co", model.repo, "model.onnx");
//! assert_eq!(url, "https://huggingface.co/Qdrant/all-MiniLM-L6-v2-onnx/resolve/main/model.onnx");
//! ```

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use zblade_core::{Error, Result};

/// Where model repositories are fetched from unless a mirror is given.
pub const DEFAULT_HUB: &str = "https://huggingface.co";

/// An embedding model that can be downloaded by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// The name users type, and the directory it is installed in.
    pub name: &'static str,
    /// The repository on the hub.
    pub repo: &'static str,
    /// (path in the repository, file name in the model directory).
    pub files: &'static [(&'static str, &'static str)],
    /// Approximate download size, shown before asking for consent.
    pub approx_bytes: u64,
}

const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// The embedding models zblade knows by name (384 dimensions, English, small).
pub const EMBEDDING_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "all-minilm-l6-v2",
        repo: "Qdrant/all-MiniLM-L6-v2-onnx",
        files: &[
            ("model.onnx", "model.onnx"),
            ("tokenizer.json", "tokenizer.json"),
            ("config.json", "config.json"),
            ("special_tokens_map.json", "special_tokens_map.json"),
            ("tokenizer_config.json", "tokenizer_config.json"),
        ],
        approx_bytes: 91_000_000,
    },
    KnownModel {
        // The same model with its weights quantized to int8 (the default: about twice as fast
        // on CPUs, recall within 0.01 on LoCoMo). `scripts/setup.sh` makes it offline from the
        // fp32 build; downloaded, it is Xenova's int8 export of the same weights.
        name: "all-minilm-l6-v2-int8",
        repo: "Xenova/all-MiniLM-L6-v2",
        files: &[
            ("onnx/model_quantized.onnx", "model.onnx"),
            ("tokenizer.json", "tokenizer.json"),
            ("config.json", "config.json"),
            ("special_tokens_map.json", "special_tokens_map.json"),
            ("tokenizer_config.json", "tokenizer_config.json"),
        ],
        approx_bytes: 23_000_000,
    },
    KnownModel {
        name: "bge-small-en-v1.5",
        repo: "Xenova/bge-small-en-v1.5",
        files: &[
            ("onnx/model.onnx", "model.onnx"),
            ("tokenizer.json", "tokenizer.json"),
            ("config.json", "config.json"),
            ("special_tokens_map.json", "special_tokens_map.json"),
            ("tokenizer_config.json", "tokenizer_config.json"),
        ],
        approx_bytes: 134_000_000,
    },
];

/// The known model called `name` (case-insensitive).
pub fn known_embedding_model(name: &str) -> Option<&'static KnownModel> {
    EMBEDDING_MODELS.iter().find(|m| m.name.eq_ignore_ascii_case(name))
}

/// A model name resolved to what to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSource {
    /// The directory name it is installed under (and the name settings use).
    pub name: String,
    /// The hub repository.
    pub repo: String,
    /// (path in the repository, file name in the model directory).
    pub files: Vec<(String, String)>,
}

/// What to fetch for `name`: a known model, or any `owner/repo` on the hub laid out as
/// fastembed's user-defined models are (`model.onnx` and the four tokenizer files at the top).
pub fn resolve(name: &str) -> Result<ModelSource> {
    if let Some(model) = known_embedding_model(name) {
        let files = model
            .files
            .iter()
            .map(|(r, l)| (r.to_string(), l.to_string()))
            .collect();
        return Ok(ModelSource {
            name: model.name.to_string(),
            repo: model.repo.to_string(),
            files,
        });
    }
    let valid = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    match name.split_once('/') {
        Some((owner, repo)) if valid(owner) && valid(repo) => {
            let mut files = vec![("model.onnx".to_string(), "model.onnx".to_string())];
            files.extend(TOKENIZER_FILES.iter().map(|f| (f.to_string(), f.to_string())));
            Ok(ModelSource {
                name: repo.to_lowercase(),
                repo: name.to_string(),
                files,
            })
        }
        _ => {
            let known: Vec<&str> = EMBEDDING_MODELS.iter().map(|m| m.name).collect();
            Err(Error::Usage(format!(
                "unknown model {name:?}: use one of {} or a hub repository as owner/name",
                known.join(", ")
            )))
        }
    }
}

/// The URL of `file` in `repo` on `hub` (the hub's `resolve/main` layout).
pub fn file_url(hub: &str, repo: &str, file: &str) -> String {
    format!("{}/{repo}/resolve/main/{file}", hub.trim_end_matches('/'))
}

/// Attempts per file before giving up; waits double from [`FIRST_BACKOFF`].
pub const ATTEMPTS: u32 = 4;
/// The wait after the first failed attempt.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// A blocking HTTP client with sensible timeouts.
pub fn client() -> Result<reqwest::blocking::Client> {
    reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30 * 60))
        .user_agent(concat!("zblade/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Network(e.to_string()))
}

/// Downloads `url` to `dest`: streamed into `dest` + `.part`, then renamed. Reports (bytes
/// so far, total if known). Network errors and 5xx answers are retried; 4xx answers are not.
/// When `sha256` is given, a mismatch deletes the download and fails. Returns the sha256.
pub fn download(
    client: &reqwest::blocking::Client,
    url: &str,
    dest: &Path,
    sha256: Option<&str>,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<String> {
    let mut wait = FIRST_BACKOFF;
    let mut attempt = 1;
    loop {
        match download_once(client, url, dest, progress) {
            Ok(digest) => {
                if let Some(expected) = sha256
                    && !digest.eq_ignore_ascii_case(expected)
                {
                    let _ = std::fs::remove_file(dest);
                    return Err(Error::Network(format!(
                        "{url}: sha256 is {digest}, expected {expected}; the download was deleted"
                    )));
                }
                return Ok(digest);
            }
            Err((e, retry)) if retry && attempt < ATTEMPTS => {
                let _ = e;
                std::thread::sleep(wait);
                wait *= 2;
                attempt += 1;
            }
            Err((e, _)) => return Err(e),
        }
    }
}

/// One attempt; the flag says whether trying again could help.
fn download_once(
    client: &reqwest::blocking::Client,
    url: &str,
    dest: &Path,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> std::result::Result<String, (Error, bool)> {
    let network = |e: reqwest::Error| (Error::Network(format!("{url}: {e}")), true);
    let mut response = client.get(url).send().map_err(network)?;
    let status = response.status();
    if !status.is_success() {
        let retry = status.is_server_error() || status.as_u16() == 429;
        return Err((Error::Network(format!("{url}: the server answered {status}")), retry));
    }
    let total = response.content_length();
    let part = partial_path(dest);
    let io = |e: std::io::Error| (Error::io(&part, e), false);
    let mut file = std::fs::File::create(&part).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut done = 0u64;
    progress(0, total);
    loop {
        let n = match response.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                drop(file);
                let _ = std::fs::remove_file(&part);
                let of_total = total.map(|t| format!(" of {t}")).unwrap_or_default();
                return Err((
                    Error::Network(format!(
                        "{url}: the connection closed after {done}{of_total} bytes ({e})"
                    )),
                    true,
                ));
            }
        };
        file.write_all(&buffer[..n]).map_err(io)?;
        hasher.update(&buffer[..n]);
        done += n as u64;
        progress(done, total);
    }
    if let Some(total) = total
        && done != total
    {
        let _ = std::fs::remove_file(&part);
        return Err((
            Error::Network(format!("{url}: the connection closed after {done} of {total} bytes")),
            true,
        ));
    }
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&part, dest).map_err(|e| (Error::io(dest, e), false))?;
    Ok(hex::encode(hasher.finalize()))
}

fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.as_os_str().to_os_string();
    name.push(".part");
    PathBuf::from(name)
}

/// Installs a model directory atomically: the files are fetched into a hidden staging
/// directory next to `target`, `check` is run on it (e.g. loading the model), and only then
/// is it renamed to `target`. A failed or interrupted install leaves `target` untouched.
pub fn install_dir(
    target: &Path,
    fetch: impl FnOnce(&Path) -> Result<()>,
    check: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let parent = target
        .parent()
        .ok_or_else(|| Error::Usage(format!("{}: no parent directory", target.display())))?;
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staging = parent.join(format!(".{name}.download-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    let result = fetch(&staging)
        .and_then(|()| check(&staging))
        .and_then(|()| std::fs::rename(&staging, target).map_err(|e| Error::io(target, e)));
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_repositories_and_bad_names_are_refused() {
        let ModelSource { name, repo, files } = resolve("BGE-small-en-v1.5").unwrap();
        assert_eq!(
            (name.as_str(), repo.as_str()),
            ("bge-small-en-v1.5", "Xenova/bge-small-en-v1.5")
        );
        assert_eq!(files[0], ("onnx/model.onnx".to_string(), "model.onnx".to_string()));
        let ModelSource { name, repo, files } = resolve("acme/Tiny-Embed").unwrap();
        assert_eq!((name.as_str(), repo.as_str()), ("tiny-embed", "acme/Tiny-Embed"));
        assert_eq!(files.len(), 5);
        for bad in ["nonsense", "../etc", "a/..", "a/b/c", "a b/c"] {
            let err = resolve(bad).unwrap_err().to_string();
            assert!(err.contains("all-minilm-l6-v2"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_failed_install_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("model");
        let err = install_dir(
            &target,
            |staging| std::fs::write(staging.join("model.onnx"), b"x").map_err(|e| Error::io(staging, e)),
            |_| Err(Error::Usage("does not load".into())),
        )
        .unwrap_err();
        assert!(err.to_string().contains("does not load"));
        assert!(!target.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "staging removed");
        install_dir(
            &target,
            |staging| std::fs::write(staging.join("model.onnx"), b"x").map_err(|e| Error::io(staging, e)),
            |_| Ok(()),
        )
        .unwrap();
        assert!(target.join("model.onnx").exists());
    }
}
