//! Build script: with the `shared-engine` feature (the Debian package), the full program finds
//! zblade-shared's library and Rust's std library in /usr/lib/zblade, beside ONNX Runtime and
//! beside itself (`/usr/lib/zblade/zblade-cli`; the front door, `/usr/bin/zblade`, links
//! neither).

fn main() {
    if std::env::var_os("CARGO_FEATURE_SHARED_ENGINE").is_some() {
        // `$ORIGIN`: found relative to the binary, so an unpacked package works from anywhere.
        println!("cargo:rustc-link-arg-bin=zblade-cli=-Wl,-rpath,$ORIGIN:$ORIGIN/../lib/zblade");
    }
}
