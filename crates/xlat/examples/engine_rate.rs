// Measurement helper (not committed): refs/s of the reference loop per (config, workload).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let refs: u64 = args[1].parse().unwrap();
    for spec in &args[2..] {
        let (config, workload) = spec.split_once(':').unwrap();
        let r = xlat::run::bench(config, workload, refs, &[]).unwrap();
        println!("{config} {workload} {:.0}", r.refs_per_second);
    }
}
