//! Python bindings: the module `xlat._core`. Thin by design (DESIGN.md §1): it converts
//! arguments, releases the GIL around simulation, and maps engine errors to Python exceptions.

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
