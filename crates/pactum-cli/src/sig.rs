//! `pactum sig`: IREE function signatures on the command line: render, the implied calling
//! convention, conversion between formats, and a readable explanation. The work is
//! [`pactum_iree::sig`]'s; this module names the formats for clap and prints.

use anyhow::Result;
use clap::ValueEnum;
use pactum_iree::sig;

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

impl From<Format> for sig::Format {
    fn from(format: Format) -> sig::Format {
        match format {
            Format::IreeAbi => sig::Format::IreeAbi,
            Format::Raw => sig::Format::Raw,
            Format::Sip => sig::Format::Sip,
            Format::Cconv => sig::Format::Cconv,
            Format::Declaration => sig::Format::Declaration,
        }
    }
}

/// `pactum sig render`: IREE's own rendering of a raw or SIP signature.
pub fn render(text: &str, format: Option<Format>) -> Result<()> {
    println!("{}", sig::render(text, format.map(Into::into))?);
    Ok(())
}

/// `pactum sig cconv`: the calling convention a signature implies, optionally checked
/// against one.
pub fn cconv(text: &str, format: Option<Format>, check: Option<&str>) -> Result<()> {
    println!("{}", sig::cconv(text, format.map(Into::into), check)?);
    Ok(())
}

/// `pactum sig convert`: the same signature in another format.
pub fn convert(text: &str, from: Option<Format>, to: Format, name: &str) -> Result<()> {
    println!(
        "{}",
        sig::convert(text, from.map(Into::into), to.into(), name)?
    );
    Ok(())
}

/// `pactum sig explain`: what a signature says, in words (what its format says on its own is
/// printed before an error saying why it describes no signature).
pub fn explain(text: &str, format: Option<Format>) -> Result<()> {
    match sig::explain(text, format.map(Into::into)) {
        Ok(explanation) => println!("{explanation}"),
        Err(sig::SigError::Partial { explained, error }) => {
            println!("{explained}");
            return Err(error.into());
        }
        Err(error) => return Err(error.into()),
    }
    Ok(())
}
