/*
 * C++ interop: a program compiled against the wheel's inline C++ headers that
 *  (1) gets Array / Map / String / Function objects from library globals and
 *      reads them through the inline C++ API (indexing, iteration, Map
 *      at/find/count on small and dense maps, String comparisons, calls), and
 *  (2) builds objects itself (Map<String, int64_t> with many entries, Array,
 *      String, Function::FromTyped) and reads them back through the library.
 *
 * The inline C++ code reimplements the object layouts, Map hashing/probing
 * and refcounting, so this checks that library-made objects are laid out as
 * the headers expect and that header-made objects are understood by the
 * library.
 *
 * Symbols this program imports from libtvm_ffi.so (nm -D --undefined-only,
 * checked against the official library; run_c_suite.sh re-checks that no
 * non-C symbol of libtvm_ffi.so is imported):
 *   TVMFFIBacktrace, TVMFFIErrorMoveFromRaised, TVMFFIErrorSetRaised, TVMFFIObjectDecRef,
 *   TVMFFIFunctionCall, TVMFFIFunctionGetGlobal, TVMFFIGetTypeAttrColumn,
 *   TVMFFIGetTypeInfo
 * Only C API functions: the C++ classes used here (Error, Any, Array, Map,
 * String, Function) are header-only, and Error's vtable/typeinfo are
 * emitted as weak definitions inside this program.
 */
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/dict.h>
#include <tvm/ffi/container/list.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

namespace ffi = tvm::ffi;
using ffi::Any;
using ffi::Array;
using ffi::Function;
using ffi::Map;
using ffi::String;

static int g_unexpected = 0;

static std::string describe(const Any& v) {
  char buf[64];
  switch (v.type_index()) {
    case ffi::TypeIndex::kTVMFFINone:
      return "None";
    case ffi::TypeIndex::kTVMFFIInt:
      std::snprintf(buf, sizeof(buf), "int:%" PRId64, v.cast<int64_t>());
      return buf;
    case ffi::TypeIndex::kTVMFFIBool:
      return v.cast<bool>() ? "bool:1" : "bool:0";
    case ffi::TypeIndex::kTVMFFIFloat:
      std::snprintf(buf, sizeof(buf), "float:%.17g", v.cast<double>());
      return buf;
    case ffi::TypeIndex::kTVMFFISmallStr:
    case ffi::TypeIndex::kTVMFFIStr:
      return "str:\"" + std::string(v.cast<String>()) + "\"";
    default:
      std::snprintf(buf, sizeof(buf), "obj(%d)", v.type_index());
      return buf;
  }
}

/* -------------------------------------------- objects made by the library */

static void test_library_array() {
  Function make_array = Function::GetGlobalRequired("ffi.Array");
  Array<Any> arr = make_array(1, 2, "three", 4.5, true).cast<Array<Any>>();
  std::printf("lib array: size=%zu use_count=%d\n", static_cast<size_t>(arr.size()),
              static_cast<int>(arr.use_count()));
  for (size_t i = 0; i < arr.size(); ++i) {
    std::printf("lib array[%zu]: %s\n", i, describe(arr[i]).c_str());
  }
  std::string joined;
  for (const Any& v : arr) joined += describe(v) + ";";
  std::printf("lib array iterate: %s\n", joined.c_str());
  std::printf("lib array front=%s back=%s\n", describe(arr.front()).c_str(),
              describe(arr.back()).c_str());

  Array<int64_t> ints = make_array(10, 20, 30).cast<Array<int64_t>>();
  int64_t sum = 0;
  for (int64_t v : ints) sum += v;
  std::printf("lib Array<int64_t>: size=%zu sum=%" PRId64 " [1]=%" PRId64 "\n",
              static_cast<size_t>(ints.size()), sum, ints[1]);

  /* typed conversion failure */
  try {
    Array<int64_t> bad = make_array(1, "x").cast<Array<int64_t>>();
    std::printf("lib Array<int64_t> from mixed: no error size=%zu\n",
                static_cast<size_t>(bad.size()));
  } catch (const ffi::Error& e) {
    std::printf("lib Array<int64_t> from mixed: %s\n", e.kind().c_str());
  }

  /* copy-on-write of a library-made array from C++ */
  Array<Any> copy = arr;
  copy.Set(0, 100);
  copy.push_back(String("appended by C++"));
  std::printf("cow: original[0]=%s copy[0]=%s original.size=%zu copy.size=%zu\n",
              describe(arr[0]).c_str(), describe(copy[0]).c_str(),
              static_cast<size_t>(arr.size()), static_cast<size_t>(copy.size()));
  Function array_size = Function::GetGlobalRequired("ffi.ArraySize");
  Function array_get = Function::GetGlobalRequired("ffi.ArrayGetItem");
  std::printf("cow: ffi.ArraySize(copy)=%" PRId64 " ffi.ArrayGetItem(copy, 5)=%s\n",
              array_size(copy).cast<int64_t>(), describe(array_get(copy, 5)).c_str());
}

template <typename K>
static std::string key_str(const K& k);
template <>
std::string key_str<String>(const String& k) {
  return std::string(k);
}
template <>
std::string key_str<int64_t>(const int64_t& k) {
  return std::to_string(k);
}

static void test_library_maps() {
  Function make_map = Function::GetGlobalRequired("ffi.Map");
  /* small map */
  Map<String, int64_t> small =
      make_map("alpha", 1, "beta", 2, "a key that is long", 3).cast<Map<String, int64_t>>();
  std::printf("lib small map: size=%zu at(alpha)=%" PRId64 " at(long)=%" PRId64
              " count(beta)=%zu count(gamma)=%zu find(gamma)==end=%d\n",
              static_cast<size_t>(small.size()), small.at("alpha"),
              small.at("a key that is long"), static_cast<size_t>(small.count("beta")),
              static_cast<size_t>(small.count("gamma")), small.find("gamma") == small.end());
  auto it = small.find("beta");
  std::printf("lib small map: find(beta) -> %s=%" PRId64 "\n", std::string((*it).first).c_str(),
              (*it).second);
  std::string order;
  for (auto kv : small) order += std::string(kv.first) + "=" + std::to_string(kv.second) + " ";
  std::printf("lib small map iterate: %s\n", order.c_str());
  try {
    small.at("gamma");
    std::printf("lib small map at(gamma): no error\n");
  } catch (const ffi::Error& e) {
    std::printf("lib small map at(gamma): %s: %s\n", e.kind().c_str(), e.message().c_str());
  }

  /* dense map, string keys */
  std::vector<Any> args;
  for (int i = 0; i < 150; ++i) {
    std::string k = (i % 3 == 0) ? "k" + std::to_string(i) : "a-longer-key-" + std::to_string(i);
    args.emplace_back(String(k));
    args.emplace_back(static_cast<int64_t>(i * 10));
  }
  std::vector<ffi::AnyView> views(args.begin(), args.end());
  Any out;
  make_map.CallPacked(ffi::PackedArgs(views.data(), static_cast<int32_t>(views.size())), &out);
  Map<String, int64_t> dense = out.cast<Map<String, int64_t>>();
  bool all = true;
  for (int i = 0; i < 150; ++i) {
    std::string k = (i % 3 == 0) ? "k" + std::to_string(i) : "a-longer-key-" + std::to_string(i);
    if (dense.count(String(k)) != 1 || dense.at(String(k)) != i * 10) all = false;
    auto f = dense.find(String(k));
    if (f == dense.end() || (*f).second != i * 10) all = false;
  }
  std::printf("lib dense str map: size=%zu all_lookups_ok=%d count(missing)=%zu\n",
              static_cast<size_t>(dense.size()), all,
              static_cast<size_t>(dense.count("missing")));
  int64_t vsum = 0;
  size_t visited = 0;
  std::string first_keys;
  for (auto kv : dense) {
    vsum += kv.second;
    if (visited < 8) first_keys += key_str<String>(kv.first) + " ";
    visited++;
  }
  std::printf("lib dense str map iterate: visited=%zu value_sum=%" PRId64 " first=%s\n", visited,
              vsum, first_keys.c_str());

  /* dense map, int keys */
  args.clear();
  for (int i = 0; i < 130; ++i) {
    args.emplace_back(static_cast<int64_t>(i * 13 - 500));
    args.emplace_back(static_cast<int64_t>(i));
  }
  views.assign(args.begin(), args.end());
  make_map.CallPacked(ffi::PackedArgs(views.data(), static_cast<int32_t>(views.size())), &out);
  Map<int64_t, int64_t> dense_int = out.cast<Map<int64_t, int64_t>>();
  all = true;
  for (int i = 0; i < 130; ++i) {
    if (dense_int.at(i * 13 - 500) != i || dense_int.count(i * 13 - 500) != 1) all = false;
  }
  visited = 0;
  first_keys.clear();
  for (auto kv : dense_int) {
    if (visited < 8) first_keys += key_str<int64_t>(kv.first) + " ";
    visited++;
  }
  std::printf("lib dense int map: size=%zu all_lookups_ok=%d count(1)=%zu visited=%zu first=%s\n",
              static_cast<size_t>(dense_int.size()), all,
              static_cast<size_t>(dense_int.count(1)), visited, first_keys.c_str());
}

static void test_library_strings_and_functions() {
  Function make_string = Function::GetGlobalRequired("ffi.String");
  String small = make_string("hello").cast<String>();
  String big = make_string("hello, a much longer world").cast<String>();
  std::printf("lib strings: small=\"%s\" size=%zu big=\"%s\" size=%zu\n", small.c_str(),
              small.size(), big.c_str(), big.size());
  std::printf("lib strings: small==hello:%d small<world:%d big>small:%d compare=%d "
              "big==std::string:%d\n",
              small == "hello", small < String("world"), big > small,
              small.compare("hellp") < 0 ? -1 : 1,
              big == std::string("hello, a much longer world"));
  /* a String object passed through round-trips as the same object */
  String mine("a C++ made string that is long");
  String back = make_string(mine).cast<String>();
  std::printf("lib strings: roundtrip same_content=%d same_storage=%d\n", back == mine,
              back.data() == mine.data());

  Function list_names = Function::GetGlobalRequired("ffi.FunctionListGlobalNamesFunctor");
  Function names = list_names().cast<Function>();
  int64_t n = names(-1).cast<int64_t>();
  bool has_map = false;
  for (int64_t i = 0; i < n; ++i) {
    if (names(i).cast<String>() == "ffi.Map") has_map = true;
  }
  std::printf("lib function: ffi.FunctionListGlobalNamesFunctor lists ffi.Map=%d\n", has_map);

  std::optional<Function> missing = Function::GetGlobal("pactum.test.no_such_global");
  std::printf("lib function: GetGlobal(missing) has_value=%d\n", missing.has_value());

  /* errors from library functions become C++ exceptions */
  Function array_get = Function::GetGlobalRequired("ffi.ArrayGetItem");
  Function make_array = Function::GetGlobalRequired("ffi.Array");
  Array<Any> arr = make_array(1).cast<Array<Any>>();
  try {
    array_get(arr, 3);
    std::printf("lib function error: none\n");
  } catch (const ffi::Error& e) {
    std::printf("lib function error: kind=%s message=%s backtrace_nonempty=%d\n",
                e.kind().c_str(), e.message().c_str(), !e.backtrace().empty());
  }
}

/* ------------------- library-made containers mutated by inline C++ code */

static void test_mutating_library_containers() {
  Function make_array = Function::GetGlobalRequired("ffi.Array");
  Function array_size = Function::GetGlobalRequired("ffi.ArraySize");
  Function array_get = Function::GetGlobalRequired("ffi.ArrayGetItem");
  /* a uniquely owned library array is mutated in place (or regrown) by C++ */
  Array<Any> uniq = make_array(1, 2).cast<Array<Any>>();
  uniq.Set(0, 9);
  for (int i = 0; i < 20; ++i) uniq.push_back(i);
  uniq.pop_back();
  std::printf("mutated lib array: size=%zu ffi.ArraySize=%" PRId64 " ffi.ArrayGetItem(0)=%s "
              "ffi.ArrayGetItem(20)=%s\n",
              static_cast<size_t>(uniq.size()), array_size(uniq).cast<int64_t>(),
              describe(array_get(uniq, 0)).c_str(), describe(array_get(uniq, 20)).c_str());

  /* library maps mutated by C++: small -> dense growth, inserts and erases */
  Function make_map = Function::GetGlobalRequired("ffi.Map");
  Function map_size = Function::GetGlobalRequired("ffi.MapSize");
  Function map_get = Function::GetGlobalRequired("ffi.MapGetItem");
  Function map_count = Function::GetGlobalRequired("ffi.MapCount");
  Map<String, int64_t> m = make_map("a", 1, "b", 2, "c", 3).cast<Map<String, int64_t>>();
  for (int i = 0; i < 60; ++i) m.Set(String("grown-key-" + std::to_string(i)), i);
  m.Set("a", 100);
  m.erase("b");
  bool all = true;
  for (int i = 0; i < 60; ++i) {
    if (map_get(m, String("grown-key-" + std::to_string(i))).cast<int64_t>() != i) all = false;
  }
  std::printf("mutated lib map: size=%zu ffi.MapSize=%" PRId64 " a=%s count(b)=%" PRId64
              " grown_lookups_ok=%d\n",
              static_cast<size_t>(m.size()), map_size(m).cast<int64_t>(),
              describe(map_get(m, "a")).c_str(), map_count(m, "b").cast<int64_t>(), all);
  std::string order;
  int shown = 0;
  for (auto kv : m) {
    if (shown++ < 6) order += std::string(kv.first) + " ";
  }
  std::printf("mutated lib map iterate first: %s\n", order.c_str());

  /* List and Dict are mutable and shared */
  Function make_list = Function::GetGlobalRequired("ffi.List");
  Function list_size = Function::GetGlobalRequired("ffi.ListSize");
  Function list_get = Function::GetGlobalRequired("ffi.ListGetItem");
  ffi::List<Any> list = make_list(1, 2).cast<ffi::List<Any>>();
  ffi::List<Any> alias = list;
  for (int i = 0; i < 30; ++i) list.push_back(String("item-" + std::to_string(i)));
  list.Set(0, 42);
  std::printf("mutated lib list: ffi.ListSize(alias)=%" PRId64 " ffi.ListGetItem(alias, 0)=%s "
              "ffi.ListGetItem(alias, 31)=%s\n",
              list_size(alias).cast<int64_t>(), describe(list_get(alias, 0)).c_str(),
              describe(list_get(alias, 31)).c_str());

  Function make_dict = Function::GetGlobalRequired("ffi.Dict");
  Function dict_size = Function::GetGlobalRequired("ffi.DictSize");
  Function dict_get = Function::GetGlobalRequired("ffi.DictGetItem");
  ffi::Dict<String, int64_t> d = make_dict("x", 1).cast<ffi::Dict<String, int64_t>>();
  ffi::Dict<String, int64_t> dalias = d;
  for (int i = 0; i < 40; ++i) d.Set(String("dk" + std::to_string(i)), i * 2);
  std::printf("mutated lib dict: ffi.DictSize(alias)=%" PRId64 " dk39=%s x=%s\n",
              dict_size(dalias).cast<int64_t>(), describe(dict_get(dalias, "dk39")).c_str(),
              describe(dict_get(dalias, "x")).c_str());
}

/* -------------------------------------------------- objects made in C++ */

static void test_cpp_made_objects() {
  Function map_size = Function::GetGlobalRequired("ffi.MapSize");
  Function map_get = Function::GetGlobalRequired("ffi.MapGetItem");
  Function map_count = Function::GetGlobalRequired("ffi.MapCount");
  Function array_size = Function::GetGlobalRequired("ffi.ArraySize");
  Function array_get = Function::GetGlobalRequired("ffi.ArrayGetItem");
  Function array_contains = Function::GetGlobalRequired("ffi.ArrayContains");

  /* small Map made in C++ */
  Map<String, int64_t> small;
  small.Set("one", 1);
  small.Set("two", 2);
  std::printf("cpp small map: ffi.MapSize=%" PRId64 " ffi.MapGetItem(two)=%s ffi.MapCount(three)=%"
              PRId64 "\n",
              map_size(small).cast<int64_t>(), describe(map_get(small, "two")).c_str(),
              map_count(small, "three").cast<int64_t>());

  /* large Map<String, int64_t> made in C++ */
  Map<String, int> big;
  for (int i = 0; i < 300; ++i) {
    big.Set(String((i % 2 ? "key-" : "a-rather-long-key-") + std::to_string(i)), i * 3);
  }
  bool all = true;
  for (int i = 0; i < 300; ++i) {
    String k((i % 2 ? "key-" : "a-rather-long-key-") + std::to_string(i));
    if (map_get(big, k).cast<int64_t>() != i * 3) all = false;
    if (map_count(big, k).cast<int64_t>() != 1) all = false;
  }
  std::printf("cpp big str map: size=%zu ffi.MapSize=%" PRId64
              " library_lookups_ok=%d ffi.MapCount(missing)=%" PRId64 "\n",
              static_cast<size_t>(big.size()), map_size(big).cast<int64_t>(), all,
              map_count(big, "missing").cast<int64_t>());
  /* raw-string keys (passed as const char*) find String keys */
  std::printf("cpp big str map: ffi.MapGetItem(\"key-7\" rawstr)=%s\n",
              describe(map_get(big, "key-7")).c_str());
  try {
    map_get(big, "missing");
    std::printf("cpp big str map: missing key no error\n");
  } catch (const ffi::Error& e) {
    std::printf("cpp big str map: missing key %s\n", e.kind().c_str());
  }

  /* large int-keyed map made in C++ */
  Map<int64_t, String> ibig;
  for (int64_t i = 0; i < 200; ++i) ibig.Set(i * i - 1000, String("v" + std::to_string(i)));
  all = true;
  for (int64_t i = 0; i < 200; ++i) {
    if (map_get(ibig, i * i - 1000).cast<String>() != String("v" + std::to_string(i))) all = false;
  }
  std::printf("cpp big int map: ffi.MapSize=%" PRId64 " library_lookups_ok=%d\n",
              map_size(ibig).cast<int64_t>(), all);

  /* erase in C++, observe through the library */
  Map<String, int> shrink = big;
  for (int i = 0; i < 300; i += 2) {
    shrink.erase(String("a-rather-long-key-" + std::to_string(i)));
  }
  std::printf("cpp map after erase: ffi.MapSize=%" PRId64 " original ffi.MapSize=%" PRId64
              " ffi.MapCount(key-1)=%" PRId64 " ffi.MapCount(a-rather-long-key-0)=%" PRId64 "\n",
              map_size(shrink).cast<int64_t>(), map_size(big).cast<int64_t>(),
              map_count(shrink, "key-1").cast<int64_t>(),
              map_count(shrink, "a-rather-long-key-0").cast<int64_t>());

  /* Array made in C++ */
  Array<Any> arr;
  arr.push_back(7);
  arr.push_back(String("seven"));
  arr.push_back(String("a long string element made by C++"));
  arr.push_back(big);
  std::printf("cpp array: ffi.ArraySize=%" PRId64 " [0]=%s [1]=%s [2]=%s [3].type=%d\n",
              array_size(arr).cast<int64_t>(), describe(array_get(arr, 0)).c_str(),
              describe(array_get(arr, 1)).c_str(), describe(array_get(arr, 2)).c_str(),
              array_get(arr, 3).type_index());
  std::printf("cpp array: ffi.ArrayContains(seven)=%d ffi.ArrayContains(8)=%d\n",
              array_contains(arr, "seven").cast<bool>(), array_contains(arr, 8).cast<bool>());
  Array<int64_t> nums;
  for (int64_t i = 0; i < 1000; ++i) nums.push_back(i);
  std::printf("cpp Array<int64_t>(1000): ffi.ArraySize=%" PRId64 " ffi.ArrayGetItem(999)=%s\n",
              array_size(nums).cast<int64_t>(), describe(array_get(nums, 999)).c_str());

  /* typed Function made in C++, called through the library's C API */
  Function add = Function::FromTyped([](int64_t a, int64_t b) { return a + b; });
  TVMFFIAny args[2];
  args[0].type_index = kTVMFFIInt;
  args[0].zero_padding = 0;
  args[0].v_int64 = 40;
  args[1].type_index = kTVMFFIInt;
  args[1].zero_padding = 0;
  args[1].v_int64 = 2;
  TVMFFIAny result;
  result.type_index = kTVMFFINone;
  result.zero_padding = 0;
  result.v_int64 = 0;
  int rc = TVMFFIFunctionCall(const_cast<ffi::FunctionObj*>(add.get()), args, 2, &result);
  std::printf("cpp typed function via TVMFFIFunctionCall: rc=%d type=%d value=%" PRId64 "\n", rc,
              result.type_index, result.v_int64);
  /* wrong argument type: the typed wrapper raises a TypeError through the C ABI */
  args[1].type_index = kTVMFFIRawStr;
  args[1].v_c_str = "x";
  result.type_index = kTVMFFINone;
  rc = TVMFFIFunctionCall(const_cast<ffi::FunctionObj*>(add.get()), args, 2, &result);
  void* err = nullptr;
  TVMFFIErrorMoveFromRaised(&err);
  std::printf("cpp typed function bad arg: rc=%d error_set=%d", rc, err != nullptr);
  if (err) {
    const TVMFFIErrorCell* c = TVMFFIErrorGetCellPtr(err);
    std::printf(" kind=%.*s", static_cast<int>(c->kind.size), c->kind.data);
    TVMFFIObjectDecRef(err);
  }
  std::printf("\n");

  /* a C++ function stored in a library container and called back from C++ */
  Function make_array = Function::GetGlobalRequired("ffi.Array");
  Array<Any> holder = make_array(add, 1).cast<Array<Any>>();
  Function back = holder[0].cast<Function>();
  std::printf("cpp function through library array: same=%d call=%" PRId64 "\n",
              back.get() == add.get(), back(5, 6).cast<int64_t>());
  /* a C++ function used as a map value */
  Function make_map = Function::GetGlobalRequired("ffi.Map");
  Map<String, Function> fmap = make_map("add", add).cast<Map<String, Function>>();
  std::printf("cpp function as map value: call=%" PRId64 "\n", fmap.at("add")(100, 23).cast<int64_t>());
}

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    test_library_array();
    test_library_maps();
    test_library_strings_and_functions();
    test_mutating_library_containers();
    test_cpp_made_objects();
  } catch (const ffi::Error& e) {
    std::printf("UNEXPECTED exception: %s: %s\n", e.kind().c_str(), e.message().c_str());
    g_unexpected++;
  }
  std::printf("cpp_interop: done unexpected=%d\n", g_unexpected);
  return g_unexpected ? 1 : 0;
}
