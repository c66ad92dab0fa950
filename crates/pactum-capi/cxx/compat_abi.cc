// C++ symbols of older apache-tvm-ffi releases that clients built against them still import,
// and that the pinned release (0.1.15.post2) no longer exports. Each one is a thin adapter over
// the current function, taking its arguments in the old release's layout.
//
// The names are listed in compat_symbols.txt (exported by build.rs's version script beside
// the official ones); tests/all/cxx_abi.rs names the same list as the only symbols pactum's
// library exports beyond the official library's.

#include <tvm/ffi/extra/json.h>

// In a named namespace: a type of an anonymous namespace would make the function below local.
namespace pactum_compat {

// tvm::ffi::Optional<int> as apache-tvm-ffi 0.1.11 and 0.1.12 define it: a wrapper of one
// std::optional<int> (libstdc++: the int at offset 0, the engaged flag at offset 4; 8 bytes).
// 0.1.15 keeps Optional<int> in one TVMFFIAny (16 bytes) instead, so the old value cannot be
// read as the new type.
struct OptionalIntOf0112 {
  int value;
  bool engaged;
};
static_assert(sizeof(OptionalIntOf0112) == 8, "0.1.12's Optional<int> is 8 bytes");

}  // namespace pactum_compat

// `String json::Stringify(const json::Value&, Optional<int> indent)`, the 0.1.12 declaration
// (the indent by value; 0.1.15 takes `const Optional<int>&`). tilelang 0.1.15's bundled TVM
// (built against 0.1.12) imports it. Both releases' Optional<int> have a user-provided copy
// constructor, so the Itanium C++ ABI passes the by-value argument as the address of a
// temporary the caller owns and destroys: this function receives a pointer to the old layout,
// and returns the String as the old function does (String is the same 16 bytes in both). The
// asm label gives it the old mangled name without declaring a second overload of Stringify,
// which would make every call with an Optional<int> ambiguous.
__attribute__((visibility("default"))) tvm::ffi::String StringifyWithIndentOf0112(
    const tvm::ffi::json::Value& value, const pactum_compat::OptionalIntOf0112* indent)
    __asm__("_ZN3tvm3ffi4json9StringifyERKNS0_3AnyENS0_8OptionalIivEE");

tvm::ffi::String StringifyWithIndentOf0112(const tvm::ffi::json::Value& value,
                                           const pactum_compat::OptionalIntOf0112* indent) {
  tvm::ffi::Optional<int> current;
  if (indent->engaged) current = indent->value;
  return tvm::ffi::json::Stringify(value, current);
}
