// Calls json::Stringify as a client built against apache-tvm-ffi 0.1.12 calls it (the indent
// as an Optional<int> by value, that release's Optional<int>: a class holding a
// std::optional<int> with a user-provided copy constructor) and compares the text with the
// current Stringify's (indent by const reference). Run on pactum's library only: the official
// 0.1.15.post2 library no longer exports the old function.
//
// The 0.1.12 Optional<int> cannot be declared beside the current headers' one, so this file
// declares a class of the same shape and gives the call the old mangled name (asm label): the
// compiler then passes the argument exactly as a 0.1.12 client does.

#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/string.h>

#include <cstdio>
#include <optional>
#include <string>

// A named namespace: a type of an anonymous one would make the declaration below local.
namespace client_of_0112 {

// tvm::ffi::Optional<int> of 0.1.12 (optional.h there): one std::optional<int> member, copy
// constructor written out (so the type is not trivially copyable and goes by reference).
class OptionalIntOf0112 {
 public:
  OptionalIntOf0112(std::optional<int> value) : data_(value) {}  // NOLINT(runtime/explicit)
  OptionalIntOf0112(const OptionalIntOf0112& other) : data_(other.data_) {}

 private:
  std::optional<int> data_;
};
static_assert(sizeof(OptionalIntOf0112) == 8, "the 0.1.12 layout");

}  // namespace client_of_0112

using client_of_0112::OptionalIntOf0112;

tvm::ffi::String StringifyOf0112(const tvm::ffi::Any& value, OptionalIntOf0112 indent) __asm__(
    "_ZN3tvm3ffi4json9StringifyERKNS0_3AnyENS0_8OptionalIivEE");

int main() {
  using tvm::ffi::Any;
  using tvm::ffi::Array;
  using tvm::ffi::Map;
  using tvm::ffi::String;
  Map<String, Any> value{{"name", String("tile")}, {"sizes", Array<Any>{16, 8, 4}}};
  int failures = 0;
  for (std::optional<int> indent : {std::optional<int>(), std::optional<int>(2),
                                    std::optional<int>(0)}) {
    tvm::ffi::Optional<int> current;
    if (indent) current = *indent;
    std::string expected(tvm::ffi::json::Stringify(value, current));
    std::string got(StringifyOf0112(value, OptionalIntOf0112(indent)));
    std::string label = indent ? std::to_string(*indent) : "none";
    if (got != expected) {
      std::printf("indent %s: got %s, expected %s\n", label.c_str(), got.c_str(),
                  expected.c_str());
      ++failures;
    }
  }
  // An indent must change the text, or the comparison above could not see a lost indent.
  std::string compact(tvm::ffi::json::Stringify(value, tvm::ffi::Optional<int>()));
  std::string indented(StringifyOf0112(value, OptionalIntOf0112(2)));
  if (compact == indented || indented.find('\n') == std::string::npos) {
    std::printf("indent 2 did not indent: %s\n", indented.c_str());
    ++failures;
  }
  if (failures == 0) std::printf("legacy Stringify matches\n");
  return failures == 0 ? 0 : 1;
}
