// Fills and copies on the command buffer: 1-, 2- and 4-byte splats of odd lengths (IREE's
// driver fills unaligned ranges with its own built-in shaders), slices and concatenations.
func.func @splat_i8(%v: i8) -> tensor<7xi8> {
  %e = tensor.empty() : tensor<7xi8>
  %0 = linalg.fill ins(%v : i8) outs(%e : tensor<7xi8>) -> tensor<7xi8>
  return %0 : tensor<7xi8>
}
func.func @splat_i16(%v: i16) -> tensor<5xi16> {
  %e = tensor.empty() : tensor<5xi16>
  %0 = linalg.fill ins(%v : i16) outs(%e : tensor<5xi16>) -> tensor<5xi16>
  return %0 : tensor<5xi16>
}
func.func @splat_f32(%v: f32) -> tensor<3x3xf32> {
  %e = tensor.empty() : tensor<3x3xf32>
  %0 = linalg.fill ins(%v : f32) outs(%e : tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
func.func @concat(%a: tensor<3x4xf32>, %b: tensor<2x4xf32>) -> tensor<5x4xf32> {
  %0 = tensor.concat dim(0) %a, %b : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}
func.func @slice_i8(%a: tensor<11xi8>) -> tensor<5xi8> {
  %0 = tensor.extract_slice %a[3] [5] [1] : tensor<11xi8> to tensor<5xi8>
  return %0 : tensor<5xi8>
}
