/* Loads a .vmfb through pactum's libtvm_ffi.so exactly as a C program loads a .so module:
 * `ffi.ModuleLoadFromFile` (which dispatches to `ffi.Module.load_from_file.vmfb`, registered
 * when the library loads), `ffi.ModuleGetFunction`, then calls through TVMFFIFunctionCall.
 *
 * Usage: load_vmfb vm_direct.vmfb
 * Prints one line per fact (`kind vmfb`, `mix <f64> <i64> <f64>`, `frob_or_double <i64>`,
 * `nope absent`), floats with %.17g so the Rust driver (tests/vmfb_c.rs) compares them exactly
 * with the same calls made in-process; exits 1 on any failure, with the error on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static void fail(const char* what) {
  TVMFFIObjectHandle error = NULL;
  TVMFFIErrorMoveFromRaised(&error);
  if (error) {
    TVMFFIErrorCell* cell = (TVMFFIErrorCell*)((char*)error + sizeof(TVMFFIObject));
    fprintf(stderr, "%s failed: %.*s: %.*s\n", what, (int)cell->kind.size, cell->kind.data,
            (int)cell->message.size, cell->message.data);
    TVMFFIObjectDecRef(error);
  } else {
    fprintf(stderr, "%s failed\n", what);
  }
  exit(1);
}

static TVMFFIAny none(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFINone;
  return a;
}

static TVMFFIAny any_int(int64_t v) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static TVMFFIAny any_float(double v) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIFloat;
  a.v_float64 = v;
  return a;
}

static TVMFFIAny any_str(const char* s) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}

static TVMFFIAny any_obj(void* obj) {
  TVMFFIAny a = none();
  a.type_index = ((TVMFFIObject*)obj)->type_index;
  a.v_obj = (TVMFFIObject*)obj;
  return a;
}

static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  *a = none();
}

static TVMFFIAny call(void* function, const char* what, TVMFFIAny* args, int n) {
  TVMFFIAny result = none();
  if (TVMFFIFunctionCall(function, args, n, &result) != 0) fail(what);
  return result;
}

static TVMFFIAny call_global(const char* name, TVMFFIAny* args, int n) {
  TVMFFIByteArray bytes = {name, strlen(name)};
  TVMFFIObjectHandle function = NULL;
  if (TVMFFIFunctionGetGlobal(&bytes, &function) != 0 || function == NULL) fail(name);
  TVMFFIAny result = call(function, name, args, n);
  TVMFFIObjectDecRef(function);
  return result;
}

/* ffi.ModuleGetFunction(module, name, query_imports=true): the function, or NULL for None. */
static void* get_function(void* module, const char* name) {
  TVMFFIAny args[3] = {any_obj(module), any_str(name), any_int(1)};
  args[2].type_index = kTVMFFIBool;
  TVMFFIAny result = call_global("ffi.ModuleGetFunction", args, 3);
  if (result.type_index == kTVMFFINone) return NULL;
  if (result.type_index != kTVMFFIFunction) {
    fprintf(stderr, "ModuleGetFunction(%s) returned type %d\n", name, result.type_index);
    exit(1);
  }
  return result.v_obj;
}

static TVMFFIAny array_item(TVMFFIAny* array, int64_t index) {
  TVMFFIAny args[2] = {*array, any_int(index)};
  return call_global("ffi.ArrayGetItem", args, 2);
}

static void print_str(const char* label, TVMFFIAny* s) {
  if (s->type_index == kTVMFFISmallStr) {
    printf("%s %.*s\n", label, (int)s->small_str_len, s->v_bytes);
  } else if (s->type_index == kTVMFFIStr) {
    TVMFFIByteArray* b = (TVMFFIByteArray*)((char*)s->v_obj + sizeof(TVMFFIObject));
    printf("%s %.*s\n", label, (int)b->size, b->data);
  } else {
    fprintf(stderr, "%s: not a string (type %d)\n", label, s->type_index);
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODULE.vmfb\n", argv[0]);
    return 2;
  }
  TVMFFIAny path = any_str(argv[1]);
  TVMFFIAny module = call_global("ffi.ModuleLoadFromFile", &path, 1);
  if (module.type_index != kTVMFFIModule) {
    fprintf(stderr, "ModuleLoadFromFile returned type %d\n", module.type_index);
    return 1;
  }

  TVMFFIAny kind_args[1] = {module};
  TVMFFIAny kind = call_global("ffi.ModuleGetKind", kind_args, 1);
  print_str("kind", &kind);
  release(&kind);

  void* mix = get_function(module.v_obj, "mix");
  if (!mix) fail("mix lookup");
  TVMFFIAny mix_args[4] = {any_int(1), any_int(2), any_float(1.5), any_float(0.25)};
  TVMFFIAny mixed = call(mix, "mix(1, 2, 1.5, 0.25)", mix_args, 4);
  if (mixed.type_index != kTVMFFIArray) {
    fprintf(stderr, "mix returned type %d\n", mixed.type_index);
    return 1;
  }
  TVMFFIAny r0 = array_item(&mixed, 0), r1 = array_item(&mixed, 1), r2 = array_item(&mixed, 2);
  if (r0.type_index != kTVMFFIFloat || r1.type_index != kTVMFFIInt ||
      r2.type_index != kTVMFFIFloat) {
    fprintf(stderr, "mix result types %d %d %d\n", r0.type_index, r1.type_index, r2.type_index);
    return 1;
  }
  printf("mix %.17g %lld %.17g\n", r0.v_float64, (long long)r1.v_int64, r2.v_float64);
  release(&mixed);
  TVMFFIObjectDecRef(mix);

  void* frob = get_function(module.v_obj, "frob_or_double");
  if (!frob) fail("frob_or_double lookup");
  TVMFFIAny frob_args[1] = {any_int(21)};
  TVMFFIAny frobbed = call(frob, "frob_or_double(21)", frob_args, 1);
  if (frobbed.type_index != kTVMFFIInt) {
    fprintf(stderr, "frob_or_double returned type %d\n", frobbed.type_index);
    return 1;
  }
  printf("frob_or_double %lld\n", (long long)frobbed.v_int64);
  TVMFFIObjectDecRef(frob);

  void* nope = get_function(module.v_obj, "nope");
  printf("nope %s\n", nope ? "present" : "absent");
  if (nope) TVMFFIObjectDecRef(nope);

  release(&module);
  return 0;
}
