//! Prefixed ULID identifiers (`conv_…`, `msg_…`, `moment_…`, `proj_…`).
//!
//! ULIDs sort by creation time, so listings ordered by id are also ordered by age. The prefix
//! tells a reader (and `zblade show`) what kind of thing an id names.

/// Prefix of conversation ids.
pub const CONVERSATION: &str = "conv_";
/// Prefix of message ids.
pub const MESSAGE: &str = "msg_";
/// Prefix of moment ids.
pub const MOMENT: &str = "moment_";
/// Prefix of project ids.
pub const PROJECT: &str = "proj_";

/// The longest id we accept; ids become file names.
pub const MAX_ID_LEN: usize = 128;

/// Returns a new id: `prefix` followed by a fresh ULID.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", ulid::Ulid::new())
}

/// Returns an id that is the same for the same input: `prefix` followed by a ULID whose time is
/// `millis` and whose random part is the first 80 bits of `digest` (a hash of the content).
pub fn derived_id(prefix: &str, millis: u64, digest: &[u8]) -> String {
    let mut random = [0u8; 16];
    let n = digest.len().min(10);
    random[16 - n..].copy_from_slice(&digest[..n]);
    let millis = millis.min((1 << 48) - 1);
    format!(
        "{prefix}{}",
        ulid::Ulid::from_parts(millis, u128::from_be_bytes(random))
    )
}

/// Checks that `id` is safe to use as a file name and starts with `prefix` (when one is given).
///
/// Returns a human-readable reason on failure.
pub fn check_id(id: &str, prefix: Option<&str>) -> Result<(), String> {
    if id.is_empty() {
        return Err("must not be empty".into());
    }
    if id.len() > MAX_ID_LEN {
        return Err(format!(
            "is {} characters long; at most {MAX_ID_LEN} are allowed",
            id.len()
        ));
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "{id:?} contains {bad:?}; ids may hold only ASCII letters, digits, `_` and `-`"
        ));
    }
    if let Some(prefix) = prefix
        && !id.starts_with(prefix)
    {
        return Err(format!("{id:?} must start with `{prefix}`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_carry_their_prefix_and_are_valid() {
        let id = new_id(CONVERSATION);
        assert!(id.starts_with("conv_"));
        assert_eq!(id.len(), "conv_".len() + 26);
        check_id(&id, Some(CONVERSATION)).unwrap();
    }

    #[test]
    fn path_characters_are_refused() {
        for bad in ["conv_../x", "conv_a/b", "conv_a\\b", "conv_ a", "", "conv_\u{e9}"] {
            assert!(check_id(bad, Some(CONVERSATION)).is_err(), "{bad:?} was accepted");
        }
        assert!(check_id("msg_1", Some(CONVERSATION)).is_err());
        assert!(check_id(&"a".repeat(129), None).is_err());
    }
}
