//! NumPy `.npy` files: any bytes either read as a tensor or fail with a `ValueError` that
//! names a byte offset inside the input. The reader allocates no more than the input holds
//! (a header claiming a giant shape is refused, not allocated). A tensor that reads is written
//! back, read again and compared (dtype, shape, bytes), and the writer is idempotent: writing
//! the second tensor gives the same file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum::Tensor;
use pactum_npy as npy;

fuzz_target!(|data: &[u8]| {
    match npy::read(data) {
        Ok(tensor) => check_round_trip(data, &tensor),
        Err(error) => check_error(data, &error),
    }
});

/// Every read error is a `ValueError` `npy: <section> at byte <offset>: <message>` with the
/// offset inside the input (its end at most).
fn check_error(data: &[u8], error: &pactum::Error) {
    let message = error.message();
    assert_eq!(error.kind(), "ValueError", "{message}");
    let rest = message
        .strip_prefix("npy: ")
        .unwrap_or_else(|| panic!("error without the npy prefix: {message}"));
    let (_, after) = rest
        .split_once(" at byte ")
        .unwrap_or_else(|| panic!("error without a byte offset: {message}"));
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    let offset: usize = digits
        .parse()
        .unwrap_or_else(|_| panic!("unreadable byte offset in: {message}"));
    assert!(
        offset <= data.len(),
        "offset {offset} is past the end of the {}-byte input: {message}",
        data.len()
    );
    assert!(
        after[digits.len()..].starts_with(": ") && after.len() > digits.len() + 2,
        "no message after the offset: {message}"
    );
}

/// The tensor's elements as bytes (`read` returns compact C-order CPU tensors).
fn element_bytes(tensor: &Tensor) -> &[u8] {
    let itemsize = tensor
        .dtype()
        .element_bytes()
        .expect("npy dtypes have a size");
    let nbytes = tensor.numel() as usize * itemsize;
    if nbytes == 0 {
        return &[];
    }
    assert!(tensor.is_contiguous(), "read returns contiguous tensors");
    // SAFETY: a compact CPU tensor with numel > 0 holds numel * itemsize bytes at its data
    // pointer, alive as long as `tensor`; nothing writes to it here.
    unsafe { core::slice::from_raw_parts(tensor.data_ptr().cast::<u8>(), nbytes) }
}

fn check_round_trip(data: &[u8], tensor: &Tensor) {
    assert!(tensor.shape().iter().all(|&d| d >= 0));
    let bytes = element_bytes(tensor);
    // The data are exactly the rest of the file: never more than the input.
    assert!(
        bytes.len() <= data.len(),
        "{} data bytes from a {}-byte file",
        bytes.len(),
        data.len()
    );
    if tensor.dtype() == pactum::DataType::BOOL {
        assert!(bytes.iter().all(|&b| b <= 1), "bools are normalised");
    }
    let written = npy::write(tensor).expect("a tensor read from .npy can be written");
    assert_eq!(&written[..6], b"\x93NUMPY");
    let again = npy::read(&written).expect("what npy::write produces reads back");
    assert_eq!(again.dtype(), tensor.dtype());
    assert_eq!(again.shape(), tensor.shape());
    assert!(
        element_bytes(&again) == bytes,
        "elements differ after a round trip"
    );
    let rewritten = npy::write(&again).expect("writes again");
    assert!(rewritten == written, "the writer is not idempotent");
    // The writer's own files are canonical: data start at a multiple of 64 bytes.
    assert_eq!((written.len() - bytes.len()) % 64, 0);
}
