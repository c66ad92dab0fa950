//! `pactum run --module=FILE.vmfb --function=NAME --input=VALUE...`: iree-run-module's
//! command line, run by pactum, printing what iree-run-module prints, so that a script
//! switches between the two by the program name.

use std::io::Write as _;

use anyhow::{Context as _, Result, anyhow};

use crate::tool::{
    self, COMPARISON_FLAGS, CONTEXT_FLAGS, ExpectationsFailed, FlagKind, Tolerances, ToolFlags,
};

/// iree-run-module's flags that pactum takes.
fn known_flags() -> Vec<(&'static str, FlagKind)> {
    let mut flags = CONTEXT_FLAGS.to_vec();
    flags.extend_from_slice(COMPARISON_FLAGS);
    flags.extend_from_slice(&[
        ("input", FlagKind::List),
        ("output", FlagKind::List),
        ("expected_output", FlagKind::List),
        ("output_max_element_count", FlagKind::Single),
        ("print_statistics", FlagKind::Bool),
    ]);
    flags
}

/// Runs the command line `args` (iree-run-module's flags).
pub fn run(args: &[String]) -> Result<()> {
    let flags = ToolFlags::parse("pactum run", &known_flags(), args)?;
    let max_elements: u64 = flags.parsed("output_max_element_count", 1024)?;
    let tolerances = Tolerances::from_flags(&flags)?;
    let module = tool::load_modules(&flags, tool::device(&flags)?)?;
    let function = tool::function_name(&module, &flags)?;
    let (argument_kinds, result_kinds) =
        module.value_kinds(&function).map_err(|e| anyhow!("{e}"))?;
    let inputs = tool::parse_values(&argument_kinds, flags.list("input"))
        .context("parsing function inputs")?;
    println!("EXEC @{function}");
    std::io::stdout().flush()?;
    let started = std::time::Instant::now();
    let results = module
        .invoke_values(&function, inputs)
        .map_err(|e| anyhow!("invoking function '{function}': {e}"))?;
    if flags.is_set("print_statistics") {
        eprintln!(
            "[pactum] @{function}: {:.3} ms (pactum records no allocator statistics)",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let expected = flags.list("expected_output");
    if expected.is_empty() {
        let outputs = flags.list("output");
        if outputs.is_empty() {
            print!("{}", tool::print_results(&results, max_elements));
        } else {
            tool::write_outputs(&results, outputs, max_elements).context("outputting results")?;
        }
        return Ok(());
    }
    let expected =
        tool::parse_values(&result_kinds, expected).context("parsing expected function outputs")?;
    let (report, matched) = tool::compare_results(&expected, &results, &tolerances);
    print!("{report}");
    std::io::stdout().flush()?;
    if matched {
        Ok(())
    } else {
        Err(ExpectationsFailed.into())
    }
}
