//! Hostile inputs at every boundary of the `pactum-npy` crate, and the resource bounds of its
//! parsers (`docs/RELIABILITY.md`, "Hostile input" and "Resource bounds").
//!
//! Every test feeds input a careless or malicious caller could produce and checks the error the
//! user sees. Refusals that could cost time (huge files, deep nesting, huge length claims) must
//! come back within [`LIMIT`], measured around the call. Files of 1 GiB are sparse (made with
//! `set_len`), so they cost no disk; nothing may read or allocate them whole.
//!
//! The failures are printed (`HOSTILE <what>: <error>`) so that `--nocapture` shows exactly what
//! a user reads.

use std::fs;

use pactum_testing::hostile::*;

/// A `.npy` file (version 1.0) with `dict` as its header, padded to 128 bytes.
fn npy_head(dict: &str) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(dict.as_bytes());
    while (out.len() + 1) % 64 != 0 {
        out.push(b' ');
    }
    out.push(b'\n');
    let header_len = u16::try_from(out.len() - 10).unwrap();
    out[8..10].copy_from_slice(&header_len.to_le_bytes());
    out
}

#[test]
fn npy_headers_are_checked_against_the_file_size_before_reading_the_data() {
    let dir = scratch("npy");
    // A small header in a 1 GiB file: refused after reading the header, not the gibibyte.
    let small = npy_head("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
    let huge = dir.join("huge.npy");
    sparse_file(&huge, &small, GIB);
    let message = failure(
        "npy 1 GiB file, 8-byte shape",
        quickly("npy 1 GiB", || pactum_npy::read_file(&huge)),
    );
    assert_says(
        &message,
        &[
            "file holds 1073741696 bytes of data, shape (2,) with dtype float32 needs 8",
            "huge.npy",
        ],
    );
    // A header claiming a huge shape in a small file: nothing is allocated for it.
    for (shape, expected) in [
        ("(1000000000000,)", "needs 4000000000000"),
        ("(4611686018427387904, 4)", "overflows 64 bits"),
        (
            "(9223372036854775807, 9223372036854775807)",
            "overflows 64 bits",
        ),
    ] {
        let claim = npy_head(&format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"
        ));
        let path = dir.join("claim.npy");
        fs::write(&path, &claim).unwrap();
        let message = failure(
            "npy huge shape claim",
            quickly("npy claim", || pactum_npy::read_file(&path)),
        );
        assert_says(&message, &[expected]);
        let message = failure("npy huge shape claim (bytes)", pactum_npy::read(&claim));
        assert_says(&message, &[expected]);
    }
    // A 1 GiB file of zeros, and a header length past the end of the file.
    let zeros = dir.join("zeros.npy");
    sparse_file(&zeros, &[], GIB);
    let message = failure(
        "npy 1 GiB of zeros",
        quickly("npy zeros", || pactum_npy::read_file(&zeros)),
    );
    assert_says(&message, &["not a .npy file"]);
    let mut past = small.clone();
    past[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
    let message = failure("npy header past the end", pactum_npy::read(&past));
    assert_says(
        &message,
        &["header length 65535 goes beyond the end of the file"],
    );
    // Deep nesting inside the header.
    let deep = npy_head(&format!("{{'descr': {}", "(".repeat(30_000)));
    let message = failure(
        "npy deep header",
        quickly("npy deep", || pactum_npy::read(&deep)),
    );
    assert_says(&message, &["nest more than 32 deep"]);
    let _ = fs::remove_dir_all(&dir);
}

/// The headers that stall the `.npy` readers of npyz and ndarray-npy (their header grammar
/// backtracks exponentially: 22 nested brackets take 14 s there, each level doubling it) are
/// refused at once here, whatever the nesting.
#[test]
fn npy_headers_with_nested_brackets_are_refused_at_once() {
    for depth in [22usize, 30, 33, 200] {
        for (open, close) in [("[", "]"), ("(", ")")] {
            let dict = format!(
                "{{'descr': {}'<f4'{}, 'fortran_order': False, 'shape': (2,), }}",
                open.repeat(depth),
                close.repeat(depth)
            );
            let head = npy_head(&dict);
            let message = failure(
                "npy nested brackets",
                quickly("npy nested", || pactum_npy::read(&head)),
            );
            // Parentheses only group (the descr is '<f4' and the data is missing); brackets
            // make a list, which is no dtype pactum reads.
            // Past 32 levels the nesting itself is refused.
            let expected = if depth > 32 {
                "nest more than 32 deep"
            } else if open == "(" {
                "data at byte 128"
            } else {
                "structured dtypes are not supported"
            };
            assert_says(&message, &[expected]);
        }
    }
}
