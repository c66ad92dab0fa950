//! Hostile inputs at every boundary of the `pactum-iree` crate, and the resource bounds of its
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
use std::path::Path;

use pactum::sys::tvm_ffi::{TVMFFIAnyValue, TVMFFITypeIndex};
use pactum::{Any, AnyView, Array, DataType, Device, Function, List, Map, Tensor};
use pactum_iree::signature::abi_json::IreeAbi;
use pactum_iree::signature::cconv::CallingConvention;
use pactum_iree::signature::declaration::Declaration;
use pactum_iree::signature::lexer::Lexer;
use pactum_iree::signature::raw::RawSignature;
use pactum_iree::signature::sip::SipSignature;
use pactum_iree::structured::StructuredFunction;
use pactum_iree::vmfb::VmfbFile;
use pactum_testing::hostile::*;

/// A value nested `depth` arrays deep around an int.
fn nested_arrays(depth: usize) -> Any {
    let mut value = Any::from(1i64);
    for _ in 0..depth {
        value = Any::from(Array::new([value]));
    }
    value
}

// ---------------------------------------------------------------------------------------------
// Structured calls.

#[test]
fn structured_values_nested_too_deep_are_refused() {
    on_big_stack(|| {
        let flat = Function::from_packed(|args: &[AnyView<'_>]| Ok(Any::from(args.len() as i64)));
        let structured = StructuredFunction::dynamic(flat);
        // 256 levels pass.
        let fine = nested_arrays(255);
        assert_eq!(
            structured
                .call(&[fine.view()], &[])
                .unwrap()
                .get::<i64>()
                .unwrap(),
            1
        );
        for depth in [257, 100_000] {
            let deep = nested_arrays(depth);
            let error = quickly("deep value", || {
                structured.call(&[deep.view()], &[]).unwrap_err()
            });
            assert_eq!(error.kind(), "ValueError");
            let message = failure::<(), _>("structured deep value", Err(error));
            assert_says(
                &message,
                &["args[0][0][0]", "values nested deeper than 256 levels"],
            );
        }
    });
}

#[test]
fn structured_lists_that_contain_themselves_are_refused() {
    let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
    let structured = StructuredFunction::dynamic(flat);
    let list = List::new();
    list.push(Any::from(1i64));
    list.push(Any::from(list.clone()));
    let error = quickly("cyclic list", || {
        structured.call(&[AnyView::from(&list)], &[]).unwrap_err()
    });
    let message = failure::<(), _>("structured cyclic list", Err(error));
    assert_says(
        &message,
        &["args[0][1][1][1]", "(a list or dict that contains itself?)"],
    );
    // Break the cycle so the list can be freed.
    list.clear();

    // A dict holding a list holding that dict.
    let inner = List::new();
    let dict = pactum::Dict::new();
    dict.insert(Any::from("x"), Any::from(inner.clone()));
    inner.push(Any::from(dict.clone()));
    let error = quickly("cyclic dict", || {
        structured.call(&[AnyView::from(&dict)], &[]).unwrap_err()
    });
    let message = failure::<(), _>("structured cyclic dict", Err(error));
    assert_says(
        &message,
        &["args[0][\"x\"][0][\"x\"]", "nested deeper than 256"],
    );
    inner.clear();
    dict.clear();
}

#[test]
fn structured_reference_arrays_of_unknown_rank_are_bounded() {
    on_big_stack(|| {
        let signature =
            IreeAbi::parse(r#"{"a":[["ndarray",["slist","i32"],null]],"r":[],"v":1}"#).unwrap();
        let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
        let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
        let deep = nested_arrays(10_000);
        let error = quickly("deep reference array", || {
            structured.call(&[deep.view()], &[]).unwrap_err()
        });
        let message = failure::<(), _>("structured deep reference array", Err(error));
        assert_says(&message, &["values nested deeper than 256 levels"]);
    });
}

#[test]
fn structured_results_claiming_huge_ranks_are_refused() {
    // A flat function returning a reference array `[values, dims]` whose dims claim rank 100000.
    let signature =
        IreeAbi::parse(r#"{"a":[],"r":[["ndarray",["slist","i32"],null]],"v":1}"#).unwrap();
    let flat = Function::from_packed(|_: &[AnyView<'_>]| {
        let values = Array::new([Any::from(Array::new([Any::from(1i64)]))]);
        let dims = Array::new((0..100_000).map(|_| Any::from(1i64)));
        Ok(Any::from(Array::new([Any::from(values), Any::from(dims)])))
    });
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
    let error = quickly("huge rank", || structured.call(&[], &[]).unwrap_err());
    assert_eq!(error.kind(), "ValueError");
    let message = failure::<(), _>("structured result rank", Err(error));
    assert_says(
        &message,
        &["results[0]: dims of rank 100000 exceed the 256 levels"],
    );
}

#[test]
fn structured_flat_functions_that_panic_are_errors() {
    let signature = IreeAbi::parse(r#"{"a":["i32"],"r":["i32"],"v":1}"#).unwrap();
    let flat = Function::from_typed(|_: i64| -> i64 { panic!("flat function panicked") });
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
    let error = structured.call(&[AnyView::from(1i64)], &[]).unwrap_err();
    assert_eq!(error.kind(), "RustPanic");
    let message = failure::<(), _>("structured panic", Err(error));
    assert_says(&message, &["flat function panicked"]);
}

#[test]
fn structured_strings_that_are_not_utf8_are_refused() {
    let signature = IreeAbi::parse(r#"{"a":[["sdict",["k","i32"]]],"r":[],"v":1}"#).unwrap();
    let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
    // A dict whose key is bytes that are not UTF-8 (as a RawStr from C would be).
    let text = c"\xffk";
    let key = raw_any(
        TVMFFITypeIndex::RAW_STR,
        TVMFFIAnyValue {
            v_c_str: text.as_ptr(),
        },
    );
    // SAFETY: the C string is alive for the call.
    let key = unsafe { AnyView::from_raw(key) }.to_any().unwrap();
    let value = Map::from_pairs([(key, Any::from(1i64))]);
    let message = failure(
        "structured non-UTF-8 key",
        structured.call(&[AnyView::from(&value)], &[]),
    );
    assert_says(&message, &["args[0]", "\"k\""]);
}

#[test]
fn structured_tensors_off_the_cpu_that_need_a_conversion_are_refused() {
    let signature = IreeAbi::parse(r#"{"a":[["ndarray","f32",1,4]],"r":[],"v":1}"#).unwrap();
    let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature())
        .unwrap()
        .allow_casts(true);
    let mut storage = [0.0f64; 4];
    // SAFETY: the tensor is only inspected (refused before any access).
    let on_gpu = unsafe {
        Tensor::from_raw_parts(
            storage.as_mut_ptr().cast(),
            DataType::F64,
            Device::cuda(0),
            &[4],
            &[1],
            || {},
        )
    }
    .unwrap();
    let message = failure(
        "structured GPU tensor needing a cast",
        structured.call(&[AnyView::from(&on_gpu)], &[]),
    );
    assert_says(&message, &["args[0]"]);
}

// ---------------------------------------------------------------------------------------------
// .vmfb files.

fn fixture(name: &str) -> Vec<u8> {
    fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vmfb")
            .join(name),
    )
    .unwrap()
}

/// Where the size-prefixed FlatBuffer starts (after the ZIP local header, if any).
fn flatbuffer_start(file: &[u8]) -> usize {
    if file.starts_with(b"PK\x03\x04") {
        30 + usize::from(u16::from_le_bytes([file[26], file[27]]))
            + usize::from(u16::from_le_bytes([file[28], file[29]]))
    } else {
        0
    }
}

fn open_module(path: &Path) -> std::result::Result<usize, pactum_iree::vmfb::VmfbError> {
    let file = VmfbFile::open(path)?;
    let module = file.module()?;
    Ok(module.exports().count())
}

#[test]
fn vmfb_files_of_a_gibibyte_are_handled_in_milliseconds() {
    let dir = scratch("vmfb-huge");
    // 1 GiB of zeros.
    let zeros = dir.join("zeros.vmfb");
    sparse_file(&zeros, &[], GIB);
    let message = failure(
        "vmfb 1 GiB of zeros",
        quickly("vmfb zeros", || open_module(&zeros)),
    );
    assert_says(&message, &["not an IREE bytecode module", "at 0x8"]);
    // A real module followed by 1 GiB of holes: it verifies, and only its FlatBuffer is read.
    let fixture = fixture("abi_structs_vmvx.vmfb");
    let tail = dir.join("tail.vmfb");
    sparse_file(&tail, &fixture, GIB);
    assert_eq!(
        quickly("vmfb with a 1 GiB tail", || open_module(&tail)).unwrap(),
        4
    );
    // The same module whose size prefix claims the whole gibibyte.
    let start = flatbuffer_start(&fixture);
    let mut claiming = fixture.clone();
    let claim = u32::try_from(GIB as usize - start - 4).unwrap();
    claiming[start..start + 4].copy_from_slice(&claim.to_le_bytes());
    let claims = dir.join("claims.vmfb");
    sparse_file(&claims, &claiming, GIB);
    let message = failure(
        "vmfb size prefix claiming 1 GiB",
        quickly("vmfb prefix claim", || open_module(&claims)),
    );
    assert_says(&message, &["runs past the end of the file"]);
    // A size prefix past the end of the file.
    let mut past = fixture.clone();
    past[start..start + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let message = failure(
        "vmfb size prefix past the end",
        VmfbFile::from_bytes(past).module().map(|_| ()),
    );
    assert_says(
        &message,
        &["the size prefix says 4294967295 bytes, past the end of the file"],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn vmfb_words_claiming_huge_lengths_are_refused_quickly() {
    // Every aligned 32-bit word of the FlatBuffer replaced by a huge value: offsets, vector and
    // string lengths, vtable entries all claim far more than the file holds.
    let fixture = fixture("vm_direct_bare.vmfb");
    let start = flatbuffer_start(&fixture);
    let end =
        start + 4 + u32::from_le_bytes(fixture[start..start + 4].try_into().unwrap()) as usize;
    let mut refused = 0;
    quickly("every word of vm_direct_bare.vmfb", || {
        for pos in (start + 4..end - 3).step_by(4) {
            for claim in [0x7fff_fff0u32, u32::MAX] {
                let mut bytes = fixture.clone();
                bytes[pos..pos + 4].copy_from_slice(&claim.to_le_bytes());
                let file = VmfbFile::from_bytes(bytes);
                if let Err(error) = file.module() {
                    if let Some(offset) = error.offset {
                        assert!(offset < fixture.len() as u64, "{error}");
                    }
                    refused += 1;
                }
            }
        }
    });
    assert!(refused > 100, "only {refused} corrupt words were refused");
}

#[test]
fn vmfb_strings_that_are_not_utf8_are_refused() {
    let fixture = fixture("vm_direct_bare.vmfb");
    let name = VmfbFile::from_bytes(fixture.clone())
        .module()
        .unwrap()
        .name()
        .to_owned();
    // The module name as the FlatBuffer stores it: a 32-bit length, then the bytes.
    let mut needle = (name.len() as u32).to_le_bytes().to_vec();
    needle.extend_from_slice(name.as_bytes());
    let at = fixture
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the module name is in the file");
    let mut bytes = fixture.clone();
    bytes[at + 4] = 0xff;
    let message = failure(
        "vmfb non-UTF-8 name",
        VmfbFile::from_bytes(bytes).module().map(|_| ()),
    );
    assert_says(&message, &["name", "UTF-8"]);
}

// ---------------------------------------------------------------------------------------------
// Resource bounds of the parsers.

#[test]
fn iree_abi_json_depth_is_pactums_256_not_serdes_128() {
    on_big_stack(|| {
        let chain = |depth: usize| {
            format!(
                r#"{{"a":[{}"i32"{}],"r":[]}}"#,
                r#"["slist","#.repeat(depth),
                "]".repeat(depth)
            )
        };
        // serde_json's recursion limit (128) does not apply: pactum reads the records itself.
        assert!(IreeAbi::parse(&chain(200)).is_ok());
        assert!(IreeAbi::parse(&chain(256)).is_ok());
        let message = failure("iree.abi 257 levels", IreeAbi::parse(&chain(257)));
        assert_says(
            &message,
            &["at byte 2310", "type records nested deeper than 256 levels"],
        );
    });
}

#[test]
fn iree_abi_json_claiming_a_huge_depth_is_refused_quickly() {
    // Balanced, so that the JSON is valid and only the depth is wrong.
    for (open, close) in [
        (r#"["slist","#, "]"),
        (r#"["sdict",["k","#, "]]"),
        (r#"["ndarray","#, ",null]"),
    ] {
        let depth = 500_000;
        let text = format!(
            r#"{{"a":[{}"i32"{}],"r":[]}}"#,
            open.repeat(depth),
            close.repeat(depth)
        );
        let message = failure(
            "iree.abi huge depth",
            quickly("iree.abi huge depth", || IreeAbi::parse(&text)),
        );
        assert_says(&message, &["type records nested deeper than 256 levels"]);
    }
    // Unbalanced: the JSON itself is refused, in one pass.
    let text = format!(r#"{{"a":[{}"#, "[".repeat(10_000_000));
    let message = failure(
        "iree.abi 10 MB of brackets",
        quickly("iree.abi brackets", || IreeAbi::parse(&text)),
    );
    assert_says(&message, &["malformed JSON"]);
    // The same depth, balanced, inside a key pactum keeps as text: read once, never walked.
    let text = format!(
        r#"{{"a":[],"r":[],"x":{}{}}}"#,
        "[".repeat(500_000),
        "]".repeat(500_000)
    );
    quickly("iree.abi deep extra key", || IreeAbi::parse(&text)).unwrap();
}

#[test]
fn legacy_signature_spans_claiming_huge_lengths_are_refused_quickly() {
    let cases = [
        (
            "I999999999!B1!R1!",
            "span 'I' of length 999999999 runs past the end of the input",
        ),
        ("I99999999999999999999999!", "does not fit in 32 bits"),
        (
            "I2147483647!",
            "span 'I' of length 2147483647 runs past the end of the input",
        ),
        ("I5!R1!", "runs past the end of the input"),
    ];
    for (text, expected) in cases {
        let message = failure(
            "raw span claim",
            quickly("raw", || RawSignature::parse_strict(text)),
        );
        assert_says(&message, &[expected]);
        let message = failure(
            "SIP span claim",
            quickly("sip", || SipSignature::parse_strict(text)),
        );
        assert_says(&message, &[expected]);
        let error = Lexer::new(text.as_bytes())
            .find_map(|component| component.err())
            .expect("the lexer refuses the claim");
        eprintln!("HOSTILE lexer span claim: {error}");
        assert!(error.to_string().contains(expected), "{error}");
    }
    // A claim inside a span refers to the enclosing span, not the rest of the input.
    let message = failure(
        "raw nested span claim",
        RawSignature::parse_strict("I8!B999!t6R1!"),
    );
    assert_says(&message, &["runs past the end of the enclosing span"]);
}

#[test]
fn legacy_signatures_nested_too_deep_are_refused_quickly() {
    // A SIP structure nested 100 000 levels deep (about 1 MB): each level is a sequence span
    // `S<n>!k0…` whose length n counts everything inside it. Lengths from the inside out, then
    // the text from the outside in.
    let mut lengths = Vec::new();
    let mut len = "_0".len();
    for _ in 0..100_000 {
        let body = "!k0".len() + len;
        lengths.push(body);
        len = 1 + body.to_string().len() + body;
    }
    let mut inner = String::with_capacity(len);
    for body in lengths.iter().rev() {
        inner.push_str(&format!("S{body}!k0"));
    }
    inner.push_str("_0");
    assert_eq!(inner.len(), len);
    let text = format!("I{}!{inner}R1!", inner.len() + 1);
    let message = failure(
        "SIP 100000 levels",
        quickly("sip deep", || SipSignature::parse_strict(&text)),
    );
    assert_says(&message, &["structures nest deeper than 256 levels"]);
    let message = failure("SIP 100000 levels (lenient)", SipSignature::parse(&text));
    assert_says(&message, &["structures nest deeper than 256 levels"]);
}

#[test]
fn calling_conventions_and_declarations_nested_too_deep_are_refused_quickly() {
    let cconv = format!("0{}i{}_r", "C".repeat(1_000_000), "D".repeat(1_000_000));
    let message = failure(
        "cconv 1000000 levels",
        quickly("cconv deep", || CallingConvention::parse(&cconv)),
    );
    assert_says(&message, &["variadic spans nested deeper than 256 levels"]);
    let declaration = format!(
        "sync func @f(%x: {}i32{}) -> ()",
        "!util.list<".repeat(1_000_000),
        ">".repeat(1_000_000)
    );
    let message = failure(
        "declaration 1000000 levels",
        quickly("declaration deep", || Declaration::parse(&declaration)),
    );
    assert_says(&message, &["brackets nested deeper than 256 levels"]);
    // Unbalanced: only opening brackets.
    let declaration = format!("sync func @f(%x: {}", "tuple<".repeat(1_000_000));
    let message = failure(
        "declaration 1000000 open brackets",
        quickly("declaration open", || Declaration::parse(&declaration)),
    );
    assert_says(&message, &["nested deeper than 256 levels"]);
}
