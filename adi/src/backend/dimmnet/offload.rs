//! Collective offload on DIMMnet-2 (`fpga_regs::sched`): the program's
//! buffers and its schedule table go into an arena of this rank's SO-DIMM
//! partition (after the landing zones), staged through WW with VS; `SCHED`
//! starts it; `SCHED_DONE[k]` tells when it ended; the result comes back
//! through VL and PW. Until then the host is free: the controller sends,
//! receives and reduces by itself.

use driver::{DriverError, Ticket};
use fpga_regs::command::Peer;
use fpga_regs::sched::{
    ElemType, Entry, EntryKind, ReduceOp, TableHeader, ENTRY_BYTES, HEADER_BYTES, MAX_DEPS, MAX_ENTRIES, SCHED_SLOTS,
};
use fpga_regs::ur;
use fpga_regs::{Command, ErrorCode};

use super::first_fit::FirstFit;
use super::{map_err, DimmnetTransport, BACKEND};
use crate::error::TransportError;
use crate::offload::{Elem, Offload, OffloadId, Program, Reduction, StepKind};

/// A program on the device.
#[derive(Debug)]
struct Running {
    /// Arena range it owns.
    base: u64,
    len: u64,
    /// Address of its receive buffer.
    recv: u64,
    /// The SCHED_DONE value that means it ended.
    expect: u64,
}

/// The arena and the completion slots.
#[derive(Debug, Default)]
pub(super) struct OffloadState {
    arena: FirstFit,
    running: [Option<Running>; SCHED_SLOTS],
    started: [u64; SCHED_SLOTS],
}

impl OffloadState {
    /// `len` bytes of partition from `base` are the arena.
    pub(super) fn new(base: u64, len: u64) -> OffloadState {
        OffloadState { arena: FirstFit::new(base, len), ..Default::default() }
    }

    fn alloc(&mut self, n: u64) -> Option<u64> {
        self.arena.alloc(n)
    }

    fn free(&mut self, base: u64) {
        self.arena.free(base);
    }

    /// Words to watch while idle: the SCHED_DONE word of every running program.
    pub(super) fn watch(&self, words: &mut Vec<(u32, u64)>) {
        for (k, r) in self.running.iter().enumerate() {
            if let Some(r) = r {
                words.push((done_word(k), r.expect - 1));
            }
        }
    }

    pub(super) fn busy(&self) -> bool {
        self.running.iter().any(Option::is_some)
    }
}

fn done_word(k: usize) -> u32 {
    (fpga_regs::layout::UR_OFFSET + ur::off::SCHED_DONE + 8 * k) as u32
}

pub(super) fn op_of(r: Reduction) -> ReduceOp {
    match r {
        Reduction::Sum => ReduceOp::Sum,
        Reduction::Prod => ReduceOp::Prod,
        Reduction::Min => ReduceOp::Min,
        Reduction::Max => ReduceOp::Max,
        Reduction::Land => ReduceOp::Land,
        Reduction::Lor => ReduceOp::Lor,
        Reduction::Lxor => ReduceOp::Lxor,
        Reduction::Band => ReduceOp::Band,
        Reduction::Bor => ReduceOp::Bor,
        Reduction::Bxor => ReduceOp::Bxor,
    }
}

pub(super) fn elem_of(e: Elem) -> ElemType {
    match e {
        Elem::I8 => ElemType::I8,
        Elem::I16 => ElemType::I16,
        Elem::I32 => ElemType::I32,
        Elem::I64 => ElemType::I64,
        Elem::U8 => ElemType::U8,
        Elem::U16 => ElemType::U16,
        Elem::U32 => ElemType::U32,
        Elem::U64 => ElemType::U64,
        Elem::F32 => ElemType::F32,
        Elem::F64 => ElemType::F64,
    }
}

fn invalid(msg: String) -> TransportError {
    TransportError::Backend { backend: BACKEND, msg }
}

impl DimmnetTransport {
    /// Write `data` at SO-DIMM `addr` through WW and VS; the tickets to wait for.
    fn store(&mut self, addr: u64, data: &[u8], tickets: &mut Vec<Ticket>) -> Result<(), TransportError> {
        self.through_ww(addr, data, |ww_off, dst| Command::Vs { ww_off, dst }, tickets)
    }

    fn table(&self, p: &Program, k: usize, addrs: &[u64]) -> Result<Vec<u8>, TransportError> {
        if p.steps.len() > MAX_ENTRIES as usize || p.deps.len() > MAX_DEPS as usize {
            return Err(invalid(format!("a schedule of {} steps exceeds the device's table", p.steps.len())));
        }
        let (op, elem) = match p.reduce {
            Some((r, e)) => (op_of(r), elem_of(e)),
            None => (ReduceOp::None, ElemType::None),
        };
        let h = TableHeader {
            entries: p.steps.len() as u32,
            deps: p.deps.len() as u32,
            key: p.key,
            done_slot: k as u8,
            op,
            elem,
        };
        let mut out = Vec::with_capacity(h.table_bytes() as usize);
        let mut words = |w: [u64; 8]| out.extend(w.iter().flat_map(|x| x.to_le_bytes()));
        words(h.encode());
        let addr = |s: &crate::offload::Span| -> Result<u64, TransportError> {
            let base = addrs.get(s.buf as usize).ok_or_else(|| invalid(format!("step names buffer {}", s.buf)))?;
            Ok(base + s.off)
        };
        for s in p.steps {
            let len = u32::try_from(s.src.len.max(s.dst.len))
                .map_err(|_| invalid("a schedule step of 4 GiB or more".into()))?;
            let peer = |r: u32| -> Result<Peer, TransportError> {
                if r >= self.size {
                    return Err(invalid(format!("schedule peer {r} is not a rank")));
                }
                Ok(self.map.peer(r))
            };
            let e = match s.kind {
                StepKind::Send => Entry {
                    kind: EntryKind::Send,
                    peer: peer(s.peer)?,
                    src: addr(&s.src)?,
                    dst: 0,
                    len,
                    round: s.round,
                    first_dep: s.first_dep,
                    n_deps: s.n_deps,
                },
                StepKind::Recv => Entry {
                    kind: EntryKind::Recv,
                    peer: peer(s.peer)?,
                    src: 0,
                    dst: addr(&s.dst)?,
                    len,
                    round: s.round,
                    first_dep: s.first_dep,
                    n_deps: s.n_deps,
                },
                StepKind::Reduce | StepKind::Copy => Entry {
                    kind: if s.kind == StepKind::Reduce { EntryKind::Reduce } else { EntryKind::Copy },
                    peer: Peer::new(0, 0),
                    src: addr(&s.src)?,
                    dst: addr(&s.dst)?,
                    len,
                    round: 0,
                    first_dep: s.first_dep,
                    n_deps: s.n_deps,
                },
            };
            words(e.encode());
        }
        for d in p.deps {
            out.extend(d.to_le_bytes());
        }
        out.resize(h.table_bytes() as usize, 0);
        Ok(out)
    }
}

impl Offload for DimmnetTransport {
    fn offload_start(&mut self, p: &Program, send: &[u8], recv: &[u8]) -> Result<Option<OffloadId>, TransportError> {
        let Some(k) = self.off.running.iter().position(Option::is_none) else { return Ok(None) };
        // Layout: table, then every buffer, each 64-byte aligned.
        let table_len = (HEADER_BYTES + p.steps.len() * ENTRY_BYTES + p.deps.len() * 4).div_ceil(64) as u64 * 64;
        let mut offs = Vec::with_capacity(p.bufs.len());
        let mut total = table_len;
        for &b in p.bufs {
            offs.push(total);
            total = total.checked_add(b.div_ceil(64) * 64).ok_or_else(|| invalid("buffer sizes overflow".into()))?;
        }
        let Some(base) = self.off.alloc(total) else {
            // Waiting helps only if a running program will give memory back.
            if self.off.busy() {
                return Ok(None);
            }
            return Err(invalid(format!(
                "this collective needs {total} bytes of SO-DIMM for its schedule and buffers, but only {} are \
                 left after the rings and landing zones; use DN_NBC_PROGRESS=manual, split the operation, or \
                 lower DN_ZONES",
                self.off.arena.range().1
            )));
        };
        let addrs: Vec<u64> = offs.iter().map(|o| base + o).collect();
        let staged = (|| {
            let table = self.table(p, k, &addrs)?;
            let mut tickets = Vec::new();
            self.store(base, &table, &mut tickets)?;
            if let Some(&a) = addrs.first() {
                self.store(a, send, &mut tickets)?;
            }
            if let Some(&a) = addrs.get(1) {
                self.store(a, recv, &mut tickets)?;
            }
            // The table and the data must be in SO-DIMM before SCHED reads them.
            for t in tickets {
                match self.dev.wait(t) {
                    Ok(_) | Err(DriverError::UnknownTicket(_)) => {}
                    Err(e) => return Err(map_err(e)),
                }
            }
            // Wait for SCHED itself: a refused table would never end, and
            // once it is accepted, testing costs one read of SCHED_DONE.
            self.dev.run(&Command::Sched { table: base }).map_err(map_err)
        })();
        match staged {
            Ok(_) => {}
            Err(e) => {
                self.off.free(base);
                return Err(e);
            }
        };
        self.off.started[k] += 1;
        let recv_addr = addrs.get(1).copied().unwrap_or(base);
        self.off.running[k] = Some(Running { base, len: total, recv: recv_addr, expect: self.off.started[k] });
        Ok(Some(OffloadId(k as u32)))
    }

    fn offload_test(&mut self, id: OffloadId) -> Result<bool, TransportError> {
        let k = id.0 as usize;
        let expect =
            self.off.running.get(k).and_then(Option::as_ref).ok_or_else(|| invalid(format!("no program {k}")))?.expect;
        let done = self.dev.read_ur(ur::off::SCHED_DONE + 8 * k);
        if done < expect {
            return Ok(false);
        }
        let result = self.dev.read_ur(ur::off::SCHED_RESULT + 8 * k);
        let status = ur::sched_result::STATUS.get(result) as u16;
        if status != 0 {
            if let Some(r) = self.off.running[k].take() {
                self.off.free(r.base);
            }
            let code = ErrorCode::from_raw(status).map_or(format!("status {status}"), |c| c.to_string());
            let entry = ur::sched_result::ENTRY.get(result);
            return Err(invalid(format!("the device's collective schedule failed (entry {entry}): {code}")));
        }
        Ok(true)
    }

    fn offload_read(&mut self, id: OffloadId, offset: u64, out: &mut [u8]) -> Result<(), TransportError> {
        let k = id.0 as usize;
        let r = self.off.running.get(k).and_then(Option::as_ref).ok_or_else(|| invalid(format!("no program {k}")))?;
        if offset + out.len() as u64 > r.len {
            return Err(invalid("result range outside the program's buffers".into()));
        }
        let addr = r.recv + offset;
        self.load(addr, out)
    }

    fn offload_release(&mut self, id: OffloadId) {
        if let Some(r) = self.off.running.get_mut(id.0 as usize).and_then(Option::take) {
            self.off.free(r.base);
        }
    }
}
