//! Stand-ins when the build found no DPDK: every constructor says so.

use crate::{available, Result};

/// The DPDK environment (not available in this build).
pub struct Eal(());

impl Eal {
    /// Always fails: this build has no DPDK.
    pub fn init(_args: &[String]) -> Result<Eal> {
        available().map(|_| Eal(()))
    }
}
