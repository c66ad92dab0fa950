//! The `hal` module's functions called directly (errors name what is wrong; hostile
//! arguments get errors, never panics) and vmvx modules called with pactum tensors.

use std::sync::{Arc, Mutex};

use pactum::{Any, AnyView, DataType, Tensor};
use pactum_iree::hal::{
    DENSE_ROW_MAJOR, HalBuffer, HalBufferView, HalElementType, HalModule, LocalDevice,
    MAX_TRACED_VIEWS, TraceSink, WHOLE_BUFFER, vm_view,
};
use pactum_iree::module::IreeModule;
use pactum_iree::vm::{
    Limits, MemoryBudget, NativeError, NativeModule, Ref, StatusCode, Value, VmBuffer,
};

fn hal() -> HalModule {
    HalModule::new(Arc::new(LocalDevice::task()))
}

fn call(hal: &HalModule, name: &str, args: &[Value]) -> Result<Vec<Value>, NativeError> {
    let index = hal
        .functions()
        .iter()
        .position(|f| f.name == name)
        .unwrap_or_else(|| panic!("no hal.{name}"));
    hal.call(index, args)
}

fn obj<T: pactum_iree::vm::RefObject + 'static>(value: T) -> Value {
    Value::Ref(Some(Ref::Object(Arc::new(value))))
}

fn text(s: &str) -> Value {
    Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(
        s.as_bytes(),
    )))))
}

fn view(shape: &[u64], ty: HalElementType) -> Value {
    let len = HalBufferView::byte_length(shape, ty).unwrap();
    let buffer = HalBuffer::allocate(len as i64, None).unwrap();
    obj(HalBufferView::new(buffer, shape.to_vec(), ty, DENSE_ROW_MAJOR).unwrap())
}

fn assert_view(v: Value, ty: HalElementType, shape: &[i64]) -> Result<Vec<Value>, NativeError> {
    let mut args = vec![
        v,
        text("input0"),
        Value::I32(ty.0 as i32),
        Value::I32(DENSE_ROW_MAJOR as i32),
        Value::I32(shape.len() as i32),
    ];
    args.extend(shape.iter().map(|&d| Value::I64(d)));
    call(&hal(), "buffer_view.assert", &args)
}

#[test]
fn buffer_view_assert_names_the_mismatch() {
    let f32_2x2 = || view(&[2, 2], HalElementType::F32);
    assert!(assert_view(f32_2x2(), HalElementType::F32, &[2, 2]).is_ok());
    let e = assert_view(f32_2x2(), HalElementType::F32, &[2, 3]).unwrap_err();
    assert_eq!(e.status, StatusCode::InvalidArgument);
    assert_eq!(
        e.message,
        "input0 shape dimension 1 mismatch; expected 3 but have 2; expected shape `2x3`, \
         actual shape `2x2`"
    );
    let e = assert_view(f32_2x2(), HalElementType::F32, &[4]).unwrap_err();
    assert!(
        e.message
            .contains("shape rank mismatch; expected 1 but have 2"),
        "{e}"
    );
    let e = assert_view(f32_2x2(), HalElementType::I32, &[2, 2]).unwrap_err();
    assert_eq!(e.status, StatusCode::InvalidArgument);
    assert!(
        e.message
            .contains("element type mismatch; expected i32 (0x10000020) but have f32 (0x21000020)"),
        "{e}"
    );
    let e = assert_view(Value::Ref(None), HalElementType::F32, &[2, 2]).unwrap_err();
    assert!(e.message.contains("input0"), "{e}");
    // A variadic count larger than the arguments is refused, not indexed.
    let e = call(
        &hal(),
        "buffer_view.assert",
        &[
            f32_2x2(),
            text("x"),
            Value::I32(0),
            Value::I32(1),
            Value::I32(1000),
        ],
    )
    .unwrap_err();
    assert_eq!(e.status, StatusCode::InvalidArgument);
}

/// `buffer_view.trace` hands the key and the views to the host's sink, checking them then
/// (at most `MAX_TRACED_VIEWS`); without a sink it does nothing, as IREE's module does.
#[test]
fn traces_reach_the_sink_the_host_installed() {
    // (key, shapes of the views) of each trace the sink received.
    type Traces = Vec<(String, Vec<Vec<u64>>)>;
    let traced: Arc<Mutex<Traces>> = Arc::default();
    let seen = traced.clone();
    let sink: TraceSink = Arc::new(move |key: &str, views: &[&HalBufferView]| {
        let shapes = views.iter().map(|v| v.shape.clone()).collect();
        seen.lock().unwrap().push((key.to_owned(), shapes));
        Ok(())
    });
    let i32s = HalElementType(0x1000_0020);
    let with_views = |key: Value, views: &[Value]| {
        let mut args = vec![key, Value::I32(views.len() as i32)];
        args.extend_from_slice(views);
        args
    };
    let traced_views = [view(&[2, 3], i32s), view(&[4], i32s)];

    // No sink: nothing is checked, nothing is traced.
    call(
        &hal(),
        "buffer_view.trace",
        &with_views(Value::Ref(None), &[Value::Ref(None)]),
    )
    .unwrap();

    let hal = hal().with_trace_sink(sink);
    call(
        &hal,
        "buffer_view.trace",
        &with_views(text("step 1"), &traced_views),
    )
    .unwrap();
    assert_eq!(
        *traced.lock().unwrap(),
        [("step 1".to_owned(), vec![vec![2, 3], vec![4]])]
    );
    let e = call(
        &hal,
        "buffer_view.trace",
        &with_views(Value::Ref(None), &traced_views),
    )
    .unwrap_err();
    assert_eq!(e.status, StatusCode::InvalidArgument, "{e}");
    let e = call(
        &hal,
        "buffer_view.trace",
        &with_views(text("k"), &[text("not a view")]),
    )
    .unwrap_err();
    assert_eq!(e.status, StatusCode::InvalidArgument, "{e}");
    let many = vec![traced_views[1].clone(); MAX_TRACED_VIEWS + 1];
    let e = call(&hal, "buffer_view.trace", &with_views(text("k"), &many)).unwrap_err();
    assert_eq!(e.status, StatusCode::ResourceExhausted, "{e}");
    assert_eq!(traced.lock().unwrap().len(), 1);
}

/// The program's bytes `device.queue.update` and `command_buffer.update_buffer` take are
/// checked against the `!vm.buffer` they come from. A negative offset is refused too: IREE
/// 3.13 adds it to the length unsigned, so `-4` with a length of 16 passes its check and
/// copies 4 bytes from before the buffer (a read the fixtures therefore do not record).
#[test]
fn updates_take_only_the_programs_bytes() {
    let hal = hal();
    let target = obj(HalBuffer::allocate(16, None).unwrap());
    let source = Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(
        &[7u8; 32],
    )))));
    let update = |offset: i64, length: i64| {
        call(
            &hal,
            "device.queue.update",
            &[
                Value::Ref(Some(hal.device_ref().clone())),
                Value::I64(-1),
                Value::Ref(None),
                Value::Ref(None),
                source.clone(),
                Value::I64(offset),
                target.clone(),
                Value::I64(0),
                Value::I64(length),
                Value::I64(0),
            ],
        )
    };
    assert_eq!(update(16, 16).unwrap(), []);
    for (offset, length) in [(-4, 16), (17, 16), (0, -1), (0, 33), (i64::MAX, 2)] {
        let e = update(offset, length).unwrap_err();
        assert_eq!(e.status, StatusCode::OutOfRange, "{offset}+{length}: {e}");
        assert!(e.message.contains("outside the buffer of 32 bytes"), "{e}");
    }
}

#[test]
fn buffer_operations_check_their_ranges() {
    let hal = hal();
    let buffer = call(
        &hal,
        "allocator.allocate",
        &[
            Value::Ref(Some(
                call(
                    &hal,
                    "device.allocator",
                    &[Value::Ref(Some(hal.device_ref().clone()))],
                )
                .unwrap()[0]
                    .as_ref()
                    .unwrap()
                    .clone(),
            )),
            Value::I64(0),
            Value::I32(0),
            Value::I32(0),
            Value::I64(16),
        ],
    )
    .unwrap()
    .remove(0);
    let load = |offset: i64, length: i32| {
        call(
            &hal,
            "buffer.load",
            &[buffer.clone(), Value::I64(offset), Value::I32(length)],
        )
    };
    assert_eq!(load(12, 4).unwrap(), [Value::I32(0)]);
    assert_eq!(load(13, 4).unwrap_err().status, StatusCode::OutOfRange);
    assert_eq!(load(-1, 1).unwrap_err().status, StatusCode::OutOfRange);
    assert_eq!(load(0, 3).unwrap_err().status, StatusCode::InvalidArgument);
    let e = call(
        &hal,
        "buffer.assert",
        &[
            buffer.clone(),
            text("tensor"),
            Value::Ref(None),
            Value::I64(17),
            Value::I32(0),
            Value::I32(0),
        ],
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("tensor buffer byte length 16 less than expected minimum 17"),
        "{e}"
    );
    // A view needing more bytes than the buffer holds.
    let e = call(
        &hal,
        "buffer_view.create",
        &[
            buffer.clone(),
            Value::I64(0),
            Value::I64(WHOLE_BUFFER),
            Value::I32(HalElementType::F32.0 as i32),
            Value::I32(1),
            Value::I32(1),
            Value::I64(5),
        ],
    )
    .unwrap_err();
    assert_eq!(e.status, StatusCode::OutOfRange);
    assert!(e.message.contains("needs 20 bytes"), "{e}");
    // Overflowing shapes and subspans.
    let e = call(
        &hal,
        "buffer_view.create",
        &[
            buffer.clone(),
            Value::I64(i64::MAX),
            Value::I64(i64::MAX),
            Value::I32(HalElementType::F32.0 as i32),
            Value::I32(1),
            Value::I32(0),
        ],
    )
    .unwrap_err();
    assert_eq!(e.status, StatusCode::OutOfRange);
    let device = Value::Ref(Some(hal.device_ref().clone()));
    let fill = call(
        &hal,
        "device.queue.fill",
        &[
            device.clone(),
            Value::I64(0),
            Value::Ref(None),
            Value::Ref(None),
            buffer.clone(),
            Value::I64(8),
            Value::I64(12),
            Value::I64(0x7F),
            Value::I32(1),
            Value::I64(0),
        ],
    )
    .unwrap_err();
    assert_eq!(fill.status, StatusCode::OutOfRange);
    assert_eq!(
        call(&hal, "devices.get", &[Value::I32(1)])
            .unwrap_err()
            .status,
        StatusCode::OutOfRange
    );
}

#[test]
fn imports_of_ranges_outside_their_source_are_errors() {
    let hal = hal();
    let device = Value::Ref(Some(hal.device_ref().clone()));
    let allocator = call(&hal, "device.allocator", &[device]).unwrap().remove(0);
    let source = Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(&[7; 16])))));
    let import = |offset: i64, length: i64| {
        call(
            &hal,
            "allocator.import",
            &[
                allocator.clone(),
                // `try`: a mutable source cannot be aliased, so an import in range is null.
                Value::I32(1),
                Value::I64(-1),
                Value::I32(0),
                Value::I32(0),
                source.clone(),
                Value::I64(offset),
                Value::I64(length),
            ],
        )
    };
    assert_eq!(import(4, 8).unwrap(), [Value::Ref(None)]);
    for (offset, length) in [(i64::MIN, 4), (4, i64::MAX), (0, 17), (-1, -1), (17, -1)] {
        let e = import(offset, length).unwrap_err();
        assert_eq!(
            e.status,
            StatusCode::InvalidArgument,
            "{offset}+{length}: {e}"
        );
        assert!(e.message.contains("out of bounds"), "{e}");
    }
}

#[test]
fn allocations_are_charged_to_the_memory_budget() {
    let budget = MemoryBudget::new(1024);
    let hal = HalModule::new(Arc::new(
        LocalDevice::task().with_memory_budget(Some(budget.clone())),
    ));
    let device = Value::Ref(Some(hal.device_ref().clone()));
    let alloca = |size: i64| {
        call(
            &hal,
            "device.queue.alloca",
            &[
                device.clone(),
                Value::I64(0),
                Value::Ref(None),
                Value::Ref(None),
                Value::I64(0),
                Value::I32(0),
                Value::I32(0),
                Value::I64(size),
                Value::I64(0),
            ],
        )
    };
    let kept = alloca(1000).unwrap();
    assert_eq!(budget.used(), 1000);
    assert_eq!(
        alloca(100).unwrap_err().status,
        StatusCode::ResourceExhausted
    );
    assert_eq!(alloca(-1).unwrap_err().status, StatusCode::InvalidArgument);
    drop(kept);
    assert_eq!(budget.used(), 0);
}

#[test]
fn queries_answer_like_the_local_sync_device() {
    let hal = hal();
    let device = Value::Ref(Some(hal.device_ref().clone()));
    let query = |category: &str, key: &str| {
        call(
            &hal,
            "device.query.i64",
            &[device.clone(), text(category), text(key)],
        )
        .unwrap()
    };
    assert_eq!(
        query("hal.device.id", "local*"),
        [Value::I32(1), Value::I64(1)]
    );
    assert_eq!(
        query("hal.device.id", "cuda*"),
        [Value::I32(1), Value::I64(0)]
    );
    assert_eq!(
        query("hal.executable.format", "vmvx-bytecode-fb"),
        [Value::I32(1), Value::I64(1)]
    );
    assert_eq!(
        query("hal.executable.format", "embedded-elf-x86_64"),
        [
            Value::I32(1),
            Value::I64(i64::from(cfg!(target_arch = "x86_64")))
        ]
    );
    assert_eq!(
        query("hal.executable.format", "cuda-nvptx-fb"),
        [Value::I32(1), Value::I64(0)]
    );
    assert_eq!(query("no.such", "key"), [Value::I32(0), Value::I64(0)]);
}

#[test]
fn executables_refuse_other_formats_and_garbage() {
    let hal = hal();
    let device = Value::Ref(Some(hal.device_ref().clone()));
    let create = |format: &str, data: &[u8]| {
        call(
            &hal,
            "executable.create",
            &[
                device.clone(),
                Value::I64(0),
                text(format),
                Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(data))))),
                Value::Ref(None),
            ],
        )
    };
    let e = create("cuda-nvptx-fb", b"\x7fELF").unwrap_err();
    assert_eq!(e.status, StatusCode::Unimplemented);
    assert!(e.message.contains("cuda-nvptx-fb"), "{e}");
    for garbage in [&b""[..], b"PK\x03\x04garbage", &[0xFF; 64]] {
        assert!(create("vmvx-bytecode-fb", garbage).is_err());
    }
    #[cfg(target_arch = "x86_64")]
    for garbage in [&b""[..], b"\x7fELF", &[0xFF; 64]] {
        let e = create("embedded-elf-x86_64", garbage).unwrap_err();
        assert_eq!(e.status, StatusCode::InvalidArgument, "{e}");
        assert!(e.message.contains("embedded ELF"), "{e}");
    }
}

#[test]
fn command_buffers_check_binding_slots() {
    let hal = hal();
    let device = Value::Ref(Some(hal.device_ref().clone()));
    let cb = call(
        &hal,
        "command_buffer.create",
        &[
            device.clone(),
            Value::I32(0),
            Value::I32(0),
            Value::I64(0),
            Value::I32(1),
        ],
    )
    .unwrap()
    .remove(0);
    let fill = |slot: i32| {
        call(
            &hal,
            "command_buffer.fill_buffer",
            &[
                cb.clone(),
                Value::Ref(None),
                Value::I64(0),
                Value::I64(4),
                Value::I32(slot),
                Value::I64(1),
                Value::I32(1),
                Value::I64(0),
            ],
        )
    };
    fill(0).unwrap();
    assert_eq!(fill(1).unwrap_err().status, StatusCode::InvalidArgument);
    assert_eq!(fill(-1).unwrap_err().status, StatusCode::InvalidArgument);
    call(&hal, "command_buffer.finalize", std::slice::from_ref(&cb)).unwrap();
    assert_eq!(fill(0).unwrap_err().status, StatusCode::FailedPrecondition);
    // Executed without a table, the slot is missing.
    let execute = call(
        &hal,
        "device.queue.execute",
        &[
            device.clone(),
            Value::I64(0),
            Value::Ref(None),
            Value::Ref(None),
            cb.clone(),
            Value::I64(0),
        ],
    )
    .unwrap_err();
    assert!(execute.message.contains("binding slot 0"), "{execute}");
    // With a table: slot 0 is the whole of an 8-byte buffer.
    let buffer = HalBuffer::allocate(8, None).unwrap();
    call(
        &hal,
        "device.queue.execute.indirect",
        &[
            device,
            Value::I64(0),
            Value::Ref(None),
            Value::Ref(None),
            cb,
            Value::I64(0),
            Value::I32(1),
            obj(buffer.clone()),
            Value::I64(4),
            Value::I64(4),
        ],
    )
    .unwrap();
    assert_eq!(buffer.to_vec(), [0, 0, 0, 0, 1, 1, 1, 1]);
}

fn fixture(name: &str) -> IreeModule {
    IreeModule::load(format!(
        "{}/tests/fixtures/vmfb/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn tensor_arg(values: &[f32], shape: &[i64]) -> Any {
    Any::from(Tensor::from_slice(values, shape).unwrap())
}

#[test]
fn vmvx_modules_take_and_return_pactum_tensors() {
    let module = fixture("vmvx_tensors.vmfb");
    let a = tensor_arg(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = tensor_arg(&[0.5, -1.0, 0.001, 100.0, -5.0, 0.0], &[2, 3]);
    let out = module.call("add_mat", &[a.view(), b.view()]).unwrap();
    let out: Tensor = out.view().get().unwrap();
    assert_eq!(out.shape(), [2, 3]);
    assert_eq!(out.dtype(), DataType::F32);
    assert_eq!(
        out.to_vec::<f32>().unwrap(),
        [1.5, 1.0, 3.001, 104.0, 0.0, 6.0]
    );

    // The wrong shape: refused by the signature check, or by the module's own check when
    // called flat.
    let c = tensor_arg(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let e = module.call("add_mat", &[c.view(), b.view()]).unwrap_err();
    assert!(e.message().contains("dimension 1 is 2, expected 3"), "{e}");
    let flat = module.flat_function("add_mat").unwrap();
    let e = flat.call(&[c.view(), b.view()]).unwrap_err();
    assert!(
        e.message().contains(
            "input0 shape dimension 1 mismatch; expected 3 but have 2; expected shape `2x3`, \
             actual shape `2x2`"
        ),
        "{e}"
    );

    // Integers and booleans.
    let ints = Any::from(Tensor::from_slice(&[-7i32, 0, i32::MAX], &[3]).unwrap());
    let longs = Any::from(Tensor::from_slice(&[-1i64, 1 << 32, 5], &[3]).unwrap());
    let results = module
        .call("int_ops", &[ints.view(), longs.view()])
        .unwrap();
    let results: pactum::Array = results.view().get().unwrap();
    let get = |i: usize| -> Tensor { results.get(i).unwrap().get().unwrap() };
    assert_eq!(get(0).to_vec::<i32>().unwrap(), [-14, 0, -2]);
    assert_eq!(get(1).to_vec::<i64>().unwrap(), [-8, 1 << 32, 2147483652]);
    assert_eq!(get(2).to_vec::<i8>().unwrap(), [-7, 0, -1]);
    assert_eq!(get(3).dtype(), DataType::BOOL);
    assert_eq!(
        get(3)
            .view_as(DataType::U8)
            .unwrap()
            .to_vec::<u8>()
            .unwrap(),
        [1, 1, 0]
    );

    // Dynamic shapes and scalars.
    let rows = tensor_arg(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &[2, 4]);
    let results = module
        .call("scale_rows", &[rows.view(), AnyView::from(-0.5f64)])
        .unwrap();
    let results: pactum::Array = results.view().get().unwrap();
    let scaled: Tensor = results.get(0).unwrap().get().unwrap();
    assert_eq!(
        scaled.to_vec::<f32>().unwrap(),
        [-0.5, -1.0, -1.5, -2.0, -2.5, -3.0, -3.5, -4.0]
    );
    assert_eq!(results.get(1).unwrap().get::<i64>().unwrap(), 2);
}

#[test]
fn structured_vmvx_exports_return_lists_of_tensors() {
    let module = fixture("vmvx_tensors.vmfb");
    let x = tensor_arg(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let out = module.call("split_rows", &[x.view()]).unwrap();
    let rows: Vec<Vec<f32>> = match out.view().get::<pactum::Array>() {
        Ok(array) => (0..array.len())
            .map(|i| {
                let row: Tensor = array.get(i).unwrap().get().unwrap();
                row.to_vec::<f32>().unwrap()
            })
            .collect(),
        Err(_) => {
            let list: pactum::List = out.view().get().unwrap();
            list.to_vec()
                .iter()
                .map(|item| {
                    let row: Tensor = item.view().get().unwrap();
                    row.to_vec::<f32>().unwrap()
                })
                .collect()
        }
    };
    assert_eq!(rows, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
}

/// The vmvx executable embedded in `vmvx_tensors.vmfb` (the inner ZIP after the outer entry
/// named `*_vmvx_bytecode_fb.fb`).
fn embedded_executable() -> Vec<u8> {
    let bytes = std::fs::read(format!(
        "{}/tests/fixtures/vmfb/vmvx_tensors.vmfb",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let name = b"vmvx_tensors_linked_vmvx_vmvx_bytecode_fb.fb";
    let entry = bytes.windows(name.len()).position(|w| w == name).unwrap();
    let inner = bytes[entry..]
        .windows(4)
        .position(|w| w == b"PK\x03\x04")
        .unwrap();
    bytes[entry + inner..].to_vec()
}

#[test]
fn dispatches_check_ordinals_counts_and_bindings() {
    use pactum_iree::hal::{Binding, HalExecutable, LocalExecutable, Workers};
    let executable = LocalExecutable::load(
        "vmvx-bytecode-fb",
        embedded_executable(),
        &[],
        Limits::default(),
    )
    .unwrap();
    let workers = Workers::CallerThread;
    let ordinal = executable
        .lookup("add_one_dispatch_0_elementwise_D_f32")
        .unwrap() as i64;
    assert!(executable.lookup("no_such_dispatch").is_none());
    let buffer = HalBuffer::allocate(16, None).unwrap();
    let binding = |offset: i64| Binding {
        buffer: buffer.clone(),
        offset,
        length: WHOLE_BUFFER,
    };
    let e = executable
        .dispatch(
            executable.export_count() as i64,
            [1, 1, 1],
            &[],
            &[binding(0)],
            &workers,
        )
        .unwrap_err();
    assert_eq!(e.status, StatusCode::InvalidArgument);
    let e = executable
        .dispatch(
            ordinal,
            [u32::MAX, u32::MAX, 1],
            &[],
            &[binding(0)],
            &workers,
        )
        .unwrap_err();
    assert_eq!(e.status, StatusCode::ResourceExhausted);
    // Counts whose product overflows 64 bits are past the limit too (not a wrap to zero
    // workgroups, which would skip the dispatch).
    let e = executable
        .dispatch(
            ordinal,
            [u32::MAX, u32::MAX, u32::MAX],
            &[],
            &[binding(0)],
            &workers,
        )
        .unwrap_err();
    assert_eq!(e.status, StatusCode::ResourceExhausted, "{e}");
    // Missing bindings and constants trap in the VM with an error, never a panic.
    assert!(
        executable
            .dispatch(ordinal, [1, 1, 1], &[], &[], &workers)
            .is_err()
    );
    assert!(
        executable
            .dispatch(ordinal, [1, 1, 1], &[], &[binding(17)], &workers)
            .is_err()
    );
    // Zero workgroups run nothing.
    executable
        .dispatch(ordinal, [0, 1, 1], &[], &[], &workers)
        .unwrap();
}

/// `add_one`'s dispatch of the `vmvx_tensors` fixture over `n` elements (constants: `n` as
/// two i32 halves; bindings: input, output; 64 elements a workgroup, as the module's own
/// call computes its count), its output binding `out_length` bytes long: the output
/// buffer's bytes, or the dispatch's error.
fn add_one_dispatch(
    workers: &pactum_iree::hal::Workers,
    input: &[f32],
    out_length: i64,
) -> Result<Vec<u8>, pactum_iree::status::StatusError> {
    use pactum_iree::hal::{Binding, HalExecutable, LocalExecutable};
    let executable = LocalExecutable::load(
        "vmvx-bytecode-fb",
        embedded_executable(),
        &[],
        Limits::default(),
    )
    .unwrap();
    let ordinal = executable
        .lookup("add_one_dispatch_0_elementwise_D_f32")
        .unwrap() as i64;
    let n = input.len() as u64;
    let bytes: Vec<u8> = input.iter().flat_map(|x| x.to_le_bytes()).collect();
    let source = HalBuffer::from_bytes(&bytes, None).unwrap();
    let target = HalBuffer::allocate(bytes.len() as i64, None).unwrap();
    let bindings = [
        Binding {
            buffer: source,
            offset: 0,
            length: WHOLE_BUFFER,
        },
        Binding {
            buffer: target.clone(),
            offset: 0,
            length: out_length,
        },
    ];
    let count = n.div_ceil(64) as u32;
    executable.dispatch(
        ordinal,
        [count, 1, 1],
        &[n as u32 as i32, (n >> 32) as i32],
        &bindings,
        workers,
    )?;
    Ok(target.to_vec())
}

/// A vmvx dispatch of many workgroups gives the same bytes on pools of several threads as
/// on the caller's thread, every call, and computes what the program says (`x + 1`).
#[test]
fn vmvx_workgroups_on_a_pool_compute_what_the_caller_thread_computes() {
    use pactum_iree::hal::Workers;
    let input: Vec<f32> = (0..64 * 40 + 17)
        .map(|k| ((k * 7919 % 1013) as f32 - 500.0) / 3.0)
        .collect();
    let expected: Vec<u8> = input.iter().flat_map(|x| (x + 1.0).to_le_bytes()).collect();
    let whole = (input.len() * 4) as i64;
    let on_caller = add_one_dispatch(&Workers::CallerThread, &input, whole).unwrap();
    assert_eq!(on_caller, expected);
    for workers in [
        Workers::shared(),
        Workers::with_threads(2).unwrap(),
        Workers::with_threads(5).unwrap(),
    ] {
        for _ in 0..3 {
            let on_pool = add_one_dispatch(&workers, &input, whole).unwrap();
            assert!(
                on_pool == on_caller,
                "{workers:?}: differs from the caller's thread"
            );
        }
    }
}

/// When workgroups of a vmvx dispatch trap, a pool reports the error of the first failing
/// workgroup in grid order, the same error the caller's thread stops at.
#[test]
fn a_trapping_vmvx_workgroup_reports_the_same_error_on_a_pool() {
    use pactum_iree::hal::Workers;
    let input = vec![0.5f32; 64 * 32];
    // The output binding ends inside workgroup 9: it and every workgroup after it write
    // outside it, each at its own offset.
    let short = (64 * 9 + 10) * 4;
    let on_caller = add_one_dispatch(&Workers::CallerThread, &input, short).unwrap_err();
    assert_eq!(on_caller.status, StatusCode::OutOfRange, "{on_caller}");
    for workers in [
        Workers::with_threads(2).unwrap(),
        Workers::with_threads(4).unwrap(),
    ] {
        for _ in 0..5 {
            let on_pool = add_one_dispatch(&workers, &input, short).unwrap_err();
            assert_eq!(on_pool.status, on_caller.status, "{workers:?}");
            assert_eq!(on_pool.message, on_caller.message, "{workers:?}");
        }
    }
}

#[test]
fn vm_views_share_the_hal_buffers_bytes() {
    use pactum_iree::host_memory::HostMemory;
    let buffer = HalBuffer::from_bytes(&[0, 1, 2, 3, 4, 5, 6, 7], None).unwrap();
    let view = vm_view(&buffer, 2, 4).unwrap();
    assert!(view.is_mutable());
    assert_eq!(view.to_vec(), [2, 3, 4, 5]);
    view.write(0, &[9]).unwrap();
    assert_eq!(buffer.to_vec(), [0, 1, 9, 3, 4, 5, 6, 7]);
    assert!(view.write(4, &[1]).is_err());
    assert!(vm_view(&buffer, 6, 4).is_err());
    // Overlapping copies between two views of the same cells behave like memmove.
    let cells = Arc::new(HostMemory::from_bytes(&[0, 1, 2, 3, 4, 5, 6, 7]).unwrap());
    let low = VmBuffer::shared(cells.clone(), 0..6).unwrap();
    let high = VmBuffer::shared(cells.clone(), 2..8).unwrap();
    VmBuffer::copy(&low, 0, &high, 0, 6).unwrap();
    assert_eq!(high.to_vec(), [0, 1, 2, 3, 4, 5]);
    let cells = Arc::new(HostMemory::from_bytes(&[0, 1, 2, 3, 4, 5, 6, 7]).unwrap());
    let low = VmBuffer::shared(cells.clone(), 0..6).unwrap();
    let high = VmBuffer::shared(cells.clone(), 2..8).unwrap();
    VmBuffer::copy(&high, 0, &low, 0, 6).unwrap();
    assert_eq!(low.to_vec(), [2, 3, 4, 5, 6, 7]);
    assert!(VmBuffer::shared(cells, 4..9).is_none());
}

// The device layer, without a VM context.

mod device {
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use pactum_iree::hal::{
        Binding, BufferParams, BufferRef, Command, HalAllocator, HalBuffer, HalCommandBuffer,
        HalDevice, HalExecutable, HalFence, HalFile, HalModule, HalSemaphore, LocalDevice,
        Submission, Timeout, WHOLE_BUFFER, executables_in_vmfb,
    };
    use pactum_iree::status::{StatusCode, StatusError};
    use pactum_iree::vm::{Context, Limits, MemoryBudget, NativeModule, Value};
    use pactum_iree::vmfb::VmfbFile;

    fn fixture(name: &str) -> VmfbFile {
        VmfbFile::open(format!(
            "{}/tests/fixtures/vmfb/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    fn f32s(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn both_devices() -> [Arc<dyn HalDevice>; 2] {
        [Arc::new(LocalDevice::task()), Arc::new(LocalDevice::sync())]
    }

    /// Every function of the `hal` module and the calling convention `iree-compile` 3.13
    /// imports it with, in `call` order.
    const CONVENTIONS: &[(&str, &str)] = &[
        ("ex.file.from_memory", "0rIirIIi_r"),
        ("allocator.allocate", "0rIiiI_r"),
        ("allocator.import", "0riIiirII_r"),
        ("buffer.assert", "0rrrIii_v"),
        ("buffer.load", "0rIi_i"),
        ("buffer_view.create", "0rIIiiCID_r"),
        ("buffer_view.assert", "0rriiCID_v"),
        ("buffer_view.buffer", "0r_r"),
        ("buffer_view.dim", "0ri_I"),
        ("command_buffer.create", "0riiIi_r"),
        ("command_buffer.finalize", "0r_v"),
        ("command_buffer.execution_barrier", "0riiI_v"),
        ("command_buffer.fill_buffer", "0rrIIiIiI_v"),
        ("command_buffer.copy_buffer", "0riirIrIII_v"),
        ("command_buffer.dispatch", "0rrIiiiICiDCiirIID_v"),
        ("device.allocator", "0r_r"),
        ("device.query.i64", "0rrr_iI"),
        ("device.queue.alloca", "0rIrrIiiII_r"),
        ("device.queue.dealloca", "0rIrrrI_v"),
        ("device.queue.fill", "0rIrrrIIIiI_v"),
        ("device.queue.copy", "0rIrrrIrIII_v"),
        ("device.queue.read", "0rIrrrIrIII_v"),
        ("device.queue.execute", "0rIrrrI_v"),
        ("device.queue.execute.indirect", "0rIrrrICrIID_v"),
        ("devices.count", "0v_i"),
        ("devices.get", "0i_r"),
        ("executable.create", "0rIrrr_r"),
        ("executable.lookup.function", "0rr_I"),
        ("fence.create", "0rI_r"),
        ("fence.join", "0ICrD_r"),
        ("fence.await", "0iICrD_i"),
        ("buffer.length", "0r_I"),
        ("buffer.subspan", "0rII_r"),
        ("buffer.store", "0irIi_v"),
        ("buffer_view.rank", "0r_i"),
        ("buffer_view.element_type", "0r_i"),
        ("buffer_view.encoding_type", "0r_i"),
        ("command_buffer.begin_debug_group", "0rr_v"),
        ("command_buffer.end_debug_group", "0r_v"),
        ("device.queue.flush", "0rI_v"),
        ("fence.signal", "0r_v"),
        ("fence.query", "0r_i"),
        ("fence.fail", "0ri_v"),
        ("allocator.select", "0iiICrID_rI"),
        ("buffer.allocation.preserve", "0r_v"),
        ("buffer.allocation.discard", "0r_i"),
        ("buffer.allocation.is_terminal", "0r_i"),
        ("buffer_view.trace", "0rCrD_v"),
        ("channel.create", "0rIIrrii_r"),
        ("channel.split", "0riiI_r"),
        ("channel.rank_and_count", "0r_ii"),
        ("command_buffer.advise_buffer", "0rrIIIi_v"),
        ("command_buffer.flush_buffer", "0rirII_v"),
        ("command_buffer.invalidate_buffer", "0rirII_v"),
        ("command_buffer.update_buffer", "0rrIrIIiI_v"),
        ("command_buffer.collective", "0rriiiirrIIIII_v"),
        ("command_buffer.dispatch.indirect", "0rrIirIICiDCiirIID_v"),
        ("device.queue.barrier", "0rIrrI_v"),
        ("device.queue.update", "0rIrrrIrIII_v"),
        ("device.queue.write", "0rIrrrIrIII_v"),
    ];

    /// The functions IREE's own `hal` module exports (the pinned runtime's, asked through
    /// `iree.runtime` with the workspace's `.venv` python) are exactly this module's. Their
    /// calling conventions are checked where programs import them: iree-run-module refuses
    /// an import whose convention differs, and the fixtures call each one of the runs.
    #[test]
    fn the_hal_module_exports_what_iree_exports() {
        let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
        let listing = "import iree.runtime as rt\n\
            hal = rt.create_hal_module(rt.VmInstance(), rt.get_device('local-sync'))\n\
            print('\\n'.join(hal.function_names))";
        let output = std::process::Command::new(&python)
            .args(["-c", listing])
            .output();
        let output = match output {
            Ok(output) if output.status.success() => output,
            failed => {
                let why = format!(
                    "{} cannot list IREE's hal module: {failed:?}",
                    python.display()
                );
                if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
                    eprintln!("SKIPPED (PACTUM_SKIP_PEER=1): {why}");
                    return;
                }
                panic!("{why}; set PACTUM_SKIP_PEER=1 to skip this comparison");
            }
        };
        let mut theirs: Vec<String> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        theirs.sort();
        let hal = HalModule::new(Arc::new(LocalDevice::sync()));
        let mut ours: Vec<String> = hal.functions().iter().map(|f| f.name.to_string()).collect();
        ours.sort();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn the_hal_module_keeps_every_convention_and_its_types_imply_them() {
        let hal = HalModule::new(Arc::new(LocalDevice::sync()));
        let functions: Vec<(&str, &str)> = hal
            .functions()
            .iter()
            .map(|f| (&*f.name, &*f.cconv))
            .collect();
        assert_eq!(functions, CONVENTIONS);
        assert!(hal.ref_types().contains(&"hal.buffer_view".to_owned()));
        assert_eq!(hal.check_signatures(), Ok(()));
        let mut context = Context::new(Limits::default());
        context.register_native(Arc::new(hal)).unwrap();
    }

    #[test]
    fn allocators_charge_budgets_and_refuse_bad_sizes() {
        let budget = MemoryBudget::new(100);
        let device = LocalDevice::sync().with_memory_budget(Some(budget.clone()));
        let allocator = device.allocator();
        let params = BufferParams::default();
        let buffer = allocator.allocate(params, 64).unwrap();
        assert_eq!(buffer.len(), 64);
        assert_eq!(budget.used(), 64);
        let e = allocator.allocate(params, 64).unwrap_err();
        assert_eq!(e.status, StatusCode::ResourceExhausted);
        assert!(e.message.contains("memory budget of 100 bytes"), "{e}");
        let e = allocator.allocate(params, -1).unwrap_err();
        assert_eq!(e.status, StatusCode::InvalidArgument);
        let copy = allocator.import_copy(params, &[1, 2, 3]).unwrap();
        assert_eq!(copy.to_vec(), [1, 2, 3]);
        assert_eq!(budget.used(), 67);
        drop((buffer, copy));
        assert_eq!(budget.used(), 0);

        // A queue allocation signals its fence.
        let done = HalFence::pending();
        let empty = HalFence::empty();
        let buffer = device
            .queue_alloca(Submission::new(&empty, &done), params, 16)
            .unwrap();
        assert_eq!(buffer.len(), 16);
        assert_eq!(done.is_reached(), Ok(true));
    }

    #[test]
    fn semaphores_count_up_time_out_and_fail() {
        let semaphore = HalSemaphore::new(0);
        assert_eq!(semaphore.value(), Ok(0));
        semaphore.wait(0, Timeout::IMMEDIATE).unwrap();
        let start = Instant::now();
        let e = semaphore
            .wait(1, Timeout::After(Duration::from_millis(30)))
            .unwrap_err();
        assert_eq!(e.status, StatusCode::DeadlineExceeded);
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!(e.message.contains("did not reach 1"), "{e}");
        assert_eq!(
            semaphore.wait(1, Timeout::IMMEDIATE).unwrap_err().status,
            StatusCode::DeadlineExceeded
        );
        semaphore.signal(2).unwrap();
        semaphore.wait(1, Timeout::IMMEDIATE).unwrap();
        // Values only grow.
        let e = semaphore.signal(2).unwrap_err();
        assert_eq!(e.status, StatusCode::OutOfRange);

        // A waiter blocked without a time limit wakes when another thread signals.
        let waiter = {
            let semaphore = semaphore.clone();
            std::thread::spawn(move || semaphore.wait(5, Timeout::Infinite))
        };
        std::thread::sleep(Duration::from_millis(20));
        semaphore.signal(5).unwrap();
        waiter.join().unwrap().unwrap();

        // A failure wakes waiters and sticks: waits, queries and signals return it.
        let waiter = {
            let semaphore = semaphore.clone();
            std::thread::spawn(move || semaphore.wait(9, Timeout::Infinite))
        };
        std::thread::sleep(Duration::from_millis(20));
        semaphore.fail(StatusError::new(StatusCode::Aborted, "device lost"));
        let e = waiter.join().unwrap().unwrap_err();
        assert_eq!(
            (e.status, e.message.as_str()),
            (StatusCode::Aborted, "device lost")
        );
        assert_eq!(semaphore.value().unwrap_err().status, StatusCode::Aborted);
        assert_eq!(semaphore.signal(6).unwrap_err().status, StatusCode::Aborted);
        semaphore.fail(StatusError::new(StatusCode::Internal, "later"));
        assert_eq!(semaphore.value().unwrap_err().message, "device lost");
    }

    #[test]
    fn a_wait_over_several_fences_is_bounded_once_and_reached_points_never_block() {
        let reached = HalSemaphore::new(4);
        let pending = HalSemaphore::new(0);
        let fences = [
            HalFence::at(reached.clone(), 4),
            HalFence::at(pending.clone(), 1),
            HalFence::at(pending.clone(), 2),
        ];
        // Points already reached pass at once, even with no time allowed.
        HalFence::wait_all(&fences[..1], Timeout::IMMEDIATE).unwrap();
        // The first point not reached starts the clock; the limit bounds the whole wait.
        let start = Instant::now();
        let e = HalFence::wait_all(&fences, Timeout::After(Duration::from_millis(30))).unwrap_err();
        assert_eq!(e.status, StatusCode::DeadlineExceeded);
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!(e.message.contains("did not reach 1"), "{e}");
        // Signalled by another thread while the wait blocks: reached within the limit.
        let signaller = {
            let pending = pending.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                pending.signal(2)
            })
        };
        HalFence::wait_all(&fences, Timeout::After(Duration::from_secs(60))).unwrap();
        signaller.join().unwrap().unwrap();
    }

    #[test]
    fn fences_join_points_and_queue_operations_pass_failures_on() {
        let s = HalSemaphore::new(0);
        let t = HalSemaphore::new(0);
        let joined = HalFence::join([
            &HalFence::at(s.clone(), 1),
            &HalFence::at(t.clone(), 2),
            &HalFence::at(s.clone(), 3),
        ]);
        let points: Vec<u64> = joined.points().map(|(_, v)| v).collect();
        assert_eq!(
            points,
            [3, 2],
            "one point per semaphore, at its highest value"
        );
        assert_eq!(joined.is_reached(), Ok(false));
        t.signal(2).unwrap();
        assert_eq!(
            joined
                .wait(Timeout::After(Duration::from_millis(10)))
                .unwrap_err()
                .status,
            StatusCode::DeadlineExceeded
        );
        s.signal(3).unwrap();
        joined.wait(Timeout::IMMEDIATE).unwrap();
        assert!(HalFence::empty().is_reached().unwrap());

        for device in both_devices() {
            let target = HalBuffer::allocate(8, None).unwrap();
            let empty = HalFence::empty();
            // An operation that fails fails its signal fence with its error ...
            let first = HalFence::pending();
            let e = device
                .queue_fill(Submission::new(&empty, &first), &target, 4, 8, 1, 1)
                .unwrap_err();
            assert_eq!(e.status, StatusCode::OutOfRange);
            assert_eq!(first.is_reached().unwrap_err(), e);
            // ... and an operation waiting on a failed fence fails with that error, without
            // running, and fails its own signal fence: failures flow down the chain.
            let second = HalFence::pending();
            let e2 = device
                .queue_fill(Submission::new(&first, &second), &target, 0, 8, 7, 1)
                .unwrap_err();
            assert_eq!(e2, e);
            assert_eq!(target.to_vec(), [0; 8]);
            assert_eq!(second.wait(Timeout::Infinite).unwrap_err(), e);

            // An operation waits for its wait fence, signalled here by another thread.
            let go = HalFence::pending();
            let done = HalFence::pending();
            let signaller = {
                let go = go.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    go.signal().unwrap();
                })
            };
            device
                .queue_fill(Submission::new(&go, &done), &target, 0, 8, 0x0102, 2)
                .unwrap();
            signaller.join().unwrap();
            assert_eq!(done.is_reached(), Ok(true));
            assert_eq!(target.to_vec(), [2, 1, 2, 1, 2, 1, 2, 1]);

            // A barrier only orders fences.
            let after = HalFence::pending();
            device
                .queue_barrier(Submission::new(&done, &after))
                .unwrap();
            assert_eq!(after.is_reached(), Ok(true));
        }
    }

    #[test]
    fn queues_copy_and_read_files_and_replay_command_buffers_with_tables() {
        for device in both_devices() {
            let empty = HalFence::empty();
            let submit = Submission::new(&empty, &empty);
            let source = HalBuffer::from_bytes(&[1, 2, 3, 4, 5, 6, 7, 8], None).unwrap();
            let target = HalBuffer::allocate(8, None).unwrap();
            device
                .queue_copy(submit, &source, 2, &target, 0, 4)
                .unwrap();
            assert_eq!(target.to_vec(), [3, 4, 5, 6, 0, 0, 0, 0]);
            let file = HalFile::from_memory(Arc::new(vec![9u8, 8, 7, 6, 5]), 1, 4).unwrap();
            device.queue_read(submit, &file, 1, &target, 6, 2).unwrap();
            assert_eq!(target.to_vec(), [3, 4, 5, 6, 0, 0, 7, 6]);
            let e = device
                .queue_read(submit, &file, 3, &target, 0, 2)
                .unwrap_err();
            assert_eq!(e.status, StatusCode::OutOfRange);
            assert!(e.message.contains("outside the file of 4 bytes"), "{e}");

            // A reusable command buffer: slot 0 filled, then copied into slot 1.
            let commands = device.create_command_buffer(2).unwrap();
            commands
                .record(Command::Fill {
                    target: BufferRef::Slot(0),
                    offset: 0,
                    length: 4,
                    pattern: 0xAB,
                    pattern_length: 1,
                })
                .unwrap();
            commands
                .record(Command::Copy {
                    source: BufferRef::Slot(0),
                    source_offset: 0,
                    target: BufferRef::Slot(1),
                    target_offset: 2,
                    length: 4,
                })
                .unwrap();
            // Every slot is checked against the capacity, the largest included.
            for slot in [2, u32::MAX] {
                let e = commands
                    .record(Command::Fill {
                        target: BufferRef::Slot(slot),
                        offset: 0,
                        length: 4,
                        pattern: 0,
                        pattern_length: 1,
                    })
                    .unwrap_err();
                assert_eq!(e.status, StatusCode::InvalidArgument, "{e}");
            }
            commands.finalize().unwrap();
            let (a, b) = (
                HalBuffer::allocate(4, None).unwrap(),
                HalBuffer::allocate(8, None).unwrap(),
            );
            let table = [Binding::whole(a.clone()), Binding::whole(b.clone())];
            device
                .queue_execute(submit, Some(&commands), &table)
                .unwrap();
            assert_eq!(a.to_vec(), [0xAB; 4]);
            assert_eq!(b.to_vec(), [0, 0, 0xAB, 0xAB, 0xAB, 0xAB, 0, 0]);
            // The same commands against other buffers.
            let c = HalBuffer::allocate(6, None).unwrap();
            let table = [Binding::whole(a.clone()), Binding::whole(c.clone())];
            device
                .queue_execute(submit, Some(&commands), &table)
                .unwrap();
            assert_eq!(c.to_vec(), [0, 0, 0xAB, 0xAB, 0xAB, 0xAB]);
            let e = device
                .queue_execute(submit, Some(&commands), &table[..1])
                .unwrap_err();
            assert!(e.message.contains("binding slot 1"), "{e}");
        }
    }

    /// Runs `executable`'s add_vec dispatch on `device` without a VM context, once with the
    /// buffers bound directly and once through a binding table.
    fn add_vectors(device: &Arc<dyn HalDevice>, executable: &Arc<dyn HalExecutable>) {
        let ordinal = (0..executable.export_count())
            .find(|&k| {
                executable
                    .export_name(k)
                    .is_some_and(|n| n.starts_with("add_vec_dispatch_0"))
            })
            .unwrap();
        let allocator = device.allocator();
        let params = BufferParams::default();
        let a = allocator
            .import_copy(params, &f32s(&[1.0, 2.0, 3.0, 4.0]))
            .unwrap();
        let b = allocator
            .import_copy(params, &f32s(&[10.0, 20.0, 30.0, 40.0]))
            .unwrap();
        let sum = allocator.allocate(params, 16).unwrap();
        let direct = device.create_command_buffer(0).unwrap();
        let bindings = [a.clone(), b.clone(), sum.clone()].map(Binding::whole);
        direct
            .dispatch(executable, ordinal, [1, 1, 1], &[], &bindings)
            .unwrap();
        direct.finalize().unwrap();
        let done = HalFence::pending();
        device
            .queue_execute(
                Submission::new(&HalFence::empty(), &done),
                Some(&direct),
                &[],
            )
            .unwrap();
        done.wait(Timeout::After(Duration::from_secs(10))).unwrap();
        assert_eq!(sum.to_vec(), f32s(&[11.0, 22.0, 33.0, 44.0]));

        // Through a binding table: the inputs as two halves of one buffer.
        let inputs = allocator
            .import_copy(params, &f32s(&[0.5, 1.5, 2.5, 3.5, 1.0, 1.0, 1.0, 1.0]))
            .unwrap();
        let indirect = device.create_command_buffer(2).unwrap();
        indirect
            .record(Command::Dispatch {
                executable: executable.clone(),
                ordinal: ordinal as i64,
                count: [1, 1, 1],
                constants: vec![],
                bindings: vec![
                    (BufferRef::Slot(0), 0, 16),
                    (BufferRef::Slot(0), 16, 16),
                    (BufferRef::Slot(1), 0, 16),
                ],
            })
            .unwrap();
        indirect.finalize().unwrap();
        let table = [Binding::whole(inputs), Binding::whole(sum.clone())];
        let started = HalFence::pending();
        let done = HalFence::pending();
        started.signal().unwrap();
        device
            .queue_execute(Submission::new(&started, &done), Some(&indirect), &table)
            .unwrap();
        done.wait(Timeout::Infinite).unwrap();
        assert_eq!(sum.to_vec(), f32s(&[1.5, 2.5, 3.5, 4.5]));

        // A table of more slots than a replay keeps on the stack (8): the same dispatch with
        // its buffers in slots 8 and 9, the slots before them bound to a scratch buffer.
        let inputs = allocator
            .import_copy(params, &f32s(&[1.0, 2.0, 3.0, 4.0, 0.5, 0.5, 0.5, 0.5]))
            .unwrap();
        let wide = device.create_command_buffer(10).unwrap();
        wide.record(Command::Dispatch {
            executable: executable.clone(),
            ordinal: ordinal as i64,
            count: [1, 1, 1],
            constants: vec![],
            bindings: vec![
                (BufferRef::Slot(8), 0, 16),
                (BufferRef::Slot(8), 16, 16),
                (BufferRef::Slot(9), 0, 16),
            ],
        })
        .unwrap();
        wide.finalize().unwrap();
        let scratch = allocator.allocate(params, 16).unwrap();
        let mut table: Vec<Binding> = (0..8).map(|_| Binding::whole(scratch.clone())).collect();
        table.push(Binding::whole(inputs));
        table.push(Binding::whole(sum.clone()));
        let done = HalFence::pending();
        device
            .queue_execute(
                Submission::new(&HalFence::empty(), &done),
                Some(&wide),
                &table,
            )
            .unwrap();
        done.wait(Timeout::Infinite).unwrap();
        assert_eq!(sum.to_vec(), f32s(&[1.5, 2.5, 3.5, 4.5]));

        // An indirect dispatch reads its workgroup count when it runs: here the count an
        // update earlier in the same command buffer wrote into a table slot.
        let counts = allocator.allocate(params, 16).unwrap();
        let inputs = allocator
            .import_copy(params, &f32s(&[1.0, 2.0, 3.0, 4.0, 0.25, 0.25, 0.25, 0.25]))
            .unwrap();
        let commands = device.create_command_buffer(3).unwrap();
        let one_each: Vec<u8> = [1u32, 1, 1].iter().flat_map(|c| c.to_le_bytes()).collect();
        commands
            .record(Command::Update {
                data: one_each.into(),
                target: BufferRef::Slot(2),
                offset: 4,
            })
            .unwrap();
        commands
            .record(Command::DispatchIndirect {
                executable: executable.clone(),
                ordinal: ordinal as i64,
                workgroups: BufferRef::Slot(2),
                workgroups_offset: 4,
                constants: vec![],
                bindings: vec![
                    (BufferRef::Slot(0), 0, 16),
                    (BufferRef::Slot(0), 16, 16),
                    (BufferRef::Slot(1), 0, 16),
                ],
            })
            .unwrap();
        commands.finalize().unwrap();
        let table = [inputs, sum.clone(), counts].map(Binding::whole);
        let done = HalFence::pending();
        device
            .queue_execute(
                Submission::new(&HalFence::empty(), &done),
                Some(&commands),
                &table,
            )
            .unwrap();
        done.wait(Timeout::Infinite).unwrap();
        assert_eq!(sum.to_vec(), f32s(&[1.25, 2.25, 3.25, 4.25]));

        // A count read past the end of its buffer fails the execution.
        let short = allocator.allocate(params, 8).unwrap();
        let table = [
            Binding::whole(allocator.allocate(params, 32).unwrap()),
            Binding::whole(sum.clone()),
            Binding::whole(short),
        ];
        let done = HalFence::pending();
        let e = device
            .queue_execute(
                Submission::new(&HalFence::empty(), &done),
                Some(&commands),
                &table,
            )
            .unwrap_err();
        assert_eq!(e.status, StatusCode::OutOfRange, "{e}");
    }

    #[test]
    fn vmvx_dispatches_run_without_a_vm_context_on_both_devices() {
        let found = executables_in_vmfb(&fixture("multi_export_vmvx.vmfb")).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].format, "vmvx-bytecode-fb");
        for device in both_devices() {
            let executable = device
                .create_executable(&found[0].format, found[0].data.clone(), &[])
                .unwrap();
            assert_eq!(executable.format(), "vmvx-bytecode-fb");
            add_vectors(&device, &executable);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn llvm_cpu_dispatches_run_without_a_vm_context_on_both_devices() {
        for (name, format) in [
            ("multi_export_llvm_cpu.vmfb", "embedded-elf-x86_64"),
            ("multi_export_llvm_cpu_system.vmfb", "system-elf-x86_64"),
        ] {
            let found = executables_in_vmfb(&fixture(name)).unwrap();
            assert_eq!(found.len(), 1, "{name}");
            assert_eq!(found[0].format, format);
            for device in both_devices() {
                assert!(device.supports_executable_format(format));
                let executable = device
                    .create_executable(format, found[0].data.clone(), &[])
                    .unwrap();
                add_vectors(&device, &executable);
            }
        }
    }

    #[test]
    fn executables_are_found_in_modules_and_only_there() {
        // The other tests' scan for the inner module (which runs to the end of the file)
        // starts with exactly the segment found.
        let found = executables_in_vmfb(&fixture("vmvx_tensors.vmfb")).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].format, "vmvx-bytecode-fb");
        assert!(super::embedded_executable().starts_with(&found[0].data));
        assert!(found[0].data.len() > 1000);
        // A VM-only module carries none.
        assert!(
            executables_in_vmfb(&fixture("vm_direct.vmfb"))
                .unwrap()
                .is_empty()
        );
    }

    /// An executable some other device made.
    #[derive(Debug)]
    struct Foreign;

    impl HalExecutable for Foreign {
        fn format(&self) -> &str {
            "other-format"
        }
        fn export_count(&self) -> usize {
            1
        }
        fn export_name(&self, ordinal: usize) -> Option<&str> {
            (ordinal == 0).then_some("main")
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn a_device_refuses_executables_it_did_not_make() {
        let device = LocalDevice::sync();
        let foreign: Arc<dyn HalExecutable> = Arc::new(Foreign);
        assert_eq!(foreign.lookup("main"), Some(0));
        let commands = HalCommandBuffer::new(0);
        commands.dispatch(&foreign, 0, [1, 1, 1], &[], &[]).unwrap();
        let empty = HalFence::empty();
        let e = device
            .queue_execute(Submission::new(&empty, &empty), Some(&commands), &[])
            .unwrap_err();
        assert_eq!(e.status, StatusCode::InvalidArgument);
        assert!(e.message.contains("another device"), "{e}");
        let e = device
            .create_executable("other-format", vec![], &[])
            .unwrap_err();
        assert_eq!(e.status, StatusCode::Unimplemented);
    }

    /// A device of another kind: the local device behind a wrapper that counts queue
    /// executions. The `hal` module runs compiled programs on it unchanged.
    #[derive(Debug)]
    struct Counting {
        inner: LocalDevice,
        executions: AtomicUsize,
    }

    impl HalDevice for Counting {
        fn id(&self) -> &str {
            self.inner.id()
        }
        fn query_i64(&self, category: &str, key: &str) -> Option<i64> {
            self.inner.query_i64(category, key)
        }
        fn allocator(&self) -> Arc<dyn HalAllocator> {
            self.inner.allocator()
        }
        fn supports_executable_format(&self, format: &str) -> bool {
            self.inner.supports_executable_format(format)
        }
        fn create_executable(
            &self,
            format: &str,
            data: Vec<u8>,
            constants: &[u32],
        ) -> Result<Arc<dyn HalExecutable>, StatusError> {
            self.inner.create_executable(format, data, constants)
        }
        fn queue_alloca(
            &self,
            submit: Submission<'_>,
            params: BufferParams,
            size: i64,
        ) -> Result<HalBuffer, StatusError> {
            self.inner.queue_alloca(submit, params, size)
        }
        fn queue_dealloca(
            &self,
            submit: Submission<'_>,
            buffer: &HalBuffer,
        ) -> Result<(), StatusError> {
            self.inner.queue_dealloca(submit, buffer)
        }
        fn queue_fill(
            &self,
            submit: Submission<'_>,
            target: &HalBuffer,
            offset: i64,
            length: i64,
            pattern: u64,
            pattern_length: i64,
        ) -> Result<(), StatusError> {
            self.inner
                .queue_fill(submit, target, offset, length, pattern, pattern_length)
        }
        fn queue_copy(
            &self,
            submit: Submission<'_>,
            source: &HalBuffer,
            source_offset: i64,
            target: &HalBuffer,
            target_offset: i64,
            length: i64,
        ) -> Result<(), StatusError> {
            self.inner
                .queue_copy(submit, source, source_offset, target, target_offset, length)
        }
        fn queue_read(
            &self,
            submit: Submission<'_>,
            source: &HalFile,
            source_offset: i64,
            target: &HalBuffer,
            target_offset: i64,
            length: i64,
        ) -> Result<(), StatusError> {
            self.inner
                .queue_read(submit, source, source_offset, target, target_offset, length)
        }
        fn queue_execute(
            &self,
            submit: Submission<'_>,
            command_buffer: Option<&HalCommandBuffer>,
            binding_table: &[Binding],
        ) -> Result<(), StatusError> {
            self.executions.fetch_add(1, Ordering::Relaxed);
            self.inner
                .queue_execute(submit, command_buffer, binding_table)
        }
    }

    #[test]
    fn the_hal_module_runs_programs_on_any_device() {
        let device = Arc::new(Counting {
            inner: LocalDevice::sync(),
            executions: AtomicUsize::new(0),
        });
        let mut context = Context::new(Limits::default());
        context
            .register_native(Arc::new(HalModule::new(device.clone())))
            .unwrap();
        let name = context
            .load_bytecode(fixture("multi_export_vmvx.vmfb"))
            .unwrap();
        let view = |values: &[f32]| {
            let buffer = HalBuffer::from_bytes(&f32s(values), None).unwrap();
            super::obj(
                pactum_iree::hal::HalBufferView::new(
                    buffer,
                    vec![4],
                    pactum_iree::hal::HalElementType::F32,
                    pactum_iree::hal::DENSE_ROW_MAJOR,
                )
                .unwrap(),
            )
        };
        let results = context
            .call(
                &format!("{name}.add_vec"),
                &[view(&[1.0, 2.0, 3.0, 4.0]), view(&[4.0, 3.0, 2.0, 1.0])],
            )
            .unwrap();
        let Value::Ref(Some(result)) = &results[0] else {
            panic!("{results:?}")
        };
        let result = result
            .downcast_ref::<pactum_iree::hal::HalBufferView>()
            .unwrap();
        assert_eq!(result.to_bytes(), f32s(&[5.0; 4]));
        assert!(device.executions.load(Ordering::Relaxed) >= 1);
    }

    #[test]
    fn the_hal_modules_fences_wait_report_and_fail() {
        let hal = HalModule::new(Arc::new(LocalDevice::sync()));
        let call = |name: &str, args: &[Value]| super::call(&hal, name, args);
        let device = Value::Ref(Some(hal.device_ref().clone()));
        let fence = call("fence.create", &[device.clone(), Value::I64(0)])
            .unwrap()
            .remove(0);
        // Pending: query says DEFERRED, a zero timeout says DEADLINE_EXCEEDED.
        assert_eq!(
            call("fence.query", std::slice::from_ref(&fence)).unwrap(),
            [Value::I32(StatusCode::Deferred.code() as i32)]
        );
        let await_ = |timeout: i32, fences: &[Value]| {
            let mut args = vec![
                Value::I32(timeout),
                Value::I64(0),
                Value::I32(fences.len() as i32),
            ];
            args.extend_from_slice(fences);
            call("fence.await", &args)
        };
        assert_eq!(
            await_(0, std::slice::from_ref(&fence)).unwrap(),
            [Value::I32(StatusCode::DeadlineExceeded.code() as i32)]
        );
        // Null fences are skipped.
        assert_eq!(await_(-1, &[Value::Ref(None)]).unwrap(), [Value::I32(0)]);
        call("fence.signal", std::slice::from_ref(&fence)).unwrap();
        assert_eq!(
            call("fence.query", std::slice::from_ref(&fence)).unwrap(),
            [Value::I32(0)]
        );
        assert_eq!(
            await_(-1, std::slice::from_ref(&fence)).unwrap(),
            [Value::I32(0)]
        );
        // A failed fence fails the waits on it.
        let failed = call("fence.create", &[device.clone(), Value::I64(0)])
            .unwrap()
            .remove(0);
        // Failing with OK would fail nothing: refused.
        let e = call("fence.fail", &[failed.clone(), Value::I32(0)]).unwrap_err();
        assert_eq!(e.status, StatusCode::InvalidArgument, "{e}");
        call("fence.fail", &[failed.clone(), Value::I32(10)]).unwrap();
        assert_eq!(
            call("fence.query", std::slice::from_ref(&failed)).unwrap(),
            [Value::I32(10)]
        );
        let e = await_(-1, &[fence.clone(), failed.clone()]).unwrap_err();
        assert_eq!(e.status, StatusCode::Aborted);
        // A queue operation on the device signals its fence.
        let target = HalBuffer::allocate(4, None).unwrap();
        let done = call("fence.create", &[device.clone(), Value::I64(0)])
            .unwrap()
            .remove(0);
        call(
            "device.queue.fill",
            &[
                device,
                Value::I64(-1),
                fence,
                done.clone(),
                super::obj(target.clone()),
                Value::I64(0),
                Value::I64(WHOLE_BUFFER),
                Value::I64(3),
                Value::I32(1),
                Value::I64(0),
            ],
        )
        .unwrap();
        assert_eq!(target.to_vec(), [3; 4]);
        assert_eq!(await_(0, &[done]).unwrap(), [Value::I32(0)]);
    }
}

/// A module cannot hang its caller on a fence nothing signals: with a wait limit, an unbounded
/// `fence.await` and a queue operation waiting on such a fence fail with DEADLINE_EXCEEDED
/// after the limit, naming it; a shorter timeout of the program's own is still the answer it
/// handles (the status code, not an error); and without a limit (IREE's behaviour) a wait for
/// a fence another thread signals returns once it does.
#[test]
fn waits_on_fences_are_bounded_by_the_wait_limit() {
    use std::time::{Duration, Instant};

    let limit = Duration::from_millis(200);
    let hal = HalModule::with_wait_limit(Arc::new(LocalDevice::sync()), Some(limit));
    let limited = |name: &str, args: &[Value]| call(&hal, name, args);
    let device = Value::Ref(Some(hal.device_ref().clone()));
    let never = limited("fence.create", &[device.clone(), Value::I64(0)])
        .unwrap()
        .remove(0);
    let await_ = |timeout: i32| {
        limited(
            "fence.await",
            &[
                Value::I32(timeout),
                Value::I64(0),
                Value::I32(1),
                never.clone(),
            ],
        )
    };

    let start = Instant::now();
    let error = await_(-1).unwrap_err();
    let waited = start.elapsed();
    assert_eq!(error.status, StatusCode::DeadlineExceeded, "{error}");
    assert!(error.message.contains("wait limit of 200ms"), "{error}");
    assert!(waited >= limit && waited < limit * 20, "{waited:?}");

    // The program's own, shorter timeout is an answer, not an error.
    assert_eq!(
        await_(10).unwrap(),
        [Value::I32(StatusCode::DeadlineExceeded.code() as i32)]
    );
    // A longer one than the limit is cut short by it.
    assert_eq!(
        await_(60_000).unwrap_err().status,
        StatusCode::DeadlineExceeded
    );

    // A queue operation waiting on the fence fails the same way, and does nothing.
    let target = HalBuffer::allocate(4, None).unwrap();
    let signal = limited("fence.create", &[device.clone(), Value::I64(0)])
        .unwrap()
        .remove(0);
    let error = limited(
        "device.queue.fill",
        &[
            device.clone(),
            Value::I64(-1),
            never.clone(),
            signal.clone(),
            obj(target.clone()),
            Value::I64(0),
            Value::I64(4),
            Value::I64(0x7f),
            Value::I32(1),
            Value::I64(0),
        ],
    )
    .unwrap_err();
    assert_eq!(error.status, StatusCode::DeadlineExceeded, "{error}");
    assert_eq!(target.to_vec(), [0; 4]);
    // ... and fails its signal fence, so what waits on that fails too.
    assert_eq!(
        limited("fence.query", std::slice::from_ref(&signal)).unwrap(),
        [Value::I32(StatusCode::DeadlineExceeded.code() as i32)]
    );

    // Without a limit, a wait for a fence another thread signals returns when it does.
    let unbounded = HalModule::with_wait_limit(Arc::new(LocalDevice::sync()), None);
    let device = Value::Ref(Some(unbounded.device_ref().clone()));
    let later = call(&unbounded, "fence.create", &[device, Value::I64(0)])
        .unwrap()
        .remove(0);
    let Value::Ref(Some(fence_ref)) = &later else {
        panic!("{later:?}")
    };
    let fence = fence_ref
        .downcast_ref::<pactum_iree::hal::HalFence>()
        .unwrap()
        .clone();
    let signaller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        fence.signal().unwrap();
    });
    assert_eq!(
        call(
            &unbounded,
            "fence.await",
            &[Value::I32(-1), Value::I64(0), Value::I32(1), later.clone()],
        )
        .unwrap(),
        [Value::I32(0)]
    );
    signaller.join().unwrap();
}

/// Sub-byte elements are packed, as IREE packs them: a `4xi4` view needs 2 bytes (IREE's
/// compiled programs make such views over 2-byte buffers), `3xi4` rounds up to 2.
#[test]
fn sub_byte_views_need_their_packed_bytes() {
    use pactum_iree::hal::{DENSE_ROW_MAJOR, HalBuffer, HalBufferView, HalElementType};
    let i4 = HalElementType::parse("i4").unwrap();
    assert_eq!(HalBufferView::byte_length(&[4], i4), Some(2));
    assert_eq!(HalBufferView::byte_length(&[3], i4), Some(2));
    assert_eq!(
        HalBufferView::byte_length(&[8], HalElementType::parse("ui2").unwrap()),
        Some(2)
    );
    let buffer = HalBuffer::from_bytes(&[0x21, 0xC3], None).unwrap();
    let view = HalBufferView::new(buffer.clone(), vec![4], i4, DENSE_ROW_MAJOR).unwrap();
    assert_eq!(view.to_bytes(), vec![0x21, 0xC3]);
    let error = HalBufferView::new(buffer, vec![5], i4, DENSE_ROW_MAJOR).unwrap_err();
    assert!(
        error.message.contains("needs 3 bytes; the buffer holds 2"),
        "{}",
        error.message
    );
}

/// iree-run-module's `--input` text: what IREE refuses is an error naming the text, never a
/// panic or an allocation the machine cannot make.
#[test]
fn parsed_inputs_refuse_what_iree_refuses() {
    use pactum_iree::hal::HalBufferView;
    let view = HalBufferView::parse("4xi4=21 C3").unwrap();
    assert_eq!(view.to_bytes(), vec![0x21, 0xC3]);
    assert_eq!(
        HalBufferView::parse("2xi1=01 00").unwrap().to_bytes(),
        vec![1, 0]
    );
    assert_eq!(
        HalBufferView::parse("3xf8E4M3FN=1").unwrap().to_bytes(),
        vec![0x38; 3]
    );
    for (text, says) in [
        ("4xq7=1", "unknown element type"),
        ("3xf32=1 2", "gives 2 element(s) for 3"),
        ("2xi1=1 0", "hex"),
        ("4xi4=1 2 3 4", "gives 4 element(s) for 2"),
        ("2xi8=1 200", "not a valid i8"),
        ("2xui8=-1 2", "not a valid ui8"),
        ("99999999999x99999999999xf32=0", "overflows"),
        ("4000000000xf32=0", "at most"),
        ("2xfoo3=1", "unknown element type"),
        ("ax2xf32=1", "bad dimension"),
    ] {
        let error = HalBufferView::parse(text).unwrap_err();
        assert!(error.message.contains(says), "{text}: {}", error.message);
    }
}

/// The built-in modules' conventions are parsed only when a program first imports or looks
/// up a function (`conventions_follow_types`), so a malformed one would surface only then:
/// each must parse, and each module must link and call the same as one parsed up front.
#[test]
fn built_in_modules_parse_their_conventions_when_first_needed() {
    use pactum_iree::check::CheckModule;
    use pactum_iree::parameters::{IoParametersModule, ParameterProvider};
    use pactum_iree::signature::cconv::CallingConvention;
    use pactum_iree::vm::Context;
    let modules: Vec<Arc<dyn NativeModule>> = vec![
        Arc::new(hal()),
        Arc::new(CheckModule::new()),
        Arc::new(IoParametersModule::new(ParameterProvider::new())),
    ];
    for module in &modules {
        assert!(module.conventions_follow_types(), "{}", module.name());
        module.check_signatures().unwrap();
        assert!(!module.functions().is_empty(), "{}", module.name());
        for function in module.functions() {
            CallingConvention::parse(&function.cconv).unwrap_or_else(|e| {
                panic!(
                    "{}.{} `{}`: {e}",
                    module.name(),
                    function.name,
                    function.cconv
                )
            });
        }
    }
    // Looked up after a lazy registration: the signature parsed from the convention.
    let mut context = Context::new(Limits::default());
    context.register_native(Arc::new(hal())).unwrap();
    let function = context.lookup_export("hal.buffer_view.dim").unwrap();
    assert_eq!(function.cconv(), "0ri_I");
    assert_eq!(function.result_count(), 1);
    assert!(context.lookup_export("hal.no_such_function").is_err());
}
