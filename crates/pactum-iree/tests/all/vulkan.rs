//! The Vulkan device (`hal::vulkan`, feature `vulkan`) against IREE's own Vulkan driver:
//! programs compiled now by the pinned `iree-compile --iree-hal-target-device=vulkan`, run by
//! pactum's VM on a `VulkanDevice` and by `iree-run-module --device=vulkan` on the same
//! inputs, printed the way iree-run-module prints and compared as text.
//!
//! These tests need a Vulkan driver (lavapipe: `apt-get install libvulkan1
//! mesa-vulkan-drivers`, which `scripts/test.sh` installs). Without one they fail, saying so:
//! they never skip.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pactum_iree::hal::vulkan::{
    ExecutableDef, VULKAN_SPIRV_FORMAT, VulkanMemoryMode, VulkanOptions, parse_device_name,
};
use pactum_iree::hal::{
    Binding, BufferParams, HalBuffer, HalBufferView, HalDevice, HalFence, HalModule, HalSemaphore,
    Submission, Timeout, VulkanDevice, executables_in_vmfb, hal_ref,
};
use pactum_iree::status::{StatusCode, StatusError};
use pactum_iree::vm::{Context, Limits, Ref, Value};
use pactum_iree::vmfb::VmfbFile;
use pactum_testing::iree::{
    IreeValue, ManifestRun, compile_for_vulkan, compile_for_vulkan_with, render_results,
    tool_or_skip,
};

use crate::manifest_harness;

/// The loader's first Vulkan device, in the memory mode `PACTUM_VULKAN_MEMORY` names (so the
/// whole file runs in a forced mode with it set), or a failure saying what to install.
fn device() -> VulkanDevice {
    opened(VulkanDevice::open(0))
}

/// The loader's first Vulkan device with its memory used as `mode` says.
fn device_in(mode: VulkanMemoryMode) -> VulkanDevice {
    opened(VulkanDevice::open_with_options(
        0,
        VulkanOptions { memory: mode },
    ))
}

fn opened(device: Result<VulkanDevice, pactum_iree::status::StatusError>) -> VulkanDevice {
    device.unwrap_or_else(|e| {
        panic!(
            "no Vulkan device: {e}\nThe Vulkan tests need a Vulkan driver: install libvulkan1 \
             and mesa-vulkan-drivers (lavapipe), as scripts/test.sh does."
        )
    })
}

fn context(device: &VulkanDevice) -> Context {
    let mut context = Context::new(Limits::default());
    let device = device.with_memory_budget(context.memory_budget().cloned());
    let hal = HalModule::new(Arc::new(device));
    context.register_native(Arc::new(hal)).unwrap();
    context
}

const ADD: &str = r#"
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"#;

const MATMUL: &str = r#"
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x3xf32>) -> tensor<4x3xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>)
                     outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
"#;

const REDUCE: &str = r#"
func.func @row_sums(%x: tensor<3x5xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<3xf32>) -> tensor<3xf32>
  %0 = linalg.reduce ins(%x : tensor<3x5xf32>) outs(%init : tensor<3xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %0 : tensor<3xf32>
}

func.func @max_i32(%x: tensor<16xi32>) -> tensor<i32> {
  %lowest = arith.constant -2147483648 : i32
  %empty = tensor.empty() : tensor<i32>
  %init = linalg.fill ins(%lowest : i32) outs(%empty : tensor<i32>) -> tensor<i32>
  %0 = linalg.reduce ins(%x : tensor<16xi32>) outs(%init : tensor<i32>) dimensions = [0]
    (%in: i32, %acc: i32) {
      %m = arith.maxsi %in, %acc : i32
      linalg.yield %m : i32
    }
  return %0 : tensor<i32>
}
"#;

/// A matmul, a softmax over its rows (max, exp, sum, divide: several dispatches, each reading
/// what the one before wrote) and a transpose.
const CHAIN: &str = r#"
func.func @chain(%a: tensor<2x4xf32>, %b: tensor<4x6xf32>) -> (tensor<2x6xf32>, tensor<6x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x6xf32>) -> tensor<2x6xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<2x4xf32>, tensor<4x6xf32>)
                      outs(%init : tensor<2x6xf32>) -> tensor<2x6xf32>
  %soft = linalg.softmax dimension(1) ins(%mm : tensor<2x6xf32>)
                         outs(%empty : tensor<2x6xf32>) -> tensor<2x6xf32>
  %tempty = tensor.empty() : tensor<6x2xf32>
  %t = linalg.transpose ins(%soft : tensor<2x6xf32>) outs(%tempty : tensor<6x2xf32>) permutation = [1, 0]
  return %soft, %t : tensor<2x6xf32>, tensor<6x2xf32>
}
"#;

/// A program with a dynamic dimension: the workgroup count and push constants depend on it.
const DYNAMIC: &str = r#"
func.func @scale(%x: tensor<?xf32>, %s: tensor<f32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %empty = tensor.empty(%n) : tensor<?xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
                                        affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x, %s : tensor<?xf32>, tensor<f32>) outs(%empty : tensor<?xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
  } -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
"#;

/// The runs compared: (program name, source, function, inputs).
fn runs() -> Vec<(&'static str, &'static str, &'static str, Vec<&'static str>)> {
    vec![
        (
            "add",
            ADD,
            "add",
            vec!["4xf32=1 2 3 4", "4xf32=10 20 30 40.5"],
        ),
        (
            "matmul",
            MATMUL,
            "matmul",
            vec![
                "4x8xf32=1 2 3 4 5 6 7 8 -1 -2 -3 -4 -5 -6 -7 -8 0.5 0.25 0 1 2 3 4 5 9 8 7 6 5 4 3 2",
                "8x3xf32=1 0 2 0 1 -1 3 3 3 0.5 0.5 0.5 -2 1 0 1 1 1 0 0 7 2 -3 1",
            ],
        ),
        (
            "reduce",
            REDUCE,
            "row_sums",
            vec!["3x5xf32=1 2 3 4 5 -1 -2 -3 -4 -5 0.5 0.25 0.125 8 1e3"],
        ),
        (
            "reduce",
            REDUCE,
            "max_i32",
            vec!["16xi32=3 -7 12 0 99 -1000 5 6 7 8 98 -2 1 1 1 42"],
        ),
        (
            "chain",
            CHAIN,
            "chain",
            vec![
                "2x4xf32=1 2 3 4 0.5 -1 2 -3",
                "4x6xf32=1 0 0 1 2 3 0 1 0 1 -1 0 0 0 1 0.5 0.5 2 1 1 1 1 1 1",
            ],
        ),
        (
            "dynamic",
            DYNAMIC,
            "scale",
            vec!["5xf32=1 2 3 4 5", "f32=2.5"],
        ),
        ("dynamic", DYNAMIC, "scale", vec!["0xf32=", "f32=3"]),
        ("dynamic", DYNAMIC, "scale", vec!["1000xf32=7", "f32=-1"]),
    ]
}

/// A compiled program, the function called and its inputs.
type CompiledRun = (PathBuf, &'static str, Vec<&'static str>);

fn compile_all(test: &str) -> Option<(PathBuf, Vec<CompiledRun>)> {
    let iree_compile = tool_or_skip("iree-compile", test)?;
    let dir = pactum_testing::hostile::scratch("vulkan");
    let mut compiled: Vec<(&str, PathBuf)> = Vec::new();
    let mut out = Vec::new();
    for (name, source, function, inputs) in runs() {
        let path = match compiled.iter().find(|(n, _)| *n == name) {
            Some((_, path)) => path.clone(),
            None => {
                let path = compile_for_vulkan(&iree_compile, &dir, name, source);
                compiled.push((name, path.clone()));
                path
            }
        };
        out.push((path, function, inputs));
    }
    Some((dir, out))
}

fn manifest_run(path: &Path, function: &str, inputs: &[&str]) -> ManifestRun {
    ManifestRun {
        file: path.file_name().unwrap().to_string_lossy().into_owned(),
        path: path.to_owned(),
        backend: "vulkan".into(),
        function: function.into(),
        device: Some("vulkan".into()),
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        expected_output: String::new(),
        fails: None,
        expected_error: None,
    }
}

/// Every program of [`runs`] run by pactum on a device in each memory mode (the forced modes
/// take lavapipe through the staging and the flush paths) and by iree-run-module, compared.
#[test]
fn programs_compiled_for_vulkan_print_what_iree_run_module_prints() {
    let test = "programs_compiled_for_vulkan_print_what_iree_run_module_prints";
    let devices = VulkanMemoryMode::ALL.map(|(mode, name)| (device_in(mode), name));
    let Some((dir, runs)) = compile_all(test) else {
        return;
    };
    let (mut compared, mut failed) = (0, 0);
    for (path, function, inputs) in &runs {
        let run = manifest_run(path, function, inputs);
        let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
        for (device, mode) in &devices {
            match (
                manifest_harness::run_in_pactum(&run, context(device)),
                &iree.results,
            ) {
                (Ok(ours), Ok(_)) => assert_eq!(
                    ours, iree.stdout,
                    "{run} ({mode} memory): pactum (left) vs iree-run-module --device=vulkan \
                     (right)"
                ),
                // IREE's driver refuses some programs (an empty binding): so does pactum's.
                (Err((status, message)), Err(failure)) => {
                    assert_eq!(status, failure.status, "{run} ({mode} memory): {message}");
                    failed += 1;
                }
                (ours, _) => {
                    panic!("{run} ({mode} memory): pactum gave {ours:?}, iree-run-module {iree:?}")
                }
            }
            compared += 1;
        }
    }
    assert_eq!(compared, runs.len() * devices.len());
    // Only the empty tensor fails (in both), in each mode.
    assert_eq!(failed, devices.len());
    eprintln!(
        "{compared} Vulkan runs ({} programs x {} memory modes) equal to iree-run-module \
         --device=vulkan ({failed} failing alike)",
        runs.len(),
        devices.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dispatch_runs_on_the_device_api_without_a_vm() {
    let test = "a_dispatch_runs_on_the_device_api_without_a_vm";
    let devices = VulkanMemoryMode::ALL.map(|(mode, _)| device_in(mode));
    let Some(iree_compile) = tool_or_skip("iree-compile", test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("vulkan-device-api");
    let vmfb = compile_for_vulkan(&iree_compile, &dir, "add", ADD);
    let found = executables_in_vmfb(&VmfbFile::open(&vmfb).unwrap()).unwrap();
    assert_eq!(found.len(), 1);
    for device in devices {
        dispatch_on_device_api(device, found[0].data.clone());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `add` executable (`data`) run on `device` through the HAL's API.
fn dispatch_on_device_api(device: VulkanDevice, data: Vec<u8>) {
    let mode = device.memory_mode();
    // The executable's FlatBuffer: one export, three storage buffers in set 0.
    let def = ExecutableDef::parse(&data).unwrap();
    assert_eq!(def.pipelines.len(), 1);
    assert_eq!(def.binding_slots(0), [(0, 0), (0, 1), (0, 2)]);

    assert!(device.supports_executable_format(VULKAN_SPIRV_FORMAT));
    assert_eq!(device.query_i64("hal.device.id", "vulkan*"), Some(1));
    assert_eq!(device.query_i64("hal.device.id", "local*"), Some(0));
    assert_eq!(
        device.query_i64("hal.executable.format", "embedded-elf-x86_64"),
        Some(0)
    );
    assert_eq!(device.query_i64("hal.device", "concurrency"), Some(1));
    assert_eq!(device.query_i64("vulkan.device", "api_version"), None);
    let vulkan = device.clone();
    let device: Arc<dyn HalDevice> = Arc::new(device);
    let executable = device
        .create_executable(VULKAN_SPIRV_FORMAT, data, &[])
        .unwrap();
    let add = executable
        .lookup("add_dispatch_0_elementwise_4_f32")
        .unwrap();

    let f32s = |v: [f32; 4]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let allocator = device.allocator();
    let a = allocator
        .import_copy(BufferParams::default(), &f32s([1.0, 2.0, 3.0, 4.0]))
        .unwrap();
    // A buffer the device did not make (host memory): mirrored for the dispatch.
    let b = pactum_iree::hal::HalBuffer::from_bytes(&f32s([10.0, 20.0, 30.0, 40.0]), None).unwrap();
    let sum = allocator.allocate(BufferParams::default(), 16).unwrap();
    // lavapipe's one memory type is device-local and host-visible: the host maps it, except
    // where the mode says device-local memory is not host-visible (a discrete GPU's case).
    let staged = mode == VulkanMemoryMode::DeviceLocalOnly;
    assert_eq!(vulkan.buffer_is_staged(&a), Some(staged), "{mode:?}");
    assert_eq!(vulkan.buffer_is_staged(&sum), Some(staged), "{mode:?}");
    assert_eq!(vulkan.buffer_is_staged(&b), None);
    // The output also in host memory, to see the mirror's bytes come back.
    let host_sum = pactum_iree::hal::HalBuffer::allocate(16, None).unwrap();
    for out in [&sum, &host_sum] {
        let commands = device.create_command_buffer(0).unwrap();
        let bindings = [a.clone(), b.clone(), out.clone()].map(Binding::whole);
        commands
            .dispatch(&executable, add, [1, 1, 1], &[], &bindings)
            .unwrap();
        commands.finalize().unwrap();
        let done = HalFence::pending();
        device
            .queue_execute(
                Submission::new(&HalFence::empty(), &done),
                Some(&commands),
                &[],
            )
            .unwrap();
        done.wait(Timeout::Infinite).unwrap();
        assert_eq!(out.to_vec(), f32s([11.0, 22.0, 33.0, 44.0]), "{mode:?}");
    }

    // A dispatch with the wrong number of bindings fails, naming the counts, and fails the
    // signal fence.
    let commands = device.create_command_buffer(0).unwrap();
    let bindings = [a.clone(), b.clone()].map(Binding::whole);
    commands
        .dispatch(&executable, add, [1, 1, 1], &[], &bindings)
        .unwrap();
    commands.finalize().unwrap();
    let done = HalFence::pending();
    let error = device
        .queue_execute(
            Submission::new(&HalFence::empty(), &done),
            Some(&commands),
            &[],
        )
        .unwrap_err();
    assert!(
        error
            .message
            .contains("gives 2 bindings; the export declares 3"),
        "{error}"
    );
    assert!(done.wait(Timeout::Infinite).is_err());
}

#[test]
fn bad_executables_are_refused_with_the_field_and_offset() {
    let device = device();
    let error = device
        .create_executable(VULKAN_SPIRV_FORMAT, b"VKE1 too short".to_vec(), &[])
        .unwrap_err();
    assert!(
        error.message.contains("less than the 64-byte header"),
        "{error}"
    );
    let error = device
        .create_executable("embedded-elf-x86_64", vec![0; 64], &[])
        .unwrap_err();
    assert!(
        error.message.contains("does not run executables of format"),
        "{error}"
    );
    // A header announcing more bytes than follow.
    let mut data = vec![0u8; 96];
    data[..4].copy_from_slice(b"VKE1");
    data[8] = 200;
    let error = device
        .create_executable(VULKAN_SPIRV_FORMAT, data, &[])
        .unwrap_err();
    assert!(error.message.contains("content size at byte 8"), "{error}");
}

#[test]
fn device_names_choose_the_loaders_devices() {
    assert_eq!(parse_device_name("vulkan").unwrap().unwrap(), 0);
    assert_eq!(parse_device_name("vulkan://3").unwrap().unwrap(), 3);
    assert!(parse_device_name("vulkan://x").unwrap().is_err());
    assert!(parse_device_name("local-task").is_none());
    let device = device();
    assert_eq!(device.index(), 0);
    // An index past the loader's devices names the ones there are.
    let error = VulkanDevice::open(1000).unwrap_err();
    assert!(
        error
            .message
            .contains("vulkan://1000: the Vulkan loader found"),
        "{error}"
    );
    assert!(error.message.contains(device.device_name()), "{error}");
}

#[test]
fn every_corrupted_byte_of_an_executable_is_parsed_or_refused_without_a_panic() {
    let test = "every_corrupted_byte_of_an_executable_is_parsed_or_refused_without_a_panic";
    let Some(iree_compile) = tool_or_skip("iree-compile", test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("vulkan-corrupt");
    let vmfb = compile_for_vulkan(&iree_compile, &dir, "matmul", MATMUL);
    let found = executables_in_vmfb(&VmfbFile::open(&vmfb).unwrap()).unwrap();
    let data = &found[0].data;
    let (mut refused, mut parsed) = (0, 0);
    // Every byte of the header and the FlatBuffer's tables (up to the SPIR-V words), set to
    // 0xff and to 0x00: each parses or is refused with an error, never a panic.
    for at in 0..data.len().min(512) {
        for value in [0xffu8, 0x00] {
            let mut bad = data.clone();
            bad[at] = value;
            match ExecutableDef::parse(&bad) {
                Ok(_) => parsed += 1,
                Err(error) => {
                    assert!(
                        error.message.starts_with("vulkan-spirv-fb executable"),
                        "{error}"
                    );
                    refused += 1;
                }
            }
        }
    }
    assert!(
        refused > 0 && parsed > 0,
        "{refused} refused, {parsed} parsed"
    );
    // Truncations too.
    for len in 0..data.len().min(512) {
        let _ = ExecutableDef::parse(&data[..len]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records fills (1, 2, 4 and 8-byte patterns, aligned and not), updates and copies
/// (overlapping too) over `a` and `b`.
fn transfers(commands: &pactum_iree::hal::HalCommandBuffer, a: &HalBuffer, b: &HalBuffer) {
    use pactum_iree::hal::{BufferRef, Command};
    let direct = |buffer: &HalBuffer| BufferRef::Direct(buffer.clone());
    let fill = |target: &HalBuffer, offset, length, pattern, pattern_length| Command::Fill {
        target: direct(target),
        offset,
        length,
        pattern,
        pattern_length,
    };
    let copy = |source: &HalBuffer, source_offset, target: &HalBuffer, target_offset, length| {
        Command::Copy {
            source: direct(source),
            source_offset,
            target: direct(target),
            target_offset,
            length,
        }
    };
    let update = |target: &HalBuffer, offset, data: &[u8]| Command::Update {
        data: Arc::from(data),
        target: direct(target),
        offset,
    };
    for command in [
        fill(a, 0, 96, 0x01, 1),
        fill(a, 3, 5, 0xab, 1),
        fill(a, 16, 8, 0xbeef, 2),
        fill(a, 24, 8, 0xdead_beef, 4),
        update(a, 40, &[1, 2, 3, 4, 5, 6, 7, 8]),
        update(a, 50, &[9, 10, 11]),
        copy(a, 0, b, 4, 16),
        fill(b, 32, 16, 0x0102_0304_0506_0708, 8),
        copy(a, 0, a, 2, 8),
        copy(b, 0, a, 64, 32),
    ] {
        commands.record(command).unwrap();
    }
}

#[test]
fn fills_updates_and_copies_give_what_the_local_device_gives() {
    use pactum_iree::hal::LocalDevice;
    let vulkan: Arc<dyn HalDevice> = Arc::new(device());
    let local: Arc<dyn HalDevice> = Arc::new(LocalDevice::sync());
    let mut results = Vec::new();
    for device in [&vulkan, &local] {
        // `a` the device's own, `b` host memory (mirrored on the Vulkan device).
        let a = device
            .allocator()
            .allocate(BufferParams::default(), 96)
            .unwrap();
        let b = HalBuffer::allocate(64, None).unwrap();
        b.write(0, &(0..64).collect::<Vec<u8>>()).unwrap();
        let commands = device.create_command_buffer(0).unwrap();
        transfers(&commands, &a, &b);
        commands.finalize().unwrap();
        let done = HalFence::pending();
        device
            .queue_execute(
                Submission::new(&HalFence::empty(), &done),
                Some(&commands),
                &[],
            )
            .unwrap();
        done.wait(Timeout::Infinite).unwrap();
        results.push((a.to_vec(), b.to_vec()));
    }
    assert_eq!(results[0], results[1]);
    // The patterns landed where they were put.
    assert_eq!(results[0].0[16..20], [0xef, 0xbe, 0xef, 0xbe]);
    assert_eq!(results[0].1[32..40], [8, 7, 6, 5, 4, 3, 2, 1]);
}

/// Thousands of buffers share a few blocks of device memory (a driver's bound on allocations,
/// 4096 on many GPUs, does not bound the buffers), each keeping its own bytes; freed ranges
/// are reused; a large buffer gets memory of its own. In every memory mode.
#[test]
fn small_buffers_are_sub_allocated_from_shared_blocks() {
    for (mode, name) in VulkanMemoryMode::ALL {
        let device = device_in(mode);
        let allocator = device.allocator();
        let params = BufferParams {
            memory_type: 48,
            usage: 3075,
        };
        let before = device.memory_block_count();
        let buffers: Vec<HalBuffer> = (0..5000u32)
            .map(|k| {
                let buffer = allocator.allocate(params, 1000).unwrap();
                buffer.write(0, &k.to_le_bytes()).unwrap();
                buffer.write(996, &(!k).to_le_bytes()).unwrap();
                buffer
            })
            .collect();
        // 5000 x 1 KiB in 32 MiB blocks (a staging block too where staged).
        let blocks = device.memory_block_count();
        assert!(blocks - before <= 2, "{name}: {blocks} blocks");
        for (k, buffer) in buffers.iter().enumerate() {
            let mut word = [0u8; 4];
            buffer.read(0, &mut word).unwrap();
            assert_eq!(u32::from_le_bytes(word), k as u32, "{name}");
            buffer.read(996, &mut word).unwrap();
            assert_eq!(u32::from_le_bytes(word), !(k as u32), "{name}");
        }
        drop(buffers);
        // Freed ranges serve the next buffers: no new block.
        let again: Vec<HalBuffer> = (0..5000)
            .map(|_| allocator.allocate(params, 1000).unwrap())
            .collect();
        assert!(device.memory_block_count() <= blocks, "{name}");
        // 16 MiB: memory of its own, not a block.
        let large = allocator.allocate(params, 16 << 20).unwrap();
        large.write((16 << 20) - 4, &[1, 2, 3, 4]).unwrap();
        assert!(device.memory_block_count() <= blocks, "{name}");
        drop((again, large));
    }
}

const ASYNC: &str = r#"
func.func @async_add(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xf32> {
  %0 = arith.addf %a, %b : tensor<6xf32>
  %1 = arith.mulf %0, %0 : tensor<6xf32>
  return %1 : tensor<6xf32>
}
"#;

/// An async export (`--iree-execution-model=async-external`) given fences of the device's own
/// semaphores returns with its work queued behind the wait fence; a host signal releases it,
/// and the results, once the signal fence is reached, print as iree-run-module's.
#[test]
fn async_exports_queue_their_work_behind_device_fences() {
    let test = "async_exports_queue_their_work_behind_device_fences";
    device();
    let Some(iree_compile) = tool_or_skip("iree-compile", test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("vulkan-async");
    let vmfb = compile_for_vulkan_with(
        &iree_compile,
        &dir,
        "async",
        ASYNC,
        &["--iree-execution-model=async-external"],
    );
    let inputs = ["6xf32=1 2 3 4 5 6", "6xf32=0.5 -1 2 -3 4 -5.5"];
    let run = manifest_run(&vmfb, "async_add", &inputs);
    let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
    // In every memory mode: staged buffers are copied back by the queued batch itself, and
    // non-coherent ones invalidated when it is retired, before `done` reports 1.
    for (mode, mode_name) in VulkanMemoryMode::ALL {
        let vulkan = device_in(mode);
        let mut context = context(&vulkan);
        let device: Arc<dyn HalDevice> = Arc::new(vulkan);
        let name = context
            .load_bytecode(Arc::new(VmfbFile::open(&vmfb).unwrap()))
            .unwrap();
        let function = context.lookup_export(&format!("{name}.async_add")).unwrap();
        // The inputs in the device's buffers, as iree-run-module allocates them.
        let mut values: Vec<Value> = inputs
            .iter()
            .map(|text| {
                let host = HalBufferView::parse(text).unwrap();
                let buffer = device
                    .allocator()
                    .import_copy(BufferParams::default(), &host.buffer.to_vec())
                    .unwrap();
                let view =
                    HalBufferView::new(buffer, host.shape, host.element_type, host.encoding_type)
                        .unwrap();
                Value::Ref(Some(Ref::Object(Arc::new(view))))
            })
            .collect();
        let start = device.create_semaphore(0).unwrap();
        let done = device.create_semaphore(0).unwrap();
        values.push(hal_ref(HalFence::at(start.clone(), 1)));
        values.push(hal_ref(HalFence::at(done.clone(), 1)));
        let results = context.invoke(&function, &values).unwrap();
        // The call returned; its work waits on the device for `start`.
        assert_eq!(done.value().unwrap(), 0);
        assert_eq!(
            done.wait(1, Timeout::After(Duration::from_millis(20)))
                .unwrap_err()
                .status,
            StatusCode::DeadlineExceeded
        );
        start.signal(1).unwrap();
        done.wait(1, Timeout::Infinite).unwrap();
        let printed: Vec<IreeValue> = results.iter().map(manifest_harness::printed).collect();
        assert_eq!(
            render_results("async_add", &printed),
            iree.stdout,
            "{run} ({mode_name} memory): pactum (left) vs iree-run-module --device=vulkan (right)"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The device's semaphores order queue operations on the device: submissions chained by a
/// semaphore run after a host signal, whatever was dropped meanwhile; failures reach the
/// semaphores of the work that depended on them; fences of host semaphores still work; and a
/// device dropped with work waiting for a semaphore nobody signals neither hangs nor crashes.
#[test]
fn device_semaphores_order_queue_operations_on_the_device() {
    let test = "device_semaphores_order_queue_operations_on_the_device";
    device();
    let Some(iree_compile) = tool_or_skip("iree-compile", test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("vulkan-semaphores");
    let vmfb = compile_for_vulkan(&iree_compile, &dir, "add", ADD);
    let data = executables_in_vmfb(&VmfbFile::open(&vmfb).unwrap()).unwrap()[0]
        .data
        .clone();
    // In every memory mode: what the host reads after a wait is what the queued work wrote
    // (staged buffers copied back in the batch, non-coherent memory invalidated at retirement).
    for (mode, name) in VulkanMemoryMode::ALL {
        let vulkan = device_in(mode);
        let device: Arc<dyn HalDevice> = Arc::new(vulkan);
        let executable = device
            .create_executable(VULKAN_SPIRV_FORMAT, data.clone(), &[])
            .unwrap();
        let add = executable
            .lookup("add_dispatch_0_elementwise_4_f32")
            .unwrap();
        let f32s = |v: [f32; 4]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let allocator = device.allocator();
        let a = allocator
            .import_copy(BufferParams::default(), &f32s([1.0, 2.0, 3.0, 4.0]))
            .unwrap();
        let b = allocator
            .import_copy(BufferParams::default(), &f32s([10.0, 20.0, 30.0, 40.0]))
            .unwrap();
        let sum = allocator.allocate(BufferParams::default(), 16).unwrap();
        let out = allocator.allocate(BufferParams::default(), 16).unwrap();
        // Device memory starts undefined: a known pattern shows whether the copy ran.
        out.write(0, &[0xAB; 16]).unwrap();
        let point = |semaphore: &HalSemaphore, value| HalFence::at(semaphore.clone(), value);

        // A dispatch after s = 1 signalling 2, a copy after 2 signalling 3: both queued on the
        // device behind a value only the host will signal.
        let s = device.create_semaphore(0).unwrap();
        let commands = device.create_command_buffer(0).unwrap();
        let bindings = [a.clone(), b.clone(), sum.clone()].map(Binding::whole);
        commands
            .dispatch(&executable, add, [1, 1, 1], &[], &bindings)
            .unwrap();
        commands.finalize().unwrap();
        device
            .queue_execute(
                Submission::new(&point(&s, 1), &point(&s, 2)),
                Some(&commands),
                &[],
            )
            .unwrap();
        device
            .queue_copy(
                Submission::new(&point(&s, 2), &point(&s, 3)),
                &sum,
                0,
                &out,
                0,
                16,
            )
            .unwrap();
        assert_eq!(s.value().unwrap(), 0);
        assert_eq!(out.to_vec(), [0xAB; 16]);
        // The host may not signal past a queued device signal (Vulkan's rule).
        assert_eq!(
            s.signal(2).unwrap_err().status,
            StatusCode::FailedPrecondition
        );
        // What the submissions use (but `out`) is dropped while they wait: they hold it.
        drop((commands, executable, a, b, sum, bindings));
        s.signal(1).unwrap();
        s.wait(3, Timeout::Infinite).unwrap();
        assert_eq!(out.to_vec(), f32s([11.0, 22.0, 33.0, 44.0]), "{name}");
        // A host signal below what the device reached is refused, as for host semaphores.
        assert_eq!(s.signal(3).unwrap_err().status, StatusCode::OutOfRange);

        // A semaphore failing while a submission waits for it fails what the submission signals.
        let gate = device.create_semaphore(0).unwrap();
        let after = device.create_semaphore(0).unwrap();
        device
            .queue_fill(
                Submission::new(&point(&gate, 1), &point(&after, 1)),
                &out,
                0,
                16,
                7,
                4,
            )
            .unwrap();
        gate.fail(StatusError::new(StatusCode::Aborted, "the producer failed"));
        let error = after.wait(1, Timeout::Infinite).unwrap_err();
        assert_eq!(error.status, StatusCode::Aborted);
        assert!(error.message.contains("the producer failed"), "{error}");
        // An operation whose wait fence has failed fails at once, with that failure.
        let later = device.create_semaphore(0).unwrap();
        let error = device
            .queue_barrier(Submission::new(&point(&gate, 1), &point(&later, 1)))
            .unwrap_err();
        assert!(error.message.contains("the producer failed"), "{error}");
        assert!(later.value().is_err());
        // A submission refused before it reaches the device fails its signal fence.
        let ahead = device.create_semaphore(5).unwrap();
        let error = device
            .queue_barrier(Submission::new(&HalFence::empty(), &point(&ahead, 3)))
            .unwrap_err();
        assert_eq!(error.status, StatusCode::OutOfRange);
        assert_eq!(ahead.wait(3, Timeout::Infinite).unwrap_err(), error);

        // A host semaphore in the wait fence: the host waits for it (signalled by another thread),
        // then the device signals its own semaphore.
        let host = HalSemaphore::new(0);
        let signaller = {
            let host = host.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                host.signal(1).unwrap();
            })
        };
        let filled = device.create_semaphore(0).unwrap();
        device
            .queue_fill(
                Submission::new(&point(&host, 1), &point(&filled, 1)),
                &out,
                0,
                8,
                9,
                4,
            )
            .unwrap();
        filled.wait(1, Timeout::Infinite).unwrap();
        signaller.join().unwrap();
        assert_eq!(out.to_vec()[..8], [9, 0, 0, 0, 9, 0, 0, 0]);
        // A host semaphore in the signal fence: signalled by the host once the work is done.
        let host_done = HalFence::pending();
        device
            .queue_fill(
                Submission::new(&point(&filled, 1), &host_done),
                &out,
                0,
                4,
                3,
                4,
            )
            .unwrap();
        host_done.wait(Timeout::IMMEDIATE).unwrap();
        assert_eq!(out.to_vec()[..4], [3, 0, 0, 0]);

        // Dropping the device with work waiting for a semaphore nobody will signal: the wait
        // fails (so the device can finish), and so does what the work signals.
        let never = device.create_semaphore(0).unwrap();
        let unreached = device.create_semaphore(0).unwrap();
        device
            .queue_fill(
                Submission::new(&point(&never, 1), &point(&unreached, 1)),
                &out,
                0,
                16,
                1,
                4,
            )
            .unwrap();
        drop((device, allocator, out));
        assert_eq!(never.value().unwrap_err().status, StatusCode::Cancelled);
        assert_eq!(unreached.value().unwrap_err().status, StatusCode::Cancelled);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
