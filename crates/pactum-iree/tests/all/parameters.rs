//! Parameter archives (`pactum_iree::parameters`) compared with IREE's own reading and writing.
//!
//! IREE's side is the pinned runtime of the workspace's `.venv` (iree-base-runtime 3.13):
//! `tests/python/iree_parameters.py` builds archives with `iree.runtime.ParameterIndex`
//! (`add_buffer`, `add_splat`, `create_archive_file`) and reports what
//! `iree.runtime.ParameterIndex.load` finds in an archive (key, length, metadata, splat
//! pattern, data offset and bytes); `iree-dump-parameters` prints its table of entries and
//! `iree-convert-parameters` turns `.safetensors` and `.gguf` files into `.irpa`;
//! `iree-create-parameters` and `iree-compile --iree-parameter-export` (`.venv`) write
//! archives too. Every archive is compared entry by entry, in IREE's order. Hostile archives
//! (truncated, corrupted, hostile lengths) must give errors naming the byte, never a panic.
//!
//! Without the python and `iree.runtime`, or without the IREE tools, the comparisons fail,
//! unless `PACTUM_SKIP_PEER=1`, when they are skipped with a message.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use pactum_iree::parameters::{ParameterIndex, ParameterStorage, SharedBytes};
use pactum_testing::hostile::{assert_says, failure, quickly};
use pactum_testing::iree::{python_or_skip, tool_or_skip};
use proptest::prelude::*;
use serde_json::{Value, json};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch folder for one test, removed when the test ends (pass or fail), so that
/// repeated runs do not fill the temporary folder.
fn scratch(test: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("pactum-params-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A scratch folder that removes itself on drop.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The workspace's `.venv` python when it has `iree.runtime`; `None` when it does not and
/// `PACTUM_SKIP_PEER=1` (a failure otherwise).
fn peer_python(test: &str) -> Option<PathBuf> {
    python_or_skip(&["iree.runtime"], test)
}

/// The `.venv` python with `iree.runtime` and `iree-dump-parameters`; `None` when either is
/// missing and `PACTUM_SKIP_PEER=1` (a failure otherwise).
fn python_and_dump_tool(test: &str) -> Option<(PathBuf, PathBuf)> {
    let python = peer_python(test)?;
    let dump_tool = tool_or_skip("iree-dump-parameters", test)?;
    Some((python, dump_tool))
}

fn run_peer(python: &Path, args: &[&Path]) -> Vec<u8> {
    let output = Command::new(python)
        .arg(manifest_dir().join("tests/python/iree_parameters.py"))
        .args(args)
        .output()
        .expect("start the python peer");
    assert!(
        output.status.success(),
        "iree_parameters.py {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// What `iree.runtime.ParameterIndex.load` finds in `archive`.
fn iree_entries(python: &Path, archive: &Path) -> Vec<Value> {
    let out = run_peer(python, &[Path::new("dump"), archive]);
    serde_json::from_slice(&out).unwrap()
}

/// Builds `out` with `iree.runtime.ParameterIndex.create_archive_file` from `spec`.
fn iree_create(python: &Path, spec: &Value, out: &Path) {
    let spec_path = out.with_extension("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    run_peer(python, &[Path::new("create"), out, &spec_path]);
}

/// One row of `iree-dump-parameters`: data range (start, end) or `None` for a splat, length,
/// key.
type DumpRow = (Option<(u64, u64)>, u64, String);

/// The entry table `iree-dump-parameters --parameters=ARCHIVE` prints.
fn iree_dump_tool(tool: &Path, archive: &Path) -> Vec<DumpRow> {
    let output = Command::new(tool)
        .arg(format!("--parameters={}", archive.display()))
        .output()
        .expect("start iree-dump-parameters");
    assert!(
        output.status.success(),
        "iree-dump-parameters {} failed: {}",
        archive.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<DumpRow> = stdout
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.splitn(4, '|').map(str::trim).collect();
            let [start, end, length, key] = cells[..] else {
                return None;
            };
            let key = key.strip_prefix('`')?.strip_suffix('`')?.to_owned();
            let length = length.parse().ok()?;
            let range = match (start, end) {
                ("-", "-") => None,
                (s, e) => Some((s.parse().ok()?, e.parse().ok()?)),
            };
            Some((range, length, key))
        })
        .collect();
    assert!(
        stdout.contains(&format!("({} entries", rows.len())),
        "every entry of iree-dump-parameters' table is parsed:\n{stdout}"
    );
    rows
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Asserts that `index` holds what IREE reported, entry by entry and in order: key, length,
/// metadata, and the splat pattern or the data's file offset and bytes.
fn assert_same_entries(index: &ParameterIndex, iree: &[Value], what: &str) {
    let ours: Vec<Value> = index
        .entries()
        .iter()
        .map(|entry| {
            let mut item = json!({
                "key": entry.key,
                "length": entry.storage.len(),
                "metadata": hex(&entry.metadata),
            });
            match &entry.storage {
                ParameterStorage::Splat { pattern, .. } => item["splat"] = json!(hex(pattern)),
                storage @ ParameterStorage::Data { offset, .. } => {
                    item["offset"] = json!(offset);
                    item["data"] = json!(hex(storage.data().unwrap()));
                }
            }
            item
        })
        .collect();
    assert_eq!(
        ours, iree,
        "{what}: pactum's entries (left) and IREE's (right)"
    );
}

/// Asserts that `iree-dump-parameters`' table is the one `index` implies.
fn assert_same_table(index: &ParameterIndex, rows: &[DumpRow], what: &str) {
    let ours: Vec<DumpRow> = index
        .entries()
        .iter()
        .map(|entry| {
            let range = match &entry.storage {
                ParameterStorage::Splat { .. } => None,
                ParameterStorage::Data { offset, length, .. } => {
                    Some((*offset as u64, (*offset + *length) as u64))
                }
            };
            (range, entry.storage.len(), entry.key.clone())
        })
        .collect();
    assert_eq!(
        ours, rows,
        "{what}: pactum's table (left), iree-dump-parameters' (right)"
    );
}

/// Asserts that IREE reads `archive` as `index` holds it: what `iree.runtime` reports
/// ([`assert_same_entries`]) and `iree-dump-parameters`' table ([`assert_same_table`]).
fn assert_iree_reads_the_same(
    index: &ParameterIndex,
    python: &Path,
    dump_tool: &Path,
    archive: &Path,
    what: &str,
) {
    assert_same_entries(index, &iree_entries(python, archive), what);
    assert_same_table(index, &iree_dump_tool(dump_tool, archive), what);
}

/// Archive contents exercising what the format holds: data of several sizes (empty, odd, over
/// a 64-byte alignment step), splats of every pattern size, metadata, keys with `.`, `/`,
/// spaces and non-ASCII letters.
fn sample_spec() -> Value {
    let ramp = |n: usize, seed: u8| -> String {
        hex(&(0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>())
    };
    json!([
        {"key": "layer0.weight", "data": ramp(4 * 12, 1), "metadata": "f32[3,4]"},
        {"key": "layer0.bias", "data": ramp(3, 2)},
        {"key": "zeros", "splat": "00", "length": 1000},
        {"key": "empty", "data": ""},
        {"key": "half/ones", "splat": "003c", "length": 64, "metadata": "f16"},
        {"key": "i32 splat", "splat": "efbeadde", "length": 40},
        {"key": "i64", "splat": "0102030405060708", "length": 16},
        {"key": "c128", "splat": "000102030405060708090a0b0c0d0e0f", "length": 48},
        {"key": "gewicht_ä", "data": ramp(130, 3), "metadata": "x"},
        {"key": "last", "data": ramp(64, 4)},
    ])
}

/// The spec as a pactum index (built with `add_data` / `add_splat` / `set_metadata`).
fn index_from_spec(spec: &Value) -> ParameterIndex {
    let mut index = ParameterIndex::new();
    for item in spec.as_array().unwrap() {
        let key = item["key"].as_str().unwrap();
        let bytes = |field: &str| -> Vec<u8> {
            let text = item[field].as_str().unwrap();
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
                .collect()
        };
        if item.get("splat").is_some() {
            index
                .add_splat(key, &bytes("splat"), item["length"].as_u64().unwrap())
                .unwrap();
        } else {
            index.add_data(key, bytes("data"));
        }
        if let Some(metadata) = item.get("metadata") {
            assert!(index.set_metadata(key, metadata.as_str().unwrap()));
        }
    }
    index
}

#[test]
fn irpa_made_by_iree_reads_as_iree_reads_it() {
    let test = "irpa_made_by_iree_reads_as_iree_reads_it";
    let Some((python, dump_tool)) = python_and_dump_tool(test) else {
        return;
    };
    let dir = scratch(test);
    let archive = dir.join("iree.irpa");
    iree_create(&python, &sample_spec(), &archive);

    let index = ParameterIndex::open(&archive).unwrap();
    assert_eq!(index.len(), 10);
    assert_iree_reads_the_same(&index, &python, &dump_tool, &archive, "IREE's archive");

    // The data entries point into the mapping: no copy of the file.
    let ParameterStorage::Data { offset, .. } = index.get("layer0.weight").unwrap().storage else {
        panic!("a data entry");
    };
    assert_eq!(offset % 64, 0, "IREE aligns data to 64 bytes");
}

#[test]
fn irpa_written_by_pactum_is_what_iree_writes_and_reads() {
    let test = "irpa_written_by_pactum_is_what_iree_writes_and_reads";
    let Some((python, dump_tool)) = python_and_dump_tool(test) else {
        return;
    };
    let dir = scratch(test);
    let spec = sample_spec();
    let ours = dir.join("pactum.irpa");
    index_from_spec(&spec).write_irpa_file(&ours).unwrap();

    // IREE reads it with the same entries pactum reads back.
    let reread = ParameterIndex::open(&ours).unwrap();
    assert_iree_reads_the_same(&reread, &python, &dump_tool, &ours, "pactum's archive");

    // And it is the archive IREE's own builder writes for the same entries, byte for byte.
    let theirs = dir.join("iree.irpa");
    iree_create(&python, &spec, &theirs);
    assert!(
        std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(),
        "pactum's .irpa differs from iree.runtime's create_archive_file for the same entries"
    );
}

#[test]
fn irpa_in_memory_and_written_to_a_writer() {
    let mut index = ParameterIndex::new();
    index.add_data("a", vec![1u8, 2, 3]);
    index.add_splat("b", &[9, 8], 10).unwrap();
    let mut bytes = Vec::new();
    index.write_irpa(&mut bytes).unwrap();
    assert_eq!(
        bytes.len() % 4096,
        0,
        "padded to a page, as IREE's archives"
    );
    let source: SharedBytes = Arc::new(bytes);
    let read = ParameterIndex::from_bytes(Arc::clone(&source)).unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(
        read.get("a").unwrap().storage.data(),
        Some(&[1u8, 2, 3][..])
    );
    match &read.get("b").unwrap().storage {
        ParameterStorage::Splat { pattern, length } => {
            assert_eq!((pattern.as_slice(), *length), (&[9u8, 8][..], 10));
        }
        other => panic!("a splat, got {other:?}"),
    }
    // A data entry of an in-memory archive points into the caller's buffer.
    let ParameterStorage::Data { source: inner, .. } = &read.get("a").unwrap().storage else {
        panic!("a data entry");
    };
    assert!(Arc::ptr_eq(inner, &source));
}

#[test]
fn splats_iree_cannot_hold_are_refused() {
    let mut index = ParameterIndex::new();
    let message = failure("3-byte pattern", index.add_splat("k", &[1, 2, 3], 3));
    assert_says(&message, &["3 bytes", "1, 2, 4, 8 or 16"]);
    let message = failure("empty pattern", index.add_splat("k", &[], 3));
    assert_says(&message, &["0 bytes", "1, 2, 4, 8 or 16"]);
    assert!(index.is_empty());
    // A length that is not a whole number of patterns is one IREE's tools write
    // (`iree-convert-parameters --splat`), so it is kept.
    index.add_splat("ragged", &[1, 2], 3).unwrap();
    let mut bytes = Vec::new();
    index.write_irpa(&mut bytes).unwrap();
    let read = read_bytes(bytes).unwrap();
    assert_eq!(read.get("ragged").unwrap().storage.len(), 3);
}

/// Runs one of IREE's parameter tools, which must succeed.
fn run_tool(tool: &Path, args: &[String]) {
    let output = Command::new(tool)
        .args(args)
        .output()
        .expect("start the IREE tool");
    assert!(
        output.status.success(),
        "{} {args:?} failed: {}",
        tool.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn irpa_made_by_iree_tools_reads_as_iree_reads_it() {
    let test = "irpa_made_by_iree_tools_reads_as_iree_reads_it";
    let Some(python) = peer_python(test) else {
        return;
    };
    let tools = [
        "iree-create-parameters",
        "iree-convert-parameters",
        "iree-dump-parameters",
    ];
    let Some([create, convert, dump]) = tools
        .iter()
        .map(|t| tool_or_skip(t, test))
        .collect::<Option<Vec<_>>>()
        .map(|v| <[PathBuf; 3]>::try_from(v).unwrap())
    else {
        return;
    };
    let dir = scratch(test);

    // iree-create-parameters: zeroed data entries and typed splats. (Its data entries with a
    // pattern, `--data=w=4xf32=1.5`, fail in IREE 3.13: "write failed" after one element.)
    let created = dir.join("created.irpa");
    run_tool(
        &create,
        &[
            "--data=weight=4x3xf32".into(),
            "--splat=bias=2x3xi16=7".into(),
            "--data=zeros=9xi8".into(),
            "--splat=scale=2xf64=0.25".into(),
            "--quiet".into(),
            format!("--output={}", created.display()),
        ],
    );
    let index = ParameterIndex::open(&created).unwrap();
    assert_eq!(index.len(), 4);
    assert_iree_reads_the_same(&index, &python, &dump, &created, "iree-create-parameters");

    // iree-convert-parameters: entries turned into splats (one over a length that is not a
    // whole number of patterns), excluded and renamed.
    let source = dir.join("source.irpa");
    iree_create(&python, &sample_spec(), &source);
    let converted = dir.join("converted.irpa");
    run_tool(
        &convert,
        &[
            format!("--parameters={}", source.display()),
            "--splat=layer0.bias=x32=CAFEF00D".into(),
            "--splat=last".into(),
            "--exclude=zeros".into(),
            "--rename=layer0.weight=renamed".into(),
            "--quiet".into(),
            format!("--output={}", converted.display()),
        ],
    );
    let index = ParameterIndex::open(&converted).unwrap();
    assert!(index.get("zeros").is_none() && index.get("renamed").is_some());
    assert!(matches!(
        index.get("layer0.bias").unwrap().storage,
        ParameterStorage::Splat { length: 3, .. }
    ));
    assert_iree_reads_the_same(
        &index,
        &python,
        &dump,
        &converted,
        "iree-convert-parameters",
    );
}

/// An archive with two entries of one key: pactum finds the first, as IREE's lookup does
/// (`iree-dump-parameters --extract` looks the key up).
#[test]
fn duplicate_keys_find_the_entry_iree_finds() {
    let test = "duplicate_keys_find_the_entry_iree_finds";
    let Some((python, dump)) = python_and_dump_tool(test) else {
        return;
    };
    let dir = scratch(test);
    let archive = dir.join("duplicates.irpa");
    let spec = json!([
        {"key": "w", "data": "0102030405"},
        {"key": "other", "data": "ff"},
        {"key": "w", "data": "0a0b0c0d0e0f10"},
    ]);
    iree_create(&python, &spec, &archive);
    assert_eq!(iree_entries(&python, &archive).len(), 3, "IREE keeps both");
    let extracted = dir.join("w.bin");
    run_tool(
        &dump,
        &[
            "--parameter_mode=preload".into(),
            format!("--parameters={}", archive.display()),
            format!("--extract=w={}", extracted.display()),
        ],
    );
    let index = ParameterIndex::open(&archive).unwrap();
    let keys: Vec<&str> = index.entries().iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["w", "other"]);
    assert_eq!(
        index.get("w").unwrap().storage.data().unwrap(),
        std::fs::read(&extracted).unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile archives.

/// A small valid `.irpa` (pactum's writer, the same layout as IREE's).
fn sample_irpa() -> Vec<u8> {
    let mut bytes = Vec::new();
    index_from_spec(&sample_spec())
        .write_irpa(&mut bytes)
        .unwrap();
    bytes
}

fn read_bytes(bytes: Vec<u8>) -> Result<ParameterIndex, pactum_iree::parameters::ParameterError> {
    ParameterIndex::from_bytes(Arc::new(bytes))
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn hostile_irpa_headers_are_refused_naming_the_byte() {
    let good = sample_irpa();
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Damage, Option<u64>, &[&str])> = vec![
        (
            "truncated header",
            Box::new(|b| b.truncate(20)),
            Some(0),
            &["header truncated"],
        ),
        (
            "version 1.0",
            Box::new(|b| b[4] = 1),
            Some(4),
            &["version 1.0"],
        ),
        (
            "header size",
            Box::new(|b| put_u64(b, 8, 96)),
            Some(8),
            &["header size is 96"],
        ),
        (
            "next header beyond the file",
            Box::new(|b| put_u64(b, 16, u64::MAX - 3)),
            Some(16),
            &["next archive header", "outside"],
        ),
        (
            "entry table beyond the file",
            Box::new(|b| put_u64(b, 48, 1 << 40)),
            Some(40),
            &["entry table", "outside"],
        ),
        (
            "storage offset wraps around",
            Box::new(|b| put_u64(b, 72, u64::MAX)),
            Some(72),
            &["storage segment", "outside"],
        ),
        (
            "2^64-1 entries in a small table",
            Box::new(|b| put_u64(b, 32, u64::MAX)),
            None,
            &["entry table truncated"],
        ),
        (
            "entry size larger than the table",
            Box::new(|b| put_u64(b, 96, 1 << 50)),
            Some(96),
            &["entry 0", "size"],
        ),
        (
            "name outside the metadata",
            Box::new(|b| put_u64(b, 96 + 20, u64::MAX - 1)),
            Some(96 + 20),
            &["entry 0", "name", "outside"],
        ),
        (
            "data outside the storage",
            Box::new(|b| put_u64(b, 96 + 68, 1 << 60)),
            Some(96 + 60),
            &["layer0.weight", "outside the", "storage segment"],
        ),
        (
            "external entry",
            Box::new(|b| b[96 + 8] = 3),
            Some(96 + 8),
            &["external file"],
        ),
        (
            "unknown entry type",
            Box::new(|b| b[96 + 8] = 9),
            Some(96 + 8),
            &["unknown entry type 9"],
        ),
    ];
    for (what, damage, offset, says) in cases {
        let mut bytes = good.clone();
        damage(&mut bytes);
        let error = quickly(what, || read_bytes(bytes)).unwrap_err();
        eprintln!("HOSTILE {what}: {error}");
        assert_says(&error.to_string(), says);
        if offset.is_some() {
            assert_eq!(error.offset, offset, "{what}: {error}");
        }
    }
}

#[test]
fn hostile_archive_files_name_the_file() {
    let dir = scratch("hostile_archive_files_name_the_file");
    let path = dir.join("broken.irpa");
    let mut bytes = sample_irpa();
    bytes.truncate(100);
    std::fs::write(&path, &bytes).unwrap();
    let error = ParameterIndex::open(&path).unwrap_err();
    assert_eq!(error.path.as_deref(), Some(path.as_path()));
    assert_says(&error.to_string(), &["broken.irpa", "at byte"]);

    let text = dir.join("notes.txt");
    std::fs::write(&text, b"hello, these are not parameters").unwrap();
    let message = failure("not an archive", ParameterIndex::open(&text));
    assert_says(&message, &["notes.txt", "not a parameter archive"]);

    let empty = dir.join("empty.safetensors");
    std::fs::write(&empty, b"").unwrap();
    let message = failure("empty file", ParameterIndex::open(&empty));
    assert_says(
        &message,
        &["empty.safetensors", "not a parameter archive (0 bytes)"],
    );

    let missing = dir.join("missing.irpa");
    let message = failure("missing file", ParameterIndex::open(&missing));
    assert_says(&message, &["missing.irpa", "cannot open"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Every prefix of a valid archive reads or errors, never panics.
    #[test]
    fn truncated_irpa_never_panics(cut in 0usize..8192) {
        let mut bytes = sample_irpa();
        bytes.truncate(cut);
        let _ = read_bytes(bytes);
    }

    /// Corrupting bytes of the header and entry table reads or errors, never panics, and
    /// every entry read lies inside the archive.
    #[test]
    fn corrupted_irpa_never_panics(
        edits in proptest::collection::vec((0usize..1024, any::<u8>()), 1..12)
    ) {
        let mut bytes = sample_irpa();
        for (at, value) in edits {
            bytes[at] = value;
        }
        let len = bytes.len();
        if let Ok(index) = read_bytes(bytes) {
            for entry in index.entries() {
                if let ParameterStorage::Data { offset, length, .. } = entry.storage {
                    prop_assert!(offset + length <= len);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// safetensors and GGUF, written here (both formats are simple) and read by IREE.

/// A `.safetensors` file: the header lists `tensors` in the order given (not sorted: IREE
/// keeps the header's order), with a `__metadata__` member first and the header padded with
/// spaces to 8 bytes, as the safetensors library writes it.
fn safetensors(tensors: &[(&str, &str, &[u64], Vec<u8>)]) -> Vec<u8> {
    let mut header = String::from(r#"{"__metadata__":{"format":"pt","note":"{not a tensor}"}"#);
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let begin = data.len();
        data.extend_from_slice(bytes);
        header += &format!(
            r#","{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{begin},{}]}}"#,
            data.len()
        );
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    file
}

fn ramp(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed))
        .collect()
}

fn sample_safetensors() -> Vec<u8> {
    safetensors(&[
        ("zeta.weight", "F32", &[2, 3], ramp(24, 1)),
        ("alpha", "I8", &[5], ramp(5, 2)),
        ("empty", "F32", &[0, 4], Vec::new()),
        ("model.layers.0.bias", "F16", &[7], ramp(14, 3)),
    ])
}

/// What `iree-convert-parameters` makes of `input` (an `.irpa`), read by pactum: the same keys
/// and bytes as pactum reads in `input`.
fn assert_iree_converts_to_the_same(index: &ParameterIndex, input: &Path, dir: &Path) {
    let test = "iree-convert-parameters";
    let Some(convert) = tool_or_skip("iree-convert-parameters", test) else {
        return;
    };
    let output = dir.join("converted.irpa");
    let status = Command::new(convert)
        .arg(format!("--parameters={}", input.display()))
        .arg(format!("--output={}", output.display()))
        .arg("--quiet")
        .status()
        .expect("start iree-convert-parameters");
    assert!(
        status.success(),
        "iree-convert-parameters {}",
        input.display()
    );
    let converted = ParameterIndex::open(&output).unwrap();
    let contents = |index: &ParameterIndex| -> Vec<(String, Option<Vec<u8>>)> {
        index
            .entries()
            .iter()
            .map(|e| (e.key.clone(), e.storage.data().map(<[u8]>::to_vec)))
            .collect()
    };
    assert_eq!(contents(index), contents(&converted), "{}", input.display());
}

#[test]
fn safetensors_reads_as_iree_reads_it() {
    let test = "safetensors_reads_as_iree_reads_it";
    let Some((python, dump_tool)) = python_and_dump_tool(test) else {
        return;
    };
    let dir = scratch(test);
    let path = dir.join("model.safetensors");
    std::fs::write(&path, sample_safetensors()).unwrap();
    let index = ParameterIndex::open(&path).unwrap();
    assert_eq!(
        index
            .entries()
            .iter()
            .map(|e| e.key.as_str())
            .collect::<Vec<_>>(),
        ["zeta.weight", "alpha", "empty", "model.layers.0.bias"]
    );
    assert_iree_reads_the_same(&index, &python, &dump_tool, &path, "safetensors");
    assert_iree_converts_to_the_same(&index, &path, &dir);
}

/// A GGUF (version 3) value of the metadata.
enum Kv<'a> {
    U32(u32),
    F32(f32),
    Bool(bool),
    Str(&'a str),
    Strings(&'a [&'a str]),
    I32s(&'a [i32]),
}

/// A GGUF version-3 file holding `kvs` and `tensors` (name, ggml type, dims, bytes), each
/// tensor's data aligned to `alignment` (which the caller declares in `kvs` when it is not 32).
fn gguf(kvs: &[(&str, Kv)], tensors: &[(&str, u32, &[u64], Vec<u8>)], alignment: usize) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
    for (key, value) in kvs {
        string(&mut out, key);
        match value {
            Kv::U32(v) => {
                out.extend_from_slice(&4u32.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            Kv::F32(v) => {
                out.extend_from_slice(&6u32.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            Kv::Bool(v) => {
                out.extend_from_slice(&7u32.to_le_bytes());
                out.push(*v as u8);
            }
            Kv::Str(v) => {
                out.extend_from_slice(&8u32.to_le_bytes());
                string(&mut out, v);
            }
            Kv::Strings(v) => {
                out.extend_from_slice(&9u32.to_le_bytes());
                out.extend_from_slice(&8u32.to_le_bytes());
                out.extend_from_slice(&(v.len() as u64).to_le_bytes());
                for s in *v {
                    string(&mut out, s);
                }
            }
            Kv::I32s(v) => {
                out.extend_from_slice(&9u32.to_le_bytes());
                out.extend_from_slice(&5u32.to_le_bytes());
                out.extend_from_slice(&(v.len() as u64).to_le_bytes());
                for i in *v {
                    out.extend_from_slice(&i.to_le_bytes());
                }
            }
        }
    }
    let mut offset = 0usize;
    let mut offsets = Vec::new();
    for (name, ggml_type, dims, bytes) in tensors {
        string(&mut out, name);
        out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in *dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&ggml_type.to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        offsets.push(offset);
        offset = (offset + bytes.len()).next_multiple_of(alignment);
    }
    let data_start = out.len().next_multiple_of(alignment);
    out.resize(data_start, 0);
    for ((_, _, _, bytes), at) in tensors.iter().zip(offsets) {
        out.resize(data_start + at, 0);
        out.extend_from_slice(bytes);
    }
    out
}

/// Tensors of the ggml types a model uses (floats, integers, block-quantized).
fn sample_tensors() -> Vec<(&'static str, u32, &'static [u64], Vec<u8>)> {
    vec![
        ("token_embd.weight", 0, &[4, 3], ramp(48, 1)), // F32
        ("blk.0.attn_norm.weight", 1, &[5], ramp(10, 2)), // F16
        ("blk.0.ffn_up.weight", 8, &[64], ramp(68, 3)), // Q8_0: 2 blocks of 34
        ("blk.0.ffn_down.weight", 12, &[256], ramp(144, 4)), // Q4_K: 1 block of 144
        ("tokens", 16, &[7], ramp(7, 5)),               // I8
        ("positions", 18, &[2, 2, 2], ramp(32, 6)),     // I32
    ]
}

fn sample_gguf(alignment: Option<u32>) -> Vec<u8> {
    let mut kvs = vec![
        ("general.architecture", Kv::Str("llama")),
        (
            "tokenizer.ggml.tokens",
            Kv::Strings(&["<s>", "</s>", "hello"]),
        ),
        ("test.ints", Kv::I32s(&[1, -2, 3])),
        ("test.scale", Kv::F32(0.5)),
        ("test.flag", Kv::Bool(true)),
    ];
    if let Some(alignment) = alignment {
        kvs.insert(1, ("general.alignment", Kv::U32(alignment)));
    }
    gguf(
        &kvs,
        &sample_tensors(),
        alignment.map_or(32, |a| a as usize),
    )
}

#[test]
fn gguf_reads_as_iree_reads_it() {
    let test = "gguf_reads_as_iree_reads_it";
    let Some((python, dump_tool)) = python_and_dump_tool(test) else {
        return;
    };
    // Version 2 has version 3's layout (little-endian files); both are read.
    for (version, alignment) in [(3, None), (3, Some(64)), (3, Some(256)), (2, None)] {
        let dir = scratch(&format!("{test}-{version}-{alignment:?}"));
        let path = dir.join("model.gguf");
        let mut bytes = sample_gguf(alignment);
        bytes[4..8].copy_from_slice(&(version as u32).to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
        let index = ParameterIndex::open(&path).unwrap();
        let expected: Vec<(&str, Vec<u8>)> = sample_tensors()
            .into_iter()
            .map(|(n, _, _, b)| (n, b))
            .collect();
        let read: Vec<(&str, Vec<u8>)> = index
            .entries()
            .iter()
            .map(|e| (e.key.as_str(), e.storage.data().unwrap().to_vec()))
            .collect();
        assert_eq!(read, expected, "version {version}, alignment {alignment:?}");
        let what = format!("gguf version {version}, alignment {alignment:?}");
        assert_iree_reads_the_same(&index, &python, &dump_tool, &path, &what);
        assert_iree_converts_to_the_same(&index, &path, &dir);
    }
}

#[test]
fn hostile_safetensors_and_gguf_are_refused_naming_the_byte() {
    // What, the file, the byte the error names (when it is a fixed one), what it says.
    type Case = (&'static str, Vec<u8>, Option<u64>, &'static [&'static str]);
    let cases: Vec<Case> = vec![
        (
            "safetensors header longer than the file",
            {
                let mut b = sample_safetensors();
                b[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                b[8] = b'{';
                b
            },
            Some(0),
            &["header length 1099511627776", "larger than"],
        ),
        (
            "safetensors data beyond the file",
            {
                let mut b = safetensors(&[("w", "F32", &[1], ramp(4, 0))]);
                b.truncate(b.len() - 2);
                b
            },
            None,
            &["`w`", "data_offsets [0, 4]", "outside the 2 bytes"],
        ),
        (
            "safetensors begin after end",
            {
                let mut b = (64u64).to_le_bytes().to_vec();
                b.extend_from_slice(
                    format!("{:<64}", r#"{"w":{"data_offsets":[4,2]}}"#).as_bytes(),
                );
                b.extend_from_slice(&[0; 8]);
                b
            },
            Some(13),
            &["`w`", "[4, 2] end before they begin"],
        ),
        (
            "safetensors tensor without data_offsets",
            {
                let mut b = (32u64).to_le_bytes().to_vec();
                b.extend_from_slice(format!("{:<32}", r#"{"w":{"dtype":"F32"}}"#).as_bytes());
                b
            },
            Some(13),
            &["`w`", "data_offsets"],
        ),
        (
            "safetensors header not an object",
            {
                let mut b = (16u64).to_le_bytes().to_vec();
                b.extend_from_slice(br#"{"w" 1          "#);
                b
            },
            Some(13),
            &["expected `:`"],
        ),
        (
            "gguf version 4",
            {
                let mut b = sample_gguf(None);
                b[4] = 4;
                b
            },
            Some(4),
            &["version 4"],
        ),
        (
            "gguf 2^64-1 metadata pairs",
            {
                let mut b = sample_gguf(None);
                b[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
                b
            },
            None,
            &["truncated"],
        ),
        (
            "gguf string of 2^63 bytes",
            {
                let mut b = sample_gguf(None);
                b[24..32].copy_from_slice(&(1u64 << 63).to_le_bytes());
                b
            },
            Some(32),
            &["truncated", "metadata key"],
        ),
        (
            "gguf alignment 48",
            sample_gguf(Some(48)),
            None,
            &["general.alignment 48", "power of two"],
        ),
        (
            "gguf dimensions overflow",
            gguf(&[], &[("big", 0, &[1 << 40, 1 << 40], Vec::new())], 32),
            Some(24),
            &["`big`", "overflows"],
        ),
        (
            "gguf unknown ggml type",
            gguf(&[], &[("odd", 4, &[1], vec![0; 32])], 32),
            Some(24),
            &["`odd`", "ggml type 4"],
        ),
        (
            "gguf tensor beyond the data",
            gguf(&[], &[("w", 0, &[1000], vec![0; 32])], 32),
            Some(24),
            &["`w`", "4000 bytes", "outside"],
        ),
    ];
    for (what, bytes, offset, says) in cases {
        let error = quickly(what, || read_bytes(bytes)).unwrap_err();
        eprintln!("HOSTILE {what}: {error}");
        assert_says(&error.to_string(), says);
        if offset.is_some() {
            assert_eq!(error.offset, offset, "{what}: {error}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every prefix of a valid safetensors or GGUF file reads or errors, never panics.
    #[test]
    fn truncated_safetensors_and_gguf_never_panic(cut in 0usize..1200, gguf in any::<bool>()) {
        let mut bytes = if gguf { sample_gguf(Some(64)) } else { sample_safetensors() };
        bytes.truncate(cut);
        let _ = read_bytes(bytes);
    }

    /// Corrupting bytes of their headers reads or errors, never panics, and every entry read
    /// lies inside the file.
    #[test]
    fn corrupted_safetensors_and_gguf_never_panic(
        edits in proptest::collection::vec((0usize..480, any::<u8>()), 1..10),
        gguf in any::<bool>(),
    ) {
        let mut bytes = if gguf { sample_gguf(Some(64)) } else { sample_safetensors() };
        for (at, value) in edits {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        let len = bytes.len();
        if let Ok(index) = read_bytes(bytes) {
            for entry in index.entries() {
                if let ParameterStorage::Data { offset, length, .. } = entry.storage {
                    prop_assert!(offset + length <= len);
                }
            }
        }
    }
}

/// Two archives linked by `next_header_offset` in one file (IREE's format allows appending
/// archives this way) read as one index. IREE 3.13's reader misreads such files (it resolves
/// the second archive's segments with the first header), so pactum is checked against the
/// entries it wrote, not against IREE.
#[test]
fn linked_irpa_archives_read_one_after_the_other() {
    let mut first = ParameterIndex::new();
    first.add_data("a", vec![1u8; 10]);
    let mut second = ParameterIndex::new();
    second.add_data("b", vec![2u8; 5]);
    second.add_splat("c", &[3], 7).unwrap();
    let mut bytes = Vec::new();
    first.write_irpa(&mut bytes).unwrap();
    let second_at = bytes.len();
    put_u64(&mut bytes, 16, second_at as u64);
    second.write_irpa(&mut bytes).unwrap();
    let index = read_bytes(bytes).unwrap();
    let keys: Vec<&str> = index.entries().iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["a", "b", "c"]);
    assert_eq!(index.get("a").unwrap().storage.data(), Some(&[1u8; 10][..]));
    assert_eq!(index.get("b").unwrap().storage.data(), Some(&[2u8; 5][..]));
    let ParameterStorage::Data { offset, .. } = index.get("b").unwrap().storage else {
        panic!("a data entry");
    };
    assert!(offset > second_at, "b lives in the second archive");
}

/// A safetensors tensor name with JSON escapes is unescaped, as the format means it (a
/// program names the parameter `aä`); IREE 3.13 keeps the escapes (`a\u00e4`), so a program
/// naming `aä` does not find it there. The test records both, so a change on either side shows.
#[test]
fn safetensors_names_with_escapes_are_unescaped() {
    let test = "safetensors_names_with_escapes_are_unescaped";
    let Some(python) = peer_python(test) else {
        return;
    };
    let dir = scratch(test);
    let path = dir.join("escaped.safetensors");
    std::fs::write(&path, safetensors(&[(r"a\u00e4", "U8", &[1], vec![7])])).unwrap();
    let index = ParameterIndex::open(&path).unwrap();
    assert_eq!(index.get("aä").unwrap().storage.data(), Some(&[7u8][..]));
    let iree = iree_entries(&python, &path);
    assert_eq!(iree.len(), 1);
    assert_eq!(iree[0]["key"], r"a\u00e4");
}

/// An index read from a file can be written back over that file: its data entries point into
/// the old file's mapping, which the write must not truncate under them.
#[test]
fn an_archive_rewritten_in_place_keeps_its_data() {
    let dir = scratch("an_archive_rewritten_in_place_keeps_its_data");
    let path = dir.join("model.irpa");
    index_from_spec(&sample_spec())
        .write_irpa_file(&path)
        .unwrap();
    let mut index = ParameterIndex::open(&path).unwrap();
    index.add_data("added", vec![5u8; 100]);
    index.write_irpa_file(&path).unwrap();
    let reread = ParameterIndex::open(&path).unwrap();
    assert_eq!(reread.len(), 11);
    for entry in index.entries() {
        let again = reread.get(&entry.key).unwrap();
        assert_eq!(again.storage.data(), entry.storage.data(), "{}", entry.key);
        assert_eq!(again.metadata, entry.metadata, "{}", entry.key);
    }
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(files, 1, "no partial file is left behind");
}

/// Opening maps the file: a 4 GiB entry (a sparse file) is indexed in a moment and read in
/// place, without its bytes being copied or even read.
#[test]
fn a_large_archive_is_mapped_not_read() {
    const LARGE: u64 = 4 << 30;
    let dir = scratch("a_large_archive_is_mapped_not_read");
    let path = dir.join("large.irpa");
    let mut index = ParameterIndex::new();
    index.add_data("w", vec![9u8; 64]);
    let mut head = Vec::new();
    index.write_irpa(&mut head).unwrap();
    // The entry (at byte 96; its storage range at 96 + 60) and the storage segment (header
    // byte 72) grow to 4 GiB; the file is extended, sparse, to hold them.
    let storage_offset = u64::from_le_bytes(head[72..80].try_into().unwrap());
    put_u64(&mut head, 80, LARGE);
    put_u64(&mut head, 96 + 68, LARGE);
    pactum_testing::hostile::sparse_file(&path, &head, storage_offset + LARGE);
    let index = quickly("opening a 4 GiB archive", || ParameterIndex::open(&path)).unwrap();
    let data = index.get("w").unwrap().storage.data().unwrap();
    assert_eq!(data.len() as u64, LARGE);
    assert_eq!(&data[..64], &[9u8; 64][..]);
    assert_eq!(data[data.len() - 1], 0, "the sparse tail reads as zeros");
    drop(index);
}

/// Globals whose values `iree-compile --iree-parameter-export` moves into an archive.
const EXPORTED_GLOBALS: &str = r#"
util.global @w0 = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
util.global @b0 = dense<[7, 8, 9]> : tensor<3xi32>
util.global @big = dense<1.5> : tensor<100xf16>
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xi32>, tensor<100xf16>) {
  %w = util.global.load @w0 : tensor<2x3xf32>
  %b = util.global.load @b0 : tensor<3xi32>
  %g = util.global.load @big : tensor<100xf16>
  %r = arith.addf %x, %w : tensor<2x3xf32>
  return %r, %b, %g : tensor<2x3xf32>, tensor<3xi32>, tensor<100xf16>
}
"#;

/// The archive the compiler writes when it exports a program's weights (data entries, and a
/// splat for a splat constant), read as IREE's runtime reads it.
#[test]
fn irpa_exported_by_iree_compile_reads_as_iree_reads_it() {
    let test = "irpa_exported_by_iree_compile_reads_as_iree_reads_it";
    let Some((python, dump)) = python_and_dump_tool(test) else {
        return;
    };
    let compiler = manifest_dir().join("../../.venv/bin/iree-compile");
    if !compiler.exists() {
        let why = format!(
            "{} (iree-base-compiler 3.13) is missing",
            compiler.display()
        );
        if std::env::var("PACTUM_SKIP_PEER").is_ok_and(|v| v == "1") {
            eprintln!("SKIPPED {test} (PACTUM_SKIP_PEER=1): {why}");
            return;
        }
        panic!("{why}; set PACTUM_SKIP_PEER=1 to skip this comparison");
    }
    let dir = scratch(test);
    let source = dir.join("globals.mlir");
    std::fs::write(&source, EXPORTED_GLOBALS).unwrap();
    let archive = dir.join("exported.irpa");
    run_tool(
        &compiler,
        &[
            source.display().to_string(),
            "--iree-hal-target-device=local".into(),
            "--iree-hal-local-target-device-backends=vmvx".into(),
            format!("--iree-parameter-export=model={}", archive.display()),
            "--iree-parameter-export-minimum-size=0".into(),
            format!("-o={}", dir.join("globals.vmfb").display()),
        ],
    );
    let index = ParameterIndex::open(&archive).unwrap();
    let f32s: Vec<u8> = (1..=6).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let i32s: Vec<u8> = (7..=9).flat_map(|v: i32| v.to_le_bytes()).collect();
    assert_eq!(index.get("w0").unwrap().storage.data(), Some(&f32s[..]));
    assert_eq!(index.get("b0").unwrap().storage.data(), Some(&i32s[..]));
    match &index.get("big").unwrap().storage {
        ParameterStorage::Splat { pattern, length } => {
            // f16 1.5 is 0x3e00.
            assert_eq!((pattern.as_slice(), *length), (&[0x00, 0x3e][..], 200));
        }
        other => panic!("the splat constant is a splat entry, got {other:?}"),
    }
    assert_iree_reads_the_same(&index, &python, &dump, &archive, "iree-compile's export");
}
