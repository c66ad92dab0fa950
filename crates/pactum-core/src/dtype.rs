//! [`DataType`] (DLPack `DLDataType`) with the runtime's string form, and [`Device`].

use core::fmt;
use core::str::FromStr;

use pactum_sys::dlpack::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType};

use crate::error::{Error, ErrorKind, Result};

/// Element type of a tensor: a type code, bits per lane, and lanes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataType {
    /// Type code.
    pub code: DLDataTypeCode,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

/// Codes whose name carries the format and never a bit count (fp8/fp6/fp4 variants).
const NAMED_FLOAT_FORMATS: &[(DLDataTypeCode, u8, &str)] = &[
    (DLDataTypeCode::FLOAT8_E3M4, 8, "float8_e3m4"),
    (DLDataTypeCode::FLOAT8_E4M3, 8, "float8_e4m3"),
    (DLDataTypeCode::FLOAT8_E4M3B11FNUZ, 8, "float8_e4m3b11fnuz"),
    (DLDataTypeCode::FLOAT8_E4M3FN, 8, "float8_e4m3fn"),
    (DLDataTypeCode::FLOAT8_E4M3FNUZ, 8, "float8_e4m3fnuz"),
    (DLDataTypeCode::FLOAT8_E5M2, 8, "float8_e5m2"),
    (DLDataTypeCode::FLOAT8_E5M2FNUZ, 8, "float8_e5m2fnuz"),
    (DLDataTypeCode::FLOAT8_E8M0FNU, 8, "float8_e8m0fnu"),
    (DLDataTypeCode::FLOAT6_E2M3FN, 6, "float6_e2m3fn"),
    (DLDataTypeCode::FLOAT6_E3M2FN, 6, "float6_e3m2fn"),
    (DLDataTypeCode::FLOAT4_E2M1FN, 4, "float4_e2m1fn"),
];

impl DataType {
    /// A scalar of `code` and `bits`.
    pub const fn scalar(code: DLDataTypeCode, bits: u8) -> DataType {
        DataType {
            code,
            bits,
            lanes: 1,
        }
    }
    /// `bool` (DLPack kDLBool, 8 bits).
    pub const BOOL: DataType = DataType::scalar(DLDataTypeCode::BOOL, 8);
    /// `int8`.
    pub const I8: DataType = DataType::scalar(DLDataTypeCode::INT, 8);
    /// `int16`.
    pub const I16: DataType = DataType::scalar(DLDataTypeCode::INT, 16);
    /// `int32`.
    pub const I32: DataType = DataType::scalar(DLDataTypeCode::INT, 32);
    /// `int64`.
    pub const I64: DataType = DataType::scalar(DLDataTypeCode::INT, 64);
    /// `uint8`.
    pub const U8: DataType = DataType::scalar(DLDataTypeCode::UINT, 8);
    /// `uint16`.
    pub const U16: DataType = DataType::scalar(DLDataTypeCode::UINT, 16);
    /// `uint32`.
    pub const U32: DataType = DataType::scalar(DLDataTypeCode::UINT, 32);
    /// `uint64`.
    pub const U64: DataType = DataType::scalar(DLDataTypeCode::UINT, 64);
    /// `float16`.
    pub const F16: DataType = DataType::scalar(DLDataTypeCode::FLOAT, 16);
    /// `bfloat16`.
    pub const BF16: DataType = DataType::scalar(DLDataTypeCode::BFLOAT, 16);
    /// `float32`.
    pub const F32: DataType = DataType::scalar(DLDataTypeCode::FLOAT, 32);
    /// `float64`.
    pub const F64: DataType = DataType::scalar(DLDataTypeCode::FLOAT, 64);

    /// Bytes per element (lanes included), rounding sub-byte types up; `None` for 0 bits.
    pub fn element_bytes(&self) -> Option<usize> {
        let bits = usize::from(self.bits) * usize::from(self.lanes.max(1));
        (bits > 0).then(|| bits.div_ceil(8))
    }

    /// Parses the runtime's string form (`float32`, `int8x4`, `bfloat16`, `float8_e4m3fn`,
    /// aliases such as `f32`/`i8`/`bf16`, scalable `int32xvscalex4`), with the official
    /// runtime's rules and error messages.
    ///
    /// A custom type (`custom[name]`) fails as on a runtime where no application registered
    /// custom types; [`DataType::parse_with`] asks a registry.
    pub fn parse(text: &str) -> Result<DataType> {
        parse_dtype(text, &NoCustomTypes)
    }

    /// [`DataType::parse`], with the codes of custom types (`custom[name]8`) from `custom`.
    pub fn parse_with(text: &str, custom: &dyn CustomTypeRegistry) -> Result<DataType> {
        parse_dtype(text, custom)
    }

    /// The official string form (`TVMFFIDataTypeToString`); fails for codes the runtime has no
    /// name for (complex, unknown codes, custom codes: [`DataType::to_runtime_string_with`]
    /// names those).
    pub fn to_runtime_string(&self) -> Result<std::string::String> {
        self.to_runtime_string_with(&NoCustomTypes)
    }

    /// [`DataType::to_runtime_string`], with the names of custom codes (129 and up) from
    /// `custom`: `custom[name]`, then the lanes (no bits, as the official form).
    pub fn to_runtime_string_with(
        &self,
        custom: &dyn CustomTypeRegistry,
    ) -> Result<std::string::String> {
        let code = self.code.0;
        if code == DLDataTypeCode::BOOL.0 && self.bits == 8 && self.lanes == 1 {
            return Ok("bool".to_owned());
        }
        if code == DLDataTypeCode::OPAQUE_HANDLE.0 {
            return Ok(if self.bits == 0 && self.lanes == 0 {
                std::string::String::new()
            } else {
                "handle".to_owned()
            });
        }
        let custom_name: std::string::String;
        let name = match self.code {
            DLDataTypeCode::INT => "int",
            DLDataTypeCode::UINT => "uint",
            DLDataTypeCode::FLOAT => "float",
            DLDataTypeCode::BFLOAT => "bfloat",
            DLDataTypeCode::BOOL => "bool",
            c => match NAMED_FLOAT_FORMATS.iter().find(|(fc, _, _)| *fc == c) {
                Some((_, _, name)) => *name,
                None if code >= FIRST_CUSTOM_CODE => {
                    custom_name = format!("custom[{}]", custom.name_of(code)?);
                    custom_name.as_str()
                }
                None => {
                    return Err(Error::new(
                        ErrorKind::VALUE_ERROR,
                        format!("DLDataType contains unknown type_code={code}"),
                    ));
                }
            },
        };
        let mut out = name.to_owned();
        if code < 7 && !(self.code == DLDataTypeCode::BOOL && self.bits == 8) {
            out.push_str(&self.bits.to_string());
        }
        let lanes = self.lanes as i16;
        if lanes > 1 {
            out.push_str(&format!("x{lanes}"));
        } else if lanes < -1 {
            out.push_str(&format!("xvscalex{}", -i32::from(lanes)));
        }
        Ok(out)
    }
}

/// The first code of custom data types (DLPack's `kDLExtCustomBegin`).
pub const FIRST_CUSTOM_CODE: u8 = 129;

/// The custom data types a program registered (`custom[name]`, codes from
/// [`FIRST_CUSTOM_CODE`]): the official runtime asks the globals `dtype.get_custom_type_code`
/// and `dtype.get_custom_type_name`, which TVM registers; pactum's runtime does too.
pub trait CustomTypeRegistry {
    /// The code of the custom type `name` (the text between `custom[` and `]`).
    fn code_of(&self, name: &str) -> Result<u8>;
    /// The name of the custom type with `code`.
    fn name_of(&self, code: u8) -> Result<std::string::String>;
}

/// No custom types: the errors of the official runtime when the globals are not registered.
pub struct NoCustomTypes;

impl CustomTypeRegistry for NoCustomTypes {
    fn code_of(&self, _name: &str) -> Result<u8> {
        Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "Function dtype.get_custom_type_code not found",
        ))
    }
    fn name_of(&self, _code: u8) -> Result<std::string::String> {
        Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "Function dtype.get_custom_type_name not found",
        ))
    }
}

fn unknown_dtype(text: &str) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, format!("unknown dtype `{text}`"))
}

/// Reads a decimal number at the start of `rest`: (value, digits consumed).
fn leading_number(rest: &str) -> Result<(Option<u64>, usize)> {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Ok((None, 0));
    }
    let text = &rest[..digits];
    match text.parse::<u64>() {
        Ok(value) if value <= u64::from(u32::MAX) => Ok((Some(value), digits)),
        _ => Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!("Integer value in dtype string '{text}' is out of range for uint32_t"),
        )),
    }
}

/// Parses an optional lanes suffix at `rest`; returns (lanes, bytes consumed).
fn parse_lanes(text: &str, rest: &str, allow_scalable: bool) -> Result<(u16, usize)> {
    let Some(after_x) = rest.strip_prefix('x') else {
        return Ok((1, 0));
    };
    if allow_scalable {
        if let Some(after_vscale) = after_x.strip_prefix("vscale") {
            let consumed = 1 + "vscale".len();
            if let Some(after) = after_vscale.strip_prefix('x') {
                let (value, digits) = leading_number(after)?;
                let value = value
                    .filter(|&v| v > 0)
                    .ok_or_else(|| invalid_lanes(text))?;
                if value > 65535 {
                    return Err(lanes_out_of_range(value, text));
                }
                return Ok(((-(value as i32)) as u16, consumed + 1 + digits));
            }
            return Ok((1, consumed));
        }
    }
    let (value, digits) = leading_number(after_x)?;
    let value = value
        .filter(|&v| v > 0)
        .ok_or_else(|| invalid_lanes(text))?;
    if value > 65535 {
        return Err(lanes_out_of_range(value, text));
    }
    Ok((value as u16, 1 + digits))
}

fn invalid_lanes(text: &str) -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("Invalid lanes specification in dtype '{text}'. Lanes must be a positive integer."),
    )
}

fn lanes_out_of_range(value: u64, text: &str) -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("Lanes value {value} is out of range for uint16_t in dtype '{text}'"),
    )
}

/// Rewrites the short aliases the runtime accepts (`i8`, `u16`, `bf16`, `fp8_…`, `f32`).
fn expand_alias(text: &str) -> std::string::String {
    let bytes = text.as_bytes();
    let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    if bytes.first() == Some(&b'i') && digit_at(1) {
        return format!("int{}", &text[1..]);
    }
    if bytes.first() == Some(&b'u') && digit_at(1) {
        return format!("uint{}", &text[1..]);
    }
    if text.starts_with("bf") && digit_at(2) {
        return format!("bfloat{}", &text[2..]);
    }
    for (alias, full) in [
        ("fp8_", "float8_"),
        ("fp6_", "float6_"),
        ("fp4_", "float4_"),
    ] {
        if let Some(rest) = text.strip_prefix(alias) {
            return format!("{full}{rest}");
        }
    }
    if bytes.first() == Some(&b'f') && digit_at(1) {
        return format!("float{}", &text[1..]);
    }
    text.to_owned()
}

fn parse_small_float(text: &str, family: &str, rest: &str) -> Result<DataType> {
    let mut variants: Vec<&(DLDataTypeCode, u8, &str)> = NAMED_FLOAT_FORMATS
        .iter()
        .filter(|(_, _, name)| name.starts_with(family))
        .collect();
    variants.sort_by_key(|(_, _, name)| core::cmp::Reverse(name.len()));
    for &&(code, bits, name) in &variants {
        let suffix = &name[family.len() + 1..];
        if let Some(after) = rest.strip_prefix(suffix) {
            let after = if family == "float4" {
                after
                    .strip_prefix('_')
                    .filter(|a| a.starts_with('x'))
                    .unwrap_or(after)
            } else {
                after
            };
            if !(after.is_empty() || after.starts_with('x')) {
                continue;
            }
            let (lanes, consumed) = parse_lanes(text, after, false)?;
            if consumed != after.len() {
                return Err(unknown_dtype(text));
            }
            return Ok(DataType { code, bits, lanes });
        }
    }
    Err(Error::new(
        ErrorKind::VALUE_ERROR,
        format!("unknown {family} type `{text}`"),
    ))
}

fn parse_dtype(original: &str, custom: &dyn CustomTypeRegistry) -> Result<DataType> {
    if original.is_empty() || original == "void" {
        return Ok(DataType {
            code: DLDataTypeCode::OPAQUE_HANDLE,
            bits: 0,
            lanes: 0,
        });
    }
    let text = expand_alias(original);
    let text = text.as_str();
    for family in ["float8", "float6", "float4"] {
        if let Some(rest) = text.strip_prefix(family).and_then(|r| r.strip_prefix('_')) {
            return parse_small_float(text, family, rest);
        }
    }
    if let Some(rest) = text.strip_prefix("custom") {
        // The official messages have no space before the text.
        let brace_error = |which: &str| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("expected {which} brace after 'custom' type in{text}"),
            )
        };
        let inner = rest
            .strip_prefix('[')
            .ok_or_else(|| brace_error("opening"))?;
        let close = inner.find(']').ok_or_else(|| brace_error("closing"))?;
        let code = DLDataTypeCode(custom.code_of(&inner[..close])?);
        return parse_bits_and_lanes(text, &inner[close + 1..], code, 32);
    }
    let prefixes: [(&str, DLDataTypeCode, u8); 6] = [
        ("uint", DLDataTypeCode::UINT, 32),
        ("int", DLDataTypeCode::INT, 32),
        ("bool", DLDataTypeCode::BOOL, 8),
        ("bfloat", DLDataTypeCode::BFLOAT, 16),
        ("float", DLDataTypeCode::FLOAT, 32),
        ("handle", DLDataTypeCode::OPAQUE_HANDLE, 64),
    ];
    let Some((prefix, code, default_bits)) =
        prefixes.into_iter().find(|(p, _, _)| text.starts_with(p))
    else {
        return Err(unknown_dtype(text));
    };
    parse_bits_and_lanes(text, &text[prefix.len()..], code, default_bits)
}

/// Parses the bits (`default_bits` when absent or 0) and lanes that end `text` at `rest`.
fn parse_bits_and_lanes(
    text: &str,
    rest: &str,
    code: DLDataTypeCode,
    default_bits: u8,
) -> Result<DataType> {
    let (bits, digits) = leading_number(rest)?;
    let bits = match bits {
        Some(0) | None => default_bits,
        Some(b) if b > 255 => {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("Bits value {b} is out of range for uint8_t in dtype '{text}'"),
            ));
        }
        Some(b) => b as u8,
    };
    let rest = &rest[digits..];
    let (lanes, consumed) = parse_lanes(text, rest, true)?;
    if consumed != rest.len() {
        return Err(unknown_dtype(text));
    }
    Ok(DataType { code, bits, lanes })
}

impl FromStr for DataType {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        DataType::parse(text)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_runtime_string() {
            Ok(text) if text.is_empty() => f.write_str("void"),
            Ok(text) => f.write_str(&text),
            Err(_) if self.code == DLDataTypeCode::COMPLEX => write!(f, "complex{}", self.bits),
            Err(_) => write!(f, "code{}bits{}lanes{}", self.code.0, self.bits, self.lanes),
        }
    }
}

impl fmt::Debug for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<DLDataType> for DataType {
    fn from(raw: DLDataType) -> Self {
        DataType {
            code: DLDataTypeCode(raw.code),
            bits: raw.bits,
            lanes: raw.lanes,
        }
    }
}

impl From<DataType> for DLDataType {
    fn from(dtype: DataType) -> Self {
        DLDataType {
            code: dtype.code.0,
            bits: dtype.bits,
            lanes: dtype.lanes,
        }
    }
}

/// Where a tensor lives: a device type and ordinal.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// Device type.
    pub device_type: DLDeviceType,
    /// Ordinal.
    pub device_id: i32,
}

impl Device {
    /// Host memory.
    pub const CPU: Device = Device {
        device_type: DLDeviceType::CPU,
        device_id: 0,
    };

    /// A CUDA device.
    pub const fn cuda(device_id: i32) -> Device {
        Device {
            device_type: DLDeviceType::CUDA,
            device_id,
        }
    }

    /// The conventional lower-case name of the device type (`cpu`, `cuda`, ...).
    pub fn type_name(&self) -> &'static str {
        match self.device_type {
            DLDeviceType::CPU => "cpu",
            DLDeviceType::CUDA => "cuda",
            DLDeviceType::CUDA_HOST => "cuda_host",
            DLDeviceType::OPENCL => "opencl",
            DLDeviceType::VULKAN => "vulkan",
            DLDeviceType::METAL => "metal",
            DLDeviceType::VPI => "vpi",
            DLDeviceType::ROCM => "rocm",
            DLDeviceType::ROCM_HOST => "rocm_host",
            DLDeviceType::EXT_DEV => "ext_dev",
            DLDeviceType::CUDA_MANAGED => "cuda_managed",
            DLDeviceType::ONE_API => "oneapi",
            DLDeviceType::WEBGPU => "webgpu",
            DLDeviceType::HEXAGON => "hexagon",
            DLDeviceType::MAIA => "maia",
            DLDeviceType::TRN => "trn",
            _ => "unknown",
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.type_name(), self.device_id)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl From<DLDevice> for Device {
    fn from(raw: DLDevice) -> Self {
        Device {
            device_type: raw.device_type,
            device_id: raw.device_id,
        }
    }
}

impl From<Device> for DLDevice {
    fn from(device: Device) -> Self {
        DLDevice {
            device_type: device.device_type,
            device_id: device.device_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One custom type, `half` with code 150.
    struct OneCustomType;

    impl CustomTypeRegistry for OneCustomType {
        fn code_of(&self, name: &str) -> Result<u8> {
            match name {
                "half" => Ok(150),
                other => Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("no custom type {other}"),
                )),
            }
        }
        fn name_of(&self, code: u8) -> Result<std::string::String> {
            assert_eq!(code, 150);
            Ok("half".to_owned())
        }
    }

    #[test]
    fn custom_types_take_their_code_from_the_registry_and_print_without_bits() {
        let half = DataType::parse_with("custom[half]16x4", &OneCustomType).unwrap();
        assert_eq!((half.code.0, half.bits, half.lanes), (150, 16, 4));
        assert_eq!(
            half.to_runtime_string_with(&OneCustomType).unwrap(),
            "custom[half]x4"
        );
        let default_bits = DataType::parse_with("custom[half]", &OneCustomType).unwrap();
        assert_eq!((default_bits.bits, default_bits.lanes), (32, 1));
        let unknown = DataType::parse_with("custom[quarter]8", &OneCustomType).unwrap_err();
        assert!(
            unknown.message().contains("no custom type quarter"),
            "{unknown}"
        );
    }

    #[test]
    fn custom_types_without_a_registry_fail_as_the_official_runtime_does() {
        let error = DataType::parse("custom[half]16").unwrap_err();
        assert!(
            error
                .message()
                .contains("dtype.get_custom_type_code not found"),
            "{error}"
        );
        let unclosed = DataType::parse_with("custom[half", &OneCustomType).unwrap_err();
        assert!(
            unclosed.message().contains("expected closing brace"),
            "{unclosed}"
        );
        let printed = DataType::scalar(DLDataTypeCode(150), 16).to_runtime_string();
        assert!(
            printed
                .unwrap_err()
                .message()
                .contains("dtype.get_custom_type_name not found")
        );
    }
}
