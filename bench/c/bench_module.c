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

/* The C counterparts of the pactum kernels' benchmark functions (examples/kernels): they
 * check their arguments as a careful C export does, and return nothing. */
EXPORT int __tvm_ffi_nop_i3(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)h; (void)result;
  if (n != 3 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt ||
      args[2].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "nop_i3 expects three ints");
    return -1;
  }
  return 0;
}

EXPORT int __tvm_ffi_nop_tensor(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)h; (void)result;
  if (n != 1 || (args[0].type_index != kTVMFFITensor && args[0].type_index != kTVMFFIDLTensorPtr)) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "nop_tensor expects a tensor");
    return -1;
  }
  return 0;
}
