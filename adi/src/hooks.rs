//! Progress hooks: work that moves with the engine's own progress (MPICH
//! CH4's progress hooks are the model).
//!
//! A layer above the engine that has work of its own to advance while
//! the program waits registers it with the engine, and keeps its own
//! handle to it: the engine only runs the work, it never hands it back.
//! Every progress pass of the engine runs the hooks before and after its
//! own work, so every blocking call of the engine (a blocking send or
//! receive, a probe, a wait) keeps that work moving, and no layer above
//! needs a progress loop of its own. There are two kinds:
//!
//! - [`ProgressHook`] ([`crate::Engine::add_hook`]): polled on every pass
//!   while busy, dropped once it says it has ended. The collective
//!   schedules of `mpi` are these, one per collective in progress.
//! - [`ContextHook`] ([`crate::Engine::serve_context`]): the work of one
//!   communication context, polled only when it has something to do — a
//!   message matched a receive on its context, a call touched it
//!   ([`crate::Engine::attend`]), or it was not idle after its last poll.
//!   The target side of every one-sided window is one, so that the
//!   8,000th window costs a pass no more than the first.

use crate::{AdiError, Engine};

/// What a poll of a [`ProgressHook`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Polled {
    /// Something moved (a step was taken, a message went or came).
    pub moved: bool,
    /// The work is over: the engine drops the hook.
    pub ended: bool,
}

/// Work the engine advances on each progress pass until it ends.
pub trait ProgressHook: Send {
    /// Whether there is anything to advance: an idle hook costs the
    /// engine one call of this per pass.
    fn busy(&self) -> bool;

    /// Advance the work one step, with the engine to act through (a
    /// progress pass inside this call runs no hooks).
    fn poll(&mut self, e: &mut Engine) -> Result<Polled, AdiError>;
}

/// The work of one communication context (see the module's text).
pub trait ContextHook: Send {
    /// Advance the work, with the engine to act through (a progress pass
    /// inside this call runs no hooks). Returns whether anything moved.
    fn poll(&mut self, e: &mut Engine) -> Result<bool, AdiError>;

    /// Whether the work has nothing to do until a message matches a
    /// receive on its context or a call touches it: the engine stops
    /// looking at it until then.
    fn idle(&self, e: &Engine) -> bool;
}
