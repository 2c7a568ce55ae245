//! `zblade list conversations|documents|commits|moments`.

use zblade_engine::{DOCUMENT_SOURCE, Error, ImportSource, Page};

use super::Ctx;
use crate::cli::ListCommand;

pub(crate) fn run(cx: &mut Ctx, list: ListCommand) -> Result<(), Error> {
    let project = cx.open()?;
    match list {
        ListCommand::Conversations { source, limit, offset } => {
            let source = source.map(ImportSource::as_str);
            cx.out
                .print(project.list_conversations(Page::new(limit, offset), source)?.as_slice())
        }
        ListCommand::Documents { limit, offset } => cx.out.print(
            project
                .list_conversations(Page::new(limit, offset), Some(DOCUMENT_SOURCE))?
                .as_slice(),
        ),
        ListCommand::Commits { limit, offset } => cx.out.print(project.list_commits(limit, offset)?.as_slice()),
        ListCommand::Moments { kind, limit, offset } => cx.out.print(
            project
                .list_moments(Page::new(limit, offset), kind.map(|k| k.as_str()))?
                .as_slice(),
        ),
    }
}
