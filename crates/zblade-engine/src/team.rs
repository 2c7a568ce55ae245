//! Team memory (docs/SERVER.md, "Team"): a project on the sync server shared with teammates,
//! each with a role (reader, writer, owner; the server checks it on every request). Joining
//! makes a folder a server-mode project of the shared memory: what the folder's agents record
//! is written there, marked with its author by the server, and search and context read it.

use std::path::Path;

use serde::Serialize;
use zblade_core::{Error, Result, StorageMode};
use zblade_sync::{Invitation, Member, Role, Transport};

use crate::project::Project;
use crate::remote::connect;

/// What joining a shared project did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Joined {
    /// The project's id, now this folder's.
    pub project: String,
    /// Its creator on the server.
    pub owner: String,
    /// This user's role in it.
    pub role: Role,
    /// The server.
    pub server: String,
    /// This user's name on the server.
    pub user: String,
    /// Whether an invitation was accepted now (false: it had been before).
    pub accepted: bool,
    /// The model the project's vectors are made with (`None`: none sent yet), now this
    /// folder's `search.embedding_model`: every member embeds with the same model.
    pub embedding_model: Option<String>,
    /// Whether that model is missing on this machine (`zblade models download` it; until then
    /// search on the server is by keywords).
    pub model_missing: bool,
}

impl Project {
    /// A client of this project's server, for a project in server mode (a local project is
    /// shared by moving it to the server first).
    fn team_client(&self) -> Result<zblade_sync::Client> {
        if self.settings().storage.mode != StorageMode::Server {
            return Err(Error::Usage(
                "this project's memory is local; share it by moving it to the server first: \
                 `zblade migrate to-server --server URL --token TOKEN`"
                    .into(),
            ));
        }
        self.parts.server_client()
    }

    /// The project's members with their roles (any member may list them).
    pub fn team_members(&self) -> Result<Vec<Member>> {
        self.team_client()?.members(&self.settings().project.id)
    }

    /// Invites `user` with `role`, or changes their role (owners only). Returns what the
    /// server did: `invited`, `role changed` or `unchanged`.
    pub fn team_invite(&self, user: &str, role: Role) -> Result<String> {
        self.team_client()?.put_member(&self.settings().project.id, user, role)
    }

    /// Removes `user` from the project (owners only); their next request sees nothing of it.
    pub fn team_remove(&self, user: &str) -> Result<()> {
        self.team_client()?.remove_member(&self.settings().project.id, user)
    }

    /// Removes every conversation and moment `user` wrote in the project (owners only); how
    /// many records went.
    pub fn team_remove_contributions(&self, user: &str) -> Result<u64> {
        self.team_client()?
            .remove_contributions(&self.settings().project.id, user)
    }
}

impl Project {
    /// Leaves the shared project: the server forgets this user's membership, and this folder
    /// goes back to local mode with empty memory (what was written to the project stays there,
    /// with its author). The creator cannot leave their own project.
    pub fn team_leave(&mut self) -> Result<()> {
        let client = self.team_client()?;
        let me = client.whoami()?;
        client.remove_member(&self.settings().project.id, &me)?;
        self.parts.settings.storage.mode = StorageMode::Local;
        let path = self.layout().settings();
        self.settings().save(&path)
    }

    /// Joins the shared project `project` on `server` in the folder `root` (created as a
    /// zblade project when it is not one): accepts a waiting invitation (of `owner`'s project
    /// when two are for the same id), checks this user can open it, then switches the folder
    /// to server mode on it and saves the token for the server. Refused for a folder that holds
    /// memory of its own, which would be hidden (move it with `zblade migrate` first).
    pub fn join_team(
        root: &Path,
        server: &str,
        token: Option<&str>,
        project: &str,
        owner: Option<&str>,
        transport: Transport,
    ) -> Result<(Project, Joined)> {
        zblade_core::ids::check_id(project, None).map_err(|why| Error::Usage(format!("project id {why}")))?;
        let (client, token) = connect(server, token, transport)?;
        let user = client.whoami()?;
        let waiting: Vec<Invitation> = client
            .invitations()?
            .into_iter()
            .filter(|i| i.project == project && owner.is_none_or(|o| o == i.owner))
            .collect();
        let accepted = match waiting.as_slice() {
            [] => false,
            [invitation] => {
                client.accept_invitation(&invitation.owner, project)?;
                true
            }
            _ => {
                let owners: Vec<&str> = waiting.iter().map(|i| i.owner.as_str()).collect();
                return Err(Error::Usage(format!(
                    "{} users invited you to a project with the id {project} ({}); choose one with --owner",
                    owners.len(),
                    owners.join(", ")
                )));
            }
        };
        let Some(entry) = client.projects()?.into_iter().find(|p| p.id == project) else {
            return Err(Error::NotFound(format!(
                "{user} has no project {project} on {}: no invitation waits and none was accepted \
                 (an owner runs `zblade team invite {user}`)",
                client.url()
            )));
        };
        let (mut opened, _) = Project::init(root)?;
        let settings = opened.settings();
        let has_own_memory = settings.storage.mode == StorageMode::Local
            && settings.project.id != project
            && std::fs::read_dir(opened.layout().conversations_dir())
                .map(|mut d| d.next().is_some())
                .unwrap_or(false);
        if has_own_memory {
            return Err(Error::Usage(format!(
                "{} holds conversations of its own (project {}); joining would hide them. Join from \
                 another folder, or move them to the server first (`zblade migrate to-server`)",
                root.display(),
                settings.project.id
            )));
        }
        let parts = &mut opened.parts;
        parts.settings.project.id = project.to_string();
        parts.settings.storage.mode = StorageMode::Server;
        parts.settings.storage.server_url = client.url().to_string();
        parts.settings.storage.allow_insecure_http = client.is_plain_http_to_another_machine();
        // The project's model decides (the server refuses vectors of another).
        let embedding_model = client.project(project)?.and_then(|p| p.embedding).map(|m| m.id);
        if let Some(model) = &embedding_model {
            parts.settings.search.embedding_model = model.clone();
        }
        let model_missing = embedding_model.as_deref().is_some_and(|model| {
            let dir = crate::model_places::model_dir(model);
            !zblade_search::embed::MODEL_FILES.iter().all(|f| dir.join(f).is_file())
        });
        let path = parts.layout.settings();
        parts.settings.save(&path)?;
        zblade_sync::credentials::save(client.url(), &token)?;
        let joined = Joined {
            project: project.to_string(),
            owner: entry.owner,
            role: entry.role,
            server: client.url().to_string(),
            user,
            accepted,
            embedding_model,
            model_missing,
        };
        // Opened again so the storage follows the new mode.
        Ok((Project::open(root)?, joined))
    }
}

/// The invitations waiting for the token's user on `server`.
pub fn invitations(server: &str, token: Option<&str>, transport: Transport) -> Result<Vec<Invitation>> {
    connect(server, token, transport)?.0.invitations()
}
