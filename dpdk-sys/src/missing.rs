//! Stand-ins when the build found no DPDK (or was told not to look:
//! `DN_NO_DPDK`, or no `dpdk` feature). They have the names and
//! signatures of the real types in `safe.rs`, so code written against
//! DPDK builds either way; every constructor fails with
//! [`Error::Missing`](crate::Error::Missing), which says what was missing
//! when this was built. The types hold an uninhabited value: no value of
//! them can exist, so their methods cannot be reached and need no body.
//! (The free function `tsc`, which needs no EAL, has no stand-in: nothing
//! outside this crate reads the TSC without a port.)

use crate::{available, PortConfig, Result};

/// A value that cannot exist.
#[derive(Debug, Clone, Copy)]
enum Never {}

/// The DPDK environment (not available in this build).
#[derive(Debug)]
pub struct Eal(Never);

impl Eal {
    /// Always fails: this build has no DPDK.
    pub fn init(_args: &[String]) -> Result<Eal> {
        // `available` always fails in this build; its message says why.
        Err(available().err().unwrap_or_else(|| crate::Error::Missing("this build has no DPDK".into())))
    }

    /// Unreachable: no `Eal` exists in this build.
    pub fn add_vdev(&self, _name: &str, _args: &str) -> Result<()> {
        match self.0 {}
    }

    /// Unreachable: no `Eal` exists in this build.
    pub fn tsc_hz(&self) -> u64 {
        match self.0 {}
    }
}

/// A pool of packet buffers (not available in this build).
#[derive(Debug)]
pub struct Mempool(Never);

impl Mempool {
    /// Unreachable: it needs an [`Eal`], and none exists in this build.
    pub fn create(eal: &Eal, _name: &str, _n: u32, _data_room: u16) -> Result<&'static Mempool> {
        match eal.0 {}
    }

    /// Unreachable: no `Mempool` exists in this build.
    pub fn alloc(&'static self) -> Option<Mbuf> {
        match self.0 {}
    }
}

/// A packet buffer (not available in this build).
#[derive(Debug)]
pub struct Mbuf(Never);

impl Mbuf {
    /// Unreachable: no `Mbuf` exists in this build.
    pub fn data(&self) -> &[u8] {
        match self.0 {}
    }

    /// Unreachable: no `Mbuf` exists in this build.
    pub fn pkt_len(&self) -> usize {
        match self.0 {}
    }

    /// Unreachable: no `Mbuf` exists in this build.
    pub fn segments(&self) -> u16 {
        match self.0 {}
    }

    /// Unreachable: no `Mbuf` exists in this build.
    pub fn tailroom(&self) -> usize {
        match self.0 {}
    }

    /// Unreachable: no `Mbuf` exists in this build.
    pub fn append(&mut self, _len: usize) -> Option<&mut [u8]> {
        match self.0 {}
    }

    /// Unreachable: no `Mbuf` exists in this build.
    pub fn push(&mut self, _bytes: &[u8]) -> bool {
        match self.0 {}
    }
}

/// Like the real `Mbuf`, which frees itself (unreachable here).
impl Drop for Mbuf {
    fn drop(&mut self) {
        match self.0 {}
    }
}

/// An Ethernet port (not available in this build).
#[derive(Debug)]
pub struct Port(Never);

impl Port {
    /// Unreachable: it needs an [`Eal`], and none exists in this build.
    pub fn start(eal: &Eal, _name: &str, _pool: &'static Mempool, _cfg: PortConfig) -> Result<Port> {
        match eal.0 {}
    }

    /// Unreachable: no `Port` exists in this build.
    pub fn id(&self) -> u16 {
        match self.0 {}
    }

    /// Unreachable: no `Port` exists in this build.
    pub fn mac(&self) -> [u8; 6] {
        match self.0 {}
    }

    /// Unreachable: no `Port` exists in this build.
    pub fn link_up(&self) -> bool {
        match self.0 {}
    }

    /// Unreachable: no `Port` exists in this build.
    pub fn rx_burst(&mut self, _q: u16, _out: &mut Vec<Mbuf>, _max: u16) -> usize {
        match self.0 {}
    }

    /// Unreachable: no `Port` exists in this build.
    pub fn tx_burst(&mut self, _q: u16, _pkts: &mut Vec<Mbuf>) -> usize {
        match self.0 {}
    }
}

/// Like the real `Port`, which stops and closes itself (unreachable here).
impl Drop for Port {
    fn drop(&mut self) {
        match self.0 {}
    }
}
