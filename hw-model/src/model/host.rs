//! Doorbells and host activity: the commands a host posted since its last
//! turn, and the host-written words (NRA, exposure, list registers) the
//! model reacts to at a hand-over.

use super::*;

impl Model {
    /// The host of `(node, slot)` may have written DOORBELL. `issue_time`
    /// gives the simulated time at which each newly posted command was
    /// rung; `now` is the host's clock when it handed control back.
    pub fn doorbell(&mut self, node: u16, slot: u16, now: SimTime, issue_time: impl Fn(u64) -> SimTime) {
        let db = self.read_ur(node, slot, ur::off::DOORBELL);
        let st = &self.nodes[node as usize].slots[slot as usize];
        if db == st.posted {
            return;
        }
        let valid = db > st.posted && db - st.fetched <= CQ_DEPTH as u64;
        if !valid {
            if st.bad_doorbell != Some(db) {
                self.nodes[node as usize].slots[slot as usize].bad_doorbell = Some(db);
                self.report_error(node, slot, ErrorCode::DoorbellInvalid, None, now);
                self.update_status(node, slot);
            }
            return;
        }
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        st.bad_doorbell = None;
        for seq in st.posted..db {
            st.issue_time[seq as usize % CQ_DEPTH] = issue_time(seq);
        }
        st.posted = db;
        self.update_status(node, slot);
        self.kick_fetch(node, slot);
    }

    pub(super) fn kick_fetch(&mut self, node: u16, slot: u16) {
        let fetch = self.cfg.timing.cycles(self.cfg.timing.fetch_cycles);
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        if st.fetch_pending || st.fetched >= st.posted {
            return;
        }
        st.fetch_pending = true;
        let t = (st.issue_time[st.fetched as usize % CQ_DEPTH] + fetch).max(st.engine.free_at());
        self.schedule(t, Event::Fetch { node, slot });
    }

    /// The host of `(node, slot)` ran until `now`: it may have advanced ring
    /// read pointers (accept held packets) or acknowledged errors.
    pub fn host_activity(&mut self, node: u16, slot: u16, now: SimTime) {
        self.restore_read_only(node, slot);
        self.update_status(node, slot);
        let sources: Vec<usize> = self.nodes[node as usize].slots[slot as usize]
            .held
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(k, _)| *k)
            .collect();
        for src in sources {
            self.drain_held(node, slot, src, now);
        }
    }

    /// Put back every read-only UR register and completion entry from the
    /// model's shadows: on hardware, host stores to them are ignored; in the
    /// simulator's shared file they land, so the model undoes them each time
    /// the host hands over control.
    pub(crate) fn restore_read_only(&mut self, node: u16, slot: u16) {
        for (reg, v) in self.constant_words(node, slot) {
            self.restore_ur(node, slot, reg, v);
        }
        let st = &self.nodes[node as usize].slots[slot as usize];
        let held: u64 = st.held.values().map(|q| q.len() as u64).sum();
        let regs = [
            (ur::off::CMD_FETCHED, st.fetched),
            (ur::off::CMD_COMPLETED, st.completed),
            (ur::off::STATUS, st.status_word),
            (ur::off::ERROR_COUNT, st.errors),
            (ur::off::LAST_ERROR, st.last_error_word),
            (ur::off::RX_REFUSED, st.rx_refused),
            (ur::off::RX_HELD, held),
            (ur::off::RX_ACCEPTED, st.rx_accepted),
            (ur::off::INFLIGHT, st.inflight.len() as u64),
        ];
        // The completion queue as it lies in UR: (done, result) pairs.
        const _: () = assert!(ur::off::COMPLETION_STRIDE == 16);
        let mut completions = [0u64; 2 * CQ_DEPTH];
        for (pair, (done, result)) in completions.chunks_exact_mut(2).zip(st.completion_words.iter()) {
            pair[0] = *done;
            pair[1] = *result;
        }
        for (reg, v) in regs {
            self.restore_ur(node, slot, reg, v);
        }
        self.restore_sched_words(node, slot);
        self.restore_ur_words(node, slot, ur::off::COMPLETIONS, &completions);
    }

    pub(crate) fn update_status(&mut self, node: u16, slot: u16) {
        let st = &self.nodes[node as usize].slots[slot as usize];
        let ack = self.read_ur(node, slot, ur::off::ERROR_ACK);
        let mut status = Status::empty();
        if ack != st.errors {
            status |= Status::ERROR;
        }
        if !st.inflight.is_empty() || st.fetched < st.posted {
            status |= Status::BUSY;
        }
        let held: u64 = st.held.values().map(|q| q.len() as u64).sum();
        if held > 0 {
            status |= Status::RX_HELD;
        }
        if st.bad_doorbell.is_some() {
            status |= Status::DOORBELL_INVALID;
        }
        let inflight = st.inflight.len() as u64;
        if st.status_word != status.bits() {
            self.touch_ur(node, slot, ur::off::STATUS);
        }
        if self.read_ur(node, slot, ur::off::RX_HELD) != held {
            self.touch_ur(node, slot, ur::off::RX_HELD);
        }
        if self.read_ur(node, slot, ur::off::INFLIGHT) != inflight {
            self.touch_ur(node, slot, ur::off::INFLIGHT);
        }
        self.nodes[node as usize].slots[slot as usize].status_word = status.bits();
        self.write_ur(node, slot, ur::off::STATUS, status.bits());
        self.write_ur(node, slot, ur::off::RX_HELD, held);
        self.write_ur(node, slot, ur::off::INFLIGHT, inflight);
    }

    pub(crate) fn report_error(&mut self, node: u16, slot: u16, code: ErrorCode, seq: Option<u64>, at: SimTime) {
        self.stats.errors += 1;
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        st.errors += 1;
        let errors = st.errors;
        let mut w = ur::last_error::CODE.set(0, code as u64);
        if let Some(seq) = seq {
            w = ur::last_error::HAS_SEQ.set(w, 1);
            w = ur::last_error::SEQ.set(w, seq & 0xffff_ffff);
        }
        self.nodes[node as usize].slots[slot as usize].last_error_word = w;
        self.write_ur(node, slot, ur::off::LAST_ERROR, w);
        self.write_ur(node, slot, ur::off::ERROR_COUNT, errors);
        if let Some(t) = self.trace.as_mut() {
            t.instant(code.name(), "error", node as u32, slot as u32, at, &[("seq", Arg::U(seq.unwrap_or(u64::MAX)))]);
        }
        self.touch_ur(node, slot, ur::off::ERROR_COUNT);
        self.touch_ur(node, slot, ur::off::LAST_ERROR);
    }
}
