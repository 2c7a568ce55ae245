//! zblade-sync: the client side of the zblade sync server (API v0, see docs/SERVER.md).
//!
//! A blocking [`Client`] with a connect and a request timeout, retries with exponential
//! backoff for what is worth retrying (no connection, 5xx, 429 with its `Retry-After`), and
//! errors that say what to do: an unreachable server, a refused token and a refused body each
//! read differently. Callers decide whether the network may be used at all.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{RequestBuilder, Response};
use serde::Deserialize;
use zblade_core::{Error, Result};

/// The header carrying the sha256 of an artifact's bytes, both ways.
pub const HASH_HEADER: &str = "x-zblade-sha256";

/// The two kinds of record the server stores with content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A conversation artifact.
    Conversation,
    /// A moment artifact.
    Moment,
}

impl Kind {
    /// The collection in URLs.
    pub fn collection(self) -> &'static str {
        match self {
            Kind::Conversation => "conversations",
            Kind::Moment => "moments",
        }
    }
}

/// A record as lists show it (no content).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RecordMeta {
    /// Kind.
    pub kind: Kind,
    /// Id.
    pub id: String,
    /// Version on the server.
    pub version: i64,
    /// sha256 of the stored bytes.
    pub hash: String,
    /// Size of the stored bytes.
    pub size: i64,
    /// Title.
    pub title: String,
    /// Tags.
    pub tags: Vec<String>,
    /// When the artifact says it last changed.
    pub updated_at: String,
}

/// What a PUT did.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PutResult {
    /// `created`, `unchanged` or `updated`.
    pub status: String,
    /// Version now stored.
    pub version: i64,
    /// sha256 the server computed of the bytes it received.
    pub hash: String,
}

/// A keyword search hit.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct SearchHit {
    /// Kind.
    pub kind: Kind,
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Relevance (backend-specific scale).
    pub score: f64,
    /// Matched words in context, `[` `]` around them.
    pub snippet: String,
    /// When the artifact says it last changed (absent from servers before it was added).
    #[serde(default)]
    pub updated_at: String,
}

#[derive(Deserialize)]
struct Page<T> {
    items: Vec<T>,
    next: Option<String>,
}

/// How hard to try.
#[derive(Debug, Clone)]
pub struct Retry {
    /// Attempts in all (1 = no retry).
    pub attempts: u32,
    /// Wait before the first retry; doubled each time.
    pub first_wait: Duration,
    /// Longest single wait.
    pub max_wait: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 5,
            first_wait: Duration::from_millis(200),
            max_wait: Duration::from_secs(5),
        }
    }
}

/// A client of one server, as one user.
pub struct Client {
    base: String,
    token: String,
    http: reqwest::blocking::Client,
    retry: Retry,
}

/// The error body the server sends.
#[derive(Deserialize)]
struct ServerError {
    error: String,
    reason: String,
}

impl Client {
    /// A client of the server at `url` (`http://host:port`) with `token`.
    pub fn new(url: &str, token: &str) -> Result<Client> {
        let base = url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Usage(format!(
                "{url:?} is not a server URL; it should look like http://127.0.0.1:7400"
            )));
        }
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("zblade/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Network(e.to_string()))?;
        Ok(Client {
            base,
            token: token.to_string(),
            http,
            retry: Retry::default(),
        })
    }

    /// Replaces the retry policy.
    pub fn with_retry(mut self, retry: Retry) -> Client {
        self.retry = retry;
        self
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn api(&self, path: &str) -> String {
        format!("{}/api/v0{path}", self.base)
    }

    /// Sends what `build` makes, retrying what is worth retrying; any 2xx or 404 is returned
    /// (the caller knows what a 404 means), other statuses become errors.
    fn send(&self, what: &str, build: impl Fn() -> RequestBuilder) -> Result<Response> {
        let mut wait = self.retry.first_wait;
        let mut attempt = 1;
        loop {
            let outcome = build().bearer_auth(&self.token).send();
            let retry_in = match &outcome {
                Err(e) if e.is_connect() || e.is_timeout() || e.is_request() => Some(wait),
                Ok(r) if r.status() == StatusCode::TOO_MANY_REQUESTS => Some(
                    r.headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .map(Duration::from_secs)
                        .unwrap_or(wait)
                        .min(self.retry.max_wait),
                ),
                Ok(r) if r.status().is_server_error() => Some(wait),
                _ => None,
            };
            match retry_in {
                Some(pause) if attempt < self.retry.attempts => {
                    std::thread::sleep(pause);
                    wait = (wait * 2).min(self.retry.max_wait);
                    attempt += 1;
                }
                _ => return self.check(what, outcome),
            }
        }
    }

    fn check(&self, what: &str, outcome: reqwest::Result<Response>) -> Result<Response> {
        let response = outcome.map_err(|e| {
            if e.is_connect() {
                Error::Network(format!(
                    "cannot reach the zblade server at {} ({}); is it running (`zblade-server serve`) and is the URL right?",
                    self.base,
                    root_cause(&e)
                ))
            } else if e.is_timeout() {
                Error::Network(format!("the zblade server at {} did not answer in time ({what})", self.base))
            } else {
                Error::Network(format!("{what}: {}", root_cause(&e)))
            }
        })?;
        let status = response.status();
        if status.is_success() || status == StatusCode::NOT_FOUND {
            return Ok(response);
        }
        let body = response.text().unwrap_or_default();
        let reason = serde_json::from_str::<ServerError>(&body)
            .map(|e| format!("{} ({})", e.reason, e.error))
            .unwrap_or(body);
        Err(match status {
            StatusCode::UNAUTHORIZED => Error::Usage(format!(
                "the zblade server at {} refused the token: {reason}; ask its admin for one (`zblade-server user add`)",
                self.base
            )),
            s if s.is_client_error() => Error::Usage(format!("{what}: the server refused it ({s}): {reason}")),
            s => Error::Network(format!("{what}: the server failed ({s}): {reason}")),
        })
    }

    fn json<T: for<'de> Deserialize<'de>>(what: &str, response: Response) -> Result<T> {
        let bytes = response.bytes().map_err(|e| Error::Network(format!("{what}: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Network(format!("{what}: unexpected answer: {e}")))
    }

    /// The name of the token's user (a cheap check that the URL and token work).
    pub fn whoami(&self) -> Result<String> {
        let response = self.send("checking the token", || self.http.get(self.api("/me")))?;
        let value: serde_json::Value = Self::json("checking the token", response)?;
        Ok(value["user"].as_str().unwrap_or_default().to_string())
    }

    /// Creates the project (or renames it).
    pub fn put_project(&self, project: &str, name: &str) -> Result<()> {
        let body = serde_json::json!({ "name": name }).to_string();
        let what = format!("creating project {project}");
        let response = self.send(&what, || {
            self.http
                .put(self.api(&format!("/projects/{project}")))
                .header("content-type", "application/json")
                .body(body.clone())
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::Usage(format!(
                "{what}: the server has no such route; is it a zblade server?"
            )));
        }
        Ok(())
    }

    /// Stores an artifact's bytes; the server checks them against their sha256 on arrival.
    pub fn put_record(&self, project: &str, kind: Kind, id: &str, bytes: &[u8]) -> Result<PutResult> {
        let hash = zblade_core::sha256_hex(bytes);
        let what = format!("uploading {id}");
        let response = self.send(&what, || {
            self.http
                .put(self.api(&format!("/projects/{project}/{}/{id}", kind.collection())))
                .header("content-type", "application/json")
                .header(HASH_HEADER, hash.as_str())
                .body(bytes.to_vec())
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!("{what}: no project {project} on the server")));
        }
        let result: PutResult = Self::json(&what, response)?;
        if result.hash != hash {
            return Err(Error::Network(format!(
                "{what}: the server stored sha256 {}, we sent {hash}",
                result.hash
            )));
        }
        Ok(result)
    }

    /// An artifact's bytes, checked against the hash the server sends with them; `None` when
    /// the server has no such record.
    pub fn get_record(&self, project: &str, kind: Kind, id: &str) -> Result<Option<Vec<u8>>> {
        let what = format!("downloading {id}");
        let response = self.send(&what, || {
            self.http
                .get(self.api(&format!("/projects/{project}/{}/{id}", kind.collection())))
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let claimed = response
            .headers()
            .get(HASH_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = response
            .bytes()
            .map_err(|e| Error::Network(format!("{what}: {e}")))?
            .to_vec();
        let hash = zblade_core::sha256_hex(&bytes);
        if claimed.as_deref() != Some(hash.as_str()) {
            return Err(Error::Network(format!(
                "{what}: the bytes received hash to {hash}, the server says {}",
                claimed.unwrap_or_else(|| "nothing".into())
            )));
        }
        Ok(Some(bytes))
    }

    /// Every record of `kind` in the project, page by page; empty when the project does not
    /// exist on the server.
    pub fn list_records(&self, project: &str, kind: Kind) -> Result<Vec<RecordMeta>> {
        let mut all = Vec::new();
        let mut after = String::new();
        loop {
            let what = format!("listing {} of {project}", kind.collection());
            let response = self.send(&what, || {
                self.http
                    .get(self.api(&format!("/projects/{project}/{}", kind.collection())))
                    .query(&[("limit", "1000"), ("after", after.as_str())])
            })?;
            if response.status() == StatusCode::NOT_FOUND {
                return Ok(all);
            }
            let page: Page<RecordMeta> = Self::json(&what, response)?;
            all.extend(page.items);
            match page.next {
                Some(next) => after = next,
                None => return Ok(all),
            }
        }
    }

    /// Deletes a record; false when there was none.
    pub fn delete_record(&self, project: &str, kind: Kind, id: &str) -> Result<bool> {
        let response = self.send(&format!("deleting {id}"), || {
            self.http
                .delete(self.api(&format!("/projects/{project}/{}/{id}", kind.collection())))
        })?;
        Ok(response.status() != StatusCode::NOT_FOUND)
    }

    /// Keyword search on the server.
    pub fn search(&self, project: &str, query: &str, kind: Option<Kind>, limit: usize) -> Result<Vec<SearchHit>> {
        let what = format!("searching {project}");
        let kind = match kind {
            Some(Kind::Conversation) => "conversation",
            Some(Kind::Moment) => "moment",
            None => "",
        };
        let limit = limit.to_string();
        let response = self.send(&what, || {
            self.http.get(self.api(&format!("/projects/{project}/search"))).query(&[
                ("q", query),
                ("kind", kind),
                ("limit", limit.as_str()),
            ])
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!("{what}: no project {project} on the server")));
        }
        #[derive(Deserialize)]
        struct Hits {
            hits: Vec<SearchHit>,
        }
        Ok(Self::json::<Hits>(&what, response)?.hits)
    }

    /// Stores a metadata-only record (title, tags, counts; never content).
    pub fn put_metadata(&self, project: &str, metadata: &Metadata) -> Result<()> {
        let body = serde_json::to_string(metadata).expect("metadata serializes");
        let what = format!("sending the metadata of {}", metadata.id);
        let response = self.send(&what, || {
            self.http
                .put(self.api(&format!("/projects/{project}/metadata/{}", metadata.id)))
                .header("content-type", "application/json")
                .body(body.clone())
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!("{what}: no project {project} on the server")));
        }
        Ok(())
    }
}

/// What local mode may send with `sync_metadata` on: no content, only what lists show.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Metadata {
    /// Conversation or moment.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Messages (conversations).
    pub message_count: usize,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
}

/// The innermost error's text (reqwest wraps the useful part, like "Connection refused").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Tokens for sync servers, kept per user outside every project (a project folder may be
/// committed to git; a token must not be): `$ZBLADE_CONFIG_DIR/credentials.json`, else
/// `$XDG_CONFIG_HOME/zblade/…`, else `~/.config/zblade/…`, readable by the user only.
pub mod credentials {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use zblade_core::{Error, Result, fsio};

    /// The credentials file.
    pub fn path() -> PathBuf {
        let dir = match (
            std::env::var_os("ZBLADE_CONFIG_DIR"),
            std::env::var_os("XDG_CONFIG_HOME"),
            std::env::var_os("HOME"),
        ) {
            (Some(dir), _, _) => PathBuf::from(dir),
            (None, Some(xdg), _) => PathBuf::from(xdg).join("zblade"),
            (None, None, Some(home)) => PathBuf::from(home).join(".config").join("zblade"),
            (None, None, None) => PathBuf::from(".zblade-config"),
        };
        dir.join("credentials.json")
    }

    fn read() -> Result<BTreeMap<String, String>> {
        let path = path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                Error::Usage(format!(
                    "{}: {e}; fix or delete it (it only holds sync server tokens)",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// The token saved for `server` (`ZBLADE_TOKEN` wins when set).
    pub fn token(server: &str) -> Result<Option<String>> {
        if let Ok(token) = std::env::var("ZBLADE_TOKEN")
            && !token.is_empty()
        {
            return Ok(Some(token));
        }
        Ok(read()?.get(server.trim_end_matches('/')).cloned())
    }

    /// Saves the token for `server`, atomically, readable by the user only.
    pub fn save(server: &str, token: &str) -> Result<()> {
        let path = path();
        let mut all = read()?;
        all.insert(server.trim_end_matches('/').to_string(), token.to_string());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let bytes = serde_json::to_vec_pretty(&all).expect("a map of strings serializes");
        fsio::write_atomic_private(&path, &bytes)
    }
}
