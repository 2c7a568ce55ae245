//! `zblade fsck [--repair]`: artifacts and index checked against each other; exit 1 when
//! anything is wrong, so scripts can tell.

use std::process::ExitCode;

use zblade_engine::Error;

use super::Ctx;
use crate::render::FsckOutcome;

pub(crate) fn run(cx: &mut Ctx, repair: bool) -> Result<ExitCode, Error> {
    let mut project = cx.open()?;
    let report = project.fsck(repair)?;
    cx.out.print(&FsckOutcome {
        report: &report,
        repair,
    })?;
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
