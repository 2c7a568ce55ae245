//! `zblade moments extract|supersede|reject|reinstate|decisions`.

use zblade_engine::Error;

use super::Ctx;
use crate::cli::MomentsCommand;
use crate::render::Stands;

pub(crate) fn run(cx: &mut Ctx, command: MomentsCommand) -> Result<(), Error> {
    let mut project = cx.open()?;
    match command {
        MomentsCommand::Extract { conversation } => {
            let report = project.extract_moments(conversation.as_deref())?;
            cx.out.print(&report)
        }
        MomentsCommand::Supersede { old, new } => cx.out.print(&project.supersede(&old, &new)?),
        MomentsCommand::Reject { id, reason } => cx.out.print(&project.reject(&id, &reason)?),
        MomentsCommand::Reinstate { id } => {
            project.reinstate(&id)?;
            cx.out.print(&Stands { id: &id })
        }
        MomentsCommand::Decisions => cx.out.print(project.decision_states()?.as_slice()),
    }
}
