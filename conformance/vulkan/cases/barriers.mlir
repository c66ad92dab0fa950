// A chain of dependent dispatches (matmul, bias, ReLU, a reduction, a second matmul) in one
// command buffer: each reads what the one before wrote, so the barriers between them matter.
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x4xf32>) -> (tensor<8x4xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %he = tensor.empty() : tensor<8x32xf32>
  %hinit = linalg.fill ins(%zero : f32) outs(%he : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%hinit : tensor<8x32xf32>) -> tensor<8x32xf32>
  %hb = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]} ins(%h, %b1 : tensor<8x32xf32>, tensor<32xf32>) outs(%he : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %ye = tensor.empty() : tensor<8x4xf32>
  %yinit = linalg.fill ins(%zero : f32) outs(%ye : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%hb, %w2 : tensor<8x32xf32>, tensor<32x4xf32>) outs(%yinit : tensor<8x4xf32>) -> tensor<8x4xf32>
  %ne = tensor.empty() : tensor<8xf32>
  %ninit = linalg.fill ins(%zero : f32) outs(%ne : tensor<8xf32>) -> tensor<8xf32>
  %n = linalg.reduce ins(%hb : tensor<8x32xf32>) outs(%ninit : tensor<8xf32>) dimensions = [1]
    (%a: f32, %acc: f32) { %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32 }
  return %y, %n : tensor<8x4xf32>, tensor<8xf32>
}
