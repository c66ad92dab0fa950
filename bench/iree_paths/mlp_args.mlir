// bench/iree_paths: an MLP 784-512-512-10 (dense + relu, batch 1) whose weights and biases are
// ARGUMENTS, not constants: every call hands the runtime about 1.7 MB of tensors, so what a
// call costs beyond the matmuls is what the runtime does with its tensor inputs (IREE wraps
// host memory or builds the buffer views once; a copy per call shows here).
func.func @mlp(%x: tensor<1x784xf32>,
               %w1: tensor<784x512xf32>, %b1: tensor<512xf32>,
               %w2: tensor<512x512xf32>, %b2: tensor<512xf32>,
               %w3: tensor<512x10xf32>, %b3: tensor<10xf32>) -> tensor<1x10xf32> {
  %h1 = call @dense(%x, %w1, %b1) : (tensor<1x784xf32>, tensor<784x512xf32>, tensor<512xf32>) -> tensor<1x512xf32>
  %r1 = call @relu(%h1) : (tensor<1x512xf32>) -> tensor<1x512xf32>
  %h2 = call @dense2(%r1, %w2, %b2) : (tensor<1x512xf32>, tensor<512x512xf32>, tensor<512xf32>) -> tensor<1x512xf32>
  %r2 = call @relu(%h2) : (tensor<1x512xf32>) -> tensor<1x512xf32>
  %y = call @dense3(%r2, %w3, %b3) : (tensor<1x512xf32>, tensor<512x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  return %y : tensor<1x10xf32>
}

func.func private @dense(%x: tensor<1x784xf32>, %w: tensor<784x512xf32>, %b: tensor<512xf32>) -> tensor<1x512xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x512xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<1x512xf32>) -> tensor<1x512xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x784xf32>, tensor<784x512xf32>) outs(%fill : tensor<1x512xf32>) -> tensor<1x512xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<1x512xf32>, tensor<512xf32>) outs(%init : tensor<1x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x512xf32>
  return %out : tensor<1x512xf32>
}

func.func private @dense2(%x: tensor<1x512xf32>, %w: tensor<512x512xf32>, %b: tensor<512xf32>) -> tensor<1x512xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x512xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<1x512xf32>) -> tensor<1x512xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x512xf32>, tensor<512x512xf32>) outs(%fill : tensor<1x512xf32>) -> tensor<1x512xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<1x512xf32>, tensor<512xf32>) outs(%init : tensor<1x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x512xf32>
  return %out : tensor<1x512xf32>
}

func.func private @dense3(%x: tensor<1x512xf32>, %w: tensor<512x10xf32>, %b: tensor<10xf32>) -> tensor<1x10xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x10xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<1x10xf32>) -> tensor<1x10xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x512xf32>, tensor<512x10xf32>) outs(%fill : tensor<1x10xf32>) -> tensor<1x10xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<1x10xf32>, tensor<10xf32>) outs(%init : tensor<1x10xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x10xf32>
  return %out : tensor<1x10xf32>
}

func.func private @relu(%x: tensor<1x512xf32>) -> tensor<1x512xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x512xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<1x512xf32>) outs(%init : tensor<1x512xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x512xf32>
  return %out : tensor<1x512xf32>
}
