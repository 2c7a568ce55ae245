//! `zblade doctor`: each coding agent's connection to this project's memory (see
//! `zblade_mcp::doctor`).

use zblade_engine::Error;
use zblade_mcp::doctor::agent_health;
use zblade_mcp::install::Places;

use super::Ctx;
use crate::render::Doctor;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let project = cx.open()?;
    let root = project.layout().root();
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let agents = agent_health(&root, &project.sources(), &Places::from_env());
    cx.out.print(&Doctor(&agents))
}
