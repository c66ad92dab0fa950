/*
 * tensors: DLPack import (TVMFFITensorFromDLPack[Versioned]) with managed
 * tensors owned by this test, export (TVMFFITensorToDLPack[Versioned]) and
 * TVMFFITensorCreateUnsafeView.
 */
#include "common.h"

/* ------------------------------------------------- producer-side tensors */

typedef struct {
  int deleted;
  void* deleted_arg;
} ProducerLog;

static ProducerLog g_log;

typedef struct {
  DLManagedTensor mt;
  int64_t shape[4];
  int64_t strides[4];
} Legacy;

typedef struct {
  DLManagedTensorVersioned mt;
  int64_t shape[4];
  int64_t strides[4];
} Versioned;

static _Alignas(64) float g_data[64];

static void legacy_deleter(DLManagedTensor* self) {
  g_log.deleted++;
  g_log.deleted_arg = self;
  free(self->manager_ctx);
}

static void versioned_deleter(DLManagedTensorVersioned* self) {
  g_log.deleted++;
  g_log.deleted_arg = self;
  free(self->manager_ctx);
}

/* manager_ctx points at the enclosing allocation so the deleter frees it */
static Legacy* new_legacy(int ndim, const int64_t* shape, const int64_t* strides,
                          uint64_t byte_offset) {
  Legacy* t = (Legacy*)calloc(1, sizeof(Legacy));
  t->mt.dl_tensor.data = g_data;
  t->mt.dl_tensor.device.device_type = kDLCPU;
  t->mt.dl_tensor.device.device_id = 0;
  t->mt.dl_tensor.ndim = ndim;
  t->mt.dl_tensor.dtype.code = kDLFloat;
  t->mt.dl_tensor.dtype.bits = 32;
  t->mt.dl_tensor.dtype.lanes = 1;
  for (int i = 0; i < ndim; ++i) t->shape[i] = shape[i];
  t->mt.dl_tensor.shape = ndim ? t->shape : NULL;
  if (strides) {
    for (int i = 0; i < ndim; ++i) t->strides[i] = strides[i];
    t->mt.dl_tensor.strides = t->strides;
  }
  t->mt.dl_tensor.byte_offset = byte_offset;
  t->mt.manager_ctx = t;
  t->mt.deleter = legacy_deleter;
  return t;
}

static Versioned* new_versioned(int ndim, const int64_t* shape, const int64_t* strides,
                                uint64_t flags) {
  Versioned* t = (Versioned*)calloc(1, sizeof(Versioned));
  t->mt.version.major = DLPACK_MAJOR_VERSION;
  t->mt.version.minor = DLPACK_MINOR_VERSION;
  t->mt.flags = flags;
  t->mt.dl_tensor.data = g_data;
  t->mt.dl_tensor.device.device_type = kDLCPU;
  t->mt.dl_tensor.ndim = ndim;
  t->mt.dl_tensor.dtype.code = kDLInt;
  t->mt.dl_tensor.dtype.bits = 16;
  t->mt.dl_tensor.dtype.lanes = 1;
  for (int i = 0; i < ndim; ++i) t->shape[i] = shape[i];
  t->mt.dl_tensor.shape = ndim ? t->shape : NULL;
  if (strides) {
    for (int i = 0; i < ndim; ++i) t->strides[i] = strides[i];
    t->mt.dl_tensor.strides = t->strides;
  }
  t->mt.manager_ctx = t;
  t->mt.deleter = versioned_deleter;
  return t;
}

static void print_i64s(const char* name, const int64_t* v, int n) {
  printf(" %s=", name);
  if (v == NULL) {
    printf("NULL");
    return;
  }
  printf("[");
  for (int i = 0; i < n; ++i) printf("%s%" PRId64, i ? "," : "", v[i]);
  printf("]");
}

static void describe_tensor(const char* label, void* obj) {
  DLTensor* t = tensor_of(obj);
  printf("%s: type_index=%d refcount=0x%" PRIx64 " ndim=%d dtype=%u,%u,%u device=%d,%d", label,
         hdr(obj)->type_index, refcnt(obj), t->ndim, t->dtype.code, t->dtype.bits, t->dtype.lanes,
         (int)t->device.device_type, t->device.device_id);
  print_i64s("shape", t->shape, t->ndim);
  print_i64s("strides", t->strides, t->ndim);
  printf(" byte_offset=%" PRIu64 " data_is_buffer=%d\n", t->byte_offset, t->data == (void*)g_data);
}

/* ------------------------------------------------------------------ tests */

static void test_import_legacy(void) {
  int64_t shape[2] = {3, 4};
  memset(&g_log, 0, sizeof(g_log));
  Legacy* p = new_legacy(2, shape, NULL, 0);
  void* t = NULL;
  int rc = TVMFFITensorFromDLPack(&p->mt, 0, 0, &t);
  if (!ok(rc, "FromDLPack strides NULL")) return;
  describe_tensor("import legacy strides=NULL", t);
  DLTensor* dl = tensor_of(t);
  printf("import legacy: shape_ptr_shared=%d strides_filled_non_null=%d\n",
         dl->shape == p->shape, dl->strides != NULL);
  printf("import legacy: producer strides untouched=%d\n", p->mt.dl_tensor.strides == NULL);
  TVMFFIObjectIncRef(t);
  TVMFFIObjectDecRef(t);
  printf("import legacy: deleted before death=%d\n", g_log.deleted);
  TVMFFIObjectDecRef(t);
  printf("import legacy: deleted after death=%d arg_is_managed=%d\n", g_log.deleted,
         g_log.deleted_arg == (void*)&p->mt);

  /* explicit strides are used as given */
  int64_t shape3[3] = {2, 3, 4};
  int64_t strides3[3] = {12, 4, 1};
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(3, shape3, strides3, 0);
  if (ok(TVMFFITensorFromDLPack(&p->mt, 0, 1, &t), "FromDLPack strides given")) {
    describe_tensor("import legacy explicit strides", t);
    printf("import legacy explicit strides: strides_ptr_shared=%d\n",
           tensor_of(t)->strides == p->strides);
    TVMFFIObjectDecRef(t);
    printf("import legacy explicit strides: deleted=%d\n", g_log.deleted);
  }

  /* byte_offset is kept as is */
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(2, shape, NULL, 16);
  if (ok(TVMFFITensorFromDLPack(&p->mt, 16, 0, &t), "FromDLPack byte_offset")) {
    describe_tensor("import legacy byte_offset=16 align=16", t);
    TVMFFIObjectDecRef(t);
    printf("import legacy byte_offset: deleted=%d\n", g_log.deleted);
  }

  /* ndim 0 scalar without strides keeps NULL strides */
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(0, NULL, NULL, 0);
  if (ok(TVMFFITensorFromDLPack(&p->mt, 0, 1, &t), "FromDLPack scalar")) {
    describe_tensor("import legacy scalar", t);
    TVMFFIObjectDecRef(t);
    printf("import legacy scalar: deleted=%d\n", g_log.deleted);
  }

  /* 1-d, strides NULL */
  int64_t shape1[1] = {5};
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(1, shape1, NULL, 0);
  if (ok(TVMFFITensorFromDLPack(&p->mt, 0, 0, &t), "FromDLPack 1d")) {
    describe_tensor("import legacy 1d", t);
    TVMFFIObjectDecRef(t);
    printf("import legacy 1d: deleted=%d\n", g_log.deleted);
  }

  /* a NULL deleter is allowed */
  static DLManagedTensor no_deleter;
  memset(&no_deleter, 0, sizeof(no_deleter));
  int64_t s2[2] = {2, 2};
  no_deleter.dl_tensor.data = g_data;
  no_deleter.dl_tensor.device.device_type = kDLCPU;
  no_deleter.dl_tensor.ndim = 2;
  no_deleter.dl_tensor.dtype.code = kDLUInt;
  no_deleter.dl_tensor.dtype.bits = 8;
  no_deleter.dl_tensor.dtype.lanes = 1;
  no_deleter.dl_tensor.shape = s2;
  if (ok(TVMFFITensorFromDLPack(&no_deleter, 0, 0, &t), "FromDLPack NULL deleter")) {
    describe_tensor("import legacy NULL deleter", t);
    TVMFFIObjectDecRef(t);
    printf("import legacy NULL deleter: released\n");
  }
}

static void test_import_failures(void) {
  int64_t shape[2] = {3, 4};
  void* t = (void*)1;

  /* misaligned data + byte_offset */
  memset(&g_log, 0, sizeof(g_log));
  Legacy* p = new_legacy(2, shape, NULL, 4);
  int rc = TVMFFITensorFromDLPack(&p->mt, 64, 0, &t);
  print_err("import misaligned (offset 4, align 64)", rc, ERR_MSG);
  printf("import misaligned: deleted=%d (caller keeps ownership)\n", g_log.deleted);
  p->mt.deleter(&p->mt);
  printf("import misaligned: caller deleted=%d\n", g_log.deleted);

  /* aligned enough */
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(2, shape, NULL, 4);
  rc = TVMFFITensorFromDLPack(&p->mt, 4, 0, &t);
  printf("import offset 4 align 4: rc=%d\n", rc);
  if (rc == 0) TVMFFIObjectDecRef(t);
  else (void)take_error();

  /* non-contiguous strides with require_contiguous */
  int64_t col_major[2] = {1, 3};
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(2, shape, col_major, 0);
  rc = TVMFFITensorFromDLPack(&p->mt, 0, 1, &t);
  print_err("import non-contiguous", rc, ERR_MSG);
  printf("import non-contiguous: deleted=%d\n", g_log.deleted);
  /* the same tensor is accepted when contiguity is not required */
  rc = TVMFFITensorFromDLPack(&p->mt, 0, 0, &t);
  if (ok(rc, "import non-contiguous allowed")) {
    describe_tensor("import non-contiguous allowed", t);
    TVMFFIObjectDecRef(t);
    printf("import non-contiguous allowed: deleted=%d\n", g_log.deleted);
  }

  /* contiguity corner cases: unit dims ignore strides, empty tensors are contiguous */
  int64_t unit_shape[3] = {1, 4, 1};
  int64_t unit_strides[3] = {99, 1, 77};
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(3, unit_shape, unit_strides, 0);
  rc = TVMFFITensorFromDLPack(&p->mt, 0, 1, &t);
  printf("import unit dims odd strides contiguous: rc=%d\n", rc);
  if (rc == 0) TVMFFIObjectDecRef(t);
  else { (void)take_error(); p->mt.deleter(&p->mt); }

  int64_t empty_shape[2] = {0, 4};
  int64_t empty_strides[2] = {1, 5};
  p = new_legacy(2, empty_shape, empty_strides, 0);
  rc = TVMFFITensorFromDLPack(&p->mt, 0, 1, &t);
  printf("import empty tensor odd strides contiguous: rc=%d\n", rc);
  if (rc == 0) TVMFFIObjectDecRef(t);
  else { (void)take_error(); p->mt.deleter(&p->mt); }

  int64_t bad_strides[2] = {4, 2};
  p = new_legacy(2, shape, bad_strides, 0);
  rc = TVMFFITensorFromDLPack(&p->mt, 0, 1, &t);
  print_err("import strides [4,2]", rc, ERR_KIND);
  p->mt.deleter(&p->mt);

  /* alignment on a non-direct-address device only looks at byte_offset */
  p = new_legacy(2, shape, NULL, 0);
  p->mt.dl_tensor.device.device_type = kDLOpenCL;
  p->mt.dl_tensor.data = (void*)(uintptr_t)0x1003; /* never dereferenced */
  rc = TVMFFITensorFromDLPack(&p->mt, 64, 0, &t);
  printf("import opencl odd data ptr offset 0 align 64: rc=%d\n", rc);
  if (rc == 0) {
    DLTensor* dl = tensor_of(t);
    printf("import opencl: device=%d,%d\n", (int)dl->device.device_type, dl->device.device_id);
    TVMFFIObjectDecRef(t);
  } else {
    (void)take_error();
    p->mt.deleter(&p->mt);
  }
  p = new_legacy(2, shape, NULL, 8);
  p->mt.dl_tensor.device.device_type = kDLOpenCL;
  p->mt.dl_tensor.data = (void*)(uintptr_t)0x1000;
  rc = TVMFFITensorFromDLPack(&p->mt, 64, 0, &t);
  print_err("import opencl offset 8 align 64", rc, ERR_KIND);
  p->mt.deleter(&p->mt);
  /* CUDA is a direct-address device: the data pointer counts */
  p = new_legacy(2, shape, NULL, 0);
  p->mt.dl_tensor.device.device_type = kDLCUDA;
  p->mt.dl_tensor.data = (void*)(uintptr_t)0x1004;
  rc = TVMFFITensorFromDLPack(&p->mt, 64, 0, &t);
  print_err("import cuda data 0x1004 align 64", rc, ERR_KIND);
  p->mt.deleter(&p->mt);
}

static void test_import_versioned(void) {
  int64_t shape[2] = {2, 5};
  memset(&g_log, 0, sizeof(g_log));
  Versioned* p = new_versioned(2, shape, NULL, 0);
  void* t = NULL;
  if (ok(TVMFFITensorFromDLPackVersioned(&p->mt, 0, 0, &t), "FromDLPackVersioned")) {
    describe_tensor("import versioned strides=NULL", t);
    TVMFFIObjectDecRef(t);
    printf("import versioned: deleted=%d arg_is_managed=%d\n", g_log.deleted,
           g_log.deleted_arg == (void*)&p->mt);
  }
  /* read-only and is-copied flags are accepted */
  memset(&g_log, 0, sizeof(g_log));
  p = new_versioned(2, shape, NULL, DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED);
  if (ok(TVMFFITensorFromDLPackVersioned(&p->mt, 0, 1, &t), "FromDLPackVersioned flags")) {
    describe_tensor("import versioned read-only", t);
    TVMFFIObjectDecRef(t);
    printf("import versioned read-only: deleted=%d\n", g_log.deleted);
  }
  /* sub-byte padded is rejected, caller keeps ownership */
  memset(&g_log, 0, sizeof(g_log));
  p = new_versioned(2, shape, NULL, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  int rc = TVMFFITensorFromDLPackVersioned(&p->mt, 0, 0, &t);
  print_err("import versioned subbyte padded", rc, ERR_MSG);
  printf("import versioned subbyte padded: deleted=%d\n", g_log.deleted);
  p->mt.deleter(&p->mt);
  /* misaligned and non-contiguous on the versioned path */
  int64_t col_major[2] = {1, 2};
  p = new_versioned(2, shape, col_major, 0);
  rc = TVMFFITensorFromDLPackVersioned(&p->mt, 0, 1, &t);
  print_err("import versioned non-contiguous", rc, ERR_MSG);
  p->mt.dl_tensor.byte_offset = 2;
  rc = TVMFFITensorFromDLPackVersioned(&p->mt, 8, 0, &t);
  print_err("import versioned misaligned", rc, ERR_MSG);
  printf("import versioned failures: deleted=%d\n", g_log.deleted);
  p->mt.deleter(&p->mt);
}

static void test_export(void) {
  int64_t shape[2] = {3, 4};
  memset(&g_log, 0, sizeof(g_log));
  Legacy* p = new_legacy(2, shape, NULL, 8);
  void* t = NULL;
  if (!ok(TVMFFITensorFromDLPack(&p->mt, 0, 0, &t), "FromDLPack for export")) return;
  DLTensor* dl = tensor_of(t);

  DLManagedTensor* out = NULL;
  if (ok(TVMFFITensorToDLPack(t, &out), "ToDLPack")) {
    printf("export legacy: refcount_after=0x%" PRIx64 " data_same=%d shape_ptr_same=%d"
           " strides_ptr_same=%d ndim=%d byte_offset=%" PRIu64 " dtype=%u,%u,%u"
           " manager_ctx_set=%d deleter_set=%d\n",
           refcnt(t), out->dl_tensor.data == dl->data, out->dl_tensor.shape == dl->shape,
           out->dl_tensor.strides == dl->strides, out->dl_tensor.ndim,
           out->dl_tensor.byte_offset, out->dl_tensor.dtype.code, out->dl_tensor.dtype.bits,
           out->dl_tensor.dtype.lanes, out->manager_ctx != NULL, out->deleter != NULL);
    out->deleter(out);
    printf("export legacy: after consumer deleter refcount=0x%" PRIx64 " producer_deleted=%d\n",
           refcnt(t), g_log.deleted);
  }

  DLManagedTensorVersioned* outv = NULL;
  if (ok(TVMFFITensorToDLPackVersioned(t, &outv), "ToDLPackVersioned")) {
    printf("export versioned: version=%u.%u flags=%" PRIu64 " refcount_after=0x%" PRIx64
           " data_same=%d shape_ptr_same=%d strides_ptr_same=%d byte_offset=%" PRIu64
           " manager_ctx_set=%d deleter_set=%d\n",
           outv->version.major, outv->version.minor, outv->flags, refcnt(t),
           outv->dl_tensor.data == dl->data, outv->dl_tensor.shape == dl->shape,
           outv->dl_tensor.strides == dl->strides, outv->dl_tensor.byte_offset,
           outv->manager_ctx != NULL, outv->deleter != NULL);
    /* the exported tensor outlives the caller's reference */
    TVMFFIObjectDecRef(t);
    printf("export versioned: caller dropped tensor, producer_deleted=%d\n", g_log.deleted);
    /* round trip back into a tensor */
    void* t2 = NULL;
    if (ok(TVMFFITensorFromDLPackVersioned(outv, 0, 0, &t2), "re-import")) {
      describe_tensor("round trip tensor", t2);
      printf("round trip: shares_shape_ptr=%d\n", tensor_of(t2)->shape == p->shape);
      TVMFFIObjectDecRef(t2);
      printf("round trip: after death producer_deleted=%d arg_is_original=%d\n", g_log.deleted,
             g_log.deleted_arg == (void*)&p->mt);
    } else {
      outv->deleter(outv);
    }
  } else {
    TVMFFIObjectDecRef(t);
  }

  /* scalar export */
  memset(&g_log, 0, sizeof(g_log));
  p = new_legacy(0, NULL, NULL, 0);
  if (ok(TVMFFITensorFromDLPack(&p->mt, 0, 0, &t), "scalar for export")) {
    DLManagedTensorVersioned* sv = NULL;
    if (ok(TVMFFITensorToDLPackVersioned(t, &sv), "scalar ToDLPackVersioned")) {
      printf("export scalar: ndim=%d strides_null=%d flags=%" PRIu64 "\n", sv->dl_tensor.ndim,
             sv->dl_tensor.strides == NULL, sv->flags);
      sv->deleter(sv);
    }
    TVMFFIObjectDecRef(t);
    printf("export scalar: producer_deleted=%d\n", g_log.deleted);
  }
}

static void test_unsafe_view(void) {
  int64_t shape[2] = {3, 4};
  memset(&g_log, 0, sizeof(g_log));
  Legacy* p = new_legacy(2, shape, NULL, 0);
  void* src = NULL;
  if (!ok(TVMFFITensorFromDLPack(&p->mt, 0, 0, &src), "FromDLPack for view")) return;
  int64_t vshape[2] = {4, 2};
  int64_t vstrides[2] = {2, 1};
  DLTensor proto;
  memset(&proto, 0, sizeof(proto));
  proto.data = (char*)g_data + 8;
  proto.device.device_type = kDLCPU;
  proto.ndim = 2;
  proto.dtype.code = kDLFloat;
  proto.dtype.bits = 32;
  proto.dtype.lanes = 1;
  proto.shape = vshape;
  proto.strides = vstrides;
  proto.byte_offset = 4;
  void* view = NULL;
  if (ok(TVMFFITensorCreateUnsafeView(src, &proto, &view), "CreateUnsafeView")) {
    DLTensor* v = tensor_of(view);
    printf("view: type_index=%d refcount=0x%" PRIx64 " src_refcount=0x%" PRIx64
           " data_is_proto=%d byte_offset=%" PRIu64 " ndim=%d dtype=%u,%u,%u",
           hdr(view)->type_index, refcnt(view), refcnt(src), v->data == proto.data,
           v->byte_offset, v->ndim, v->dtype.code, v->dtype.bits, v->dtype.lanes);
    print_i64s("shape", v->shape, v->ndim);
    print_i64s("strides", v->strides, v->ndim);
    printf(" shape_copied=%d strides_copied=%d\n", v->shape != vshape, v->strides != vstrides);
    vshape[0] = 100; /* the view owns its copy */
    printf("view: shape[0] after proto change=%" PRId64 "\n", v->shape[0]);
    TVMFFIObjectDecRef(src);
    printf("view: src dropped by caller, producer_deleted=%d\n", g_log.deleted);
    /* the view exports like any tensor */
    DLManagedTensor* ex = NULL;
    if (ok(TVMFFITensorToDLPack(view, &ex), "view ToDLPack")) {
      printf("view export: data_is_proto=%d\n", ex->dl_tensor.data == proto.data);
      ex->deleter(ex);
    }
    TVMFFIObjectDecRef(view);
    printf("view: after view death producer_deleted=%d\n", g_log.deleted);
  } else {
    TVMFFIObjectDecRef(src);
  }
}

static void test_tensor_in_any(void) {
  /* a tensor passed through a library container stays the same object */
  int64_t shape[1] = {8};
  memset(&g_log, 0, sizeof(g_log));
  Legacy* p = new_legacy(1, shape, NULL, 0);
  void* t = NULL;
  if (!ok(TVMFFITensorFromDLPack(&p->mt, 0, 0, &t), "FromDLPack for any")) return;
  TVMFFIAny args[1] = {any_obj(t)};
  TVMFFIAny arr;
  if (ok(call_global("ffi.Array", args, 1, &arr), "ffi.Array tensor") &&
      has_type(&arr, kTVMFFIArray, "ffi.Array result")) {
    TVMFFISeqCell* seq = seq_cell(arr.v_obj);
    TVMFFIAny* items = (TVMFFIAny*)seq->data;
    printf("tensor in array: elem_type=%d same=%d refcount=0x%" PRIx64 "\n", items[0].type_index,
           items[0].v_obj == (TVMFFIObject*)t, refcnt(t));
    any_release(&arr);
  }
  TVMFFIObjectDecRef(t);
  printf("tensor in array: producer_deleted=%d\n", g_log.deleted);
}

int main(void) {
  test_import_legacy();
  test_import_failures();
  test_import_versioned();
  test_export();
  test_unsafe_view();
  test_tensor_in_any();
  return finish("tensors");
}
