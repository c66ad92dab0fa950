// bench/iree_paths: a small CNN on vmvx: NHWC 1x32x32x3, conv 3x3 to 16 channels + bias +
// relu, conv 3x3 to 32 channels + bias + relu, a 2x2 max pool, then a dense to 10; weights
// and biases are arguments.
func.func @cnn(%x: tensor<1x32x32x3xf32>,
               %k1: tensor<3x3x3x16xf32>, %b1: tensor<16xf32>,
               %k2: tensor<3x3x16x32xf32>, %b2: tensor<32xf32>,
               %w: tensor<6272x10xf32>, %b3: tensor<10xf32>) -> tensor<1x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<1x30x30x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x30x30x16xf32>) -> tensor<1x30x30x16xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k1 : tensor<1x32x32x3xf32>, tensor<3x3x3x16xf32>)
      outs(%z1 : tensor<1x30x30x16xf32>) -> tensor<1x30x30x16xf32>
  %r1 = linalg.generic {
      indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                       affine_map<(n, h, w, c) -> (n, h, w, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1, %b1 : tensor<1x30x30x16xf32>, tensor<16xf32>) outs(%e1 : tensor<1x30x30x16xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x30x30x16xf32>
  %e2 = tensor.empty() : tensor<1x28x28x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x28x28x32xf32>) -> tensor<1x28x28x32xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%r1, %k2 : tensor<1x30x30x16xf32>, tensor<3x3x16x32xf32>)
      outs(%z2 : tensor<1x28x28x32xf32>) -> tensor<1x28x28x32xf32>
  %r2 = linalg.generic {
      indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                       affine_map<(n, h, w, c) -> (n, h, w, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c2, %b2 : tensor<1x28x28x32xf32>, tensor<32xf32>) outs(%e2 : tensor<1x28x28x32xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x28x28x32xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %e3 = tensor.empty() : tensor<1x14x14x32xf32>
  %f3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<1x14x14x32xf32>) -> tensor<1x14x14x32xf32>
  %p = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r2, %window : tensor<1x28x28x32xf32>, tensor<2x2xf32>)
      outs(%f3 : tensor<1x14x14x32xf32>) -> tensor<1x14x14x32xf32>
  %flat = tensor.collapse_shape %p [[0], [1, 2, 3]] : tensor<1x14x14x32xf32> into tensor<1x6272xf32>
  %e4 = tensor.empty() : tensor<1x10xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x10xf32>) -> tensor<1x10xf32>
  %d = linalg.matmul ins(%flat, %w : tensor<1x6272xf32>, tensor<6272x10xf32>)
                     outs(%z4 : tensor<1x10xf32>) -> tensor<1x10xf32>
  %o = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%d, %b3 : tensor<1x10xf32>, tensor<10xf32>) outs(%e4 : tensor<1x10xf32>) {
  ^bb0(%v: f32, %c: f32, %o2: f32):
    %s = arith.addf %v, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x10xf32>
  return %o : tensor<1x10xf32>
}
