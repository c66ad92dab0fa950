//! `pactum inspect` on IREE modules compiled by `iree-compile` 3.13 (the checked-in fixtures),
//! compared field by field with `iree-dump-module --output=flatbuffer-json` of the pinned
//! `iree-base-runtime` (installed into `.venv` by `scripts/test.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> Vec<PathBuf> {
    let dir = repo_root().join("crates/pactum-iree/tests/fixtures/vmfb");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vmfb"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "fixtures missing in {}", dir.display());
    files
}

/// An IREE runtime tool from the pinned wheel: `$PACTUM_IREE_TOOLS/<name>` or `.venv/bin/<name>`.
fn iree_tool(name: &str) -> PathBuf {
    let dir = std::env::var_os("PACTUM_IREE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin"));
    let tool = dir.join(name);
    assert!(
        tool.exists(),
        "{} missing: run scripts/test.sh (it installs the pinned iree-base-runtime into .venv) or set PACTUM_IREE_TOOLS",
        tool.display()
    );
    tool
}

fn json_of(command: &mut Command) -> Value {
    let output = command.output().expect("run");
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

fn ours(path: &Path) -> Value {
    json_of(
        Command::new(env!("CARGO_BIN_EXE_pactum"))
            .arg("inspect")
            .arg("--json")
            .arg(path),
    )
}

fn theirs(path: &Path) -> Value {
    json_of(
        Command::new(iree_tool("iree-dump-module"))
            .arg("--output=flatbuffer-json")
            .arg(path),
    )
}

/// flatcc prints bit flags as space-separated names and leaves defaults out.
fn flag_names(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => text.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value[key].as_array().map_or(&[], Vec::as_slice)
}

fn u64_or_zero(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

fn attrs_object(attrs: &[Value]) -> Value {
    let mut object = serde_json::Map::new();
    for attr in attrs {
        object.insert(
            attr["key"].as_str().unwrap_or("").to_owned(),
            attr["value"].clone(),
        );
    }
    Value::Object(object)
}

#[test]
fn inspect_json_matches_iree_dump_module_field_by_field() {
    for path in fixtures() {
        let (ours, theirs) = (ours(&path), theirs(&path));
        let at = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(ours["name"], theirs["name"], "{at}: name");
        assert_eq!(
            ours["version"].as_u64(),
            Some(u64_or_zero(&theirs["version"])),
            "{at}: version"
        );
        let manifest_container = if at.contains("bare") {
            "flatbuffer"
        } else {
            "zip"
        };
        assert_eq!(ours["container"], manifest_container, "{at}: container");
        let requirements: Vec<String> = array(&ours, "requirements")
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            requirements,
            flag_names(&theirs["requirements"]),
            "{at}: requirements"
        );
        assert_eq!(
            ours["attrs"],
            attrs_object(array(&theirs, "attrs")),
            "{at}: attrs"
        );
        let types: Vec<&Value> = array(&theirs, "types")
            .iter()
            .map(|t| &t["full_name"])
            .collect();
        assert_eq!(
            array(&ours, "types").iter().collect::<Vec<_>>(),
            types,
            "{at}: types"
        );

        let dependencies = array(&theirs, "dependencies");
        assert_eq!(
            array(&ours, "dependencies").len(),
            dependencies.len(),
            "{at}: dependencies"
        );
        for (mine, theirs) in array(&ours, "dependencies").iter().zip(dependencies) {
            assert_eq!(mine["name"], theirs["name"], "{at}");
            assert_eq!(
                mine["minimum_version"].as_u64(),
                Some(u64_or_zero(&theirs["minimum_version"])),
                "{at}"
            );
            let optional = flag_names(&theirs["flags"]).iter().any(|f| f == "OPTIONAL");
            assert_eq!(mine["optional"], optional, "{at}: {}", theirs["name"]);
        }

        let imports = array(&theirs, "imported_functions");
        assert_eq!(
            array(&ours, "imports").len(),
            imports.len(),
            "{at}: imports"
        );
        for (mine, theirs) in array(&ours, "imports").iter().zip(imports) {
            assert_eq!(mine["name"], theirs["full_name"], "{at}");
            assert_eq!(
                mine["cconv"], theirs["signature"]["calling_convention"],
                "{at}: {}",
                theirs["full_name"]
            );
            let optional = flag_names(&theirs["flags"]).iter().any(|f| f == "OPTIONAL");
            assert_eq!(mine["optional"], optional, "{at}: {}", theirs["full_name"]);
        }

        let signatures = array(&theirs, "function_signatures");
        let exports = array(&theirs, "exported_functions");
        assert_eq!(
            array(&ours, "exports").len(),
            exports.len(),
            "{at}: exports"
        );
        for (mine, theirs) in array(&ours, "exports").iter().zip(exports) {
            let ordinal = u64_or_zero(&theirs["internal_ordinal"]);
            assert_eq!(mine["name"], theirs["local_name"], "{at}");
            assert_eq!(mine["internal_ordinal"].as_u64(), Some(ordinal), "{at}");
            let signature = &signatures[ordinal as usize];
            assert_eq!(
                mine["cconv"], signature["calling_convention"],
                "{at}: {}",
                theirs["local_name"]
            );
            assert_eq!(
                mine["reflection"],
                attrs_object(array(signature, "attrs")),
                "{at}: {}",
                theirs["local_name"]
            );
        }

        let descriptors = array(&theirs, "function_descriptors");
        assert_eq!(
            array(&ours, "functions").len(),
            descriptors.len(),
            "{at}: functions"
        );
        for (mine, theirs) in array(&ours, "functions").iter().zip(descriptors) {
            for key in [
                "bytecode_offset",
                "bytecode_length",
                "block_count",
                "i32_register_count",
                "ref_register_count",
            ] {
                assert_eq!(
                    mine[key].as_u64(),
                    Some(u64_or_zero(&theirs[key])),
                    "{at}: {key}"
                );
            }
            let requirements: Vec<String> = array(mine, "requirements")
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect();
            assert_eq!(
                requirements,
                flag_names(&theirs["requirements"]),
                "{at}: function requirements"
            );
        }

        let segments = array(&theirs, "rodata_segments");
        assert_eq!(array(&ours, "rodata").len(), segments.len(), "{at}: rodata");
        for (mine, theirs) in array(&ours, "rodata").iter().zip(segments) {
            match theirs["embedded_data"].as_array() {
                Some(bytes) => {
                    assert_eq!(mine["external"], false, "{at}");
                    assert_eq!(mine["size"].as_u64(), Some(bytes.len() as u64), "{at}");
                }
                None => {
                    assert_eq!(mine["external"], true, "{at}");
                    assert_eq!(
                        mine["size"].as_u64(),
                        Some(u64_or_zero(&theirs["external_data_length"])),
                        "{at}"
                    );
                    assert_eq!(
                        mine["offset"].as_u64(),
                        Some(u64_or_zero(&theirs["external_data_offset"])),
                        "{at}"
                    );
                }
            }
        }
        match theirs.get("module_state") {
            Some(state) => {
                for key in ["global_bytes_capacity", "global_ref_count"] {
                    assert_eq!(
                        ours["module_state"][key].as_u64(),
                        Some(u64_or_zero(&state[key])),
                        "{at}: {key}"
                    );
                }
            }
            None => assert!(ours["module_state"].is_null(), "{at}: module_state"),
        }
        assert_eq!(
            ours["bytecode_version"].as_u64(),
            Some(u64_or_zero(&theirs["bytecode_version"])),
            "{at}"
        );
        assert_eq!(
            ours["bytecode_size"].as_u64(),
            Some(array(&theirs, "bytecode_data").len() as u64),
            "{at}"
        );
        match theirs.get("debug_database") {
            Some(db) => {
                assert_eq!(
                    ours["debug_database"]["locations"].as_u64(),
                    Some(array(db, "location_table").len() as u64),
                    "{at}"
                );
                let names: Vec<&Value> = array(db, "functions")
                    .iter()
                    .map(|f| &f["local_name"])
                    .collect();
                assert_eq!(
                    array(&ours["debug_database"], "source_maps")
                        .iter()
                        .collect::<Vec<_>>(),
                    names,
                    "{at}"
                );
            }
            None => assert!(ours["debug_database"].is_null(), "{at}: debug_database"),
        }
    }
}

#[test]
fn inspect_text_shows_decoded_signatures() {
    let path = repo_root().join("crates/pactum-iree/tests/fixtures/vmfb/abi_structs_vmvx.vmfb");
    let output = Command::new(env!("CARGO_BIN_EXE_pactum"))
        .arg("inspect")
        .arg(&path)
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for line in [
        "  [  0] dict_in(!vm.ref<?>, !vm.ref<?>) -> (!vm.ref<?>, i32)",
        "        signature: (x: ndarray<f32, [4]>, k: i32) -> (list[ndarray<f32, [4]>, i32])",
        "  [  7] hal.command_buffer.dispatch(!vm.ref<?>, !vm.ref<?>, i64, i32, i32, i32, i64, tuple<i32>..., tuple<i32, i32, !vm.ref<?>, i64, i64>...) -> ()",
        "  hal, version >= 7, required",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line:?} missing from:\n{text}"
        );
    }
    // The same lines as iree-dump-module --output=metadata for imports and exports.
    let metadata = Command::new(iree_tool("iree-dump-module"))
        .arg("--output=metadata")
        .arg(&path)
        .output()
        .unwrap();
    let metadata = String::from_utf8_lossy(&metadata.stdout);
    for line in metadata
        .lines()
        .filter(|l| l.starts_with("  [") && l.contains(") -> ("))
    {
        assert!(
            text.lines().any(|l| l == line),
            "iree-dump-module's {line:?} missing from:\n{text}"
        );
    }
}

#[test]
fn a_corrupt_module_is_a_one_line_error_with_the_field_and_offset() {
    let path = repo_root().join("crates/pactum-iree/tests/fixtures/vmfb/vm_direct_bare.vmfb");
    let mut bytes = std::fs::read(&path).unwrap();
    // Point the first export's name far past the end of the buffer.
    let module = pactum_iree::vmfb::VmfbFile::from_bytes(bytes.clone());
    let name_offset = {
        let m = module.module().unwrap();
        let name = m.exports().next().unwrap().local_name;
        name.as_ptr() as usize - module.bytes().as_ptr() as usize
    };
    // The string's length word sits just before its characters.
    bytes[name_offset - 4..name_offset].copy_from_slice(&0x00FF_FFFFu32.to_le_bytes());
    let dir = std::env::temp_dir().join(format!("pactum-vmfb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let corrupt = dir.join("corrupt.vmfb");
    std::fs::write(&corrupt, &bytes).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_pactum"))
        .arg("inspect")
        .arg(&corrupt)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("exported_functions[0].local_name: data at"),
        "{err}"
    );
    assert!(err.contains("runs past the end of the buffer"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
