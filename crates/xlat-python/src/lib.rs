//! Python bindings: the module `xlat._core`. Thin by design: it converts
//! arguments, releases the GIL around simulation, draws the progress bar, and maps engine errors
//! to `XlatError` with the engine's message.

mod progress;

use progress::{Mode, Progress};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::PathBuf;

create_exception!(
    _core,
    XlatError,
    PyException,
    "An error reported by the xlat engine."
);

fn to_py(e: xlat::Error) -> PyErr {
    match e {
        xlat::Error::Interrupted => {
            pyo3::exceptions::PyKeyboardInterrupt::new_err("simulation interrupted")
        }
        e => XlatError::new_err(e.to_string()),
    }
}

/// Run one simulation; returns the stats as JSON text. `progress`: see [`Mode::from_py`].
#[pyfunction]
#[pyo3(signature = (config, overrides, trace=None, out=None, progress=None))]
fn run(
    py: Python<'_>,
    config: String,
    overrides: Vec<String>,
    trace: Option<PathBuf>,
    out: Option<PathBuf>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let mode = Mode::from_py(progress.as_ref())?;
    py.detach(move || {
        let cfg = xlat::run::resolve(&config, &overrides, trace.as_deref())?;
        let mut progress = Progress::new(mode);
        let stats = xlat::run::run(cfg, out.as_deref(), &mut |done, total| {
            progress.report(done, total)
        })?;
        progress.finish();
        Ok(stats.to_json())
    })
    .map_err(to_py)
}

/// Write the records of the configured workload to a native `.xtr` trace, its set-up only with
/// `include_setup`; returns what was written as JSON (`xlat::run::Recorded`).
#[pyfunction]
#[pyo3(signature = (config, overrides, out, progress=None, include_setup=false))]
fn record_trace(
    py: Python<'_>,
    config: String,
    overrides: Vec<String>,
    out: PathBuf,
    progress: Option<Bound<'_, PyAny>>,
    include_setup: bool,
) -> PyResult<String> {
    let mode = Mode::from_py(progress.as_ref())?;
    py.detach(move || {
        let cfg = xlat::run::resolve(&config, &overrides, None)?;
        let mut progress = Progress::new(mode);
        let recorded = xlat::run::record(&cfg, &out, include_setup, &mut |done, total| {
            progress.report(done, total)
        })?;
        progress.finish();
        Ok(serde_json::to_string(&recorded).expect("record result serialises"))
    })
    .map_err(to_py)
}

/// Convert a trace between formats (the output format follows `dst`'s name); returns the count.
#[pyfunction]
fn convert_trace(py: Python<'_>, src: PathBuf, dst: PathBuf) -> PyResult<u64> {
    py.detach(move || xlat::trace::convert(&src, &dst))
        .map_err(to_py)
}

/// Summary of a trace of any supported format, as JSON.
#[pyfunction]
fn inspect_trace(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.detach(move || xlat::trace::inspect(&path))
        .map(|s| serde_json::to_string(&s).expect("trace summary serialises"))
        .map_err(to_py)
}

/// Every built-in workload with its defaults and footprint, as JSON; with `footprint`, the
/// workloads that take one, at the parameters that reach it.
#[pyfunction]
#[pyo3(signature = (footprint=None))]
fn workload_catalog(py: Python<'_>, footprint: Option<String>) -> PyResult<String> {
    py.detach(move || xlat::run::workloads_at(footprint.as_deref()))
        .map(|w| serde_json::to_string(&w).expect("catalog serialises"))
        .map_err(to_py)
}

/// Records per second the workload generator alone produces, as JSON.
#[pyfunction]
fn bench_generator(py: Python<'_>, workload: String, references: u64) -> PyResult<String> {
    py.detach(move || xlat::run::bench_generator(&workload, references))
        .map(|r| serde_json::to_string(&r).expect("bench result serialises"))
        .map_err(to_py)
}

/// The resolved config as TOML text.
#[pyfunction]
#[pyo3(signature = (config, overrides, trace=None))]
fn resolve(config: &str, overrides: Vec<String>, trace: Option<PathBuf>) -> PyResult<String> {
    xlat::run::resolve(config, &overrides, trace.as_deref())
        .map(|c| c.to_toml())
        .map_err(to_py)
}

/// Estimated host bytes of a run of the config (`xlat::run::host_estimate`), `None` where
/// its workload has no formula.
#[pyfunction]
fn host_estimate(config: &str, overrides: Vec<String>) -> PyResult<Option<u64>> {
    xlat::run::resolve(config, &overrides, None)
        .and_then(|cfg| xlat::run::host_estimate(&cfg))
        .map_err(to_py)
}

/// Bytes of a size written as a config takes it (`"8GiB"`, `"33GB"`); `key` names it in
/// the error.
#[pyfunction]
fn parse_size(value: &str, key: &str) -> PyResult<u64> {
    xlat::workload::footprint::parse_size_text(value, key).map_err(to_py)
}

/// Boot the machine of a config and start its workload's processes, without simulating
/// (`xlat::run::boot`).
#[pyfunction]
fn boot(py: Python<'_>, config: String, overrides: Vec<String>) -> PyResult<()> {
    py.detach(move || xlat::run::boot(xlat::run::resolve(&config, &overrides, None)?))
        .map_err(to_py)
}

/// ME-HPT Table II from real tables (JSON list of `{chunk_bytes, max_way_bytes, ...}`).
#[pyfunction]
fn hpt_way_limits(
    py: Python<'_>,
    config: String,
    overrides: Vec<String>,
    max_bytes: u64,
) -> PyResult<String> {
    py.detach(move || xlat::run::hpt_way_limits(&config, &overrides, max_bytes))
        .map(|r| serde_json::to_string(&r).expect("limits serialise"))
        .map_err(to_py)
}

#[pyfunction]
fn presets() -> Vec<&'static str> {
    xlat::config::presets::names()
}

#[pyfunction]
fn preset_text(name: &str) -> PyResult<&'static str> {
    xlat::config::presets::get(name).ok_or_else(|| {
        XlatError::new_err(format!(
            "no preset `{name}` (presets: {})",
            xlat::config::presets::names().join(", ")
        ))
    })
}

/// `[(name, description)]` of the registered translation schemes.
#[pyfunction]
fn schemes() -> Vec<(&'static str, &'static str)> {
    xlat::schemes::SCHEMES.to_vec()
}

/// `[(name, description)]` of the built-in workloads.
#[pyfunction]
fn workloads() -> Vec<(&'static str, &'static str)> {
    xlat::workload::WORKLOADS.to_vec()
}

/// Simulated references per second of `workload` on `config` (with `overrides`), as JSON.
#[pyfunction]
#[pyo3(name = "bench")]
#[pyo3(signature = (workload, references, config="baseline-radix".to_string(), overrides=Vec::new()))]
fn run_bench(
    py: Python<'_>,
    workload: String,
    references: u64,
    config: String,
    overrides: Vec<String>,
) -> PyResult<String> {
    py.detach(move || xlat::run::bench(&config, &workload, references, &overrides))
        .map(|r| serde_json::to_string(&r).expect("bench result serialises"))
        .map_err(to_py)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MODEL_EPOCH", xlat::MODEL_EPOCH)?;
    m.add("XlatError", m.py().get_type::<XlatError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(boot, m)?)?;
    m.add_function(wrap_pyfunction!(host_estimate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(hpt_way_limits, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_text, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(record_trace, m)?)?;
    m.add_function(wrap_pyfunction!(convert_trace, m)?)?;
    m.add_function(wrap_pyfunction!(inspect_trace, m)?)?;
    m.add_function(wrap_pyfunction!(workload_catalog, m)?)?;
    m.add_function(wrap_pyfunction!(bench_generator, m)?)?;
    Ok(())
}
