//! `zblade search QUERY…`: keyword, semantic or hybrid; the engine indexes files changed since
//! indexing again before their hits are shown.

use zblade_engine::{Error, SearchFilter, SearchQuery};

use super::Ctx;
use crate::cli::SearchArgs;
use crate::render::Results;

pub(crate) fn run(cx: &mut Ctx, args: SearchArgs) -> Result<(), Error> {
    let mut project = cx.open()?;
    let filter = SearchFilter {
        conversation: args.conversation,
        path_prefix: args.path,
        since: args.since.map(|t| parse_time(&t, "--since")).transpose()?,
        until: args.until.map(|t| parse_time(&t, "--until")).transpose()?,
    };
    let text = args.query.join(" ");
    let query = SearchQuery::new(text.clone(), args.limit, args.kind).with_filter(filter);
    let results = project.search(&query.in_mode(args.mode))?;
    if let Some(notice) = &results.notice {
        cx.notice(notice);
    }
    cx.out.print(&Results {
        results: &results,
        query: &text,
    })
}

/// A `--since`/`--until` value as an index timestamp.
fn parse_time(text: &str, what: &str) -> Result<String, Error> {
    zblade_engine::parse_time_bound(text, what, std::time::SystemTime::now().into())
}
