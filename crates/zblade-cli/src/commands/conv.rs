//! `zblade conv …`, `zblade history` and `zblade stats`: the conversation graph.

use std::io::Write;

use zblade_engine::{Error, ForkTree, GraphOutcome, Lineage, LineageNode, MessageSelector, Prompt};

use super::Ctx;
use crate::cli::ConvCommand;
use crate::render::human_bytes;

pub(crate) fn run(cx: &mut Ctx, command: ConvCommand) -> Result<(), Error> {
    match command {
        ConvCommand::Fork { id, after, title } => {
            let mut project = cx.open()?;
            let after: MessageSelector = after.parse()?;
            let fork = project.fork_conversation(&id, &after, title.as_deref())?;
            outcome(
                cx,
                &fork,
                &format!("Forked {id} after message {} as", fork.affected - 1),
            )
        }
        ConvCommand::Merge {
            target,
            source,
            messages,
            at,
        } => {
            let mut project = cx.open()?;
            let merged = project.merge_messages(&target, &source, &messages, at)?;
            let place = at.map(|at| format!(", inserted at {at},")).unwrap_or_default();
            outcome(
                cx,
                &merged,
                &format!("Merged {} message(s) of {source}{place} into", merged.affected),
            )
        }
        ConvCommand::CherryPick {
            target,
            source,
            index,
            context,
        } => {
            let mut project = cx.open()?;
            let picked = project.cherry_pick(&target, &source, index, context)?;
            outcome(
                cx,
                &picked,
                &format!("Cherry-picked message {index} of {source} (with {context} before it) into"),
            )
        }
        ConvCommand::Lineage { id } => {
            let project = cx.open()?;
            let lineage = project.lineage(&id)?;
            if cx.json {
                return cx
                    .out
                    .value(&serde_json::to_value(&lineage).expect("lineage serialises"));
            }
            print_lineage(cx, &lineage)
        }
        ConvCommand::Rename { id, title } => {
            let mut project = cx.open()?;
            project.rename_conversation(&id, &title)?;
            if cx.json {
                return cx
                    .out
                    .value(&serde_json::json!({"conversation_id": id, "title": title.trim()}));
            }
            cx.out.note(&format!("Renamed {id} to {:?}.", title.trim()))
        }
        ConvCommand::Delete { id } => {
            let mut project = cx.open()?;
            project.delete_conversation(&id)?;
            if cx.json {
                return cx.out.value(&serde_json::json!({"deleted": id}));
            }
            cx.out.note(&format!(
                "Deleted {id}. Messages other conversations use were kept; `zblade gc` removes the rest."
            ))
        }
        ConvCommand::Export { id, format } => {
            let project = cx.open()?;
            let text = project.export_conversation(&id, format)?;
            write_raw(cx, &text)
        }
        ConvCommand::Resume { id } => {
            let project = cx.open()?;
            let conv = project.resume_conversation(id.as_deref())?;
            if cx.json {
                return write_raw(cx, &String::from_utf8_lossy(&conv.to_artifact_json()));
            }
            cx.out.note(&format!(
                "Resuming {}: {} ({} messages)",
                conv.conversation_id,
                conv.title,
                conv.messages.len()
            ))?;
            cx.out.print(&project.show(&conv.conversation_id)?)
        }
    }
}

pub(crate) fn history(cx: &mut Ctx, search: Option<&str>, limit: usize, all_projects: bool) -> Result<(), Error> {
    let prompts: Vec<(Option<String>, Prompt)> = if all_projects {
        zblade_engine::history_of_all_projects(search, limit)?
            .into_iter()
            .map(|(root, p)| (Some(root.display().to_string()), p))
            .collect()
    } else {
        cx.open()?
            .history(search, limit)?
            .into_iter()
            .map(|p| (None, p))
            .collect()
    };
    if cx.json {
        let rows: Vec<serde_json::Value> = prompts
            .iter()
            .map(|(project, p)| {
                let mut value = serde_json::to_value(p).expect("prompts serialise");
                if let Some(project) = project {
                    value["project"] = project.clone().into();
                }
                value
            })
            .collect();
        return cx.out.value(&serde_json::Value::Array(rows));
    }
    if prompts.is_empty() {
        return cx.out.note(match search {
            Some(_) => "No prompt matches.",
            None => "No prompts recorded yet.",
        });
    }
    for (project, p) in &prompts {
        let times = if p.times > 1 {
            format!(" ×{}", p.times)
        } else {
            String::new()
        };
        let place = project.as_deref().map(|p| format!("  {p}")).unwrap_or_default();
        cx.out.note(&format!(
            "{}  {}{times}  {}{place}",
            &p.time[..16.min(p.time.len())].replace('T', " "),
            p.conversation_id,
            zblade_engine::one_line(&p.text, 100)
        ))?;
    }
    Ok(())
}

pub(crate) fn stats(cx: &mut Ctx) -> Result<(), Error> {
    let project = cx.open()?;
    let stats = project.store_stats()?;
    if cx.json {
        return cx.out.value(&serde_json::to_value(&stats).expect("stats serialise"));
    }
    let lines = [
        format!("Conversations:       {}", stats.conversations),
        format!("Message references:  {}", stats.message_references),
        format!(
            "Messages stored:     {} ({})",
            stats.stored_messages,
            human_bytes(stats.stored_bytes)
        ),
        format!("Shared messages:     {}", stats.shared_messages),
        format!(
            "Saved by sharing:    {} (copies would take {})",
            human_bytes(stats.bytes_saved),
            human_bytes(stats.bytes_if_copied)
        ),
        format!("Orphan messages:     {} (`zblade gc` removes them)", stats.orphans),
    ];
    for line in lines {
        cx.out.note(&line)?;
    }
    if stats.inline_conversations > 0 {
        cx.out.note(&format!(
            "{} conversation(s) still hold their messages inline; `zblade index` converts them.",
            stats.inline_conversations
        ))?;
    }
    for problem in &stats.unreadable {
        cx.out.note(&format!("unreadable: {problem}"))?;
    }
    Ok(())
}

fn outcome(cx: &mut Ctx, outcome: &GraphOutcome, what: &str) -> Result<(), Error> {
    if cx.json {
        return cx
            .out
            .value(&serde_json::to_value(outcome).expect("outcomes serialise"));
    }
    cx.out.note(&format!(
        "{what} {}: {} ({} messages).",
        outcome.conversation_id, outcome.title, outcome.messages
    ))
}

fn write_raw(cx: &mut Ctx, text: &str) -> Result<(), Error> {
    let w = cx.out.writer();
    w.write_all(text.as_bytes())
        .and_then(|()| {
            if text.ends_with('\n') {
                Ok(())
            } else {
                w.write_all(b"\n")
            }
        })
        .map_err(|e| Error::io("<stdout>", e))
}

fn node_line(node: &LineageNode) -> String {
    let after = node
        .forked_after
        .map(|a| format!(", forked after message {a}"))
        .unwrap_or_default();
    format!("{}  {} ({} messages{after})", node.id, node.title, node.messages)
}

fn print_lineage(cx: &mut Ctx, lineage: &Lineage) -> Result<(), Error> {
    for (depth, ancestor) in lineage.ancestors.iter().rev().enumerate() {
        cx.out.note(&format!("{}{}", "  ".repeat(depth), node_line(ancestor)))?;
    }
    let depth = lineage.ancestors.len();
    cx.out
        .note(&format!("{}▶ {}", "  ".repeat(depth), node_line(&lineage.conversation)))?;
    if let Some(missing) = lineage
        .conversation
        .forked_from
        .as_ref()
        .filter(|_| lineage.ancestors.is_empty())
    {
        cx.out.note(&format!("  (forked from {missing}, which was deleted)"))?;
    }
    fn forks(cx: &mut Ctx, trees: &[ForkTree], depth: usize) -> Result<(), Error> {
        for tree in trees {
            cx.out
                .note(&format!("{}└─ {}", "  ".repeat(depth), node_line(&tree.conversation)))?;
            forks(cx, &tree.forks, depth + 1)?;
        }
        Ok(())
    }
    forks(cx, &lineage.forks, depth + 1)?;
    for merge in &lineage.merges {
        let line = if merge.into == lineage.conversation.id {
            format!(
                "merged in: {} message(s) from {} on {}",
                merge.messages,
                merge.from,
                &merge.merged_at[..10]
            )
        } else {
            format!(
                "merged out: {} message(s) into {} on {}",
                merge.messages,
                merge.into,
                &merge.merged_at[..10]
            )
        };
        cx.out.note(&line)?;
    }
    Ok(())
}
