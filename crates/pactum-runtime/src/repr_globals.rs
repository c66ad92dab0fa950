//! `ffi.ReprPrint`: the official text form of a value, as `repr()` of the official Python
//! package's containers shows it.
//!
//! The form, as the official runtime (apache-tvm-ffi 0.1.15) prints it: `None`, `True`/`False`,
//! integers in decimal, floats as C's `%g` (`1`, `2.5`, `1e-07`, `1.23457e+06`, `inf`, `nan`),
//! strings double-quoted with `\"`, `\\`, `\n`, `\t`, `\r`, other control bytes as `\xNN` and
//! non-ASCII characters as `\uXXXX`/`\UXXXXXXXX`, bytes as `b"..."` with every byte outside
//! printable ASCII (and `"`, `\`) as `\xNN`; Arrays as tuples (`()`, `(1,)`, `(1, 2)`), Lists as
//! `[...]`, Maps and Dicts as `{k: v, ...}`, a container reached again inside itself as `...`;
//! `Shape(1, 2)`, tensors as `float32[2, 3]@cpu:0`, data types and devices by name, the
//! runtime's singletons as `<MISSING>`/`<KWARGS>`, and any other object as its type key,
//! followed by `(field=value, ...)` when its type reflects fields.

use pactum_sys::tvm_ffi::{TVMFFITypeIndex, field_flags};

use super::builtin::{ANY, STR, typed};
use super::reflection;
use super::registry::BuiltinGlobal;
use super::value_globals;
use pactum_core::any::{Any, AnyView};
use pactum_core::containers::{Array, Dict, List, Map};
use std::collections::HashMap;

use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::object::ObjectRef;
use pactum_core::shape::Shape;

/// `ffi.ReprPrint`.
pub(crate) fn repr_globals() -> Vec<BuiltinGlobal> {
    vec![typed("ffi.ReprPrint", &[ANY], STR, |a| {
        Ok(Any::from(repr_text(a.view(0))?))
    })]
}

/// The official repr of `value`; with `TVM_FFI_REPR_WITH_ADDR=1` in the environment, objects
/// carry their addresses as the official runtime prints them.
fn repr_text(value: &AnyView<'_>) -> Result<std::string::String> {
    let mut printer = Printer {
        show_addresses: std::env::var_os("TVM_FFI_REPR_WITH_ADDR").is_some_and(|v| v == "1"),
        ..Printer::default()
    };
    printer.value(value)?;
    Ok(printer.out)
}

/// Deeper nesting is refused rather than risking the thread's stack (counted per thread, so
/// `__ffi_repr__` hooks printing their children count too).
const MAX_DEPTH: usize = 2048;

thread_local! {
    static DEPTH: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

#[derive(Default)]
struct Printer {
    out: std::string::String,
    show_addresses: bool,
    /// Objects being printed (a cycle prints `...`) or printed (their text is reused).
    seen: HashMap<usize, Option<std::string::String>>,
}

impl Printer {
    fn value(&mut self, value: &AnyView<'_>) -> Result<()> {
        let index = value.type_index();
        match TVMFFITypeIndex(index) {
            TVMFFITypeIndex::NONE => self.out.push_str("None"),
            TVMFFITypeIndex::BOOL => self.out.push_str(if value.get::<bool>()? {
                "True"
            } else {
                "False"
            }),
            TVMFFITypeIndex::INT => self.out.push_str(&value.get::<i64>()?.to_string()),
            TVMFFITypeIndex::FLOAT => self.out.push_str(&format_g(value.get::<f64>()?)),
            TVMFFITypeIndex::DATA_TYPE => {
                self.out
                    .push_str(&value.get::<pactum_core::DataType>()?.to_string());
            }
            TVMFFITypeIndex::DEVICE => self
                .out
                .push_str(&value.get::<pactum_core::Device>()?.to_string()),
            TVMFFITypeIndex::RAW_STR | TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                let bytes = pactum_core::internal::view_bytes(value).unwrap_or_default();
                quote_str(&mut self.out, bytes);
            }
            TVMFFITypeIndex::BYTE_ARRAY_PTR
            | TVMFFITypeIndex::SMALL_BYTES
            | TVMFFITypeIndex::BYTES => {
                let bytes = pactum_core::internal::view_bytes(value).unwrap_or_default();
                quote_bytes(&mut self.out, bytes);
            }
            TVMFFITypeIndex::BIG_INT => {
                // SAFETY: a BigInt value holds its words.
                let words = unsafe { super::values::big_int_words(value.as_raw()) };
                self.out.push_str(&big_int_decimal(&words));
            }
            _ => match value.object_ptr() {
                Some(_) => {
                    let owned = value.to_any()?;
                    match owned.as_object_ref() {
                        Some(object) => self.object(&owned, object)?,
                        None => self.out.push_str(&value.type_key()),
                    }
                }
                None => self.out.push_str(&value.type_key()),
            },
        }
        Ok(())
    }

    fn address_suffix(&mut self, object: &ObjectRef) {
        if self.show_addresses {
            self.out
                .push_str(&format!("@{:#x}", object.as_raw() as usize));
        }
    }

    fn object(&mut self, value: &Any, object: &ObjectRef) -> Result<()> {
        let address = object.as_raw() as usize;
        match self.seen.get(&address) {
            Some(Some(text)) => {
                self.out.push_str(&text.clone());
                return Ok(());
            }
            Some(None) => {
                self.out.push_str("...");
                self.address_suffix(object);
                return Ok(());
            }
            None => {}
        }
        match TVMFFITypeIndex(object.type_index()) {
            _ if object.as_raw() == value_globals::missing().as_raw() => {
                self.out.push_str("<MISSING>");
                return Ok(());
            }
            _ if object.as_raw() == value_globals::kwargs().as_raw() => {
                self.out.push_str("<KWARGS>");
                return Ok(());
            }
            TVMFFITypeIndex::TENSOR => {
                let tensor = value.get::<pactum_core::Tensor>()?;
                self.out.push_str(&format!(
                    "{}[{}]@{}",
                    tensor.dtype(),
                    join_ints(tensor.shape()),
                    tensor.device()
                ));
                self.address_suffix(object);
                return Ok(());
            }
            TVMFFITypeIndex::SHAPE => {
                let shape = value.get::<Shape>()?;
                self.out.push_str("Shape(");
                self.out.push_str(&join_ints(shape.as_slice()));
                self.out.push(')');
                return Ok(());
            }
            _ => {}
        }
        if DEPTH.get() >= MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::custom("RecursionError"),
                format!("ffi.ReprPrint: values nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        let start = self.out.len();
        self.seen.insert(address, None);
        DEPTH.set(DEPTH.get() + 1);
        let printed = self.compound(value, object);
        DEPTH.set(DEPTH.get() - 1);
        printed?;
        self.seen
            .insert(address, Some(self.out[start..].to_owned()));
        Ok(())
    }

    /// Containers, hooked, enum and reflected objects: the kinds that may contain themselves.
    fn compound(&mut self, value: &Any, object: &ObjectRef) -> Result<()> {
        let container = match TVMFFITypeIndex(object.type_index()) {
            TVMFFITypeIndex::ARRAY => {
                let items: Vec<Any> = value.get::<Array>()?.iter().cloned().collect();
                self.sequence("(", &items, ")")?;
                if items.len() == 1 {
                    self.out.insert(self.out.len() - 1, ',');
                }
                true
            }
            TVMFFITypeIndex::LIST => {
                let items = value.get::<List>()?.to_vec();
                self.sequence("[", &items, "]")?;
                true
            }
            TVMFFITypeIndex::MAP => {
                self.mapping(&value.get::<Map>()?.entries())?;
                true
            }
            TVMFFITypeIndex::DICT => {
                self.mapping(&value.get::<Dict>()?.entries())?;
                true
            }
            _ => false,
        };
        if container {
            self.address_suffix(object);
            return Ok(());
        }
        if let Some(hook) = reflection::type_attr(object.type_index(), "__ffi_repr__") {
            return self.hooked(object, hook);
        }
        if let Some(name) = enum_name(object)? {
            self.out.push_str(&object.type_key());
            self.out.push('.');
            self.out.push_str(&name);
            self.address_suffix(object);
            return Ok(());
        }
        self.reflected(object)
    }

    fn sequence(&mut self, open: &str, items: &[Any], close: &str) -> Result<()> {
        self.out.push_str(open);
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(item.as_view())?;
        }
        self.out.push_str(close);
        Ok(())
    }

    fn mapping(&mut self, entries: &[(Any, Any)]) -> Result<()> {
        self.out.push('{');
        for (i, (key, value)) in entries.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(key.as_view())?;
            self.out.push_str(": ");
            self.value(value.as_view())?;
        }
        self.out.push('}');
        Ok(())
    }

    /// Any other object: its type key, then its reflected fields (ancestors' first), if any.
    fn reflected(&mut self, object: &ObjectRef) -> Result<()> {
        self.out.push_str(&object.type_key());
        self.address_suffix(object);
        let mut first = true;
        let mut names = Vec::new();
        for field in reflection::fields_of(object.type_index()) {
            if field.getter.is_none() || field.flags & field_flags::REPR_OFF != 0 {
                continue;
            }
            // A field re-exposed under a name already printed shows once.
            if names.contains(&reflection::field_name(field)) {
                continue;
            }
            names.push(reflection::field_name(field));
            let field_value = reflection::read_field(object, field)?;
            self.out.push_str(if first { "(" } else { ", " });
            first = false;
            self.out.push_str(reflection::field_name(field));
            self.out.push('=');
            self.value(field_value.as_view())?;
        }
        if !first {
            self.out.push(')');
        }
        Ok(())
    }
}

impl Printer {
    /// A type's `__ffi_repr__(object, repr)` hook, given a function printing nested values.
    fn hooked(&mut self, object: &ObjectRef, hook: Any) -> Result<()> {
        let hook = hook.cast::<pactum_core::Function>()?;
        let nested =
            pactum_core::Function::from_packed(|args: &[AnyView<'_>]| match args.first() {
                Some(value) => Ok(Any::from(repr_text(value)?)),
                None => Ok(Any::from("None")),
            });
        let nested = Any::from(nested);
        let text = hook.call(&[
            *Any::from_object_ref(object.clone()).as_view(),
            *nested.as_view(),
        ])?;
        self.out
            .push_str(text.get::<pactum_core::string::String>()?.as_str());
        if matches!(
            TVMFFITypeIndex(object.type_index()),
            TVMFFITypeIndex::ARRAY
                | TVMFFITypeIndex::LIST
                | TVMFFITypeIndex::MAP
                | TVMFFITypeIndex::DICT
        ) {
            self.address_suffix(object);
        }
        Ok(())
    }
}

/// A BigInt's words (little-endian two's complement) in decimal.
fn big_int_decimal(words: &[i64]) -> std::string::String {
    let negative = words.last().is_some_and(|w| *w < 0);
    // The magnitude, little-endian.
    let mut magnitude: Vec<u64> = words.iter().map(|&w| w as u64).collect();
    if negative {
        let mut carry = true;
        for word in &mut magnitude {
            *word = !*word;
            if carry {
                let (sum, overflow) = word.overflowing_add(1);
                *word = sum;
                carry = overflow;
            }
        }
    }
    const CHUNK: u64 = 10_000_000_000_000_000_000;
    let mut chunks = Vec::new();
    while magnitude.iter().any(|&w| w != 0) {
        let mut remainder: u128 = 0;
        for word in magnitude.iter_mut().rev() {
            let current = (remainder << 64) | u128::from(*word);
            *word = (current / u128::from(CHUNK)) as u64;
            remainder = current % u128::from(CHUNK);
        }
        chunks.push(remainder as u64);
    }
    let mut text = std::string::String::from(if negative { "-" } else { "" });
    match chunks.split_last() {
        None => text.push('0'),
        Some((most, rest)) => {
            text.push_str(&most.to_string());
            for chunk in rest.iter().rev() {
                text.push_str(&format!("{chunk:019}"));
            }
        }
    }
    text
}

/// The canonical string index of an `ffi.Enum` singleton, which prints as `<type key>.<name>`.
fn enum_name(object: &ObjectRef) -> Result<Option<std::string::String>> {
    let Some(enum_index) = reflection::enum_type_index() else {
        return Ok(None);
    };
    if !pactum_core::internal::is_instance(object.type_index(), enum_index) {
        return Ok(None);
    }
    let fields = reflection::fields_of(enum_index);
    let Some(field) = fields
        .iter()
        .find(|f| reflection::field_name(f) == "_str_index")
    else {
        return Ok(None);
    };
    let name = reflection::read_field(object, field)?;
    Ok(Some(
        name.get::<pactum_core::string::String>()?
            .as_str()
            .to_owned(),
    ))
}

fn join_ints(values: &[i64]) -> std::string::String {
    values
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `value` as C's `printf("%g", value)` prints it (six significant digits).
pub(crate) fn format_g(value: f64) -> std::string::String {
    format_general(value, 6)
}

/// `value` as C's `printf("%.{precision}g", value)` prints it: `precision` significant digits
/// (at least 1), in fixed or exponent notation by the decimal exponent, trailing zeros dropped.
pub(crate) fn format_general(value: f64, precision: usize) -> std::string::String {
    if value.is_nan() {
        return if value.is_sign_negative() {
            "-nan"
        } else {
            "nan"
        }
        .to_owned();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let precision = precision.max(1);
    let scientific = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i64 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            strip_zeros(mantissa),
            exponent.unsigned_abs()
        )
    } else {
        let fixed = format!("{:.*}", (precision as i64 - 1 - exponent) as usize, value);
        strip_zeros(&fixed).to_owned()
    }
}

/// Drops trailing zeros after a decimal point, and the point itself when nothing follows.
fn strip_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// A string literal: `"` ... `"`, escaping quotes, backslashes, control characters and every
/// non-ASCII character (invalid UTF-8 bytes as `\xNN`).
fn quote_str(out: &mut std::string::String, bytes: &[u8]) {
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                ' '..='~' => out.push(c),
                '\0'..='\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
                '\u{80}'..='\u{ffff}' => out.push_str(&format!("\\u{:04x}", c as u32)),
                _ => out.push_str(&format!("\\U{:08x}", c as u32)),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
}

/// A bytes literal: `b"` ... `"`, printable ASCII as is except `"` and `\`, all else `\xNN`.
fn quote_bytes(out: &mut std::string::String, bytes: &[u8]) {
    out.push_str("b\"");
    for &byte in bytes {
        match byte {
            b'"' | b'\\' => out.push_str(&format!("\\x{byte:02x}")),
            b' '..=b'~' => out.push(byte as char),
            _ => out.push_str(&format!("\\x{byte:02x}")),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn floats_print_as_c_percent_g() {
        for (value, text) in [
            (1.0, "1"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e16, "1e+16"),
            (123456789.0, "1.23457e+08"),
            (123456.0, "123456"),
            (123456.7, "123457"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (1.5e-7, "1.5e-07"),
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (0.1 + 0.2, "0.3"),
            (std::f64::consts::PI, "3.14159"),
            (9.87654321, "9.87654"),
            (2f64.powi(70), "1.18059e+21"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(format_g(value), text, "{value}");
        }
    }
}
