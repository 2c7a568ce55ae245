//! `zblade context QUERY…`: the memory most useful for a query, packed into a budget. Asked of
//! the warm engine (the app or `zblade serve`) when one runs, else assembled in this process.

use std::io::Write;
use std::time::Duration;

use zblade_engine::warm;
use zblade_engine::{ContextRequest, Error};

use super::Ctx;
use crate::cli::ContextArgs;
use crate::render::{Assembled, WarmText};

/// How long a warm engine may take before this process does the work itself.
pub(crate) const WARM_TIMEOUT: Duration = Duration::from_secs(20);

pub(crate) fn run(cx: &mut Ctx, args: ContextArgs) -> Result<(), Error> {
    let request = ContextRequest {
        query: args.query.join(" "),
        budget: args.budget,
        conversation: args.conversation.clone(),
        format: args.format,
        tier: args.tier,
        mode: args.mode,
        exclude_conversation: None,
        min_relevance: args.floor(),
    };
    // A warm engine answers every output: plain text, or the whole result for --json and
    // --receipt. An engine that does not know the whole request (an older zblade still running)
    // sends text only; then this process assembles it.
    let whole = args.receipt || cx.json;
    let asked = if whole {
        warm::ask_whole(&cx.root, &request, WARM_TIMEOUT)
    } else {
        warm::ask(&cx.root, &request, WARM_TIMEOUT)
    };
    if let Some(answer) = asked {
        let answer = answer.map_err(Error::Usage)?;
        if !whole || answer.result.is_some() {
            for notice in &answer.notices {
                cx.notice(notice);
            }
            if let (true, Some(json)) = (cx.json, &answer.result) {
                return writeln!(cx.out.writer(), "{json}").map_err(|e| Error::io("<stdout>", e));
            }
            return cx.out.print(&WarmText {
                text: answer.text,
                receipt: answer.receipt.filter(|_| args.receipt),
            });
        }
    }
    // No warm engine: this process loads the models, answers once and exits.
    zblade_engine::tune_allocator_for_one_answer();
    let project = cx.open()?;
    let result = project.context(&request)?;
    // This process ends as soon as the pack is printed, and a hook waits for it to end: the
    // operating system takes back the models and tables faster than dropping them would (ONNX
    // Runtime's sessions, LanceDB's runtime and tables; ~10 ms of a cold context on two cores).
    // Nothing is lost: the context wrote what it keeps before it returned.
    std::mem::forget(project);
    for notice in &result.notices {
        cx.notice(notice);
    }
    cx.out.print(&Assembled {
        result: &result,
        receipt: args.receipt,
    })?;
    // For the same reason, the process ends here, skipping the C++ teardown exit() would run.
    match zblade_engine::exit_after_one_answer() {
        Err(e) => Err(Error::io("<stdout>", e)),
    }
}
