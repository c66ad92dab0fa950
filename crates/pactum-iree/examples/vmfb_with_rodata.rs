//! Writes a `.vmfb` with one external read-only segment of a given size, built with pactum's
//! writer from a small IREE-compiled module (for the open/verify benchmark).
//!
//! usage: cargo run --release -p pactum --example vmfb_with_rodata -- OUT.vmfb BYTES [zip|flatbuffer]

use std::io::BufWriter;

use pactum_iree::vmfb::{Container, ModuleDef, RodataDef, VmfbFile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(out), Some(bytes)) = (args.next(), args.next()) else {
        return Err("usage: vmfb_with_rodata OUT.vmfb BYTES [zip|flatbuffer]".into());
    };
    let size: usize = bytes.parse()?;
    let container = match args.next().as_deref() {
        None | Some("zip") => Container::Zip,
        Some("flatbuffer") => Container::FlatBuffer,
        Some(other) => return Err(format!("unknown container {other}").into()),
    };
    let base = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/vmfb/vm_direct.vmfb"
    );
    let file = VmfbFile::open(base)?;
    let mut module = ModuleDef::from_module(&file.module()?)?;
    // A pattern rather than zeros, so that nothing (file system or reader) can shortcut it.
    let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    module.rodata.push(RodataDef {
        data,
        external: true,
        compression: 0,
    });
    let mut writer = BufWriter::new(std::fs::File::create(&out)?);
    module.write_to(container, &mut writer)?;
    Ok(())
}
