/* Module functions for the call benchmark: a no-op, an int sum, and a tensor reader. */
#include <tvm/ffi/c_api.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int __tvm_ffi_nop(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)h; (void)args; (void)n; (void)result;
  return 0;
}

EXPORT int __tvm_ffi_add3(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)h; (void)n;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + args[1].v_int64 + args[2].v_int64;
  return 0;
}

EXPORT int __tvm_ffi_tensor_ndim(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)h; (void)n;
  const DLTensor* t = args[0].type_index == kTVMFFIDLTensorPtr
                          ? (const DLTensor*)args[0].v_ptr
                          : (const DLTensor*)((const char*)args[0].v_obj + sizeof(TVMFFIObject));
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = t->ndim;
  return 0;
}
