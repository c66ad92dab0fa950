//! Custom data types (`custom[name]8`, codes 129 and up) as the official runtime resolves them:
//! through the globals `dtype.get_custom_type_code` and `dtype.get_custom_type_name`, which the
//! program registers (TVM does, for its custom datatypes; tilelang names some of its element
//! types so). Without them, parsing or printing a custom type fails with the official error.

use pactum_core::dtype::{CustomTypeRegistry, NoCustomTypes};
use pactum_core::error::Result;
use pactum_core::function::Function;

/// The custom types the program registered through the `dtype.*` globals, looked up at each
/// use (a program may register them after the runtime loaded).
pub(crate) struct RegisteredCustomTypes;

impl CustomTypeRegistry for RegisteredCustomTypes {
    fn code_of(&self, name: &str) -> Result<u8> {
        match Function::get_global("dtype.get_custom_type_code") {
            // The official runtime keeps the low byte of the int the global returns.
            Some(global) => Ok(global.call_typed::<_, i64>((name,))? as u8),
            None => NoCustomTypes.code_of(name),
        }
    }

    fn name_of(&self, code: u8) -> Result<std::string::String> {
        match Function::get_global("dtype.get_custom_type_name") {
            Some(global) => global.call_typed::<_, std::string::String>((i64::from(code),)),
            None => NoCustomTypes.name_of(code),
        }
    }
}
