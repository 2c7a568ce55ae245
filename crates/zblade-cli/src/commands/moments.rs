//! `zblade moments extract [CONVERSATION]`.

use zblade_engine::Error;

use super::Ctx;
use crate::cli::MomentsCommand;

pub(crate) fn run(cx: &mut Ctx, command: MomentsCommand) -> Result<(), Error> {
    let MomentsCommand::Extract { conversation } = command;
    let mut project = cx.open()?;
    let report = project.extract_moments(conversation.as_deref())?;
    cx.out.print(&report)
}
