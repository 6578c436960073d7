//! A trace that asks for an address the simulated process cannot use is reported with the
//! file and the place in it (record, instruction and byte offset, or line), not only the
//! address.

use std::path::Path;
use xlat::trace::champsim::Instr;

fn run_error(trace: &Path) -> String {
    let cfg = xlat::run::resolve("baseline-radix", &[], Some(trace)).unwrap();
    xlat::run::run(cfg, None, &mut |_, _| Ok(()))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_champsim_record_in_the_null_page_names_its_instruction_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.champsim");
    let mut instrs = vec![Instr::default(); 5];
    instrs.push(Instr {
        source_memory: [0x10_0000, 0, 0, 0],
        ..Instr::default()
    });
    // Instruction 6: a load from page 0 (record 1), then a store.
    instrs.push(Instr {
        source_memory: [0x80, 0, 0, 0],
        destination_memory: [0x10_0040, 0],
        ..Instr::default()
    });
    instrs.extend(vec![Instr::default(); 3]);
    let bytes: Vec<u8> = instrs.iter().flat_map(|i| i.encode()).collect();
    std::fs::write(&path, bytes).unwrap();
    let msg = run_error(&path);
    assert!(msg.starts_with(&path.display().to_string()), "{msg}");
    assert!(
        msg.contains("record 1, instruction 6 at byte offset 384")
            && msg.contains("segmentation fault")
            && msg.contains("0x80"),
        "{msg}"
    );
}

#[test]
fn a_lackey_record_in_the_null_page_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.lackey");
    std::fs::write(
        &path,
        "==1== Lackey\nI  00400000,4\n L 00100000,8\n M 00100008,8\n S 00000080,8\n",
    )
    .unwrap();
    let msg = run_error(&path);
    // The M line is records 1 and 2; the S line record 3.
    assert!(
        msg.starts_with(&path.display().to_string())
            && msg.contains("record 3, line 5")
            && msg.contains("segmentation fault"),
        "{msg}"
    );
}
