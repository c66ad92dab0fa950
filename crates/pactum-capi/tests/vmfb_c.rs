//! A C program loads a `.vmfb` through pactum's `libtvm_ffi.so` (`tests/c/vmfb/load_vmfb.c`):
//! `ffi.ModuleLoadFromFile` finds `ffi.Module.load_from_file.vmfb`, which the library registers
//! when it is loaded, and the program calls the module's exports through the C API.
//!
//! Only against pactum's library: the official one has no `.vmfb` loader. The program's results
//! are checked against the same calls made in this process through
//! `pactum_iree::module::IreeModule`.

mod support;

use std::path::Path;
use std::process::Command;

use pactum::Array;
use pactum_iree::module::IreeModule;

#[test]
fn c_program_loads_a_vmfb_and_calls_its_exports() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let include = support::config_value(&config, "--includedir");
    let libdir = support::pactum_libdir();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = manifest.join("tests/c/vmfb/load_vmfb.c");
    let vmfb = manifest.join("../pactum-iree/tests/fixtures/vmfb/vm_direct.vmfb");
    let build = std::env::temp_dir().join(format!("pactum-vmfb-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(&build).unwrap();
    let exe = build.join("load_vmfb");
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".to_owned());
    let compiled = Command::new(&cc)
        .args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{include}"))
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", libdir.display()))
        .args(["-Wl,--no-as-needed", "-ltvm_ffi"])
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .expect("run the C compiler");
    assert!(
        compiled.status.success(),
        "compiling load_vmfb.c failed:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let output = Command::new(&exe)
        .arg(&vmfb)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run load_vmfb");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "load_vmfb failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let _ = std::fs::remove_dir_all(&build);

    let lines: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let line = |label: &str| -> &[&str] {
        lines
            .iter()
            .find(|words| words.first() == Some(&label))
            .map(|words| &words[1..])
            .unwrap_or_else(|| panic!("no `{label}` line in:\n{stdout}"))
    };
    assert_eq!(line("kind"), ["vmfb"]);
    assert_eq!(line("nope"), ["absent"]);

    // The same calls, in this process, through IreeModule.
    let module = IreeModule::load(&vmfb).unwrap();
    let mixed: Array = module
        .function("mix")
        .unwrap()
        .call_typed((1, 2, 1.5, 0.25))
        .unwrap();
    let mix = line("mix");
    assert_eq!(mix.len(), 3, "{stdout}");
    assert_eq!(
        mix[0].parse::<f64>().unwrap(),
        mixed.get_as::<f64>(0).unwrap()
    );
    assert_eq!(
        mix[1].parse::<i64>().unwrap(),
        mixed.get_as::<i64>(1).unwrap()
    );
    assert_eq!(
        mix[2].parse::<f64>().unwrap(),
        mixed.get_as::<f64>(2).unwrap()
    );
    let frobbed: i64 = module
        .function("frob_or_double")
        .unwrap()
        .call_typed((21,))
        .unwrap();
    assert_eq!(line("frob_or_double"), [frobbed.to_string().as_str()]);
}
