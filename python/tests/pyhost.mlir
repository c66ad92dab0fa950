func.func private @pyhost.add(i32, i32) -> i32
func.func private @pyhost.mul64(i64, i64) -> i64
func.func private @pyhost.half(f64) -> f64
func.func private @pyhost.scale(tensor<4xf32>, f32) -> tensor<4xf32>
func.func private @pyhost.calls() -> i32
func.func private @pyhost.fail(i32) -> i32
func.func @add_twice(%a: i32, %b: i32) -> i32 {
  %0 = call @pyhost.add(%a, %b) : (i32, i32) -> i32
  %1 = call @pyhost.add(%0, %b) : (i32, i32) -> i32
  return %1 : i32
}
func.func @mul_half(%a: i64, %b: i64, %c: f64) -> (i64, f64) {
  %0 = call @pyhost.mul64(%a, %b) : (i64, i64) -> i64
  %1 = call @pyhost.half(%c) : (f64) -> f64
  return %0, %1 : i64, f64
}
func.func @scale_plus(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  %0 = call @pyhost.scale(%x, %s) : (tensor<4xf32>, f32) -> tensor<4xf32>
  %1 = arith.addf %0, %x : tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func @calls() -> i32 {
  %0 = call @pyhost.calls() : () -> i32
  return %0 : i32
}
func.func @fail(%a: i32) -> i32 {
  %0 = call @pyhost.fail(%a) : (i32) -> i32
  return %0 : i32
}
