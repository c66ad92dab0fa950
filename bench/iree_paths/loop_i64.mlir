// bench/iree_paths: a scalar loop the compiler turns into VM code (no dispatch): the sum of
// (i * 7) xor i over 0..n in i64, so the VM's i64 arithmetic, compare and branch dominate.
func.func @loop_i64(%n: i64) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : i64
  %zero = arith.constant 0 : i64
  %ub = arith.index_cast %n : i64 to index
  %sum = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %zero) -> (i64) {
    %v = arith.index_cast %i : index to i64
    %m = arith.muli %v, %c7 : i64
    %x = arith.xori %m, %v : i64
    %next = arith.addi %acc, %x : i64
    scf.yield %next : i64
  }
  return %sum : i64
}
