//! Tensor arguments handed to IREE programs without a copy (`tensor_to_buffer_view`): a
//! contiguous, 64-byte aligned CPU tensor becomes a buffer over its own memory that keeps the
//! tensor alive, as IREE's heap allocator imports a host allocation; everything IREE's import
//! would refuse (misaligned, strided) is copied and reads the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pactum::dtype::{DataType, Device};
use pactum::{AnyView, Tensor};
use pactum_iree::hal::Workers;
use pactum_iree::module::{IreeModule, tensor_to_buffer_view};
use pactum_testing::iree::compile_for_cpu;

/// 64-byte aligned storage for tensors over memory the test owns.
#[repr(C, align(64))]
struct Aligned([f32; 80]);

/// A tensor of `shape`/`strides` (in elements) over `storage` from element `first` on, and
/// the flag its release sets.
fn tensor_over(
    storage: Box<Aligned>,
    first: usize,
    shape: &[i64],
    strides: &[i64],
) -> (Tensor, Arc<AtomicBool>) {
    let released = Arc::new(AtomicBool::new(false));
    let flag = released.clone();
    let storage = Box::into_raw(storage);
    // The closure must be `Send`: it carries the address, not the raw pointer.
    let address = storage as usize;
    let release = move || {
        flag.store(true, Ordering::SeqCst);
        // SAFETY: made by Box::into_raw above, freed once, here.
        drop(unsafe { Box::from_raw(address as *mut Aligned) });
    };
    // SAFETY: `storage` holds 80 f32s from a 64-byte aligned address and lives until the
    // release closure frees it; every test shape/stride stays inside it.
    let tensor = unsafe {
        Tensor::from_raw_parts(
            (*storage).0.as_mut_ptr().add(first).cast(),
            DataType::F32,
            Device::CPU,
            shape,
            strides,
            release,
        )
    }
    .unwrap();
    (tensor, released)
}

fn counting() -> Box<Aligned> {
    let mut storage = Box::new(Aligned([0.0; 80]));
    for (i, v) in storage.0.iter_mut().enumerate() {
        *v = i as f32;
    }
    storage
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn an_aligned_contiguous_tensor_becomes_a_buffer_over_its_memory_that_keeps_it_alive() {
    let (tensor, released) = tensor_over(counting(), 0, &[4, 16], &[16, 1]);
    let view = tensor_to_buffer_view(&tensor).unwrap();
    assert!(view.buffer.is_borrowed(), "imported, not copied");
    assert_eq!(view.shape, [4, 16]);
    assert_eq!(
        f32s(&view.to_bytes()),
        (0..64).map(|i| i as f32).collect::<Vec<_>>()
    );
    // One memory: a write through the buffer is the tensor's, and the tensor's the buffer's
    // (what IREE's import of a host allocation does).
    view.buffer.write(4, &100f32.to_le_bytes()).unwrap();
    assert_eq!(tensor.to_vec::<f32>().unwrap()[1], 100.0);
    // The caller lets go of its tensor: the buffer keeps the memory alive until it goes.
    drop(tensor);
    assert!(
        !released.load(Ordering::SeqCst),
        "released under the buffer"
    );
    assert_eq!(f32s(&view.to_bytes())[..3], [0.0, 100.0, 2.0]);
    let subspan = view.buffer.subspan(64, 64).unwrap();
    drop(view);
    assert!(!released.load(Ordering::SeqCst), "released under a subspan");
    let mut out = [0u8; 4];
    subspan.read(0, &mut out).unwrap();
    assert_eq!(f32::from_le_bytes(out), 16.0);
    drop(subspan);
    assert!(
        released.load(Ordering::SeqCst),
        "released with the last buffer"
    );
}

#[test]
fn misaligned_strided_and_empty_tensors_are_copied_and_read_the_same() {
    // Element 1 on: 4 bytes past a 64-byte boundary, which IREE's import refuses.
    let (misaligned, released) = tensor_over(counting(), 1, &[8], &[1]);
    let view = tensor_to_buffer_view(&misaligned).unwrap();
    assert!(!view.buffer.is_borrowed());
    assert_eq!(
        f32s(&view.to_bytes()),
        (1..9).map(|i| i as f32).collect::<Vec<_>>()
    );
    view.buffer.write(0, &7f32.to_le_bytes()).unwrap();
    assert_eq!(misaligned.to_vec::<f32>().unwrap()[0], 1.0, "a copy");
    drop(misaligned);
    assert!(
        released.load(Ordering::SeqCst),
        "a copy holds nothing of the tensor"
    );
    // A transposed 3x2 view of a 2x3 block: copied row-major.
    let (transposed, _) = tensor_over(counting(), 0, &[3, 2], &[1, 3]);
    let view = tensor_to_buffer_view(&transposed).unwrap();
    assert!(!view.buffer.is_borrowed());
    assert_eq!(f32s(&view.to_bytes()), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    // An empty tensor needs no memory of anyone's.
    let empty = Tensor::empty(&[0, 3], DataType::F32).unwrap();
    let view = tensor_to_buffer_view(&empty).unwrap();
    assert!(!view.buffer.is_borrowed());
    assert_eq!(view.shape, [0, 3]);
}

/// Doubles its argument in place (`hal.tensor.alias`: the result is the argument's storage),
/// as a program with an in-place result does.
const DOUBLE_IN_PLACE: &str = r#"
func.func @double_in_place(%arg0: !hal.buffer_view) -> !hal.buffer_view {
  %t = hal.tensor.import %arg0 : !hal.buffer_view -> tensor<64xf32>
  %r = arith.addf %t, %t : tensor<64xf32>
  %a = hal.tensor.alias %r : tensor<64xf32> to %arg0 : !hal.buffer_view
  %o = hal.tensor.export %a : tensor<64xf32> -> !hal.buffer_view
  return %o : !hal.buffer_view
}
"#;

#[test]
fn a_program_writing_its_argument_in_place_writes_the_callers_tensor_as_iree_does() {
    let test = "a_program_writing_its_argument_in_place_writes_the_callers_tensor_as_iree_does";
    let Some(iree_compile) = pactum_testing::iree::tool_or_skip("iree-compile", test) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("pactum-zero-copy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for backend in ["vmvx", "llvm-cpu"] {
        let vmfb = compile_for_cpu(&iree_compile, &dir, "double", DOUBLE_IN_PLACE, backend, &[]);
        let module = IreeModule::builder()
            .workers(Workers::CallerThread)
            .load(&vmfb)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let values: Vec<f32> = (0..64).map(|i| i as f32 - 10.5).collect();
        // Imported: the program's write is the caller's tensor's, as with IREE's import of a
        // writable host allocation; the result is a copy, never the argument's memory.
        let input = Tensor::from_slice(&values, &[64]).unwrap();
        let double = module.function("double_in_place").unwrap();
        let result: Tensor = double
            .call(&[AnyView::from(&input)])
            .unwrap_or_else(|e| panic!("{backend}: {e}"))
            .cast()
            .unwrap();
        let doubled: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
        assert_eq!(result.to_vec::<f32>().unwrap(), doubled, "{backend}");
        assert_eq!(
            input.to_vec::<f32>().unwrap(),
            doubled,
            "{backend}: in place"
        );
        assert_ne!(
            result.data_ptr(),
            input.data_ptr(),
            "{backend}: a result is a copy"
        );
        // A misaligned argument is copied: the program writes the copy, the tensor stays.
        let (misaligned, _) = tensor_over(counting(), 1, &[64], &[1]);
        let result: Tensor = double
            .call(&[AnyView::from(&misaligned)])
            .unwrap_or_else(|e| panic!("{backend}: {e}"))
            .cast()
            .unwrap();
        let first: Vec<f32> = (1..65).map(|i| i as f32).collect();
        assert_eq!(
            result.to_vec::<f32>().unwrap(),
            first.iter().map(|v| v * 2.0).collect::<Vec<_>>(),
            "{backend}"
        );
        assert_eq!(
            misaligned.to_vec::<f32>().unwrap(),
            first,
            "{backend}: copied"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
