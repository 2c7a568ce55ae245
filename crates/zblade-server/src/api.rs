//! API v0: the routes under `/api/v0/`, their JSON, and how every failure becomes a 4xx with a
//! reason (a 5xx only when the database itself fails). docs/SERVER.md documents each route.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;
use zblade_core::wire::{
    EmbeddingModel, ErrorBody, PassageAnswer, PassageHit, PassageQuery, PutResult, PutStatus, Role, SearchAnswer,
    VectorsResult, VectorsUpload,
};

use crate::auth::{RateLimiter, client_address, hash_token};
use crate::store::{Access, Deleted, Kind, MetadataRecord, NewPassage, NewRecord, Store, StoreError, User};
use crate::vectors::{Vectors, row_id};

/// Most items one page returns.
pub const MAX_PAGE: usize = 1_000;
/// Items per page when `limit` is not given.
pub const DEFAULT_PAGE: usize = 100;
/// The header a client may send with the sha256 it computed of the body; a mismatch (a body
/// damaged on the way) is refused.
pub const HASH_HEADER: &str = "x-zblade-sha256";
/// The header a record comes back with naming who wrote it (a user name on this server).
pub const AUTHOR_HEADER: &str = "x-zblade-author";

/// A failure, as the client sees it: a status and `{"error": code, "reason": text}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    reason: String,
    retry_after: Option<Duration>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, reason: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            reason: reason.into(),
            retry_after: None,
        }
    }

    fn bad_request(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", reason)
    }

    fn not_found(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", reason)
    }

    fn forbidden(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", reason)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(ErrorBody {
                error: self.code.to_string(),
                reason: self.reason,
            }),
        )
            .into_response();
        if let Some(after) = self.retry_after {
            let secs = after.as_secs_f64().ceil().max(1.0) as u64;
            if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::NotFound(why) => ApiError::not_found(why),
            StoreError::Conflict(why) => ApiError::new(StatusCode::CONFLICT, "conflict", why),
            StoreError::Forbidden(why) => ApiError::forbidden(why),
            // The database's own words (table names, SQL, file paths, connection strings) stay
            // in the server's log; the client learns only that the database failed.
            StoreError::Backend(why) => {
                eprintln!("zblade-server: database error: {why}");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database",
                    "the server's database failed; try again later (the server's log has the details)",
                )
            }
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> ApiError {
        ApiError::bad_request(format!("URL path: {}", e.body_text()))
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> ApiError {
        ApiError::bad_request(format!("query string: {}", e.body_text()))
    }
}

impl From<BytesRejection> for ApiError {
    fn from(e: BytesRejection) -> ApiError {
        let status = e.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(status, "too_large", "the body is larger than the server accepts")
        } else {
            ApiError::bad_request(format!("body: {}", e.body_text()))
        }
    }
}

/// `Path` with our error body.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
struct ApiPath<T>(T);

/// `Query` with our error body.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
struct ApiQuery<T>(T);

/// A JSON body of `T`, read from the bytes whatever the content type says; unknown fields
/// and syntax errors come back as 400 with the position.
fn parse_body<T: serde::de::DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let body = body?;
    serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("body: {e}")))
}

/// What every handler shares.
pub struct AppState<S> {
    /// The storage.
    pub store: S,
    /// Requests per user and second.
    pub limiter: RateLimiter,
    /// Failed sign-ins per client address (see [`crate::auth::client_address`]).
    pub failed_auth: RateLimiter<std::net::IpAddr>,
    /// Reverse proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// The projects' vectors (LanceDB).
    pub vectors: Arc<Vectors>,
}

/// An id from a URL, by the artifact format's own rule (ASCII letters, digits, `_`, `-`; at
/// most 128): nothing that could be read as a path.
fn check_id(what: &str, id: &str) -> Result<(), ApiError> {
    zblade_core::ids::check_id(id, None).map_err(|why| ApiError::bad_request(format!("{what} id {why}")))
}

fn kind_of(segment: &str) -> Result<Kind, ApiError> {
    match segment {
        "conversations" => Ok(Kind::Conversation),
        "moments" => Ok(Kind::Moment),
        other => Err(ApiError::not_found(format!(
            "no collection {other:?}; use conversations, moments, metadata or search"
        ))),
    }
}

/// What the caller may do in `project` (their own, or shared with them and accepted). A
/// project they have no part in, or were removed from, is answered 404 as if it did not exist:
/// its existence is not told to outsiders.
async fn access<S: Store>(state: &AppState<S>, user: &User, project: &str) -> Result<Access, ApiError> {
    check_id("project", project)?;
    state
        .store
        .access(user.id, project)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no project {project}")))
}

/// 403 unless the caller's role is at least `needed`.
fn require(access: Access, needed: Role, project: &str, action: &str) -> Result<(), ApiError> {
    if access.role >= needed {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "you are a {} of project {project}; {action} needs the {needed} role (ask an owner)",
        access.role
    )))
}

/// A user name from a URL: what `zblade-server user add` accepts.
fn check_user_name(name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.len() > 128 || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "user: 1 to 128 characters, no control characters",
        ));
    }
    Ok(())
}

/// Builds the router over `store`.
pub fn router<S: Store>(state: Arc<AppState<S>>, max_body: usize) -> Router {
    let api = Router::new()
        .route("/me", get(me))
        .route("/projects", get(list_projects::<S>))
        .route(
            "/projects/{project}",
            get(get_project::<S>).put(put_project::<S>).delete(delete_project::<S>),
        )
        .route("/invitations", get(list_invitations::<S>))
        .route(
            "/invitations/{owner}/{project}",
            axum::routing::post(accept_invitation::<S>).delete(decline_invitation::<S>),
        )
        .route("/projects/{project}/members", get(list_members::<S>))
        .route(
            "/projects/{project}/members/{user}",
            axum::routing::put(put_member::<S>).delete(remove_member::<S>),
        )
        .route(
            "/projects/{project}/contributions/{user}",
            axum::routing::delete(remove_contributions::<S>),
        )
        .route(
            "/projects/{project}/search",
            get(search::<S>).post(search_passages::<S>),
        )
        .route(
            "/projects/{project}/vectors/{collection}/{id}",
            axum::routing::put(put_vectors::<S>),
        )
        .route("/projects/{project}/metadata", get(list_metadata::<S>))
        .route(
            "/projects/{project}/metadata/{id}",
            axum::routing::put(put_metadata::<S>),
        )
        .route("/projects/{project}/{collection}", get(list_records::<S>))
        .route(
            "/projects/{project}/{collection}/{id}",
            get(get_record::<S>).put(put_record::<S>).delete(delete_record::<S>),
        )
        .fallback(|| async { ApiError::not_found("no such route in API v0 (see docs/SERVER.md)") })
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), authenticate::<S>));
    Router::new()
        .route("/healthz", get(healthz::<S>))
        .nest("/api/v0", api)
        .fallback(|| async { ApiError::not_found("no such route; the API lives under /api/v0/") })
        .layer(axum::extract::DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// Every `/api/v0/` request: a bearer token of a user, within that user's rate. An address
/// that keeps sending bad tokens is refused (429) before its tokens are looked up.
async fn authenticate<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let forwarded_for = request.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let address = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| client_address(info.0.ip(), forwarded_for, &state.trusted_proxies));
    if let Some(address) = address
        && let Err(wait) = state.failed_auth.peek(address)
    {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many failed sign-ins from this address; wait, then use a valid token",
        );
        e.retry_after = Some(wait);
        return Err(e);
    }
    let unauthorized = |why: &str| {
        if let Some(address) = address {
            let _ = state.failed_auth.check(address);
        }
        let mut e = ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", why);
        e.retry_after = None;
        e
    };
    let Some(header) = request.headers().get(header::AUTHORIZATION) else {
        return Err(unauthorized("missing Authorization: Bearer <token>"));
    };
    let Some(token) = header
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
    else {
        return Err(unauthorized("the Authorization header must be 'Bearer <token>'"));
    };
    let Some(user) = state.store.user_for_token(&hash_token(token)).await? else {
        return Err(unauthorized("unknown, revoked or expired token, or a disabled user"));
    };
    if let Err(wait) = state.limiter.check(user.id) {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many requests; slow down",
        );
        e.retry_after = Some(wait);
        return Err(e);
    }
    request.extensions_mut().insert(user);
    Ok(next.run(request).await)
}

async fn healthz<S: Store>(State(state): State<Arc<AppState<S>>>) -> Response {
    // A cheap query proves the database answers.
    match state.store.user_for_token("-").await {
        Ok(_) => Json(json!({ "status": "ok", "backend": state.store.backend(), "api": "v0" })).into_response(),
        Err(e) => {
            // Unauthenticated: the reason goes to the log only.
            eprintln!("zblade-server: health check failed: {e}");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable", "backend": state.store.backend() })),
            )
                .into_response()
        }
    }
}

async fn me(Extension(user): Extension<User>) -> Json<serde_json::Value> {
    Json(json!({ "user": user.name }))
}

async fn list_projects<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
) -> Result<Response, ApiError> {
    let projects = state.store.list_projects(user.id).await?;
    Ok(Json(json!({ "projects": projects })).into_response())
}

async fn get_project<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath(project): ApiPath<String>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    let found = state.store.get_project(access.owner, &project).await?;
    let mut project = found.ok_or_else(|| ApiError::not_found(format!("no project {project}")))?;
    project.role = access.role;
    Ok(Json(project).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectBody {
    #[serde(default)]
    name: String,
}

async fn put_project<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath(project): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_id("project", &project)?;
    let body: ProjectBody = parse_body(body)?;
    if body.name.len() > 256 {
        return Err(ApiError::bad_request("name: longer than 256 bytes"));
    }
    let name = if body.name.trim().is_empty() {
        project.clone()
    } else {
        body.name.trim().to_string()
    };
    // A project shared with the caller is renamed by its owners only; any other id is the
    // caller's own, created when new.
    let owner = match state.store.access(user.id, &project).await? {
        Some(access) => {
            require(access, Role::Owner, &project, "renaming it")?;
            access.owner
        }
        None => user.id,
    };
    let created = state.store.put_project(owner, &project, &name).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((
        status,
        Json(json!({ "id": project, "name": name, "status": if created { "created" } else { "updated" } })),
    )
        .into_response())
}

async fn delete_project<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath(project): ApiPath<String>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    require(access, Role::Owner, &project, "deleting it")?;
    if !state.store.delete_project(access.owner, &project).await? {
        return Err(ApiError::not_found(format!("no project {project}")));
    }
    state.vectors.drop_project(access.owner, &project).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `?after=ID&limit=N`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PageParams {
    #[serde(default)]
    after: String,
    limit: Option<usize>,
}

fn page_limit(limit: Option<usize>) -> Result<usize, ApiError> {
    match limit.unwrap_or(DEFAULT_PAGE) {
        0 => Err(ApiError::bad_request("limit: must be at least 1")),
        n if n > MAX_PAGE => Err(ApiError::bad_request(format!("limit: at most {MAX_PAGE}"))),
        n => Ok(n),
    }
}

async fn list_records<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, collection)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    let kind = kind_of(&collection)?;
    let limit = page_limit(params.limit)?;
    let page = state
        .store
        .list_records(access.owner, &project, kind, &params.after, limit)
        .await?;
    Ok(Json(page).into_response())
}

async fn get_record<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, collection, id)): ApiPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    let kind = kind_of(&collection)?;
    check_id(kind.as_str(), &id)?;
    let record = state
        .store
        .get_record(access.owner, &project, kind, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no {} {id} in project {project}", kind.as_str())))?;
    // The artifact goes back byte for byte; what lists show rides in headers.
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in [
        (HASH_HEADER, record.meta.hash.clone()),
        ("x-zblade-version", record.meta.version.to_string()),
        (AUTHOR_HEADER, record.meta.author.clone().unwrap_or_default()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    Ok((headers, record.body).into_response())
}

/// The artifact's title, tags, time, searchable text and passages, after checking it is a
/// valid artifact of the kind and id the URL names.
pub(crate) fn describe(kind: Kind, id: &str, project: &str, body: &[u8]) -> Result<NewRecord, ApiError> {
    let source = "request body";
    let invalid = |e: zblade_core::Error| ApiError::bad_request(e.to_string());
    let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request(format!("body: not UTF-8 ({e})")))?;
    let hash = zblade_core::sha256_hex(body);
    match kind {
        Kind::Conversation => {
            let conv = zblade_core::parse_conversation(body, source).map_err(invalid)?;
            conv.validate(source).map_err(invalid)?;
            if conv.conversation_id != id {
                return Err(ApiError::bad_request(format!(
                    "conversation_id: the body says {:?}, the URL {id:?}",
                    conv.conversation_id
                )));
            }
            if !conv.project_id.is_empty() && conv.project_id != project {
                return Err(ApiError::bad_request(format!(
                    "project_id: the body says {:?}, the URL {project:?}",
                    conv.project_id
                )));
            }
            let mut search_text = String::new();
            let mut passages: Vec<NewPassage> = Vec::with_capacity(conv.messages.len());
            for (position, message) in conv.messages.iter().enumerate() {
                search_text.push_str(&message.content);
                search_text.push('\n');
                let key = format!("{id}/{}", message.id);
                if passages.iter().any(|p| p.key == key) {
                    continue; // a repeated message id: its first message is the one found
                }
                passages.push(NewPassage {
                    key,
                    message: message.id.clone(),
                    position: position as i64,
                    label: message.role.as_str().to_string(),
                    time: message.timestamp.map(|t| t.to_rfc3339()).unwrap_or_default(),
                    text: message.content.clone(),
                });
            }
            let time = conv.updated_at.or(conv.created_at);
            Ok(NewRecord {
                kind,
                id: id.to_string(),
                hash,
                title: conv.title.clone(),
                tags: conv.metadata.tags.clone(),
                updated_at: time.map(|t| t.to_rfc3339()).unwrap_or_default(),
                body: text.to_string(),
                search_text,
                passages,
            })
        }
        Kind::Moment => {
            let moment = zblade_core::parse_moment(body, source).map_err(invalid)?;
            moment.validate(source).map_err(invalid)?;
            if moment.id != id {
                return Err(ApiError::bad_request(format!(
                    "id: the body says {:?}, the URL {id:?}",
                    moment.id
                )));
            }
            let title: String = moment
                .content
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(120)
                .collect();
            let search_text = format!(
                "{}\n{}\n{}",
                moment.content,
                moment.context.as_deref().unwrap_or_default(),
                moment.tags.join(" ")
            );
            Ok(NewRecord {
                kind,
                id: id.to_string(),
                hash,
                title,
                tags: moment.tags.clone(),
                updated_at: moment.created_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
                body: text.to_string(),
                search_text,
                passages: vec![NewPassage {
                    key: id.to_string(),
                    message: String::new(),
                    position: 0,
                    label: moment.kind.as_str().to_string(),
                    time: moment.created_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
                    // Its context after its content, as the engine reads a moment.
                    text: match moment.context.as_deref().filter(|c| !c.trim().is_empty()) {
                        Some(context) => format!("{}\n{context}", moment.content),
                        None => moment.content.clone(),
                    },
                }],
            })
        }
    }
}

async fn put_record<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, collection, id)): ApiPath<(String, String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    require(access, Role::Writer, &project, "adding or changing memory")?;
    let kind = kind_of(&collection)?;
    check_id(kind.as_str(), &id)?;
    let body = body?;
    let record = describe(kind, &id, &project, &body)?;
    if let Some(claimed) = headers.get(HASH_HEADER)
        && claimed.as_bytes() != record.hash.as_bytes()
    {
        return Err(ApiError::bad_request(format!(
            "{HASH_HEADER}: the body's sha256 is {}, the header says {}; the body was damaged on the way",
            record.hash,
            String::from_utf8_lossy(claimed.as_bytes())
        )));
    }
    let own_only = access.role == Role::Writer;
    let outcome = state
        .store
        .put_record(access.owner, &project, &record, user.id, own_only)
        .await?;
    let status = match outcome.status {
        crate::store::PutStatus::Created => StatusCode::CREATED,
        _ => StatusCode::OK,
    };
    Ok((
        status,
        Json(PutResult {
            id,
            kind,
            status: outcome.status,
            version: outcome.version,
            size: record.body.len(),
            hash: record.hash,
        }),
    )
        .into_response())
}

/// `DELETE …/ID`, with an optional `x-zblade-sha256` header: delete only while the stored bytes
/// still have that hash (412 otherwise), so a cleanup never removes a version it did not verify.
async fn delete_record<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, collection, id)): ApiPath<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    require(access, Role::Writer, &project, "deleting memory")?;
    let kind = kind_of(&collection)?;
    check_id(kind.as_str(), &id)?;
    let if_hash = headers.get(HASH_HEADER).and_then(|v| v.to_str().ok());
    let only_author = (access.role == Role::Writer).then_some(user.id);
    // Only a record that had vectors costs LanceDB a delete.
    let had_vectors = state
        .store
        .get_record(access.owner, &project, kind, &id)
        .await?
        .is_some_and(|r| r.vector_rows > 0);
    match state
        .store
        .delete_record(access.owner, &project, kind, &id, if_hash, only_author)
        .await?
    {
        Deleted::Yes => {
            if had_vectors {
                state
                    .vectors
                    .remove(access.owner, &project, vec![vector_prefix(kind, &id)])
                    .await?;
            }
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        Deleted::NotFound => Err(ApiError::not_found(format!(
            "no {} {id} in project {project}",
            kind.as_str()
        ))),
        Deleted::Changed => Err(ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            "changed",
            format!("{} {id} no longer has the hash given; it was kept", kind.as_str()),
        )),
    }
}

/// `?q=WORDS&kind=conversation|moment&limit=N`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchParams {
    q: String,
    #[serde(default)]
    kind: Option<String>,
    limit: Option<usize>,
}

async fn search<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath(project): ApiPath<String>,
    ApiQuery(params): ApiQuery<SearchParams>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    if params.q.len() > 2_000 {
        return Err(ApiError::bad_request("q: longer than 2000 bytes"));
    }
    let kind = match params.kind.as_deref() {
        None | Some("") => None,
        Some(name) => Some(
            Kind::parse(name)
                .ok_or_else(|| ApiError::bad_request(format!("kind: {name:?} is not conversation or moment")))?,
        ),
    };
    let limit = match params.limit.unwrap_or(20) {
        0 => return Err(ApiError::bad_request("limit: must be at least 1")),
        n => n.min(100),
    };
    let hits = state
        .store
        .search(access.owner, &project, &params.q, kind, limit)
        .await?;
    Ok(Json(SearchAnswer { query: params.q, hits }).into_response())
}

async fn put_metadata<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, id)): ApiPath<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    require(access, Role::Writer, &project, "sending metadata")?;
    check_id("id", &id)?;
    let mut record: MetadataRecord = parse_body(body)?;
    if Kind::parse(&record.kind).is_none() {
        return Err(ApiError::bad_request(format!(
            "kind: {:?} is not conversation or moment",
            record.kind
        )));
    }
    if !record.id.is_empty() && record.id != id {
        return Err(ApiError::bad_request(format!(
            "id: the body says {:?}, the URL {id:?}",
            record.id
        )));
    }
    if record.title.len() > 1_000 || record.tags.len() > 100 || record.tags.iter().any(|t| t.len() > 100) {
        return Err(ApiError::bad_request(
            "metadata is titles and tags only: title ≤ 1000 bytes, ≤ 100 tags of ≤ 100 bytes",
        ));
    }
    record.id = id.clone();
    let status = state.store.put_metadata(access.owner, &project, &record).await?;
    let code = match status {
        crate::store::PutStatus::Created => StatusCode::CREATED,
        _ => StatusCode::OK,
    };
    Ok((code, Json(json!({ "id": id, "status": status }))).into_response())
}

async fn list_metadata<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath(project): ApiPath<String>,
    ApiQuery(params): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    let limit = page_limit(params.limit)?;
    let page = state
        .store
        .list_metadata(access.owner, &project, &params.after, limit)
        .await?;
    Ok(Json(page).into_response())
}

async fn list_members<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath(project): ApiPath<String>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    let members = state.store.list_members(access.owner, &project).await?;
    Ok(Json(json!({ "members": members })).into_response())
}

/// `{"role": "reader" | "writer" | "owner"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberBody {
    role: Role,
}

/// `PUT …/members/USER`: an owner invites USER (who sees nothing until they accept) or changes
/// their role.
async fn put_member<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, member)): ApiPath<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    require(access, Role::Owner, &project, "inviting members or changing roles")?;
    check_user_name(&member)?;
    let body: MemberBody = parse_body(body)?;
    let status = state
        .store
        .put_member(access.owner, &project, &member, body.role, user.id)
        .await?;
    let code = if status == PutStatus::Created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let said = match status {
        PutStatus::Created => "invited",
        PutStatus::Updated => "role changed",
        PutStatus::Unchanged => "unchanged",
    };
    Ok((code, Json(json!({ "user": member, "role": body.role, "status": said }))).into_response())
}

/// `DELETE …/members/USER`: an owner removes USER (or withdraws an invitation); any member
/// removes themselves (leaves). Their next request gets nothing of the project.
async fn remove_member<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, member)): ApiPath<(String, String)>,
) -> Result<Response, ApiError> {
    check_user_name(&member)?;
    let access = access(&state, &user, &project).await?;
    if member != user.name {
        require(access, Role::Owner, &project, "removing members")?;
    }
    if !state.store.remove_member(access.owner, &project, &member).await? {
        return Err(ApiError::not_found(format!(
            "{member} is not a member of project {project}"
        )));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `DELETE …/contributions/USER`: an owner removes every record USER wrote in the project.
async fn remove_contributions<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, author)): ApiPath<(String, String)>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    require(access, Role::Owner, &project, "removing a member's contributions")?;
    check_user_name(&author)?;
    let removed = state
        .store
        .remove_contributions(access.owner, &project, &author)
        .await?;
    let prefixes = removed.iter().map(|(kind, id)| vector_prefix(*kind, id)).collect();
    state.vectors.remove(access.owner, &project, prefixes).await?;
    Ok(Json(json!({ "user": author, "removed": removed.len() })).into_response())
}

async fn list_invitations<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
) -> Result<Response, ApiError> {
    let invitations = state.store.invitations(user.id).await?;
    Ok(Json(json!({ "invitations": invitations })).into_response())
}

/// `POST /invitations/OWNER/PROJECT`: the invited user accepts; from now on the project answers
/// them with their role.
async fn accept_invitation<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((owner, project)): ApiPath<(String, String)>,
) -> Result<Response, ApiError> {
    check_user_name(&owner)?;
    check_id("project", &project)?;
    if !state.store.accept_invitation(user.id, &owner, &project).await? {
        return Err(ApiError::not_found(format!(
            "no invitation to {owner}'s project {project}"
        )));
    }
    let access = access(&state, &user, &project).await?;
    Ok(Json(json!({ "project": project, "owner": owner, "role": access.role })).into_response())
}

/// `DELETE /invitations/OWNER/PROJECT`: the invited user declines.
async fn decline_invitation<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((owner, project)): ApiPath<(String, String)>,
) -> Result<Response, ApiError> {
    check_user_name(&owner)?;
    check_id("project", &project)?;
    if !state.store.decline_invitation(user.id, &owner, &project).await? {
        return Err(ApiError::not_found(format!(
            "no invitation to {owner}'s project {project}"
        )));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The start shared by every vector row of one record: `CONVERSATION/` (its messages' keys)
/// or `MOMENT#` (the moment's pieces).
fn vector_prefix(kind: Kind, id: &str) -> String {
    match kind {
        Kind::Conversation => format!("{id}/"),
        Kind::Moment => format!("{id}#"),
    }
}

/// Longest accepted vectors and most pieces in one upload: bounds on what a client can make the
/// server hold, far above real models (384–1,024 dimensions) and messages.
const MAX_DIMS: u32 = 4_096;
const MAX_PIECES: usize = 20_000;

/// A model as a client names it: what a models folder's directory may be called.
fn check_model(model: &EmbeddingModel) -> Result<(), ApiError> {
    let ok_name = !model.id.is_empty()
        && model.id.len() <= 128
        && model
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !model.id.starts_with('.');
    if !ok_name {
        return Err(ApiError::bad_request(
            "model.id: 1 to 128 ASCII letters, digits, '-', '_' or '.'",
        ));
    }
    if model.dims == 0 || model.dims > MAX_DIMS {
        return Err(ApiError::bad_request(format!("model.dims: 1 to {MAX_DIMS}")));
    }
    Ok(())
}

/// A vector of `dims` finite numbers, not all zero, scaled to length 1: similarity is by angle
/// alone, and unit vectors cannot overflow LanceDB's 32-bit arithmetic.
fn unit_vector(what: &str, values: &[f32], dims: u32) -> Result<Vec<f32>, ApiError> {
    if values.len() != dims as usize {
        return Err(ApiError::bad_request(format!(
            "{what}: {} numbers, the model has {dims} dimensions",
            values.len()
        )));
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(ApiError::bad_request(format!("{what}: not a finite number")));
    }
    let norm = values.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>().sqrt();
    if norm == 0.0 {
        return Err(ApiError::bad_request(format!("{what}: all zeros (no direction)")));
    }
    Ok(values.iter().map(|v| (f64::from(*v) / norm) as f32).collect())
}

/// 409 when a client's model is not the project's, with what to do about it.
fn model_mismatch(project: &str, theirs: &EmbeddingModel, ours: &EmbeddingModel) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "model_mismatch",
        format!(
            "project {project} embeds with {} ({} dimensions), this client with {} ({} dimensions): \
             vectors of two models do not compare. Set `search.embedding_model` to {} in \
             .zblade/config/settings.json (`zblade models download {} --allow-network` if it is missing) and try again",
            ours.id, ours.dims, theirs.id, theirs.dims, ours.id, ours.id
        ),
    )
}

/// `PUT …/vectors/{conversations|moments}/ID`: the vectors of a stored record, replacing its old
/// ones. The first upload records the project's model; another model is refused (409).
async fn put_vectors<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath((project, collection, id)): ApiPath<(String, String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let access = access(&state, &user, &project).await?;
    require(access, Role::Writer, &project, "adding memory")?;
    let kind = kind_of(&collection)?;
    check_id(kind.as_str(), &id)?;
    let upload: VectorsUpload = parse_body(body)?;
    check_model(&upload.model)?;
    if upload.pieces.len() > MAX_PIECES {
        return Err(ApiError::bad_request(format!("pieces: more than {MAX_PIECES}")));
    }
    let record = state
        .store
        .get_record(access.owner, &project, kind, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no {} {id} in project {project}", kind.as_str())))?;
    if record.meta.hash != upload.record_hash {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "stale",
            format!(
                "{} {id} has changed since these vectors were made (its sha256 is {}); send the vectors of the stored version",
                kind.as_str(),
                record.meta.hash
            ),
        ));
    }
    if access.role == Role::Writer && record.meta.author.as_deref() != Some(user.name.as_str()) {
        return Err(ApiError::forbidden(format!(
            "{} {id} was written by another member; a writer adds vectors only to what they wrote",
            kind.as_str()
        )));
    }
    let mut rows = Vec::with_capacity(upload.pieces.len());
    let mut keys: Vec<String> = Vec::new();
    for (i, piece) in upload.pieces.iter().enumerate() {
        let vector = unit_vector(&format!("pieces[{i}].vector"), &piece.vector, upload.model.dims)?;
        let key = match kind {
            Kind::Conversation => {
                check_id("pieces[].message", &piece.message)?;
                format!("{id}/{}", piece.message)
            }
            Kind::Moment if piece.message.is_empty() => id.clone(),
            Kind::Moment => {
                return Err(ApiError::bad_request(format!(
                    "pieces[{i}].message: a moment has no messages"
                )));
            }
        };
        if !keys.contains(&key) {
            keys.push(key.clone());
        }
        rows.push((row_id(&key, piece.seq), vector));
    }
    // Every piece must belong to a message the stored record has.
    let known = state.store.passages(access.owner, &project, &keys).await?;
    if let Some(missing) = keys.iter().find(|k| !known.iter().any(|p| &p.key == *k)) {
        return Err(ApiError::bad_request(format!(
            "pieces: {missing} is not a message of {} {id}",
            kind.as_str()
        )));
    }
    let model = state.store.set_embedding(access.owner, &project, &upload.model).await?;
    if model != upload.model {
        return Err(model_mismatch(&project, &upload.model, &model));
    }
    let stored = rows.len();
    // A record that never had vectors has none to delete (a delete scans the table).
    let old = if record.vector_rows > 0 {
        vec![vector_prefix(kind, &id)]
    } else {
        Vec::new()
    };
    state
        .vectors
        .replace(access.owner, &project, old, rows, model.dims as usize)
        .await?;
    state
        .store
        .set_vector_rows(access.owner, &project, kind, &id, &record.meta.hash, stored as i64)
        .await?;
    Ok(Json(VectorsResult { stored, model }).into_response())
}

/// `POST …/search` with a [`PassageQuery`]: messages and moments, ranked as local search ranks
/// them — hybrid (the database's keywords and LanceDB's vectors, fused by
/// `zblade_search::fusion::hybrid_fusion`) when a query vector of the project's model comes
/// with it, keyword otherwise.
async fn search_passages<S: Store>(
    State(state): State<Arc<AppState<S>>>,
    Extension(user): Extension<User>,
    ApiPath(project): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    use zblade_search::fusion::{CANDIDATES, HYBRID_SEMANTIC_WEIGHT, hybrid_fusion};
    let access = access(&state, &user, &project).await?;
    let query: PassageQuery = parse_body(body)?;
    if query.q.len() > 2_000 {
        return Err(ApiError::bad_request("q: longer than 2000 bytes"));
    }
    if query.limit == 0 || query.limit > 100 {
        return Err(ApiError::bad_request("limit: 1 to 100"));
    }
    // Not awaited yet: with a query vector it runs beside LanceDB's search.
    let keyword_search = state
        .store
        .keyword_passages(access.owner, &project, &query.q, query.kind, CANDIDATES);
    let mut nearest = None;
    let mut hybrid = false;
    let ranked: Vec<(String, f64)> = match &query.vector {
        None => keyword_search.await?,
        Some(vector) => {
            check_model(&vector.model)?;
            match state.store.embedding(access.owner, &project).await? {
                // Nothing embedded yet: keyword search, said in the answer's mode.
                None => keyword_search.await?,
                Some(model) if model != vector.model => return Err(model_mismatch(&project, &vector.model, &model)),
                Some(model) => {
                    let values = unit_vector("vector.values", &vector.values, model.dims)?;
                    hybrid = true;
                    // Vector rows are not kept by kind: with a kind, ask for more and filter.
                    let fetch = if query.kind.is_some() {
                        CANDIDATES * 4
                    } else {
                        CANDIDATES
                    };
                    let (keyword, semantic) = tokio::join!(
                        keyword_search,
                        state.vectors.nearest(access.owner, &project, values, fetch)
                    );
                    let (keyword, mut semantic) = (keyword?, semantic?);
                    semantic.retain(|(key, _)| match query.kind {
                        Some(Kind::Conversation) => key.contains('/'),
                        Some(Kind::Moment) => !key.contains('/'),
                        None => true,
                    });
                    semantic.truncate(CANDIDATES);
                    nearest = semantic.first().map(|(_, similarity)| *similarity);
                    let mut keys: Vec<String> = keyword.iter().map(|(k, _)| k.clone()).collect();
                    keys.extend(semantic.iter().map(|(k, _)| k.clone()));
                    keys.sort();
                    keys.dedup();
                    let neighbours = state.store.passage_neighbours(access.owner, &project, &keys).await?;
                    hybrid_fusion(&keyword, &semantic, HYBRID_SEMANTIC_WEIGHT, true, |_| {
                        Ok::<_, ApiError>(neighbours)
                    })?
                }
            }
        }
    };
    let mode = if hybrid { "hybrid" } else { "keyword" };
    // A few more than asked: a passage deleted since its vector was stored is left out.
    let wanted: Vec<String> = ranked.iter().take(query.limit + 10).map(|(k, _)| k.clone()).collect();
    let passages = state.store.passages(access.owner, &project, &wanted).await?;
    let hits = ranked
        .iter()
        .filter_map(|(key, score)| {
            let p = passages.iter().find(|p| &p.key == key)?;
            Some(PassageHit {
                kind: p.kind,
                record: p.record.clone(),
                message: p.message.clone(),
                title: p.title.clone(),
                label: p.label.clone(),
                text: p.text.clone(),
                time: p.time.clone(),
                author: p.author.clone(),
                score: *score,
            })
        })
        .take(query.limit)
        .collect();
    Ok(Json(PassageAnswer {
        mode: mode.to_string(),
        hits,
        nearest,
    })
    .into_response())
}
