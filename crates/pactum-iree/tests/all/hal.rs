//! The `hal` module's functions called directly (errors name what is wrong; hostile
//! arguments get errors, never panics) and vmvx modules called with pactum tensors.

use std::sync::Arc;

use pactum::{Any, AnyView, DataType, Tensor};
use pactum_iree::hal::{
    DENSE_ROW_MAJOR, HalBuffer, HalBufferView, HalElementType, HalModule, WHOLE_BUFFER,
};
use pactum_iree::module::IreeModule;
use pactum_iree::vm::{
    Limits, MemoryBudget, NativeError, NativeModule, Ref, StatusCode, Value, VmBuffer,
};

fn hal() -> HalModule {
    HalModule::new(None, Limits::default())
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
fn functions_carry_the_calling_conventions_the_compiler_imports() {
    let hal = hal();
    let cconv = |name: &str| {
        hal.functions()
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.cconv.to_string())
            .unwrap()
    };
    assert_eq!(cconv("command_buffer.dispatch"), "0rrIiiiICiDCiirIID_v");
    assert_eq!(cconv("device.queue.execute.indirect"), "0rIrrrICrIID_v");
    assert_eq!(cconv("buffer_view.create"), "0rIIiiCID_r");
    assert!(hal.ref_types().contains(&"hal.buffer_view".to_owned()));
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
                    &[Value::Ref(Some(hal.device().clone()))],
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
    let device = Value::Ref(Some(hal.device().clone()));
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
fn allocations_are_charged_to_the_memory_budget() {
    let budget = MemoryBudget::new(1024);
    let hal = HalModule::new(Some(budget.clone()), Limits::default());
    let device = Value::Ref(Some(hal.device().clone()));
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
    let device = Value::Ref(Some(hal.device().clone()));
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
    let device = Value::Ref(Some(hal.device().clone()));
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
    let device = Value::Ref(Some(hal.device().clone()));
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
    use pactum_iree::hal::{Binding, HalExecutable, Workers};
    let executable = HalExecutable::create(
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

#[test]
fn vm_views_share_the_hal_buffers_bytes() {
    use pactum_iree::host_memory::HostMemory;
    let buffer = HalBuffer::from_bytes(&[0, 1, 2, 3, 4, 5, 6, 7], None).unwrap();
    let view = buffer.vm_view(2, 4).unwrap();
    assert!(view.is_mutable());
    assert_eq!(view.to_vec(), [2, 3, 4, 5]);
    view.write(0, &[9]).unwrap();
    assert_eq!(buffer.to_vec(), [0, 1, 9, 3, 4, 5, 6, 7]);
    assert!(view.write(4, &[1]).is_err());
    assert!(buffer.vm_view(6, 4).is_err());
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
