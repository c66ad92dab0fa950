// A C++ object file with typed exports (TVM_FFI_DLL_EXPORT_TYPED_FUNC), compiled against the
// installed wheel's headers and loaded by tvm-ffi-orcjit (tvm_smoke.py): the header's C++
// code (typed argument conversion, String, Array, an Error thrown and turned into the C
// error, a global function looked up and called) running as JIT-linked code on whichever
// libtvm_ffi.so the process has.
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>

namespace ffi = tvm::ffi;

static int64_t AddInts(int64_t a, int64_t b) { return a + b; }

static ffi::String Greet(ffi::String name) { return ffi::String("hello, " + std::string(name)); }

static ffi::Array<int64_t> Squares(int64_t n) {
  ffi::Array<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(i * i);
  return out;
}

static int64_t DoubleNonNegative(int64_t x) {
  if (x < 0) TVM_FFI_THROW(ValueError) << "negative input " << x;
  return x * 2;
}

static int64_t CallGlobal(ffi::String name, int64_t x) {
  return ffi::Function::GetGlobalRequired(name)(x).cast<int64_t>();
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_ints, AddInts);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(greet, Greet);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(squares, Squares);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(double_non_negative, DoubleNonNegative);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_global, CallGlobal);
