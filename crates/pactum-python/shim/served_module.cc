// The one piece of pactum-python that must be C++: a module of the official libtvm_ffi.so
// whose functions, metadata and docs are answered by TVM FFI functions.
//
// The official runtime's modules are C++ objects (tvm::ffi::ModuleObj subclasses, dispatched
// through their vtable), so a module served by Rust code needs a C++ class to stand in for it.
// This file defines that class and registers `pactum.Module.from_functions` with the contract
// of pactum's own runtime (crates/pactum-core/src/module.rs, MODULE_FROM_FUNCTIONS; served by
// crates/pactum-runtime/src/modules.rs):
//
//   (kind: str, get_function: Function, get_text: Function) -> Module
//   get_function(name: str) -> Optional[Function]
//   get_text(what: str, name: str) -> Optional[str]      what is "metadata" or "doc"
//
// Everything else (the .vmfb loader, IREE calls) is Rust, in pactum and pactum-iree, which
// reach this class only through that global.
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/memory.h>
#include <tvm/ffi/string.h>

#include <string>
#include <utility>

namespace {

using tvm::ffi::Function;
using tvm::ffi::Module;
using tvm::ffi::ModuleObj;
using tvm::ffi::Optional;
using tvm::ffi::String;

constexpr const char* kFromFunctions = "pactum.Module.from_functions";

class ServedModuleObj final : public ModuleObj {
 public:
  ServedModuleObj(std::string kind, Function get_function, Function get_text)
      : kind_(std::move(kind)),
        get_function_(std::move(get_function)),
        get_text_(std::move(get_text)) {}

  const char* kind() const final { return kind_.c_str(); }

  int GetPropertyMask() const final { return Module::kRunnable; }

  Optional<Function> GetFunction(const String& name) final {
    return get_function_(name).cast<Optional<Function>>();
  }

  Optional<String> GetFunctionDoc(const String& name) final {
    return get_text_(String("doc"), name).cast<Optional<String>>();
  }

  Optional<String> GetFunctionMetadata(const String& name) final {
    return get_text_(String("metadata"), name).cast<Optional<String>>();
  }

 private:
  std::string kind_;
  Function get_function_;
  Function get_text_;
};

Module FromFunctions(const String& kind, Function get_function, Function get_text) {
  if (kind.size() == 0) {
    TVM_FFI_THROW(ValueError) << "a served module needs a non-empty kind";
  }
  return Module(tvm::ffi::make_object<ServedModuleObj>(std::string(kind), std::move(get_function),
                                                       std::move(get_text)));
}

}  // namespace

// Registers `pactum.Module.from_functions` unless the runtime already has it (pactum's own
// libtvm_ffi.so does). Returns 0, or -1 with the error raised in the runtime's error slot.
extern "C" int pactum_python_register_module_bridge() {
  TVM_FFI_SAFE_CALL_BEGIN();
  if (!Function::GetGlobal(kFromFunctions).has_value()) {
    Function::SetGlobal(kFromFunctions, Function::FromTyped(FromFunctions), false);
  }
  TVM_FFI_SAFE_CALL_END();
}
