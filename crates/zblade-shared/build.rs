//! Build script: how the library is linked.
//!
//! Always `-Bsymbolic`. A Rust dylib exports every symbol of every crate in it, and by default
//! each call inside the library to one of its own exported functions goes through a symbol the
//! dynamic loader must look up at start (hundreds of thousands here): measured on the debug
//! build, `zblade --version` took 348 ms instead of 20. `-Bsymbolic` binds the library's
//! references to its own symbols when it is linked, so the loader only resolves what crosses
//! into std and libc.
//!
//! With `ZBLADE_ENGINE_EXPORTS` (a file of symbol names, one per line; scripts/package.sh
//! writes it from what the two programs import), the library exports only those, and the
//! linker drops the code nothing reaches (`--gc-sections`). `link/ld.bfd` narrows rustc's
//! export list and runs GNU ld; gcc finds it because `-fuse-ld=bfd` makes it look for
//! `ld.bfd`, and the `-B` folder given here is the first that has one (rustc's own `-B`
//! folder only holds `ld.lld`).

use std::path::Path;

fn main() {
    println!("cargo:rustc-link-arg=-Wl,-Bsymbolic");
    println!("cargo:rerun-if-env-changed=ZBLADE_ENGINE_EXPORTS");
    println!("cargo:rerun-if-changed=link/ld.bfd");
    if let Some(exports) = std::env::var_os("ZBLADE_ENGINE_EXPORTS").filter(|e| !e.is_empty()) {
        println!("cargo:rerun-if-changed={}", Path::new(&exports).display());
        // Cargo sets it for every build script run; the value compiled in could be another checkout's.
        let link =
            Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("link");
        println!("cargo:rustc-link-arg=-fuse-ld=bfd");
        // rustc leaves sections alone when it links a dylib (everything is exported, so
        // everything is reachable); with the narrowed list, what is not reachable can go, as
        // it does when rustc links a program.
        println!("cargo:rustc-link-arg=-Wl,--gc-sections");
        println!("cargo:rustc-link-arg=-B{}/", link.display());
    }
}
