/* Loads a .vmfb through pactum's libtvm_ffi.so exactly as a C program loads a .so module:
 * `ffi.ModuleLoadFromFile` (which dispatches to `ffi.Module.load_from_file.vmfb`, registered
 * when the library loads), `ffi.ModuleGetFunction`, then calls through TVMFFIFunctionCall.
 *
 * Usage: load_vmfb vm_direct.vmfb
 * Prints one line per fact (`kind vmfb`, `mix <f64> <i64> <f64>`, `frob_or_double <i64>`,
 * `nope absent`), floats with %.17g so the Rust driver (tests/all/vmfb_c.rs) compares them exactly
 * with the same calls made in-process; exits 1 on any failure, with the error on stderr. */
#include "vmfb_host.h"

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
