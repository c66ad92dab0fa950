// bench/iree_paths: calls between VM functions, in VM code compiled with --compile-mode=vm.
// call_leaf(n) makes n calls of @leaf (kept a call: its inlining policy says never), so a trip
// is a call, a return, their argument and result copies, and the loop around them.
vm.module @vm_calls {
  vm.func private @leaf(%x: i64, %k: i32) -> i64 attributes {inlining_policy = #util.inline.never} {
    %k64 = vm.ext.i32.i64.s %k : i32 -> i64
    %m = vm.mul.i64 %x, %k64 : i64
    %c1 = vm.const.i64 1
    %r = vm.add.i64 %m, %c1 : i64
    vm.return %r : i64
  }
  vm.func @call_leaf(%n: i32) -> i64 {
    %c0 = vm.const.i32 0
    %c1 = vm.const.i32 1
    %x0 = vm.const.i64 1
    %k0 = vm.const.i32 3
    vm.br ^head(%c0, %x0 : i32, i64)
  ^head(%i: i32, %x: i64):
    %more = vm.cmp.lt.i32.s %i, %n : i32
    vm.cond_br %more, ^body, ^exit
  ^body:
    %y = vm.call @leaf(%x, %k0) : (i64, i32) -> i64
    %i1 = vm.add.i32 %i, %c1 : i32
    vm.br ^head(%i1, %y : i32, i64)
  ^exit:
    vm.return %x : i64
  }
  vm.export @call_leaf
}
