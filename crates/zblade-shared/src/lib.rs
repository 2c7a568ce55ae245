//! One shared library holding the engine and every face both programs use (the Debian package's
//! `/usr/lib/zblade/libzblade_shared.so`).
//!
//! The CLI (`/usr/bin/zblade`) and the desktop app (`/usr/bin/zblade-app`) each linked all of
//! this statically, so the package carried it twice. With the `shared-engine` feature each binary
//! names this crate, and rustc then links every crate below from this library instead of copying
//! it in. The CLI does not link the app's WebKitGTK (loading it costs a hook ~56 ms), which is why
//! the two stay separate programs over one library rather than one program. docs/INSTALL.md.

pub use zblade_archive;
pub use zblade_archiving;
pub use zblade_chat;
pub use zblade_engine;
pub use zblade_mcp;
pub use zblade_proxy;
pub use zblade_sync;
