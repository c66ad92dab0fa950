//! `pactum`: describe, inspect and call compiled ML code across languages.

mod args;
mod call;
mod demo;
mod inspect;
mod library;

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
    /// List what a compiled library exports: each function's signature and documentation.
    Inspect {
        /// A shared library exporting `__tvm_ffi_<name>` functions.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Call a function of a compiled library and print its result.
    ///
    /// Arguments: numbers with an optional type suffix (7, -2.5, 7:i32, 2.5:f32, 1:bool),
    /// quoted strings ("text"), none, true, false, and @file.npy for tensors.
    Call {
        /// The shared library.
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
        } => {
            let (args, trailing_out) = split_out_option(args)?;
            call::run(&library, &function, &args, out.or(trailing_out).as_deref())
        }
    }
}

/// Takes `--out DIR` / `--out=DIR` out of the call arguments (clap reads every word after
/// the function name as an argument, so that values such as `-7:i32` are not options).
fn split_out_option(args: Vec<String>) -> anyhow::Result<(Vec<String>, Option<PathBuf>)> {
    let mut kept = Vec::with_capacity(args.len());
    let mut out = None;
    let mut words = args.into_iter();
    while let Some(word) = words.next() {
        if word == "--out" {
            let dir = words
                .next()
                .ok_or_else(|| anyhow::anyhow!("--out needs a directory"))?;
            out = Some(PathBuf::from(dir));
        } else if let Some(dir) = word.strip_prefix("--out=") {
            out = Some(PathBuf::from(dir));
        } else {
            kept.push(word);
        }
    }
    Ok((kept, out))
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
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
