//! The network side: sending packets over links, and what a receiving
//! controller does with each packet TYPE (seed 004 §2): IVS appends to the
//! source's ring or waits for room, RVS/RVL touch exposed SO-DIMM only,
//! responses and acknowledgements complete the issuing command.

use fpga_regs::layout::{self, Region};
use fpga_regs::llcm::{self, record_len, RingState};
use fpga_regs::packet::HEADER_LEN;
use fpga_regs::ur::{self, ExposePerm};
use fpga_regs::{ErrorCode, Near};

use super::{Deposit, Event, Held, Model, Packet, PacketKind};
use crate::time::SimTime;
use crate::trace::{Arg, TID_LINK_RX, TID_LINK_TX};

impl Model {
    /// Put a packet on the wire at `ready` and schedule its arrival.
    pub(super) fn send(&mut self, ready: SimTime, pkt: Packet) {
        // Nothing leaves before now: `Model::next_effect_on` relies on it.
        let ready = ready.max(self.now);
        let t = self.cfg.timing.clone();
        let payload = pkt.kind.payload_len();
        self.stats.packets += 1;
        let arrive = if pkt.src.node == pkt.dst.node {
            // Same node: through the controller's loopback path, which like
            // a link carries one packet at a time (so packets stay in order).
            let (_, s1) = self.nodes[pkt.src.node as usize]
                .tx
                .reserve(ready, t.xfer(payload + HEADER_LEN as u64, t.window_bytes_per_cycle));
            s1 + t.cycles(t.loopback_cycles)
        } else {
            let frags = payload.div_ceil(t.mtu_bytes).max(1);
            let per_frag = (HEADER_LEN as u64).saturating_add(t.wire_overhead_bytes);
            let wire = payload.saturating_add(frags.saturating_mul(per_frag));
            let ser = t.xfer(wire, t.link_bytes_per_cycle);
            let (s0, s1) = self.nodes[pkt.src.node as usize].tx.reserve(ready + t.cycles(t.nic_tx_cycles), ser);
            let hops =
                t.link_latency_cycles.saturating_add(if self.cfg.nodes > 2 { t.switch_latency_cycles } else { 0 });
            let lat = t.cycles(hops);
            let (r0, r1) = self.nodes[pkt.dst.node as usize].rx.reserve(s0 + lat, ser);
            if let Some(tr) = self.trace.as_mut() {
                let name = format!("{} {}B -> n{}.s{}", pkt.kind.name(), payload, pkt.dst.node, pkt.dst.slot);
                let args =
                    [("src_slot", Arg::U(pkt.src.slot as u64)), ("seq", Arg::U(pkt.seq)), ("wire_bytes", Arg::U(wire))];
                tr.span(&name, "pkt", pkt.src.node as u32, TID_LINK_TX, s0, s1, &args);
                let name = format!("{} {}B <- n{}.s{}", pkt.kind.name(), payload, pkt.src.node, pkt.src.slot);
                tr.span(&name, "pkt", pkt.dst.node as u32, TID_LINK_RX, r0, r1, &args);
            }
            r1.max(s1 + lat) + t.cycles(t.nic_rx_cycles)
        };
        self.schedule(arrive, Event::Arrive(pkt));
    }

    /// SO-DIMM time for the last (or only) MTU of a transfer: what remains
    /// after the wire when reads or writes are pipelined with it.
    fn tail_time(&self, bytes: u64) -> SimTime {
        let t = &self.cfg.timing;
        t.cycles(t.sodimm_latency_cycles) + t.xfer(bytes.min(t.mtu_bytes), t.sodimm_bytes_per_cycle)
    }

    /// Answer a packet from its destination back to its source.
    fn reply(&mut self, at: SimTime, pkt: &Packet, kind: PacketKind) {
        let answer = Packet { src: pkt.dst, dst: pkt.src, seq: pkt.seq, gen: pkt.gen, kind };
        self.send(at, answer);
    }

    fn refuse(&mut self, pkt: Packet, code: ErrorCode, t: SimTime) {
        let (n, s) = (pkt.dst.node, pkt.dst.slot);
        let st = &mut self.nodes[n as usize].slots[s as usize];
        st.rx_refused += 1;
        let refused = st.rx_refused;
        self.write_ur(n, s, ur::off::RX_REFUSED, refused);
        self.touch_ur(n, s, ur::off::RX_REFUSED);
        let at = t + self.cfg.timing.cycles(self.cfg.timing.status_write_cycles);
        self.reply(at, &pkt, PacketKind::Nack { code });
    }

    pub(super) fn arrive(&mut self, pkt: Packet, t: SimTime) {
        let timing = self.cfg.timing.clone();
        let status = timing.cycles(timing.status_write_cycles);
        match pkt.kind {
            PacketKind::Ivs { .. } => self.ivs_arrive(pkt, t),
            PacketKind::Rvs { ref segments, .. } => {
                if let Err(code) = self.check_exposed(pkt.dst.node, pkt.dst.slot, segments, ExposePerm::REMOTE_WRITE) {
                    return self.refuse(pkt, code, t);
                }
                let PacketKind::Rvs { segments, data } = &pkt.kind else {
                    return;
                };
                let bytes = data.len() as u64;
                self.scatter(pkt.dst.node, segments, data);
                // Earlier fragments were written while later ones were on the wire.
                let dur = self.sodimm_time(segments);
                let start = t.since(dur.since(self.tail_time(bytes)));
                let (_, end) = self.nodes[pkt.dst.node as usize].sodimm_port.reserve(start, dur);
                self.reply(end.max(t) + status, &pkt, PacketKind::Ack { bytes });
            }
            PacketKind::RvlRequest { ref segments, reply } => {
                if let Err(code) = self.check_exposed(pkt.dst.node, pkt.dst.slot, segments, ExposePerm::REMOTE_READ) {
                    return self.refuse(pkt, code, t);
                }
                let data = self.gather(pkt.dst.node, segments);
                // The response leaves as soon as its first MTU has been read.
                let dur = self.sodimm_time(segments);
                let (start, _) = self.nodes[pkt.dst.node as usize].sodimm_port.reserve(t, dur);
                let ready = start + self.tail_time(data.len() as u64);
                self.reply(ready, &pkt, PacketKind::RvlResponse { data, reply });
            }
            PacketKind::RvlResponse { data, reply } => {
                let bytes = data.len() as u64;
                let deposit = match reply {
                    Near::Window(off) => Deposit::Pw { off, data },
                    Near::SoDimm(addr) => Deposit::SoDimm { segments: vec![(addr, bytes as u32)], data },
                };
                let done = t + timing.xfer(bytes.min(timing.mtu_bytes), timing.window_bytes_per_cycle) + status;
                let (node, slot) = (pkt.dst.node, pkt.dst.slot);
                self.schedule(
                    done,
                    Event::Complete {
                        node,
                        slot,
                        seq: pkt.seq,
                        gen: pkt.gen,
                        status: ErrorCode::Ok,
                        bytes,
                        deposit: Some(deposit),
                    },
                );
            }
            PacketKind::AmoRequest { addr, op, elem, operand, compare, pw_off } => {
                let n = elem.size();
                let seg = [(addr, n as u32)];
                let both = ExposePerm::REMOTE_READ | ExposePerm::REMOTE_WRITE;
                if let Err(code) = self.check_exposed(pkt.dst.node, pkt.dst.slot, &seg, both) {
                    return self.refuse(pkt, code, t);
                }
                let old = self.gather(pkt.dst.node, &seg);
                if let Some(new) = atomic(op, elem, &old, operand, compare) {
                    self.scatter(pkt.dst.node, &seg, &new);
                }
                // Read, operate, write back: the SO-DIMM port is held for
                // both accesses and the unit's cycles, so that nothing else
                // touches the element in between (the atomicity).
                let dur = self.sodimm_time(&seg);
                let hold = dur + dur + timing.cycles(timing.atomic_cycles);
                let (_, end) = self.nodes[pkt.dst.node as usize].sodimm_port.reserve(t, hold);
                self.reply(end, &pkt, PacketKind::AmoResponse { old, pw_off });
            }
            PacketKind::AmoResponse { old, pw_off } => {
                let bytes = old.len() as u64;
                let done = t + timing.xfer(bytes, timing.window_bytes_per_cycle) + status;
                let (node, slot) = (pkt.dst.node, pkt.dst.slot);
                let deposit = Some(Deposit::Pw { off: pw_off, data: old });
                self.schedule(
                    done,
                    Event::Complete { node, slot, seq: pkt.seq, gen: pkt.gen, status: ErrorCode::Ok, bytes, deposit },
                );
            }
            PacketKind::Sched { .. } => self.sched_arrive(pkt, t),
            PacketKind::SchedAck { .. } => self.sched_ack(pkt, t),
            PacketKind::Ack { bytes } => self.reply_arrived(t + status, &pkt, ErrorCode::Ok, bytes),
            PacketKind::Nack { code } => self.reply_arrived(t + status, &pkt, code, 0),
        }
    }

    /// An acknowledgement (or refusal) reached the issuing slot: its command
    /// completes at `at` with `status` and `bytes`.
    fn reply_arrived(&mut self, at: SimTime, pkt: &Packet, status: ErrorCode, bytes: u64) {
        let (node, slot) = (pkt.dst.node, pkt.dst.slot);
        self.schedule(at, Event::Complete { node, slot, seq: pkt.seq, gen: pkt.gen, status, bytes, deposit: None });
    }

    /// Every non-empty segment must lie inside one exposure entry of the
    /// target slot that has `perm` and itself lies inside that slot's partition.
    fn check_exposed(&self, node: u16, slot: u16, segments: &[(u64, u32)], perm: ExposePerm) -> Result<(), ErrorCode> {
        let mut entries = Vec::with_capacity(ur::EXPOSE_ENTRIES);
        for i in 0..ur::EXPOSE_ENTRIES {
            let off = ur::off::EXPOSE + i * ur::off::EXPOSE_STRIDE;
            let base = self.read_ur(node, slot, off);
            let sp = self.read_ur(node, slot, off + 8);
            let size = ur::expose::SIZE.get(sp);
            let p = ExposePerm::from_bits_truncate(ur::expose::PERM.get(sp));
            if size > 0 && p.contains(perm) && self.check_partition(slot, base, size).is_ok() {
                entries.push((base, base + size));
            }
        }
        for &(a, l) in segments {
            if l == 0 {
                continue;
            }
            let end = a.checked_add(l as u64).ok_or(ErrorCode::NotExposed)?;
            if !entries.iter().any(|&(b, e)| a >= b && end <= e) {
                return Err(ErrorCode::NotExposed);
            }
        }
        Ok(())
    }

    fn ring_offset(slot: u16, source: usize) -> usize {
        Model::region_off(slot, Region::Llcm, llcm::off::ring(source))
    }

    fn ring_state(&self, node: u16, slot: u16, source: usize) -> RingState {
        let base = Model::ring_offset(slot, source);
        let map = &self.mmio[node as usize];
        let w = |i: usize| map.read_u64(base + 8 * i).unwrap_or(0);
        RingState::decode([w(0), w(1), w(2), w(3)])
    }

    /// Whether a record of `len` payload bytes fits now: `Ok(Some(ring))`
    /// with the validated descriptor to write through, `Ok(None)` to wait.
    ///
    /// The descriptor lives in host-writable LLCM, so it is read once here
    /// and only this snapshot is used for the write (a host that rewrites it
    /// between the check and the copy cannot make the model index outside
    /// the slot's partition).
    fn ring_room(&self, node: u16, slot: u16, source: usize, len: u64) -> Result<Option<RingState>, ErrorCode> {
        let r = self.ring_state(node, slot, source);
        if !r.enabled {
            return Err(ErrorCode::RingDisabled);
        }
        if r.size == 0
            || r.size % llcm::RING_ALIGN != 0
            || r.base % llcm::RING_ALIGN != 0
            || self.check_partition(slot, r.base, r.size).is_err()
        {
            return Err(ErrorCode::RingInvalid);
        }
        let used = r.used().ok_or(ErrorCode::RingInvalid)?;
        let record = record_len(len);
        if record > r.size {
            return Err(ErrorCode::TooLarge);
        }
        let pending = self.nodes[node as usize].slots[slot as usize].pending_ring.get(&source).copied().unwrap_or(0);
        Ok((used + pending + record <= r.size).then_some(r))
    }

    fn ivs_arrive(&mut self, pkt: Packet, t: SimTime) {
        let (n, s) = (pkt.dst.node, pkt.dst.slot);
        let source = layout::source_index(pkt.src.node, pkt.src.slot, self.cfg.slots);
        let len = match &pkt.kind {
            PacketKind::Ivs { data } => data.len() as u64,
            _ => return,
        };
        let queued = self.nodes[n as usize].slots[s as usize].held.get(&source).is_some_and(|q| !q.is_empty());
        let room = if queued { Ok(None) } else { self.ring_room(n, s, source, len) };
        match room {
            Err(code) => self.refuse(pkt, code, t),
            Ok(Some(ring)) => self.ring_accept(pkt, source, &ring, t),
            Ok(None) => {
                self.stats.held += 1;
                self.nodes[n as usize].slots[s as usize]
                    .held
                    .entry(source)
                    .or_default()
                    .push_back(Held { pkt, since: t });
                if let Some(tr) = self.trace.as_mut() {
                    tr.instant(
                        "ring full: packet held",
                        "ring",
                        n as u32,
                        s as u32,
                        t,
                        &[("source", Arg::U(source as u64))],
                    );
                }
                self.update_status(n, s);
            }
        }
    }

    /// Write the record into the ring described by `r` (the snapshot that
    /// `ring_room` validated) and publish it once it is in SO-DIMM.
    fn ring_accept(&mut self, pkt: Packet, source: usize, r: &RingState, t: SimTime) {
        let (n, s) = (pkt.dst.node, pkt.dst.slot);
        let PacketKind::Ivs { data } = &pkt.kind else {
            return;
        };
        let len = data.len() as u64;
        let record = record_len(len);
        let pending = self.nodes[n as usize].slots[s as usize].pending_ring.entry(source).or_insert(0);
        // NWA is host-writable: wrap rather than trust it not to overflow.
        let at = r.nwa.wrapping_add(*pending);
        *pending += record;
        // Copy with wrap-around, then zero the (at most 7) padding bytes.
        let mem = &mut self.sodimm[n as usize];
        if self.planted.scramble_ivs && !data.is_empty() {
            let mut bad = data.clone();
            bad[0] ^= 0xFF;
            write_wrapped(mem, r, at, &bad);
        } else {
            write_wrapped(mem, r, at, data);
        }
        write_wrapped(mem, r, at.wrapping_add(len), &[0; 8][..(record - len) as usize]);
        let timing = self.cfg.timing.clone();
        let dur = timing.cycles(timing.sodimm_latency_cycles) + timing.xfer(record, timing.sodimm_bytes_per_cycle);
        let (_, end) = self.nodes[n as usize].sodimm_port.reserve(t, dur);
        let commit = end + timing.cycles(timing.status_write_cycles);
        let ack =
            Packet { src: pkt.dst, dst: pkt.src, seq: pkt.seq, gen: pkt.gen, kind: PacketKind::Ack { bytes: len } };
        self.schedule(commit, Event::RingCommit { node: n, slot: s, source, record, ack });
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn ring_commit(&mut self, node: u16, slot: u16, source: usize, record: u64, ack: Packet, t: SimTime) {
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        if let Some(p) = st.pending_ring.get_mut(&source) {
            *p = p.saturating_sub(record);
        }
        let k = st.rx_accepted;
        st.rx_accepted += 1;
        let accepted = st.rx_accepted;
        let off = Model::ring_offset(slot, source) + llcm::off::RING_NWA;
        let map = &self.mmio[node as usize];
        let nwa = map.read_u64(off).unwrap_or(0).wrapping_add(record);
        let _ = map.write_u64(off, nwa);
        // The arrival queue (map 1.2), in the same cycle as NWA.
        let entry = Model::region_off(slot, Region::Llcm, llcm::off::arrival(k));
        let named = if self.planted.misname_arrivals { source ^ 1 } else { source };
        let _ = map.write_u64(entry, llcm::arrival::encode(k, named));
        self.write_ur(node, slot, ur::off::RX_ACCEPTED, accepted);
        if let Some(tr) = self.trace.as_mut() {
            let nra =
                self.mmio[node as usize].read_u64(Model::ring_offset(slot, source) + llcm::off::RING_NRA).unwrap_or(0);
            tr.counter(&format!("ring s{slot}<-src{source}"), node as u32, t, &[("nwa", nwa), ("nra", nra)]);
        }
        self.touch(node, slot, Region::Llcm.offset() + llcm::off::ring(source) + llcm::off::RING_NWA, 8);
        self.touch(node, slot, Region::Llcm.offset() + llcm::off::arrival(k), 8);
        self.touch_ur(node, slot, ur::off::RX_ACCEPTED);
        self.send(t, ack);
    }

    /// Accept held packets of `source` that now fit, in arrival order.
    pub(super) fn drain_held(&mut self, node: u16, slot: u16, source: usize, now: SimTime) {
        loop {
            let st = &self.nodes[node as usize].slots[slot as usize];
            let Some(front) = st.held.get(&source).and_then(|q| q.front()) else {
                break;
            };
            let len = match &front.pkt.kind {
                PacketKind::Ivs { data } => data.len() as u64,
                _ => 0,
            };
            let since = front.since;
            let room = self.ring_room(node, slot, source, len);
            if room == Ok(None) {
                break;
            }
            let Some(held) =
                self.nodes[node as usize].slots[slot as usize].held.get_mut(&source).and_then(|q| q.pop_front())
            else {
                break;
            };
            let at = now.max(since).max(self.now());
            match room {
                Ok(Some(ring)) => self.ring_accept(held.pkt, source, &ring, at),
                Ok(None) => {}
                Err(code) => self.refuse(held.pkt, code, at),
            }
        }
        self.update_status(node, slot);
    }
}

/// Write `bytes` into ring `r` of `mem` at ring counter `at`, wrapping at the
/// ring's end (`bytes` is never longer than the ring, and `r` was validated
/// against the slot's partition by `ring_room`). Bytes that would fall
/// outside `mem` are dropped rather than panicking the model.
fn write_wrapped(mem: &mut [u8], r: &RingState, at: u64, bytes: &[u8]) {
    let first = ((r.size - r.pos(at)) as usize).min(bytes.len());
    let (head, tail) = bytes.split_at(first);
    for (start, part) in [(r.base + r.pos(at), head), (r.base, tail)] {
        let dst = usize::try_from(start).ok().and_then(|p| mem.get_mut(p..p.checked_add(part.len())?));
        if let Some(dst) = dst {
            dst.copy_from_slice(part);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::temp_dir;
    use crate::model::ModelConfig;
    use crate::profile::DeviceTiming;
    use fpga_regs::Peer;

    /// Issue 7: a host that rewrites a ring's base between the controller's
    /// room check and its copy must not make the model index outside SO-DIMM.
    /// The copy goes through the descriptor that was checked.
    #[test]
    fn a_ring_base_rewritten_after_the_room_check_is_not_used() {
        let dir = temp_dir("ring-snapshot");
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = ModelConfig { nodes: 2, slots: 1, partition_size: 1 << 20, timing: DeviceTiming::default() };
        let mut m = Model::create(cfg, &dir).unwrap();
        let source = layout::source_index(1, 0, 1);
        let off = Model::ring_offset(0, source);
        let base = m.partition_base(0) + 0x1000;
        let map = &m.mmio[0];
        map.write_u64(off, base).unwrap();
        map.write_u64(off + 8, RingState::size_ctrl(4096, true)).unwrap();
        let ring = m.ring_room(0, 0, source, 5).unwrap().expect("an empty ring has room");
        // The host flips the base to something absurd after the check.
        m.mmio[0].write_u64(off, 0x7ff0_0000_0000_0000).unwrap();
        let pkt = Packet {
            src: Peer { node: 1, slot: 0 },
            dst: Peer { node: 0, slot: 0 },
            seq: 1,
            gen: 0,
            kind: PacketKind::Ivs { data: b"hello".to_vec() },
        };
        m.ring_accept(pkt, source, &ring, SimTime::ZERO);
        assert_eq!(&m.sodimm(0)[base as usize..base as usize + 8], b"hello\0\0\0");
        // And the controller refuses the invalid descriptor from now on.
        assert_eq!(m.ring_room(0, 0, source, 5), Err(ErrorCode::RingInvalid));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn write_wrapped_drops_what_falls_outside_memory() {
        let mut mem = vec![0u8; 64];
        let r = RingState { base: 56, size: 16, enabled: true, nwa: 0, nra: 0 };
        write_wrapped(&mut mem, &r, 0, &[7; 12]);
        assert_eq!(mem, vec![0u8; 64], "a part that does not fit is dropped whole");
        write_wrapped(&mut mem, &r, 12, &[9; 6]);
        assert_eq!(&mem[56..], &[9, 9, 0, 0, 0, 0, 0, 0], "the wrapped part inside memory is written");
    }
}

/// The atomic unit: the new value of an element whose old value is
/// `old` (`None`: nothing is written — a fetch, or a compare that failed).
pub(crate) fn atomic(
    op: fpga_regs::Atomic,
    elem: fpga_regs::sched::ElemType,
    old: &[u8],
    operand: u64,
    compare: u64,
) -> Option<Vec<u8>> {
    use fpga_regs::Atomic;
    let n = elem.size();
    let operand = &operand.to_le_bytes()[..n];
    match op {
        Atomic::Fetch => None,
        Atomic::Replace => Some(operand.to_vec()),
        Atomic::CompareSwap => (old == &compare.to_le_bytes()[..n]).then(|| operand.to_vec()),
        Atomic::Reduce(r) => {
            let mut acc = old.to_vec();
            super::coll::reduce(r, elem, operand, &mut acc);
            Some(acc)
        }
    }
}

#[cfg(test)]
mod atomic_tests {
    use super::atomic;
    use fpga_regs::sched::{ElemType, ReduceOp};
    use fpga_regs::Atomic;

    #[test]
    fn the_atomic_unit_computes_each_operation() {
        let old = 5i32.to_le_bytes();
        let sum = atomic(Atomic::Reduce(ReduceOp::Sum), ElemType::I32, &old, (-7i32) as u32 as u64, 0);
        assert_eq!(sum, Some((-2i32).to_le_bytes().to_vec()));
        assert_eq!(atomic(Atomic::Fetch, ElemType::I32, &old, 9, 0), None);
        assert_eq!(atomic(Atomic::Replace, ElemType::I32, &old, 9, 0), Some(9i32.to_le_bytes().to_vec()));
        assert_eq!(atomic(Atomic::CompareSwap, ElemType::I32, &old, 9, 5), Some(9i32.to_le_bytes().to_vec()));
        assert_eq!(atomic(Atomic::CompareSwap, ElemType::I32, &old, 9, 4), None, "compare failed");
        let f = 1.5f64.to_le_bytes();
        let max = atomic(Atomic::Reduce(ReduceOp::Max), ElemType::F64, &f, 2.5f64.to_bits(), 0);
        assert_eq!(max, Some(2.5f64.to_le_bytes().to_vec()));
        let u8max = atomic(Atomic::Reduce(ReduceOp::Sum), ElemType::U8, &[255], 1, 0);
        assert_eq!(u8max, Some(vec![0]), "wrapping");
    }
}
