/*
 * errors: ErrorCreate, ErrorCreateWithCauseAndExtraContext, the TLS raised
 * error (SetRaised / SetRaisedFromCStr / ...Parts / MoveFromRaised),
 * update_backtrace and TVMFFIBacktrace.
 */
#include "common.h"

static void print_ba(const char* name, TVMFFIByteArray b) {
  printf(" %s=\"", name);
  print_escaped(b.data, b.size);
  printf("\"");
}

static void describe_error(const char* label, void* err) {
  TVMFFIErrorCell* c = error_cell(err);
  printf("%s: type_index=%d refcount=0x%" PRIx64, label, hdr(err)->type_index, refcnt(err));
  print_ba("kind", c->kind);
  print_ba("message", c->message);
  print_ba("backtrace", c->backtrace);
  printf(" update_backtrace_set=%d cause_null=%d extra_null=%d\n", c->update_backtrace != NULL,
         c->cause_chain == NULL, c->extra_context == NULL);
}

static void* make_error(const char* kind, const char* msg, const char* bt) {
  TVMFFIByteArray k = ba(kind), m = ba(msg), b = ba(bt);
  void* err = NULL;
  int rc = TVMFFIErrorCreate(&k, &m, &b, &err);
  if (rc != 0 || err == NULL) {
    printf("UNEXPECTED: ErrorCreate rc=%d\n", rc);
    g_unexpected++;
    return NULL;
  }
  return err;
}

static void test_create(void) {
  void* err = make_error("ValueError", "bad value", "frame-a\nframe-b\n");
  if (!err) return;
  describe_error("create", err);
  TVMFFIErrorCell* c = error_cell(err);
  TVMFFIByteArray rep = ba("replaced\n");
  c->update_backtrace(err, &rep, kTVMFFIBacktraceUpdateModeReplace);
  printf("create:");
  print_ba("after_replace.backtrace", c->backtrace);
  printf("\n");
  TVMFFIByteArray app = ba("appended\n");
  c->update_backtrace(err, &app, kTVMFFIBacktraceUpdateModeAppend);
  printf("create:");
  print_ba("after_append.backtrace", c->backtrace);
  printf("\n");
  c->update_backtrace(err, &app, kTVMFFIBacktraceUpdateModeAppend);
  printf("create:");
  print_ba("after_2nd_append.backtrace", c->backtrace);
  printf("\n");
  TVMFFIByteArray empty = ba("");
  c->update_backtrace(err, &empty, kTVMFFIBacktraceUpdateModeReplace);
  printf("create:");
  print_ba("after_empty_replace.backtrace", c->backtrace);
  printf(" kind_unchanged=%d\n", c->kind.size == 10 && memcmp(c->kind.data, "ValueError", 10) == 0);
  TVMFFIObjectDecRef(err);

  void* e2 = make_error("", "", "");
  if (e2) {
    describe_error("create-empty", e2);
    TVMFFIObjectDecRef(e2);
  }
  /* embedded NUL in message is kept */
  TVMFFIByteArray k = ba("KeyError"), m = ban("a\0b", 3), b = ba("");
  void* e3 = NULL;
  if (ok(TVMFFIErrorCreate(&k, &m, &b, &e3), "ErrorCreate nul")) {
    describe_error("create-nul-message", e3);
    TVMFFIObjectDecRef(e3);
  }
  /* creating an error does not touch TLS */
  ErrInfo e = take_error();
  printf("create: tls_error_present=%d\n", e.present);
}

static void test_cause_chain(void) {
  void* root = make_error("IndexError", "root cause", "bt-root\n");
  void* mid = NULL;
  void* top = NULL;
  if (!root) return;
  /* extra context: a heap string object */
  TVMFFIByteArray ctx_in = ba("extra context payload");
  TVMFFIAny ctx = any_none();
  if (!ok(TVMFFIStringFromByteArray(&ctx_in, &ctx), "ctx string")) return;
  if (!has_type(&ctx, kTVMFFIStr, "context string")) return;

  TVMFFIByteArray k = ba("RuntimeError"), m = ba("middle"), b = ba("bt-mid\n");
  if (!ok(TVMFFIErrorCreateWithCauseAndExtraContext(&k, &m, &b, root, ctx.v_obj, &mid),
          "ErrorCreateWithCause mid"))
    return;
  describe_error("chain mid", mid);
  TVMFFIErrorCell* mc = error_cell(mid);
  printf("chain mid: cause_is_root=%d extra_is_ctx=%d root_refcount=0x%" PRIx64
         " ctx_refcount=0x%" PRIx64 "\n",
         mc->cause_chain == root, mc->extra_context == (void*)ctx.v_obj, refcnt(root),
         refcnt(ctx.v_obj));

  TVMFFIByteArray k2 = ba("TypeError"), m2 = ba("top level"), b2 = ba("");
  if (!ok(TVMFFIErrorCreateWithCauseAndExtraContext(&k2, &m2, &b2, mid, NULL, &top),
          "ErrorCreateWithCause top"))
    return;
  describe_error("chain top", top);
  /* walk the chain through the cells */
  int depth = 0;
  for (void* e = top; e != NULL; e = error_cell(e)->cause_chain) {
    TVMFFIErrorCell* c = error_cell(e);
    printf("chain walk[%d]:", depth++);
    print_ba("kind", c->kind);
    print_ba("message", c->message);
    printf(" has_extra=%d\n", c->extra_context != NULL);
  }
  /* the caller's references are independent of the chain */
  TVMFFIObjectDecRef(root);
  printf("chain: after caller drops root, root_refcount=0x%" PRIx64 "\n", refcnt(root));
  TVMFFIObjectDecRef(mid);
  printf("chain: after caller drops mid, mid_refcount=0x%" PRIx64 " root_refcount=0x%" PRIx64
         "\n",
         refcnt(mid), refcnt(root));
  TVMFFIObjectDecRef(top);
  printf("chain: after top dies ctx_refcount=0x%" PRIx64 "\n", refcnt(ctx.v_obj));
  any_release(&ctx);

  /* NULL cause and NULL context */
  void* plain = NULL;
  TVMFFIByteArray k3 = ba("AttributeError"), m3 = ba("plain"), b3 = ba("x\n");
  if (ok(TVMFFIErrorCreateWithCauseAndExtraContext(&k3, &m3, &b3, NULL, NULL, &plain),
         "ErrorCreateWithCause NULLs")) {
    describe_error("chain plain", plain);
    TVMFFIObjectDecRef(plain);
  }
  /* extra context may be any object, e.g. an array */
  TVMFFIAny args[2] = {any_int(1), any_rawstr("two")};
  TVMFFIAny arr;
  if (ok(call_global("ffi.Array", args, 2, &arr), "ffi.Array ctx") &&
      has_type(&arr, kTVMFFIArray, "ffi.Array result")) {
    void* e = NULL;
    if (ok(TVMFFIErrorCreateWithCauseAndExtraContext(&k3, &m3, &b3, NULL, arr.v_obj, &e),
           "ErrorCreateWithCause array ctx")) {
      printf("chain array-ctx: extra_type=%d array_refcount=0x%" PRIx64 "\n",
             hdr(error_cell(e)->extra_context)->type_index, refcnt(arr.v_obj));
      TVMFFIObjectDecRef(e);
      printf("chain array-ctx: after error dies array_refcount=0x%" PRIx64 "\n",
             refcnt(arr.v_obj));
    }
    any_release(&arr);
  }
}

static void test_set_raised(void) {
  void* none = (void*)1;
  TVMFFIErrorMoveFromRaised(&none);
  printf("move-empty: result_null=%d\n", none == NULL);

  void* err = make_error("ValueError", "raised by caller", "bt\n");
  if (!err) return;
  TVMFFIErrorSetRaised(err);
  printf("set-raised: caller_refcount=0x%" PRIx64 "\n", refcnt(err));
  void* got = NULL;
  TVMFFIErrorMoveFromRaised(&got);
  printf("set-raised: moved_same=%d refcount_after_move=0x%" PRIx64 "\n", got == err,
         refcnt(err));
  void* again = (void*)1;
  TVMFFIErrorMoveFromRaised(&again);
  printf("set-raised: second_move_null=%d\n", again == NULL);
  if (got) TVMFFIObjectDecRef(got);
  printf("set-raised: after dropping moved ref refcount=0x%" PRIx64 "\n", refcnt(err));

  /* overwriting a raised error releases the previous one */
  TVMFFIErrorSetRaised(err);
  printf("overwrite: after SetRaised refcount=0x%" PRIx64 "\n", refcnt(err));
  TVMFFIErrorSetRaisedFromCStr("KeyError", "replacement");
  printf("overwrite: after SetRaisedFromCStr refcount=0x%" PRIx64 "\n", refcnt(err));
  ErrInfo e = take_error();
  printf("overwrite: ");
  print_errinfo(&e, ERR_MSG);
  printf("\n");
  /* raising the same object twice keeps a single TLS reference */
  TVMFFIErrorSetRaised(err);
  TVMFFIErrorSetRaised(err);
  printf("set-twice: refcount=0x%" PRIx64 "\n", refcnt(err));
  e = take_error();
  printf("set-twice: after move+release refcount=0x%" PRIx64 " ", refcnt(err));
  print_errinfo(&e, ERR_MSG);
  printf("\n");
  TVMFFIObjectDecRef(err);
}

static void test_from_cstr(void) {
  TVMFFIErrorSetRaisedFromCStr("RuntimeError", "boom from C");
  void* err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) {
    printf("UNEXPECTED: no error after SetRaisedFromCStr\n");
    g_unexpected++;
    return;
  }
  TVMFFIErrorCell* c = error_cell(err);
  printf("from-cstr: type_index=%d refcount=0x%" PRIx64, hdr(err)->type_index, refcnt(err));
  print_ba("kind", c->kind);
  print_ba("message", c->message);
  printf(" backtrace_nonempty=%d update_backtrace_set=%d cause_null=%d extra_null=%d\n",
         c->backtrace.size > 0, c->update_backtrace != NULL, c->cause_chain == NULL,
         c->extra_context == NULL);
  TVMFFIByteArray rep = ba("only line\n");
  c->update_backtrace(err, &rep, kTVMFFIBacktraceUpdateModeReplace);
  printf("from-cstr:");
  print_ba("after_replace.backtrace", c->backtrace);
  printf("\n");
  TVMFFIObjectDecRef(err);

  TVMFFIErrorSetRaisedFromCStr("", "");
  ErrInfo e = take_error();
  printf("from-cstr empty: present=%d ", e.present);
  print_errinfo(&e, ERR_MSG);
  printf("\n");

  TVMFFIErrorSetRaisedFromCStr("CustomKind.With.Dots", "multi\nline\nmessage");
  e = take_error();
  printf("from-cstr custom: ");
  print_errinfo(&e, ERR_MSG);
  printf(" backtrace_nonempty=%d\n", e.bt_nonempty);
}

static void test_from_parts(void) {
  const char* parts[] = {"Argument 1 mismatch in ", NULL, "`f(x: Tensor)`", ", ", NULL,
                         "dtype mismatch"};
  TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 6);
  ErrInfo e = take_error();
  printf("parts: ");
  print_errinfo(&e, ERR_MSG);
  printf(" backtrace_nonempty=%d\n", e.bt_nonempty);

  TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 0);
  e = take_error();
  printf("parts zero: ");
  print_errinfo(&e, ERR_MSG);
  printf("\n");

  const char* nulls[] = {NULL, NULL, NULL};
  TVMFFIErrorSetRaisedFromCStrParts("ValueError", nulls, 3);
  e = take_error();
  printf("parts all-null: ");
  print_errinfo(&e, ERR_MSG);
  printf("\n");

  const char* one[] = {"single"};
  TVMFFIErrorSetRaisedFromCStrParts("IndexError", one, 1);
  e = take_error();
  printf("parts one: ");
  print_errinfo(&e, ERR_MSG);
  printf("\n");
}

static void test_backtrace_api(void) {
  const TVMFFIByteArray* bt = TVMFFIBacktrace("my_file.c", 123, "my_function", 0);
  printf("backtrace: non_null=%d", bt != NULL);
  if (bt) {
    printf(" has_file=%d has_func=%d has_line=%d", contains(bt->data, bt->size, "my_file.c"),
           contains(bt->data, bt->size, "my_function"), contains(bt->data, bt->size, "123"));
  }
  printf("\n");
  const TVMFFIByteArray* bt2 = TVMFFIBacktrace(NULL, 0, NULL, 0);
  printf("backtrace(NULL file/func): non_null=%d\n", bt2 != NULL);
  const TVMFFIByteArray* bt3 = TVMFFIBacktrace(NULL, 0, NULL, 1);
  printf("backtrace(cross boundary): non_null=%d\n", bt3 != NULL);
}

static int raising_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  (void)args;
  (void)n;
  (void)result;
  TVMFFIErrorSetRaisedFromCStr("ValueError", "raised inside callback");
  return -1;
}

static int rethrowing_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)args;
  (void)n;
  (void)result;
  /* call the inner function, wrap its error as the cause of a new one */
  TVMFFIAny r = any_none();
  int rc = TVMFFIFunctionCall(self, NULL, 0, &r);
  if (rc == 0) return 0;
  void* inner = NULL;
  TVMFFIErrorMoveFromRaised(&inner);
  TVMFFIByteArray k = ba("RuntimeError"), m = ba("outer wrapper"), b = ba("");
  void* outer = NULL;
  if (TVMFFIErrorCreateWithCauseAndExtraContext(&k, &m, &b, inner, NULL, &outer) != 0) return -1;
  TVMFFIObjectDecRef(inner);
  TVMFFIErrorSetRaised(outer);
  TVMFFIObjectDecRef(outer);
  return -1;
}

static void test_through_calls(void) {
  void* inner = NULL;
  void* outer = NULL;
  if (!ok(TVMFFIFunctionCreate(NULL, raising_callback, NULL, &inner), "create inner")) return;
  if (!ok(TVMFFIFunctionCreate(inner, rethrowing_callback, NULL, &outer), "create outer")) return;
  TVMFFIAny r;
  int rc = call_fn(outer, NULL, 0, &r);
  void* err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf("through-calls: rc=%d err_present=%d", rc, err != NULL);
  if (err) {
    TVMFFIErrorCell* c = error_cell(err);
    print_ba("kind", c->kind);
    print_ba("message", c->message);
    printf(" refcount=0x%" PRIx64, refcnt(err));
    if (c->cause_chain) {
      TVMFFIErrorCell* cc = error_cell(c->cause_chain);
      print_ba("cause.kind", cc->kind);
      print_ba("cause.message", cc->message);
      printf(" cause.refcount=0x%" PRIx64 " cause.backtrace_nonempty=%d", refcnt(c->cause_chain),
             cc->backtrace.size > 0);
    }
    TVMFFIObjectDecRef(err);
  }
  printf("\n");
  TVMFFIObjectDecRef(outer);
  TVMFFIObjectDecRef(inner);
}

int main(void) {
  test_create();
  test_cause_chain();
  test_set_raised();
  test_from_cstr();
  test_from_parts();
  test_backtrace_api();
  test_through_calls();
  return finish("errors");
}
