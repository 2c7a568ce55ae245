//! `zblade context QUERY…`: the memory most useful for a query, packed into a budget.

use zblade_engine::{ContextRequest, Error};

use super::Ctx;
use crate::cli::ContextArgs;
use crate::render::Assembled;

pub(crate) fn run(cx: &mut Ctx, args: ContextArgs) -> Result<(), Error> {
    let project = cx.open()?;
    let request = ContextRequest {
        query: args.query.join(" "),
        budget: args.budget.unwrap_or(project.settings().context.max_tokens as usize),
        conversation: args.conversation,
        format: args.format.into(),
        tier: args.tier.into(),
        mode: args.mode.map(Into::into),
    };
    let result = project.context(&request)?;
    for notice in &result.notices {
        cx.notice(notice);
    }
    cx.out.print(&Assembled {
        result: &result,
        receipt: args.receipt,
    })
}
