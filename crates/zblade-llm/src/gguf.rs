//! Checking that a file is a GGUF model before llama.cpp is asked to load it, so a wrong file
//! gets an error that names it instead of a null pointer from C.

use std::io::Read;
use std::path::Path;

use crate::LlmError;

/// The first four bytes of every GGUF file.
pub const MAGIC: &[u8; 4] = b"GGUF";

/// What the header of a GGUF file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufHeader {
    /// Format version (3 for files written since 2023).
    pub version: u32,
    /// Number of tensors.
    pub tensors: u64,
    /// Number of metadata entries.
    pub metadata: u64,
}

/// Reads and checks the fixed header of `path`: magic, a version llama.cpp reads (2 or 3),
/// and counts that are not absurd.
pub fn read_header(path: &Path) -> Result<GgufHeader, LlmError> {
    let not_gguf = |why: String| LlmError::NotGguf {
        path: path.to_path_buf(),
        why,
    };
    let mut file = std::fs::File::open(path).map_err(|e| LlmError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut header = [0u8; 24];
    let mut read = 0;
    while read < header.len() {
        match file.read(&mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) => {
                return Err(LlmError::Io {
                    path: path.to_path_buf(),
                    source: e,
                });
            }
        }
    }
    if read < 4 || &header[..4] != MAGIC {
        return Err(not_gguf("it does not start with the GGUF magic bytes".into()));
    }
    if read < header.len() {
        return Err(not_gguf(format!("the header is cut off after {read} bytes")));
    }
    let version = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    let tensors = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    let metadata = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
    if !(2..=3).contains(&version) {
        return Err(not_gguf(format!(
            "GGUF version {version} (llama.cpp reads versions 2 and 3)"
        )));
    }
    if tensors == 0 || tensors > 1_000_000 || metadata > 1_000_000 {
        return Err(not_gguf(format!(
            "the header claims {tensors} tensors and {metadata} metadata entries"
        )));
    }
    Ok(GgufHeader {
        version,
        tensors,
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_files_are_named_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&str, &[u8], &str); 4] = [
            ("text.gguf", b"hello, this is not a model", "magic"),
            ("short.gguf", b"GGUF\x03\0\0\0", "cut off"),
            (
                "future.gguf",
                b"GGUF\x09\0\0\0\x01\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0",
                "version 9",
            ),
            (
                "empty.gguf",
                b"GGUF\x03\0\0\0\0\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0",
                "0 tensors",
            ),
        ];
        for (name, bytes, why) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let err = read_header(&path).unwrap_err().to_string();
            assert!(err.contains(name) && err.contains(why), "{name}: {err}");
        }
        let good = dir.path().join("good.gguf");
        std::fs::write(&good, b"GGUF\x03\0\0\0\x05\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0").unwrap();
        assert_eq!(
            read_header(&good).unwrap(),
            GgufHeader {
                version: 3,
                tensors: 5,
                metadata: 2
            }
        );
    }
}
