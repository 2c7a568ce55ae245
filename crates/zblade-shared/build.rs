//! Build script: link the library with `-Bsymbolic`.
//!
//! A Rust dylib exports every symbol of every crate in it, and by default each call inside the
//! library to one of its own exported functions goes through a symbol the dynamic loader must
//! look up at start (hundreds of thousands here): measured on the debug build, `zblade
//! --version` took 348 ms instead of 20. `-Bsymbolic` binds the library's references to its own
//! symbols when it is linked, so the loader only resolves what crosses into std and libc.

fn main() {
    println!("cargo:rustc-link-arg=-Wl,-Bsymbolic");
}
