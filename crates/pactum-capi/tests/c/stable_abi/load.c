/*
 * Stable C ABI loader: loads add_one_cpu.so with `ffi.Module.load_from_file.so`,
 * looks the kernel up with `ffi.ModuleGetFunction` and calls it with
 * TVMFFIFunctionCall, using only the C API.
 *
 * usage: stable_abi_load /path/to/add_one_cpu.so
 */
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static int g_failures = 0;

static TVMFFIAny none_any(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFINone;
  return a;
}

static TVMFFIAny raw_str(const char* s) {
  TVMFFIAny a = none_any();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}

static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  *a = none_any();
}

/* print and clear the pending error */
static void report_error(const char* what, int rc) {
  void* err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf("%s: rc=%d", what, rc);
  if (err) {
    const TVMFFIErrorCell* cell = (const TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
    printf(" %.*s: %.*s", (int)cell->kind.size, cell->kind.data, (int)cell->message.size,
           cell->message.data);
    TVMFFIObjectDecRef(err);
  }
  printf("\n");
}

static int call_global(const char* name, TVMFFIAny* args, int n, TVMFFIAny* result) {
  TVMFFIByteArray bname = {name, strlen(name)};
  void* f = NULL;
  int rc = TVMFFIFunctionGetGlobal(&bname, &f);
  if (rc != 0) return rc;
  if (f == NULL) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "global function not found");
    return -1;
  }
  *result = none_any();
  rc = TVMFFIFunctionCall(f, args, n, result);
  TVMFFIObjectDecRef(f);
  return rc;
}

static void print_array(const char* label, const float* v, int n) {
  printf("%s [", label);
  for (int i = 0; i < n; ++i) printf(" %f", v[i]);
  printf(" ]\n");
}

static void make_tensor(DLTensor* t, float* data, int64_t* shape) {
  memset(t, 0, sizeof(*t));
  t->data = data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = 1;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = shape;
  t->strides = NULL;
  t->byte_offset = 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: %s add_one_cpu.so\n", argv[0]);
    return 2;
  }
  /* load the module: (path, format) */
  TVMFFIAny empty_format = none_any();
  empty_format.type_index = kTVMFFISmallStr;
  empty_format.small_str_len = 0;
  TVMFFIAny load_args[2] = {raw_str(argv[1]), empty_format};
  TVMFFIAny mod = none_any();
  int rc = call_global("ffi.Module.load_from_file.so", load_args, 2, &mod);
  if (rc != 0) {
    report_error("load", rc);
    return 1;
  }
  printf("module loaded: type_index=%d\n", mod.type_index);

  TVMFFIAny get_args[3] = {mod, raw_str("add_one_cpu"), none_any()};
  get_args[2].type_index = kTVMFFIBool;
  get_args[2].v_int64 = 0;
  TVMFFIAny func = none_any();
  rc = call_global("ffi.ModuleGetFunction", get_args, 3, &func);
  if (rc != 0 || func.type_index != kTVMFFIFunction) {
    report_error("get function", rc);
    release(&func);
    release(&mod);
    return 1;
  }
  printf("function found: type_index=%d\n", func.type_index);

  /* DLTensor* arguments */
  float x_data[5] = {1, 2, 3, 4, 5};
  float y_data[5] = {0, 0, 0, 0, 0};
  int64_t shape[1] = {5};
  DLTensor x, y;
  make_tensor(&x, x_data, shape);
  make_tensor(&y, y_data, shape);
  TVMFFIAny args[2] = {none_any(), none_any()};
  args[0].type_index = kTVMFFIDLTensorPtr;
  args[0].v_ptr = &x;
  args[1].type_index = kTVMFFIDLTensorPtr;
  args[1].v_ptr = &y;
  TVMFFIAny result = none_any();
  rc = TVMFFIFunctionCall(func.v_obj, args, 2, &result);
  printf("call with DLTensor*: rc=%d result_type=%d\n", rc, result.type_index);
  if (rc != 0) {
    report_error("call", rc);
    g_failures++;
  }
  release(&result);
  print_array("y =", y_data, 5);

  /* Tensor object arguments made from DLPack (no deleter: the data is ours) */
  DLManagedTensor mx, my;
  memset(&mx, 0, sizeof(mx));
  memset(&my, 0, sizeof(my));
  float y2_data[5] = {0, 0, 0, 0, 0};
  make_tensor(&mx.dl_tensor, y_data, shape);
  make_tensor(&my.dl_tensor, y2_data, shape);
  void* tx = NULL;
  void* ty = NULL;
  if (TVMFFITensorFromDLPack(&mx, 0, 1, &tx) != 0 || TVMFFITensorFromDLPack(&my, 0, 1, &ty) != 0) {
    report_error("tensor from dlpack", -1);
    g_failures++;
  } else {
    TVMFFIAny targs[2] = {none_any(), none_any()};
    targs[0].type_index = kTVMFFITensor;
    targs[0].v_obj = (TVMFFIObject*)tx;
    targs[1].type_index = kTVMFFITensor;
    targs[1].v_obj = (TVMFFIObject*)ty;
    result = none_any();
    rc = TVMFFIFunctionCall(func.v_obj, targs, 2, &result);
    printf("call with Tensor objects: rc=%d result_type=%d\n", rc, result.type_index);
    if (rc != 0) {
      report_error("call", rc);
      g_failures++;
    }
    release(&result);
    print_array("y2 =", y2_data, 5);
  }
  if (tx) TVMFFIObjectDecRef(tx);
  if (ty) TVMFFIObjectDecRef(ty);

  /* errors raised by the kernel */
  TVMFFIAny bad[2] = {none_any(), none_any()};
  bad[0].type_index = kTVMFFIInt;
  bad[0].v_int64 = 1;
  bad[1] = args[1];
  result = none_any();
  rc = TVMFFIFunctionCall(func.v_obj, bad, 2, &result);
  report_error("call with an int", rc);
  release(&result);

  int32_t ix[5] = {1, 2, 3, 4, 5};
  DLTensor xi;
  make_tensor(&xi, (float*)ix, shape);
  xi.dtype.code = kDLInt;
  TVMFFIAny wrong_dtype[2] = {args[0], args[1]};
  wrong_dtype[0].v_ptr = &xi;
  result = none_any();
  rc = TVMFFIFunctionCall(func.v_obj, wrong_dtype, 2, &result);
  report_error("call with int32 tensor", rc);
  release(&result);

  result = none_any();
  rc = TVMFFIFunctionCall(func.v_obj, args, 1, &result);
  report_error("call with one argument", rc);
  release(&result);

  release(&func);
  release(&mod);
  printf("stable_abi_load: done failures=%d\n", g_failures);
  return g_failures ? 1 : 0;
}
