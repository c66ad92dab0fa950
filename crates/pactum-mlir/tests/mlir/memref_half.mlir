// Test module for 16-bit floats (f16 = IEEE binary16, bf16 = bfloat16) in the memref convention.
// Built by build.sh. Scalars travel as LLVM half/bfloat (low 16 bits of xmm0/xmm1 on x86-64).
// bf16 conversions are expanded to integer ops by arith-expand{include-bf16} (round to nearest even),
// so no libgcc bf16 helper is needed; f16 arithmetic uses libgcc's __extendhfsf2/__truncsfhf2.

module {
  // In place y[i] = a * x[i] + y[i] for i in 0..dim(x), each op in f16 (rounded after the multiply
  // and after the add). Returns the sum of the new y accumulated in f32 and truncated to f16 once.
  // f16_axpy(2.0, [1, 2, 3], [0.5, 0.5, 0.5]) -> y = [2.5, 4.5, 6.5], returns 13.5.
  func.func @f16_axpy(%a: f16, %x: memref<?xf16>, %y: memref<?xf16>) -> f16 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf16>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
      %xi = memref.load %x[%i] : memref<?xf16>
      %yi = memref.load %y[%i] : memref<?xf16>
      %p = arith.mulf %a, %xi : f16
      %q = arith.addf %p, %yi : f16
      memref.store %q, %y[%i] : memref<?xf16>
      %q32 = arith.extf %q : f16 to f32
      %acc2 = arith.addf %acc, %q32 : f32
      scf.yield %acc2 : f32
    }
    %r = arith.truncf %s : f32 to f16
    return %r : f16
  }

  // In place m[i] = bf16(f32(m[i]) * s) for i in 0..dim(m); returns the new m[0] (dim(m) >= 1).
  // bf16_scale([1.5, -2, 4], 2.0) -> m = [3, -4, 8], returns 3.0.
  func.func @bf16_scale(%m: memref<?xbf16>, %s: f32) -> bf16 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %m, %c0 : memref<?xbf16>
    scf.for %i = %c0 to %n step %c1 {
      %x = memref.load %m[%i] : memref<?xbf16>
      %x32 = arith.extf %x : bf16 to f32
      %y32 = arith.mulf %x32, %s : f32
      %y = arith.truncf %y32 : f32 to bf16
      memref.store %y, %m[%i] : memref<?xbf16>
    }
    %r = memref.load %m[%c0] : memref<?xbf16>
    return %r : bf16
  }

  // Returns x unchanged (bit pattern preserved, e.g. 0x3C00 = 1.0 -> 0x3C00).
  func.func @f16_identity(%x: f16) -> f16 attributes {llvm.emit_c_interface} {
    return %x : f16
  }

  // bf16(f32(a) + f32(b)): bf16_add(1.5, 2.25) = 3.75 (bits 0x3FC0 + 0x4010 -> 0x4070).
  func.func @bf16_add(%a: bf16, %b: bf16) -> bf16 attributes {llvm.emit_c_interface} {
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %s = arith.addf %a32, %b32 : f32
    %r = arith.truncf %s : f32 to bf16
    return %r : bf16
  }
}
