//! How far an actor may run before it hands over (DESIGN §3,
//! conservative synchronization with lookahead): the bounds from the
//! model's pending events and the other runnable actors' clocks, and the
//! earliest time a packet can reach each slot.

use super::*;

impl Cluster {
    /// What bounds actor `i`'s horizon (see [`scheduler::horizon`]): the
    /// earliest pending events at its slot, its node and anywhere (the
    /// model indexes them per slot), and the lowest clocks of the other
    /// runnable actors of its node (at most a node's slots to look at) and
    /// anywhere (the first two of the runnable order). Conservative
    /// (DESIGN §3): nothing else can change its slot before the horizon
    /// these give, so every read, positive or negative, sees the device
    /// exactly as of the actor's clock. The actor's own unreported
    /// doorbells are bounded on its side (it knows when it rang; see
    /// `doorbell_lookahead` in the control file).
    pub(super) fn bounds(&mut self, i: usize) -> Bounds {
        if !self.model.is_indexed() {
            return self.scanned_bounds(i);
        }
        self.refresh_reach();
        let a = &self.actors[i];
        let me = Peer::new(a.node, a.slot);
        let node_actor = (0..self.cfg.slots)
            .filter_map(|s| self.by_slot[layout::source_index(a.node, s, self.cfg.slots)])
            .filter(|&j| j != i && self.actors[j].state == ActorState::Runnable)
            .map(|j| self.actors[j].clock.0)
            .min();
        // The lowest runnable actor of another node: at most this node's
        // actors come before it in the order.
        let other_actor = self.runnable.first_except(a.node as usize).map(|(c, _)| c);
        let node_event =
            (0..self.cfg.slots).filter(|s| *s != me.slot).filter_map(|s| self.slot_reach(Peer::new(me.node, s))).min();
        let other_event = self.nodes_by_reach.first_except(me.node as usize).map(|(t, _)| t);
        let (own_send, reply_near, reply_far) = self.model.next_send_at(me);
        let b = Bounds {
            own_send: own_send.map(|t| t.0),
            reply_near: reply_near.map(|t| t.0),
            reply_far: reply_far.map(|t| t.0),
            node_event,
            other_event,
            node_actor,
            other_actor,
        };
        debug_assert_eq!(b, self.scanned_bounds(i), "indexed bounds of actor {i}");
        b
    }

    /// [`Cluster::bounds`] by a scan of every actor and pending event
    /// ([`Bounds::scan`]): what a small cluster uses, and what a large
    /// one's indexes are checked against in debug builds.
    fn scanned_bounds(&self, i: usize) -> Bounds {
        use simlink::scheduler::{Pending, Sent, SlotView};
        let place = |j: usize| (self.actors[j].node, self.actors[j].slot);
        let sent = |p: Peer, s: crate::model::Sends| match s {
            crate::model::Sends::Nothing => Sent::Nothing,
            crate::model::Sends::MaySelf => Sent::MaySelf,
            crate::model::Sends::To(to) if to.node == p.node => Sent::Near,
            crate::model::Sends::To(_) => Sent::Far,
        };
        let events = self.model.pending_events().map(|(t, p, s, touches)| Pending {
            time: t.0,
            node: p.node,
            slot: p.slot,
            sent: sent(p, s),
            touches: touches.bits(),
        });
        let view = |node: u16, slot: u16| {
            let p = Peer::new(node, slot);
            let waiting = self.actor_at(p).filter(|a| a.state == ActorState::Waiting).map(|a| a.watch_regions);
            SlotView { stalled: self.model.engine_stalled(p), waiting }
        };
        Bounds::scan(i, &self.actors, place, events, view, self.wake)
    }

    /// The actor attached to `p`'s slot, if any.
    fn actor_at(&self, p: Peer) -> Option<&Actor> {
        self.by_slot
            .get(layout::source_index(p.node, p.slot, self.cfg.slots))
            .copied()
            .flatten()
            .map(|j| &self.actors[j])
    }

    /// The earliest time a pending event at `p`'s slot may reach another
    /// slot: when it may put a packet on the wire (any event while the
    /// slot's engine is stalled), or, if the slot's actor waits, when it
    /// may wake it by writing a region it watches, plus the time the actor
    /// needs to act ([`Model::wake_latency`]). Events that do neither
    /// touch nothing anyone else can read.
    fn slot_reach(&self, p: Peer) -> Option<u64> {
        let packet = self.model.next_packet_at(p).map(|t| t.0);
        let waking = match self.actor_at(p) {
            Some(a) if a.state == ActorState::Waiting => {
                self.model.next_event_touching_any(p, a.watch_regions).map(|t| t.0.saturating_add(self.wake))
            }
            _ => None,
        };
        [packet, waking].into_iter().flatten().min()
    }

    /// Bring the per-node reach index up to date with the model's changed
    /// slots and the actors that started or stopped waiting.
    fn refresh_reach(&mut self) {
        let mut changed = std::mem::take(&mut self.changed_slots);
        self.model.take_changed_slots(&mut changed);
        self.stale_nodes.extend(changed.iter().map(|p| p.node));
        self.changed_slots = changed;
        if self.stale_nodes.is_empty() {
            return;
        }
        let mut stale = std::mem::take(&mut self.stale_nodes);
        // Each node once (the list repeats them: every event at a slot
        // names its node); in any order, since each node's reach is its own.
        for &n in &stale {
            if std::mem::replace(&mut self.stale_seen[n as usize], true) {
                continue;
            }
            let reach = (0..self.cfg.slots).filter_map(|s| self.slot_reach(Peer::new(n, s))).min();
            let old = self.node_reach[n as usize];
            if old == reach {
                continue;
            }
            self.node_reach[n as usize] = reach;
            self.nodes_by_reach.set(n as usize, reach.map(|t| (t, u32::from(n))));
        }
        for &n in &stale {
            self.stale_seen[n as usize] = false;
        }
        stale.clear();
        self.stale_nodes = stale;
    }

    /// The horizons of actor `i`'s reads of each region: what other
    /// parties allow (`outside_ring`, the LLCM one, is [`scheduler::horizon`]
    /// with the ring lookahead, given by the caller who computed it), or
    /// earlier if one of its own slot's pending
    /// events writes that region sooner. PW, which only the slot's own
    /// commands write, is not bounded by other parties while none of its
    /// remote reads is in flight.
    pub(super) fn region_horizons(&self, i: usize, b: &Bounds, outside_ring: u64) -> RegionHorizons {
        let me = Peer::new(self.actors[i].node, self.actors[i].slot);
        let own = |r: Touches| self.model.next_event_touching(me, r).map_or(u64::MAX, |t| t.0.saturating_sub(1));
        // Any packet may change UR (counters, completions); LLCM changes
        // only when an IVS record is committed, a ring latency later.
        let outside = scheduler::horizon(b, self.hops);
        let outside_pw = if self.model.remote_reads_in_flight(me) { outside } else { u64::MAX };
        RegionHorizons {
            ur: outside.min(own(Touches::UR)),
            llcm: outside_ring.min(own(Touches::LLCM)),
            pw: outside_pw.min(own(Touches::PW)),
        }
    }

    /// The shortest time for anything at actor `i`'s slot to reach another
    /// live actor's slot (see `ActorRecord::reach`).
    pub(super) fn reach(&self, i: usize) -> SimTime {
        let a = &self.actors[i];
        let mine = u32::from(matches!(a.state, ActorState::Runnable | ActorState::Waiting));
        let on_node = self.live_on_node[a.node as usize] - mine;
        if on_node > 0 {
            SimTime(self.hops.same_node)
        } else if self.live - mine > on_node {
            SimTime(self.hops.other_node)
        } else {
            SimTime::NEVER
        }
    }
}
