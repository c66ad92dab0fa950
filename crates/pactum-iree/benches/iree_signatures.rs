//! IREE signatures: parse throughput of each codec on real-sized inputs, and the per-call cost
//! of a structured wrapper (`iree.abi`, a 3-level nested dict of 16 tensors) over the flat
//! call it makes. Run: `bench/run_iree_signature_bench.sh` (or `cargo bench -p pactum --bench
//! iree_signatures`).

use std::hint::black_box;

use divan::Bencher;
use divan::counter::BytesCount;
use pactum::{Any, AnyView, Array, DataType, Function, Map, Tensor};
use pactum_iree::signature::abi_json::IreeAbi;
use pactum_iree::signature::cconv::CallingConvention;
use pactum_iree::signature::declaration::Declaration;
use pactum_iree::signature::raw::RawSignature;
use pactum_iree::signature::sip::SipSignature;
use pactum_iree::structured::StructuredFunction;

fn main() {
    divan::main();
}

/// What IREE 3.13 stored for a frontend-supplied signature (the facts sheet, section 5).
const IREE_ABI: &str = r#"{"a":[["sdict",["bias",["ndarray","f32",1,4]],["n","i32"]],["named","scale",["ndarray","f32",1,4]]],"r":[["sdict",["out",["ndarray","f32",1,4]],["n_squared","i32"]]],"v":1}"#;
/// IREE's own raw-signature test input.
const RAW: &str = "I23!O1!B11!d-1d128d64S3!t6R17!B13!t11d32d-1d64";
/// A nested SIP signature from IREE's tests.
const SIP: &str =
    "I49!D45!K4!a10_3K3!a9_4K2!x_0K2!yS16!k0_1k1D7!K2!z_2R25!D21!K7!logits_1K5!loss_0";
/// The calling convention of `hal.command_buffer.dispatch`, with two variadic spans.
const CCONV: &str = "0rrIiiiICiDCiirIID_v";
/// A declaration as the compiler writes it.
const DECLARATION: &str = "sync func @predict(%tokens: tensor<?x128xi32>, %mask: tensor<?x128xi1>, %state: !util.list<?>) -> (%logits: tensor<?x128x32000xf32>, %output1: !util.list<?>)";

#[divan::bench(name = "parse/iree_abi")]
fn parse_iree_abi(bencher: Bencher) {
    bencher
        .counter(BytesCount::of_str(IREE_ABI))
        .bench(|| IreeAbi::parse(black_box(IREE_ABI)).unwrap());
}

#[divan::bench(name = "parse/raw")]
fn parse_raw(bencher: Bencher) {
    bencher
        .counter(BytesCount::of_str(RAW))
        .bench(|| RawSignature::parse(black_box(RAW)).unwrap());
}

#[divan::bench(name = "parse/sip")]
fn parse_sip(bencher: Bencher) {
    bencher
        .counter(BytesCount::of_str(SIP))
        .bench(|| SipSignature::parse(black_box(SIP)).unwrap());
}

#[divan::bench(name = "parse/cconv")]
fn parse_cconv(bencher: Bencher) {
    bencher
        .counter(BytesCount::of_str(CCONV))
        .bench(|| CallingConvention::parse(black_box(CCONV)).unwrap());
}

#[divan::bench(name = "parse/declaration")]
fn parse_declaration(bencher: Bencher) {
    bencher
        .counter(BytesCount::of_str(DECLARATION))
        .bench(|| Declaration::parse(black_box(DECLARATION)).unwrap());
}

/// `{"l1_<a|b>": {"l2_<a|b>": {"t0".."t3": tensor}}}`: three levels, 16 tensors.
fn nested_signature() -> String {
    let leaf = r#"["ndarray","f32",1,16]"#;
    let level3 = format!(
        r#"["sdict",{}]"#,
        (0..4)
            .map(|i| format!(r#"["t{i}",{leaf}]"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let level2 = format!(r#"["sdict",["l2_a",{level3}],["l2_b",{level3}]]"#);
    let level1 = format!(r#"["sdict",["l1_a",{level2}],["l1_b",{level2}]]"#);
    format!(r#"{{"a":[{level1}],"r":[],"v":1}}"#)
}

struct Nested {
    /// The user's value: nested maps of tensors.
    value: Any,
    /// The same tensors as the flat function receives them: nested arrays.
    flat: Any,
}

/// The nested value with its maps' keys inserted in record order (`in_order`), as a user
/// who builds the dict from the schema would, or in reverse.
fn nested_value_ordered(in_order: bool) -> Nested {
    let tensor = || Any::from(Tensor::empty(&[16], DataType::F32).unwrap());
    let mut maps = Vec::new();
    let mut arrays = Vec::new();
    for l1 in ["l1_a", "l1_b"] {
        let mut maps2 = Vec::new();
        let mut arrays2 = Vec::new();
        for l2 in ["l2_a", "l2_b"] {
            let tensors: Vec<Any> = (0..4).map(|_| tensor()).collect();
            let mut pairs3: Vec<(Any, Any)> = (0..4)
                .map(|i| (Any::from(format!("t{i}").as_str()), tensors[i].clone()))
                .collect();
            if !in_order {
                pairs3.reverse();
            }
            maps2.push((Any::from(l2), Any::from(Map::from_pairs(pairs3))));
            arrays2.push(Any::from(Array::new(tensors)));
        }
        if !in_order {
            maps2.reverse();
        }
        maps.push((Any::from(l1), Any::from(Map::from_pairs(maps2))));
        arrays.push(Any::from(Array::new(arrays2)));
    }
    if !in_order {
        maps.reverse();
    }
    Nested {
        value: Map::from_pairs(maps).into(),
        flat: Array::new(arrays).into(),
    }
}

fn no_op() -> Function {
    Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()))
}

#[divan::bench(name = "call/flat_16_tensors")]
fn call_flat(bencher: Bencher) {
    let nested = nested_value_ordered(true);
    let flat = no_op();
    bencher.bench_local(|| {
        black_box(&flat)
            .call(&[black_box(&nested.flat).view()])
            .unwrap()
    });
}

/// Keys inserted in record order (`true`) or reversed (`false`, every lookup searches).
#[divan::bench(name = "call/structured_16_tensors", args = [true, false])]
fn call_structured(bencher: Bencher, keys_in_record_order: bool) {
    let nested = nested_value_ordered(keys_in_record_order);
    let abi = IreeAbi::parse(&nested_signature()).unwrap();
    let structured = StructuredFunction::from_iree_abi(no_op(), abi.signature()).unwrap();
    bencher.bench_local(|| {
        black_box(&structured)
            .call(&[black_box(&nested.value).view()], &[])
            .unwrap()
    });
}
