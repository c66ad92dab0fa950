/*
 * Hostile input through the C API of pactum's libtvm_ffi.so (docs/RELIABILITY.md, "Hostile
 * input"): NULL handles, byte arrays claiming sizes no allocation can have, corrupt values
 * inside a TVMFFIAny, malformed DLPack tensors, bytes that are not UTF-8, wrong argument
 * counts and types for global functions, and a truncated library.
 *
 * Run against pactum's library only (tests/all/hostile_c.rs): the official library crashes or
 * aborts on most of these (c/NOTES.md), where pactum raises an error and returns -1.
 *
 * Like the conformance programs, it prints deterministic lines only. Each check prints
 * "label: rc=.. kind=.. msg=.." and compares kind and a message fragment with what is
 * expected; a mismatch prints an UNEXPECTED line and the program exits with status 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "../conformance/common.h"

/* ---------------------------------------------------------------- checks */

/* A call that must fail: rc -1 and a raised error of `kind` (any kind when empty) whose message
 * has `fragment`. */
static void expect_error(const char* label, int rc, const char* kind, const char* fragment) {
  ErrInfo e = take_error();
  printf("%s: rc=%d ", label, rc);
  print_errinfo(&e, ERR_MSG);
  printf("\n");
  if (rc != -1 || !e.present || (kind[0] != '\0' && strcmp(e.kind, kind) != 0) ||
      !contains(e.msg, e.msg_len, fragment)) {
    printf("UNEXPECTED: %s should fail with %s containing \"%s\"\n", label, kind, fragment);
    g_unexpected++;
  }
}

/* A call that must succeed. */
static void expect_ok(const char* label, int rc) {
  printf("%s: rc=%d\n", label, rc);
  if (rc != 0) {
    ErrInfo e = take_error();
    printf("UNEXPECTED: %s failed: ", label);
    print_errinfo(&e, ERR_MSG);
    printf("\n");
    g_unexpected++;
  }
}

static void expect_true(const char* label, int condition) {
  printf("%s: %s\n", label, condition ? "yes" : "no");
  if (!condition) {
    printf("UNEXPECTED: %s\n", label);
    g_unexpected++;
  }
}

static void* global(const char* name) {
  TVMFFIByteArray n = ba(name);
  void* f = NULL;
  if (TVMFFIFunctionGetGlobal(&n, &f) != 0 || f == NULL) {
    printf("UNEXPECTED: global %s missing\n", name);
    g_unexpected++;
  }
  return f;
}

/* ------------------------------------------------------------- NULL handles */

static int noop_cb(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  (void)args;
  (void)n;
  (void)result;
  return 0;
}

static void test_null_handles(void) {
  printf("== NULL handles\n");
  TVMFFIAny out = any_none();
  void* handle = NULL;
  DLDataType dtype;
  int32_t index = 0;
  TVMFFIByteArray name = ba("ffi.Array");

  expect_error("FunctionCall(NULL)", TVMFFIFunctionCall(NULL, NULL, 0, &out), "ValueError",
               "argument `func` is NULL");
  expect_error("FunctionCreate(safe_call=NULL)", TVMFFIFunctionCreate(NULL, NULL, NULL, &handle),
               "ValueError", "argument `safe_call` is NULL");
  expect_error("FunctionCreate(out=NULL)", TVMFFIFunctionCreate(NULL, noop_cb, NULL, NULL),
               "ValueError", "argument `out` is NULL");
  expect_error("FunctionGetGlobal(name=NULL)", TVMFFIFunctionGetGlobal(NULL, &handle),
               "ValueError", "argument `name` is NULL");
  expect_error("FunctionGetGlobal(out=NULL)", TVMFFIFunctionGetGlobal(&name, NULL), "ValueError",
               "argument `out` is NULL");
  expect_error("StringFromByteArray(input=NULL)", TVMFFIStringFromByteArray(NULL, &out),
               "ValueError", "argument `input` is NULL");
  expect_error("BytesFromByteArray(out=NULL)", TVMFFIBytesFromByteArray(&name, NULL),
               "ValueError", "argument `out` is NULL");
  expect_error("DataTypeFromString(str=NULL)", TVMFFIDataTypeFromString(NULL, &dtype),
               "ValueError", "argument `str` is NULL");
  expect_error("TypeKeyToIndex(type_key=NULL)", TVMFFITypeKeyToIndex(NULL, &index), "ValueError",
               "argument `type_key` is NULL");
  expect_error("AnyViewToOwnedAny(any_view=NULL)", TVMFFIAnyViewToOwnedAny(NULL, &out),
               "ValueError", "is NULL");
  expect_error("TensorFromDLPack(from=NULL)", TVMFFITensorFromDLPack(NULL, 0, 0, &handle),
               "ValueError", "argument `from` is NULL");
  DLManagedTensor* managed = NULL;
  expect_error("TensorToDLPack(from=NULL)", TVMFFITensorToDLPack(NULL, &managed), "ValueError",
               "argument `from` is NULL");
  expect_error("EnvModLookupFromImports(bogus ctx)",
               TVMFFIEnvModLookupFromImports((void*)(uintptr_t)0x1234, "f", &handle),
               "", "");
  /* Readable memory that is no C++ module: zeros, then an `ffi.Module` header whose "vtable
   * pointer" points at the stack (not into any loaded object). */
  static uint64_t zeros[8];
  expect_error("EnvModLookupFromImports(zeroed memory)",
               TVMFFIEnvModLookupFromImports(zeros, "f", &handle), "ValueError",
               "not the context of a loaded module");
  uint64_t fake[4];
  fake[0] = (uint64_t)(uintptr_t)&fake;
  fake[1] = 1;
  fake[2] = (uint64_t)kTVMFFIModule;
  fake[3] = (uint64_t)(uintptr_t)&fake;
  expect_error("EnvModLookupFromImports(header without a vtable)",
               TVMFFIEnvModLookupFromImports(fake, "f", &handle), "ValueError",
               "not the context of a loaded module");
}

/* --------------------------------------------------- sizes no allocation has */

static void test_huge_lengths(void) {
  printf("== byte arrays claiming huge sizes\n");
  static const char text[] = "abc";
  TVMFFIByteArray huge = ban(text, SIZE_MAX);
  TVMFFIByteArray past_isize = ban(text, (size_t)1 << 63);
  TVMFFIAny out = any_none();
  void* handle = NULL;
  DLDataType dtype;
  int32_t index = 0;

  expect_error("StringFromByteArray(SIZE_MAX)", TVMFFIStringFromByteArray(&huge, &out),
               "ValueError", "argument `input` claims 18446744073709551615 bytes");
  expect_error("BytesFromByteArray(2^63)", TVMFFIBytesFromByteArray(&past_isize, &out),
               "ValueError", "argument `input` claims 9223372036854775808 bytes");
  expect_error("BigIntFromByteArray(SIZE_MAX)", TVMFFIBigIntFromByteArray(&huge, &out),
               "ValueError", "more than any allocation can hold");
  expect_error("DataTypeFromString(SIZE_MAX)", TVMFFIDataTypeFromString(&huge, &dtype),
               "ValueError", "argument `str` claims");
  expect_error("FunctionGetGlobal(SIZE_MAX)", TVMFFIFunctionGetGlobal(&huge, &handle),
               "ValueError", "argument `name` claims");
  expect_error("TypeKeyToIndex(SIZE_MAX)", TVMFFITypeKeyToIndex(&huge, &index), "ValueError",
               "argument `type_key` claims");
  /* ErrorCreate never raises (its failures must not touch the error slot): rc -1 only. */
  TVMFFIByteArray kind = ba("ValueError");
  int rc = TVMFFIErrorCreate(&kind, &huge, NULL, &handle);
  ErrInfo e = take_error();
  printf("ErrorCreate(message SIZE_MAX): rc=%d raised=%d\n", rc, e.present);
  if (rc != -1 || e.present) {
    printf("UNEXPECTED: ErrorCreate with a huge message\n");
    g_unexpected++;
  }

  /* Inside a TVMFFIAny: a ByteArrayPtr claiming SIZE_MAX bytes, one with NULL data, and a
   * NULL RawStr. Detected before any byte is read. */
  TVMFFIByteArray null_data = ban(NULL, 5);
  TVMFFIAny view = any_bytearray(&huge);
  expect_error("AnyViewToOwnedAny(ByteArrayPtr SIZE_MAX)", TVMFFIAnyViewToOwnedAny(&view, &out),
               "RustPanic", "claims 18446744073709551615 bytes");
  view = any_bytearray(&null_data);
  expect_error("AnyViewToOwnedAny(ByteArrayPtr NULL data)", TVMFFIAnyViewToOwnedAny(&view, &out),
               "RustPanic", "claims 5 bytes of NULL data");
  view = any_bytearray(NULL);
  expect_error("AnyViewToOwnedAny(ByteArrayPtr NULL)", TVMFFIAnyViewToOwnedAny(&view, &out),
               "RustPanic", "a ByteArrayPtr value holds NULL");
  view = any_rawstr(NULL);
  expect_error("AnyViewToOwnedAny(RawStr NULL)", TVMFFIAnyViewToOwnedAny(&view, &out),
               "RustPanic", "a RawStr value holds NULL");
  /* The same values as arguments of a global function. */
  void* make_array = global("ffi.Array");
  TVMFFIAny args[2] = {any_int(1), any_bytearray(&huge)};
  TVMFFIAny result = any_none();
  expect_error("ffi.Array(1, ByteArrayPtr SIZE_MAX)",
               TVMFFIFunctionCall(make_array, args, 2, &result), "RustPanic",
               "claims 18446744073709551615 bytes");
  TVMFFIObjectDecRef(make_array);
}

/* ------------------------------------------------------------------ DLPack */

static int g_deleted = 0;
static void count_delete(DLManagedTensor* self) {
  (void)self;
  g_deleted++;
}

static void test_malformed_dlpack(void) {
  printf("== malformed DLPack tensors\n");
  float data[4] = {1, 2, 3, 4};
  DLManagedTensor m;
  memset(&m, 0, sizeof(m));
  m.dl_tensor.data = data;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.shape = NULL;
  m.deleter = count_delete;
  void* handle = NULL;
  expect_error("TensorFromDLPack(ndim 2, shape NULL)", TVMFFITensorFromDLPack(&m, 0, 1, &handle),
               "ValueError", "malformed tensor: ndim 2 with a NULL shape pointer");
  m.dl_tensor.ndim = -3;
  expect_error("TensorFromDLPack(ndim -3)", TVMFFITensorFromDLPack(&m, 0, 0, &handle),
               "ValueError", "malformed tensor: ndim -3");
  expect_true("failed imports leave the tensor with the caller (deleter not called)",
              g_deleted == 0 && handle == NULL);
}

/* ------------------------------------------------------------------ UTF-8 */

static void test_invalid_utf8(void) {
  printf("== bytes that are not UTF-8\n");
  TVMFFIByteArray bad = ban("\xff\xfe\xfd not UTF-8", 13);
  TVMFFIAny out = any_none();
  /* Strings are byte strings in TVM FFI: kept exactly, as the official library does. */
  expect_ok("StringFromByteArray(invalid UTF-8)", TVMFFIStringFromByteArray(&bad, &out));
  const char* d = NULL;
  size_t n = 0;
  expect_true("the bytes are kept exactly",
              any_get_bytes(&out, &d, &n) && n == 13 && memcmp(d, bad.data, n) == 0);
  any_release(&out);
  DLDataType dtype;
  expect_error("DataTypeFromString(invalid UTF-8)", TVMFFIDataTypeFromString(&bad, &dtype),
               "ValueError", "");
  void* handle = (void*)1;
  expect_ok("FunctionGetGlobal(invalid UTF-8)", TVMFFIFunctionGetGlobal(&bad, &handle));
  expect_true("no such global", handle == NULL);
  int32_t index = 0;
  expect_error("TypeKeyToIndex(invalid UTF-8)", TVMFFITypeKeyToIndex(&bad, &index),
               "InternalError", "");
}

/* ------------------------------------------------ wrong count, wrong type */

static void test_wrong_arguments(void) {
  printf("== wrong argument counts and types\n");
  void* get_item = global("ffi.ArrayGetItem");
  void* make_array = global("ffi.Array");
  TVMFFIAny items[2] = {any_int(10), any_int(20)};
  TVMFFIAny array = any_none();
  expect_ok("ffi.Array(10, 20)", TVMFFIFunctionCall(make_array, items, 2, &array));
  TVMFFIAny result = any_none();
  expect_error("ffi.ArrayGetItem(array)", TVMFFIFunctionCall(get_item, &array, 1, &result),
               "TypeError", "Mismatched number of arguments");
  TVMFFIAny wrong[2] = {any_int(1), any_int(0)};
  expect_error("ffi.ArrayGetItem(1, 0)", TVMFFIFunctionCall(get_item, wrong, 2, &result),
               "TypeError", "");
  TVMFFIAny out_of_range[2] = {array, any_int(7)};
  expect_error("ffi.ArrayGetItem(array, 7)",
               TVMFFIFunctionCall(get_item, out_of_range, 2, &result), "IndexError", "");
  /* A negative count is no arguments, never a read before the array. */
  expect_error("ffi.ArrayGetItem(count -1)", TVMFFIFunctionCall(get_item, items, -1, &result),
               "TypeError", "Mismatched number of arguments");
  any_release(&array);
  TVMFFIObjectDecRef(get_item);
  TVMFFIObjectDecRef(make_array);
}

/* --------------------------------------------------------- damaged files */

static void test_truncated_library(const char* dir) {
  printf("== a truncated library\n");
  /* The first 4 KiB of the library this program runs against. */
  Dl_info info;
  if (!dladdr((void*)TVMFFIFunctionCall, &info) || info.dli_fname == NULL) {
    printf("UNEXPECTED: dladdr failed\n");
    g_unexpected++;
    return;
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/truncated.so", dir);
  FILE* in = fopen(info.dli_fname, "rb");
  FILE* out = fopen(path, "wb");
  char head[4096];
  size_t n = in && out ? fread(head, 1, sizeof(head), in) : 0;
  if (n != sizeof(head) || fwrite(head, 1, n, out) != n) {
    printf("UNEXPECTED: cannot write %s\n", path);
    g_unexpected++;
  }
  if (in) fclose(in);
  if (out) fclose(out);
  /* dlopen would map the missing segments and die of SIGBUS. */
  void* load = global("ffi.ModuleLoadFromFile");
  TVMFFIAny arg = any_rawstr(path);
  TVMFFIAny result = any_none();
  expect_error("ffi.ModuleLoadFromFile(truncated.so)", TVMFFIFunctionCall(load, &arg, 1, &result),
               "ValueError", "the file is truncated: loadable segment");
  TVMFFIObjectDecRef(load);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  test_null_handles();
  test_huge_lengths();
  test_malformed_dlpack();
  test_invalid_utf8();
  test_wrong_arguments();
  test_truncated_library(argv[1]);
  printf("hostile: unexpected=%d\n", g_unexpected);
  return g_unexpected == 0 ? 0 : 1;
}
