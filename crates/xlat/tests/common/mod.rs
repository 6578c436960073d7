//! Helpers shared by the integration tests.

use xlat::trace::{Record, RecordSource, Roi};

/// Every record `source` emits, set-up included.
pub fn all_records(source: &mut dyn RecordSource) -> Vec<Record> {
    let mut all = Vec::new();
    let mut buf = Vec::with_capacity(1000);
    loop {
        source.fill(&mut buf).unwrap();
        if buf.is_empty() {
            return all;
        }
        all.extend_from_slice(&buf);
    }
}

/// Every record `source` emits from its region of interest on (the workload's set-up, which
/// comes before it, is dropped).
#[allow(dead_code)] // not every test crate that includes this module uses it
pub fn kernel_records(source: &mut dyn RecordSource) -> Vec<Record> {
    let mut all = all_records(source);
    let Roi::At(start) = source.roi() else {
        panic!("no region of interest")
    };
    all.drain(..start as usize);
    all
}
