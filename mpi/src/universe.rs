//! Initialisation, finalisation and the state every communicator shares.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use adi::{Engine, HostCost};

use crate::comm::{Communicator, SimpleCommunicator};
pub use crate::config::ProgressMode;
pub use crate::context::THREAD_POLL_NS;
use crate::context::{charge_call, Context, Locked, LockedInner, Shared};
use crate::error::{InitError, MpiError, Result};
use crate::keepalive::KeepAlive;

/// The job directory `dnrun` gives each rank ([`adi::JobEnv`]), where a
/// rank records that it finalised, so the launcher can tell an early exit
/// from a normal one.
pub use adi::job::ENV_JOB_DIR;

/// The progress thread of `DN_NBC_PROGRESS=thread` on a real network: an
/// operating-system thread that advances the collectives in progress and
/// the engine's requests (a rendezvous to answer, say) while the
/// application computes outside MPI, as
/// LibNBC's progress thread and KACC's kernel agent do (seed 002 §3).
///
/// It takes the library's lock for one progress pass at a time, and only
/// when the lock is free and no call of the application waits for it, so it
/// never runs beside an MPI call nor delays one by more than a pass; between passes it yields,
/// for [`THREAD_SPIN`] after its last useful pass, then sleeps
/// [`THREAD_IDLE`] between passes; with nothing in progress it parks
/// (starting a collective wakes it; otherwise it looks again after
/// [`THREAD_PARK`]). It stops at finalize, before the engine is shut down.
pub(crate) struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// How long the real progress thread sleeps after a pass that found
/// nothing to do (a collective waiting for a peer). Short enough that a
/// peer's message is answered within a small share of a UDP round trip
/// budget; long enough that several ranks' threads sharing two cores leave
/// the computing ranks their time.
pub const THREAD_IDLE: Duration = Duration::from_micros(20);

/// How long the real progress thread parks when nothing is in progress,
/// at most (starting a collective wakes it at once).
pub const THREAD_PARK: Duration = Duration::from_millis(1);

/// How long the real progress thread keeps polling (yielding between
/// passes) after its last useful pass before it starts to sleep: a few UDP
/// round trips, as the transport's own idle wait spins before it sleeps.
pub const THREAD_SPIN: Duration = Duration::from_micros(200);

impl ProgressThread {
    fn spawn(shared: &Shared) -> Result<ProgressThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let weak: Weak<LockedInner<Context>> = shared.downgrade();
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("dnmpi-progress".into())
            .spawn(move || ProgressThread::run(&weak, &flag))
            .map_err(|e| InitError::Thread { what: "the progress thread".into(), why: e.to_string() })?;
        shared.borrow_mut().thread = Some(handle.thread().clone());
        Ok(ProgressThread { stop, handle: Some(handle) })
    }

    fn run(shared: &Weak<LockedInner<Context>>, stop: &AtomicBool) {
        let mut last_useful = std::time::Instant::now();
        while !stop.load(Ordering::Acquire) {
            let Some(ctx) = shared.upgrade() else { return };
            let pass = {
                let Some(mut c) = ctx.try_for_thread() else {
                    // The application is in an MPI call: it progresses itself.
                    drop(ctx);
                    std::thread::sleep(THREAD_IDLE);
                    continue;
                };
                if c.engine_if_running().is_none() || c.thread_failed.is_some() {
                    return;
                }
                let idle = c.engine_if_running().is_none_or(|e| !e.hooks_busy() && e.live_requests() == 0);
                if idle {
                    None
                } else {
                    let r = c.progress();
                    c.thread_passes += 1;
                    match &r {
                        Ok(true) => c.thread_useful += 1,
                        Ok(false) => {}
                        Err(e) => c.thread_failed = Some(e.to_string()),
                    }
                    Some(r)
                }
            };
            drop(ctx);
            match pass {
                None => {
                    // A collective's start unparks at once; a point-to-point
                    // request (a rendezvous to answer) is seen within THREAD_PARK.
                    std::thread::park_timeout(THREAD_PARK);
                    last_useful = std::time::Instant::now();
                }
                Some(Ok(true)) => {
                    last_useful = std::time::Instant::now();
                    std::thread::yield_now();
                }
                // A reply usually follows within a round trip: spin (yielding)
                // that long before sleeping.
                Some(Ok(false)) if last_useful.elapsed() < THREAD_SPIN => std::thread::yield_now(),
                Some(Ok(false)) => std::thread::sleep(THREAD_IDLE),
                Some(Err(_)) => return,
            }
        }
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            // The thread only ever returns (errors are recorded, not raised).
            let _ = h.join();
        }
    }
}

impl Drop for ProgressThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An initialised MPI environment (`MPI_Init` … `MPI_Finalize`). Dropping it
/// finalises MPI; call [`Universe::finalize`] to see errors.
pub struct Universe {
    shared: Shared,
    world: SimpleCommunicator,
    thread: std::cell::RefCell<Option<ProgressThread>>,
    /// Answers the peers while the program computes, on networks whose
    /// peers time out ([`crate::keepalive`]).
    keepalive: std::cell::RefCell<Option<KeepAlive>>,
    /// The thread that stands in for the program blocked in the operating
    /// system, on the simulator ([`crate::outside`]).
    outside: std::cell::RefCell<Option<crate::outside::StandIn>>,
    /// `DN_COMPUTE=measured` on the simulator (see [`crate::compute`]),
    /// until [`Universe::measure_calls`] hands it to the engine's context.
    meter: std::cell::RefCell<Option<crate::compute::Meter>>,
    /// The intercommunicator with the processes that spawned this one
    /// (`MPI_Comm_get_parent`, §11.8.2).
    parent: Option<SimpleCommunicator>,
    /// Every process the job may have (`MPI_UNIVERSE_SIZE`, §11.10.1).
    universe_size: u32,
    /// Which command of its spawn this process runs (`MPI_APPNUM`, §11.10.3).
    appnum: Option<u32>,
}

/// Keep large buffers in the heap: message buffers of hundreds of KiB are
/// allocated and freed per message, and glibc would otherwise map and unmap
/// each one, paying a page fault and a page clear per 4 KiB every time
/// (measured: a quarter of the time of a 1 MiB UDP bandwidth test).
fn tune_allocator() {
    // SAFETY: mallopt only changes glibc's allocation thresholds; it is
    // called before this library allocates any message buffer and has no
    // memory-safety preconditions.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

/// The exit status of a process aborted with `code`: the code's low byte
/// (all a status holds), but never 0, which would read as success
/// (`MPI_Abort(comm, 256)` and `MPI_Abort(comm, 0)` exit 1).
pub fn abort_status(code: i32) -> i32 {
    match code & 0xff {
        0 => 1,
        c => c,
    }
}

/// Initialise MPI from the environment `dnrun` provides. A program started
/// without `dnrun` runs as a single-process job.
pub fn initialize() -> Result<Universe> {
    tune_allocator();
    // Asking for a mode that is not built must not silently give another.
    // Every DN_* variable, checked once here (the engine checks again, for
    // programs that use it alone).
    adi::knobs::check_environment().map_err(InitError::from)?;
    let config = crate::config::MpiConfig::from_env().map_err(InitError::from)?;
    let wanted = config.progress;
    let mut engine = adi::engine_from_env().map_err(InitError::from)?;
    let (rank, size) = (engine.rank(), engine.size());
    let simulated = engine.now_ps().is_some();
    let progress = match wanted {
        // Issue 9: without a device to execute schedules, the next best
        // agent other than the application is a progress thread.
        ProgressMode::Offload if engine.offload().is_none() => {
            let instead = if simulated { ProgressMode::Manual } else { ProgressMode::Thread };
            if rank == 0 {
                eprintln!(
                    "dnmpi: DN_NBC_PROGRESS=offload: the {} backend has no collective offload; {} instead",
                    engine.backend(),
                    match instead {
                        ProgressMode::Thread => "a progress thread runs the collectives (DN_NBC_PROGRESS=thread)",
                        _ => "collectives progress inside MPI calls (DN_NBC_PROGRESS=manual)",
                    }
                );
            }
            instead
        }
        m => m,
    };
    let every = engine.keepalive_interval();
    let shared = Locked::new(Context::new(engine, config, progress));
    let thread = match progress {
        // On the simulator the thread is simulated inside `compute`.
        ProgressMode::Thread if !simulated => Some(ProgressThread::spawn(&shared)?),
        _ => None,
    };
    let keepalive = KeepAlive::start(&shared, every)?;
    let outside = crate::outside::StandIn::start(&shared)?;
    let meter = measured_compute(&shared, config.compute, rank)?;
    // A spawned process's world is the processes of its spawn (§11.8.2);
    // every other's, the job's first ranks.
    let job = adi::JobEnv::from_env().ok().flatten().filter(|j| j.rank == rank && j.size == size);
    let members = job.as_ref().map_or(0..size, |j| j.world.clone());
    let world = SimpleCommunicator::world(shared.clone(), rank, members);
    // Its MPI_Init is collective with the parents' spawn: connect to them.
    let parent = match job.as_ref().and_then(|j| j.parent_port.as_deref()) {
        Some(port) => Some(world.connect(port, 0).map_err(|e| InitError::Parent(Box::new(e)))?),
        None => None,
    };
    Ok(Universe {
        shared,
        world,
        parent,
        universe_size: size,
        appnum: job.as_ref().and_then(|j| j.appnum),
        thread: std::cell::RefCell::new(thread),
        keepalive: std::cell::RefCell::new(keepalive),
        outside: std::cell::RefCell::new(outside),
        meter: std::cell::RefCell::new(meter),
    })
}

/// The meter `DN_COMPUTE` asks for: none by default, or outside the
/// simulator (where computation takes real time already).
fn measured_compute(
    shared: &Shared,
    mode: crate::compute::ComputeMode,
    rank: u32,
) -> Result<Option<crate::compute::Meter>> {
    use crate::compute::{ComputeMode, Meter};
    let ComputeMode::Measured { scale } = mode else { return Ok(None) };
    let table = shared.borrow_mut().engine()?.cost_table();
    let Some(table) = table else {
        if rank == 0 {
            eprintln!(
                "dnmpi: {}=measured is for the simulator; this backend takes real time already",
                crate::compute::ENV_COMPUTE
            );
        }
        return Ok(None);
    };
    let profile = table.get(HostCost::ComputeScale as usize).map_or(1.0, |ps| *ps as f64 / 1000.0);
    Ok(Some(Meter::new(scale.unwrap_or(profile))))
}

impl Universe {
    /// The communicator of all processes (`MPI_COMM_WORLD`).
    pub fn world(&self) -> SimpleCommunicator {
        self.world.clone()
    }

    /// `MPI_Comm_get_parent` (§11.8.2): the intercommunicator with the
    /// processes that spawned this one, `None` when it was not spawned.
    pub fn parent(&self) -> Option<SimpleCommunicator> {
        self.parent.clone()
    }

    /// `MPI_UNIVERSE_SIZE` (§11.10.1): how many processes the job may have,
    /// those running and those it may still spawn (`dnrun --universe-size`).
    pub fn universe_size(&self) -> u32 {
        self.universe_size
    }

    /// `MPI_APPNUM` (§11.10.3): in a spawned process, the index of the
    /// command it runs among its spawn's; `None` otherwise.
    pub fn appnum(&self) -> Option<u32> {
        self.appnum
    }

    /// The communicator of this process alone (`MPI_COMM_SELF`).
    pub fn self_communicator(&self) -> SimpleCommunicator {
        self.world.only_me()
    }

    /// Name of the transport backend (`dimmnet`, `udp`, `local`).
    pub fn backend(&self) -> Result<&'static str> {
        Ok(self.shared.borrow_mut().engine()?.backend())
    }

    /// The node this process runs on, when the backend places ranks on
    /// nodes of its own (the simulator's, DIMMnet-2 cards); `None` when the
    /// host is the node. Processes of one node share memory
    /// (`MPI_COMM_TYPE_SHARED`).
    pub fn node(&self) -> Result<Option<u32>> {
        Ok(self.shared.borrow_mut().engine()?.node())
    }

    /// Protocol counters of this process.
    pub fn counters(&self) -> Result<adi::Counters> {
        Ok(self.shared.borrow_mut().engine()?.counters())
    }

    /// Whether computation between MPI calls is measured and charged
    /// (`DN_COMPUTE=measured` on the simulator; see [`crate::compute`]).
    pub fn measuring(&self) -> bool {
        self.meter.borrow().is_some() || self.shared.borrow_mut().meter.is_some()
    }

    /// Start charging the computation between MPI calls, when
    /// [`Universe::measuring`]: from now on the first time a call reaches
    /// the engine charges the burst since the last [`Universe::call_ends`].
    /// For a layer that marks the end of every call (the C ABI); a Rust
    /// program charges its computation with [`Universe::compute`].
    pub fn measure_calls(&self) {
        if let Some(m) = self.meter.borrow_mut().take() {
            self.shared.borrow_mut().meter = Some(m);
        }
    }

    /// An MPI call ends: the next burst of computation starts.
    pub fn call_ends(&self) {
        if let Some(m) = self.shared.borrow_mut().meter.as_mut() {
            m.leave();
        }
    }

    /// Simulated ns charged for measured computation so far (0 unless measuring).
    pub fn measured_ns(&self) -> f64 {
        if let Some(m) = self.shared.borrow_mut().meter.as_ref() {
            return m.charged_ns();
        }
        self.meter.borrow().as_ref().map_or(0.0, |m| m.charged_ns())
    }

    /// Time in seconds (`MPI_Wtime`): simulated time on the simulator, wall
    /// time elsewhere.
    pub fn wtime(&self) -> f64 {
        let mut c = self.shared.borrow_mut();
        // A call like any other: on the simulator it takes time, so that a
        // loop `while wtime() - t0 < d {}` ends (and hands over on the way).
        if let Ok(e) = c.engine() {
            charge_call(e);
        }
        match c.engine().ok().and_then(|e| e.now_ps()) {
            Some(ps) => ps as f64 * 1e-12,
            None => {
                use std::sync::OnceLock;
                static START: OnceLock<std::time::Instant> = OnceLock::new();
                START.get_or_init(std::time::Instant::now).elapsed().as_secs_f64()
            }
        }
    }

    /// Whether time is simulated.
    pub fn is_simulated(&self) -> bool {
        self.shared.borrow_mut().engine().ok().and_then(|e| e.now_ps()).is_some()
    }

    /// Account for `ns` nanoseconds of computation (simulated time only).
    /// With `DN_NBC_PROGRESS=thread`, the simulated progress thread runs
    /// meanwhile on its own core (see [`ProgressMode::Thread`]).
    pub fn compute(&self, ns: f64) -> Result<()> {
        self.shared.borrow_mut().compute(ns)
    }

    /// The real progress thread's work so far (`DN_NBC_PROGRESS=thread` on
    /// a real network): passes made while a collective was in progress, how
    /// many of them advanced something, and why it stopped if it failed.
    /// `None` without a real thread.
    pub fn progress_thread_stats(&self) -> Option<(u64, u64, Option<String>)> {
        let has = self.thread.borrow().is_some();
        let c = self.shared.borrow();
        (has || c.thread_passes > 0).then(|| (c.thread_passes, c.thread_useful, c.thread_failed.clone()))
    }

    /// Who executes collective schedules (after any fallback at initialisation).
    pub fn progress_mode(&self) -> ProgressMode {
        self.shared.borrow().progress
    }

    /// How the process's other threads end a wait inside this library
    /// (`MPI_THREAD_MULTIPLE`; see [`adi::Transport::waker`]). `None`:
    /// the backend's waits are short anyway.
    pub fn waker(&self) -> Result<Option<Arc<dyn adi::Waker>>> {
        Ok(self.shared.borrow_mut().engine()?.waker()?)
    }

    /// Progress once, and if nothing moved, wait for something to change
    /// (or for another thread's [`adi::Waker::wake`]): for a wait on what
    /// only another thread of the process can end (a generalized request,
    /// a partitioned send's partitions).
    pub fn idle(&self) -> Result<()> {
        self.shared.borrow_mut().progress_or_idle()
    }

    /// Direct access to the protocol engine (for benchmarks of the ADI layer).
    pub fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> Result<R> {
        let mut c = self.shared.borrow_mut();
        Ok(f(c.engine()?))
    }

    /// Every process is in finalize: receive and drop the messages still
    /// unreceived here (the program's error, MPI 4.1 §11.2.2), warning
    /// about each, so that their senders — a rendezvous send waits for its
    /// receiver — can leave too.
    fn drain_unreceived(&self) -> Result<()> {
        let mut dropped = self.shared.borrow_mut().engine()?.drain_unexpected()?;
        let rank = self.world.rank();
        // What a collective that failed left behind (its messages and the
        // notices of its failure, see `coll::exec`) is no message of the
        // program's: one line for all of it.
        let before = dropped.len();
        dropped.retain(|env| !crate::coll::exec::is_collective(env.ctx, env.tag));
        if dropped.len() < before {
            eprintln!(
                "MPI_Finalize on rank {rank}: dropped {} message(s) left over from collectives that failed",
                before - dropped.len()
            );
        }
        for env in dropped.iter().take(8) {
            eprintln!(
                "MPI_Finalize on rank {rank}: dropped a message of {} bytes from job rank {} (tag {}) that was never received",
                env.len,
                env.src,
                env.tag
            );
        }
        if dropped.len() > 8 {
            eprintln!("MPI_Finalize on rank {rank}: ... and {} more never received", dropped.len() - 8);
        }
        Ok(())
    }

    /// Terminate this process at once with `code` (`MPI_Abort`): no barrier,
    /// no finalize. The launcher then stops the other ranks and reports it.
    pub fn abort(&self, code: i32) -> ! {
        let rank = self.world.rank();
        eprintln!("MPI abort on rank {rank} with code {code}");
        std::process::exit(abort_status(code))
    }

    /// Finalise: wait for every process (a barrier), complete queued sends,
    /// leave the job.
    pub fn finalize(self) -> Result<()> {
        self.finalize_inner(())
    }

    /// [`Universe::finalize`], dropping `pending` once every process has
    /// entered finalize and the messages nobody received are drained: the
    /// C layer's requests that the program left active (a dropped request
    /// waits for its operation), whose sends may need the receivers to be
    /// in finalize to end.
    pub fn finalize_with<P>(self, pending: P) -> Result<()> {
        self.finalize_inner(pending)
    }

    fn finalize_inner<P>(&self, pending: P) -> Result<()> {
        if self.shared.borrow().engine_if_running().is_none() {
            return Ok(());
        }
        self.world.barrier()?;
        self.drain_unreceived()?;
        drop(pending);
        if let Some(mut t) = self.thread.borrow_mut().take() {
            t.stop();
            let c = self.shared.borrow();
            if adi::config::stats_wanted() {
                eprintln!(
                    "[rank {}] progress thread: {} passes with work in progress, {} moved something{}",
                    self.world.rank(),
                    c.thread_passes,
                    c.thread_useful,
                    c.thread_failed.as_ref().map(|e| format!("; stopped: {e}")).unwrap_or_default()
                );
            }
        }
        drop(self.keepalive.borrow_mut().take());
        drop(self.outside.borrow_mut().take());
        let engine = self.shared.borrow_mut().take_engine().ok_or(MpiError::Finalized)?;
        let rank = engine.rank();
        engine.finalize()?;
        // A standard launcher (PMI-1) is told this process is done.
        adi::pmi::finalize().map_err(InitError::Pmi)?;
        if let Some(dir) = adi::JobEnv::from_env().ok().flatten().and_then(|j| j.dir) {
            let _ = adi::job::write_private(&dir.join(format!("finalized.{rank}")), b"");
        }
        Ok(())
    }
}

impl Drop for Universe {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Do not pretend to synchronise with the others while unwinding.
            return;
        }
        if let Err(e) = self.finalize_inner(()) {
            eprintln!("MPI finalize failed: {e}");
        }
    }
}
