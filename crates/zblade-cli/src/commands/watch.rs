//! `zblade watch`: keep references and indexed files current until Ctrl-C.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use zblade_engine::{Error, WatchOptions};

use super::Ctx;

pub(crate) fn run(cx: &mut Ctx, debounce_ms: u64) -> Result<(), Error> {
    let mut project = cx.open()?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .map_err(|e| Error::Environment(format!("cannot install the Ctrl-C handler: {e}")))?;
    let options = WatchOptions {
        debounce: std::time::Duration::from_millis(debounce_ms),
        ..Default::default()
    };
    let mut result = Ok(());
    project.watch(options, &stop, |event| {
        if result.is_ok() {
            result = cx.out.watch_event(&event);
        }
    })?;
    result?;
    if !cx.json {
        eprintln!("zblade: stopped watching");
    }
    Ok(())
}
