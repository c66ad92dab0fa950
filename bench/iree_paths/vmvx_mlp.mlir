// bench/iree_paths: an MLP on vmvx, batch 16: 784-512-512-10, dense + relu twice, a dense to
// 10 and a softmax; weights and biases are arguments.
func.func @mlp(%x: tensor<16x784xf32>,
               %w1: tensor<784x512xf32>, %b1: tensor<512xf32>,
               %w2: tensor<512x512xf32>, %b2: tensor<512xf32>,
               %w3: tensor<512x10xf32>, %b3: tensor<10xf32>) -> tensor<16x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e512 = tensor.empty() : tensor<16x512xf32>
  %z512 = linalg.fill ins(%zero : f32) outs(%e512 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<16x784xf32>, tensor<784x512xf32>)
                      outs(%z512 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %h1 = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%m1, %b1 : tensor<16x512xf32>, tensor<512xf32>) outs(%e512 : tensor<16x512xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x512xf32>
  %m2 = linalg.matmul ins(%h1, %w2 : tensor<16x512xf32>, tensor<512x512xf32>)
                      outs(%z512 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %h2 = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%m2, %b2 : tensor<16x512xf32>, tensor<512xf32>) outs(%e512 : tensor<16x512xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x512xf32>
  %e10 = tensor.empty() : tensor<16x10xf32>
  %z10 = linalg.fill ins(%zero : f32) outs(%e10 : tensor<16x10xf32>) -> tensor<16x10xf32>
  %m3 = linalg.matmul ins(%h2, %w3 : tensor<16x512xf32>, tensor<512x10xf32>)
                      outs(%z10 : tensor<16x10xf32>) -> tensor<16x10xf32>
  %logits = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%m3, %b3 : tensor<16x10xf32>, tensor<10xf32>) outs(%e10 : tensor<16x10xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    linalg.yield %s : f32
  } -> tensor<16x10xf32>
  %sm = linalg.softmax dimension(1) ins(%logits : tensor<16x10xf32>)
                                    outs(%e10 : tensor<16x10xf32>) -> tensor<16x10xf32>
  return %sm : tensor<16x10xf32>
}
