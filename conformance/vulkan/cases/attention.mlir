// Scaled dot-product attention written out: softmax(Q K^T / sqrt(d)) V.
func.func @attention(%q: tensor<16x32xf32>, %k: tensor<24x32xf32>, %v: tensor<24x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.17677669 : f32
  %se = tensor.empty() : tensor<16x24xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%se : tensor<16x24xf32>) -> tensor<16x24xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (j, d)>, affine_map<(i, j, d) -> (i, j)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<16x32xf32>, tensor<24x32xf32>) outs(%sinit : tensor<16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<16x24xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                            iterator_types = ["parallel", "parallel"]} ins(%s : tensor<16x24xf32>) outs(%se : tensor<16x24xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<16x24xf32>
  %p = linalg.softmax dimension(1) ins(%scaled : tensor<16x24xf32>) outs(%se : tensor<16x24xf32>) -> tensor<16x24xf32>
  %oe = tensor.empty() : tensor<16x32xf32>
  %oinit = linalg.fill ins(%zero : f32) outs(%oe : tensor<16x32xf32>) -> tensor<16x32xf32>
  %o = linalg.matmul ins(%p, %v : tensor<16x24xf32>, tensor<24x32xf32>) outs(%oinit : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %o : tensor<16x32xf32>
}
