//! Consent to send a project's memory to a model off this machine, remembered per model and
//! host in `.zblade/cache/chat-consent.json` when the user says "always" (issue "Chat": "don't
//! ask again for this model"). It lives under `cache/`, which `.zblade/.gitignore` keeps out of
//! git: one person's consent must not travel to a teammate through the repository. Deleting it
//! means being asked again. Keys and URLs' user info are never part of what is stored.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::Endpoint;

/// The file, given the project's cache folder (`.zblade/cache/`).
pub fn path(cache_dir: &Path) -> PathBuf {
    cache_dir.join("chat-consent.json")
}

/// What consent is remembered under: the model and the host it is sent to.
fn key(endpoint: &Endpoint) -> String {
    format!("{}@{}", endpoint.model, endpoint.host().unwrap_or_default())
}

fn remembered(cache_dir: &Path) -> Vec<String> {
    // A damaged file means no consent: the user is asked again, which is the safe side.
    std::fs::read(path(cache_dir))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|v| v.get("always").cloned())
        .and_then(|v| serde_json::from_value::<Vec<String>>(v).ok())
        .unwrap_or_default()
}

/// True when the user said "always" for this model at this host.
pub fn given(cache_dir: &Path, endpoint: &Endpoint) -> bool {
    remembered(cache_dir).contains(&key(endpoint))
}

/// Remembers "always" for this model at this host (written atomically).
pub fn remember(cache_dir: &Path, endpoint: &Endpoint) -> Result<(), String> {
    let mut always = remembered(cache_dir);
    let key = key(endpoint);
    if !always.contains(&key) {
        always.push(key);
    }
    let bytes = serde_json::to_vec_pretty(&json!({"format": 1, "always": always})).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(cache_dir).map_err(|e| format!("{}: {e}", cache_dir.display()))?;
    zblade_core::fsio::write_atomic(&path(cache_dir), &bytes).map_err(|e| e.to_string())
}

/// What a request sends, as a person reads it: each message's role and text, in order.
pub fn preview(body: &Value) -> String {
    let mut out = String::new();
    if let Some(system) = body["system"].as_str() {
        out.push_str(&format!(
            "--- system ({} characters)\n{}\n",
            system.chars().count(),
            crate::printable(system)
        ));
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("?");
        let text = m["content"].as_str().unwrap_or("");
        out.push_str(&format!(
            "--- {role} ({} characters)\n{}\n",
            text.chars().count(),
            crate::printable(text)
        ));
    }
    if let Some(tools) = body["tools"].as_array() {
        let names: Vec<&str> = tools
            .iter()
            .filter_map(|t| t["function"]["name"].as_str().or_else(|| t["name"].as_str()))
            .collect();
        out.push_str(&format!("--- tools offered: {}\n", names.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_is_remembered_per_model_and_host_and_a_damaged_file_asks_again() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        let at = |url: &str, model: &str| Endpoint {
            base_url: url.into(),
            model: model.into(),
            api_key: Some("sk-never-stored".into()),
            api: crate::Api::ChatCompletions,
        };
        let a = at("https://user:pw@api.example.com/v1", "gpt-5");
        assert!(!given(&dir, &a));
        remember(&dir, &a).unwrap();
        remember(&dir, &a).unwrap();
        assert!(given(&dir, &a));
        assert!(given(&dir, &at("https://api.example.com/other/v1", "gpt-5")));
        assert!(!given(&dir, &at("https://api.example.com/v1", "gpt-4")));
        assert!(!given(&dir, &at("https://evil.example.com/v1", "gpt-5")));
        let stored = std::fs::read_to_string(path(&dir)).unwrap();
        assert_eq!(stored.matches("gpt-5@api.example.com").count(), 1);
        assert!(!stored.contains("sk-never") && !stored.contains("pw"), "{stored}");
        std::fs::write(path(&dir), "{not json").unwrap();
        assert!(!given(&dir, &a));
    }

    #[test]
    fn the_preview_shows_every_message_without_control_characters() {
        let body = json!({"messages": [
            {"role": "system", "content": "<zblade-memory>\nArgon2id\n</zblade-memory>"},
            {"role": "user", "content": "why?\u{1b}[2J"},
        ], "tools": crate::tools::definitions()});
        let shown = preview(&body);
        assert!(
            shown.contains("--- system (")
                && shown.contains("Argon2id")
                && shown.contains("--- user (8 characters)\nwhy?[2J")
        );
        assert!(shown.contains("tools offered: read_project_file, search_project, search"));
        assert!(!shown.contains('\u{1b}'));
    }
}
