// bench/iree_paths: list traffic in VM code compiled with --compile-mode=vm. list_loop(n)
// reads one element of a list<i32> of 16 and writes the next at every trip.
vm.module @vm_lists {
  vm.func @list_loop(%n: i32) -> i32 {
    %c0 = vm.const.i32 0
    %c1 = vm.const.i32 1
    %c15 = vm.const.i32 15
    %c16 = vm.const.i32 16
    %l = vm.list.alloc %c16 : (i32) -> !vm.list<i32>
    vm.list.resize %l, %c16 : (!vm.list<i32>, i32)
    vm.br ^head(%c0 : i32)
  ^head(%i: i32):
    %more = vm.cmp.lt.i32.s %i, %n : i32
    vm.cond_br %more, ^body, ^exit
  ^body:
    %a = vm.and.i32 %i, %c15 : i32
    %v = vm.list.get.i32 %l, %a : (!vm.list<i32>, i32) -> i32
    %i1 = vm.add.i32 %i, %c1 : i32
    %b = vm.and.i32 %i1, %c15 : i32
    %w = vm.add.i32 %v, %i : i32
    vm.list.set.i32 %l, %b, %w : (!vm.list<i32>, i32, i32)
    vm.br ^head(%i1 : i32)
  ^exit:
    %r = vm.list.get.i32 %l, %c0 : (!vm.list<i32>, i32) -> i32
    vm.return %r : i32
  }
  vm.export @list_loop
}
