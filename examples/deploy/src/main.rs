//! README.md's "Deploying a model", from Rust: loads a `.vmfb` compiled with its weights in an
//! `.irpa` archive (scope `model`), calls one function with a `.npy` input and writes its
//! result as `.npy`, what
//! `iree-run-module --module=M --parameters=model=P --function=F --input=@IN --output=@OUT` does.
//!
//! ```text
//! cargo run -p pactum-example-deploy -- mlp.vmfb mlp.irpa mlp input.npy out.npy
//! ```
//! (`examples/deploy/deploy.sh` runs it and compares `out.npy` with iree-run-module's.)

use pactum::Tensor;
use pactum_iree::module::IreeModule;
use pactum_iree::parameters::ParameterIndex;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [module, parameters, function, input, output] = args.as_slice() else {
        return Err(
            "usage: pactum-example-deploy MODULE.vmfb PARAMS.irpa FUNCTION INPUT.npy OUTPUT.npy"
                .into(),
        );
    };
    // The archive is memory-mapped; the `io_parameters` module hands its entries to the device.
    let weights = ParameterIndex::open(parameters)?;
    let model = IreeModule::builder()
        .parameters("model", weights)
        .load(module)?;
    let x = pactum_npy::read_file(input)?;
    let y: Tensor = model.function(function)?.call_typed((&x,))?;
    pactum_npy::write_file(output, &y)?;
    println!("{function}: {:?} -> {:?}", x.shape(), y.shape());
    Ok(())
}
