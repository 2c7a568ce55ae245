//! zblade-sync: the client side of the zblade sync server (API v0, see docs/SERVER.md).
//!
//! A blocking [`Client`] with a connect and a request timeout, retries with exponential
//! backoff for what is worth retrying (no connection, 5xx, 429 with its `Retry-After`), and
//! errors that say what to do: an unreachable server, a refused token and a refused body each
//! read differently. Callers decide whether the network may be used at all.
//!
//! Nothing a server sends is trusted ([`check`]): listed ids follow the local id rules, hashes
//! are checked on the bytes received, records must parse and carry the id asked for, listings
//! must advance, every answer is size-capped, and plain `http://` is refused for servers that
//! are not on this machine unless the caller opts in ([`Transport::AllowPlainHttp`]).

pub mod check;

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{RequestBuilder, Response};
use serde::Deserialize;
use zblade_core::{Error, Result};

pub use check::AnswerLimits;

/// The header carrying the sha256 of an artifact's bytes, both ways.
pub const HASH_HEADER: &str = "x-zblade-sha256";

pub use zblade_core::wire::{
    EmbeddingModel, Invitation, Kind, Member, PassageAnswer, PassageHit, PassageQuery, PieceVector, ProjectEntry,
    PutResult, PutStatus, QueryVector, RecordMeta, Role, SearchHit, VectorsResult, VectorsUpload,
};
use zblade_core::wire::{ErrorBody, Page, SearchAnswer};

/// The header a record comes back with naming its author.
pub const AUTHOR_HEADER: &str = "x-zblade-author";

/// A user name as the server sent it: cleaned, bounded; `None` when empty.
fn user_name(name: Option<&str>) -> Option<String> {
    name.map(|n| check::clean(n, 128)).filter(|n| !n.is_empty())
}

/// Listed text fields with escape sequences removed and lengths bounded (the id, kind and
/// hash are checked separately and refused when wrong).
fn cleaned(meta: RecordMeta) -> RecordMeta {
    RecordMeta {
        title: check::clean(&meta.title, 500),
        tags: meta.tags.iter().take(100).map(|t| check::clean(t, 100)).collect(),
        updated_at: check::clean(&meta.updated_at, 64),
        author: user_name(meta.author.as_deref()),
        ..meta
    }
}

/// Refuses what is not an http(s) URL, and plain http to another machine unless allowed; says
/// whether the URL is plain http to another machine.
fn check_url(base: &str, transport: Transport) -> Result<bool> {
    let parsed = reqwest::Url::parse(base)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
    let Some(url) = parsed else {
        return Err(Error::Usage(format!(
            "{base:?} is not a server URL; it should look like https://zblade.example.com or http://127.0.0.1:7400"
        )));
    };
    let plain_http_elsewhere = url.scheme() == "http" && !check::is_loopback(&url);
    if plain_http_elsewhere && transport != Transport::AllowPlainHttp {
        return Err(Error::Usage(format!(
            "{base} is plain http to another machine: the token and all memory would cross the network readable (and changeable) by anyone on the path. \
             Use https:// (docs/SERVER.md shows TLS termination in front of zblade-server), or pass --allow-insecure-http if this network is yours alone"
        )));
    }
    Ok(plain_http_elsewhere)
}

/// What a conditional delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// The record is gone.
    Yes,
    /// The server had no such record.
    NotFound,
    /// The record changed since (another hash); the server kept it.
    Changed,
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

/// Whether plain `http://` may be used for a server on another machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// `https://`, or `http://` to this machine only (loopback): the default.
    #[default]
    TlsOrLoopback,
    /// `http://` to another machine too: the token and every byte of memory cross the network
    /// readable and changeable by anyone on the path. Only on the user's explicit request.
    AllowPlainHttp,
}

impl Transport {
    /// The transport for a user's yes or no to plain http (`--allow-insecure-http`, the app's
    /// box, `storage.allow_insecure_http`).
    pub fn allowing_plain_http(allow: bool) -> Transport {
        if allow {
            Transport::AllowPlainHttp
        } else {
            Transport::TlsOrLoopback
        }
    }
}

/// A client of one server, as one user.
pub struct Client {
    base: String,
    token: String,
    http: reqwest::blocking::Client,
    retry: Retry,
    limits: AnswerLimits,
    /// Plain http to another machine (allowed by the caller); decided once, from the URL.
    plain_http_elsewhere: bool,
}

impl Client {
    /// A client of the server at `url` (`https://host`, or `http://127.0.0.1:7400` on this
    /// machine) with `token`; plain http to another machine is refused ([`Transport`]).
    pub fn new(url: &str, token: &str) -> Result<Client> {
        Client::with_transport(url, token, Transport::TlsOrLoopback)
    }

    /// [`Client::new`] with an explicit choice about plain http.
    pub fn with_transport(url: &str, token: &str, transport: Transport) -> Result<Client> {
        let base = url.trim_end_matches('/').to_string();
        let plain_http_elsewhere = check_url(&base, transport)?;
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("zblade/", env!("CARGO_PKG_VERSION")))
            // A redirect could carry the token to another host, or from https down to http.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Network(e.to_string()))?;
        Ok(Client {
            base,
            token: token.to_string(),
            http,
            retry: Retry::default(),
            limits: AnswerLimits::default(),
            plain_http_elsewhere,
        })
    }

    /// Replaces the caps on what the server may send.
    pub fn with_limits(mut self, limits: AnswerLimits) -> Client {
        self.limits = limits;
        self
    }

    /// Replaces the retry policy.
    pub fn with_retry(mut self, retry: Retry) -> Client {
        self.retry = retry;
        self
    }

    /// The token this client sends (empty when it sends none).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// Whether this client talks plain http to another machine (allowed with
    /// [`Transport::AllowPlainHttp`] only); callers warn the user.
    pub fn is_plain_http_to_another_machine(&self) -> bool {
        self.plain_http_elsewhere
    }

    fn api(&self, path: &str) -> String {
        format!("{}/api/v0{path}", self.base)
    }

    /// Sends what `build` makes, retrying what is worth retrying; any 2xx, 404 or 412 is
    /// returned (the caller knows what they mean), other statuses become errors.
    fn send(&self, what: &str, build: impl Fn() -> RequestBuilder) -> Result<Response> {
        self.send_allowing(what, None, build)
    }

    /// [`Client::send`] that also returns answers with status `allowed` to the caller.
    fn send_allowing(
        &self,
        what: &str,
        allowed: Option<StatusCode>,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<Response> {
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
                _ => return self.check(what, outcome, allowed),
            }
        }
    }

    fn check(&self, what: &str, outcome: reqwest::Result<Response>, allowed: Option<StatusCode>) -> Result<Response> {
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
        // 412 answers only a conditional request (`delete_record_if`), which reads it.
        if status.is_success()
            || status == StatusCode::NOT_FOUND
            || status == StatusCode::PRECONDITION_FAILED
            || Some(status) == allowed
        {
            return Ok(response);
        }
        let reason = self.reason(what, response, true);
        Err(match status {
            StatusCode::UNAUTHORIZED => Error::Usage(format!(
                "the zblade server at {} refused the token: {reason}; ask its admin for one (`zblade-server user add`)",
                self.base
            )),
            s if s.is_client_error() => Error::Usage(format!("{what}: the server refused it ({s}): {reason}")),
            s => Error::Network(format!("{what}: the server failed ({s}): {reason}")),
        })
    }

    /// Why the server refused a request, from its error body: read at most
    /// [`AnswerLimits::small_bytes`] of it, and cleaned of escape sequences before it reaches a
    /// terminal; with `code`, the error code follows the reason.
    fn reason(&self, what: &str, response: Response, code: bool) -> String {
        let body = check::read_capped(what, response, self.limits.small_bytes).unwrap_or_default();
        let body = String::from_utf8_lossy(&body);
        let reason = match serde_json::from_str::<ErrorBody>(&body) {
            Ok(e) if code => format!("{} ({})", e.reason, e.error),
            Ok(e) => e.reason,
            Err(_) if code => body.into_owned(),
            Err(_) => "not found".into(),
        };
        check::clean(&reason, 300)
    }

    /// A JSON answer of at most `cap` bytes.
    fn json<T: for<'de> Deserialize<'de>>(what: &str, response: Response, cap: u64) -> Result<T> {
        let bytes = check::read_capped(what, response, cap)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Untrusted(format!("{what}: unexpected answer: {e}")))
    }

    /// The name of the token's user (a cheap check that the URL and token work).
    pub fn whoami(&self) -> Result<String> {
        let response = self.send("checking the token", || self.http.get(self.api("/me")))?;
        let value: serde_json::Value = Self::json("checking the token", response, self.limits.small_bytes)?;
        Ok(check::clean(value["user"].as_str().unwrap_or_default(), 200))
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
        check::record_id(&format!("uploading {id}"), kind, id)?;
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
        let result: PutResult = Self::json(&what, response, self.limits.small_bytes)?;
        if result.hash != hash {
            return Err(Error::Network(format!(
                "{what}: the server stored sha256 {}, we sent {hash}",
                result.hash
            )));
        }
        Ok(result)
    }

    /// An artifact's bytes, checked before they are returned: the id asked for follows the id
    /// rules, the bytes (at most [`AnswerLimits::record_bytes`]) hash to what the server says,
    /// and they parse as a valid `kind` artifact carrying that id. `None` when the server has
    /// no such record.
    pub fn get_record(&self, project: &str, kind: Kind, id: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.fetch_record(project, kind, id, None)?.map(|(bytes, _)| bytes))
    }

    /// [`Client::get_record`] with the record's author as the server knows them (a shared
    /// project's member; the name is the server's word, cleaned, not the artifact's).
    pub fn get_record_authored(
        &self,
        project: &str,
        kind: Kind,
        id: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>> {
        self.fetch_record(project, kind, id, None)
    }

    /// [`Client::get_record`] for a record a listing named with `listed_hash`: the bytes must
    /// hash to it too (the listing and the download must agree).
    pub fn get_listed_record(&self, project: &str, kind: Kind, id: &str, listed_hash: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .fetch_record(project, kind, id, Some(listed_hash))?
            .map(|(bytes, _)| bytes))
    }

    fn fetch_record(
        &self,
        project: &str,
        kind: Kind,
        id: &str,
        listed_hash: Option<&str>,
    ) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let what = format!("downloading {id}");
        check::record_id(&what, kind, id)?;
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
        let author = user_name(response.headers().get(AUTHOR_HEADER).and_then(|v| v.to_str().ok()));
        let bytes = check::read_capped(&what, response, self.limits.record_bytes)?;
        let hash = zblade_core::sha256_hex(&bytes);
        if claimed.as_deref() != Some(hash.as_str()) {
            return Err(Error::Untrusted(format!(
                "{what}: the bytes received hash to {hash}, the server says {}",
                claimed.map_or_else(|| "nothing".into(), |c| check::clean(&c, 80))
            )));
        }
        if let Some(listed) = listed_hash
            && listed != hash
        {
            return Err(Error::Untrusted(format!(
                "{what}: the bytes received hash to {hash}, the server listed {listed}"
            )));
        }
        check::record_bytes(&self.base, kind, id, &bytes)?;
        Ok(Some((bytes, author)))
    }

    /// Every record of `kind` in the project, page by page; empty when the project does not
    /// exist on the server. Each listed record is checked (id rules and prefix, kind, sha256,
    /// size), ids must come in increasing order past the last page's, each page's `next` must
    /// be its last id (so a listing always advances), and at most
    /// [`AnswerLimits::listed_records`] are accepted.
    pub fn list_records(&self, project: &str, kind: Kind) -> Result<Vec<RecordMeta>> {
        let mut all: Vec<RecordMeta> = Vec::new();
        let mut after = String::new();
        let what = format!("listing {} of {project}", kind.collection());
        loop {
            let response = self.send(&what, || {
                self.http
                    .get(self.api(&format!("/projects/{project}/{}", kind.collection())))
                    .query(&[("limit", "1000"), ("after", after.as_str())])
            })?;
            if response.status() == StatusCode::NOT_FOUND {
                return Ok(all);
            }
            let page: Page<RecordMeta> = Self::json(&what, response, self.limits.page_bytes)?;
            for record in &page.items {
                check::record_id(&what, kind, &record.id)?;
                if record.kind != kind {
                    return Err(Error::Untrusted(format!(
                        "{what}: the server listed {} as a {:?}",
                        record.id, record.kind
                    )));
                }
                check::sha256(&format!("{what}: {}", record.id), &record.hash)?;
                if record.size < 0 || record.size as u64 > self.limits.record_bytes {
                    return Err(Error::Untrusted(format!(
                        "{what}: {} is listed with size {}",
                        record.id, record.size
                    )));
                }
                if record.id.as_str() <= after.as_str() {
                    return Err(Error::Untrusted(format!(
                        "{what}: {} comes after {after:?} in the listing; ids must increase (a listing that does not advance never ends)",
                        record.id
                    )));
                }
                after = record.id.clone();
            }
            if all.len() + page.items.len() > self.limits.listed_records {
                return Err(Error::Untrusted(format!(
                    "{what}: the server lists more than {} records",
                    self.limits.listed_records
                )));
            }
            all.extend(page.items.into_iter().map(cleaned));
            match page.next {
                None => return Ok(all),
                Some(next) if next == after && !next.is_empty() => {}
                Some(next) => {
                    return Err(Error::Untrusted(format!(
                        "{what}: the next page is to start after {:?}, but this page ended at {after:?}",
                        check::clean(&next, 140)
                    )));
                }
            }
        }
    }

    /// Deletes a record only while its stored bytes still hash to `hash` (the server keeps a
    /// version written since and answers 412).
    pub fn delete_record_if(&self, project: &str, kind: Kind, id: &str, hash: &str) -> Result<Deleted> {
        let what = format!("deleting {id}");
        check::record_id(&what, kind, id)?;
        let outcome = self.send(&what, || {
            self.http
                .delete(self.api(&format!("/projects/{project}/{}/{id}", kind.collection())))
                .header(HASH_HEADER, hash)
        });
        Ok(match outcome?.status() {
            StatusCode::NOT_FOUND => Deleted::NotFound,
            StatusCode::PRECONDITION_FAILED => Deleted::Changed,
            _ => Deleted::Yes,
        })
    }

    /// Keyword search on the server.
    pub fn search(&self, project: &str, query: &str, kind: Option<Kind>, limit: usize) -> Result<Vec<SearchHit>> {
        let what = format!("searching {project}");
        let kind = match kind {
            Some(Kind::Conversation) => "conversation",
            Some(Kind::Moment) => "moment",
            None => "",
        };
        let limit_text = limit.to_string();
        let response = self.send(&what, || {
            self.http.get(self.api(&format!("/projects/{project}/search"))).query(&[
                ("q", query),
                ("kind", kind),
                ("limit", limit_text.as_str()),
            ])
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!("{what}: no project {project} on the server")));
        }
        let hits = Self::json::<SearchAnswer>(&what, response, self.limits.page_bytes)?.hits;
        // A hit names a record the caller may open next: the same id rules as a listing.
        let mut checked = Vec::with_capacity(hits.len());
        for hit in hits.into_iter().take(limit) {
            check::record_id(&what, hit.kind, &hit.id)?;
            if !hit.score.is_finite() {
                return Err(Error::Untrusted(format!("{what}: {} has score {}", hit.id, hit.score)));
            }
            checked.push(SearchHit {
                title: check::clean(&hit.title, 500),
                snippet: check::clean(&hit.snippet, 2_000),
                updated_at: check::clean(&hit.updated_at, 64),
                author: user_name(hit.author.as_deref()),
                ..hit
            });
        }
        Ok(checked)
    }

    /// Stores the vectors of a record the server has (`upload.record_hash`: the version they
    /// were made from). `None` when they are obsolete: the record changed since (its newer
    /// vectors follow) or is gone. A model other than the project's is refused with the fix.
    pub fn put_vectors(
        &self,
        project: &str,
        kind: Kind,
        id: &str,
        upload: &VectorsUpload,
    ) -> Result<Option<VectorsResult>> {
        check::record_id(&format!("uploading the vectors of {id}"), kind, id)?;
        let what = format!("uploading the vectors of {id}");
        let body = serde_json::to_vec(upload).map_err(|e| Error::Usage(format!("{what}: {e}")))?;
        let response = self.send_allowing(&what, Some(StatusCode::CONFLICT), || {
            self.http
                .put(self.api(&format!("/projects/{project}/vectors/{}/{id}", kind.collection())))
                .header("content-type", "application/json")
                .body(body.clone())
        })?;
        match response.status() {
            StatusCode::NOT_FOUND => return Ok(None),
            StatusCode::CONFLICT => {
                let body = check::read_capped(&what, response, self.limits.small_bytes)?;
                return match serde_json::from_slice::<ErrorBody>(&body) {
                    Ok(e) if e.error == "stale" => Ok(None),
                    Ok(e) => Err(Error::Usage(format!("{what}: {}", check::clean(&e.reason, 600)))),
                    Err(_) => Err(Error::Usage(format!("{what}: the server refused it (409)"))),
                };
            }
            _ => {}
        }
        let result: VectorsResult = Self::json(&what, response, self.limits.small_bytes)?;
        if result.model != upload.model {
            return Err(Error::Untrusted(format!(
                "{what}: the server says the project's model is {}, the upload was {}",
                result.model.id, upload.model.id
            )));
        }
        Ok(Some(result))
    }

    /// Passage search (messages and moments): hybrid when `query.vector` is given and the
    /// project has vectors of that model, keyword otherwise. Every hit is checked: ids follow
    /// the id rules, scores are finite, short fields are cleaned; texts are memory, quoted as
    /// data wherever they are used.
    pub fn search_passages(&self, project: &str, query: &PassageQuery) -> Result<PassageAnswer> {
        let what = format!("searching {project}");
        let body = serde_json::to_vec(query).map_err(|e| Error::Usage(format!("{what}: {e}")))?;
        let response = self.send(&what, || {
            self.http
                .post(self.api(&format!("/projects/{project}/search")))
                .header("content-type", "application/json")
                .body(body.clone())
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!("{what}: no project {project} on the server")));
        }
        let answer: PassageAnswer = Self::json(&what, response, self.limits.page_bytes)?;
        if answer.mode != "hybrid" && answer.mode != "keyword" {
            return Err(Error::Untrusted(format!(
                "{what}: unknown search mode {:?}",
                check::clean(&answer.mode, 32)
            )));
        }
        if answer.nearest.is_some_and(|n| !n.is_finite()) {
            return Err(Error::Untrusted(format!(
                "{what}: the nearest similarity is not a number"
            )));
        }
        let mut hits = Vec::with_capacity(answer.hits.len());
        for hit in answer.hits.into_iter().take(query.limit) {
            check::record_id(&what, hit.kind, &hit.record)?;
            match hit.kind {
                Kind::Conversation => zblade_core::ids::check_id(&hit.message, None)
                    .map_err(|why| Error::Untrusted(format!("{what}: message id {why}")))?,
                Kind::Moment if hit.message.is_empty() => {}
                Kind::Moment => {
                    return Err(Error::Untrusted(format!(
                        "{what}: moment {} names a message",
                        hit.record
                    )));
                }
            }
            if !hit.score.is_finite() {
                return Err(Error::Untrusted(format!(
                    "{what}: {} has score {}",
                    hit.record, hit.score
                )));
            }
            hits.push(PassageHit {
                title: check::clean(&hit.title, 500),
                label: check::clean(&hit.label, 64),
                time: check::clean(&hit.time, 64),
                author: user_name(hit.author.as_deref()),
                ..hit
            });
        }
        Ok(PassageAnswer { hits, ..answer })
    }

    /// One project as the server describes it (its model included); `None` when there is none
    /// the token may see.
    pub fn project(&self, project: &str) -> Result<Option<ProjectEntry>> {
        let what = format!("reading project {project}");
        let response = self.send(&what, || self.http.get(self.api(&format!("/projects/{project}"))))?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let entry: ProjectEntry = Self::json(&what, response, self.limits.small_bytes)?;
        check::project_id(&what, &entry.id)?;
        // The model's id becomes a setting and a folder name here: the models folder's rule.
        if let Some(model) = &entry.embedding {
            zblade_core::ids::check_id(&model.id.replace('.', "_"), None)
                .map_err(|why| Error::Untrusted(format!("{what}: embedding model id {why}")))?;
            if model.id.starts_with('.') {
                return Err(Error::Untrusted(format!("{what}: embedding model id starts with '.'")));
            }
        }
        Ok(Some(ProjectEntry {
            name: check::clean(&entry.name, 256),
            owner: check::clean(&entry.owner, 128),
            created_at: check::clean(&entry.created_at, 64),
            ..entry
        }))
    }

    /// The projects this user may open: their own and those shared with them (accepted).
    pub fn projects(&self) -> Result<Vec<ProjectEntry>> {
        #[derive(Deserialize)]
        struct Answer {
            projects: Vec<ProjectEntry>,
        }
        let what = "listing projects";
        let response = self.send(what, || self.http.get(self.api("/projects")))?;
        let answer: Answer = Self::json(what, response, self.limits.page_bytes)?;
        answer
            .projects
            .into_iter()
            .map(|p| {
                check::project_id(what, &p.id)?;
                Ok(ProjectEntry {
                    name: check::clean(&p.name, 256),
                    owner: check::clean(&p.owner, 128),
                    created_at: check::clean(&p.created_at, 64),
                    ..p
                })
            })
            .collect()
    }

    /// The members of a project (any member may list them).
    pub fn members(&self, project: &str) -> Result<Vec<Member>> {
        #[derive(Deserialize)]
        struct Answer {
            members: Vec<Member>,
        }
        let what = format!("listing the members of {project}");
        let response = self.send(&what, || {
            self.http.get(self.api(&format!("/projects/{project}/members")))
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!(
                "{what}: no project {project} on the server that you are a member of"
            )));
        }
        let answer: Answer = Self::json(&what, response, self.limits.page_bytes)?;
        Ok(answer
            .members
            .into_iter()
            .map(|m| Member {
                user: check::clean(&m.user, 128),
                invited_by: check::clean(&m.invited_by, 128),
                invited_at: check::clean(&m.invited_at, 64),
                accepted_at: m.accepted_at.map(|t| check::clean(&t, 64)),
                ..m
            })
            .collect())
    }

    /// Invites `user` with `role`, or changes their role (owners only); what the server did:
    /// `invited`, `role changed` or `unchanged`.
    pub fn put_member(&self, project: &str, user: &str, role: Role) -> Result<String> {
        let what = format!("giving {user} the {role} role in {project}");
        let body = serde_json::json!({ "role": role }).to_string();
        let response = self.send(&what, || {
            self.http
                .put(self.api(&format!("/projects/{project}/members/{}", encode(user))))
                .header("content-type", "application/json")
                .body(body.clone())
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!(
                "{what}: {}",
                self.reason(&what, response, false)
            )));
        }
        let value: serde_json::Value = Self::json(&what, response, self.limits.small_bytes)?;
        Ok(check::clean(value["status"].as_str().unwrap_or_default(), 40))
    }

    /// Removes `user` from the project (owners; or the user themselves, to leave).
    pub fn remove_member(&self, project: &str, user: &str) -> Result<()> {
        let what = format!("removing {user} from {project}");
        let response = self.send(&what, || {
            self.http
                .delete(self.api(&format!("/projects/{project}/members/{}", encode(user))))
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!(
                "{what}: {}",
                self.reason(&what, response, false)
            )));
        }
        Ok(())
    }

    /// Removes every record `user` wrote in the project (owners only); how many.
    pub fn remove_contributions(&self, project: &str, user: &str) -> Result<u64> {
        let what = format!("removing what {user} wrote in {project}");
        let response = self.send(&what, || {
            self.http
                .delete(self.api(&format!("/projects/{project}/contributions/{}", encode(user))))
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!(
                "{what}: {}",
                self.reason(&what, response, false)
            )));
        }
        let value: serde_json::Value = Self::json(&what, response, self.limits.small_bytes)?;
        Ok(value["removed"].as_u64().unwrap_or(0))
    }

    /// The invitations waiting for this user.
    pub fn invitations(&self) -> Result<Vec<Invitation>> {
        #[derive(Deserialize)]
        struct Answer {
            invitations: Vec<Invitation>,
        }
        let what = "listing invitations";
        let response = self.send(what, || self.http.get(self.api("/invitations")))?;
        let answer: Answer = Self::json(what, response, self.limits.page_bytes)?;
        answer
            .invitations
            .into_iter()
            .map(|i| {
                check::project_id(what, &i.project)?;
                Ok(Invitation {
                    name: check::clean(&i.name, 256),
                    owner: check::clean(&i.owner, 128),
                    invited_by: check::clean(&i.invited_by, 128),
                    invited_at: check::clean(&i.invited_at, 64),
                    ..i
                })
            })
            .collect()
    }

    /// Accepts the invitation to `owner`'s `project`; the role it gives.
    pub fn accept_invitation(&self, owner: &str, project: &str) -> Result<Role> {
        let what = format!("accepting {owner}'s invitation to {project}");
        let response = self.send(&what, || {
            self.http
                .post(self.api(&format!("/invitations/{}/{project}", encode(owner))))
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!(
                "{what}: {}",
                self.reason(&what, response, false)
            )));
        }
        #[derive(Deserialize)]
        struct Answer {
            role: Role,
        }
        Ok(Self::json::<Answer>(&what, response, self.limits.small_bytes)?.role)
    }

    /// Declines the invitation to `owner`'s `project`.
    pub fn decline_invitation(&self, owner: &str, project: &str) -> Result<()> {
        let what = format!("declining {owner}'s invitation to {project}");
        let response = self.send(&what, || {
            self.http
                .delete(self.api(&format!("/invitations/{}/{project}", encode(owner))))
        })?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::NotFound(format!(
                "{what}: {}",
                self.reason(&what, response, false)
            )));
        }
        Ok(())
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

/// A user name as one URL path segment.
fn encode(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_to_another_machine_needs_an_explicit_choice() {
        assert!(Client::new("http://127.0.0.1:7400", "t").is_ok());
        assert!(Client::new("http://localhost:7400/", "t").is_ok());
        assert!(Client::new("https://zblade.example.com", "t").is_ok());
        let refused = Client::new("http://10.0.0.5:7400", "t").err().unwrap();
        assert!(refused.to_string().contains("--allow-insecure-http"), "{refused}");
        let allowed = Client::with_transport("http://10.0.0.5:7400", "t", Transport::AllowPlainHttp).unwrap();
        assert!(allowed.is_plain_http_to_another_machine());
        assert!(
            !Client::new("http://127.0.0.1:1", "t")
                .unwrap()
                .is_plain_http_to_another_machine()
        );
        for bad in ["ftp://x", "127.0.0.1:7400", "http://", "file:///tmp/x"] {
            assert!(Client::new(bad, "t").is_err(), "{bad}");
        }
    }
}
