//! `io_parameters.load` over archives opened from files: a data entry whose bytes start at a
//! multiple of 64 in the file is handed to the device as its own copy-on-write mapping of the
//! file's pages (no copy); the buffer reads as the archive, writing it changes neither the
//! file nor other loads, and other entries (unaligned, small, in-memory indexes) are copied
//! as before. A program compiled with a large named parameter computes with the mapped bytes
//! and keeps them, unmapped when it is dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pactum::{AnyView, Tensor};
use pactum_iree::hal::{
    ANY_QUEUE, HalBuffer, HalDevice, HalFence, HalSemaphore, LocalDevice, MIN_FILE_MAPPING_BYTES,
    Submission, Workers,
};
use pactum_iree::memory_budget::MemoryBudget;
use pactum_iree::module::IreeModule;
use pactum_iree::parameters::{
    IoParametersModule, ParameterIndex, ParameterProvider, ParameterStorage,
};
use pactum_iree::status::StatusCode;
use pactum_iree::vm::{NativeModule, Ref, Value, VmBuffer};
use pactum_testing::iree::compile_for_cpu;

/// `load`'s index among the module's functions.
const LOAD: usize = 0;

/// A fresh directory of the test's own.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-mapped-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `len` bytes that differ from their neighbours and from any other entry's at the same
/// offset (`seed`).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed as u32) as u8 ^ (i >> 12) as u8)
        .collect()
}

fn value<T: pactum_iree::vm::RefObject + 'static>(object: T) -> Value {
    Value::Ref(Some(Ref::Object(Arc::new(object))))
}

fn text(bytes: &[u8]) -> Value {
    Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(bytes)))))
}

/// Calls `load` in scope `model` for `spans` (key, parameter offset, length): the buffers.
fn load(
    module: &IoParametersModule,
    device: &Arc<dyn HalDevice>,
    spans: &[(&str, u64, u64)],
) -> Result<Vec<HalBuffer>, pactum_iree::vm::NativeError> {
    let (mut table, mut data, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    for (key, parameter_offset, length) in spans {
        table.extend((data.len() as u32).to_le_bytes());
        table.extend((key.len() as u32).to_le_bytes());
        data.extend(key.as_bytes());
        for v in [*parameter_offset, 0, *length] {
            bytes.extend(v.to_le_bytes());
        }
    }
    let signal = HalSemaphore::new(0);
    let args = vec![
        value(device.clone()),
        Value::I64(-1),
        Value::Ref(None),
        value(HalFence::at(signal.clone(), 1)),
        text(b"model"),
        Value::I64(-1),
        Value::I32(0),
        Value::I32(0),
        text(&table),
        text(&data),
        text(&bytes),
    ];
    let results = module.call(LOAD, &args)?;
    assert_eq!(signal.value().unwrap(), 1, "the signal fence is reached");
    let [Value::Ref(Some(Ref::List(list)))] = &results[..] else {
        panic!("load returned {results:?}");
    };
    Ok((0..list.len() as u32)
        .map(|k| {
            let Some(Value::Ref(Some(r))) = list.get(k) else {
                panic!("element {k}");
            };
            r.downcast_ref::<HalBuffer>().unwrap().clone()
        })
        .collect())
}

fn module_over(index: ParameterIndex) -> IoParametersModule {
    let mut provider = ParameterProvider::new();
    provider.add("model", index);
    IoParametersModule::new(provider)
}

fn local_device(budget: Option<Arc<MemoryBudget>>) -> Arc<dyn HalDevice> {
    Arc::new(LocalDevice::new(Workers::CallerThread).with_memory_budget(budget))
}

/// The private writable mappings of `path` this process holds (`/proc/self/maps` lines).
#[cfg(target_os = "linux")]
fn private_writable_mappings_of(path: &Path) -> usize {
    let path = path.canonicalize().unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|line| {
            line.ends_with(path.to_str().unwrap()) && line.split_whitespace().nth(1) == Some("rw-p")
        })
        .count()
}

#[test]
fn aligned_entries_load_as_private_mappings_of_the_archive_that_writes_never_reach() {
    let dir = scratch("aligned");
    let big = pattern(256 << 10, 1);
    let small = pattern(100, 2);
    let mut written = ParameterIndex::new();
    written.add_data("big", big.clone());
    written.add_data("small", small.clone());
    written.add_splat("zeros", &[0], 1 << 20).unwrap();
    let path = dir.join("model.irpa");
    written.write_irpa_file(&path).unwrap();
    let file_before = std::fs::read(&path).unwrap();

    let index = ParameterIndex::open(&path).unwrap();
    let ParameterStorage::Data { offset, .. } = index.get("big").unwrap().storage else {
        panic!("big is a data entry");
    };
    assert_eq!(offset % 64, 0, "the archive aligns its entries");
    let device = local_device(None);
    let module = module_over(index.clone());

    let half = (128 << 10) as u64;
    let buffers = load(
        &module,
        &device,
        &[
            ("big", 0, big.len() as u64),
            ("big", 0, big.len() as u64),
            ("small", 0, small.len() as u64),
            ("big", half, half),
            ("zeros", 0, 1 << 20),
        ],
    )
    .unwrap();
    let mapped: Vec<bool> = buffers.iter().map(HalBuffer::is_file_mapping).collect();
    // Whole and half of the big entry mapped; the small entry copied (under
    // MIN_FILE_MAPPING_BYTES); a splat filled.
    assert!(small.len() as u64 > 0 && (small.len() as u64) < MIN_FILE_MAPPING_BYTES);
    assert_eq!(mapped, [true, true, false, true, false]);
    assert_eq!(buffers[0].to_vec(), big);
    assert_eq!(buffers[1].to_vec(), big);
    assert_eq!(buffers[2].to_vec(), small);
    assert_eq!(buffers[3].to_vec(), big[half as usize..]);
    assert!(buffers[4].to_vec().iter().all(|&b| b == 0));
    #[cfg(target_os = "linux")]
    assert_eq!(
        private_writable_mappings_of(&path),
        3,
        "one mapping per mapped buffer"
    );

    // Writes through the HAL (a queue fill, a host write) change the written buffer only.
    let signal = HalSemaphore::new(0);
    device
        .queue_fill(
            Submission {
                affinity: ANY_QUEUE,
                wait: &HalFence::empty(),
                signal: &HalFence::at(signal.clone(), 1),
                wait_limit: None,
            },
            &buffers[0],
            0,
            4096,
            0xdead_beef,
            4,
        )
        .unwrap();
    buffers[0].write(100_000, &[7; 64]).unwrap();
    let mut expected = big.clone();
    for chunk in expected[..4096].chunks_mut(4) {
        chunk.copy_from_slice(&0xdead_beefu32.to_le_bytes());
    }
    expected[100_000..100_064].fill(7);
    assert_eq!(buffers[0].to_vec(), expected);
    assert_eq!(
        buffers[1].to_vec(),
        big,
        "another load of the entry is unchanged"
    );
    assert_eq!(buffers[3].to_vec(), big[half as usize..]);
    assert_eq!(index.get("big").unwrap().storage.data(), Some(&big[..]));
    let again = load(&module, &device, &[("big", 0, big.len() as u64)]).unwrap();
    assert_eq!(again[0].to_vec(), big, "a later load reads the archive");
    drop(again);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        file_before,
        "the file never changes"
    );

    // The mappings go with the buffers.
    drop(buffers);
    #[cfg(target_os = "linux")]
    assert_eq!(private_writable_mappings_of(&path), 0);

    // The same archive read into memory is copied, with the same bytes.
    let in_memory = ParameterIndex::from_bytes(Arc::new(file_before)).unwrap();
    let copied = load(
        &module_over(in_memory),
        &device,
        &[("big", 0, big.len() as u64)],
    )
    .unwrap();
    assert!(!copied[0].is_file_mapping());
    assert_eq!(copied[0].to_vec(), big);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A safetensors file (`{"a": .., "b": ..}`, both `U8`) whose data section starts one byte
/// past a multiple of 64: `a` (at data offset 0) is unaligned in the file, `b` (at data
/// offset `a_len`, chosen so) aligned.
fn write_safetensors(path: &Path, a: &[u8], b: &[u8]) {
    let header = |pad: usize| {
        let json = format!(
            r#"{{"a":{{"dtype":"U8","shape":[{a}],"data_offsets":[0,{a}]}},"b":{{"dtype":"U8","shape":[{b}],"data_offsets":[{a},{ab}]}}}}"#,
            a = a.len(),
            b = b.len(),
            ab = a.len() + b.len()
        );
        format!("{json}{}", " ".repeat(pad))
    };
    let base = header(0).len();
    // 8 + header length ≡ 1 (mod 64).
    let pad = (65 - (8 + base) % 64) % 64;
    let json = header(pad);
    assert_eq!((8 + json.len()) % 64, 1);
    assert_eq!((8 + json.len() + a.len()) % 64, 0, "a's length aligns b");
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend(json.as_bytes());
    bytes.extend(a);
    bytes.extend(b);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn unaligned_entries_are_copied_and_aligned_ones_of_the_same_file_mapped() {
    let dir = scratch("unaligned");
    let a = pattern((128 << 10) + 63, 3);
    let b = pattern(96 << 10, 4);
    let path = dir.join("model.safetensors");
    write_safetensors(&path, &a, &b);
    let index = ParameterIndex::open(&path).unwrap();
    let device = local_device(None);
    let module = module_over(index);
    let buffers = load(
        &module,
        &device,
        &[
            ("a", 0, a.len() as u64),
            ("b", 0, b.len() as u64),
            // 63 bytes into `a` is 64 in the file: aligned.
            ("a", 63, (a.len() - 63) as u64),
        ],
    )
    .unwrap();
    let mapped: Vec<bool> = buffers.iter().map(HalBuffer::is_file_mapping).collect();
    assert_eq!(mapped, [false, true, true]);
    assert_eq!(buffers[0].to_vec(), a);
    assert_eq!(buffers[1].to_vec(), b);
    assert_eq!(buffers[2].to_vec(), a[63..]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_mapped_entry_is_charged_to_the_budget_as_a_copy_is() {
    let dir = scratch("budget");
    let big = pattern(256 << 10, 5);
    let mut written = ParameterIndex::new();
    written.add_data("big", big.clone());
    let path = dir.join("model.irpa");
    written.write_irpa_file(&path).unwrap();
    let module = module_over(ParameterIndex::open(&path).unwrap());

    let budget = MemoryBudget::new(1 << 20);
    let device = local_device(Some(budget.clone()));
    let buffers = load(&module, &device, &[("big", 0, big.len() as u64)]).unwrap();
    assert!(buffers[0].is_file_mapping());
    assert_eq!(budget.used(), big.len());
    drop(buffers);
    assert_eq!(budget.used(), 0, "refunded when the buffer goes");

    let small_budget = MemoryBudget::new(big.len() - 1);
    let device = local_device(Some(small_budget.clone()));
    let error = load(&module, &device, &[("big", 0, big.len() as u64)]).unwrap_err();
    assert_eq!(error.status, StatusCode::ResourceExhausted, "{error}");
    assert!(error.message.contains("memory budget"), "{error}");
    assert!(
        error.message.contains("\"big\""),
        "names the parameter: {error}"
    );
    assert_eq!(small_budget.used(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `y = x + w` over a 256 KiB parameter `model::w`.
const ADD_WEIGHTS: &str = r#"
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<65536xf32>
func.func @add(%x: tensor<65536xf32>) -> tensor<65536xf32> {
  %w = util.global.load @w : tensor<65536xf32>
  %y = arith.addf %x, %w : tensor<65536xf32>
  return %y : tensor<65536xf32>
}
"#;

#[test]
fn a_program_computes_with_a_large_parameter_mapped_from_its_archive() {
    let test = "a_program_computes_with_a_large_parameter_mapped_from_its_archive";
    let Some(iree_compile) = pactum_testing::iree::tool_or_skip("iree-compile", test) else {
        return;
    };
    let dir = scratch("program");
    let weights: Vec<f32> = (0..65536).map(|i| (i as f32) * 0.5 - 1000.25).collect();
    let x: Vec<f32> = (0..65536).map(|i| ((i * 7) % 1000) as f32 / 8.0).collect();
    let mut written = ParameterIndex::new();
    written.add_data(
        "w",
        weights
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    let archive = dir.join("weights.irpa");
    written.write_irpa_file(&archive).unwrap();
    for backend in ["vmvx", "llvm-cpu"] {
        let vmfb = compile_for_cpu(&iree_compile, &dir, "add", ADD_WEIGHTS, backend, &[]);
        let module = IreeModule::builder()
            .workers(Workers::CallerThread)
            .parameters("model", ParameterIndex::open(&archive).unwrap())
            .load(&vmfb)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let input = Tensor::from_slice(&x, &[65536]).unwrap();
        let result: Tensor = module
            .call("add", &[AnyView::from(&input)])
            .unwrap_or_else(|e| panic!("{backend}: {e}"))
            .cast()
            .unwrap();
        let expected: Vec<u32> = x
            .iter()
            .zip(&weights)
            .map(|(a, b)| (a + b).to_bits())
            .collect();
        let got: Vec<u32> = result
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert!(got == expected, "{backend}: x + w differs");
        // The program keeps the loaded buffer as its global: the file's pages, not a copy,
        // unmapped with the module.
        #[cfg(target_os = "linux")]
        {
            assert_eq!(private_writable_mappings_of(&archive), 1, "{backend}");
            drop(module);
            assert_eq!(private_writable_mappings_of(&archive), 0, "{backend}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
