//! Configuration loading, for any config type: a preset or file → its `extends` chain merged
//! (deepest base first) → `--set` overrides → serde with `deny_unknown_fields` (unknown keys are
//! errors with their full path) → [`Validate::validate`] (geometry and ranges, again with full
//! paths).
//!
//! This module knows nothing of the system being configured: each component owns its config
//! type and its validation (`core::CoreConfig`, `mmu::MmuConfig`, `mem::cache::CacheConfig`,
//! `os::OsConfig`, each scheme's section...), and the whole-system type is assembled on top
//! (`sim::SimConfig`). The helpers here are the checks those validations share.

pub mod host;
mod load;
pub mod presets;
mod suggest;

pub use host::{HostUses, HOST_BUDGET};
pub use load::{load, load_with, parse_override};

use crate::error::{Error, Result};

/// A config type that can check itself after deserialisation; errors name the full key.
pub trait Validate {
    fn validate(&self) -> Result<()>;
}

/// `v` must be a non-zero power of two (`what` says which quantity, `key` where it is set).
pub fn pow2(key: String, what: &str, v: u64) -> Result<()> {
    if v == 0 || !v.is_power_of_two() {
        return Err(Error::config(
            key,
            format!("{what} must be a non-zero power of two, got {v}"),
        ));
    }
    Ok(())
}

/// `v` ways (of a set-associative structure, or entries of a fully associative one) must be
/// 1 to [`crate::assoc::MAX_WAYS`]: every access searches them.
pub fn ways(key: String, v: u64) -> Result<()> {
    let max = crate::assoc::MAX_WAYS;
    if !(1..=max).contains(&v) {
        return Err(Error::config(
            key,
            format!("must be 1 to {max} (every access searches a set's ways one by one), got {v}"),
        ));
    }
    Ok(())
}

/// `v` must be a fraction from 0 to 1 (`what` says of what).
pub fn fraction(key: String, what: &str, v: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&v) {
        return Err(Error::config(
            key,
            format!("must be a fraction from 0 to 1 (of {what}), got {v}"),
        ));
    }
    Ok(())
}

/// `v` must be greater than 0.
pub fn nonzero(key: String, v: u64) -> Result<()> {
    if v == 0 {
        return Err(Error::config(key, "must be greater than 0"));
    }
    Ok(())
}
