//! The collective engine (ours; `fpga_regs::sched`): the controller executes
//! a schedule table that the host wrote into its SO-DIMM partition, firing
//! each entry when its predecessors are done, with no host involvement
//! until the end is published in `SCHED_DONE[k]`.
//!
//! This is seed 002's idea (KACC, §3: a collective as a graph of SEND, RECV
//! and CALC nodes executed by an agent other than the application) moved
//! from a kernel tasklet into the NIC, as Portals 4 triggered operations and
//! CORE-Direct do. Timing (ours, stated as assumptions in the profile):
//! a SEND reads its source through the SO-DIMM port and leaves like an RVS
//! from SO-DIMM; a RECV writes through the port; a REDUCE reads both
//! operands, runs the reduction unit at `reduce_bytes_per_cycle` after
//! `reduce_latency_cycles`, and writes the result; data is sampled when an
//! entry fires (as for commands). Messages that arrive before their RECV has
//! fired are kept by the device (up to `EARLY_STORE_BYTES` per slot; beyond
//! that the sender's schedule fails with `ScheduleOverflow`, never silently).

use fpga_regs::sched::{
    ElemType, Entry, EntryKind, ReduceOp, TableHeader, EARLY_STORE_BYTES, ENTRY_BYTES, HEADER_BYTES, SCHED_SLOTS,
};
use fpga_regs::ur;
use fpga_regs::{ErrorCode, Peer};

use super::{Event, Model, Packet, PacketKind};
use crate::time::SimTime;
use crate::trace::Arg;

/// A schedule being executed by one slot's engine.
#[derive(Debug)]
pub(crate) struct Active {
    key: u64,
    op: ReduceOp,
    elem: ElemType,
    entries: Vec<Entry>,
    /// Successors of entry `i`: `succ[succ_start[i]..succ_start[i + 1]]`.
    succ_start: Vec<u32>,
    succ: Vec<u32>,
    missing: Vec<u32>,
    /// RECV entries fired and waiting for their message.
    posted: Vec<u32>,
    done: u32,
    /// Messages sent and not yet accepted by their receiver.
    unacked: u32,
    /// Distinguishes this run's events from a later schedule on the same slot.
    run: u64,
    start: SimTime,
    bytes: u64,
}

/// One entry of one run of a schedule, as its completion event names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntryRef {
    pub node: u16,
    pub slot: u16,
    /// Completion slot.
    pub k: usize,
    /// Which schedule ran there (events of an ended run are ignored).
    pub run: u64,
    pub entry: u32,
    /// Generation of the slot (events of a departed process are ignored).
    pub gen: u64,
}

/// A schedule message that arrived before its RECV fired.
#[derive(Debug)]
pub(crate) struct Early {
    key: u64,
    src: Peer,
    round: u32,
    data: Vec<u8>,
}

/// Per-slot engine state.
#[derive(Debug, Default)]
pub(crate) struct SchedState {
    pub active: [Option<Box<Active>>; SCHED_SLOTS],
    pub done: [u64; SCHED_SLOTS],
    pub result: [u64; SCHED_SLOTS],
    early: Vec<Early>,
    early_bytes: u64,
    runs: u64,
}

fn le<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// The reduction unit: `acc = src ⊕ acc`, element-wise, little-endian.
pub(crate) fn reduce(op: ReduceOp, elem: ElemType, src: &[u8], acc: &mut [u8]) {
    macro_rules! int {
        ($t:ty, $n:literal) => {
            for (s, a) in src.chunks_exact($n).zip(acc.chunks_exact_mut($n)) {
                let (x, y) = (<$t>::from_le_bytes(le::<$n>(s)), <$t>::from_le_bytes(le::<$n>(a)));
                let b = |v: bool| v as $t;
                let r = match op {
                    ReduceOp::Sum => x.wrapping_add(y),
                    ReduceOp::Prod => x.wrapping_mul(y),
                    ReduceOp::Min => x.min(y),
                    ReduceOp::Max => x.max(y),
                    ReduceOp::Land => b(x != 0 && y != 0),
                    ReduceOp::Lor => b(x != 0 || y != 0),
                    ReduceOp::Lxor => b((x != 0) != (y != 0)),
                    ReduceOp::Band => x & y,
                    ReduceOp::Bor => x | y,
                    ReduceOp::Bxor => x ^ y,
                    ReduceOp::None => y,
                };
                a.copy_from_slice(&r.to_le_bytes());
            }
        };
    }
    macro_rules! float {
        ($t:ty, $n:literal) => {
            for (s, a) in src.chunks_exact($n).zip(acc.chunks_exact_mut($n)) {
                let (x, y) = (<$t>::from_le_bytes(le::<$n>(s)), <$t>::from_le_bytes(le::<$n>(a)));
                let b = |v: bool| if v { 1.0 } else { 0.0 };
                let r = match op {
                    ReduceOp::Sum => x + y,
                    ReduceOp::Prod => x * y,
                    ReduceOp::Min => x.min(y),
                    ReduceOp::Max => x.max(y),
                    ReduceOp::Land => b(x != 0.0 && y != 0.0),
                    ReduceOp::Lor => b(x != 0.0 || y != 0.0),
                    ReduceOp::Lxor => b((x != 0.0) != (y != 0.0)),
                    // Refused when the table is loaded.
                    ReduceOp::Band | ReduceOp::Bor | ReduceOp::Bxor | ReduceOp::None => y,
                };
                a.copy_from_slice(&r.to_le_bytes());
            }
        };
    }
    match elem {
        ElemType::I8 => int!(i8, 1),
        ElemType::I16 => int!(i16, 2),
        ElemType::I32 => int!(i32, 4),
        ElemType::I64 => int!(i64, 8),
        ElemType::U8 => int!(u8, 1),
        ElemType::U16 => int!(u16, 2),
        ElemType::U32 => int!(u32, 4),
        ElemType::U64 => int!(u64, 8),
        ElemType::F32 => float!(f32, 4),
        ElemType::F64 => float!(f64, 8),
        ElemType::None => {}
    }
}

/// A SCHED command that loaded its table: when, and what runs.
pub(crate) struct Loaded {
    pub done: SimTime,
    pub bytes: u64,
    pub k: usize,
    pub active: Box<Active>,
}

impl Model {
    fn sched(&mut self, node: u16, slot: u16) -> &mut SchedState {
        &mut self.nodes[node as usize].slots[slot as usize].sched
    }

    /// SCHED: read and check the table at `table` (own partition) at `t`.
    pub(super) fn sched_load(&mut self, node: u16, slot: u16, table: u64, t: SimTime) -> Result<Loaded, ErrorCode> {
        self.check_partition(slot, table, HEADER_BYTES as u64)?;
        if table % 8 != 0 {
            return Err(ErrorCode::BadSchedule);
        }
        let words = |m: &Model, at: u64| -> [u64; 8] {
            let b = m.gather(node, &[(at, 64)]);
            std::array::from_fn(|i| u64::from_le_bytes(le::<8>(&b[8 * i..])))
        };
        let h = TableHeader::decode(&words(self, table))?;
        let bytes = h.table_bytes();
        self.check_partition(slot, table, bytes)?;
        let k = h.done_slot as usize;
        if self.nodes[node as usize].slots[slot as usize].sched.active[k].is_some() {
            return Err(ErrorCode::ScheduleBusy);
        }
        let n = h.entries as usize;
        let mut entries = Vec::with_capacity(n);
        for i in 0..n {
            entries.push(Entry::decode(&words(self, table + (HEADER_BYTES + i * ENTRY_BYTES) as u64))?);
        }
        let deps_at = table + (HEADER_BYTES + n * ENTRY_BYTES) as u64;
        let raw = self.gather(node, &[(deps_at, h.deps * 4)]);
        let deps: Vec<u32> = raw.chunks_exact(4).map(|c| u32::from_le_bytes(le::<4>(c))).collect();
        let esize = h.elem.size() as u32;
        let mut count = vec![0u32; n + 1];
        for (i, e) in entries.iter().enumerate() {
            let end = e.first_dep.checked_add(e.n_deps).ok_or(ErrorCode::BadSchedule)?;
            let preds = deps.get(e.first_dep as usize..end as usize).ok_or(ErrorCode::BadSchedule)?;
            if preds.iter().any(|&p| p as usize >= i) {
                return Err(ErrorCode::BadSchedule); // only earlier entries: the graph is acyclic
            }
            for &p in preds {
                count[p as usize] += 1;
            }
            let len = e.len as u64;
            match e.kind {
                EntryKind::Send => {
                    self.check_peer(e.peer)?;
                    self.check_partition(slot, e.src, len)?;
                }
                EntryKind::Recv => {
                    self.check_peer(e.peer)?;
                    self.check_partition(slot, e.dst, len)?;
                }
                EntryKind::Reduce | EntryKind::Copy => {
                    self.check_partition(slot, e.src, len)?;
                    self.check_partition(slot, e.dst, len)?;
                    if e.kind == EntryKind::Reduce && (h.op == ReduceOp::None || e.len % esize != 0) {
                        return Err(ErrorCode::BadSchedule);
                    }
                }
            }
        }
        let mut succ_start = vec![0u32; n + 1];
        for i in 0..n {
            succ_start[i + 1] = succ_start[i] + count[i];
        }
        let mut fill = succ_start.clone();
        let mut succ = vec![0u32; deps.len()];
        let mut missing = vec![0u32; n];
        for (i, e) in entries.iter().enumerate() {
            for &p in &deps[e.first_dep as usize..(e.first_dep + e.n_deps) as usize] {
                succ[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
            }
            missing[i] = e.n_deps;
        }
        let dur = self.sodimm_time(&[(table, bytes.min(u32::MAX as u64) as u32)]);
        let (_, done) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
        let st = self.sched(node, slot);
        st.runs += 1;
        let active = Box::new(Active {
            key: h.key,
            op: h.op,
            elem: h.elem,
            entries,
            succ_start,
            succ,
            missing,
            posted: Vec::new(),
            done: 0,
            unacked: 0,
            run: st.runs,
            start: t,
            bytes: 0,
        });
        Ok(Loaded { done, bytes, k, active })
    }

    /// Install a loaded schedule and fire its first entries at `t`.
    pub(super) fn sched_install(&mut self, node: u16, slot: u16, l: Loaded, t: SimTime) {
        let k = l.k;
        let roots: Vec<u32> =
            (0..l.active.entries.len() as u32).filter(|&i| l.active.missing[i as usize] == 0).collect();
        self.sched(node, slot).active[k] = Some(l.active);
        for i in roots {
            self.fire(node, slot, k, i, t);
        }
        self.maybe_finish(node, slot, k, t);
    }

    fn active(&mut self, node: u16, slot: u16, k: usize) -> Option<&mut Active> {
        self.sched(node, slot).active[k].as_deref_mut()
    }

    fn fire(&mut self, node: u16, slot: u16, k: usize, i: u32, t: SimTime) {
        let timing = self.cfg.timing.clone();
        let gen = self.nodes[node as usize].slots[slot as usize].generation;
        let Some(a) = self.active(node, slot, k) else { return };
        let (e, run, key, op, elem) = (a.entries[i as usize], a.run, a.key, a.op, a.elem);
        let done = |m: &mut Model, at: SimTime| {
            m.schedule(at, Event::SchedEntry(EntryRef { node, slot, k, run, entry: i, gen }))
        };
        match e.kind {
            EntryKind::Send => {
                let segs = [(e.src, e.len)];
                let data = self.gather(node, &segs);
                let dur = self.sodimm_time(&segs);
                let (start, end) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
                let first = (e.len as u64).min(timing.mtu_bytes);
                let ready = start
                    + timing.cycles(timing.sodimm_latency_cycles)
                    + timing.xfer(first, timing.sodimm_bytes_per_cycle);
                if let Some(a) = self.active(node, slot, k) {
                    a.unacked += 1;
                    a.bytes += e.len as u64;
                }
                let pkt = Packet {
                    src: Peer::new(node, slot),
                    dst: e.peer,
                    seq: k as u64,
                    gen,
                    kind: PacketKind::Sched { key, round: e.round, data },
                };
                self.send(ready, pkt);
                done(self, end);
            }
            EntryKind::Recv => {
                let st = self.sched(node, slot);
                let hit = st.early.iter().position(|m| m.key == key && m.src == e.peer && m.round == e.round);
                match hit {
                    Some(p) => {
                        let m = st.early.remove(p);
                        st.early_bytes -= m.data.len() as u64;
                        self.deliver(node, slot, k, i, m.data, t);
                    }
                    None => {
                        if let Some(a) = self.active(node, slot, k) {
                            a.posted.push(i);
                        }
                    }
                }
            }
            EntryKind::Reduce | EntryKind::Copy => {
                let (s, d) = ([(e.src, e.len)], [(e.dst, e.len)]);
                let src = self.gather(node, &s);
                let mut dur = self.sodimm_time(&s) + self.sodimm_time(&d);
                let out = if e.kind == EntryKind::Reduce {
                    let mut acc = self.gather(node, &d);
                    reduce(op, elem, &src, &mut acc);
                    dur = dur
                        + self.sodimm_time(&d)
                        + timing.cycles(timing.reduce_latency_cycles)
                        + timing.xfer(e.len as u64, timing.reduce_bytes_per_cycle);
                    acc
                } else {
                    src
                };
                self.scatter(node, &d, &out);
                let (_, end) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
                if let Some(a) = self.active(node, slot, k) {
                    a.bytes += e.len as u64;
                }
                done(self, end);
            }
        }
    }

    /// The message for RECV entry `i` is here: write it, then the entry is done.
    fn deliver(&mut self, node: u16, slot: u16, k: usize, i: u32, data: Vec<u8>, t: SimTime) {
        let gen = self.nodes[node as usize].slots[slot as usize].generation;
        let Some(a) = self.active(node, slot, k) else { return };
        let (e, run) = (a.entries[i as usize], a.run);
        if data.len() as u64 != e.len as u64 {
            return self.sched_end(node, slot, k, ErrorCode::BadSchedule, i, t);
        }
        a.bytes += e.len as u64;
        let segs = [(e.dst, e.len)];
        self.scatter(node, &segs, &data);
        let dur = self.sodimm_time(&segs);
        let (_, end) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
        self.schedule(end, Event::SchedEntry(EntryRef { node, slot, k, run, entry: i, gen }));
    }

    /// A schedule message reached its destination controller.
    pub(super) fn sched_arrive(&mut self, pkt: Packet, t: SimTime) {
        let (node, slot) = (pkt.dst.node, pkt.dst.slot);
        let PacketKind::Sched { key, round, data } = pkt.kind else { return };
        let ack_at = t + self.cfg.timing.cycles(self.cfg.timing.status_write_cycles);
        let st = &self.nodes[node as usize].slots[slot as usize].sched;
        let mut target = None;
        for (k, a) in st.active.iter().enumerate() {
            if let Some(a) = a.as_deref().filter(|a| a.key == key) {
                if let Some(p) = a
                    .posted
                    .iter()
                    .position(|&i| a.entries[i as usize].peer == pkt.src && a.entries[i as usize].round == round)
                {
                    target = Some((k, p));
                    break;
                }
            }
        }
        let status = match target {
            Some((k, p)) => {
                let Some(a) = self.active(node, slot, k) else { return };
                let i = a.posted.remove(p);
                self.deliver(node, slot, k, i, data, t);
                ErrorCode::Ok
            }
            None => {
                let st = self.sched(node, slot);
                let len = data.len() as u64;
                if st.early_bytes + len <= EARLY_STORE_BYTES {
                    st.early_bytes += len;
                    st.early.push(Early { key, src: pkt.src, round, data });
                    ErrorCode::Ok
                } else {
                    ErrorCode::ScheduleOverflow
                }
            }
        };
        let ack = Packet {
            src: pkt.dst,
            dst: pkt.src,
            seq: pkt.seq,
            gen: pkt.gen,
            kind: PacketKind::SchedAck { key, status },
        };
        self.send(ack_at, ack);
    }

    /// A receiver accepted (or refused) one of this slot's schedule messages.
    pub(super) fn sched_ack(&mut self, pkt: Packet, t: SimTime) {
        let (node, slot, k) = (pkt.dst.node, pkt.dst.slot, pkt.seq as usize);
        let PacketKind::SchedAck { key, status } = pkt.kind else { return };
        if self.nodes[node as usize].slots[slot as usize].generation != pkt.gen || k >= SCHED_SLOTS {
            return;
        }
        let Some(a) = self.active(node, slot, k).filter(|a| a.key == key) else { return };
        a.unacked = a.unacked.saturating_sub(1);
        if status != ErrorCode::Ok {
            return self.sched_end(node, slot, k, status, u32::MAX, t);
        }
        self.maybe_finish(node, slot, k, t);
    }

    /// Entry `entry` of run `run` finished at `t`: fire what it released.
    pub(super) fn sched_entry_done(&mut self, r: EntryRef, t: SimTime) {
        let EntryRef { node, slot, k, run, entry, gen } = r;
        if self.nodes[node as usize].slots[slot as usize].generation != gen {
            return;
        }
        let Some(a) = self.active(node, slot, k).filter(|a| a.run == run) else { return };
        a.done += 1;
        let mut ready = Vec::new();
        for s in a.succ_start[entry as usize]..a.succ_start[entry as usize + 1] {
            let n = a.succ[s as usize] as usize;
            a.missing[n] -= 1;
            if a.missing[n] == 0 {
                ready.push(n as u32);
            }
        }
        let kind = a.entries[entry as usize].kind;
        if let Some(tr) = self.trace.as_mut() {
            let name = format!("{kind:?} #{entry}");
            let lane = tr.sched_lane(node as u32, slot as u32, k as u32);
            tr.instant(&name, "sched", node as u32, lane, t, &[]);
        }
        for i in ready {
            self.fire(node, slot, k, i, t);
        }
        self.maybe_finish(node, slot, k, t);
    }

    fn maybe_finish(&mut self, node: u16, slot: u16, k: usize, t: SimTime) {
        let Some(a) = self.active(node, slot, k) else { return };
        if a.done as usize == a.entries.len() && a.unacked == 0 {
            self.sched_end(node, slot, k, ErrorCode::Ok, 0, t);
        }
    }

    /// The schedule on completion slot `k` ended: publish it.
    fn sched_end(&mut self, node: u16, slot: u16, k: usize, status: ErrorCode, entry: u32, t: SimTime) {
        let Some(a) = self.sched(node, slot).active[k].take() else { return };
        let at = t + self.cfg.timing.cycles(self.cfg.timing.status_write_cycles);
        let st = self.sched(node, slot);
        // Early messages of a failed schedule would never be claimed.
        if status != ErrorCode::Ok {
            st.early.retain(|m| m.key != a.key);
            st.early_bytes = st.early.iter().map(|m| m.data.len() as u64).sum();
        }
        st.done[k] += 1;
        st.result[k] = ur::sched_result::ENTRY.set(ur::sched_result::STATUS.set(0, status as u64), entry as u64);
        let (done, result) = (st.done[k], st.result[k]);
        self.write_ur(node, slot, ur::off::SCHED_RESULT + 8 * k, result);
        self.write_ur(node, slot, ur::off::SCHED_DONE + 8 * k, done);
        self.touch_ur(node, slot, ur::off::SCHED_RESULT + 8 * k);
        self.touch_ur(node, slot, ur::off::SCHED_DONE + 8 * k);
        if status == ErrorCode::Ok {
            self.stats.bytes += a.bytes;
        } else {
            self.report_error(node, slot, status, None, t);
            self.update_status(node, slot);
        }
        self.stats.schedules += 1;
        if let Some(tr) = self.trace.as_mut() {
            let name = format!("schedule {} entries {}", a.entries.len(), status.name());
            let lane = tr.sched_lane(node as u32, slot as u32, k as u32);
            tr.span(
                &name,
                "sched",
                node as u32,
                lane,
                a.start,
                at,
                &[("key", Arg::U(a.key)), ("bytes", Arg::U(a.bytes))],
            );
        }
    }

    /// Put the schedule words back over host writes (they are read-only).
    pub(super) fn restore_sched_words(&mut self, node: u16, slot: u16) {
        let st = &self.nodes[node as usize].slots[slot as usize].sched;
        // Results before the done words that vouch for them (see
        // `restore_ur_words`).
        self.restore_ur_words(node, slot, ur::off::SCHED_RESULT, &st.result);
        self.restore_ur_words(node, slot, ur::off::SCHED_DONE, &st.done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reduction_unit_follows_mpi_semantics() {
        let mut acc: Vec<u8> = [5i32, -3, i32::MAX].iter().flat_map(|v| v.to_le_bytes()).collect();
        let src: Vec<u8> = [1i32, 2, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        reduce(ReduceOp::Sum, ElemType::I32, &src, &mut acc);
        let got: Vec<i32> = acc.chunks(4).map(|c| i32::from_le_bytes(le::<4>(c))).collect();
        assert_eq!(got, [6, -1, i32::MIN], "integer sums wrap");
        let mut f: Vec<u8> = [1.5f64, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let s: Vec<u8> = [0.5f64, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        reduce(ReduceOp::Max, ElemType::F64, &s, &mut f);
        let got: Vec<f64> = f.chunks(8).map(|c| f64::from_le_bytes(le::<8>(c))).collect();
        assert_eq!(got, [1.5, 3.0]);
        let mut l = vec![1u8, 0, 2, 0];
        reduce(ReduceOp::Lxor, ElemType::U8, &[1, 1, 0, 0], &mut l);
        assert_eq!(l, [0, 1, 1, 0]);
    }
}
