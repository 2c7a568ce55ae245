//! `zblade why FILE[:START-END]`: the commits, conversations and moments behind some lines.

use zblade_engine::{Error, parse_line_target};

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx, target: &str) -> Result<(), Error> {
    let project = cx.open()?;
    let (file, lines) = parse_line_target(target)?;
    cx.out.print(&project.why(&file, lines)?)
}
