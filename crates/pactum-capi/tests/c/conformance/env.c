/*
 * env: the c_env_api.h functions (streams, DLPack tensor allocator,
 * TVMFFIEnvTensorAlloc, signals, env C API registration), handle init/deinit,
 * version, custom allocator and the BigInt helpers.
 */
#include <pthread.h>

#include "common.h"

/* ----------------------------------------------------------------- streams */

static void* g_thread_stream_seen;
static void* g_thread_stream_after;

static void* stream_thread(void* arg) {
  (void)arg;
  g_thread_stream_seen = TVMFFIEnvGetStream(kDLCUDA, 0);
  TVMFFIEnvSetStream(kDLCUDA, 0, (void*)(uintptr_t)0x7777, NULL);
  g_thread_stream_after = TVMFFIEnvGetStream(kDLCUDA, 0);
  return NULL;
}

static void print_stream(const char* label, void* s) {
  printf("%s: stream=0x%" PRIxPTR "\n", label, (uintptr_t)s);
}

static void test_streams(void) {
  print_stream("stream initial cuda:0", TVMFFIEnvGetStream(kDLCUDA, 0));
  print_stream("stream initial cpu:0", TVMFFIEnvGetStream(kDLCPU, 0));
  void* old = (void*)1;
  int rc = TVMFFIEnvSetStream(kDLCUDA, 0, (void*)(uintptr_t)0x1000, &old);
  printf("set cuda:0 = 0x1000: rc=%d old=0x%" PRIxPTR "\n", rc, (uintptr_t)old);
  print_stream("get cuda:0", TVMFFIEnvGetStream(kDLCUDA, 0));
  rc = TVMFFIEnvSetStream(kDLCUDA, 0, (void*)(uintptr_t)0x2000, &old);
  printf("set cuda:0 = 0x2000: rc=%d old=0x%" PRIxPTR "\n", rc, (uintptr_t)old);
  rc = TVMFFIEnvSetStream(kDLCUDA, 3, (void*)(uintptr_t)0x3000, NULL);
  printf("set cuda:3 = 0x3000 (no out): rc=%d\n", rc);
  print_stream("get cuda:3", TVMFFIEnvGetStream(kDLCUDA, 3));
  print_stream("get cuda:2", TVMFFIEnvGetStream(kDLCUDA, 2));
  print_stream("get cuda:0", TVMFFIEnvGetStream(kDLCUDA, 0));
  print_stream("get rocm:0", TVMFFIEnvGetStream(kDLROCM, 0));
  print_stream("get cuda:1000", TVMFFIEnvGetStream(kDLCUDA, 1000));
  rc = TVMFFIEnvSetStream(kDLROCM, 1, (void*)(uintptr_t)0x4000, &old);
  printf("set rocm:1 = 0x4000: rc=%d old=0x%" PRIxPTR "\n", rc, (uintptr_t)old);
  print_stream("get rocm:1", TVMFFIEnvGetStream(kDLROCM, 1));
  print_stream("get cuda:0 unchanged", TVMFFIEnvGetStream(kDLCUDA, 0));
  rc = TVMFFIEnvSetStream(kDLCUDA, 3, NULL, &old);
  printf("reset cuda:3 to NULL: rc=%d old=0x%" PRIxPTR "\n", rc, (uintptr_t)old);
  print_stream("get cuda:3", TVMFFIEnvGetStream(kDLCUDA, 3));

  /* streams are thread-local */
  pthread_t th;
  pthread_create(&th, NULL, stream_thread, NULL);
  pthread_join(th, NULL);
  print_stream("other thread saw cuda:0", g_thread_stream_seen);
  print_stream("other thread after own set", g_thread_stream_after);
  print_stream("main cuda:0 after thread", TVMFFIEnvGetStream(kDLCUDA, 0));
}

/* --------------------------------------------------------- tensor allocator */

typedef struct {
  DLManagedTensorVersioned mt;
  int64_t shape[4];
  int64_t strides[4];
} AllocBlock;

static int g_alloc_calls;
static int g_alloc_frees;
static int g_alloc_give_strides;
static DLTensor g_alloc_seen;
static int64_t g_alloc_seen_shape[4];
static int g_alloc_seen_err_ctx_null;

static void alloc_block_deleter(DLManagedTensorVersioned* self) {
  AllocBlock* b = (AllocBlock*)self->manager_ctx;
  g_alloc_frees++;
  free(b->mt.dl_tensor.data);
  free(b);
}

static int alloc_a(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                   void (*SetError)(void* error_ctx, const char* kind, const char* message)) {
  (void)SetError;
  g_alloc_calls++;
  g_alloc_seen = *prototype;
  g_alloc_seen_err_ctx_null = error_ctx == NULL;
  for (int i = 0; i < prototype->ndim && i < 4; ++i) g_alloc_seen_shape[i] = prototype->shape[i];
  AllocBlock* b = (AllocBlock*)calloc(1, sizeof(AllocBlock));
  b->mt.version.major = DLPACK_MAJOR_VERSION;
  b->mt.version.minor = DLPACK_MINOR_VERSION;
  b->mt.dl_tensor = *prototype;
  size_t numel = 1;
  for (int i = 0; i < prototype->ndim; ++i) {
    b->shape[i] = prototype->shape[i];
    numel *= (size_t)prototype->shape[i];
  }
  b->mt.dl_tensor.shape = b->shape;
  if (g_alloc_give_strides) {
    int64_t s = 1;
    for (int i = prototype->ndim - 1; i >= 0; --i) {
      b->strides[i] = s * 2; /* deliberately non-compact */
      s *= prototype->shape[i];
    }
    b->mt.dl_tensor.strides = b->strides;
  } else {
    b->mt.dl_tensor.strides = NULL;
  }
  b->mt.dl_tensor.data = calloc(numel ? numel : 1, (prototype->dtype.bits + 7) / 8);
  b->mt.dl_tensor.byte_offset = 0;
  b->mt.manager_ctx = b;
  b->mt.deleter = alloc_block_deleter;
  *out = &b->mt;
  return 0;
}

static int alloc_b(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                   void (*SetError)(void* error_ctx, const char* kind, const char* message)) {
  (void)prototype;
  (void)out;
  SetError(error_ctx, "MemoryError", "allocator B is out of memory");
  return -1;
}

static int alloc_c(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                   void (*SetError)(void* error_ctx, const char* kind, const char* message)) {
  return alloc_a(prototype, out, error_ctx, SetError);
}

static const char* alloc_name(DLPackManagedTensorAllocator a) {
  if (a == NULL) return "NULL";
  if (a == alloc_a) return "A";
  if (a == alloc_b) return "B";
  if (a == alloc_c) return "C";
  return "other";
}

static DLPackManagedTensorAllocator g_thread_alloc_seen;
static DLPackManagedTensorAllocator g_thread_alloc_after;

static void* alloc_thread(void* arg) {
  (void)arg;
  g_thread_alloc_seen = TVMFFIEnvGetDLPackManagedTensorAllocator();
  TVMFFIEnvSetDLPackManagedTensorAllocator(alloc_c, 0, NULL);
  g_thread_alloc_after = TVMFFIEnvGetDLPackManagedTensorAllocator();
  return NULL;
}

static void run_alloc_thread(const char* label) {
  pthread_t th;
  pthread_create(&th, NULL, alloc_thread, NULL);
  pthread_join(th, NULL);
  printf("%s: new thread sees %s, after own TLS set %s\n", label, alloc_name(g_thread_alloc_seen),
         alloc_name(g_thread_alloc_after));
}

static void tensor_alloc(const char* label) {
  int64_t shape[2] = {2, 3};
  DLTensor proto;
  memset(&proto, 0, sizeof(proto));
  proto.device.device_type = kDLCPU;
  proto.ndim = 2;
  proto.dtype.code = kDLFloat;
  proto.dtype.bits = 32;
  proto.dtype.lanes = 1;
  proto.shape = shape;
  void* t = NULL;
  int before_calls = g_alloc_calls;
  int rc = TVMFFIEnvTensorAlloc(&proto, &t);
  if (rc != 0) {
    print_err(label, rc, ERR_MSG);
    return;
  }
  DLTensor* dl = tensor_of(t);
  printf("%s: rc=0 type_index=%d refcount=0x%" PRIx64 " alloc_calls=%d ndim=%d shape=[%" PRId64
         ",%" PRId64 "] strides=",
         label, hdr(t)->type_index, refcnt(t), g_alloc_calls - before_calls, dl->ndim,
         dl->shape[0], dl->shape[1]);
  if (dl->strides) printf("[%" PRId64 ",%" PRId64 "]", dl->strides[0], dl->strides[1]);
  else printf("NULL");
  printf(" dtype=%u,%u,%u data_set=%d\n", dl->dtype.code, dl->dtype.bits, dl->dtype.lanes,
         dl->data != NULL);
  printf("%s: allocator saw ndim=%d shape=[%" PRId64 ",%" PRId64 "] dtype=%u,%u,%u device=%d,%d"
         " strides_null=%d data_null=%d error_ctx_null=%d\n",
         label, g_alloc_seen.ndim, g_alloc_seen_shape[0], g_alloc_seen_shape[1],
         g_alloc_seen.dtype.code, g_alloc_seen.dtype.bits, g_alloc_seen.dtype.lanes,
         (int)g_alloc_seen.device.device_type, g_alloc_seen.device.device_id,
         g_alloc_seen.strides == NULL, g_alloc_seen.data == NULL, g_alloc_seen_err_ctx_null);
  int frees = g_alloc_frees;
  TVMFFIObjectDecRef(t);
  printf("%s: frees on death=%d\n", label, g_alloc_frees - frees);
}

static void test_allocator(void) {
  printf("allocator initial: %s\n", alloc_name(TVMFFIEnvGetDLPackManagedTensorAllocator()));
  tensor_alloc("tensor_alloc without allocator");

  DLPackManagedTensorAllocator old = alloc_b;
  int rc = TVMFFIEnvSetDLPackManagedTensorAllocator(alloc_a, 0, &old);
  printf("set A (tls): rc=%d old=%s get=%s\n", rc, alloc_name(old),
         alloc_name(TVMFFIEnvGetDLPackManagedTensorAllocator()));
  run_alloc_thread("after TLS set A");
  tensor_alloc("tensor_alloc with A");
  g_alloc_give_strides = 1;
  tensor_alloc("tensor_alloc with A giving strides");
  g_alloc_give_strides = 0;

  rc = TVMFFIEnvSetDLPackManagedTensorAllocator(alloc_b, 1, &old);
  printf("set B (global): rc=%d old=%s get=%s\n", rc, alloc_name(old),
         alloc_name(TVMFFIEnvGetDLPackManagedTensorAllocator()));
  run_alloc_thread("after global set B");
  tensor_alloc("tensor_alloc with B (fails)");

  rc = TVMFFIEnvSetDLPackManagedTensorAllocator(alloc_a, 0, &old);
  printf("set A (tls) again: rc=%d old=%s get=%s\n", rc, alloc_name(old),
         alloc_name(TVMFFIEnvGetDLPackManagedTensorAllocator()));
  run_alloc_thread("after TLS A over global B");

  rc = TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, &old);
  printf("set NULL (tls): rc=%d old=%s get=%s (falls back to global)\n", rc, alloc_name(old),
         alloc_name(TVMFFIEnvGetDLPackManagedTensorAllocator()));
  rc = TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 1, NULL);
  printf("set NULL (global, no out): rc=%d get=%s\n", rc,
         alloc_name(TVMFFIEnvGetDLPackManagedTensorAllocator()));
  run_alloc_thread("after clearing both");
}

/* ------------------------------------------------------------ env C APIs */

static int g_check_calls, g_ensure_calls, g_release_calls, g_check_result;
static int fake_check_signals(void) {
  g_check_calls++;
  if (g_check_result != 0) TVMFFIErrorSetRaisedFromCStr("KeyboardInterrupt", "signal");
  return g_check_result;
}
static int g_gil_token;
static void* fake_gil_ensure(void) {
  g_ensure_calls++;
  return &g_gil_token;
}
static void fake_gil_release(void* state) {
  if (state == &g_gil_token) g_release_calls++;
}

static void test_signals(void) {
  printf("check_signals default: rc=%d\n", TVMFFIEnvCheckSignals());
  int rc = TVMFFIEnvRegisterCAPI("NotAKnownAPI", (void*)fake_gil_ensure);
  print_err("register unknown env api", rc, ERR_MSG);
  rc = TVMFFIEnvRegisterCAPI("PyGILState_Ensure", (void*)fake_gil_ensure);
  printf("register PyGILState_Ensure: rc=%d\n", rc);
  rc = TVMFFIEnvRegisterCAPI("PyGILState_Release", (void*)fake_gil_release);
  printf("register PyGILState_Release: rc=%d\n", rc);
  rc = TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", (void*)fake_check_signals);
  printf("register PyErr_CheckSignals: rc=%d\n", rc);
  g_check_result = 0;
  rc = TVMFFIEnvCheckSignals();
  printf("check_signals ok: rc=%d check=%d ensure=%d release=%d\n", rc, g_check_calls,
         g_ensure_calls, g_release_calls);
  g_check_result = -1;
  rc = TVMFFIEnvCheckSignals();
  printf("check_signals raising: rc=%d check=%d ensure=%d release=%d ", rc, g_check_calls,
         g_ensure_calls, g_release_calls);
  ErrInfo e = take_error();
  print_errinfo(&e, ERR_MSG);
  printf("\n");
  rc = TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", NULL);
  int check_rc = TVMFFIEnvCheckSignals();
  printf("unregister PyErr_CheckSignals: rc=%d check_signals=%d calls=%d\n", rc, check_rc,
         g_check_calls);
}

/* --------------------------------------------------------- init / deinit */

static int g_init_calls, g_deinit_calls, g_init_mode;
static int g_init_value = 17;
static void* g_deinit_arg;

static int init_fn(void** result) {
  g_init_calls++;
  if (g_init_mode == 1) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "init failed on purpose");
    return -1;
  }
  if (g_init_mode == 2) {
    *result = NULL;
    return 0;
  }
  *result = &g_init_value;
  return 0;
}

static int deinit_fn(void* handle) {
  g_deinit_calls++;
  g_deinit_arg = handle;
  return 0;
}

static int deinit_fail(void* handle) {
  (void)handle;
  g_deinit_calls++;
  TVMFFIErrorSetRaisedFromCStr("ValueError", "deinit failed");
  return -1;
}

static void* g_race_handle;
static int g_race_inits;
static int race_init(void** result) {
  __atomic_fetch_add(&g_race_inits, 1, __ATOMIC_RELAXED);
  *result = &g_init_value;
  return 0;
}
static void* race_thread(void* arg) {
  (void)arg;
  for (int i = 0; i < 1000; ++i) TVMFFIHandleInitOnce(&g_race_handle, race_init);
  return NULL;
}

static void test_init_once(void) {
  void* h = NULL;
  g_init_mode = 0;
  int rc = TVMFFIHandleInitOnce(&h, init_fn);
  printf("init_once: rc=%d calls=%d handle_set=%d\n", rc, g_init_calls, h == &g_init_value);
  rc = TVMFFIHandleInitOnce(&h, init_fn);
  printf("init_once again: rc=%d calls=%d\n", rc, g_init_calls);
  rc = TVMFFIHandleDeinitOnce(&h, deinit_fn);
  printf("deinit_once: rc=%d deinit_calls=%d arg_ok=%d handle_null=%d\n", rc, g_deinit_calls,
         g_deinit_arg == &g_init_value, h == NULL);
  rc = TVMFFIHandleDeinitOnce(&h, deinit_fn);
  printf("deinit_once again: rc=%d deinit_calls=%d\n", rc, g_deinit_calls);

  g_init_calls = 0;
  g_init_mode = 1;
  rc = TVMFFIHandleInitOnce(&h, init_fn);
  print_err("init_once failing init", rc, ERR_MSG);
  printf("init_once failing init: calls=%d handle_null=%d\n", g_init_calls, h == NULL);
  g_init_mode = 2;
  rc = TVMFFIHandleInitOnce(&h, init_fn);
  print_err("init_once NULL result", rc, ERR_MSG);
  printf("init_once NULL result: calls=%d handle_null=%d\n", g_init_calls, h == NULL);
  g_init_mode = 0;
  rc = TVMFFIHandleInitOnce(&h, init_fn);
  printf("init_once after failures: rc=%d calls=%d handle_set=%d\n", rc, g_init_calls,
         h == &g_init_value);
  g_deinit_calls = 0;
  rc = TVMFFIHandleDeinitOnce(&h, deinit_fail);
  print_err("deinit_once failing", rc, ERR_MSG);
  printf("deinit_once failing: calls=%d handle_null=%d\n", g_deinit_calls, h == NULL);
  /* a pre-set handle is left alone */
  void* preset = &g_deinit_calls;
  g_init_calls = 0;
  rc = TVMFFIHandleInitOnce(&preset, init_fn);
  printf("init_once on preset handle: rc=%d calls=%d unchanged=%d\n", rc, g_init_calls,
         preset == (void*)&g_deinit_calls);

  pthread_t th[4];
  for (int i = 0; i < 4; ++i) pthread_create(&th[i], NULL, race_thread, NULL);
  for (int i = 0; i < 4; ++i) pthread_join(th[i], NULL);
  printf("init_once race (4 threads x 1000): inits=%d handle_set=%d\n", g_race_inits,
         g_race_handle == &g_init_value);
}

/* ------------------------------------------------ version + custom allocator */

static int g_custom_calls;
static void* custom_allocate(size_t size, size_t alignment, int32_t type_index, void* context) {
  (void)size;
  (void)alignment;
  (void)type_index;
  (void)context;
  g_custom_calls++;
  return NULL;
}

static void test_version_and_allocator(void) {
  TVMFFIVersion v;
  memset(&v, 0xFF, sizeof(v));
  TVMFFIGetVersion(&v);
  printf("version: %u.%u.%u header=%d.%d.%d\n", v.major, v.minor, v.patch, TVM_FFI_VERSION_MAJOR,
         TVM_FFI_VERSION_MINOR, TVM_FFI_VERSION_PATCH);

  TVMFFICustomAllocator* builtin = TVMFFIGetCustomAllocator();
  printf("custom allocator: non_null=%d allocate_set=%d\n", builtin != NULL,
         builtin && builtin->allocate != NULL);
  if (builtin && builtin->allocate) {
    /* the builtin allocator places a header with delete_space before the body */
    void* body = builtin->allocate(64, 16, kTVMFFIObject, builtin->context);
    printf("builtin allocate(64,16): non_null=%d aligned16=%d", body != NULL,
           body && ((uintptr_t)body % 16) == 0);
    if (body) {
      TVMFFIObjectAllocHeader* h = ((TVMFFIObjectAllocHeader*)body) - 1;
      printf(" delete_space_set=%d", h->delete_space != NULL);
      memset(body, 0x11, 64);
      if (h->delete_space) h->delete_space(body);
    }
    printf("\n");
    /* note: alignments above 16 are not honoured by the official builtin (see NOTES.md) */
    void* body2 = builtin->allocate(24, 8, kTVMFFIStr, builtin->context);
    printf("builtin allocate(24,8): non_null=%d aligned8=%d\n", body2 != NULL,
           body2 && ((uintptr_t)body2 % 8) == 0);
    if (body2) (((TVMFFIObjectAllocHeader*)body2) - 1)->delete_space(body2);
  }
  static TVMFFICustomAllocator custom = {custom_allocate, NULL};
  int rc = TVMFFISetCustomAllocator(&custom);
  printf("set custom allocator: rc=%d get_is_custom=%d\n", rc, TVMFFIGetCustomAllocator() == &custom);
  rc = TVMFFISetCustomAllocator(NULL);
  printf("restore builtin: rc=%d get_is_builtin=%d\n", rc, TVMFFIGetCustomAllocator() == builtin);
}

/* ------------------------------------------------------------------ BigInt */

static void bigint(const char* label, const int64_t* words, size_t nwords, size_t nbytes) {
  TVMFFIByteArray in = ban((const char*)words, nbytes ? nbytes : nwords * 8);
  TVMFFIAny out;
  memset(&out, 0x77, sizeof(out));
  int rc = TVMFFIBigIntFromByteArray(&in, &out);
  if (rc != 0) {
    print_err(label, rc, ERR_MSG);
    return;
  }
  printf("%s: rc=0 type_index=%d padding=%u", label, out.type_index, out.zero_padding);
  if (out.type_index == kTVMFFIInt) {
    printf(" value=%" PRId64, out.v_int64);
  } else if (out.type_index == kTVMFFIBigInt) {
    size_t count = *(size_t*)cell_of(out.v_obj);
    const int64_t* w = (const int64_t*)((char*)cell_of(out.v_obj) + sizeof(size_t));
    printf(" refcount=0x%" PRIx64 " layout_words=%zu [", refcnt(out.v_obj), count);
    for (size_t i = 0; i < count; ++i) printf("%s0x%016" PRIx64, i ? "," : "", (uint64_t)w[i]);
    printf("]");
  }
  TVMFFIByteArray content = TVMFFIBigIntGetContentByteArray(&out);
  printf(" content_bytes=%zu [", content.size);
  for (size_t i = 0; i + 8 <= content.size; i += 8) {
    int64_t w;
    memcpy(&w, content.data + i, 8);
    printf("%s0x%016" PRIx64, i ? "," : "", (uint64_t)w);
  }
  printf("]");
  if (out.type_index == kTVMFFIInt) {
    printf(" content_points_into_any=%d", content.data == (const char*)&out.v_int64);
  }
  printf("\n");
  any_release(&out);
}

static void test_bigint(void) {
  const int64_t one = 5;
  const int64_t neg[2] = {-1, -1};
  const int64_t big63[2] = {INT64_MIN, 0};
  const int64_t one0[2] = {1, 0};
  const int64_t one00[3] = {1, 0, 0};
  const int64_t two64[2] = {0, 1};
  const int64_t max_u64[2] = {-1, 0};
  const int64_t neg_two64[2] = {0, -1};
  const int64_t min_ext[2] = {INT64_MIN, -1};
  const int64_t three[3] = {1, 2, 3};
  const int64_t three_ext[4] = {1, 2, 3, 0};
  const int64_t neg3[4] = {0, 0, INT64_MIN, -1};
  bigint("bigint empty", NULL, 0, 0);
  bigint("bigint 5", &one, 1, 0);
  bigint("bigint [-1,-1]", neg, 2, 0);
  bigint("bigint 2^63", big63, 2, 0);
  bigint("bigint [1,0]", one0, 2, 0);
  bigint("bigint [1,0,0]", one00, 3, 0);
  bigint("bigint 2^64", two64, 2, 0);
  bigint("bigint 2^64-1", max_u64, 2, 0);
  bigint("bigint -2^64", neg_two64, 2, 0);
  bigint("bigint [INT64_MIN,-1]", min_ext, 2, 0);
  bigint("bigint 3 words", three, 3, 0);
  bigint("bigint 3 words + zero", three_ext, 4, 0);
  bigint("bigint negative 3 words", neg3, 4, 0);
  bigint("bigint 7 bytes", &one, 0, 7);
  bigint("bigint 12 bytes", one0, 0, 12);
  /* content of a plain Int value made by the caller */
  TVMFFIAny v = any_int(-2);
  TVMFFIByteArray c = TVMFFIBigIntGetContentByteArray(&v);
  int64_t w = 0;
  if (c.size == 8) memcpy(&w, c.data, 8);
  printf("content of int -2: size=%zu word=%" PRId64 " points_into_any=%d\n", c.size, w,
         c.data == (const char*)&v.v_int64);
}

int main(void) {
  test_streams();
  test_allocator();
  test_signals();
  test_init_once();
  test_version_and_allocator();
  test_bigint();
  return finish("env");
}
