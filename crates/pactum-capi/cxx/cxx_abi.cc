// The C++ ABI of libtvm_ffi.so: every C++ symbol the official library (apache-tvm-ffi
// 0.1.15.post2) exports, compiled at build time against the official headers so that the
// class layouts, vtables and typeinfo are the ones C++ clients were compiled with.
//
// Everything here is written over the C API (the library's own C functions) and the `ffi.*`
// globals pactum's runtime registers: one packed call per C++ call. The few facts only the
// Rust runtime knows (which module objects it made, the registered context symbols) come
// through a table of hooks the Rust side installs when the library is loaded
// (`pactum_cxx_abi_install_hooks`, hidden: it is no export of the official library).
//
// build.rs compiles this file with hidden visibility; the exported names are exactly those
// listed in cxx_abi_symbols.txt (a version script), so anything else here stays local.

#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/dataclass.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/extra/serialization.h>
#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_hash.h>
#include <tvm/ffi/extra/visit_error_context.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/access_path.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cxx_abi_hooks.h"

namespace {

PactumCxxHooks g_hooks{};

// A global function of the runtime, looked up once and kept for the life of the process (never
// destroyed: no destructor runs at exit, when the runtime may be gone). Every global used here
// is one the runtime registers itself, so a missing one is a broken build, reported as the
// official library reports a missing global.
#define PACTUM_GLOBAL(name)                                                                  \
  ([]() -> const tvm::ffi::Function& {                                                       \
    static const tvm::ffi::Function* function =                                              \
        new tvm::ffi::Function(tvm::ffi::Function::GetGlobalRequired(name));                \
    return *function;                                                                        \
  }())

// The C handle of a module object (the Object base, after the vtable pointer).
TVMFFIObject* HandleOf(const tvm::ffi::ModuleObj* module) {
  const tvm::ffi::Object* object = module;
  return reinterpret_cast<TVMFFIObject*>(const_cast<tvm::ffi::Object*>(object));
}

// Whether pactum's runtime made this module (a RuntimeModuleObj, below): its imports are the
// runtime's to read and change (under the runtime's lock), so the runtime's own `ffi.Module*`
// globals answer for it rather than ModuleObj's code here.
bool MadeByRuntime(const tvm::ffi::ModuleObj* module) {
  return g_hooks.is_runtime_module != nullptr && g_hooks.is_runtime_module(HandleOf(module)) != 0;
}

// A new reference to the module `module` is the object of.
tvm::ffi::Module RefOf(const tvm::ffi::ModuleObj* module) {
  return tvm::ffi::details::ObjectUnsafe::ObjectRefFromObjectPtr<tvm::ffi::Module>(
      tvm::ffi::details::ObjectUnsafe::ObjectPtrFromUnowned<tvm::ffi::Object>(
          const_cast<tvm::ffi::Object*>(static_cast<const tvm::ffi::Object*>(module))));
}

}  // namespace

extern "C" void pactum_cxx_abi_install_hooks(
    const PactumCxxHooks* hooks) {
  g_hooks = *hooks;
}

namespace tvm {
namespace ffi {

// ---------------------------------------------------------------------------------- ModuleObj

Optional<Function> ModuleObj::GetFunction(const String& name, bool query_imports) {
  if (MadeByRuntime(this)) {
    return PACTUM_GLOBAL("ffi.ModuleGetFunction")(RefOf(this), name, query_imports)
        .cast<Optional<Function>>();
  }
  if (auto found = this->GetFunction(name)) {
    return found;
  }
  if (query_imports) {
    for (const Any& import : imports_) {
      if (auto found = import.cast<Module>()->GetFunction(name, query_imports)) {
        return found;
      }
    }
  }
  return std::nullopt;
}

bool ModuleObj::ImplementsFunction(const String& name, bool query_imports) {
  if (MadeByRuntime(this)) {
    return PACTUM_GLOBAL("ffi.ModuleImplementsFunction")(RefOf(this), name, query_imports)
        .cast<bool>();
  }
  if (this->ImplementsFunction(name)) {
    return true;
  }
  if (query_imports) {
    for (const Any& import : imports_) {
      if (import.cast<Module>()->ImplementsFunction(name, query_imports)) {
        return true;
      }
    }
  }
  return false;
}

Optional<String> ModuleObj::GetFunctionDoc(const String& name, bool query_imports) {
  if (MadeByRuntime(this)) {
    return PACTUM_GLOBAL("ffi.ModuleGetFunctionDoc")(RefOf(this), name, query_imports)
        .cast<Optional<String>>();
  }
  if (auto found = this->GetFunctionDoc(name)) {
    return found;
  }
  if (query_imports) {
    for (const Any& import : imports_) {
      if (auto found = import.cast<Module>()->GetFunctionDoc(name, query_imports)) {
        return found;
      }
    }
  }
  return std::nullopt;
}

Optional<String> ModuleObj::GetFunctionMetadata(const String& name, bool query_imports) {
  if (MadeByRuntime(this)) {
    return PACTUM_GLOBAL("ffi.ModuleGetFunctionMetadata")(RefOf(this), name, query_imports)
        .cast<Optional<String>>();
  }
  if (auto found = this->GetFunctionMetadata(name)) {
    return found;
  }
  if (query_imports) {
    for (const Any& import : imports_) {
      if (auto found = import.cast<Module>()->GetFunctionMetadata(name, query_imports)) {
        return found;
      }
    }
  }
  return std::nullopt;
}

void ModuleObj::ImportModule(const Module& other) {
  if (MadeByRuntime(this)) {
    PACTUM_GLOBAL("ffi.ModuleImportModule")(RefOf(this), other);
    return;
  }
  // Refuse a cycle: `this` must not be reachable from `other` through imports. Modules of
  // either runtime keep their imports at the same place (an Array after the object header).
  std::unordered_set<const ModuleObj*> seen{other.operator->()};
  std::vector<const ModuleObj*> pending{other.operator->()};
  while (!pending.empty()) {
    const ModuleObj* module = pending.back();
    pending.pop_back();
    for (const Any& import : module->imports_) {
      const ModuleObj* next = import.cast<const ModuleObj*>();
      if (seen.insert(next).second) {
        pending.push_back(next);
      }
    }
  }
  if (seen.count(this) != 0) {
    TVM_FFI_THROW(RuntimeError) << "Cyclic dependency detected during import";
  }
  imports_.push_back(other);
}

void ModuleObj::ClearImports() {
  if (MadeByRuntime(this)) {
    PACTUM_GLOBAL("ffi.ModuleClearImports")(RefOf(this));
    return;
  }
  imports_.clear();
}

// The backend of `TVMFFIEnvModLookupFromImports` for modules made by C++ code, whose library
// context is their `ModuleObj*`: imports first, then the global registry; cached per module.
struct ModuleObj::InternalUnsafe {
  static void* GetFunctionFromImports(ModuleObj* module, const char* name) {
    static std::mutex mutex_;
    std::scoped_lock<std::mutex> lock(mutex_);
    String key(name);
    auto cached = module->import_lookup_cache_.find(key);
    if (cached != module->import_lookup_cache_.end()) {
      return const_cast<FunctionObj*>((*cached).second.operator->());
    }
    Optional<Function> found;
    for (const Any& import : module->imports_) {
      if ((found = import.cast<Module>()->GetFunction(key, true))) break;
    }
    if (!found) found = Function::GetGlobal(key);
    if (!found) {
      TVM_FFI_THROW(RuntimeError) << "Cannot find function " << name
                                  << " in the imported modules or global registry.";
    }
    module->import_lookup_cache_.Set(key, *found);
    return const_cast<FunctionObj*>((*found).operator->());
  }
};

}  // namespace ffi
}  // namespace tvm

// Looks `name` up from a C++ module's imports (the module's library context is `ctx`), as
// `TVMFFIEnvModLookupFromImports` does for modules made by C++ code. 0 and a borrowed function
// in `*out`, or -1 with the error raised.
extern "C" int pactum_cxx_module_lookup_from_imports(
    void* ctx, const char* name, void** out) {
  TVM_FFI_SAFE_CALL_BEGIN();
  tvm::ffi::ModuleObj::_GetOrAllocRuntimeTypeIndex();
  *out = tvm::ffi::ModuleObj::InternalUnsafe::GetFunctionFromImports(
      static_cast<tvm::ffi::ModuleObj*>(ctx), name);
  TVM_FFI_SAFE_CALL_END();
}

// The runtime's `ffi.Module*` globals, for modules made by C++ code (every module object the
// runtime did not make is a C++ `ModuleObj`: the type index of modules is final). Called as
// `(operation, module, arguments...)`; the operations are ModuleObj's member functions.
static tvm::ffi::Any CxxModuleOperation(tvm::ffi::PackedArgs args) {
  using tvm::ffi::String;
  // A view of the name, not a copy; the operations Python runs on every call of a compiled
  // function (tvm.runtime.Executable asks each module's kind and property mask) come first.
  String operation_name = args[0].cast<String>();
  std::string_view operation(operation_name.data(), operation_name.size());
  tvm::ffi::Module module = args[1].cast<tvm::ffi::Module>();
  auto* object = const_cast<tvm::ffi::ModuleObj*>(module.operator->());
  if (operation == "GetKind") return String(object->kind());
  if (operation == "GetPropertyMask") return object->GetPropertyMask();
  if (operation == "GetImports") return object->imports();
  if (operation == "GetFunction") {
    return object->GetFunction(args[2].cast<String>(), args[3].cast<bool>());
  }
  if (operation == "ImplementsFunction") {
    return object->ImplementsFunction(args[2].cast<String>(), args[3].cast<bool>());
  }
  if (operation == "GetFunctionDoc") {
    return object->GetFunctionDoc(args[2].cast<String>(), args[3].cast<bool>());
  }
  if (operation == "GetFunctionMetadata") {
    return object->GetFunctionMetadata(args[2].cast<String>(), args[3].cast<bool>());
  }
  if (operation == "InspectSource") return object->InspectSource(args[2].cast<String>());
  if (operation == "GetWriteFormats") return object->GetWriteFormats();
  if (operation == "WriteToFile") {
    object->WriteToFile(args[2].cast<String>(), args[3].cast<String>());
    return nullptr;
  }
  if (operation == "ImportModule") {
    object->ImportModule(args[2].cast<tvm::ffi::Module>());
    return nullptr;
  }
  if (operation == "ClearImports") {
    object->ClearImports();
    return nullptr;
  }
  TVM_FFI_THROW(InternalError) << "unknown module operation " << operation;
  TVM_FFI_UNREACHABLE();
}

namespace {

// A module object pactum's runtime makes (a loaded shared library, a system library, a module
// served by code): a C++ ModuleObj with the official layout, so that C++ clients can call its
// virtual functions and dynamic_cast it, as they do with the official library's modules. Each
// virtual function answers through the runtime's `ffi.Module*` globals, which know the module
// by its handle; what the runtime keeps for the module (`state_`) follows ModuleObj's fields.
class RuntimeModuleObj final : public tvm::ffi::ModuleObj {
 public:
  RuntimeModuleObj(std::string kind, void* state) : state_(state), kind_(std::move(kind)) {}
  RuntimeModuleObj(const RuntimeModuleObj&) = delete;
  RuntimeModuleObj& operator=(const RuntimeModuleObj&) = delete;
  // Runs when the last reference goes (the deleter make_object installed): the runtime forgets
  // the module and drops its state; the imports go with ModuleObj's fields after this.
  ~RuntimeModuleObj() { g_hooks.release_runtime_module(HandleOf(this), state_); }

  const char* kind() const final { return kind_.c_str(); }

  int GetPropertyMask() const final {
    return static_cast<int>(
        PACTUM_GLOBAL("ffi.ModuleGetPropertyMask")(RefOf(this)).cast<int64_t>());
  }

  tvm::ffi::Optional<tvm::ffi::Function> GetFunction(const tvm::ffi::String& name) final {
    return PACTUM_GLOBAL("ffi.ModuleGetFunction")(RefOf(this), name, false)
        .cast<tvm::ffi::Optional<tvm::ffi::Function>>();
  }

  tvm::ffi::Optional<tvm::ffi::String> GetFunctionDoc(const tvm::ffi::String& name) final {
    return PACTUM_GLOBAL("ffi.ModuleGetFunctionDoc")(RefOf(this), name, false)
        .cast<tvm::ffi::Optional<tvm::ffi::String>>();
  }

  tvm::ffi::Optional<tvm::ffi::String> GetFunctionMetadata(const tvm::ffi::String& name) final {
    return PACTUM_GLOBAL("ffi.ModuleGetFunctionMetadata")(RefOf(this), name, false)
        .cast<tvm::ffi::Optional<tvm::ffi::String>>();
  }

  // ImplementsFunction, WriteToFile, GetWriteFormats, SaveToBytes and InspectSource keep
  // ModuleObj's own versions, as the official library's library modules do.

 private:
  // At handle + 40 (ModuleObj is 48 bytes with no tail padding, the handle is at +8): the
  // runtime reads it there.
  void* state_;
  std::string kind_;
};

static_assert(sizeof(tvm::ffi::ModuleObj) == 48 && alignof(tvm::ffi::ModuleObj) == 8,
              "the runtime finds a module's state at handle + 40, after ModuleObj's fields");

}  // namespace

// The deleter make_object installs in every RuntimeModuleObj (one function for the class),
// recorded when the first one is made: a module is the runtime's own exactly when its header
// holds it. The header is the C ABI's, so this holds for any module, whoever compiled it (a
// typeid check would not: TVM's libraries are built without RTTI, their vtables carry none).
static std::atomic<decltype(TVMFFIObject::deleter)> g_runtime_module_deleter{nullptr};

// The module object behind a module handle (every module object here is a ModuleObj).
static const tvm::ffi::ModuleObj* ModuleOfHandle(const TVMFFIObject* handle) {
  return static_cast<const tvm::ffi::ModuleObj*>(reinterpret_cast<const tvm::ffi::Object*>(handle));
}

// Whether the runtime made the module (its own answer the runtime's questions about it). Before
// the runtime made any, the recorded deleter is NULL and matches no live object's, except one
// without a deleter, which then goes the slower, always correct way through the runtime.
static bool IsRuntimeModule(const TVMFFIObject* module) {
  return module->deleter == g_runtime_module_deleter.load(std::memory_order_relaxed);
}

// Direct C entry points for the two questions Python asks of a module on every call of a
// compiled function (tvm.runtime.Executable checks the import tree each time): no packed call,
// no operation name, no copy of the module reference.
extern "C" int pactum_cxx_module_kind(const TVMFFIObject* module, TVMFFIAny* out) {
  if (IsRuntimeModule(module)) return 1;
  const tvm::ffi::ModuleObj* object = ModuleOfHandle(module);
  TVM_FFI_SAFE_CALL_BEGIN();
  *out = tvm::ffi::details::AnyUnsafe::MoveAnyToTVMFFIAny(
      tvm::ffi::Any(tvm::ffi::String(object->kind())));
  TVM_FFI_SAFE_CALL_END();
}

extern "C" int pactum_cxx_module_property_mask(const TVMFFIObject* module, int64_t* out) {
  if (IsRuntimeModule(module)) return 1;
  const tvm::ffi::ModuleObj* object = ModuleOfHandle(module);
  TVM_FFI_SAFE_CALL_BEGIN();
  *out = object->GetPropertyMask();
  TVM_FFI_SAFE_CALL_END();
}

extern "C" TVMFFIObject* pactum_cxx_new_runtime_module(const char* kind, size_t kind_size,
                                                       void* state) {
  try {
    auto module = tvm::ffi::make_object<RuntimeModuleObj>(std::string(kind, kind_size), state);
    TVMFFIObject* handle =
        tvm::ffi::details::ObjectUnsafe::MoveObjectPtrToTVMFFIObjectPtr(std::move(module));
    g_runtime_module_deleter.store(handle->deleter, std::memory_order_relaxed);
    return handle;
  } catch (...) {
    // Only memory can run out here; the runtime keeps its state and reports the failure.
    return nullptr;
  }
}

// A new reference to the function the runtime calls for `CxxModuleOperation`.
extern "C" TVMFFIObject* pactum_cxx_module_operations() {
  tvm::ffi::Function function = tvm::ffi::Function::FromPacked(
      [](tvm::ffi::PackedArgs args, tvm::ffi::Any* result) { *result = CxxModuleOperation(args); });
  return tvm::ffi::details::ObjectUnsafe::MoveObjectRefToTVMFFIObjectPtr(std::move(function));
}

namespace tvm {
namespace ffi {

// ------------------------------------------------------------------------------------- Module

Module Module::LoadFromFile(const String& file_name) {
  return PACTUM_GLOBAL("ffi.ModuleLoadFromFile")(file_name).cast<Module>();
}

namespace {
// The callback and the first exception it threw: no exception may cross the Rust frames of the
// hook, so it is kept here, the remaining symbols are skipped, and it is rethrown after.
struct ContextSymbolVisitor {
  const TypedFunction<void(String, void*)>* callback;
  std::exception_ptr error;
};

void VisitOneContextSymbol(void* opaque, const char* name, size_t size, void* symbol) {
  auto* visitor = static_cast<ContextSymbolVisitor*>(opaque);
  if (visitor->error) return;
  try {
    (*visitor->callback)(String(name, size), symbol);
  } catch (...) {
    visitor->error = std::current_exception();
  }
}
}  // namespace

void Module::VisitContextSymbols(const TypedFunction<void(String, void*)>& callback) {
  if (g_hooks.visit_context_symbols == nullptr) return;
  // The hook copies the list first, so the callback may register more symbols.
  ContextSymbolVisitor visitor{&callback, nullptr};
  g_hooks.visit_context_symbols(&visitor, VisitOneContextSymbol);
  if (visitor.error) std::rethrow_exception(visitor.error);
}

// --------------------------------------------------------------------------------------- JSON

namespace json {

Value Parse(const String& json_str, String* error_msg) {
  if (error_msg == nullptr) {
    return PACTUM_GLOBAL("ffi.json.Parse")(json_str);
  }
  try {
    Value parsed = PACTUM_GLOBAL("ffi.json.Parse")(json_str);
    *error_msg = String("");
    return parsed;
  } catch (const Error& error) {
    if (error.kind() != "ValueError") throw;
    *error_msg = String(error.message());
    return nullptr;
  }
}

String Stringify(const Value& value, const Optional<int>& indent) {
  return PACTUM_GLOBAL("ffi.json.Stringify")(value, indent).cast<String>();
}

}  // namespace json

json::Value ToJSONGraph(const Any& value, const Any& metadata) {
  return PACTUM_GLOBAL("ffi.ToJSONGraph")(value, metadata);
}

Any FromJSONGraph(const json::Value& value) { return PACTUM_GLOBAL("ffi.FromJSONGraph")(value); }

// ------------------------------------------------------------------------ structural, repr, copy

uint64_t StructuralHash::Hash(const Any& value, bool map_free_vars, bool skip_tensor_content) {
  // The global returns the hash's bits as a signed integer.
  int64_t bits = PACTUM_GLOBAL("ffi.StructuralHash")(value, map_free_vars, skip_tensor_content)
                     .cast<int64_t>();
  return static_cast<uint64_t>(bits);
}

bool StructuralEqual::Equal(const Any& lhs, const Any& rhs, bool map_free_vars,
                            bool skip_tensor_content) {
  return PACTUM_GLOBAL("ffi.StructuralEqual")(lhs, rhs, map_free_vars, skip_tensor_content)
      .cast<bool>();
}

Optional<reflection::AccessPathPair> StructuralEqual::GetFirstMismatch(const Any& lhs,
                                                                       const Any& rhs,
                                                                       bool map_free_vars,
                                                                       bool skip_tensor_content) {
  return PACTUM_GLOBAL("ffi.GetFirstStructuralMismatch")(lhs, rhs, map_free_vars,
                                                          skip_tensor_content)
      .cast<Optional<reflection::AccessPathPair>>();
}

Array<reflection::AccessPath> VisitErrorContext::FindAccessPaths(
    const ObjectRef& root, const VisitErrorContext& visit_context, bool allow_prefix_match) {
  return PACTUM_GLOBAL("ffi.VisitErrorContext.FindAccessPaths")(root, visit_context,
                                                                 allow_prefix_match)
      .cast<Array<reflection::AccessPath>>();
}

String ReprPrint(const Any& value) {
  return PACTUM_GLOBAL("ffi.ReprPrint")(value).cast<String>();
}

Any DeepCopy(const Any& value) { return PACTUM_GLOBAL("ffi.DeepCopy")(value); }

int64_t RecursiveHash(const Any& value) {
  return PACTUM_GLOBAL("ffi.RecursiveHash")(value).cast<int64_t>();
}

bool RecursiveEq(const Any& lhs, const Any& rhs) {
  return PACTUM_GLOBAL("ffi.RecursiveEq")(lhs, rhs).cast<bool>();
}
bool RecursiveLt(const Any& lhs, const Any& rhs) {
  return PACTUM_GLOBAL("ffi.RecursiveLt")(lhs, rhs).cast<bool>();
}
bool RecursiveLe(const Any& lhs, const Any& rhs) {
  return PACTUM_GLOBAL("ffi.RecursiveLe")(lhs, rhs).cast<bool>();
}
bool RecursiveGt(const Any& lhs, const Any& rhs) {
  return PACTUM_GLOBAL("ffi.RecursiveGt")(lhs, rhs).cast<bool>();
}
bool RecursiveGe(const Any& lhs, const Any& rhs) {
  return PACTUM_GLOBAL("ffi.RecursiveGe")(lhs, rhs).cast<bool>();
}

}  // namespace ffi
}  // namespace tvm
