//! What a request handle stands for, from the call that makes it to the
//! call that frees it (MPI 4.1 §3.7.3, §3.9): an operation under way, an
//! outcome kept for the call that reports it, or a persistent request,
//! inactive or started. The C ABI keeps one [`Slot`] per `MPI_Request`;
//! every completion call settles slots with [`crate::request::settle`], the engine
//! the Rust API's `wait_all`/`wait_any`/`wait_some` use, then completes
//! the ended ones here, so that the rules of §3.7.3-3.7.5 and §3.9 have
//! one implementation.

use crate::request::Part;
use crate::staged::Staged;
use crate::{MpiError, Result, Status};

/// A request handle's state. `P` is a persistent request's recipe: what
/// each start does (the C ABI's arguments of `MPI_Send_init`, ...).
pub enum Slot<P> {
    /// An operation in the engine.
    Op(Staged),
    /// Complete already (an operation on `MPI_PROC_NULL`, or one that
    /// `MPI_Request_get_status` found complete), with its outcome.
    Done(Result<Status>),
    /// A persistent request (§3.9).
    Persistent(Box<Persistent<P>>),
}

/// A persistent request: its recipe, and its operation while active
/// (between a start and the completion that reports it).
pub struct Persistent<P> {
    /// What each start does.
    pub recipe: P,
    active: Option<Staged>,
    /// Ended at its start (on `MPI_PROC_NULL`, a buffered send), or found
    /// ended by `MPI_Request_get_status`, and not yet reported.
    done: Option<Result<Status>>,
}

/// What a start of a persistent request began.
pub enum Started {
    /// An operation in the engine.
    Op(Staged),
    /// Nothing left to do: the outcome, reported by the next completion.
    Done(Status),
}

impl<P> Persistent<P> {
    /// An inactive persistent request (§3.9.1).
    pub fn new(recipe: P) -> Persistent<P> {
        Persistent { recipe, active: None, done: None }
    }

    /// Start it (`MPI_Start`, §3.9.2) with `start`, which runs the recipe;
    /// refused while it is active.
    pub fn start(&mut self, start: impl FnOnce(&P) -> Result<Started>) -> Result<()> {
        if self.active.is_some() || self.done.is_some() {
            return Err(MpiError::Request(crate::error::RequestMisuse::StillActive));
        }
        match start(&self.recipe)? {
            Started::Op(op) => self.active = Some(op),
            Started::Done(s) => self.done = Some(Ok(s)),
        }
        Ok(())
    }
}

impl<P> Slot<P> {
    /// A new persistent request, inactive.
    pub fn persistent(recipe: P) -> Slot<P> {
        Slot::Persistent(Box::new(Persistent::new(recipe)))
    }

    /// Its part in a completion call: an inactive persistent request
    /// takes none (§3.7.5).
    pub fn part(&self) -> Part<'_, 'static> {
        match self {
            Slot::Done(_) => Part::Ended,
            Slot::Op(a) => a.part(),
            Slot::Persistent(p) => match (&p.done, &p.active) {
                (Some(_), _) => Part::Ended,
                (None, None) => Part::Idle,
                (None, Some(a)) => a.part(),
            },
        }
    }

    /// Complete it, found ended by [`crate::request::settle`] (or waiting for it
    /// otherwise): its outcome — an empty status for an inactive
    /// persistent request (§3.7.3) — and what the handle keeps: nothing
    /// (the handle becomes null, failed or not), or the persistent
    /// request, inactive again (§3.9).
    pub fn complete(self) -> (Result<Status>, Option<Slot<P>>) {
        match self {
            Slot::Done(s) => (s, None),
            Slot::Op(a) => (a.finish(), None),
            Slot::Persistent(mut p) => {
                let s = match (p.done.take(), p.active.take()) {
                    (Some(s), _) => s,
                    (None, None) => Ok(Status::empty()),
                    (None, Some(a)) => a.finish(),
                };
                (s, Some(Slot::Persistent(p)))
            }
        }
    }

    /// The outcome of a request found ended, kept without freeing or
    /// deactivating it (`MPI_Request_get_status`, §3.7.3): the call that
    /// completes it later reports the same outcome.
    pub fn keep(self) -> (Result<Status>, Slot<P>) {
        match self {
            Slot::Done(s) => (s.clone(), Slot::Done(s)),
            Slot::Op(a) => {
                let s = a.finish();
                (s.clone(), Slot::Done(s))
            }
            Slot::Persistent(mut p) => {
                let s = match (&p.done, p.active.take()) {
                    (Some(s), _) => s.clone(),
                    (None, None) => Ok(Status::empty()),
                    (None, Some(a)) => {
                        let s = a.finish();
                        p.done = Some(s.clone());
                        s
                    }
                };
                (s, Slot::Persistent(p))
            }
        }
    }

    /// Make `op` the operation this request completes with, in place of
    /// the outcome it had at its start: a buffered send, complete at its
    /// start, whose message a cancellation now withdraws (§3.8.4). (A
    /// request under way completes with both.)
    pub fn reopen(&mut self, op: Staged) {
        match self {
            Slot::Done(_) => *self = Slot::Op(op),
            Slot::Op(a) => a.stage.with.push(op),
            Slot::Persistent(p) => match &mut p.active {
                Some(a) => a.stage.with.push(op),
                None => {
                    p.done = None;
                    p.active = Some(op);
                }
            },
        }
    }

    /// The operation under way, if any (to cancel it, §3.8.4).
    pub fn active(&self) -> Option<&Staged> {
        match self {
            Slot::Op(a) => Some(a),
            Slot::Persistent(p) => p.active.as_ref(),
            Slot::Done(_) => None,
        }
    }

    /// What goes on once the handle is freed while active
    /// (`MPI_Request_free`, §3.7.3): the operation, which still
    /// completes.
    pub fn detach(self) -> Option<Staged> {
        match self {
            Slot::Op(a) => Some(a),
            Slot::Persistent(p) => p.active,
            Slot::Done(_) => None,
        }
    }
}

/// What completing or keeping a request's outcome found
/// ([`Requests::take`], [`Requests::keep`]).
pub enum Taken<G> {
    /// Its outcome; `stays`: the handle still names the request (a
    /// persistent one, inactive again, or one whose outcome is kept).
    Outcome(Result<Status>, bool),
    /// A generalized request, complete: its callbacks, whose `query_fn`
    /// gives the outcome (and whose `free_fn` runs too when it was taken).
    Generalized(G),
}

/// Every request of a program that names its requests by handle (the C
/// ABI's `MPI_Request`): operations and persistent requests ([`Slot`],
/// with recipes `P`), generalized requests (with callbacks `G`,
/// [`crate::greq::Table`]), and the operations freed while active, which
/// still complete (§3.7.3) and go at finalize at the latest. `S` hashes
/// the handles.
pub struct Requests<P, G, S = std::collections::hash_map::RandomState> {
    slots: std::collections::HashMap<usize, Slot<P>, S>,
    generalized: crate::greq::Table<G>,
    detached: Vec<Staged>,
}

impl<P, G, S: Default> Default for Requests<P, G, S> {
    fn default() -> Self {
        Requests { slots: Default::default(), generalized: Default::default(), detached: Vec::new() }
    }
}

impl<P, G: Copy, S: std::hash::BuildHasher> Requests<P, G, S> {
    /// Name `slot` `handle`.
    pub fn insert(&mut self, handle: usize, slot: Slot<P>) {
        self.slots.insert(handle, slot);
    }

    /// The operation or persistent request `handle` names.
    pub fn get(&self, handle: usize) -> Option<&Slot<P>> {
        self.slots.get(&handle)
    }

    /// The operation or persistent request `handle` names, to start or
    /// change it.
    pub fn get_mut(&mut self, handle: usize) -> Option<&mut Slot<P>> {
        self.slots.get_mut(&handle)
    }

    /// Whether `handle` names an operation or a persistent request.
    pub fn contains(&self, handle: usize) -> bool {
        self.slots.contains_key(&handle)
    }

    /// How many operations and persistent requests have handles.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no operation or persistent request has a handle.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The generalized requests (§13.2).
    pub fn generalized(&mut self) -> &mut crate::greq::Table<G> {
        &mut self.generalized
    }

    /// The part `handle` plays in a completion call; `None`: it names no
    /// request (never made, or freed).
    pub fn part(&self, handle: usize) -> Option<Part<'_, 'static>> {
        match self.slots.get(&handle) {
            Some(slot) => Some(slot.part()),
            None => self.generalized.part(handle),
        }
    }

    /// Complete the request `handle` names, ended or taking no part
    /// ([`Slot::complete`]; a generalized request is freed, §13.2);
    /// `None`: it names no request.
    pub fn take(&mut self, handle: usize) -> Option<Taken<G>> {
        let Some(slot) = self.slots.remove(&handle) else {
            return self.generalized.report(handle, true).map(Taken::Generalized);
        };
        let (s, left) = slot.complete();
        let stays = left.is_some();
        if let Some(slot) = left {
            self.slots.insert(handle, slot);
        }
        Some(Taken::Outcome(s, stays))
    }

    /// Keep the outcome of the request `handle` names, found ended,
    /// without freeing or deactivating it ([`Slot::keep`],
    /// `MPI_Request_get_status`); `None`: it names no request.
    pub fn keep(&mut self, handle: usize) -> Option<Taken<G>> {
        let Some(slot) = self.slots.remove(&handle) else {
            return self.generalized.report(handle, false).map(Taken::Generalized);
        };
        let (s, slot) = slot.keep();
        self.slots.insert(handle, slot);
        Some(Taken::Outcome(s, true))
    }

    /// `MPI_Request_free` of `handle` (§3.7.3): an operation still under
    /// way goes on, and completes by itself; a generalized request's
    /// `free_fn` is due now (`Some(Some(callbacks))`) or at its completion
    /// (`Some(None)`). `None`: it names no request.
    pub fn free(&mut self, handle: usize) -> Option<Option<G>> {
        let Some(slot) = self.slots.remove(&handle) else {
            return self.generalized.free(handle);
        };
        self.detached.extend(slot.detach());
        Some(None)
    }

    /// At finalize: cancel every receive still under way, with a handle
    /// or freed, so that finalize cannot hang on one nothing will match;
    /// the number of requests still active with a handle (the program's
    /// error, §11.2.2).
    pub fn cancel_receives(&self) -> usize {
        for a in self.slots.values().filter_map(Slot::active).chain(&self.detached) {
            let _ = a.request.cancel_receive();
        }
        self.slots.values().filter(|s| s.active().is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persistent_request_is_idle_until_started_and_refuses_a_second_start() {
        let mut slot = Slot::persistent(7u8);
        assert!(matches!(slot.part(), Part::Idle));
        let Slot::Persistent(p) = &mut slot else { unreachable!("made persistent") };
        p.start(|&r| Ok(Started::Done(Status::new(i32::from(r), 1, 0)))).expect("first start");
        assert!(matches!(
            p.start(|_| Ok(Started::Done(Status::empty()))),
            Err(MpiError::Request(crate::error::RequestMisuse::StillActive))
        ));
        assert!(matches!(slot.part(), Part::Ended));
        // Reported once by get_status (kept), then completed: the same outcome.
        let (kept, slot) = slot.keep();
        let (s, left) = slot.complete();
        assert_eq!(kept.expect("kept").source_rank(), 7);
        assert_eq!(s.expect("completed").source_rank(), 7);
        // Inactive again: idle, and completing it gives the empty status.
        let left = left.expect("a persistent request stays");
        assert!(matches!(left.part(), Part::Idle));
        assert_eq!(left.complete().0.expect("empty"), Status::empty());
    }

    #[test]
    fn a_done_slot_reports_its_outcome_once() {
        let slot: Slot<()> = Slot::Done(Ok(Status::proc_null()));
        let (s, left) = slot.complete();
        assert_eq!(s.expect("done").source_rank(), crate::PROC_NULL);
        assert!(left.is_none());
    }

    #[test]
    fn a_table_of_requests_completes_keeps_and_frees_by_handle() {
        let mut t: Requests<u8, char> = Requests::default();
        t.insert(1, Slot::Done(Ok(Status::proc_null())));
        t.insert(2, Slot::persistent(5));
        t.generalized().start(3, 'g');
        assert!(matches!(t.part(1), Some(Part::Ended)) && matches!(t.part(2), Some(Part::Idle)));
        assert!(matches!(t.part(3), Some(Part::Held(crate::request::HeldBy::Generalized))));
        assert!(t.part(4).is_none() && t.take(4).is_none() && t.keep(4).is_none() && t.free(4).is_none());
        // Kept, then taken: the handle goes, the persistent one stays.
        assert!(matches!(t.keep(1), Some(Taken::Outcome(Ok(_), true))));
        assert!(matches!(t.take(1), Some(Taken::Outcome(Ok(_), false))));
        assert!(t.part(1).is_none());
        assert!(matches!(t.take(2), Some(Taken::Outcome(Ok(s), true)) if s == Status::empty()));
        assert!(t.part(2).is_some());
        // A generalized request is reported once complete, by its callbacks.
        assert!(t.take(3).is_none(), "not complete");
        assert!(matches!(t.generalized().complete(3), Ok(None)));
        assert!(matches!(t.keep(3), Some(Taken::Generalized('g'))));
        assert!(matches!(t.take(3), Some(Taken::Generalized('g'))));
        assert!(t.part(3).is_none());
        // Freed: gone at once; an inactive persistent request leaves nothing behind.
        assert!(matches!(t.free(2), Some(None)));
        assert!(t.part(2).is_none() && t.is_empty() && t.cancel_receives() == 0);
        assert!(t.detached.is_empty());
    }
}
