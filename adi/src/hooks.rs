//! Progress hooks: work that moves with the engine's own progress (MPICH
//! CH4's progress hooks are the model).
//!
//! A layer above the engine that has work of its own to advance while
//! the program waits — the collective schedules of `mpi`, and later the
//! target side of one-sided communication — registers it once with
//! [`crate::Engine::add_hook`]. Every progress pass of the engine runs the
//! busy hooks before and after its own work, so every blocking call of the
//! engine (a blocking send or receive, a probe, a wait) keeps that work
//! moving, and no layer above needs a progress loop of its own.

use std::any::Any;

use crate::{AdiError, Engine};

/// Work the engine advances on each progress pass.
pub trait ProgressHook: Send {
    /// Whether there is anything to advance: an idle hook costs the
    /// engine one call of this per pass.
    fn busy(&self) -> bool;

    /// Advance the work one step, with the engine to act through (a
    /// progress pass inside this call runs no hooks). Returns whether
    /// anything moved.
    fn poll(&mut self, e: &mut Engine) -> Result<bool, AdiError>;

    /// The hook itself, for [`crate::Engine::hook_mut`].
    fn as_any_mut(&mut self) -> &mut dyn Any;
}
