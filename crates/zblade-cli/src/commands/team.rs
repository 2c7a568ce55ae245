//! `zblade team invite|role|members|remove|leave|invitations|join`: a project's memory shared
//! with teammates on the sync server (docs/SERVER.md, "Team").

use zblade_engine::{Error, Project};
use zblade_sync::Transport;

use super::Ctx;
use crate::cli::TeamCommand;

pub(crate) fn run(cx: &mut Ctx, command: TeamCommand) -> Result<(), Error> {
    match command {
        TeamCommand::Invite { user, role } | TeamCommand::Role { user, role } => {
            let project = cx.open()?;
            let status = project.team_invite(&user, role)?;
            if cx.json {
                return cx
                    .out
                    .value(&serde_json::json!({"user": user, "role": role, "status": status}));
            }
            match status.as_str() {
                "invited" => cx.out.note(&format!(
                    "invited {user} as {role}; they see nothing until they run `zblade team join {} {}`",
                    project.settings().storage.server_url,
                    project.settings().project.id
                )),
                "unchanged" => cx.out.note(&format!("{user} is {role} already")),
                _ => cx.out.note(&format!("{user} is now {role}")),
            }
        }
        TeamCommand::Members => {
            let members = cx.open()?.team_members()?;
            if cx.json {
                return cx.out.value(&serde_json::json!({ "members": members }));
            }
            for m in &members {
                let state = match &m.accepted_at {
                    Some(_) if m.user == m.invited_by => "created the project".to_string(),
                    Some(at) => format!("invited by {}, joined {}", m.invited_by, short_time(at)),
                    None => format!(
                        "invited by {} {}, not joined yet",
                        m.invited_by,
                        short_time(&m.invited_at)
                    ),
                };
                cx.out.note(&format!("{:<20} {:<7} {state}", m.user, m.role))?;
            }
            Ok(())
        }
        TeamCommand::Remove { user, contributions } => {
            let project = cx.open()?;
            let removed = if contributions {
                Some(project.team_remove_contributions(&user)?)
            } else {
                None
            };
            project.team_remove(&user)?;
            if cx.json {
                return cx
                    .out
                    .value(&serde_json::json!({"user": user, "removed": true, "contributions_removed": removed}));
            }
            cx.out.note(&format!(
                "removed {user}: their next request gets nothing of this project"
            ))?;
            if let Some(n) = removed {
                cx.out
                    .note(&format!("deleted {n} conversation(s) and moment(s) {user} wrote"))?;
            }
            Ok(())
        }
        TeamCommand::Leave => {
            let mut project = cx.open()?;
            let id = project.settings().project.id.clone();
            project.team_leave()?;
            if cx.json {
                return cx.out.value(&serde_json::json!({"left": id}));
            }
            cx.out.note(&format!(
                "left project {id}; this folder is in local mode again (what you wrote stays in the project)"
            ))
        }
        TeamCommand::Invitations {
            server,
            token,
            allow_insecure_http,
        } => {
            let server = match server {
                Some(server) => server,
                None => {
                    let url = cx.open()?.settings().storage.server_url.clone();
                    if url.is_empty() {
                        return Err(Error::Usage("which server? pass --server URL".into()));
                    }
                    url
                }
            };
            let waiting = zblade_engine::invitations(
                &server,
                token.as_deref(),
                Transport::allowing_plain_http(allow_insecure_http),
            )?;
            if cx.json {
                return cx.out.value(&serde_json::json!({ "invitations": waiting }));
            }
            if waiting.is_empty() {
                return cx.out.note("no invitations waiting");
            }
            for i in &waiting {
                cx.out.note(&format!(
                    "{} ({:?}), {}'s project: {} invites you as {}; accept with `zblade team join {server} {}{}`",
                    i.project,
                    i.name,
                    i.owner,
                    i.invited_by,
                    i.role,
                    i.project,
                    if waiting.iter().filter(|j| j.project == i.project).count() > 1 {
                        format!(" --owner {}", i.owner)
                    } else {
                        String::new()
                    }
                ))?;
            }
            Ok(())
        }
        TeamCommand::Join {
            server,
            project_id,
            token,
            owner,
            allow_insecure_http,
        } => {
            let (_, joined) = Project::join_team(
                &cx.root,
                &server,
                token.as_deref(),
                &project_id,
                owner.as_deref(),
                Transport::allowing_plain_http(allow_insecure_http),
            )?;
            if cx.json {
                return cx
                    .out
                    .value(&serde_json::to_value(&joined).expect("a report serializes"));
            }
            cx.out.note(&format!(
                "joined {}'s project {} on {} as {} ({}); this folder now reads and writes its memory",
                joined.owner, joined.project, joined.server, joined.user, joined.role
            ))?;
            match (&joined.embedding_model, joined.model_missing) {
                (Some(model), true) => cx.out.note(&format!(
                    "the project embeds with {model}, which this machine lacks: `zblade models download {model} --allow-network` \
                     (until then its search here is by keywords only)"
                )),
                (Some(model), false) => cx
                    .out
                    .note(&format!("search: hybrid, with the project's model {model}")),
                (None, _) => Ok(()),
            }
        }
    }
}

/// `2026-11-26T10:00:00.000Z` → `2026-11-26 10:00`.
fn short_time(at: &str) -> String {
    at.get(..16)
        .map(|t| t.replace('T', " "))
        .unwrap_or_else(|| at.to_string())
}
