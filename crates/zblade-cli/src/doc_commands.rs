//! Every `zblade …` command that README.md and docs/*.md show, inline or in a shell block, is
//! parsed here by the real command line: a renamed flag or a missing argument in the docs fails
//! this test. Placeholders (`FILE`, `conv_01J…`, `[--dry-run]`, `a|b`) become sample values
//! first. tests/docs runs the shell blocks' commands for real in a scratch project.

use clap::Parser;

use crate::cli::Cli;

/// The documents whose commands must parse.
fn documents() -> Vec<(String, String)> {
    // Asked at run time: a test binary cargo reuses from another checkout would read its docs.
    let root = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), std::path::PathBuf::from)
        .join("../..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a readable document");
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect()
}

/// Where a documented command was written: a line of a shell block is an invocation, which
/// must be complete; an inline span may name a command in prose (`zblade context`), whose
/// required arguments the sentence does not give.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Written {
    Block,
    Inline,
}

/// `zblade …` commands in `text`: inline code spans, and lines of fenced shell blocks (with
/// `\` continuations joined and comments removed), each with its line number.
fn commands(text: &str) -> Vec<(usize, String, Written)> {
    let mut found = Vec::new();
    // Inside a fence: whether it is a shell block (```sh, bash, shell, console).
    let mut fence: Option<bool> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(language) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(language.trim(), "sh" | "bash" | "shell" | "console")),
            };
            continue;
        }
        if fence == Some(false) {
            continue;
        }
        if fence == Some(true) {
            if trimmed.starts_with('#') && pending.is_none() {
                continue;
            }
            let (number, mut command) = pending.take().unwrap_or((i + 1, String::new()));
            let without_comment = trimmed.split(" #").next().unwrap_or("").trim();
            command.push_str(without_comment.trim_end_matches('\\'));
            command.push(' ');
            if without_comment.ends_with('\\') {
                pending = Some((number, command));
            } else if let Some(start) = command
                .match_indices("zblade ")
                .map(|(at, _)| at)
                .find(|&at| at == 0 || command[..at].ends_with(' '))
            {
                // After `VAR=… ` prefixes and `$ ` prompts.
                let command = command[start..].trim().to_string();
                found.push((number, command, Written::Block));
            }
            continue;
        }
        for (j, span) in line.split('`').enumerate() {
            // Command lines, not diagrams or JSON that mention zblade.
            let prose = span
                .chars()
                .any(|c| matches!(c, '(' | ')' | '·' | '"' | '{' | '}' | ','));
            if j % 2 == 1 && span.starts_with("zblade ") && !prose {
                found.push((i + 1, span.to_string(), Written::Inline));
            }
        }
    }
    found
}

/// The words clap would get, placeholders replaced: optional `[…]` groups dropped, the first of
/// `a|b` kept, `…`-ids and capitalised names given sample values.
fn words(command: &str) -> Vec<String> {
    let mut text = String::new();
    let mut depth = 0;
    for c in command.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => text.push(c),
            _ => {}
        }
    }
    let mut out = Vec::new();
    let mut quote: Option<char> = None;
    let mut word = String::new();
    for c in text.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ' ' | '\t') => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    let mut words: Vec<String> = out
        .into_iter()
        .take_while(|w| !matches!(w.as_str(), "|" | "&&" | ";" | ">" | "2>" | "&"))
        .filter(|w| !matches!(w.as_str(), "…" | "..."))
        .map(|w| {
            let first = w.split("\\|").next().unwrap_or(&w);
            sample(first.split('|').next().unwrap_or(first))
        })
        .collect();
    // The agent an import names: any of them parses the same.
    if words.get(1).is_some_and(|w| w == "import") && words.get(2).is_some_and(|w| w == "x") {
        words[2] = "claude-code".into();
    }
    words
}

/// A value for a placeholder word; other words as they are.
fn sample(word: &str) -> String {
    let bare = word.trim_end_matches('…').trim_end_matches("...");
    let is_name = !bare.is_empty()
        && bare
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-')
        && bare.chars().any(|c| c.is_ascii_uppercase());
    if is_name {
        return match bare {
            "N" | "K" | "INDEX" | "PORT" | "TOKENS" | "LIMIT" | "MINUTES" | "SECONDS" => "3".into(),
            "URL" => "http://127.0.0.1:9/".into(),
            "COMMAND" => "search".into(),
            _ => "x".into(),
        };
    }
    if word.ends_with(":PORT") {
        return word.replace(":PORT", ":7400");
    }
    if word.contains('…') {
        let prefix = word.split('…').next().unwrap_or("");
        return format!("{prefix}x");
    }
    word.to_string()
}

#[test]
fn every_documented_command_parses() {
    use clap::error::ErrorKind::{
        DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand, DisplayVersion, InvalidValue, MissingRequiredArgument,
        MissingSubcommand,
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, text) in documents() {
        for (line, command, written) in commands(&text) {
            let args = words(&command);
            if args.len() < 2 {
                continue; // `zblade` alone names the program, not a command
            }
            checked += 1;
            let Err(e) = Cli::try_parse_from(&args) else {
                continue;
            };
            // A command named in a sentence need not carry its arguments; its words and flags
            // must still exist.
            let named_only = written == Written::Inline
                && (matches!(
                    e.kind(),
                    MissingRequiredArgument | MissingSubcommand | DisplayHelpOnMissingArgumentOrSubcommand
                ) || (e.kind() == InvalidValue && args.last().is_some_and(|w| w.starts_with("--"))));
            if !matches!(e.kind(), DisplayHelp | DisplayVersion) && !named_only {
                let why = e.to_string().lines().next().unwrap_or_default().to_string();
                failures.push(format!("{name}:{line}: `{command}` ({args:?}): {why}"));
            }
        }
    }
    assert!(checked > 100, "only {checked} documented commands found");
    assert!(
        failures.is_empty(),
        "{} of {checked} documented commands do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{checked} documented commands parse");
}

#[test]
fn placeholders_become_sample_values() {
    assert_eq!(
        words("zblade search WORDS [--limit N] --mode keyword|semantic"),
        ["zblade", "search", "x", "--mode", "keyword"]
    );
    assert_eq!(words("zblade show conv_01J…"), ["zblade", "show", "conv_01Jx"]);
    assert_eq!(
        words("zblade context \"why it fails\" --budget 2000 | jq ."),
        ["zblade", "context", "why it fails", "--budget", "2000"]
    );
}
