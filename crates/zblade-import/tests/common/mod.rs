//! What this crate's test files share: where their fixtures are.

use std::path::PathBuf;

/// `tests/fixtures` of this package. The package's folder is asked at run time: cargo sets
/// `CARGO_MANIFEST_DIR` for the tests it runs, while the value compiled in names the checkout the
/// binary was built in, which cargo may reuse for another checkout of the workspace (it hashes
/// paths relative to the workspace).
pub fn fixtures() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from)
        .join("tests/fixtures")
}
