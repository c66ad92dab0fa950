/*
 * A small kernel library loaded by conformance/module.c through
 * `ffi.Module.load_from_file.so`. Built with -fvisibility=hidden; only the
 * symbols marked TVM_FFI_DLL_EXPORT are visible.
 *
 * Exported packed functions (prefix __tvm_ffi_):
 *   add_i64(a, b)            -> a + b, TypeError unless two ints
 *   sum_all(...)             -> sum of int arguments
 *   raise_error()            -> ValueError via TVMFFIErrorSetRaisedFromCStr
 *   raise_parts()            -> TypeError via TVMFFIErrorSetRaisedFromCStrParts
 *   handle_is_null()         -> bool, whether the handle argument was NULL
 *   arg_types(...)           -> "t0,t1,..." type indices as received
 *   get_library_ctx()        -> opaque pointer stored in __tvm_ffi__library_ctx
 *   get_context_symbol()     -> opaque pointer in __pactum_test_context_symbol
 *   make_string()            -> a new heap string
 *   call_from_imports(name, x) -> looks `name` up with TVMFFIEnvModLookupFromImports
 *                                 and calls it with x
 *   main()                   -> 1234 (the default entry)
 * plus __tvm_ffi__metadata_add_i64 / __tvm_ffi__doc_add_i64 getters.
 */
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

TVM_FFI_DLL_EXPORT void* __tvm_ffi__library_ctx = NULL;
TVM_FFI_DLL_EXPORT void* __pactum_test_context_symbol = NULL;

static void set_none(TVMFFIAny* r) {
  memset(r, 0, sizeof(*r));
  r->type_index = kTVMFFINone;
}

static void set_int(TVMFFIAny* r, int64_t v) {
  set_none(r);
  r->type_index = kTVMFFIInt;
  r->v_int64 = v;
}

static void set_bool(TVMFFIAny* r, int v) {
  set_none(r);
  r->type_index = kTVMFFIBool;
  r->v_int64 = v != 0;
}

static void set_ptr(TVMFFIAny* r, void* p) {
  set_none(r);
  r->type_index = kTVMFFIOpaquePtr;
  r->v_ptr = p;
}

static int set_string(TVMFFIAny* r, const char* s) {
  TVMFFIByteArray b;
  b.data = s;
  b.size = strlen(s);
  return TVMFFIStringFromByteArray(&b, r);
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_add_i64(void* handle, const TVMFFIAny* args, int32_t num_args,
                                         TVMFFIAny* result) {
  (void)handle;
  if (num_args != 2 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_i64 expects two int arguments");
    return -1;
  }
  set_int(result, args[0].v_int64 + args[1].v_int64);
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_sum_all(void* handle, const TVMFFIAny* args, int32_t num_args,
                                         TVMFFIAny* result) {
  (void)handle;
  int64_t s = 0;
  for (int32_t i = 0; i < num_args; ++i) {
    if (args[i].type_index != kTVMFFIInt) {
      const char* parts[3] = {"sum_all: argument ", "is not an int", NULL};
      TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 3);
      return -1;
    }
    s += args[i].v_int64;
  }
  set_int(result, s);
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_raise_error(void* handle, const TVMFFIAny* args,
                                             int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  TVMFFIErrorSetRaisedFromCStr("ValueError", "sample module raised an error");
  return -1;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_raise_parts(void* handle, const TVMFFIAny* args,
                                             int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  const char* parts[4] = {"Argument 0 mismatch in ", "`raise_parts()`", NULL, ": bad"};
  TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 4);
  return -1;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_handle_is_null(void* handle, const TVMFFIAny* args,
                                                int32_t num_args, TVMFFIAny* result) {
  (void)args;
  (void)num_args;
  set_bool(result, handle == NULL);
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_arg_types(void* handle, const TVMFFIAny* args, int32_t num_args,
                                           TVMFFIAny* result) {
  (void)handle;
  char buf[256];
  buf[0] = '\0';
  for (int32_t i = 0; i < num_args; ++i) {
    char t[16];
    snprintf(t, sizeof(t), "%s%d", i ? "," : "", args[i].type_index);
    strncat(buf, t, sizeof(buf) - strlen(buf) - 1);
  }
  return set_string(result, buf);
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_get_library_ctx(void* handle, const TVMFFIAny* args,
                                                 int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  set_ptr(result, __tvm_ffi__library_ctx);
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_get_context_symbol(void* handle, const TVMFFIAny* args,
                                                    int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  set_ptr(result, __pactum_test_context_symbol);
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_make_string(void* handle, const TVMFFIAny* args,
                                             int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  return set_string(result, "a string made inside the sample module");
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_call_from_imports(void* handle, const TVMFFIAny* args,
                                                   int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  if (num_args != 2 || args[0].type_index != kTVMFFIRawStr) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "call_from_imports(name: rawstr, x)");
    return -1;
  }
  void* f = NULL;
  if (TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx, args[0].v_c_str, &f) != 0) {
    return -1;
  }
  /* f is borrowed: cached by the module */
  TVMFFIAny arg = args[1];
  return TVMFFIFunctionCall(f, &arg, 1, result);
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_main(void* handle, const TVMFFIAny* args, int32_t num_args,
                                      TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  set_int(result, 1234);
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi__metadata_add_i64(void* handle, const TVMFFIAny* args,
                                                   int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  return set_string(result,
                    "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Function\\\",\\\"named_args\\\":"
                    "{\\\"return\\\":[{\\\"type\\\":\\\"int\\\"}],\\\"params\\\":[{\\\"type\\\":"
                    "\\\"int\\\"},{\\\"type\\\":\\\"int\\\"}]}}\"}");
}

TVM_FFI_DLL_EXPORT int __tvm_ffi__doc_add_i64(void* handle, const TVMFFIAny* args,
                                              int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  return set_string(result, "Add two 64-bit integers.");
}
