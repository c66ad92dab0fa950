//! `pactum`: describe, inspect and call compiled ML code across languages.

mod demo;

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
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo => demo::run(),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
