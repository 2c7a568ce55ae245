//! `zblade serve`: keeps this project's engine warm for short-lived zblade processes (agent
//! hooks, `zblade context`), which ask it over a private local socket (see
//! `zblade_engine::warm`). The embedding model and tokenizer are loaded once, up front.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use zblade_engine::Error;
use zblade_engine::warm::{self, WarmRequest};

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx) -> Result<(), Error> {
    let project = cx.open()?;
    let started = Instant::now();
    // Load what a cold process would: the first context request loads the model and tokenizer.
    if let Err(e) = WarmRequest::warm_up().run(&project) {
        cx.notice(&format!("warming up: {e}"));
    }
    if let Some(why) = project.semantic_unavailable() {
        cx.notice(&why);
    }
    let project = Arc::new(Mutex::new(project));
    let server = warm::serve(&cx.root, move |request| {
        let project = project.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        request.run(&project)
    })
    .map_err(|e| Error::Usage(format!("cannot serve this project: {e}")))?;
    eprintln!(
        "zblade: engine warm for {} in {:.0} ms; serving on {} (Ctrl-C stops)",
        cx.root.display(),
        started.elapsed().as_secs_f64() * 1000.0,
        server.socket().display()
    );
    let (tx, rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = tx.send(());
    })
    .map_err(|e| Error::Usage(format!("cannot handle Ctrl-C: {e}")))?;
    let _ = rx.recv();
    drop(server);
    Ok(())
}
