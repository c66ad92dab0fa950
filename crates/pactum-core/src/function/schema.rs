//! Function type schemas: the `type_schema` metadata TVM FFI records beside exported functions
//! (`__tvm_ffi__metadata_<name>`) and global functions (`ffi.GetGlobalFuncMetadata`), read
//! into a model that can be rendered (`add(a: int, b: float) -> float`) and checked against the
//! Rust types of a typed handle ([`crate::Module::typed`], [`Function::global_typed`]).
//!
//! ```
//! use pactum::function::schema::FunctionSchema;
//!
//! let metadata = r#"{"type_schema":"{\"type\":\"ffi.Function\",\"named_args\":{\"return\":[{\"type\":\"float\"}],\"params\":[{\"type\":\"int\"},{\"type\":\"Optional\",\"args\":[{\"type\":\"ffi.Tensor\"}]}]}}","arg_names":["n","x"]}"#;
//! let schema = FunctionSchema::from_metadata(metadata)?;
//! assert_eq!(schema.render("f"), "f(n: int, x: Optional[Tensor]) -> float");
//! # Ok::<(), pactum::Error>(())
//! ```

use std::fmt;

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::export::ExportType;
use crate::function::{ArgList, Function, TypedFunction};
use crate::module::Module;

/// One type of a schema: a type key (`int`, `ffi.Tensor`, `Optional`, ...) and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeSchema {
    /// The type key as TVM FFI writes it.
    pub key: String,
    /// Type arguments (`Optional[T]`, `ffi.Array[T]`, ...).
    pub args: Vec<TypeSchema>,
}

impl TypeSchema {
    /// Parses one `{"type": ..., "args": [...]}` JSON node.
    pub fn parse(json: &str) -> Result<TypeSchema> {
        let value: Value = serde_json::from_str(json)
            .map_err(|e| schema_error(format!("type schema is not JSON: {e}")))?;
        TypeSchema::from_json(&value, "type_schema", 0)
    }

    fn from_json(value: &Value, path: &str, depth: usize) -> Result<TypeSchema> {
        if depth > 64 {
            return Err(schema_error(format!(
                "{path}: nested deeper than 64 levels"
            )));
        }
        let key = value
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| schema_error(format!("{path}: expected an object with a \"type\"")))?;
        let args = match value.get("args") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    TypeSchema::from_json(item, &format!("{path}.args[{i}]"), depth + 1)
                })
                .collect::<Result<_>>()?,
            Some(_) => return Err(schema_error(format!("{path}.args: expected an array"))),
        };
        Ok(TypeSchema {
            key: key.to_owned(),
            args,
        })
    }

    /// The schema a Rust type is exported with ([`ExportType`]).
    pub fn of<T: ExportType + ?Sized>() -> TypeSchema {
        TypeSchema::parse(&T::type_schema()).expect("pactum's own type schemas are well formed")
    }

    fn is(&self, key: &str) -> bool {
        self.key == key
    }

    fn is_object(&self) -> bool {
        self.key.starts_with("ffi.") || self.key.contains('.')
    }

    /// Whether a parameter of this type accepts a value of type `given`, as the callee's
    /// argument conversion would: equal types; anything for `Any`; an int or bool for a
    /// float; a bool for an int; `None` or the inner type for `Optional`; any object for
    /// `ffi.Object`.
    pub fn accepts(&self, given: &TypeSchema) -> bool {
        if self.is("Any") || given.is("Any") {
            return true;
        }
        if self.is("Optional") {
            let inner = self.args.first();
            return given.is("None")
                || inner.is_none_or(|inner| {
                    if given.is("Optional") {
                        given.args.first().is_none_or(|g| inner.accepts(g))
                    } else {
                        inner.accepts(given)
                    }
                });
        }
        if self.key == given.key {
            return self.args.is_empty()
                || given.args.is_empty()
                || (self.args.len() == given.args.len()
                    && self.args.iter().zip(&given.args).all(|(a, b)| a.accepts(b)));
        }
        match self.key.as_str() {
            "float" => given.is("int") || given.is("bool"),
            "int" => given.is("bool"),
            "ffi.Object" => given.is_object(),
            _ => false,
        }
    }
}

/// `int`, `str`, `Tensor`, `Optional[float]`: the way Python users read types.
impl fmt::Display for TypeSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = match self.key.as_str() {
            "ffi.String" => "str",
            "ffi.Bytes" => "bytes",
            other => other.strip_prefix("ffi.").unwrap_or(other),
        };
        f.write_str(base)?;
        if !self.args.is_empty() {
            f.write_str("[")?;
            for (i, arg) in self.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{arg}")?;
            }
            f.write_str("]")?;
        }
        Ok(())
    }
}

/// A parameter of a function schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSchema {
    /// Its name (`arg_names`), or `arg<i>` when the metadata has none.
    pub name: String,
    /// Its type.
    pub ty: TypeSchema,
    /// The more precise text a pactum-built library records (`Tensor[float32, 2d]`), if any.
    pub detail: Option<String>,
}

/// What a function's metadata says of its signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSchema {
    /// The parameters; `None` for a packed function (any arguments).
    pub params: Option<Vec<ParamSchema>>,
    /// The result type (`Any` for a packed function).
    pub result: TypeSchema,
    /// The more precise result text a pactum-built library records, if any.
    pub result_detail: Option<String>,
}

impl FunctionSchema {
    /// Reads `{"type_schema": "<json>", "arg_names": [...], ...}` metadata.
    pub fn from_metadata(metadata: &str) -> Result<FunctionSchema> {
        let outer: Value = serde_json::from_str(metadata)
            .map_err(|e| schema_error(format!("metadata is not JSON: {e}")))?;
        let schema_text = outer
            .get("type_schema")
            .and_then(Value::as_str)
            .ok_or_else(|| schema_error("metadata has no type_schema".to_owned()))?;
        let schema: Value = serde_json::from_str(schema_text)
            .map_err(|e| schema_error(format!("type_schema is not JSON: {e}")))?;
        let strings = |key: &str| -> Vec<String> {
            outer
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(|s| s.replace("ffi.", "")))
                        .collect()
                })
                .unwrap_or_default()
        };
        let Some(named) = schema.get("named_args") else {
            return Ok(FunctionSchema {
                params: None,
                result: TypeSchema {
                    key: "Any".to_owned(),
                    args: Vec::new(),
                },
                result_detail: None,
            });
        };
        let params = named
            .get("params")
            .and_then(Value::as_array)
            .ok_or_else(|| schema_error("type_schema.named_args has no params".to_owned()))?;
        let names = strings("arg_names");
        let details = strings("arg_types");
        let params = params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Ok(ParamSchema {
                    name: names.get(i).cloned().unwrap_or_else(|| format!("arg{i}")),
                    ty: TypeSchema::from_json(p, &format!("params[{i}]"), 0)?,
                    detail: details.get(i).cloned(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let result = match named
            .get("return")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
        {
            Some(node) => TypeSchema::from_json(node, "return", 0)?,
            None => TypeSchema {
                key: "None".to_owned(),
                args: Vec::new(),
            },
        };
        let result_detail = outer
            .get("return_type")
            .and_then(Value::as_str)
            .map(|s| s.replace("ffi.", ""));
        Ok(FunctionSchema {
            params: Some(params),
            result,
            result_detail,
        })
    }

    /// `name(a: int, b: Tensor[float32]) -> float`; `name(*args: Any) -> Any` when packed.
    pub fn render(&self, name: &str) -> String {
        let params = match &self.params {
            None => "*args: Any".to_owned(),
            Some(params) => params
                .iter()
                .map(|p| match &p.detail {
                    Some(detail) => format!("{}: {detail}", p.name),
                    None => format!("{}: {}", p.name, p.ty),
                })
                .collect::<Vec<_>>()
                .join(", "),
        };
        let result = match &self.result_detail {
            Some(detail) => detail.clone(),
            None => self.result.to_string(),
        };
        format!("{name}({params}) -> {result}")
    }

    /// Checks that a typed handle with arguments `args` and result `result` fits: the same
    /// number of parameters, each accepting its argument, and a result `result` accepts. A
    /// packed function (no parameter list) fits any handle. The error is a `TypeError` naming
    /// the function's signature and the first position that differs.
    pub fn check(&self, name: &str, args: &[TypeSchema], result: &TypeSchema) -> Result<()> {
        let mismatch = |what: String| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                format!("typed handle for `{}`: {what}", self.render(name)),
            )
        };
        if let Some(params) = &self.params {
            if params.len() != args.len() {
                return Err(mismatch(format!(
                    "the function takes {} argument(s), the handle passes {}",
                    params.len(),
                    args.len()
                )));
            }
            for (i, (param, arg)) in params.iter().zip(args).enumerate() {
                if !param.ty.accepts(arg) {
                    return Err(mismatch(format!(
                        "argument {i} ({}) is {}, the handle passes {arg}",
                        param.name, param.ty
                    )));
                }
            }
        }
        if !result.accepts(&self.result) {
            return Err(mismatch(format!(
                "the function returns {}, the handle expects {result}",
                self.result
            )));
        }
        Ok(())
    }
}

fn schema_error(message: String) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, message)
}

/// The schemas of a typed handle's argument tuple (each element's [`ExportType`]).
pub trait ArgSchemas {
    /// One schema per argument.
    fn arg_schemas() -> Vec<TypeSchema>;
}

macro_rules! arg_schemas {
    ($($arg:ident),*) => {
        impl<$($arg: ExportType),*> ArgSchemas for ($($arg,)*) {
            fn arg_schemas() -> Vec<TypeSchema> {
                vec![$(TypeSchema::of::<$arg>()),*]
            }
        }
    };
}
arg_schemas!();
arg_schemas!(A0);
arg_schemas!(A0, A1);
arg_schemas!(A0, A1, A2);
arg_schemas!(A0, A1, A2, A3);
arg_schemas!(A0, A1, A2, A3, A4);
arg_schemas!(A0, A1, A2, A3, A4, A5);
arg_schemas!(A0, A1, A2, A3, A4, A5, A6);
arg_schemas!(A0, A1, A2, A3, A4, A5, A6, A7);

/// A typed handle for `function` if `schema` admits `(Args) -> Ret`.
pub(crate) fn checked_typed<Args, Ret>(
    function: Function,
    name: &str,
    schema: &FunctionSchema,
) -> Result<TypedFunction<Args, Ret>>
where
    Args: ArgList + ArgSchemas,
    Ret: crate::any::FromAny + ExportType,
{
    schema.check(name, &Args::arg_schemas(), &TypeSchema::of::<Ret>())?;
    Ok(function.typed_unchecked())
}

// The typed handles of module exports are made here, above both the module type and the
// schema reader.
impl Module {
    /// What export `name`'s metadata records of its signature (`type_schema`), or `None`
    /// when the library records none.
    pub fn function_schema(&self, name: &str) -> Result<Option<FunctionSchema>> {
        self.function_metadata(name)?
            .map(|metadata| FunctionSchema::from_metadata(metadata.as_str()))
            .transpose()
    }

    /// Export `name` as a typed handle, checked once against the `type_schema` its library
    /// records, as wasmtime's `Func::typed`: calls then encode `Args` on the stack and convert
    /// the result with no further lookup.
    ///
    /// Fails with a `ValueError` if there is no such export or it records no schema (then
    /// [`Function::typed_unchecked`] is the way), and a `TypeError` naming the signature and
    /// the first mismatch if `(Args) -> Ret` does not fit it.
    pub fn typed<Args, Ret>(&self, name: &str) -> Result<TypedFunction<Args, Ret>>
    where
        Args: ArgList + ArgSchemas,
        Ret: crate::any::FromAny + ExportType,
    {
        let function = self.function(name)?;
        let schema = self.function_schema(name)?.ok_or_else(|| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!(
                    "export `{name}` records no type schema (__tvm_ffi__metadata_{name}); \
                     Function::typed_unchecked makes a handle without the check"
                ),
            )
        })?;
        checked_typed(function, name, &schema)
    }
}

impl Function {
    /// The global function `name` as a typed handle, checked once against the schema the
    /// runtime records for it (`ffi.GetGlobalFuncMetadata`), as wasmtime's `Func::typed`.
    ///
    /// Fails with a `ValueError` if there is no such global or it records no schema (globals
    /// registered without metadata), and a `TypeError` naming the first mismatch if
    /// `(Args) -> Ret` does not fit it. A schema without a parameter list (a packed function)
    /// fits any handle.
    pub fn global_typed<Args, Ret>(name: &str) -> Result<TypedFunction<Args, Ret>>
    where
        Args: ArgList + ArgSchemas,
        Ret: crate::any::FromAny + ExportType,
    {
        let function = Function::get_global(name).ok_or_else(|| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("no global function `{name}`"),
            )
        })?;
        let metadata_of = Function::get_global("ffi.GetGlobalFuncMetadata").ok_or_else(|| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                "the runtime records no global function metadata (ffi.GetGlobalFuncMetadata)",
            )
        })?;
        let metadata: crate::String = metadata_of.call_typed((name,))?;
        if metadata.as_str().is_empty() {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!(
                    "global function `{name}` records no type schema; \
                     Function::typed_unchecked makes a handle without the check"
                ),
            ));
        }
        let schema = FunctionSchema::from_metadata(metadata.as_str())?;
        checked_typed(function, name, &schema)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(json: &str) -> TypeSchema {
        TypeSchema::parse(json).unwrap()
    }

    #[test]
    fn parameters_accept_what_the_callee_converts() {
        let int = ty(r#"{"type":"int"}"#);
        let float = ty(r#"{"type":"float"}"#);
        let text = ty(r#"{"type":"ffi.String"}"#);
        let tensor = ty(r#"{"type":"ffi.Tensor"}"#);
        let optional = ty(r#"{"type":"Optional","args":[{"type":"ffi.Tensor"}]}"#);
        let none = ty(r#"{"type":"None"}"#);
        assert!(float.accepts(&int));
        assert!(!int.accepts(&float));
        assert!(!text.accepts(&int));
        assert!(
            optional.accepts(&none) && optional.accepts(&tensor) && optional.accepts(&optional)
        );
        assert!(!optional.accepts(&int));
        assert!(ty(r#"{"type":"ffi.Object"}"#).accepts(&tensor));
        assert!(ty(r#"{"type":"Any"}"#).accepts(&text) && text.accepts(&ty(r#"{"type":"Any"}"#)));
        assert_eq!(optional.to_string(), "Optional[Tensor]");
    }

    #[test]
    fn malformed_metadata_is_a_value_error() {
        for bad in [
            "",
            "{}",
            r#"{"type_schema":"{"}"#,
            r#"{"type_schema":"{\"named_args\":{}}"}"#,
        ] {
            let error = FunctionSchema::from_metadata(bad).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::VALUE_ERROR, "{bad}: {error}");
        }
        let deep = format!(
            "{}{{\"type\":\"int\"}}{}",
            r#"{"type":"Optional","args":["#.repeat(80),
            "]}".repeat(80)
        );
        // Refused (serde_json's own depth limit comes first here), never a stack overflow.
        let error = TypeSchema::parse(&deep).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::VALUE_ERROR);
    }

    #[test]
    fn checks_name_the_first_difference() {
        let schema = FunctionSchema::from_metadata(
            r#"{"type_schema":"{\"type\":\"ffi.Function\",\"named_args\":{\"return\":[{\"type\":\"int\"}],\"params\":[{\"type\":\"int\"},{\"type\":\"ffi.String\"}]}}","arg_names":["a","b"]}"#,
        )
        .unwrap();
        let int = TypeSchema::of::<i64>();
        let text = TypeSchema::of::<&str>();
        schema
            .check("f", &[int.clone(), text.clone()], &int)
            .unwrap();
        let error = schema
            .check("f", &[int.clone(), int.clone()], &int)
            .unwrap_err();
        assert_eq!(
            error.message(),
            "typed handle for `f(a: int, b: str) -> int`: argument 1 (b) is str, the handle passes int"
        );
        let error = schema
            .check("f", std::slice::from_ref(&int), &int)
            .unwrap_err();
        assert!(
            error
                .message()
                .contains("takes 2 argument(s), the handle passes 1"),
            "{error}"
        );
        let error = schema
            .check("f", &[int.clone(), text], &TypeSchema::of::<String>())
            .unwrap_err();
        assert!(
            error
                .message()
                .contains("returns int, the handle expects str"),
            "{error}"
        );
    }
}
