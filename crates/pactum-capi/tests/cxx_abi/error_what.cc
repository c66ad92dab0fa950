/*
 * Errors read as C strings: C++ built from the official headers calls `what()` on a caught
 * `tvm::ffi::Error`, and `what()` returns the message's `data` pointer as a C string. The
 * official library NUL-terminates the kind, message and backtrace of every error it makes,
 * so a replacement library must too.
 *
 * Compiled with -fsanitize=address (only this program is instrumented; ASan intercepts the
 * library's malloc, so a read one byte past an unterminated message is a heap-buffer-overflow
 * report and a non-zero exit). Every error here is made by the library under test, through each
 * C entry point that makes one, and through a global function that fails.
 *
 * Prints one line per check; exits 1 on a length mismatch.
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace ffi = tvm::ffi;

static int failures = 0;

static const TVMFFIErrorCell* CellOf(const ffi::Error& error) {
  TVMFFIObject* object = ffi::details::ObjectUnsafe::TVMFFIObjectPtrFromObjectRef(error);
  return static_cast<const ffi::ErrorObj*>(reinterpret_cast<ffi::Object*>(object));
}

static void CheckText(const char* what, const char* label, const TVMFFIByteArray& text) {
  size_t length = std::strlen(text.data);
  std::printf("%s: %s strlen %zu size %zu\n", what, label, length, text.size);
  if (length != text.size) ++failures;
}

// Throws the error the library raised, catches it as C++ clients do, reads it as a C string.
static void CheckCaught(const char* what, ffi::Error raised) {
  try {
    throw raised;
  } catch (const ffi::Error& error) {
    size_t length = std::strlen(error.what());
    std::printf("%s: what() strlen %zu, message() size %zu\n", what, length,
                error.message().size());
    if (length != error.message().size()) ++failures;
    const TVMFFIErrorCell* cell = CellOf(error);
    CheckText(what, "kind", cell->kind);
    CheckText(what, "backtrace", cell->backtrace);
  }
}

int main() {
  // 41 bytes, the length the issue measured strlen overrunning.
  const char* message = "the message of forty-one bytes, exactly!!";
  if (std::strlen(message) != 41) return 2;

  TVMFFIErrorSetRaisedFromCStr("ValueError", message);
  CheckCaught("SetRaisedFromCStr", ffi::details::MoveFromSafeCallRaised());

  const char* parts[] = {"the message in ", "three parts, ", "joined by the library"};
  TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 3);
  CheckCaught("SetRaisedFromCStrParts", ffi::details::MoveFromSafeCallRaised());

  // Byte arrays that are not C strings: the sizes stop short of the buffers' NULs.
  const char kind[] = "RuntimeErrorXXXX";
  const char text[] = "a message cut short of its buffer####";
  const char trace[] = "File \"here\", line 1, in main\n@@@@";
  TVMFFIByteArray kind_bytes{kind, sizeof(kind) - 1 - 4};
  TVMFFIByteArray text_bytes{text, sizeof(text) - 1 - 4};
  TVMFFIByteArray trace_bytes{trace, sizeof(trace) - 1 - 4};
  TVMFFIObjectHandle created = nullptr;
  if (TVMFFIErrorCreate(&kind_bytes, &text_bytes, &trace_bytes, &created) != 0) return 3;
  ffi::Error made = ffi::details::ObjectUnsafe::ObjectRefFromObjectPtr<ffi::Error>(
      ffi::details::ObjectUnsafe::ObjectPtrFromOwned<ffi::Object>(
          static_cast<TVMFFIObject*>(created)));
  CheckCaught("ErrorCreate", made);

  // The error's own updater keeps the backtrace terminated, appended to or replaced.
  const TVMFFIErrorCell* cell = CellOf(made);
  TVMFFIByteArray more{trace, 10};
  cell->update_backtrace(created, &more, kTVMFFIBacktraceUpdateModeAppend);
  CheckText("ErrorCreate appended", "backtrace", CellOf(made)->backtrace);
  cell->update_backtrace(created, &more, kTVMFFIBacktraceUpdateModeReplace);
  CheckText("ErrorCreate replaced", "backtrace", CellOf(made)->backtrace);

  // An error the library raises from its own code, thrown by the headers' call path.
  ffi::Function parse = ffi::Function::GetGlobalRequired("ffi.json.Parse");
  try {
    parse(ffi::String("{\"unterminated\": "));
    std::printf("ffi.json.Parse: no error\n");
    ++failures;
  } catch (const ffi::Error& error) {
    CheckCaught("ffi.json.Parse", error);
  }

  std::printf(failures == 0 ? "all terminated\n" : "UNTERMINATED: %d\n", failures);
  return failures == 0 ? 0 : 1;
}
