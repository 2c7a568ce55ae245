//! `zblade sync-metadata`: local mode's opt-in sync of titles and tags (never content).

use zblade_engine::Error;

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx, token: Option<String>) -> Result<(), Error> {
    let project = cx.open()?;
    let sent = project.sync_metadata(token.as_deref())?;
    if cx.json {
        cx.out.value(&serde_json::json!({"sent": sent}))
    } else {
        cx.out.note(&format!(
            "sent titles and tags of {sent} record(s); no content left this machine"
        ))
    }
}
