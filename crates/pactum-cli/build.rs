//! Links the `pactum` program as a position-dependent executable on Linux.
//!
//! A whole `pactum run` is mostly process start-up (docs/BENCHMARKS.md, "Whole-process
//! start-up"). A position-independent executable (rustc's default) is loaded at a random address,
//! so the dynamic loader first applies one relative relocation to every pointer the program
//! holds in its read-only data (about 7,200: vtables, tables of strings and functions) and copies
//! each of the ~35 pages they lie on: a tenth of the instructions of a `pactum run` and a sixth
//! of its page faults. Linked at a fixed address, those pointers are final in the file and the
//! pages are shared with the page cache. The code is compiled as before (position-independent:
//! the standard library is too); only the link changes, for the program alone (libraries, the
//! Python extension and the tests' own binaries are not affected). The cost: the program's own
//! image is not randomised (its stack, heap and the shared libraries still are), as for
//! IREE's `iree-run-module`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // A static build (`+crt-static` makes rustc link `-static-pie`) and a sanitizer build
    // choose their own link; the flag would contradict them.
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let rustflags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_link =
        features.split(',').any(|f| f == "crt-static") || rustflags.contains("sanitizer");
    if os == "linux" && env == "gnu" && !own_link {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
