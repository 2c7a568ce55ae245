//! What the web view may not do on its own word. Messages shown in the window were written by
//! others (agents, transcripts, a sync server), so the page must be assumed hostile at times:
//!
//! - it never leaves the app's own origin: every navigation elsewhere is refused
//!   ([`is_app_origin`], installed as the window's navigation handler);
//! - a link opens in the system browser only through [`open_link`], after the person confirms it
//!   in a native dialog the page cannot draw or click;
//! - turning network use on needs the same kind of native confirmation ([`confirm`]), so a script
//!   in the page cannot flip the privacy switch by calling the command.

use tauri::AppHandle;
use tauri::Url;
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};

use crate::error::{AppError, AppResult, ErrorCode};

/// For end-to-end tests only: WebDriver cannot click a native GTK dialog, so with this set to
/// `yes` (or `no`) in the app's environment every confirmation answers itself. The page cannot
/// set a process's environment, so this opens nothing to it.
pub const ANSWER_ENV: &str = "ZBLADE_TEST_ANSWER_DIALOGS";

/// Whether `url` is the app's own page (`tauri://localhost`, or `http(s)://tauri.localhost` where
/// the platform serves it so).
pub fn is_app_origin(url: &Url) -> bool {
    match url.scheme() {
        "tauri" => url.host_str() == Some("localhost"),
        "http" | "https" => url.host_str() == Some("tauri.localhost"),
        _ => false,
    }
}

/// The window's navigation handler: the app's own pages only.
pub fn allow_navigation(url: &Url) -> bool {
    let allowed = is_app_origin(url);
    if !allowed {
        eprintln!("zblade: refused to navigate the window to {url}; links open in the browser after a confirmation");
    }
    allowed
}

/// Asks the person in a native dialog; true only for an explicit yes.
pub fn confirm(app: &AppHandle, title: &str, message: &str, yes: &str) -> bool {
    match std::env::var(ANSWER_ENV).as_deref() {
        Ok("yes") => return true,
        Ok("no") => return false,
        _ => {}
    }
    app.dialog()
        .message(message)
        .title(title)
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom(
            yes.to_string(),
            "Cancel".to_string(),
        ))
        .blocking_show()
}

/// A link from a message, checked: `http`, `https` or `mailto` only, no credentials in it.
pub fn checked_link(link: &str) -> AppResult<Url> {
    let url = Url::parse(link.trim())
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, format!("{link:?} is not a link: {e}")))?;
    if !matches!(url.scheme(), "http" | "https" | "mailto") {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!("{}: links open only when they are http, https or mailto", url.scheme()),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            "a link with a user name or password in it is not opened".to_string(),
        ));
    }
    Ok(url)
}

/// Opens `link` in the system browser after the person confirmed it; false when they did not.
pub fn open_link(app: &AppHandle, link: &str) -> AppResult<bool> {
    let url = checked_link(link)?;
    let message = format!(
        "A message links to\n\n{url}\n\nOpen it in your browser? The page is outside zblade; what it shows and asks for is not zblade's."
    );
    if !confirm(app, "Open a link?", &message, "Open in browser") {
        return Ok(false);
    }
    if std::env::var(ANSWER_ENV).is_ok() {
        // Tests confirm the flow without starting a browser.
        eprintln!("zblade: would open {url}");
        return Ok(true);
    }
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    std::process::Command::new(opener)
        .arg(url.as_str())
        .spawn()
        .map_err(|e| {
            AppError::new(
                ErrorCode::Internal,
                format!("cannot start {opener} to open the link: {e}"),
            )
        })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_apps_own_origin_is_navigable() {
        for ok in [
            "tauri://localhost/",
            "tauri://localhost/index.html#/search",
            "http://tauri.localhost/",
        ] {
            assert!(is_app_origin(&Url::parse(ok).unwrap()), "{ok}");
        }
        for bad in [
            "https://evil.example/",
            "http://localhost:8080/",
            "file:///etc/passwd",
            "tauri://evil/",
            "javascript:alert(1)",
            "http://tauri.localhost.evil.example/",
        ] {
            assert!(!is_app_origin(&Url::parse(bad).unwrap()), "{bad}");
        }
    }

    #[test]
    fn links_are_checked_before_any_confirmation() {
        assert!(checked_link("https://docs.rs/rmcp").is_ok());
        assert!(checked_link("mailto:a@example.com").is_ok());
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
            "not a url",
            "smb://host/share",
        ] {
            assert!(checked_link(bad).is_err(), "{bad}");
        }
    }
}
