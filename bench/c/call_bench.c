/*
 * Packed-call overhead from C through TVMFFIFunctionCall, against whichever libtvm_ffi.so the
 * program is linked with. Callees: C callbacks made with TVMFFIFunctionCreate, and functions
 * of a loaded module (ffi.Module.load_from_file.so + ffi.ModuleGetFunction), each with 0 args,
 * 3 ints and 1 tensor. Prints "<case> <ns per call>" for one timed repetition.
 *
 * usage: call_bench MODULE.so CALLS [CASE]   (CASE runs only the case of that name)
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tvm/ffi/c_api.h>

static int cb_nop(void* h, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) {
  (void)h; (void)a; (void)n; (void)r;
  return 0;
}
static int cb_add3(void* h, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) {
  (void)h; (void)n;
  r->type_index = kTVMFFIInt;
  r->zero_padding = 0;
  r->v_int64 = a[0].v_int64 + a[1].v_int64 + a[2].v_int64;
  return 0;
}
static int cb_tensor(void* h, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) {
  (void)h; (void)n;
  const DLTensor* t = (const DLTensor*)((const char*)a[0].v_obj + sizeof(TVMFFIObject));
  r->type_index = kTVMFFIInt;
  r->zero_padding = 0;
  r->v_int64 = t->ndim;
  return 0;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char* what) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  fprintf(stderr, "%s failed", what);
  if (err) {
    TVMFFIErrorCell* cell = (TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
    fprintf(stderr, ": %.*s: %.*s", (int)cell->kind.size, cell->kind.data, (int)cell->message.size,
            cell->message.data);
  }
  fprintf(stderr, "\n");
  exit(1);
}

static TVMFFIObjectHandle global(const char* name) {
  TVMFFIByteArray bytes = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionGetGlobal(&bytes, &f) != 0 || f == NULL) die(name);
  return f;
}

static TVMFFIObjectHandle module_function(TVMFFIObjectHandle module, const char* name) {
  TVMFFIAny args[3];
  memset(args, 0, sizeof(args));
  args[0].type_index = kTVMFFIModule;
  args[0].v_obj = (TVMFFIObject*)module;
  args[1].type_index = kTVMFFIRawStr;
  args[1].v_c_str = name;
  args[2].type_index = kTVMFFIBool;
  TVMFFIAny out;
  memset(&out, 0, sizeof(out));
  if (TVMFFIFunctionCall(global("ffi.ModuleGetFunction"), args, 3, &out) != 0 || out.type_index != kTVMFFIFunction)
    die(name);
  return out.v_obj;
}

static const char* only_case = NULL;

__attribute__((noinline)) static void time_calls(const char* label, TVMFFIObjectHandle f, TVMFFIAny* args, int32_t n, long calls) {
  if (only_case && strcmp(only_case, label) != 0) return;
  TVMFFIAny result;
  memset(&result, 0, sizeof(result));
  /* Warm up, then time. */
  for (long i = 0; i < calls / 10; ++i) TVMFFIFunctionCall(f, args, n, &result);
  double start = now_ns();
  for (long i = 0; i < calls; ++i) {
    result.type_index = kTVMFFINone;
    if (TVMFFIFunctionCall(f, args, n, &result) != 0) die(label);
  }
  double elapsed = now_ns() - start;
  printf("%s %.3f\n", label, elapsed / (double)calls);
}

static void noop_deleter(DLManagedTensor* self) { (void)self; }

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s MODULE.so CALLS [CASE]\n", argv[0]);
    return 2;
  }
  long calls = atol(argv[2]);
  if (argc == 4) only_case = argv[3];

  TVMFFIAny ints[3];
  memset(ints, 0, sizeof(ints));
  for (int i = 0; i < 3; ++i) {
    ints[i].type_index = kTVMFFIInt;
    ints[i].v_int64 = i + 1;
  }
  static float data[16];
  static int64_t shape[1] = {16};
  static DLManagedTensor managed;
  managed.dl_tensor.data = data;
  managed.dl_tensor.device.device_type = kDLCPU;
  managed.dl_tensor.ndim = 1;
  managed.dl_tensor.dtype.code = kDLFloat;
  managed.dl_tensor.dtype.bits = 32;
  managed.dl_tensor.dtype.lanes = 1;
  managed.dl_tensor.shape = shape;
  managed.deleter = noop_deleter;
  TVMFFIObjectHandle tensor = NULL;
  if (TVMFFITensorFromDLPack(&managed, 0, 0, &tensor) != 0) die("TVMFFITensorFromDLPack");
  TVMFFIAny tensor_arg;
  memset(&tensor_arg, 0, sizeof(tensor_arg));
  tensor_arg.type_index = kTVMFFITensor;
  tensor_arg.v_obj = (TVMFFIObject*)tensor;

  TVMFFIObjectHandle nop = NULL, add3 = NULL, tndim = NULL;
  if (TVMFFIFunctionCreate(NULL, cb_nop, NULL, &nop) || TVMFFIFunctionCreate(NULL, cb_add3, NULL, &add3) ||
      TVMFFIFunctionCreate(NULL, cb_tensor, NULL, &tndim))
    die("TVMFFIFunctionCreate");
  time_calls("callback_args0", nop, NULL, 0, calls);
  time_calls("callback_ints3", add3, ints, 3, calls);
  time_calls("callback_tensor1", tndim, &tensor_arg, 1, calls);

  TVMFFIAny load_args[2];
  memset(load_args, 0, sizeof(load_args));
  load_args[0].type_index = kTVMFFIRawStr;
  load_args[0].v_c_str = argv[1];
  load_args[1].type_index = kTVMFFIRawStr;
  load_args[1].v_c_str = "so";
  TVMFFIAny module;
  memset(&module, 0, sizeof(module));
  if (TVMFFIFunctionCall(global("ffi.Module.load_from_file.so"), load_args, 2, &module) != 0) die("load module");
  time_calls("module_args0", module_function(module.v_obj, "nop"), NULL, 0, calls);
  time_calls("module_ints3", module_function(module.v_obj, "add3"), ints, 3, calls);
  time_calls("module_tensor1", module_function(module.v_obj, "tensor_ndim"), &tensor_arg, 1, calls);
  return 0;
}
