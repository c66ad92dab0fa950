/*
 * The C++ ABI of libtvm_ffi.so as C++ libraries built on apache-tvm-ffi use it (TVM's runtime,
 * its LLVM module, tvm-ffi-orcjit): module classes derived from the library's ModuleObj
 * (vtable and typeinfo exported by the library), dynamic_cast through it, ModuleObj's exported
 * member functions on C++ modules and on modules the library makes (a loaded shared library, the
 * system library: every virtual function called from C++, dynamic_cast), Module::LoadFromFile,
 * Module::VisitContextSymbols, and the exported free functions (JSON, JSON graphs, structural
 * equality and hashing, repr, deep copy, recursive comparison).
 *
 * usage: module_cxx SAMPLE_MODULE.so. Prints deterministic lines; the test compares the
 * output on the official library and on pactum's. Exits 1 on an unexpected outcome.
 */
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/dataclass.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/extra/serialization.h>
#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_hash.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/memory.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <cstdio>
#include <string>

namespace ffi = tvm::ffi;

static int failures = 0;

#define EXPECT(cond)                                              \
  do {                                                            \
    if (!(cond)) {                                                \
      std::printf("UNEXPECTED line %d: %s\n", __LINE__, #cond);   \
      ++failures;                                                 \
    }                                                             \
  } while (0)

// A module written in C++: one function per name it is given, returning that name's length.
class NamedModule : public ffi::ModuleObj {
 public:
  explicit NamedModule(std::string name) : name_(std::move(name)) {}
  const char* kind() const final { return "named"; }
  int GetPropertyMask() const final { return ffi::Module::kRunnable; }
  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    if (name != name_) return std::nullopt;
    int64_t length = static_cast<int64_t>(name_.size());
    return ffi::Function::FromTyped([length](int64_t x) { return x + length; });
  }
  ffi::Optional<ffi::String> GetFunctionDoc(const ffi::String& name) final {
    if (name != name_) return std::nullopt;
    return ffi::String("doc of " + name_);
  }
  ffi::Optional<ffi::String> GetFunctionMetadata(const ffi::String& name) final {
    if (name != name_) return std::nullopt;
    return ffi::String("{\"name\": \"" + name_ + "\"}");
  }

 private:
  std::string name_;
};

class OtherModule : public ffi::ModuleObj {
 public:
  const char* kind() const final { return "other"; }
  ffi::Optional<ffi::Function> GetFunction(const ffi::String&) final { return std::nullopt; }
};

// A module whose kind and property mask throw, as a broken C++ module may.
class ThrowingModule : public ffi::ModuleObj {
 public:
  const char* kind() const final { TVM_FFI_THROW(RuntimeError) << "no kind here"; }
  int GetPropertyMask() const final { TVM_FFI_THROW(ValueError) << "no mask here"; }
  ffi::Optional<ffi::Function> GetFunction(const ffi::String&) final { return std::nullopt; }
};

static ffi::Module Named(const char* name) {
  return ffi::Module(ffi::make_object<NamedModule>(name));
}

static std::string Text(const ffi::Optional<ffi::String>& text) {
  return text.has_value() ? std::string(*text) : std::string("None");
}

static void CppModules() {
  ffi::Module a = Named("alpha");
  ffi::Module b = Named("beta");
  ffi::Module other(ffi::make_object<OtherModule>());

  // dynamic_cast through ModuleObj (the library's typeinfo).
  ffi::ModuleObj* base = const_cast<ffi::ModuleObj*>(a.operator->());
  EXPECT(dynamic_cast<NamedModule*>(base) != nullptr);
  EXPECT(dynamic_cast<OtherModule*>(base) == nullptr);
  std::printf("kind %s, mask %d, type index %d\n", a->kind(), a->GetPropertyMask(),
              a->type_index());

  a->ImportModule(b);
  a->ImportModule(other);
  std::printf("imports of alpha: %zu\n", a->imports().size());
  auto beta = a->GetFunction("beta", true);
  EXPECT(beta.has_value());
  if (beta) std::printf("alpha->beta(10, imports) = %lld\n", (long long)(*beta)(10).cast<int64_t>());
  EXPECT(!a->GetFunction("beta", false).has_value());
  EXPECT(!a->GetFunction("gamma", true).has_value());
  std::printf("implements beta: %d (imports) %d (own)\n", a->ImplementsFunction("beta", true),
              a->ImplementsFunction("beta", false));
  std::printf("doc %s, metadata %s, none %s\n", Text(a->GetFunctionDoc("beta", true)).c_str(),
              Text(a->GetFunctionMetadata("beta", true)).c_str(),
              Text(a->GetFunctionDoc("beta", false)).c_str());

  try {
    b->ImportModule(a);
    std::printf("cycle accepted\n");
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("cycle refused: %s: %s\n", error.kind().c_str(), error.message().c_str());
  }
  try {
    a->ImportModule(a);
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("self import refused: %s\n", error.kind().c_str());
  }
  a->ClearImports();
  std::printf("imports after clear: %zu\n", a->imports().size());

  try {
    other->SaveToBytes();
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("SaveToBytes: %s: %s\n", error.kind().c_str(), error.message().c_str());
  }
}

// A system-library symbol: returns its one integer argument times three.
static int SystemTriple(void*, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  if (num_args != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "system_triple(x: int)");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 * 3;
  return 0;
}

// Every virtual function of ModuleObj on `module`, a module the library made (a loaded shared
// library, the system library), through C++ virtual calls, and dynamic_cast on it.
static void VirtualCalls(const char* label, ffi::Module module, const char* function_name) {
  ffi::ModuleObj* object = const_cast<ffi::ModuleObj*>(module.operator->());
  std::printf("%s: kind %s, mask %d\n", label, object->kind(), object->GetPropertyMask());
  std::printf("%s: dynamic_cast to NamedModule %d, to its most derived object is itself %d\n",
              label, dynamic_cast<NamedModule*>(object) != nullptr,
              dynamic_cast<void*>(object) == static_cast<void*>(object));
  auto function = object->GetFunction(ffi::String(function_name));
  EXPECT(function.has_value());
  if (function) {
    std::printf("%s: %s via the virtual GetFunction: %lld\n", label, function_name,
                (long long)(std::string(function_name) == "add_i64"
                                ? (*function)(20, 22).cast<int64_t>()
                                : (*function)(14).cast<int64_t>()));
  }
  std::printf("%s: GetFunction(missing) %d, ImplementsFunction %d/%d\n", label,
              object->GetFunction(ffi::String("no_such_function")).has_value(),
              object->ImplementsFunction(ffi::String(function_name)),
              object->ImplementsFunction(ffi::String("no_such_function")));
  std::printf("%s: doc %s, metadata %s, missing doc %s\n", label,
              Text(object->GetFunctionDoc(ffi::String(function_name))).c_str(),
              Text(object->GetFunctionMetadata(ffi::String(function_name))).c_str(),
              Text(object->GetFunctionDoc(ffi::String("no_such_function"))).c_str());
  std::printf("%s: write formats %zu, source '%s'\n", label, object->GetWriteFormats().size(),
              object->InspectSource("").c_str());
  try {
    object->WriteToFile("/nonexistent/module.so", "so");
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("%s: WriteToFile: %s: %s\n", label, error.kind().c_str(), error.message().c_str());
  }
  try {
    object->SaveToBytes();
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("%s: SaveToBytes: %s: %s\n", label, error.kind().c_str(), error.message().c_str());
  }
  // Imports through the virtual ImportModule / ClearImports, and the exported lookup that
  // calls the virtual GetFunction.
  ffi::Module imported = Named("through_import");
  object->ImportModule(imported);
  auto through = object->GetFunction("through_import", true);
  EXPECT(through.has_value());
  if (through) {
    std::printf("%s: imports %zu, through_import(1) = %lld\n", label, object->imports().size(),
                (long long)(*through)(1).cast<int64_t>());
  }
  try {
    imported->ImportModule(module);
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("%s: cycle refused: %s\n", label, error.message().c_str());
  }
  object->ClearImports();
  std::printf("%s: imports after clear %zu\n", label, object->imports().size());
}

static void SystemLibrary() {
  EXPECT(TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_system_triple",
                                             reinterpret_cast<void*>(SystemTriple)) == 0);
  ffi::Module system = ffi::Function::GetGlobalRequired("ffi.SystemLib")().cast<ffi::Module>();
  VirtualCalls("system", system, "system_triple");
}

static void LoadedModules(const char* sample_path) {
  ffi::Module lib = ffi::Module::LoadFromFile(sample_path);
  std::printf("loaded kind from global: %s\n",
              ffi::Function::GetGlobalRequired("ffi.ModuleGetKind")(lib).cast<ffi::String>().c_str());
  auto add = lib->GetFunction("add_i64", true);
  EXPECT(add.has_value());
  if (add) std::printf("add_i64(2, 3) = %lld\n", (long long)(*add)(2, 3).cast<int64_t>());
  EXPECT(!lib->GetFunction("no_such_function", true).has_value());
  std::printf("library implements add_i64: %d, missing: %d\n",
              lib->ImplementsFunction("add_i64", true),
              lib->ImplementsFunction("no_such_function", true));
  std::printf("library doc: %s\n", Text(lib->GetFunctionDoc("add_i64", true)).c_str());

  // A C++ module importing a loaded one finds the library's functions through it.
  ffi::Module holder = Named("holder");
  holder->ImportModule(lib);
  auto through = holder->GetFunction("add_i64", true);
  EXPECT(through.has_value());
  if (through) std::printf("holder->add_i64(4, 5) = %lld\n", (long long)(*through)(4, 5).cast<int64_t>());
  holder->ClearImports();

  // The library's module is a C++ object: every virtual function, dynamic_cast.
  VirtualCalls("loaded", lib, "add_i64");
  // Its library context is its ModuleObj*, and generated code looks functions up through it.
  void* ctx = (*lib->GetFunction("get_library_ctx"))().cast<void*>();
  std::printf("library_ctx is the ModuleObj*: %d\n",
              ctx == static_cast<void*>(const_cast<ffi::ModuleObj*>(lib.operator->())));
  lib->ImportModule(Named("imported_fn"));
  std::printf("call_from_imports(imported_fn, 1) = %lld\n",
              (long long)(*lib->GetFunction("call_from_imports"))("imported_fn", 1).cast<int64_t>());
  lib->ClearImports();

  for (const char* bad : {"no_extension", "module.unknownformat"}) {
    try {
      ffi::Module::LoadFromFile(bad);
      ++failures;
    } catch (const ffi::Error& error) {
      std::printf("LoadFromFile(%s): %s: %s\n", bad, error.kind().c_str(), error.message().c_str());
    }
  }
}

// The library's `ffi.Module*` globals (what Python's Module calls) on modules made by C++ code,
// and a module the library loads importing one.
static void ModuleGlobals(const char* sample_path) {
  auto global = [](const char* name) { return ffi::Function::GetGlobalRequired(name); };
  ffi::Module a = Named("alpha");
  ffi::Module b = Named("beta");
  global("ffi.ModuleImportModule")(a, b);
  // The questions Python asks on every call of a compiled function (kind, property mask, the
  // imports array's size), on a C++ module, a loaded one, a throwing one and wrong arguments:
  // the same answers and errors on both libraries.
  ffi::Module loaded = ffi::Module::LoadFromFile(sample_path);
  std::printf("globals: loaded kind %s, mask %lld, array sizes %lld %lld\n",
              global("ffi.ModuleGetKind")(loaded).cast<ffi::String>().c_str(),
              (long long)global("ffi.ModuleGetPropertyMask")(loaded).cast<int64_t>(),
              (long long)global("ffi.ArraySize")(ffi::Array<int64_t>{1, 2, 3}).cast<int64_t>(),
              (long long)global("ffi.ArraySize")(a->imports()).cast<int64_t>());
  ffi::Module throwing(ffi::make_object<ThrowingModule>());
  for (const char* name : {"ffi.ModuleGetKind", "ffi.ModuleGetPropertyMask", "ffi.ArraySize"}) {
    for (int bad = 0; bad < 3; ++bad) {
      try {
        if (bad == 0) global(name)(throwing);
        if (bad == 1) global(name)(int64_t{7});
        if (bad == 2) global(name)();
        std::printf("globals: %s #%d returned\n", name, bad);
      } catch (const ffi::Error& error) {
        std::printf("globals: %s #%d: %s: %s\n", name, bad, error.kind().c_str(),
                    error.message().c_str());
      }
    }
  }
  std::printf("globals: kind %s, mask %lld, imports %zu\n",
              global("ffi.ModuleGetKind")(a).cast<ffi::String>().c_str(),
              (long long)global("ffi.ModuleGetPropertyMask")(a).cast<int64_t>(), a->imports().size());
  auto found = global("ffi.ModuleGetFunction")(a, "beta", true).cast<ffi::Optional<ffi::Function>>();
  EXPECT(found.has_value());
  if (found) std::printf("globals: alpha.beta(1) = %lld\n", (long long)(*found)(1).cast<int64_t>());
  std::printf("globals: implements %d/%d, doc %s, metadata %s\n",
              global("ffi.ModuleImplementsFunction")(a, "beta", true).cast<bool>(),
              global("ffi.ModuleImplementsFunction")(a, "beta", false).cast<bool>(),
              Text(global("ffi.ModuleGetFunctionDoc")(a, "beta", true).cast<ffi::Optional<ffi::String>>()).c_str(),
              Text(global("ffi.ModuleGetFunctionMetadata")(a, "beta", true).cast<ffi::Optional<ffi::String>>()).c_str());
  std::printf("globals: source '%s', write formats %zu\n",
              global("ffi.ModuleInspectSource")(a, "").cast<ffi::String>().c_str(),
              global("ffi.ModuleGetWriteFormats")(a).cast<ffi::Array<ffi::String>>().size());
  try {
    global("ffi.ModuleWriteToFile")(a, "/nonexistent/x", "bin");
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("globals: WriteToFile: %s: %s\n", error.kind().c_str(), error.message().c_str());
  }
  try {
    global("ffi.ModuleImportModule")(b, a);
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("globals: cycle refused: %s\n", error.message().c_str());
  }
  global("ffi.ModuleClearImports")(a);
  std::printf("globals: imports after clear %zu\n", a->imports().size());

  // A loaded module importing a C++ one: lookups reach it; a cycle back is refused.
  ffi::Module lib = ffi::Module::LoadFromFile(sample_path);
  global("ffi.ModuleImportModule")(lib, b);
  auto through = global("ffi.ModuleGetFunction")(lib, "beta", true).cast<ffi::Optional<ffi::Function>>();
  EXPECT(through.has_value());
  if (through) std::printf("globals: library.beta(2) = %lld\n", (long long)(*through)(2).cast<int64_t>());
  EXPECT(lib->GetFunction("beta", true).has_value());
  try {
    global("ffi.ModuleImportModule")(b, lib);
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("globals: cycle through a loaded module refused: %s\n", error.message().c_str());
  }
  global("ffi.ModuleClearImports")(lib);

  // Code a C++ module generates looks functions up with its `ModuleObj*` as library context
  // (TVM's JIT modules do): imports first, then the global registry.
  global("ffi.ModuleImportModule")(a, b);
  void* ctx = const_cast<ffi::ModuleObj*>(a.operator->());
  for (const char* name : {"beta", "ffi.ModuleGetKind", "no.such.function"}) {
    TVMFFIObjectHandle function = nullptr;
    if (TVMFFIEnvModLookupFromImports(ctx, name, &function) == 0) {
      std::printf("lookup from imports %s: found %d\n", name, function != nullptr);
    } else {
      ffi::Error error = ffi::details::MoveFromSafeCallRaised();
      std::printf("lookup from imports %s: %s: %s\n", name, error.kind().c_str(),
                  error.message().c_str());
    }
  }
  global("ffi.ModuleClearImports")(a);

  // Reflection: the imports are `ffi.Module`'s one field.
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ffi::ModuleObj::_type_index);
  EXPECT(info->num_fields == 1);
  if (info->num_fields == 1) {
    const TVMFFIFieldInfo& field = info->fields[0];
    std::printf("field %.*s offset %lld type index %d\n", static_cast<int>(field.name.size),
                field.name.data, (long long)field.offset, field.field_static_type_index);
  }
}

static void ContextSymbols() {
  static int marker = 0;
  EXPECT(TVMFFIEnvModRegisterContextSymbol("__pactum_cxx_abi_marker", &marker) == 0);
  int seen = 0;
  ffi::Module::VisitContextSymbols(ffi::TypedFunction<void(ffi::String, void*)>(
      [&seen](ffi::String name, void* symbol) {
        if (name == "__pactum_cxx_abi_marker") {
          EXPECT(symbol == &marker);
          ++seen;
        }
      }));
  std::printf("context symbol visited %d time(s)\n", seen);
  // An exception of the callback reaches the caller.
  try {
    ffi::Module::VisitContextSymbols(ffi::TypedFunction<void(ffi::String, void*)>(
        [](ffi::String name, void*) {
          if (name == "__pactum_cxx_abi_marker") {
            TVM_FFI_THROW(ValueError) << "the visitor stops at " << name;
          }
        }));
    std::printf("UNEXPECTED: the visitor's exception was lost\n");
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("visitor's exception: %s: %s\n", error.kind().c_str(), error.message().c_str());
  }
}

static void Json() {
  ffi::String error_msg("unset");
  ffi::json::Value parsed = ffi::json::Parse("[1, 2.5, {\"a\": null, \"b\": [true]}]", &error_msg);
  std::printf("parsed: %s (error message '%s')\n", ffi::json::Stringify(parsed).c_str(),
              error_msg.c_str());
  std::printf("indented:\n%s\n", ffi::json::Stringify(parsed, 2).c_str());
  ffi::json::Value bad = ffi::json::Parse("{\"a\": ", &error_msg);
  std::printf("bad: is None %d, error message '%s'\n", bad == nullptr, error_msg.c_str());
  try {
    ffi::json::Parse("[1,");
    ++failures;
  } catch (const ffi::Error& error) {
    std::printf("bad without error_msg: %s: %s\n", error.kind().c_str(), error.message().c_str());
  }
  ffi::Array<ffi::Any> value{1, ffi::String("two"), ffi::Array<ffi::Any>{3.5, nullptr}};
  ffi::json::Value graph = ffi::ToJSONGraph(value, nullptr);
  std::printf("graph: %s\n", ffi::json::Stringify(graph).c_str());
  ffi::Any back = ffi::FromJSONGraph(graph);
  std::printf("round trip: %s\n", ffi::ReprPrint(back).c_str());
}

static void Structural() {
  ffi::Array<ffi::Any> x{1, ffi::String("s"), ffi::Array<ffi::Any>{2, 3}};
  ffi::Array<ffi::Any> same{1, ffi::String("s"), ffi::Array<ffi::Any>{2, 3}};
  ffi::Array<ffi::Any> differs{1, ffi::String("s"), ffi::Array<ffi::Any>{2, 4}};
  std::printf("equal %d %d, hashes equal %d %d\n", ffi::StructuralEqual::Equal(x, same),
              ffi::StructuralEqual::Equal(x, differs),
              ffi::StructuralHash::Hash(x) == ffi::StructuralHash::Hash(same),
              ffi::StructuralHash::Hash(x) == ffi::StructuralHash::Hash(differs));
  std::printf("hash of 1: %llu\n", (unsigned long long)ffi::StructuralHash::Hash(ffi::Any(1)));
  auto mismatch = ffi::StructuralEqual::GetFirstMismatch(x, differs);
  std::printf("mismatch: %s\n", mismatch ? ffi::ReprPrint(*mismatch).c_str() : "None");
  std::printf("no mismatch: %d\n", !ffi::StructuralEqual::GetFirstMismatch(x, same).has_value());
  ffi::Map<ffi::String, ffi::Any> map{{"k", 1}, {"l", ffi::Array<ffi::Any>{2}}};
  std::printf("repr: %s\n", ffi::ReprPrint(map).c_str());
  ffi::Any copy = ffi::DeepCopy(x);
  std::printf("deep copy equal %d, same object %d\n", ffi::RecursiveEq(copy, x),
              copy.cast<ffi::ObjectRef>().same_as(x));
  std::printf("recursive hash equal %d\n", ffi::RecursiveHash(copy) == ffi::RecursiveHash(x));
  ffi::Array<ffi::Any> lo{1, 2}, hi{1, 3};
  std::printf("lt %d le %d gt %d ge %d\n", ffi::RecursiveLt(lo, hi), ffi::RecursiveLe(lo, lo),
              ffi::RecursiveGt(lo, hi), ffi::RecursiveGe(hi, lo));
}

// A type with a static index a library reserves for itself between the runtime's static types
// and the dynamic range (TVM's runtime reserves such indices for its own types).
class ReservedIndexObj : public ffi::Object {
 public:
  int64_t value = 7;
  static constexpr const int32_t _type_index = 100;
  TVM_FFI_DECLARE_OBJECT_INFO_STATIC("pactum.test.ReservedIndex", ReservedIndexObj, ffi::Object);
};

static void ReservedIndexType() {
  // The definition's destructor registers the creator and `__ffi_init__` (through
  // `ffi._RegisterFFIInit`), reading the type's information back.
  ffi::reflection::ObjectDef<ReservedIndexObj>().def_ro("value", &ReservedIndexObj::value);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ReservedIndexObj::_type_index);
  std::printf("reserved index %d: %.*s, %d field(s)\n", info->type_index,
              static_cast<int>(info->type_key.size), info->type_key.data, info->num_fields);
  ffi::Any made = ffi::Function::GetGlobalRequired("ffi.MakeObjectFromPackedArgs")(
      ffi::String("pactum.test.ReservedIndex"), ffi::String("value"), 42);
  std::printf("made: %s\n", ffi::ReprPrint(made).c_str());
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SAMPLE_MODULE.so\n", argv[0]);
    return 2;
  }
  try {
    CppModules();
    LoadedModules(argv[1]);
    SystemLibrary();
    ModuleGlobals(argv[1]);
    ContextSymbols();
    Json();
    Structural();
    ReservedIndexType();
  } catch (const ffi::Error& error) {
    std::printf("UNEXPECTED error: %s\n", error.FullMessage().c_str());
    return 1;
  }
  std::printf(failures == 0 ? "done\n" : "UNEXPECTED failures: %d\n", failures);
  return failures == 0 ? 0 : 1;
}
