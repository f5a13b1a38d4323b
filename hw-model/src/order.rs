//! A set of `(key, id)` pairs kept in order only when it is worth it.
//!
//! The scheduler asks for the smallest entry, and for the smallest one
//! that passes a test (the lowest runnable actor of another node, the
//! earliest reaching node other than one's own), after every hand-over. A
//! `BTreeSet` answers in O(log n), but costs a few hundred instructions to
//! keep up to date on every change; with a handful of entries a scan of a
//! plain list is cheaper, and it is what a 2-rank job (the paper's
//! ping-pong) hands over through most. So an `Order` of up to
//! [`SCAN_LIMIT`] possible ids is a list scanned on demand, and a larger
//! one a tree.

use std::collections::BTreeSet;

/// The most ids an [`Order`] keeps as a plain list.
pub const SCAN_LIMIT: usize = 16;

/// A set of `(key, id)`, `id < capacity`, at most one entry per id.
#[derive(Debug)]
pub enum Order {
    /// The key of each id, if it is in the set.
    Scan(Vec<Option<u64>>),
    /// The entries in order.
    Tree(BTreeSet<(u64, usize)>),
}

impl Order {
    /// An empty set for ids below `capacity`.
    pub fn new(capacity: usize) -> Order {
        if capacity <= SCAN_LIMIT {
            Order::Scan(vec![None; capacity])
        } else {
            Order::Tree(BTreeSet::new())
        }
    }

    /// Put `id` in with `key` (it was not in).
    pub fn insert(&mut self, key: u64, id: usize) {
        match self {
            Order::Scan(v) => {
                if id >= v.len() {
                    v.resize(id + 1, None);
                }
                v[id] = Some(key);
            }
            Order::Tree(t) => {
                t.insert((key, id));
            }
        }
    }

    /// Take `id` out (it was in with `key`).
    pub fn remove(&mut self, key: u64, id: usize) {
        match self {
            Order::Scan(v) => {
                if let Some(k) = v.get_mut(id) {
                    *k = None;
                }
            }
            Order::Tree(t) => {
                t.remove(&(key, id));
            }
        }
    }

    /// The smallest `(key, id)`.
    pub fn first(&self) -> Option<(u64, usize)> {
        self.first_where(|_| true)
    }

    /// The smallest `(key, id)` whose id passes `keep`.
    pub fn first_where(&self, keep: impl Fn(usize) -> bool) -> Option<(u64, usize)> {
        match self {
            Order::Scan(v) => {
                v.iter().enumerate().filter_map(|(id, k)| k.map(|k| (k, id))).filter(|(_, id)| keep(*id)).min()
            }
            Order::Tree(t) => t.iter().find(|(_, id)| keep(*id)).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Both forms answer alike under any sequence of changes.
        #[test]
        fn a_list_and_a_tree_agree(ops in proptest::collection::vec((0usize..40, 0u64..100, any::<bool>()), 0..200)) {
            let mut small = Order::Scan(vec![None; 40]);
            let mut big = Order::Tree(BTreeSet::new());
            let mut keys: Vec<Option<u64>> = vec![None; 40];
            for (id, key, put) in ops {
                if let Some(old) = keys[id] {
                    small.remove(old, id);
                    big.remove(old, id);
                    keys[id] = None;
                }
                if put {
                    small.insert(key, id);
                    big.insert(key, id);
                    keys[id] = Some(key);
                }
                prop_assert_eq!(small.first(), big.first());
                prop_assert_eq!(small.first_where(|id| id % 3 != 0), big.first_where(|id| id % 3 != 0));
            }
        }
    }
}
