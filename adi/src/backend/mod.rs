//! Transport backends.

pub mod dimmnet;
pub mod local;
pub mod udp;
