// 2-D convolutions (NHWC input, HWCF filter), strided, and a depthwise one.
func.func @conv2d(%x: tensor<1x10x10x3xf32>, %w: tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x10x10x3xf32>, tensor<3x3x3x8xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}
func.func @conv2d_strided(%x: tensor<2x9x9x4xf32>, %w: tensor<3x3x4x6xf32>) -> tensor<2x4x4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4x6xf32>) -> tensor<2x4x4x6xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : tensor<2x9x9x4xf32>, tensor<3x3x4x6xf32>) outs(%init : tensor<2x4x4x6xf32>) -> tensor<2x4x4x6xf32>
  return %r : tensor<2x4x4x6xf32>
}
func.func @depthwise(%x: tensor<1x6x6x4xf32>, %w: tensor<3x3x4xf32>) -> tensor<1x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %r = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x6x6x4xf32>, tensor<3x3x4xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}
