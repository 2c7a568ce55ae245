//! `zblade summarize [CONVERSATION]`: what came before a conversation's recent turns.

use zblade_engine::Error;

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx, conversation: Option<&str>, force: bool) -> Result<(), Error> {
    let mut project = cx.open()?;
    let report = project.summarize(conversation, force)?;
    cx.out.print(&report)
}
