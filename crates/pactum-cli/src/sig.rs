//! `pactum sig`: IREE function signatures on the command line: render, the implied calling
//! convention, conversion between formats, and a readable explanation.

use anyhow::{Context, Result, anyhow, bail};
use clap::ValueEnum;
use pactum_iree::signature::abi_json::IreeAbi;
use pactum_iree::signature::cconv::{self, CallingConvention, CconvItem};
use pactum_iree::signature::declaration::{Declaration, InvocationModel};
use pactum_iree::signature::raw::RawSignature;
use pactum_iree::signature::sip::{SipKey, SipMangler, SipSignature, SipStructure};
use pactum_iree::signature::{ScalarType, Signature, Signedness, Type};

/// The signature formats `pactum sig` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// V1 `iree.abi` reflection JSON: `{"a":[...],"r":[...],"v":1}`.
    IreeAbi,
    /// Legacy raw function signature (`f`): `I…R…` with `B`/`S`/`O` items.
    Raw,
    /// Legacy structured index path signature (`sip`): `I…R…` with `S`/`D`/`_` nodes.
    Sip,
    /// VM calling convention: `0rf_rI`.
    Cconv,
    /// `iree.abi.declaration` text: `sync func @f(%x: tensor<4xf32>) -> (...)`.
    Declaration,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::IreeAbi => "iree.abi JSON",
            Format::Raw => "raw signature",
            Format::Sip => "SIP signature",
            Format::Cconv => "calling convention",
            Format::Declaration => "iree.abi.declaration",
        }
    }
}

/// A signature in the format it was written in.
enum Parsed {
    IreeAbi(IreeAbi),
    Raw(RawSignature),
    Sip(SipSignature),
    Cconv(CallingConvention),
    Declaration(Declaration),
}

impl Parsed {
    fn format(&self) -> Format {
        match self {
            Parsed::IreeAbi(_) => Format::IreeAbi,
            Parsed::Raw(_) => Format::Raw,
            Parsed::Sip(_) => Format::Sip,
            Parsed::Cconv(_) => Format::Cconv,
            Parsed::Declaration(_) => Format::Declaration,
        }
    }

    /// The user-level signature, where the format carries one.
    fn signature(&self) -> Result<Signature> {
        Ok(match self {
            Parsed::IreeAbi(abi) => abi.signature().clone(),
            Parsed::Raw(raw) => raw.to_signature(),
            Parsed::Sip(sip) => sip.to_signature(None)?,
            Parsed::Declaration(declaration) => declaration.to_signature()?,
            Parsed::Cconv(_) => bail!(
                "a calling convention has only VM-level types; it does not describe a signature"
            ),
        })
    }
}

fn parse_as(format: Format, text: &str) -> Result<Parsed> {
    Ok(match format {
        Format::IreeAbi => Parsed::IreeAbi(IreeAbi::parse(text)?),
        // IREE's own parsers skip some malformed parts; accept what they accept.
        Format::Raw => Parsed::Raw(RawSignature::parse(text)?),
        Format::Sip => Parsed::Sip(SipSignature::parse(text)?),
        Format::Cconv => Parsed::Cconv(CallingConvention::parse(text)?),
        Format::Declaration => Parsed::Declaration(Declaration::parse(text)?),
    })
}

/// Reads `text` in the format given, or the one its first characters announce. Raw and SIP
/// signatures look alike (`I…R…`): a strict raw reading is tried first, then a strict SIP
/// reading, then IREE's lenient readings in the same order.
fn parse(text: &str, format: Option<Format>) -> Result<Parsed> {
    if let Some(format) = format {
        return parse_as(format, text);
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        parse_as(Format::IreeAbi, text)
    } else if ["sync ", "async ", "func "]
        .iter()
        .any(|p| trimmed.starts_with(p))
    {
        parse_as(Format::Declaration, text)
    } else if text.starts_with('0') {
        parse_as(Format::Cconv, text)
    } else if text.starts_with('I') {
        // Well-formed text decides (strict readings first); then IREE's lenient readings.
        if let Ok(raw) = RawSignature::parse_strict(text) {
            return Ok(Parsed::Raw(raw));
        }
        if let Ok(sip) = SipSignature::parse_strict(text) {
            return Ok(Parsed::Sip(sip));
        }
        match parse_as(Format::Raw, text) {
            Ok(parsed) => Ok(parsed),
            Err(raw_error) => parse_as(Format::Sip, text).map_err(|sip_error| {
                anyhow!("neither a raw signature ({raw_error}) nor a SIP signature ({sip_error})")
            }),
        }
    } else if text.is_empty() {
        bail!("empty signature")
    } else {
        bail!(
            "cannot tell the format of {text:?}: expected iree.abi JSON ({{...}}), a raw or SIP \
             signature (I...R...), a calling convention (0...) or a declaration (sync func @...); \
             name it with --from"
        )
    }
}

/// `pactum sig render`: IREE's own rendering of a raw or SIP signature.
pub fn render(text: &str, format: Option<Format>) -> Result<()> {
    match parse(text, format)? {
        Parsed::Raw(raw) => println!("{}", raw.render()),
        Parsed::Sip(sip) => {
            print!("inputs:\n{}", sip.inputs.render());
            print!("results:\n{}", sip.results.render());
        }
        other => bail!(
            "render prints IREE's rendering of raw and SIP signatures; this is a {} (see `pactum sig explain`)",
            other.format().name()
        ),
    }
    Ok(())
}

/// `pactum sig cconv`: the calling convention a signature implies, optionally checked
/// against one.
pub fn cconv(text: &str, format: Option<Format>, check: Option<&str>) -> Result<()> {
    let signature = parse(text, format)?.signature()?;
    let implied = CallingConvention::implied_by(&signature)?;
    match check {
        None => println!("{implied}"),
        Some(given) => {
            let given = CallingConvention::parse(given).context("--check")?;
            cconv::check(&signature, &given)?;
            println!("{given} matches (implied: {implied})");
        }
    }
    Ok(())
}

/// `pactum sig convert`: the same signature in another format.
pub fn convert(text: &str, from: Option<Format>, to: Format, name: &str) -> Result<()> {
    let parsed = parse(text, from)?;
    let model = match &parsed {
        Parsed::Declaration(declaration) => declaration.model,
        _ => InvocationModel::Sync,
    };
    let mut signature = parsed.signature()?;
    if matches!(to, Format::IreeAbi | Format::Declaration) {
        // Raw signatures spell MLIR's signless integers `sintN` (IREE's mangler wrote them so);
        // reading them back as signless is the faithful inverse.
        signature.args.iter_mut().for_each(signless);
        signature.results.iter_mut().for_each(signless);
    }
    let out = match to {
        Format::IreeAbi => IreeAbi::from_signature(&signature, Some(1))?.to_string(),
        Format::Raw => RawSignature::from_signature(&signature)?.to_string(),
        Format::Sip => to_sip(&signature)?.to_string(),
        Format::Cconv => CallingConvention::implied_by(&signature)?.to_string(),
        Format::Declaration => Declaration::implied_by(name, &signature, model)?.to_string(),
    };
    println!("{out}");
    Ok(())
}

/// Rewrites signed integer types (`si32`) as signless (`i32`), everywhere in `ty`.
fn signless(ty: &mut Type) {
    match ty {
        Type::Scalar(ScalarType::Int { signedness, .. }) if *signedness == Signedness::Signed => {
            *signedness = Signedness::Signless
        }
        Type::NdArray(array) => signless(&mut array.element),
        Type::List(slots) | Type::Tuple(slots) => slots.iter_mut().for_each(signless),
        Type::Dict(entries) => entries.iter_mut().for_each(|(_, ty)| signless(ty)),
        Type::TypedList(inner) | Type::Named(_, inner) => signless(inner),
        _ => {}
    }
}

/// A SIP signature with the structure of `signature`: leaves numbered in order, positional
/// arguments under a root sequence, keyword arguments under a root dict.
fn to_sip(signature: &Signature) -> Result<SipSignature> {
    fn walk(
        ty: &Type,
        path: &mut Vec<SipKey>,
        leaves: &mut Vec<Vec<SipKey>>,
        at: &str,
    ) -> Result<()> {
        match ty.unnamed() {
            Type::List(slots) | Type::Tuple(slots) => {
                for (i, slot) in slots.iter().enumerate() {
                    if *slot == Type::Null {
                        continue; // a gap: SIP sequences may skip keys
                    }
                    path.push(SipKey::Index(i32::try_from(i)?));
                    walk(slot, path, leaves, &format!("{at}[{i}]"))?;
                    path.pop();
                }
            }
            Type::Dict(entries) => {
                for (key, slot) in entries {
                    path.push(SipKey::Name(key.clone()));
                    walk(slot, path, leaves, &format!("{at}[{key:?}]"))?;
                    path.pop();
                }
            }
            Type::TypedList(_) => bail!(
                "cannot express {at} as a SIP signature: a list of any length has no fixed leaves"
            ),
            _ => leaves.push(path.clone()),
        }
        Ok(())
    }
    let mut mangler = SipMangler::new();
    let named = signature
        .args
        .iter()
        .filter(|a| matches!(a, Type::Named(..)))
        .count();
    if named != 0 && named != signature.args.len() {
        bail!(
            "cannot express the arguments as a SIP signature: its root is either positional or keyword, not both"
        );
    }
    let mut leaves = Vec::new();
    for (i, arg) in signature.args.iter().enumerate() {
        let mut path = vec![match arg {
            Type::Named(key, _) => SipKey::Name(key.clone()),
            _ => SipKey::Index(i32::try_from(i)?),
        }];
        walk(arg, &mut path, &mut leaves, &format!("args[{i}]"))?;
    }
    for (index, path) in leaves.iter().enumerate() {
        mangler.set_input(i32::try_from(index)?, path)?;
    }
    let mut leaves = Vec::new();
    match signature.results.as_slice() {
        [] => {}
        [single] => walk(single, &mut Vec::new(), &mut leaves, "results[0]")?,
        results => {
            for (j, result) in results.iter().enumerate() {
                let mut path = vec![SipKey::Index(i32::try_from(j)?)];
                walk(result, &mut path, &mut leaves, &format!("results[{j}]"))?;
            }
        }
    }
    for (index, path) in leaves.iter().enumerate() {
        mangler.set_result(i32::try_from(index)?, path)?;
    }
    Ok(mangler.finish())
}

/// `pactum sig explain`: what a signature says, in words.
pub fn explain(text: &str, format: Option<Format>) -> Result<()> {
    let parsed = parse(text, format)?;
    println!("format: {}", parsed.format().name());
    match &parsed {
        Parsed::Cconv(cconv) => {
            println!("arguments: {}", describe_items(cconv.args()));
            println!("results: {}", describe_items(cconv.results()));
            if cconv.is_variadic() {
                println!("variadic: yes (C...D spans; only imports may be variadic)");
            }
            return Ok(());
        }
        Parsed::Raw(raw) => println!("rendering: {}", raw.render()),
        Parsed::Sip(sip) => {
            explain_structure("inputs", &sip.inputs);
            explain_structure("results", &sip.results);
        }
        Parsed::IreeAbi(abi) => {
            if let Some(version) = abi.version() {
                println!("version: {version}");
            }
        }
        Parsed::Declaration(declaration) => println!("invocation: {}", declaration.model),
    }
    let signature = parsed.signature()?;
    println!("arguments:");
    if signature.args.is_empty() {
        println!("  (none)");
    }
    for (i, arg) in signature.args.iter().enumerate() {
        match arg {
            Type::Named(name, inner) => println!("  {name} (keyword): {inner}"),
            other => println!("  {i}: {other}"),
        }
    }
    println!("results:");
    if signature.results.is_empty() {
        println!("  (none)");
    }
    for (i, result) in signature.results.iter().enumerate() {
        println!("  {i}: {result}");
    }
    if cconv::inlined_results(&signature) {
        println!("the single structured result is returned as its slots, one VM result each");
    }
    match CallingConvention::implied_by(&signature) {
        Ok(implied) => println!("calling convention: {implied}"),
        Err(error) => println!("calling convention: none ({error})"),
    }
    Ok(())
}

fn explain_structure(side: &str, structure: &SipStructure) {
    println!("{side}:");
    let leaves = structure.leaves();
    if leaves.is_empty() {
        println!("  (none)");
    }
    for (path, raw_index) in leaves {
        let path: String = path
            .iter()
            .map(|key| match key {
                SipKey::Index(i) => format!("[{i}]"),
                SipKey::Name(name) => format!("[{name:?}]"),
            })
            .collect();
        let path = if path.is_empty() {
            "(root)".to_owned()
        } else {
            path
        };
        println!("  {path} = raw {raw_index}");
    }
}

fn describe_items(items: &[CconvItem]) -> String {
    if items.is_empty() {
        return "(none)".to_owned();
    }
    items
        .iter()
        .map(describe_item)
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_item(item: &CconvItem) -> String {
    match item {
        CconvItem::I32 => "i32".to_owned(),
        CconvItem::I64 => "i64".to_owned(),
        CconvItem::F32 => "f32".to_owned(),
        CconvItem::F64 => "f64".to_owned(),
        CconvItem::Ref => "ref".to_owned(),
        CconvItem::Variadic(items) => format!("variadic ({})...", describe_items(items)),
    }
}
