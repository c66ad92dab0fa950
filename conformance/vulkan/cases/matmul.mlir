// Matrix products: a plain matmul, a transposed-B matmul and a batched one.
func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%init : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}
func.func @matmul_i32(%a: tensor<7x5xi32>, %b: tensor<5x3xi32>) -> tensor<7x3xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<7x3xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<7x3xi32>) -> tensor<7x3xi32>
  %r = linalg.matmul ins(%a, %b : tensor<7x5xi32>, tensor<5x3xi32>) outs(%init : tensor<7x3xi32>) -> tensor<7x3xi32>
  return %r : tensor<7x3xi32>
}
func.func @batch_matmul(%a: tensor<3x16x8xf32>, %b: tensor<3x8x24xf32>) -> tensor<3x16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x16x24xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3x16x24xf32>) -> tensor<3x16x24xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<3x16x8xf32>, tensor<3x8x24xf32>) outs(%init : tensor<3x16x24xf32>) -> tensor<3x16x24xf32>
  return %r : tensor<3x16x24xf32>
}
