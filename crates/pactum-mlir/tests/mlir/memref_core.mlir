// Test module for pactum's MLIR memref calling-convention support.
// Built by build.sh (default pipeline, memref.alloc = plain malloc).
// All functions have `llvm.emit_c_interface` (=> `_mlir_ciface_<name>`)
// except `no_wrapper` and `no_wrapper_add`.
// No function checks bounds; callers must pass sizes the comments ask for.

module {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 4.0, 8.0]>

  // Returns a view of a constant inside the library ([1, 2, 4, 8]; MLIR marks it with
  // allocated = 0xdeadbeef): the caller must never free it.
  func.func @constant_table() -> memref<4xf32> attributes {llvm.emit_c_interface} {
    %t = memref.get_global @table : memref<4xf32>
    return %t : memref<4xf32>
  }

  // One fresh allocation of n elements (element i = i) returned twice: both results share it,
  // so it must be freed once.
  func.func @alloc_twice(%n: index) -> (memref<?xf32>, memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = memref.alloc(%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %ii = arith.index_cast %i : index to i64
      %f = arith.sitofp %ii : i64 to f32
      memref.store %f, %m[%i] : memref<?xf32>
    }
    return %m, %m : memref<?xf32>, memref<?xf32>
  }

  // out[i] = in[i] + 1.0 for i in 0..dim(in); out must have at least dim(in) elements.
  func.func @add_one(%in: memref<?xf32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %in, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %x = memref.load %in[%i] : memref<?xf32>
      %y = arith.addf %x, %one : f32
      memref.store %y, %out[%i] : memref<?xf32>
    }
    return
  }

  // In place: m[i, j] = m[i, j] * factor for all i, j (identity layout; offset/strides ignored).
  func.func @scale_2d(%m: memref<?x?xf32>, %factor: f32) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %m, %c0 : memref<?x?xf32>
    %cols = memref.dim %m, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %x = memref.load %m[%i, %j] : memref<?x?xf32>
        %y = arith.mulf %x, %factor : f32
        memref.store %y, %m[%i, %j] : memref<?x?xf32>
      }
    }
    return
  }

  // In place on a strided view: element (i, j) lives at aligned[offset + i*strides[0] + j*strides[1]]
  // and is multiplied by factor; elements outside the view are untouched.
  func.func @scale_strided(%m: memref<?x?xf32, strided<[?, ?], offset: ?>>, %factor: f32) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %m, %c0 : memref<?x?xf32, strided<[?, ?], offset: ?>>
    %cols = memref.dim %m, %c1 : memref<?x?xf32, strided<[?, ?], offset: ?>>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %x = memref.load %m[%i, %j] : memref<?x?xf32, strided<[?, ?], offset: ?>>
        %y = arith.mulf %x, %factor : f32
        memref.store %y, %m[%i, %j] : memref<?x?xf32, strided<[?, ?], offset: ?>>
      }
    }
    return
  }

  // Sum over i in 0..sizes[0] of aligned[offset + i*strides[0]] (f64; 0.0 for an empty view).
  func.func @sum_strided_1d(%v: memref<?xf64, strided<[?], offset: ?>>) -> f64 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f64
    %n = memref.dim %v, %c0 : memref<?xf64, strided<[?], offset: ?>>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f64) {
      %x = memref.load %v[%i] : memref<?xf64, strided<[?], offset: ?>>
      %a = arith.addf %acc, %x : f64
      scf.yield %a : f64
    }
    return %s : f64
  }

  // View of m (rows x cols, rows >= 1) aliasing its buffer: rows 1..rows, columns 0, 2, 4, ...
  // Result descriptor: allocated/aligned = m's, offset = cols, sizes = [rows - 1, (cols + 1) / 2],
  // strides = [cols, 2]. So result[i, j] = m[i + 1, 2 * j].
  func.func @inner_view(%m: memref<?x?xf32>) -> memref<?x?xf32, strided<[?, 2], offset: ?>> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %rows = memref.dim %m, %c0 : memref<?x?xf32>
    %cols = memref.dim %m, %c1 : memref<?x?xf32>
    %r = arith.subi %rows, %c1 : index
    %cp1 = arith.addi %cols, %c1 : index
    %c = arith.divui %cp1, %c2 : index
    %v = memref.subview %m[1, 0] [%r, %c] [1, 2] : memref<?x?xf32> to memref<?x?xf32, strided<[?, 2], offset: ?>>
    return %v : memref<?x?xf32, strided<[?, 2], offset: ?>>
  }

  // Fresh malloc'ed buffer of n f32: element i = i as f32. allocated == aligned, offset 0, stride 1.
  func.func @alloc_iota(%n: index) -> memref<?xf32> attributes {llvm.emit_c_interface} {
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

  // Buffer of n f64 allocated with {alignment = 64}: allocated = malloc(8n + 64), aligned = allocated
  // rounded up to a multiple of 64. They differ unless malloc happened to return a 64-aligned block
  // (glibc: about 1 call in 4), so tests must not assert inequality; always free(allocated).
  // Element i = 2 * i as f64; offset 0, stride 1.
  func.func @alloc_aligned(%n: index) -> memref<?xf64> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %two = arith.constant 2.0 : f64
    %m = memref.alloc(%n) {alignment = 64} : memref<?xf64>
    scf.for %i = %c0 to %n step %c1 {
      %ii = arith.index_cast %i : index to i64
      %f = arith.sitofp %ii : i64 to f64
      %g = arith.mulf %f, %two : f64
      memref.store %g, %m[%i] : memref<?xf64>
    }
    return %m : memref<?xf64>
  }

  // Fresh rows x cols i32 buffer (row-major, strides [cols, 1]): element [i, j] = i * 100 + j.
  func.func @alloc_2d(%rows: index, %cols: index) -> memref<?x?xi32> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c100 = arith.constant 100 : index
    %m = memref.alloc(%rows, %cols) : memref<?x?xi32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %a = arith.muli %i, %c100 : index
        %b = arith.addi %a, %j : index
        %v = arith.index_cast %b : index to i32
        memref.store %v, %m[%i, %j] : memref<?x?xi32>
      }
    }
    return %m : memref<?x?xi32>
  }

  // Sum of a rank-1 f32 buffer passed as unranked (rank is not checked; pass rank 1, identity layout).
  func.func @unranked_sum(%u: memref<*xf32>) -> f32 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %m = memref.cast %u : memref<*xf32> to memref<?xf32>
    %n = memref.dim %m, %c0 : memref<?xf32>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %m[%i] : memref<?xf32>
      %a = arith.addf %acc, %x : f32
      scf.yield %a : f32
    }
    return %s : f32
  }

  // Fills a rank-1 f32 buffer passed as unranked with v (identity layout assumed);
  // returns the rank field of the unranked descriptor (1 for a correct call).
  func.func @unranked_fill(%u: memref<*xf32>, %v: f32) -> index attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = memref.rank %u : memref<*xf32>
    %m = memref.cast %u : memref<*xf32> to memref<?xf32>
    %n = memref.dim %m, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      memref.store %v, %m[%i] : memref<?xf32>
    }
    return %r : index
  }

  // Returns the rank of an unranked f64 memref (any rank, including 0); touches no data.
  func.func @unranked_rank(%u: memref<*xf64>) -> index attributes {llvm.emit_c_interface} {
    %r = memref.rank %u : memref<*xf64>
    return %r : index
  }

  // Allocates n f32 filled with v and returns it as unranked (rank 1). The caller owns two malloc
  // blocks: the data (descriptor->allocated) and the ranked descriptor the unranked one points to.
  func.func @alloc_unranked(%n: index, %v: f32) -> memref<*xf32> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = memref.alloc(%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      memref.store %v, %m[%i] : memref<?xf32>
    }
    %u = memref.cast %m : memref<?xf32> to memref<*xf32>
    return %u : memref<*xf32>
  }

  // (a / b, a % b) with truncation toward zero (C semantics): divmod(-7, 2) = (-3, -1).
  func.func @divmod(%a: i64, %b: i64) -> (i64, i64) attributes {llvm.emit_c_interface} {
    %q = arith.divsi %a, %b : i64
    %r = arith.remsi %a, %b : i64
    return %q, %r : i64, i64
  }

  // (a + b, a - b), wrapping i32 arithmetic.
  func.func @pair_i32(%a: i32, %b: i32) -> (i32, i32) attributes {llvm.emit_c_interface} {
    %s = arith.addi %a, %b : i32
    %d = arith.subi %a, %b : i32
    return %s, %d : i32, i32
  }

  // (min, max) of v (identity layout). Empty input gives (+inf, -inf). Uses minimumf/maximumf.
  func.func @minmax(%v: memref<?xf32>) -> (f32, f32) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pinf = arith.constant 0x7F800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %n = memref.dim %v, %c0 : memref<?xf32>
    %lo, %hi = scf.for %i = %c0 to %n step %c1 iter_args(%l = %pinf, %h = %ninf) -> (f32, f32) {
      %x = memref.load %v[%i] : memref<?xf32>
      %l2 = arith.minimumf %l, %x : f32
      %h2 = arith.maximumf %h, %x : f32
      scf.yield %l2, %h2 : f32, f32
    }
    return %lo, %hi : f32, f32
  }

  // (d + m[0], b * 2, c * 3.0, a + 1, e + dim(m, 0)); m needs at least one element.
  func.func @mixed(%a: i32, %b: i64, %c: f32, %d: f64, %e: index, %m: memref<?xf64>) -> (f64, i64, f32, i32, index) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %i1 = arith.constant 1 : i32
    %i2 = arith.constant 2 : i64
    %f3 = arith.constant 3.0 : f32
    %m0 = memref.load %m[%c0] : memref<?xf64>
    %r0 = arith.addf %d, %m0 : f64
    %r1 = arith.muli %b, %i2 : i64
    %r2 = arith.mulf %c, %f3 : f32
    %r3 = arith.addi %a, %i1 : i32
    %n = memref.dim %m, %c0 : memref<?xf64>
    %r4 = arith.addi %e, %n : index
    return %r0, %r1, %r2, %r3, %r4 : f64, i64, f32, i32, index
  }

  // Returns a[] + b[] (b's value on entry), then stores a[] * 2.0 into b[].
  func.func @zero_d(%a: memref<f32>, %b: memref<f32>) -> f32 attributes {llvm.emit_c_interface} {
    %two = arith.constant 2.0 : f32
    %x = memref.load %a[] : memref<f32>
    %y = memref.load %b[] : memref<f32>
    %s = arith.addf %x, %y : f32
    %d = arith.mulf %x, %two : f32
    memref.store %d, %b[] : memref<f32>
    return %s : f32
  }

  // Fresh malloc'ed 0-d memref holding x * x (descriptor {allocated, aligned, offset = 0}).
  func.func @zero_d_result(%x: f32) -> memref<f32> attributes {llvm.emit_c_interface} {
    %m = memref.alloc() : memref<f32>
    %sq = arith.mulf %x, %x : f32
    memref.store %sq, %m[] : memref<f32>
    return %m : memref<f32>
  }

  // Sum of all 6 elements of a static 2x3 row-major f32 memref (descriptor sizes/strides ignored).
  func.func @static_mat(%m: memref<2x3xf32>) -> f32 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %s = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
      %t = scf.for %j = %c0 to %c3 step %c1 iter_args(%acc2 = %acc) -> (f32) {
        %x = memref.load %m[%i, %j] : memref<2x3xf32>
        %a = arith.addf %acc2, %x : f32
        scf.yield %a : f32
      }
      scf.yield %t : f32
    }
    return %s : f32
  }

  // sext(a) + sext(b) + zext(c) + sext(d) + (e ? 1000 : 0), as i64.
  // ints(-1, -300, 200, -70000, 1) = -1 - 300 + 200 - 70000 + 1000 = -69101.
  func.func @ints(%a: i8, %b: i16, %c: ui8, %d: si32, %e: i1) -> i64 attributes {llvm.emit_c_interface} {
    %cs = builtin.unrealized_conversion_cast %c : ui8 to i8
    %ds = builtin.unrealized_conversion_cast %d : si32 to i32
    %a64 = arith.extsi %a : i8 to i64
    %b64 = arith.extsi %b : i16 to i64
    %c64 = arith.extui %cs : i8 to i64
    %d64 = arith.extsi %ds : i32 to i64
    %k0 = arith.constant 0 : i64
    %k1000 = arith.constant 1000 : i64
    %e64 = arith.select %e, %k1000, %k0 : i64
    %s1 = arith.addi %a64, %b64 : i64
    %s2 = arith.addi %s1, %c64 : i64
    %s3 = arith.addi %s2, %d64 : i64
    %s4 = arith.addi %s3, %e64 : i64
    return %s4 : i64
  }

  // m[i] = v for all i (identity layout).
  func.func @fill_i8(%m: memref<?xi8>, %v: i8) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %m, %c0 : memref<?xi8>
    scf.for %i = %c0 to %n step %c1 {
      memref.store %v, %m[%i] : memref<?xi8>
    }
    return
  }

  // Sum of the elements of an unsigned 16-bit buffer, each zero-extended to i64:
  // [65535, 1, 2] -> 65538.
  func.func @sum_u16(%m: memref<?xui16>) -> i64 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0 : i64
    %n = memref.dim %m, %c0 : memref<?xui16>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i64) {
      %x = memref.load %m[%i] : memref<?xui16>
      %xs = builtin.unrealized_conversion_cast %x : ui16 to i16
      %x64 = arith.extui %xs : i16 to i64
      %a = arith.addi %acc, %x64 : i64
      scf.yield %a : i64
    }
    return %s : i64
  }

  // Sum of a signed 16-bit buffer, each sign-extended to i64: [-1, 300, -32768] -> -32469.
  func.func @sum_i16(%m: memref<?xi16>) -> i64 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0 : i64
    %n = memref.dim %m, %c0 : memref<?xi16>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i64) {
      %x = memref.load %m[%i] : memref<?xi16>
      %x64 = arith.extsi %x : i16 to i64
      %a = arith.addi %acc, %x64 : i64
      scf.yield %a : i64
    }
    return %s : i64
  }

  // a * 3 (wrapping). No llvm.emit_c_interface: only the expanded symbol `no_wrapper` exists.
  func.func @no_wrapper(%a: i64) -> i64 {
    %k = arith.constant 3 : i64
    %r = arith.muli %a, %k : i64
    return %r : i64
  }

  // out[i] = in[i] + 1.0 for i in 0..dim(in). No llvm.emit_c_interface: only the expanded symbol
  // `no_wrapper_add(ptr, ptr, i64, i64, i64, ptr, ptr, i64, i64, i64)` exists.
  func.func @no_wrapper_add(%in: memref<?xf32>, %out: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %in, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %x = memref.load %in[%i] : memref<?xf32>
      %y = arith.addf %x, %one : f32
      memref.store %y, %out[%i] : memref<?xf32>
    }
    return
  }
}
