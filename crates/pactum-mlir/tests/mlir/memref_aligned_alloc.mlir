// PIPELINE-FINALIZE: --finalize-memref-to-llvm=use-aligned-alloc=1
//
// Built with finalize-memref-to-llvm{use-aligned-alloc=1}: memref.alloc calls
// aligned_alloc(align, size rounded up to align) with align = 16 when the op gives none,
// so allocated == aligned and the buffer is released with free(allocated).

module {
  // Buffer of n f32 from aligned_alloc(16, ...): element i = i as f32 (offset 0, stride 1).
  func.func @aligned_alloc_iota(%n: index) -> memref<?xf32> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = memref.alloc(%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %ii = arith.index_cast %i : index to i64
      %f = arith.sitofp %ii : i64 to f32
      memref.store %f, %m[%i] : memref<?xf32>
    }
    return %m : memref<?xf32>
  }
}
