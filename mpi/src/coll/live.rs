//! The collectives in progress, as the engine's progress hook
//! ([`adi::hooks`]): every progress pass of the engine advances them, so
//! that a process blocked in any call (a blocking send, a probe, a wait)
//! still does its part of every collective it has started
//! (`DN_NBC_PROGRESS=manual`: progress inside MPI calls, as LibNBC
//! without a thread; the progress thread runs the same passes).

use std::any::Any;

use adi::{AdiError, Engine, ProgressHook};

use crate::coll::exec::Exec;
use crate::config::ProgressMode;
use crate::context::{Context, Locked};
use crate::error::{MpiError, Result};

/// Collectives in progress: the non-blocking ones until they complete,
/// and the blocking one being waited for.
#[derive(Default)]
pub(crate) struct LiveCollectives {
    live: Vec<Locked<Exec>>,
}

impl LiveCollectives {
    /// From now on every progress pass advances `x` until it ends.
    pub(crate) fn register(&mut self, x: Locked<Exec>) {
        self.live.push(x);
    }
}

impl ProgressHook for LiveCollectives {
    fn busy(&self) -> bool {
        !self.live.is_empty()
    }

    /// Advance every collective; whether any finished a step.
    fn poll(&mut self, e: &mut Engine) -> std::result::Result<bool, AdiError> {
        let mut worked = false;
        self.live.retain(|x| {
            let mut ex = x.borrow_mut();
            let before = ex.done_nodes();
            // An error is kept in the execution and reported by its request.
            let finished = ex.advance(e);
            worked |= ex.done_nodes() != before;
            !finished
        });
        Ok(worked)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The collective layer's part of the shared state: its progress hook,
/// and the device it may hand schedules to.
impl Context {
    /// The collectives in progress, registered with the engine's
    /// progress (see [`crate::coll::live`]).
    pub(crate) fn live_collectives(&mut self) -> Result<&mut LiveCollectives> {
        self.engine()?
            .hook_mut::<LiveCollectives>()
            .ok_or_else(|| MpiError::Internal { what: "the collectives' progress hook is missing".into() })
    }

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
            if !self.engine()?.progress()? {
                self.engine()?.idle()?;
            }
        }
    }
}
