//! `zblade init`: create `.zblade/` (safe to run again).

use zblade_engine::{Error, Project};

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let (_, report) = Project::init(&cx.root)?;
    cx.out.print(&report)
}
