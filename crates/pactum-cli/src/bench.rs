//! `pactum bench --module=FILE.vmfb --function=NAME --input=VALUE...`: iree-benchmark-module's
//! main flags, timing each call of the function and reporting per-iteration times in the
//! layout of Google Benchmark's console reporter, which iree-benchmark-module prints.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use pactum_iree::module::IreeModule;
use pactum_iree::vm::Value;

use crate::tool::{self, CONTEXT_FLAGS, FlagKind, ToolFlags};

/// iree-benchmark-module's flags that pactum takes.
fn known_flags() -> Vec<(&'static str, FlagKind)> {
    let mut flags = CONTEXT_FLAGS.to_vec();
    flags.extend_from_slice(&[
        ("input", FlagKind::List),
        ("benchmark_repetitions", FlagKind::Single),
        ("benchmark_min_time", FlagKind::Single),
        ("benchmark_format", FlagKind::Single),
        ("json", FlagKind::Bool),
    ]);
    flags
}

/// How long (or how many iterations) each repetition runs: `--benchmark_min_time`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum MinTime {
    /// Iterate until this much time has passed (`0.5s`, `0.5`).
    Seconds(f64),
    /// Exactly this many iterations (`100x`).
    Iterations(u64),
}

impl MinTime {
    fn parse(text: &str) -> Result<MinTime> {
        let bad = || {
            anyhow!(
                "--benchmark_min_time={text}: expected seconds (`0.5s`, `0.5`) or an iteration \
                 count (`100x`)"
            )
        };
        if let Some(count) = text.strip_suffix('x') {
            let count: u64 = count.parse().map_err(|_| bad())?;
            if count == 0 {
                return Err(bad());
            }
            return Ok(MinTime::Iterations(count));
        }
        let seconds: f64 = text
            .strip_suffix('s')
            .unwrap_or(text)
            .parse()
            .map_err(|_| bad())?;
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(bad());
        }
        Ok(MinTime::Seconds(seconds))
    }
}

/// The CPU time this process has used (all its threads), as Google Benchmark's
/// `MeasureProcessCPUTime` counts it.
fn process_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the duration of the call, and
    // CLOCK_PROCESS_CPUTIME_ID is a clock every Linux and macOS kernel provides.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// One repetition: how long each of its iterations took, and the CPU time of them all.
struct Repetition {
    iterations: Vec<Duration>,
    cpu: Duration,
}

/// Calls `function` `count` times with `inputs`.
fn repetition(
    module: &IreeModule,
    function: &str,
    inputs: &[Value],
    count: u64,
) -> Result<Repetition> {
    let mut iterations = Vec::with_capacity(count as usize);
    let cpu_start = process_cpu_time();
    for _ in 0..count {
        let started = Instant::now();
        module
            .invoke_values(function, inputs.to_vec())
            .map_err(|e| anyhow!("invoking function '{function}': {e}"))?;
        iterations.push(started.elapsed());
    }
    Ok(Repetition {
        iterations,
        cpu: process_cpu_time().saturating_sub(cpu_start),
    })
}

/// The iteration count that makes one repetition last `seconds`, found as Google Benchmark
/// does: runs of growing length (at most ten times longer each) until one lasts long enough.
fn calibrate(module: &IreeModule, function: &str, inputs: &[Value], seconds: f64) -> Result<u64> {
    const MAX_ITERATIONS: u64 = 1_000_000_000;
    let mut count: u64 = 1;
    loop {
        let run = repetition(module, function, inputs, count)?;
        let elapsed: f64 = run.iterations.iter().map(Duration::as_secs_f64).sum();
        if elapsed >= seconds || count >= MAX_ITERATIONS {
            return Ok(count);
        }
        let predicted = if elapsed > 0.0 {
            (count as f64 * seconds * 1.4 / elapsed).ceil() as u64
        } else {
            count * 10
        };
        count = predicted.clamp(count + 1, count * 10).min(MAX_ITERATIONS);
    }
}

/// Aggregates of a sample: mean, median, standard deviation (n - 1), minimum and maximum.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stats {
    mean: f64,
    median: f64,
    stddev: f64,
    min: f64,
    max: f64,
}

impl Stats {
    fn of(values: &[f64]) -> Stats {
        let n = values.len().max(1) as f64;
        let mean = values.iter().sum::<f64>() / n;
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = match sorted.len() {
            0 => 0.0,
            len if len % 2 == 1 => sorted[len / 2],
            len => (sorted[len / 2 - 1] + sorted[len / 2]) / 2.0,
        };
        let stddev = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Stats {
            mean,
            median,
            stddev,
            min: sorted.first().copied().unwrap_or(0.0),
            max: sorted.last().copied().unwrap_or(0.0),
        }
    }

    /// The coefficient of variation, in percent.
    fn cv_percent(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.stddev / self.mean * 100.0
        }
    }
}

/// A time in Google Benchmark's console columns: 10 characters, fewer decimals as it grows.
fn time_column(value: f64) -> String {
    if value < 1.0 {
        format!("{value:10.3}")
    } else if value < 10.0 {
        format!("{value:10.2}")
    } else if value < 100.0 {
        format!("{value:10.1}")
    } else {
        format!("{value:10.0}")
    }
}

/// One reported row: a repetition or an aggregate.
struct Row {
    name: String,
    run_type: &'static str,
    aggregate: Option<&'static str>,
    repetition_index: Option<usize>,
    real_ms: f64,
    cpu_ms: f64,
    iterations: u64,
}

/// Runs the command line `args` (iree-benchmark-module's main flags).
pub fn run(args: &[String]) -> Result<()> {
    let flags = ToolFlags::parse("pactum bench", &known_flags(), args)?;
    let repetitions: usize = flags.parsed("benchmark_repetitions", 1)?;
    if repetitions == 0 {
        bail!("--benchmark_repetitions must be at least 1");
    }
    let min_time = MinTime::parse(flags.get("benchmark_min_time").unwrap_or("0.5s"))?;
    let json = match flags.get("benchmark_format") {
        None | Some("console") => flags.is_set("json"),
        Some("json") => true,
        Some(other) => bail!("--benchmark_format={other}: expected console or json"),
    };
    let module = tool::load_modules(&flags, tool::device(&flags)?)?;
    let device = module.device_id().to_owned();
    let function = tool::function_name(&module, &flags)?;
    let (argument_kinds, _) = module.value_kinds(&function).map_err(|e| anyhow!("{e}"))?;
    let inputs = tool::parse_values(&argument_kinds, flags.list("input"))
        .context("parsing function inputs")?;
    // One call first: a function that fails is reported before any timing.
    repetition(&module, &function, &inputs, 1)?;
    let count = match min_time {
        MinTime::Iterations(count) => count,
        MinTime::Seconds(seconds) => calibrate(&module, &function, &inputs, seconds)?,
    };
    let runs = (0..repetitions)
        .map(|_| repetition(&module, &function, &inputs, count))
        .collect::<Result<Vec<_>>>()?;

    let name = format!("BM_{function}/process_time/real_time");
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let mut rows: Vec<Row> = runs
        .iter()
        .enumerate()
        .map(|(index, run)| Row {
            name: name.clone(),
            run_type: "iteration",
            aggregate: None,
            repetition_index: Some(index),
            real_ms: run.iterations.iter().map(ms).sum::<f64>() / count as f64,
            cpu_ms: ms(&run.cpu) / count as f64,
            iterations: count,
        })
        .collect();
    // The aggregates are over every timed iteration (all repetitions); the CPU column's are
    // over the repetitions (CPU time is measured a repetition at a time).
    let every: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.iterations.iter().map(ms))
        .collect();
    let real = Stats::of(&every);
    let cpu = Stats::of(&rows.iter().map(|r| r.cpu_ms).collect::<Vec<_>>());
    let total = every.len() as u64;
    for (aggregate, real_ms, cpu_ms) in [
        ("mean", real.mean, cpu.mean),
        ("median", real.median, cpu.median),
        ("stddev", real.stddev, cpu.stddev),
        ("min", real.min, cpu.min),
        ("max", real.max, cpu.max),
        ("cv", real.cv_percent(), cpu.cv_percent()),
    ] {
        rows.push(Row {
            name: format!("{name}_{aggregate}"),
            run_type: "aggregate",
            aggregate: Some(aggregate),
            repetition_index: None,
            real_ms,
            cpu_ms,
            iterations: total,
        });
    }
    if json {
        print_json(&module, &function, &device, repetitions, &rows)
    } else {
        print_console(&rows);
        Ok(())
    }
}

fn print_console(rows: &[Row]) {
    let width = rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(10)
        .max(10);
    let header = format!(
        "{:<width$} {:>13} {:>15} {:>12}",
        "Benchmark", "Time", "CPU", "Iterations"
    );
    let rule = "-".repeat(header.len());
    println!("{rule}\n{header}\n{rule}");
    for row in rows {
        let (real, cpu) = if row.aggregate == Some("cv") {
            (
                format!("{:>10.2} %", row.real_ms),
                format!("{:>12.2} %", row.cpu_ms),
            )
        } else {
            (
                format!("{} ms", time_column(row.real_ms)),
                format!("  {} ms", time_column(row.cpu_ms)),
            )
        };
        println!(
            "{:<width$} {real:>13} {cpu:>15} {:>12}",
            row.name, row.iterations
        );
    }
}

fn print_json(
    module: &IreeModule,
    function: &str,
    device: &str,
    repetitions: usize,
    rows: &[Row],
) -> Result<()> {
    let benchmarks: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let mut entry = serde_json::json!({
                "name": row.name,
                "run_name": format!("BM_{function}/process_time/real_time"),
                "run_type": row.run_type,
                "repetitions": repetitions,
                "iterations": row.iterations,
                "real_time": row.real_ms,
                "cpu_time": row.cpu_ms,
                "time_unit": if row.aggregate == Some("cv") { "%" } else { "ms" },
            });
            if let Some(index) = row.repetition_index {
                entry["repetition_index"] = index.into();
            }
            if let Some(aggregate) = row.aggregate {
                entry["aggregate_name"] = aggregate.into();
            }
            entry
        })
        .collect();
    let report = serde_json::json!({
        "context": {
            "executable": "pactum bench",
            "module": module.name(),
            "function": function,
            "device": device,
            "aggregates_over": "every timed iteration (cpu_time: the repetitions)",
        },
        "benchmarks": benchmarks,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_time_reads_seconds_and_iteration_counts() {
        assert_eq!(MinTime::parse("0.5s").unwrap(), MinTime::Seconds(0.5));
        assert_eq!(MinTime::parse("2").unwrap(), MinTime::Seconds(2.0));
        assert_eq!(MinTime::parse("100x").unwrap(), MinTime::Iterations(100));
        assert!(MinTime::parse("0x").is_err());
        assert!(MinTime::parse("fast").is_err());
        assert!(MinTime::parse("-1s").is_err());
    }

    #[test]
    fn stats_are_the_sample_statistics() {
        let stats = Stats::of(&[1.0, 2.0, 3.0, 10.0]);
        assert_eq!(stats.mean, 4.0);
        assert_eq!(stats.median, 2.5);
        assert_eq!(stats.min, 1.0);
        assert_eq!(stats.max, 10.0);
        assert!((stats.stddev - 4.0824829).abs() < 1e-6);
        assert_eq!(Stats::of(&[5.0]).stddev, 0.0);
    }

    #[test]
    fn time_columns_narrow_their_decimals_as_google_benchmark_does() {
        assert_eq!(time_column(0.0021), "     0.002");
        assert_eq!(time_column(4.5678), "      4.57");
        assert_eq!(time_column(27.1828), "      27.2");
        assert_eq!(time_column(271.828), "       272");
    }
}
