//! The state every communicator of a process shares, behind the
//! library's lock: the engine, the context ids handed out, the job's
//! settings and the simulated progress thread's clock. It sits in the
//! core: the layers above (communicators, collectives, one-sided, ports)
//! reach the engine through it, and it names none of them.

use std::collections::BTreeSet;

use adi::{Engine, HostCost};

use crate::config::ProgressMode;
use crate::error::{MpiError, Result};
pub(crate) use crate::locked::{Locked, LockedInner};

/// How often the simulated progress thread polls while the application
/// computes (ours: LibNBC's thread spins; 1 us keeps it from dominating
/// simulation time while reacting within a small share of a message time).
pub const THREAD_POLL_NS: f64 = 1000.0;

/// The first context id of the idups' share; the blocking agreements
/// hand out ids below it.
pub(crate) const DUP_BASE: u32 = 1 << 30;

/// A context id a blocking agreement settled on, which must leave room
/// for the `ids` it takes below [`DUP_BASE`].
pub(crate) fn check_agreed(ctx: u32, ids: u32) -> Result<()> {
    if ctx.checked_add(ids).is_none_or(|end| end > DUP_BASE) {
        return Err(crate::error::ContextError::Exhausted { agreed: ctx, total: DUP_BASE }.into());
    }
    Ok(())
}

/// The numbers of the ports this process has open (MPI 4.1 §11.10.2),
/// and the number the next one gets (`crate::port` names them).
#[derive(Debug, Default)]
pub(crate) struct OpenPorts {
    next: u32,
    open: BTreeSet<u32>,
}

impl OpenPorts {
    /// Open the next port: its number, or `None` once the numbers up to
    /// `max` have all been handed out.
    pub(crate) fn open(&mut self, max: u32) -> Option<u32> {
        let n = self.next;
        if n > max {
            return None;
        }
        self.next = n + 1;
        self.open.insert(n);
        Some(n)
    }

    /// Close port `n`: whether it was open.
    pub(crate) fn close(&mut self, n: u32) -> bool {
        self.open.remove(&n)
    }

    /// Whether port `n` is open.
    pub(crate) fn is_open(&self, n: u32) -> bool {
        self.open.contains(&n)
    }
}

pub(crate) struct Context {
    engine: Option<Engine>,
    /// Next free context id (even; id+1 is the collective context).
    pub(crate) next_ctx: u32,
    /// The next `MPI_Comm_idup` context id this process hands out as a
    /// leader, counted in its own share of the ids (`crate::dup`).
    pub(crate) next_dup: u32,
    /// The ports this process has open (`crate::port`).
    pub(crate) ports: OpenPorts,
    /// The job's settings, read at `MPI_Init`.
    pub(crate) config: crate::config::MpiConfig,
    /// Who executes collective schedules: `config.progress`, or what the
    /// transport can do instead.
    pub(crate) progress: ProgressMode,
    /// Simulated progress thread: how far its last pass ran past the
    /// computation it overlapped (picoseconds still to absorb).
    pub(crate) thread_debt_ps: u64,
    /// Simulated progress thread: when its last pass started.
    pub(crate) thread_last_ps: u64,
    /// The real progress thread, woken when a collective is registered.
    pub(crate) thread: Option<std::thread::Thread>,
    /// Why the real progress thread stopped, if it failed (the application's
    /// own progress then meets the same failure and reports it).
    pub(crate) thread_failed: Option<String>,
    /// Real progress thread: passes made with a collective or a request in
    /// progress, and how many of them moved something.
    pub(crate) thread_passes: u64,
    pub(crate) thread_useful: u64,
    /// `DN_COMPUTE=measured`, once the C layer marks call ends (see
    /// [`crate::compute`]): the burst before a call is charged the first
    /// time the call reaches the engine.
    pub(crate) meter: Option<crate::compute::Meter>,
}

impl Context {
    /// The state of a process whose library starts with `engine`.
    pub(crate) fn new(engine: Engine, config: crate::config::MpiConfig, progress: ProgressMode) -> Context {
        Context {
            engine: Some(engine),
            next_ctx: 2,
            next_dup: 0,
            ports: OpenPorts::default(),
            config,
            progress,
            thread_debt_ps: 0,
            thread_last_ps: 0,
            thread: None,
            thread_failed: None,
            thread_passes: 0,
            thread_useful: 0,
            meter: None,
        }
    }

    /// The engine, if the library is not finalised, without charging
    /// anything (for the progress thread, which looks before it works).
    pub(crate) fn engine_if_running(&self) -> Option<&Engine> {
        self.engine.as_ref()
    }

    /// Take the engine out to finalise it: every later call fails with
    /// [`MpiError::Finalized`].
    pub(crate) fn take_engine(&mut self) -> Option<Engine> {
        self.engine.take()
    }

    /// The engine: every MPI call reaches the protocol through here.
    #[inline]
    pub(crate) fn engine(&mut self) -> Result<&mut Engine> {
        if self.meter.as_ref().is_some_and(|m| m.outside()) {
            self.charge_burst()?;
        }
        self.engine.as_mut().ok_or(MpiError::Finalized)
    }

    /// `DN_COMPUTE=measured`: a call begins; charge the computation
    /// before it, before the call does anything that takes simulated time.
    #[cold]
    #[inline(never)]
    fn charge_burst(&mut self) -> Result<()> {
        let ns = self.meter.as_mut().map_or(0.0, |m| m.enter());
        self.compute(ns)
    }

    /// Account for `ns` nanoseconds of computation (see [`Universe::compute`]).
    pub(crate) fn compute(&mut self, ns: f64) -> Result<()> {
        let c = self;
        if c.progress != ProgressMode::Thread {
            return Ok(c.engine()?.compute(ns)?);
        }
        let Some(start) = c.engine()?.now_ps() else { return Ok(c.engine()?.compute(ns)?) };
        // One clock per simulated process: a thread pass advances it. A
        // pass that outlasted the computation it ran beside left a debt:
        // the thread's core was busy that much longer, while this core went
        // on computing, so the next computations absorb it first.
        let mut want = (ns.max(0.0) * 1000.0) as u64;
        let absorbed = want.min(c.thread_debt_ps);
        c.thread_debt_ps -= absorbed;
        want -= absorbed;
        if want == 0 {
            return Ok(());
        }
        if !c.engine()?.hooks_busy() {
            return Ok(c.engine()?.compute(want as f64 / 1000.0)?);
        }
        let end = start.saturating_add(want);
        loop {
            // The thread's pass: its costs are the time it takes on its core.
            c.thread_last_ps = c.engine()?.now_ps().unwrap_or(0);
            c.progress()?;
            let now = c.engine()?.now_ps().unwrap_or(end);
            if now >= end {
                c.thread_debt_ps += now - end;
                return Ok(());
            }
            let left = (end - now) as f64 / 1000.0;
            if !c.engine()?.hooks_busy() {
                return Ok(c.engine()?.compute(left)?);
            }
            c.engine()?.compute(left.min(THREAD_POLL_NS))?;
        }
    }

    /// Simulated progress thread: whether a pass is due (a poll period
    /// since the last one); if so, it counts as started now.
    pub(crate) fn thread_due(&mut self) -> Result<bool> {
        // A real thread (no simulated clock) runs beside `test`, which then
        // progresses as in manual mode: both may, as with LibNBC's thread.
        let Some(now) = self.engine()?.now_ps() else { return Ok(true) };
        if now.saturating_sub(self.thread_last_ps) < (THREAD_POLL_NS * 1000.0) as u64 {
            return Ok(false);
        }
        self.thread_last_ps = now;
        Ok(true)
    }

    /// Wait for an engine request on a borrowed buffer, keeping collectives
    /// moving; the request is gone from the engine when this returns, even
    /// on error (abandoned), so the buffer is free again.
    pub(crate) fn wait_borrowed(&mut self, id: adi::ReqId) -> Result<adi::Done> {
        if let Err(e) = self.wait_until(|c| Ok(c.engine()?.is_done(id).unwrap_or(true))) {
            if let Ok(e) = self.engine() {
                e.abandon(id);
            }
            return Err(e);
        }
        Ok(self.engine()?.wait(id)?)
    }

    /// One keep-alive pass of the engine ([`crate::keepalive`]); `None`
    /// once finalized.
    pub(crate) fn keep_alive(&mut self) -> Option<Result<bool>> {
        let e = self.engine.as_mut()?;
        Some(e.keep_alive().map_err(Into::into))
    }

    /// One progress pass: the engine's own work and every layer's, which
    /// the layers registered with it as progress hooks (collectives in
    /// progress, one-sided windows; [`adi::hooks`]). Every call of the
    /// library that progresses comes here, or to [`Context::wait_until`];
    /// whether anything moved.
    pub(crate) fn progress(&mut self) -> Result<bool> {
        Ok(self.engine()?.progress()?)
    }

    /// A progress pass, and if nothing moved, a wait for something to
    /// change (the network, a device word, another thread's wake-up).
    pub(crate) fn progress_or_idle(&mut self) -> Result<()> {
        if !self.progress()? {
            self.engine()?.idle()?;
        }
        Ok(())
    }

    /// Progress (collectives included) until `done` holds, idling when a
    /// pass finds nothing to do.
    pub(crate) fn wait_until(&mut self, done: impl FnMut(&mut Context) -> Result<bool>) -> Result<()> {
        self.wait_until_or(done, &|_| false).map(drop)
    }

    /// [`Context::wait_until`], but give up (`false`) instead of idling
    /// once `stop` holds: another thread wants the library
    /// (`MPI_THREAD_MULTIPLE`, see [`crate::request::settle_until`]).
    /// `stop` is told whether anything moved since the wait began (a
    /// progress pass did work, or an idle wait ended): news for a thread
    /// that waits for the lock to look at its own wait again.
    pub(crate) fn wait_until_or(
        &mut self,
        mut done: impl FnMut(&mut Context) -> Result<bool>,
        stop: &dyn Fn(bool) -> bool,
    ) -> Result<bool> {
        let mut moved = false;
        loop {
            if done(self)? {
                return Ok(true);
            }
            // The engine's pass runs its hooks: the collectives move too.
            let worked = self.progress()?;
            if done(self)? {
                return Ok(true);
            }
            moved |= worked;
            if !worked {
                if stop(moved) {
                    return Ok(false);
                }
                self.engine()?.idle()?;
                moved = true;
            }
        }
    }
}

/// The threads that act for the program reach the engine through this.
impl crate::locked::EngineHolder for Context {
    fn engine(&mut self) -> Result<&mut Engine> {
        Context::engine(self)
    }

    fn keep_alive(&mut self) -> Option<Result<bool>> {
        Context::keep_alive(self)
    }
}

pub(crate) type Shared = Locked<Context>;

/// Charge one MPI-layer call.
pub(crate) fn charge_call(e: &Engine) {
    e.charge(HostCost::MpiCall, 1);
}

/// Charge the MPI layer's request processing for one point-to-point
/// operation starting or completing (not for a `test` that finds it
/// pending, nor for a probe).
pub(crate) fn charge_request(e: &Engine) {
    e.charge(HostCost::MpiRequest, 1);
}
