//! A conversation's place in the graph — its ancestors, forks and merges — and the prompts
//! typed in a project, computed from the index (local storage) or from every conversation
//! (a sync server, which keeps no graph index). Neither knows the project or its storage: the
//! storages call these.

use std::collections::{HashMap, HashSet, VecDeque};

use serde::Serialize;
use zblade_core::{Conversation, Error, Message, Result, Role};
use zblade_index::{Index, LineageNode, MergeEdge, Prompt};

/// Where a conversation sits in the graph.
#[derive(Debug, Clone, Serialize)]
pub struct Lineage {
    /// The conversation asked about.
    pub conversation: LineageNode,
    /// Its parent, the parent's parent, … (nearest first).
    pub ancestors: Vec<LineageNode>,
    /// Its forks, each with theirs.
    pub forks: Vec<ForkTree>,
    /// Merges and cherry-picks into it and out of it.
    pub merges: Vec<MergeEdge>,
}

/// A fork and the forks made from it.
#[derive(Debug, Clone, Serialize)]
pub struct ForkTree {
    /// The fork.
    pub conversation: LineageNode,
    /// Forks of it.
    pub forks: Vec<ForkTree>,
}

/// The lineage of `id` from the index's graph tables.
pub(crate) fn in_index(index: &Index, id: &str) -> Result<Lineage> {
    let conversation = index
        .lineage_node(id)?
        .ok_or_else(|| Error::NotFound(format!("no conversation {id} in this project")))?;
    let mut ancestors = Vec::new();
    let mut chain = vec![id.to_string()];
    let mut parent = conversation.forked_from.clone();
    while let Some(pid) = parent {
        if chain.contains(&pid) {
            chain.push(pid);
            return Err(Error::Usage(format!(
                "the index records a cycle in fork lineage: {}; `zblade reindex` rebuilds it from the artifacts",
                chain.join(" → ")
            )));
        }
        chain.push(pid.clone());
        match index.lineage_node(&pid)? {
            Some(node) => {
                parent = node.forked_from.clone();
                ancestors.push(node);
            }
            // A deleted parent ends the chain; the fork still names it.
            None => break,
        }
    }
    // Forks breadth first; a conversation is visited once even if the index is damaged.
    let mut visited: HashSet<String> = HashSet::from([id.to_string()]);
    let mut children: HashMap<String, Vec<LineageNode>> = HashMap::new();
    let mut queue = VecDeque::from([id.to_string()]);
    while let Some(current) = queue.pop_front() {
        let forks: Vec<LineageNode> = index
            .forks_of(&current)?
            .into_iter()
            .filter(|f| visited.insert(f.id.clone()))
            .collect();
        queue.extend(forks.iter().map(|f| f.id.clone()));
        children.insert(current, forks);
    }
    let forks = fork_tree(id, &mut children);
    Ok(Lineage {
        conversation,
        ancestors,
        forks,
        merges: index.merges_of(id)?,
    })
}

fn fork_tree(id: &str, children: &mut HashMap<String, Vec<LineageNode>>) -> Vec<ForkTree> {
    children
        .remove(id)
        .unwrap_or_default()
        .into_iter()
        .map(|node| {
            let forks = fork_tree(&node.id, children);
            ForkTree {
                conversation: node,
                forks,
            }
        })
        .collect()
}

fn node_of(conv: &Conversation) -> LineageNode {
    LineageNode {
        id: conv.conversation_id.clone(),
        title: conv.title.clone(),
        messages: conv.messages.len() as i64,
        created_at: conv.created_at.map(zblade_index::timestamp).unwrap_or_default(),
        forked_from: conv.forked_from.as_ref().map(|f| f.conversation_id.clone()),
        forked_after: conv.forked_from.as_ref().map(|f| f.after_index as i64),
    }
}

/// Lineage computed from whole conversations (a sync server's), as the index answers it locally.
pub(crate) fn lineage_among(id: &str, convs: &[Conversation]) -> Result<Lineage> {
    let by_id: HashMap<&str, &Conversation> = convs.iter().map(|c| (c.conversation_id.as_str(), c)).collect();
    let conversation = by_id
        .get(id)
        .map(|c| node_of(c))
        .ok_or_else(|| Error::NotFound(format!("no conversation {id} on the sync server")))?;
    let mut ancestors = Vec::new();
    let mut seen = HashSet::from([id.to_string()]);
    let mut parent = conversation.forked_from.clone();
    while let Some(pid) = parent {
        if !seen.insert(pid.clone()) {
            break;
        }
        match by_id.get(pid.as_str()) {
            Some(c) => {
                let node = node_of(c);
                parent = node.forked_from.clone();
                ancestors.push(node);
            }
            None => break,
        }
    }
    let mut children: HashMap<String, Vec<LineageNode>> = HashMap::new();
    for conv in convs {
        if let Some(fork) = &conv.forked_from {
            children
                .entry(fork.conversation_id.clone())
                .or_default()
                .push(node_of(conv));
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    }
    // A cycle in damaged data must not recurse forever: keep only what is reachable once.
    let mut reachable = HashSet::from([id.to_string()]);
    let mut queue = VecDeque::from([id.to_string()]);
    while let Some(current) = queue.pop_front() {
        if let Some(list) = children.get_mut(&current) {
            list.retain(|n| reachable.insert(n.id.clone()));
            queue.extend(list.iter().map(|n| n.id.clone()));
        }
    }
    let forks = fork_tree(id, &mut children);
    let mut merges: Vec<MergeEdge> = convs
        .iter()
        .flat_map(|c| c.merged_from.iter().map(move |m| (c, m)))
        .filter(|(c, m)| c.conversation_id == id || m.conversation_id == id)
        .map(|(c, m)| MergeEdge {
            into: c.conversation_id.clone(),
            from: m.conversation_id.clone(),
            messages: m.indices.len() as i64,
            merged_at: zblade_index::timestamp(m.merged_at),
        })
        .collect();
    merges.sort_by(|a, b| a.merged_at.cmp(&b.merged_at));
    Ok(Lineage {
        conversation,
        ancestors,
        forks,
        merges,
    })
}

/// History computed from whole conversations (a sync server's): the same rules as the index's
/// (every word, the last as a prefix, case-insensitive; newest first; duplicates folded).
pub(crate) fn prompts_among(convs: &[Conversation], search: Option<&str>, limit: usize) -> Vec<Prompt> {
    let words: Vec<String> = search
        .unwrap_or_default()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let matches = |text: &str| {
        let tokens: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        words.iter().enumerate().all(|(i, w)| {
            let last = i + 1 == words.len();
            tokens.iter().any(|t| t == w || (last && t.starts_with(w.as_str())))
        })
    };
    let mut typed: Vec<(String, &Conversation, &Message)> = convs
        .iter()
        .flat_map(|c| c.messages.iter().map(move |m| (c, m)))
        .filter(|(_, m)| m.role == Role::User && matches(&m.content))
        .map(|(c, m)| {
            (
                m.timestamp
                    .or(c.created_at)
                    .map(zblade_index::timestamp)
                    .unwrap_or_default(),
                c,
                m,
            )
        })
        .collect();
    typed.sort_by(|a, b| b.0.cmp(&a.0));
    let mut out: Vec<Prompt> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (time, conv, message) in typed {
        let key = message.content.trim().to_string();
        match seen.get(&key) {
            Some(&at) => out[at].times += 1,
            None if out.len() < limit => {
                seen.insert(key, out.len());
                out.push(Prompt {
                    text: message.content.clone(),
                    time,
                    conversation_id: conv.conversation_id.clone(),
                    title: conv.title.clone(),
                    times: 1,
                });
            }
            None => {}
        }
    }
    out
}
