//! Completing commands (their completion records and status words) and
//! the SO-DIMM's access time and contents.

use super::*;

impl Model {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn complete(
        &mut self,
        node: u16,
        slot: u16,
        seq: u64,
        gen: u64,
        status: ErrorCode,
        bytes: u64,
        deposit: Option<Deposit>,
        t: SimTime,
    ) {
        if self.nodes[node as usize].slots[slot as usize].generation != gen {
            return; // the process that issued it is gone
        }
        if let Some(d) = deposit {
            match d {
                Deposit::Pw { off, data } => {
                    let at = Region::Pw.offset() + off as usize;
                    let _ = self.mmio[node as usize].write_bytes(slot as usize * SLOT_STRIDE + at, &data);
                    self.touch(node, slot, at, data.len());
                }
                Deposit::SoDimm { segments, data } => self.scatter(node, &segments, &data),
            }
        }
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        let Some(inf) = st.inflight.remove(&seq) else {
            return;
        };
        st.completed += 1;
        let completed = st.completed;
        let was_stalled = std::mem::take(&mut st.stalled);
        let idx = seq as usize % CQ_DEPTH;
        let base = ur::off::COMPLETIONS + idx * ur::off::COMPLETION_STRIDE;
        let result = ur::CompletionResult { status: status as u16, bytes }.encode();
        self.nodes[node as usize].slots[slot as usize].completion_words[idx] = (seq + 1, result);
        self.write_ur(node, slot, base + 8, result);
        self.write_ur(node, slot, base, seq + 1);
        self.write_ur(node, slot, ur::off::CMD_COMPLETED, completed);
        self.stats.commands += 1;
        if status == ErrorCode::Ok {
            self.stats.bytes += bytes;
        }
        self.nodes[node as usize].slots[slot as usize].last_done = Some((inf.op, status, bytes));
        if status != ErrorCode::Ok {
            self.report_error(node, slot, status, Some(seq), t);
        }
        self.update_status(node, slot);
        if let Some(tr) = self.trace.as_mut() {
            let name = if status == ErrorCode::Ok {
                format!("{} {}B", inf.op.map_or("?", Opcode::name), bytes)
            } else {
                format!("{} {}", inf.op.map_or("descriptor", Opcode::name), status.name())
            };
            tr.span(
                &name,
                "cmd",
                node as u32,
                slot as u32,
                inf.start,
                t,
                &[("seq", Arg::U(seq)), ("bytes", Arg::U(bytes))],
            );
        }
        self.touch(node, slot, layout::UR_OFFSET + base, 16);
        self.touch_ur(node, slot, ur::off::CMD_COMPLETED);
        if was_stalled {
            let st = &mut self.nodes[node as usize].slots[slot as usize];
            if !st.fetch_pending {
                st.fetch_pending = true;
                self.schedule(t, Event::Fetch { node, slot });
            }
        }
    }

    // SO-DIMM access.

    /// Gather validated segments (anything out of range reads as zeros:
    /// callers validate first, this only keeps a bug from panicking).
    pub(crate) fn gather(&self, node: u16, segments: &[(u64, u32)]) -> Vec<u8> {
        let mem = &self.sodimm[node as usize];
        let mut out = Vec::with_capacity(segments.iter().map(|s| s.1 as usize).sum());
        for &(a, l) in segments {
            match mem.get(a as usize..a as usize + l as usize) {
                Some(src) => out.extend_from_slice(src),
                None => out.resize(out.len() + l as usize, 0),
            }
        }
        out
    }

    /// Scatter `data` over validated segments (out-of-range parts are skipped).
    pub(crate) fn scatter(&mut self, node: u16, segments: &[(u64, u32)], data: &[u8]) {
        let mem = &mut self.sodimm[node as usize];
        let mut pos = 0usize;
        for &(a, l) in segments {
            let l = l as usize;
            if let (Some(dst), Some(src)) = (mem.get_mut(a as usize..a as usize + l), data.get(pos..pos + l)) {
                dst.copy_from_slice(src);
            }
            pos += l;
        }
    }

    /// Read SO-DIMM bytes directly (for tests and invariant checks).
    pub fn sodimm(&self, node: u16) -> &[u8] {
        &self.sodimm[node as usize]
    }

    /// Write SO-DIMM bytes directly (test set-up only; a host cannot do this).
    pub fn sodimm_mut(&mut self, node: u16) -> &mut [u8] {
        &mut self.sodimm[node as usize]
    }

    /// The MMIO surface of a node.
    pub fn mmio(&self, node: u16) -> &Mapping {
        &self.mmio[node as usize]
    }

    /// Time for one SO-DIMM pass over `segments`.
    pub(crate) fn sodimm_time(&self, segments: &[(u64, u32)]) -> SimTime {
        let t = &self.cfg.timing;
        let mut c = 0u64;
        for s in segments {
            // Saturating: validated profiles cannot overflow, and no profile may.
            c = c.saturating_add(
                t.sodimm_latency_cycles.saturating_add((s.1 as u64).div_ceil(t.sodimm_bytes_per_cycle)),
            );
        }
        t.cycles(c.max(1))
    }
}
