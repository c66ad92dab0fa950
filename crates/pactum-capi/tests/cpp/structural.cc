/*
 * Structural traversals across the library boundary: a program compiled against the wheel's
 * inline C++ headers that
 *  (1) runs the headers' own walk, visit, map and mutate engines (visitor and mutator objects
 *      made here, with their vtables) over containers, so the library's native __s_visit__ /
 *      __s_mutate__ / __s_maybe_inplace_mutate__ hooks, read from its type-attribute columns,
 *      call back into this program's visitors, and
 *  (2) calls the library's ffi.StructuralWalk / ffi.StructuralMap / ffi.StructuralVisit with
 *      callbacks made here, receiving the library's visitor objects and calling their methods.
 *
 * Only C API functions are imported (run_c_suite.sh checks it).
 */
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/list.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/structural_mutate.h>
#include <tvm/ffi/extra/structural_visit.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

namespace ffi = tvm::ffi;
using ffi::Any;
using ffi::AnyView;
using ffi::Array;
using ffi::Expected;
using ffi::Function;
using ffi::List;
using ffi::Map;
using ffi::Optional;
using ffi::String;
using ffi::StructuralVisitorObj;
using ffi::VisitInterrupt;
using ffi::WalkOrder;
using ffi::WalkResult;

static std::string repr(const Any& value) {
  static Function print = Function::GetGlobalRequired("ffi.ReprPrint");
  return std::string(print(value).cast<String>());
}

static void print_ints(const char* what, const std::vector<int64_t>& ints) {
  std::printf("%s:", what);
  for (int64_t v : ints) std::printf(" %" PRId64, v);
  std::printf("\n");
}

static Any make_root() {
  Map<String, Any> inner{{"k", int64_t{4}}};
  return Array<Any>{int64_t{1}, Array<Any>{int64_t{2}, int64_t{3}}, inner, List<Any>{int64_t{5}}};
}

static void test_header_engines() {
  Any root = make_root();
  std::vector<int64_t> seen;
  auto record = [&](int64_t v) -> Expected<WalkResult> {
    seen.push_back(v);
    return WalkResult::Advance();
  };
  ffi::StructuralWalk<WalkOrder::kPreOrder>(root, record);
  print_ints("header walk pre", seen);

  seen.clear();
  Optional<VisitInterrupt> stop = ffi::StructuralWalk<WalkOrder::kPostOrder>(
      root, [&](int64_t v) -> Expected<WalkResult> {
        seen.push_back(v);
        if (v == 3) return WalkResult::Interrupt(VisitInterrupt(Any(int64_t{30})));
        return WalkResult::Advance();
      });
  print_ints("header walk interrupted", seen);
  std::printf("header walk interrupt value: %s\n",
              stop.has_value() ? repr(stop.value()->value).c_str() : "none");

  seen.clear();
  ffi::StructuralVisit(root, [&](int64_t v, StructuralVisitorObj*) -> Optional<VisitInterrupt> {
    seen.push_back(v);
    return std::nullopt;
  });
  print_ints("header visit", seen);

  Any mapped = ffi::StructuralMap<WalkOrder::kPostOrder>(
      root, [](int64_t v) -> Expected<Any> { return Any(v * 10); });
  std::printf("header map: %s (source %s)\n", repr(mapped).c_str(), repr(root).c_str());

  Any same = ffi::StructuralMap<WalkOrder::kPostOrder>(
      root, [](String s) -> Expected<Any> { return Any(s); });
  std::printf("header map unchanged is the source: %d\n", same.same_as(root) ? 1 : 0);

  Any mutated = ffi::StructuralMutate(
      make_root(), [](int64_t v, ffi::StructuralMutatorObj*) -> Expected<Any> { return Any(-v); });
  std::printf("header mutate (owned root): %s\n", repr(mutated).c_str());
}

static void test_library_engines() {
  Any root = make_root();
  Function walk = Function::GetGlobalRequired("ffi.StructuralWalk");
  Function map = Function::GetGlobalRequired("ffi.StructuralMap");
  Function visit = Function::GetGlobalRequired("ffi.StructuralVisit");
  Function visitor_visit = Function::GetGlobalRequired("ffi.StructuralVisitorVisit");
  Function region = Function::GetGlobalRequired("ffi.StructuralVisitorDefRegionKind");
  int32_t int_index = ffi::TypeIndex::kTVMFFIInt;
  int32_t any_index = ffi::TypeIndex::kTVMFFIAny;

  std::vector<int64_t> seen;
  Function record = Function::FromTyped([&](int64_t v) -> Any {
    seen.push_back(v);
    return Any();
  });
  Array<Any> none;
  walk(root, Array<Any>{Array<Any>{int_index, record}}, none, 1);
  print_ints("library walk post", seen);

  Function times = Function::FromTyped([](int64_t v) { return v * 100; });
  Any mapped = map(root, Array<Any>{Array<Any>{int_index, times}}, none, 0);
  std::printf("library map pre: %s\n", repr(mapped).c_str());

  // A library visitor reaches this callback; its methods are library globals.
  seen.clear();
  Function owner = Function::FromTyped([&](AnyView value, ffi::ObjectRef visitor) -> Any {
    if (value.type_index() == ffi::TypeIndex::kTVMFFIInt) {
      seen.push_back(value.cast<int64_t>());
      return Any();
    }
    seen.push_back(-region(visitor).cast<int64_t>() - 1);
    if (value.type_index() == ffi::TypeIndex::kTVMFFIArray) {
      Array<Any> items = value.cast<Array<Any>>();
      return visitor_visit(visitor, items[items.size() - 1]);
    }
    return Any();
  });
  Any result = visit(root, Array<Any>{Array<Any>{any_index, owner}});
  print_ints("library visit", seen);
  std::printf("library visit result: %s\n", repr(result).c_str());
}

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int failures = 0;
  try {
    test_header_engines();
    test_library_engines();
  } catch (const ffi::Error& e) {
    std::printf("UNEXPECTED exception: %s: %s\n", e.kind().c_str(), e.message().c_str());
    failures++;
  }
  std::printf("cpp_structural: done unexpected=%d\n", failures);
  return failures ? 1 : 0;
}
