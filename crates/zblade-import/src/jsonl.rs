//! Reading the complete lines of a JSON Lines file from a byte offset.
//!
//! Agents append to their session files while we read them, so the last line may be half
//! written: a line without its `\n` is left for the next read, silently. Lines are decoded
//! lossily (invalid UTF-8 becomes U+FFFD and is reported), and a line longer than
//! [`MAX_LINE_BYTES`] is skipped with a warning instead of being held in memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use crate::{Cursor, FileRead, ReadError};

/// Longest line read (256 MiB); a 50 MB tool output in one record is well inside it.
pub const MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// Calls `each(line_number, value)` for every complete, parseable line after `cursor`, and
/// returns the cursor after the last complete line. Malformed lines become warnings naming
/// `file:line`; they never stop the read.
pub(crate) fn for_each_line(
    path: &Path,
    cursor: &Cursor,
    read: &mut FileRead,
    mut each: impl FnMut(u64, Value, &mut FileRead),
) -> Result<Cursor, ReadError> {
    let mut file = File::open(path).map_err(|e| ReadError::new(path, e.to_string()))?;
    let size = file.metadata().map_err(|e| ReadError::new(path, e.to_string()))?.len();
    let mut next = cursor.clone();
    // The file was replaced or rewritten if it is shorter, or if the byte before the cursor
    // no longer ends a line: read it again from the start (ids keep the conversation the
    // same; messages already stored are updated, not duplicated).
    let rewritten = if size < cursor.offset {
        Some("file is shorter than when last read")
    } else if cursor.offset > 0 && !ends_line_at(&mut file, cursor.offset) {
        Some("file changed before the point last read")
    } else {
        None
    };
    if let Some(why) = rewritten {
        read.warn(path, None, format!("{why}; reading it again from the start"));
        next = Cursor::default();
    }
    let mut reader = BufReader::with_capacity(1 << 20, file);
    reader
        .seek(SeekFrom::Start(next.offset))
        .map_err(|e| ReadError::new(path, e.to_string()))?;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| ReadError::new(path, e.to_string()))?;
        if n == 0 {
            break;
        }
        if buf.last() != Some(&b'\n') {
            if n > MAX_LINE_BYTES {
                // Skip the rest of the giant line, then go on.
                let line = next.line + 1;
                let skipped = skip_to_newline(&mut reader).map_err(|e| ReadError::new(path, e.to_string()))?;
                let Some(skipped) = skipped else { break };
                read.warn(
                    path,
                    Some(line),
                    format!("line is longer than {MAX_LINE_BYTES} bytes; skipped"),
                );
                next.offset += (n + skipped) as u64;
                next.line += 1;
                read.bytes += (n + skipped) as u64;
                continue;
            }
            break; // half-written: leave it for the next read
        }
        next.offset += n as u64;
        next.line += 1;
        read.bytes += n as u64;
        let line = &buf[..n - 1];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value = match std::str::from_utf8(line) {
            Ok(text) => serde_json::from_str::<Value>(text),
            Err(_) => {
                read.warn(path, Some(next.line), "invalid UTF-8 replaced by U+FFFD");
                serde_json::from_str::<Value>(&String::from_utf8_lossy(line))
            }
        };
        match value {
            Ok(value) => each(next.line, value, read),
            Err(e) => read.warn(path, Some(next.line), format!("not valid JSON ({e}); line skipped")),
        }
    }
    Ok(next)
}

/// True when the byte just before `offset` is a line end, as it is where a read stopped.
fn ends_line_at(file: &mut File, offset: u64) -> bool {
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(offset - 1)).is_ok() && file.read_exact(&mut byte).is_ok() && byte[0] == b'\n'
}

/// Consumes bytes up to and including the next `\n`; `None` when the file ends first.
fn skip_to_newline(reader: &mut impl BufRead) -> std::io::Result<Option<usize>> {
    let mut skipped = 0;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(None);
        }
        if let Some(pos) = available.iter().position(|b| *b == b'\n') {
            reader.consume(pos + 1);
            return Ok(Some(skipped + pos + 1));
        }
        let len = available.len();
        reader.consume(len);
        skipped += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], cursor: &Cursor) -> (Vec<(u64, Value)>, Cursor, FileRead) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, text).unwrap();
        let mut read = FileRead::default();
        let mut seen = Vec::new();
        let next = for_each_line(&path, cursor, &mut read, |n, v, _| seen.push((n, v))).unwrap();
        (seen, next, read)
    }

    #[test]
    fn a_half_written_last_line_waits_for_the_next_read() {
        let (seen, next, read) = lines(b"{\"a\":1}\n{\"b\":", &Cursor::default());
        assert_eq!(seen.len(), 1);
        assert_eq!((next.offset, next.line), (8, 1));
        assert!(read.warnings.is_empty(), "{:?}", read.warnings);
        let (seen, next, _) = lines(b"{\"a\":1}\n{\"b\":2}\n", &next);
        assert_eq!(seen, vec![(2, serde_json::json!({"b": 2}))]);
        assert_eq!(next.line, 2);
    }

    #[test]
    fn a_malformed_line_is_named_and_the_rest_is_read() {
        let (seen, _, read) = lines(b"{\"a\":1}\n{oops\n\n{\"c\":3}\n", &Cursor::default());
        assert_eq!(seen.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 4]);
        assert_eq!(read.warnings.len(), 1);
        assert_eq!(read.warnings[0].line, Some(2));
        assert!(read.warnings[0].to_string().contains("s.jsonl:2: not valid JSON"));
    }

    #[test]
    fn invalid_utf8_is_repaired_and_reported() {
        let (seen, _, read) = lines(b"{\"t\":\"a\xffb\"}\n", &Cursor::default());
        assert_eq!(seen[0].1["t"], "a\u{fffd}b");
        assert!(read.warnings[0].message.contains("UTF-8"));
    }

    #[test]
    fn a_file_rewritten_before_the_cursor_is_read_again_from_the_start() {
        let (_, first, _) = lines(b"{\"a\":1}\n{\"b\":2}\n", &Cursor::default());
        let (seen, next, read) = lines(b"{\"aaaaa\":1}\n{\"c\":3}\n", &first);
        assert_eq!(seen.len(), 2);
        assert_eq!(next.line, 2);
        assert!(read.warnings[0].message.contains("changed before"));
    }

    #[test]
    fn a_shorter_file_is_read_again_from_the_start() {
        let cursor = Cursor {
            offset: 1000,
            line: 20,
            ..Cursor::default()
        };
        let (seen, next, read) = lines(b"{\"a\":1}\n", &cursor);
        assert_eq!(seen[0].0, 1);
        assert_eq!(next.line, 1);
        assert!(read.warnings[0].message.contains("shorter"));
    }
}
