//! Collectives as data: seed 002's CAD graph (§3) in Rust terms.
//!
//! A collective is a DAG of SEND, RECV, CALC (reduce) and COPY nodes with
//! explicit dependencies, stored as flat arrays of fixed-size entries that
//! refer to each other by index, never by pointer, so that an agent other
//! than the application (a progress thread, or the NIC) can execute it.
//! The API follows the seed's: make nodes (`send`, `recv`, `calc`, `copy`),
//! `connect` them, then issue and query the result with an executor
//! (`exec::Exec`).
//!
//! Data lives in numbered buffers: [`BUF_SEND`] (the caller's input),
//! [`BUF_RECV`] (the caller's output) and temporaries `BUF_TMP0..`, whose
//! sizes the schedule records.

/// The caller's send buffer.
pub const BUF_SEND: u8 = 0;
/// The caller's receive buffer.
pub const BUF_RECV: u8 = 1;
/// The first temporary buffer.
pub const BUF_TMP0: u8 = 2;

/// A byte range of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Slice {
    /// Offset in bytes.
    pub off: u64,
    /// Length in bytes.
    pub len: u64,
    /// Which buffer.
    pub buf: u8,
}

impl Slice {
    /// `len` bytes at `off` of buffer `buf`.
    pub const fn new(buf: u8, off: u64, len: u64) -> Slice {
        Slice { off, len, buf }
    }
}

/// What a node does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Send `src` to `peer`.
    Send = 1,
    /// Receive from `peer` into `dst` (the message must have `dst.len` bytes).
    Recv = 2,
    /// `dst = src ⊕ dst`, element by element, with the schedule's operation
    /// (`src` is the left operand: lower ranks, for non-commutative ones).
    Calc = 3,
    /// `dst = src`.
    Copy = 4,
}

/// The first round no schedule may use: a member that finds its part of
/// a collective broken tells the other members in a message of this round
/// (see `exec`). Rounds are 10 bits of the message tag.
pub const NOTICE_ROUND: u32 = 0x3FF;

/// One node: fixed size, dependencies by index into [`Schedule::deps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Node {
    /// Source range (SEND, CALC, COPY).
    pub src: Slice,
    /// Destination range (RECV, CALC, COPY).
    pub dst: Slice,
    /// Peer, as a rank of the communicator (SEND, RECV).
    pub peer: u32,
    /// Round number, part of the message tag, so that messages between the
    /// same two ranks in one collective match in the intended order; below
    /// [`NOTICE_ROUND`].
    pub round: u32,
    /// First predecessor in [`Schedule::deps`].
    pub first_dep: u32,
    /// Number of predecessors.
    pub n_deps: u32,
    /// What the node does.
    pub kind: Kind,
}

/// A node's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// A built schedule: immutable, executable by anyone holding the buffers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// Predecessor lists, one run per node.
    pub deps: Vec<u32>,
    /// Sizes of the temporaries `BUF_TMP0..`.
    pub tmp: Vec<u64>,
}

/// Builds a [`Schedule`] (seed 002's `make_*_node` and `connect`).
#[derive(Debug, Default)]
pub struct Builder {
    nodes: Vec<Node>,
    edges: Vec<(u32, u32)>,
    tmp: Vec<u64>,
}

const NONE: Slice = Slice::new(0, 0, 0);

impl Builder {
    /// An empty schedule.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// A temporary buffer of `len` bytes; returns its id.
    pub fn tmp(&mut self, len: u64) -> u8 {
        self.tmp.push(len);
        BUF_TMP0 + (self.tmp.len() - 1) as u8
    }

    fn push(&mut self, n: Node, after: &[NodeId]) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(n);
        for a in after {
            self.connect(*a, id);
        }
        id
    }

    fn node(kind: Kind, src: Slice, dst: Slice, peer: u32, round: u32) -> Node {
        Node { src, dst, peer, round, first_dep: 0, n_deps: 0, kind }
    }

    /// Send `src` to `peer` once every node of `after` is done.
    pub fn send(&mut self, peer: u32, round: u32, src: Slice, after: &[NodeId]) -> NodeId {
        self.push(Builder::node(Kind::Send, src, NONE, peer, round), after)
    }

    /// Receive from `peer` into `dst` once every node of `after` is done.
    pub fn recv(&mut self, peer: u32, round: u32, dst: Slice, after: &[NodeId]) -> NodeId {
        self.push(Builder::node(Kind::Recv, NONE, dst, peer, round), after)
    }

    /// `dst = src ⊕ dst` once every node of `after` is done.
    pub fn calc(&mut self, src: Slice, dst: Slice, after: &[NodeId]) -> NodeId {
        self.push(Builder::node(Kind::Calc, src, dst, 0, 0), after)
    }

    /// `dst = src` once every node of `after` is done.
    pub fn copy(&mut self, src: Slice, dst: Slice, after: &[NodeId]) -> NodeId {
        self.push(Builder::node(Kind::Copy, src, dst, 0, 0), after)
    }

    /// `to` may start only after `from` is done.
    pub fn connect(&mut self, from: NodeId, to: NodeId) {
        self.edges.push((to.0, from.0));
    }

    /// Lay the graph out as flat arrays.
    pub fn build(mut self) -> Schedule {
        self.edges.sort_unstable();
        self.edges.dedup();
        let mut deps = Vec::with_capacity(self.edges.len());
        let mut e = 0;
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.first_dep = deps.len() as u32;
            while e < self.edges.len() && self.edges[e].0 as usize == i {
                deps.push(self.edges[e].1);
                e += 1;
            }
            n.n_deps = deps.len() as u32 - n.first_dep;
        }
        Schedule { nodes: self.nodes, deps, tmp: self.tmp }
    }
}

/// A schedule that does not fit its buffers or communicator: a bug of the
/// algorithm that built it, caught before anything is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// A slice past the end of its buffer.
    #[error("node {node}: {what} {slice:?} is outside its buffer")]
    OutOfBuffer {
        /// The node.
        node: usize,
        /// `"source"` or `"destination"`.
        what: &'static str,
        /// The slice.
        slice: Slice,
    },
    /// A copy or reduction whose two slices differ in length.
    #[error("node {node}: source and destination differ in length")]
    Lengths {
        /// The node.
        node: usize,
    },
    /// A round number in the range kept for notices.
    #[error("node {node}: round {round} is not below {NOTICE_ROUND}")]
    Round {
        /// The node.
        node: usize,
        /// Its round.
        round: u32,
    },
    /// A peer that is no rank of the communicator.
    #[error("node {node}: peer {peer} is not a rank of a {size}-process communicator")]
    Peer {
        /// The node.
        node: usize,
        /// The peer.
        peer: u32,
        /// The communicator's size.
        size: u32,
    },
    /// A dependency on a later node (the graph must be acyclic).
    #[error("node {node} depends on a later node")]
    Cycle {
        /// The node.
        node: usize,
    },
}

impl Schedule {
    /// The predecessors of node `i`.
    pub fn preds(&self, i: usize) -> &[u32] {
        let n = &self.nodes[i];
        &self.deps[n.first_dep as usize..(n.first_dep + n.n_deps) as usize]
    }

    /// Check the schedule against buffer sizes (`send`, `recv`) and the
    /// communicator size: every slice in bounds, every peer a rank, every
    /// dependency an earlier node (so the graph is acyclic).
    pub fn validate(&self, send: u64, recv: u64, size: u32) -> Result<(), ScheduleError> {
        let len_of = |b: u8| match b {
            BUF_SEND => Some(send),
            BUF_RECV => Some(recv),
            t => self.tmp.get((t - BUF_TMP0) as usize).copied(),
        };
        let check = |s: &Slice, what: &'static str, i: usize| match len_of(s.buf) {
            Some(l) if s.off.checked_add(s.len).is_some_and(|e| e <= l) => Ok(()),
            _ => Err(ScheduleError::OutOfBuffer { node: i, what, slice: *s }),
        };
        for (i, n) in self.nodes.iter().enumerate() {
            match n.kind {
                Kind::Send => check(&n.src, "source", i)?,
                Kind::Recv => check(&n.dst, "destination", i)?,
                Kind::Calc | Kind::Copy => {
                    check(&n.src, "source", i)?;
                    check(&n.dst, "destination", i)?;
                    if n.src.len != n.dst.len {
                        return Err(ScheduleError::Lengths { node: i });
                    }
                }
            }
            if matches!(n.kind, Kind::Send | Kind::Recv) && n.round >= NOTICE_ROUND {
                return Err(ScheduleError::Round { node: i, round: n.round });
            }
            if matches!(n.kind, Kind::Send | Kind::Recv) && n.peer >= size {
                return Err(ScheduleError::Peer { node: i, peer: n.peer, size });
            }
            if self.preds(i).iter().any(|&p| p as usize >= i) {
                return Err(ScheduleError::Cycle { node: i });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_keep_their_dependencies_in_a_flat_array() {
        let mut b = Builder::new();
        let t = b.tmp(8);
        let r = b.recv(1, 0, Slice::new(t, 0, 8), &[]);
        let c = b.calc(Slice::new(t, 0, 8), Slice::new(BUF_RECV, 0, 8), &[r]);
        let s = b.send(2, 1, Slice::new(BUF_RECV, 0, 8), &[c, r]);
        let sched = b.build();
        assert_eq!(sched.preds(r.0 as usize), &[] as &[u32]);
        assert_eq!(sched.preds(c.0 as usize), &[0]);
        assert_eq!(sched.preds(s.0 as usize), &[0, 1]);
        assert_eq!(sched.tmp, vec![8]);
        assert!(sched.validate(8, 8, 3).is_ok());
        assert!(matches!(sched.validate(8, 4, 3), Err(ScheduleError::OutOfBuffer { what: "destination", .. })));
        assert_eq!(sched.validate(8, 8, 2), Err(ScheduleError::Peer { node: 2, peer: 2, size: 2 }));
        assert!(sched.validate(8, 8, 2).unwrap_err().to_string().contains("peer 2"));
    }
}
