//! Helpers shared by the integration tests.

use xlat::trace::{Record, RecordSource, Roi};

/// Every record `source` emits from its region of interest on (the workload's set-up, which
/// comes before it, is dropped).
pub fn kernel_records(source: &mut dyn RecordSource) -> Vec<Record> {
    let mut all = Vec::new();
    let mut buf = Vec::with_capacity(1000);
    loop {
        source.fill(&mut buf).unwrap();
        if buf.is_empty() {
            break;
        }
        all.extend_from_slice(&buf);
    }
    let Roi::At(start) = source.roi() else {
        panic!("no region of interest")
    };
    all.drain(..start as usize);
    all
}
