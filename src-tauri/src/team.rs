//! Settings → Team: a project's memory shared with teammates on the sync server (docs/SERVER.md,
//! "Team"), from the app — the members and their roles, invite, change a role, remove (with
//! what they wrote, when asked), leave; and, for a project not shared yet, the invitations
//! waiting on a server and joining one. The same engine calls as `zblade team …`.

use tauri::AppHandle;
use zblade_engine::{Joined, Project};
use zblade_sync::{Invitation, Member, Role, Transport};

use crate::error::{AppError, AppResult};
use crate::state::{blocking, with_project};

/// The open project's members (server mode).
#[tauri::command]
#[specta::specta]
pub async fn team_members(app: AppHandle) -> AppResult<Vec<Member>> {
    with_project(app, |project| Ok(project.team_members()?)).await
}

/// Invites `user` with `role`, or changes their role; what the server did (`invited`,
/// `role changed`, `unchanged`).
#[tauri::command]
#[specta::specta]
pub async fn team_invite(app: AppHandle, user: String, role: Role) -> AppResult<String> {
    with_project(app, move |project| Ok(project.team_invite(user.trim(), role)?)).await
}

/// Removes `user`; with `contributions`, everything they wrote in the project first. Returns
/// how many records were removed with them.
#[tauri::command]
#[specta::specta]
pub async fn team_remove(app: AppHandle, user: String, contributions: bool) -> AppResult<u32> {
    with_project(app, move |project| {
        let removed = if contributions {
            project.team_remove_contributions(&user)?
        } else {
            0
        };
        project.team_remove(&user)?;
        Ok(removed.min(u32::MAX as u64) as u32)
    })
    .await
}

/// Leaves the shared project; the folder goes back to local mode.
#[tauri::command]
#[specta::specta]
pub async fn team_leave(app: AppHandle) -> AppResult<()> {
    blocking(app, move |_, state| {
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        let root = project.layout().root().to_path_buf();
        project.team_leave()?;
        // Opened again so its storage follows the mode.
        *guard = Some(Project::open(&root)?);
        Ok(())
    })
    .await
}

/// The invitations waiting for `token`'s user on `url` (needs the app's network consent, like
/// every sync server call).
#[tauri::command]
#[specta::specta]
pub async fn team_invitations(
    app: AppHandle,
    url: String,
    token: String,
    allow_insecure_http: bool,
) -> AppResult<Vec<Invitation>> {
    blocking(app, move |_, state| {
        crate::network::require_consent(&state.config(), "Talking to a sync server")?;
        let token = Some(token.trim()).filter(|t| !t.is_empty());
        Ok(zblade_engine::invitations(
            &url,
            token,
            Transport::allowing_plain_http(allow_insecure_http),
        )?)
    })
    .await
}

/// Joins `project` on `url` in the open project's folder (see [`Project::join_team`]).
#[tauri::command]
#[specta::specta]
pub async fn team_join(
    app: AppHandle,
    url: String,
    token: String,
    project: String,
    owner: Option<String>,
    allow_insecure_http: bool,
) -> AppResult<Joined> {
    blocking(app, move |_, state| {
        crate::network::require_consent(&state.config(), "Talking to a sync server")?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let open = guard.as_mut().ok_or_else(AppError::no_project)?;
        let root = open.layout().root().to_path_buf();
        let token = Some(token.trim()).filter(|t| !t.is_empty());
        let (joined_project, joined) = Project::join_team(
            &root,
            &url,
            token,
            project.trim(),
            owner.as_deref().map(str::trim).filter(|o| !o.is_empty()),
            Transport::allowing_plain_http(allow_insecure_http),
        )?;
        *guard = Some(joined_project);
        Ok(joined)
    })
    .await
}
