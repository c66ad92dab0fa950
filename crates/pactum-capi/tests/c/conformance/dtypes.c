/*
 * dtypes: TVMFFIDataTypeFromString / TVMFFIDataTypeToString round trips,
 * aliases, lanes, scalable vectors and malformed strings.
 */
#include "common.h"

/* to_string; prints `"text"(type_index)` or the error */
static void print_to_string(DLDataType dt) {
  TVMFFIAny out;
  memset(&out, 0xEE, sizeof(out));
  int rc = TVMFFIDataTypeToString(&dt, &out);
  if (rc != 0) {
    ErrInfo e = take_error();
    printf("to_string rc=%d ", rc);
    print_errinfo(&e, ERR_MSG);
    return;
  }
  const char* d;
  size_t n;
  if (any_get_bytes(&out, &d, &n)) {
    printf("to_string=\"");
    print_escaped(d, n);
    printf("\"(%d)", out.type_index);
  } else {
    printf("to_string=<type %d>", out.type_index);
  }
  any_release(&out);
}

static void parse(const char* s) {
  TVMFFIByteArray in = ba(s);
  DLDataType dt;
  memset(&dt, 0x5A, sizeof(dt));
  int rc = TVMFFIDataTypeFromString(&in, &dt);
  printf("from_string \"%s\": rc=%d", s, rc);
  if (rc != 0) {
    ErrInfo e = take_error();
    printf(" ");
    print_errinfo(&e, ERR_MSG);
    printf("\n");
    return;
  }
  printf(" code=%u bits=%u lanes=%u ", dt.code, dt.bits, dt.lanes);
  print_to_string(dt);
  /* the canonical string parses back to the same dtype */
  TVMFFIAny canon = any_none();
  if (TVMFFIDataTypeToString(&dt, &canon) == 0) {
    const char* d;
    size_t n;
    if (any_get_bytes(&canon, &d, &n)) {
      TVMFFIByteArray back = ban(d, n);
      DLDataType dt2;
      memset(&dt2, 0, sizeof(dt2));
      int rc2 = TVMFFIDataTypeFromString(&back, &dt2);
      printf(" roundtrip=%s", rc2 == 0 && dt2.code == dt.code && dt2.bits == dt.bits &&
                                      dt2.lanes == dt.lanes
                                  ? "same"
                                  : "DIFFERENT");
      if (rc2 != 0) (void)take_error();
    }
    any_release(&canon);
  } else {
    (void)take_error();
  }
  printf("\n");
}

static void parse_bytes(const char* label, const char* data, size_t n) {
  TVMFFIByteArray in = ban(data, n);
  DLDataType dt;
  memset(&dt, 0, sizeof(dt));
  int rc = TVMFFIDataTypeFromString(&in, &dt);
  printf("from_string %s: rc=%d", label, rc);
  if (rc == 0) {
    printf(" code=%u bits=%u lanes=%u", dt.code, dt.bits, dt.lanes);
  } else {
    ErrInfo e = take_error();
    printf(" ");
    print_errinfo(&e, ERR_KIND);
  }
  printf("\n");
}

static void format(uint8_t code, uint8_t bits, uint16_t lanes) {
  DLDataType dt;
  dt.code = code;
  dt.bits = bits;
  dt.lanes = lanes;
  printf("to_string {%u,%u,%u}: ", code, bits, lanes);
  print_to_string(dt);
  printf("\n");
}

int main(void) {
  static const char* good[] = {
      "int8", "int16", "int32", "int64", "int1", "int4", "uint1", "uint8", "uint16", "uint32",
      "uint64", "float16", "float32", "float64", "bfloat16", "float32x4", "int8x16", "uint8x2",
      "float16x8", "bool", "boolx4", "handle", "int", "uint", "float", "bfloat", "void", "",
      "float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float8_e4m3b11fnuz",
      "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
      "float4_e2m1fn", "float4_e2m1fnx2", "float4_e2m1fn_x2", "float8_e4m3fnx4",
      /* aliases */
      "i8", "i32", "i64", "u8", "u16", "f16", "f32", "f64", "bf16", "i32x4", "f32x8",
      "fp8_e4m3fn", "fp8_e5m2", "f8_e4m3fn", "fp6_e2m3fn", "f6_e3m2fn", "fp4_e2m1fn",
      "f4_e2m1fn", "int32xvscalex4", "float32xvscalex2", "handle64", "int32x1", "int32x2048",
      "int255", "complex64",
  };
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); ++i) parse(good[i]);

  static const char* bad[] = {
      "foo", "int32x", "int32x0", "int32y", "float8_e9m9", "float8", "float6_e1m1",
      "float4_e3m0", "int256", "int32x65536", "int32x99999999999", "Int32", " int32",
      "int32 ", "float8_e4m3fn_x2", "xint", "bf", "fp8_", "f4_e2m1",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) parse(bad[i]);

  /* the input is a byte array, not a C string */
  parse_bytes("int32 with trailing garbage excluded by size", "int32GARBAGE", 5);
  parse_bytes("embedded NUL \"int\\0\"", "int\0", 4);

  /* formatting of hand-made dtypes */
  format(kDLInt, 32, 1);
  format(kDLUInt, 1, 1);
  format(kDLFloat, 16, 4);
  format(kDLBfloat, 16, 1);
  format(kDLBool, 8, 1);
  format(kDLBool, 1, 1);
  format(kDLBool, 8, 4);
  format(kDLOpaqueHandle, 64, 1);
  format(kDLOpaqueHandle, 0, 0);
  format(kDLOpaqueHandle, 32, 4);
  format(kDLFloat8_e4m3fn, 8, 1);
  format(kDLFloat8_e5m2, 8, 2);
  format(kDLFloat6_e2m3fn, 6, 1);
  format(kDLFloat4_e2m1fn, 4, 2);
  format(kDLFloat, 32, 0);
  format(kDLFloat, 32, (uint16_t)-4);
  format(kDLComplex, 64, 1);
  format(kDLFloat, 32, 65535 - 1);
  format(20, 8, 1);
  format(100, 8, 1);
  return finish("dtypes");
}
