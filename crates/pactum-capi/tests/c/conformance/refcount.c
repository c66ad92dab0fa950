/*
 * refcount: TVMFFIObjectIncRef / TVMFFIObjectDecRef and the strong/weak
 * deleter protocol on library-made objects and on objects made by this test.
 */
#include "common.h"

/* ------------------------------------------------------------ deleter log */

static char g_log[512];

static void log_add(const char* s) {
  if (g_log[0] != '\0') strncat(g_log, ",", sizeof(g_log) - strlen(g_log) - 1);
  strncat(g_log, s, sizeof(g_log) - strlen(g_log) - 1);
}

static void log_print_reset(const char* label) {
  printf("%s: deleter_log=[%s]\n", label, g_log);
  g_log[0] = '\0';
}

/* ------------------------------------------------------- opaque + function */

typedef struct {
  int deleted;
  void* last_arg;
} Counter;

static void opaque_deleter(void* handle) {
  Counter* c = (Counter*)handle;
  c->deleted++;
  c->last_arg = handle;
}

static int fn_callback(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)args;
  (void)num_args;
  Counter* c = (Counter*)self;
  *result = any_int(c->deleted);
  return 0;
}

static void fn_deleter(void* self) {
  Counter* c = (Counter*)self;
  c->deleted++;
  c->last_arg = self;
}

/* --------------------------------------------------- custom object by test */

typedef struct {
  TVMFFIObject header;
  int64_t payload;
  int destroyed; /* set on Strong */
} TestObj;

static void test_obj_deleter(void* self, int flags) {
  TestObj* o = (TestObj*)self;
  char buf[64];
  const char* name = flags == kTVMFFIObjectDeleterFlagBitMaskBoth     ? "Both"
                     : flags == kTVMFFIObjectDeleterFlagBitMaskStrong ? "Strong"
                     : flags == kTVMFFIObjectDeleterFlagBitMaskWeak   ? "Weak"
                                                                      : "Other";
  snprintf(buf, sizeof(buf), "%s(%d)", name, flags);
  log_add(buf);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    o->destroyed = 1;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) {
    free(o);
  }
}

static TestObj* new_test_obj(void) {
  TestObj* o = (TestObj*)calloc(1, sizeof(TestObj));
  o->header.combined_ref_count = ((uint64_t)1 << 32) | 1u;
  o->header.type_index = kTVMFFIObject;
  o->header.deleter = test_obj_deleter;
  o->payload = 42;
  return o;
}

/* What C++ weak references do inline (IncWeakRef / DecWeakRef). */
static void test_inc_weak(TestObj* o) {
  __atomic_fetch_add(&o->header.combined_ref_count, (uint64_t)1 << 32, __ATOMIC_RELAXED);
}

static void test_dec_weak(TestObj* o) {
  uint64_t before =
      __atomic_fetch_sub(&o->header.combined_ref_count, (uint64_t)1 << 32, __ATOMIC_RELEASE);
  if (before == ((uint64_t)1 << 32)) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    o->header.deleter(o, kTVMFFIObjectDeleterFlagBitMaskWeak);
  }
}

static void pr_rc(const char* label, void* obj) {
  printf("%s: combined_ref_count=0x%" PRIx64 "\n", label, refcnt(obj));
}

/* ------------------------------------------------------------------ tests */

static void test_string_object(void) {
  TVMFFIByteArray in = ba("a string long enough for the heap");
  TVMFFIAny s = any_none();
  if (!ok(TVMFFIStringFromByteArray(&in, &s), "StringFromByteArray")) return;
  printf("string: type_index=%d\n", s.type_index);
  if (!has_type(&s, kTVMFFIStr, "long string")) return;
  void* o = s.v_obj;
  pr_rc("string fresh", o);
  printf("string: header.type_index=%d padding=%u deleter_set=%d\n", hdr(o)->type_index,
         hdr(o)->__padding, hdr(o)->deleter != NULL);
  printf("string: incref rc=%d\n", TVMFFIObjectIncRef(o));
  pr_rc("string after incref", o);
  TVMFFIObjectIncRef(o);
  pr_rc("string after 2nd incref", o);
  printf("string: decref rc=%d\n", TVMFFIObjectDecRef(o));
  pr_rc("string after decref", o);
  TVMFFIObjectDecRef(o);
  pr_rc("string after 2nd decref", o);
  printf("string: final decref rc=%d\n", TVMFFIObjectDecRef(o));
}

static void test_decref_null(void) {
  printf("decref(NULL): rc=%d\n", TVMFFIObjectDecRef(NULL));
}

static void test_opaque(void) {
  Counter c = {0, NULL};
  void* o = NULL;
  if (!ok(TVMFFIObjectCreateOpaque(&c, kTVMFFIOpaquePyObject, opaque_deleter, &o),
          "ObjectCreateOpaque"))
    return;
  printf("opaque: type_index=%d handle_matches=%d\n", hdr(o)->type_index,
         ((TVMFFIOpaqueObjectCell*)cell_of(o))->handle == (void*)&c);
  pr_rc("opaque fresh", o);
  TVMFFIObjectIncRef(o);
  TVMFFIObjectIncRef(o);
  pr_rc("opaque +2", o);
  TVMFFIObjectDecRef(o);
  TVMFFIObjectDecRef(o);
  pr_rc("opaque -2", o);
  printf("opaque: deleted_before_last=%d\n", c.deleted);
  TVMFFIObjectDecRef(o);
  printf("opaque: deleted_after_last=%d arg_is_handle=%d\n", c.deleted, c.last_arg == (void*)&c);

  /* NULL deleter is accepted */
  void* o2 = NULL;
  if (ok(TVMFFIObjectCreateOpaque(&c, kTVMFFIOpaquePyObject, NULL, &o2), "opaque null deleter")) {
    pr_rc("opaque(null deleter) fresh", o2);
    int rc = TVMFFIObjectDecRef(o2);
    printf("opaque(null deleter): decref rc=%d deleted=%d\n", rc, c.deleted);
  }
}

static void test_function(void) {
  Counter c = {0, NULL};
  void* f = NULL;
  if (!ok(TVMFFIFunctionCreate(&c, fn_callback, fn_deleter, &f), "FunctionCreate")) return;
  printf("function: type_index=%d\n", hdr(f)->type_index);
  pr_rc("function fresh", f);
  TVMFFIObjectIncRef(f);
  pr_rc("function +1", f);
  TVMFFIAny r;
  if (ok(call_fn(f, NULL, 0, &r), "call function")) {
    printf("function: call result ");
    print_any(&r);
    printf("\n");
  }
  TVMFFIObjectDecRef(f);
  pr_rc("function -1", f);
  printf("function: deleted_before_last=%d\n", c.deleted);
  TVMFFIObjectDecRef(f);
  printf("function: deleted_after_last=%d arg_is_self=%d\n", c.deleted, c.last_arg == (void*)&c);
}

static void test_custom_simple(void) {
  /* fresh object: one DecRef through the library gives Both */
  TestObj* o = new_test_obj();
  pr_rc("custom fresh", o);
  TVMFFIObjectIncRef(o);
  pr_rc("custom +1", o);
  TVMFFIObjectDecRef(o);
  pr_rc("custom -1", o);
  log_print_reset("custom before last decref");
  TVMFFIObjectDecRef(o);
  log_print_reset("custom after last decref");
}

static void test_custom_weak_outlives(void) {
  /* a weak ref outlives the last strong ref: Strong first, Weak when weak drops */
  TestObj* o = new_test_obj();
  test_inc_weak(o);
  pr_rc("weak-outlives after inc_weak", o);
  TVMFFIObjectIncRef(o);
  pr_rc("weak-outlives strong+1", o);
  TVMFFIObjectDecRef(o);
  log_print_reset("weak-outlives after strong 2->1");
  TVMFFIObjectDecRef(o);
  printf("weak-outlives: destroyed=%d combined_ref_count=0x%" PRIx64 "\n", o->destroyed,
         refcnt(o));
  log_print_reset("weak-outlives after last strong");
  test_dec_weak(o);
  log_print_reset("weak-outlives after weak release");
}

static void test_custom_weak_first(void) {
  /* a weak ref dropped before the strong ref: plain Both at the end */
  TestObj* o = new_test_obj();
  test_inc_weak(o);
  test_inc_weak(o);
  pr_rc("weak-first two weak refs", o);
  test_dec_weak(o);
  test_dec_weak(o);
  pr_rc("weak-first weak released", o);
  log_print_reset("weak-first before decref");
  TVMFFIObjectDecRef(o);
  log_print_reset("weak-first after decref");
}

static void test_custom_null_deleter(void) {
  TestObj* o = new_test_obj();
  o->header.deleter = NULL;
  int rc = TVMFFIObjectDecRef(o);
  printf("null-deleter: decref rc=%d\n", rc);
  printf("null-deleter: combined_ref_count=0x%" PRIx64 "\n", refcnt(o));
  free(o);
}

static void test_custom_in_any_conversion(void) {
  /* owned conversion of a view takes exactly one strong ref */
  TestObj* o = new_test_obj();
  TVMFFIAny view = any_obj(o);
  TVMFFIAny owned = any_none();
  if (ok(TVMFFIAnyViewToOwnedAny(&view, &owned), "AnyViewToOwnedAny custom")) {
    printf("custom-any: type_index=%d same_ptr=%d\n", owned.type_index,
           owned.v_obj == (TVMFFIObject*)o);
    pr_rc("custom-any after owned copy", o);
    any_release(&owned);
    pr_rc("custom-any after release", o);
  }
  log_print_reset("custom-any before last");
  TVMFFIObjectDecRef(o);
  log_print_reset("custom-any after last");
}

static void test_custom_held_by_array(void) {
  /* a library container holds a strong ref and drops it at death */
  TestObj* o = new_test_obj();
  TVMFFIAny args[2];
  args[0] = any_obj(o);
  args[1] = any_obj(o);
  TVMFFIAny arr;
  if (ok(call_global("ffi.Array", args, 2, &arr), "ffi.Array") &&
      has_type(&arr, kTVMFFIArray, "ffi.Array result")) {
    pr_rc("custom-in-array after ffi.Array", o);
    any_release(&arr);
    pr_rc("custom-in-array after array death", o);
  }
  log_print_reset("custom-in-array before last");
  TVMFFIObjectDecRef(o);
  log_print_reset("custom-in-array after last");
}

/* Library objects must honour split Strong/Weak deleter calls, which C++
 * weak references produce inline. */
static void weak_on_library_object(const char* label, void* o) {
  __atomic_fetch_add(&hdr(o)->combined_ref_count, (uint64_t)1 << 32, __ATOMIC_RELAXED);
  printf("%s: with weak combined_ref_count=0x%" PRIx64 "\n", label, refcnt(o));
  TVMFFIObjectDecRef(o); /* strong -> 0: library deleter runs with Strong */
  printf("%s: after strong release combined_ref_count=0x%" PRIx64 "\n", label, refcnt(o));
  uint64_t before =
      __atomic_fetch_sub(&hdr(o)->combined_ref_count, (uint64_t)1 << 32, __ATOMIC_RELEASE);
  printf("%s: weak release before=0x%" PRIx64 "\n", label, before);
  if (before == ((uint64_t)1 << 32)) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    hdr(o)->deleter(o, kTVMFFIObjectDeleterFlagBitMaskWeak); /* frees the block */
  }
}

static void test_weak_on_library_objects(void) {
  TVMFFIByteArray in = ba("another heap string for weak refs");
  TVMFFIAny s = any_none();
  if (ok(TVMFFIStringFromByteArray(&in, &s), "StringFromByteArray weak") &&
      has_type(&s, kTVMFFIStr, "weak string")) {
    weak_on_library_object("lib-weak string", s.v_obj);
  }
  Counter c = {0, NULL};
  void* f = NULL;
  if (ok(TVMFFIFunctionCreate(&c, fn_callback, fn_deleter, &f), "FunctionCreate weak")) {
    weak_on_library_object("lib-weak function", f);
    printf("lib-weak function: self deleter calls=%d\n", c.deleted);
  }
  Counter oc = {0, NULL};
  void* o = NULL;
  if (ok(TVMFFIObjectCreateOpaque(&oc, kTVMFFIOpaquePyObject, opaque_deleter, &o), "opaque weak")) {
    weak_on_library_object("lib-weak opaque", o);
    printf("lib-weak opaque: handle deleter calls=%d\n", oc.deleted);
  }
  TestObj* elem = new_test_obj();
  TVMFFIAny args[1];
  args[0] = any_obj(elem);
  TVMFFIAny arr;
  if (ok(call_global("ffi.Array", args, 1, &arr), "ffi.Array weak") &&
      has_type(&arr, kTVMFFIArray, "ffi.Array result")) {
    weak_on_library_object("lib-weak array", arr.v_obj);
    printf("lib-weak array: element combined_ref_count=0x%" PRIx64 "\n", refcnt(elem));
  }
  TVMFFIObjectDecRef(elem);
  log_print_reset("lib-weak array element");
}

int main(void) {
  test_string_object();
  test_decref_null();
  test_opaque();
  test_function();
  test_custom_simple();
  test_custom_weak_outlives();
  test_custom_weak_first();
  test_custom_null_deleter();
  test_custom_in_any_conversion();
  test_custom_held_by_array();
  test_weak_on_library_objects();
  return finish("refcount");
}
