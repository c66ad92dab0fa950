/*
 * strings: TVMFFIStringFromByteArray / TVMFFIBytesFromByteArray (small vs heap
 * forms, NUL termination, embedded NULs) and TVMFFIAnyViewToOwnedAny.
 */
#include "common.h"

static const char kAlphabet[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/* Print the layout of an owned string/bytes Any. */
static void describe_owned(const char* label, const TVMFFIAny* a, const char* expect_data,
                           size_t expect_len) {
  printf("%s: len=%zu type_index=%d", label, expect_len, a->type_index);
  if (a->type_index == kTVMFFISmallStr || a->type_index == kTVMFFISmallBytes) {
    int tail_zero = 1;
    for (size_t i = a->small_str_len; i < 8; ++i) {
      if (a->v_bytes[i] != 0) tail_zero = 0;
    }
    printf(" small_str_len=%u content_ok=%d", a->small_str_len,
           a->small_str_len == expect_len && memcmp(a->v_bytes, expect_data, expect_len) == 0);
    if (expect_len < 8) printf(" v_bytes[%zu]=%d", expect_len, (int)a->v_bytes[expect_len]);
    printf(" tail_zero=%d", tail_zero);
  } else if (a->type_index == kTVMFFIStr || a->type_index == kTVMFFIBytes) {
    TVMFFIByteArray* b = bytes_cell(a->v_obj);
    printf(" header.type_index=%d refcount=0x%" PRIx64 " size=%zu content_ok=%d", a->v_obj->type_index,
           refcnt(a->v_obj), b->size, b->size == expect_len && memcmp(b->data, expect_data, expect_len) == 0);
    printf(" nul_after_data=%d padding=%u", b->data[b->size] == '\0', a->zero_padding);
  }
  printf("\n");
}

static void test_lengths(int is_bytes) {
  static const size_t lens[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 63, 100};
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); ++i) {
    size_t n = lens[i];
    TVMFFIByteArray in = ban(kAlphabet, n);
    TVMFFIAny out;
    /* fill with garbage: the API must fully initialise out */
    memset(&out, 0xAB, sizeof(out));
    int rc = is_bytes ? TVMFFIBytesFromByteArray(&in, &out) : TVMFFIStringFromByteArray(&in, &out);
    char label[64];
    snprintf(label, sizeof(label), "%s", is_bytes ? "bytes" : "strings");
    if (!ok(rc, label)) continue;
    describe_owned(label, &out, kAlphabet, n);
    any_release(&out);
  }
}

static void test_embedded_nul(void) {
  static const char small[] = {'a', 'b', '\0', 'c', 'd'};
  static const char big[] = {'a', 'b', 'c', '\0', 'd', 'e', 'f', 'g', 'h', 'i', 'j', '\0'};
  static const char all_nul[] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  struct {
    const char* label;
    const char* data;
    size_t n;
  } cases[] = {{"nul-small", small, sizeof(small)},
               {"nul-big", big, sizeof(big)},
               {"nul-7", all_nul, 7},
               {"nul-9", all_nul, 9}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    for (int is_bytes = 0; is_bytes < 2; ++is_bytes) {
      TVMFFIByteArray in = ban(cases[i].data, cases[i].n);
      TVMFFIAny out = any_none();
      int rc = is_bytes ? TVMFFIBytesFromByteArray(&in, &out) : TVMFFIStringFromByteArray(&in, &out);
      if (!ok(rc, cases[i].label)) continue;
      char label[64];
      snprintf(label, sizeof(label), "%s %s", cases[i].label, is_bytes ? "bytes" : "str");
      describe_owned(label, &out, cases[i].data, cases[i].n);
      any_release(&out);
    }
  }
}

static void test_empty_null_data(void) {
  /* size 0 with a NULL data pointer */
  TVMFFIByteArray in = ban(NULL, 0);
  TVMFFIAny out = any_none();
  if (ok(TVMFFIStringFromByteArray(&in, &out), "empty NULL data")) {
    describe_owned("empty-null-data str", &out, "", 0);
    any_release(&out);
  }
  if (ok(TVMFFIBytesFromByteArray(&in, &out), "empty NULL data bytes")) {
    describe_owned("empty-null-data bytes", &out, "", 0);
    any_release(&out);
  }
}

/* AnyViewToOwnedAny on a view; prints the owned value. */
static void to_owned(const char* label, TVMFFIAny view) {
  TVMFFIAny out;
  memset(&out, 0xCD, sizeof(out));
  int rc = TVMFFIAnyViewToOwnedAny(&view, &out);
  if (!ok(rc, label)) return;
  printf("to_owned %s: in=%d out=%d value=", label, view.type_index, out.type_index);
  print_any(&out);
  if (out.type_index == kTVMFFISmallStr || out.type_index == kTVMFFISmallBytes) {
    printf(" small_str_len=%u", out.small_str_len);
  } else if (out.type_index < kTVMFFIStaticObjectBegin) {
    printf(" padding=%u", out.zero_padding);
  }
  if (out.type_index >= kTVMFFIStaticObjectBegin) {
    printf(" refcount=0x%" PRIx64, refcnt(out.v_obj));
  }
  if (view.type_index == kTVMFFIOpaquePtr || view.type_index == kTVMFFIDLTensorPtr) {
    printf(" same_ptr=%d", out.v_ptr == view.v_ptr);
  }
  printf("\n");
  any_release(&out);
}

static void test_to_owned(void) {
  to_owned("rawstr-empty", any_rawstr(""));
  to_owned("rawstr-short", any_rawstr("hi"));
  to_owned("rawstr-7", any_rawstr("1234567"));
  to_owned("rawstr-8", any_rawstr("12345678"));
  to_owned("rawstr-long", any_rawstr("hello world, this is long"));

  TVMFFIByteArray b3 = ban("x\0z", 3);
  TVMFFIByteArray b12 = ban("0123456789ab", 12);
  TVMFFIByteArray b0 = ban("", 0);
  to_owned("bytearray-0", any_bytearray(&b0));
  to_owned("bytearray-3", any_bytearray(&b3));
  to_owned("bytearray-12", any_bytearray(&b12));

  TVMFFIByteArray sin = ba("abc");
  TVMFFIAny small = any_none();
  if (ok(TVMFFIStringFromByteArray(&sin, &small), "small for view")) {
    to_owned("smallstr", small);
  }
  TVMFFIAny smallb = any_none();
  if (ok(TVMFFIBytesFromByteArray(&sin, &smallb), "small bytes for view")) {
    to_owned("smallbytes", smallb);
  }

  to_owned("none", any_none());
  to_owned("int", any_int(-42));
  to_owned("bool", any_bool(1));
  to_owned("float", any_float(2.5));
  to_owned("dtype", any_dtype(2, 32, 4));
  to_owned("device", any_device(2, 3));
  int dummy = 0;
  to_owned("opaqueptr", any_ptr(&dummy));
  to_owned("opaqueptr-null", any_ptr(NULL));
  int64_t shape[1] = {1};
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = &dummy;
  t.ndim = 1;
  t.shape = shape;
  t.dtype.code = kDLInt;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.device.device_type = kDLCPU;
  to_owned("dltensorptr", any_dltensor(&t));

  /* object view: a new strong reference to the same object */
  TVMFFIByteArray lin = ba("a heap string of some length");
  TVMFFIAny heap = any_none();
  if (ok(TVMFFIStringFromByteArray(&lin, &heap), "heap for view") &&
      has_type(&heap, kTVMFFIStr, "heap string")) {
    TVMFFIAny out = any_none();
    if (ok(TVMFFIAnyViewToOwnedAny(&heap, &out), "object view")) {
      printf("to_owned object: out=%d same_obj=%d refcount=0x%" PRIx64 "\n", out.type_index,
             out.v_obj == heap.v_obj, refcnt(heap.v_obj));
      any_release(&out);
      printf("to_owned object: after release refcount=0x%" PRIx64 "\n", refcnt(heap.v_obj));
    }
    any_release(&heap);
  }
}

static void test_rvalue_ref(void) {
  TVMFFIByteArray lin = ba("moved string payload!");
  TVMFFIAny heap = any_none();
  if (!ok(TVMFFIStringFromByteArray(&lin, &heap), "heap for rvalue")) return;
  if (!has_type(&heap, kTVMFFIStr, "heap string")) return;
  void* slot = heap.v_obj;
  void* original = slot;
  TVMFFIAny view = any_none();
  view.type_index = kTVMFFIObjectRValueRef;
  view.v_ptr = &slot;
  TVMFFIAny out = any_none();
  int rc = TVMFFIAnyViewToOwnedAny(&view, &out);
  if (ok(rc, "rvalue move")) {
    printf("rvalue: rc=%d out=%d same_obj=%d slot_null=%d refcount=0x%" PRIx64 "\n", rc,
           out.type_index, out.v_obj == original, slot == NULL, refcnt(original));
  }
  /* second move fails */
  TVMFFIAny out2 = any_none();
  rc = TVMFFIAnyViewToOwnedAny(&view, &out2);
  print_err_has("rvalue second move", rc, "RValueRef already moved");
  printf("rvalue second move: out_type=%d original_refcount=0x%" PRIx64 "\n", out2.type_index,
         refcnt(original));
  any_release(&out);

  /* an rvalue ref to a library array */
  TVMFFIAny args[1] = {any_int(1)};
  TVMFFIAny arr;
  if (ok(call_global("ffi.Array", args, 1, &arr), "ffi.Array for rvalue") &&
      has_type(&arr, kTVMFFIArray, "ffi.Array result")) {
    void* aslot = arr.v_obj;
    TVMFFIAny v = any_none();
    v.type_index = kTVMFFIObjectRValueRef;
    v.v_ptr = &aslot;
    TVMFFIAny o = any_none();
    if (ok(TVMFFIAnyViewToOwnedAny(&v, &o), "rvalue array")) {
      printf("rvalue array: out=%d slot_null=%d refcount=0x%" PRIx64 "\n", o.type_index,
             aslot == NULL, refcnt(o.v_obj));
      any_release(&o);
    }
  }
}

int main(void) {
  test_lengths(0);
  test_lengths(1);
  test_embedded_nul();
  test_empty_null_data();
  test_to_owned();
  test_rvalue_ref();
  return finish("strings");
}
