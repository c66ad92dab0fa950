// bench/run_cpu_bench.sh: the shape of tests/fixtures/vmfb/src/mlp.mlir, made big enough
// that its dispatches are not trivially small: a batch of 64, 512 -> 1024 -> 1024 -> 10
// (dense + ReLU, dense + ReLU, dense, softmax), about 0.2 GFLOP a call. The weights and
// biases are arguments, so the bench can pass splats (the same ones to pactum and to
// iree-benchmark-module) and the compiler cannot fold anything.
// Compiled at bench time; nothing compiled is committed.
func.func @predict(%x: tensor<64x512xf32>,
                   %w1: tensor<512x1024xf32>, %b1: tensor<1024xf32>,
                   %w2: tensor<1024x1024xf32>, %b2: tensor<1024xf32>,
                   %w3: tensor<1024x10xf32>, %b3: tensor<10xf32>) -> tensor<64x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32

  %e1 = tensor.empty() : tensor<64x1024xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<64x512xf32>, tensor<512x1024xf32>)
                      outs(%a1 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %h1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%m1, %b1 : tensor<64x1024xf32>, tensor<1024xf32>) outs(%e1 : tensor<64x1024xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x1024xf32>

  %m2 = linalg.matmul ins(%h1, %w2 : tensor<64x1024xf32>, tensor<1024x1024xf32>)
                      outs(%a1 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %h2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%m2, %b2 : tensor<64x1024xf32>, tensor<1024xf32>) outs(%e1 : tensor<64x1024xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x1024xf32>

  %e3 = tensor.empty() : tensor<64x10xf32>
  %a3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x10xf32>) -> tensor<64x10xf32>
  %m3 = linalg.matmul ins(%h2, %w3 : tensor<64x1024xf32>, tensor<1024x10xf32>)
                      outs(%a3 : tensor<64x10xf32>) -> tensor<64x10xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m3, %b3 : tensor<64x10xf32>, tensor<10xf32>) outs(%e3 : tensor<64x10xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  } -> tensor<64x10xf32>

  // softmax over the 10 classes, row by row
  %rows = tensor.empty() : tensor<64xf32>
  %max0 = linalg.fill ins(%ninf : f32) outs(%rows : tensor<64xf32>) -> tensor<64xf32>
  %max = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%l : tensor<64x10xf32>) outs(%max0 : tensor<64xf32>) {
  ^bb0(%v: f32, %m: f32):
    %mx = arith.maximumf %m, %v : f32
    linalg.yield %mx : f32
  } -> tensor<64xf32>
  %e = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%l, %max : tensor<64x10xf32>, tensor<64xf32>) outs(%e3 : tensor<64x10xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    %x1 = math.exp %d : f32
    linalg.yield %x1 : f32
  } -> tensor<64x10xf32>
  %sum0 = linalg.fill ins(%zero : f32) outs(%rows : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<64x10xf32>) outs(%sum0 : tensor<64xf32>) {
  ^bb0(%v: f32, %s: f32):
    %s1 = arith.addf %s, %v : f32
    linalg.yield %s1 : f32
  } -> tensor<64xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%e, %sum : tensor<64x10xf32>, tensor<64xf32>) outs(%e3 : tensor<64x10xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %q = arith.divf %v, %s : f32
    linalg.yield %q : f32
  } -> tensor<64x10xf32>
  return %p : tensor<64x10xf32>
}
