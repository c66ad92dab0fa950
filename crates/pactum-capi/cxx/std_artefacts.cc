// Standard-library template instances the official libtvm_ffi.so happens to export.
//
// The official build leaves a few libstdc++ templates it uses out of line, and libstdc++ gives
// namespace std default visibility, so they ended up in its dynamic symbol table. No client
// needs them, but the library is a drop-in replacement: it exports the same names, of the same
// kinds. They are real, correct instances (a client's own weak copy of the same instance may
// bind to these), made by explicit instantiation where this compiler's libstdc++ has the
// member, and written out where it does not.

#include <tvm/ffi/extra/module.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cxx_abi_hooks.h"

// std::make_shared's control block emits the typeinfo of its bases and the tag's unique static.
namespace {
struct SharedMarker {
  int value = 0;
};
}  // namespace

extern "C" PACTUM_HIDDEN int pactum_cxx_std_artefacts_anchor() {
  return std::make_shared<SharedMarker>()->value;
}

// Hash sets of module pointers and of addresses, and a string_view-keyed map.
using ModuleSet = std::__uset_hashtable<const tvm::ffi::ModuleObj*>;
using AddressSet = std::__uset_hashtable<const void*>;
template ModuleSet::~_Hashtable();
template ModuleSet::iterator ModuleSet::_M_insert_unique_node(std::size_t, ModuleSet::__hash_code,
                                                              ModuleSet::__node_ptr, std::size_t);
template AddressSet::iterator AddressSet::_M_insert_unique_node(std::size_t,
                                                                AddressSet::__hash_code,
                                                                AddressSet::__node_ptr,
                                                                std::size_t);
using NameIndexBase = std::__detail::_Map_base<
    std::string_view, std::pair<const std::string_view, unsigned long>,
    std::allocator<std::pair<const std::string_view, unsigned long>>, std::__detail::_Select1st,
    std::equal_to<std::string_view>, std::hash<std::string_view>,
    std::__detail::_Mod_range_hashing, std::__detail::_Default_ranged_hash,
    std::__detail::_Prime_rehash_policy, std::__detail::_Hashtable_traits<true, false, true>,
    true>;
template unsigned long& NameIndexBase::operator[](std::string_view&&);

// Vectors.
template void std::vector<void*>::_M_fill_insert(std::vector<void*>::iterator, std::size_t,
                                                 void* const&);
template void std::vector<std::vector<void*>>::_M_default_append(std::size_t);
template void std::vector<unsigned long>::_M_default_append(std::size_t);

#if defined(_GLIBCXX_RELEASE) && _GLIBCXX_RELEASE >= 14
template void std::vector<std::string>::_M_realloc_append<std::string>(std::string&&);
template void std::vector<unsigned long>::_M_realloc_append<const unsigned long&>(
    const unsigned long&);
template void std::vector<unsigned long>::_M_realloc_append<unsigned long>(unsigned long&&);
#else
// libstdc++ before 14 has no `_M_realloc_append` (it grows through `_M_realloc_insert`). Its
// contract: append one element to a vector, growing the storage. push_back does exactly that
// (and only grows when the vector is full, which is when libstdc++ 14 calls this member).
// A member function takes `this` as its first argument, as these functions take `self`.
#define PACTUM_STD_EXPORT __attribute__((weak, visibility("default"), used))
PACTUM_STD_EXPORT void VectorStringReallocAppend(std::vector<std::string>* self,
                                                 std::string&& value) __asm__(
    "_ZNSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EE17_M_realloc_"
    "appendIJS5_EEEvDpOT_");
void VectorStringReallocAppend(std::vector<std::string>* self, std::string&& value) {
  self->push_back(std::move(value));
}
PACTUM_STD_EXPORT void VectorULongReallocAppendCopy(std::vector<unsigned long>* self,
                                                    const unsigned long& value) __asm__(
    "_ZNSt6vectorImSaImEE17_M_realloc_appendIJRKmEEEvDpOT_");
void VectorULongReallocAppendCopy(std::vector<unsigned long>* self, const unsigned long& value) {
  self->push_back(value);
}
PACTUM_STD_EXPORT void VectorULongReallocAppendMove(std::vector<unsigned long>* self,
                                                    unsigned long&& value) __asm__(
    "_ZNSt6vectorImSaImEE17_M_realloc_appendIJmEEEvDpOT_");
void VectorULongReallocAppendMove(std::vector<unsigned long>* self, unsigned long&& value) {
  self->push_back(value);
}
#endif
