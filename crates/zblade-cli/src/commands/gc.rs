//! `zblade gc`: drop stored messages, vectors and model tables nothing uses any more.

use zblade_engine::Error;

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let mut project = cx.open()?;
    let messages = project.gc_messages()?;
    let (dropped, removed) = project.gc()?;
    if cx.json {
        return cx.out.value(
            &serde_json::json!({"removed_messages": messages, "dropped_tables": dropped, "removed_vectors": removed}),
        );
    }
    cx.out.note(&format!(
        "Removed {messages} unreferenced message(s), {removed} unused vector(s) and {} old model table(s){}.",
        dropped.len(),
        if dropped.is_empty() {
            String::new()
        } else {
            format!(": {}", dropped.join(", "))
        }
    ))
}
