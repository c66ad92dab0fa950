//! pactum bound to the official runtime: this process loads the official `libtvm_ffi.so`
//! (apache-tvm-ffi 0.1.15.post2) before any pactum call, as Python does before importing a
//! pactum-built module, so every runtime service pactum uses is the official one.

mod maps;
mod runtime;
