//! Process topologies (MPI 4.1 chapter 8): Cartesian grids, graphs and
//! distributed graphs attached to a communicator, and the neighborhood
//! collectives that move data along their edges (§8.6).
//!
//! A topology is a fact about a communicator, made by a collective call on
//! its parent: [`SimpleCommunicator::create_cartesian`] (`MPI_Cart_create`),
//! [`SimpleCommunicator::create_graph`] (`MPI_Graph_create`),
//! [`SimpleCommunicator::create_dist_graph_adjacent`] and
//! [`SimpleCommunicator::create_dist_graph`]. `duplicate` keeps it; splits
//! do not. This library never reorders ranks (`reorder` is a hint, §8.5.1),
//! so a topology's rank `r` is the parent's rank `r`.
//!
//! ```no_run
//! use mpi::traits::*;
//! # fn main() -> mpi::Result<()> {
//! let universe = mpi::initialize()?;
//! let world = universe.world();
//! let mut dims = [0, 0];
//! mpi::topo::dims_create(world.size(), &mut dims)?;
//! let grid = world.create_cartesian(&dims, &[true, false], false)?.expect("every rank is on the grid");
//! let mut got = vec![-1i32; 4];
//! grid.neighbor_all_gather_into(&[grid.rank()], &mut got[..])?;
//! # Ok(()) }
//! ```

use std::rc::Rc;

use crate::coll::schedule::{Builder, Slice, BUF_RECV, BUF_SEND};
use crate::comm::{Color, Communicator, SimpleCommunicator};
use crate::datatype::Equivalence;
use crate::error::{MpiError, Result, TopologyArgError};
use crate::request::Request;
use crate::{Count, Rank};

pub use crate::topology::*;
use crate::topology::{edge_list, triples};

impl SimpleCommunicator {
    /// The communicator's topology, if it has one (`MPI_Topo_test`).
    pub fn topology(&self) -> Option<&Topology> {
        self.topo.as_deref()
    }

    fn with_topology(mut self, t: Topology) -> SimpleCommunicator {
        self.topo = Some(Rc::new(t));
        self
    }

    /// A communicator of the first `size` ranks, in order (a topology's
    /// processes; the rest get `None`).
    fn first(&self, size: Count, what: &str) -> Result<Option<SimpleCommunicator>> {
        self.intra_only(what)?;
        if size > self.size() {
            return Err(TopologyArgError::TooLarge { what: what.to_string(), size, comm: self.size() }.into());
        }
        let color = if self.rank() < size { Color::With(0) } else { Color::Undefined };
        self.split_by_color_with_key(color, self.rank())
    }

    /// This process's rank in a topology of `size` processes mapped onto
    /// this communicator (`MPI_Cart_map`, `MPI_Graph_map`, §8.5.8): its own
    /// (ranks are never reordered), or `None` beyond the topology's size.
    pub fn topology_rank(&self, size: Count) -> Result<Option<Rank>> {
        self.intra_only("a topology's mapping")?;
        if size > self.size() {
            let what = "the mapped topology".to_string();
            return Err(TopologyArgError::TooLarge { what, size, comm: self.size() }.into());
        }
        Ok((self.rank() < size).then_some(self.rank()))
    }

    /// A Cartesian grid on the first `dims`-product ranks (`MPI_Cart_create`,
    /// §8.5.1); the others get `None`. Collective. `reorder` is accepted and
    /// ignored: ranks keep their order.
    pub fn create_cartesian(
        &self,
        dims: &[Count],
        periods: &[bool],
        reorder: bool,
    ) -> Result<Option<SimpleCommunicator>> {
        let _ = reorder;
        let cart = Cartesian::new(dims, periods)?;
        Ok(self.first(cart.size(), "the grid")?.map(|c| c.with_topology(Topology::Cartesian(cart))))
    }

    /// A graph on the first `index.len()` ranks (`MPI_Graph_create`,
    /// §8.5.3); the others get `None`. Collective.
    pub fn create_graph(&self, index: &[Count], edges: &[Rank], reorder: bool) -> Result<Option<SimpleCommunicator>> {
        let _ = reorder;
        let g = Graph::new(index, edges)?;
        Ok(self.first(g.nnodes(), "the graph")?.map(|c| c.with_topology(Topology::Graph(g))))
    }

    /// A distributed graph in which every process names its own incoming
    /// and outgoing edges (`MPI_Dist_graph_create_adjacent`, §8.5.4).
    /// Collective.
    pub fn create_dist_graph_adjacent(
        &self,
        sources: &[Rank],
        source_weights: Option<&[Count]>,
        destinations: &[Rank],
        destination_weights: Option<&[Count]>,
        reorder: bool,
    ) -> Result<SimpleCommunicator> {
        let _ = reorder;
        self.intra_only("a distributed graph")?;
        let g = DistGraph::new(self.size(), sources, source_weights, destinations, destination_weights)?;
        Ok(self.duplicate_plain()?.with_topology(Topology::DistGraph(g)))
    }

    /// A distributed graph from edges any process may name
    /// (`MPI_Dist_graph_create`, §8.5.4): process `sources[i]` sends to
    /// the `degrees[i]` next entries of `destinations`, with those weights
    /// if given. Collective; every process learns its own edges, in the
    /// order of the rank that named them and then of its arrays.
    pub fn create_dist_graph(
        &self,
        sources: &[Rank],
        degrees: &[Count],
        destinations: &[Rank],
        weights: Option<&[Count]>,
        reorder: bool,
    ) -> Result<SimpleCommunicator> {
        let _ = reorder;
        self.intra_only("a distributed graph")?;
        let mine = edge_list(self.size(), sources, degrees, destinations, weights);
        self.agree_dist_graph(mine)
    }

    /// Take part in a [`SimpleCommunicator::create_dist_graph`] whose
    /// arguments this process could not even read (a null array, in C):
    /// the other processes get an error instead of waiting for it, and
    /// this one gets `why`.
    pub fn create_dist_graph_failed(&self, why: MpiError) -> MpiError {
        match self.agree_dist_graph(Err(why)) {
            Err(e) => e,
            Ok(_) => MpiError::Internal { what: "a failed dist_graph_create succeeded".into() },
        }
    }

    /// Exchange every process's edges (or its failure) and build this
    /// process's part of the graph; a failure anywhere is an error
    /// everywhere, so no process waits for one that gave up.
    fn agree_dist_graph(&self, mine: Result<Vec<u8>>) -> Result<SimpleCommunicator> {
        // Everyone learns every edge (the graph is small next to the data
        // its collectives move), and whether anyone gave weights. The
        // first byte says whether this process's arguments were valid.
        let entry = match &mine {
            Ok(edges) => [&[0u8][..], edges].concat(),
            Err(_) => vec![1u8],
        };
        let table = self.allgather_bytes(&entry)?;
        mine?;
        if let Some(r) = table.iter().position(|e| e.first() != Some(&0)) {
            return Err(TopologyArgError::AtProcess { rank: r as i32 }.into());
        }
        let (me, size) = (self.rank(), self.size());
        let (mut src, mut sw, mut dst, mut dw, mut weighted) = (vec![], vec![], vec![], vec![], false);
        for e in &table {
            let (flag, edges) =
                e[1..].split_last().ok_or(MpiError::Corrupt { what: "an empty edge list in dist_graph_create" })?;
            weighted |= *flag != 0;
            for (s, t, w) in triples(edges)? {
                if t == me {
                    src.push(s);
                    sw.push(w);
                }
                if s == me {
                    dst.push(t);
                    dw.push(w);
                }
            }
        }
        let g = if weighted {
            DistGraph::new(size, &src, Some(&sw), &dst, Some(&dw))?
        } else {
            DistGraph::new(size, &src, None, &dst, None)?
        };
        Ok(self.duplicate_plain()?.with_topology(Topology::DistGraph(g)))
    }

    /// The sub-grids of a Cartesian communicator that keep the dimensions
    /// where `remain` is true (`MPI_Cart_sub`, §8.5.6). Collective.
    pub fn cartesian_sub(&self, remain: &[bool]) -> Result<SimpleCommunicator> {
        let Some(Topology::Cartesian(cart)) = self.topology() else {
            return Err(MpiError::Topology { call: "cartesian_sub".into(), wants: "a Cartesian topology" });
        };
        let (color, key, sub) = cart.sub(self.rank(), remain)?;
        let c = self.split_by_color_with_key(Color::With(color), key)?;
        let c = c.ok_or_else(|| MpiError::Internal { what: "a Cartesian sub-grid without this process".into() })?;
        Ok(c.with_topology(Topology::Cartesian(sub)))
    }

    /// A duplicate without the topology (the base of a new one).
    fn duplicate_plain(&self) -> Result<SimpleCommunicator> {
        let mut c = self.duplicate()?;
        c.topo = None;
        Ok(c)
    }

    fn edges_here(&self, what: &str) -> Result<(Vec<Edge>, Vec<Edge>)> {
        match self.topology() {
            Some(t) => t.edges(self.rank()),
            None => Err(MpiError::Topology { call: what.into(), wants: "a process topology" }),
        }
    }

    /// The incoming and outgoing edges of this process (the order of a
    /// neighborhood collective's blocks).
    pub fn neighbor_edges(&self) -> Result<(Vec<Edge>, Vec<Edge>)> {
        self.edges_here("neighbor_edges")
    }

    /// Start a neighborhood exchange (§8.6): each block of `sends` goes
    /// from `send` to its edge's peer, each block of `recvs` arrives from
    /// its edge's peer into `recv`; blocks on `MPI_PROC_NULL` edges move
    /// nothing and leave `recv` as it was. The building block of every
    /// neighborhood collective, blocking or not.
    pub fn immediate_neighbor_exchange<'b>(
        &self,
        send: &[u8],
        sends: &[Block],
        recv: &'b mut [u8],
        recvs: &[Block],
    ) -> Result<Request<'b>> {
        let mut b = Builder::new();
        let size = self.size();
        for (what, blocks, cap) in [("send", sends, send.len()), ("receive", recvs, recv.len())] {
            for (i, blk) in blocks.iter().enumerate() {
                if blk.off.checked_add(blk.len).is_none_or(|e| e > cap) {
                    return Err(
                        TopologyArgError::Block { which: what, block: i, len: blk.len, off: blk.off, cap }.into()
                    );
                }
                if blk.edge.round >= MAX_PARALLEL_EDGES {
                    return Err(TopologyArgError::Round { which: what, block: i, round: blk.edge.round }.into());
                }
                match blk.edge.peer {
                    Some(p) if !(0..size).contains(&p) => return Err(MpiError::InvalidRank { rank: p, size }),
                    Some(p) => {
                        if what == "send" {
                            b.send(p as u32, blk.edge.round, Slice::new(BUF_SEND, blk.off as u64, blk.len as u64), &[]);
                        } else {
                            b.recv(p as u32, blk.edge.round, Slice::new(BUF_RECV, blk.off as u64, blk.len as u64), &[]);
                        }
                    }
                    None => {}
                }
            }
        }
        let init = recv.to_vec();
        crate::coll::immediate(
            self,
            crate::coll::exec::CollKind::Neighbor,
            b.build(),
            send.to_vec(),
            init,
            None,
            Some(recv),
        )
    }

    /// Blocking [`SimpleCommunicator::immediate_neighbor_exchange`].
    pub fn neighbor_exchange(&self, send: &[u8], sends: &[Block], recv: &mut [u8], recvs: &[Block]) -> Result<()> {
        self.immediate_neighbor_exchange(send, sends, recv, recvs)?.finish_blocking()
    }

    /// `MPI_Neighbor_allgather`: `send` to every outgoing neighbor; the
    /// block from incoming neighbor `i` into `recv[i·k..(i+1)·k]`, `k` being
    /// `send.len()`.
    pub fn neighbor_all_gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (inc, out) = self.edges_here("neighbor_all_gather_into")?;
        let k = std::mem::size_of_val(send);
        let sends: Vec<Block> = out.iter().map(|&edge| Block { edge, off: 0, len: k }).collect();
        self.typed_exchange(send, &sends, recv, &inc, k, "neighbor_all_gather_into")
    }

    /// `MPI_Neighbor_alltoall`: block `j` of `send` to outgoing neighbor
    /// `j`, the block from incoming neighbor `i` into block `i` of `recv`;
    /// every block has `recv.len()` / (number of incoming neighbors) elements.
    pub fn neighbor_all_to_all_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (inc, out) = self.edges_here("neighbor_all_to_all_into")?;
        let k = if out.is_empty() { 0 } else { std::mem::size_of_val(send) / out.len() };
        if k * out.len() != std::mem::size_of_val(send) {
            return Err(crate::error::CollectiveError::Unequal {
                call: "neighbor_all_to_all_into".into(),
                bytes: std::mem::size_of_val(send),
                size: out.len(),
            }
            .into());
        }
        let sends: Vec<Block> = out.iter().enumerate().map(|(j, &edge)| Block { edge, off: j * k, len: k }).collect();
        self.typed_exchange(send, &sends, recv, &inc, k, "neighbor_all_to_all_into")
    }

    fn typed_exchange<T: Equivalence>(
        &self,
        send: &[T],
        sends: &[Block],
        recv: &mut [T],
        inc: &[Edge],
        k: usize,
        what: &str,
    ) -> Result<()> {
        let out: &mut [u8] = bytemuck::cast_slice_mut(recv);
        if k * inc.len() != out.len() {
            return Err(TopologyArgError::NeighborBuffer {
                call: what.to_string(),
                bytes: out.len(),
                neighbors: inc.len(),
                block: k,
            }
            .into());
        }
        let recvs: Vec<Block> = inc.iter().enumerate().map(|(i, &edge)| Block { edge, off: i * k, len: k }).collect();
        self.neighbor_exchange(bytemuck::cast_slice(send), sends, out, &recvs)
    }
}
