//! The scheduling rules, as pure functions of the parties' states and
//! clocks (DESIGN §3, after SimGrid's maestro). No files, no processes:
//! the cluster feeds them what it knows and moves the decision through the
//! control file with [`crate::model::ModelEnd`].
//!
//! * Exactly one party runs at a time: the model (processing its next
//!   event) or one actor.
//! * The next to run is the lowest simulated clock: a pending event before
//!   any actor whose clock is not earlier; actors in `(clock, index)` order.
//! * An actor runs until its clock passes its *horizon*: the earliest time
//!   at which anything else could affect what it reads.
//! * Waiting actors with nothing runnable and nothing pending: deadlock.
//! * Commands completing for a long stretch of simulated time without
//!   moving a byte: livelock.

use crate::simctl::ActorState;

/// What the scheduler needs to know about an actor.
pub trait Party {
    /// Its state as the model sees it (`Runnable`, `Waiting`, `Exited`, ...).
    fn state(&self) -> ActorState;
    /// Its simulated clock (ps).
    fn clock(&self) -> u64;
}

/// Who runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The model processes its next event.
    Event,
    /// This actor gets the token.
    Actor(usize),
    /// Actors wait for something that can never come: report a deadlock.
    Deadlock,
    /// Nothing to do until an actor attaches or a process changes.
    Idle,
}

/// The runnable actor with the lowest `(clock, index)`.
pub fn lowest_runnable<P: Party>(parties: &[P]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, a) in parties.iter().enumerate() {
        if a.state() == ActorState::Runnable && best.is_none_or(|b| a.clock() < parties[b].clock()) {
            best = Some(i);
        }
    }
    best
}

/// Decide who runs next. `next_event` is the time of the model's next
/// pending event; actors run only once the job has `started` (every
/// expected actor attached, so the schedule does not depend on start-up
/// order); deadlocks are reported only when the job size is `known`.
pub fn next<P: Party>(parties: &[P], next_event: Option<u64>, started: bool, known: bool) -> Next {
    let pick = if started { lowest_runnable(parties) } else { None };
    match (next_event, pick) {
        // An event at an actor's clock is processed before the actor runs.
        (Some(te), Some(i)) if te <= parties[i].clock() => Next::Event,
        (Some(_), None) => Next::Event,
        (_, Some(i)) => Next::Actor(i),
        (None, None) if started && known && parties.iter().any(|a| a.state() == ActorState::Waiting) => Next::Deadlock,
        (None, None) => Next::Idle,
    }
}

/// The horizon of actor `i`: the latest clock at which it may still read
/// without handing over. `bounds` are the earliest times at which pending
/// device events could affect it (the cluster computes them from the
/// model's pending effects); every other runnable actor's clock bounds it
/// too, since that actor may ring a doorbell then. One picosecond before
/// the earliest of them: an event at `t` is processed before an actor whose
/// clock reached `t` runs.
pub fn horizon<P: Party>(i: usize, parties: &[P], bounds: impl IntoIterator<Item = u64>) -> u64 {
    let mut h = u64::MAX;
    for b in bounds {
        h = h.min(b.saturating_sub(1));
    }
    for (j, a) in parties.iter().enumerate() {
        if j != i && a.state() == ActorState::Runnable {
            h = h.min(a.clock());
        }
    }
    h
}

/// A livelock: commands completed for a stretch of simulated time without
/// moving a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Livelock {
    /// Commands completed in the stretch.
    pub commands: u64,
    /// Length of the stretch (ps).
    pub over_ps: u64,
}

/// Watches the device's progress for livelocks.
#[derive(Clone, Copy, Debug)]
pub struct ProgressWatch {
    window_ps: u64,
    min_commands: u64,
    /// Commands, bytes and time at the last progress.
    last: (u64, u64, u64),
}

impl ProgressWatch {
    /// Report a livelock after `window_ps` of simulated time and at least
    /// `min_commands` commands without a byte moved.
    pub fn new(window_ps: u64, min_commands: u64) -> ProgressWatch {
        ProgressWatch { window_ps, min_commands, last: (0, 0, 0) }
    }

    /// The device has completed `commands` commands moving `bytes` bytes in
    /// all by time `t`. A livelock is reported once per stretch.
    pub fn observe(&mut self, commands: u64, bytes: u64, t: u64) -> Option<Livelock> {
        let (c0, b0, t0) = self.last;
        if bytes != b0 {
            self.last = (commands, bytes, t);
            return None;
        }
        let (n, over) = (commands.saturating_sub(c0), t.saturating_sub(t0));
        if n < self.min_commands || over < self.window_ps {
            return None;
        }
        self.last = (commands, bytes, t);
        Some(Livelock { commands: n, over_ps: over })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug)]
    struct A(ActorState, u64);
    impl Party for A {
        fn state(&self) -> ActorState {
            self.0
        }
        fn clock(&self) -> u64 {
            self.1
        }
    }
    use ActorState::{Exited, Runnable, Waiting};

    #[test]
    fn the_lowest_clock_runs_first_and_ties_go_to_the_lower_index() {
        let p = [A(Runnable, 50), A(Waiting, 10), A(Runnable, 20), A(Runnable, 20)];
        assert_eq!(lowest_runnable(&p), Some(2));
        assert_eq!(next(&p, Some(30), true, true), Next::Actor(2));
        assert_eq!(next(&p, Some(20), true, true), Next::Event, "an event at the actor's clock goes first");
        assert_eq!(next(&p, Some(19), true, true), Next::Event);
        assert_eq!(next(&p, None, true, true), Next::Actor(2));
    }

    #[test]
    fn nobody_runs_before_the_job_has_started() {
        let p = [A(Runnable, 0)];
        assert_eq!(next(&p, None, false, true), Next::Idle);
        assert_eq!(next(&p, Some(5), false, true), Next::Event);
    }

    #[test]
    fn waiting_with_nothing_pending_is_a_deadlock_only_for_a_known_job() {
        let p = [A(Waiting, 5), A(Exited, 9)];
        assert_eq!(next(&p, None, true, true), Next::Deadlock);
        assert_eq!(next(&p, None, true, false), Next::Idle);
        assert_eq!(next(&p, Some(7), true, true), Next::Event, "a pending event may still wake it");
        assert_eq!(next(&[A(Exited, 1)], None, true, true), Next::Idle);
    }

    #[test]
    fn the_horizon_stops_before_every_other_runnable_clock_and_every_bound() {
        let p = [A(Runnable, 10), A(Runnable, 40), A(Waiting, 15), A(Exited, 12)];
        assert_eq!(horizon(0, &p, []), 40);
        assert_eq!(horizon(0, &p, [100, 30]), 29);
        assert_eq!(horizon(1, &p, []), 10);
        assert_eq!(horizon(0, &[A(Runnable, 0)], []), u64::MAX);
        assert_eq!(horizon(0, &[A(Runnable, 0)], [0]), 0, "a bound at 0 saturates");
    }

    proptest! {
        /// The party chosen to run never has a clock above anyone's horizon
        /// (no one reads past the moment another party could act).
        #[test]
        fn the_chosen_actor_is_within_every_other_horizon(clocks in proptest::collection::vec((0u64..1000, any::<bool>()), 1..8)) {
            let p: Vec<A> = clocks.iter().map(|&(c, r)| A(if r { Runnable } else { Waiting }, c)).collect();
            if let Some(i) = lowest_runnable(&p) {
                for j in 0..p.len() {
                    if j != i && p[j].0 == Runnable {
                        prop_assert!(p[i].1 <= horizon(j, &p, []));
                        prop_assert!(horizon(i, &p, []) >= p[i].1);
                    }
                }
            }
        }
    }

    #[test]
    fn a_livelock_needs_both_the_window_and_the_commands_and_progress_resets_it() {
        let mut w = ProgressWatch::new(1000, 10);
        assert_eq!(w.observe(5, 0, 2000), None, "too few commands");
        assert_eq!(w.observe(12, 0, 500), None, "too short");
        assert_eq!(w.observe(12, 0, 1000), Some(Livelock { commands: 12, over_ps: 1000 }));
        assert_eq!(w.observe(13, 0, 1500), None, "reported once per stretch");
        assert_eq!(w.observe(30, 8, 5000), None, "bytes moved: progress");
        assert_eq!(w.observe(45, 8, 5999), None);
        assert_eq!(w.observe(45, 8, 6000), Some(Livelock { commands: 15, over_ps: 1000 }));
    }
}
