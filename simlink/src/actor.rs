//! The actor end of the hand-off protocol: what a simulated process does to
//! join the simulation, hand the token back and get it again (DESIGN §3).
//!
//! The driver's simulated platform wraps an [`ActorEnd`] with its clock
//! accounting; everything here is about the control file.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use fpga_regs::ur::CQ_DEPTH;

use crate::mmio::Mapping;
use crate::simctl::{
    self, flags, handoff, ActorRecord, ActorState, CtlHeader, GrantResult, Watch, YieldRequest, COST_SLOTS, MAX_ACTORS,
    MAX_WATCH,
};

/// How long an actor waits for the simulator to come up and admit it.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the actor end failed.
#[derive(Debug, thiserror::Error)]
pub enum ActorError {
    /// The simulator is not there (any more).
    #[error("the simulator is gone: {0}")]
    Gone(String),
    /// The control file speaks another protocol version.
    #[error("{path}: control file version {found} (this driver speaks {expected}); rebuild both from one tree")]
    Incompatible {
        /// The control file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// Ours.
        expected: u32,
    },
    /// The simulator is shutting down.
    #[error("the simulator is shutting down")]
    Shutdown,
    /// The attach was refused.
    #[error("attach refused: {0}")]
    Refused(String),
    /// The model reported a deadlock or livelock.
    #[error("{message}")]
    Deadlock {
        /// The model's report.
        message: String,
        /// Some IVS packets were held by full rings.
        packets_held: bool,
    },
    /// A wait named more words than the control file holds.
    #[error("a wait on {words} device words is more than the simulator can watch ({max}); watch fewer words, or wait for any change since the first read")]
    WatchTooLong {
        /// Words named.
        words: usize,
        /// [`MAX_WATCH`].
        max: usize,
    },
}

/// What a grant hands over: the clock to resume at and the horizon to run to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The actor's clock (ps).
    pub clock: u64,
    /// Run without yielding while the clock stays at or below this (ps).
    pub horizon: u64,
    /// The same for reads of each region (see [`ActorRecord::ur_horizon`]).
    pub regions: crate::model::RegionHorizons,
    /// The shortest time (ps) from this slot to another live actor's.
    pub reach: u64,
    /// The slot's epoch: see [`ActorRecord::epoch`].
    pub epoch: u64,
}

/// An attached actor's view of the control file.
pub struct ActorEnd {
    ctl: Mapping,
    /// The control file, for [`ActorEnd::poker`].
    path: PathBuf,
    index: usize,
    costs: [u64; COST_SLOTS],
    lookahead: u64,
    detached: Cell<bool>,
    last: Cell<Grant>,
    /// The model's CPU, when the simulation is pinned (see [`crate::affinity`]).
    cpu: Option<usize>,
    /// The attaching thread and the mask it had before it was pinned.
    pinned: Option<(libc::pid_t, crate::affinity::Mask)>,
    /// How long to spin for a grant (none when pinned).
    spin: Duration,
}

thread_local! {
    /// Whether this thread was pinned to the model's CPU (a thread other
    /// than the attaching one, e.g. a progress thread, is pinned the first
    /// time it hands over).
    static THREAD_PINNED: Cell<bool> = const { Cell::new(false) };
}

fn gettid() -> libc::pid_t {
    // SAFETY: gettid takes no arguments and touches no memory of ours.
    unsafe { libc::gettid() }
}

fn gone(msg: impl Into<String>) -> ActorError {
    ActorError::Gone(msg.into())
}

/// The model process is alive (0: it closed the control file).
fn model_alive(pid: u32) -> bool {
    pid != 0 && (pid == std::process::id() || crate::process::alive(pid))
}

/// What another thread of an actor's process uses to wake the actor while
/// it waits (`MPI_THREAD_MULTIPLE`: a thread calls the library while
/// another waits inside it). `Send` and `Sync`: its own mapping of the control file, and
/// only atomic words.
///
/// A poke is a wake-up from outside the simulation: the model resumes the
/// actor at the earliest time at which it can act without changing
/// anybody's past, so when it lands in simulated time depends on when the
/// thread made it. A process whose threads never overlap in the library
/// never pokes, and its runs stay identical.
pub struct Poker {
    ctl: Mapping,
    index: usize,
}

impl Poker {
    fn parts(&self) -> Option<(&CtlHeader, &ActorRecord)> {
        Some((self.ctl.block(0).ok()?, self.ctl.block(simctl::actor_offset(self.index)).ok()?))
    }

    /// Let a poke from now on end the actor's next wait (see
    /// `simctl::ActorRecord::armed`): called by the thread that holds the
    /// library and can hand it over, *before* it looks whether another
    /// thread wants it, so that a poke made after that look is not lost.
    pub fn arm(&self) {
        if let Some((_, rec)) = self.parts() {
            rec.armed_at.store(rec.poke.load(SeqCst), SeqCst);
            rec.armed.store(1, SeqCst);
        }
    }

    /// End the actor's armed wait (or the next one, if it is running).
    pub fn poke(&self) {
        if let Some((header, rec)) = self.parts() {
            rec.poke.fetch_add(1, SeqCst);
            header.poke_seq.fetch_add(1, SeqCst);
            handoff::wake(&header.model_go, &header.model_sleeping);
        }
    }

    /// The process lets several threads call the library: while it has
    /// threads besides the one that waits, the actor's waits are not proof
    /// of a deadlock (see `simctl::ActorRecord::threaded`).
    pub fn set_threaded(&self) {
        // A rank that is a context of a host has no thread of its own
        // besides the one the host switches to it (a program that creates
        // threads is not run as a context), so its waits stay proof of a
        // deadlock; the host's own threads must not make them look pokeable.
        if crate::contexts::in_host() {
            return;
        }
        if let Some((_, rec)) = self.parts() {
            rec.threaded.store(1, SeqCst);
        }
    }

    /// Undo [`Poker::set_threaded`]: the actor's waits are proof of a
    /// deadlock again (a stand-in that waited for a thread blocked outside
    /// the library is done).
    pub fn clear_threaded(&self) {
        if let Some((_, rec)) = self.parts() {
            rec.threaded.store(0, SeqCst);
        }
    }

    /// Whether [`Poker::set_threaded`] is in force.
    pub fn threaded(&self) -> bool {
        self.parts().is_some_and(|(_, rec)| rec.threaded.load(SeqCst) != 0)
    }
}

impl ActorEnd {
    /// Attach to the simulator whose control file is in `dir`, driving
    /// `(node, slot)`, and wait for the first grant. With `index`, take that
    /// actor record (e.g. the MPI rank), so that the schedule does not
    /// depend on start-up order.
    pub fn attach(dir: &Path, node: u16, slot: u16, index: Option<u32>) -> Result<(ActorEnd, Grant), ActorError> {
        let path = dir.join(simctl::FILE_NAME);
        let ctl = Mapping::open(&path, 0, simctl::file_size(MAX_ACTORS)).map_err(|e| gone(e.to_string()))?;
        let deadline = Instant::now() + ATTACH_TIMEOUT;
        let header = ctl.block::<CtlHeader>(0).map_err(|e| gone(e.to_string()))?;
        while header.magic.load(SeqCst) != simctl::MAGIC || header.flags.load(SeqCst) & flags::READY == 0 {
            if Instant::now() > deadline {
                return Err(gone("the control file never became ready"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let found = header.version.load(SeqCst);
        if found != simctl::VERSION {
            return Err(ActorError::Incompatible { path, found, expected: simctl::VERSION });
        }
        if header.flags.load(SeqCst) & flags::SHUTDOWN != 0 {
            return Err(ActorError::Shutdown);
        }
        let costs = std::array::from_fn(|i| header.costs[i].load(SeqCst));
        let lookahead = header.doorbell_lookahead.load(SeqCst);
        // Hand over on the model's CPU: a wake-up across CPUs costs an
        // inter-processor interrupt (see crate::affinity). A CPU this
        // process may not use leaves it unpinned, and spinning.
        // A context of a host shares the host's one thread: nothing to pin.
        let cpu = match header.cpu.load(SeqCst) {
            _ if crate::contexts::in_host() => None,
            simctl::NO_CPU => None,
            c => Some(c as usize),
        };
        let pinned = cpu.and_then(|c| crate::affinity::pin_current_thread(c).ok()).map(|old| (gettid(), old));
        if pinned.is_some() {
            THREAD_PINNED.with(|p| p.set(true));
        }
        let spin = handoff::spin_for(pinned.is_some(), handoff::SPIN_ACTOR);

        // Claim a record under the attach lock.
        let me = std::process::id();
        while header.attach_lock.compare_exchange(0, me, SeqCst, SeqCst).is_err() {
            let holder = header.attach_lock.load(SeqCst);
            if holder != 0 && !model_alive(holder) {
                let _ = header.attach_lock.compare_exchange(holder, 0, SeqCst, SeqCst);
            }
            if Instant::now() > deadline {
                return Err(gone("could not take the attach lock"));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let claimable = |r: &ActorRecord| {
            matches!(r.state(), Some(ActorState::Free | ActorState::Exited | ActorState::Dead) | None)
        };
        let record = |i: usize| ctl.block::<ActorRecord>(simctl::actor_offset(i)).map_err(|e| gone(e.to_string()));
        let chosen = match index {
            Some(i) if (i as usize) < MAX_ACTORS => claimable(record(i as usize)?).then_some(i as usize),
            Some(_) => None,
            None => (0..MAX_ACTORS).find(|&i| record(i).map(claimable).unwrap_or(false)),
        };
        let Some(idx) = chosen else {
            header.attach_lock.store(0, SeqCst);
            return Err(ActorError::Refused(match index {
                Some(i) => format!("actor record {i} is in use or out of range"),
                None => "no free actor record".into(),
            }));
        };
        let rec = record(idx)?;
        rec.node.store(node as u32, SeqCst);
        rec.slot.store(slot as u32, SeqCst);
        rec.pid.store(me, SeqCst);
        rec.set_result(GrantResult::Ok);
        rec.threaded.store(0, SeqCst);
        rec.armed.store(0, SeqCst);
        for t in &rec.db_time {
            t.store(0, SeqCst);
        }
        let go = rec.go.load(SeqCst);
        rec.set_state(ActorState::Attaching);
        header.attach_high.fetch_max(idx as u32 + 1, SeqCst);
        header.attach_lock.store(0, SeqCst);
        header.attach_seq.fetch_add(1, SeqCst);
        handoff::wake(&header.model_go, &header.model_sleeping);
        let end = ActorEnd {
            ctl,
            path,
            index: idx,
            costs,
            lookahead,
            detached: Cell::new(false),
            last: Cell::new(Grant {
                clock: 0,
                horizon: 0,
                regions: crate::model::RegionHorizons { ur: 0, llcm: 0, pw: 0 },
                reach: 0,
                epoch: 0,
            }),
            cpu,
            pinned,
            spin,
        };
        let grant = end.wait_grant(go)?;
        Ok((end, grant))
    }

    fn header(&self) -> &CtlHeader {
        self.ctl.block::<CtlHeader>(0).expect("mapped at attach")
    }

    fn record(&self) -> &ActorRecord {
        self.ctl.block::<ActorRecord>(simctl::actor_offset(self.index)).expect("mapped at attach")
    }

    /// Have the model expect `count` more actors, which begin at `clock`
    /// (this actor's): no party runs until every one of them has attached,
    /// so the schedule does not depend on when their processes start (a
    /// rank spawning processes, MPI 4.1 §11.8). Called while this actor
    /// holds the token, so the model reads both words before it schedules
    /// anyone again.
    pub fn expect_actors(&self, count: u32, clock: u64) {
        let h = self.header();
        h.admit_clock.store(clock, SeqCst);
        h.expected_actors.fetch_add(count, SeqCst);
    }

    /// The host-cost table the model published (see [`simctl::HostCost`]).
    pub fn costs(&self) -> [u64; COST_SLOTS] {
        self.costs
    }

    /// See [`CtlHeader::doorbell_lookahead`].
    pub fn lookahead(&self) -> u64 {
        self.lookahead
    }

    /// The clock and horizon of the last grant, also when it came with an
    /// error (a deadlock report still moves the clock).
    pub fn last_grant(&self) -> Grant {
        self.last.get()
    }

    /// Whether this actor has left (detached, refused or shut down).
    pub fn detached(&self) -> bool {
        self.detached.get()
    }

    /// What the next `Wait` waits on. An empty word list waits for any
    /// change after the last grant (nothing was read to be missed); more
    /// than [`MAX_WATCH`] words are refused.
    pub fn set_watch(&self, watch: Watch<'_>) -> Result<(), ActorError> {
        let rec = self.record();
        match watch {
            Watch::Words(words) if words.len() > MAX_WATCH => {
                return Err(ActorError::WatchTooLong { words: words.len(), max: MAX_WATCH })
            }
            Watch::Words([]) => {
                rec.watch_since.store(self.last.get().epoch, SeqCst);
                rec.watch_count.store(0, SeqCst);
            }
            Watch::Words(words) => {
                for (e, (w, v)) in rec.watch.iter().zip(words) {
                    e.offset.store(*w, SeqCst);
                    e.value.store(*v, SeqCst);
                }
                rec.watch_count.store(words.len() as u32, SeqCst);
            }
            Watch::ChangeSince(epoch) => {
                rec.watch_since.store(epoch, SeqCst);
                rec.watch_count.store(0, SeqCst);
            }
        }
        Ok(())
    }

    /// A handle by which the process's other threads wake this actor
    /// while it waits (see [`Poker`]).
    pub fn poker(&self) -> Result<Poker, ActorError> {
        let ctl = Mapping::open(&self.path, 0, simctl::file_size(MAX_ACTORS)).map_err(|e| gone(e.to_string()))?;
        let p = Poker { ctl, index: self.index };
        // Both blocks are in the file (the attach mapped them).
        p.ctl.block::<CtlHeader>(0).map_err(|e| gone(e.to_string()))?;
        p.ctl.block::<ActorRecord>(simctl::actor_offset(self.index)).map_err(|e| gone(e.to_string()))?;
        Ok(p)
    }

    /// Record that command `seq` was rung at simulated time `at` (ps).
    pub fn record_doorbell(&self, seq: u64, at: u64) {
        self.record().db_time[seq as usize % CQ_DEPTH].store(at, SeqCst);
    }

    /// Hand the token back at `clock` for `req`, and (unless detaching) wait
    /// for the next grant.
    pub fn yield_now(&self, clock: u64, req: YieldRequest) -> Result<Option<Grant>, ActorError> {
        if self.detached.get() {
            return Err(ActorError::Shutdown);
        }
        if self.header().flags.load(SeqCst) & flags::SHUTDOWN != 0 {
            return Err(ActorError::Shutdown);
        }
        if let Some(cpu) = self.cpu {
            if !THREAD_PINNED.with(Cell::get) {
                THREAD_PINNED.with(|p| p.set(crate::affinity::pin_current_thread(cpu).is_ok()));
            }
        }
        let rec = self.record();
        rec.clock.store(clock, SeqCst);
        rec.set_request(req);
        let go = rec.go.load(SeqCst);
        rec.set_state(ActorState::Yielded);
        let header = self.header();
        handoff::wake(&header.model_go, &header.model_sleeping);
        if req == YieldRequest::Detach {
            self.detached.set(true);
            return Ok(None);
        }
        self.wait_grant(go).map(Some)
    }

    fn wait_grant(&self, go: u32) -> Result<Grant, ActorError> {
        let (header, rec) = (self.header(), self.record());
        loop {
            if handoff::wait_change(&rec.go, &rec.sleeping, go, self.spin, Some(Duration::from_millis(250))) {
                break;
            }
            if !model_alive(header.model_pid.load(SeqCst)) {
                return Err(gone("the simulator process exited"));
            }
        }
        let grant = Grant {
            clock: rec.clock.load(SeqCst),
            horizon: rec.horizon.load(SeqCst),
            regions: crate::model::RegionHorizons {
                ur: rec.ur_horizon.load(SeqCst),
                llcm: rec.llcm_horizon.load(SeqCst),
                pw: rec.pw_horizon.load(SeqCst),
            },
            reach: rec.reach.load(SeqCst),
            epoch: rec.epoch.load(SeqCst),
        };
        let result = rec.result();
        let message = || simctl::load_str(&header.message);
        let packets_held = header.flags.load(SeqCst) & flags::PACKETS_HELD != 0;
        let outcome = match result {
            Some(GrantResult::Ok) => Ok(grant),
            Some(GrantResult::Deadlock) => Err(ActorError::Deadlock { message: message(), packets_held }),
            Some(GrantResult::Shutdown) => Err(ActorError::Shutdown),
            Some(GrantResult::Refused) => Err(ActorError::Refused(message())),
            None => Err(gone("the model answered with a grant result this driver does not know")),
        };
        self.last.set(grant);
        if matches!(result, Some(GrantResult::Shutdown | GrantResult::Refused)) {
            self.detached.set(true);
        }
        outcome
    }

    /// Leave the simulation (also done on drop). The attaching thread gets
    /// back the CPUs it had before it was pinned.
    pub fn detach(&self, clock: u64) {
        if !self.detached.get() {
            let _ = self.yield_now(clock, YieldRequest::Detach);
            self.detached.set(true);
        }
        if let Some((tid, old)) = &self.pinned {
            if *tid == gettid() && crate::affinity::restore(old).is_ok() {
                THREAD_PINNED.with(|p| p.set(false));
            }
        }
    }
}
