//! The light tray. All day zblade is an icon in the tray with the indexer behind it, and that
//! process should cost little memory. Most of what a GTK process maps it never needs without a
//! window: GTK 3 on X11 opens OpenGL when it opens the display, to choose visuals, and on a
//! machine without a GPU driver that is Mesa's software rasteriser with all of LLVM (measured
//! here: 224 MB resident with it, 136 MB without, debug build).
//!
//! So the app runs in one of two shapes, and moves between them by replacing its own process
//! image (`exec`: same process id, nothing to hand over but the project path):
//! - **tray** (`--hidden`): started with `GDK_GL=disable` and one malloc arena
//!   (`MALLOC_ARENA_MAX=1`), no window, no web view;
//! - **window**: the usual environment, WebKit with GPU compositing where there is one.
//!
//! "Open zblade" in the tray execs the window shape; closing the window execs the tray shape.
//! The indexer is stopped cleanly before each (it finishes the batch it is writing) and the new
//! shape starts it again, catching up with what changed meanwhile. When `exec` fails the app
//! stays as it is and does the same in-process, only with more memory.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Set in the tray shape's environment, so the app knows it runs there; its value lists the
/// variables of [`TRAY_ENV`] the app set itself (comma-separated, or `1` for none), to be
/// removed again for the window.
pub const TRAY_MARKER: &str = "ZBLADE_LIGHT_TRAY";

/// What the tray shape sets where the user has not. No OpenGL (above). One malloc arena:
/// glibc gives each thread that allocates an arena of its own, and what the models and the
/// indexer's threads freed there stays mapped — measured with the installed app after its
/// models were let go, 113 MB allocated with the default arenas, 101 MB with two, 84 MB with
/// one. The tray's work is background indexing, where one arena's locking costs nothing a
/// user sees; the window shape keeps glibc's default.
const TRAY_ENV: [(&str, &str); 2] = [("GDK_GL", "disable"), ("MALLOC_ARENA_MAX", "1")];

/// Whether this process runs in the tray shape.
pub fn in_light_tray() -> bool {
    std::env::var_os(TRAY_MARKER).is_some()
}

/// The command line of the tray shape: `--hidden`, and the project when there is one.
fn tray_args(project: Option<&Path>) -> Vec<OsString> {
    let mut args = vec![OsString::from("--hidden")];
    args.extend(project.map(|p| p.as_os_str().to_owned()));
    args
}

/// Replaces this process with the tray shape. Returns only when that failed.
pub fn exec_tray(project: Option<&Path>) -> std::io::Error {
    let mut command = match std::env::current_exe() {
        Ok(exe) => Command::new(exe),
        Err(error) => return error,
    };
    command.args(tray_args(project));
    // A value the user chose is theirs.
    let mut ours = Vec::new();
    for (name, value) in TRAY_ENV {
        if std::env::var_os(name).is_none() {
            command.env(name, value);
            ours.push(name);
        }
    }
    let marker = if ours.is_empty() {
        "1".to_string()
    } else {
        ours.join(",")
    };
    command.env(TRAY_MARKER, marker).exec()
}

/// Replaces this process (the tray shape) with the window shape, showing `project`.
/// Returns only when that failed.
pub fn exec_window(project: Option<&Path>) -> std::io::Error {
    let mut command = match std::env::current_exe() {
        Ok(exe) => Command::new(exe),
        Err(error) => return error,
    };
    command.args(project.map(|p| p.as_os_str().to_owned()));
    for name in set_by_the_tray(std::env::var_os(TRAY_MARKER)) {
        command.env_remove(name);
    }
    command.env_remove(TRAY_MARKER).exec()
}

/// The variables of [`TRAY_ENV`] that the marker's value says the app set.
fn set_by_the_tray(marker: Option<OsString>) -> Vec<&'static str> {
    let marker = marker.map(|m| m.to_string_lossy().into_owned()).unwrap_or_default();
    TRAY_ENV
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| marker.split(',').any(|listed| listed == *name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_removes_only_what_the_tray_set() {
        assert_eq!(
            set_by_the_tray(Some("GDK_GL,MALLOC_ARENA_MAX".into())),
            vec!["GDK_GL", "MALLOC_ARENA_MAX"]
        );
        assert_eq!(
            set_by_the_tray(Some("MALLOC_ARENA_MAX".into())),
            vec!["MALLOC_ARENA_MAX"]
        );
        assert!(set_by_the_tray(Some("1".into())).is_empty());
        assert!(set_by_the_tray(Some("PATH,LD_PRELOAD".into())).is_empty());
        assert!(set_by_the_tray(None).is_empty());
    }

    #[test]
    fn the_tray_command_line_keeps_the_project() {
        assert_eq!(tray_args(None), vec![OsString::from("--hidden")]);
        assert_eq!(
            tray_args(Some(Path::new("/work/demo"))),
            vec![OsString::from("--hidden"), OsString::from("/work/demo")]
        );
    }
}
