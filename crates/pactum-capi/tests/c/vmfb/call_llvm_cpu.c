/* Calls an llvm-cpu .vmfb (native code run by pactum's HAL) through pactum's libtvm_ffi.so:
 * `ffi.ModuleLoadFromFile`, `ffi.ModuleGetFunction`, TVMFFIFunctionCall, with scalars and with
 * tensors the program makes itself and hands over with TVMFFITensorFromDLPack.
 *
 * Usage: call_llvm_cpu multi_export_llvm_cpu.vmfb
 * Prints one line per call (`add <i64>`, `mul_add <f64>`, `twice_i64 <i64>`,
 * `add_vec <shape> <f32>...`, `scale_dyn <f32>... <i64>`), then `inputs_deleted <n>` (the
 * DLPack deleters run once the tensors are released) and `nope absent`. Floats are printed
 * with %.17g so the Rust driver (tests/all/vmfb_c.rs) compares them exactly with the same calls
 * made in-process; exits 1 on any failure, with the error on stderr. */
#include "vmfb_host.h"

/* Calls export `name` of `module` with `args`. */
static TVMFFIAny call_export(void* module, const char* name, TVMFFIAny* args, int n) {
  void* function = get_function(module, name);
  if (!function) fail(name);
  TVMFFIAny result = call(function, name, args, n);
  TVMFFIObjectDecRef(function);
  return result;
}

/* ------------------------------------------------------------ tensors made here (DLPack) */

typedef struct {
  DLManagedTensor managed;
  int64_t shape[1];
  float data[8];
} Owned;

static int g_deleted = 0;

static void delete_owned(DLManagedTensor* self) {
  g_deleted++;
  free(self->manager_ctx);
}

/* A CPU float32 vector of `n` values (n <= 8), as a pactum tensor object. */
static TVMFFIAny f32_vector(const float* values, int64_t n) {
  Owned* owned = calloc(1, sizeof(Owned));
  if (!owned) exit(1);
  owned->shape[0] = n;
  memcpy(owned->data, values, (size_t)n * sizeof(float));
  DLTensor* t = &owned->managed.dl_tensor;
  t->data = owned->data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = 1;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = owned->shape;
  t->strides = NULL;
  t->byte_offset = 0;
  owned->managed.manager_ctx = owned;
  owned->managed.deleter = delete_owned;
  TVMFFIObjectHandle tensor = NULL;
  if (TVMFFITensorFromDLPack(&owned->managed, 0, 1, &tensor) != 0) fail("TensorFromDLPack");
  return any_obj(tensor);
}

/* Prints a float32 tensor result: its shape, then its values. */
static void print_f32_tensor(const char* label, TVMFFIAny* value) {
  if (value->type_index != kTVMFFITensor) {
    fprintf(stderr, "%s: not a tensor (type %d)\n", label, value->type_index);
    exit(1);
  }
  DLTensor* t = (DLTensor*)((char*)value->v_obj + sizeof(TVMFFIObject));
  if (t->device.device_type != kDLCPU || t->dtype.code != kDLFloat || t->dtype.bits != 32 ||
      t->ndim != 1) {
    fprintf(stderr, "%s: unexpected tensor\n", label);
    exit(1);
  }
  const float* data = (const float*)((const char*)t->data + t->byte_offset);
  printf("%s %lld", label, (long long)t->shape[0]);
  for (int64_t i = 0; i < t->shape[0]; ++i) printf(" %.17g", (double)data[i]);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODULE.vmfb\n", argv[0]);
    return 2;
  }
  TVMFFIAny path = any_str(argv[1]);
  TVMFFIAny module = call_global("ffi.ModuleLoadFromFile", &path, 1);
  if (module.type_index != kTVMFFIModule) {
    fprintf(stderr, "ModuleLoadFromFile returned type %d\n", module.type_index);
    return 1;
  }
  void* m = module.v_obj;

  TVMFFIAny add_args[2] = {any_int(7), any_int(35)};
  TVMFFIAny sum = call_export(m, "add", add_args, 2);
  if (sum.type_index != kTVMFFIInt) fail("add result type");
  printf("add %lld\n", (long long)sum.v_int64);

  TVMFFIAny mul_add_args[3] = {any_float(1.5), any_float(4), any_float(0.25)};
  TVMFFIAny fused = call_export(m, "mul_add", mul_add_args, 3);
  if (fused.type_index != kTVMFFIFloat) fail("mul_add result type");
  printf("mul_add %.17g\n", fused.v_float64);

  TVMFFIAny twice_args[1] = {any_int(4294967296LL)};
  TVMFFIAny twice = call_export(m, "twice_i64", twice_args, 1);
  if (twice.type_index != kTVMFFIInt) fail("twice_i64 result type");
  printf("twice_i64 %lld\n", (long long)twice.v_int64);

  static const float a[4] = {1, 2, 3, 4};
  static const float b[4] = {10, 20, 30, 40.5f};
  TVMFFIAny vec_args[2] = {f32_vector(a, 4), f32_vector(b, 4)};
  TVMFFIAny vec = call_export(m, "add_vec", vec_args, 2);
  print_f32_tensor("add_vec", &vec);
  printf("\n");
  release(&vec);

  static const float c[3] = {1, -2, 3.5f};
  TVMFFIAny scale_args[2] = {f32_vector(c, 3), any_float(0.5)};
  TVMFFIAny scaled = call_export(m, "scale_dyn", scale_args, 2);
  if (scaled.type_index != kTVMFFIArray) fail("scale_dyn result type");
  TVMFFIAny s0 = array_item(&scaled, 0), s1 = array_item(&scaled, 1);
  if (s1.type_index != kTVMFFIInt) fail("scale_dyn result 1 type");
  print_f32_tensor("scale_dyn", &s0);
  printf(" %lld\n", (long long)s1.v_int64);
  release(&s0);
  release(&scaled);

  for (int i = 0; i < 2; ++i) release(&vec_args[i]);
  release(&scale_args[0]);
  printf("inputs_deleted %d\n", g_deleted);

  void* nope = get_function(m, "nope");
  printf("nope %s\n", nope ? "present" : "absent");
  if (nope) TVMFFIObjectDecRef(nope);

  release(&module);
  return 0;
}
