// Reductions along the inner and the outer axis, and a full reduction.
func.func @sum_rows(%a: tensor<8x33xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.reduce ins(%a : tensor<8x33xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%x: f32, %acc: f32) { %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32 }
  return %r : tensor<8xf32>
}
func.func @max_cols(%a: tensor<8x33xf32>) -> tensor<33xf32> {
  %low = arith.constant -3.0e38 : f32
  %e = tensor.empty() : tensor<33xf32>
  %init = linalg.fill ins(%low : f32) outs(%e : tensor<33xf32>) -> tensor<33xf32>
  %r = linalg.reduce ins(%a : tensor<8x33xf32>) outs(%init : tensor<33xf32>) dimensions = [0]
    (%x: f32, %acc: f32) { %m = arith.maximumf %x, %acc : f32
      linalg.yield %m : f32 }
  return %r : tensor<33xf32>
}
func.func @sum_all_i32(%a: tensor<1000xi32>) -> tensor<i32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<i32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<i32>) -> tensor<i32>
  %r = linalg.reduce ins(%a : tensor<1000xi32>) outs(%init : tensor<i32>) dimensions = [0]
    (%x: i32, %acc: i32) { %s = arith.addi %x, %acc : i32
      linalg.yield %s : i32 }
  return %r : tensor<i32>
}
