/*
 * Shared helpers for the pactum C conformance programs.
 *
 * Every program prints deterministic lines only: no pointer values, no
 * timings and no backtrace text.  Pointers are compared and the comparison
 * result is printed instead.  A program exits with status 1 when a call that
 * must succeed did not (it prints an "UNEXPECTED" line first), else 0.
 */
#ifndef PACTUM_CONFORMANCE_COMMON_H_
#define PACTUM_CONFORMANCE_COMMON_H_

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_unexpected = 0;

/* Line-buffer stdout so that a crash keeps every completed line in the .out file. */
__attribute__((constructor)) static void conformance_line_buffered_stdout(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
}

/* Report (and count) a value whose type index is not the expected one. */
static inline int has_type(const TVMFFIAny* a, int32_t expected, const char* what) {
  if (a->type_index == expected) return 1;
  printf("UNEXPECTED: %s has type_index %d, expected %d\n", what, a->type_index, expected);
  g_unexpected++;
  return 0;
}

/* ---------------------------------------------------------------- objects */

static inline TVMFFIObject* hdr(void* obj) { return (TVMFFIObject*)obj; }

static inline uint64_t refcnt(void* obj) {
  return __atomic_load_n(&hdr(obj)->combined_ref_count, __ATOMIC_RELAXED);
}

static inline void* cell_of(void* obj) { return (char*)obj + sizeof(TVMFFIObject); }

static inline TVMFFIByteArray* bytes_cell(void* obj) { return (TVMFFIByteArray*)cell_of(obj); }

static inline TVMFFIErrorCell* error_cell(void* obj) { return (TVMFFIErrorCell*)cell_of(obj); }

static inline TVMFFIFunctionCell* function_cell(void* obj) {
  return (TVMFFIFunctionCell*)cell_of(obj);
}

static inline TVMFFISeqCell* seq_cell(void* obj) { return (TVMFFISeqCell*)cell_of(obj); }

static inline DLTensor* tensor_of(void* obj) { return (DLTensor*)cell_of(obj); }

static inline TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray r;
  r.data = s;
  r.size = strlen(s);
  return r;
}

static inline TVMFFIByteArray ban(const char* s, size_t n) {
  TVMFFIByteArray r;
  r.data = s;
  r.size = n;
  return r;
}

/* ------------------------------------------------------------ Any values */

static inline TVMFFIAny any_none(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFINone;
  return a;
}

static inline TVMFFIAny any_int(int64_t v) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static inline TVMFFIAny any_bool(int v) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIBool;
  a.v_int64 = v ? 1 : 0;
  return a;
}

static inline TVMFFIAny any_float(double v) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIFloat;
  a.v_float64 = v;
  return a;
}

static inline TVMFFIAny any_rawstr(const char* s) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}

static inline TVMFFIAny any_ptr(void* p) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIOpaquePtr;
  a.v_ptr = p;
  return a;
}

static inline TVMFFIAny any_dltensor(DLTensor* t) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIDLTensorPtr;
  a.v_ptr = t;
  return a;
}

static inline TVMFFIAny any_bytearray(TVMFFIByteArray* b) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIByteArrayPtr;
  a.v_ptr = b;
  return a;
}

static inline TVMFFIAny any_dtype(uint8_t code, uint8_t bits, uint16_t lanes) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIDataType;
  a.v_dtype.code = code;
  a.v_dtype.bits = bits;
  a.v_dtype.lanes = lanes;
  return a;
}

static inline TVMFFIAny any_device(int32_t type, int32_t id) {
  TVMFFIAny a = any_none();
  a.type_index = kTVMFFIDevice;
  a.v_device.device_type = (DLDeviceType)type;
  a.v_device.device_id = id;
  return a;
}

/* A borrowed view of an object (no reference taken). */
static inline TVMFFIAny any_obj(void* obj) {
  TVMFFIAny a = any_none();
  a.type_index = hdr(obj)->type_index;
  a.v_obj = hdr(obj);
  return a;
}

/* Release an owned Any and reset it to None. */
static inline void any_release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj != NULL) {
    TVMFFIObjectDecRef(a->v_obj);
  }
  *a = any_none();
}

/* Read the characters of a string-like or bytes-like value. */
static inline int any_get_bytes(const TVMFFIAny* a, const char** data, size_t* size) {
  switch (a->type_index) {
    case kTVMFFIRawStr:
      *data = a->v_c_str;
      *size = strlen(a->v_c_str);
      return 1;
    case kTVMFFIByteArrayPtr:
      *data = ((const TVMFFIByteArray*)a->v_ptr)->data;
      *size = ((const TVMFFIByteArray*)a->v_ptr)->size;
      return 1;
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      *data = a->v_bytes;
      *size = a->small_str_len;
      return 1;
    case kTVMFFIStr:
    case kTVMFFIBytes:
      *data = bytes_cell(a->v_obj)->data;
      *size = bytes_cell(a->v_obj)->size;
      return 1;
    default:
      return 0;
  }
}

/* Whether data[0..size) contains the NUL-terminated fragment. */
static inline int contains(const char* data, size_t size, const char* fragment) {
  size_t m = strlen(fragment);
  if (data == NULL || m > size) return 0;
  for (size_t i = 0; i + m <= size; ++i) {
    if (memcmp(data + i, fragment, m) == 0) return 1;
  }
  return 0;
}

/* Print bytes with C-style escapes for anything not printable. */
static inline void print_escaped(const char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    unsigned char c = (unsigned char)data[i];
    if (c == '\\' || c == '"') {
      printf("\\%c", c);
    } else if (c == '\n') {
      printf("\\n");
    } else if (c >= 32 && c < 127) {
      putchar(c);
    } else {
      printf("\\x%02x", c);
    }
  }
}

/* Describe a value on stdout (no trailing newline). */
static inline void print_any(const TVMFFIAny* a) {
  const char* d;
  size_t n;
  switch (a->type_index) {
    case kTVMFFINone:
      printf("None");
      return;
    case kTVMFFIInt:
      printf("int:%" PRId64, a->v_int64);
      return;
    case kTVMFFIBool:
      printf("bool:%d", (int)(a->v_int64 != 0));
      return;
    case kTVMFFIFloat:
      printf("float:%.17g", a->v_float64);
      return;
    case kTVMFFIOpaquePtr:
      printf("ptr:%s", a->v_ptr ? "set" : "null");
      return;
    case kTVMFFIDataType:
      printf("dtype:%u,%u,%u", a->v_dtype.code, a->v_dtype.bits, a->v_dtype.lanes);
      return;
    case kTVMFFIDevice:
      printf("device:%d,%d", (int)a->v_device.device_type, a->v_device.device_id);
      return;
    case kTVMFFIDLTensorPtr:
      printf("dltensorptr:%s", a->v_ptr ? "set" : "null");
      return;
    default:
      break;
  }
  if (any_get_bytes(a, &d, &n)) {
    int is_bytes = a->type_index == kTVMFFIByteArrayPtr || a->type_index == kTVMFFISmallBytes ||
                   a->type_index == kTVMFFIBytes;
    printf("%s(%d):\"", is_bytes ? "bytes" : "str", a->type_index);
    print_escaped(d, n);
    printf("\"");
    return;
  }
  printf("obj(%d)", a->type_index);
}

/* ---------------------------------------------------------------- errors */

typedef struct {
  int present;
  char kind[128];
  char msg[2048];
  size_t msg_len;
  int bt_nonempty;
} ErrInfo;

/* Move the raised error out of TLS and copy out its fields. */
static inline ErrInfo take_error(void) {
  ErrInfo e;
  memset(&e, 0, sizeof(e));
  void* err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) return e;
  e.present = 1;
  TVMFFIErrorCell* c = error_cell(err);
  size_t kn = c->kind.size < sizeof(e.kind) - 1 ? c->kind.size : sizeof(e.kind) - 1;
  memcpy(e.kind, c->kind.data, kn);
  size_t mn = c->message.size < sizeof(e.msg) - 1 ? c->message.size : sizeof(e.msg) - 1;
  memcpy(e.msg, c->message.data, mn);
  e.msg_len = mn;
  e.bt_nonempty = c->backtrace.size > 0;
  TVMFFIObjectDecRef(err);
  return e;
}

enum { ERR_KIND = 0, ERR_MSG = 1, ERR_FIRSTLINE = 2 };

static inline void print_errinfo(const ErrInfo* e, int mode) {
  if (!e->present) {
    printf("kind=<none>");
    return;
  }
  printf("kind=%s", e->kind);
  if (mode == ERR_MSG) {
    printf(" msg=\"");
    print_escaped(e->msg, e->msg_len);
    printf("\"");
  } else if (mode == ERR_FIRSTLINE) {
    const char* nl = memchr(e->msg, '\n', e->msg_len);
    size_t n = nl ? (size_t)(nl - e->msg) : e->msg_len;
    printf(" msg1=\"");
    print_escaped(e->msg, n);
    printf("\"");
  }
}

/* Print "label: rc=.. kind=.. [msg=..]" for an expected failure. */
static inline void print_err(const char* label, int rc, int mode) {
  ErrInfo e = take_error();
  printf("%s: rc=%d ", label, rc);
  print_errinfo(&e, mode);
  printf("\n");
}

/* Print kind plus whether the message contains a stable API-level fragment. */
static inline void print_err_has(const char* label, int rc, const char* fragment) {
  ErrInfo e = take_error();
  printf("%s: rc=%d ", label, rc);
  print_errinfo(&e, ERR_KIND);
  printf(" msg_has(\"%s\")=%d\n", fragment, e.present && contains(e.msg, e.msg_len, fragment));
}

/* Returns 1 when rc == 0; otherwise reports the error as unexpected. */
static inline int ok(int rc, const char* label) {
  if (rc == 0) return 1;
  ErrInfo e = take_error();
  printf("UNEXPECTED failure in %s: rc=%d ", label, rc);
  print_errinfo(&e, ERR_MSG);
  printf("\n");
  g_unexpected++;
  return 0;
}

static inline void expect(int cond, const char* what) {
  if (!cond) {
    printf("UNEXPECTED: %s\n", what);
    g_unexpected++;
  }
}

/* --------------------------------------------------------------- globals */

static inline void* get_global(const char* name) {
  TVMFFIByteArray n = ba(name);
  void* f = NULL;
  int rc = TVMFFIFunctionGetGlobal(&n, &f);
  if (rc != 0 || f == NULL) {
    if (rc != 0) (void)take_error();
    printf("UNEXPECTED: global %s missing (rc=%d)\n", name, rc);
    g_unexpected++;
    return NULL;
  }
  return f;
}

/* Call a function; result is reset to None first. */
static inline int call_fn(void* f, TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  *result = any_none();
  return TVMFFIFunctionCall(f, args, n, result);
}

/* Call a global by name. Returns -100 when the global is missing. */
static inline int call_global(const char* name, TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  *result = any_none();
  void* f = get_global(name);
  if (f == NULL) return -100;
  int rc = TVMFFIFunctionCall(f, args, n, result);
  TVMFFIObjectDecRef(f);
  return rc;
}

static inline int finish(const char* prog) {
  printf("%s: done unexpected=%d\n", prog, g_unexpected);
  fflush(stdout);
  return g_unexpected ? 1 : 0;
}

#endif /* PACTUM_CONFORMANCE_COMMON_H_ */
