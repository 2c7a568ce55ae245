//! `zblade sync-metadata`: local mode's opt-in sync of titles and tags (never content).

use zblade_engine::Error;

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx, token: Option<String>) -> Result<(), Error> {
    let project = cx.open()?;
    if let Some(token) = token {
        let url = project.settings().storage.server_url.clone();
        if url.is_empty() {
            return Err(Error::Usage(
                "set storage.server_url in .zblade/config/settings.json first".into(),
            ));
        }
        zblade_sync::credentials::save(&url, &token)?;
    }
    let sent = project.sync_metadata()?;
    if cx.json {
        cx.out.value(&serde_json::json!({"sent": sent}))
    } else {
        cx.out.note(&format!(
            "sent titles and tags of {sent} record(s); no content left this machine"
        ))
    }
}
