//! Resolving a config: presets, `extends`, `--set` overrides, deserialisation with key paths.

use super::{presets, suggest, Validate};
use crate::error::{Error, Result};
use serde::de::DeserializeOwned;
use std::path::Path;
use toml::{Table, Value};

/// How deep an `extends` chain may go before we call it a cycle.
const MAX_EXTENDS_DEPTH: usize = 16;

/// Load `spec` (a preset name or a TOML file path), apply `overrides` (`key=value`), validate.
pub fn load<T: DeserializeOwned + Validate>(spec: &str, overrides: &[String]) -> Result<T> {
    load_with(spec, overrides, |_| ()).map(|(cfg, ())| cfg)
}

/// [`load`], calling `take` on the merged table (overrides applied) before it is deserialised:
/// for a config type that reads a key of its own (such as a size to expand) before the typed
/// fields. Returns the validated config and what `take` returned.
pub fn load_with<T: DeserializeOwned + Validate, X>(
    spec: &str,
    overrides: &[String],
    take: impl FnOnce(&mut Table) -> X,
) -> Result<(T, X)> {
    let mut table = resolve_table(spec, 0)?;
    let before_overrides = table.clone();
    for ov in overrides {
        let (key, value) = parse_override(ov)?;
        set_path(&mut table, &key, value)?;
    }
    table.remove("extends");
    let taken = take(&mut table);
    let cfg: T = deserialize(table.clone(), spec).map_err(|e| match e {
        // serde's message names an unknown field and the fields there are: no need to guess
        // at misspellings against the tables before the overrides.
        Error::Config { key, msg } => match key_within::<T>(&table, spec, &key) {
            Some(key) => Error::Config { key, msg },
            None => new_key_error(&before_overrides, overrides, key, msg),
        },
        other => other,
    })?;
    cfg.validate()?;
    Ok((cfg, taken))
}

/// serde loses the path inside a table whose type one of its keys selects (`[workload]`,
/// whose `name` picks the type of its parameters): a bad value of one of its keys is reported
/// at the table (`workload: invalid value: integer -5`). The key without which `table`
/// deserialises is the one at fault: its path (`workload.references`). `None` if `key` is no
/// table or no single key in it is at fault.
fn key_within<T: DeserializeOwned>(table: &Table, spec: &str, key: &str) -> Option<String> {
    let at = |table: &Table| -> Option<Table> {
        let mut cur = table;
        for part in key.split('.') {
            cur = cur.get(part)?.as_table()?;
        }
        Some(cur.clone())
    };
    let inner = at(table)?;
    for name in inner.keys() {
        let mut without = table.clone();
        let mut cur = &mut without;
        for part in key.split('.') {
            cur = cur
                .get_mut(part)
                .and_then(Value::as_table_mut)
                .expect("the path was found above");
        }
        cur.remove(name);
        if deserialize::<T>(without, spec).is_ok() {
            return Some(format!("{key}.{name}"));
        }
    }
    None
}

/// An error at `key` whose path passes through a name that no preset or file defined, but an
/// override did, is most likely a misspelt name (`mmu.l2tlb.unifed.entries=3072` creates a
/// table `unifed` with one field): say that the name is new and list the existing ones.
fn new_key_error(before: &Table, overrides: &[String], key: String, msg: String) -> Error {
    let parts: Vec<&str> = key.split('.').collect();
    let mut table = before;
    for (i, part) in parts.iter().enumerate() {
        match table.get(*part) {
            Some(Value::Table(t)) => table = t,
            Some(_) => break,
            None => {
                let Some(set) = overrides.iter().find(|o| {
                    let set_key = o.split_once('=').map_or(o.as_str(), |(k, _)| k.trim());
                    set_key
                        .split('.')
                        .take(i + 1)
                        .eq(parts[..=i].iter().copied())
                }) else {
                    break;
                };
                let parent = if i == 0 {
                    "the top level".to_string()
                } else {
                    format!("`{}`", parts[..i].join("."))
                };
                let existing: Vec<&str> = table.keys().map(String::as_str).collect();
                return Error::config(
                    parts[..=i].join("."),
                    format!(
                        "`{part}` is not a key of {parent} (it has: {}); the override `{set}` \
                         would add it, and then: {msg}",
                        existing.join(", ")
                    ),
                );
            }
        }
    }
    Error::Config { key, msg }
}

fn read_spec(spec: &str) -> Result<(String, String)> {
    if let Some(text) = presets::get(spec) {
        return Ok((format!("preset `{spec}`"), text.to_string()));
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(Error::file(
            spec,
            format!(
                "no such preset or file{} (presets: {})",
                suggest::did_you_mean(spec, presets::names().iter().copied()),
                presets::names().join(", ")
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::file(spec, e.to_string()))?;
    Ok((spec.to_string(), text))
}

/// The fully merged table of `spec`, following `extends` (a preset name or a path relative to
/// the current directory).
fn resolve_table(spec: &str, depth: usize) -> Result<Table> {
    if depth > MAX_EXTENDS_DEPTH {
        return Err(Error::config(
            "extends",
            format!("chain deeper than {MAX_EXTENDS_DEPTH} (a cycle?) at `{spec}`"),
        ));
    }
    let (origin, text) = read_spec(spec)?;
    let table: Table = text
        .parse()
        .map_err(|e: toml::de::Error| Error::file(&origin, format!("invalid TOML: {e}")))?;
    match table.get("extends") {
        None => Ok(table),
        Some(Value::String(base)) => {
            // A base that does not exist is an error of the file that names it.
            let mut merged = resolve_table(base, depth + 1).map_err(|e| match e {
                Error::File { file, msg } if file == *base => {
                    Error::file(spec, format!("extends = \"{base}\": {msg}"))
                }
                other => other,
            })?;
            merge(&mut merged, table);
            Ok(merged)
        }
        Some(_) => Err(Error::config(
            "extends",
            format!("{origin}: must be a preset name or file path string"),
        )),
    }
}

/// Deep-merge `over` into `base`. A `workload` table that names a different workload replaces
/// the base's wholesale: one workload's parameters mean nothing to another.
fn merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => {
                let switches_workload =
                    k == "workload" && o.get("name").is_some_and(|n| b.get("name") != Some(n));
                if switches_workload {
                    *b = o;
                } else {
                    merge(b, o);
                }
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Split `key=value`; the value is a TOML literal (`2048`, `true`, `"x"`, `["4K"]`) and a bare
/// word that is not one is taken as a string, so `--set scheme=radix` works unquoted.
pub fn parse_override(s: &str) -> Result<(String, Value)> {
    let (key, raw) = s
        .split_once('=')
        .ok_or_else(|| Error::config(s, "override must look like key=value"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(Error::config(
            s,
            "override key must be a dotted path like mmu.l2tlb.unified.entries",
        ));
    }
    let raw = raw.trim();
    let value = format!("v = {raw}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_string()));
    Ok((key.to_string(), value))
}

fn set_path(table: &mut Table, key: &str, value: Value) -> Result<()> {
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = table;
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        let entry = cur
            .entry(part.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        cur = match entry {
            Value::Table(t) => t,
            _ => {
                return Err(Error::config(
                    parts[..=i].join("."),
                    format!("is a value, not a table, so `{key}` cannot be set"),
                ))
            }
        };
    }
    let last = parts[parts.len() - 1];
    if parts[0] == "workload" && last == "name" && parts.len() == 2 {
        // Switching workloads drops the old workload's parameters (see `merge`).
        if cur.get("name") != Some(&value) {
            cur.clear();
        }
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

fn deserialize<T: DeserializeOwned>(table: Table, spec: &str) -> Result<T> {
    let text = toml::to_string(&table).map_err(|e| Error::config("", e.to_string()))?;
    let de = toml::Deserializer::parse(&text).map_err(|e| Error::file(spec, e.to_string()))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let msg = with_suggestion(e.inner().message());
        Error::config(
            if key == "." {
                String::from("<root>")
            } else {
                key
            },
            msg,
        )
    })
}

/// serde's "unknown variant `x`, expected one of `a`, `b`, ..." (or field), with the closest
/// of the expected names suggested.
fn with_suggestion(msg: &str) -> String {
    let ticked = |text: &str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let Some(rest) = ["unknown variant `", "unknown field `"]
        .iter()
        .find_map(|p| msg.strip_prefix(p))
    else {
        return msg.to_string();
    };
    let Some((name, expected)) = rest.split_once('`') else {
        return msg.to_string();
    };
    let known = ticked(expected);
    format!(
        "{msg}{}",
        suggest::did_you_mean(name, known.iter().map(String::as_str))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimConfig;

    fn load(spec: &str, overrides: &[String]) -> Result<SimConfig> {
        super::load(spec, overrides)
    }

    #[test]
    fn override_values_are_typed() {
        assert_eq!(parse_override("a.b=12").unwrap().1, Value::Integer(12));
        assert_eq!(parse_override("a=true").unwrap().1, Value::Boolean(true));
        assert_eq!(
            parse_override("a=radix").unwrap().1,
            Value::String("radix".into())
        );
        assert!(parse_override("nokey").is_err());
        assert!(parse_override("a..b=1").is_err());
    }

    #[test]
    fn presets_load_and_validate() {
        for name in presets::names() {
            load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn misspelt_names_get_a_suggestion() {
        let s = load("utopai", &[]).unwrap_err().to_string();
        assert!(s.contains("did you mean `utopia`?"), "{s}");
        let s = load("utopia", &["workload.name=gupz".into()])
            .unwrap_err()
            .to_string();
        assert!(
            s.contains("workload.name") && s.contains("did you mean `gups`?"),
            "{s}"
        );
        let s = load("baseline-radix", &["mmu.l2tlb.unified.entires=5".into()])
            .unwrap_err()
            .to_string();
        assert!(s.contains("did you mean `entries`?"), "{s}");
        // An unknown base in a file is that file's error.
        let dir = std::env::temp_dir().join(format!("xlat-extends-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("mine.toml");
        std::fs::write(&file, "extends = \"utopai\"\n").unwrap();
        let s = load(file.to_str().unwrap(), &[]).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            s.contains("mine.toml") && s.contains("extends = \"utopai\"") && s.contains("`utopia`"),
            "{s}"
        );
    }

    #[test]
    fn unknown_key_names_its_path() {
        let e = load("baseline-radix", &["mmu.l2tlb.unified.entires=5".into()]).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("mmu.l2tlb.unified") && s.contains("entires"),
            "{s}"
        );
    }

    #[test]
    fn a_misspelt_table_name_is_named_with_the_existing_ones() {
        for ov in ["mmu.l2tlb.unifed.entries=3072", "mmu.l2tlb.nosuchkey=1"] {
            let e = load("baseline-radix", &[ov.into()])
                .unwrap_err()
                .to_string();
            let name = ov.split(['.', '=']).nth(2).unwrap();
            assert!(
                e.contains(&format!("`{name}` is not a key of `mmu.l2tlb`"))
                    && e.contains("1g, unified")
                    && e.contains(ov),
                "{e}"
            );
        }
        // A new array given in full is a new array, not a mistake.
        let full = [
            "entries=16",
            "ways=4",
            "latency=12",
            "replacement=\"lru\"",
            "page_sizes=[\"4K\"]",
        ]
        .map(|f| format!("mmu.l2tlb.extra.{f}"));
        let cfg = load("baseline-radix", &full).unwrap();
        assert_eq!(cfg.mmu.l2tlb["extra"].entries, 16);
    }

    #[test]
    fn bad_geometry_names_its_path() {
        let cases = [
            ("mmu.l2tlb.unified.ways=0", "mmu.l2tlb.unified.ways"),
            (
                "mmu.l2tlb.unified.entries=1000",
                "mmu.l2tlb.unified.entries",
            ),
            ("cache.l2.size=1000000", "cache.l2.size"),
            ("cache.llc.latency=0", "cache.llc.latency"),
            ("core.width=0", "core.width"),
            ("core.rob_size=4096", "core.rob_size"),
            ("schemes.radix.levels=3", "schemes.radix.levels"),
            ("scheme=nonsense", "scheme"),
            ("os.physmem.bytes=4096", "os.physmem.bytes"),
            ("os.physmem.bytes=68719476736", "os.physmem.bytes"),
            ("dram.banks=12", "dram.banks"),
        ];
        for (ov, key) in cases {
            let e = load("baseline-radix", &[ov.to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.contains(key), "{ov}: {e}");
        }
    }

    /// `[workload]`'s `name` selects the type of its other keys, and serde then reports a bad
    /// value of one of them at `workload` alone: the error names the key itself.
    #[test]
    fn a_bad_workload_parameter_is_named_by_its_own_key() {
        let cases = [
            (
                &["workload.name=gups", "workload.references=-5"][..],
                "config error at `workload.references`: invalid value: integer `-5`",
            ),
            (
                &["workload.name=pr", "workload.scale=\"big\""],
                "config error at `workload.scale`: invalid type: string \"big\"",
            ),
            (
                &["workload.name=gups", "workload.tabel_bytes=1"],
                "config error at `workload.tabel_bytes`: unknown field `tabel_bytes`, expected \
                 one of `table_bytes`,",
            ),
        ];
        for (ov, want) in cases {
            let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
            let e = load("baseline-radix", &ov).unwrap_err().to_string();
            assert!(e.contains(want), "{ov:?}: {e}");
        }
        // Two bad keys: no one of them is at fault alone, and the table is named.
        let ov = [
            "workload.name=gups",
            "workload.references=-5",
            "workload.threads=-1",
        ];
        let e = load("baseline-radix", &ov.map(String::from))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("config error at `workload`: "), "{e}");
    }

    #[test]
    fn extends_file_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("my.toml");
        std::fs::write(
            &p,
            "extends = \"baseline-radix\"\n[mmu.l2tlb.unified]\nentries = 3072\n",
        )
        .unwrap();
        let cfg = load(p.to_str().unwrap(), &[]).unwrap();
        assert_eq!(cfg.mmu.l2tlb["unified"].entries, 3072);
        assert_eq!(cfg.mmu.l2tlb["unified"].ways, 12);
        let e = load("/no/such/file.toml", &[]).unwrap_err().to_string();
        assert!(e.contains("/no/such/file.toml"), "{e}");
        std::fs::write(&p, "extends = [").unwrap();
        assert!(load(p.to_str().unwrap(), &[])
            .unwrap_err()
            .to_string()
            .contains("invalid TOML"));
    }

    #[test]
    fn switching_workload_drops_old_parameters() {
        let cfg = load("baseline-radix", &["workload.name=stream".into()]).unwrap();
        assert_eq!(cfg.workload.name(), "stream");
    }

    #[test]
    fn resolved_config_round_trips() {
        let cfg = load("baseline-radix", &["mmu.walkers=3".into()]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("resolved.toml");
        std::fs::write(&p, cfg.to_toml()).unwrap();
        let again = load(p.to_str().unwrap(), &[]).unwrap();
        assert_eq!(again.to_toml(), cfg.to_toml());
    }
}
