//! Procedural macros of pactum. Use them through the `pactum` crate (`#[pactum::export]`).

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Attribute, Expr, FnArg, GenericParam, ItemFn, Lit, LitStr, Meta, Pat, ReturnType, Type};

/// Exports a function as a TVM FFI packed function of the library being built.
///
/// For `fn name(...)` it emits `__tvm_ffi_name` (the packed entry point),
/// `__tvm_ffi__metadata_name` (the `type_schema` JSON the official Python package reads) and,
/// when the function has doc comments, `__tvm_ffi__doc_name`. Options:
/// `#[pactum::export(name = "other")]` exports under another name.
///
/// Parameters may be any type that converts from an argument (`i64`, `f64`, `bool`, `&str`,
/// `String`, `&[u8]`, `pactum::Tensor`, `pactum::TensorView<'_, f32, 2>`,
/// `pactum::TensorViewMut<'_, f32>`, `pactum::Function`, `pactum::Array`, `pactum::Map`,
/// `pactum::Any`, `Option<T>`, ...); the result may be any value that converts into one, or a
/// `Result` of one. A wrong argument count or type is a `TypeError` naming the parameter, the
/// expected and the actual type; a writable tensor whose memory overlaps another argument is a
/// `ValueError`; a panic becomes an error of kind `RustPanic`.
#[proc_macro_attribute]
pub fn export(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    match expand(attr.into(), function) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// Replaces every lifetime with `'_`, so parameter types can be named inside generated
/// functions that do not declare the user's lifetimes.
struct ElideLifetimes;

impl VisitMut for ElideLifetimes {
    fn visit_lifetime_mut(&mut self, lifetime: &mut syn::Lifetime) {
        *lifetime = syn::Lifetime::new("'_", lifetime.span());
    }
}

fn elided(ty: &Type) -> Type {
    let mut ty = ty.clone();
    ElideLifetimes.visit_type_mut(&mut ty);
    ty
}

/// Whether a parameter type is a tensor view (`TensorView<...>` or `TensorViewMut<...>`),
/// which is told its parameter name for its own error messages.
fn is_tensor_view(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "TensorView" || s.ident == "TensorViewMut"),
        _ => false,
    }
}

/// Whether a parameter type is a writable tensor view (`TensorViewMut<...>`).
fn is_mutable_view(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "TensorViewMut"),
        _ => false,
    }
}

/// The doc comment, one leading space removed from each line.
fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Meta::NameValue(nv) = &attr.meta {
            if nv.path.is_ident("doc") {
                if let Expr::Lit(lit) = &nv.value {
                    if let Lit::Str(text) = &lit.lit {
                        let value = text.value();
                        lines.push(value.strip_prefix(' ').map(str::to_owned).unwrap_or(value));
                    }
                }
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

fn parse_name(attr: TokenStream2, default: &syn::Ident) -> syn::Result<String> {
    if attr.is_empty() {
        return Ok(default.to_string());
    }
    let mut name = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            let value: LitStr = meta.value()?.parse()?;
            if value.value().is_empty() {
                return Err(syn::Error::new(
                    value.span(),
                    "the export name must not be empty",
                ));
            }
            name = Some(value.value());
            Ok(())
        } else {
            Err(meta.error("unknown option; expected `name = \"...\"`"))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(name.unwrap_or_else(|| default.to_string()))
}

fn expand(attr: TokenStream2, function: ItemFn) -> syn::Result<TokenStream2> {
    let sig = &function.sig;
    if let Some(token) = &sig.asyncness {
        return Err(syn::Error::new(
            token.span(),
            "exported functions cannot be async",
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new(
            abi.span(),
            "exported functions are ordinary Rust functions (no `extern`)",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "exported functions cannot be variadic",
        ));
    }
    for param in &sig.generics.params {
        if !matches!(param, GenericParam::Lifetime(_)) {
            return Err(syn::Error::new(
                param.span(),
                "exported functions cannot have type or const parameters",
            ));
        }
    }
    let name = parse_name(attr, &sig.ident)?;
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(syn::Error::new(
            Span::call_site(),
            "export names must be identifiers ([A-Za-z0-9_])",
        ));
    }

    let mut param_names = Vec::new();
    let mut param_types = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new(
                    receiver.span(),
                    "exported functions cannot take `self`",
                ));
            }
            FnArg::Typed(typed) => {
                let Pat::Ident(ident) = typed.pat.as_ref() else {
                    return Err(syn::Error::new(
                        typed.pat.span(),
                        "parameters of exported functions must be plain names",
                    ));
                };
                param_names.push(ident.ident.to_string().trim_start_matches('_').to_owned());
                param_types.push(elided(&typed.ty));
            }
        }
    }
    let return_type = match &sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => elided(ty),
    };

    let fn_ident = &sig.ident;
    let entry = format_ident!("__tvm_ffi_{}", name);
    let metadata = format_ident!("__tvm_ffi__metadata_{}", name);
    let doc_symbol = format_ident!("__tvm_ffi__doc_{}", name);
    let private = quote!(::pactum::export::__private);
    let param_count = param_types.len();
    let mutable: Vec<usize> = param_types
        .iter()
        .enumerate()
        .filter(|(_, t)| is_mutable_view(t))
        .map(|(i, _)| i)
        .collect();

    let args: Vec<_> = (0..param_types.len())
        .map(|i| format_ident!("__pactum_arg{}", i))
        .collect();
    let extract = param_types.iter().enumerate().map(|(i, ty)| {
        let arg = &args[i];
        let name = &param_names[i];
        let named = if is_tensor_view(ty) { quote!(.__with_argument_name(#name)) } else { quote!() };
        if is_mutable_view(ty) {
            quote_spanned! {ty.span()=>
                // SAFETY: the overlap check above makes this view the only access to its
                // memory, and the caller keeps the arguments alive for the call.
                let #arg: #ty = unsafe { #private::arg_mut::<#ty>(&__PACTUM_SIGNATURE, __args, #i) }?#named;
            }
        } else {
            quote_spanned! {ty.span()=>
                let #arg: #ty = #private::arg::<#ty>(&__PACTUM_SIGNATURE, __args, #i)?#named;
            }
        }
    });
    let alias_check = if mutable.is_empty() {
        quote!()
    } else {
        quote!(#private::check_no_alias(&__PACTUM_SIGNATURE, __args, &[#(#mutable),*])?;)
    };
    let doc = doc_text(&function.attrs);
    let doc_getter = if doc.is_empty() {
        quote!()
    } else {
        quote! {
            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[allow(unsafe_code, clippy::missing_safety_doc)]
            pub unsafe extern "C" fn #doc_symbol(
                _handle: *mut ::core::ffi::c_void,
                _args: *const #private::TVMFFIAny,
                _num_args: i32,
                result: *mut #private::TVMFFIAny,
            ) -> ::core::ffi::c_int {
                // SAFETY: the caller passes a result slot, as the packed convention requires.
                unsafe { #private::string_getter(result, #doc) }
            }
        }
    };

    Ok(quote! {
        #function

        #[allow(non_upper_case_globals, non_snake_case, unsafe_code)]
        const _: () = {
            fn __pactum_types() -> #private::SignatureTypes {
                (
                    ::std::vec![#((
                        <#param_types as #private::ExportType>::type_str(),
                        <#param_types as #private::ExportType>::type_schema(),
                    )),*],
                    (
                        <#return_type as #private::ExportType>::type_str(),
                        <#return_type as #private::ExportType>::type_schema(),
                    ),
                )
            }

            static __PACTUM_SIGNATURE: #private::Signature =
                #private::Signature::new(#name, &[#(#param_names),*], __pactum_types);

            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[allow(clippy::missing_safety_doc)]
            pub unsafe extern "C" fn #entry(
                _handle: *mut ::core::ffi::c_void,
                args: *const #private::TVMFFIAny,
                num_args: i32,
                result: *mut #private::TVMFFIAny,
            ) -> ::core::ffi::c_int {
                let body = |__args: &[::pactum::AnyView<'_>]| -> ::pactum::Result<::pactum::Any> {
                    #private::check_arity(&__PACTUM_SIGNATURE, __args, #param_count)?;
                    #alias_check
                    #(#extract)*
                    #private::IntoReturn::into_return(#fn_ident(#(#args),*))
                };
                // SAFETY: the caller passes `num_args` valid arguments and a result slot (the
                // packed calling convention this symbol is exported under).
                unsafe { #private::entry(args, num_args, result, body) }
            }

            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[allow(clippy::missing_safety_doc)]
            pub unsafe extern "C" fn #metadata(
                _handle: *mut ::core::ffi::c_void,
                _args: *const #private::TVMFFIAny,
                _num_args: i32,
                result: *mut #private::TVMFFIAny,
            ) -> ::core::ffi::c_int {
                // SAFETY: the caller passes a result slot, as the packed convention requires.
                unsafe { #private::string_getter(result, __PACTUM_SIGNATURE.metadata()) }
            }

            #doc_getter
        };
    })
}
