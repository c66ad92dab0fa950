// Weights loaded from a parameter archive (scope `model`) at initialization.
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<8x4xf32>
util.global private @b = #flow.parameter.named<"model"::"b"> : tensor<4xf32>
func.func @linear(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = util.global.load @w : tensor<8x4xf32>
  %b = util.global.load @b : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x8xf32>, tensor<8x4xf32>) outs(%init : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<2x4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
