//! `zblade proxy`: runs the model proxy on this project until Ctrl-C, and `zblade proxy
//! receipts`: what it added to recent requests. The proxy itself is in zblade-proxy.

use std::sync::{Arc, Mutex};

use zblade_engine::Error;
use zblade_proxy::ProxyOptions;
use zblade_proxy::receipts;

use super::Ctx;
use crate::cli::{ProxyArgs, ProxyCommand};
use crate::render::Receipts;

pub(crate) fn run(cx: &mut Ctx, args: ProxyArgs) -> Result<(), Error> {
    if let Some(ProxyCommand::Receipts { id, limit }) = args.command {
        let project = cx.open()?;
        let dir = project.layout().dir();
        let listed = match id {
            Some(id) => Receipts {
                receipts: vec![receipts::get(dir, &id).map_err(Error::NotFound)?],
                unreadable: 0,
                one: true,
            },
            None => {
                let (receipts, unreadable) = receipts::list(dir, limit);
                Receipts {
                    receipts,
                    unreadable,
                    one: false,
                }
            }
        };
        return cx.out.print(&listed);
    }

    let project = cx.open()?;
    let mut options = ProxyOptions::from_settings(&project.settings().proxy).map_err(Error::Usage)?;
    if let Some(listen) = args.listen {
        options.listen = listen;
    }
    if let Some(upstream) = args.upstream {
        options.openai_upstream = upstream.clone();
        options.anthropic_upstream = upstream;
    }
    if let Some(url) = args.openai_upstream {
        options.openai_upstream = url;
    }
    if let Some(url) = args.anthropic_upstream {
        options.anthropic_upstream = url;
    }
    if let Some(why) = project.semantic_unavailable() {
        cx.notice(&why);
    }
    // Load what the first request would (tokenizer, embedding model, vector table) now, so the
    // user's first request through the proxy is not the slow one.
    if let Err(e) = zblade_engine::warm::run(&project, &zblade_engine::warm::warm_up_request()) {
        cx.notice(&format!("warming up: {e}"));
    }
    let memory: Arc<dyn zblade_proxy::Memory> = Arc::new(Arc::new(Mutex::new(project)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))?;
    let root = cx.root.clone();
    runtime.block_on(async {
        let listening = zblade_proxy::serve(memory, options.clone())
            .await
            .map_err(Error::Usage)?;
        let addr = listening.addr;
        eprintln!(
            "zblade: model proxy for {} on http://{addr} (Ctrl-C stops)",
            root.display()
        );
        eprintln!(
            "  OpenAI-style  → {}   (clients: OPENAI_BASE_URL=http://{addr}/v1)",
            options.openai_upstream
        );
        eprintln!(
            "  Anthropic     → {}   (Claude Code: ANTHROPIC_BASE_URL=http://{addr})",
            options.anthropic_upstream
        );
        let stop = listening.stop.clone();
        let stats = Arc::clone(&listening.stats);
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
        });
        listening.wait().await.map_err(Error::Environment)?;
        let counts = stats.counts();
        eprintln!(
            "zblade: proxy stopped after {} requests ({} with memory, {} turns recorded, {} zblade errors)",
            counts.requests, counts.injected, counts.recorded, counts.errors
        );
        Ok(())
    })
}
