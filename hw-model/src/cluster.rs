//! A running simulated cluster: the node files, the control file, and the
//! scheduler that decides who runs (DESIGN §3).
//!
//! Exactly one party runs at a time, the model or one actor (a host process
//! attached to a slot). The next to run is always the lowest simulated
//! clock: pending device events before any actor whose clock is not earlier,
//! actors in `(clock, index)` order. An actor runs until it yields (`WAIT`:
//! its poll found nothing; `SYNC`: its clock passed the horizon it was given),
//! so every read it makes sees the device as of its own clock, and the whole
//! run is a deterministic function of the programs and their inputs — like
//! SimGrid's maestro. A waiting actor costs no simulated time: its clock
//! jumps to the event that wakes it. When nothing can run and nothing is in
//! flight while actors wait, the run is deadlocked and they are told so.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use fpga_regs::layout;
use fpga_regs::Peer;
use simlink::mmio::Mapping;
use simlink::model::{GrantTo, ModelEnd, Publish, RegionHorizons, Waiting};
use simlink::scheduler::{self, Bounds, Lookahead, Next, Party, ProgressWatch};
use simlink::simctl::{self, ActorState, CtlHeader, GrantResult, YieldRequest, MAX_ACTORS};

use crate::model::{Model, ModelConfig, ModelError, Stats, Touches};
use crate::profile::HostProfile;
use crate::time::SimTime;
use crate::trace::Trace;

mod stalls;

mod horizon;

/// What to build.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Directory for the node files and the control file (created if missing).
    pub dir: PathBuf,
    /// Nodes.
    pub nodes: u16,
    /// Slots per node.
    pub slots: u16,
    /// SO-DIMM partition per slot in bytes.
    pub partition_size: u64,
    /// Host profile.
    pub profile: HostProfile,
    /// Chrome trace output.
    pub trace: Option<PathBuf>,
    /// Number of actors the job expects. With a count, nobody runs until all
    /// have attached (so the schedule does not depend on start-up order), the
    /// run ends when all have detached, and deadlocks are reported.
    pub expected_actors: u32,
    /// How far ahead of other parties an actor may run (see [`LookaheadMode`]).
    pub lookahead: LookaheadMode,
    /// The trace's metadata (its `otherData`: how the job was run).
    pub trace_meta: Vec<(String, String)>,
    /// Pin the scheduler and every actor's hand-offs to this CPU
    /// (`simlink::affinity`): one party runs at a time, and a hand-off
    /// within one CPU costs a fraction of one across CPUs. `None`: not
    /// pinned, and the parties spin briefly instead.
    pub cpu: Option<usize>,
}

impl ClusterConfig {
    /// A cluster in `dir` with the default partition size and the `p4-2003` profile.
    pub fn new(dir: impl Into<PathBuf>, nodes: u16, slots: u16) -> ClusterConfig {
        ClusterConfig {
            dir: dir.into(),
            nodes,
            slots,
            partition_size: layout::DEFAULT_PARTITION_SIZE,
            profile: HostProfile::p4_2003(),
            trace: None,
            expected_actors: 0,
            lookahead: LookaheadMode::Full,
            trace_meta: Vec::new(),
            cpu: None,
        }
    }
}

/// How far ahead of the other parties an actor may run. Every mode is
/// conservative and gives the same simulated times and traces; they differ
/// only in how often actors hand over (the tests compare them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LookaheadMode {
    /// A packet's hop, and for LLCM the ring commit after it (the default).
    #[default]
    Full,
    /// A packet's hop only.
    Hop,
    /// None: no actor reads past another runnable actor's clock or another
    /// slot's next event (SimGrid's maestro order, one picosecond apart).
    None,
}

/// The words of `DN_SIM_LOOKAHEAD` and `dimmnet-sim --lookahead`.
impl dn_knobs::Choice for LookaheadMode {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("full", LookaheadMode::Full), ("hop", LookaheadMode::Hop), ("none", LookaheadMode::None)];
}

impl std::str::FromStr for LookaheadMode {
    type Err = dn_knobs::UnknownWord;
    fn from_str(s: &str) -> Result<Self, dn_knobs::UnknownWord> {
        dn_knobs::parse_choice("lookahead", s)
    }
}

/// The ranks of a job as user-level contexts of this process (DESIGN §3,
/// issue 46), instead of processes of their own: the cluster grants an
/// actor the token through the control file as always, then switches to
/// its context itself, and the actor's hand-back switches back (its
/// futex waits become switches: `simlink::contexts`).
pub trait Contexts {
    /// Run actor `actor`'s context, which was just granted the token,
    /// until it hands the token back or can run no more (it ended).
    fn resume(&mut self, actor: usize);
    /// Nothing can run: start a context that has not run yet (it runs
    /// until it attaches, or ends) and return `true`; `false` when there
    /// is none, and then the host has set the run's stop flag.
    fn idle(&mut self) -> bool;
}

/// Errors running a cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Building the model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Mapping the control file failed.
    #[error(transparent)]
    Map(#[from] simlink::mmio::MapError),
    /// File system error.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was attempted.
        what: &'static str,
        /// Path.
        path: String,
        /// OS error.
        source: std::io::Error,
    },
    /// The file system of the cluster's directory has no room for its files.
    #[error(
        "no room for the simulator's files in {dir}: they need at least {need} bytes, {have} are free there \
         (a full /dev/shm: look with `df -h /dev/shm`, remove stale dnrun-* and dimmnet-* entries, or run fewer nodes)"
    )]
    NoRoom {
        /// The cluster's directory.
        dir: String,
        /// Bytes its files take.
        need: u64,
        /// Bytes free in its file system.
        have: u64,
    },
    /// The directory already holds a running cluster.
    #[error("{0} already holds a simulator control file; another simulator may be using it (remove the directory if it is stale)")]
    Busy(String),
}

/// How a run ended.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunReport {
    /// Simulated time of the last event or actor action.
    pub sim_time_ps: u64,
    /// Device statistics.
    pub stats: Stats,
    /// Actor grants (scheduler hand-offs).
    pub grants: u64,
    /// Hand-backs because the actor's clock passed its horizon (`Sync`).
    pub syncs: u64,
    /// Hand-backs with nothing to do that went to sleep (`Wait`).
    pub waits: u64,
    /// `Wait`s that ended at once: a watched word had already changed.
    pub waits_changed: u64,
    /// Deadlocks reported.
    pub deadlocks: u64,
    /// Actors that died without detaching.
    pub dead_actors: Vec<u32>,
    /// Trace events written.
    pub trace_events: u64,
}

impl RunReport {
    /// The one-line summary `dimmnet-sim serve` prints at the end (and
    /// `dnrun -v` passes on): simulated time, events, grants.
    pub fn summary(&self) -> String {
        format!(
            "done at {:.3} us simulated; {} events, {} commands, {} errors, {} packets, {} deadlocks, {} scheduler grants ({} at the horizon, {} waits, {} waits already over), {} device schedules",
            self.sim_time_ps as f64 / 1e6,
            self.stats.events,
            self.stats.commands,
            self.stats.errors,
            self.stats.packets,
            self.deadlocks,
            self.grants,
            self.syncs,
            self.waits,
            self.waits_changed,
            self.stats.schedules
        )
    }
}

/// The scheduler's view of one actor record.
#[derive(Clone, Debug)]
struct Actor {
    /// `Free`, `Runnable`, `Waiting`, `Exited` or `Dead` (the model-side states).
    state: ActorState,
    node: u16,
    slot: u16,
    pid: u32,
    clock: SimTime,
    grant_clock: SimTime,
    /// Result to hand over at the next grant.
    pending_result: GrantResult,
    /// Words a waiting actor watches, sorted (empty: any change wakes it).
    watch: Vec<u32>,
    /// The regions of those words ([`Touches`] bits; all, for any change).
    watch_regions: u8,
}

impl Party for Actor {
    fn state(&self) -> ActorState {
        self.state
    }
    fn clock(&self) -> u64 {
        self.clock.0
    }
}

impl Actor {
    /// Whether a device write to `touch` (in this actor's slot) ends its wait.
    fn woken_by(&self, touch: &crate::model::Touch) -> bool {
        if self.watch.is_empty() {
            return true;
        }
        // The first watched word that ends past the touch's start.
        let first = self.watch.partition_point(|w| w.saturating_add(8) <= touch.off);
        self.watch.get(first).is_some_and(|w| touch.covers(*w))
    }

    /// Wait on `words` (sorted here), or on any change when empty.
    fn set_watch(&mut self, words: impl Iterator<Item = u32>) {
        self.watch.clear();
        self.watch.extend(words);
        self.watch.sort_unstable();
        self.watch.dedup();
        self.watch_regions = if self.watch.is_empty() {
            Touches::REGIONS.iter().fold(0, |m, r| m | r.bits())
        } else {
            self.watch.iter().fold(0, |m, w| m | Touches::of_word(*w).bits())
        };
    }

    const FREE: Actor = Actor {
        state: ActorState::Free,
        node: 0,
        slot: 0,
        pid: 0,
        clock: SimTime::ZERO,
        grant_clock: SimTime::ZERO,
        pending_result: GrantResult::Ok,
        watch: Vec::new(),
        watch_regions: 0b111,
    };
}

/// A cluster: files plus scheduler.
pub struct Cluster {
    cfg: ClusterConfig,
    model: Model,
    /// The model end of the control file.
    ctl: ModelEnd,
    /// Scheduler state of every record admitted so far (index = record).
    /// Change an actor's state or clock only through [`Cluster::transition`],
    /// which keeps the indexes below in step.
    actors: Vec<Actor>,
    /// Per node, its lowest runnable actor's `(clock, index)`: the lowest
    /// of all is the root, the lowest of another node a walk up one path.
    runnable: crate::order::Order,
    /// How many actors wait.
    waiting: usize,
    /// Live (runnable or waiting) actors per node.
    live_on_node: Vec<u32>,
    /// Live actors in all.
    live: u32,
    /// The shortest hops between slots (see [`Model::hop`]): the lookahead
    /// of UR (and PW) reads.
    hops: Lookahead,
    /// The lookahead of LLCM reads: a hop plus [`Model::ring_latency`].
    ring_hops: Lookahead,
    /// How soon a woken actor can act on anyone else ([`Model::wake_latency`]).
    wake: u64,
    /// Per node: the earliest time an event at one of its slots may reach
    /// another slot ([`Cluster::slot_reach`]); the nodes ordered by it.
    node_reach: Vec<Option<u64>>,
    nodes_by_reach: crate::order::Order,
    /// Nodes whose reach may have changed; scratch for the model's list.
    stale_nodes: Vec<u16>,
    /// Per node: already refreshed in this pass of [`Cluster::refresh_reach`].
    stale_seen: Vec<bool>,
    changed_slots: Vec<Peer>,
    /// Scratch for [`Model::swap_touched`].
    touched: Vec<crate::model::Touch>,
    /// Scratch for the words of a wait ([`ModelEnd::yielded`]).
    watch_words: Vec<(u32, u64)>,
    by_slot: Vec<Option<usize>>,
    /// Device writes to each slot so far (by source index): the epoch
    /// published with each grant (`ActorRecord::epoch`).
    epochs: Vec<u64>,
    attached_ever: u32,
    /// Whether every expected actor had attached once: actors expected
    /// after that were spawned, and begin at [`simlink::model::ModelEnd::admit_clock`].
    started_once: bool,
    grants: u64,
    syncs: u64,
    waits: u64,
    waits_changed: u64,
    deadlocks: u64,
    dead: Vec<u32>,
    created_dir: bool,
    files: Vec<PathBuf>,
    last_time: SimTime,
    /// Livelock detection (see [`LIVELOCK_WINDOW`]).
    progress: ProgressWatch,
    /// Since when every live actor has waited with nothing in flight while
    /// some of them may still be poked (see [`scheduler::report_stall`]).
    stalled_since: Option<std::time::Instant>,
}

/// A run in which commands complete for this long in simulated time, at
/// least [`LIVELOCK_COMMANDS`] of them, without moving a byte, is
/// livelocked (for example a sender retrying a zero-length write for ever),
/// and is reported like a deadlock.
pub const LIVELOCK_WINDOW: SimTime = SimTime(10_000_000_000);
/// See [`LIVELOCK_WINDOW`].
pub const LIVELOCK_COMMANDS: u64 = 10_000;

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ClusterError + 'a {
    move |source| ClusterError::Io { what, path: path.display().to_string(), source }
}

/// A record's process is alive (an unset pid counts as alive: the record
/// is being filled in; this process is alive).
fn pid_alive(pid: u32) -> bool {
    pid == 0 || pid == std::process::id() || simlink::process::alive(pid)
}

impl Cluster {
    /// Create the files and initialise the device and the control file.
    pub fn create(cfg: ClusterConfig) -> Result<Cluster, ClusterError> {
        let model_cfg = ModelConfig {
            nodes: cfg.nodes,
            slots: cfg.slots,
            partition_size: cfg.partition_size,
            timing: cfg.profile.device.clone(),
        };
        model_cfg.validate()?;
        if cfg.expected_actors as usize > MAX_ACTORS {
            return Err(ModelError::Shape(format!("at most {MAX_ACTORS} actors")).into());
        }
        let created_dir = !cfg.dir.exists();
        {
            // Its files hold every rank's data: the owner's alone (0700),
            // created so.
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&cfg.dir)
                .map_err(io("cannot create directory", &cfg.dir))?;
        }
        // Whatever this start-up creates is removed again if it fails part-way.
        let mut created = crate::files::Created::new();
        if created_dir {
            created.dir(cfg.dir.clone());
        }
        let ctl_path = cfg.dir.join(simctl::FILE_NAME);
        if ctl_path.exists() {
            if let Ok(old) = Mapping::open(&ctl_path, 0, 4096) {
                if let Ok(h) = old.block::<CtlHeader>(0) {
                    let pid = h.model_pid.load(SeqCst);
                    if h.magic.load(SeqCst) == simctl::MAGIC && pid != 0 && pid_alive(pid) && pid != std::process::id()
                    {
                        return Err(ClusterError::Busy(cfg.dir.display().to_string()));
                    }
                }
            }
        }
        // The node files are touched whole; of the control file, its header,
        // the first page of every record (publishing marks each free) and
        // the records of the actors the job has. Counted low rather than
        // high: a job that fits must never be refused.
        let page = 4096u64;
        let ctl = simctl::file_size(0) as u64
            + MAX_ACTORS as u64 * page
            + cfg.expected_actors as u64 * (simctl::RECORD_SIZE as u64 - page);
        let need = (cfg.nodes as u64) * layout::node_mmio_size(cfg.slots as usize) as u64 + ctl;
        let have = crate::files::free_bytes(&cfg.dir).map_err(io("cannot look at the free space of", &cfg.dir))?;
        if have < need {
            return Err(ClusterError::NoRoom { dir: cfg.dir.display().to_string(), need, have });
        }
        let mut model = Model::create(model_cfg, &cfg.dir)?;
        for n in 0..cfg.nodes {
            created.adopt(cfg.dir.join(simctl::node_file_name(n)));
        }
        if let Some(path) = &cfg.trace {
            let t = Trace::create(path, cfg.nodes, cfg.slots).map_err(io("cannot create trace", path))?;
            model.set_trace(t);
        }
        let doorbell_lookahead = cfg.profile.device.cycles(cfg.profile.device.fetch_cycles.max(1));
        let (same, other) = model.hops();
        let (same, other, ring) = match cfg.lookahead {
            LookaheadMode::Full => (same.0, other.0, model.ring_latency().0),
            LookaheadMode::Hop => (same.0, other.0, 0),
            LookaheadMode::None => (1, 1, 0),
        };
        let hops = Lookahead::new(same, other, same, other);
        let ring_hops = Lookahead::new(same + ring, other + ring, same, other);
        let wake = if cfg.lookahead == LookaheadMode::None { 0 } else { model.wake_latency().0 };
        let size = simctl::file_size(MAX_ACTORS);
        let file = created.file(&ctl_path).map_err(io("cannot create", &ctl_path))?;
        file.set_len(size as u64).map_err(io("cannot size", &ctl_path))?;
        let ctl = ModelEnd::publish(
            Mapping::map(&file, &ctl_path, 0, size)?,
            &Publish {
                nodes: cfg.nodes,
                slots: cfg.slots,
                expected_actors: cfg.expected_actors,
                doorbell_lookahead: doorbell_lookahead.0,
                costs: cfg.profile.cost_table(),
                profile_name: &cfg.profile.name,
                cpu: cfg.cpu.and_then(|c| u32::try_from(c).ok()),
            },
        )?;
        let by_slot = vec![None; cfg.nodes as usize * cfg.slots as usize];
        let epochs = vec![0; by_slot.len()];
        let live_on_node = vec![0; cfg.nodes as usize];
        let node_reach = vec![None; cfg.nodes as usize];
        let nodes_cap = cfg.nodes as usize;
        // Open-ended jobs may grow to every record.
        let files = created.keep();
        Ok(Cluster {
            cfg,
            model,
            ctl,
            actors: Vec::new(),
            runnable: crate::order::Order::new(nodes_cap),
            waiting: 0,
            live_on_node,
            live: 0,
            hops,
            ring_hops,
            wake,
            node_reach,
            nodes_by_reach: crate::order::Order::new(nodes_cap),
            stale_nodes: Vec::new(),
            stale_seen: vec![false; nodes_cap],
            changed_slots: Vec::new(),
            touched: Vec::new(),
            watch_words: Vec::new(),
            by_slot,
            epochs,
            attached_ever: 0,
            started_once: false,
            grants: 0,
            syncs: 0,
            waits: 0,
            waits_changed: 0,
            deadlocks: 0,
            dead: Vec::new(),
            created_dir,
            files,
            last_time: SimTime::ZERO,
            progress: ProgressWatch::new(LIVELOCK_WINDOW.0, LIVELOCK_COMMANDS),
            stalled_since: None,
        })
    }

    /// The cluster directory.
    pub fn dir(&self) -> &Path {
        &self.cfg.dir
    }

    /// The device model (for inspection after or between runs).
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Mutable access to the model (test set-up).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Run until `stop` is set or, with an expected actor count, until every
    /// expected actor has attached and left.
    pub fn run(&mut self, stop: &AtomicBool) -> Result<RunReport, ClusterError> {
        self.run_with(stop, None)
    }

    /// [`Cluster::run`] with the actors as `contexts` of this process, when
    /// given (see [`Contexts`]).
    pub fn run_with(
        &mut self,
        stop: &AtomicBool,
        mut contexts: Option<&mut (dyn Contexts + '_)>,
    ) -> Result<RunReport, ClusterError> {
        if let Some(cpu) = self.cfg.cpu {
            simlink::affinity::pin_current_thread(cpu).map_err(|source| ClusterError::Io {
                what: "cannot pin the scheduler to CPU",
                path: cpu.to_string(),
                source,
            })?;
        }
        loop {
            if stop.load(SeqCst) {
                self.shutdown();
                break;
            }
            self.admit();
            if self.job_finished() {
                break;
            }
            if self.ctl.poked() {
                self.wake_poked();
            }
            self.ctl.publish_progress(self.last_time.0, self.model.stats().events);
            // An actor that spawns processes raises the count (MPI 4.1 §11.8).
            self.cfg.expected_actors = self.ctl.expected_actors();
            let started = self.cfg.expected_actors == 0 || self.attached_ever >= self.cfg.expected_actors;
            if self.started_once && !started {
                // Spawned actors are on their way: nothing runs, not even the
                // device, until all have attached, so the schedule does not
                // depend on when their processes start.
                self.idle(stop);
                continue;
            }
            self.started_once |= started;
            let next_event = self.model.next_event_time().map(|t| t.0);
            let lowest = self.runnable.first().map(|(c, i)| (c, i as usize));
            let next = scheduler::next(lowest, next_event, started, self.cfg.expected_actors > 0, self.waiting > 0);
            if next != Next::Deadlock && next != Next::Idle {
                self.stalled_since = None;
            }
            match next {
                Next::Event => {
                    if let Some(t) = self.model.step() {
                        self.last_time = self.last_time.max(t);
                        self.wake_touched(t);
                        self.check_livelock(t);
                    }
                }
                Next::Actor(i) => self.run_actor(i, contexts.as_deref_mut()),
                Next::Deadlock => {
                    let pokeable = self.pokeable();
                    let since = *self.stalled_since.get_or_insert_with(std::time::Instant::now);
                    if scheduler::report_stall(!pokeable.is_empty(), since.elapsed()) {
                        self.stalled_since = None;
                        self.declare_deadlock(&pokeable);
                    } else {
                        self.idle(stop);
                    }
                }
                Next::Idle => match contexts.as_deref_mut() {
                    // A context that has not run yet may attach; when none
                    // is left the host has stopped the run.
                    Some(c) => {
                        if !c.idle() && !stop.load(SeqCst) {
                            // Nothing can ever run again: no other thread
                            // attaches to a host's cluster.
                            self.shutdown();
                            break;
                        }
                    }
                    None => self.idle(stop),
                },
            }
        }
        Ok(self.report())
    }

    fn report(&self) -> RunReport {
        RunReport {
            sim_time_ps: self.last_time.max(self.model.now()).0,
            stats: self.model.stats().clone(),
            grants: self.grants,
            syncs: self.syncs,
            waits: self.waits,
            waits_changed: self.waits_changed,
            deadlocks: self.deadlocks,
            dead_actors: self.dead.clone(),
            trace_events: self.model.trace.as_ref().map_or(0, |t| t.events()),
        }
    }

    /// Finish the trace (if any) and return the report.
    pub fn finish(&mut self) -> Result<RunReport, ClusterError> {
        let report = self.report();
        if let Some(t) = self.model.take_trace() {
            let path = self.cfg.trace.clone().unwrap_or_default();
            t.finish_with(&self.cfg.trace_meta).map_err(io("cannot write trace", &path))?;
        }
        Ok(report)
    }

    fn job_finished(&self) -> bool {
        self.cfg.expected_actors > 0 && self.attached_ever >= self.cfg.expected_actors && self.live == 0
    }

    /// Move actor `i` to `state` at `clock`, keeping the runnable order,
    /// the waiting count and the live counts in step, and tell the control
    /// file.
    fn transition(&mut self, i: usize, state: ActorState, clock: SimTime) {
        let a = &mut self.actors[i];
        if a.state == state && a.clock == clock {
            return;
        }
        let live = |s: ActorState| matches!(s, ActorState::Runnable | ActorState::Waiting);
        let was_runnable = a.state == ActorState::Runnable;
        if a.state == ActorState::Waiting {
            self.waiting -= 1;
            // The wait is over: a poke ends only a wait armed anew.
            self.ctl.disarm(i);
        }
        let node = a.node as usize;
        match (live(a.state), live(state)) {
            (false, true) => {
                self.live_on_node[node] += 1;
                self.live += 1;
            }
            (true, false) => {
                self.live_on_node[node] -= 1;
                self.live -= 1;
            }
            _ => {}
        }
        let changed = a.state != state;
        if changed && (a.state == ActorState::Waiting || state == ActorState::Waiting) {
            // Whether its slot's quiet events can reach anyone changed.
            self.stale_nodes.push(a.node);
        }
        a.state = state;
        a.clock = clock;
        if state == ActorState::Waiting {
            self.waiting += 1;
        }
        if was_runnable || state == ActorState::Runnable {
            self.refresh_runnable(node);
        }
        if changed {
            self.ctl.set_state(i, state);
        }
    }

    /// Recompute node `node`'s lowest runnable actor in the runnable order.
    fn refresh_runnable(&mut self, node: usize) {
        let slots = self.cfg.slots;
        let lowest = (0..slots)
            .filter_map(|s| self.by_slot[layout::source_index(node as u16, s, slots)])
            .filter(|&j| self.actors.get(j).is_some_and(|a| a.state == ActorState::Runnable && a.node as usize == node))
            .map(|j| (self.actors[j].clock.0, j as u32))
            .min();
        self.runnable.set(node, lowest);
    }

    /// Admit actors that asked to attach.
    fn admit(&mut self) {
        for req in self.ctl.attach_requests() {
            let (i, node, slot, pid) = (req.index, req.node, req.slot, req.pid);
            let refuse = if node >= self.cfg.nodes as u32 || slot >= self.cfg.slots as u32 {
                Some(format!(
                    "node {node} slot {slot} does not exist (cluster is {} nodes x {} slots)",
                    self.cfg.nodes, self.cfg.slots
                ))
            } else {
                let key = layout::source_index(node as u16, slot as u16, self.cfg.slots);
                match self.by_slot[key] {
                    Some(j) if matches!(self.actors[j].state, ActorState::Runnable | ActorState::Waiting) => {
                        Some(format!("node {node} slot {slot} is in use by process {}", self.actors[j].pid))
                    }
                    _ => None,
                }
            };
            if let Some(msg) = refuse {
                self.ctl.refuse(i, &msg);
                continue;
            }
            let (node, slot) = (node as u16, slot as u16);
            self.model.reset_slot(node, slot);
            // A reset slot's changes wake nobody.
            self.model.swap_touched(&mut self.touched);
            let key = layout::source_index(node, slot, self.cfg.slots);
            self.by_slot[key] = Some(i);
            let clock = match (self.cfg.expected_actors > 0, self.started_once) {
                (true, false) => SimTime::ZERO,
                (true, true) => SimTime(self.ctl.admit_clock()),
                (false, _) => self.last_time.max(self.model.now()),
            };
            if self.actors.len() <= i {
                // Only records ever admitted are scanned by the scheduler.
                self.actors.resize(i + 1, Actor::FREE);
            }
            // A record reused after its process left: out of every index first.
            self.transition(i, ActorState::Free, clock);
            self.actors[i] = Actor {
                state: ActorState::Free,
                node,
                slot,
                pid,
                clock,
                grant_clock: clock,
                pending_result: GrantResult::Ok,
                watch: Vec::new(),
                watch_regions: 0b111,
            };
            self.attached_ever += 1;
            self.transition(i, ActorState::Runnable, clock);
        }
    }

    fn run_actor(&mut self, i: usize, contexts: Option<&mut (dyn Contexts + '_)>) {
        let b = self.bounds(i);
        // The general horizon, where a process hands over between reads
        // (Device::observe), is the one of its polls: LLCM's.
        let horizon = SimTime(scheduler::horizon(&b, self.ring_hops));
        let a = &self.actors[i];
        let (clock, pid, result) = (a.clock, a.pid, a.pending_result);
        let epoch = self.epochs[layout::source_index(a.node, a.slot, self.cfg.slots)];
        self.actors[i].pending_result = GrantResult::Ok;
        self.actors[i].grant_clock = clock;
        self.grants += 1;
        let reach = self.reach(i).0;
        let regions = self.region_horizons(i, &b, horizon.0);
        self.ctl.grant(i, &GrantTo { clock: clock.0, horizon: horizon.0, regions, reach, epoch, result });
        if let Some(c) = contexts {
            // Switch to it; it runs until it hands the token back, unless
            // it ends first (returns from main, exits or crashes), which
            // is what a process that disappears is.
            c.resume(i);
            if !self.ctl.yielded_back(i) {
                self.mark_dead(i);
                return;
            }
            self.handle_yield(i);
            return;
        }
        // Wait for the actor to hand the token back.
        while !self.ctl.wait_yield(i, Duration::from_millis(100)) {
            if !pid_alive(pid) {
                self.mark_dead(i);
                return;
            }
        }
        self.handle_yield(i);
    }

    fn handle_yield(&mut self, i: usize) {
        let (node, slot, grant) = (self.actors[i].node, self.actors[i].slot, self.actors[i].grant_clock);
        let mut words = std::mem::take(&mut self.watch_words);
        let y = self.ctl.yielded(i, &mut words);
        let clock = SimTime(y.clock).max(grant);
        let ctl = &self.ctl;
        self.model.doorbell(node, slot, clock, |seq| SimTime(ctl.doorbell_time(i, seq)).max(grant).min(clock));
        self.model.host_activity(node, slot, clock);
        self.last_time = self.last_time.max(clock);
        // What the hand-over itself changed (the actor's own slot, and
        // anyone its host activity woke) counts before the wait is judged.
        self.wake_touched(clock);
        let mut changed_already = false;
        if let Some(watch) = &y.watch {
            let key = layout::source_index(node, slot, self.cfg.slots);
            match watch {
                Waiting::Words => {
                    let base = slot as usize * layout::SLOT_STRIDE; // watch words are slot offsets
                    let mmio = self.model.mmio(node);
                    // Futex semantics: if a word already moved on, do not sleep.
                    changed_already =
                        words.iter().any(|&(w, seen)| mmio.read_u64(base + w as usize).map_or(true, |now| now != seen));
                    self.actors[i].set_watch(words.iter().map(|(w, _)| *w));
                }
                Waiting::ChangeSince(since) => {
                    changed_already = self.epochs[key] > *since;
                    self.actors[i].set_watch(std::iter::empty());
                }
            }
        }
        self.watch_words = words;
        // Another thread of the process poked it since it armed this wait:
        // the wait ends at once (the poke came while it ran).
        if y.request == Some(YieldRequest::Wait) && self.ctl.poke_pending(i) {
            changed_already = true;
        }
        if y.request == Some(YieldRequest::Wait) && changed_already {
            self.ctl.disarm(i);
        }
        match y.request {
            Some(YieldRequest::Wait) if changed_already => self.waits_changed += 1,
            Some(YieldRequest::Wait) => self.waits += 1,
            Some(YieldRequest::Detach) => {}
            _ => self.syncs += 1,
        }
        let next = match y.request {
            Some(YieldRequest::Detach) => ActorState::Exited,
            Some(YieldRequest::Wait) if !changed_already => ActorState::Waiting,
            _ => ActorState::Runnable,
        };
        self.transition(i, next, clock);
    }

    /// Count the device's writes to each slot (its epoch) and make waiting
    /// actors runnable at `max(their clock, t)` when the device changed a
    /// word they were polling (or anything in their slot, if they did not
    /// say what they poll).
    fn wake_touched(&mut self, t: SimTime) {
        let mut touched = std::mem::take(&mut self.touched);
        self.model.swap_touched(&mut touched);
        for touch in touched.drain(..) {
            let key = layout::source_index(touch.node, touch.slot, self.cfg.slots);
            if let Some(e) = self.epochs.get_mut(key) {
                *e += 1;
            }
            if let Some(i) = self.by_slot.get(key).copied().flatten() {
                let a = &self.actors[i];
                if a.state == ActorState::Waiting && a.woken_by(&touch) {
                    let clock = a.clock.max(t);
                    self.transition(i, ActorState::Runnable, clock);
                }
            }
        }
        self.touched = touched;
    }

    /// Make every waiting actor that another thread of its process poked
    /// runnable, at [`scheduler::poked_clock`] (nobody runs now).
    fn wake_poked(&mut self) {
        let latest = self.last_time.max(self.model.now());
        for i in 0..self.actors.len() {
            let a = &self.actors[i];
            if a.state == ActorState::Waiting && self.ctl.poke_pending(i) {
                let clock = SimTime(scheduler::poked_clock(a.clock.0, latest.0));
                self.transition(i, ActorState::Runnable, clock);
            }
        }
    }

    fn mark_dead(&mut self, i: usize) {
        self.dead.push(i as u32);
        self.transition(i, ActorState::Dead, self.actors[i].clock);
    }

    /// Nothing to do: sleep until an actor attaches (or a timeout, to check
    /// that waiting actors are still alive and whether to stop).
    fn idle(&mut self, stop: &AtomicBool) {
        if stop.load(SeqCst) {
            return;
        }
        if !self.ctl.idle(Duration::from_millis(100)) {
            for i in 0..self.actors.len() {
                let a = &self.actors[i];
                if matches!(a.state, ActorState::Runnable | ActorState::Waiting) && !pid_alive(a.pid) {
                    self.mark_dead(i);
                }
            }
        }
    }

    /// Release every live actor with a shutdown result.
    fn shutdown(&mut self) {
        self.ctl.shutdown();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown();
        self.ctl.close();
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        if self.created_dir {
            let _ = std::fs::remove_dir(&self.cfg.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookahead_modes_are_the_words_of_their_variable() {
        assert!(dn_knobs::words_match::<LookaheadMode>("DN_SIM_LOOKAHEAD"));
        assert_eq!("hop".parse::<LookaheadMode>(), Ok(LookaheadMode::Hop));
        assert!("far".parse::<LookaheadMode>().unwrap_err().to_string().contains("give full, hop, none"));
    }

    /// Issue 7: `serve --dir` with a symlink named like a node file refuses
    /// it instead of writing register data into its target, and a start-up
    /// that fails part-way (here: a trace path that cannot be created)
    /// leaves nothing behind.
    #[test]
    fn start_up_never_follows_symlinks_and_cleans_up_after_failing() {
        let dir = crate::files::temp_dir("cluster-symlink");
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.with_extension("precious");
        std::fs::write(&target, b"keep me").unwrap();
        std::os::unix::fs::symlink(&target, dir.join(simctl::node_file_name(0))).unwrap();
        let err = Cluster::create(ClusterConfig::new(dir.clone(), 2, 1)).err().expect("a symlink was followed");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from(simctl::node_file_name(0))], "only the user's link remains");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&target).unwrap();

        let fresh = crate::files::temp_dir("cluster-badtrace");
        let mut cfg = ClusterConfig::new(fresh.clone(), 2, 1);
        cfg.trace = Some(PathBuf::from("/nonexistent-dir/trace.json"));
        assert!(Cluster::create(cfg).is_err());
        assert!(!fresh.exists(), "a failed start-up left {}", fresh.display());
    }

    /// Issue 7: an actor that exited but was not reaped yet is dead, not
    /// alive (kill(pid, 0) still succeeds on a zombie).
    #[test]
    fn a_zombie_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn true");
        let pid = child.id();
        // Wait (without reaping) until it has exited; a liveness bound only.
        for _ in 0..2000 {
            if simlink::process::state(pid) == Some('Z') {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(simlink::process::state(pid), Some('Z'), "the child should be a zombie now");
        assert!(!pid_alive(pid), "a zombie counted as alive");
        child.wait().unwrap();
        assert!(!pid_alive(pid), "a reaped process counted as alive");
        assert!(pid_alive(std::process::id()));
    }
}
