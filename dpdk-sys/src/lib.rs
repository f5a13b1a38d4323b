//! # dpdk-sys — the system's DPDK, bound at build time, and safe wrappers
//!
//! The crates.io `dpdk-sys` 0.1.5 bundles DPDK 18.05 and no longer builds,
//! so this crate binds whatever DPDK `pkg-config libdpdk` finds (Debian 12:
//! 22.11) with bindgen when it is built, and compiles a small C shim for
//! what bindgen cannot bind: DPDK's fast path is `static inline` (rx/tx
//! bursts, mbuf allocation, data pointers) and `rte_errno` is per lcore.
//!
//! Without DPDK the crate still builds; [`available`] then says what is
//! missing, and every constructor returns [`Error::Missing`].
//!
//! The safe layer owns what DPDK hands out:
//! * [`Eal`]: the environment abstraction layer, started once per process
//!   (DPDK cannot start it twice; tests spawn child processes);
//! * [`Mempool`]: a packet-buffer pool, alive until the process exits;
//! * [`Port`]: an Ethernet port (a vdev such as `net_memif0`), configured,
//!   started, stopped and closed when dropped;
//! * [`Mbuf`]: one packet buffer, freed when dropped unless it was handed
//!   to a transmit queue.

#![warn(missing_docs)]

use std::fmt;

#[cfg(dpdk_found)]
mod ffi;
#[cfg(dpdk_found)]
mod safe;
#[cfg(dpdk_found)]
pub use safe::*;

#[cfg(not(dpdk_found))]
mod missing;
#[cfg(not(dpdk_found))]
pub use missing::*;

/// What went wrong in DPDK.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This build has no DPDK.
    #[error("DPDK is not available: {0}")]
    Missing(String),
    /// `rte_eal_init` was already called in this process.
    #[error("the DPDK environment (EAL) is already running in this process; DPDK starts it once per process, so start another process")]
    AlreadyStarted,
    /// A DPDK call failed.
    #[error("{call} failed: {msg} (error {code}){hint}")]
    Call {
        /// The DPDK function.
        call: &'static str,
        /// `rte_errno` or the returned error.
        code: i32,
        /// `rte_strerror(code)`.
        msg: String,
        /// What to check.
        hint: Hint,
    },
    /// No port by that name.
    #[error("no DPDK port named {0:?}: was it given to the EAL with --vdev (e.g. net_memif0,role=server,socket=...)?")]
    NoPort(String),
    /// An argument DPDK cannot take.
    #[error("invalid argument: {0}")]
    Invalid(String),
}

/// A hint appended to an error message (empty when there is none).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Hint(pub &'static str);

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "; {}", self.0)
        }
    }
}

/// How to set a port up (the same with and without DPDK in the build).
#[derive(Clone, Copy, Debug)]
pub struct PortConfig {
    /// Receive queues.
    pub rx_queues: u16,
    /// Transmit queues.
    pub tx_queues: u16,
    /// Descriptors per queue.
    pub descriptors: u16,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig { rx_queues: 1, tx_queues: 1, descriptors: 1024 }
    }
}

/// Result of a DPDK call.
pub type Result<T> = std::result::Result<T, Error>;

/// Whether this build has DPDK, and if not, why.
pub fn available() -> Result<()> {
    #[cfg(dpdk_found)]
    {
        Ok(())
    }
    #[cfg(not(dpdk_found))]
    {
        Err(Error::Missing(env!("DN_DPDK_MISSING").to_string()))
    }
}

/// How many Ethernet ports one process of this DPDK build can have
/// (`RTE_MAX_ETHPORTS`, fixed when DPDK was built), if this build has DPDK.
pub fn max_ports() -> Option<usize> {
    #[cfg(dpdk_found)]
    {
        Some(ffi::RTE_MAX_ETHPORTS as usize)
    }
    #[cfg(not(dpdk_found))]
    {
        None
    }
}

/// The EAL arguments for a process with no hugepages, no PCI devices and
/// no shared configuration (what works in containers and CI), with a
/// unique `file_prefix`, `mem_mb` MiB of memory and the given vdevs.
pub fn eal_args(program: &str, file_prefix: &str, mem_mb: u32, vdevs: &[String]) -> Vec<String> {
    let mut a = vec![
        program.to_string(),
        "--no-huge".into(),
        "-m".into(),
        mem_mb.to_string(),
        "--no-pci".into(),
        "--no-shconf".into(),
        "--no-telemetry".into(),
        format!("--file-prefix={file_prefix}"),
        "--log-level=lib.eal:error".into(),
        "--log-level=pmd.net.memif:error".into(),
        // One lcore: the rank's own thread polls its queues.
        "-l".into(),
        "0".into(),
    ];
    for v in vdevs {
        a.push(format!("--vdev={v}"));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eal_arguments_name_every_vdev_once() {
        let a = eal_args("x", "p1", 64, &["net_memif0,role=server".into(), "net_null0".into()]);
        assert!(a.contains(&"--no-huge".to_string()) && a.contains(&"--file-prefix=p1".to_string()));
        assert_eq!(a.iter().filter(|s| s.starts_with("--vdev=")).count(), 2);
    }

    #[cfg(not(dpdk_found))]
    #[test]
    fn without_dpdk_every_constructor_says_why() {
        let e = Eal::init(&[]).map(|_| ()).unwrap_err();
        assert!(matches!(e, Error::Missing(_)), "{e}");
        assert!(available().is_err());
    }

    #[cfg(dpdk_found)]
    #[test]
    fn this_build_has_dpdk() {
        assert!(available().is_ok());
    }

    #[test]
    fn an_error_tells_what_to_do() {
        let e = Error::Call {
            call: "rte_eal_init",
            code: 12,
            msg: "Cannot allocate memory".into(),
            hint: Hint("try -m 64"),
        };
        assert_eq!(e.to_string(), "rte_eal_init failed: Cannot allocate memory (error 12); try -m 64");
    }
}
