//! Everything a sync server sends is checked here before the rest of zblade sees it.
//!
//! A server can be hostile, compromised, or reached over a path someone else controls. Its
//! answers decide file names (`migrate to-local` writes one artifact per listed id), what is
//! shown in a terminal or a web view, and what is packed into a model's prompt. So: ids follow
//! the same rules as local input, hashes are checked on the bytes received, records must parse
//! and name the id that was asked for, listings must advance, and no answer may be larger than
//! a cap. A broken rule is an [`Error::Untrusted`] naming the server, the request and the rule.

use std::io::Read;

use reqwest::Url;
use reqwest::blocking::Response;
use zblade_core::{Error, Result, ids};

use crate::Kind;

/// Caps on the size of what a server may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerLimits {
    /// One record's bytes (an artifact). The server refuses uploads over 8 MiB by default.
    pub record_bytes: u64,
    /// One page of a listing (at most 1,000 items of metadata) or of search hits.
    pub page_bytes: u64,
    /// Small answers: `/me`, a PUT's result, an error body.
    pub small_bytes: u64,
    /// Records in one listing, all pages together.
    pub listed_records: usize,
}

impl Default for AnswerLimits {
    fn default() -> Self {
        AnswerLimits {
            record_bytes: 64 * 1024 * 1024,
            page_bytes: 16 * 1024 * 1024,
            small_bytes: 1024 * 1024,
            listed_records: 1_000_000,
        }
    }
}

/// Reads a body of at most `cap` bytes: a larger `Content-Length` is refused before anything is
/// read, and a body without one is cut off one byte past the cap and refused.
pub(crate) fn read_capped(what: &str, response: Response, cap: u64) -> Result<Vec<u8>> {
    if let Some(length) = response.content_length()
        && length > cap
    {
        return Err(Error::Untrusted(format!(
            "{what}: the server announced {length} bytes; at most {cap} are accepted"
        )));
    }
    let mut bytes = Vec::new();
    response
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Network(format!("{what}: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(Error::Untrusted(format!(
            "{what}: the server sent more than {cap} bytes; the answer was dropped"
        )));
    }
    Ok(bytes)
}

/// The id prefix every record of `kind` carries.
pub(crate) fn prefix(kind: Kind) -> &'static str {
    match kind {
        Kind::Conversation => ids::CONVERSATION,
        Kind::Moment => ids::MOMENT,
    }
}

/// An id the server named, by the rules local input follows: ASCII letters, digits, `_` and
/// `-`, at most 128, with the kind's prefix. Nothing that could be read as a path.
pub(crate) fn record_id(what: &str, kind: Kind, id: &str) -> Result<()> {
    ids::check_id(id, Some(prefix(kind)))
        .map_err(|why| Error::Untrusted(format!("{what}: the server named a record whose id {why}")))
}

/// A project id the server named (a listing, an invitation): the id rules, no prefix required
/// (projects made by other clients may use their own).
pub(crate) fn project_id(what: &str, id: &str) -> Result<()> {
    ids::check_id(id, None)
        .map_err(|why| Error::Untrusted(format!("{what}: the server named a project whose id {why}")))
}

/// A sha256 as the server lists it: 64 lowercase hex digits.
pub(crate) fn sha256(what: &str, hash: &str) -> Result<()> {
    if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(Error::Untrusted(format!(
            "{what}: {:?} is not a sha256 (64 lowercase hex digits)",
            clean(hash, 80)
        )))
    }
}

/// Checks that downloaded bytes are the artifact asked for: they parse as a `kind` artifact of
/// a version this zblade reads, pass the artifact rules, and carry the id that was asked for.
pub(crate) fn record_bytes(server: &str, kind: Kind, id: &str, bytes: &[u8]) -> Result<()> {
    let source = format!("{server}: {} {id}", kind.collection().trim_end_matches('s'));
    let found = match kind {
        Kind::Conversation => {
            let conv = zblade_core::parse_conversation(bytes, &source)?;
            conv.validate(&source)?;
            conv.conversation_id
        }
        Kind::Moment => {
            let moment = zblade_core::parse_moment(bytes, &source)?;
            moment.validate(&source)?;
            moment.id
        }
    };
    if found != id {
        return Err(Error::Untrusted(format!(
            "{source}: the server answered with record {:?} instead",
            clean(&found, 140)
        )));
    }
    Ok(())
}

/// Text from a server made safe to print and to show: control characters (terminal escape
/// sequences, bidi overrides) become spaces, and it is cut to `max` characters.
pub fn clean(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() || is_bidi_control(c) { ' ' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// Unicode's explicit direction marks, which make a terminal show text in another order than
/// it is (the "Trojan Source" trick).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// Whether `url` names this machine (`localhost`, `127.0.0.0/8`, `::1`), where plain http
/// crosses no network.
pub fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_the_server_follow_the_local_rules() {
        for bad in [
            "../../package",
            "/etc/passwd",
            "conv_a/../../x",
            "moment_x",
            "conv_\u{e9}",
            "",
        ] {
            assert!(
                record_id("listing", Kind::Conversation, bad).is_err(),
                "{bad:?} was accepted"
            );
        }
        record_id("listing", Kind::Conversation, "conv_01HX").unwrap();
        record_id("listing", Kind::Moment, "moment_01HX").unwrap();
    }

    #[test]
    fn hashes_must_be_sha256_hex() {
        sha256("x", &"a".repeat(64)).unwrap();
        for bad in [
            "",
            "A".repeat(64).as_str(),
            "g".repeat(64).as_str(),
            "a".repeat(63).as_str(),
        ] {
            assert!(sha256("x", bad).is_err());
        }
    }

    #[test]
    fn server_text_loses_escape_sequences() {
        assert_eq!(clean("ok\u{1b}[2Jgone\u{202e}x", 100), "ok [2Jgone x");
        assert_eq!(clean("abcdef", 3), "abc…");
    }

    #[test]
    fn loopback_hosts() {
        for url in [
            "http://127.0.0.1:7400",
            "http://localhost:1",
            "http://[::1]:9",
            "http://127.8.9.1",
        ] {
            assert!(is_loopback(&Url::parse(url).unwrap()), "{url}");
        }
        for url in [
            "http://10.0.0.1",
            "http://example.com",
            "http://127.0.0.1.evil.com",
            "http://localhost.evil.com",
        ] {
            assert!(!is_loopback(&Url::parse(url).unwrap()), "{url}");
        }
    }

    #[test]
    fn a_record_must_name_the_id_asked_for() {
        let conv = br#"{"version":"1.0","conversation_id":"conv_B","project_id":"proj_1","title":"t","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","messages":[]}"#;
        record_bytes("http://s", Kind::Conversation, "conv_B", conv).unwrap();
        let err = record_bytes("http://s", Kind::Conversation, "conv_A", conv).unwrap_err();
        assert!(err.to_string().contains("instead"), "{err}");
        assert!(record_bytes("http://s", Kind::Moment, "moment_A", b"{not json").is_err());
    }
}
