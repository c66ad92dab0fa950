//! `pactum sig`: IREE function signatures on the command line: render, the implied calling
//! convention, conversion between formats, and a readable explanation. The work is
//! [`pactum_iree::signature::tools`]'s; this module names the formats for clap and prints.

use anyhow::Result;
use clap::ValueEnum;
use pactum_iree::signature::tools;

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

impl From<Format> for tools::Format {
    fn from(format: Format) -> tools::Format {
        match format {
            Format::IreeAbi => tools::Format::IreeAbi,
            Format::Raw => tools::Format::Raw,
            Format::Sip => tools::Format::Sip,
            Format::Cconv => tools::Format::Cconv,
            Format::Declaration => tools::Format::Declaration,
        }
    }
}

/// `pactum sig render`: IREE's own rendering of a raw or SIP signature.
pub fn render(text: &str, format: Option<Format>) -> Result<()> {
    println!("{}", tools::render(text, format.map(Into::into))?);
    Ok(())
}

/// `pactum sig cconv`: the calling convention a signature implies, optionally checked
/// against one.
pub fn cconv(text: &str, format: Option<Format>, check: Option<&str>) -> Result<()> {
    println!("{}", tools::cconv(text, format.map(Into::into), check)?);
    Ok(())
}

/// `pactum sig convert`: the same signature in another format.
pub fn convert(text: &str, from: Option<Format>, to: Format, name: &str) -> Result<()> {
    println!(
        "{}",
        tools::convert(text, from.map(Into::into), to.into(), name)?
    );
    Ok(())
}

/// `pactum sig explain`: what a signature says, in words (what its format says on its own is
/// printed before an error saying why it describes no signature).
pub fn explain(text: &str, format: Option<Format>) -> Result<()> {
    match tools::explain(text, format.map(Into::into)) {
        Ok(explanation) => println!("{explanation}"),
        Err(tools::SigError::Partial { explained, error }) => {
            println!("{explained}");
            return Err(error.into());
        }
        Err(error) => return Err(error.into()),
    }
    Ok(())
}
