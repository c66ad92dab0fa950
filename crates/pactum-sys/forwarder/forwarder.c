/*
 * A stand-in `libtvm_ffi.so` that forwards every C API function through a table.
 *
 * Modules built against the C API record `NEEDED libtvm_ffi.so`. A Rust program that embeds
 * pactum's runtime has no such file on its search path, so before it loads a module it loads
 * this library (whose SONAME is libtvm_ffi.so) and installs its own function table. The
 * module's imports then bind here and reach the program's single runtime: one error slot per
 * thread, one registry, one type table.
 *
 * The entries below must stay in the order of `TVM_FFI_C_API_NAMES` (crates/pactum-sys/src/capi.rs);
 * `pactum_forwarder_install` refuses a table whose names differ.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  const char* data;
  size_t size;
} pactum_byte_array;

#define PACTUM_EXPORT __attribute__((visibility("default")))
#define PACTUM_CAPI_LEN 50

static void* forward_table[PACTUM_CAPI_LEN];

/* Each entry: index, return type, name, parameter list, argument list. */
#define PACTUM_FORWARDERS(RET, VOID)                                                            \
  VOID(0, TVMFFIGetVersion, (void* a), (a))                                                     \
  RET(1, int, TVMFFIObjectIncRef, (void* a), (a))                                               \
  RET(2, int, TVMFFIObjectDecRef, (void* a), (a))                                               \
  RET(3, int, TVMFFIObjectCreateOpaque, (void* a, int32_t b, void* c, void* d), (a, b, c, d))   \
  RET(4, void*, TVMFFIGetCustomAllocator, (void), ())                                           \
  RET(5, int, TVMFFISetCustomAllocator, (void* a), (a))                                         \
  RET(6, int, TVMFFITypeKeyToIndex, (const void* a, void* b), (a, b))                           \
  RET(7, int, TVMFFIFunctionCreate, (void* a, void* b, void* c, void* d), (a, b, c, d))         \
  RET(8, int, TVMFFIFunctionGetGlobal, (const void* a, void* b), (a, b))                        \
  RET(9, int, TVMFFIAnyViewToOwnedAny, (const void* a, void* b), (a, b))                        \
  RET(10, int, TVMFFIFunctionCall, (void* a, void* b, int32_t c, void* d), (a, b, c, d))        \
  VOID(11, TVMFFIErrorMoveFromRaised, (void* a), (a))                                           \
  VOID(12, TVMFFIErrorSetRaised, (void* a), (a))                                                \
  VOID(13, TVMFFIErrorSetRaisedFromCStr, (const char* a, const char* b), (a, b))                \
  VOID(14, TVMFFIErrorSetRaisedFromCStrParts, (const char* a, const char** b, int32_t c),       \
       (a, b, c))                                                                               \
  RET(15, int, TVMFFIErrorCreate, (const void* a, const void* b, const void* c, void* d),       \
      (a, b, c, d))                                                                             \
  RET(16, int, TVMFFIErrorCreateWithCauseAndExtraContext,                                       \
      (const void* a, const void* b, const void* c, void* d, void* e, void* f),                 \
      (a, b, c, d, e, f))                                                                       \
  RET(17, int, TVMFFITensorFromDLPack, (void* a, int32_t b, int32_t c, void* d), (a, b, c, d))  \
  RET(18, int, TVMFFITensorToDLPack, (void* a, void* b), (a, b))                                \
  RET(19, int, TVMFFITensorFromDLPackVersioned, (void* a, int32_t b, int32_t c, void* d),       \
      (a, b, c, d))                                                                             \
  RET(20, int, TVMFFITensorToDLPackVersioned, (void* a, void* b), (a, b))                       \
  RET(21, int, TVMFFITensorCreateUnsafeView, (void* a, const void* b, void* c), (a, b, c))      \
  RET(22, int, TVMFFIStringFromByteArray, (const void* a, void* b), (a, b))                     \
  RET(23, int, TVMFFIBytesFromByteArray, (const void* a, void* b), (a, b))                      \
  RET(24, int, TVMFFIBigIntFromByteArray, (const void* a, void* b), (a, b))                     \
  RET(25, pactum_byte_array, TVMFFIBigIntGetContentByteArray, (const void* a), (a))             \
  RET(26, int, TVMFFIDataTypeFromString, (const void* a, void* b), (a, b))                      \
  RET(27, int, TVMFFIDataTypeToString, (const void* a, void* b), (a, b))                        \
  RET(28, int, TVMFFIFunctionSetGlobal, (const void* a, void* b, int c), (a, b, c))             \
  RET(29, int, TVMFFIFunctionSetGlobalFromMethodInfo, (const void* a, int b), (a, b))           \
  RET(30, int, TVMFFITypeRegisterField, (int32_t a, const void* b), (a, b))                     \
  RET(31, int, TVMFFITypeRegisterMethod, (int32_t a, const void* b), (a, b))                    \
  RET(32, int, TVMFFITypeRegisterMetadata, (int32_t a, const void* b), (a, b))                  \
  RET(33, int, TVMFFITypeRegisterAttr, (int32_t a, const void* b, const void* c), (a, b, c))    \
  RET(34, const void*, TVMFFIGetTypeAttrColumn, (const void* a), (a))                           \
  RET(35, const void*, TVMFFIBacktrace, (const char* a, int b, const char* c, int d),           \
      (a, b, c, d))                                                                             \
  RET(36, int32_t, TVMFFITypeGetOrAllocIndex,                                                   \
      (const void* a, int32_t b, int32_t c, int32_t d, int32_t e, int32_t f),                   \
      (a, b, c, d, e, f))                                                                       \
  RET(37, const void*, TVMFFIGetTypeInfo, (int32_t a), (a))                                     \
  RET(38, int, TVMFFIHandleInitOnce, (void* a, void* b), (a, b))                                \
  RET(39, int, TVMFFIHandleDeinitOnce, (void* a, void* b), (a, b))                              \
  RET(40, int, TVMFFIEnvSetStream, (int32_t a, int32_t b, void* c, void* d), (a, b, c, d))      \
  RET(41, void*, TVMFFIEnvGetStream, (int32_t a, int32_t b), (a, b))                            \
  RET(42, int, TVMFFIEnvSetDLPackManagedTensorAllocator, (void* a, int b, void* c), (a, b, c))  \
  RET(43, void*, TVMFFIEnvGetDLPackManagedTensorAllocator, (void), ())                          \
  RET(44, int, TVMFFIEnvTensorAlloc, (void* a, void* b), (a, b))                                \
  RET(45, int, TVMFFIEnvCheckSignals, (void), ())                                               \
  RET(46, int, TVMFFIEnvRegisterCAPI, (const char* a, void* b), (a, b))                         \
  RET(47, int, TVMFFIEnvModLookupFromImports, (void* a, const char* b, void* c), (a, b, c))     \
  RET(48, int, TVMFFIEnvModRegisterContextSymbol, (const char* a, void* b), (a, b))             \
  RET(49, int, TVMFFIEnvModRegisterSystemLibSymbol, (const char* a, void* b), (a, b))

#define PACTUM_DEFINE_RET(idx, ret, name, params, args) \
  PACTUM_EXPORT ret name params { return ((ret(*) params)forward_table[idx]) args; }
#define PACTUM_DEFINE_VOID(idx, name, params, args) \
  PACTUM_EXPORT void name params { ((void(*) params)forward_table[idx]) args; }
PACTUM_FORWARDERS(PACTUM_DEFINE_RET, PACTUM_DEFINE_VOID)

#define PACTUM_NAME_RET(idx, ret, name, params, args) #name,
#define PACTUM_NAME_VOID(idx, name, params, args) #name,
static const char* const forward_names[PACTUM_CAPI_LEN] = {
    PACTUM_FORWARDERS(PACTUM_NAME_RET, PACTUM_NAME_VOID)};

/*
 * Installs the implementation. `names[i]` must name the function `functions[i]` implements;
 * returns 0 on success, or 1 + the index of the first entry that does not match.
 */
PACTUM_EXPORT int pactum_forwarder_install(const char* const* names, void* const* functions,
                                           size_t count) {
  if (count != PACTUM_CAPI_LEN) return -1;
  for (size_t i = 0; i < count; ++i) {
    if (names[i] == NULL || strcmp(names[i], forward_names[i]) != 0) return (int)i + 1;
  }
  for (size_t i = 0; i < count; ++i) forward_table[i] = functions[i];
  return 0;
}
