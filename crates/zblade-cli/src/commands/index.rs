//! `zblade index`: project files, embeddings and summaries brought up to date, with progress.

use zblade_engine::{Error, IndexStage};

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let mut project = cx.open()?;
    let mut bar = cx.bar();
    let report = project.update_search_index(&mut |stage, done, total| {
        let what = match stage {
            IndexStage::Conversations => "converting conversations",
            IndexStage::Files => "files",
            IndexStage::History => "history",
            IndexStage::Embedding => "embedding",
            IndexStage::Summaries => "summaries",
        };
        bar.update(what, done, total);
    })?;
    bar.finish();
    if let Some(notice) = &report.notice {
        cx.notice(notice);
    }
    cx.out.print(&report)
}
