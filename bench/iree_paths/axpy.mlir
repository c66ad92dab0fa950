// bench/iree_paths: a*x + y over 16M f32 (64 MiB each for x, y and the result), the inputs
// read from `.npy` files: one elementwise dispatch, so a whole process is mostly reading the
// inputs and writing the output, and how a runtime gets a file's tensor into a HAL buffer
// (read into an allocation, or map the file) shows.
func.func @axpy(%a: tensor<f32>, %x: tensor<16777216xf32>, %y: tensor<16777216xf32>) -> tensor<16777216xf32> {
  %init = tensor.empty() : tensor<16777216xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                         iterator_types = ["parallel"]}
      ins(%a, %x, %y : tensor<f32>, tensor<16777216xf32>, tensor<16777216xf32>) outs(%init : tensor<16777216xf32>) {
  ^bb0(%s: f32, %xi: f32, %yi: f32, %o: f32):
    %m = arith.mulf %s, %xi : f32
    %r = arith.addf %m, %yi : f32
    linalg.yield %r : f32
  } -> tensor<16777216xf32>
  return %out : tensor<16777216xf32>
}
