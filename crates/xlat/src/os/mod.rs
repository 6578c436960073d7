//! The modelled operating system.

pub mod physmem;
