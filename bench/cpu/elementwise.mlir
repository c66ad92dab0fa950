// bench/run_cpu_bench.sh: x * 2 + 1 over 16M floats (64 MiB in, 64 MiB out): one
// memory-bound elementwise dispatch. Compiled at bench time; nothing compiled is committed.
func.func @axpb(%x: tensor<16777216xf32>) -> tensor<16777216xf32> {
  %two = arith.constant dense<2.0> : tensor<16777216xf32>
  %one = arith.constant dense<1.0> : tensor<16777216xf32>
  %y = arith.mulf %x, %two : tensor<16777216xf32>
  %z = arith.addf %y, %one : tensor<16777216xf32>
  return %z : tensor<16777216xf32>
}
