// bench/iree_paths: a scalar f32 loop the compiler turns into VM code (no dispatch): n trips
// of acc = acc * 0.5 + x, so the VM's f32 arithmetic, the index compare and the branch dominate.
func.func @loop_f32(%n: i64, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %ub = arith.index_cast %n : i64 to index
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %zero) -> (f32) {
    %m = arith.mulf %acc, %half : f32
    %next = arith.addf %m, %x : f32
    scf.yield %next : f32
  }
  return %r : f32
}
