//! What `pactum run` and `pactum bench` share with IREE's tools (`iree-run-module`,
//! `iree-benchmark-module`): their `--flag=value` command lines, the context their `--module`,
//! `--parameters` and `--device` flags make, the `--input` syntax read by the called
//! function's calling convention, and results printed, written and compared the way
//! `iree-run-module` does it.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use pactum_iree::hal::{
    BufferParams, DENSE_ROW_MAJOR, HalAllocator as _, HalBuffer, HalBufferView, HalElementType,
    HostAllocator, MIN_FILE_MAPPING_BYTES, VulkanDevice, Workers, c_format_g, shape_text,
};
use pactum_iree::module::{
    DeviceChoice, IreeModule, buffer_view_to_tensor, hal_element_type, tensor_to_buffer_view,
};
use pactum_iree::parameters::ParameterIndex;
use pactum_iree::vm::{Limits, Ref, Value};

/// How a flag takes its value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// `--name=value` (or `--name value`), the last one counting.
    Single,
    /// `--name=value`, repeatable: every value in order.
    List,
    /// `--name`, `--name=true` or `--name=false`.
    Bool,
    /// Accepted for compatibility and ignored: it changes nothing in pactum's results.
    Ignored,
}

/// A command line of IREE's tools: flags only, each `--name=value` (`-name=value` too, as
/// IREE's parser reads it).
pub struct ToolFlags {
    values: HashMap<&'static str, Vec<String>>,
}

impl ToolFlags {
    /// Parses `args` against `known` (name, kind); an unknown flag or a positional word is an
    /// error naming it and the `tool` whose flags these are.
    pub fn parse(tool: &str, known: &[(&'static str, FlagKind)], args: &[String]) -> Result<Self> {
        let mut values: HashMap<&'static str, Vec<String>> = HashMap::new();
        let mut words = args.iter();
        while let Some(word) = words.next() {
            let Some(flag) = word
                .strip_prefix("--")
                .or_else(|| word.strip_prefix('-'))
                .filter(|f| !f.is_empty())
            else {
                bail!(
                    "unexpected argument `{word}`: {tool} takes flags only (--module=FILE \
                     --function=NAME --input=VALUE ...)"
                );
            };
            let (name, value) = match flag.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (flag, None),
            };
            let Some(&(name, kind)) = known.iter().find(|(known, _)| *known == name) else {
                let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
                bail!(
                    "unknown flag `--{name}` for {tool} (it takes: --{})",
                    names.join(", --")
                );
            };
            let value = match (kind, value) {
                (FlagKind::Bool, None) => "true".to_owned(),
                (FlagKind::Bool, Some(v)) if matches!(v.as_str(), "true" | "false" | "1" | "0") => {
                    v
                }
                (FlagKind::Bool, Some(v)) => {
                    bail!("--{name}={v}: expected true or false")
                }
                (_, Some(v)) => v,
                (_, None) => words
                    .next()
                    .cloned()
                    .ok_or_else(|| anyhow!("--{name} needs a value (--{name}=VALUE)"))?,
            };
            if kind == FlagKind::Ignored {
                continue;
            }
            let slot = values.entry(name).or_default();
            if kind != FlagKind::List {
                slot.clear();
            }
            slot.push(value);
        }
        Ok(ToolFlags { values })
    }

    /// The value of a single-valued flag, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// Every value of a repeatable flag, in order.
    pub fn list(&self, name: &str) -> &[String] {
        self.values.get(name).map_or(&[], Vec::as_slice)
    }

    /// Whether a bool flag is set.
    pub fn is_set(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1"))
    }

    /// A single-valued flag parsed as `T`, or `default`.
    pub fn parsed<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text
                .parse()
                .map_err(|_| anyhow!("--{name}={text}: not a valid value")),
        }
    }
}

/// The flags that make the context: modules, parameters, device.
pub const CONTEXT_FLAGS: &[(&str, FlagKind)] = &[
    ("module", FlagKind::List),
    ("function", FlagKind::Single),
    ("parameters", FlagKind::List),
    ("device", FlagKind::Single),
    ("task_topology_group_count", FlagKind::Single),
    ("task_topology_max_group_count", FlagKind::Single),
    // How IREE reads files (preloaded or mapped): the results are the same.
    ("module_mode", FlagKind::Ignored),
    ("parameter_mode", FlagKind::Ignored),
];

/// The device programs run on, from `--device`: `vulkan` or `vulkan://N` (the Vulkan
/// loader's `N`-th device), or the local device with [`workers`].
pub fn device(flags: &ToolFlags) -> Result<DeviceChoice> {
    let device = flags.get("device").unwrap_or("local-task");
    match pactum_iree::hal::vulkan::parse_device_name(device) {
        Some(index) => {
            let index = index.map_err(|e| anyhow!("--device={device}: {e}"))?;
            let vulkan =
                VulkanDevice::open(index).map_err(|e| anyhow!("--device={device}: {e}"))?;
            Ok(DeviceChoice::Vulkan(vulkan))
        }
        None => Ok(DeviceChoice::Local(workers(flags)?)),
    }
}

/// Who runs compiled dispatches on the local device, from `--device` (`local-task`, the
/// default, or `local-sync`; `local-task://` URIs too) and the worker count flags.
pub fn workers(flags: &ToolFlags) -> Result<Workers> {
    let device = flags.get("device").unwrap_or("local-task");
    let driver = device.split("://").next().unwrap_or(device);
    let threads = |name: &str| -> Result<Option<usize>> {
        let count: usize = flags.parsed(name, 0)?;
        Ok((count > 0).then_some(count))
    };
    match driver {
        "local-sync" => Ok(Workers::CallerThread),
        "local-task" => {
            let exact = threads("task_topology_group_count")?;
            let cap = threads("task_topology_max_group_count")?;
            let available = || std::thread::available_parallelism().map_or(1, |n| n.get());
            match exact.or(cap.map(|cap| cap.min(available()))) {
                Some(count) => Workers::with_threads(count).map_err(|e| anyhow!("{e}")),
                None => Ok(Workers::shared()),
            }
        }
        _ => bail!("--device={device}: pactum runs the local-task, local-sync and vulkan devices"),
    }
}

/// Adds the `--parameters=[SCOPE=]FILE` archives (scope `""` when none is named, as
/// iree-run-module does) to `builder`.
pub fn add_parameters(
    mut builder: pactum_iree::module::ModuleBuilder,
    specs: &[String],
) -> Result<pactum_iree::module::ModuleBuilder> {
    for spec in specs {
        let (scope, index) = open_parameters(spec)?;
        builder = builder.parameters(scope, index);
    }
    Ok(builder)
}

/// The scope and the archive of `--parameters=[SCOPE=]FILE` (scope `""` when none is named).
pub fn open_parameters(spec: &str) -> Result<(&str, ParameterIndex)> {
    let (scope, file) = spec.split_once('=').unwrap_or(("", spec));
    if file.is_empty() {
        bail!("--parameters={spec}: expected [SCOPE=]FILE");
    }
    let index = ParameterIndex::open(file).map_err(|e| anyhow!("--parameters={spec}: {e}"))?;
    Ok((scope, index))
}

/// The module of the last `--module`, loaded in one context after the others (in order) and
/// the `--parameters` archives, on `device`.
pub fn load_modules(flags: &ToolFlags, device: DeviceChoice) -> Result<IreeModule> {
    let modules = flags.list("module");
    let Some((main, linked)) = modules.split_last() else {
        bail!("no module given; use --module=file.vmfb");
    };
    let mut builder = IreeModule::builder()
        .limits(Limits::default())
        .device(device);
    builder = add_parameters(builder, flags.list("parameters"))?;
    for path in linked {
        builder = builder.module_file(path).map_err(|e| anyhow!("{e}"))?;
    }
    builder.load(main).map_err(|e| anyhow!("{e}"))
}

/// The function `--function` names, or the module's only export that is not internal
/// (`__…`) or special (holding `$`), as iree-run-module chooses.
pub fn function_name(module: &IreeModule, flags: &ToolFlags) -> Result<String> {
    if let Some(name) = flags.get("function").filter(|n| !n.is_empty()) {
        module.value_kinds(name).map_err(|e| anyhow!("{e}"))?;
        return Ok(name.to_owned());
    }
    let candidates: Vec<&str> = module
        .export_names()
        .filter(|name| !name.starts_with("__") && !name.contains('$'))
        .collect();
    match candidates.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => bail!("no exported functions found in module; at least one must be present"),
        _ => bail!(
            "more than one exported function present; --function= must be specified explicitly \
             (exports: {})",
            candidates.join(", ")
        ),
    }
}

/// Files the `@`/`+`/`*` inputs read from, each read on from where the last one stopped.
#[derive(Default)]
struct InputFiles {
    open: HashMap<String, InputFile>,
}

/// An input file: memory-mapped, so that only the pages an input needs are read (a `.npy`
/// array large enough becomes a buffer over the file's pages, [`npy_view`]), or read whole
/// where it cannot be mapped (a pipe, an empty file).
struct InputFile {
    file: File,
    bytes: FileBytes,
    /// Where the next `+` input starts.
    position: usize,
}

enum FileBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl InputFile {
    fn bytes(&self) -> &[u8] {
        match &self.bytes {
            FileBytes::Mapped(map) => map,
            FileBytes::Read(bytes) => bytes,
        }
    }
}

impl InputFiles {
    /// The file at `path` with its read position: reopened from the start when `fresh`.
    fn open(&mut self, path: &str, fresh: bool) -> Result<&mut InputFile> {
        if fresh || !self.open.contains_key(path) {
            let read_error = || format!("cannot read {path}");
            let mut file = File::open(path).with_context(read_error)?;
            let regular = file.metadata().with_context(read_error)?;
            let bytes = if regular.is_file() && regular.len() > 0 {
                // Read-only and shared: pactum never writes through it (buffers over the file
                // are separate copy-on-write mappings). Another process truncating or
                // rewriting the file meanwhile changes what is read, as for every mapped file.
                // SAFETY: a read-only mapping of a regular file, only ever read.
                match unsafe { memmap2::Mmap::map(&file) } {
                    Ok(map) => FileBytes::Mapped(map),
                    Err(_) => FileBytes::Read(read_all(&mut file).with_context(read_error)?),
                }
            } else {
                FileBytes::Read(read_all(&mut file).with_context(read_error)?)
            };
            self.open.insert(
                path.to_owned(),
                InputFile {
                    file,
                    bytes,
                    position: 0,
                },
            );
        }
        Ok(self.open.get_mut(path).expect("just inserted"))
    }
}

fn read_all(file: &mut File) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The `.npy` array of `length` bytes at `offset` of `input` as a buffer view over the file's
/// pages, mapped copy-on-write (the program's writes to it stay in private pages; the file
/// never changes), where its elements are already what the tensor holds
/// ([`pactum_npy::in_place_layout`]) and the host allocator maps them (they start at a
/// multiple of 64 bytes in the file, as NumPy pads its headers to, and take at least
/// [`MIN_FILE_MAPPING_BYTES`]); `None` where the array must be read and converted.
///
/// `iree-run-module` reads each `.npy` input into a new allocation
/// (`iree_numpy_npy_load_ndarray`: `iree_hal_buffer_view_generate_buffer` with a stream read
/// into the mapped buffer, runtime/src/iree/tooling/numpy_io.c): the same bytes, one copy.
fn npy_view(input: &InputFile, offset: usize, length: usize) -> Result<Option<HalBufferView>> {
    let array = &input.bytes()[offset..offset + length];
    // A malformed array is read by `pactum_npy::read`, which reports what is wrong.
    let Ok(Some(layout)) = pactum_npy::in_place_layout(array, length) else {
        return Ok(None);
    };
    let Some(element_type) = hal_element_type(layout.dtype).filter(|t| !t.is_sub_byte()) else {
        return Ok(None);
    };
    if (layout.data_len as u64) < MIN_FILE_MAPPING_BYTES {
        return Ok(None);
    }
    let allocator = HostAllocator::new(None);
    let mapped = allocator
        .map_file(
            BufferParams::default(),
            &input.file,
            (offset + layout.data_start) as u64,
            layout.data_len as u64,
        )
        .map_err(|e| anyhow!("{e}"))?;
    let Some(buffer) = mapped else {
        return Ok(None);
    };
    remember_mapped_file(&input.file);
    let shape = layout.shape.iter().map(|&d| d.max(0) as u64).collect();
    let view = HalBufferView::new(buffer, shape, element_type, DENSE_ROW_MAJOR)
        .map_err(|e| anyhow!("{e}"))?;
    Ok(Some(view))
}

/// The bytes one `.npy` array takes at the start of `bytes` (header and data), read from its
/// header; the array itself is then read (and checked) by `pactum_npy`.
fn npy_array_length(bytes: &[u8]) -> Result<usize> {
    let bad = |what: &str| anyhow!("not a .npy array: {what}");
    if !bytes.starts_with(b"\x93NUMPY") || bytes.len() < 10 {
        return Err(bad("no \\x93NUMPY magic"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => return Err(bad("unknown version")),
    };
    let header = bytes
        .get(start..start + header_len)
        .ok_or_else(|| bad("truncated header"))?;
    let header = String::from_utf8_lossy(header);
    let field = |key: &str| -> Option<String> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest.to_owned())
    };
    let descr = field("descr").ok_or_else(|| bad("no descr"))?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or_else(|| bad("descr is not a string"))?;
    let digits: String = descr
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let itemsize = match digits.parse::<usize>() {
        Ok(size) if descr.starts_with(['<', '>', '|', '=']) => size,
        // ml_dtypes names (bfloat16, float8_*, int4...): whole bytes an element.
        _ if descr == "bfloat16" => 2,
        _ => 1,
    };
    let shape = field("shape").ok_or_else(|| bad("no shape"))?;
    let shape = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("shape is not a tuple"))?;
    let mut count: usize = 1;
    for dim in shape.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let dim: usize = dim.parse().map_err(|_| bad("bad dimension"))?;
        count = count
            .checked_mul(dim)
            .ok_or_else(|| bad("shape overflows"))?;
    }
    count
        .checked_mul(itemsize)
        .and_then(|data| data.checked_add(start + header_len))
        .ok_or_else(|| bad("shape overflows"))
}

/// Reads inputs (`--input`, or `--expected_output` against the results) as iree-run-module
/// does, by the calling-convention `kinds` of what they fill (`iIfFr`): scalars for `i`, `I`,
/// `f`, `F`; `hal.buffer_view`s for `r` from inline tensors (`2x2xf32=1 2 3 4`), raw files
/// (`2x2xf32=@file.bin`) or `.npy` files (`@file.npy` from its start, `+file.npy` the next
/// array of a file read before, `*file.npy` every remaining array); `(null)` and `(ignored)`
/// are zero or a null reference.
pub fn parse_values(kinds: &str, specs: &[String]) -> Result<Vec<Value>> {
    let mut kinds = kinds.chars();
    let mut files = InputFiles::default();
    let mut values = Vec::new();
    for spec in specs {
        let text = spec.trim();
        parse_value(&mut kinds, text, &mut files, &mut values)
            .with_context(|| format!("parsing input `{text}`"))?;
    }
    Ok(values)
}

fn next_kind(kinds: &mut std::str::Chars<'_>) -> Result<char> {
    kinds
        .next()
        .ok_or_else(|| anyhow!("function expected fewer input values"))
}

fn expect_ref(kinds: &mut std::str::Chars<'_>) -> Result<()> {
    match next_kind(kinds)? {
        'r' => Ok(()),
        other => bail!(
            "function signature mismatch: expected cconv type `r` but provided type `{other}`"
        ),
    }
}

fn view_ref(view: HalBufferView) -> Value {
    Value::Ref(Some(Ref::Object(Arc::new(view))))
}

fn parse_value(
    kinds: &mut std::str::Chars<'_>,
    text: &str,
    files: &mut InputFiles,
    values: &mut Vec<Value>,
) -> Result<()> {
    if text.is_empty() {
        bail!("no value specified for input");
    }
    if text == "(null)" || text == "(ignored)" {
        values.push(match next_kind(kinds)? {
            'i' => Value::I32(0),
            'I' => Value::I64(0),
            'f' => Value::F32(0.0),
            'F' => Value::F64(0.0),
            'r' => Value::Ref(None),
            other => bail!("unimplemented cconv type `{other}`"),
        });
        return Ok(());
    }
    if let Some(mode) = text.chars().next().filter(|c| matches!(c, '@' | '+' | '*')) {
        let path = &text[1..];
        if !path.ends_with(".npy") {
            bail!("only numpy (.npy) files are supported for metadata-less variant I/O");
        }
        let input = files.open(path, mode == '@')?;
        loop {
            let position = input.position;
            if mode == '*' && position >= input.bytes().len() {
                break;
            }
            expect_ref(kinds)?;
            let rest = &input.bytes()[position..];
            let length = npy_array_length(rest).with_context(|| path.to_owned())?;
            if rest.len() < length {
                bail!("{path}: truncated array at byte {position}");
            }
            let view = match npy_view(input, position, length).with_context(|| path.to_owned())? {
                Some(view) => view,
                None => {
                    let array = &input.bytes()[position..position + length];
                    let tensor = pactum_npy::read(array).map_err(|e| anyhow!("{path}: {e}"))?;
                    tensor_to_buffer_view(&tensor).map_err(|e| anyhow!("{path}: {e}"))?
                }
            };
            input.position += length;
            values.push(view_ref(view));
            if mode != '*' {
                break;
            }
        }
        return Ok(());
    }
    if text.starts_with('&') {
        bail!("`&` output storage arguments are not supported by pactum");
    }
    let kind = next_kind(kinds)?;
    let parsed = match kind {
        'i' => text.parse::<i32>().ok().map(Value::I32),
        'I' => text.parse::<i64>().ok().map(Value::I64),
        'f' => text.parse::<f32>().ok().map(Value::F32),
        'F' => text.parse::<f64>().ok().map(Value::F64),
        'r' => {
            if !text.contains('=') && !text.contains('x') {
                bail!(
                    "invalid tensor specification, requires at least a shape/type \
                     (`4x2xf32=...`)"
                );
            }
            return push_view(values, text, files);
        }
        other => bail!("unimplemented cconv type `{other}`"),
    };
    let name = match kind {
        'i' => "i32",
        'I' => "i64",
        'f' => "f32",
        _ => "f64",
    };
    values.push(parsed.ok_or_else(|| anyhow!("parsing value `{text}` as {name}"))?);
    Ok(())
}

/// A tensor: inline elements, or `SHAPExTYPE=@file` / `=+file` raw bytes.
fn push_view(values: &mut Vec<Value>, text: &str, files: &mut InputFiles) -> Result<()> {
    if let Some((metadata, contents)) = text.split_once('=')
        && let Some(mode) = contents.chars().next().filter(|c| matches!(c, '@' | '+'))
    {
        let path = &contents[1..];
        let empty = HalBufferView::parse(&format!("{metadata}=")).ok();
        let (shape, element_type) = match empty {
            Some(view) => (view.shape, view.element_type),
            None => {
                // Parse the shape and type alone (no elements given).
                let head =
                    HalBufferView::parse(&format!("{metadata}=0")).map_err(|e| anyhow!("{e}"))?;
                (head.shape, head.element_type)
            }
        };
        let length = HalBufferView::byte_length(&shape, element_type)
            .ok_or_else(|| anyhow!("shape of `{metadata}` overflows"))?
            as usize;
        let input = files.open(path, mode == '@')?;
        let position = input.position;
        let chunk = input
            .bytes()
            .get(position..position + length)
            .ok_or_else(|| anyhow!("{path}: fewer than {length} bytes left to read"))?;
        let buffer = HalBuffer::from_bytes(chunk, None).map_err(|e| anyhow!("{e}"))?;
        input.position += length;
        let view = HalBufferView::new(buffer, shape, element_type, DENSE_ROW_MAJOR)
            .map_err(|e| anyhow!("{e}"))?;
        values.push(view_ref(view));
        return Ok(());
    }
    let view = HalBufferView::parse(text).map_err(|e| anyhow!("{e}"))?;
    values.push(view_ref(view));
    Ok(())
}

/// A value as iree-run-module prints it after `result[i]: ` (no final newline).
pub fn format_value(value: &Value, max_elements: u64) -> String {
    match value {
        Value::I32(v) => format!("i32={v}"),
        Value::I64(v) => format!("i64={v}"),
        Value::F32(v) => format!("f32={}", c_format_g(f64::from(*v), false)),
        Value::F64(v) => format!("f64={}", c_format_g(*v, false)),
        Value::Ref(None) => "(null)".to_owned(),
        Value::Ref(Some(Ref::List(list))) => {
            let mut text = "vm.list\n".to_owned();
            for (i, item) in list.to_values().iter().enumerate() {
                let item = item
                    .as_ref()
                    .map_or_else(|| "(null)".to_owned(), |v| format_value(v, max_elements));
                text.push_str(&format!("child_list[{i}]: {item}\n"));
            }
            text
        }
        Value::Ref(Some(other)) => match other.downcast_ref::<HalBufferView>() {
            Some(view) => format!("hal.buffer_view\n{}", view.format(max_elements)),
            None => format!("{}\n(no printer)", other.type_name()),
        },
    }
}

/// The results printed as iree-run-module prints them: `result[i]: ...` lines.
pub fn print_results(results: &[Value], max_elements: u64) -> String {
    results
        .iter()
        .enumerate()
        .map(|(i, value)| format!("result[{i}]: {}\n", format_value(value, max_elements)))
        .collect()
}

/// A result as the buffer view iree-run-module writes to a file: views as they are, buffers
/// as `i8` arrays of their length, scalars as rank-0 views, null as an empty `i8` array.
fn output_view(value: &Value) -> Result<HalBufferView> {
    let scalar = |bytes: &[u8], element_type: HalElementType| -> Result<HalBufferView> {
        let buffer = HalBuffer::from_bytes(bytes, None).map_err(|e| anyhow!("{e}"))?;
        HalBufferView::new(buffer, Vec::new(), element_type, DENSE_ROW_MAJOR)
            .map_err(|e| anyhow!("{e}"))
    };
    let bytes_view = |bytes: &[u8]| -> Result<HalBufferView> {
        let buffer = HalBuffer::from_bytes(bytes, None).map_err(|e| anyhow!("{e}"))?;
        HalBufferView::new(
            buffer,
            vec![bytes.len() as u64],
            HalElementType::I8,
            DENSE_ROW_MAJOR,
        )
        .map_err(|e| anyhow!("{e}"))
    };
    match value {
        Value::I32(v) => scalar(&v.to_le_bytes(), HalElementType::I32),
        Value::I64(v) => scalar(&v.to_le_bytes(), HalElementType::I64),
        Value::F32(v) => scalar(&v.to_le_bytes(), HalElementType::F32),
        Value::F64(v) => scalar(&v.to_le_bytes(), HalElementType::F64),
        Value::Ref(None) => bytes_view(&[]),
        Value::Ref(Some(Ref::Buffer(buffer))) => bytes_view(&buffer.to_vec()),
        Value::Ref(Some(other)) => {
            if let Some(view) = other.downcast_ref::<HalBufferView>() {
                Ok(view.clone())
            } else if let Some(buffer) = other.downcast_ref::<HalBuffer>() {
                bytes_view(&buffer.to_vec())
            } else {
                bail!(
                    "unsupported output source type; expected: !hal.buffer, !hal.buffer_view, \
                     !vm.buffer"
                )
            }
        }
    }
}

/// The files (device and inode) whose pages some input buffer maps ([`npy_view`]).
static MAPPED_FILES: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

fn file_identity(metadata: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    (metadata.dev(), metadata.ino())
}

fn remember_mapped_file(file: &File) {
    if let Ok(metadata) = file.metadata() {
        let mut mapped = MAPPED_FILES.lock().unwrap_or_else(|e| e.into_inner());
        mapped.push(file_identity(&metadata));
    }
}

/// Whether `path` is a file that an input buffer maps: truncating it in place would take the
/// pages from under the buffer (a later read of them is a SIGBUS).
fn is_mapped_file(path: &std::path::Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    let mapped = MAPPED_FILES.lock().unwrap_or_else(|e| e.into_inner());
    metadata.is_file() && mapped.contains(&file_identity(&metadata))
}

/// Writes `bytes` to a new file beside `path` and renames it over `path`: the old file's
/// pages stay mapped (and valid) for the buffers over them, and `path` ends with `bytes`.
fn replace_file(path: &str, bytes: &[u8]) -> Result<()> {
    let target = std::path::Path::new(path);
    let name = target
        .file_name()
        .ok_or_else(|| anyhow!("cannot write {path}: not a file name"))?;
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".pactum-{}", std::process::id()));
    let temporary = target.with_file_name(temporary_name);
    let written = File::create(&temporary)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&temporary, target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.with_context(|| format!("cannot write {path}"))
}

/// Writes the results as `--output` says, one spec a result: `` ignores it, `-` prints it,
/// `@file` writes and `+file` appends (`.npy` as an array, anything else as raw bytes).
pub fn write_outputs(results: &[Value], specs: &[String], max_elements: u64) -> Result<()> {
    if results.len() != specs.len() {
        bail!(
            "{} outputs specified but the provided variant list only has {} elements",
            specs.len(),
            results.len()
        );
    }
    for (value, spec) in results.iter().zip(specs) {
        match spec.as_str() {
            "" => {}
            "-" => println!("{}", format_value(value, max_elements)),
            _ => {
                let (append, path) = if let Some(path) = spec.strip_prefix('@') {
                    (false, path)
                } else if let Some(path) = spec.strip_prefix('+') {
                    (true, path)
                } else {
                    bail!("unsupported output mode specification '{spec}'");
                };
                let view = output_view(value)?;
                let bytes = if path.ends_with(".npy") {
                    let tensor = buffer_view_to_tensor(&view)
                        .map_err(|e| anyhow!("{e}"))?
                        .ok_or_else(|| {
                            anyhow!("{path}: no .npy type for {}", view.element_type.describe())
                        })?;
                    pactum_npy::write(&tensor).map_err(|e| anyhow!("{path}: {e}"))?
                } else {
                    view.to_bytes()
                };
                if !append && is_mapped_file(std::path::Path::new(path)) {
                    replace_file(path, &bytes)?;
                    continue;
                }
                let mut file = File::options()
                    .create(true)
                    .write(true)
                    .append(append)
                    .truncate(!append)
                    .open(path)
                    .with_context(|| format!("cannot open {path}"))?;
                file.write_all(&bytes)
                    .with_context(|| format!("cannot write {path}"))?;
            }
        }
    }
    Ok(())
}

/// iree-run-module's tolerances for `--expected_output` (`--expected_f32_threshold` ...,
/// `--expected_rtol`, `--equality_mode`).
pub struct Tolerances {
    exact: bool,
    f16_atol: f32,
    f32_atol: f32,
    f64_atol: f64,
    bf16_atol: f32,
    rtol: f64,
}

/// The comparison flags and their IREE defaults.
pub const COMPARISON_FLAGS: &[(&str, FlagKind)] = &[
    ("expected_f16_threshold", FlagKind::Single),
    ("expected_f32_threshold", FlagKind::Single),
    ("expected_f64_threshold", FlagKind::Single),
    ("expected_bf16_threshold", FlagKind::Single),
    ("expected_rtol", FlagKind::Single),
    ("equality_mode", FlagKind::Single),
];

impl Tolerances {
    /// From the flags, with IREE's defaults.
    pub fn from_flags(flags: &ToolFlags) -> Result<Tolerances> {
        let exact = match flags.get("equality_mode").unwrap_or("approximate") {
            "approximate" => false,
            "exact" => true,
            other => bail!("--equality_mode={other}: expected approximate or exact"),
        };
        Ok(Tolerances {
            exact,
            f16_atol: flags.parsed("expected_f16_threshold", 0.001)?,
            f32_atol: flags.parsed("expected_f32_threshold", 0.0001)?,
            f64_atol: flags.parsed("expected_f64_threshold", 0.0001)?,
            bf16_atol: flags.parsed("expected_bf16_threshold", 0.01)?,
            rtol: flags.parsed("expected_rtol", 1e-5)?,
        })
    }

    /// Whether `actual` is close enough to `expected` (NumPy's asymmetric `isclose`, NaN equal
    /// to NaN, a non-finite expected value only equal to itself).
    fn close(actual: f64, expected: f64, atol: f64, rtol: f64) -> bool {
        if actual == expected || (actual.is_nan() && expected.is_nan()) {
            return true;
        }
        if !expected.is_finite() {
            return false;
        }
        (actual - expected).abs() <= atol + rtol * expected.abs()
    }

    /// Whether elements (raw bytes) `a` (actual) and `e` (expected) of `element_type` match.
    fn element_matches(&self, element_type: HalElementType, a: &[u8], e: &[u8]) -> bool {
        if self.exact {
            return a == e;
        }
        let u16_of = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]);
        match element_type {
            HalElementType::F16 => Self::close(
                f64::from(half::f16::from_bits(u16_of(a)).to_f32()),
                f64::from(half::f16::from_bits(u16_of(e)).to_f32()),
                f64::from(self.f16_atol),
                self.rtol,
            ),
            HalElementType::F32 => Self::close(
                f64::from(f32::from_le_bytes(a.try_into().expect("4 bytes"))),
                f64::from(f32::from_le_bytes(e.try_into().expect("4 bytes"))),
                f64::from(self.f32_atol),
                self.rtol,
            ),
            HalElementType::F64 => Self::close(
                f64::from_le_bytes(a.try_into().expect("8 bytes")),
                f64::from_le_bytes(e.try_into().expect("8 bytes")),
                self.f64_atol,
                self.rtol,
            ),
            HalElementType::BF16 => Self::close(
                f64::from(half::bf16::from_bits(u16_of(a)).to_f32()),
                f64::from(half::bf16::from_bits(u16_of(e)).to_f32()),
                f64::from(self.bf16_atol),
                self.rtol,
            ),
            _ => a == e,
        }
    }
}

/// A shape and element type as IREE writes them (`2x3xf32`, `f32` for a scalar).
fn shape_and_type(view: &HalBufferView) -> String {
    let name = view
        .element_type
        .name()
        .unwrap_or_else(|| view.element_type.describe());
    if view.shape.is_empty() {
        name
    } else {
        format!("{}x{name}", shape_text(&view.shape))
    }
}

/// Why `actual` does not equal `expected` (IREE's buffer view matcher), or `None`.
fn view_mismatch(
    expected: &HalBufferView,
    actual: &HalBufferView,
    tolerances: &Tolerances,
) -> Option<String> {
    let describe = format!(
        "; expected that the view is equal to contents of a view of {}",
        shape_and_type(expected)
    );
    if expected.shape != actual.shape || expected.element_type != actual.element_type {
        return Some(format!(
            "metadata is {}; expected that the view matches {}{describe}",
            shape_and_type(actual),
            shape_and_type(expected)
        ));
    }
    let size = actual.element_type.byte_size().max(1) as usize;
    let (a, e) = (actual.to_bytes(), expected.to_bytes());
    let count = (actual.element_count() as usize).min(a.len() / size);
    (0..count).find_map(|i| {
        let (ai, ei) = (&a[i * size..][..size], &e[i * size..][..size]);
        (!tolerances.element_matches(actual.element_type, ai, ei)).then(|| {
            format!(
                "element at index {i} ({}) does not match the expected ({}){describe}",
                actual.element_type.format_element(ai),
                actual.element_type.format_element(ei)
            )
        })
    })
}

fn type_string(value: &Value) -> String {
    match value {
        Value::I32(_) => "i32".into(),
        Value::I64(_) => "i64".into(),
        Value::F32(_) => "f32".into(),
        Value::F64(_) => "f64".into(),
        Value::Ref(None) => "empty".into(),
        Value::Ref(Some(r)) => r.type_name().to_owned(),
    }
}

/// Compares the results with the expected values as iree-run-module does, returning what it
/// prints and whether everything matched. `(ignored)` (a null expected reference) matches
/// anything. As in IREE 3.13, an expected scalar is reported as a type mismatch even when its
/// type is the result's (`comparison.cc` compares values only when the types differ), so a
/// script checking scalars fails in both tools alike.
pub fn compare_results(
    expected: &[Value],
    actual: &[Value],
    tolerances: &Tolerances,
) -> (String, bool) {
    if expected.len() != actual.len() {
        return (
            format!(
                "[FAILED] expected {} list elements but {} provided\n",
                expected.len(),
                actual.len()
            ),
            false,
        );
    }
    let mut report = String::new();
    let mut all = true;
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        if matches!(e, Value::Ref(None)) {
            continue;
        }
        let views = match (e, a) {
            (Value::Ref(Some(e)), Value::Ref(Some(a))) => e
                .downcast_ref::<HalBufferView>()
                .zip(a.downcast_ref::<HalBufferView>()),
            _ => None,
        };
        match views {
            Some((ev, av)) => {
                if let Some(why) = view_mismatch(ev, av, tolerances) {
                    all = false;
                    report.push_str(&format!(
                        "[FAILED] result[{i}]: {why}\n  expected:\n{}\n  actual:\n{}\n",
                        ev.format(1024),
                        av.format(1024)
                    ));
                }
            }
            None => {
                all = false;
                report.push_str(&format!(
                    "[FAILED] result[{i}]: variant types mismatch; expected {} but got {}\n",
                    type_string(e),
                    type_string(a)
                ));
            }
        }
    }
    if all {
        report.push_str("[SUCCESS] all function outputs matched their expected values.\n");
    }
    (report, all)
}

/// The outcome of a run whose results did not match `--expected_output`: the report is
/// printed already, the exit status is 1, as iree-run-module's.
#[derive(Debug)]
pub struct ExpectationsFailed;

impl std::fmt::Display for ExpectationsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the results did not match --expected_output")
    }
}

impl std::error::Error for ExpectationsFailed {}
