//! The collectives in progress, as the engine's progress hook
//! ([`adi::hooks`]): every progress pass of the engine advances them, so
//! that a process blocked in any call (a blocking send, a probe, a wait)
//! still does its part of every collective it has started
//! (`DN_NBC_PROGRESS=manual`: progress inside MPI calls, as LibNBC
//! without a thread; the progress thread runs the same passes).

use adi::{AdiError, Engine, Polled, ProgressHook};

use crate::coll::exec::Exec;
use crate::config::ProgressMode;
use crate::context::{Context, Locked};
use crate::error::Result;

/// A collective in progress, registered with the engine's progress: a
/// non-blocking one until it completes, or the blocking one being waited
/// for. The request that waits for it holds the same execution.
pub(crate) struct Live(pub(crate) Locked<Exec>);

impl ProgressHook for Live {
    fn busy(&self) -> bool {
        true
    }

    /// Advance the collective; it ends when its schedule has run.
    fn poll(&mut self, e: &mut Engine) -> std::result::Result<Polled, AdiError> {
        let mut ex = self.0.borrow_mut();
        let before = ex.done_nodes();
        // An error is kept in the execution and reported by its request.
        let ended = ex.advance(e);
        Ok(Polled { moved: ex.done_nodes() != before, ended })
    }
}

/// The collective layer's part of the shared state: the device it may
/// hand schedules to.
impl Context {
    /// Hand `x` to the device if the mode says so and its operation can run
    /// there; waits (progressing everything else) while every device slot
    /// or the device memory is taken, so that every rank makes the same
    /// choice for the same collective.
    pub(crate) fn offload(&mut self, x: &mut Exec) -> Result<()> {
        if self.progress != ProgressMode::Offload || !x.offloadable() {
            return Ok(());
        }
        let steps = x.offload_steps(self.engine()?);
        loop {
            if x.try_offload(self.engine()?, &steps)? {
                return Ok(());
            }
            self.progress_or_idle()?;
        }
    }
}
