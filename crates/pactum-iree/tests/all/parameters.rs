//! Parameter archives (`pactum_iree::parameters`) compared with IREE's own reading and writing.
//!
//! IREE's side is the pinned runtime of the workspace's `.venv` (iree-base-runtime 3.13):
//! `tests/python/iree_parameters.py` builds archives with `iree.runtime.ParameterIndex`
//! (`add_buffer`, `add_splat`, `create_archive_file`) and reports what
//! `iree.runtime.ParameterIndex.load` finds in an archive (key, length, metadata, splat
//! pattern, data offset and bytes); `iree-dump-parameters` prints its table of entries and
//! `iree-convert-parameters` turns `.safetensors` and `.gguf` files into `.irpa`. Every archive
//! is compared entry by entry, in IREE's order. Hostile archives (truncated, corrupted,
//! hostile lengths) must give errors naming the byte, never a panic.
//!
//! Without the python and `iree.runtime`, or without the IREE tools, the comparisons fail,
//! unless `PACTUM_SKIP_PEER=1`, when they are skipped with a message.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use pactum_iree::parameters::{ParameterIndex, ParameterStorage, SharedBytes};
use pactum_testing::hostile::{assert_says, failure, quickly};
use pactum_testing::iree::tool_or_skip;
use proptest::prelude::*;
use serde_json::{Value, json};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-params-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The workspace's `.venv` python when it has `iree.runtime`; `None` when it does not and
/// `PACTUM_SKIP_PEER=1` (a failure otherwise).
fn peer_python(test: &str) -> Option<PathBuf> {
    let python = manifest_dir().join("../../.venv/bin/python");
    let available = python.exists()
        && Command::new(&python)
            .args(["-c", "import iree.runtime"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !available {
        let why = format!(
            "{} with iree.runtime (iree-base-runtime 3.13) is missing",
            python.display()
        );
        if std::env::var("PACTUM_SKIP_PEER").is_ok_and(|v| v == "1") {
            eprintln!("SKIPPED {test} (PACTUM_SKIP_PEER=1): {why}");
            return None;
        }
        panic!("{why}; set PACTUM_SKIP_PEER=1 to skip this comparison");
    }
    Some(python)
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
    let Some(python) = peer_python(test) else {
        return;
    };
    let Some(dump_tool) = tool_or_skip("iree-dump-parameters", test) else {
        return;
    };
    let dir = scratch(test);
    let archive = dir.join("iree.irpa");
    iree_create(&python, &sample_spec(), &archive);

    let index = ParameterIndex::open(&archive).unwrap();
    assert_eq!(index.len(), 10);
    assert_same_entries(&index, &iree_entries(&python, &archive), "IREE's archive");
    assert_same_table(
        &index,
        &iree_dump_tool(&dump_tool, &archive),
        "IREE's archive",
    );

    // The data entries point into the mapping: no copy of the file.
    let ParameterStorage::Data { offset, .. } = index.get("layer0.weight").unwrap().storage else {
        panic!("a data entry");
    };
    assert_eq!(offset % 64, 0, "IREE aligns data to 64 bytes");
}

#[test]
fn irpa_written_by_pactum_is_what_iree_writes_and_reads() {
    let test = "irpa_written_by_pactum_is_what_iree_writes_and_reads";
    let Some(python) = peer_python(test) else {
        return;
    };
    let Some(dump_tool) = tool_or_skip("iree-dump-parameters", test) else {
        return;
    };
    let dir = scratch(test);
    let spec = sample_spec();
    let ours = dir.join("pactum.irpa");
    index_from_spec(&spec).write_irpa_file(&ours).unwrap();

    // IREE reads it with the same entries pactum reads back.
    let reread = ParameterIndex::open(&ours).unwrap();
    assert_same_entries(&reread, &iree_entries(&python, &ours), "pactum's archive");
    assert_same_table(
        &reread,
        &iree_dump_tool(&dump_tool, &ours),
        "pactum's archive",
    );

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
    let message = failure("ragged splat", index.add_splat("k", &[1, 2], 3));
    assert_says(&message, &["3 bytes", "2-byte pattern"]);
    assert!(index.is_empty());
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
