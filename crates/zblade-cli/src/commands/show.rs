//! `zblade show ID`: a conversation, moment or message.

use zblade_engine::Error;

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx, id: &str) -> Result<(), Error> {
    let project = cx.open()?;
    cx.out.print(&project.show(id)?)
}
