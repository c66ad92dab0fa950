//! The real IREE runtime as a test oracle: runs the pinned `iree-run-module`
//! (`iree-base-runtime==3.13.0`) on a `.vmfb` and parses what it prints, and lists the runs
//! recorded in the fixtures' `manifest.json`, so that a test compares pactum's results with
//! IREE's without any expected value typed by hand.
//!
//! What `iree-run-module` 3.13 prints (on stdout; a failure goes to stderr, exit status 1):
//!
//! ```text
//! EXEC @f                            the function, always first once the module loaded
//! result[0]: i32=42                  a VM value: i8/i16/i32/i64/f32/f64 (floats as %g)
//! result[1]: hal.buffer_view         a tensor: its line is <dims>x<type>=<values>, rows in
//! 2x3xf32=[1.5 1 3.001][104 0 6]     brackets, "..." past --output_max_element_count (1024)
//! result[2]: vm.list                 a list: one child_list[i] per element (at every depth),
//! child_list[0]: i32=0               then an empty line
//! child_list[1]: (null)
//!
//! result[3]: vm.buffer               any other ref: its type, then "(no printer)"
//! (no printer)
//! result[4]: (null)                  a null ref
//! ```
//!
//! and a failure, on stderr, `<where>: <STATUS>; <message>; <backtrace>; invoking function
//! 'f'[; <declaration>]`, for instance `<vm>:0: INVALID_ARGUMENT; checked_div: the divisor is
//! zero; ; invoking function 'checked_div'`.
//!
//! Tools come from `$PACTUM_IREE_BIN` (a directory), else `$PACTUM_IREE_TOOLS` (the name the
//! older `.vmfb` tests read), else `<repo>/.venv/bin`, where `scripts/test.sh` installs the
//! pinned wheel.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one `iree-run-module` may run before it is killed and reported.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `.vmfb` fixtures folder (`crates/pactum-iree/tests/fixtures/vmfb`).
pub fn fixtures_dir() -> PathBuf {
    repo_root().join("crates/pactum-iree/tests/fixtures/vmfb")
}

/// The folder holding the pinned IREE runtime tools (see the module documentation).
pub fn tools_dir() -> PathBuf {
    ["PACTUM_IREE_BIN", "PACTUM_IREE_TOOLS"]
        .iter()
        .find_map(std::env::var_os)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin"))
}

/// The path of one IREE tool (`iree-run-module`, `iree-dump-module`, ...), or why it is missing.
pub fn tool(name: &str) -> Result<PathBuf, String> {
    let path = tools_dir().join(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} missing: run scripts/test.sh (it installs the pinned iree-base-runtime into \
             .venv) or point PACTUM_IREE_BIN at a folder holding the IREE 3.13 tools",
            path.display()
        ))
    }
}

/// The `iree-compile` flags of one CPU HAL target (`vmvx` or `llvm-cpu`), as the fixtures are
/// built: llvm-cpu for a generic x86-64 CPU as a position-independent embedded ELF, so the
/// result runs on any x86-64 host.
pub fn cpu_target_flags(backend: &str) -> &'static [&'static str] {
    match backend {
        "vmvx" => &["--iree-hal-target-backends=vmvx"],
        "llvm-cpu" => &[
            "--iree-hal-target-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",
            "--iree-llvmcpu-target-triple=x86_64-unknown-unknown-eabi-elf",
        ],
        other => panic!("unknown CPU backend {other:?} (vmvx or llvm-cpu)"),
    }
}

/// Writes the MLIR `source` to `dir/NAME.mlir` and compiles it with `iree_compile` for the CPU
/// `backend` (and the `extra` flags) into `dir/NAME-BACKEND.vmfb`, whose path it returns.
/// A failing compile panics with the compiler's message: the peer compiler is part of the test
/// setup.
pub fn compile_for_cpu(
    iree_compile: &Path,
    dir: &Path,
    name: &str,
    source: &str,
    backend: &str,
    extra: &[&str],
) -> PathBuf {
    compile_with(
        iree_compile,
        dir,
        name,
        source,
        backend,
        cpu_target_flags(backend),
        extra,
    )
}

/// The `iree-compile` flags of the Vulkan HAL target: SPIR-V for IREE's default Vulkan target
/// environment, which lavapipe and any Vulkan 1.1+ driver run.
pub const VULKAN_TARGET_FLAGS: &[&str] = &["--iree-hal-target-device=vulkan"];

/// As [`compile_for_cpu`], for the Vulkan target ([`VULKAN_TARGET_FLAGS`]), into
/// `dir/NAME-vulkan.vmfb`.
pub fn compile_for_vulkan(iree_compile: &Path, dir: &Path, name: &str, source: &str) -> PathBuf {
    compile_for_vulkan_with(iree_compile, dir, name, source, &[])
}

/// As [`compile_for_vulkan`], with `extra` flags (`--iree-execution-model=async-external`).
pub fn compile_for_vulkan_with(
    iree_compile: &Path,
    dir: &Path,
    name: &str,
    source: &str,
    extra: &[&str],
) -> PathBuf {
    compile_with(
        iree_compile,
        dir,
        name,
        source,
        "vulkan",
        VULKAN_TARGET_FLAGS,
        extra,
    )
}

fn compile_with(
    iree_compile: &Path,
    dir: &Path,
    name: &str,
    source: &str,
    target: &str,
    target_flags: &[&str],
    extra: &[&str],
) -> PathBuf {
    let mlir = dir.join(format!("{name}.mlir"));
    std::fs::write(&mlir, source).unwrap_or_else(|e| panic!("write {}: {e}", mlir.display()));
    let out = dir.join(format!("{name}-{target}.vmfb"));
    let output = Command::new(iree_compile)
        .args(target_flags)
        .args(extra)
        .arg(&mlir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("start {}: {e}", iree_compile.display()));
    assert!(
        output.status.success(),
        "iree-compile {name} for {target}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// `Some(path)` of `name`; `None` when it is missing and `PACTUM_SKIP_PEER=1` (the skip is
/// printed, naming `test`). A missing tool without `PACTUM_SKIP_PEER=1` panics: the peer tools
/// are part of the test setup, not optional.
pub fn tool_or_skip(name: &str, test: &str) -> Option<PathBuf> {
    match tool(name) {
        Ok(path) => Some(path),
        Err(message) if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") => {
            eprintln!("SKIPPED {test} (PACTUM_SKIP_PEER=1): {message}");
            None
        }
        Err(message) => panic!("{test}: {message} (PACTUM_SKIP_PEER=1 skips this test)"),
    }
}

/// The workspace's `.venv` python when it imports every one of `modules` (`iree.runtime`,
/// `numpy`, ...); `None` when it does not and `PACTUM_SKIP_PEER=1` (the skip is printed,
/// naming `test`). Without `PACTUM_SKIP_PEER=1` a python that cannot panics, as a missing
/// tool does in [`tool_or_skip`].
pub fn python_or_skip(modules: &[&str], test: &str) -> Option<PathBuf> {
    let python = repo_root().join(".venv/bin/python");
    let imports = modules.join(", ");
    let available = python.exists()
        && Command::new(&python)
            .arg("-c")
            .arg(format!("import {imports}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if available {
        return Some(python);
    }
    let why = format!(
        "{} cannot import {imports} (scripts/test.sh installs them: iree.runtime is the pinned \
         iree-base-runtime 3.13)",
        python.display()
    );
    if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
        eprintln!("SKIPPED {test} (PACTUM_SKIP_PEER=1): {why}");
        return None;
    }
    panic!("{test}: {why}; PACTUM_SKIP_PEER=1 skips this comparison");
}

// ------------------------------------------------------------------------------ values

/// One value as `iree-run-module` prints it. Numbers are kept as the exact text printed: a
/// comparison with another runtime formats its own values the same way, or parses these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IreeValue {
    /// A VM value, `i32=42`: its type (`i8`, `i16`, `i32`, `i64`, `f32`, `f64`) and its text
    /// (integers in decimal, floats as C's `%g`: `1.41421`, `1e+300`, `-nan`, `inf`).
    Scalar {
        /// The VM type name.
        ty: String,
        /// The value as printed.
        text: String,
    },
    /// A `hal.buffer_view`.
    Tensor(IreeTensor),
    /// A `vm.list`, its elements in order.
    List(Vec<IreeValue>),
    /// A null ref, `(null)`.
    Null,
    /// Any other ref (`vm.buffer`, ...): its type name; its contents are not printed
    /// (`(no printer)`).
    Ref {
        /// The ref type's name, `vm.buffer` for instance.
        type_name: String,
    },
}

/// A tensor line, `2x3xf32=[1.5 1 3.001][104 0 6]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IreeTensor {
    /// The dimensions (empty for a 0-d tensor: `f32=2`).
    pub shape: Vec<u64>,
    /// The element type as printed: `f32`, `i32`, `i1`, `i8`, ...
    pub element_type: String,
    /// The elements printed, row-major, as text (`1E+10`, `-INF`; `i1` as two hex digits,
    /// `01`). All of them unless `elided`.
    pub values: Vec<String>,
    /// Whether the tool stopped printing (`...`) at its element limit (1024 by default).
    pub elided: bool,
    /// The whole line as printed.
    pub text: String,
}

impl IreeValue {
    /// The scalar's type and text, if this is a scalar.
    pub fn as_scalar(&self) -> Option<(&str, &str)> {
        match self {
            IreeValue::Scalar { ty, text } => Some((ty, text)),
            _ => None,
        }
    }

    /// The tensor, if this is one.
    pub fn as_tensor(&self) -> Option<&IreeTensor> {
        match self {
            IreeValue::Tensor(tensor) => Some(tensor),
            _ => None,
        }
    }

    /// The list's elements, if this is a list.
    pub fn as_list(&self) -> Option<&[IreeValue]> {
        match self {
            IreeValue::List(items) => Some(items),
            _ => None,
        }
    }
}

impl IreeTensor {
    /// The number of elements the shape holds.
    pub fn element_count(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Parses a tensor line (`4xf32=1 2 3 4`).
    pub fn parse(line: &str) -> Result<IreeTensor, String> {
        let (head, body) = line
            .split_once('=')
            .ok_or_else(|| format!("a tensor line has no '=': {line:?}"))?;
        let mut parts: Vec<&str> = head.split('x').collect();
        let element_type = parts.pop().unwrap_or_default();
        if element_type.is_empty() || !element_type.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!("bad element type {element_type:?} in {line:?}"));
        }
        let shape = parts
            .iter()
            .map(|d| d.parse::<u64>())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| format!("bad shape {head:?} in {line:?}"))?;
        let mut values = Vec::new();
        let mut elided = false;
        for token in body.split(['[', ']', ' ']).filter(|t| !t.is_empty()) {
            let value = match token.strip_suffix("...") {
                Some(value) => {
                    elided = true;
                    value
                }
                None => token,
            };
            if !value.is_empty() {
                values.push(value.to_owned());
            }
        }
        let tensor = IreeTensor {
            shape,
            element_type: element_type.to_owned(),
            values,
            elided,
            text: line.to_owned(),
        };
        let count = tensor.element_count();
        let printed = tensor.values.len() as u64;
        if (!elided && printed != count) || printed > count {
            return Err(format!(
                "{line:?}: {printed} values printed for {count} elements"
            ));
        }
        Ok(tensor)
    }
}

impl fmt::Display for IreeValue {
    /// The value as `iree-run-module` prints it after `result[i]: ` (several lines for
    /// tensors, lists and refs, each ending in a newline).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IreeValue::Scalar { ty, text } => writeln!(f, "{ty}={text}"),
            IreeValue::Tensor(tensor) => writeln!(f, "hal.buffer_view\n{}", tensor.text),
            IreeValue::List(items) => {
                writeln!(f, "vm.list")?;
                for (i, item) in items.iter().enumerate() {
                    write!(f, "child_list[{i}]: {item}")?;
                }
                writeln!(f)
            }
            IreeValue::Null => writeln!(f, "(null)"),
            IreeValue::Ref { type_name } => writeln!(f, "{type_name}\n(no printer)"),
        }
    }
}

const SCALAR_TYPES: [&str; 6] = ["i8", "i16", "i32", "i64", "f32", "f64"];

/// Lines of the tool's output, with the position for messages.
struct Lines<'a> {
    lines: Vec<&'a str>,
    at: usize,
}

impl<'a> Lines<'a> {
    fn next(&mut self, what: &str) -> Result<&'a str, String> {
        let line = self
            .lines
            .get(self.at)
            .copied()
            .ok_or_else(|| format!("output ends where {what} should be"))?;
        self.at += 1;
        Ok(line)
    }

    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    /// A value whose first line (after `result[i]: ` or `child_list[i]: `) is `first`.
    fn value(&mut self, first: &'a str, depth: usize) -> Result<IreeValue, String> {
        if depth > 64 {
            return Err("lists nested more than 64 deep".into());
        }
        if let Some((ty, text)) = first.split_once('=')
            && SCALAR_TYPES.contains(&ty)
        {
            return Ok(IreeValue::Scalar {
                ty: ty.to_owned(),
                text: text.to_owned(),
            });
        }
        match first {
            "(null)" => Ok(IreeValue::Null),
            "hal.buffer_view" => Ok(IreeValue::Tensor(IreeTensor::parse(
                self.next("a tensor line")?,
            )?)),
            "vm.list" => {
                let mut items = Vec::new();
                loop {
                    let line = self.next("a list element or the list's empty line")?;
                    if line.is_empty() {
                        return Ok(IreeValue::List(items));
                    }
                    let prefix = format!("child_list[{}]: ", items.len());
                    let rest = line.strip_prefix(prefix.as_str()).ok_or_else(|| {
                        format!("expected {prefix:?} (or the list's empty line), got {line:?}")
                    })?;
                    items.push(self.value(rest, depth + 1)?);
                }
            }
            name if !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
                && self.peek() == Some("(no printer)") =>
            {
                self.at += 1;
                Ok(IreeValue::Ref {
                    type_name: name.to_owned(),
                })
            }
            other => Err(format!("unknown value {other:?}")),
        }
    }
}

/// Parses the stdout of a successful run: the function named by `EXEC @f` and its results.
pub fn parse_results(stdout: &str) -> Result<(String, Vec<IreeValue>), String> {
    let body = stdout
        .strip_suffix('\n')
        .ok_or_else(|| format!("output does not end in a newline: {stdout:?}"))?;
    let mut lines = Lines {
        lines: body.split('\n').collect(),
        at: 0,
    };
    let exec = lines.next("EXEC @<function>")?;
    let function = exec
        .strip_prefix("EXEC @")
        .ok_or_else(|| format!("expected \"EXEC @<function>\", got {exec:?}"))?
        .to_owned();
    let mut results = Vec::new();
    while let Some(line) = lines.peek() {
        lines.at += 1;
        let prefix = format!("result[{}]: ", results.len());
        let first = line
            .strip_prefix(prefix.as_str())
            .ok_or_else(|| format!("line {}: expected {prefix:?}, got {line:?}", lines.at))?;
        let value = lines
            .value(first, 0)
            .map_err(|e| format!("result[{}]: {e}", results.len()))?;
        results.push(value);
    }
    Ok((function, results))
}

/// The stdout `iree-run-module` prints for a call of `function` that returned `results`: the
/// inverse of [`parse_results`], so values made by another runtime can be printed the same way.
pub fn render_results(function: &str, results: &[IreeValue]) -> String {
    let mut out = format!("EXEC @{function}\n");
    for (i, value) in results.iter().enumerate() {
        out.push_str(&format!("result[{i}]: {value}"));
    }
    out
}

// ------------------------------------------------------------------------------ failures

/// A failed call: what `iree-run-module` printed on stderr (an IREE status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IreeFailure {
    /// The status code's name: `INVALID_ARGUMENT`, `OUT_OF_RANGE`, `FAILED_PRECONDITION`, ...
    pub status: String,
    /// Where the status was made: `<vm>:0` for `vm.fail`, else a runtime source line
    /// (`c/runtime/src/iree/vm/list.c:695`).
    pub location: String,
    /// The message: `vm.fail`'s text, or the runtime's message with its annotations, without
    /// the backtrace and the tool's `invoking function '...'` context.
    pub message: String,
    /// The VM backtrace lines (`[ 0] bytecode module@1:156 -`); often none.
    pub backtrace: Vec<String>,
    /// What the tool was doing: `invoking function 'f'` and, for exports that have one, the
    /// declaration; for failures before the call, empty (they stay in `message`).
    pub context: String,
    /// The whole stderr.
    pub stderr: String,
}

impl IreeFailure {
    /// Parses the stderr of a failed run.
    pub fn parse(stderr: &str) -> Result<IreeFailure, String> {
        let text = stderr.strip_suffix('\n').unwrap_or(stderr);
        let (head, rest) = text
            .split_once("; ")
            .ok_or_else(|| format!("not an IREE status: {stderr:?}"))?;
        let (location, status) = head
            .rsplit_once(": ")
            .ok_or_else(|| format!("not an IREE status: {stderr:?}"))?;
        if status.is_empty() || !status.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
            return Err(format!("not an IREE status code: {status:?} in {stderr:?}"));
        }
        let (before, context) = match rest.rfind("; invoking function '") {
            Some(at) => (&rest[..at], &rest[at + 2..]),
            None => (rest, ""),
        };
        // The segment before the context is the backtrace: empty, or lines that start with a
        // newline. Messages may contain "; " themselves, so only that last segment is split off.
        let (message, backtrace) = match before.rsplit_once("; ") {
            Some((message, trace))
                if !context.is_empty() && (trace.is_empty() || trace.starts_with('\n')) =>
            {
                (message, trace)
            }
            _ => (before, ""),
        };
        Ok(IreeFailure {
            status: status.to_owned(),
            location: location.to_owned(),
            message: message.to_owned(),
            backtrace: backtrace
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            context: context.to_owned(),
            stderr: stderr.to_owned(),
        })
    }
}

impl fmt::Display for IreeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

// ------------------------------------------------------------------------------ runs

/// What one `iree-run-module` call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IreeOutcome {
    /// The function named by the `EXEC @f` line (empty when the tool failed before it).
    pub function: String,
    /// The results, or the failure.
    pub results: Result<Vec<IreeValue>, IreeFailure>,
    /// The exact stdout.
    pub stdout: String,
    /// The exact stderr.
    pub stderr: String,
}

impl IreeOutcome {
    /// Builds the outcome from what the tool printed and its exit status (`Some(0)`: success;
    /// `Some(1)`: a failure status on stderr; anything else, a signal included, is an error).
    pub fn parse(
        stdout: &str,
        stderr: &str,
        exit_code: Option<i32>,
    ) -> Result<IreeOutcome, String> {
        let outcome = |function: String, results| IreeOutcome {
            function,
            results,
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
        };
        match exit_code {
            Some(0) => {
                let (function, results) =
                    parse_results(stdout).map_err(|e| format!("{e}\nin stdout:\n{stdout}"))?;
                Ok(outcome(function, Ok(results)))
            }
            Some(1) => {
                let failure = IreeFailure::parse(stderr)?;
                let function = match stdout.strip_prefix("EXEC @") {
                    Some(rest)
                        if rest.ends_with('\n') && !rest[..rest.len() - 1].contains('\n') =>
                    {
                        rest[..rest.len() - 1].to_owned()
                    }
                    _ if stdout.is_empty() => String::new(),
                    _ => return Err(format!("a failed run printed more than EXEC: {stdout:?}")),
                };
                Ok(outcome(function, Err(failure)))
            }
            other => Err(format!(
                "iree-run-module ended with {}:\nstdout:\n{stdout}\nstderr:\n{stderr}",
                match other {
                    Some(code) => format!("exit status {code}"),
                    None => "a signal".to_owned(),
                }
            )),
        }
    }

    /// The results; panics with the failure when the call failed.
    pub fn expect_results(&self) -> &[IreeValue] {
        match &self.results {
            Ok(results) => results,
            Err(failure) => panic!("@{} failed: {}", self.function, failure.stderr),
        }
    }

    /// The failure; panics with the results when the call succeeded.
    pub fn expect_failure(&self) -> &IreeFailure {
        match &self.results {
            Ok(_) => panic!("@{} succeeded:\n{}", self.function, self.stdout),
            Err(failure) => failure,
        }
    }
}

/// The `iree-run-module` command line for a call (device `None`: no `--device` flag).
pub fn run_command(
    vmfb: &Path,
    function: &str,
    inputs: &[&str],
    device: Option<&str>,
) -> Result<Command, String> {
    let mut command = Command::new(tool("iree-run-module")?);
    if let Some(device) = device {
        command.arg(format!("--device={device}"));
    }
    command
        .arg(format!("--module={}", vmfb.display()))
        .arg(format!("--function={function}"));
    for input in inputs {
        command.arg(format!("--input={input}"));
    }
    Ok(command)
}

/// Runs `function` of `vmfb` in `iree-run-module` with `inputs` (its `--input=` syntax:
/// `"7"`, `"4xf32=1 2 3 4"`, `"2x0xf32="`) and parses what it prints. A failure status of the
/// call is an `Ok` outcome whose `results` is the `Err`; `Err` here means the tool is missing,
/// crashed, hung (past [`RUN_TIMEOUT`]) or printed something this parser does not know.
pub fn run_module(
    vmfb: &Path,
    function: &str,
    inputs: &[&str],
    device: Option<&str>,
) -> Result<IreeOutcome, String> {
    let mut command = run_command(vmfb, function, inputs, device)?;
    let shown = format!("{command:?}");
    let (stdout, stderr, code) =
        run_with_timeout(&mut command, RUN_TIMEOUT).map_err(|e| format!("{shown}: {e}"))?;
    IreeOutcome::parse(&stdout, &stderr, code).map_err(|e| format!("{shown}: {e}"))
}

/// Runs `command` with piped output, killing it after `limit`.
fn run_with_timeout(
    command: &mut Command,
    limit: Duration,
) -> Result<(String, String, Option<i32>), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| format!("wait: {e}"))? {
            Some(status) => break status,
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("killed after {limit:?}"));
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    let text = |bytes: Vec<u8>, what: &str| {
        String::from_utf8(bytes).map_err(|e| format!("{what} is not UTF-8: {e}"))
    };
    let stdout = text(out.join().unwrap_or_default(), "stdout")?;
    let stderr = text(err.join().unwrap_or_default(), "stderr")?;
    Ok((stdout, stderr, status.code()))
}

// ------------------------------------------------------------------------------ manifest

/// One `pactum-run` of the fixtures' `manifest.json`: a call and what IREE printed for it when
/// the fixtures were built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestRun {
    /// The fixture's file name, `vm_scalars.vmfb`.
    pub file: String,
    /// The fixture's path.
    pub path: PathBuf,
    /// The HAL target backend: `none` (a VM-only module), `vmvx` or `llvm-cpu` (x86-64 code).
    pub backend: String,
    /// The exported function.
    pub function: String,
    /// `--device=` (`local-sync`, `local-task`), or `None` for no flag.
    pub device: Option<String>,
    /// The `--input=` values.
    pub inputs: Vec<String>,
    /// The exact stdout recorded.
    pub expected_output: String,
    /// For a run that must fail: the status code (`INVALID_ARGUMENT`, ...).
    pub fails: Option<String>,
    /// For a run that must fail: the exact stderr recorded.
    pub expected_error: Option<String>,
}

impl ManifestRun {
    /// Runs the call now with `iree-run-module`.
    pub fn run(&self) -> Result<IreeOutcome, String> {
        let inputs: Vec<&str> = self.inputs.iter().map(String::as_str).collect();
        run_module(&self.path, &self.function, &inputs, self.device.as_deref())
    }

    /// The outcome recorded in the manifest, parsed (no tool needed).
    pub fn recorded(&self) -> Result<IreeOutcome, String> {
        let (stderr, code) = match &self.expected_error {
            Some(stderr) => (stderr.as_str(), 1),
            None => ("", 0),
        };
        IreeOutcome::parse(&self.expected_output, stderr, Some(code))
    }

    /// Whether this host can run it (`llvm-cpu` fixtures hold x86-64 code).
    pub fn runs_on_this_host(&self) -> bool {
        self.backend != "llvm-cpu" || cfg!(target_arch = "x86_64")
    }
}

impl fmt::Display for ManifestRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} @{}({})",
            self.file,
            self.function,
            self.inputs.join(", ")
        )?;
        if let Some(device) = &self.device {
            write!(f, " on {device}")?;
        }
        Ok(())
    }
}

/// Every run of `manifest.json`, in its order.
pub fn manifest_runs() -> Result<Vec<ManifestRun>, String> {
    let path = fixtures_dir().join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    manifest_runs_from(&text, &fixtures_dir()).map_err(|e| format!("{}: {e}", path.display()))
}

/// The runs of a manifest's text, with paths relative to `dir`.
pub fn manifest_runs_from(text: &str, dir: &Path) -> Result<Vec<ManifestRun>, String> {
    use serde_json::Value;
    let manifest: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let string = |value: &Value, key: &str| -> Result<String, String> {
        value[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{key} is not a string in {value}"))
    };
    let optional = |value: &Value, key: &str| -> Result<Option<String>, String> {
        match &value[key] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(format!("{key} is neither null nor a string: {other}")),
        }
    };
    let mut runs = Vec::new();
    for fixture in manifest["fixtures"].as_array().ok_or("no fixtures array")? {
        let file = string(fixture, "file")?;
        let backend = string(fixture, "backend")?;
        for run in fixture["runs"]
            .as_array()
            .ok_or("a fixture has no runs array")?
        {
            let inputs = run["inputs"]
                .as_array()
                .ok_or("inputs is not an array")?
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .ok_or("an input is not a string")
                })
                .collect::<Result<Vec<String>, _>>()?;
            let fails = optional(run, "fails")?;
            let expected_error = optional(run, "expected_error")?;
            if fails.is_some() != expected_error.is_some() {
                return Err(format!("fails and expected_error go together: {run}"));
            }
            runs.push(ManifestRun {
                file: file.clone(),
                path: dir.join(&file),
                backend: backend.clone(),
                function: string(run, "function")?,
                device: optional(run, "device")?,
                inputs,
                expected_output: string(run, "expected_output")?,
                fails,
                expected_error,
            });
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    //! The parser on output captured from the pinned `iree-run-module` 3.13 (the command above
    //! each sample, run in `crates/pactum-iree/tests/fixtures/vmfb`), and on the manifest.

    use super::*;

    // iree-run-module --module=vm_scalars.vmfb --function=casts --input=-200 --input=-5000000000 --input=2.5 --input=-1e10   (exit 0)
    const SCALARS_OUT: &str = "EXEC @casts\nresult[0]: i64=-200\nresult[1]: i64=4294967096\nresult[2]: i32=-705032704\nresult[3]: f32=-200\nresult[4]: f32=4.29497e+09\nresult[5]: i32=3\nresult[6]: i32=3\nresult[7]: i32=1075838976\nresult[8]: f32=-nan\nresult[9]: f64=-200\nresult[10]: f64=4.29497e+09\nresult[11]: i64=-10000000000\nresult[12]: i64=-10000000000\nresult[13]: i64=-4466831549978902528\nresult[14]: f64=-nan\nresult[15]: f32=-5e+09\nresult[16]: f32=1.84467e+19\nresult[17]: i64=3\nresult[18]: i64=3\nresult[19]: f64=2.5\nresult[20]: f64=-5e+09\nresult[21]: i64=3491037945\n";
    // iree-run-module --device=local-sync --module=vmvx_tensors.vmfb --function=stats --input=0xf32=   (exit 0)
    const TENSORS_OUT: &str = "EXEC @stats\nresult[0]: hal.buffer_view\nf32=0\nresult[1]: hal.buffer_view\nf32=-INF\nresult[2]: hal.buffer_view\n0xf32=\nresult[3]: i64=0\n";
    // iree-run-module --device=local-sync --module=vmvx_tensors.vmfb --function=expand '--input=6xi32=1 2 3 4 5 6' --output_max_element_count=4   (exit 0)
    const RANK3_ELIDED_OUT: &str =
        "EXEC @expand\nresult[0]: hal.buffer_view\n2x1x3xi32=[[1 2 3]][[4...]]\n";
    // iree-run-module --device=local-sync --module=vmvx_tensors.vmfb --function=transpose '--input=2x3xf32=1 2 3 4 5 6' --output_max_element_count=4   (exit 0)
    const ROWS_ELIDED_OUT: &str =
        "EXEC @transpose\nresult[0]: hal.buffer_view\n3x2xf32=[1 4][2 5][...]\n";
    // iree-run-module --device=local-sync --module=vmvx_tensors.vmfb --function=int_ops '--input=3xi32=-7 0 2147483647' '--input=3xi64=-1 4294967296 5'   (exit 0)
    const INT_TENSORS_OUT: &str = "EXEC @int_ops\nresult[0]: hal.buffer_view\n3xi32=-14 0 -2\nresult[1]: hal.buffer_view\n3xi64=-8 4294967296 2147483652\nresult[2]: hal.buffer_view\n3xi8=-7 0 -1\nresult[3]: hal.buffer_view\n3xi1=01 01 00\n";
    // iree-run-module --module=vm_memory.vmfb --function=lists --input=2   (exit 0)
    const LISTS_OUT: &str = "EXEC @lists\nresult[0]: vm.list\nchild_list[0]: i32=0\nchild_list[1]: i32=1\n\nresult[1]: vm.list\nchild_list[0]: i64=0\nchild_list[1]: i64=3000000000\n\nresult[2]: vm.list\nchild_list[0]: f32=0\nchild_list[1]: f32=0.5\n\nresult[3]: vm.list\nchild_list[0]: f64=0\nchild_list[1]: f64=0.333333\n\nresult[4]: vm.list\nchild_list[0]: vm.list\n\nchild_list[1]: vm.list\nchild_list[0]: i32=0\n\n\nresult[5]: vm.list\nchild_list[0]: i32=2\nchild_list[1]: i64=2\nchild_list[2]: f32=2\nchild_list[3]: f64=2\nchild_list[4]: vm.buffer\n(no printer)\nchild_list[5]: vm.list\nchild_list[0]: i32=0\nchild_list[1]: i32=1\n\nchild_list[6]: (null)\n\n";
    // iree-run-module --device=local-sync --module=vmvx_tensors.vmfb --function=split_rows '--input=2x3xf32=1 2 3 4 5 6'   (exit 0)
    const LIST_OF_TENSORS_OUT: &str = "EXEC @split_rows\nresult[0]: vm.list\nchild_list[0]: hal.buffer_view\n3xf32=1 2 3\nchild_list[1]: hal.buffer_view\n3xf32=4 5 6\n\n";
    // iree-run-module --module=vm_memory.vmfb --function=global_refs   (exit 0)
    const REFS_OUT: &str = "EXEC @global_refs\nresult[0]: i32=1\nresult[1]: i32=1\nresult[2]: i32=1\nresult[3]: i32=0\nresult[4]: i32=1\nresult[5]: i32=1\nresult[6]: (null)\n";
    // iree-run-module --module=vm_memory.vmfb --function=buffer_ops --input=4 --input=-2   (exit 0)
    const BUFFER_OUT: &str = "EXEC @buffer_ops\nresult[0]: i64=32\nresult[1]: i32=171\nresult[2]: i32=-2\nresult[3]: i32=-2\nresult[4]: i32=-2\nresult[5]: i64=-81985529216486896\nresult[6]: f32=-0.375\nresult[7]: f64=6e+23\nresult[8]: i32=-2\nresult[9]: i32=1\nresult[10]: i32=0\nresult[11]: i32=7\nresult[12]: i64=739514392335149359\nresult[13]: i64=-3924598884556745383\nresult[14]: i64=8239909400719583909\nresult[15]: i32=0\nresult[16]: vm.buffer\n(no printer)\n";
    // iree-run-module --module=vm_scalars.vmfb --function=checked_div --input=7 --input=0   (exit 1)
    const VM_FAIL_OUT: &str = "EXEC @checked_div\n";
    const VM_FAIL_ERR: &str = "<vm>:0: INVALID_ARGUMENT; checked_div: the divisor is zero; ; invoking function 'checked_div'\n";
    // iree-run-module --device=local-sync --module=vmvx_tensors.vmfb --function=add_mat '--input=2x2xf32=1 2 3 4' '--input=2x3xf32=1 2 3 4 5 6'   (exit 1)
    const ASSERT_FAIL_OUT: &str = "EXEC @add_mat\n";
    const ASSERT_FAIL_ERR: &str = "c/runtime/src/iree/modules/hal/utils/buffer_diagnostics.c:225: INVALID_ARGUMENT; input0 shape dimension 1 mismatch; expected 3 but have 2; expected shape `2x3`, actual shape `2x2`; while invoking native function hal.buffer_view.assert; while calling import; \n[ 0] bytecode vmvx_tensors@1:156 -; invoking function 'add_mat'; `sync func @add_mat(%input0: tensor<2x3xf32>, %input1: tensor<2x3xf32>) -> (%output0: tensor<2x3xf32>)`\n";
    // iree-run-module --module=vm_scalars.vmfb --function=nope   (exit 1)
    const NO_FUNCTION_ERR: &str = "c/runtime/src/iree/vm/bytecode/module.c:333: NOT_FOUND; no function `nope` exported by module; looking up function 'nope'; creating run context\n";
    // iree-run-module --module=vm_scalars.vmfb --function=i32_arith --input=1 --input=x   (exit 1)
    const BAD_INPUT_ERR: &str = "c/runtime/src/iree/tooling/function_io.c:347: INVALID_ARGUMENT; parsing value `x` as i32; parsing input `x`; parsing function inputs\n";

    fn scalar(ty: &str, text: &str) -> IreeValue {
        IreeValue::Scalar {
            ty: ty.into(),
            text: text.into(),
        }
    }

    fn ok(stdout: &str) -> (String, Vec<IreeValue>) {
        let (function, results) = parse_results(stdout).unwrap();
        // Everything printed was understood: printing the values again gives the same text.
        assert_eq!(render_results(&function, &results), stdout);
        let outcome = IreeOutcome::parse(stdout, "", Some(0)).unwrap();
        assert_eq!(outcome.expect_results(), results.as_slice());
        (function, results)
    }

    fn tensor(value: &IreeValue) -> &IreeTensor {
        value.as_tensor().unwrap()
    }

    #[test]
    fn scalars_keep_their_type_and_exact_text() {
        let (function, results) = ok(SCALARS_OUT);
        assert_eq!(function, "casts");
        assert_eq!(results.len(), 22);
        assert_eq!(results[0], scalar("i64", "-200"));
        assert_eq!(results[2], scalar("i32", "-705032704"));
        assert_eq!(results[4], scalar("f32", "4.29497e+09"));
        assert_eq!(results[8], scalar("f32", "-nan"));
        assert_eq!(results[14].as_scalar(), Some(("f64", "-nan")));
        assert_eq!(results[19], scalar("f64", "2.5"));
        let (_, results) = ok(BUFFER_OUT);
        assert_eq!(results[7], scalar("f64", "6e+23"));
        assert_eq!(results[12], scalar("i64", "739514392335149359"));
    }

    #[test]
    fn tensors_have_shape_type_and_values_as_printed() {
        let (_, results) = ok(TENSORS_OUT);
        let sum = tensor(&results[0]);
        assert_eq!(
            (sum.shape.as_slice(), sum.element_type.as_str()),
            (&[][..], "f32")
        );
        assert_eq!(sum.values, ["0"]);
        assert_eq!(tensor(&results[1]).values, ["-INF"]);
        let empty = tensor(&results[2]);
        assert_eq!(empty.shape, [0]);
        assert!(empty.values.is_empty() && !empty.elided);
        assert_eq!(empty.text, "0xf32=");
        assert_eq!(results[3], scalar("i64", "0"));

        let (_, results) = ok(INT_TENSORS_OUT);
        assert_eq!(tensor(&results[0]).values, ["-14", "0", "-2"]);
        assert_eq!(tensor(&results[1]).element_type, "i64");
        assert_eq!(tensor(&results[2]).values, ["-7", "0", "-1"]);
        let bools = tensor(&results[3]);
        assert_eq!(bools.element_type, "i1");
        assert_eq!(bools.values, ["01", "01", "00"]);

        let t = IreeTensor::parse("2x3xf32=[1.5 1 3.001][104 0 6]").unwrap();
        assert_eq!(t.shape, [2, 3]);
        assert_eq!(t.values, ["1.5", "1", "3.001", "104", "0", "6"]);
        assert_eq!(t.element_count(), 6);
    }

    #[test]
    fn elided_tensors_keep_what_was_printed() {
        let (_, results) = ok(RANK3_ELIDED_OUT);
        let t = tensor(&results[0]);
        assert_eq!(t.shape, [2, 1, 3]);
        assert_eq!(t.element_type, "i32");
        assert_eq!(t.values, ["1", "2", "3", "4"]);
        assert!(t.elided);
        let (_, results) = ok(ROWS_ELIDED_OUT);
        let t = tensor(&results[0]);
        assert_eq!(t.shape, [3, 2]);
        assert_eq!(t.values, ["1", "4", "2", "5"]);
        assert!(t.elided);
    }

    #[test]
    fn lists_nest_and_hold_values_refs_tensors_and_nulls() {
        let (_, results) = ok(LISTS_OUT);
        assert_eq!(results.len(), 6);
        assert_eq!(
            results[0],
            IreeValue::List(vec![scalar("i32", "0"), scalar("i32", "1")])
        );
        assert_eq!(results[3].as_list().unwrap()[1], scalar("f64", "0.333333"));
        assert_eq!(
            results[4],
            IreeValue::List(vec![
                IreeValue::List(vec![]),
                IreeValue::List(vec![scalar("i32", "0")]),
            ])
        );
        let variant = results[5].as_list().unwrap();
        assert_eq!(variant[1], scalar("i64", "2"));
        assert_eq!(
            variant[4],
            IreeValue::Ref {
                type_name: "vm.buffer".into()
            }
        );
        assert_eq!(variant[5].as_list().unwrap().len(), 2);
        assert_eq!(variant[6], IreeValue::Null);

        let (_, results) = ok(LIST_OF_TENSORS_OUT);
        let rows = results[0].as_list().unwrap();
        assert_eq!(tensor(&rows[1]).values, ["4", "5", "6"]);

        let (_, results) = ok(REFS_OUT);
        assert_eq!(results[6], IreeValue::Null);
        let (_, results) = ok(BUFFER_OUT);
        assert_eq!(
            results[16],
            IreeValue::Ref {
                type_name: "vm.buffer".into()
            }
        );
    }

    #[test]
    fn failures_split_status_message_backtrace_and_context() {
        let outcome = IreeOutcome::parse(VM_FAIL_OUT, VM_FAIL_ERR, Some(1)).unwrap();
        assert_eq!(outcome.function, "checked_div");
        let failure = outcome.expect_failure();
        assert_eq!(failure.status, "INVALID_ARGUMENT");
        assert_eq!(failure.location, "<vm>:0");
        assert_eq!(failure.message, "checked_div: the divisor is zero");
        assert!(failure.backtrace.is_empty());
        assert_eq!(failure.context, "invoking function 'checked_div'");
        assert_eq!(failure.stderr, VM_FAIL_ERR);

        let failure = IreeOutcome::parse(ASSERT_FAIL_OUT, ASSERT_FAIL_ERR, Some(1))
            .unwrap()
            .expect_failure()
            .clone();
        assert_eq!(failure.status, "INVALID_ARGUMENT");
        assert_eq!(
            failure.location,
            "c/runtime/src/iree/modules/hal/utils/buffer_diagnostics.c:225"
        );
        assert_eq!(
            failure.message,
            "input0 shape dimension 1 mismatch; expected 3 but have 2; expected shape `2x3`, \
             actual shape `2x2`; while invoking native function hal.buffer_view.assert; while \
             calling import"
        );
        assert_eq!(failure.backtrace, ["[ 0] bytecode vmvx_tensors@1:156 -"]);
        assert!(
            failure
                .context
                .starts_with("invoking function 'add_mat'; `sync func @add_mat(")
        );

        // Failures before the call: no EXEC line, the whole text is the message.
        let outcome = IreeOutcome::parse("", NO_FUNCTION_ERR, Some(1)).unwrap();
        assert_eq!(outcome.function, "");
        let failure = outcome.expect_failure();
        assert_eq!(failure.status, "NOT_FOUND");
        assert_eq!(
            failure.message,
            "no function `nope` exported by module; looking up function 'nope'; creating run context"
        );
        assert_eq!(failure.context, "");
        let failure = IreeFailure::parse(BAD_INPUT_ERR).unwrap();
        assert_eq!(failure.status, "INVALID_ARGUMENT");
        assert_eq!(
            failure.location,
            "c/runtime/src/iree/tooling/function_io.c:347"
        );
        assert_eq!(
            failure.to_string(),
            "INVALID_ARGUMENT: parsing value `x` as i32; parsing input `x`; parsing function inputs"
        );
    }

    #[test]
    fn anything_else_is_an_error_not_a_guess() {
        for (stdout, why) in [
            ("", "no EXEC line"),
            ("EXEC @f", "no final newline"),
            ("EXEC @f\nresult[1]: i32=1\n", "results out of order"),
            ("EXEC @f\nresult[0]: u32=1\n", "not a VM type"),
            (
                "EXEC @f\nresult[0]: vm.list\nchild_list[0]: i32=1\n",
                "a list without its end",
            ),
            (
                "EXEC @f\nresult[0]: vm.list\nchild_list[1]: i32=1\n\n",
                "a list element out of order",
            ),
            (
                "EXEC @f\nresult[0]: hal.buffer_view\n3xf32=1 2\n",
                "too few values",
            ),
            (
                "EXEC @f\nresult[0]: hal.buffer_view\n2xf32=1 2 3...\n",
                "too many values",
            ),
            ("EXEC @f\nresult[0]: hal.buffer_view\n", "no tensor line"),
            (
                "EXEC @f\nresult[0]: hal.buffer_view\n2yxf32=1 2\n",
                "a bad shape",
            ),
            (
                "EXEC @f\nresult[0]: vm.buffer\n",
                "a ref without (no printer)",
            ),
        ] {
            assert!(parse_results(stdout).is_err(), "{why}: {stdout:?}");
        }
        assert!(IreeFailure::parse("something went wrong\n").is_err());
        assert!(IreeFailure::parse("x.c:1: not a code; y\n").is_err());
        assert!(IreeOutcome::parse("EXEC @f\n", "", Some(139)).is_err());
        assert!(IreeOutcome::parse("EXEC @f\n", "", None).is_err());
        assert!(IreeOutcome::parse("EXEC @f\nresult[0]: i32=1\n", VM_FAIL_ERR, Some(1)).is_err());
    }

    #[test]
    fn every_recorded_manifest_run_parses_and_prints_back() {
        let runs = manifest_runs().unwrap();
        assert!(runs.len() >= 100, "only {} runs", runs.len());
        let mut failures = 0;
        for run in &runs {
            let outcome = run.recorded().unwrap_or_else(|e| panic!("{run}: {e}"));
            assert_eq!(outcome.function, run.function, "{run}");
            match (&outcome.results, &run.fails) {
                (Ok(results), None) => {
                    assert_eq!(render_results(&run.function, results), run.expected_output)
                }
                (Err(failure), Some(status)) => {
                    assert_eq!(&failure.status, status, "{run}");
                    failures += 1;
                }
                (results, fails) => panic!("{run}: {results:?} but fails is {fails:?}"),
            }
            assert!(run.path.is_file(), "{run}: {} missing", run.path.display());
        }
        assert!(failures >= 4, "only {failures} failing runs");
        for backend in ["none", "vmvx", "llvm-cpu"] {
            assert!(
                runs.iter().any(|r| r.backend == backend),
                "no {backend} runs"
            );
        }
    }

    #[test]
    fn manifest_text_is_checked() {
        let dir = Path::new("/fixtures");
        let good = r#"{"fixtures": [{"file": "a.vmfb", "backend": "none", "runs": [
            {"function": "f", "inputs": ["1"], "device": null, "expected_output": "EXEC @f\n"},
            {"function": "g", "inputs": [], "device": "local-sync", "expected_output": "EXEC @g\n",
             "fails": "OUT_OF_RANGE", "expected_error": "x.c:1: OUT_OF_RANGE; no\n"}]}]}"#;
        let runs = manifest_runs_from(good, dir).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].path, dir.join("a.vmfb"));
        assert_eq!(runs[0].device, None);
        assert_eq!(runs[1].device.as_deref(), Some("local-sync"));
        assert_eq!(runs[1].fails.as_deref(), Some("OUT_OF_RANGE"));
        assert_eq!(runs[1].to_string(), "a.vmfb @g() on local-sync");
        assert_eq!(runs[1].recorded().unwrap().expect_failure().message, "no");
        let bad = good.replace(r#""fails": "OUT_OF_RANGE", "#, "");
        assert!(manifest_runs_from(&bad, dir).is_err());
        assert!(manifest_runs_from("{}", dir).is_err());
    }

    #[test]
    fn tools_come_from_the_environment_or_the_venv() {
        // Only the default is checked: the variables belong to the whole test process.
        if std::env::var_os("PACTUM_IREE_BIN").is_none()
            && std::env::var_os("PACTUM_IREE_TOOLS").is_none()
        {
            assert_eq!(tools_dir(), repo_root().join(".venv/bin"));
        }
        let missing = tool("iree-no-such-tool").unwrap_err();
        assert!(missing.contains("iree-no-such-tool missing"), "{missing}");
    }
}
