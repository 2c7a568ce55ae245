//! One app per user. Closing the window leaves zblade running in the tray — and on a desktop
//! whose tray is not shown (GNOME without an AppIndicator extension) that running app would be
//! out of reach, and a second launch would start a second indexer. So a launch first knocks on
//! a Unix socket next to `app.json`: when a running app answers, the launch hands it its
//! arguments (the running app shows its window) and exits; otherwise this launch owns the socket.
//!
//! The socket is a door into the running app, so it opens for this user only: the file is
//! owner-only (0600), each caller's user id is checked (`SO_PEERCRED`), and at most
//! [`MAX_MESSAGE`] bytes are read from it.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

/// The most a launch may send: its arguments, joined by NULs.
pub const MAX_MESSAGE: u64 = 64 * 1024;

/// What a launch found.
pub enum Claim {
    /// No other app runs: this one listens on the socket for later launches.
    First(UnixListener),
    /// A running app took the arguments; this launch should exit.
    Forwarded,
}

/// Hands `args` to the app listening on `socket`, or, when none answers, listens there.
pub fn claim(socket: &Path, args: &[String]) -> std::io::Result<Claim> {
    match UnixStream::connect(socket) {
        Ok(mut stream) => {
            stream.set_write_timeout(Some(Duration::from_secs(2)))?;
            stream.write_all(args.join("\0").as_bytes())?;
            return Ok(Claim::Forwarded);
        }
        // Nothing there, or a socket file left by an app that crashed: take it over.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) => {}
        Err(e) => return Err(e),
    }
    if let Some(dir) = socket.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::remove_file(socket) {
        Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(Claim::First(listener))
}

/// Whether the process at the other end of `stream` runs as this user.
fn same_user(stream: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(stream).is_ok_and(|peer| peer.uid == rustix::process::getuid())
}

/// A launch's arguments: at most [`MAX_MESSAGE`] bytes, NUL-separated; `None` when it sent
/// more, or not UTF-8.
fn read_arguments(stream: &mut UnixStream) -> Option<Vec<String>> {
    let mut bytes = Vec::new();
    stream.take(MAX_MESSAGE + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_MESSAGE {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    Some(text.split('\0').filter(|a| !a.is_empty()).map(str::to_string).collect())
}

/// Serves later launches on a thread: `on_launch` gets each one's arguments.
pub fn serve(listener: UnixListener, on_launch: impl Fn(Vec<String>) + Send + 'static) {
    std::thread::Builder::new()
        .name("zblade-instance".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                if !same_user(&stream) {
                    eprintln!("zblade: refused a connection to the single-instance socket from another user");
                    continue;
                }
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                match read_arguments(&mut stream) {
                    Some(args) => on_launch(args),
                    None => eprintln!("zblade: ignored an oversized or garbled message on the single-instance socket"),
                }
            }
        })
        .expect("zblade: could not start the single-instance thread");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_second_launch_hands_its_arguments_to_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sub/app.sock");
        let Claim::First(listener) = claim(&socket, &[]).unwrap() else {
            panic!("the first launch must own the socket");
        };
        let (tx, rx) = mpsc::channel();
        serve(listener, move |args| tx.send(args).unwrap());
        let args = vec!["--hidden".to_string(), "/tmp/project".to_string()];
        assert!(matches!(claim(&socket, &args).unwrap(), Claim::Forwarded));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), args);
    }

    #[test]
    fn the_socket_is_owner_only_and_oversized_messages_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("app.sock");
        let Claim::First(listener) = claim(&socket, &[]).unwrap() else {
            panic!("the first launch must own the socket");
        };
        let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (tx, rx) = mpsc::channel();
        serve(listener, move |args| tx.send(args).unwrap());
        // A message over the cap is dropped whole, and the socket keeps serving.
        let mut flood = UnixStream::connect(&socket).unwrap();
        let _ = flood.write_all(&vec![b'a'; (MAX_MESSAGE + 10) as usize]);
        drop(flood);
        assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
        let args = vec!["/tmp/p".to_string()];
        assert!(matches!(claim(&socket, &args).unwrap(), Claim::Forwarded));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), args);
    }

    #[test]
    fn a_socket_left_by_a_crashed_app_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("app.sock");
        drop(UnixListener::bind(&socket).unwrap()); // the file stays; nobody listens
        assert!(socket.exists());
        assert!(matches!(claim(&socket, &[]).unwrap(), Claim::First(_)));
    }
}
