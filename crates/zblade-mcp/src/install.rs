//! Pointing agents at zblade: their MCP configuration (`zblade mcp install CLIENT`) and, for
//! agents that run commands on events, hooks (`zblade hooks install|uninstall AGENT`).
//!
//! Each writer merges one entry into the client's own file in the client's documented format,
//! keeping everything else that is there (other servers, comments in Codex's TOML); running it
//! twice changes nothing; a file that does not parse is left alone with an error naming it; the
//! write is atomic (a temporary file renamed over the old one).
//!
//! | client      | project scope            | user scope                                   | format |
//! |-------------|--------------------------|----------------------------------------------|--------|
//! | claude-code | `.mcp.json`              | `~/.claude.json`                             | `mcpServers.zblade = {type: "stdio", command, args}` |
//! | cursor      | `.cursor/mcp.json`       | `~/.cursor/mcp.json`                         | `mcpServers.zblade = {command, args}` |
//! | vscode      | `.vscode/mcp.json`       | `$XDG_CONFIG_HOME/Code/User/mcp.json`        | `servers.zblade = {type: "stdio", command, args}` |
//! | codex       | `.codex/config.toml`     | `$CODEX_HOME/config.toml` (`~/.codex`)       | `[mcp_servers.zblade] command, args` |
//! | gemini-cli  | `.gemini/settings.json`  | `~/.gemini/settings.json`                    | `mcpServers.zblade = {command, args}` |
//! | qwen-code   | `.qwen/settings.json`    | `~/.qwen/settings.json`                      | `mcpServers.zblade = {command, args}` |

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
/// Where agents keep their files: the same struct (and `$HOME` fallbacks) the importers use.
pub use zblade_engine::AgentPlaces as Places;
use zblade_import::{AGENTS, Agent, HooksConfig, McpConfig, McpFormat};

/// The name zblade's entries go under.
pub const SERVER_NAME: &str = "zblade";

/// An agent whose MCP configuration zblade can write: one of the agent registry's agents
/// ([`zblade_import::AGENTS`]) that says where its MCP files are ([`Agent::mcp`]).
#[derive(Clone, Copy)]
pub struct Client(&'static dyn Agent);

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for Client {
    fn eq(&self, other: &Client) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Client {}

impl Client {
    /// Every client, in the registry's order.
    pub fn all() -> impl Iterator<Item = Client> {
        AGENTS
            .iter()
            .filter(|agent| agent.mcp().is_some())
            .map(|agent| Client(*agent))
    }

    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        self.0.source().as_str()
    }

    /// Its name for people.
    pub fn label(self) -> &'static str {
        self.0.label()
    }

    /// The client named `name`.
    pub fn parse(name: &str) -> Option<Client> {
        Client::all().find(|c| c.as_str() == name)
    }

    fn config(self) -> McpConfig {
        self.0
            .mcp()
            .expect("a Client is made only from an agent with an MCP configuration")
    }

    /// The scope written unless another is asked for.
    pub fn default_scope(self) -> Scope {
        if self.config().prefers_user_file {
            Scope::User
        } else {
            Scope::Project
        }
    }

    /// What exists when the client is installed for this user.
    fn marker(self, places: &Places) -> PathBuf {
        (self.config().marker)(places)
    }

    /// The configuration file for `scope`.
    pub fn config_file(self, scope: Scope, project: &Path, places: &Places) -> PathBuf {
        match scope {
            Scope::Project => project.join(self.config().project_file),
            Scope::User => (self.config().user_file)(places),
        }
    }
}

/// Whose configuration: the project's (shared through the repository) or the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Scope {
    /// A file inside the project.
    Project,
    /// A file in the user's home.
    User,
}

/// The command a client runs to start zblade's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The `zblade` executable (absolute, so the client needs no `PATH`).
    pub command: String,
    /// `mcp --project ROOT` (project scope) or `mcp` (user scope).
    pub args: Vec<String>,
}

impl Launch {
    /// `command mcp --project root`: a project's own config names its project.
    pub fn for_project(command: &Path, root: &Path) -> Launch {
        Launch {
            command: command.to_string_lossy().into_owned(),
            args: vec!["mcp".into(), "--project".into(), root.to_string_lossy().into_owned()],
        }
    }

    /// `command mcp`: a user-wide config serves whichever project the agent runs in (zblade
    /// finds it from the working directory the agent starts the server in), never one
    /// project for every session.
    pub fn for_user(command: &Path) -> Launch {
        Launch {
            command: command.to_string_lossy().into_owned(),
            args: vec!["mcp".into()],
        }
    }

    /// The launch a config of `scope` gets.
    pub fn for_scope(scope: Scope, command: &Path, root: &Path) -> Launch {
        match scope {
            Scope::Project => Launch::for_project(command, root),
            Scope::User => Launch::for_user(command),
        }
    }
}

/// What a writer did (or, in a dry run, would do).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Written {
    /// The client or agent, as on the command line.
    pub client: String,
    /// The file.
    pub file: PathBuf,
    /// `created`, `updated` or `unchanged`.
    pub change: &'static str,
    /// The file's whole new text.
    #[serde(skip)]
    pub text: String,
    /// Whether the file was left as it was because this was a dry run.
    pub dry_run: bool,
}

/// A client detected on this machine, and whether zblade is in its configuration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DetectedClient {
    /// The client, as on the command line.
    pub client: String,
    /// The agent's own files are in its folder in the user's home (not only what zblade wrote).
    pub installed: bool,
    /// The project-scope file names zblade's server.
    pub in_project: bool,
    /// The user-scope file names zblade's server.
    pub in_user: bool,
}

/// Every client: installed or not, and where zblade is configured.
pub fn detect(project: &Path, places: &Places) -> Vec<DetectedClient> {
    Client::all()
        .map(|client| {
            let has = |scope| configured(client, &client.config_file(scope, project, places));
            // Files zblade itself may have written there do not show the agent is installed.
            let ours = [
                client.config_file(Scope::User, project, places),
                places.home.join(".claude/settings.json"),
            ];
            DetectedClient {
                client: client.as_str().into(),
                installed: has_own_files(&client.marker(places), &ours, 4),
                in_project: has(Scope::Project),
                in_user: has(Scope::User),
            }
        })
        .collect()
}

/// Whether `dir` holds a file (within `depth` levels) that is not one of `ours`: the agent's
/// own files, where a folder zblade created for a config would hold only zblade's.
fn has_own_files(dir: &Path, ours: &[PathBuf], depth: usize) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().take(500).any(|entry| {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => depth > 0 && has_own_files(&path, ours, depth - 1),
            Ok(_) => !ours.contains(&path),
            Err(_) => false,
        }
    })
}

pub(crate) fn configured(client: Client, file: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(file) else {
        return false;
    };
    match client.config().format {
        McpFormat::CodexToml => text
            .parse::<toml_edit::DocumentMut>()
            .is_ok_and(|doc| doc.get("mcp_servers").and_then(|s| s.get(SERVER_NAME)).is_some()),
        McpFormat::Json { key, .. } => {
            serde_json::from_str::<Value>(&text).is_ok_and(|v| v.get(key).and_then(|s| s.get(SERVER_NAME)).is_some())
        }
    }
}

/// Adds (or updates) zblade's server in `client`'s configuration for `scope`.
pub fn install(
    client: Client,
    scope: Scope,
    project: &Path,
    places: &Places,
    launch: &Launch,
    dry_run: bool,
) -> Result<Written, String> {
    let file = client.config_file(scope, project, places);
    let old = read_existing(&file)?;
    let text = match client.config().format {
        McpFormat::CodexToml => {
            merge_toml(old.as_deref().unwrap_or(""), launch).map_err(|e| format!("{}: {e}", file.display()))?
        }
        McpFormat::Json { key, typed } => {
            let mut entry = Map::new();
            if typed {
                entry.insert("type".into(), json!("stdio"));
            }
            entry.insert("command".into(), json!(launch.command));
            entry.insert("args".into(), json!(launch.args));
            let mut root = parse_json_object(&file, old.as_deref())?;
            object_in(&file, &mut root, key)?.insert(SERVER_NAME.into(), Value::Object(entry));
            pretty(&root)
        }
    };
    finish(client.as_str(), file, old, text, dry_run)
}

/// An agent whose hooks zblade writes ([`Agent::hooks`]): Claude Code, Gemini CLI, Qwen Code.
pub fn hook_agent(name: &str) -> Option<(&'static dyn Agent, HooksConfig)> {
    AGENTS
        .iter()
        .find(|agent| agent.source().as_str() == name)
        .and_then(|agent| Some((*agent, agent.hooks()?)))
}

/// The names of the agents whose hooks zblade writes.
pub fn hook_agent_names() -> Vec<&'static str> {
    AGENTS
        .iter()
        .filter(|agent| agent.hooks().is_some())
        .map(|agent| agent.source().as_str())
        .collect()
}

/// The scope written unless another is asked for.
pub fn default_hooks_scope(config: &HooksConfig) -> Scope {
    if config.prefers_user_file {
        Scope::User
    } else {
        Scope::Project
    }
}

/// The settings file zblade's hooks go in for `scope`.
pub fn hooks_file(config: &HooksConfig, scope: Scope, project: &Path, places: &Places) -> PathBuf {
    match scope {
        Scope::Project => project.join(config.project_file),
        Scope::User => (config.user_file)(places),
    }
}

/// Adds zblade's hooks to `agent`'s settings for `scope` (its default when none): for each
/// event zblade answers, one group running `zblade hook EVENT` (with `--agent NAME` for agents
/// other than Claude Code), replacing an earlier zblade hook and keeping everyone else's.
pub fn install_hooks(
    agent: &str,
    scope: Option<Scope>,
    project: &Path,
    places: &Places,
    zblade: &Path,
    dry_run: bool,
) -> Result<Written, String> {
    let (config, file) = hooks_target(agent, scope, project, places)?;
    let old = read_existing(&file)?;
    let mut root = parse_json_object(&file, old.as_deref())?;
    let hooks = object_in(&file, &mut root, "hooks")?;
    for event in config.events {
        let groups = event_groups(&file, hooks, event.event)?;
        drop_zblade_hooks(groups);
        let mut command = format!("{} hook {}", shell_quote(&zblade.to_string_lossy()), event.run);
        if agent != "claude-code" {
            command.push_str(&format!(" --agent {agent}"));
        }
        let timeout = if config.timeout_in_ms {
            event.timeout_s * 1000
        } else {
            event.timeout_s
        };
        let hook = json!([{ "type": "command", "command": command, "timeout": timeout }]);
        groups.push(match event.matcher {
            Some(matcher) => json!({ "matcher": matcher, "hooks": hook }),
            None => json!({ "hooks": hook }),
        });
    }
    finish(&format!("{agent} hooks"), file, old, pretty(&root), dry_run)
}

/// Takes zblade's hooks out of `agent`'s settings for `scope` (its default when none), and the
/// groups and events they leave empty; everything else stays as it was.
pub fn uninstall_hooks(
    agent: &str,
    scope: Option<Scope>,
    project: &Path,
    places: &Places,
    dry_run: bool,
) -> Result<Written, String> {
    let (_, file) = hooks_target(agent, scope, project, places)?;
    let old = read_existing(&file)?;
    let Some(old_text) = old.as_deref() else {
        // No settings file: nothing of zblade's to take out, and nothing is created.
        return Ok(Written {
            client: format!("{agent} hooks"),
            file,
            change: "unchanged",
            text: String::new(),
            dry_run,
        });
    };
    let mut root = parse_json_object(&file, Some(old_text))?;
    if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
        for groups in hooks.values_mut().filter_map(Value::as_array_mut) {
            drop_zblade_hooks(groups);
        }
        hooks.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    finish(&format!("{agent} hooks"), file, old, pretty(&root), dry_run)
}

fn hooks_target(
    agent: &str,
    scope: Option<Scope>,
    project: &Path,
    places: &Places,
) -> Result<(HooksConfig, PathBuf), String> {
    let Some((_, config)) = hook_agent(agent) else {
        return Err(format!(
            "zblade writes hooks for {} (got {agent:?}); other agents are reached with `zblade mcp install`",
            hook_agent_names().join(", ")
        ));
    };
    let scope = scope.unwrap_or_else(|| default_hooks_scope(&config));
    let file = hooks_file(&config, scope, project, places);
    Ok((config, file))
}

/// The list of groups under `hooks.EVENT`, created when missing.
fn event_groups<'a>(file: &Path, hooks: &'a mut Map<String, Value>, event: &str) -> Result<&'a mut Vec<Value>, String> {
    hooks
        .entry(event)
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| {
            format!(
                "{}: `hooks.{event}` is not a list; fix it by hand first",
                file.display()
            )
        })
}

/// Removes zblade's hooks from a list of groups, and the groups left without hooks.
fn drop_zblade_hooks(groups: &mut Vec<Value>) {
    for group in groups.iter_mut() {
        if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
            list.retain(|h| !is_zblade_hook(h));
        }
    }
    groups.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|l| !l.is_empty()));
}

/// A hook entry zblade wrote: its command runs `… hook prompt|stop|pre-tool` of a zblade.
pub(crate) fn is_zblade_hook(hook: &Value) -> bool {
    hook.get("command").and_then(Value::as_str).is_some_and(|c| {
        c.contains("zblade")
            && [" hook prompt", " hook stop", " hook pre-tool"]
                .iter()
                .any(|e| c.ends_with(e) || c.contains(&format!("{e} --agent ")))
    })
}

fn shell_quote(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn read_existing(file: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

/// The JSON object in a client's file (`{}` when the file is missing or empty).
fn parse_json_object(file: &Path, old: Option<&str>) -> Result<Map<String, Value>, String> {
    let text = old.unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(format!("{}: not a JSON object; left as it is", file.display())),
        Err(e) => Err(format!(
            "{}: not valid JSON (line {}, column {}: {e}); left as it is. Comments are not supported: \
             remove them or add zblade's entry by hand (docs/MCP.md)",
            file.display(),
            e.line(),
            e.column()
        )),
    }
}

/// The object under `key` in `parent`, created when absent; an error when something else is there.
fn object_in<'a>(
    file: &Path,
    parent: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    parent
        .entry(key)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| format!("{}: `{key}` is not an object; left as it is", file.display()))
}

fn pretty(root: &Map<String, Value>) -> String {
    format!("{}\n", serde_json::to_string_pretty(root).expect("JSON serialises"))
}

/// Codex's TOML with `[mcp_servers.zblade]` set, comments and order elsewhere kept.
fn merge_toml(old: &str, launch: &Launch) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = old.parse().map_err(|e| format!("not valid TOML: {e}; left as it is"))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .ok_or("`mcp_servers` is not a table; left as it is")?;
    let mut entry = toml_edit::Table::new();
    entry["command"] = toml_edit::value(launch.command.as_str());
    let mut args = toml_edit::Array::new();
    for arg in &launch.args {
        args.push(arg.as_str());
    }
    entry["args"] = toml_edit::value(args);
    servers.insert(SERVER_NAME, toml_edit::Item::Table(entry));
    Ok(doc.to_string())
}

fn finish(client: &str, file: PathBuf, old: Option<String>, text: String, dry_run: bool) -> Result<Written, String> {
    let change = match &old {
        None => "created",
        Some(old) if *old == text => "unchanged",
        Some(_) => "updated",
    };
    if !dry_run && change != "unchanged" {
        write_atomic(&file, &text).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(Written {
        client: client.into(),
        file,
        change,
        text,
        dry_run,
    })
}

/// Writes through a temporary file in the same folder, renamed over `file`: a crash leaves the
/// old file or the new one, never half of one. The old file's permissions are kept.
fn write_atomic(file: &Path, text: &str) -> std::io::Result<()> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.zblade-{}.tmp", std::process::id()));
    std::fs::write(&temp, text)?;
    if let Ok(meta) = std::fs::metadata(file) {
        std::fs::set_permissions(&temp, meta.permissions())?;
    }
    std::fs::rename(&temp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(name: &str) -> Client {
        Client::parse(name).unwrap()
    }

    fn places(dir: &Path) -> Places {
        Places {
            home: dir.join("home"),
            claude_config_dir: None,
            codex_home: Some(dir.join("home/.codex")),
            continue_dir: None,
            config_home: Some(dir.join("home/.config")),
            vars: Default::default(),
        }
    }

    fn launch() -> Launch {
        Launch::for_project(Path::new("/opt/zblade/bin/zblade"), Path::new("/work/app"))
    }

    #[test]
    fn claude_code_project_config_is_merged_idempotently() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("app");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join(".mcp.json"),
            r#"{"mcpServers": {"github": {"command": "gh-mcp"}}, "other": 1}"#,
        )
        .unwrap();
        let p = places(dir.path());
        let first = install(client("claude-code"), Scope::Project, &project, &p, &launch(), false).unwrap();
        assert_eq!(first.change, "updated");
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(project.join(".mcp.json")).unwrap()).unwrap();
        assert_eq!(written["mcpServers"]["github"]["command"], "gh-mcp");
        assert_eq!(written["other"], 1);
        assert_eq!(written["mcpServers"]["zblade"]["type"], "stdio");
        assert_eq!(written["mcpServers"]["zblade"]["command"], "/opt/zblade/bin/zblade");
        assert_eq!(
            written["mcpServers"]["zblade"]["args"],
            json!(["mcp", "--project", "/work/app"])
        );
        let second = install(client("claude-code"), Scope::Project, &project, &p, &launch(), false).unwrap();
        assert_eq!(second.change, "unchanged");
        assert!(detect(&project, &p)[0].in_project);
    }

    #[test]
    fn a_dry_run_writes_nothing_and_a_broken_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let project = dir.path().join("app");
        let dry = install(client("cursor"), Scope::User, &project, &p, &launch(), true).unwrap();
        assert_eq!(dry.change, "created");
        assert!(!dry.file.exists());
        assert!(dry.text.contains("\"mcpServers\""));
        std::fs::create_dir_all(project.join(".vscode")).unwrap();
        let broken = "{ // my servers\n \"servers\": {} }";
        std::fs::write(project.join(".vscode/mcp.json"), broken).unwrap();
        let err = install(client("vscode"), Scope::Project, &project, &p, &launch(), false).unwrap_err();
        assert!(err.contains("mcp.json") && err.contains("line 1"), "{err}");
        assert_eq!(
            std::fs::read_to_string(project.join(".vscode/mcp.json")).unwrap(),
            broken
        );
    }

    #[test]
    fn codex_toml_keeps_comments_and_other_tables() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        std::fs::create_dir_all(p.codex_dir()).unwrap();
        let old = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
        std::fs::write(p.codex_dir().join("config.toml"), old).unwrap();
        install(client("codex"), Scope::User, dir.path(), &p, &launch(), false).unwrap();
        let text = std::fs::read_to_string(p.codex_dir().join("config.toml")).unwrap();
        assert!(text.starts_with("# my settings\nmodel = \"o3\""), "{text}");
        assert!(
            text.contains("[mcp_servers.docs]") && text.contains("[mcp_servers.zblade]"),
            "{text}"
        );
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(
            doc["mcp_servers"]["zblade"]["command"].as_str(),
            Some("/opt/zblade/bin/zblade")
        );
        assert_eq!(
            install(client("codex"), Scope::User, dir.path(), &p, &launch(), false)
                .unwrap()
                .change,
            "unchanged"
        );
    }

    #[test]
    fn claude_hooks_replace_only_zblade_entries() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let project = dir.path().join("app");
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(
            project.join(".claude/settings.json"),
            r#"{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}"#,
        )
        .unwrap();
        let old_zblade = Path::new("/old/zblade");
        install_hooks("claude-code", None, &project, &p, old_zblade, false).unwrap();
        let new_zblade = Path::new("/new place/zblade");
        install_hooks("claude-code", None, &project, &p, new_zblade, false).unwrap();
        let settings: Value =
            serde_json::from_str(&std::fs::read_to_string(project.join(".claude/settings.json")).unwrap()).unwrap();
        assert_eq!(settings["permissions"]["allow"][0], "Bash(ls)");
        let stop = settings["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "{stop:?}");
        assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
        assert_eq!(stop[1]["hooks"][0]["command"], "'/new place/zblade' hook stop");
        let prompt = settings["hooks"]["UserPromptSubmit"].as_array().unwrap();
        assert_eq!(prompt.len(), 1);
        assert_eq!(prompt[0]["hooks"][0]["command"], "'/new place/zblade' hook prompt");
        let again = install_hooks("claude-code", None, &project, &p, new_zblade, false).unwrap();
        assert_eq!(again.change, "unchanged");
    }

    #[test]
    fn gemini_hooks_go_to_the_user_settings_in_milliseconds_and_uninstall_leaves_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let project = dir.path().join("app");
        let settings_file = p.home.join(".gemini/settings.json");
        std::fs::create_dir_all(settings_file.parent().unwrap()).unwrap();
        std::fs::write(
            &settings_file,
            r#"{"theme": "GitHub", "hooks": {"AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh", "timeout": 3000}]}]}}"#,
        )
        .unwrap();
        let zblade = Path::new("/usr/bin/zblade");
        let written = install_hooks("gemini-cli", None, &project, &p, zblade, false).unwrap();
        assert_eq!(written.file, settings_file);
        let settings: Value = serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
        let prompt = &settings["hooks"]["BeforeAgent"][0]["hooks"][0];
        assert_eq!(prompt["command"], "/usr/bin/zblade hook prompt --agent gemini-cli");
        assert_eq!(prompt["timeout"], 10_000);
        let after_tool = settings["hooks"]["AfterTool"].as_array().unwrap();
        assert_eq!(after_tool.len(), 2);
        assert_eq!(after_tool[1]["matcher"], "read_file|read_many_files");
        assert_eq!(
            install_hooks("gemini-cli", None, &project, &p, zblade, false)
                .unwrap()
                .change,
            "unchanged"
        );

        uninstall_hooks("gemini-cli", None, &project, &p, false).unwrap();
        let settings: Value = serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
        assert_eq!(settings["theme"], "GitHub");
        assert_eq!(settings["hooks"].as_object().unwrap().len(), 1, "{settings:#}");
        assert_eq!(settings["hooks"]["AfterTool"][0]["hooks"][0]["command"], "./lint.sh");
        assert!(
            install_hooks("aider", None, &project, &p, zblade, false)
                .unwrap_err()
                .contains("claude-code")
        );
    }
}
