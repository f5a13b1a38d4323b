//! What differs between the real card and the simulator: nothing in the
//! register protocol, only time. On hardware, waiting means spinning on
//! uncached reads and costs are real. In simulation the process is an
//! *actor* of the simulator (DESIGN §3): it charges host costs from the
//! profile to its simulated clock, hands control to the model when a poll
//! finds nothing, and records when it rang each doorbell.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use fpga_regs::mmio::Mapping;
use fpga_regs::simctl::{
    self, handoff, request, result, state, ActorRecord, CtlHeader, HostCost, COST_SLOTS, MAX_ACTORS, MAX_WATCH,
};
use fpga_regs::ur::CQ_DEPTH;

use crate::error::DriverError;

/// How long an actor waits for the simulator to come up and admit it.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the hardware platform spins on one wait before giving up.
pub const HW_WAIT_TIMEOUT: Duration = Duration::from_secs(10);

/// The platform a [`crate::Device`] runs on.
#[allow(clippy::large_enum_variant)] // one per device; boxing would add an indirection to every access
pub enum Platform {
    /// A real card: waits spin, costs are real.
    Hardware(Hardware),
    /// An actor of the simulator.
    Simulated(SimActor),
}

/// Hardware platform state.
pub struct Hardware {
    wait_started: Cell<Option<Instant>>,
    timeout: Duration,
}

impl Hardware {
    /// A hardware platform with the default wait timeout.
    pub fn new() -> Hardware {
        Hardware { wait_started: Cell::new(None), timeout: HW_WAIT_TIMEOUT }
    }
}

impl Default for Hardware {
    fn default() -> Self {
        Hardware::new()
    }
}

impl Platform {
    /// Charge `n` host operations of kind `cost` (no-op on hardware).
    #[inline]
    pub fn charge(&self, cost: HostCost, n: u64) {
        if let Platform::Simulated(a) = self {
            a.charge(cost, n);
        }
    }

    /// Advance the simulated clock by `ps` picoseconds of host work that is
    /// not modelled otherwise (application computation). No-op on hardware.
    pub fn advance(&self, ps: u64) {
        if let Platform::Simulated(a) = self {
            a.clock.set(a.clock.get().saturating_add(ps));
        }
    }

    /// Called before reading device state that may be waited on.
    #[inline]
    pub fn observe(&self) -> Result<(), DriverError> {
        match self {
            Platform::Hardware(_) => Ok(()),
            Platform::Simulated(a) => a.observe(),
        }
    }

    /// Hand control to the simulator unconditionally and resume at this
    /// clock (no-op on hardware): afterwards every register reflects the
    /// device's view, including any host writes it has undone.
    pub fn sync(&self) -> Result<(), DriverError> {
        match self {
            Platform::Hardware(_) => Ok(()),
            Platform::Simulated(a) => a.yield_now(request::SYNC),
        }
    }

    /// A poll found nothing: let the device make progress. `watch` lists
    /// the slot offsets of the words the poll read (`None`: unknown); in
    /// simulation the wait ends only when the device writes one of them.
    pub fn idle(&self, watch: Option<&[(u32, u64)]>) -> Result<(), DriverError> {
        match self {
            Platform::Hardware(h) => {
                let start = match h.wait_started.get() {
                    Some(s) => s,
                    None => {
                        let now = Instant::now();
                        h.wait_started.set(Some(now));
                        now
                    }
                };
                if start.elapsed() > h.timeout {
                    h.wait_started.set(None);
                    return Err(DriverError::Timeout(h.timeout));
                }
                std::hint::spin_loop();
                Ok(())
            }
            Platform::Simulated(a) => {
                a.set_watch(watch);
                a.yield_now(request::WAIT)
            }
        }
    }

    /// A wait ended successfully.
    #[inline]
    pub fn progressed(&self) {
        if let Platform::Hardware(h) = self {
            h.wait_started.set(None);
        }
    }

    /// Commands `first..first+count` were just posted.
    #[inline]
    pub fn doorbell(&self, first: u64, count: u64) {
        if let Platform::Simulated(a) = self {
            a.doorbell(first, count);
        }
    }

    /// Simulated time in picoseconds (`None` on hardware).
    pub fn now_ps(&self) -> Option<u64> {
        match self {
            Platform::Hardware(_) => None,
            Platform::Simulated(a) => Some(a.clock.get()),
        }
    }

    /// How many of each host cost this process has charged (simulation only).
    pub fn cost_counts(&self) -> Option<[u64; COST_SLOTS]> {
        match self {
            Platform::Hardware(_) => None,
            Platform::Simulated(a) => Some(std::array::from_fn(|i| a.counts[i].get())),
        }
    }

    /// The cost of each kind of host operation in picoseconds (femtoseconds
    /// per byte for copies), from the simulator's host profile.
    pub fn cost_table(&self) -> Option<[u64; COST_SLOTS]> {
        match self {
            Platform::Hardware(_) => None,
            Platform::Simulated(a) => Some(a.costs),
        }
    }
}

/// A process attached to the simulator as an actor.
pub struct SimActor {
    ctl: Mapping,
    index: usize,
    clock: Cell<u64>,
    horizon: Cell<u64>,
    costs: [u64; COST_SLOTS],
    counts: [Cell<u64>; COST_SLOTS],
    detached: Cell<bool>,
}

fn gone(msg: &str) -> DriverError {
    DriverError::SimulatorGone(msg.to_string())
}

fn model_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    if pid == std::process::id() {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

impl SimActor {
    /// Attach to the simulator whose control file is in `dir`, driving
    /// `(node, slot)`. With `index`, take that actor record (e.g. the MPI
    /// rank) so the schedule does not depend on start-up order.
    pub fn attach(dir: &Path, node: u16, slot: u16, index: Option<u32>) -> Result<SimActor, DriverError> {
        let path = dir.join(simctl::FILE_NAME);
        let ctl = Mapping::open(&path, 0, simctl::file_size(MAX_ACTORS)).map_err(|e| gone(&e.to_string()))?;
        let deadline = Instant::now() + ATTACH_TIMEOUT;
        let header = ctl.block::<CtlHeader>(0).map_err(|e| gone(&e.to_string()))?;
        while header.magic.load(SeqCst) != simctl::MAGIC || header.flags.load(SeqCst) & simctl::flags::READY == 0 {
            if Instant::now() > deadline {
                return Err(gone("the control file never became ready"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if header.version.load(SeqCst) != simctl::VERSION {
            return Err(DriverError::Incompatible {
                path: path.display().to_string(),
                reason: format!(
                    "control file version {} (driver speaks {})",
                    header.version.load(SeqCst),
                    simctl::VERSION
                ),
            });
        }
        if header.flags.load(SeqCst) & simctl::flags::SHUTDOWN != 0 {
            return Err(DriverError::Shutdown);
        }
        let mut costs = [0u64; COST_SLOTS];
        for (c, v) in costs.iter_mut().zip(header.costs.iter()) {
            *c = v.load(SeqCst);
        }

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
        let claimable = |r: &ActorRecord| matches!(r.state.load(SeqCst), state::FREE | state::EXITED | state::DEAD);
        let chosen = match index {
            Some(i) if (i as usize) < MAX_ACTORS => {
                let r = ctl.block::<ActorRecord>(simctl::actor_offset(i as usize)).map_err(|e| gone(&e.to_string()))?;
                claimable(r).then_some(i as usize)
            }
            Some(_) => None,
            None => (0..MAX_ACTORS)
                .find(|&i| ctl.block::<ActorRecord>(simctl::actor_offset(i)).map(claimable).unwrap_or(false)),
        };
        let Some(idx) = chosen else {
            header.attach_lock.store(0, SeqCst);
            return Err(DriverError::AttachRefused(match index {
                Some(i) => format!("actor record {i} is in use or out of range"),
                None => "no free actor record".into(),
            }));
        };
        let rec = ctl.block::<ActorRecord>(simctl::actor_offset(idx)).map_err(|e| gone(&e.to_string()))?;
        rec.node.store(node as u32, SeqCst);
        rec.slot.store(slot as u32, SeqCst);
        rec.pid.store(me, SeqCst);
        rec.result.store(result::OK, SeqCst);
        for t in &rec.db_time {
            t.store(0, SeqCst);
        }
        let go = rec.go.load(SeqCst);
        rec.state.store(state::ATTACHING, SeqCst);
        header.attach_lock.store(0, SeqCst);
        header.attach_seq.fetch_add(1, SeqCst);
        handoff::wake(&header.model_go, &header.model_sleeping);

        let actor = SimActor {
            ctl,
            index: idx,
            clock: Cell::new(0),
            horizon: Cell::new(0),
            costs,
            counts: Default::default(),
            detached: Cell::new(false),
        };
        actor.wait_grant(go)?;
        Ok(actor)
    }

    fn header(&self) -> &CtlHeader {
        self.ctl.block::<CtlHeader>(0).expect("mapped at attach")
    }

    fn record(&self) -> &ActorRecord {
        self.ctl.block::<ActorRecord>(simctl::actor_offset(self.index)).expect("mapped at attach")
    }

    #[inline]
    fn charge(&self, cost: HostCost, n: u64) {
        let per = self.costs[cost as usize];
        let c = &self.counts[cost as usize];
        c.set(c.get() + n);
        // Saturating: a profile may hold absurd but valid costs.
        let total = per.saturating_mul(n);
        let add = if cost == HostCost::CopyByte { total.div_ceil(1000) } else { total };
        self.clock.set(self.clock.get().saturating_add(add));
    }

    #[inline]
    fn observe(&self) -> Result<(), DriverError> {
        if self.clock.get() > self.horizon.get() {
            self.yield_now(request::SYNC)
        } else {
            Ok(())
        }
    }

    fn set_watch(&self, watch: Option<&[(u32, u64)]>) {
        let rec = self.record();
        match watch {
            Some(words) if words.len() <= MAX_WATCH && !words.is_empty() => {
                for ((slot, val), (w, v)) in rec.watch.iter().zip(rec.watch_val.iter()).zip(words) {
                    slot.store(*w, SeqCst);
                    val.store(*v, SeqCst);
                }
                rec.watch_count.store(words.len() as u32, SeqCst);
            }
            _ => rec.watch_count.store(0, SeqCst),
        }
    }

    fn doorbell(&self, first: u64, count: u64) {
        let rec = self.record();
        let now = self.clock.get();
        for seq in first..first + count {
            rec.db_time[seq as usize % CQ_DEPTH].store(now, SeqCst);
        }
    }

    /// Hand control to the model and wait to be scheduled again.
    pub fn yield_now(&self, req: u32) -> Result<(), DriverError> {
        if self.detached.get() {
            return Err(DriverError::Shutdown);
        }
        let header = self.header();
        if header.flags.load(SeqCst) & simctl::flags::SHUTDOWN != 0 {
            return Err(DriverError::Shutdown);
        }
        let rec = self.record();
        rec.clock.store(self.clock.get(), SeqCst);
        rec.request.store(req, SeqCst);
        let go = rec.go.load(SeqCst);
        rec.state.store(state::YIELDED, SeqCst);
        handoff::wake(&header.model_go, &header.model_sleeping);
        if req == request::DETACH {
            self.detached.set(true);
            return Ok(());
        }
        self.wait_grant(go)
    }

    fn wait_grant(&self, go: u32) -> Result<(), DriverError> {
        let header = self.header();
        let rec = self.record();
        loop {
            if handoff::wait_change(&rec.go, &rec.sleeping, go, handoff::SPIN_ACTOR, Some(Duration::from_millis(250))) {
                break;
            }
            if !model_alive(header.model_pid.load(SeqCst)) {
                return Err(gone("the simulator process exited"));
            }
        }
        self.clock.set(rec.clock.load(SeqCst));
        self.horizon.set(rec.horizon.load(SeqCst));
        match rec.result.load(SeqCst) {
            result::OK => Ok(()),
            result::DEADLOCK => Err(DriverError::Deadlock {
                message: simctl::load_str(&header.message),
                packets_held: header.flags.load(SeqCst) & simctl::flags::PACKETS_HELD != 0,
            }),
            result::SHUTDOWN => {
                self.detached.set(true);
                Err(DriverError::Shutdown)
            }
            result::REFUSED => {
                self.detached.set(true);
                Err(DriverError::AttachRefused(simctl::load_str(&header.message)))
            }
            other => Err(gone(&format!("unknown scheduler result {other}"))),
        }
    }

    /// Leave the simulation (also done on drop).
    pub fn detach(&self) {
        if !self.detached.get() {
            let _ = self.yield_now(request::DETACH);
            self.detached.set(true);
        }
    }
}

impl Drop for SimActor {
    fn drop(&mut self) {
        self.detach();
    }
}
