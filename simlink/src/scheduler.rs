//! The scheduling rules, as pure functions of the parties' states and
//! clocks (DESIGN §3, after SimGrid's maestro, with the lookahead of
//! conservative parallel discrete-event simulation). No files, no
//! processes: the cluster feeds them what it knows and moves the decision
//! through the control file with [`crate::model::ModelEnd`].
//!
//! * Exactly one party runs at a time: the model (processing its next
//!   event) or one actor.
//! * The next to run is the lowest simulated clock: a pending event before
//!   any actor whose clock is not earlier; actors in `(clock, index)` order.
//! * An actor runs until its clock passes its *horizon*: the earliest time
//!   at which anything else could change a word of its slot, less one
//!   picosecond. Nothing reaches a slot but a packet, and a packet takes at
//!   least the [`Lookahead`] of its path (the loopback of a node, or the
//!   network); so an actor may run ahead of every other party by that much
//!   (SST's synchronisation window, Chandy–Misra–Bryant's lookahead). A
//!   waiting actor bounds nobody: it can act only after an event at its
//!   own slot wakes it, and that event bounds everyone already.
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

/// The runnable actor with the lowest `(clock, index)`, by a scan (the
/// cluster keeps them ordered; this is the reference it is checked against).
pub fn lowest_runnable<P: Party>(parties: &[P]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, a) in parties.iter().enumerate() {
        if a.state() == ActorState::Runnable && best.is_none_or(|b| a.clock() < parties[b].clock()) {
            best = Some(i);
        }
    }
    best
}

/// Decide who runs next. `lowest` is the runnable actor with the lowest
/// `(clock, index)`; `next_event` the time of the model's next pending
/// event. Actors run only once the job has `started` (every expected
/// actor attached, so the schedule does not depend on start-up order);
/// deadlocks are reported only when the job size is `known` and some
/// actor is `waiting`.
pub fn next(lowest: Option<(u64, usize)>, next_event: Option<u64>, started: bool, known: bool, waiting: bool) -> Next {
    let pick = if started { lowest } else { None };
    match (next_event, pick) {
        // An event at an actor's clock is processed before the actor runs.
        (Some(te), Some((clock, _))) if te <= clock => Next::Event,
        (Some(_), None) => Next::Event,
        (_, Some((_, i))) => Next::Actor(i),
        (None, None) if started && known && waiting => Next::Deadlock,
        (None, None) => Next::Idle,
    }
}

/// The clock a poked waiting actor resumes at ([`crate::actor::Poker`]):
/// its own, or `latest`, the latest time the model has seen (the last
/// event processed, the latest clock an actor handed over at), whichever is
/// later. The model looks at pokes between parties, when nobody runs, so
/// every other clock is at or below `latest`: whatever the actor does next
/// reaches anyone a lookahead later still, and nobody's past changes. Its
/// own slot's pending events before that clock are processed before it runs
/// (see [`next`]), so it reads no stale word either.
pub fn poked_clock(own: u64, latest: u64) -> u64 {
    own.max(latest)
}

/// How long (wall time) the simulation may stall, every live actor
/// waiting with nothing in flight, while a waiting actor's process has
/// other threads that could still wake it
/// ([`crate::simctl::ActorRecord::threaded`]), before the stall is
/// reported as a deadlock after all. Such a thread may be computing, or may itself
/// wait for ever (a `pthread_join` on the thread that waits in MPI): the
/// simulator cannot tell which.
pub const POKE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether a stall ([`Next::Deadlock`]) that has lasted `stalled_for` is
/// reported: at once if no waiting actor can be poked (`pokeable`), else
/// after [`POKE_PATIENCE`].
pub fn report_stall(pokeable: bool, stalled_for: std::time::Duration) -> bool {
    !pokeable || stalled_for >= POKE_PATIENCE
}

/// The shortest time (ps) for anything at one slot to change another slot
/// (see `hw_model::Model::hop`): through the node's loopback path, or
/// across the network. Both are at least a picosecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lookahead {
    /// Between two slots of one node.
    pub same_node: u64,
    /// Between slots of different nodes.
    pub other_node: u64,
    /// The first leg of a round trip, a packet's plain hop, within a node
    /// (the way back is `same_node` or `other_node`).
    pub leg_same: u64,
    /// The same across nodes.
    pub leg_other: u64,
}

impl Lookahead {
    /// A lookahead of `same`/`other` with round trips of plain hops `leg_same`/`leg_other` out.
    pub fn new(same_node: u64, other_node: u64, leg_same: u64, leg_other: u64) -> Lookahead {
        Lookahead { same_node, other_node, leg_same, leg_other }
    }
}

/// Where a pending event at an actor's own slot may send a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Nowhere.
    Nothing,
    /// Anywhere, the slot itself included.
    MaySelf,
    /// Only to another slot of the same node.
    Near,
    /// Only to a slot of another node.
    Far,
}

/// The earliest things at *other* slots that could change an actor's
/// slot, gathered by where they are (times in ps). The actor's own slot's
/// pending events bound its reads of the regions they write, region by
/// region (the cluster does that); they do not bound it here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds {
    /// The earliest pending event at its own slot that may send a packet to
    /// the slot itself (through the loopback).
    pub own_send: Option<u64>,
    /// The earliest pending event at its own slot that sends only to
    /// another slot of its node: something may come back a round trip later.
    pub reply_near: Option<u64>,
    /// The same, to a slot of another node.
    pub reply_far: Option<u64>,
    /// The earliest time a pending event at another slot of its node may
    /// put a packet on the wire, or wake that slot's waiting actor (plus
    /// the time the actor needs to act: see [`Bounds::scan`]).
    pub node_event: Option<u64>,
    /// The same for the slots of other nodes.
    pub other_event: Option<u64>,
    /// The lowest clock of another runnable actor of its node.
    pub node_actor: Option<u64>,
    /// The lowest clock of a runnable actor of another node.
    pub other_actor: Option<u64>,
}

/// A pending event as [`Bounds::scan`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// When it happens (ps).
    pub time: u64,
    /// The node and slot whose words it changes.
    pub node: u16,
    /// See `node`.
    pub slot: u16,
    /// Where it may send a packet.
    pub sent: Sent,
    /// The regions of its slot it (or what it schedules there) may write, as bits.
    pub touches: u8,
}

/// What [`Bounds::scan`] needs to know about a slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotView {
    /// Its command engine waits for a completion entry: the next completion
    /// restarts it, and it may then send anything.
    pub stalled: bool,
    /// The regions its actor watches while it waits (bits); `None` when no
    /// actor waits there.
    pub waiting: Option<u8>,
}

impl Bounds {
    /// The bounds of actor `i` by a scan over every party and every
    /// pending event: the reference the cluster's indexed computation must
    /// equal. `where_is(j)` gives actor `j`'s `(node, slot)`, `view` what
    /// is known of a slot. An event at another slot matters when it may
    /// send a packet (always, while its engine is stalled), or may wake the
    /// actor waiting there (it writes a region the actor watches): that
    /// actor can act `wake` after it (ring a doorbell that is then fetched
    /// and executed, or free ring space whose held packet is then written).
    /// Otherwise it touches nothing anyone reads.
    pub fn scan<P: Party>(
        i: usize,
        parties: &[P],
        where_is: impl Fn(usize) -> (u16, u16),
        events: impl IntoIterator<Item = Pending>,
        view: impl Fn(u16, u16) -> SlotView,
        wake: u64,
    ) -> Bounds {
        let me = where_is(i);
        let mut b = Bounds::default();
        let low = |o: &mut Option<u64>, t: u64| *o = Some(o.map_or(t, |x| x.min(t)));
        for e in events {
            let (t, node, slot) = (e.time, e.node, e.slot);
            if (node, slot) == me {
                match if view(node, slot).stalled { Sent::MaySelf } else { e.sent } {
                    Sent::Nothing => {}
                    Sent::MaySelf => low(&mut b.own_send, t),
                    Sent::Near => low(&mut b.reply_near, t),
                    Sent::Far => low(&mut b.reply_far, t),
                }
                continue;
            }
            let v = view(node, slot);
            let reach = if e.sent != Sent::Nothing || v.stalled {
                t
            } else if v.waiting.is_some_and(|w| w & e.touches != 0) {
                t.saturating_add(wake)
            } else {
                continue;
            };
            low(if node == me.0 { &mut b.node_event } else { &mut b.other_event }, reach);
        }
        for (j, a) in parties.iter().enumerate() {
            if j != i && a.state() == ActorState::Runnable {
                low(if where_is(j).0 == me.0 { &mut b.node_actor } else { &mut b.other_actor }, a.clock());
            }
        }
        b
    }
}

/// The horizon of an actor: the latest clock at which it may still read
/// its slot without handing over, as far as other parties are concerned.
/// An event at another slot, or another runnable actor (which may ring a
/// doorbell, or free ring space, at its clock), can change the slot only
/// a lookahead later, by a packet; an event at its own slot that sends
/// one, at the earliest a loopback later (a packet to itself), or a round
/// trip later when it sends only elsewhere. One picosecond before the earliest of
/// these: an event at `t` is processed before an actor whose clock reached
/// `t` runs. `u64::MAX` when nothing bounds it.
pub fn horizon(b: &Bounds, l: Lookahead) -> u64 {
    let later = |t: Option<u64>, by: u64| t.map(|t| t.saturating_add(by));
    [
        later(b.own_send, l.same_node),
        later(b.reply_near, l.leg_same.saturating_add(l.same_node)),
        later(b.reply_far, l.leg_other.saturating_add(l.other_node)),
        later(b.node_event, l.same_node),
        later(b.other_event, l.other_node),
        later(b.node_actor, l.same_node),
        later(b.other_actor, l.other_node),
    ]
    .into_iter()
    .flatten()
    .min()
    .map_or(u64::MAX, |t| t.saturating_sub(1))
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
    use ActorState::{Runnable, Waiting};

    #[test]
    fn a_poked_actor_resumes_no_earlier_than_anything_seen() {
        assert_eq!(poked_clock(5, 9), 9);
        assert_eq!(poked_clock(12, 9), 12);
    }

    #[test]
    fn a_stall_with_threads_outside_is_reported_only_after_the_patience() {
        use std::time::Duration;
        assert!(report_stall(false, Duration::ZERO));
        assert!(!report_stall(true, Duration::ZERO));
        assert!(!report_stall(true, POKE_PATIENCE - Duration::from_millis(1)));
        assert!(report_stall(true, POKE_PATIENCE));
    }

    #[test]
    fn the_lowest_clock_runs_first_and_ties_go_to_the_lower_index() {
        let p = [A(Runnable, 50), A(Waiting, 10), A(Runnable, 20), A(Runnable, 20)];
        assert_eq!(lowest_runnable(&p), Some(2));
        let low = Some((20, 2));
        assert_eq!(next(low, Some(30), true, true, true), Next::Actor(2));
        assert_eq!(next(low, Some(20), true, true, true), Next::Event, "an event at the actor's clock goes first");
        assert_eq!(next(low, Some(19), true, true, true), Next::Event);
        assert_eq!(next(low, None, true, true, true), Next::Actor(2));
    }

    #[test]
    fn nobody_runs_before_the_job_has_started() {
        assert_eq!(next(Some((0, 0)), None, false, true, false), Next::Idle);
        assert_eq!(next(Some((0, 0)), Some(5), false, true, false), Next::Event);
    }

    #[test]
    fn waiting_with_nothing_pending_is_a_deadlock_only_for_a_known_job() {
        assert_eq!(next(None, None, true, true, true), Next::Deadlock);
        assert_eq!(next(None, None, true, false, true), Next::Idle);
        assert_eq!(next(None, Some(7), true, true, true), Next::Event, "a pending event may still wake it");
        assert_eq!(next(None, None, true, true, false), Next::Idle, "everyone left");
    }

    const L: Lookahead = Lookahead { same_node: 100, other_node: 1000, leg_same: 80, leg_other: 900 };

    #[test]
    fn the_horizon_is_a_lookahead_past_other_parties() {
        let nothing = Bounds::default();
        assert_eq!(horizon(&nothing, L), u64::MAX);
        let near = Bounds { node_event: Some(500), ..nothing };
        assert_eq!(horizon(&near, L), 599, "an event at another slot of its node: a loopback later");
        let far = Bounds { other_event: Some(500), ..nothing };
        assert_eq!(horizon(&far, L), 1499, "an event on another node: a network hop later");
        let both = Bounds { node_event: Some(1500), other_event: Some(500), ..nothing };
        assert_eq!(horizon(&both, L), 1499);
        let own = Bounds { own_send: Some(500), other_event: Some(900), ..nothing };
        assert_eq!(horizon(&own, L), 599, "its own slot sends a packet: it may come back through the loopback");
        let reply = Bounds { reply_far: Some(500), ..nothing };
        assert_eq!(horizon(&reply, L), 500 + 900 + 1000 - 1, "a reply to another node: a round trip");
        let near = Bounds { reply_near: Some(500), reply_far: Some(500), ..nothing };
        assert_eq!(horizon(&near, L), 500 + 80 + 100 - 1, "a reply within the node comes back sooner");
        let actors = Bounds { node_actor: Some(40), other_actor: Some(30), ..nothing };
        assert_eq!(horizon(&actors, L), 139, "a runnable neighbour");
        let remote = Bounds { node_actor: Some(900), other_actor: Some(30), ..nothing };
        assert_eq!(horizon(&remote, L), 999, "a remote actor bounds by its clock plus the network");
        let zero = Lookahead::new(1, 1, 1, 1);
        assert_eq!(horizon(&Bounds { node_event: Some(0), ..nothing }, zero), 0, "a bound at 0 saturates");
    }

    proptest! {
        /// The horizon never reaches a time at which any single other party
        /// could already have changed the actor's slot, and is the latest
        /// that does not: the scan's aggregates lose nothing.
        #[test]
        fn the_horizon_is_the_latest_safe_clock(
            parties in proptest::collection::vec((0u64..5000, any::<bool>(), 0u16..3, 0u8..8), 1..10),
            events in proptest::collection::vec((0u64..5000, 0u16..3, 0u16..4, 0u8..4, 1u8..8), 0..10),
            stalled in proptest::collection::vec(any::<bool>(), 12),
        ) {
            let p: Vec<A> = parties.iter().map(|&(c, r, _, _)| A(if r { Runnable } else { Waiting }, c)).collect();
            // Actor j sits at (node, j): slots are distinct; slots without one exist too.
            let where_is = |j: usize| (parties[j].2, j as u16);
            let sent = |k: u8| [Sent::Nothing, Sent::MaySelf, Sent::Near, Sent::Far][k as usize];
            let view = |n: u16, s: u16| SlotView {
                stalled: stalled[(n as usize * 4 + s as usize) % stalled.len()],
                waiting: p.iter().enumerate().find(|(j, a)| where_is(*j) == (n, s) && a.0 == Waiting).map(|(j, _)| parties[j].3),
            };
            const WAKE: u64 = 60;
            for i in 0..p.len() {
                let evs = events.iter().map(|&(t, n, s, k, touches)| Pending { time: t, node: n, slot: s, sent: sent(k), touches });
                let h = horizon(&Bounds::scan(i, &p, where_is, evs, view, WAKE), L);
                let me = where_is(i);
                let hop = |n: u16| if n == me.0 { L.same_node } else { L.other_node };
                let mut first = u64::MAX;
                for &(t, n, s, k, touches) in &events {
                    let v = view(n, s);
                    let class = if v.stalled { Sent::MaySelf } else { sent(k) };
                    let back = if (n, s) == me {
                        match class {
                            Sent::Nothing => u64::MAX,
                            Sent::MaySelf => t + L.same_node,
                            Sent::Near => t + L.leg_same + L.same_node,
                            Sent::Far => t + L.leg_other + L.other_node,
                        }
                    } else if class != Sent::Nothing {
                        t + hop(n)
                    } else if v.waiting.is_some_and(|w| w & touches != 0) {
                        t + WAKE + hop(n)
                    } else {
                        u64::MAX
                    };
                    first = first.min(back);
                }
                for (j, a) in p.iter().enumerate() {
                    if j != i && a.0 == Runnable {
                        first = first.min(a.1 + hop(where_is(j).0));
                    }
                }
                prop_assert_eq!(h, if first == u64::MAX { u64::MAX } else { first - 1 });
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
