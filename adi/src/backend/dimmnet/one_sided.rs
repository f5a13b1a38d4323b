//! One-sided access on DIMMnet-2 ([`crate::transport::OneSided`]): a
//! window's public copy lives in an area of the rank's SO-DIMM partition
//! exposed for remote reads and writes (the last quarter of what the rings
//! and landing zones leave; the collective offload has the rest); peers
//! store into it with RVS, load from it with RVL and update it with the
//! card's atomic unit (AMO, register map 1.3). The rank's CPU takes no part.

use driver::Ticket;
use fpga_regs::{Command, Near, Pattern};

use super::first_fit::FirstFit;
use super::offload::{elem_of, op_of};
use super::{map_err, DimmnetTransport, BACKEND, PW_COPY, PW_COPY_HALF};
use crate::error::TransportError;
use crate::offload::Elem;
use crate::transport::{Atomic, OneSided};

/// PW offset where an AMO's old value lands (after the connection probes).
const PW_AMO: u32 = 0x7F00;

/// The exposed area and the puts not yet known to have landed.
#[derive(Debug, Default)]
pub(super) struct OneSidedState {
    pub(super) area: FirstFit,
    pub(super) puts: Vec<Ticket>,
}

fn unsupported(what: &str) -> TransportError {
    TransportError::Backend { backend: BACKEND, msg: what.to_string() }
}

impl OneSided for DimmnetTransport {
    fn expose(&mut self, len: u64) -> Result<Option<u64>, TransportError> {
        Ok(self.os.area.alloc(len))
    }

    fn unexpose(&mut self, addr: u64) {
        self.os.area.free(addr);
    }

    fn put(&mut self, dest: u32, addr: u64, data: &[u8]) -> Result<(), TransportError> {
        let peer = self.map.peer(dest);
        let mut puts = std::mem::take(&mut self.os.puts);
        let r = self.through_ww(addr, data, |ww, dst| Command::Rvs { peer, src: Near::Window(ww), dst }, &mut puts);
        self.os.puts = puts;
        r
    }

    fn get(&mut self, dest: u32, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        let peer = self.map.peer(dest);
        for (k, chunk) in out.chunks_mut(PW_COPY_HALF as usize).enumerate() {
            let src = Pattern::Contiguous { addr: addr + k as u64 * PW_COPY_HALF, len: chunk.len() as u32 };
            self.dev.run(&Command::Rvl { peer, src, dst: Near::Window(PW_COPY) }).map_err(map_err)?;
            self.dev.read_pw(PW_COPY as usize, chunk).map_err(map_err)?;
        }
        Ok(())
    }

    fn atomic(&mut self, dest: u32, addr: u64, op: Atomic, elem: Elem, operand: u64) -> Result<u64, TransportError> {
        let (op, compare) = match op {
            Atomic::Reduce(r) => (fpga_regs::Atomic::Reduce(op_of(r)), 0),
            Atomic::Replace => (fpga_regs::Atomic::Replace, 0),
            Atomic::Fetch => (fpga_regs::Atomic::Fetch, 0),
            Atomic::CompareSwap { compare } => (fpga_regs::Atomic::CompareSwap, compare),
        };
        let elem = elem_of(elem);
        if !self.dev.info().caps.contains(fpga_regs::ur::Caps::ATOMIC) {
            return Err(unsupported("this card has no atomic unit (register map 1.3, CAPS_ATOMIC)"));
        }
        let n = elem.size();
        let low = |v: u64| if n == 8 { v } else { v & ((1u64 << (8 * n)) - 1) };
        let peer = self.map.peer(dest);
        let cmd = Command::Amo { peer, addr, op, elem, operand: low(operand), compare: low(compare), pw_off: PW_AMO };
        self.dev.run(&cmd).map_err(map_err)?;
        let mut old = [0u8; 8];
        self.dev.read_pw(PW_AMO as usize, &mut old[..n]).map_err(map_err)?;
        Ok(u64::from_le_bytes(old))
    }

    fn complete(&mut self) -> Result<(), TransportError> {
        for t in std::mem::take(&mut self.os.puts) {
            match self.dev.wait(t) {
                Ok(_) | Err(driver::DriverError::UnknownTicket(_)) => {} // already reaped by the WW allocator
                Err(e) => return Err(map_err(e)),
            }
        }
        Ok(())
    }
}
