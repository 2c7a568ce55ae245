//! `zblade`, the front door: answers the two commands that run on every prompt — `zblade
//! context QUERY…` and an agent's prompt hook, `zblade hook prompt` — when a warm engine runs,
//! and hands every other command, unchanged, to the full command-line program (`zblade-cli`,
//! src/main.rs) by `exec`.
//!
//! Why a second program: the full one links the engine (LanceDB, DataFusion, Arrow, ONNX
//! Runtime, llama.cpp), and only loading it costs 10–15 ms and ~2,400 page faults on two cores
//! (the dynamic loader applies ~426,000 relocations), before `main` runs. An agent's prompt
//! hook pays that on every prompt, although with a warm engine it only forwards a question and
//! prints the answer. This program links zblade-warm and zblade-core's project discovery (and
//! serde_json and tempfile for a hook's event) and nothing else.
//!
//! It takes the fast path only for what it understands completely: `[--project DIR] [--json]
//! context [--budget N] WORD…` and `[--project DIR] hook prompt [--agent NAME]`, with a warm
//! engine answering. Anything else — another command, another flag, `--help`, no engine, the
//! engine's error — goes to the full program, which then does exactly what it always did (and
//! says what went wrong in its own words). The hook's event, read from stdin, goes along.

use std::ffi::OsString;
use std::io::{Read, Seek, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The full program's name, beside this one (a build's target folder) or in
/// `../lib/zblade/` from it (the Debian package: `/usr/lib/zblade/zblade-cli`).
const FULL_PROGRAM: &str = "zblade-cli";

/// How long a warm engine may take before the full program does the work itself (the same
/// limit the full program gives it: src/commands/context.rs).
const WARM_TIMEOUT: Duration = Duration::from_secs(20);

/// `zblade hook prompt`, answered here.
#[derive(Debug, PartialEq)]
struct HookAsked {
    project: Option<PathBuf>,
    agent: String,
}

impl HookAsked {
    /// The command line when it is `[--project DIR] hook prompt [--agent NAME]` (flags in any
    /// order clap would take them); `None` for anything else.
    fn parse(args: &[OsString]) -> Option<HookAsked> {
        let mut args = args.iter().map(|a| a.to_str());
        let mut asked = HookAsked {
            project: None,
            agent: "claude-code".into(), // clap's default (src/cli.rs)
        };
        let mut words: Vec<&str> = Vec::new();
        while let Some(arg) = args.next() {
            let arg = arg?;
            match arg {
                "--project" => asked.project = Some(PathBuf::from(args.next()?.filter(|v| !v.starts_with('-'))?)),
                "--agent" => asked.agent = args.next()?.filter(|v| !v.starts_with('-'))?.to_string(),
                _ if arg.starts_with("--project=") => asked.project = Some(PathBuf::from(&arg["--project=".len()..])),
                _ if arg.starts_with("--agent=") => asked.agent = arg["--agent=".len()..].to_string(),
                _ if arg.starts_with('-') => return None,
                _ => words.push(arg),
            }
        }
        let project_ok = asked.project.as_ref().is_none_or(|p| !p.as_os_str().is_empty());
        (words == ["hook", "prompt"] && project_ok && !asked.agent.is_empty()).then_some(asked)
    }
}

/// A `zblade context` the front door answers itself.
#[derive(Debug, PartialEq)]
struct Asked {
    project: Option<PathBuf>,
    json: bool,
    budget: Option<usize>,
    query: String,
}

impl Asked {
    /// The command line (without the program's name) when it is `[--project DIR] [--json]
    /// context [--budget N] WORD…` in any order clap would take it; `None` for anything else.
    fn parse(args: &[OsString]) -> Option<Asked> {
        let mut args = args.iter().map(|a| a.to_str());
        let mut asked = Asked {
            project: None,
            json: false,
            budget: None,
            query: String::new(),
        };
        let mut command = false;
        let mut words: Vec<&str> = Vec::new();
        while let Some(arg) = args.next() {
            let arg = arg?; // not UTF-8: the full program says what to do about it
            match arg {
                "--json" => asked.json = true,
                "--project" => asked.project = Some(PathBuf::from(args.next()?.filter(|v| !v.starts_with('-'))?)),
                "--budget" if command => asked.budget = Some(args.next()??.parse().ok()?),
                "context" if !command => command = true,
                _ if arg.starts_with("--project=") => asked.project = Some(PathBuf::from(&arg["--project=".len()..])),
                _ if command && arg.starts_with("--budget=") => {
                    asked.budget = Some(arg["--budget=".len()..].parse().ok()?)
                }
                // Any other flag (`--receipt`, `--help`, `--`, a short option, a negative
                // number clap would read as one) is the full program's.
                _ if arg.starts_with('-') => return None,
                _ if command => words.push(arg),
                _ => return None, // another command
            }
        }
        if !command || words.is_empty() || asked.project.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
            return None;
        }
        // As clap collects the words and src/commands/context.rs joins them.
        asked.query = words.join(" ");
        Some(asked)
    }

    fn root(&self) -> Option<PathBuf> {
        project_root(self.project.as_deref())
    }
}

/// The project's root as the full program finds it: `--project` when it is a folder, else the
/// nearest ancestor of the current folder that holds `.zblade/`, else the current folder.
fn project_root(project: Option<&Path>) -> Option<PathBuf> {
    match project {
        Some(dir) => dir.is_dir().then(|| dir.to_path_buf()),
        None => {
            let cwd = std::env::current_dir().ok()?;
            Some(
                zblade_core::Layout::discover(&cwd)
                    .map(|layout| layout.root().to_path_buf())
                    .unwrap_or(cwd),
            )
        }
    }
}

/// What answering in this process came to.
enum Answered {
    /// Printed; the program ends with this code.
    Done(ExitCode),
    /// Not answered here (no engine, or its error): the full program runs the command.
    NotHere,
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if let Some(asked) = Asked::parse(&args)
        && let Answered::Done(code) = answer(&asked)
    {
        return code;
    }
    if let Some(hook) = HookAsked::parse(&args) {
        return match answer_hook(&hook) {
            Ok(()) => ExitCode::SUCCESS,
            Err(event) => run_full_program_with_stdin(&args, &event),
        };
    }
    run_full_program(&args)
}

/// Reads the hook's event from stdin, asks the project's warm engine for the hook's whole
/// answer (`zblade_engine::prompt_hook`, which the full program prints too) and prints it.
/// `Err` holds the event when the engine did not answer: the full program then runs the hook,
/// reading those bytes (already taken from stdin) as its stdin.
fn answer_hook(hook: &HookAsked) -> Result<(), Vec<u8>> {
    let mut event = Vec::new();
    if std::io::stdin()
        .take(zblade_warm::MAX_EVENT_BYTES)
        .read_to_end(&mut event)
        .is_err()
    {
        return Err(event);
    }
    let Some(root) = project_root(hook.project.as_deref()) else {
        return Err(event);
    };
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(&event) else {
        return Err(event); // the full program says what is wrong with it
    };
    let asked = zblade_warm::PromptEvent::from_event(&json, &hook.agent);
    let Some(Ok(answer)) = zblade_warm::ask_prompt_hook(&root, &asked, WARM_TIMEOUT) else {
        return Err(event);
    };
    if !answer.text.is_empty() {
        let mut out = std::io::stdout().lock();
        // A hook never stands in the prompt's way: a reader that stopped reading is no failure.
        let _ = writeln!(out, "{}", answer.text).and_then(|()| out.flush());
    }
    Ok(())
}

/// Asks the project's warm engine and prints its answer as `zblade context` does.
fn answer(asked: &Asked) -> Answered {
    let Some(root) = asked.root() else {
        return Answered::NotHere;
    };
    let prompt = zblade_warm::Prompt {
        query: &asked.query,
        budget: asked.budget,
    };
    let printed = if asked.json {
        let whole = zblade_warm::Whole { whole: prompt };
        // An engine that sends text only (an older zblade still running): the full program
        // assembles the whole result itself.
        let Some(Ok(zblade_warm::WarmAnswer { result: Some(json), .. })) =
            zblade_warm::ask(&root, &whole, WARM_TIMEOUT)
        else {
            return Answered::NotHere;
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{json}").and_then(|()| out.flush())
    } else {
        let Some(Ok(answer)) = zblade_warm::ask(&root, &prompt, WARM_TIMEOUT) else {
            return Answered::NotHere;
        };
        for notice in &answer.notices {
            eprintln!("zblade: note: {notice}");
        }
        let mut out = std::io::stdout().lock();
        write!(out, "{}", answer.text).and_then(|()| out.flush())
    };
    Answered::Done(match printed {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped reading (`| head`) is no failure, as in the full program.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zblade: error: <stdout>: {e}");
            ExitCode::from(2)
        }
    })
}

/// [`run_full_program`] with `stdin` as its standard input: a file of its own, written and
/// unlinked (an event can be larger than a pipe holds, and nothing could write to a pipe once
/// this process is replaced).
fn run_full_program_with_stdin(args: &[OsString], stdin: &[u8]) -> ExitCode {
    let file = tempfile::tempfile().and_then(|mut file| {
        file.write_all(stdin)?;
        file.rewind()?;
        Ok(file)
    });
    match file {
        Ok(file) => exec_full_program(args, Some(file)),
        Err(e) => {
            // The event cannot be handed on; the prompt goes through without memory, as the
            // full program's hook does whatever goes wrong.
            eprintln!("zblade hook: cannot hand the event to {FULL_PROGRAM}: {e}");
            ExitCode::SUCCESS
        }
    }
}

/// Replaces this process with the full program, given the same arguments. It learns this
/// program's path (`ZBLADE_EXE`), which is what agents' configurations should start.
fn run_full_program(args: &[OsString]) -> ExitCode {
    exec_full_program(args, None)
}

/// [`run_full_program`], with `stdin` instead of this process's standard input when given.
fn exec_full_program(args: &[OsString], stdin: Option<std::fs::File>) -> ExitCode {
    let me = std::env::current_exe().ok();
    let Some(full) = me.as_deref().and_then(full_program) else {
        eprintln!(
            "zblade: error: cannot find the {FULL_PROGRAM} program beside {} or in ../lib/zblade/ from it; reinstall zblade",
            me.as_deref().map_or("this program".into(), |p| p.display().to_string())
        );
        return ExitCode::from(2);
    };
    let mut command = std::process::Command::new(&full);
    command.args(args);
    if let Some(stdin) = stdin {
        command.stdin(stdin);
    }
    if let Some(name) = std::env::args_os().next() {
        command.arg0(name); // `ps` shows what the user ran
    }
    if let Some(me) = &me {
        command.env("ZBLADE_EXE", me);
    }
    let e = command.exec(); // returns only when it failed
    eprintln!("zblade: error: cannot start {}: {e}", full.display());
    ExitCode::from(2)
}

/// The full program for this one at `me`.
fn full_program(me: &Path) -> Option<PathBuf> {
    let dir = me.parent()?;
    [dir.join(FULL_PROGRAM), dir.join("../lib/zblade").join(FULL_PROGRAM)]
        .into_iter()
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Option<Asked> {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        Asked::parse(&args)
    }

    #[test]
    fn only_a_plain_context_request_is_answered_here() {
        assert_eq!(
            parse("context --budget 8000 why bm25").unwrap(),
            Asked {
                project: None,
                json: false,
                budget: Some(8000),
                query: "why bm25".into()
            }
        );
        assert_eq!(
            parse("--project /p --json context why --budget=300 bm25").unwrap(),
            Asked {
                project: Some("/p".into()),
                json: true,
                budget: Some(300),
                query: "why bm25".into()
            }
        );
        // Global flags after the command, as clap takes them.
        let late = parse("context why --json --project=/p").unwrap();
        assert_eq!((late.json, late.project), (true, Some("/p".into())));
        for other in [
            "search why",
            "context",
            "context --receipt why",
            "context --help",
            "--help",
            "context --budget lots why",
            "context --budget",
            "context why -- --budget",
            "context -3 why",
            "--project",
            "--project -p context why",
            "--project= context why",
            "context --format markdown why",
            "context --mode keyword why",
            "show context",
            "index context why",
        ] {
            assert_eq!(parse(other), None, "{other:?} is the full program's");
        }
        // `context` is a word of the query once the command is named.
        assert_eq!(parse("context the context").unwrap().query, "the context");
    }

    #[test]
    fn only_a_prompt_hook_is_answered_here_among_the_hooks() {
        let parse = |line: &str| {
            let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
            HookAsked::parse(&args)
        };
        assert_eq!(
            parse("hook prompt").unwrap(),
            HookAsked {
                project: None,
                agent: "claude-code".into()
            }
        );
        assert_eq!(
            parse("--project /p hook prompt --agent gemini-cli").unwrap(),
            HookAsked {
                project: Some("/p".into()),
                agent: "gemini-cli".into()
            }
        );
        assert_eq!(parse("hook --agent=qwen-code prompt").unwrap().agent, "qwen-code");
        for other in [
            "hook stop",
            "hook pre-tool",
            "hook",
            "hook prompt extra",
            "hook prompt --agent",
            "hook prompt --agent=",
            "hook prompt --help",
            "hooks install claude-code",
            "--project= hook prompt",
            "context hook prompt",
        ] {
            assert_eq!(parse(other), None, "{other:?} is the full program's");
        }
    }

    #[test]
    fn words_that_are_not_utf8_go_to_the_full_program() {
        use std::os::unix::ffi::OsStringExt;
        let args = vec![OsString::from("context"), OsString::from_vec(vec![b'w', 0xff])];
        assert_eq!(Asked::parse(&args), None);
    }

    #[test]
    fn the_full_program_is_found_beside_or_in_the_package_folder() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let lib = dir.path().join("lib/zblade");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        let me = bin.join("zblade");
        assert_eq!(full_program(&me), None);
        std::fs::write(lib.join(FULL_PROGRAM), "").unwrap();
        assert_eq!(full_program(&me).unwrap(), bin.join("../lib/zblade").join(FULL_PROGRAM));
        std::fs::write(bin.join(FULL_PROGRAM), "").unwrap();
        assert_eq!(full_program(&me).unwrap(), bin.join(FULL_PROGRAM));
    }
}
