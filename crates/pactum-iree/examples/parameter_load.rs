//! Measures `io_parameters.load` of a large archive: the buffers mapped from the file (an index
//! opened from it) or copied (the same file mapped read-only and indexed as bytes, which is
//! what every load did before buffers could map a file), then one read pass over every
//! buffer, as a program reading its weights once does. Prints the times and the process's
//! resident memory (`/proc/self/status`), anonymous and file-backed, after each step and at
//! its peak. Run each mode in a process of its own.
//!
//! With a module, the same for a program: the module loaded with the archive as scope
//! `model` (its initializer calls `io_parameters.load`), then FUNCTION (no arguments) called.
//!
//! usage:
//!   cargo run --release -p pactum-iree --example parameter_load -- write ARCHIVE.irpa BYTES [ENTRIES]
//!   cargo run --release -p pactum-iree --example parameter_load -- map|copy ARCHIVE.irpa [MODULE.vmfb FUNCTION]

use std::sync::Arc;
use std::time::Instant;

use pactum_iree::hal::{HalBuffer, HalDevice, HalFence, HalSemaphore, LocalDevice, Workers};
use pactum_iree::parameters::{IoParametersModule, ParameterIndex, ParameterProvider};
use pactum_iree::vm::{NativeModule, Ref, Value, VmBuffer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["write", path, bytes] => write(path, bytes.parse()?, 16),
        ["write", path, bytes, entries] => write(path, bytes.parse()?, entries.parse()?),
        [mode @ ("map" | "copy"), path] => measure(mode, path),
        [mode @ ("map" | "copy"), path, vmfb, function] => run(mode, path, vmfb, function),
        _ => Err(
            "usage: parameter_load write ARCHIVE BYTES [ENTRIES] | map|copy ARCHIVE [VMFB FUNCTION]"
                .into(),
        ),
    }
}

/// An archive of `entries` data entries `w0`.. holding `bytes` in all.
fn write(path: &str, bytes: usize, entries: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut index = ParameterIndex::new();
    let each = bytes / entries;
    for k in 0..entries {
        // A pattern rather than zeros, so that nothing can shortcut reading it.
        let data: Vec<u8> = (0..each).map(|i| ((i + k) % 251) as u8).collect();
        index.add_data(format!("w{k}"), data);
    }
    index.write_irpa_file(path)?;
    Ok(())
}

/// The index of the archive at `path`: opened (its entries' buffers mapped) or indexed as
/// bytes of a read-only mapping (copied, as before buffers could map a file).
fn index(mode: &str, path: &str) -> Result<ParameterIndex, Box<dyn std::error::Error>> {
    Ok(match mode {
        "map" => ParameterIndex::open(path)?,
        _ => {
            let file = std::fs::File::open(path)?;
            // SAFETY: a read-only mapping of a file this program wrote and nothing changes
            // while it runs.
            let map = unsafe { memmap2::Mmap::map(&file) }?;
            ParameterIndex::from_bytes(Arc::new(map))?
        }
    })
}

/// Loads `vmfb` with the archive as scope `model` and calls `function`.
fn run(
    mode: &str,
    path: &str,
    vmfb: &str,
    function: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let index = index(mode, path)?;
    report(&format!("{mode}: opened"));
    let started = Instant::now();
    let module = pactum_iree::module::IreeModule::builder()
        .parameters("model", index)
        .load(vmfb)?;
    report(&format!(
        "{mode}: module load {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    ));
    let started = Instant::now();
    let result = module.call(function, &[])?;
    report(&format!(
        "{mode}: call {:.1} ms ({result:?})",
        started.elapsed().as_secs_f64() * 1e3
    ));
    let started = Instant::now();
    module.call(function, &[])?;
    report(&format!(
        "{mode}: second call {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    ));
    Ok(())
}

fn measure(mode: &str, path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let index = index(mode, path)?;
    let spans: Vec<(String, u64)> = index
        .entries()
        .iter()
        .map(|e| (e.key.clone(), e.storage.len()))
        .collect();
    let total: u64 = spans.iter().map(|(_, len)| len).sum();
    let mut provider = ParameterProvider::new();
    provider.add("model", index);
    let module = IoParametersModule::new(provider);
    let device: Arc<dyn HalDevice> = Arc::new(LocalDevice::new(Workers::CallerThread));
    report(&format!(
        "{mode}: opened {} entries, {total} bytes",
        spans.len()
    ));

    let started = Instant::now();
    let buffers = load(&module, &device, &spans)?;
    let load_time = started.elapsed();
    report(&format!(
        "{mode}: load {:.1} ms",
        load_time.as_secs_f64() * 1e3
    ));

    let started = Instant::now();
    let mut chunk = vec![0u8; 1 << 20];
    let mut sum = 0u64;
    for buffer in &buffers {
        let mut offset = 0;
        while offset < buffer.len() {
            let n = chunk.len().min((buffer.len() - offset) as usize);
            buffer.read(offset as i64, &mut chunk[..n])?;
            sum = chunk[..n]
                .iter()
                .fold(sum, |s, &b| s.wrapping_add(u64::from(b)));
            offset += n as u64;
        }
    }
    let read_time = started.elapsed();
    report(&format!(
        "{mode}: read pass {:.1} ms (checksum {sum})",
        read_time.as_secs_f64() * 1e3
    ));
    let mapped = buffers.iter().filter(|b| b.is_file_mapping()).count();
    println!("{mode}: {mapped} of {} buffers mapped", buffers.len());
    Ok(())
}

/// Calls `io_parameters.load` for every entry, whole.
fn load(
    module: &IoParametersModule,
    device: &Arc<dyn HalDevice>,
    spans: &[(String, u64)],
) -> Result<Vec<HalBuffer>, Box<dyn std::error::Error>> {
    let (mut table, mut data, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    for (key, length) in spans {
        table.extend((data.len() as u32).to_le_bytes());
        table.extend((key.len() as u32).to_le_bytes());
        data.extend(key.as_bytes());
        for v in [0, 0, *length] {
            bytes.extend(v.to_le_bytes());
        }
    }
    let buffer = |b: &[u8]| Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(b)))));
    let signal = HalSemaphore::new(0);
    let args = vec![
        Value::Ref(Some(Ref::Object(Arc::new(device.clone())))),
        Value::I64(-1),
        Value::Ref(None),
        Value::Ref(Some(Ref::Object(Arc::new(HalFence::at(signal, 1))))),
        buffer(b"model"),
        Value::I64(-1),
        Value::I32(0),
        Value::I32(0),
        buffer(&table),
        buffer(&data),
        buffer(&bytes),
    ];
    let results = module.call(0, &args)?;
    let [Value::Ref(Some(Ref::List(list)))] = &results[..] else {
        return Err(format!("load returned {results:?}").into());
    };
    (0..list.len() as u32)
        .map(|k| match list.get(k) {
            Some(Value::Ref(Some(r))) => r
                .downcast_ref::<HalBuffer>()
                .cloned()
                .ok_or_else(|| format!("element {k} is not a buffer").into()),
            _ => Err(format!("element {k} is missing").into()),
        })
        .collect()
}

/// Prints `what` with the resident memory now (anonymous, file-backed) and at its peak.
fn report(what: &str) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or("?".to_owned(), |v| v.trim().to_owned())
    };
    println!(
        "{what}; RssAnon {}, RssFile {}, VmHWM {}",
        field("RssAnon:"),
        field("RssFile:"),
        field("VmHWM:")
    );
}
