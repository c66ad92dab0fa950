// Compiled with --iree-execution-model=async-external: the exports take a wait fence and a
// signal fence after their tensors (the coarse-fences ABI).
func.func @async_add(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xf32> {
  %0 = arith.addf %a, %b : tensor<6xf32>
  %1 = arith.mulf %0, %0 : tensor<6xf32>
  return %1 : tensor<6xf32>
}
func.func @async_matmul(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
