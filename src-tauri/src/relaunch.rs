//! The light tray. All day zblade is an icon in the tray with the indexer behind it, and that
//! process should cost little memory. Most of what a GTK process maps it never needs without a
//! window: GTK 3 on X11 opens OpenGL when it opens the display, to choose visuals, and on a
//! machine without a GPU driver that is Mesa's software rasteriser with all of LLVM (measured
//! here: 224 MB resident with it, 136 MB without, debug build).
//!
//! So the app runs in one of two shapes, and moves between them by replacing its own process
//! image (`exec`: same process id, nothing to hand over but the project path):
//! - **tray** (`--hidden`): started with `GDK_GL=disable`, no window, no web view;
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

/// Set in the tray shape's environment, so the app knows it runs there; its value says
/// whether the app set `GDK_GL` itself ([`WE_SET_GDK_GL`]), to be removed again for the window.
pub const TRAY_MARKER: &str = "ZBLADE_LIGHT_TRAY";
const WE_SET_GDK_GL: &str = "gdk-gl";

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
    // A GDK_GL the user chose is theirs; otherwise the tray needs no OpenGL at all.
    if std::env::var_os("GDK_GL").is_none() {
        command.env("GDK_GL", "disable").env(TRAY_MARKER, WE_SET_GDK_GL);
    } else {
        command.env(TRAY_MARKER, "1");
    }
    command.exec()
}

/// Replaces this process (the tray shape) with the window shape, showing `project`.
/// Returns only when that failed.
pub fn exec_window(project: Option<&Path>) -> std::io::Error {
    let mut command = match std::env::current_exe() {
        Ok(exe) => Command::new(exe),
        Err(error) => return error,
    };
    command.args(project.map(|p| p.as_os_str().to_owned()));
    if std::env::var_os(TRAY_MARKER).is_some_and(|v| v == WE_SET_GDK_GL) {
        command.env_remove("GDK_GL");
    }
    command.env_remove(TRAY_MARKER).exec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tray_command_line_keeps_the_project() {
        assert_eq!(tray_args(None), vec![OsString::from("--hidden")]);
        assert_eq!(
            tray_args(Some(Path::new("/work/demo"))),
            vec![OsString::from("--hidden"), OsString::from("/work/demo")]
        );
    }
}
