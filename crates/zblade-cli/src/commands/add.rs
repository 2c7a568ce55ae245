//! `zblade add conversation|moment|document FILE…`: every file is read and parsed first, so
//! one bad file means nothing is added.

use std::io::Read;
use std::path::Path;

use zblade_engine::{Error, parse_conversation, parse_moment};

use super::Ctx;
use crate::cli::AddCommand;
use crate::render::Added;

pub(crate) fn run(cx: &mut Ctx, add: AddCommand) -> Result<(), Error> {
    let mut project = cx.open()?;
    let (files, is_moment) = match add {
        AddCommand::Conversation { files } => (files, false),
        AddCommand::Moment { files } => (files, true),
        AddCommand::Document { files } => {
            let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
            let added = project.add_documents(&paths)?;
            if added.redacted > 0 {
                cx.notice(&format!(
                    "{} secret(s) redacted before anything was written",
                    added.redacted
                ));
            }
            super::embed_added(cx, &mut project);
            return cx.out.print(&Added {
                outcomes: &added.added,
                is_moment: false,
            });
        }
    };
    let mut inputs = Vec::with_capacity(files.len());
    for file in &files {
        inputs.push(read_input(file)?);
    }
    let outcomes = if is_moment {
        let parsed = inputs
            .iter()
            .map(|(bytes, name)| Ok((parse_moment(bytes, name)?, name.clone())));
        project.add_moments(parsed.collect::<Result<_, Error>>()?)?
    } else {
        let parsed = inputs
            .iter()
            .map(|(bytes, name)| Ok((parse_conversation(bytes, name)?, name.clone())));
        project.add_conversations(parsed.collect::<Result<_, Error>>()?)?
    };
    let redacted: usize = outcomes.iter().map(|o| o.redacted).sum();
    if redacted > 0 {
        cx.notice(&format!("{redacted} secret(s) redacted before anything was written"));
    }
    super::embed_added(cx, &mut project);
    cx.out.print(&Added {
        outcomes: &outcomes,
        is_moment,
    })
}

/// Reads a file, or standard input for `-`; returns the bytes and the name for error messages.
fn read_input(file: &str) -> Result<(Vec<u8>, String), Error> {
    if file == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("<stdin>", e))?;
        return Ok((bytes, "<stdin>".to_string()));
    }
    let path = Path::new(file);
    if path.is_dir() {
        return Err(Error::Usage(format!("{file}: is a directory; give a JSON file")));
    }
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(format!("{file}: no such file")),
        _ => Error::io(path, e),
    })?;
    Ok((bytes, file.to_string()))
}
