//! `zblade init`: create `.zblade/` (safe to run again).

use zblade_engine::{Error, Project};

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let (_, report) = Project::init(&cx.root)?;
    // For `zblade history --all-projects`: the list holds paths only.
    zblade_engine::remember_project(&cx.root);
    cx.out.print(&report)
}
