//! `zblade list conversations|moments`.

use zblade_engine::Error;

use super::Ctx;
use crate::cli::ListCommand;

pub(crate) fn run(cx: &mut Ctx, list: ListCommand) -> Result<(), Error> {
    let project = cx.open()?;
    match list {
        ListCommand::Conversations { limit, offset } => {
            cx.out.print(project.list_conversations(limit, offset)?.as_slice())
        }
        ListCommand::Moments { kind, limit, offset } => cx.out.print(
            project
                .list_moments(limit, offset, kind.map(|k| k.as_str()))?
                .as_slice(),
        ),
    }
}
