//! Gives the shared library the SONAME modules record as their NEEDED entry.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtvm_ffi.so");
    }
}
