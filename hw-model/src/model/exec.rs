//! The command engine: fetch a descriptor, validate it against the issuing
//! slot's rights, and start the command (seed 004 §2 command semantics).

use fpga_regs::command::{list_entry_size, Descriptor};
use fpga_regs::layout::{Region, PW_SIZE, WW_SIZE};
use fpga_regs::packet::{PacketHeader, PacketType, PatternBlock, HEADER_LEN, PATTERN_BLOCK_LEN};
use fpga_regs::ur::{self, CQ_DEPTH, MAX_PAYLOAD};
use fpga_regs::{Command, ErrorCode, Near, Pattern, Peer, Space, VectorMode};

use super::{Deposit, Event, Inflight, Model, Packet, PacketKind};
use crate::time::SimTime;

/// Most elements one vector command may touch (ours).
pub const MAX_ELEMENTS: u32 = 65_536;

/// A started command's outcome, decided at fetch time.
enum Start {
    /// Refused: complete with this code after the decode time.
    Refuse(ErrorCode),
    /// Local data movement; completes at the given time with a deposit.
    Local { done: SimTime, bytes: u64, deposit: Deposit },
    /// A packet leaves at the given time; completion comes with the answer.
    Send { ready: SimTime, dst: Peer, kind: PacketKind },
    /// A schedule table was loaded; it starts running when loaded.
    Sched(super::coll::Loaded),
}

impl Model {
    pub(super) fn fetch(&mut self, node: u16, slot: u16, t: SimTime) {
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        st.fetch_pending = false;
        if st.fetched >= st.posted {
            return;
        }
        let seq = st.fetched;
        // Completion entry seq % 32 must be free: command seq - 32 has ended.
        if seq >= CQ_DEPTH as u64 && st.inflight.range(..=seq - CQ_DEPTH as u64).next().is_some() {
            st.stalled = true;
            return;
        }
        let start = t.max(st.engine.free_at());
        st.fetched += 1;
        let fetched = st.fetched;
        let gen = st.generation;
        self.write_ur(node, slot, ur::off::CMD_FETCHED, fetched);
        self.touch_ur(node, slot, ur::off::CMD_FETCHED);

        let mut words: Descriptor = [0; 8];
        let base = ur::off::DESCRIPTORS + (seq as usize % CQ_DEPTH) * ur::off::DESCRIPTOR_STRIDE;
        for (i, w) in words.iter_mut().enumerate() {
            *w = self.read_ur(node, slot, base + 8 * i);
        }
        let timing = self.cfg.timing.clone();
        let decoded = Command::decode(&words);
        let op = decoded.as_ref().ok().map(Command::opcode);
        let exec_done = start + timing.cycles(timing.exec_cycles);
        let outcome = match decoded {
            Err(e) => Start::Refuse(e.code),
            Ok(cmd) => self.start(node, slot, &cmd, exec_done).unwrap_or_else(Start::Refuse),
        };
        let remote_read =
            matches!(outcome, Start::Send { kind: PacketKind::RvlRequest { .. } | PacketKind::AmoRequest { .. }, .. });
        self.nodes[node as usize].slots[slot as usize].inflight.insert(seq, Inflight { op, start, remote_read });
        let src = Peer::new(node, slot);
        match outcome {
            Start::Refuse(code) => {
                self.nodes[node as usize].slots[slot as usize].engine.reserve(start, timing.cycles(timing.exec_cycles));
                let done = exec_done + timing.cycles(timing.status_write_cycles);
                self.schedule(done, Event::Complete { node, slot, seq, gen, status: code, bytes: 0, deposit: None });
            }
            Start::Local { done, bytes, deposit } => {
                self.nodes[node as usize].slots[slot as usize].engine.reserve(start, done.since(start));
                let done = done + timing.cycles(timing.status_write_cycles);
                self.schedule(
                    done,
                    Event::Complete { node, slot, seq, gen, status: ErrorCode::Ok, bytes, deposit: Some(deposit) },
                );
            }
            Start::Send { ready, dst, kind } => {
                self.nodes[node as usize].slots[slot as usize].engine.reserve(start, ready.since(start));
                self.send(ready, Packet { src, dst, seq, gen, kind });
            }
            Start::Sched(loaded) => {
                let (done, bytes) = (loaded.done, loaded.bytes);
                self.nodes[node as usize].slots[slot as usize].engine.reserve(start, done.since(start));
                let end = done + timing.cycles(timing.status_write_cycles);
                self.schedule(
                    end,
                    Event::Complete { node, slot, seq, gen, status: ErrorCode::Ok, bytes, deposit: None },
                );
                self.sched_install(node, slot, loaded, done);
            }
        }
        self.update_status(node, slot);
        // Fetch the next posted descriptor once the engine is free.
        self.kick_fetch(node, slot);
    }

    /// Validate `cmd` for `(node, slot)` and start it at `t`.
    fn start(&mut self, node: u16, slot: u16, cmd: &Command, t: SimTime) -> Result<Start, ErrorCode> {
        let timing = self.cfg.timing.clone();
        let wbpc = timing.window_bytes_per_cycle;
        match *cmd {
            Command::Vl { src, pw_off } => {
                let segs = self.local_segments(node, slot, &src)?;
                let len = total(&segs);
                check_window(pw_off, len, PW_SIZE)?;
                let data = self.gather(node, &segs);
                let dur = self.sodimm_time(&segs);
                let (_, sod) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
                let done = sod.max(t + timing.xfer(len, wbpc));
                Ok(Start::Local { done, bytes: len, deposit: Deposit::Pw { off: pw_off, data } })
            }
            Command::Vs { ww_off, dst } => {
                let segs = self.local_segments(node, slot, &dst)?;
                let len = total(&segs);
                check_window(ww_off, len, WW_SIZE)?;
                let data = self.read_window(node, slot, Region::Ww, ww_off as usize, len as usize);
                let read_done = t + timing.xfer(len, wbpc);
                let dur = self.sodimm_time(&segs);
                let (_, done) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
                Ok(Start::Local {
                    done: done.max(read_done),
                    bytes: len,
                    deposit: Deposit::SoDimm { segments: segs, data },
                })
            }
            Command::Rvl { peer, src, dst } => {
                self.check_peer(peer)?;
                let list = self.read_list(node, slot, &src)?;
                let segs = remote_segments(&src, &list)?;
                let len = total(&segs);
                match dst {
                    Near::Window(off) => check_window(off, len, PW_SIZE)?,
                    Near::SoDimm(addr) => self.check_partition(slot, addr, len)?,
                }
                Ok(Start::Send { ready: t, dst: peer, kind: PacketKind::RvlRequest { segments: segs, reply: dst } })
            }
            Command::Rvs { peer, src, dst } => {
                self.check_peer(peer)?;
                let list = self.read_list(node, slot, &dst)?;
                let segs = remote_segments(&dst, &list)?;
                let len = total(&segs);
                // The source is read as it is sent (cut-through): the packet
                // can leave once its first MTU is in the send buffer.
                let first = len.min(timing.mtu_bytes);
                let (data, ready) = match src {
                    Near::Window(off) => {
                        check_window(off, len, WW_SIZE)?;
                        let data = self.read_window(node, slot, Region::Ww, off as usize, len as usize);
                        (data, t + timing.xfer(first, wbpc))
                    }
                    Near::SoDimm(addr) => {
                        self.check_partition(slot, addr, len)?;
                        let segs = [(addr, len as u32)];
                        let dur = self.sodimm_time(&segs);
                        let (start, _) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
                        let lat = timing.cycles(timing.sodimm_latency_cycles);
                        (self.gather(node, &segs), start + lat + timing.xfer(first, timing.sodimm_bytes_per_cycle))
                    }
                };
                Ok(Start::Send { ready, dst: peer, kind: PacketKind::Rvs { segments: segs, data } })
            }
            Command::Ivs { peer, space, src } => {
                self.check_peer(peer)?;
                let (data, ready) = match space {
                    Space::Window => {
                        let list = self.read_list(node, slot, &src)?;
                        let segs = bounded_segments(&src, &list)?;
                        for &(a, l) in &segs {
                            check_window_u64(a, l as u64, WW_SIZE)?;
                        }
                        let len = total(&segs);
                        if len > MAX_PAYLOAD as u64 {
                            return Err(ErrorCode::TooLarge);
                        }
                        let mut data = Vec::with_capacity(len as usize);
                        for &(a, l) in &segs {
                            data.extend(self.read_window(node, slot, Region::Ww, a as usize, l as usize));
                        }
                        (data, t + timing.xfer(len, wbpc))
                    }
                    Space::SoDimm => {
                        let segs = self.local_segments(node, slot, &src)?;
                        if total(&segs) > MAX_PAYLOAD as u64 {
                            return Err(ErrorCode::TooLarge);
                        }
                        let dur = self.sodimm_time(&segs);
                        let (_, end) = self.nodes[node as usize].sodimm_port.reserve(t, dur);
                        (self.gather(node, &segs), end)
                    }
                };
                Ok(Start::Send { ready, dst: peer, kind: PacketKind::Ivs { data } })
            }
            Command::Amo { peer, addr, op, elem, operand, compare, pw_off } => {
                // Decode checked the operation, the type and the alignment;
                // the target checks its exposure.
                self.check_peer(peer)?;
                check_window(pw_off, elem.size() as u64, PW_SIZE)?;
                Ok(Start::Send {
                    ready: t,
                    dst: peer,
                    kind: PacketKind::AmoRequest { addr, op, elem, operand, compare, pw_off },
                })
            }
            Command::Botf { ww_off, len } => self.start_botf(node, slot, ww_off, len, t),
            Command::Sched { table } => Ok(Start::Sched(self.sched_load(node, slot, table, t)?)),
        }
    }

    /// BOTF: the packet image in WW is sent as is; the receiver acts on TYPE.
    fn start_botf(&mut self, node: u16, slot: u16, ww_off: u32, len: u32, t: SimTime) -> Result<Start, ErrorCode> {
        let timing = self.cfg.timing.clone();
        check_window(ww_off, len as u64, WW_SIZE)?;
        if (len as usize) < HEADER_LEN {
            return Err(ErrorCode::BadPacketHeader);
        }
        let image = self.read_window(node, slot, Region::Ww, ww_off as usize, len as usize);
        let hdr = PacketHeader::decode(&image)?;
        let payload = &image[HEADER_LEN..];
        if hdr.payload_len as usize != payload.len() {
            return Err(ErrorCode::BadPacketHeader);
        }
        if !hdr.ptype.host_may_send() {
            return Err(ErrorCode::BadPacketType);
        }
        self.check_peer(hdr.dst)?;
        let ready = t + timing.xfer(len as u64, timing.window_bytes_per_cycle);
        let kind = match hdr.ptype {
            PacketType::Ivs => {
                if hdr.mode != VectorMode::Contiguous {
                    return Err(ErrorCode::BadMode);
                }
                if hdr.addr != 0 || hdr.aux != 0 {
                    return Err(ErrorCode::ReservedBits);
                }
                if payload.len() > MAX_PAYLOAD {
                    return Err(ErrorCode::TooLarge);
                }
                PacketKind::Ivs { data: payload.to_vec() }
            }
            PacketType::Rvs => {
                if hdr.aux != 0 {
                    return Err(ErrorCode::ReservedBits);
                }
                let (segs, data_at) = if hdr.mode == VectorMode::Contiguous {
                    (vec![(hdr.addr, payload.len() as u32)], 0)
                } else {
                    let (pattern, rest) = inline_pattern(hdr.mode, hdr.addr, payload)?;
                    let segs = remote_segments(&pattern, rest)?;
                    (segs, PATTERN_BLOCK_LEN + PatternBlock::decode(payload)?.list_len(hdr.mode))
                };
                let data = payload[data_at..].to_vec();
                if data.len() as u64 != total(&segs) {
                    return Err(ErrorCode::BadPacketHeader);
                }
                PacketKind::Rvs { segments: segs, data }
            }
            PacketType::RvlRequest => {
                let (pattern, rest) = inline_pattern(hdr.mode, hdr.addr, payload)?;
                let segs = remote_segments(&pattern, rest)?;
                if payload.len() != PATTERN_BLOCK_LEN + PatternBlock::decode(payload)?.list_len(hdr.mode) {
                    return Err(ErrorCode::BadPacketHeader);
                }
                check_window(hdr.aux, total(&segs), PW_SIZE)?;
                PacketKind::RvlRequest { segments: segs, reply: Near::Window(hdr.aux) }
            }
            _ => return Err(ErrorCode::BadPacketType),
        };
        Ok(Start::Send { ready, dst: hdr.dst, kind })
    }

    // ---- validation helpers ---------------------------------------------------

    pub(crate) fn check_peer(&self, p: Peer) -> Result<(), ErrorCode> {
        if p.node >= self.cfg.nodes {
            return Err(ErrorCode::NoSuchNode);
        }
        if p.slot >= self.cfg.slots {
            return Err(ErrorCode::NoSuchSlot);
        }
        Ok(())
    }

    /// `[addr, addr+len)` must lie in `slot`'s partition.
    pub(crate) fn check_partition(&self, slot: u16, addr: u64, len: u64) -> Result<(), ErrorCode> {
        let base = self.partition_base(slot);
        let end = addr.checked_add(len).ok_or(ErrorCode::OutOfPartition)?;
        if addr < base || end > base + self.cfg.partition_size {
            return Err(ErrorCode::OutOfPartition);
        }
        Ok(())
    }

    /// The index list of `p`, read from WW (empty for contiguous and stride).
    fn read_list(&self, node: u16, slot: u16, p: &Pattern) -> Result<Vec<u8>, ErrorCode> {
        if p.count() > MAX_ELEMENTS {
            return Err(ErrorCode::TooLarge);
        }
        match p.list_range() {
            None => Ok(Vec::new()),
            Some((off, len)) => {
                if (off as u64).checked_add(len as u64).is_none_or(|e| e > WW_SIZE as u64) {
                    return Err(ErrorCode::ListRange);
                }
                Ok(self.read_window(node, slot, Region::Ww, off as usize, len))
            }
        }
    }

    /// Segments of a local SO-DIMM pattern, each inside the slot's partition.
    fn local_segments(&self, node: u16, slot: u16, p: &Pattern) -> Result<Vec<(u64, u32)>, ErrorCode> {
        let list = self.read_list(node, slot, p)?;
        let segs = bounded_segments(p, &list)?;
        for &(a, l) in &segs {
            self.check_partition(slot, a, l as u64).map_err(|e| {
                if p.list_range().is_some() {
                    ErrorCode::ListRange
                } else {
                    e
                }
            })?;
        }
        Ok(segs)
    }

    pub(crate) fn read_window(&self, node: u16, slot: u16, region: Region, off: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        let _ = self.mmio[node as usize].read_bytes(Model::region_off(slot, region, off), &mut v);
        v
    }
}

fn total(segs: &[(u64, u32)]) -> u64 {
    segs.iter().map(|s| s.1 as u64).sum()
}

fn check_window(off: u32, len: u64, size: usize) -> Result<(), ErrorCode> {
    check_window_u64(off as u64, len, size)
}

fn check_window_u64(off: u64, len: u64, size: usize) -> Result<(), ErrorCode> {
    match off.checked_add(len) {
        Some(end) if end <= size as u64 => Ok(()),
        _ => Err(ErrorCode::WindowRange),
    }
}

/// Resolve a pattern with the element-count and size limits applied before
/// anything is allocated.
fn bounded_segments(p: &Pattern, list: &[u8]) -> Result<Vec<(u64, u32)>, ErrorCode> {
    if p.count() > MAX_ELEMENTS {
        return Err(ErrorCode::TooLarge);
    }
    if let Some(len) = p.fixed_len() {
        if len > u32::MAX as u64 {
            return Err(ErrorCode::TooLarge);
        }
    }
    let segs = p.segments(list)?;
    if total(&segs) > u32::MAX as u64 {
        return Err(ErrorCode::TooLarge);
    }
    Ok(segs)
}

/// Segments of a remote pattern (checked by the receiver against its exposure table).
fn remote_segments(p: &Pattern, list: &[u8]) -> Result<Vec<(u64, u32)>, ErrorCode> {
    bounded_segments(p, list)
}

/// Parse the pattern block (and list) at the start of an RVS/RVL payload.
fn inline_pattern(mode: VectorMode, addr: u64, payload: &[u8]) -> Result<(Pattern, &[u8]), ErrorCode> {
    let block = PatternBlock::decode(payload)?;
    let pattern = block.pattern(mode, addr)?;
    if pattern.count() > MAX_ELEMENTS {
        return Err(ErrorCode::TooLarge);
    }
    let list_len = block.count as usize * list_entry_size(mode);
    let rest = payload.get(PATTERN_BLOCK_LEN..).ok_or(ErrorCode::BadPacketHeader)?;
    if rest.len() < list_len {
        return Err(ErrorCode::BadPacketHeader);
    }
    Ok((pattern, rest))
}
