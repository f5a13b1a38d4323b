//! The model end of the hand-off protocol: publishing the control file,
//! admitting and refusing actors, granting the token and collecting what an
//! actor reports when it hands it back (DESIGN §3).
//!
//! Which actor runs, and until when, is decided by [`crate::scheduler`];
//! this module only moves that decision through the control file.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use fpga_regs::ur::CQ_DEPTH;

use crate::mmio::{MapError, Mapping};
use crate::simctl::{
    self, flags, handoff, ActorRecord, ActorState, CtlHeader, GrantResult, YieldRequest, COST_SLOTS, MAX_ACTORS,
    MAX_WATCH,
};

/// What the model publishes in the control-file header.
#[derive(Clone, Debug)]
pub struct Publish<'a> {
    /// Nodes.
    pub nodes: u16,
    /// Slots per node.
    pub slots: u16,
    /// Actors the job expects (0: open-ended).
    pub expected_actors: u32,
    /// See [`CtlHeader::doorbell_lookahead`] (ps).
    pub doorbell_lookahead: u64,
    /// The host-cost table (see [`simctl::HostCost`]).
    pub costs: [u64; COST_SLOTS],
    /// The host profile's name.
    pub profile_name: &'a str,
    /// The CPU the model runs on, for actors to hand over on (`None`: not pinned).
    pub cpu: Option<u32>,
}

/// What a grant hands an actor (see [`ModelEnd::grant`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantTo {
    /// The clock to resume at (ps).
    pub clock: u64,
    /// Run without yielding while the clock stays at or below this (ps).
    pub horizon: u64,
    /// Per region: see [`crate::simctl::ActorRecord::ur_horizon`].
    pub regions: RegionHorizons,
    /// See [`crate::simctl::ActorRecord::reach`].
    pub reach: u64,
    /// See [`crate::simctl::ActorRecord::epoch`].
    pub epoch: u64,
    /// What the grant says.
    pub result: GrantResult,
}

/// The horizons of reads of each region of a slot (ps; see
/// [`crate::simctl::ActorRecord::ur_horizon`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionHorizons {
    /// UR.
    pub ur: u64,
    /// LLCM.
    pub llcm: u64,
    /// PW.
    pub pw: u64,
}

/// An actor asking to be admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttachRequest {
    /// Its record.
    pub index: usize,
    /// Node it drives.
    pub node: u32,
    /// Slot it drives.
    pub slot: u32,
    /// Its process.
    pub pid: u32,
}

/// What an actor said when it handed the token back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Yielded {
    /// Why (`None`: a value this version does not know; treat as `Sync`).
    pub request: Option<YieldRequest>,
    /// Its clock (ps).
    pub clock: u64,

    /// For `Wait`: what ends the wait.
    pub watch: Option<Waiting>,
}

/// What a waiting actor waits for, as the model reads it (the owned form
/// of [`crate::simctl::Watch`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// Slot offsets polled, with the values last read there: put in the
    /// buffer given to [`ModelEnd::yielded`] (reused from one hand-over
    /// to the next, so a wait allocates nothing).
    Words,
    /// Any device write to the slot after this epoch.
    ChangeSince(u64),
}

/// The model's side of the control file.
pub struct ModelEnd {
    ctl: Mapping,
    attach_seq_seen: u32,
    poke_seq_seen: u32,
    /// How long to spin for a hand-back (none when pinned).
    spin: Duration,
}

impl ModelEnd {
    /// Take over a freshly created control file and publish the header;
    /// actors may attach once this returns.
    pub fn publish(ctl: Mapping, p: &Publish<'_>) -> Result<ModelEnd, MapError> {
        let h = ctl.block::<CtlHeader>(0)?;
        let _ = ctl.block::<ActorRecord>(simctl::actor_offset(MAX_ACTORS - 1))?;
        h.version.store(simctl::VERSION, SeqCst);
        h.nodes.store(p.nodes as u32, SeqCst);
        h.slots.store(p.slots as u32, SeqCst);
        h.max_actors.store(MAX_ACTORS as u32, SeqCst);
        h.expected_actors.store(p.expected_actors, SeqCst);
        h.model_pid.store(std::process::id(), SeqCst);
        h.doorbell_lookahead.store(p.doorbell_lookahead, SeqCst);
        h.cpu.store(p.cpu.unwrap_or(simctl::NO_CPU), SeqCst);
        for (slot, v) in h.costs.iter().zip(p.costs) {
            slot.store(v, SeqCst);
        }
        simctl::store_str(&h.profile_name, p.profile_name);
        h.magic.store(simctl::MAGIC, SeqCst);
        h.flags.store(flags::READY, SeqCst);
        let spin = handoff::spin_for(p.cpu.is_some(), handoff::SPIN_MODEL);
        Ok(ModelEnd { ctl, attach_seq_seen: 0, poke_seq_seen: 0, spin })
    }

    fn header(&self) -> &CtlHeader {
        // Checked in `publish`.
        self.ctl.block::<CtlHeader>(0).expect("control header is mapped")
    }

    fn record(&self, i: usize) -> &ActorRecord {
        // Every record up to MAX_ACTORS was checked in `publish`.
        self.ctl.block::<ActorRecord>(simctl::actor_offset(i)).expect("actor records are mapped")
    }

    /// The actor records ever claimed: those below the header's high mark.
    fn records_used(&self) -> usize {
        (self.header().attach_high.load(SeqCst) as usize).min(MAX_ACTORS)
    }

    /// Records that asked to attach since the last call (cheap when none did).
    pub fn attach_requests(&mut self) -> Vec<AttachRequest> {
        let seq = self.header().attach_seq.load(SeqCst);
        if seq == self.attach_seq_seen {
            return Vec::new();
        }
        self.attach_seq_seen = seq;
        (0..self.records_used())
            .filter(|&i| self.record(i).state() == Some(ActorState::Attaching))
            .map(|i| {
                let r = self.record(i);
                AttachRequest {
                    index: i,
                    node: r.node.load(SeqCst),
                    slot: r.slot.load(SeqCst),
                    pid: r.pid.load(SeqCst),
                }
            })
            .collect()
    }

    /// Whether an actor asked to attach since [`ModelEnd::attach_requests`] last looked.
    pub fn attach_pending(&self) -> bool {
        self.header().attach_seq.load(SeqCst) != self.attach_seq_seen
    }

    /// Actors the job expects now: the count the model was started with,
    /// raised by actors that spawn others ([`crate::actor::ActorEnd::expect_actors`]).
    pub fn expected_actors(&self) -> u32 {
        self.header().expected_actors.load(SeqCst)
    }

    /// The clock actors admitted after the start begin at
    /// ([`CtlHeader::admit_clock`]).
    pub fn admit_clock(&self) -> u64 {
        self.header().admit_clock.load(SeqCst)
    }

    /// Whether some actor was poked since the last call (cheap when none
    /// was): then look for waiting actors with [`ModelEnd::poke_pending`].
    pub fn poked(&mut self) -> bool {
        let seq = self.header().poke_seq.load(SeqCst);
        if seq == self.poke_seq_seen {
            return false;
        }
        self.poke_seq_seen = seq;
        true
    }

    /// Whether actor `i` armed its wait and was poked since (see
    /// [`crate::simctl::ActorRecord::armed`]).
    pub fn poke_pending(&self, i: usize) -> bool {
        let rec = self.record(i);
        rec.armed.load(SeqCst) != 0 && rec.poke.load(SeqCst) != rec.armed_at.load(SeqCst)
    }

    /// Actor `i`'s wait has ended: a poke no longer ends the next one
    /// unless the actor arms it again.
    pub fn disarm(&self, i: usize) {
        self.record(i).armed.store(0, SeqCst);
    }

    /// Whether actor `i`'s process lets several threads call the library
    /// (see [`crate::simctl::ActorRecord::threaded`]).
    pub fn threaded(&self, i: usize) -> bool {
        self.record(i).threaded.load(SeqCst) != 0
    }

    /// Refuse an attaching actor, telling it why.
    pub fn refuse(&self, i: usize, why: &str) {
        self.set_message(why);
        let rec = self.record(i);
        rec.set_result(GrantResult::Refused);
        rec.set_state(ActorState::Free);
        handoff::wake(&rec.go, &rec.sleeping);
    }

    /// Set a record's state as the scheduler sees it (`Runnable`,
    /// `Waiting`, `Exited`, `Dead`).
    pub fn set_state(&self, i: usize, s: ActorState) {
        self.record(i).set_state(s);
    }

    /// Give actor `i` the token: resume at `clock`, run to `horizon`, with
    /// `result`; `reach` and `epoch` are [`crate::simctl::ActorRecord::reach`]
    /// and [`crate::simctl::ActorRecord::epoch`].
    pub fn grant(&self, i: usize, g: &GrantTo) {
        let rec = self.record(i);
        rec.clock.store(g.clock, SeqCst);
        rec.horizon.store(g.horizon, SeqCst);
        rec.ur_horizon.store(g.regions.ur, SeqCst);
        rec.llcm_horizon.store(g.regions.llcm, SeqCst);
        rec.pw_horizon.store(g.regions.pw, SeqCst);
        rec.reach.store(g.reach, SeqCst);
        rec.epoch.store(g.epoch, SeqCst);
        let result = g.result;
        rec.set_result(result);
        rec.grants.fetch_add(1, SeqCst);
        rec.set_state(ActorState::Running);
        handoff::wake(&rec.go, &rec.sleeping);
    }

    /// Wait up to `timeout` for actor `i` to hand the token back; `false`
    /// if it did not (the caller checks whether the process still lives).
    pub fn wait_yield(&self, i: usize, timeout: Duration) -> bool {
        let (h, rec) = (self.header(), self.record(i));
        loop {
            let seen = h.model_go.load(SeqCst);
            if rec.state() == Some(ActorState::Yielded) {
                return true;
            }
            if !handoff::wait_change(&h.model_go, &h.model_sleeping, seen, self.spin, Some(timeout)) {
                return rec.state() == Some(ActorState::Yielded);
            }
        }
    }

    /// Whether actor `i` has handed the token back (without waiting: a
    /// context of this process either has when its switch returns, or has
    /// ended).
    pub fn yielded_back(&self, i: usize) -> bool {
        self.record(i).state() == Some(ActorState::Yielded)
    }

    /// When actor `i` rang the doorbell that posted command `seq` (ps).
    pub fn doorbell_time(&self, i: usize, seq: u64) -> u64 {
        self.record(i).db_time[seq as usize % CQ_DEPTH].load(SeqCst)
    }

    /// What actor `i` reported when it yielded (the words of a
    /// [`Waiting::Words`] wait go into `words`).
    pub fn yielded(&self, i: usize, words: &mut Vec<(u32, u64)>) -> Yielded {
        let rec = self.record(i);
        words.clear();
        let request = rec.request();
        let watch = (request == Some(YieldRequest::Wait)).then(|| {
            // A count past the arrays (a version mismatch or a stray
            // write) is read as "any change since the last grant".
            match rec.watch_count.load(SeqCst) as usize {
                n @ 1..=MAX_WATCH => {
                    words.extend(rec.watch[..n].iter().map(|e| (e.offset.load(SeqCst), e.value.load(SeqCst))));
                    Waiting::Words
                }
                0 => Waiting::ChangeSince(rec.watch_since.load(SeqCst)),
                _ => Waiting::ChangeSince(rec.epoch.load(SeqCst)),
            }
        });
        Yielded { request, clock: rec.clock.load(SeqCst), watch }
    }

    /// Sleep until an actor hands over or attaches, or `timeout` passes
    /// (`false`); used when nothing can run.
    pub fn idle(&self, timeout: Duration) -> bool {
        let h = self.header();
        let seen = h.model_go.load(SeqCst);
        if self.attach_pending() || h.poke_seq.load(SeqCst) != self.poke_seq_seen {
            return true;
        }
        handoff::wait_change(&h.model_go, &h.model_sleeping, seen, Duration::ZERO, Some(timeout))
    }

    /// Publish how far the run has come (for a launcher's progress line;
    /// nothing reads it to decide anything).
    #[inline]
    pub fn publish_progress(&self, sim_time: u64, events: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let h = self.header();
        h.sim_time.store(sim_time, Relaxed);
        h.events.store(events, Relaxed);
    }

    /// Leave a message for actors (a refusal, a deadlock report).
    pub fn set_message(&self, msg: &str) {
        simctl::store_str(&self.header().message, msg);
    }

    /// Publish a deadlock (or livelock) report; actors given
    /// [`GrantResult::Deadlock`] read it.
    pub fn report_deadlock(&self, msg: &str, packets_held: bool) {
        self.set_message(msg);
        let f = &self.header().flags;
        f.fetch_or(flags::DEADLOCK, SeqCst);
        if packets_held {
            f.fetch_or(flags::PACKETS_HELD, SeqCst);
        } else {
            f.fetch_and(!flags::PACKETS_HELD, SeqCst);
        }
    }

    /// Release every live actor (attaching, runnable or waiting) with a
    /// shutdown result, and refuse new attaches.
    pub fn shutdown(&self) {
        self.header().flags.fetch_or(flags::SHUTDOWN, SeqCst);
        for i in 0..self.records_used() {
            let rec = self.record(i);
            if matches!(rec.state(), Some(ActorState::Runnable | ActorState::Waiting | ActorState::Attaching)) {
                rec.set_result(GrantResult::Shutdown);
                rec.set_state(ActorState::Running);
                handoff::wake(&rec.go, &rec.sleeping);
            }
        }
    }

    /// The model process is going away: actors that look find it gone.
    pub fn close(&self) {
        self.header().model_pid.store(0, SeqCst);
    }

    /// The model process id published in the header (0 after [`ModelEnd::close`]).
    pub fn model_pid(&self) -> u32 {
        self.header().model_pid.load(SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model looks at records below the attach high mark only, and an
    /// attach raises the mark before it bumps the sequence the model
    /// watches, so no attaching actor is ever missed.
    #[test]
    fn attach_requests_look_below_the_high_mark_only() {
        let path = std::env::temp_dir().join(format!("simctl-high-{}", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(simctl::file_size(MAX_ACTORS) as u64).unwrap();
        let map = Mapping::open(&path, 0, simctl::file_size(MAX_ACTORS)).unwrap();
        let p = Publish {
            nodes: 1,
            slots: 1,
            expected_actors: 0,
            doorbell_lookahead: 0,
            costs: [0; COST_SLOTS],
            profile_name: "test",
            cpu: None,
        };
        let mut m = ModelEnd::publish(map, &p).unwrap();
        let other = Mapping::open(&path, 0, simctl::file_size(MAX_ACTORS)).unwrap();
        let claim = |i: usize, high: bool| {
            let rec = other.block::<ActorRecord>(simctl::actor_offset(i)).unwrap();
            rec.pid.store(1000 + i as u32, SeqCst);
            rec.set_state(ActorState::Attaching);
            let h = other.block::<CtlHeader>(0).unwrap();
            if high {
                h.attach_high.fetch_max(i as u32 + 1, SeqCst);
            }
            h.attach_seq.fetch_add(1, SeqCst);
        };
        assert!(m.attach_requests().is_empty());
        claim(700, true);
        let seen: Vec<usize> = m.attach_requests().iter().map(|r| r.index).collect();
        assert_eq!(seen, vec![700]);
        // A record above the mark is not looked at (an actor always raises
        // the mark when it claims one).
        claim(9000, false);
        let seen: Vec<usize> = m.attach_requests().iter().map(|r| r.index).collect();
        assert_eq!(seen, vec![700], "record 9000 is above the mark");
        claim(9000, true);
        let seen: Vec<usize> = m.attach_requests().iter().map(|r| r.index).collect();
        assert_eq!(seen, vec![700, 9000]);
        std::fs::remove_file(&path).unwrap();
    }
}
