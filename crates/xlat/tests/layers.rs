//! The engine reads bottom-up: no two top-level modules of `src/` import each other, directly or
//! through others (docs/architecture.md draws the layers). The check reads the sources as text:
//! every `crate::<module>` path outside test code is an edge, and a cycle fails the test with
//! the modules that form it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its test code, and the files of the test modules it declares
/// (`#[cfg(test)] mod name;`). An inline test module (`#[cfg(test)] mod name { ... }`) stands
/// at the end of its file by convention, so the code stops there. Test code may reach any layer.
fn non_test_code(path: &Path) -> (String, Vec<PathBuf>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut code = String::new();
    let mut test_files = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            code.push_str(line);
            code.push('\n');
            continue;
        }
        let next = lines.next().unwrap_or("").trim();
        let item = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|vis| next.strip_prefix(vis))
            .unwrap_or(next);
        match item
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'))
        {
            Some(name) => {
                let dir = path.parent().unwrap();
                test_files.push(dir.join(format!("{name}.rs")));
                test_files.push(dir.join(name).join("mod.rs"));
            }
            None if item.starts_with("mod ") => break,
            None => {} // a test-only item: skipped
        }
    }
    (code, test_files)
}

/// Identifiers that follow `prefix` in `code`.
fn idents_after<'a>(code: &'a str, prefix: &str) -> impl Iterator<Item = &'a str> + 'a {
    let prefix = prefix.to_string();
    code.match_indices(prefix.clone().as_str())
        .map(|(at, _)| at)
        .collect::<Vec<_>>()
        .into_iter()
        .filter_map(move |at| {
            let rest = &code[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
}

/// Top-level module of each `src/` file, and the names `lib.rs` re-exports from each module.
fn modules() -> (BTreeMap<String, Vec<PathBuf>>, BTreeMap<String, String>) {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut by_module: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(SRC).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        by_module.entry(module).or_default().push(f);
    }
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).unwrap();
    let mut reexports = BTreeMap::new();
    for line in lib.lines().filter(|l| l.starts_with("pub use ")) {
        let path = line["pub use ".len()..].trim_end_matches(';');
        let module = path.split("::").next().unwrap().to_string();
        let names = path.rsplit("::").next().unwrap();
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            reexports.insert(name.trim().to_string(), module.clone());
        }
    }
    (by_module, reexports)
}

fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let (by_module, reexports) = modules();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut code_of = BTreeMap::new();
    let mut test_files = BTreeSet::new();
    for f in by_module.values().flatten() {
        let (code, tests) = non_test_code(f);
        code_of.insert(f.clone(), code);
        test_files.extend(tests);
    }
    for (module, files) in &by_module {
        let deps = graph.entry(module.clone()).or_default();
        for f in files.iter().filter(|f| !test_files.contains(*f)) {
            let code = &code_of[f];
            for name in idents_after(code, "crate::") {
                let target = if by_module.contains_key(name) {
                    name.to_string()
                } else if let Some(m) = reexports.get(name) {
                    m.clone()
                } else {
                    continue;
                };
                if &target != module {
                    deps.insert(target);
                }
            }
        }
    }
    graph
}

/// A cycle through `start`, if there is one (depth-first search).
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn dfs(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if dfs(graph, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    dfs(graph, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn top_level_modules_form_no_import_cycle() {
    let graph = import_graph();
    assert!(graph.len() > 5, "found too few modules: {graph:?}");
    // The check reads real imports: the system assembles schemes, which build on the MMU.
    assert!(
        graph["sim"].contains("schemes") && graph["schemes"].contains("mmu"),
        "{graph:?}"
    );
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_from(&graph, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(
        cycles.is_empty(),
        "top-level modules import each other:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_check_sees_a_cycle_when_there_is_one() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    graph.entry("c".into()).or_default().insert("a".into());
    graph.entry("d".into()).or_default().insert("a".into());
    assert_eq!(cycle_from(&graph, "a").unwrap(), ["a", "b", "c", "a"]);
    assert!(cycle_from(&graph, "d").is_none());
}
