// bench/iree_paths: one matmul with bias and relu on vmvx: 128x256 times 256x128, plus a bias
// row, then max(x, 0); every input an argument, so the dispatch (not constants) is measured.
func.func @matmul_bias_relu(%a: tensor<128x256xf32>, %b: tensor<256x128xf32>,
                            %bias: tensor<128xf32>) -> tensor<128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<128x128xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<128x128xf32>) -> tensor<128x128xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<128x256xf32>, tensor<256x128xf32>)
                      outs(%init : tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<128x128xf32>, tensor<128xf32>) outs(%empty : tensor<128x128xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %s = arith.addf %x, %c : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}
