/*
 * A C module loaded by a pure-Rust host (tests/all/modules.rs). It is linked against
 * libtvm_ffi.so (NEEDED, no rpath): in the Rust process that name is served by pactum's
 * in-memory forwarder, so every C API call below must reach the host's own runtime.
 */
#include <stdint.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void* __tvm_ffi__library_ctx = NULL;

static int set_int(TVMFFIAny* result, int64_t value) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = value;
  return 0;
}

/* add_i64(a: int, b: int) -> int */
EXPORT int __tvm_ffi_add_i64(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  if (num_args != 2 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_i64 expects two int arguments");
    return -1;
  }
  return set_int(result, args[0].v_int64 + args[1].v_int64);
}

/* fail() raises a ValueError through the C API. */
EXPORT int __tvm_ffi_fail(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle; (void)args; (void)num_args; (void)result;
  const char* parts[] = {"failure ", NULL, "from a C module"};
  TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 3);
  return -1;
}

/* call_global(name: str, x: int) -> Any: calls a global function of the host's registry. */
EXPORT int __tvm_ffi_call_global(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  if (num_args != 2) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "call_global expects (name, x)");
    return -1;
  }
  TVMFFIByteArray name;
  if (args[0].type_index == kTVMFFISmallStr) {
    name.data = args[0].v_bytes;
    name.size = args[0].small_str_len;
  } else if (args[0].type_index == kTVMFFIStr) {
    name = *(TVMFFIByteArray*)((char*)args[0].v_obj + sizeof(TVMFFIObject));
  } else {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "call_global: name must be a string");
    return -1;
  }
  TVMFFIObjectHandle function = NULL;
  if (TVMFFIFunctionGetGlobal(&name, &function) != 0) return -1;
  if (function == NULL) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "call_global: no such global function");
    return -1;
  }
  TVMFFIAny call_args[1] = {args[1]};
  int rc = TVMFFIFunctionCall(function, call_args, 1, result);
  TVMFFIObjectDecRef(function);
  return rc;
}

/* via_context(x: int) -> Any: resolves `pactum.test.triple` through the library context. */
EXPORT int __tvm_ffi_via_context(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  TVMFFIObjectHandle function = NULL;
  if (TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx, "pactum.test.triple", &function) != 0) return -1;
  return TVMFFIFunctionCall(function, (TVMFFIAny*)args, num_args, result);
}

static int return_string(TVMFFIAny* result, const char* text) {
  TVMFFIByteArray bytes = {text, strlen(text)};
  return TVMFFIStringFromByteArray(&bytes, result);
}

EXPORT int __tvm_ffi__metadata_add_i64(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle; (void)args; (void)num_args;
  return return_string(result,
      "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Function\\\",\\\"named_args\\\":{\\\"return\\\":[{\\\"type\\\":\\\"int\\\"}],"
      "\\\"params\\\":[{\\\"type\\\":\\\"int\\\"},{\\\"type\\\":\\\"int\\\"}]}}\"}");
}

EXPORT int __tvm_ffi__doc_add_i64(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle; (void)args; (void)num_args;
  return return_string(result, "Adds two integers.");
}
