//! The model's pending events, in the order they are processed.
//!
//! Events leave in `(time, slot, seq)` order (see [`Key`]). The heap holds
//! only the 24-byte keys and an index; the events themselves (a packet in
//! flight carries its payload's vector and header, over a hundred bytes)
//! stay where they were put until they are taken. A heap of whole events
//! moved each one several times per push and pop; this one moves keys.
//! The facts the scheduler asks of each pending event (the slot it
//! changes, what it may send, which regions it may write) are computed
//! once, when it is scheduled, and kept beside it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fpga_regs::Peer;

use super::{Event, Sends, Touches};
use crate::time::SimTime;

/// Where an event stands in the order: time, then the slot it changes
/// (its source index), then the order it was scheduled in. Ties broken by
/// slot first keep equal-time events at different slots (which may
/// contend for their node's SO-DIMM port or link) in an order that does
/// not depend on when each process happened to report its doorbells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: SimTime,
    slot: u32,
    seq: u64,
    /// Where the event is kept (not part of the order: `seq` is unique).
    at: u32,
}

/// A pending event and what the scheduler needs to know about it.
#[derive(Debug)]
pub(crate) struct Entry {
    pub event: Event,
    pub time: SimTime,
    pub seq: u64,
    /// The slot whose words it changes ([`Event::at`]).
    pub peer: Peer,
    pub sends: Sends,
    pub touches: Touches,
}

/// Pending events (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Agenda {
    heap: BinaryHeap<Reverse<Key>>,
    entries: Vec<Option<Entry>>,
    /// Indexes of empty places in `entries`.
    free: Vec<u32>,
}

impl Agenda {
    /// Schedule `event` at `time` (`slot`: the source index of the slot it
    /// changes; `seq`: unique and increasing).
    pub fn push(&mut self, time: SimTime, slot: u32, seq: u64, event: Event) {
        let entry = Entry { peer: event.at(), sends: event.sends(), touches: event.touches(), event, time, seq };
        let at = match self.free.pop() {
            Some(k) => {
                self.entries[k as usize] = Some(entry);
                k
            }
            None => {
                // More pending events than fit an index is beyond any
                // cluster the register map can describe; saturating keeps
                // the arithmetic total.
                let k = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
                self.entries.push(Some(entry));
                k
            }
        };
        self.heap.push(Reverse(Key { time, slot, seq, at }));
    }

    /// Take the first event.
    pub fn pop(&mut self) -> Option<Entry> {
        let Reverse(key) = self.heap.pop()?;
        let entry = self.entries.get_mut(key.at as usize).and_then(Option::take);
        self.free.push(key.at);
        debug_assert!(entry.as_ref().is_some_and(|e| e.seq == key.seq), "agenda entry {} lost", key.seq);
        entry
    }

    /// The time of the first event.
    pub fn first_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse(k)| k.time)
    }

    /// Every pending event, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.entries.iter().flatten()
    }
}
