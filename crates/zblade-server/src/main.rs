//! `zblade-server`: run the sync server and manage its users and tokens.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use zblade_server::auth::{hash_token, new_token};
use zblade_server::{Limits, Store};

/// The zblade sync server (API v0). Memory of server-mode projects lives here; local-mode
/// projects may send titles and tags only, when their owner allows it.
#[derive(Parser)]
#[command(name = "zblade-server", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Db {
    /// The database: a SQLite file path (created when missing) or a postgres:// URL.
    #[arg(long, env = "ZBLADE_SERVER_DB", default_value = "zblade-server.db")]
    db: String,
}

#[derive(Subcommand)]
enum Command {
    /// Serve API v0 over HTTP until Ctrl-C (or SIGTERM).
    Serve {
        #[command(flatten)]
        db: Db,
        /// Address to listen on; keep it on loopback unless a TLS proxy is in front.
        #[arg(long, env = "ZBLADE_SERVER_LISTEN", default_value = "127.0.0.1:7400")]
        listen: String,
        /// Largest request body in bytes.
        #[arg(long, default_value_t = Limits::default().max_body)]
        max_body: usize,
        /// Requests per second per user, on average (429 beyond it).
        #[arg(long, default_value_t = Limits::default().rate)]
        rate: f64,
        /// Requests a user may make in one burst.
        #[arg(long, default_value_t = Limits::default().burst)]
        burst: f64,
        /// Seconds a request may take before it is answered 408.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// Failed sign-ins (bad tokens) one client address may make in a burst; after that
        /// its requests get 429 until it earns them back.
        #[arg(long, default_value_t = Limits::default().failed_auth_burst)]
        failed_auth_burst: f64,
        /// Failed sign-ins per minute an address earns back.
        #[arg(long, default_value_t = Limits::default().failed_auth_per_minute)]
        failed_auth_per_minute: f64,
        /// The address of a reverse proxy (the TLS terminator) in front of this server;
        /// repeatable. Only for requests from these addresses is the client address read from
        /// `X-Forwarded-For` (for the failed sign-in limit); anyone else could forge it.
        #[arg(long = "trusted-proxy", value_name = "IP")]
        trusted_proxies: Vec<std::net::IpAddr>,
        /// Where the projects' vectors live (LanceDB): a directory, or an object store URL
        /// LanceDB reads. Default: beside a SQLite database (`DB.vectors`), or
        /// `zblade-server-vectors` in the working directory with PostgreSQL.
        #[arg(long, env = "ZBLADE_SERVER_VECTORS", value_name = "URI")]
        vectors: Option<String>,
    },
    /// Manage users.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Manage tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Apply the database migrations (serve does this too) and exit.
    Migrate {
        #[command(flatten)]
        db: Db,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Add a user and print their first token (shown once; only its hash is stored).
    Add {
        /// The user's name (unique).
        name: String,
        #[command(flatten)]
        db: Db,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List users and how many tokens each has.
    List {
        #[command(flatten)]
        db: Db,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Disable a user: every token of theirs is refused at once; their data is kept.
    Disable {
        /// The user's name.
        name: String,
        #[command(flatten)]
        db: Db,
    },
    /// Enable a disabled user again (their tokens that are not revoked or expired work again).
    Enable {
        /// The user's name.
        name: String,
        #[command(flatten)]
        db: Db,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Make another token for a user (shown once).
    Add {
        /// The user's name.
        user: String,
        /// Days until the token stops working (default: it does not expire).
        #[arg(long, value_name = "DAYS")]
        expires_in_days: Option<u32>,
        #[command(flatten)]
        db: Db,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List tokens (ids, owners, dates; never the secrets), of one user or all.
    List {
        /// Only this user's tokens.
        #[arg(long)]
        user: Option<String>,
        #[command(flatten)]
        db: Db,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its id (`tok_…`, printed when it was made).
    Revoke {
        /// The token's id.
        id: String,
        #[command(flatten)]
        db: Db,
    },
}

/// Where vectors live when `--vectors` is not given: beside a SQLite file, or in the working
/// directory for a PostgreSQL URL.
fn default_vectors(db: &str) -> String {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        "zblade-server-vectors".to_string()
    } else {
        format!("{}.vectors", db.strip_prefix("sqlite://").unwrap_or(db))
    }
}

impl Command {
    /// The database the command works on.
    fn db(&self) -> &str {
        match self {
            Command::Serve { db, .. } | Command::Migrate { db } => &db.db,
            Command::User { command } => match command {
                UserCommand::Add { db, .. }
                | UserCommand::List { db, .. }
                | UserCommand::Disable { db, .. }
                | UserCommand::Enable { db, .. } => &db.db,
            },
            Command::Token { command } => match command {
                TokenCommand::Add { db, .. } | TokenCommand::List { db, .. } | TokenCommand::Revoke { db, .. } => {
                    &db.db
                }
            },
        }
    }
}

async fn make_token<S: Store>(store: &S, user: &str, expires_in_days: Option<u32>, json: bool) -> Result<(), String> {
    let (id, secret) = new_token();
    let expires_at = expires_in_days.map(|days| {
        (chrono::Utc::now() + chrono::Duration::days(i64::from(days)))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    });
    store
        .add_token(user, &id, &hash_token(&secret), expires_at.as_deref())
        .await
        .map_err(|e| e.to_string())?;
    if json {
        println!(
            "{}",
            serde_json::json!({ "user": user, "token_id": id, "token": secret, "expires_at": expires_at })
        );
    } else {
        let until = expires_at.map_or_else(String::new, |at| format!("; expires {at}"));
        println!("token for {user} (id {id}{until}; shown only now, keep it safe):\n{secret}");
    }
    Ok(())
}

async fn set_disabled<S: Store>(store: &S, name: &str, disabled: bool) -> Result<(), String> {
    if !store
        .set_user_disabled(name, disabled)
        .await
        .map_err(|e| e.to_string())?
    {
        return Err(format!("no user named {name}"));
    }
    println!(
        "{name} is {}",
        if disabled {
            "disabled: their tokens are refused"
        } else {
            "enabled"
        }
    );
    Ok(())
}

/// Checks what can be checked without the database, then runs the command on the store its
/// `--db` names: [`run_on`] is compiled once per backend.
async fn run(cli: Cli) -> Result<(), String> {
    if let Command::User {
        command: UserCommand::Add { name, .. },
    } = &cli.command
        && (name.trim().is_empty() || name.len() > 64 || name.chars().any(char::is_control))
    {
        return Err("a user name is 1-64 printable characters".into());
    }
    let db = cli.command.db().to_string();
    zblade_server::with_store!(&db, store => run_on(store, &db, cli.command).await).map_err(|e| e.to_string())?
}

/// Runs `command` on `store`, migrated first (every command works on the current schema).
async fn run_on<S: Store>(store: S, db: &str, command: Command) -> Result<(), String> {
    let ran = store.migrate().await.map_err(|e| e.to_string())?;
    match command {
        Command::Serve {
            db: _,
            listen,
            max_body,
            rate,
            burst,
            timeout,
            failed_auth_burst,
            failed_auth_per_minute,
            trusted_proxies,
            vectors,
        } => {
            // Memory stored before passage search gets its passages once.
            let indexed = zblade_server::backfill_passages(&store)
                .await
                .map_err(|e| e.to_string())?;
            if indexed > 0 {
                eprintln!("zblade-server: indexed the messages of {indexed} records stored before passage search");
            }
            let vectors = vectors.unwrap_or_else(|| default_vectors(db));
            // Checked before the server listens. LanceDB's calls block: off the async threads.
            let object_store = vectors.contains("://");
            let vectors = tokio::task::spawn_blocking(move || zblade_server::Vectors::open(vectors))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| {
                    let hint = if object_store {
                        " (the bucket must exist and AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY \
                         and, for another S3-compatible store, AWS_ENDPOINT name it: docs/SERVER.md, \
                         \"Vectors and hybrid search\")"
                    } else {
                        ""
                    };
                    format!("cannot keep the vectors (--vectors): {e}{hint}")
                })?;
            let listener = tokio::net::TcpListener::bind(&listen)
                .await
                .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            eprintln!(
                "zblade-server: API v0 on http://{addr}/api/v0/ ({} database {})",
                store.backend(),
                if store.backend() == "sqlite" {
                    db
                } else {
                    "at the given URL"
                }
            );
            eprintln!("zblade-server: vectors in {}", vectors.uri());
            let limits = Limits {
                max_body,
                rate,
                burst,
                timeout: Duration::from_secs(timeout.max(1)),
                failed_auth_burst,
                failed_auth_per_minute,
                trusted_proxies,
                clock: zblade_server::auth::Clock::system(),
            };
            let shutdown = async {
                let ctrl_c = tokio::signal::ctrl_c();
                #[cfg(unix)]
                {
                    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .expect("SIGTERM handler");
                    tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
                }
                #[cfg(not(unix))]
                let _ = ctrl_c.await;
                eprintln!("zblade-server: stopping (finishing requests in flight)");
            };
            zblade_server::serve(listener, store, vectors, &limits, shutdown)
                .await
                .map_err(|e| e.to_string())
        }
        Command::User { command } => match command {
            UserCommand::Add { name, db: _, json } => {
                store.add_user(&name).await.map_err(|e| e.to_string())?;
                make_token(&store, &name, None, json).await
            }
            UserCommand::List { db: _, json } => {
                let users = store.list_users().await.map_err(|e| e.to_string())?;
                if json {
                    println!("{}", serde_json::json!({ "users": users }));
                } else if users.is_empty() {
                    println!("no users yet; add one with `zblade-server user add NAME`");
                } else {
                    println!("{:<24} {:<26} {:>7} {:>8}  STATE", "USER", "ADDED", "TOKENS", "REVOKED");
                    for u in users {
                        println!(
                            "{:<24} {:<26} {:>7} {:>8}  {}",
                            u.name,
                            u.created_at,
                            u.active_tokens,
                            u.revoked_tokens,
                            u.disabled_at
                                .map_or_else(|| "active".to_string(), |at| format!("disabled {at}"))
                        );
                    }
                }
                Ok(())
            }
            UserCommand::Disable { name, db: _ } => set_disabled(&store, &name, true).await,
            UserCommand::Enable { name, db: _ } => set_disabled(&store, &name, false).await,
        },
        Command::Token { command } => match command {
            TokenCommand::Add {
                user,
                expires_in_days,
                db: _,
                json,
            } => make_token(&store, &user, expires_in_days, json).await,
            TokenCommand::List { user, db: _, json } => {
                let tokens = store.list_tokens(user.as_deref()).await.map_err(|e| e.to_string())?;
                if json {
                    println!("{}", serde_json::json!({ "tokens": tokens }));
                } else if tokens.is_empty() {
                    println!("no tokens; make one with `zblade-server token add USER`");
                } else {
                    println!("{:<40} {:<24} {:<26} STATE", "TOKEN", "USER", "MADE");
                    let now = zblade_server::store::now();
                    for t in tokens {
                        let state = match (&t.revoked_at, &t.expires_at) {
                            (Some(at), _) => format!("revoked {at}"),
                            (None, Some(at)) if *at <= now => format!("expired {at}"),
                            (None, Some(at)) => format!("expires {at}"),
                            (None, None) => "active".into(),
                        };
                        println!("{:<40} {:<24} {:<26} {state}", t.id, t.user, t.created_at);
                    }
                }
                Ok(())
            }
            TokenCommand::Revoke { id, db: _ } => {
                if store.revoke_token(&id).await.map_err(|e| e.to_string())? {
                    println!("revoked {id}");
                    Ok(())
                } else {
                    Err(format!("no active token {id}"))
                }
            }
        },
        Command::Migrate { db: _ } => {
            println!("{ran} migration(s) applied");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    // Before the runtime starts its threads (docs/PRIVACY.md).
    zblade_search::embed::disable_onnx_telemetry();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("zblade-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve_main())
}

async fn serve_main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zblade-server: {e}");
            ExitCode::FAILURE
        }
    }
}
