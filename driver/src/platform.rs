//! What differs between the real card and the simulator: nothing in the
//! register protocol, only time. On hardware, waiting means spinning on
//! uncached reads and costs are real. In simulation the process is an
//! *actor* of the simulator (DESIGN §3): it charges host costs from the
//! profile to its simulated clock, hands control to the model when a poll
//! finds nothing, and records when it rang each doorbell.

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use fpga_regs::ur::CQ_DEPTH;
use simlink::actor::{ActorEnd, ActorError};
use simlink::simctl::{HostCost, Watch, YieldRequest, COST_SLOTS};

use crate::error::DriverError;

pub use simlink::actor::ATTACH_TIMEOUT;

/// What a read of the slot is about to look at: in simulation, whether the
/// process's own recent doorbells could have changed it (see
/// [`Platform::before_read`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watched {
    /// A UR register other than a completion entry (counters, status, errors).
    UrRegister,
    /// Completion entry `seq % CQ_DEPTH`.
    Completion(usize),
    /// LLCM (ring pointers, scratch).
    Llcm,
    /// PW.
    Pw,
    /// WW (only the host writes it).
    Ww,
}

/// Which of its issuer's own words a posted command may change: every
/// command moves the UR counters, status and its completion entry; some
/// also deposit into the issuer's PW or append to one of its rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effects {
    /// The completion entry (`seq % CQ_DEPTH`).
    pub entry: usize,
    /// It may write the issuer's LLCM (an IVS to itself).
    pub llcm: bool,
    /// It may write the issuer's PW (VL, RVL, a BOTF RVL request).
    pub pw: bool,
}

impl Effects {
    /// Anything in the slot (an unknown or malformed command).
    pub fn anything(seq: u64) -> Effects {
        Effects { entry: seq as usize % CQ_DEPTH, llcm: true, pw: true }
    }
}

/// The earliest clock (inclusive bound) at which a read of each kind of word
/// must first hand over, because of doorbells the model has not seen yet.
struct OwnLimits {
    ur: Cell<u64>,
    entries: [Cell<u64>; CQ_DEPTH],
    llcm: Cell<u64>,
    pw: Cell<u64>,
}

impl OwnLimits {
    fn new() -> OwnLimits {
        OwnLimits {
            ur: Cell::new(u64::MAX),
            entries: std::array::from_fn(|_| Cell::new(u64::MAX)),
            llcm: Cell::new(u64::MAX),
            pw: Cell::new(u64::MAX),
        }
    }

    fn reset(&self) {
        self.ur.set(u64::MAX);
        for e in &self.entries {
            e.set(u64::MAX);
        }
        self.llcm.set(u64::MAX);
        self.pw.set(u64::MAX);
    }

    fn cut(cell: &Cell<u64>, limit: u64) {
        cell.set(cell.get().min(limit));
    }

    fn get(&self, what: Watched) -> u64 {
        match what {
            Watched::UrRegister => self.ur.get(),
            Watched::Completion(i) => self.entries[i % CQ_DEPTH].get(),
            Watched::Llcm => self.llcm.get(),
            Watched::Pw => self.pw.get(),
            Watched::Ww => u64::MAX,
        }
    }
}

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
    /// How long one wait may spin; `None` (the default): for ever. A peer
    /// that computes for minutes is normal in MPI, and a hung peer is for
    /// the launcher or the transport to report, so MPI waits never time
    /// out here; tools that drive a card directly may set a limit.
    timeout: Cell<Option<Duration>>,
    /// The clock the timeout is measured on (a fake one in tests).
    clock: Box<dyn Fn() -> Instant + Send>,
    /// Empty polls so far: every [`YIELD_EVERY`]th gives the CPU away.
    spins: Cell<u32>,
}

/// Empty polls between two `sched_yield`s on a card. A card answers in
/// about a microsecond, so a poll loop that found nothing this many times
/// (some tens of microseconds) is waiting for another process — the
/// peer, or the device model of `dimmnet-sim serve --realtime` — and on an
/// oversubscribed host (more busy processes than CPUs) spinning on would
/// keep that process off the CPU for a whole time slice: measured with a
/// 2-rank ping-pong on 2 CPUs against the real-time model, 6.4 ms one way
/// without the yield.
const YIELD_EVERY: u32 = 256;

impl Hardware {
    /// A hardware platform whose waits never time out.
    pub fn new() -> Hardware {
        Hardware { timeout: Cell::new(None), clock: Box::new(Instant::now), spins: Cell::new(0) }
    }
}

/// When a wait started, for its own timeout (each wait has its own: time
/// spent in earlier waits never counts against a later one).
#[derive(Clone, Copy, Debug)]
pub struct WaitStart(Option<Instant>);

impl WaitStart {
    /// A wait that never times out (also what the simulator uses).
    pub const UNBOUNDED: WaitStart = WaitStart(None);
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

    /// About to read a word of kind `what`. In simulation, hand over first if
    /// the clock passed the horizon or the earliest time at which one of this
    /// process's own unreported doorbells could have changed such a word, so
    /// that every read sees the device exactly as of this process's clock
    /// (DESIGN §3, conservative). No-op on hardware.
    #[inline]
    pub fn before_read(&self, what: Watched) -> Result<(), DriverError> {
        match self {
            Platform::Hardware(_) => Ok(()),
            Platform::Simulated(a) => a.before_read(what),
        }
    }

    /// Whether a read of `what` now would first hand over (see
    /// [`Platform::before_read`]); always `false` on hardware.
    #[inline]
    pub fn read_needs_sync(&self, what: Watched) -> bool {
        match self {
            Platform::Hardware(_) => false,
            Platform::Simulated(a) => a.clock.get() > a.horizon_for(what).min(a.own.get(what)),
        }
    }

    /// Hand control to the simulator unconditionally and resume at this
    /// clock (no-op on hardware): afterwards every register reflects the
    /// device's view, including any host writes it has undone.
    pub fn sync(&self) -> Result<(), DriverError> {
        match self {
            Platform::Hardware(_) => Ok(()),
            Platform::Simulated(a) => a.yield_now(YieldRequest::Sync),
        }
    }

    /// Set (or with `None`, remove) the hardware wait timeout; see
    /// [`Hardware`]. Simulated waits never time out (the simulator reports
    /// deadlocks instead).
    pub fn set_wait_timeout(&self, timeout: Option<Duration>) {
        if let Platform::Hardware(h) = self {
            h.timeout.set(timeout);
        }
    }

    /// Measure hardware wait timeouts on `clock` instead of the system's
    /// (tests of the timeout on a plain file).
    #[doc(hidden)]
    pub fn set_wait_clock(&mut self, clock: Box<dyn Fn() -> Instant + Send>) {
        if let Platform::Hardware(h) = self {
            h.clock = clock;
        }
    }

    /// A wait begins: what [`Platform::idle`] measures its timeout from.
    pub fn wait_start(&self) -> WaitStart {
        match self {
            Platform::Hardware(h) if h.timeout.get().is_some() => WaitStart(Some((h.clock)())),
            _ => WaitStart::UNBOUNDED,
        }
    }

    /// A poll found nothing: let the device make progress. `watch` says
    /// what the poll read; in simulation the wait ends only when the device
    /// writes one of those words (or, for [`Watch::ChangeSince`], anything
    /// in the slot after that epoch). On hardware it spins once, and fails
    /// with `Timeout` when the wait that began at `start` has lasted longer
    /// than the timeout.
    pub fn idle(&self, watch: Watch<'_>, start: WaitStart) -> Result<(), DriverError> {
        match self {
            Platform::Hardware(h) => {
                if let (Some(t0), Some(limit)) = (start.0, h.timeout.get()) {
                    if (h.clock)().saturating_duration_since(t0) > limit {
                        return Err(DriverError::Timeout(limit));
                    }
                }
                let spins = h.spins.get().wrapping_add(1);
                h.spins.set(spins);
                if spins % YIELD_EVERY == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                Ok(())
            }
            Platform::Simulated(a) => {
                a.end.set_watch(watch)?;
                a.yield_now(YieldRequest::Wait)
            }
        }
    }

    /// Command `seq` was just posted; `effects` says which of this
    /// process's own words it may change.
    #[inline]
    pub fn doorbell(&self, seq: u64, effects: Effects) {
        if let Platform::Simulated(a) = self {
            a.doorbell(seq, effects);
        }
    }

    /// The slot's epoch in simulation (see `simlink::simctl::ActorRecord::epoch`):
    /// every device read made now sees the slot as of it. 0 on hardware.
    #[inline]
    pub fn epoch(&self) -> u64 {
        match self {
            Platform::Hardware(_) => 0,
            Platform::Simulated(a) => a.epoch.get(),
        }
    }

    /// See [`crate::Device::poker`].
    pub fn poker(&self) -> Result<Option<simlink::actor::Poker>, DriverError> {
        match self {
            Platform::Hardware(_) => Ok(None),
            Platform::Simulated(a) => Ok(Some(a.end.poker()?)),
        }
    }

    /// In simulation, have the model expect `count` more actors, beginning
    /// at this process's clock ([`simlink::actor::ActorEnd::expect_actors`]);
    /// on hardware there is no schedule to tell.
    pub fn expect_actors(&self, count: u32) {
        if let Platform::Simulated(a) = self {
            a.end.expect_actors(count, a.clock.get());
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

/// A process attached to the simulator as an actor: the actor end of the
/// hand-off protocol ([`simlink::actor`]) plus this process's simulated
/// clock and host-cost accounting.
pub struct SimActor {
    end: ActorEnd,
    clock: Cell<u64>,
    horizon: Cell<u64>,
    /// See `ActorRecord::ur_horizon`.
    regions: Cell<simlink::model::RegionHorizons>,
    /// See `CtlHeader::doorbell_lookahead`.
    lookahead: u64,
    /// From the last grant: see `ActorRecord::reach`.
    reach: Cell<u64>,
    /// From the last grant: see `ActorRecord::epoch`.
    epoch: Cell<u64>,
    /// Read limits from doorbells rung since the last grant.
    own: OwnLimits,
    costs: [u64; COST_SLOTS],
    counts: [Cell<u64>; COST_SLOTS],
}

impl From<ActorError> for DriverError {
    fn from(e: ActorError) -> DriverError {
        match e {
            ActorError::Gone(m) => DriverError::SimulatorGone(m),
            ActorError::Incompatible { path, found, expected } => DriverError::Incompatible {
                path: path.display().to_string(),
                reason: format!("control file version {found} (driver speaks {expected})"),
            },
            ActorError::Shutdown => DriverError::Shutdown,
            ActorError::Refused(m) => DriverError::AttachRefused(m),
            ActorError::Deadlock { message, packets_held } => DriverError::Deadlock { message, packets_held },
            e @ ActorError::WatchTooLong { .. } => DriverError::Invalid(e.to_string()),
        }
    }
}

impl SimActor {
    /// Attach to the simulator whose control file is in `dir`, driving
    /// `(node, slot)`. With `index`, take that actor record (e.g. the MPI
    /// rank) so the schedule does not depend on start-up order.
    pub fn attach(dir: &Path, node: u16, slot: u16, index: Option<u32>) -> Result<SimActor, DriverError> {
        let (end, grant) = ActorEnd::attach(dir, node, slot, index)?;
        Ok(SimActor {
            lookahead: end.lookahead(),
            reach: Cell::new(grant.reach),
            epoch: Cell::new(grant.epoch),
            costs: end.costs(),
            end,
            clock: Cell::new(grant.clock),
            horizon: Cell::new(grant.horizon),
            regions: Cell::new(grant.regions),
            own: OwnLimits::new(),
            counts: Default::default(),
        })
    }

    #[inline]
    fn charge(&self, cost: HostCost, n: u64) {
        let per = self.costs[cost as usize];
        let c = &self.counts[cost as usize];
        c.set(c.get() + n);
        // Saturating: a profile may hold absurd but valid costs.
        let total = per.saturating_mul(n);
        let add = if cost.per_byte() { total.div_ceil(1000) } else { total };
        self.clock.set(self.clock.get().saturating_add(add));
    }

    /// Start of a poll round or after computing: hand over if the clock
    /// passed the horizon, or passed the earliest time at which one of this
    /// process's own unreported doorbells could come back to it through
    /// another process: the command acts `lookahead` after it was rung,
    /// reaches a waiting peer a hop later, and the peer's answer needs its
    /// own `lookahead` and hop (`rung + 2·(lookahead + reach)`; the words
    /// the command itself changes are bounded per read). The model learns of
    /// a doorbell only at a hand-over, so a process that rang one (a send)
    /// and then computes and polls would otherwise run on for ever while its
    /// peers wait for that send; a process that waits soon after (a
    /// ping-pong) pays no extra hand-over.
    #[inline]
    fn observe(&self) -> Result<(), DriverError> {
        let back = self.lookahead.saturating_add(self.reach.get().saturating_mul(2));
        if self.clock.get() > self.horizon.get().min(self.own.ur.get().saturating_add(back)) {
            self.yield_now(YieldRequest::Sync)
        } else {
            Ok(())
        }
    }

    /// The horizon of the last grant for reads of `what`: each region has
    /// its own (the slot's own pending events bound only the regions they
    /// write).
    #[inline]
    fn horizon_for(&self, what: Watched) -> u64 {
        let r = self.regions.get();
        match what {
            Watched::UrRegister | Watched::Completion(_) => r.ur,
            Watched::Llcm => r.llcm,
            Watched::Pw => r.pw,
            Watched::Ww => u64::MAX,
        }
    }

    #[inline]
    fn before_read(&self, what: Watched) -> Result<(), DriverError> {
        if self.clock.get() > self.horizon_for(what).min(self.own.get(what)) {
            self.yield_now(YieldRequest::Sync)
        } else {
            Ok(())
        }
    }

    /// Record when command `seq` was rung, and bound the reads it could
    /// affect: the model learns of a doorbell only when this actor yields,
    /// and the device may act on it `lookahead` after it was rung, so a read
    /// of an affected word at or past that time hands over first. Without
    /// this, a process that rings and then only polls (no blocking wait)
    /// would never hand over, and one that polls a moment later would see a
    /// stale word. Words the command cannot touch (the issuer's rings, after
    /// an IVS to a peer) stay readable, so a send followed by a receive does
    /// not cost an extra hand-off.
    fn doorbell(&self, seq: u64, effects: Effects) {
        let now = self.clock.get();
        self.end.record_doorbell(seq, now);
        let limit = now.saturating_add(self.lookahead).saturating_sub(1);
        OwnLimits::cut(&self.own.ur, limit);
        OwnLimits::cut(&self.own.entries[effects.entry % CQ_DEPTH], limit);
        if effects.llcm {
            OwnLimits::cut(&self.own.llcm, limit);
        }
        if effects.pw {
            OwnLimits::cut(&self.own.pw, limit);
        }
    }

    /// Hand control to the model and wait to be scheduled again.
    pub fn yield_now(&self, req: YieldRequest) -> Result<(), DriverError> {
        let r = self.end.yield_now(self.clock.get(), req);
        if matches!(r, Ok(Some(_)) | Err(ActorError::Deadlock { .. })) {
            // Also after a deadlock report: the grant moved the clock.
            let g = self.end.last_grant();
            self.clock.set(g.clock);
            self.horizon.set(g.horizon);
            self.regions.set(g.regions);
            self.reach.set(g.reach);
            self.epoch.set(g.epoch);
            // The model has seen every doorbell rung before this grant.
            self.own.reset();
        }
        r.map(|_| ()).map_err(DriverError::from)
    }

    /// Leave the simulation (also done on drop).
    pub fn detach(&self) {
        self.end.detach(self.clock.get());
    }
}

impl Drop for SimActor {
    fn drop(&mut self) {
        self.detach();
    }
}
