//! Byte spans inside a JSON document, so the proxy can add its text to a request without
//! re-serialising it: everything outside the insertion reaches the provider byte for byte
//! (key order, number spelling, whitespace, fields zblade has never heard of).
//!
//! The document is validated with serde_json first; this scanner only walks a valid one.

use std::ops::Range;

/// The members of the object at `at` (after whitespace): each key (decoded) and its value's span.
pub(crate) fn members(doc: &[u8], at: usize) -> Option<Vec<(String, Range<usize>)>> {
    items(doc, at, (b'{', b'}'), |i| {
        if doc.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(doc, i)?;
        let key: String = serde_json::from_slice(&doc[i..key_end]).ok()?;
        let colon = skip_ws(doc, key_end);
        if doc.get(colon) != Some(&b':') {
            return None;
        }
        let start = skip_ws(doc, colon + 1);
        let end = value_end(doc, start)?;
        Some(((key, start..end), end))
    })
}

/// The spans of the elements of the array at `at`.
pub(crate) fn elements(doc: &[u8], at: usize) -> Option<Vec<Range<usize>>> {
    items(doc, at, (b'[', b']'), |i| {
        let end = value_end(doc, i)?;
        Some((i..end, end))
    })
}

/// The items between `brackets` at `at` (after whitespace), comma-separated: `item` reads one
/// starting at its first byte and says where it ends.
fn items<T>(
    doc: &[u8],
    at: usize,
    (open, close): (u8, u8),
    mut item: impl FnMut(usize) -> Option<(T, usize)>,
) -> Option<Vec<T>> {
    let mut i = skip_ws(doc, at);
    if doc.get(i) != Some(&open) {
        return None;
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        i = skip_ws(doc, i);
        match *doc.get(i)? {
            b if b == close => return Some(out),
            b',' => i += 1,
            _ => {
                let (value, end) = item(i)?;
                out.push(value);
                i = end;
            }
        }
    }
}

/// The value of `key` in the object at `at`.
pub(crate) fn member(doc: &[u8], at: usize, key: &str) -> Option<Range<usize>> {
    members(doc, at)?
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, span)| span)
}

/// Where the value starting at `i` ends (exclusive).
fn value_end(doc: &[u8], i: usize) -> Option<usize> {
    match doc.get(i)? {
        b'"' => string_end(doc, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < doc.len() {
                match doc[j] {
                    b'"' => {
                        j = string_end(doc, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            // A number, true, false or null: up to the next delimiter.
            let len = doc[i..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(doc.len() - i);
            (len > 0).then_some(i + len)
        }
    }
}

/// Where the string starting with the quote at `i` ends (after its closing quote).
fn string_end(doc: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < doc.len() {
        match doc[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

fn skip_ws(doc: &[u8], mut i: usize) -> usize {
    while i < doc.len() && matches!(doc[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `text` as the inside of a JSON string (escaped, without the quotes).
pub(crate) fn escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).expect("a string serialises");
    quoted[1..quoted.len() - 1].to_string()
}

/// `doc` with `insert` placed at byte `at`.
pub(crate) fn splice(doc: &[u8], at: usize, insert: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(doc.len() + insert.len());
    out.extend_from_slice(&doc[..at]);
    out.extend_from_slice(insert.as_bytes());
    out.extend_from_slice(&doc[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_members_and_elements_of_a_document_with_escapes_and_nesting() {
        let doc = br#" {"a\"b" : [1, {"x": "]}"}, "s\\"], "n":-1.5e3,"t":true , "z":null}"#;
        let found = members(doc, 0).unwrap();
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a\"b", "n", "t", "z"]);
        assert_eq!(&doc[found[1].1.clone()], b"-1.5e3");
        let items = elements(doc, found[0].1.start).unwrap();
        let items: Vec<&[u8]> = items.into_iter().map(|r| &doc[r]).collect();
        assert_eq!(items, [&b"1"[..], br#"{"x": "]}"}"#, br#""s\\""#]);
        assert_eq!(&doc[member(doc, 0, "z").unwrap()], b"null");
    }

    #[test]
    fn splicing_changes_only_the_insertion_point() {
        let doc = br#"{"system":"be brief"}"#;
        let span = member(doc, 0, "system").unwrap();
        let out = splice(doc, span.end - 1, &escaped("\n\"memory\""));
        assert_eq!(out, br#"{"system":"be brief\n\"memory\""}"#);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["system"], "be brief\n\"memory\"");
    }
}
