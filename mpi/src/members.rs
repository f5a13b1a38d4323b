//! The members of a communicator, and the counters its members keep
//! alike (collectives, duplications, persistent and partitioned
//! operations started): what every request of the communicator needs to
//! translate job ranks into its ranks. In the core: it names nothing above.

use crate::error::MpiError;
use crate::status::Status;
use crate::Rank;

/// What communicators share: their members and context ids.
pub(crate) struct Group {
    /// Job rank of each member, in communicator order.
    pub(crate) members: Vec<u32>,
    /// Communicator rank of each job rank (-1 for non-members), indexed by job rank.
    index: Vec<Rank>,
    /// Collectives started on this communicator: every member starts them
    /// in the same order, so the count tells concurrent ones apart.
    pub(crate) coll_seq: std::cell::Cell<u32>,
    /// `MPI_Comm_idup`s started on this communicator, numbered apart from
    /// its other collectives: on an intercommunicator both groups count
    /// them alike (`crate::dup`).
    pub(crate) dup_seq: std::cell::Cell<u32>,
    /// Persistent collectives initialized on this communicator
    /// (`crate::staged::coll::Persistent`).
    pub(crate) persistent_seq: std::cell::Cell<u32>,
    /// While a persistent collective starts: its place, which the
    /// schedule it launches takes instead of the next started number.
    pub(crate) starting: std::cell::Cell<Option<u32>>,
    /// Partitioned requests initialized per (peer, tag, send), which pairs
    /// them in the order of their initializations
    /// (`crate::partitioned`).
    pub(crate) partitioned_seq: std::cell::RefCell<std::collections::HashMap<(Rank, crate::Tag, bool), u32>>,
    /// The values a Rust program caches on the communicator (§7.7).
    pub(crate) attrs: crate::attr::CommAttrs,
}

impl Group {
    pub(crate) fn new(members: Vec<u32>) -> Group {
        let mut index = vec![-1; members.iter().max().map_or(0, |m| *m as usize + 1)];
        for (i, r) in members.iter().enumerate() {
            index[*r as usize] = i as Rank;
        }
        Group {
            members,
            index,
            coll_seq: std::cell::Cell::new(0),
            dup_seq: std::cell::Cell::new(0),
            persistent_seq: std::cell::Cell::new(0),
            starting: std::cell::Cell::new(None),
            partitioned_seq: Default::default(),
            attrs: Default::default(),
        }
    }

    pub(crate) fn comm_rank(&self, job_rank: u32) -> Rank {
        self.index.get(job_rank as usize).copied().unwrap_or(-1)
    }

    /// An ADI status in this group's ranks.
    pub(crate) fn status(&self, st: adi::Status) -> Status {
        Status::new(self.comm_rank(st.source), st.tag, st.len)
    }

    /// A receive's error in this group's ranks: a truncated message
    /// becomes [`MpiError::Truncated`], with the status the receive has
    /// all the same (its sender, tag, and the bytes that fit).
    pub(crate) fn error(&self, e: impl Into<MpiError>) -> MpiError {
        match e.into() {
            MpiError::Engine(adi::AdiError::Truncated { sender, tag, len, capacity }) => {
                MpiError::Truncated { status: Status::new(self.comm_rank(sender), tag, capacity), len }
            }
            e => e,
        }
    }
}
