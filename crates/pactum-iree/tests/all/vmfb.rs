//! The `.vmfb` reader and writer on modules compiled by IREE 3.13 (`tests/fixtures/vmfb`).

use std::path::{Path, PathBuf};
use std::process::Command;

use pactum_testing::iree;

use pactum_iree::vmfb::{
    AttrDef, Container, FieldPath, FieldStep, IoOperation, ModuleDef, NameOf, VmfbError,
    VmfbErrorKind, VmfbFile,
};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vmfb"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "fixtures missing in {}", dir.display());
    files
}

#[test]
fn every_fixture_verifies_and_round_trips_through_both_containers() {
    for path in fixtures() {
        let file = VmfbFile::open(&path).unwrap();
        let module = file
            .module()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let def = ModuleDef::from_module(&module).unwrap();
        for container in [Container::Zip, Container::FlatBuffer] {
            let bytes = def.write(container);
            let again = VmfbFile::from_bytes(bytes);
            let module = again
                .module()
                .unwrap_or_else(|e| panic!("{} rewritten as {container:?}: {e}", path.display()));
            assert_eq!(module.container(), container);
            assert_eq!(
                ModuleDef::from_module(&module).unwrap(),
                def,
                "{} via {container:?}",
                path.display()
            );
        }
        eprintln!(
            "{}: {} exports, {} rodata",
            path.display(),
            module.exports().len(),
            module.rodata_segments().len()
        );
    }
}

/// An IREE runtime tool from the pinned wheel: `$PACTUM_IREE_BIN/<name>` (or
/// `$PACTUM_IREE_TOOLS/<name>`) or `.venv/bin/<name>`.
fn iree_tool(name: &str) -> PathBuf {
    iree::tool(name).unwrap_or_else(|e| panic!("{e}"))
}

/// Checks that `module` prints what the manifest recorded for `run`: the stdout, and for a
/// run that must fail, the stderr too.
fn check_run(module: &Path, run: &iree::ManifestRun, what: &str) {
    let inputs: Vec<&str> = run.inputs.iter().map(String::as_str).collect();
    let outcome = iree::run_module(module, &run.function, &inputs, run.device.as_deref())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(outcome.stdout, run.expected_output, "{what}");
    match &run.expected_error {
        None => assert!(outcome.results.is_ok(), "{what}: {}", outcome.stderr),
        Some(stderr) => assert_eq!(&outcome.stderr, stderr, "{what}"),
    }
}

#[test]
fn an_edited_module_still_runs_in_iree_and_shows_the_new_attribute() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb");
    let manifest_runs = iree::manifest_runs().unwrap();
    let scratch = std::env::temp_dir().join(format!("pactum-vmfb-edit-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut files: Vec<&str> = manifest_runs.iter().map(|r| r.file.as_str()).collect();
    files.dedup();
    let mut runs = 0;
    for file in files {
        let module = VmfbFile::open(dir.join(file)).unwrap();
        let mut def = ModuleDef::from_module(&module.module().unwrap()).unwrap();
        let first = def.exports[0].local_name.clone();
        def.export_signature_mut(&first)
            .unwrap()
            .set_attr("pactum.edited", "by pactum");
        def.attrs
            .push(AttrDef::new("pactum.module_note", "rewritten"));
        for container in [Container::Zip, Container::FlatBuffer] {
            let edited = scratch.join(format!("{file}.{}.vmfb", container.name()));
            std::fs::write(&edited, def.write(container)).unwrap();
            for run in manifest_runs.iter().filter(|r| r.file == file) {
                check_run(&edited, run, &format!("{run}, rewritten as {container:?}"));
                runs += 1;
            }
            let metadata = Command::new(iree_tool("iree-dump-module"))
                .arg("--output=metadata")
                .arg(&edited)
                .output()
                .unwrap();
            let metadata = String::from_utf8_lossy(&metadata.stdout);
            assert!(
                metadata.contains("pactum.edited: by pactum"),
                "{file} as {container:?}: the new attribute is missing:\n{metadata}"
            );
        }
    }
    assert!(runs >= 200, "only {runs} runs");
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vmfb")
            .join(name),
    )
    .unwrap()
}

fn error_of(bytes: Vec<u8>) -> String {
    match VmfbFile::from_bytes(bytes).module() {
        Ok(_) => panic!("expected an error"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn every_truncation_and_byte_flip_is_an_error_or_a_valid_module_never_a_panic() {
    for name in ["vm_direct.vmfb", "vm_direct_bare.vmfb"] {
        let bytes = fixture(name);
        for len in 0..bytes.len() {
            let truncated = bytes[..len].to_vec();
            // Dropping the ZIP directory or the external data is fine until the FlatBuffer or a
            // referenced segment is cut.
            if let Ok(module) = VmfbFile::from_bytes(truncated.clone()).module() {
                assert!(
                    len > module.layout().flatbuffer.end - 1,
                    "{name} truncated to {len}"
                );
            }
        }
        for at in 0..bytes.len().min(2048) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut corrupt = bytes.clone();
                corrupt[at] ^= flip;
                match VmfbFile::from_bytes(corrupt).module() {
                    // Whatever verified must be readable end to end.
                    Ok(module) => {
                        let def = ModuleDef::from_module(&module).unwrap();
                        let _ = def.write(Container::Zip);
                    }
                    // An error points into the file (found by fuzzing: a vtable length once
                    // put the reported offset past the end).
                    Err(error) => assert!(
                        error.offset.is_none_or(|o| o <= bytes.len() as u64),
                        "{name} with byte {at} flipped: {error}"
                    ),
                }
            }
        }
    }
}

#[test]
fn malformed_modules_name_the_field_and_the_offset() {
    let bare = fixture("vm_direct_bare.vmfb");
    assert_eq!(
        error_of(Vec::new()),
        "too short for a size-prefixed FlatBuffer (0 bytes) at 0x0"
    );
    let mut wrong_id = bare.clone();
    wrong_id[8..12].copy_from_slice(b"TFL3");
    assert_eq!(
        error_of(wrong_id),
        "not an IREE bytecode module: the file identifier is \"TFL3\", expected \"IREE\" at 0x8"
    );
    let mut long_prefix = bare.clone();
    long_prefix[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(
        error_of(long_prefix)
            .starts_with("the size prefix says 4294967295 bytes, past the end of the file")
    );

    // A compressed ZIP entry cannot be read in place.
    let mut compressed = fixture("vm_direct.vmfb");
    compressed[8] = 8;
    assert!(error_of(compressed).contains("the FlatBuffer entry is compressed (method 8)"));

    // An export ordinal past the functions.
    let module = VmfbFile::from_bytes(bare.clone());
    let mut def = ModuleDef::from_module(&module.module().unwrap()).unwrap();
    def.exports[1].internal_ordinal = 99;
    let error = error_of(def.write(Container::FlatBuffer));
    assert_eq!(
        error,
        "exported_functions[1].internal_ordinal: ordinal 99 is out of range (4 functions)"
    );

    // External data that the file does not hold.
    let mut def = ModuleDef::from_module(&module.module().unwrap()).unwrap();
    def.rodata[0].external = true;
    let mut bytes = def.write(Container::FlatBuffer);
    bytes.truncate(bytes.len() - 1);
    assert!(
        error_of(bytes)
            .starts_with("rodata_segments[0]: external data 0x0+0x12 from the rodata base")
    );

    // Bytecode outside bytecode_data.
    let mut def = ModuleDef::from_module(&module.module().unwrap()).unwrap();
    def.function_descriptors[2].bytecode_length = 100_000;
    assert!(
        error_of(def.write(Container::FlatBuffer))
            .starts_with("function_descriptors[2]: bytecode 104+100000 is outside bytecode_data")
    );

    // An unknown union tag in the location table.
    let mut def = ModuleDef::from_module(&module.module().unwrap()).unwrap();
    assert!(def.debug_database.is_some());
    let bytes = def.write(Container::FlatBuffer);
    let types_needle = [2u8; 6]; // six FileLineColLocDef tags
    let at = bytes.windows(6).position(|w| w == types_needle).unwrap();
    let mut bad_tag = bytes.clone();
    bad_tag[at + 3] = 9;
    let error = error_of(bad_tag);
    assert!(
        error.starts_with("debug_database: LocationTypeDef tag 9 is not a known variant at 0x"),
        "{error}"
    );
    def.name.clear();
    assert_eq!(
        error_of(def.write(Container::FlatBuffer)),
        "name: the module name is empty"
    );
}

fn kind_of(bytes: Vec<u8>) -> VmfbError {
    match VmfbFile::from_bytes(bytes).module() {
        Ok(_) => panic!("expected an error"),
        Err(error) => error,
    }
}

#[test]
fn corrupt_containers_have_kinds_a_caller_can_match() {
    let bare = fixture("vm_direct_bare.vmfb");
    let zip = fixture("vm_direct.vmfb");

    let error = kind_of(Vec::new());
    assert_eq!(error.kind, VmfbErrorKind::TooShort { file_len: 0 });
    assert!(error.path.is_empty());
    assert_eq!(error.offset, Some(0));

    let error = kind_of(zip[..20].to_vec());
    assert_eq!(
        error.kind,
        VmfbErrorKind::ZipHeaderTruncated { file_len: 20 }
    );
    assert_eq!(error.offset, Some(20));

    let mut compressed = zip.clone();
    compressed[8] = 8;
    let error = kind_of(compressed);
    assert_eq!(error.kind, VmfbErrorKind::CompressedEntry { method: 8 });
    assert_eq!(error.offset, Some(8));

    let mut wrong_id = bare.clone();
    wrong_id[8..12].copy_from_slice(b"TFL3");
    let error = kind_of(wrong_id);
    assert!(
        matches!(error.kind, VmfbErrorKind::NotAVmfb { identifier } if &identifier == b"TFL3"),
        "{error:?}"
    );
    assert_eq!(error.offset, Some(8));

    let mut long_prefix = bare.clone();
    long_prefix[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let error = kind_of(long_prefix);
    assert_eq!(
        error.kind,
        VmfbErrorKind::SizePrefixPastEnd {
            size: u32::MAX,
            file_len: bare.len()
        }
    );
    assert_eq!(error.offset, Some(0));

    // A missing file is an I/O failure, with the operation and the system's error kind.
    let missing = std::env::temp_dir().join("pactum-no-such-module.vmfb");
    let error = VmfbFile::open(&missing).unwrap_err();
    match &error.kind {
        VmfbErrorKind::Io(failure) => {
            assert_eq!(failure.operation, IoOperation::Open);
            assert_eq!(failure.file, missing);
            assert_eq!(failure.error.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected an I/O failure, got {other:?}"),
    }
    assert!(error.to_string().starts_with("cannot open "), "{error}");
}

#[test]
fn corrupt_flatbuffers_have_kinds_paths_and_offsets() {
    let bare = fixture("vm_direct_bare.vmfb");
    let module = VmfbFile::from_bytes(bare.clone());
    let (module_name, export_name) = {
        let m = module.module().unwrap();
        let base = module.bytes().as_ptr() as usize;
        let offset = |text: &str| text.as_ptr() as usize - base;
        (
            offset(m.name()),
            offset(m.exports().next().unwrap().local_name),
        )
    };

    // The first export's name claims far more bytes than the buffer holds.
    let mut bytes = bare.clone();
    bytes[export_name - 4..export_name].copy_from_slice(&0x00FF_FFFFu32.to_le_bytes());
    let error = kind_of(bytes);
    let VmfbErrorKind::OutOfBounds { range, buffer_end } = &error.kind else {
        panic!("expected OutOfBounds, got {error:?}");
    };
    let flatbuffer_end = module.module().unwrap().layout().flatbuffer.end as u64;
    assert_eq!(*buffer_end, flatbuffer_end);
    assert!(range.end > flatbuffer_end, "{error}");
    assert_eq!(
        error.path.steps(),
        [
            FieldStep::Field("exported_functions".into()),
            FieldStep::Index(0),
            FieldStep::Field("local_name".into()),
        ]
    );
    assert_eq!(error.path.to_string(), "exported_functions[0].local_name");
    assert!(error.offset.is_some_and(|o| o < bare.len() as u64));

    // A module name that is not UTF-8.
    let mut bytes = bare.clone();
    bytes[module_name] = 0xff;
    let error = kind_of(bytes);
    assert!(
        matches!(error.kind, VmfbErrorKind::InvalidUtf8 { error } if error.valid_up_to() == 0),
        "{error:?}"
    );
    assert_eq!(error.path.to_string(), "name");
    assert_eq!(error.offset, Some(module_name as u64));

    // An unknown tag in the debug database's location table.
    let def = ModuleDef::from_module(&module.module().unwrap()).unwrap();
    let mut bytes = def.write(Container::FlatBuffer);
    let at = bytes.windows(6).position(|w| w == [2u8; 6]).unwrap();
    bytes[at + 3] = 9;
    let error = kind_of(bytes);
    assert_eq!(
        error.kind,
        VmfbErrorKind::UnknownUnionTag {
            union: "LocationTypeDef".into(),
            tag: 9
        }
    );
    assert_eq!(
        error.path,
        FieldPath::root().field("debug_database"),
        "{error}"
    );
}

#[test]
fn modules_iree_would_refuse_have_kinds_a_caller_can_match() {
    let module = VmfbFile::from_bytes(fixture("vm_direct_bare.vmfb"));
    let def = || ModuleDef::from_module(&module.module().unwrap()).unwrap();

    let mut bad = def();
    bad.exports[1].internal_ordinal = 99;
    let error = kind_of(bad.write(Container::FlatBuffer));
    assert_eq!(
        error.kind,
        VmfbErrorKind::OrdinalOutOfRange {
            ordinal: 99,
            functions: 4
        }
    );
    assert_eq!(
        error.path,
        FieldPath::root()
            .field("exported_functions")
            .index(1)
            .field("internal_ordinal")
    );

    let mut bad = def();
    bad.exports[0].local_name.clear();
    let error = kind_of(bad.write(Container::Zip));
    assert_eq!(error.kind, VmfbErrorKind::EmptyName { of: NameOf::Export });
    assert_eq!(error.path.to_string(), "exported_functions[0].local_name");

    let mut bad = def();
    bad.rodata[0].external = true;
    let mut bytes = bad.write(Container::FlatBuffer);
    bytes.truncate(bytes.len() - 1);
    let file_len = bytes.len() as u64;
    let error = kind_of(bytes);
    assert!(
        matches!(
            error.kind,
            VmfbErrorKind::ExternalDataOutOfFile { offset: 0, length: 0x12, file_len: len, .. }
                if len == file_len
        ),
        "{error:?}"
    );
    assert_eq!(error.path.to_string(), "rodata_segments[0]");

    let mut bad = def();
    bad.function_descriptors[2].bytecode_length = 100_000;
    let error = kind_of(bad.write(Container::FlatBuffer));
    assert!(
        matches!(
            error.kind,
            VmfbErrorKind::BytecodeOutOfRange {
                offset: 104,
                length: 100_000,
                ..
            }
        ),
        "{error:?}"
    );

    let mut bad = def();
    bad.function_descriptors.pop();
    let error = kind_of(bad.write(Container::FlatBuffer));
    assert_eq!(
        error.kind,
        VmfbErrorKind::SignatureCountMismatch {
            signatures: 4,
            descriptors: 3
        }
    );
}

#[test]
fn byte_flips_give_structured_kinds_whose_messages_carry_the_path() {
    let bytes = fixture("vm_direct_bare.vmfb");
    let mut kinds = std::collections::BTreeSet::new();
    for at in 0..bytes.len().min(2048) {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut corrupt = bytes.clone();
            corrupt[at] ^= flip;
            if let Err(error) = VmfbFile::from_bytes(corrupt).module() {
                let name = format!("{:?}", error.kind);
                kinds.insert(name[..name.find([' ', '(']).unwrap_or(name.len())].to_owned());
                let message = error.to_string();
                assert!(message.starts_with(&error.path.to_string()), "{message}");
                assert!(message.contains(&error.kind.to_string()), "{message}");
            }
        }
    }
    eprintln!("kinds seen: {kinds:?}");
    // The fixture is fixed, so the flips are too: each of these turns up.
    for expected in [
        "NotAVmfb",
        "SizePrefixPastEnd",
        "OutOfBounds",
        "VtableOutOfBounds",
        "Misaligned",
        "InvalidUtf8",
        "MissingRequiredField",
        "UnknownUnionTag",
        "EmptyName",
        "OrdinalOutOfRange",
    ] {
        assert!(kinds.contains(expected), "{expected} not among {kinds:?}");
    }
}
