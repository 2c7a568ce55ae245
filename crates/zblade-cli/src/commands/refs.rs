//! `zblade refs check|show`: code references against the working tree.

use zblade_engine::{Error, ReferenceStatus};

use super::Ctx;
use crate::cli::RefsCommand;
use crate::render::ReferencesChecked;

pub(crate) fn run(cx: &mut Ctx, command: RefsCommand) -> Result<(), Error> {
    match command {
        RefsCommand::Check { problems } => {
            let mut project = cx.open()?;
            let mut reports = project.check_references()?;
            let total = reports.len();
            if problems {
                reports.retain(|r| r.status != ReferenceStatus::Ok || r.drift.is_some());
            }
            cx.out.print(&ReferencesChecked { refs: &reports, total })
        }
        RefsCommand::Show { key } => {
            let project = cx.open()?;
            cx.out.print(&project.reference(&key)?)
        }
    }
}
