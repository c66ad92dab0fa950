/*
 * JSON graphs of reflected objects: types this program registers through the wheel's inline
 * C++ reflection (ObjectDef: fields, defaults, a creator; TypeAttrDef: the
 * __data_to_json__/__data_from_json__ hooks), saved with ffi.ToJSONGraphString and loaded
 * with ffi.FromJSONGraphString. Prints the graph texts, the loaded fields and the errors, so
 * the two libraries' outputs can be compared line for line.
 */
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <cstdio>
#include <string>

namespace ffi = tvm::ffi;
namespace refl = tvm::ffi::reflection;

class PointObj : public ffi::Object {
 public:
  int64_t x = 0;
  double y = 0;
  bool flag = false;
  DLDataType dtype{kDLFloat, 32, 1};
  ffi::String name;
  ffi::Array<ffi::Any> items;
  ffi::Optional<ffi::ObjectRef> next;
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("pactum.test.JsonPoint", PointObj, ffi::Object);
};

class TagObj : public ffi::Object {
 public:
  int64_t code = 0;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("pactum.test.JsonTag", TagObj, ffi::Object);
};

static int g_unexpected = 0;

static void check(bool cond, const char* what) {
  if (!cond) {
    std::printf("UNEXPECTED: %s\n", what);
    g_unexpected++;
  }
}

static ffi::ObjectRef make_tag(int64_t code) {
  ffi::ObjectPtr<TagObj> tag = ffi::make_object<TagObj>();
  tag->code = code;
  return ffi::ObjectRef(tag);
}

static void print_point(const char* label, const ffi::Any& value) {
  const PointObj* p = value.as<PointObj>();
  if (p == nullptr) {
    std::printf("%s: not a point (%s)\n", label, value.GetTypeKey().c_str());
    return;
  }
  std::printf("%s: x=%lld y=%.17g flag=%d dtype=%d/%d/%d name=\"%s\" items=%zu next=%s\n",
              label, static_cast<long long>(p->x), p->y, static_cast<int>(p->flag),
              static_cast<int>(p->dtype.code), static_cast<int>(p->dtype.bits),
              static_cast<int>(p->dtype.lanes), p->name.c_str(), p->items.size(),
              p->next.has_value() ? p->next.value()->GetTypeKey().c_str() : "None");
}

static void print_error(const char* label, const ffi::Error& e) {
  std::printf("%s: %s: %s\n", label, e.kind().c_str(), e.message().c_str());
}

int main() {
  refl::ObjectDef<PointObj>()
      .def_rw("x", &PointObj::x)
      .def_rw("y", &PointObj::y, refl::default_value(2.5))
      .def_rw("flag", &PointObj::flag)
      .def_rw("dtype", &PointObj::dtype)
      .def_rw("name", &PointObj::name)
      .def_rw("items", &PointObj::items, refl::default_value(ffi::Array<ffi::Any>()))
      .def_rw("next", &PointObj::next, refl::default_value(ffi::Any(nullptr)));
  refl::ObjectDef<TagObj>().def_ro("code", &TagObj::code);
  refl::TypeAttrDef<TagObj>()
      .def("__data_to_json__",
           [](const TagObj* self) -> ffi::Any {
             return ffi::String("tag:" + std::to_string(self->code));
           })
      .def("__data_from_json__", [](ffi::String text) -> ffi::ObjectRef {
        return make_tag(std::stoll(std::string(text).substr(4)));
      });

  ffi::Function save = ffi::Function::GetGlobalRequired("ffi.ToJSONGraphString");
  ffi::Function load = ffi::Function::GetGlobalRequired("ffi.FromJSONGraphString");

  // A point holding another (shared twice) and a tag with its own JSON form.
  ffi::ObjectPtr<PointObj> inner = ffi::make_object<PointObj>();
  inner->x = 7;
  inner->y = 0.1;
  inner->flag = true;
  inner->dtype = DLDataType{kDLInt, 8, 4};
  inner->name = "inner";
  ffi::ObjectPtr<PointObj> outer = ffi::make_object<PointObj>();
  outer->x = -1;
  outer->name = "outer";
  outer->items = ffi::Array<ffi::Any>{ffi::ObjectRef(inner), make_tag(42), 3, "x"};
  outer->next = ffi::ObjectRef(inner);

  std::string text;
  try {
    text = save(ffi::ObjectRef(outer), nullptr).cast<ffi::String>();
    std::printf("saved: %s\n", text.c_str());
    ffi::Any loaded = load(ffi::String(text));
    print_point("loaded", loaded);
    const PointObj* p = loaded.as<PointObj>();
    if (p != nullptr && p->items.size() == 4 && p->next.has_value()) {
      print_point("loaded.next", ffi::Any(p->next.value()));
      check(p->items[0].as<ffi::Object>() == p->next.value().get(),
            "the shared point loads as one object");
      const TagObj* tag = p->items[1].as<TagObj>();
      std::printf("loaded.items[1]: %s code=%lld\n", p->items[1].GetTypeKey().c_str(),
                  tag != nullptr ? static_cast<long long>(tag->code) : -1LL);
      std::printf("resaved equal: %d\n",
                  save(loaded, nullptr).cast<ffi::String>() == ffi::String(text));
    } else {
      check(false, "the loaded point has its items and next");
    }
  } catch (const ffi::Error& e) {
    print_error("round trip", e);
    g_unexpected++;
  }

  // Defaults fill absent fields; a field without one is required.
  const char* documents[] = {
      R"({"root_index":1,"nodes":[{"type":"ffi.String","data":"d"},)"
      R"({"type":"pactum.test.JsonPoint","data":{"x":3,"flag":1,"dtype":"bfloat16","name":0}}]})",
      R"({"root_index":0,"nodes":[{"type":"pactum.test.JsonPoint","data":{"x":3}}]})",
      R"({"root_index":0,"nodes":[{"type":"pactum.test.JsonPoint","data":{"x":"s"}}]})",
      R"({"root_index":1,"nodes":[{"type":"int","data":5},)"
      R"({"type":"pactum.test.JsonPoint","data":{"x":3,"flag":0,"dtype":"int8","name":0}}]})",
      R"({"root_index":0,"nodes":[{"type":"pactum.test.JsonPoint","data":{"x":3,"flag":0,)"
      R"("dtype":"float32","name":9}}]})",
      R"({"root_index":0,"nodes":[{"type":"pactum.test.JsonPoint","data":[]}]})",
      R"({"root_index":0,"nodes":[{"type":"pactum.test.JsonTag","data":"tag:12"}]})",
  };
  for (const char* document : documents) {
    try {
      ffi::Any loaded = load(ffi::String(document));
      if (const TagObj* tag = loaded.as<TagObj>()) {
        std::printf("tag: code=%lld\n", static_cast<long long>(tag->code));
      } else {
        print_point("document", loaded);
      }
    } catch (const ffi::Error& e) {
      print_error("document", e);
    }
  }

  // Objects whose type has no creator cannot be saved field by field.
  try {
    save(save, nullptr);
    check(false, "saving a Function fails");
  } catch (const ffi::Error& e) {
    print_error("save function", e);
  }

  std::printf("unexpected: %d\n", g_unexpected);
  return g_unexpected == 0 ? 0 : 1;
}
