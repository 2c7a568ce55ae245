//! The warm engine a prompt hook asks: `zblade serve` started on a project and stopped when the
//! guard is dropped, for the benchmarks that time hooks against it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `zblade serve`; killed and reaped on drop.
pub struct WarmEngine(Child);

impl WarmEngine {
    /// Starts `zblade` (the binary at `zblade`) serving `root`, and returns once it says it is
    /// serving: the hook's next `zblade context` finds its socket.
    pub fn start(zblade: &str, root: &Path) -> Self {
        let mut daemon = Command::new(zblade)
            .arg("--project")
            .arg(root)
            .arg("serve")
            .stderr(Stdio::piped())
            .spawn()
            .expect("zblade serve starts");
        // It may warn before it serves; whatever it writes is passed on to this bench's stderr,
        // to the end: a pipe closed after the first line would make its next write fail.
        let (serving, serving_seen) = std::sync::mpsc::channel();
        let stderr = BufReader::new(daemon.stderr.take().expect("stderr is piped"));
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if line.contains("serving") {
                    let _ = serving.send(());
                } else {
                    eprintln!("zblade serve: {line}");
                }
            }
        });
        serving_seen
            .recv()
            .expect("zblade serve ended before serving (its output is above)");
        WarmEngine(daemon)
    }
}

impl Drop for WarmEngine {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `command` (a `zblade hook …`) with `event` on its stdin, as an agent runs a hook:
/// its output and how long it took, from the start of the process to its end.
pub fn run_hook(command: &mut Command, event: &[u8]) -> (std::time::Duration, std::process::Output) {
    use std::io::Write as _;
    let started = std::time::Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zblade starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(event)
        .expect("the hook reads its event");
    let out = child.wait_with_output().expect("zblade ends");
    (started.elapsed(), out)
}
