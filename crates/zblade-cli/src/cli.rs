//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use zblade_chat::Api;
use zblade_engine::{
    ContextFormat, ContextTier, ExportFormat, ImportSource, MomentType, SearchKind, SearchMode, SearchQuery,
};
use zblade_mcp::install::Scope;
use zblade_sync::Role;

/// zblade: an unlimited, trustworthy memory of a project for AI coding assistants.
///
/// Memory lives in the project's `.zblade/` folder: conversation and moment artifacts (JSON,
/// the truth) and a SQLite index (a cache that `zblade reindex` rebuilds at any time).
///
/// Exit codes: 0 success, 1 a mistake in the input (bad file, unknown id), 2 an internal failure.
#[derive(Debug, Parser)]
#[command(name = "zblade", bin_name = "zblade", version, propagate_version = true)]
pub struct Cli {
    /// The project root. Default: the nearest ancestor of the current directory that holds
    /// `.zblade/`, else the current directory.
    #[arg(long, global = true, value_name = "DIR")]
    pub project: Option<PathBuf>,

    /// Print machine-readable JSON instead of text (errors too, on stderr).
    #[arg(long, global = true)]
    pub json: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create `.zblade/` in the project (safe to run again: never overwrites your instructions
    /// or settings).
    Init,
    /// Add a conversation or moment from an RFC-002 JSON file (`-` reads standard input).
    #[command(subcommand)]
    Add(AddCommand),
    /// List conversations or moments.
    #[command(subcommand)]
    List(ListCommand),
    /// Show a conversation (`conv_…`), a moment (`moment_…`), a message by id, one message
    /// of one conversation (`conv_…/MESSAGE_ID`, the form context pointers give), or a commit
    /// (4 to 40 hex digits) with what became of the lines it wrote.
    Show {
        /// The id.
        id: String,
    },
    /// Why is this code like this? The commits that wrote the lines (and the ones whose lines
    /// they replaced), and the conversations and moments whose code references overlap them,
    /// each with its status now; newest standing decision first. Needs `zblade index` (it
    /// reads the repository's history and attributes every line).
    Why {
        /// `FILE`, `FILE:LINE` or `FILE:START-END`, relative to the project root.
        target: String,
    },
    /// Conversations as a graph: fork, merge, cherry-pick, lineage, rename, delete, export,
    /// resume. Messages are stored once; a fork or a merge refers to them, never copies them.
    /// Message indices are 0-based (`zblade show CONV` lists them).
    #[command(subcommand)]
    Conv(ConvCommand),
    /// Every prompt you typed in this project (recorded turns, imported sessions, the app),
    /// newest first, each text once. --search narrows to prompts holding every word (the last
    /// one as a prefix, as a shell's Ctrl-R).
    History {
        /// Only prompts holding every word of this text.
        #[arg(long, short = 's', value_name = "TEXT")]
        search: Option<String>,
        /// How many prompts.
        #[arg(long, short = 'n', default_value_t = 50)]
        limit: usize,
        /// Every zblade project this machine's agents worked in (the projects `zblade import
        /// --all-projects` would find), not only this one.
        #[arg(long)]
        all_projects: bool,
    },
    /// How messages are stored: conversations, message references, distinct messages stored,
    /// how many are shared, bytes saved by sharing, and orphans (`zblade gc` removes them).
    Stats,
    /// Search messages, moments, conversations and project files: keyword, semantic or hybrid.
    Search(SearchArgs),
    /// Assemble the memory most useful for QUERY into a token budget: instructions, what the
    /// query names (@file:PATH[:A-B], @conv:ID, @moment:ID), the active conversation's recent
    /// turns, and hybrid search hits with their code as it is now. Time phrases ("yesterday",
    /// "last week", "in March") narrow the search. Prints the pack; --receipt (always in
    /// --json) lists every candidate, included or dropped, and why.
    Context(ContextArgs),
    /// Moments: find decisions, solutions and patterns in conversations.
    #[command(subcommand)]
    Moments(MomentsCommand),
    /// Write a short summary of each conversation (the compressor model when one is set, else
    /// extractively); a summary is redone once its conversation has 10 more messages.
    /// `zblade context --conversation ID` packs it before the recent turns.
    Summarize {
        /// One conversation (default: all).
        conversation: Option<String>,
        /// Rewrite summaries that are still fresh.
        #[arg(long)]
        force: bool,
    },
    /// The local compressor model (GGUF, run by llama.cpp on this machine): which one is used,
    /// installing one from a file or a URL, choosing another. Without one, a deterministic
    /// extractive compressor does every job.
    #[command(subcommand)]
    Compressor(CompressorCommand),
    /// Index project files for search (honouring .gitignore; binary, generated and huge files
    /// are skipped) and embed every message, moment and code chunk not embedded yet (local
    /// model, nothing leaves the machine). Incremental: unchanged files are not read again.
    Index,
    /// Remove stored messages no conversation uses any more (after `zblade conv delete`),
    /// vectors nothing uses and the vector tables of models no longer configured (after
    /// switching models).
    Gc,
    /// Embedding models: list the installed and known ones, download one by name.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Move memory between local storage and a zblade sync server without losing any: plan,
    /// copy, verify (hashes read back from the destination), and only then switch
    /// storage.mode. A journal under .zblade/migration/ makes it resumable: after an
    /// interruption (even kill -9) run the same command again.
    #[command(subcommand)]
    Migrate(MigrateCommand),
    /// The permanent archive: the project's memory encrypted (AES-256-GCM, a fresh key per
    /// batch, keys wrapped by a master key from your passphrase) on Arweave or in a directory;
    /// restore it anywhere from the vault and the passphrase, forget for good by destroying
    /// keys, share with another user; with the key kept in the OS keyring, pushes need no
    /// passphrase and the app pushes in the background. Off until `zblade archive setup`. See
    /// docs/ARCHIVE.md.
    #[command(subcommand)]
    Archive(ArchiveCommand),
    /// Team memory: a project on the sync server shared with teammates, each a reader
    /// (search, context), a writer (also adds memory) or an owner (also manages members); the
    /// server marks everything with who wrote it. `zblade team join` makes this folder a
    /// server-mode project of a project shared with you; the rest manage the project this
    /// folder uses. See docs/SERVER.md, "Team".
    #[command(subcommand)]
    Team(TeamCommand),
    /// Local mode with storage.sync_metadata on: send the titles, tags and message counts of
    /// this project's conversations and moments (never their content) to storage.server_url.
    SyncMetadata {
        /// The bearer token for that server (else ZBLADE_TOKEN or the saved one).
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
    },
    /// Rebuild the index from the artifacts alone.
    Reindex,
    /// Compare artifacts with the index and report every difference.
    Fsck {
        /// Bring the index in line with the artifacts (artifacts are never changed).
        #[arg(long)]
        repair: bool,
    },
    /// Counts, sizes, storage mode, index health and reference health.
    Status,
    /// How each coding agent is connected to this project's memory: its sessions found and
    /// imported, zblade's MCP server in its configuration, zblade's hooks in its settings —
    /// and for what is missing, why and the command that fixes it.
    Doctor,
    /// Code references: where each one is now, and how it fared since it was captured.
    #[command(subcommand)]
    Refs(RefsCommand),
    /// Import the sessions of coding agents on this machine (`zblade import --help` lists
    /// them) as conversations of this project, with code references for
    /// the files the agents read and edited. Only sessions whose working directory is this
    /// project (or inside it) unless --all-projects. Incremental: a second run reads only what
    /// is new. Secrets in the text are redacted before anything is written. Exit 1 when
    /// nothing could be imported.
    Import(ImportArgs),
    /// Watch the project and keep every code reference's live location current, and import
    /// new turns of the agents enabled with `zblade import SOURCE --follow` (Ctrl-C stops).
    Watch {
        /// Quiet time before a burst of file events is handled, in milliseconds.
        #[arg(long, default_value_t = 100)]
        debounce_ms: u64,
    },
    /// Serve this project's memory to coding agents over the Model Context Protocol: on
    /// stdin/stdout (what an agent's MCP config runs), or with --http on Streamable HTTP at
    /// /mcp. `zblade mcp install CLIENT` writes an agent's config. See docs/MCP.md.
    Mcp(McpArgs),
    /// Run the model proxy: point an agent's OpenAI or Anthropic base URL at it and every
    /// request gets this project's memory and every turn is recorded (Claude Code:
    /// ANTHROPIC_BASE_URL=http://127.0.0.1:8765; OpenAI clients:
    /// OPENAI_BASE_URL=http://127.0.0.1:8765/v1). `zblade proxy receipts` shows what was
    /// added. See docs/PROXY.md.
    Proxy(ProxyArgs),
    /// Chat with a model in the terminal: each prompt gets the project's memory packed in (as
    /// `zblade context` would), the answer streams as it arrives, and every turn is recorded as
    /// a conversation (resume it with --conversation). Works with any OpenAI-compatible server:
    /// llama.cpp's, Ollama, LM Studio, vLLM, OpenRouter, OpenAI. Ctrl-C stops an answer, Ctrl-D
    /// ends the chat. See docs/CHAT.md.
    Chat(ChatArgs),
    /// Keep this project's engine warm for agent hooks and `zblade context`: the embedding model
    /// and tokenizer stay loaded, and short-lived zblade processes ask this one over a private
    /// local socket instead of loading them each time (the desktop app does the same while it
    /// has the project open). Ctrl-C stops. An agent's prompt hook starts one by itself
    /// (with --idle-exit 30) when none runs.
    Serve {
        /// Exit after this many minutes without a request (default: run until stopped).
        #[arg(long, value_name = "MINUTES")]
        idle_exit: Option<u64>,
    },
    /// Agent hooks: commands an agent runs on its events (Claude Code, Gemini CLI, Qwen Code):
    /// context with every prompt, the finished turn imported, and what memory holds about the
    /// lines a tool reads. See docs/HOOKS.md.
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Run by an agent's hook, not by people: reads the event (JSON) on stdin. `prompt` prints
    /// the packed context for the prompt; `stop` imports the finished turn; `pre-tool` what
    /// memory holds about the lines a tool reads or edits.
    #[command(hide = true)]
    Hook {
        /// prompt, stop or pre-tool.
        #[arg(value_enum)]
        event: HookEvent,
        /// The agent that runs it (its answer's format, its sessions' reader).
        #[arg(long, default_value = "claude-code")]
        agent: String,
    },
}

/// `zblade conv …`
#[derive(Debug, Subcommand)]
pub enum ConvCommand {
    /// Start a new conversation from ID's messages up to and including MSG (an index, 0 is
    /// the first, or a message id). Nothing is copied: the fork refers to those messages.
    Fork {
        /// The conversation to fork.
        id: String,
        /// The last message to keep: its index (0-based) or its id.
        #[arg(long, value_name = "MSG|INDEX")]
        after: String,
        /// The fork's title (default: the parent's with " (fork)").
        #[arg(long)]
        title: Option<String>,
    },
    /// Bring messages of SOURCE into TARGET (appended, or inserted before index --at).
    Merge {
        /// The conversation that receives the messages.
        target: String,
        /// The conversation they come from.
        source: String,
        /// Indices (0-based) of SOURCE's messages, comma-separated: 3,4
        #[arg(long, value_delimiter = ',', required = true, num_args = 1..)]
        messages: Vec<usize>,
        /// Insert before this index of TARGET (default: append).
        #[arg(long)]
        at: Option<usize>,
    },
    /// Bring message INDEX of SOURCE into TARGET, with the --context messages before it (the
    /// question an answer needs).
    CherryPick {
        /// The conversation that receives the messages.
        target: String,
        /// The conversation they come from.
        source: String,
        /// The message's index (0-based) in SOURCE.
        index: usize,
        /// How many messages before it come along.
        #[arg(long, default_value_t = 0)]
        context: usize,
    },
    /// Where a conversation came from and what came of it: ancestors, forks (as a tree) and
    /// merges in and out.
    Lineage {
        /// The conversation.
        id: String,
    },
    /// Give a conversation a new title.
    Rename {
        /// The conversation.
        id: String,
        /// Its new title.
        title: String,
    },
    /// Delete a conversation. Messages other conversations use stay; `zblade gc` removes the
    /// ones nothing uses any more.
    Delete {
        /// The conversation.
        id: String,
    },
    /// Print a conversation as a markdown transcript or as JSON (every message inline).
    Export {
        /// The conversation.
        id: String,
        /// markdown or json.
        #[arg(long, value_enum, default_value_t = ExportFormat::Markdown)]
        format: ExportFormat,
    },
    /// Print a conversation as a client would reload it to go on: the newest one of the
    /// project, or ID.
    Resume {
        /// The conversation (default: the most recently updated).
        id: Option<String>,
    },
}

/// `zblade mcp` arguments.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    /// Install or inspect client configurations.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765).
    /// Loopback unless a token is set; browsers' cross-site requests are refused (Origin).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Bearer token every HTTP request must carry. Default: ZBLADE_MCP_TOKEN, else mcp.token
    /// in settings, else none.
    #[arg(long, value_name = "TOKEN", env = "ZBLADE_MCP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the tool definitions (what tools/list returns) and exit.
    #[arg(long)]
    pub list_tools: bool,
}

/// `zblade proxy` arguments.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProxyArgs {
    /// Inspect what the proxy did.
    #[command(subcommand)]
    pub command: Option<ProxyCommand>,
    /// Where to listen (loopback only). Default: proxy.listen in settings (127.0.0.1:8765).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// One provider for both APIs (a local llama.cpp or vLLM server, a LiteLLM gateway).
    /// Default: proxy.openai_upstream and proxy.anthropic_upstream in settings
    /// (https://api.openai.com, https://api.anthropic.com).
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Where OpenAI-style requests go (overrides --upstream).
    #[arg(long, value_name = "URL")]
    pub openai_upstream: Option<String>,
    /// Where Anthropic requests go (overrides --upstream).
    #[arg(long, value_name = "URL")]
    pub anthropic_upstream: Option<String>,
}

/// `zblade chat` arguments.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The server's base URL: up to /v1 for OpenAI-compatible servers, the host for
    /// Anthropic. Default: $ZBLADE_CHAT_ENDPOINT, else http://127.0.0.1:8080/v1 (llama.cpp's
    /// server; Ollama is http://127.0.0.1:11434/v1), or https://api.anthropic.com with
    /// --api anthropic.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The API the server speaks: openai (Chat Completions) or anthropic (Messages).
    #[arg(long, value_enum, default_value_t = Api::ChatCompletions)]
    pub api: Api,
    /// The model to ask for. Default: $ZBLADE_CHAT_MODEL, else the first the server lists.
    #[arg(long)]
    pub model: Option<String>,
    /// Run an installed GGUF model (`zblade compressor list`) inside zblade instead of asking a
    /// server: nothing leaves the machine. The tools are described to it in its system text
    /// (--tools off leaves them out, for a small model's window).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["endpoint", "model", "api_key_env"])]
    pub local: Option<String>,
    /// The local model's context window in tokens (prompt, memory and answer together).
    #[arg(long, value_name = "TOKENS", default_value_t = 8192, requires = "local")]
    pub context_window: u32,
    /// The environment variable that holds the API key (sent as a bearer token; zblade never
    /// writes it anywhere).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The model's tier, which shapes the packed memory: smart (pointers for long texts),
    /// balanced or fast (full content).
    #[arg(long, value_enum, default_value_t = ContextTier::Balanced)]
    pub tier: ContextTier,
    /// Token budget of the memory packed into each turn. Default: context.max_tokens in
    /// settings (8000).
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<usize>,
    /// The longest answer, in tokens. Default: the server's.
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u32>,
    /// Go on with this conversation (its messages are the chat's history).
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Ask this one prompt, print the answer and exit (exit code 1 if it did not complete).
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Consent to an endpoint that is not on this machine: each turn sends it the packed
    /// memory and the prompt. Without it, only loopback endpoints are used.
    #[arg(long)]
    pub allow_remote: bool,
    /// The tools offered to the model — read_project_file, search_project, search, all
    /// read-only, run here: allow (run each call), ask (ask before each), off (offer none).
    #[arg(long, value_enum, default_value_t = ToolsArg::Allow)]
    pub tools: ToolsArg,
}

/// `--tools` of `zblade chat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolsArg {
    /// Run every call (the tools only read).
    Allow,
    /// Ask on the terminal before each call.
    Ask,
    /// Offer no tools.
    Off,
}

/// `zblade proxy …`
#[derive(Debug, Subcommand)]
pub enum ProxyCommand {
    /// What the proxy added to recent requests (newest first), or to one request by the id
    /// it sent back in `x-zblade-receipt`.
    Receipts {
        /// A receipt id (`rcpt_…`); without one, the newest are listed.
        id: Option<String>,
        /// How many to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
}

/// `zblade mcp …`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add zblade's MCP server to a client's configuration (merged into what is there; run
    /// again, it changes nothing): claude-code (.mcp.json), cursor (.cursor/mcp.json), codex
    /// (~/.codex/config.toml), vscode (.vscode/mcp.json).
    Install {
        /// claude-code, cursor, codex or vscode.
        client: String,
        /// project: a file in this project (shared through the repository); user: the
        /// client's file in your home. Default: project (codex: user).
        #[arg(long, value_enum)]
        scope: Option<Scope>,
        /// Print what would be written; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Clients found on this machine and whether zblade is in their configuration.
    Clients,
}

/// `zblade hooks …`
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Add zblade's hooks to an agent (claude-code, gemini-cli, qwen-code): packed context with
    /// every prompt, the finished turn imported when the agent stops, and what memory holds
    /// about the lines a tool reads. Merged into its settings; other hooks kept.
    Install {
        /// claude-code, gemini-cli or qwen-code.
        agent: String,
        /// project (`.claude/settings.json`; the default for Claude Code) or user
        /// (`~/.gemini/settings.json`, `~/.qwen/settings.json`: their default, since those
        /// agents read a project's settings only in folders the user trusts).
        #[arg(long, value_enum)]
        scope: Option<Scope>,
        /// Print what would be written; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Take zblade's hooks out of an agent's settings (everything else stays).
    Uninstall {
        /// claude-code, gemini-cli or qwen-code.
        agent: String,
        /// project or user (the agent's default, as for install).
        #[arg(long, value_enum)]
        scope: Option<Scope>,
        /// Print what would be written; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// The agent events zblade's hooks handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookEvent {
    /// A prompt was submitted: print context for it.
    Prompt,
    /// The agent finished a turn: import it.
    Stop,
    /// The agent reads or edits a file (Claude Code's `PreToolUse`; Gemini CLI's `AfterTool`
    /// and Qwen Code's `PostToolUse` on reads): print what memory holds about those lines, or
    /// nothing.
    PreTool,
}

/// How the archive's passphrase is given: ZBLADE_ARCHIVE_PASSPHRASE, the first line of
/// standard input (--passphrase-stdin), or typed at the terminal (not echoed). Where this
/// machine remembers the master key (`zblade archive remember`), none of them is needed.
#[derive(Debug, clap::Args)]
pub struct PassphraseArgs {
    /// Read the passphrase from the first line of standard input.
    #[arg(long)]
    pub passphrase_stdin: bool,
    /// Allow the network for this command when the gateway is on another machine (settings
    /// are not changed; privacy.allow_network allows it always).
    #[arg(long)]
    pub allow_network: bool,
}

/// `zblade archive …`
#[derive(Debug, Subcommand)]
pub enum ArchiveCommand {
    /// Set up this project's archive: a directory (--dir, an external disk or synced folder)
    /// or Arweave (--arweave GATEWAY --wallet JWK). Creates the vault (the keys; inside the
    /// directory, or for Arweave under ~/.local/share/zblade/archive/<id>/ unless --vault):
    /// keep it safe, restores need it.
    Setup {
        /// Keep batches in this directory.
        #[arg(long, value_name = "DIR", conflicts_with = "arweave")]
        dir: Option<PathBuf>,
        /// Keep batches on Arweave through this gateway (https://arweave.net, or arlocal's
        /// http://127.0.0.1:1984).
        #[arg(long, value_name = "URL")]
        arweave: Option<String>,
        /// The Arweave wallet (JWK file) that signs and pays.
        #[arg(long, value_name = "FILE")]
        wallet: Option<PathBuf>,
        /// Where to keep the vault.
        #[arg(long, value_name = "FILE")]
        vault: Option<PathBuf>,
        /// Also keep the master key in the OS keyring on this machine, so that pushes need
        /// no passphrase (as `zblade archive remember` does).
        #[arg(long)]
        keyring: bool,
        #[command(flatten)]
        passphrase: PassphraseArgs,
    },
    /// Keep the master key in the OS keyring on this machine (GNOME Keyring, KWallet, macOS
    /// Keychain, Windows Credential Manager), so that push, forget and share need no
    /// passphrase here; --background also lets the desktop app push on its own. The
    /// passphrase is still what restores on a new machine. --off removes the key.
    Remember {
        /// Let the desktop app push in the background while the project is open.
        #[arg(long, conflicts_with = "off")]
        background: bool,
        /// Remove the key from the keyring and stop background pushes.
        #[arg(long)]
        off: bool,
        #[command(flatten)]
        passphrase: PassphraseArgs,
    },
    /// Where the archive stands: files waiting, objects sent and confirmed, bytes stored, the
    /// cost of what is waiting (Arweave), and the share key others send to. No passphrase.
    Status {
        /// Do not ask the backend (no confirmations, no prices).
        #[arg(long)]
        offline: bool,
        /// Allow the network for this command.
        #[arg(long)]
        allow_network: bool,
    },
    /// Archive what changed since the last push (incremental; an interrupted push, even by
    /// kill -9, is finished without sending anything twice).
    Push {
        /// Also archive a snapshot (every file and the index), so restores can start from it.
        #[arg(long)]
        snapshot: bool,
        #[command(flatten)]
        passphrase: PassphraseArgs,
    },
    /// Rebuild a project's .zblade/ from its archive into DIR: every file byte for byte, then
    /// the index and the vectors. Needs the vault and the passphrase, nothing else.
    Restore {
        /// The folder to restore into (its .zblade/ must not exist).
        #[arg(long, value_name = "DIR")]
        into: PathBuf,
        /// The vault (default: DIR/vault.json with --from, else the only vault under
        /// ~/.local/share/zblade/archive/).
        #[arg(long, value_name = "FILE")]
        vault: Option<PathBuf>,
        /// A directory archive to restore from (its vault.json is used).
        #[arg(long, value_name = "DIR")]
        from: Option<PathBuf>,
        /// Read through another gateway than the one the vault names.
        #[arg(long, value_name = "URL")]
        gateway: Option<String>,
        /// The wallet, so the restored project can keep pushing.
        #[arg(long, value_name = "FILE")]
        wallet: Option<PathBuf>,
        /// Start from the newest snapshot and replay only the batches after it.
        #[arg(long)]
        snapshot: bool,
        /// Restore the files only; do not rebuild the index and vectors.
        #[arg(long)]
        no_index: bool,
        #[command(flatten)]
        passphrase: PassphraseArgs,
    },
    /// Forget conversations and moments for good: removed here, the rest of every batch that
    /// held them archived again under new keys, then those batches' keys destroyed (and a
    /// tombstone archived). The ciphertext stays on Arweave; nobody can read it any more, you
    /// included.
    Forget {
        /// Conversation ids (conv_…; documents are conversations) and moment ids (moment_…;
        /// a moment recorded inside a conversation goes with it).
        #[arg(required = true)]
        ids: Vec<String>,
        /// Do not ask.
        #[arg(long, short = 'y')]
        yes: bool,
        #[command(flatten)]
        passphrase: PassphraseArgs,
    },
    /// Share conversations with another zblade user: archived under a fresh key, and a grant
    /// sealed to their share key (`zblade archive status` prints it on their side).
    Share {
        /// Conversation ids.
        #[arg(required = true)]
        ids: Vec<String>,
        /// The recipient's share key (zbpk1…).
        #[arg(long, value_name = "KEY")]
        to: String,
        #[command(flatten)]
        passphrase: PassphraseArgs,
    },
    /// Add the conversations others shared with this archive's share key.
    Accept {
        /// Look for grants in this directory archive (default: this archive's backend).
        #[arg(long, value_name = "DIR", conflicts_with = "gateway")]
        from: Option<PathBuf>,
        /// Look for grants through this Arweave gateway.
        #[arg(long, value_name = "URL")]
        gateway: Option<String>,
        #[command(flatten)]
        passphrase: PassphraseArgs,
    },
}

/// `zblade team …`
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Invite a user of the server to this project (owners only). They see nothing of it until
    /// they accept with `zblade team join`.
    Invite {
        /// Their user name on the server.
        user: String,
        /// What they may do.
        #[arg(long, value_enum, default_value = "writer")]
        role: Role,
    },
    /// Change a member's role (owners only).
    Role {
        /// Their user name.
        user: String,
        /// The new role.
        #[arg(value_enum)]
        role: Role,
    },
    /// The project's members, their roles, and who has not accepted yet.
    Members,
    /// Remove a member (owners only): their next request gets nothing of the project.
    Remove {
        /// Their user name.
        user: String,
        /// Also delete every conversation and moment they wrote in the project.
        #[arg(long)]
        contributions: bool,
    },
    /// Leave the project shared with you; this folder goes back to local mode (what you wrote
    /// stays in the project).
    Leave,
    /// The invitations waiting for you on a server.
    Invitations {
        /// The sync server. Default: this project's storage.server_url.
        #[arg(long, value_name = "URL")]
        server: Option<String>,
        /// Your token on it. Default: ZBLADE_TOKEN, else the one saved for that server.
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
        /// Allow plain http:// to a server on another machine (see `zblade migrate --help`).
        #[arg(long)]
        allow_insecure_http: bool,
    },
    /// Join a project shared with you: accept its invitation and make this folder a
    /// server-mode project of it (created with `zblade init` when it is not one). New turns of
    /// this folder's agents are written there, marked with your name.
    Join {
        /// The sync server: https://host, or http://127.0.0.1:PORT on this machine.
        server: String,
        /// The project's id (`zblade team invitations` lists them).
        #[arg(value_name = "PROJECT")]
        project_id: String,
        /// Your token on the server. Default: ZBLADE_TOKEN, else the one saved for that server.
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
        /// The project's creator, when two users shared projects with the same id.
        #[arg(long, value_name = "USER")]
        owner: Option<String>,
        /// Allow plain http:// to a server on another machine (see `zblade migrate --help`).
        #[arg(long)]
        allow_insecure_http: bool,
    },
}

/// Where a migration goes and how it asks.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// The sync server: https://host, or http://127.0.0.1:PORT on this machine. to-local
    /// defaults to storage.server_url.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Allow plain http:// to a server on another machine. Dangerous: the token and all memory
    /// cross the network readable and changeable by anyone on the path. Use https instead
    /// (docs/SERVER.md shows TLS termination); this choice is saved in storage.allow_insecure_http.
    #[arg(long)]
    pub allow_insecure_http: bool,
    /// The bearer token `zblade-server user add` printed. Default: ZBLADE_TOKEN, else the
    /// token saved for that server by an earlier migration.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Show the plan (counts and sizes) and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask: copy, verify and switch.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// After a verified switch, also remove the copies left at the source (asked separately
    /// when interactive; never done without this flag or a yes to that question).
    #[arg(long)]
    pub cleanup: bool,
}

/// `zblade migrate …`
#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// Upload this project's conversations and moments to a sync server, verify them there,
    /// then switch storage.mode to server.
    ToServer(MigrateArgs),
    /// Download the project's memory from the server into .zblade/artifacts/ (code blocks
    /// found in the working tree become references), rebuild the index, verify, then switch
    /// storage.mode to local.
    ToLocal(MigrateArgs),
    /// Show an unfinished migration, if there is one.
    Status,
}

/// `zblade models …`
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Installed models (in $ZBLADE_MODELS_DIR, default ~/.cache/zblade/models, and those an
    /// installed package ships in /usr/share/zblade/models), the one in use, and the known
    /// ones that can be downloaded.
    List,
    /// Download an embedding model by name (all-minilm-l6-v2-int8, all-minilm-l6-v2, bge-small-en-v1.5, or a hub
    /// repository as owner/name), check that it loads, and install it. Uses the network, so
    /// it needs consent: privacy.allow_network in settings, or --allow-network.
    Download {
        /// The model's name.
        name: String,
        /// Allow network use for this download (settings are not changed).
        #[arg(long)]
        allow_network: bool,
        /// Where to fetch from: a Hugging Face-compatible hub or mirror.
        #[arg(
            long,
            value_name = "URL",
            env = "ZBLADE_MODEL_HUB",
            default_value = "https://huggingface.co"
        )]
        hub: String,
        /// Download again even if installed.
        #[arg(long)]
        force: bool,
        /// Make search use this model (then run `zblade index`).
        #[arg(long = "use")]
        activate: bool,
    },
    /// Install an embedding model from a folder on this machine (model.onnx plus its tokenizer
    /// files, as a Hugging Face ONNX export has them); checked to load first. No network.
    Import {
        /// The model's folder.
        dir: std::path::PathBuf,
        /// Install under this name (default: the folder's name).
        #[arg(long)]
        name: Option<String>,
        /// Replace an installed model of the same name.
        #[arg(long)]
        force: bool,
        /// Make search use this model (then run `zblade index`).
        #[arg(long = "use")]
        activate: bool,
    },
}

/// `zblade compressor …`
#[derive(Debug, Subcommand)]
pub enum CompressorCommand {
    /// The configured model, whether it loads, and what it is.
    Status,
    /// Installed models (in $ZBLADE_MODELS_DIR/gguf, default ~/.cache/zblade/models/gguf).
    List,
    /// Install a GGUF file from this machine (checked to load in llama.cpp first).
    Import {
        /// The .gguf file.
        file: std::path::PathBuf,
        /// Install under this name (default: the file name without .gguf).
        #[arg(long)]
        name: Option<String>,
        /// Replace an installed model of the same name.
        #[arg(long)]
        force: bool,
        /// Make the compressor use it.
        #[arg(long = "use")]
        activate: bool,
    },
    /// Download a GGUF file from a URL with a progress bar, check its sha256 and that it
    /// loads, then install it. Uses the network, so it needs consent: privacy.allow_network in
    /// settings, or --allow-network.
    Download {
        /// http(s) URL of the .gguf file.
        url: String,
        /// The expected sha256 (64 hex digits); a mismatch deletes the download.
        #[arg(long)]
        sha256: Option<String>,
        /// Install under this name (default: the file name without .gguf).
        #[arg(long)]
        name: Option<String>,
        /// Allow network use for this download (settings are not changed).
        #[arg(long)]
        allow_network: bool,
        /// Replace an installed model of the same name.
        #[arg(long)]
        force: bool,
        /// Make the compressor use it.
        #[arg(long = "use")]
        activate: bool,
    },
    /// Make the compressor use an installed model, or `none` for the extractive compressor.
    Use {
        /// The model's name (see `zblade compressor list`), or `none`.
        name: String,
    },
}

/// `zblade refs …`
#[derive(Debug, Subcommand)]
pub enum RefsCommand {
    /// Check every reference against the working tree and record where each one is now.
    /// Statuses: ok, shifted, modified, moved, missing, unreadable; "drift" when the file
    /// changed since capture.
    Check {
        /// Only list references that are not ok (or that drifted).
        #[arg(long)]
        problems: bool,
    },
    /// One reference with its current code.
    Show {
        /// The reference key, e.g. `conv_…/msg_…/0` (listed by `zblade refs check`).
        key: String,
    },
}

/// `zblade add …`
#[derive(Debug, Subcommand)]
pub enum AddCommand {
    /// Add conversations; adding one whose `conversation_id` exists updates it. Missing ids,
    /// titles and timestamps are filled in.
    Conversation {
        /// JSON files, or `-` for standard input.
        #[arg(required = true, value_name = "FILE|-")]
        files: Vec<String>,
    },
    /// Add moments (decision, pattern, solution or context).
    Moment {
        /// JSON files, or `-` for standard input.
        #[arg(required = true, value_name = "FILE|-")]
        files: Vec<String>,
    },
    /// Add documents (Markdown, plain text, PDF): specs, design notes, RFCs you want
    /// remembered that do not live in the repository. Each is split into sections, searchable
    /// and packed by `context`; adding the same file again updates it. Secrets are redacted.
    Document {
        /// The files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<std::path::PathBuf>,
    },
}

/// `zblade import …`
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["source", "detect", "all"])))]
pub struct ImportArgs {
    /// The agent (cline also reads Roo Code).
    #[arg(value_parser = source_parser())]
    pub source: Option<ImportSource>,
    /// Session files or folders to read instead of the agent's own store (files named here
    /// are imported whatever project they were recorded in).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// List each agent's store on this machine, with session counts and dates.
    #[arg(long, conflicts_with_all = ["paths", "dry_run", "follow", "unfollow"])]
    pub detect: bool,
    /// Import from every agent that has sessions of this project (what `--detect` counts).
    #[arg(long, conflicts_with_all = ["paths", "follow", "unfollow"])]
    pub all: bool,
    /// Import sessions of every project, not only this one's.
    #[arg(long)]
    pub all_projects: bool,
    /// Only sessions active since DATE (2025-06-01, an RFC 3339 time, or 7d / 12h / 30m ago).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Read and count; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also import this agent's new turns live from now on (`zblade watch`, the app's tray).
    #[arg(long, conflicts_with = "unfollow")]
    pub follow: bool,
    /// Stop importing this agent's sessions live.
    #[arg(long)]
    pub unfollow: bool,
}

/// How `--source` and `zblade import SOURCE` read an agent's name: the agents zblade-import
/// registers, each with its label as help (a new agent needs nothing here).
fn source_parser() -> impl clap::builder::TypedValueParser<Value = ImportSource> {
    let names = ImportSource::all().map(|s| clap::builder::PossibleValue::new(s.as_str()).help(s.label()));
    clap::builder::TypedValueParser::map(clap::builder::PossibleValuesParser::new(names), |name| {
        ImportSource::parse(&name).expect("clap accepts only the names listed")
    })
}

/// `zblade list …`
#[derive(Debug, Subcommand)]
pub enum ListCommand {
    /// Conversations, most recently updated first.
    Conversations {
        /// Only conversations imported from this agent.
        #[arg(long, value_parser = source_parser())]
        source: Option<ImportSource>,
        /// Most rows to show.
        #[arg(long, short = 'n', default_value_t = 50)]
        limit: usize,
        /// Rows to skip.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
    /// Documents added with `zblade add document`, most recently changed first.
    Documents {
        /// Most rows to show.
        #[arg(long, short = 'n', default_value_t = 50)]
        limit: usize,
        /// Rows to skip.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
    /// Commits of the project's repository read by `zblade index`, newest first, each with
    /// what became of the lines it wrote.
    Commits {
        /// Most rows to show.
        #[arg(long, short = 'n', default_value_t = 50)]
        limit: usize,
        /// Rows to skip.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
    /// Moments, newest first.
    Moments {
        /// Only this type.
        #[arg(long = "type", value_enum)]
        kind: Option<MomentType>,
        /// Most rows to show.
        #[arg(long, short = 'n', default_value_t = 50)]
        limit: usize,
        /// Rows to skip.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
}

/// `zblade moments …`
#[derive(Debug, Subcommand)]
pub enum MomentsCommand {
    /// Find decisions, solutions and patterns in a conversation (or in all of them) and write
    /// them as moment artifacts. Without a compressor model the extractor is deterministic
    /// (phrases such as "we decided", "fixed by", "always"); running it again updates the same
    /// moments, and conversations unchanged since the last run are skipped.
    Extract {
        /// The conversation (default: every conversation).
        conversation: Option<String>,
    },
    /// Say that a later moment or conversation supersedes an earlier one: the pack then gives
    /// the newer first and shows the older as superseded (or leaves it out when the budget is
    /// short). Written into OLD's artifact, so it syncs and survives `reindex`.
    Supersede {
        /// The earlier moment (`moment_…`) or conversation (`conv_…`).
        old: String,
        /// The later one that replaces it.
        new: String,
    },
    /// Mark a moment or conversation as a rejected approach: it is packed as rejected, with
    /// the reason, so the next agent does not try it again.
    Reject {
        /// The moment (`moment_…`) or conversation (`conv_…`).
        id: String,
        /// Why it was rejected.
        #[arg(long, required = true)]
        reason: String,
    },
    /// Undo `supersede` or `reject`: the moment or conversation stands again.
    Reinstate {
        /// The moment or conversation.
        id: String,
    },
    /// Moments and conversations that no longer stand (superseded or rejected), newest first.
    Decisions,
}

/// `zblade search` arguments.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for; any text is safe, including quotes and operators.
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
    /// Most results to show.
    #[arg(long, short = 'n', default_value_t = SearchQuery::DEFAULT_LIMIT)]
    pub limit: usize,
    /// What to search.
    #[arg(long, value_enum, default_value_t = SearchKind::All)]
    pub kind: SearchKind,
    /// keyword (BM25), semantic (embeddings) or hybrid (both, fused). Default: hybrid when
    /// an embedding model is installed and `zblade index` has run, else keyword.
    #[arg(long, value_enum)]
    pub mode: Option<SearchMode>,
    /// Only this conversation's messages and moments.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Only code under this path, and messages and moments that reference code under it.
    #[arg(long, value_name = "PREFIX")]
    pub path: Option<String>,
    /// Only what was written (code: modified) at or after this time: YYYY-MM-DD, an RFC
    /// 3339 time, or an age like 7d or 12h.
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only what was written (code: modified) before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
}

/// `zblade context` arguments.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// What the assistant is being asked now.
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
    /// Token budget for the whole pack (cl100k_base tokens). Default: context.max_tokens
    /// in settings (8000).
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<usize>,
    /// The conversation the user is in: its recent turns are working context.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// xml (`<unlimited_context>`), markdown or json.
    #[arg(long, value_enum, default_value_t = ContextFormat::Xml)]
    pub format: ContextFormat,
    /// smart: pointers (path, lines, summary, size) for long retrieved texts, for models
    /// that can call tools; balanced and fast: full content, 10 and 5 recent turns.
    #[arg(long, value_enum, default_value_t = ContextTier::Balanced)]
    pub tier: ContextTier,
    /// How retrieval searches (default: hybrid when available, else keyword).
    #[arg(long, value_enum)]
    pub mode: Option<SearchMode>,
    /// Also print the receipt.
    #[arg(long)]
    pub receipt: bool,
    /// The relevance gate's floor, 0 to 1: retrieved memory is packed only when the query's
    /// relevance reaches it. Default: context.min_relevance in settings, else 0.5
    /// (docs/CONTEXT.md, "The relevance gate").
    #[arg(long, value_name = "FLOOR", conflicts_with = "no_gate")]
    pub min_relevance: Option<f64>,
    /// Pack retrieved memory whatever its relevance (the receipt still shows the relevance).
    #[arg(long)]
    pub no_gate: bool,
}

impl ContextArgs {
    /// The floor asked for on the command line, if any (`--no-gate` is a floor of 0).
    pub fn floor(&self) -> Option<f64> {
        if self.no_gate { Some(0.0) } else { self.min_relevance }
    }
}
