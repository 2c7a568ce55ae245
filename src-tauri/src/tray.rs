//! The system-tray icon: a status tooltip and a menu — a status line, Open zblade,
//! Pause/Resume indexing, Quit. When no tray can be shown (a desktop without a status-notifier
//! host), closing the window quits instead of hiding it, so the app is never left running
//! with no way back to it.

use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Wry};

use crate::events::{IndexerState, IndexerStatus};

/// The tray's parts the app updates.
pub struct Tray {
    icon: TrayIcon<Wry>,
    status: MenuItem<Wry>,
    pause: MenuItem<Wry>,
}

const ICON: &[u8] = include_bytes!("../../icons/tray.png");
const ICON_PAUSED: &[u8] = include_bytes!("../../icons/tray-paused.png");

/// Builds the tray icon and its menu.
pub fn build(app: &AppHandle) -> tauri::Result<Tray> {
    let status = MenuItem::with_id(app, "status", "Starting…", false, None::<&str>)?;
    let open = MenuItem::with_id(app, "open", "Open zblade", true, None::<&str>)?;
    let pause = MenuItem::with_id(app, "pause", "Pause indexing", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit zblade", true, None::<&str>)?;
    let separator = PredefinedMenuItem::separator(app)?;
    let menu = Menu::with_items(app, &[&status, &separator, &open, &pause, &quit])?;
    let icon = TrayIconBuilder::with_id("zblade")
        .icon(Image::from_bytes(ICON)?)
        .tooltip("zblade")
        .menu(&menu)
        .on_menu_event(|app, event| match event.id.as_ref() {
            "open" => show_window(app),
            "pause" => {
                let state = app.state::<crate::state::AppState>();
                let paused = state.config().indexer_paused;
                if let Err(error) = crate::set_paused(app, &state, !paused) {
                    eprintln!("zblade: {error}");
                }
            }
            "quit" => crate::quit(app),
            _ => {}
        })
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                show_window(tray.app_handle());
            }
        })
        .build(app)?;
    Ok(Tray { icon, status, pause })
}

impl Tray {
    /// Shows the indexer's state in the tooltip, the status line and the pause item.
    pub fn show_status(&self, status: &IndexerStatus) {
        let line = status.line();
        let _ = self.icon.set_tooltip(Some(format!("zblade — {line}")));
        let _ = self.status.set_text(line);
        let paused = status.state == IndexerState::Paused;
        let _ = self
            .pause
            .set_text(if paused { "Resume indexing" } else { "Pause indexing" });
        if let Ok(image) = Image::from_bytes(if paused { ICON_PAUSED } else { ICON }) {
            let _ = self.icon.set_icon(Some(image));
        }
    }
}

/// Shows and focuses the main window, creating it (from `tauri.conf.json`) when there is none:
/// the window exists only while it is on screen. Closing it destroys it and its WebKit web
/// process, so the tray indexer runs without a browser engine's memory.
pub fn show_window(app: &AppHandle) {
    // The light tray shape has no OpenGL for a web view: become the window shape instead.
    if crate::relaunch::in_light_tray() {
        crate::switch_shape(
            app,
            crate::relaunch::exec_window,
            "restart with a window; opening it here",
        );
    }
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.show();
        let _ = window.unminimize();
        let _ = window.set_focus();
        return;
    }
    let Some(config) = app.config().app.windows.iter().find(|w| w.label == "main") else {
        eprintln!("zblade: tauri.conf.json has no window labelled main");
        return;
    };
    // The page never leaves the app's own origin (messages may carry hostile links).
    let built = tauri::WebviewWindowBuilder::from_config(app, config)
        .and_then(|builder| builder.on_navigation(crate::guard::allow_navigation).build());
    match built {
        Ok(window) => {
            let _ = window.set_focus();
        }
        Err(error) => eprintln!("zblade: could not open the window: {error}"),
    }
}
