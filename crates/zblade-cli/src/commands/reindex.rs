//! `zblade reindex`: rebuild the index from the artifacts alone.

use zblade_engine::Error;

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let mut project = cx.open()?;
    let report = project.reindex()?;
    cx.out.print(&report)
}
