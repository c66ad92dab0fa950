/*
 * Stable C ABI kernel: __tvm_ffi_add_one_cpu(x, y) computes y = x + 1 over
 * float32 CPU tensors. Each argument may be a borrowed DLTensor* (type index
 * 7) or a Tensor object (type index 70, DLTensor at object + 24).
 * Errors are raised with TVMFFIErrorSetRaisedFromCStr. Built with
 * -fvisibility=hidden, so this is the only exported symbol.
 */
#include <stddef.h>
#include <stdint.h>
#include <tvm/ffi/c_api.h>

static DLTensor* as_dltensor(const TVMFFIAny* value) {
  if (value->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)value->v_ptr;
  if (value->type_index == kTVMFFITensor) {
    return (DLTensor*)((char*)value->v_obj + sizeof(TVMFFIObject));
  }
  return NULL;
}

static int is_compact(const DLTensor* t) {
  if (t->strides == NULL) return 1;
  int64_t expect = 1;
  for (int32_t i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->strides[i] != expect) return 0;
    expect *= t->shape[i];
  }
  return 1;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_add_one_cpu(void* handle, const TVMFFIAny* args,
                                             int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)result; /* returns None: the result slot is left as the caller set it */
  if (num_args != 2) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one_cpu takes exactly 2 arguments (x, y)");
    return -1;
  }
  DLTensor* x = as_dltensor(&args[0]);
  DLTensor* y = as_dltensor(&args[1]);
  if (x == NULL || y == NULL) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "add_one_cpu: arguments must be tensors");
    return -1;
  }
  if (x->dtype.code != kDLFloat || x->dtype.bits != 32 || x->dtype.lanes != 1 ||
      y->dtype.code != kDLFloat || y->dtype.bits != 32 || y->dtype.lanes != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one_cpu: tensors must be float32");
    return -1;
  }
  if (x->device.device_type != kDLCPU || y->device.device_type != kDLCPU) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "add_one_cpu: tensors must live on the CPU");
    return -1;
  }
  if (x->ndim != y->ndim) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "add_one_cpu: x and y differ in ndim");
    return -1;
  }
  int64_t n = 1;
  for (int32_t i = 0; i < x->ndim; ++i) {
    if (x->shape[i] != y->shape[i]) {
      TVMFFIErrorSetRaisedFromCStr("ValueError", "add_one_cpu: x and y differ in shape");
      return -1;
    }
    n *= x->shape[i];
  }
  if (!is_compact(x) || !is_compact(y)) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "add_one_cpu: tensors must be contiguous");
    return -1;
  }
  const float* xs = (const float*)((const char*)x->data + x->byte_offset);
  float* ys = (float*)((char*)y->data + y->byte_offset);
  for (int64_t i = 0; i < n; ++i) ys[i] = xs[i] + 1.0f;
  return 0;
}
