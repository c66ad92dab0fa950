/*
 * containers: Array, List, Map, Dict, Shape, String and Bytes built and
 * queried through the library's `ffi.*` globals, plus direct reads of the
 * memory layout (TVMFFISeqCell at obj+24, map size at obj+32, ShapeCell).
 */
#include "common.h"

/* ---------------------------------------------------------------- helpers */

/* call a global; on success print "label: result"; returns rc */
static int show(const char* label, const char* global, TVMFFIAny* args, int n, int err_mode) {
  TVMFFIAny r;
  int rc = call_global(global, args, n, &r);
  if (rc == 0) {
    printf("%s: ", label);
    print_any(&r);
    printf("\n");
    any_release(&r);
  } else {
    print_err(label, rc, err_mode);
  }
  return rc;
}

static void* make(const char* global, TVMFFIAny* args, int n, int expect_type) {
  TVMFFIAny r;
  int rc = call_global(global, args, n, &r);
  if (!ok(rc, global)) return NULL;
  if (r.type_index != expect_type) {
    printf("UNEXPECTED: %s returned type %d\n", global, r.type_index);
    g_unexpected++;
    any_release(&r);
    return NULL;
  }
  return r.v_obj;
}

static void print_seq(const char* label, void* obj) {
  TVMFFISeqCell* seq = seq_cell(obj);
  printf("%s: type_index=%d size=%" PRId64 " capacity_ge_size=%d elems=[", label,
         hdr(obj)->type_index, seq->size, seq->capacity >= seq->size);
  TVMFFIAny* items = (TVMFFIAny*)seq->data;
  for (int64_t i = 0; i < seq->size; ++i) {
    printf("%s", i ? ", " : "");
    print_any(&items[i]);
  }
  printf("]\n");
}

static uint64_t map_size_field(void* obj) { return *(uint64_t*)((char*)obj + 32); }

static int64_t int_of(const TVMFFIAny* a) { return a->type_index == kTVMFFIInt ? a->v_int64 : -999; }

/* iterate with the ffi.{Map,Dict}ForwardIterFunctor protocol; prints pairs */
static void iterate(const char* label, const char* functor_global, void* map, int print_pairs) {
  TVMFFIAny arg = any_obj(map);
  TVMFFIAny fr;
  int rc = call_global(functor_global, &arg, 1, &fr);
  if (!ok(rc, functor_global)) return;
  void* it = fr.v_obj;
  uint64_t n = map_size_field(map);
  printf("%s: [", label);
  uint64_t count = 0;
  int64_t key_sum = 0;
  for (uint64_t i = 0; i < n; ++i) {
    TVMFFIAny c0 = any_int(0), c1 = any_int(1), c2 = any_int(2);
    TVMFFIAny k, v, more;
    if (call_fn(it, &c0, 1, &k) != 0 || call_fn(it, &c1, 1, &v) != 0) {
      (void)take_error();
      printf("<error>");
      break;
    }
    if (print_pairs) {
      printf("%s", i ? ", " : "");
      print_any(&k);
      printf(" => ");
      print_any(&v);
    }
    if (k.type_index == kTVMFFIInt) key_sum += k.v_int64;
    count++;
    any_release(&k);
    any_release(&v);
    if (call_fn(it, &c2, 1, &more) != 0) {
      (void)take_error();
      break;
    }
    if (more.type_index != kTVMFFIBool || more.v_int64 == 0) break;
  }
  printf("] visited=%" PRIu64 " int_key_sum=%" PRId64 "\n", count, key_sum);
  any_release(&fr);
}

/* ------------------------------------------------------------------ Array */

static void test_array(void) {
  TVMFFIByteArray hb = ba("a heap allocated element");
  TVMFFIAny heap = any_none();
  if (!ok(TVMFFIStringFromByteArray(&hb, &heap), "heap element") ||
      !has_type(&heap, kTVMFFIStr, "heap element"))
    return;
  void* inner = make("ffi.Array", NULL, 0, kTVMFFIArray);
  if (!inner) return;
  TVMFFIAny args[7] = {any_int(1),  any_rawstr("two"), any_float(3.5), any_none(),
                       heap,        any_obj(inner),    any_bool(1)};
  void* arr = make("ffi.Array", args, 7, kTVMFFIArray);
  if (!arr) return;
  printf("array: refcount=0x%" PRIx64 " heap_elem_refcount=0x%" PRIx64
         " inner_refcount=0x%" PRIx64 "\n",
         refcnt(arr), refcnt(heap.v_obj), refcnt(inner));
  print_seq("array layout", arr);
  TVMFFIAny* items = (TVMFFIAny*)seq_cell(arr)->data;
  printf("array: elem4_same_object=%d elem5_same_object=%d\n", items[4].v_obj == heap.v_obj,
         items[5].v_obj == (TVMFFIObject*)inner);
  print_seq("empty array layout", inner);

  TVMFFIAny a = any_obj(arr);
  show("ArraySize", "ffi.ArraySize", &a, 1, ERR_MSG);
  for (int i = 0; i < 7; ++i) {
    TVMFFIAny gi[2] = {any_obj(arr), any_int(i)};
    char label[32];
    snprintf(label, sizeof(label), "ArrayGetItem[%d]", i);
    show(label, "ffi.ArrayGetItem", gi, 2, ERR_MSG);
  }
  TVMFFIAny oob[2] = {any_obj(arr), any_int(7)};
  show("ArrayGetItem[7]", "ffi.ArrayGetItem", oob, 2, ERR_MSG);
  TVMFFIAny neg[2] = {any_obj(arr), any_int(-1)};
  show("ArrayGetItem[-1]", "ffi.ArrayGetItem", neg, 2, ERR_MSG);
  TVMFFIAny c1[2] = {any_obj(arr), any_int(1)};
  show("ArrayContains(1)", "ffi.ArrayContains", c1, 2, ERR_MSG);
  TVMFFIAny c2[2] = {any_obj(arr), any_rawstr("two")};
  show("ArrayContains('two')", "ffi.ArrayContains", c2, 2, ERR_MSG);
  TVMFFIAny c3[2] = {any_obj(arr), any_rawstr("a heap allocated element")};
  show("ArrayContains(equal heap string)", "ffi.ArrayContains", c3, 2, ERR_MSG);
  TVMFFIAny c4[2] = {any_obj(arr), any_int(99)};
  show("ArrayContains(99)", "ffi.ArrayContains", c4, 2, ERR_MSG);
  TVMFFIAny c5[2] = {any_obj(arr), any_float(1.0)};
  show("ArrayContains(1.0)", "ffi.ArrayContains", c5, 2, ERR_MSG);
  TVMFFIAny bad = any_int(5);
  show("ArraySize(int)", "ffi.ArraySize", &bad, 1, ERR_KIND);

  TVMFFIObjectDecRef(inner);
  TVMFFIObjectDecRef(arr);
  printf("array: after death heap_elem_refcount=0x%" PRIx64 "\n", refcnt(heap.v_obj));
  any_release(&heap);

  /* a big array */
  TVMFFIAny many[200];
  for (int i = 0; i < 200; ++i) many[i] = any_int(i * 3);
  void* big = make("ffi.Array", many, 200, kTVMFFIArray);
  if (big) {
    TVMFFISeqCell* seq = seq_cell(big);
    TVMFFIAny* it = (TVMFFIAny*)seq->data;
    int64_t sum = 0;
    int all_int = 1;
    for (int64_t i = 0; i < seq->size; ++i) {
      if (it[i].type_index != kTVMFFIInt) all_int = 0;
      sum += it[i].v_int64;
    }
    printf("big array: size=%" PRId64 " all_int=%d sum=%" PRId64 "\n", seq->size, all_int, sum);
    TVMFFIAny gi[2] = {any_obj(big), any_int(150)};
    show("big ArrayGetItem[150]", "ffi.ArrayGetItem", gi, 2, ERR_MSG);
    TVMFFIObjectDecRef(big);
  }
}

/* ------------------------------------------------------------------- List */

static void test_list(void) {
  TVMFFIAny args[3] = {any_int(1), any_int(2), any_int(3)};
  void* list = make("ffi.List", args, 3, kTVMFFIList);
  if (!list) return;
  TVMFFISeqCell* seq = seq_cell(list);
  printf("list: refcount=0x%" PRIx64 " data_deleter_set=%d\n", refcnt(list),
         seq->data_deleter != NULL);
  print_seq("list layout", list);
  TVMFFIAny l = any_obj(list);
  show("ListSize", "ffi.ListSize", &l, 1, ERR_MSG);

  TVMFFIAny app[2] = {any_obj(list), any_rawstr("four")};
  show("ListAppend('four')", "ffi.ListAppend", app, 2, ERR_MSG);
  print_seq("list after append", list);
  TVMFFIAny set[2 + 1] = {any_obj(list), any_int(0), any_float(0.5)};
  show("ListSetItem(0, 0.5)", "ffi.ListSetItem", set, 3, ERR_MSG);
  TVMFFIAny ins[3] = {any_obj(list), any_int(1), any_rawstr("inserted")};
  show("ListInsert(1, 'inserted')", "ffi.ListInsert", ins, 3, ERR_MSG);
  print_seq("list after set+insert", list);
  TVMFFIAny pop[2] = {any_obj(list), any_int(2)};
  show("ListPop(2)", "ffi.ListPop", pop, 2, ERR_MSG);
  print_seq("list after pop", list);
  TVMFFIAny er[2] = {any_obj(list), any_int(0)};
  show("ListErase(0)", "ffi.ListErase", er, 2, ERR_MSG);
  print_seq("list after erase", list);
  TVMFFIAny has[2] = {any_obj(list), any_rawstr("four")};
  show("ListContains('four')", "ffi.ListContains", has, 2, ERR_MSG);
  TVMFFIAny hasnt[2] = {any_obj(list), any_int(1)};
  show("ListContains(1)", "ffi.ListContains", hasnt, 2, ERR_MSG);
  show("ListReverse", "ffi.ListReverse", &l, 1, ERR_MSG);
  print_seq("list after reverse", list);

  TVMFFIAny rep_args[2] = {any_int(7), any_int(8)};
  void* rep = make("ffi.List", rep_args, 2, kTVMFFIList);
  if (rep) {
    TVMFFIAny rs[4] = {any_obj(list), any_int(0), any_int(1), any_obj(rep)};
    show("ListReplaceSlice(0,1,[7,8])", "ffi.ListReplaceSlice", rs, 4, ERR_MSG);
    print_seq("list after replace slice", list);
    TVMFFIObjectDecRef(rep);
  }
  TVMFFIAny self_rs[4] = {any_obj(list), any_int(0), any_int(0), any_obj(list)};
  show("ListReplaceSlice(0,0,self)", "ffi.ListReplaceSlice", self_rs, 4, ERR_MSG);
  print_seq("list after self replace", list);
  TVMFFIAny erg[3] = {any_obj(list), any_int(1), any_int(4)};
  show("ListEraseRange(1,4)", "ffi.ListEraseRange", erg, 3, ERR_MSG);
  print_seq("list after erase range", list);

  TVMFFIAny oob[2] = {any_obj(list), any_int(100)};
  show("ListGetItem[100]", "ffi.ListGetItem", oob, 2, ERR_MSG);
  TVMFFIAny badins[3] = {any_obj(list), any_int(100), any_int(0)};
  show("ListInsert(100)", "ffi.ListInsert", badins, 3, ERR_MSG);
  TVMFFIAny badrange[3] = {any_obj(list), any_int(3), any_int(1)};
  show("ListEraseRange(3,1)", "ffi.ListEraseRange", badrange, 3, ERR_MSG);

  TVMFFIAny res[2] = {any_obj(list), any_int(100)};
  show("ListReserve(100)", "ffi.ListReserve", res, 2, ERR_MSG);
  printf("list after reserve: size=%" PRId64 " capacity_ge_100=%d\n", seq_cell(list)->size,
         seq_cell(list)->capacity >= 100);
  for (int i = 0; i < 50; ++i) {
    TVMFFIAny ap[2] = {any_obj(list), any_int(i)};
    TVMFFIAny r;
    if (call_global("ffi.ListAppend", ap, 2, &r) != 0) (void)take_error();
  }
  printf("list after 50 appends: size=%" PRId64 " capacity_ge_size=%d refcount=0x%" PRIx64 "\n",
         seq_cell(list)->size, seq_cell(list)->capacity >= seq_cell(list)->size, refcnt(list));
  show("ListClear", "ffi.ListClear", &l, 1, ERR_MSG);
  print_seq("list after clear", list);

  /* lists and arrays are distinct types */
  TVMFFIAny gi[2] = {any_obj(list), any_int(0)};
  show("ArrayGetItem on a list", "ffi.ArrayGetItem", gi, 2, ERR_KIND);
  TVMFFIObjectDecRef(list);
}

/* -------------------------------------------------------------------- Map */

static void test_small_map(void) {
  TVMFFIAny args[6] = {any_rawstr("a"), any_int(1), any_rawstr("b"), any_int(2),
                       any_rawstr("a long key that lives on the heap"), any_rawstr("value")};
  void* m = make("ffi.Map", args, 6, kTVMFFIMap);
  if (!m) return;
  printf("small map: refcount=0x%" PRIx64 " size_field=%" PRIu64 "\n", refcnt(m),
         map_size_field(m));
  TVMFFIAny ma = any_obj(m);
  show("MapSize", "ffi.MapSize", &ma, 1, ERR_MSG);
  TVMFFIAny g1[2] = {any_obj(m), any_rawstr("a")};
  show("MapGetItem('a')", "ffi.MapGetItem", g1, 2, ERR_MSG);
  TVMFFIAny g2[2] = {any_obj(m), any_rawstr("a long key that lives on the heap")};
  show("MapGetItem(long key)", "ffi.MapGetItem", g2, 2, ERR_MSG);
  TVMFFIByteArray kb = ba("a long key that lives on the heap");
  TVMFFIAny heapkey = any_none();
  (void)ok(TVMFFIStringFromByteArray(&kb, &heapkey), "heap key");
  TVMFFIAny g3[2] = {any_obj(m), heapkey};
  show("MapGetItem(other heap string, same content)", "ffi.MapGetItem", g3, 2, ERR_MSG);
  any_release(&heapkey);
  TVMFFIAny g4[2] = {any_obj(m), any_rawstr("zz")};
  show("MapGetItem('zz')", "ffi.MapGetItem", g4, 2, ERR_MSG);
  TVMFFIAny g5[2] = {any_obj(m), any_int(1)};
  show("MapGetItem(1)", "ffi.MapGetItem", g5, 2, ERR_MSG);
  show("MapCount('b')", "ffi.MapCount", (TVMFFIAny[]){any_obj(m), any_rawstr("b")}, 2, ERR_MSG);
  show("MapCount('zz')", "ffi.MapCount", (TVMFFIAny[]){any_obj(m), any_rawstr("zz")}, 2, ERR_MSG);

  /* missing sentinel */
  TVMFFIAny inv;
  if (ok(call_global("ffi.GetInvalidObject", NULL, 0, &inv), "GetInvalidObject")) {
    TVMFFIAny gm[2] = {any_obj(m), any_rawstr("zz")};
    TVMFFIAny r;
    int rc = call_global("ffi.MapGetItemOrMissing", gm, 2, &r);
    printf("MapGetItemOrMissing('zz'): rc=%d type=%d is_invalid_object=%d\n", rc, r.type_index,
           r.v_obj == inv.v_obj);
    any_release(&r);
    TVMFFIAny gp[2] = {any_obj(m), any_rawstr("b")};
    rc = call_global("ffi.MapGetItemOrMissing", gp, 2, &r);
    printf("MapGetItemOrMissing('b'): rc=%d ", rc);
    print_any(&r);
    printf("\n");
    any_release(&inv);
  }
  iterate("small map iteration (insertion order)", "ffi.MapForwardIterFunctor", m, 1);
  TVMFFIObjectDecRef(m);

  /* duplicates: last write wins */
  TVMFFIAny dup[6] = {any_rawstr("k"), any_int(1), any_rawstr("k"), any_int(2), any_int(5),
                      any_int(6)};
  m = make("ffi.Map", dup, 6, kTVMFFIMap);
  if (m) {
    printf("dup map: size_field=%" PRIu64 "\n", map_size_field(m));
    show("dup MapGetItem('k')", "ffi.MapGetItem", (TVMFFIAny[]){any_obj(m), any_rawstr("k")}, 2,
         ERR_MSG);
    iterate("dup map iteration", "ffi.MapForwardIterFunctor", m, 1);
    TVMFFIObjectDecRef(m);
  }
  /* mixed key kinds */
  TVMFFIAny mixed[8] = {any_int(1),      any_rawstr("int one"), any_bool(1),
                        any_rawstr("bool true"), any_float(1.0), any_rawstr("float one"),
                        any_none(),      any_rawstr("none")};
  m = make("ffi.Map", mixed, 8, kTVMFFIMap);
  if (m) {
    printf("mixed map: size_field=%" PRIu64 "\n", map_size_field(m));
    show("mixed MapGetItem(1)", "ffi.MapGetItem", (TVMFFIAny[]){any_obj(m), any_int(1)}, 2,
         ERR_MSG);
    show("mixed MapGetItem(True)", "ffi.MapGetItem", (TVMFFIAny[]){any_obj(m), any_bool(1)}, 2,
         ERR_MSG);
    show("mixed MapGetItem(1.0)", "ffi.MapGetItem", (TVMFFIAny[]){any_obj(m), any_float(1.0)}, 2,
         ERR_MSG);
    show("mixed MapGetItem(None)", "ffi.MapGetItem", (TVMFFIAny[]){any_obj(m), any_none()}, 2,
         ERR_MSG);
    TVMFFIObjectDecRef(m);
  }
  /* empty map and odd argument count */
  m = make("ffi.Map", NULL, 0, kTVMFFIMap);
  if (m) {
    printf("empty map: size_field=%" PRIu64 "\n", map_size_field(m));
    show("empty MapSize", "ffi.MapSize", (TVMFFIAny[]){any_obj(m)}, 1, ERR_MSG);
    TVMFFIObjectDecRef(m);
  }
  show("ffi.Map(odd args)", "ffi.Map", (TVMFFIAny[]){any_int(1)}, 1, ERR_KIND);
}

static void test_large_map(void) {
  /* int keys: dense map */
  TVMFFIAny args[2 * 120];
  for (int i = 0; i < 120; ++i) {
    args[2 * i] = any_int(i * 7);
    args[2 * i + 1] = any_int(i * i);
  }
  void* m = make("ffi.Map", args, 240, kTVMFFIMap);
  if (m) {
    printf("int map: size_field=%" PRIu64 "\n", map_size_field(m));
    show("int map MapSize", "ffi.MapSize", (TVMFFIAny[]){any_obj(m)}, 1, ERR_MSG);
    int all_ok = 1;
    for (int i = 0; i < 120; ++i) {
      TVMFFIAny g[2] = {any_obj(m), any_int(i * 7)};
      TVMFFIAny r;
      if (call_global("ffi.MapGetItem", g, 2, &r) != 0 || int_of(&r) != (int64_t)i * i) {
        all_ok = 0;
        (void)take_error();
      }
    }
    printf("int map: all 120 lookups ok=%d\n", all_ok);
    show("int map MapGetItem(8)", "ffi.MapGetItem", (TVMFFIAny[]){any_obj(m), any_int(8)}, 2,
         ERR_MSG);
    show("int map MapCount(693)", "ffi.MapCount", (TVMFFIAny[]){any_obj(m), any_int(693)}, 2,
         ERR_MSG);
    iterate("int map iteration", "ffi.MapForwardIterFunctor", m, 0);
    /* iteration order of a dense map follows the hash layout; since C++ code inlines the
       same layout and hashing, the order is part of what must match */
    iterate("int map iteration order", "ffi.MapForwardIterFunctor", m, 1);
    TVMFFIObjectDecRef(m);
  }
  /* string keys: dense map, some small strings and some heap strings */
  char keys[150][32];
  TVMFFIAny sargs[2 * 150];
  for (int i = 0; i < 150; ++i) {
    snprintf(keys[i], sizeof(keys[i]), i % 2 ? "k%d" : "long-key-number-%d", i);
    sargs[2 * i] = any_rawstr(keys[i]);
    sargs[2 * i + 1] = any_int(i);
  }
  m = make("ffi.Map", sargs, 300, kTVMFFIMap);
  if (m) {
    printf("str map: size_field=%" PRIu64 "\n", map_size_field(m));
    int all_ok = 1;
    for (int i = 0; i < 150; ++i) {
      TVMFFIAny g[2] = {any_obj(m), any_rawstr(keys[i])};
      TVMFFIAny r;
      if (call_global("ffi.MapGetItem", g, 2, &r) != 0 || int_of(&r) != i) {
        all_ok = 0;
        (void)take_error();
      }
    }
    printf("str map: all 150 lookups ok=%d\n", all_ok);
    show("str map MapCount('k3')", "ffi.MapCount", (TVMFFIAny[]){any_obj(m), any_rawstr("k3")},
         2, ERR_MSG);
    show("str map MapCount('k4')", "ffi.MapCount", (TVMFFIAny[]){any_obj(m), any_rawstr("k4")},
         2, ERR_MSG);
    show("str map MapGetItem('nope')", "ffi.MapGetItem",
         (TVMFFIAny[]){any_obj(m), any_rawstr("nope")}, 2, ERR_MSG);
    iterate("str map iteration order", "ffi.MapForwardIterFunctor", m, 1);
    TVMFFIObjectDecRef(m);
  }
}

/* ------------------------------------------------------------------- Dict */

static void test_dict(void) {
  TVMFFIAny args[4] = {any_rawstr("x"), any_int(1), any_rawstr("y"), any_int(2)};
  void* d = make("ffi.Dict", args, 4, kTVMFFIDict);
  if (!d) return;
  printf("dict: refcount=0x%" PRIx64 " size_field=%" PRIu64 "\n", refcnt(d), map_size_field(d));
  TVMFFIAny da = any_obj(d);
  show("DictSize", "ffi.DictSize", &da, 1, ERR_MSG);
  show("DictGetItem('x')", "ffi.DictGetItem", (TVMFFIAny[]){any_obj(d), any_rawstr("x")}, 2,
       ERR_MSG);
  show("DictSetItem('z', 3)", "ffi.DictSetItem",
       (TVMFFIAny[]){any_obj(d), any_rawstr("z"), any_int(3)}, 3, ERR_MSG);
  show("DictSetItem('x', 10)", "ffi.DictSetItem",
       (TVMFFIAny[]){any_obj(d), any_rawstr("x"), any_int(10)}, 3, ERR_MSG);
  printf("dict after sets: size_field=%" PRIu64 " refcount=0x%" PRIx64 "\n", map_size_field(d),
         refcnt(d));
  iterate("dict iteration", "ffi.DictForwardIterFunctor", d, 1);
  show("DictCount('y')", "ffi.DictCount", (TVMFFIAny[]){any_obj(d), any_rawstr("y")}, 2, ERR_MSG);
  show("DictErase('y')", "ffi.DictErase", (TVMFFIAny[]){any_obj(d), any_rawstr("y")}, 2, ERR_MSG);
  show("DictCount('y') after erase", "ffi.DictCount", (TVMFFIAny[]){any_obj(d), any_rawstr("y")},
       2, ERR_MSG);
  show("DictGetItem('y') after erase", "ffi.DictGetItem",
       (TVMFFIAny[]){any_obj(d), any_rawstr("y")}, 2, ERR_MSG);
  show("DictErase('missing')", "ffi.DictErase",
       (TVMFFIAny[]){any_obj(d), any_rawstr("missing")}, 2, ERR_KIND);
  iterate("dict iteration after erase", "ffi.DictForwardIterFunctor", d, 1);
  /* grow past the small-map limit */
  for (int i = 0; i < 40; ++i) {
    TVMFFIAny s[3] = {any_obj(d), any_int(1000 + i), any_int(i)};
    TVMFFIAny r;
    if (call_global("ffi.DictSetItem", s, 3, &r) != 0) (void)take_error();
  }
  printf("dict after 40 int inserts: size_field=%" PRIu64 "\n", map_size_field(d));
  show("DictGetItem(1039)", "ffi.DictGetItem", (TVMFFIAny[]){any_obj(d), any_int(1039)}, 2,
       ERR_MSG);
  show("DictGetItem('z')", "ffi.DictGetItem", (TVMFFIAny[]){any_obj(d), any_rawstr("z")}, 2,
       ERR_MSG);
  iterate("dict iteration after growth", "ffi.DictForwardIterFunctor", d, 1);
  TVMFFIAny inv;
  if (ok(call_global("ffi.GetInvalidObject", NULL, 0, &inv), "GetInvalidObject")) {
    TVMFFIAny r;
    int rc = call_global("ffi.DictGetItemOrMissing", (TVMFFIAny[]){any_obj(d), any_int(-1)}, 2, &r);
    printf("DictGetItemOrMissing(-1): rc=%d is_invalid_object=%d\n", rc, r.v_obj == inv.v_obj);
    any_release(&r);
    any_release(&inv);
  }
  show("DictClear", "ffi.DictClear", &da, 1, ERR_MSG);
  printf("dict after clear: size_field=%" PRIu64 "\n", map_size_field(d));
  show("DictSize after clear", "ffi.DictSize", &da, 1, ERR_MSG);
  /* dict and map are distinct types */
  show("MapSize on a dict", "ffi.MapSize", &da, 1, ERR_KIND);
  TVMFFIObjectDecRef(d);
}

/* ------------------------------------------------------------ Shape/String */

static void test_shape_string(void) {
  TVMFFIAny dims[4] = {any_int(2), any_int(3), any_int(-1), any_int(0)};
  void* s = make("ffi.Shape", dims, 4, kTVMFFIShape);
  if (s) {
    TVMFFIShapeCell* c = (TVMFFIShapeCell*)cell_of(s);
    printf("shape: refcount=0x%" PRIx64 " size=%zu dims=[", refcnt(s), c->size);
    for (size_t i = 0; i < c->size; ++i) printf("%s%" PRId64, i ? "," : "", c->data[i]);
    printf("]\n");
    TVMFFIObjectDecRef(s);
  }
  s = make("ffi.Shape", NULL, 0, kTVMFFIShape);
  if (s) {
    printf("empty shape: size=%zu\n", ((TVMFFIShapeCell*)cell_of(s))->size);
    TVMFFIObjectDecRef(s);
  }
  show("ffi.Shape('x')", "ffi.Shape", (TVMFFIAny[]){any_int(1), any_rawstr("x")}, 2, ERR_MSG);

  show("ffi.String('hello')", "ffi.String", (TVMFFIAny[]){any_rawstr("hello")}, 1, ERR_MSG);
  show("ffi.String(long)", "ffi.String", (TVMFFIAny[]){any_rawstr("hello, long world")}, 1,
       ERR_MSG);
  TVMFFIByteArray hb = ba("an existing heap string");
  TVMFFIAny heap = any_none();
  TVMFFIAny r;
  if (ok(TVMFFIStringFromByteArray(&hb, &heap), "heap string") &&
      has_type(&heap, kTVMFFIStr, "heap string") &&
      ok(call_global("ffi.String", &heap, 1, &r), "ffi.String(obj)")) {
    printf("ffi.String(heap obj): same_object=%d refcount=0x%" PRIx64 "\n", r.v_obj == heap.v_obj,
           refcnt(heap.v_obj));
    any_release(&r);
  }
  any_release(&heap);
  /* A small string (what tvm_ffi makes of a short Python str) comes back as itself. */
  TVMFFIByteArray sb = ba("small");
  TVMFFIAny small = any_none();
  if (ok(TVMFFIStringFromByteArray(&sb, &small), "small string") &&
      has_type(&small, kTVMFFISmallStr, "small string")) {
    show("ffi.String(small str)", "ffi.String", &small, 1, ERR_MSG);
    show("ffi.String(small str, small str)", "ffi.String", (TVMFFIAny[]){small, small}, 2,
         ERR_MSG);
  }
  show("ffi.String()", "ffi.String", NULL, 0, ERR_MSG);
  show("ffi.String(int)", "ffi.String", (TVMFFIAny[]){any_int(1)}, 1, ERR_KIND);
  TVMFFIByteArray b3 = ban("a\0b", 3);
  TVMFFIByteArray b10 = ba("0123456789");
  show("ffi.Bytes(3 bytes)", "ffi.Bytes", (TVMFFIAny[]){any_bytearray(&b3)}, 1, ERR_MSG);
  show("ffi.Bytes(10 bytes)", "ffi.Bytes", (TVMFFIAny[]){any_bytearray(&b10)}, 1, ERR_MSG);
  show("ffi.Bytes(rawstr)", "ffi.Bytes", (TVMFFIAny[]){any_rawstr("str")}, 1, ERR_KIND);
}

static void test_nesting_and_ownership(void) {
  /* containers hold strong references to their elements and values */
  TVMFFIAny la[1] = {any_int(1)};
  void* inner = make("ffi.List", la, 1, kTVMFFIList);
  if (!inner) return;
  TVMFFIAny ma[2] = {any_rawstr("list"), any_obj(inner)};
  void* m = make("ffi.Map", ma, 2, kTVMFFIMap);
  TVMFFIAny aa[2] = {any_obj(m), any_obj(inner)};
  void* arr = make("ffi.Array", aa, 2, kTVMFFIArray);
  printf("nesting: inner_refcount=0x%" PRIx64 " map_refcount=0x%" PRIx64 "\n", refcnt(inner),
         refcnt(m));
  /* mutate the list through the map's value: same object everywhere */
  TVMFFIAny gv[2] = {any_obj(m), any_rawstr("list")};
  TVMFFIAny v;
  if (ok(call_global("ffi.MapGetItem", gv, 2, &v), "MapGetItem list")) {
    printf("nesting: value_is_inner=%d\n", v.v_obj == (TVMFFIObject*)inner);
    TVMFFIAny ap[2] = {v, any_int(2)};
    TVMFFIAny r;
    if (call_global("ffi.ListAppend", ap, 2, &r) != 0) (void)take_error();
    any_release(&v);
  }
  print_seq("nesting: inner list seen directly", inner);
  TVMFFIObjectDecRef(arr);
  TVMFFIObjectDecRef(m);
  printf("nesting: after containers die inner_refcount=0x%" PRIx64 "\n", refcnt(inner));
  TVMFFIObjectDecRef(inner);
}

int main(void) {
  test_array();
  test_list();
  test_small_map();
  test_large_map();
  test_dict();
  test_shape_string();
  test_nesting_and_ownership();
  return finish("containers");
}
