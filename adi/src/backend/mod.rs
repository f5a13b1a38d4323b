//! Transport backends.

#[cfg(feature = "dimmnet")]
pub mod dimmnet;
pub mod dpdk;
pub mod local;
pub mod shm;
pub mod udp;
