// A kernel library for jax_smoke.py, compiled at test time against the installed wheel's
// headers and loaded with tvm_ffi.load_module: a typed export over DLPack tensors that JAX
// calls as an FFI target (through jax-tvm-ffi), with a float attribute between its arguments
// and its result.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <cstdint>

namespace ffi = tvm::ffi;

// out = x + scale * y, for 1-d float32 tensors of one length.
static void AddScaled(ffi::TensorView x, ffi::TensorView y, double scale, ffi::TensorView out) {
  TVM_FFI_CHECK(x.ndim() == 1 && y.ndim() == 1 && out.ndim() == 1, ValueError)
      << "add_scaled takes 1-d tensors";
  TVM_FFI_CHECK(x.size(0) == y.size(0) && x.size(0) == out.size(0), ValueError)
      << "add_scaled takes tensors of one length";
  const float* a = static_cast<const float*>(x.data_ptr());
  const float* b = static_cast<const float*>(y.data_ptr());
  float* c = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < x.size(0); ++i) c[i] = a[i] + static_cast<float>(scale) * b[i];
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_scaled, AddScaled);
