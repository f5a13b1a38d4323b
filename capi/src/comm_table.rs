//! Communicators by handle, found by index rather than by hashing: the
//! lookup every point-to-point call makes first (docs/BENCHMARKS.md, "The
//! C ABI's cost over the Rust API").
//!
//! `MPI_COMM_WORLD` and `MPI_COMM_SELF` are slots 0 and 1. A communicator
//! the program makes gets slot `k` and the handle `FIRST_HANDLE + 16 *
//! (k - 2) + COMM_MARK`: the low bits tell it from every other handle the
//! library hands out (those are multiples of 16), so no handle of another
//! kind, predefined or not, ever finds a communicator.
//!
//! A freed slot is reused, so that a program that makes and frees
//! communicators for ever runs in flat memory with handles that still fit
//! an `int` (`MPI_Comm_toint`). It waits in a queue first, behind
//! [`QUARANTINE`] others freed after it: a freed handle stays invalid, and
//! its use is reported, until that many more communicators have been
//! freed.

use crate::abi::*;
use crate::{CommEntry, Handle, State, FIRST_HANDLE, R};
use mpi::SimpleCommunicator;

/// The low bits of a communicator handle the library made.
const COMM_MARK: Handle = 0x5;

/// How many freed slots wait before the oldest of them is reused.
pub(crate) const QUARANTINE: usize = 4096;

#[derive(Default)]
pub(crate) struct CommTable {
    slots: Vec<Option<Box<CommEntry>>>,
    /// Freed slots, oldest first.
    freed: std::collections::VecDeque<usize>,
}

impl CommTable {
    /// The slot a handle names, if it is a communicator handle at all.
    #[inline]
    fn slot(h: Handle) -> Option<usize> {
        match h {
            MPI_COMM_WORLD => Some(0),
            MPI_COMM_SELF => Some(1),
            h if h >= FIRST_HANDLE && h & 0xF == COMM_MARK => Some(((h - FIRST_HANDLE) >> 4) + 2),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn get(&self, h: &Handle) -> Option<&CommEntry> {
        self.slots.get(Self::slot(*h)?)?.as_deref()
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, h: &Handle) -> Option<&mut CommEntry> {
        self.slots.get_mut(Self::slot(*h)?)?.as_deref_mut()
    }

    /// Install the predefined communicators.
    pub(crate) fn predefined(world: CommEntry, self_: CommEntry) -> CommTable {
        CommTable { slots: vec![Some(Box::new(world)), Some(Box::new(self_))], freed: Default::default() }
    }

    /// Register a new communicator and return its handle.
    pub(crate) fn add(&mut self, e: CommEntry) -> Handle {
        let k = if self.freed.len() > QUARANTINE {
            let k = self.freed.pop_front().unwrap_or(self.slots.len());
            self.slots[k] = Some(Box::new(e));
            k
        } else {
            let k = self.slots.len().max(2);
            self.slots.resize_with(k, || None);
            self.slots.push(Some(Box::new(e)));
            k
        };
        FIRST_HANDLE + ((k - 2) << 4) + COMM_MARK
    }

    pub(crate) fn remove(&mut self, h: &Handle) -> Option<CommEntry> {
        let k = Self::slot(*h)?;
        let e = self.slots.get_mut(k)?.take().map(|b| *b);
        if e.is_some() && k >= 2 {
            self.freed.push_back(k);
        }
        e
    }

    /// Every live communicator.
    pub(crate) fn values(&self) -> impl Iterator<Item = &CommEntry> {
        self.slots.iter().filter_map(|s| s.as_deref())
    }
}

/// The handle `MPI_Comm_get_parent` gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ParentHandle {
    /// Not asked for yet.
    #[default]
    Unasked,
    /// This handle (while the program has not freed it).
    Registered(Handle),
    /// None: not spawned, or freed.
    Freed,
}

/// Register `c` under a new handle with `parent`'s error handler (§7.4.2).
pub(crate) fn register(st: &mut State, c: Option<SimpleCommunicator>, parent: Handle) -> R<Handle> {
    let Some(c) = c else { return Ok(MPI_COMM_NULL) };
    let (errhandler, session) = (st.comm(parent)?.errhandler, st.comm(parent)?.session);
    let e = CommEntry {
        comm: c,
        errhandler,
        name: String::new(),
        attrs: Default::default(),
        info: Default::default(),
        buffered: Default::default(),
        pending: None,
        session,
    };
    Ok(st.comms.add(e))
}

/// Request `req` has completed with `outcome`: if it is an idup's, its
/// duplicate takes the place of the placeholder, or, when it could not be
/// made, the placeholder goes and the request reports why.
pub(crate) fn settle_idup(st: &mut State, req: Handle, outcome: &mut mpi::Result<mpi::Status>) {
    let Some(at) = st.idups.iter().position(|&(r, _)| r == req) else { return };
    let (_, h) = st.idups.swap_remove(at);
    let made = st.comms.get_mut(&h).and_then(|e| e.pending.take()).and_then(|cell| cell.take());
    match made {
        Some(Ok(c)) if outcome.is_ok() => {
            if let Some(e) = st.comms.get_mut(&h) {
                e.comm = c;
            }
        }
        made => {
            let _ = crate::attr::delete_all(st, h);
            st.comms.remove(&h);
            if let (Some(Err(e)), true) = (made, outcome.is_ok()) {
                *outcome = Err(e);
            }
        }
    }
}

/// Free communicator `h` for good, its attributes' delete callbacks done
/// (`MPI_Comm_free`, deferred until they have run): the handle may be
/// reused, and a parent freed is gone (§11.8.2).
pub(crate) fn free(st: &mut State, h: Handle) {
    st.comms.remove(&h);
    if st.parent == ParentHandle::Registered(h) {
        st.parent = ParentHandle::Freed;
    }
    st.sweep_keyvals();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_of_other_kinds_never_find_a_communicator() {
        // Every non-communicator handle the library makes is a multiple of
        // 16 from FIRST_HANDLE; predefined handles are below it.
        for h in [FIRST_HANDLE, FIRST_HANDLE + 16, FIRST_HANDLE + 32 * 1024, MPI_INT, MPI_SUM, MPI_COMM_NULL] {
            assert_eq!(CommTable::slot(h), None, "{h:#x}");
        }
        assert_eq!(CommTable::slot(MPI_COMM_WORLD), Some(0));
        assert_eq!(CommTable::slot(FIRST_HANDLE + COMM_MARK), Some(2));
        assert_eq!(CommTable::slot(FIRST_HANDLE + 16 * 7 + COMM_MARK), Some(9));
    }
}
