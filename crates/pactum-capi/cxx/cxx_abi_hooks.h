// The hooks pactum's Rust runtime gives the C++ part of libtvm_ffi.so (cxx_abi.cc), installed
// once when the library is loaded (crates/pactum-capi/src/cxx_abi.rs mirrors this struct).
#ifndef PACTUM_CXX_ABI_HOOKS_H_
#define PACTUM_CXX_ABI_HOOKS_H_

#include <stddef.h>

#include <tvm/ffi/c_api.h>

#define PACTUM_HIDDEN __attribute__((visibility("hidden")))

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  // Non-zero when pactum's runtime made the module object `module` (its handle).
  int (*is_runtime_module)(const TVMFFIObject* module);
  // Calls `visit(visitor, name, name_size, symbol)` for each symbol registered with
  // TVMFFIEnvModRegisterContextSymbol, in registration order, over a copy of the list.
  void (*visit_context_symbols)(void* visitor,
                                void (*visit)(void* visitor, const char* name, size_t name_size,
                                              void* symbol));
  // Releases what the runtime keeps for one of its modules (`state`, given to
  // pactum_cxx_new_runtime_module) when the module object `module` (its handle) dies.
  void (*release_runtime_module)(const TVMFFIObject* module, void* state);
} PactumCxxHooks;

PACTUM_HIDDEN void pactum_cxx_abi_install_hooks(const PactumCxxHooks* hooks);

// A new reference to a function `(operation, module, arguments...)` running ModuleObj's member
// function `operation` on a module made by C++ code (GetFunction, ImplementsFunction,
// GetFunctionDoc, GetFunctionMetadata, GetKind, GetPropertyMask, InspectSource,
// GetWriteFormats, WriteToFile, ImportModule, ClearImports, GetImports).
PACTUM_HIDDEN TVMFFIObject* pactum_cxx_module_operations(void);

// A new module object of the runtime's (a new reference to its handle): a C++ ModuleObj with
// the official layout, whose virtual functions answer through the runtime's `ffi.Module*`
// globals. `kind` (of `kind_size` bytes) is what kind() returns; `state` is the runtime's, kept
// right after ModuleObj's fields (at handle + 40) and given back to `release_runtime_module`.
// NULL when memory runs out.
PACTUM_HIDDEN TVMFFIObject* pactum_cxx_new_runtime_module(const char* kind, size_t kind_size,
                                                          void* state);

// ModuleObj::kind() of the module `module` (its handle) as a String written into `*out`, or
// ModuleObj::GetPropertyMask() into `*out`: 0. 1, with `*out` untouched, when the module is one
// of the runtime's own (the runtime answers for those); -1 with the error raised when the
// module's code threw.
PACTUM_HIDDEN int pactum_cxx_module_kind(const TVMFFIObject* module, TVMFFIAny* out);
PACTUM_HIDDEN int pactum_cxx_module_property_mask(const TVMFFIObject* module, int64_t* out);

PACTUM_HIDDEN int pactum_cxx_module_lookup_from_imports(void* ctx, const char* name, void** out);

#ifdef __cplusplus
}
#endif

#endif  // PACTUM_CXX_ABI_HOOKS_H_
