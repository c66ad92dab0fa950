// bench/iree_paths: 30 small dispatches in a chain on a 1x64 tensor: 15 times a row sum
// (a reduction) and then x * 0.015625 - sum/64 (a broadcast), each behind
// `util.optimization_barrier` so that the compiler cannot fuse them. Each dispatch is a few
// dozen instructions, so per-dispatch, per-barrier and per-call overhead dominate.
func.func @many_dispatches(%x0: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.015625 : f32
  %init = tensor.empty() : tensor<1xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1xf32>) -> tensor<1xf32>
  %empty = tensor.empty() : tensor<1x64xf32>
  %r1 = linalg.reduce ins(%x0 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s1 = util.optimization_barrier %r1 : tensor<1xf32>
  %y1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x0, %s1 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x1 = util.optimization_barrier %y1 : tensor<1x64xf32>
  %r2 = linalg.reduce ins(%x1 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s2 = util.optimization_barrier %r2 : tensor<1xf32>
  %y2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x1, %s2 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x2 = util.optimization_barrier %y2 : tensor<1x64xf32>
  %r3 = linalg.reduce ins(%x2 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s3 = util.optimization_barrier %r3 : tensor<1xf32>
  %y3 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x2, %s3 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x3 = util.optimization_barrier %y3 : tensor<1x64xf32>
  %r4 = linalg.reduce ins(%x3 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s4 = util.optimization_barrier %r4 : tensor<1xf32>
  %y4 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x3, %s4 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x4 = util.optimization_barrier %y4 : tensor<1x64xf32>
  %r5 = linalg.reduce ins(%x4 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s5 = util.optimization_barrier %r5 : tensor<1xf32>
  %y5 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x4, %s5 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x5 = util.optimization_barrier %y5 : tensor<1x64xf32>
  %r6 = linalg.reduce ins(%x5 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s6 = util.optimization_barrier %r6 : tensor<1xf32>
  %y6 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x5, %s6 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x6 = util.optimization_barrier %y6 : tensor<1x64xf32>
  %r7 = linalg.reduce ins(%x6 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s7 = util.optimization_barrier %r7 : tensor<1xf32>
  %y7 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x6, %s7 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x7 = util.optimization_barrier %y7 : tensor<1x64xf32>
  %r8 = linalg.reduce ins(%x7 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s8 = util.optimization_barrier %r8 : tensor<1xf32>
  %y8 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x7, %s8 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x8 = util.optimization_barrier %y8 : tensor<1x64xf32>
  %r9 = linalg.reduce ins(%x8 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s9 = util.optimization_barrier %r9 : tensor<1xf32>
  %y9 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x8, %s9 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x9 = util.optimization_barrier %y9 : tensor<1x64xf32>
  %r10 = linalg.reduce ins(%x9 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s10 = util.optimization_barrier %r10 : tensor<1xf32>
  %y10 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x9, %s10 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x10 = util.optimization_barrier %y10 : tensor<1x64xf32>
  %r11 = linalg.reduce ins(%x10 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s11 = util.optimization_barrier %r11 : tensor<1xf32>
  %y11 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x10, %s11 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x11 = util.optimization_barrier %y11 : tensor<1x64xf32>
  %r12 = linalg.reduce ins(%x11 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s12 = util.optimization_barrier %r12 : tensor<1xf32>
  %y12 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x11, %s12 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x12 = util.optimization_barrier %y12 : tensor<1x64xf32>
  %r13 = linalg.reduce ins(%x12 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s13 = util.optimization_barrier %r13 : tensor<1xf32>
  %y13 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x12, %s13 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x13 = util.optimization_barrier %y13 : tensor<1x64xf32>
  %r14 = linalg.reduce ins(%x13 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s14 = util.optimization_barrier %r14 : tensor<1xf32>
  %y14 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x13, %s14 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x14 = util.optimization_barrier %y14 : tensor<1x64xf32>
  %r15 = linalg.reduce ins(%x14 : tensor<1x64xf32>) outs(%acc : tensor<1xf32>) dimensions = [1]
    (%in: f32, %a: f32) { %s = arith.addf %in, %a : f32
                          linalg.yield %s : f32 }
  %s15 = util.optimization_barrier %r15 : tensor<1xf32>
  %y15 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                          affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x14, %s15 : tensor<1x64xf32>, tensor<1xf32>) outs(%empty : tensor<1x64xf32>) {
    ^bb0(%v: f32, %t: f32, %o: f32):
      %d = arith.subf %v, %t : f32
      %m = arith.mulf %d, %scale : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  %x15 = util.optimization_barrier %y15 : tensor<1x64xf32>
  return %x15 : tensor<1x64xf32>
}
