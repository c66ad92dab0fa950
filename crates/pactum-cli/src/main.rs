//! `pactum`: describe, inspect and call compiled ML code across languages.

mod bench;
mod call;
mod demo;
mod inspect;
mod library;
mod run;
mod sig;
mod test;
mod tool;
mod vmfb;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "pactum",
    version,
    about = "Describe, inspect and call compiled ML code across languages"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create packed functions and call them through every path pactum offers, printing each step.
    Demo,
    /// List what a compiled artifact exports: each function's signature and documentation.
    Inspect {
        /// A shared library exporting `__tvm_ffi_<name>` functions, or an IREE `.vmfb`.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Call a function of a compiled library or IREE module and print its result.
    ///
    /// Arguments: numbers with an optional type suffix (7, -2.5, 7:i32, 2.5:f32, 1:bool),
    /// quoted strings ("text"), none, true, false, @file.npy for tensors (@file.npy:bfloat16
    /// views the file's elements as another type of the same size), and iree-run-module's
    /// inline tensors (2x3xf32=1 2 3 4 5 6, 4xf8E4M3FN=1 2 3 4, 4xi4=21 C3 for packed
    /// sub-byte elements in hex). For a .vmfb, plain numbers convert to the export's declared
    /// parameter types, and the arguments fill the export's parameters in order, as
    /// iree-run-module does: a parameter that `iree.abi` names (`["named", "k", ...]`) is
    /// filled by position too, or by name with `k=VALUE` or --named k=VALUE.
    Call {
        /// The shared library, or an IREE `.vmfb` module (run by pactum's VM).
        library: PathBuf,
        /// The exported function.
        function: String,
        /// Its arguments.
        /// (`-7:i32` and other values starting with `-` are arguments; `--out` may come
        /// anywhere.)
        #[arg(allow_hyphen_values = true)]
        args: Vec<String>,
        /// Write tensor results as `DIR/result_<i>.npy` and tensor arguments, after the call, as
        /// `DIR/arg_<i>.npy`.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Call an MLIR-compiled function (memref calling convention) with this signature: a
        /// `func.func` declaration or a function type such as `(memref<?xf32>, f32) -> f32`.
        #[arg(long, value_name = "DECLARATION")]
        mlir: Option<String>,
        /// For a .vmfb: the device running its compiled dispatches, as iree-run-module's
        /// --device: local-task (a pool of worker threads, the default), local-sync (the
        /// calling thread only), vulkan or vulkan://N (the Vulkan loader's N-th device;
        /// PACTUM_VULKAN_MEMORY=device-local-only or non-coherent forces its staging or flush
        /// paths, for testing what a discrete GPU needs on any driver).
        #[arg(long, value_parser = call::Device::parse)]
        device: Option<call::Device>,
        /// For a .vmfb: an argument by its `iree.abi` name (repeatable, anywhere), VALUE in any
        /// argument syntax: `--named repeat=3`, `--named x=4xf32=1 2 3 4`. A bare `repeat=3`
        /// argument does the same when `repeat` is one of the export's named arguments; the
        /// option is never read as an inline tensor such as `f32=1.5`.
        #[arg(long, value_name = "NAME=VALUE")]
        named: Vec<String>,
        /// For a .vmfb: a module to load first, in the same context (repeatable, in order), as
        /// iree-run-module's repeated --module: the called module may import its functions.
        #[arg(long = "module", value_name = "FILE")]
        modules: Vec<PathBuf>,
        /// For a .vmfb: a parameter archive (`.irpa`, `.safetensors`, `.gguf`) for the
        /// `io_parameters` module, under SCOPE (the unnamed scope when none): repeatable, as
        /// iree-run-module's --parameters.
        #[arg(long, value_name = "[SCOPE=]FILE")]
        parameters: Vec<String>,
    },
    /// Run a function of an IREE module with iree-run-module's flags, printing what it prints.
    ///
    /// Takes iree-run-module's command line, so that a script switches between the two by the
    /// program name: --module=FILE (repeatable: loaded in order in one context, the last one
    /// called), --function=NAME (optional when the module exports one function),
    /// --input=VALUE (repeatable: `3`, `2x2xf32=1 2 3 4`, `2x2xf32=@raw.bin`, `@file.npy`,
    /// `+file.npy` for the next array of a file read before, `*file.npy` for all the rest,
    /// `(null)`), --output=SPEC (repeatable, one a result: empty to drop it, `-` to print it,
    /// `@file.npy`/`+file.npy` to write/append an array, `@file.bin` raw bytes),
    /// --expected_output=VALUE (repeatable, `(ignored)` to skip one; exit status 1 on a
    /// mismatch) with --expected_f16_threshold, --expected_f32_threshold,
    /// --expected_f64_threshold, --expected_bf16_threshold, --expected_rtol and
    /// --equality_mode=approximate|exact, --output_max_element_count=N,
    /// --parameters=[SCOPE=]FILE (repeatable), --device=local-task|local-sync|vulkan,
    /// --task_topology_group_count=N and --task_topology_max_group_count=N (worker threads).
    /// An unknown flag is an error.
    #[command(disable_help_flag = true)]
    Run {
        /// iree-run-module's flags (`--name=value`).
        #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 0..)]
        flags: Vec<String>,
    },
    /// Time a function of an IREE module with iree-benchmark-module's main flags.
    ///
    /// --module (repeatable), --function, --input (as `pactum run`), --parameters, --device,
    /// --task_topology_group_count, --benchmark_repetitions=N (default 1) and
    /// --benchmark_min_time=0.5s (per repetition; `100x` for exactly 100 iterations).
    /// Prints each repetition's time per iteration and, over every timed iteration, the
    /// mean, median, stddev, min, max and cv, in Google Benchmark's console layout (as
    /// iree-benchmark-module); --benchmark_format=json or --json prints JSON instead.
    #[command(disable_help_flag = true)]
    Bench {
        /// iree-benchmark-module's flags (`--name=value`).
        #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 0..)]
        flags: Vec<String>,
    },
    /// Run the test functions of an IREE test program, as iree-check-module does.
    ///
    /// Test functions are the module's exports except those named `__…` or holding `$`; each
    /// takes no arguments and returns nothing, and runs in a fresh context with IREE's `check`
    /// module (expect_true, expect_eq, expect_almost_eq, ...). One line per function; the
    /// exit status is non-zero when any test fails.
    Test {
        /// The IREE `.vmfb` module (compiled from MLIR using the `check` dialect).
        module: PathBuf,
        /// The tests to run (all of them when none is named).
        functions: Vec<String>,
        /// The device running compiled dispatches, as iree-run-module's --device: local-task
        /// (a pool of worker threads, the default), local-sync, vulkan or vulkan://N.
        #[arg(long, value_parser = call::Device::parse)]
        device: Option<call::Device>,
        /// Print the report as one JSON object (module, tests with their outcome, error and
        /// failed checks) instead of lines, for scripts such as conformance/e2e/run.py.
        #[arg(long)]
        json: bool,
        /// A module loaded before the test module in each test's context (repeatable, in
        /// order): the test module may import its functions.
        #[arg(long = "module", value_name = "FILE")]
        modules: Vec<PathBuf>,
        /// A parameter archive for the `io_parameters` module, under SCOPE (the unnamed scope
        /// when none): repeatable.
        #[arg(long, value_name = "[SCOPE=]FILE")]
        parameters: Vec<String>,
    },
    /// Read, check and convert IREE function signatures.
    Sig {
        #[command(subcommand)]
        command: SigCommand,
    },
}

#[derive(Subcommand)]
enum SigCommand {
    /// Print IREE's rendering of a raw (`I…R…`) or SIP signature, exactly as IREE wrote it.
    Render {
        /// The signature (the format is detected; see --from).
        signature: String,
        /// The signature's format, when detection is not wanted.
        #[arg(long, value_enum)]
        from: Option<sig::Format>,
    },
    /// Print the VM calling convention a signature (usually `iree.abi` JSON) implies.
    Cconv {
        /// The signature.
        signature: String,
        /// The signature's format, when detection is not wanted.
        #[arg(long, value_enum)]
        from: Option<sig::Format>,
        /// Check this calling convention against the signature instead of printing one.
        #[arg(long, value_name = "CCONV")]
        check: Option<String>,
    },
    /// Write a signature in another format, where that format can express it.
    Convert {
        /// The format to write.
        #[arg(long, value_enum)]
        to: sig::Format,
        /// The signature.
        signature: String,
        /// The signature's format, when detection is not wanted.
        #[arg(long, value_enum)]
        from: Option<sig::Format>,
        /// The function name a declaration needs.
        #[arg(long, default_value = "main")]
        name: String,
    },
    /// Describe a signature in words: its format, arguments, results and calling convention.
    Explain {
        /// The signature.
        signature: String,
        /// The signature's format, when detection is not wanted.
        #[arg(long, value_enum)]
        from: Option<sig::Format>,
    },
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo => demo::run(),
        Command::Inspect { file, json } => inspect::run(&file, json),
        Command::Call {
            library,
            function,
            args,
            out,
            mlir,
            device,
            mut named,
            mut modules,
            mut parameters,
        } => {
            let (args, options) = split_call_options(args)?;
            named.extend(options.named);
            modules.extend(options.modules);
            parameters.extend(options.parameters);
            call::run(
                &library,
                &function,
                &args,
                &named,
                out.or(options.out).as_deref(),
                mlir.or(options.mlir).as_deref(),
                call::VmfbOptions {
                    device: device.or(options.device),
                    modules,
                    parameters,
                },
            )
        }
        Command::Run { flags } if asks_for_help(&flags) => print_help("run"),
        Command::Bench { flags } if asks_for_help(&flags) => print_help("bench"),
        Command::Run { flags } => run::run(&flags),
        Command::Bench { flags } => bench::run(&flags),
        Command::Test {
            module,
            functions,
            device,
            json,
            modules,
            parameters,
        } => test::run(&module, &functions, device, json, &modules, &parameters),
        Command::Sig { command } => match command {
            SigCommand::Render { signature, from } => sig::render(&signature, from),
            SigCommand::Cconv {
                signature,
                from,
                check,
            } => sig::cconv(&signature, from, check.as_deref()),
            SigCommand::Convert {
                to,
                signature,
                from,
                name,
            } => sig::convert(&signature, from, to, &name),
            SigCommand::Explain { signature, from } => sig::explain(&signature, from),
        },
    }
}

/// Whether IREE-style flags ask for help (`--help`, `-h`, `--helpfull`).
/// `pactum run ...` and `pactum bench ...` read without clap: their flags are IREE's tools',
/// which they parse themselves, and clap's whole command tree (every subcommand's arguments
/// and help) is a good part of a short run's start. What clap would make of such a command
/// line is exactly this: every argument after the subcommand's name is one of its flags. A
/// command line it might read otherwise (a `--`, an argument that is not UTF-8) is left to
/// clap.
fn iree_tool_command() -> Option<Cli> {
    let mut args = std::env::args_os().skip(1);
    let subcommand = args.next()?;
    let flags = args
        .map(|arg| arg.into_string().ok().filter(|arg| arg != "--"))
        .collect::<Option<Vec<String>>>()?;
    let command = match subcommand.to_str()? {
        "run" => Command::Run { flags },
        "bench" => Command::Bench { flags },
        _ => return None,
    };
    Some(Cli { command })
}

/// Whether `command` may load a module through the TVM FFI runtime (`Module::load`), which
/// needs the `.vmfb` loader registered.
fn loads_modules_by_path(command: &Command) -> bool {
    !matches!(
        command,
        Command::Run { .. } | Command::Bench { .. } | Command::Sig { .. }
    )
}

fn asks_for_help(flags: &[String]) -> bool {
    flags
        .iter()
        .any(|f| matches!(f.as_str(), "--help" | "-h" | "--helpfull" | "-help"))
}

/// Prints the long help of subcommand `name`.
fn print_help(name: &str) -> anyhow::Result<()> {
    let mut command = <Cli as clap::CommandFactory>::command();
    let subcommand = command
        .find_subcommand_mut(name)
        .ok_or_else(|| anyhow::anyhow!("no subcommand `{name}`"))?;
    subcommand.print_long_help()?;
    Ok(())
}

/// `pactum call` options written among the arguments.
#[derive(Default)]
struct CallOptions {
    out: Option<PathBuf>,
    mlir: Option<String>,
    device: Option<call::Device>,
    named: Vec<String>,
    modules: Vec<PathBuf>,
    parameters: Vec<String>,
}

/// Takes `--out DIR`, `--mlir DECL`, `--device D`, `--named NAME=VALUE`, `--module FILE` and
/// `--parameters [SCOPE=]FILE` (or `--out=DIR`, ...) out of the call
/// arguments (clap reads every word after the function name as an argument, so that values
/// such as `-7:i32` are not options).
fn split_call_options(args: Vec<String>) -> anyhow::Result<(Vec<String>, CallOptions)> {
    let mut kept = Vec::with_capacity(args.len());
    let mut options = CallOptions::default();
    let mut words = args.into_iter();
    while let Some(word) = words.next() {
        if word == "--out" {
            let dir = words
                .next()
                .ok_or_else(|| anyhow::anyhow!("--out needs a directory"))?;
            options.out = Some(PathBuf::from(dir));
        } else if let Some(dir) = word.strip_prefix("--out=") {
            options.out = Some(PathBuf::from(dir));
        } else if word == "--mlir" {
            let declaration = words
                .next()
                .ok_or_else(|| anyhow::anyhow!("--mlir needs a declaration"))?;
            options.mlir = Some(declaration);
        } else if let Some(declaration) = word.strip_prefix("--mlir=") {
            options.mlir = Some(declaration.to_owned());
        } else if word == "--device" {
            let device = words.next().ok_or_else(|| {
                anyhow::anyhow!("--device needs a device (local-task, local-sync or vulkan)")
            })?;
            options.device = Some(call::Device::parse(&device)?);
        } else if let Some(device) = word.strip_prefix("--device=") {
            options.device = Some(call::Device::parse(device)?);
        } else if word == "--named" {
            let pair = words
                .next()
                .ok_or_else(|| anyhow::anyhow!("--named needs NAME=VALUE"))?;
            options.named.push(pair);
        } else if let Some(pair) = word.strip_prefix("--named=") {
            options.named.push(pair.to_owned());
        } else if word == "--module" {
            let file = words
                .next()
                .ok_or_else(|| anyhow::anyhow!("--module needs a .vmfb file"))?;
            options.modules.push(PathBuf::from(file));
        } else if let Some(file) = word.strip_prefix("--module=") {
            options.modules.push(PathBuf::from(file));
        } else if word == "--parameters" {
            let spec = words
                .next()
                .ok_or_else(|| anyhow::anyhow!("--parameters needs [SCOPE=]FILE"))?;
            options.parameters.push(spec);
        } else if let Some(spec) = word.strip_prefix("--parameters=") {
            options.parameters.push(spec.to_owned());
        } else {
            kept.push(word);
        }
    }
    Ok((kept, options))
}

fn main() -> std::process::ExitCode {
    let cli = iree_tool_command().unwrap_or_else(Cli::parse);
    // `.vmfb` files load wherever a module path is accepted (`ffi.ModuleLoadFromFile`). The
    // commands that run `.vmfb` files with IREE's tools' flags load them with pactum-iree
    // directly and need no TVM FFI runtime: registering would choose and set one up for
    // nothing, a good part of a short run's start.
    if loads_modules_by_path(&cli.command)
        && let Err(error) = pactum_iree::module::register_vmfb_loader()
    {
        eprintln!("warning: the .vmfb module loader is not available: {error}");
    }
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
        // The report of a mismatch with --expected_output is printed already.
        Ok(Err(error)) if error.downcast_ref::<tool::ExpectationsFailed>().is_some() => {
            std::process::ExitCode::FAILURE
        }
        Ok(Err(error)) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("error: internal error (a bug in pactum; please report it)");
            std::process::ExitCode::from(101)
        }
    }
}
