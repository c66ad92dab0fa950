// Elementwise f32 and i32 arithmetic, one dispatch each.
func.func @add_mul(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = arith.addf %a, %b : tensor<4x8xf32>
  %1 = arith.mulf %0, %a : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
func.func @exp_tanh(%a: tensor<37xf32>) -> tensor<37xf32> {
  %0 = math.exp %a : tensor<37xf32>
  %1 = math.tanh %0 : tensor<37xf32>
  return %1 : tensor<37xf32>
}
func.func @int_ops(%a: tensor<16xi32>, %b: tensor<16xi32>) -> (tensor<16xi32>, tensor<16xi32>) {
  %0 = arith.muli %a, %b : tensor<16xi32>
  %1 = arith.xori %0, %a : tensor<16xi32>
  %2 = arith.maxsi %a, %b : tensor<16xi32>
  return %1, %2 : tensor<16xi32>, tensor<16xi32>
}
func.func @scalar_operand(%a: tensor<5xf32>, %s: f32) -> tensor<5xf32> {
  %e = tensor.empty() : tensor<5xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%a : tensor<5xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %s : f32
    linalg.yield %y : f32
  } -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
