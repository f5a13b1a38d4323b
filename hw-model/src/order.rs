//! The smallest of a set of entries, one per place, kept up to date as
//! entries change: a tournament tree.
//!
//! The scheduler asks, after every hand-over, for the smallest entry (the
//! lowest runnable actor) and for the smallest one anywhere but at one
//! place (the lowest runnable actor of another node, the earliest
//! reaching node other than one's own), and changes an entry at nearly
//! every hand-over. A tournament tree over the places answers both from
//! one array: each inner node holds the smaller of its children, a change
//! is one walk up its place's path (`log2(places)` steps, stopping where
//! nothing changes), the smallest entry is the root, and the smallest
//! anywhere but at place `p` is the smallest of the siblings along `p`'s
//! path. (Before issue 46 a `BTreeSet` did this: a few hundred
//! instructions and an allocation per change, and a walk per question; at
//! 1,024 ranks it was the scheduler's largest cost.)

/// An entry: a key (a clock, a time) and an id that breaks ties (an
/// actor's record, a node).
pub type Entry = (u64, u32);

/// The empty place (after every real entry).
const EMPTY: Entry = (u64::MAX, u32::MAX);

/// A tournament tree over `places` places (see the module's documentation).
#[derive(Debug)]
pub struct Order {
    leaves: usize,
    nodes: Vec<Entry>,
}

impl Order {
    /// An empty tree over places `0..places` (it grows if a later place is set).
    pub fn new(places: usize) -> Order {
        let leaves = places.max(1).next_power_of_two();
        Order { leaves, nodes: vec![EMPTY; 2 * leaves] }
    }

    /// Put `entry` at place `p` (replacing what was there), or empty it with `None`.
    pub fn set(&mut self, p: usize, entry: Option<Entry>) {
        if p >= self.leaves {
            if entry.is_none() {
                return;
            }
            let mut bigger = Order::new(p + 1);
            for (k, e) in self.nodes[self.leaves..].iter().enumerate() {
                if *e != EMPTY {
                    bigger.set(k, Some(*e));
                }
            }
            *self = bigger;
        }
        let mut i = self.leaves + p;
        self.nodes[i] = entry.unwrap_or(EMPTY);
        while i > 1 {
            i /= 2;
            let m = self.nodes[2 * i].min(self.nodes[2 * i + 1]);
            if self.nodes[i] == m {
                break; // nothing above changes either
            }
            self.nodes[i] = m;
        }
    }

    /// The entry at place `p`.
    pub fn get(&self, p: usize) -> Option<Entry> {
        self.nodes.get(self.leaves + p).copied().filter(|e| *e != EMPTY)
    }

    /// The smallest entry.
    pub fn first(&self) -> Option<Entry> {
        Some(self.nodes[1]).filter(|e| *e != EMPTY)
    }

    /// The smallest entry at a place other than `p`.
    pub fn first_except(&self, p: usize) -> Option<Entry> {
        if p >= self.leaves {
            return self.first();
        }
        let mut m = EMPTY;
        let mut i = self.leaves + p;
        while i > 1 {
            m = m.min(self.nodes[i ^ 1]);
            i /= 2;
        }
        Some(m).filter(|e| *e != EMPTY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The tree answers as a scan of the places does, under any
        /// sequence of changes (starting smaller than the places, so that
        /// it grows too).
        #[test]
        fn the_tree_answers_as_a_scan(ops in proptest::collection::vec((0usize..40, 0u64..100, 0u32..9, any::<bool>()), 0..200)) {
            let mut tree = Order::new(20);
            let mut places: Vec<Option<Entry>> = vec![None; 40];
            for (p, key, id, put) in ops {
                let e = put.then_some((key, id));
                tree.set(p, e);
                places[p] = e;
                let scan = |skip: Option<usize>| places.iter().enumerate().filter(|(q, _)| Some(*q) != skip).filter_map(|(_, e)| *e).min();
                prop_assert_eq!(tree.first(), scan(None));
                for q in [0, 7, 33, 39, 100] {
                    prop_assert_eq!(tree.first_except(q), scan(Some(q)));
                }
                prop_assert_eq!(tree.get(p), e);
            }
        }
    }
}
