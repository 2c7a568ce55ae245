//! Secrets in imported text are replaced before anything is written or embedded.
//!
//! Agents' transcripts are full of them: a `cat .env` result, a key pasted into a prompt, a
//! token in a curl command. We replace private key blocks, the well-known token formats (cloud,
//! API and VCS tokens) and `.env`-style assignments whose name says KEY, SECRET, TOKEN or
//! PASSWORD with `[REDACTED:<kind>]`. Patterns are deliberately specific: a false positive
//! costs a word of a transcript, a false negative leaks a credential into memory and prompts.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// The marker that replaces a secret.
pub fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

struct Rule {
    kind: &'static str,
    pattern: Regex,
    /// For assignments: keep capture group 1 (the name), replace the value.
    keep_prefix: bool,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |kind, pattern: &str, keep_prefix| Rule {
        kind,
        pattern: Regex::new(pattern).expect("redaction pattern compiles"),
        keep_prefix,
    };
    vec![
        rule(
            "private-key",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
            false,
        ),
        rule("aws-access-key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b", false),
        rule(
            "github-token",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
            false,
        ),
        rule("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}", false),
        rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", false),
        rule(
            "openai-key",
            r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
            false,
        ),
        rule("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", false),
        rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}", false),
        rule("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}", false),
        rule("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}", false),
        rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}", false),
        rule(
            "jwt",
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            false,
        ),
        rule(
            "assignment",
            // NAME=value / export NAME="value" / NAME: value at the start of a line, where NAME
            // is an environment style name (capitals) that says what it holds.
            r#"(?m)(^[ \t]*(?:export[ \t]+)?[A-Z0-9_]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|PWD)[A-Z0-9_]*[ \t]*[=:][ \t]*)["']?([^\s"'\[][^\s"']*)["']?"#,
            true,
        ),
        rule(
            "assignment",
            // The same name anywhere else in a line, joined to its value by `=`: a command
            // line (`API_TOKEN=… npm publish`, `curl …?API_KEY=…`), a sentence that quotes one.
            // The value ends where a shell or URL would end it.
            r#"((?:^|[^A-Za-z0-9_])[A-Z0-9_]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|PWD)[A-Z0-9_]*=)["']?([^\s"'\[&;|][^\s"'&;|]*)["']?"#,
            true,
        ),
        rule(
            "assignment",
            // A JSON or YAML key of that kind with a quoted value: `"API_TOKEN": "…"` (the
            // quotes stay, so JSON stays JSON).
            // Lower-case keys only when the name says credential (`apiKey`, `client_secret`,
            // `password`), not any `key`.
            r#"("(?:[A-Z0-9_]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|PWD)[A-Z0-9_]*|(?i:[a-z0-9_-]*(?:api|access|secret|private|auth|client|refresh|bearer)[_-]?(?:key|token|secret)|password|passwd|secret|token))"[ \t]*:[ \t]*")([^"\s\[][^"\s]*)"#,
            true,
        ),
    ]
});

/// Replaces secrets in `text`; returns how many were replaced.
pub fn redact_in_place(text: &mut String) -> usize {
    // Cheap pre-check: almost every line of a transcript has none of these.
    let mut count = 0;
    for rule in RULES.iter() {
        if !rule.pattern.is_match(text) {
            continue;
        }
        let replaced = rule.pattern.replace_all(text, |caps: &regex::Captures<'_>| {
            count += 1;
            if rule.keep_prefix {
                format!("{}{}", &caps[1], marker(rule.kind))
            } else {
                marker(rule.kind)
            }
        });
        *text = replaced.into_owned();
    }
    count
}

/// Text with secrets replaced, and how many.
pub fn redact(text: &str) -> (String, usize) {
    let mut owned = text.to_string();
    let count = redact_in_place(&mut owned);
    (owned, count)
}

/// Replaces secrets in everything a message carries: its text, its tool calls' arguments and
/// results; returns how many were replaced.
pub fn redact_message(message: &mut zblade_core::Message) -> usize {
    let mut count = 0;
    let mut scrub = |text: &mut String| count += redact_in_place(text);
    scrub(&mut message.content);
    for call in &mut message.tool_calls {
        redact_value(&mut call.arguments, &mut scrub);
        if let Some(result) = &mut call.result {
            scrub(&mut result.text);
        }
    }
    count
}

/// Applies `scrub` to every string inside a JSON value (tool call arguments).
pub(crate) fn redact_value(value: &mut Value, scrub: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(s) => scrub(s),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, scrub)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(v, scrub)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_secrets_are_replaced() {
        let cases = [
            ("key AKIAIOSFODNN7EXAMPLE here", "aws-access-key"),
            ("ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "github-token"),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "openai-key"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "anthropic-key"),
            ("xoxb-1234567890-abcdefghij", "slack-token"),
            ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "google-api-key"),
            ("sk_live_0123456789abcdefABCD", "stripe-key"),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                "private-key",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "jwt",
            ),
        ];
        for (text, kind) in cases {
            let (out, n) = redact(text);
            assert_eq!(n, 1, "{text}: {out}");
            assert!(out.contains(&marker(kind)), "{text} -> {out}");
        }
    }

    #[test]
    fn env_assignments_keep_the_name() {
        let (out, n) =
            redact("DATABASE_URL=postgres://x\nAPI_KEY=abc123\nexport GITHUB_TOKEN=\"t0k3n\"\nDB_PASSWORD: hunter2\n");
        assert_eq!(n, 3, "{out}");
        assert!(out.contains("API_KEY=[REDACTED:assignment]"));
        assert!(out.contains("export GITHUB_TOKEN=[REDACTED:assignment]"), "{out}");
        assert!(out.contains("DB_PASSWORD: [REDACTED:assignment]"));
        assert!(out.contains("DATABASE_URL=postgres://x"));
    }

    #[test]
    fn assignments_anywhere_in_a_line_are_replaced() {
        for (text, kept) in [
            (
                "run API_TOKEN=abc123def npm publish",
                "API_TOKEN=[REDACTED:assignment] npm publish",
            ),
            (
                "curl 'https://x.test/v1?API_KEY=abc123&q=1'",
                "?API_KEY=[REDACTED:assignment]&q=1",
            ),
            (
                "set it: GITHUB_TOKEN=\"t0k3n\" then push",
                "GITHUB_TOKEN=[REDACTED:assignment] then",
            ),
            (
                r#"{"API_SECRET": "s3cr3t-value", "name": "x"}"#,
                r#""API_SECRET": "[REDACTED:assignment]""#,
            ),
            (r#"{"apiKey": "s3cr3t-value"}"#, r#""apiKey": "[REDACTED:assignment]""#),
        ] {
            let (out, n) = redact(text);
            assert_eq!(n, 1, "{text} -> {out}");
            assert!(out.contains(kept), "{text} -> {out}");
        }
    }

    #[test]
    fn ordinary_code_is_left_alone() {
        for text in [
            "let token = lexer.next_token();",
            "const apiKey = process.env.API_KEY;",
            "fn rotate_key(&self) -> Key { self.key.clone() }",
            "API_KEY=\nSECRET_KEY=[REDACTED:assignment]",
            "see task-abcdefghijklmnopqrstuvwxyz for details",
            "the PRIMARY KEY: id column",
            "if (token == KEY) { return; }",
            "let cache_key=format!(\"{a}\");",
            r#"{"key": "src/auth.rs", "monkey": "banana"}"#,
        ] {
            let (out, n) = redact(text);
            assert_eq!((out.as_str(), n), (text, 0));
        }
    }
}
