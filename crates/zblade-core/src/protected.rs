//! Files zblade never captures as code references and never reads into `show`, `search` or
//! `context`: git's and zblade's own folders, and secrets.
//!
//! A code reference is a pointer that zblade later *hydrates* — reads from the working tree and
//! puts in front of a person or a model. A transcript written by someone else (an agent, an
//! importer, a sync server) can name any path, so the paths that hold credentials must be refused
//! by name, before any read: `.env` files, private keys, `.git/` (which holds remotes with
//! tokens and every past version of a deleted secret) and `.zblade/` (settings, caches). A
//! project adds its own patterns in `privacy.secret_files` of `.zblade/config/settings.json`.

use std::path::Path;

/// Top-level folders that are never project code.
const PROTECTED_DIRS: &[&str] = &[".git", ".zblade"];

/// File-name patterns of secrets (a `*` matches any run of characters, `?` one character).
const SECRET_NAMES: &[&str] = &[
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "*.ppk",
    ".netrc",
    ".pgpass",
    ".htpasswd",
    ".npmrc",
    ".pypirc",
    "credentials.json",
    "secrets.json",
    "*.tfvars",
];

/// Names that match a secret pattern but are templates meant to be committed.
const TEMPLATE_SUFFIXES: &[&str] = &[".example", ".sample", ".template", ".dist"];

/// The rules for one project: the built-in ones plus the project's `privacy.secret_files`.
#[derive(Debug, Clone, Default)]
pub struct PathGuard {
    extra: Vec<String>,
}

impl PathGuard {
    /// The built-in rules plus `extra` patterns (`*.secret`, `config/prod/*`, `**/vault.yml`).
    pub fn new(extra: &[String]) -> PathGuard {
        PathGuard {
            extra: extra
                .iter()
                .map(|p| p.trim().trim_start_matches("./").to_string())
                .filter(|p| !p.is_empty())
                .collect(),
        }
    }

    /// The rules of the project at `root`, reading `privacy.secret_files` from its settings; a
    /// missing or unreadable settings file gives the built-in rules alone (they always apply).
    pub fn for_project(root: &Path) -> PathGuard {
        let settings = crate::Layout::new(root).settings();
        let extra = std::fs::read(&settings)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|v| {
                v.get("privacy")?.get("secret_files")?.as_array().map(|items| {
                    items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                })
            })
            .unwrap_or_default();
        PathGuard::new(&extra)
    }

    /// Checks a normalised project-relative path (`src/a.rs`); the reason on refusal.
    pub fn check(&self, relative: &str) -> Result<(), String> {
        let parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
        // Names are compared folded: case-insensitive file systems (macOS, Windows) open
        // `.GIT/config` and `.Env` as `.git/config` and `.env`, and Windows drops trailing dots
        // and spaces (`.env.` is `.env`).
        let folded: Vec<String> = parts.iter().map(|p| fold_name(p)).collect();
        if let Some(dir) = folded.iter().find(|p| PROTECTED_DIRS.contains(&p.as_str())) {
            return Err(format!(
                "{relative:?} is inside `{dir}/`, which zblade never reads as project code"
            ));
        }
        let name = folded.last().map(String::as_str).unwrap_or_default();
        let template = TEMPLATE_SUFFIXES.iter().any(|s| name.ends_with(s));
        if !template && let Some(pattern) = SECRET_NAMES.iter().find(|p| glob(p.as_bytes(), name.as_bytes())) {
            return Err(format!(
                "{relative:?} looks like a secret (`{pattern}`); zblade never reads it"
            ));
        }
        for pattern in &self.extra {
            // A pattern with a `/` names a path from the project root; one without, a file name
            // anywhere (as in .gitignore).
            let folded_path = folded.join("/");
            let hit = if pattern.contains('/') {
                glob(pattern.as_bytes(), relative.as_bytes()) || glob(pattern.as_bytes(), folded_path.as_bytes())
            } else {
                parts.iter().any(|p| glob(pattern.as_bytes(), p.as_bytes()))
                    || folded.iter().any(|p| glob(pattern.as_bytes(), p.as_bytes()))
            };
            if hit {
                return Err(format!(
                    "{relative:?} is marked secret by `{pattern}` (privacy.secret_files); zblade never reads it"
                ));
            }
        }
        Ok(())
    }
}

/// A file name as a case-insensitive file system that drops trailing dots and spaces sees it.
fn fold_name(name: &str) -> String {
    name.trim_end_matches(['.', ' ']).to_lowercase()
}

/// Checks `relative` against the built-in rules only (when no project settings are at hand).
pub fn check_builtin(relative: &str) -> Result<(), String> {
    PathGuard::default().check(relative)
}

/// Glob matching: `**` matches anything, `*` anything but `/`, `?` one character but `/`.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => {
            let rest = rest.strip_prefix(b"/").unwrap_or(rest);
            (0..=text.len()).any(|i| glob(rest, &text[i..]))
        }
        [b'*', rest @ ..] => {
            for i in 0..=text.len() {
                if glob(rest, &text[i..]) {
                    return true;
                }
                if text.get(i) == Some(&b'/') {
                    return false;
                }
            }
            false
        }
        [b'?', rest @ ..] => matches!(text, [c, tail @ ..] if *c != b'/' && glob(rest, tail)),
        [p, rest @ ..] => matches!(text, [c, tail @ ..] if c == p && glob(rest, tail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_tool_folders_are_refused() {
        let guard = PathGuard::default();
        for bad in [
            ".env",
            ".env.production",
            "deploy/prod.env",
            "certs/server.pem",
            "certs/server.key",
            "home/.ssh/id_ed25519",
            ".git/config",
            "vendor/lib/.git/config",
            ".zblade/config/settings.json",
            ".npmrc",
            "infra/prod.tfvars",
            // Case folding and trailing dots (what macOS and Windows open).
            ".GIT/config",
            ".Env",
            ".env.",
            ".env .",
            "certs/SERVER.PEM",
            ".zblade./settings.json",
            "ID_RSA",
        ] {
            assert!(guard.check(bad).is_err(), "{bad} was accepted");
        }
        for good in [
            "src/main.rs",
            ".env.example",
            "docs/env.md",
            "src/keys.rs",
            "id_ed25519.pub",
            ".github/workflows/ci.yml",
            "src/environment.ts",
        ] {
            assert!(guard.check(good).is_ok(), "{good} was refused");
        }
    }

    #[test]
    fn the_projects_own_patterns_apply() {
        let guard = PathGuard::new(&["*.secret".into(), "config/prod/*".into(), "**/vault.yml".into()]);
        assert!(guard.check("a/b/token.secret").is_err());
        assert!(guard.check("config/prod/db.yml").is_err());
        assert!(guard.check("config/dev/db.yml").is_ok());
        assert!(guard.check("ops/x/vault.yml").is_err());
        assert!(guard.check("vault.yml").is_err());
    }

    #[test]
    fn the_projects_patterns_are_read_from_its_settings() {
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::Layout::new(dir.path()).settings();
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(&settings, br#"{"privacy": {"secret_files": ["*.vault"]}}"#).unwrap();
        assert!(PathGuard::for_project(dir.path()).check("x/db.vault").is_err());
        assert!(PathGuard::for_project(dir.path()).check("x/db.rs").is_ok());
    }

    #[test]
    fn globs() {
        assert!(glob(b"*.pem", b"a.pem"));
        assert!(!glob(b"*.pem", b"a/b.pem"));
        assert!(glob(b"**/b.pem", b"a/x/b.pem"));
        assert!(glob(b"?.rs", b"a.rs"));
        assert!(!glob(b"?.rs", b"ab.rs"));
    }
}
