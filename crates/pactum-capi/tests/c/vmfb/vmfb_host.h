/* What the .vmfb C programs share: TVMFFIAny constructors, calls that exit with the raised
 * error on failure, and module function lookup through pactum's libtvm_ffi.so. Static helpers,
 * included by one program each. */
#ifndef PACTUM_TESTS_VMFB_HOST_H_
#define PACTUM_TESTS_VMFB_HOST_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static void fail(const char* what) {
  TVMFFIObjectHandle error = NULL;
  TVMFFIErrorMoveFromRaised(&error);
  if (error) {
    TVMFFIErrorCell* cell = (TVMFFIErrorCell*)((char*)error + sizeof(TVMFFIObject));
    fprintf(stderr, "%s failed: %.*s: %.*s\n", what, (int)cell->kind.size, cell->kind.data,
            (int)cell->message.size, cell->message.data);
    TVMFFIObjectDecRef(error);
  } else {
    fprintf(stderr, "%s failed\n", what);
  }
  exit(1);
}

static TVMFFIAny none(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFINone;
  return a;
}

static TVMFFIAny any_int(int64_t v) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static TVMFFIAny any_float(double v) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIFloat;
  a.v_float64 = v;
  return a;
}

static TVMFFIAny any_str(const char* s) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}

static TVMFFIAny any_obj(void* obj) {
  TVMFFIAny a = none();
  a.type_index = ((TVMFFIObject*)obj)->type_index;
  a.v_obj = (TVMFFIObject*)obj;
  return a;
}

static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  *a = none();
}

static TVMFFIAny call(void* function, const char* what, TVMFFIAny* args, int n) {
  TVMFFIAny result = none();
  if (TVMFFIFunctionCall(function, args, n, &result) != 0) fail(what);
  return result;
}

static TVMFFIAny call_global(const char* name, TVMFFIAny* args, int n) {
  TVMFFIByteArray bytes = {name, strlen(name)};
  TVMFFIObjectHandle function = NULL;
  if (TVMFFIFunctionGetGlobal(&bytes, &function) != 0 || function == NULL) fail(name);
  TVMFFIAny result = call(function, name, args, n);
  TVMFFIObjectDecRef(function);
  return result;
}

/* ffi.ModuleGetFunction(module, name, query_imports=true): the function, or NULL for None. */
static void* get_function(void* module, const char* name) {
  TVMFFIAny args[3] = {any_obj(module), any_str(name), any_int(1)};
  args[2].type_index = kTVMFFIBool;
  TVMFFIAny result = call_global("ffi.ModuleGetFunction", args, 3);
  if (result.type_index == kTVMFFINone) return NULL;
  if (result.type_index != kTVMFFIFunction) {
    fprintf(stderr, "ModuleGetFunction(%s) returned type %d\n", name, result.type_index);
    exit(1);
  }
  return result.v_obj;
}

static TVMFFIAny array_item(TVMFFIAny* array, int64_t index) {
  TVMFFIAny args[2] = {*array, any_int(index)};
  return call_global("ffi.ArrayGetItem", args, 2);
}

#endif  /* PACTUM_TESTS_VMFB_HOST_H_ */
