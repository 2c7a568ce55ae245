//! `zblade status`: counts, sizes, storage mode and index health.

use zblade_engine::Error;

use super::Ctx;
use crate::render::ProjectStatus;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let project = cx.open()?;
    // A damaged index shows in the status itself; reference counts are then unknown.
    let health = project.reference_health().unwrap_or_default();
    cx.out.print(&ProjectStatus {
        status: &project.status()?,
        health: &health,
    })
}
