/*
 * Host (b): a C program that loads the pactum example kernels through the C API only.
 *
 *   host /path/to/libpactum_example_kernels.so
 *
 * Built from the official wheel's headers and linked against a libtvm_ffi.so: the official
 * one, or pactum's drop-in (tests/all/c_host.rs builds both and compares their output). The
 * kernels library carries its own copy of pactum, which binds to whichever libtvm_ffi.so this
 * program loaded, so the errors it raises must arrive in this program's error slot
 * (TVMFFIErrorMoveFromRaised).
 *
 * stdout holds deterministic lines only (no pointers, no backtraces), so the two runs can be
 * compared byte for byte. Every check prints "ok" or "FAIL"; the exit status is 1 if any
 * failed. stderr names the libtvm_ffi.so that serves the process ("runtime: PATH").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static int g_failures = 0;

static void check(int ok, const char* what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) g_failures++;
}

/* ------------------------------------------------------------------ values */

static TVMFFIAny any_none(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFINone;
  return a;
}

static TVMFFIAny any_int(int64_t v) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static TVMFFIAny any_bool(int v) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIBool;
  a.v_int64 = v != 0;
  return a;
}

static TVMFFIAny any_float(double v) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIFloat;
  a.v_float64 = v;
  return a;
}

static TVMFFIAny any_str(const char* s) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}

static TVMFFIAny any_obj(int32_t type_index, void* obj) {
  TVMFFIAny a = any_none();
  a.type_index = type_index;
  a.v_obj = (TVMFFIObject*)obj;
  return a;
}

static TVMFFIAny any_dltensor(DLTensor* t) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIDLTensorPtr;
  a.v_ptr = t;
  return a;
}

static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  *a = any_none();
}

static void* cell_of(void* obj) { return (char*)obj + sizeof(TVMFFIObject); }

/* The text of a string or bytes value (small, heap or raw), or NULL. */
static TVMFFIByteArray text_of(const TVMFFIAny* a) {
  TVMFFIByteArray out = {NULL, 0};
  switch (a->type_index) {
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      out.data = a->v_bytes;
      out.size = a->small_str_len;
      break;
    case kTVMFFIStr:
    case kTVMFFIBytes:
      out = *(TVMFFIByteArray*)cell_of(a->v_obj);
      break;
    case kTVMFFIRawStr:
      out.data = a->v_c_str;
      out.size = strlen(a->v_c_str);
      break;
    default:
      break;
  }
  return out;
}

static int text_equals(const TVMFFIAny* a, const char* expected, size_t size) {
  TVMFFIByteArray t = text_of(a);
  return t.data != NULL && t.size == size && memcmp(t.data, expected, size) == 0;
}

static void print_text(const char* label, const TVMFFIAny* a) {
  TVMFFIByteArray t = text_of(a);
  printf("%s (type_index %d): \"%.*s\"\n", label, a->type_index, (int)t.size,
         t.data ? t.data : "");
}

static void print_floats(const char* label, const float* v, int64_t n) {
  printf("%s [", label);
  for (int64_t i = 0; i < n; ++i) printf(" %g", v[i]);
  printf(" ]\n");
}

/* ------------------------------------------------------------------ errors */

typedef struct {
  char kind[64];
  char message[512];
} ErrorText;

/* Moves the raised error out of this thread's slot; 0 if the slot was empty. */
static int take_error(ErrorText* out) {
  void* err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  memset(out, 0, sizeof(*out));
  if (err == NULL) return 0;
  TVMFFIErrorCell* cell = (TVMFFIErrorCell*)cell_of(err);
  snprintf(out->kind, sizeof(out->kind), "%.*s", (int)cell->kind.size, cell->kind.data);
  snprintf(out->message, sizeof(out->message), "%.*s", (int)cell->message.size,
           cell->message.data);
  TVMFFIObjectDecRef(err);
  return 1;
}

/* A call that must fail with `kind` and exactly `message` (or, when `exact` is 0, a message
 * containing it). Prints what arrived in this program's error slot. */
static void expect_error(const char* what, int rc, const char* kind, const char* message,
                         int exact) {
  ErrorText e;
  int found = take_error(&e);
  printf("%s: rc=%d kind=%s message=%s\n", what, rc, found ? e.kind : "<none>",
         found ? e.message : "<none>");
  int ok = rc == -1 && found && strcmp(e.kind, kind) == 0 &&
           (exact ? strcmp(e.message, message) == 0 : strstr(e.message, message) != NULL);
  check(ok, what);
}

static void expect_success(const char* what, int rc) {
  if (rc != 0) {
    ErrorText e;
    take_error(&e);
    printf("%s: rc=%d kind=%s message=%s\n", what, rc, e.kind, e.message);
  }
  check(rc == 0, what);
}

/* ------------------------------------------------------------------ calls */

static int call_global(const char* name, TVMFFIAny* args, int n, TVMFFIAny* result) {
  TVMFFIByteArray bname = {name, strlen(name)};
  void* f = NULL;
  *result = any_none();
  int rc = TVMFFIFunctionGetGlobal(&bname, &f);
  if (rc != 0) return rc;
  if (f == NULL) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "global function not found");
    return -1;
  }
  rc = TVMFFIFunctionCall(f, args, n, result);
  TVMFFIObjectDecRef(f);
  return rc;
}

static void* g_module = NULL;

/* The module's function `name` (owned), or NULL. */
static void* get_function(const char* name) {
  TVMFFIAny args[3] = {any_obj(kTVMFFIModule, g_module), any_str(name), any_bool(0)};
  TVMFFIAny result;
  int rc = call_global("ffi.ModuleGetFunction", args, 3, &result);
  if (rc != 0) {
    ErrorText e;
    take_error(&e);
    printf("ModuleGetFunction(%s): rc=%d %s: %s\n", name, rc, e.kind, e.message);
    return NULL;
  }
  if (result.type_index != kTVMFFIFunction) {
    release(&result);
    return NULL;
  }
  return result.v_obj;
}

/* Calls module function `name`; *result receives the owned result. */
static int call(const char* name, TVMFFIAny* args, int n, TVMFFIAny* result) {
  *result = any_none();
  void* f = get_function(name);
  if (f == NULL) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "module function not found");
    return -1;
  }
  int rc = TVMFFIFunctionCall(f, args, n, result);
  TVMFFIObjectDecRef(f);
  return rc;
}

/* ------------------------------------------------------------------ tensors */

static void make_tensor(DLTensor* t, void* data, int32_t ndim, int64_t* shape, uint8_t code,
                        uint8_t bits) {
  memset(t, 0, sizeof(*t));
  t->data = data;
  t->device.device_type = kDLCPU;
  t->ndim = ndim;
  t->dtype.code = code;
  t->dtype.bits = bits;
  t->dtype.lanes = 1;
  t->shape = shape;
}

static int g_dlpack_deleted = 0;

static void count_dlpack_delete(DLManagedTensor* self) {
  (void)self;
  g_dlpack_deleted++;
}

/* Prints a float32 tensor result and checks its shape. */
static void check_tensor_result(const char* what, const TVMFFIAny* r, int32_t ndim,
                                const int64_t* shape, const float* expected) {
  if (r->type_index != kTVMFFITensor) {
    printf("%s: result type_index %d\n", what, r->type_index);
    check(0, what);
    return;
  }
  DLTensor* t = (DLTensor*)cell_of(r->v_obj);
  printf("%s: ndim=%d shape=[", what, t->ndim);
  int64_t numel = 1;
  int ok = t->ndim == ndim && t->dtype.code == kDLFloat && t->dtype.bits == 32 &&
           t->dtype.lanes == 1 && t->device.device_type == kDLCPU;
  for (int32_t i = 0; i < t->ndim; ++i) {
    printf(i ? ",%" PRId64 : "%" PRId64, t->shape[i]);
    numel *= t->shape[i];
    if (i < ndim && t->shape[i] != shape[i]) ok = 0;
  }
  printf("] dtype=%d/%d\n", t->dtype.code, t->dtype.bits);
  if (ok) {
    const float* values = (const float*)((char*)t->data + t->byte_offset);
    print_floats("  values", values, numel);
    for (int64_t i = 0; i < numel; ++i) ok = ok && fabsf(values[i] - expected[i]) < 1e-6f;
  }
  check(ok, what);
}

/* ------------------------------------------------------------------ callbacks */

typedef struct {
  int calls;
  int64_t last_arg;
  int64_t add;
  int64_t multiply;
} Callback;

static int g_callbacks_deleted = 0;

/* self(x) = x * multiply + add */
static int arithmetic_callback(void* self, const TVMFFIAny* args, int32_t num_args,
                               TVMFFIAny* result) {
  Callback* state = (Callback*)self;
  state->calls++;
  if (num_args != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "the C callback takes one int");
    return -1;
  }
  state->last_arg = args[0].v_int64;
  *result = any_int(args[0].v_int64 * state->multiply + state->add);
  return 0;
}

static int raising_callback(void* self, const TVMFFIAny* args, int32_t num_args,
                            TVMFFIAny* result) {
  (void)args;
  (void)num_args;
  (void)result;
  ((Callback*)self)->calls++;
  TVMFFIErrorSetRaisedFromCStr("IndexError", "raised by a C callback");
  return -1;
}

static void delete_callback(void* self) {
  (void)self;
  g_callbacks_deleted++;
}

static void* make_callback(Callback* state, TVMFFISafeCallType body) {
  void* f = NULL;
  if (TVMFFIFunctionCreate(state, body, delete_callback, &f) != 0) {
    ErrorText e;
    take_error(&e);
    printf("TVMFFIFunctionCreate: %s: %s\n", e.kind, e.message);
    return NULL;
  }
  return f;
}

/* ------------------------------------------------------------------ main */

/* The path of the libtvm_ffi.so serving this program (or ""). */
static const char* runtime_path(void) {
  Dl_info info;
  memset(&info, 0, sizeof(info));
  if (dladdr((void*)&TVMFFIFunctionCall, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 2) {
    fprintf(stderr, "usage: %s libpactum_example_kernels.so\n", argv[0]);
    return 2;
  }
  fprintf(stderr, "runtime: %s\n", runtime_path());

  /* ---- load */
  TVMFFIAny load_args[2] = {any_str(argv[1]), any_str("")};
  TVMFFIAny mod;
  int rc = call_global("ffi.Module.load_from_file.so", load_args, 2, &mod);
  expect_success("load the kernels library", rc);
  if (rc != 0 || mod.type_index != kTVMFFIModule) return 1;
  g_module = mod.v_obj;
  {
    void* found = get_function("add_one");
    void* missing = get_function("not_exported");
    check(found != NULL && missing == NULL, "ModuleGetFunction finds exports and only exports");
    if (found) TVMFFIObjectDecRef(found);
  }

  TVMFFIAny r;
  ErrorText none;

  /* ---- the library's copy of pactum binds to this program's libtvm_ffi.so */
  {
    rc = call("runtime_binding", NULL, 0, &r);
    expect_success("runtime_binding", rc);
    char expected[4096];
    snprintf(expected, sizeof(expected), "host:%s", runtime_path());
    check(text_equals(&r, expected, strlen(expected)),
          "the library binds to the libtvm_ffi.so this program loaded");
    release(&r);
  }

  /* ---- add_one with DLTensor* arguments */
  float x_data[5] = {1, 2, 3, 4, 5};
  float y_data[5] = {0, 0, 0, 0, 0};
  int64_t shape5[1] = {5};
  DLTensor x, y;
  make_tensor(&x, x_data, 1, shape5, kDLFloat, 32);
  make_tensor(&y, y_data, 1, shape5, kDLFloat, 32);
  {
    TVMFFIAny args[2] = {any_dltensor(&x), any_dltensor(&y)};
    rc = call("add_one", args, 2, &r);
    expect_success("add_one(DLTensor*, DLTensor*)", rc);
    print_floats("y =", y_data, 5);
    check(r.type_index == kTVMFFINone && y_data[0] == 2 && y_data[4] == 6,
          "add_one wrote x + 1 into the caller's memory");
    release(&r);
  }

  /* ---- add_one with Tensor objects made from DLPack */
  {
    float out[5] = {0, 0, 0, 0, 0};
    DLManagedTensor mx, my;
    memset(&mx, 0, sizeof(mx));
    memset(&my, 0, sizeof(my));
    make_tensor(&mx.dl_tensor, y_data, 1, shape5, kDLFloat, 32);
    make_tensor(&my.dl_tensor, out, 1, shape5, kDLFloat, 32);
    mx.deleter = count_dlpack_delete;
    my.deleter = count_dlpack_delete;
    void* tx = NULL;
    void* ty = NULL;
    rc = TVMFFITensorFromDLPack(&mx, 0, 1, &tx);
    if (rc == 0) rc = TVMFFITensorFromDLPack(&my, 0, 1, &ty);
    expect_success("TVMFFITensorFromDLPack", rc);
    TVMFFIAny args[2] = {any_obj(kTVMFFITensor, tx), any_obj(kTVMFFITensor, ty)};
    rc = call("add_one", args, 2, &r);
    expect_success("add_one(Tensor, Tensor)", rc);
    release(&r);
    print_floats("out =", out, 5);
    check(out[0] == 3 && out[4] == 7, "add_one wrote into the DLPack producer's memory");
    if (tx) TVMFFIObjectDecRef(tx);
    if (ty) TVMFFIObjectDecRef(ty);
    printf("dlpack deleters called: %d\n", g_dlpack_deleted);
    check(g_dlpack_deleted == 2, "the module kept no reference to the tensors");
  }

  /* ---- scalars and strings */
  {
    TVMFFIAny args[1] = {any_str("C host")};
    rc = call("greet", args, 1, &r);
    expect_success("greet", rc);
    print_text("greet", &r);
    check(text_equals(&r, "Hello, C host!", 14), "greet returned the greeting");
    release(&r);
  }
  {
    TVMFFIAny args[1] = {any_dltensor(&x)};
    rc = call("sum", args, 1, &r);
    expect_success("sum", rc);
    printf("sum = %.3f (type_index %d)\n", r.v_float64, r.type_index);
    check(r.type_index == kTVMFFIFloat && r.v_float64 == 15.0, "sum returned a float");
  }
  {
    static const char raw[3] = {'a', '\0', 'b'};
    TVMFFIByteArray bytes = {raw, 3};
    TVMFFIAny arg = any_none();
    arg.type_index = kTVMFFIByteArrayPtr;
    arg.v_ptr = &bytes;
    rc = call("echo_bytes", &arg, 1, &r);
    expect_success("echo_bytes", rc);
    TVMFFIByteArray t = text_of(&r);
    printf("echo_bytes: %zu bytes (type_index %d)\n", t.size, r.type_index);
    check(text_equals(&r, raw, 3), "bytes with an embedded NUL round-trip");
    release(&r);
  }
  {
    TVMFFIAny args[2] = {any_none(), any_int(7)};
    rc = call("or_default", args, 2, &r);
    expect_success("or_default(None, 7)", rc);
    check(r.type_index == kTVMFFIInt && r.v_int64 == 7, "None reached an Option<i64>");
    args[0] = any_int(-3);
    rc = call("or_default", args, 2, &r);
    check(rc == 0 && r.v_int64 == -3, "or_default(-3, 7) == -3");
  }

  /* ---- tensors made by Rust */
  {
    float a[6] = {1, 2, 3, 4, 5, 6};
    float b[6] = {1, 0, 0, 1, 1, 1};
    int64_t sa[2] = {2, 3};
    int64_t sb[2] = {3, 2};
    DLTensor ta, tb;
    make_tensor(&ta, a, 2, sa, kDLFloat, 32);
    make_tensor(&tb, b, 2, sb, kDLFloat, 32);
    TVMFFIAny args[2] = {any_dltensor(&ta), any_dltensor(&tb)};
    rc = call("matmul", args, 2, &r);
    expect_success("matmul", rc);
    const int64_t shape[2] = {2, 2};
    const float expected[4] = {4, 5, 10, 11};
    check_tensor_result("matmul", &r, 2, shape, expected);
    release(&r);
  }
  {
    TVMFFIAny args[3] = {any_float(0.0), any_float(1.0), any_int(5)};
    rc = call("linspace", args, 3, &r);
    expect_success("linspace", rc);
    const int64_t shape[1] = {5};
    const float expected[5] = {0, 0.25f, 0.5f, 0.75f, 1};
    check_tensor_result("linspace", &r, 1, shape, expected);
    release(&r);
  }

  /* ---- C callbacks */
  {
    Callback state = {0, 0, 10, 1};
    void* f = make_callback(&state, arithmetic_callback);
    TVMFFIAny args[2] = {any_obj(kTVMFFIFunction, f), any_int(5)};
    rc = call("apply_twice", args, 2, &r);
    expect_success("apply_twice(C callback, 5)", rc);
    printf("apply_twice = %" PRId64 " (callback calls=%d, arg=%" PRId64 ")\n", r.v_int64,
           state.calls, state.last_arg);
    check(r.type_index == kTVMFFIInt && r.v_int64 == 30 && state.calls == 1 &&
              state.last_arg == 5,
          "apply_twice called the C callback once and doubled its result");
    TVMFFIObjectDecRef(f);
    check(g_callbacks_deleted == 1, "the callback was released exactly once");
  }
  {
    Callback state = {0, 0, 0, 100};
    void* f = make_callback(&state, arithmetic_callback);
    TVMFFIAny items[3] = {any_int(1), any_int(2), any_int(3)};
    TVMFFIAny array;
    rc = call_global("ffi.Array", items, 3, &array);
    expect_success("ffi.Array(1, 2, 3)", rc);
    TVMFFIAny args[2] = {any_obj(kTVMFFIFunction, f), array};
    rc = call("map_values", args, 2, &r);
    expect_success("map_values(C callback, [1, 2, 3])", rc);
    TVMFFIAny size;
    rc = call_global("ffi.ArraySize", &r, 1, &size);
    printf("map_values: size=%" PRId64 " values=[", size.v_int64);
    int ok = rc == 0 && size.v_int64 == 3 && state.calls == 3;
    for (int64_t i = 0; rc == 0 && i < size.v_int64; ++i) {
      TVMFFIAny item_args[2] = {r, any_int(i)};
      TVMFFIAny item;
      rc = call_global("ffi.ArrayGetItem", item_args, 2, &item);
      printf(i ? ", %" PRId64 : "%" PRId64, item.v_int64);
      ok = ok && rc == 0 && item.type_index == kTVMFFIInt && item.v_int64 == 100 * (i + 1);
    }
    printf("]\n");
    check(ok, "map_values called back per element");
    release(&r);
    release(&array);
    TVMFFIObjectDecRef(f);
  }

  /* ---- containers */
  {
    TVMFFIAny args[1] = {any_int(3)};
    rc = call("make_map", args, 1, &r);
    expect_success("make_map(3)", rc);
    TVMFFIAny size, item;
    int ok = call_global("ffi.MapSize", &r, 1, &size) == 0 && size.v_int64 == 3;
    TVMFFIAny get_args[2] = {r, any_str("k2")};
    ok = ok && call_global("ffi.MapGetItem", get_args, 2, &item) == 0 &&
         item.type_index == kTVMFFIInt && item.v_int64 == 2;
    printf("make_map(3): size=%" PRId64 " k2=%" PRId64 "\n", size.v_int64, item.v_int64);
    check(ok, "the Rust map is read through the runtime's map functions");
    release(&r);
  }
  {
    TVMFFIAny kv[4] = {any_str("a"), any_int(1), any_str("b"), any_int(41)};
    TVMFFIAny map;
    rc = call_global("ffi.Map", kv, 4, &map);
    expect_success("ffi.Map(a=1, b=41)", rc);
    rc = call("summarize", &map, 1, &r);
    expect_success("summarize", rc);
    TVMFFIAny total, count;
    TVMFFIAny a0[2] = {r, any_int(0)};
    TVMFFIAny a1[2] = {r, any_int(1)};
    int ok = rc == 0 && call_global("ffi.ArrayGetItem", a0, 2, &total) == 0 &&
             call_global("ffi.ArrayGetItem", a1, 2, &count) == 0;
    printf("summarize = [%" PRId64 ", %" PRId64 "]\n", total.v_int64, count.v_int64);
    check(ok && total.v_int64 == 42 && count.v_int64 == 2, "a runtime map is read by Rust");
    release(&r);
    release(&map);
  }

  /* ---- errors raised in the module reach this program's slot */
  {
    TVMFFIAny args[2] = {any_str("ValueError"), any_str("raised in Rust, caught in C")};
    rc = call("raise_error", args, 2, &r);
    expect_error("raise_error(ValueError)", rc, "ValueError", "raised in Rust, caught in C", 1);
    args[0] = any_str("MyKernelError");
    args[1] = any_str("a custom kind");
    rc = call("raise_error", args, 2, &r);
    expect_error("raise_error(MyKernelError)", rc, "MyKernelError", "a custom kind", 1);
  }
  {
    TVMFFIAny args[2] = {any_int(1), any_dltensor(&y)};
    rc = call("add_one", args, 2, &r);
    expect_error("add_one(1, y)", rc, "TypeError",
                 "Mismatched type on argument #0 (x) when calling: `add_one(x: "
                 "ffi.Tensor[float32], y: ffi.Tensor[float32]) -> None`: expected "
                 "ffi.Tensor[float32], got int",
                 1);
    rc = call("add_one", args, 1, &r);
    expect_error("add_one(1)", rc, "TypeError", "Expected 2 but got 1 arguments", 0);
  }
  {
    double d[5] = {0, 0, 0, 0, 0};
    DLTensor xd;
    make_tensor(&xd, d, 1, shape5, kDLFloat, 64);
    TVMFFIAny args[2] = {any_dltensor(&xd), any_dltensor(&y)};
    rc = call("add_one", args, 2, &r);
    expect_error("add_one(float64, y)", rc, "TypeError",
                 "#0 (x) when calling: `add_one(x: ffi.Tensor[float32], y: ffi.Tensor[float32]) "
                 "-> None`: expected a float32 tensor, got float64",
                 0);
    TVMFFIAny alias[2] = {any_dltensor(&y), any_dltensor(&y)};
    rc = call("add_one", alias, 2, &r);
    expect_error("add_one(y, y)", rc, "ValueError", "its memory overlaps argument #0 (x)", 0);
  }
  {
    TVMFFIAny args[1] = {any_str("panic seen by C")};
    rc = call("panic_now", args, 1, &r);
    expect_error("panic_now", rc, "RustPanic", "panic seen by C", 1);
  }
  {
    Callback state = {0, 0, 0, 1};
    void* f = make_callback(&state, raising_callback);
    TVMFFIAny args[2] = {any_obj(kTVMFFIFunction, f), any_int(1)};
    rc = call("apply_twice", args, 2, &r);
    expect_error("apply_twice(raising C callback)", rc, "IndexError", "raised by a C callback",
                 1);
    TVMFFIAny error_of_args[1] = {any_obj(kTVMFFIFunction, f)};
    rc = call("error_of", error_of_args, 1, &r);
    expect_success("error_of(raising C callback)", rc);
    TVMFFIAny k, m;
    TVMFFIAny a0[2] = {r, any_int(0)};
    TVMFFIAny a1[2] = {r, any_int(1)};
    int ok = rc == 0 && call_global("ffi.ArrayGetItem", a0, 2, &k) == 0 &&
             call_global("ffi.ArrayGetItem", a1, 2, &m) == 0;
    if (ok) {
      TVMFFIByteArray kt = text_of(&k), mt = text_of(&m);
      printf("error_of: Rust saw kind=%.*s message=%.*s\n", (int)kt.size, kt.data, (int)mt.size,
             mt.data);
      ok = text_equals(&k, "IndexError", 10) && text_equals(&m, "raised by a C callback", 22);
      release(&k);
      release(&m);
    }
    check(ok && state.calls == 2, "Rust received the C callback's error kind and message");
    release(&r);
    TVMFFIObjectDecRef(f);
  }
  check(take_error(&none) == 0, "no error is left in the slot");

  /* ---- the module keeps working after errors */
  {
    TVMFFIAny args[1] = {any_int(-9007199254740993LL)};
    rc = call("echo_int", args, 1, &r);
    check(rc == 0 && r.type_index == kTVMFFIInt && r.v_int64 == -9007199254740993LL,
          "echo_int after the errors");
  }

  /* ---- metadata and docs through the runtime's module functions */
  {
    TVMFFIAny args[3] = {mod, any_str("add_one"), any_bool(0)};
    rc = call_global("ffi.ModuleGetFunctionMetadata", args, 3, &r);
    expect_success("ffi.ModuleGetFunctionMetadata", rc);
    print_text("metadata(add_one)", &r);
    const char* metadata =
        "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Function\\\",\\\"named_args\\\":{\\\"return\\\":"
        "[{\\\"type\\\":\\\"None\\\"}],\\\"params\\\":[{\\\"type\\\":\\\"ffi.Tensor\\\"},{\\\"type"
        "\\\":\\\"ffi.Tensor\\\"}]}}\",\"arg_names\":[\"x\",\"y\"],"
        "\"arg_types\":[\"ffi.Tensor[float32]\",\"ffi.Tensor[float32]\"],\"return_type\":\"None\"}";
    check(text_equals(&r, metadata, strlen(metadata)), "add_one's metadata");
    release(&r);
    rc = call_global("ffi.ModuleGetFunctionDoc", args, 3, &r);
    expect_success("ffi.ModuleGetFunctionDoc", rc);
    print_text("doc(add_one)", &r);
    const char* doc = "Writes `x + 1` into `y`, elementwise (float32 tensors of the same shape).";
    check(text_equals(&r, doc, strlen(doc)), "add_one's doc");
    release(&r);
    args[1] = any_str("not_exported");
    rc = call_global("ffi.ModuleGetFunctionDoc", args, 3, &r);
    check(rc == 0 && r.type_index == kTVMFFINone, "no doc for a missing function");
  }

  release(&mod);
  printf("c host: failures=%d\n", g_failures);
  return g_failures ? 1 : 0;
}
