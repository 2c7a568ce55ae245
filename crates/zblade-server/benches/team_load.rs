//! Team memory under load and faults (issue 48): 50 clients in 5 shared projects (10 members
//! each: the creator, a co-owner, five writers, three readers) adding and searching at once,
//! through `zblade-sync`'s client (its retries are what a user's zblade does); the server is
//! stopped and started again mid-run; a client is killed mid-send (half a request, then its
//! connection dropped) and sends again. Afterwards every project is listed: every write a client
//! saw acknowledged is there once, with its writer as author, and nothing else is — 0 lost, 0
//! duplicated — and every reader's write was refused. SQLite, and PostgreSQL when
//! `ZBLADE_TEST_POSTGRES` names a server. Writes the "team-load" section of docs/BENCHMARKS.md.
//!
//! `cargo bench --workspace --bench team_load` runs it in full (60 s per backend); without
//! `--bench` (as in `cargo test --all-targets`) 2 projects of 6 for 4 s, writing nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{conversation, fresh_postgres, percentile};
use zblade_server::auth::{hash_token, new_token};
use zblade_server::store::Role;
use zblade_server::{Limits, Store};
use zblade_sync::{Client, Kind};

mod common;
#[path = "../../zblade-engine/benches/common/report.rs"]
mod report;

/// A server on `addr` over `db`, stoppable.
struct Running {
    runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

fn serve(db: &str, addr: SocketAddr) -> (Running, SocketAddr) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let db = db.to_string();
    let listener = runtime.block_on(async {
        zblade_server::with_store!(&db, store => store.migrate().await.unwrap()).unwrap();
        tokio::net::TcpListener::bind(addr).await.unwrap()
    });
    let bound = listener.local_addr().unwrap();
    let limits = Limits {
        rate: 1e9,
        burst: 1e9,
        ..Limits::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = runtime.spawn(async move {
        // This load sends no vectors: the folder is never created.
        let vectors = zblade_server::Vectors::new(
            std::env::temp_dir()
                .join(format!("zblade-load-vectors-{}", std::process::id()))
                .to_string_lossy(),
        );
        zblade_server::with_store!(&db, store => zblade_server::serve(listener, store, vectors, &limits, async {
            let _ = stopped.await;
        })
        .await
        .unwrap())
        .unwrap();
    });
    (
        Running {
            runtime,
            stop: Some(stop),
            task: Some(task),
        },
        bound,
    )
}

impl Running {
    fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = self.runtime.block_on(task);
        }
        self.runtime.shutdown_timeout(Duration::from_secs(5));
    }
}

struct Person {
    name: String,
    token: String,
    project: String,
    role: Role,
}

struct Outcome {
    backend: &'static str,
    clients: usize,
    projects: usize,
    seconds: f64,
    writes: usize,
    searches: usize,
    search_p50: f64,
    search_p99: f64,
    refused_reader_writes: usize,
    errors: Vec<String>,
    lost: usize,
    unexpected: usize,
    wrong_author: usize,
    restart_gap_ms: f64,
}

fn run_backend(backend: &'static str, db: String, projects: usize, per_project: usize, seconds: u64) -> Outcome {
    // Users, projects and memberships, straight in the store.
    let people: Vec<Person> = {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            zblade_server::with_store!(&db, store => {
                store.migrate().await.unwrap();
                let mut people = Vec::new();
                for p in 0..projects {
                    let project = format!("proj_team{p}");
                    let mut creator = 0;
                    for m in 0..per_project {
                        let name = format!("u{p}_{m}");
                        let user = store.add_user(&name).await.unwrap();
                        let (id, token) = new_token();
                        store.add_token(&name, &id, &hash_token(&token), None).await.unwrap();
                        // The creator, a co-owner, then writers; the last three read.
                        let role = match m {
                            0 | 1 => Role::Owner,
                            m if m + 3 >= per_project => Role::Reader,
                            _ => Role::Writer,
                        };
                        if m == 0 {
                            store.put_project(user.id, &project, "team").await.unwrap();
                            creator = user.id;
                        } else {
                            store.put_member(creator, &project, &name, role, creator).await.unwrap();
                            store
                                .accept_invitation(user.id, &format!("u{p}_0"), &project)
                                .await
                                .unwrap();
                        }
                        people.push(Person {
                            name,
                            token,
                            project: project.clone(),
                            role,
                        });
                    }
                }
                people
            })
            .unwrap()
        })
    };
    let (server, addr) = serve(&db, "127.0.0.1:0".parse().unwrap());
    let base = format!("http://{addr}");
    let acked: Arc<Mutex<BTreeMap<String, BTreeMap<String, String>>>> = Arc::default();
    let searches = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let refused = Arc::new(Mutex::new(0usize));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = people
        .iter()
        .map(|person| {
            let client = Client::new(&base, &person.token)
                .unwrap()
                .with_retry(zblade_sync::Retry {
                    attempts: 8,
                    first_wait: Duration::from_millis(100),
                    max_wait: Duration::from_secs(2),
                });
            let (name, project, role) = (person.name.clone(), person.project.clone(), person.role);
            let (acked, searches, errors, refused, stop) = (
                acked.clone(),
                searches.clone(),
                errors.clone(),
                refused.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    if n.is_multiple_of(2) || (role == Role::Reader && n % 5 != 1) {
                        let t = Instant::now();
                        let q = ["gateway caches", "retries", "tokens seconds"][n % 3];
                        match client.search(&project, q, None, 10) {
                            Ok(_) => searches.lock().unwrap().push(t.elapsed()),
                            Err(e) => errors.lock().unwrap().push(format!("{name} search: {e}")),
                        }
                        continue;
                    }
                    let id = format!("conv_{name}_{n}");
                    let body = conversation(&id, &project, n, 4);
                    match (
                        client.put_record(&project, Kind::Conversation, &id, body.as_bytes()),
                        role,
                    ) {
                        (Ok(_), Role::Reader) => errors.lock().unwrap().push(format!("{name} (reader) wrote {id}")),
                        (Ok(_), _) => {
                            acked
                                .lock()
                                .unwrap()
                                .entry(project.clone())
                                .or_default()
                                .insert(id, name.clone());
                        }
                        (Err(e), Role::Reader) if e.to_string().contains("403") => *refused.lock().unwrap() += 1,
                        (Err(e), _) => errors.lock().unwrap().push(format!("{name} put {id}: {e}")),
                    }
                }
            })
        })
        .collect();

    // Mid-run: the server stops (requests in flight finish) and starts again on the same port.
    std::thread::sleep(Duration::from_secs(seconds * 2 / 5));
    let restarting = Instant::now();
    server.stop();
    std::thread::sleep(Duration::from_millis(300));
    let (server, _) = serve(&db, addr);
    let restart_gap_ms = restarting.elapsed().as_secs_f64() * 1000.0;

    // A client killed mid-send: half a request, then the connection drops; started again, it
    // sends the same write whole.
    let killed = people.iter().find(|p| p.role == Role::Writer).unwrap_or(&people[1]);
    let id = format!("conv_{}_killed", killed.name);
    let body = conversation(&id, &killed.project, 1, 4);
    {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        let head = format!(
            "PUT /api/v0/projects/{}/conversations/{id} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            killed.project,
            killed.token,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&body.as_bytes()[..body.len() / 2]).unwrap();
    }
    let again = Client::new(&base, &killed.token).unwrap();
    again
        .put_record(&killed.project, Kind::Conversation, &id, body.as_bytes())
        .unwrap();
    acked
        .lock()
        .unwrap()
        .entry(killed.project.clone())
        .or_default()
        .insert(id, killed.name.clone());

    std::thread::sleep(Duration::from_secs(seconds - seconds * 2 / 5));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();

    // Every acknowledged write is there once, by its writer, and nothing else is.
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let (mut lost, mut unexpected, mut wrong_author, mut writes) = (0, 0, 0, 0);
    for p in 0..projects {
        let project = format!("proj_team{p}");
        let owner = people.iter().find(|x| x.project == project).unwrap();
        let listed = Client::new(&base, &owner.token)
            .unwrap()
            .list_records(&project, Kind::Conversation)
            .unwrap();
        let ids: BTreeSet<&str> = listed.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), listed.len(), "{project}: an id listed twice");
        let mine = acked.get(&project).cloned().unwrap_or_default();
        writes += mine.len();
        lost += mine.keys().filter(|id| !ids.contains(id.as_str())).count();
        unexpected += ids.iter().filter(|id| !mine.contains_key(**id)).count();
        wrong_author += listed
            .iter()
            .filter(|r| mine.get(&r.id).is_some_and(|w| r.author.as_deref() != Some(w.as_str())))
            .count();
    }
    server.stop();
    let mut latencies = std::mem::take(&mut *searches.lock().unwrap());
    latencies.sort();
    let errors = std::mem::take(&mut *errors.lock().unwrap());
    let refused_reader_writes = *refused.lock().unwrap();
    Outcome {
        backend,
        clients: people.len(),
        projects,
        seconds: elapsed,
        writes,
        searches: latencies.len(),
        search_p50: percentile(&latencies, 0.5),
        search_p99: percentile(&latencies, 0.99),
        refused_reader_writes,
        errors,
        lost,
        unexpected,
        wrong_author,
        restart_gap_ms,
    }
}

fn main() {
    let full = report::full_run();
    let (projects, per_project, seconds) = if full { (5, 10, 60) } else { (2, 6, 4) };
    let dir = tempfile::tempdir().unwrap();
    let mut outcomes = vec![run_backend(
        "sqlite",
        dir.path().join("team.db").display().to_string(),
        projects,
        per_project,
        seconds,
    )];
    match std::env::var("ZBLADE_TEST_POSTGRES") {
        Ok(admin) if !admin.is_empty() => {
            outcomes.push(run_backend(
                "postgresql",
                fresh_postgres(&admin),
                projects,
                per_project,
                seconds,
            ));
        }
        _ => eprintln!("team_load: ZBLADE_TEST_POSTGRES is not set; PostgreSQL not measured"),
    }
    let mut table = String::from(
        "Each backend: the clients (one thread each, `zblade-sync`'s client with its retries) run for the time given; writers add new conversations, everyone searches, readers also try to write. At 40 % of the run the server is stopped (requests in flight finish) and started again on the same port; then a client sends half a PUT and drops its connection, and sends it again whole. Afterwards each project is listed by its owner.\n\n\
         | backend | clients in projects | run | writes acknowledged | lost | unexpected or duplicated | wrong author | reader writes refused | searches | search p50 / p99 | restart gap | errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for o in &outcomes {
        table.push_str(&format!(
            "| {} | {} in {} | {:.0} s | {} | {} | {} | {} | {} | {} | {:.1} / {:.1} ms | {:.0} ms | {} |\n",
            o.backend,
            o.clients,
            o.projects,
            o.seconds,
            o.writes,
            o.lost,
            o.unexpected,
            o.wrong_author,
            o.refused_reader_writes,
            o.searches,
            o.search_p50,
            o.search_p99,
            o.restart_gap_ms,
            o.errors.len()
        ));
    }
    println!("{table}");
    for o in &outcomes {
        assert!(
            o.errors.is_empty(),
            "{}: {:?}",
            o.backend,
            &o.errors[..o.errors.len().min(5)]
        );
        assert_eq!((o.lost, o.unexpected, o.wrong_author), (0, 0, 0), "{}", o.backend);
        assert!(o.refused_reader_writes > 0, "{}: no reader tried to write", o.backend);
        assert!(o.writes > 0 && o.searches > 0, "{}", o.backend);
    }
    if full {
        report::write_section("team-load", "Team memory under load and faults", "team_load", &table);
    }
}
