//! The project's sync server: the client for it (server storage and migration use it), and
//! local mode's optional metadata sync — there, only titles and tags may leave the machine,
//! and only with `sync_metadata` on ([`Project::sync_metadata`]).

use zblade_core::{Error, Result, StorageMode};
use zblade_sync::{Client, Kind, Metadata};

use crate::parts::Parts;
use crate::project::Project;
use zblade_index::Page;

impl Parts {
    /// A client of the configured server with the token saved for it (or `ZBLADE_TOKEN`).
    pub(crate) fn server_client(&self) -> Result<Client> {
        let url = &self.settings().storage.server_url;
        if url.is_empty() {
            return Err(Error::Usage(
                "no sync server is set up (storage.server_url is empty); `zblade migrate to-server --server URL` sets one".into(),
            ));
        }
        Ok(connect(url, None, self.transport())?.0)
    }

    /// Whether plain http to another machine was allowed for this project's server.
    pub(crate) fn transport(&self) -> zblade_sync::Transport {
        zblade_sync::Transport::allowing_plain_http(self.settings().storage.allow_insecure_http)
    }
}

/// A client of the sync server at `url`, as every face connects: the URL without trailing
/// slashes, `token` when one is given (else `ZBLADE_TOKEN` or the token saved for that
/// server), and plain http to another machine only when `transport` allows it. Returns the
/// client and the token it uses (a finished migration to the server saves it).
pub fn connect(url: &str, token: Option<&str>, transport: zblade_sync::Transport) -> Result<(Client, String)> {
    let url = url.trim().trim_end_matches('/');
    let token = match token.map(str::trim).filter(|t| !t.is_empty()) {
        Some(token) => token.to_string(),
        None => zblade_sync::credentials::token(url)?.ok_or_else(|| {
            Error::Usage(format!(
                "no token for {url}: give the one `zblade-server user add` printed (--token), or set ZBLADE_TOKEN"
            ))
        })?,
    };
    let client = Client::with_transport(url, &token, transport)?;
    Ok((client, token))
}

/// The sync server as the faces use it.
impl Project {
    /// How to reach `server`: plain http elsewhere when `allow_insecure_http` says so, or
    /// when this project's saved choice for that very server does.
    pub fn transport_for(&self, server: &str, allow_insecure_http: bool) -> zblade_sync::Transport {
        if server.trim_end_matches('/') == self.settings().storage.server_url.trim_end_matches('/')
            && !allow_insecure_http
        {
            return self.parts.transport();
        }
        zblade_sync::Transport::allowing_plain_http(allow_insecure_http)
    }

    /// Local mode with `storage.sync_metadata` on: sends the title, tags and message count of
    /// every conversation and moment (never their content) to the configured server. Returns
    /// how many records were sent. Refused in server mode (everything is there already) and
    /// when the setting is off. A `token` given is saved for the server first (and used from
    /// then on).
    pub fn sync_metadata(&self, token: Option<&str>) -> Result<usize> {
        // The token is kept even when the send is refused below: turning the setting on
        // later needs no second `--token`.
        if let Some(token) = token {
            let url = &self.settings().storage.server_url;
            if url.is_empty() {
                return Err(Error::Usage(
                    "set storage.server_url in .zblade/config/settings.json first".into(),
                ));
            }
            zblade_sync::credentials::save(url, token.trim())?;
        }
        if self.settings().storage.mode == StorageMode::Server {
            return Err(Error::Usage(
                "storage.mode is server: memory is on the server already".into(),
            ));
        }
        if !self.settings().storage.sync_metadata {
            return Err(Error::ConsentRequired(
                "storage.sync_metadata is off: nothing leaves this machine until you turn it on".into(),
            ));
        }
        let client = self.parts.server_client()?;
        let project = &self.settings().project.id;
        client.put_project(project, &self.parts.folder_name())?;
        let index = self.index()?;
        let mut sent = 0;
        let mut offset = 0;
        loop {
            let page = index.list_conversations(Page::new(500, offset), None)?;
            for c in &page {
                client.put_metadata(
                    project,
                    &Metadata {
                        kind: Kind::Conversation,
                        id: c.id.clone(),
                        title: c.title.clone(),
                        tags: c.tags.clone(),
                        message_count: c.message_count.max(0) as usize,
                        updated_at: c.updated_at.clone(),
                    },
                )?;
                sent += 1;
            }
            if page.len() < 500 {
                break;
            }
            offset += page.len();
        }
        let mut offset = 0;
        loop {
            let page = index.list_moments(Page::new(500, offset), None)?;
            for m in &page {
                client.put_metadata(
                    project,
                    &Metadata {
                        kind: Kind::Moment,
                        id: m.id.clone(),
                        // The type, not the content: content never leaves in local mode.
                        title: m.kind.clone(),
                        tags: m.tags.clone(),
                        message_count: 0,
                        updated_at: m.created_at.clone(),
                    },
                )?;
                sent += 1;
            }
            if page.len() < 500 {
                break;
            }
            offset += page.len();
        }
        Ok(sent)
    }
}
