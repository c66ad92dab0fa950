/*
 * types: the type table. TVMFFITypeKeyToIndex, TVMFFITypeGetOrAllocIndex
 * (dynamic indices, child slots, query mode), TVMFFIGetTypeInfo, type
 * attributes, metadata, fields, methods and TVMFFIObjectCreateOpaque.
 *
 * Dynamic indices are printed relative to the first index this program
 * allocates, because the library pre-registers some dynamic types.
 */
#include "common.h"

static int32_t g_first = -1;

static void print_rel(int32_t idx) {
  if (idx >= kTVMFFIDynObjectBegin && g_first >= 0) {
    printf("first+%d", idx - g_first);
  } else {
    printf("%d", idx);
  }
}

static void key_to_index(const char* key) {
  TVMFFIByteArray k = ba(key);
  int32_t idx = -12345;
  int rc = TVMFFITypeKeyToIndex(&k, &idx);
  if (rc == 0) {
    printf("key_to_index %s: rc=0 index=", key);
    print_rel(idx);
    printf("\n");
  } else {
    char label[128];
    snprintf(label, sizeof(label), "key_to_index %s", key);
    print_err_has(label, rc, key);
  }
}

static void print_type_info(const char* label, int32_t idx) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(idx);
  if (info == NULL) {
    printf("UNEXPECTED: %s: GetTypeInfo returned NULL\n", label);
    g_unexpected++;
    return;
  }
  printf("%s: type_index=", label);
  print_rel(info->type_index);
  printf(" depth=%d key=\"", info->type_depth);
  print_escaped(info->type_key.data, info->type_key.size);
  printf("\" ancestors=[");
  for (int32_t d = 0; d < info->type_depth; ++d) {
    printf("%s", d ? "," : "");
    print_rel(info->type_ancestors[d]->type_index);
  }
  printf("] stable_ptr=%d\n", TVMFFIGetTypeInfo(idx) == info);
}

static int32_t alloc_index(const char* key, int32_t depth, int32_t slots, int32_t overflow,
                           int32_t parent) {
  TVMFFIByteArray k = ba(key);
  int32_t idx = TVMFFITypeGetOrAllocIndex(&k, -1, depth, slots, overflow, parent);
  if (g_first < 0 && idx >= kTVMFFIDynObjectBegin) g_first = idx;
  printf("alloc %s (depth=%d slots=%d overflow=%d parent=", key, depth, slots, overflow);
  print_rel(parent);
  printf("): index=");
  print_rel(idx);
  printf(" dynamic=%d\n", idx >= kTVMFFIDynObjectBegin);
  return idx;
}

static void test_static_keys(void) {
  static const char* keys[] = {"ffi.Object",  "ffi.String", "ffi.Bytes",  "ffi.Error",
                               "ffi.Function", "ffi.Shape", "ffi.Tensor", "ffi.Array",
                               "ffi.Map",     "ffi.Module", "ffi.OpaquePyObject",
                               "ffi.List",    "ffi.Dict",   "ffi.BigInt", "None",
                               "int",         "bool",       "float",      "void*",
                               "DataType",    "Device",     "DLTensor*",  "const char*",
                               "TVMFFIByteArray*", "ObjectRValueRef", "ffi.SmallStr",
                               "ffi.SmallBytes", "ffi.Unchanged"};
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); ++i) key_to_index(keys[i]);
  key_to_index("pactum.test.NoSuchType");
  key_to_index("");
}

static void test_static_type_info(void) {
  print_type_info("info ffi.Object", kTVMFFIObject);
  print_type_info("info ffi.String", kTVMFFIStr);
  print_type_info("info ffi.Error", kTVMFFIError);
  print_type_info("info ffi.Array", kTVMFFIArray);
  print_type_info("info ffi.Map", kTVMFFIMap);
  print_type_info("info ffi.Dict", kTVMFFIDict);
  print_type_info("info ffi.BigInt", kTVMFFIBigInt);
  print_type_info("info ffi.OpaquePyObject", kTVMFFIOpaquePyObject);
  print_type_info("info int", kTVMFFIInt);
  print_type_info("info None", kTVMFFINone);
  print_type_info("info ffi.SmallStr", kTVMFFISmallStr);
  const TVMFFITypeInfo* obj = TVMFFIGetTypeInfo(kTVMFFIObject);
  printf("info ffi.Object: metadata_set=%d", obj->metadata != NULL);
  if (obj->metadata) {
    printf(" total_size=%d seq_hash_kind=%d creator_null=%d", obj->metadata->total_size,
           (int)obj->metadata->structural_eq_hash_kind, obj->metadata->creator == NULL);
  }
  printf("\n");
  /* static get-or-alloc returns the existing index */
  TVMFFIByteArray k = ba("ffi.String");
  int32_t idx = TVMFFITypeGetOrAllocIndex(&k, kTVMFFIStr, 1, 0, 0, kTVMFFIObject);
  printf("get-or-alloc existing ffi.String: index=%d\n", idx);
  idx = TVMFFITypeGetOrAllocIndex(&k, -1, 1, 0, 0, -2);
  printf("query ffi.String: index=%d\n", idx);
}

static void test_dynamic(void) {
  /* a base with reserved child slots */
  int32_t base = alloc_index("pactum.test.Base", 1, 3, 1, kTVMFFIObject);
  int32_t c1 = alloc_index("pactum.test.Child1", 2, 0, 0, base);
  int32_t c2 = alloc_index("pactum.test.Child2", 2, 1, 0, base);
  /* slots of Base are used up: overflow allocation */
  int32_t c3 = alloc_index("pactum.test.Child3", 2, 0, 1, base);
  int32_t gc = alloc_index("pactum.test.GrandChild", 3, 0, 0, c2);
  int32_t other = alloc_index("pactum.test.Other", 1, 0, 1, kTVMFFIObject);
  /* a parent without overflow and no slots left */
  int32_t closed = alloc_index("pactum.test.Closed", 1, 1, 0, kTVMFFIObject);
  int32_t closed_child = alloc_index("pactum.test.ClosedChild", 2, 0, 0, closed);
  (void)c1;
  (void)c3;
  (void)gc;
  (void)other;
  (void)closed_child;

  /* get-or-alloc of an existing key ignores the other arguments */
  TVMFFIByteArray k = ba("pactum.test.Child1");
  int32_t again = TVMFFITypeGetOrAllocIndex(&k, -1, 7, 9, 1, kTVMFFIObject);
  printf("existing key again: index=");
  print_rel(again);
  printf("\n");

  /* query mode */
  int32_t q = TVMFFITypeGetOrAllocIndex(&k, -1, 0, 0, 0, -2);
  printf("query existing: index=");
  print_rel(q);
  printf("\n");
  TVMFFIByteArray missing = ba("pactum.test.QueryOnly");
  q = TVMFFITypeGetOrAllocIndex(&missing, -1, 1, 0, 1, -2);
  printf("query missing: index=%d\n", q);
  key_to_index("pactum.test.QueryOnly");

  key_to_index("pactum.test.Base");
  key_to_index("pactum.test.GrandChild");

  print_type_info("info Base", base);
  print_type_info("info Child1", c1);
  print_type_info("info Child3", c3);
  print_type_info("info GrandChild", gc);
  print_type_info("info ClosedChild", closed_child);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(gc);
  printf("info GrandChild: num_fields=%d num_methods=%d metadata_null=%d\n", info->num_fields,
         info->num_methods, info->metadata == NULL);
}

static const TVMFFIAny* column_lookup(const TVMFFITypeAttrColumn* col, int32_t idx) {
  if (col == NULL) return NULL;
  if (idx < col->begin_index || idx >= col->begin_index + col->size) return NULL;
  return &col->data[idx - col->begin_index];
}

static void print_lookup(const char* label, const TVMFFITypeAttrColumn* col, int32_t idx) {
  /* an index outside the column reads as None, exactly like a None entry */
  const TVMFFIAny* v = column_lookup(col, idx);
  TVMFFIAny none = any_none();
  printf("%s: ", label);
  print_any(v ? v : &none);
  printf("\n");
}

static void test_attrs(void) {
  TVMFFIByteArray k = ba("pactum.test.Base");
  int32_t base = TVMFFITypeGetOrAllocIndex(&k, -1, 0, 0, 0, -2);
  TVMFFIByteArray kc = ba("pactum.test.Child1");
  int32_t child = TVMFFITypeGetOrAllocIndex(&kc, -1, 0, 0, 0, -2);

  TVMFFIByteArray name = ba("pactum.test.attr");
  printf("attr column before register: null=%d\n", TVMFFIGetTypeAttrColumn(&name) == NULL);
  TVMFFIAny v = any_int(7);
  int rc = TVMFFITypeRegisterAttr(base, &name, &v);
  printf("register attr: rc=%d\n", rc);
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&name);
  printf("attr column: null=%d\n", col == NULL);
  print_lookup("attr[Base]", col, base);
  print_lookup("attr[Child1] (not inherited)", col, child);
  print_lookup("attr[ffi.Object]", col, kTVMFFIObject);
  print_lookup("attr[int]", col, kTVMFFIInt);

  /* registering again for the same type fails */
  TVMFFIAny v2 = any_int(8);
  rc = TVMFFITypeRegisterAttr(base, &name, &v2);
  print_err_has("register attr twice", rc, "already registered");
  print_lookup("attr[Base] after failed re-register", TVMFFIGetTypeAttrColumn(&name), base);

  /* a static type and an object value (the table keeps a reference) */
  TVMFFIByteArray sin = ba("attribute value string");
  TVMFFIAny s = any_none();
  if (ok(TVMFFIStringFromByteArray(&sin, &s), "attr string") &&
      has_type(&s, kTVMFFIStr, "attr string")) {
    rc = TVMFFITypeRegisterAttr(kTVMFFIStr, &name, &s);
    printf("register attr on ffi.String: rc=%d value_refcount=0x%" PRIx64 "\n", rc,
           refcnt(s.v_obj));
    col = TVMFFIGetTypeAttrColumn(&name);
    print_lookup("attr[ffi.String]", col, kTVMFFIStr);
    const TVMFFIAny* e = column_lookup(col, kTVMFFIStr);
    printf("attr[ffi.String]: same_object=%d\n", e && e->v_obj == s.v_obj);
    any_release(&s);
    printf("attr[ffi.String]: after caller release refcount=0x%" PRIx64 "\n",
           e ? refcnt(e->v_obj) : 0);
  }
  /* rawstr values are stored owned (converted) */
  TVMFFIAny raw = any_rawstr("rawval");
  rc = TVMFFITypeRegisterAttr(child, &name, &raw);
  printf("register rawstr attr: rc=%d\n", rc);
  print_lookup("attr[Child1]", TVMFFIGetTypeAttrColumn(&name), child);

  /* sentinel registration (type_index 0) only makes sure the column exists */
  TVMFFIByteArray empty_name = ba("pactum.test.empty_attr");
  TVMFFIAny none = any_none();
  rc = TVMFFITypeRegisterAttr(kTVMFFINone, &empty_name, &none);
  const TVMFFITypeAttrColumn* ecol = TVMFFIGetTypeAttrColumn(&empty_name);
  printf("sentinel attr: rc=%d column_null=%d\n", rc, ecol == NULL);
  print_lookup("sentinel attr[Base]", ecol, base);
  TVMFFIAny v3 = any_bool(1);
  rc = TVMFFITypeRegisterAttr(base, &empty_name, &v3);
  ecol = TVMFFIGetTypeAttrColumn(&empty_name);
  printf("sentinel attr then real: rc=%d\n", rc);
  print_lookup("sentinel attr[Base]", ecol, base);
  /* sentinel again after a real value keeps the value */
  rc = TVMFFITypeRegisterAttr(kTVMFFINone, &empty_name, &none);
  print_lookup("sentinel attr[Base] after 2nd sentinel", TVMFFIGetTypeAttrColumn(&empty_name),
               base);

  TVMFFIByteArray unknown = ba("pactum.test.never_registered_attr");
  printf("unknown attr column: null=%d\n", TVMFFIGetTypeAttrColumn(&unknown) == NULL);
}

static int creator_calls = 0;
static int dummy_creator(TVMFFIObjectHandle* out) {
  creator_calls++;
  *out = NULL;
  return 0;
}

static int field_getter(void* field, TVMFFIAny* result) {
  *result = any_int(*(int64_t*)field);
  return 0;
}

static int field_setter(void* field, const TVMFFIAny* value) {
  *(int64_t*)field = value->v_int64;
  return 0;
}

static int method_cb(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* r) {
  (void)h;
  (void)args;
  *r = any_int(n);
  return 0;
}

static void test_metadata_fields_methods(void) {
  TVMFFIByteArray k = ba("pactum.test.Other");
  int32_t idx = TVMFFITypeGetOrAllocIndex(&k, -1, 0, 0, 0, -2);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(idx);
  printf("metadata before: null=%d\n", info->metadata == NULL);

  char doc[] = "a test type";
  TVMFFITypeMetadata md;
  memset(&md, 0, sizeof(md));
  md.doc = ba(doc);
  md.creator = dummy_creator;
  md.total_size = 48;
  md.structural_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  int rc = TVMFFITypeRegisterMetadata(idx, &md);
  doc[0] = 'X'; /* the table must have copied the doc */
  info = TVMFFIGetTypeInfo(idx);
  printf("metadata register: rc=%d null=%d", rc, info->metadata == NULL);
  if (info->metadata) {
    printf(" doc=\"");
    print_escaped(info->metadata->doc.data, info->metadata->doc.size);
    printf("\" total_size=%d kind=%d creator_same=%d", info->metadata->total_size,
           (int)info->metadata->structural_eq_hash_kind, info->metadata->creator == dummy_creator);
  }
  printf("\n");
  rc = TVMFFITypeRegisterMetadata(idx, &md);
  print_err_has("metadata register twice", rc, "Overriding");

  /* fields */
  char fname[] = "value";
  TVMFFIFieldInfo fi;
  memset(&fi, 0, sizeof(fi));
  fi.name = ba(fname);
  fi.doc = ba("the value");
  fi.metadata = ba("{}");
  fi.flags = kTVMFFIFieldFlagBitMaskWritable | kTVMFFIFieldFlagBitMaskHasDefault;
  fi.size = 8;
  fi.alignment = 8;
  fi.offset = 24;
  fi.getter = field_getter;
  fi.setter = (void*)field_setter;
  fi.default_value_or_factory = any_int(99);
  fi.field_static_type_index = kTVMFFIInt;
  rc = TVMFFITypeRegisterField(idx, &fi);
  fname[0] = 'X';
  info = TVMFFIGetTypeInfo(idx);
  printf("field register: rc=%d num_fields=%d\n", rc, info->num_fields);
  if (info->num_fields == 1) {
    const TVMFFIFieldInfo* f = &info->fields[0];
    printf("field[0]: name=\"");
    print_escaped(f->name.data, f->name.size);
    printf("\" doc=\"");
    print_escaped(f->doc.data, f->doc.size);
    printf("\" flags=%" PRId64 " size=%" PRId64 " align=%" PRId64 " offset=%" PRId64
           " getter_same=%d setter_same=%d default=",
           f->flags, f->size, f->alignment, f->offset, f->getter == field_getter,
           f->setter == (void*)field_setter);
    print_any(&f->default_value_or_factory);
    printf(" static_type=%d\n", f->field_static_type_index);
    int64_t storage = 5;
    TVMFFIAny got = any_none();
    f->getter(&storage, &got);
    printf("field[0]: getter on storage=5 gives ");
    print_any(&got);
    printf("\n");
  }
  /* a field without default has a None default */
  TVMFFIFieldInfo fi2 = fi;
  fi2.name = ba("second");
  fi2.flags = 0;
  fi2.offset = 32;
  rc = TVMFFITypeRegisterField(idx, &fi2);
  info = TVMFFIGetTypeInfo(idx);
  printf("field register 2: rc=%d num_fields=%d", rc, info->num_fields);
  if (info->num_fields == 2) {
    printf(" field[1].default=");
    print_any(&info->fields[1].default_value_or_factory);
    printf(" field[0].name_still=\"");
    print_escaped(info->fields[0].name.data, info->fields[0].name.size);
    printf("\"");
  }
  printf("\n");
  /* duplicate field name */
  rc = TVMFFITypeRegisterField(idx, &fi2);
  print_err_has("field register duplicate", rc, "Duplicate field name");

  /* methods */
  void* m = NULL;
  if (ok(TVMFFIFunctionCreate(NULL, method_cb, NULL, &m), "method fn")) {
    TVMFFIMethodInfo mi;
    memset(&mi, 0, sizeof(mi));
    mi.name = ba("my_method");
    mi.doc = ba("method doc");
    mi.metadata = ba("");
    mi.flags = 0;
    mi.method = any_obj(m);
    rc = TVMFFITypeRegisterMethod(idx, &mi);
    info = TVMFFIGetTypeInfo(idx);
    printf("method register: rc=%d num_methods=%d fn_refcount=0x%" PRIx64 "\n", rc,
           info->num_methods, refcnt(m));
    if (info->num_methods == 1) {
      const TVMFFIMethodInfo* mm = &info->methods[0];
      printf("method[0]: name=\"");
      print_escaped(mm->name.data, mm->name.size);
      printf("\" doc=\"");
      print_escaped(mm->doc.data, mm->doc.size);
      printf("\" flags=%" PRId64 " method_type=%d same_fn=%d\n", mm->flags,
             mm->method.type_index, mm->method.v_obj == (TVMFFIObject*)m);
      TVMFFIAny args[2] = {any_int(1), any_int(2)};
      TVMFFIAny r;
      rc = call_fn(mm->method.v_obj, args, 2, &r);
      printf("method[0]: call rc=%d result=", rc);
      print_any(&r);
      printf("\n");
    }
    TVMFFIObjectDecRef(m);
  }
}

static int opaque_deleted = 0;
static void opaque_del(void* h) {
  (void)h;
  opaque_deleted++;
}

static void test_opaque(void) {
  static int handle_storage;
  void* o = NULL;
  int rc = TVMFFIObjectCreateOpaque(&handle_storage, kTVMFFIOpaquePyObject, opaque_del, &o);
  printf("opaque 74: rc=%d", rc);
  if (rc == 0 && o) {
    printf(" type_index=%d refcount=0x%" PRIx64 " handle_same=%d", hdr(o)->type_index, refcnt(o),
           ((TVMFFIOpaqueObjectCell*)cell_of(o))->handle == (void*)&handle_storage);
    TVMFFIObjectDecRef(o);
    printf(" deleted=%d", opaque_deleted);
  }
  printf("\n");
  static const int32_t rejected[] = {kTVMFFIObject, kTVMFFIStr, kTVMFFIFunction, 75, 128, 0};
  for (size_t i = 0; i < sizeof(rejected) / sizeof(rejected[0]); ++i) {
    void* out = NULL;
    rc = TVMFFIObjectCreateOpaque(&handle_storage, rejected[i], opaque_del, &out);
    char label[64];
    snprintf(label, sizeof(label), "opaque %d", rejected[i]);
    print_err(label, rc, ERR_KIND);
    printf("opaque %d: out_null=%d deleted=%d\n", rejected[i], out == NULL, opaque_deleted);
  }
}

int main(void) {
  test_static_keys();
  test_static_type_info();
  test_dynamic();
  test_attrs();
  test_metadata_fields_methods();
  test_opaque();
  return finish("types");
}
