//! One module per `zblade` command. Each takes the parsed arguments and a [`Ctx`] (the
//! project root, `--json`, standard output) and calls the engine; rendering is in
//! `render.rs`, so a command file reads as "what this command does".

pub(crate) mod add;
pub(crate) mod archive;
pub(crate) mod chat;
pub(crate) mod compressor;
pub(crate) mod context;
pub(crate) mod conv;
pub(crate) mod doctor;
pub(crate) mod fsck;
pub(crate) mod gc;
pub(crate) mod hook;
pub(crate) mod import;
pub(crate) mod index;
pub(crate) mod init;
pub(crate) mod list;
pub(crate) mod mcp;
pub(crate) mod migrate;
pub(crate) mod models;
pub(crate) mod moments;
pub(crate) mod proxy;
pub(crate) mod refs;
pub(crate) mod reindex;
pub(crate) mod search;
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod status;
pub(crate) mod summarize;
pub(crate) mod sync_metadata;
pub(crate) mod team;
pub(crate) mod watch;
pub(crate) mod why;

use std::io::{IsTerminal, StdoutLock};
use std::path::PathBuf;

use zblade_engine::{Error, Project};

use crate::progress::Bar;
use crate::render::Out;

/// What every command gets: where the project is, how to print, and whether `--json` is on.
pub(crate) struct Ctx<'a> {
    /// The project root (`--project`, or discovered from the current directory).
    pub root: PathBuf,
    /// `--json`: machine-readable output, notes off.
    pub json: bool,
    /// Standard output, text or JSON.
    pub out: Out<StdoutLock<'a>>,
}

impl Ctx<'_> {
    /// Opens the project at the root.
    pub fn open(&self) -> Result<Project, Error> {
        Project::open(&self.root)
    }

    /// A progress bar on standard error, drawn only for people (a terminal, no `--json`).
    pub fn bar(&self) -> Bar {
        Bar::new(std::io::stderr().is_terminal() && !self.json)
    }

    /// A one-line note on standard error for people; nothing with `--json`.
    pub fn notice(&self, notice: &str) {
        if !self.json {
            eprintln!("zblade: note: {notice}");
        }
    }
}

/// Embeds what a command just wrote, so it is found by meaning at once. A failure loses
/// nothing (the memory is written and keyword search finds it): it is said, with the fix.
pub(crate) fn embed_added(cx: &Ctx, project: &mut Project) {
    let mut bar = cx.bar();
    let embedded = project.embed_new_memory_with(&mut |done, total| bar.update("embed", done, total));
    bar.finish();
    if let Err(e) = embedded {
        cx.notice(&format!(
            "not embedded yet ({e}); `zblade index` will embed it for semantic search"
        ));
    }
}
