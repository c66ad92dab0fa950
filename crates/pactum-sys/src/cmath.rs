//! The C library's math functions that IREE's runtime calls and Rust's standard library does
//! not offer.
//!
//! IREE's VM computes `vm.erf.f32`/`vm.erf.f64` with `erff`/`erf` from `<math.h>`, and its
//! release builds link the host's C math library dynamically, so the exact bits of a result
//! are that library's. A Rust port of another libm (musl's, as the `libm` crate) differs from
//! glibc's in the last place on a few inputs in a hundred; calling the same C functions gives
//! the reference's bits wherever both run on the same host.
//!
//! ```
//! assert_eq!(pactum_sys::cmath::erff(0.0), 0.0);
//! assert_eq!(pactum_sys::cmath::erf(f64::INFINITY), 1.0);
//! ```

// On ELF hosts other than Apple's, the math functions live in `libm`, which the standard
// library links as well; elsewhere (macOS's libSystem, Windows's CRT) they come with libc.
#[cfg_attr(all(unix, not(target_vendor = "apple")), link(name = "m"))]
// SAFETY: these are the C standard's `erff` and `erf` (C99 7.12.8.1) with their exact
// signatures: one `float`/`double` by value in, one out, no pointers, no global state a caller
// can disturb (they may set `errno`, which is thread-local). Every input, NaN and infinities
// included, is defined behaviour, so the items are declared `safe`.
unsafe extern "C" {
    /// The error function of an `f32`, as the C library computes it (`erff`).
    pub safe fn erff(x: f32) -> f32;
    /// The error function of an `f64`, as the C library computes it (`erf`).
    pub safe fn erf(x: f64) -> f64;
}
