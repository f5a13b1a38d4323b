//! The errors of collectives (MPI 4.1 chapter 6) and of the arguments
//! that describe a process topology (chapter 8).

/// What a collective refuses, or found that the processes of its group
/// disagree on (`MpiError::Collective`). Every process of a group calls
/// the same collectives in the same order, with matching amounts of data
/// (MPI 4.1 §6.1). [`CollectiveError::class`] says which error class a C
/// program sees.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CollectiveError {
    /// Another process called another collective at the same point of
    /// the communicator's sequence.
    #[error(
        "the processes called different collectives: rank {rank} called {theirs} where this process called \
         {mine} (collective {seq} on this communicator; MPI 4.1 §6.1)"
    )]
    DifferentCalls {
        /// The other process's rank in the communicator.
        rank: i32,
        /// What it called.
        theirs: String,
        /// What this process called.
        mine: String,
        /// The collective's number on the communicator.
        seq: u64,
    },
    /// A block from another process of another size than this process
    /// expects from it.
    #[error(
        "a collective received {got} bytes from rank {rank} where {want} were expected (do all processes pass \
         matching counts?)"
    )]
    BlockSize {
        /// The sender's rank in the communicator.
        rank: i32,
        /// Bytes received.
        got: u64,
        /// Bytes expected.
        want: u64,
    },
    /// Another process failed in its part of the collective.
    #[error("rank {rank} of the communicator could not complete this collective: {reason}")]
    FailedAt {
        /// Its rank in the communicator.
        rank: i32,
        /// Its error.
        reason: String,
    },
    /// Bytes to reduce that are not whole elements of the operation.
    #[error("{bytes} bytes to reduce are not whole {elem}-byte elements of the operation")]
    NotElements {
        /// Bytes given.
        bytes: usize,
        /// The operation's element size.
        elem: usize,
    },
    /// An operation made for elements of another size than the buffers'.
    #[error("the operation was made for {elem}-byte elements but the buffers hold {ty} ({size} bytes)")]
    ElementType {
        /// The operation's element size.
        elem: usize,
        /// The buffers' element type.
        ty: &'static str,
        /// Its size.
        size: usize,
    },
    /// `reduce_local` with buffers of different lengths.
    #[error("reduce_local: {input} input elements but {result} in the result buffer")]
    LocalLengths {
        /// Elements of the input.
        input: usize,
        /// Elements of the result buffer.
        result: usize,
    },
    /// A send and a receive buffer that must be of one size and are not.
    #[error("{call}: the send buffer has {send} bytes and the receive buffer {recv}")]
    Buffers {
        /// The call.
        call: String,
        /// Bytes of the send buffer.
        send: usize,
        /// Bytes of the receive buffer.
        recv: usize,
    },
    /// Arrays of counts and displacements not one entry per process.
    #[error("{call}: {counts} counts and {displs} displacements for a {size}-process communicator")]
    Arrays {
        /// The call.
        call: String,
        /// Counts given.
        counts: usize,
        /// Displacements given.
        displs: usize,
        /// Processes of the communicator.
        size: usize,
    },
    /// A negative count or displacement.
    #[error("{call}: count {count} or displacement {displ} of rank {rank} is negative")]
    Negative {
        /// The call.
        call: String,
        /// The process the entry is for.
        rank: usize,
        /// Its count.
        count: i64,
        /// Its displacement.
        displ: i64,
    },
    /// A block that ends past its buffer.
    #[error(
        "{call}: the block of rank {rank} ({count} elements at {displ}) ends beyond the {elements}-element buffer"
    )]
    Outside {
        /// The call.
        call: String,
        /// The process the block is for.
        rank: usize,
        /// Its count.
        count: i64,
        /// Its displacement.
        displ: i64,
        /// Elements the buffer holds.
        elements: u64,
    },
    /// A buffer that does not split into one equal block per process.
    #[error("{call}: {bytes} bytes do not split into {size} equal blocks")]
    Unequal {
        /// The call.
        call: String,
        /// Bytes of the buffer.
        bytes: usize,
        /// Processes of the communicator.
        size: usize,
    },
    /// A schedule that combines data and was given no operation.
    #[error("the schedule has CALC nodes but no operation was given")]
    NoOperation,
    /// A rooted collective's root variant called on another rank, or the
    /// other variant on the root.
    #[error("{call} on rank {rank} with root {root}: {}", if *root_call { "the root calls the `_root` variant" } else { "only the root calls this" })]
    RootVariant {
        /// The call.
        call: String,
        /// This process's rank.
        rank: u32,
        /// The root.
        root: u32,
        /// Whether the call was the root's variant.
        root_call: bool,
    },
    /// A persistent collective started with a buffer of another size
    /// than its initialization gave.
    #[error("{call}: a {which} buffer of {now} bytes; its initialization gave {then}")]
    Persistent {
        /// The call.
        call: String,
        /// "send" or "receive".
        which: &'static str,
        /// Bytes now.
        now: usize,
        /// Bytes at initialization.
        then: usize,
    },
    /// A block from the other group of an intercommunicator of another
    /// size than this process's block (§6.2.2).
    #[error("{call} on an intercommunicator: {got} bytes arrived for a block of {want}")]
    InterBlock {
        /// The call.
        call: String,
        /// Bytes that arrived.
        got: usize,
        /// Bytes of the block.
        want: usize,
    },
    /// Blocks that are not one per process of the remote group.
    #[error("{call}: one block per remote process ({remote}) is needed; {send} to send and {recv} to receive given")]
    RemoteBlocks {
        /// The call.
        call: String,
        /// Blocks to send.
        send: usize,
        /// Blocks to receive.
        recv: usize,
        /// Processes of the remote group.
        remote: usize,
    },
    /// `MPI_Reduce_scatter` on an intercommunicator whose counts do not
    /// fit the group or the data.
    #[error(
        "MPI_Reduce_scatter on an intercommunicator: {counts} counts for {size} processes, {send} elements to send \
         for {total}"
    )]
    ReduceScatterCounts {
        /// Counts given.
        counts: usize,
        /// Processes of the local group.
        size: usize,
        /// Elements to send.
        send: usize,
        /// The counts' sum.
        total: usize,
    },
    /// `MPI_Reduce_scatter` on an intercommunicator whose two groups
    /// reduced different amounts.
    #[error(
        "MPI_Reduce_scatter on an intercommunicator: the other group reduced {theirs} bytes, this one {ours}; both \
         groups must send the same number of elements"
    )]
    GroupsDiffer {
        /// Bytes the other group reduced.
        theirs: usize,
        /// Bytes this group reduced.
        ours: usize,
    },
}

impl CollectiveError {
    /// Whether the error is the other processes' disagreement with this
    /// one (another call, another amount of data, a failure there) rather
    /// than this call's own arguments.
    pub fn is_disagreement(&self) -> bool {
        matches!(
            self,
            CollectiveError::DifferentCalls { .. }
                | CollectiveError::BlockSize { .. }
                | CollectiveError::FailedAt { .. }
                | CollectiveError::InterBlock { .. }
                | CollectiveError::GroupsDiffer { .. }
        )
    }
}

/// Arguments that describe no valid process topology (MPI 4.1 §8.5,
/// `MpiError::TopologyArg`; `MPI_ERR_ARG`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyArgError {
    /// `MPI_Dims_create` with no nodes.
    #[error("dims_create: nnodes {nnodes} is not positive")]
    Nodes {
        /// The count given.
        nnodes: i32,
    },
    /// Two arrays that must be of one length.
    #[error("{a} {a_what} but {b} {b_what}")]
    Lengths {
        /// Length of the first.
        a: usize,
        /// What the first holds ("dimensions", "sources").
        a_what: &'static str,
        /// Length of the second.
        b: usize,
        /// What the second holds ("periods", "degrees").
        b_what: &'static str,
    },
    /// More parallel edges between two processes than the neighborhood
    /// collectives tell apart.
    #[error("more than {max} edges between this process and {peer}: a neighborhood collective cannot tell them apart")]
    ParallelEdges {
        /// The peer.
        peer: i32,
        /// The most.
        max: u32,
    },
    /// A grid of more dimensions than the neighborhood collectives take.
    #[error("neighborhood collectives take at most {max} dimensions")]
    TooManyDims {
        /// The most.
        max: u32,
    },
    /// A coordinate outside a dimension that is not periodic.
    #[error("coordinate {coord} of dimension {dim} is outside 0..{extent}, and the dimension is not periodic")]
    Coordinate {
        /// The coordinate.
        coord: i32,
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: i32,
    },
    /// A graph's index that decreases.
    #[error("index[{at}] = {value} is less than the entry before it ({before})")]
    IndexDecreases {
        /// The entry.
        at: usize,
        /// Its value.
        value: i32,
        /// The entry before it.
        before: i32,
    },
    /// A graph's index whose last entry is not the number of edges.
    #[error("index ends at {last}, but there are {edges} edges")]
    IndexEnd {
        /// The last entry.
        last: i32,
        /// Edges given.
        edges: usize,
    },
    /// An edge to no node of the graph.
    #[error("edges[{at}] = {node} is not a node of the {nodes}-node graph")]
    Edge {
        /// The entry.
        at: usize,
        /// The node it names.
        node: i32,
        /// Nodes of the graph.
        nodes: i32,
    },
    /// A negative weight or degree.
    #[error("{what} {value} is negative")]
    Negative {
        /// "weight", "source weight", "degree".
        what: &'static str,
        /// The value.
        value: i32,
    },
    /// Degrees that name more destinations than were given.
    #[error("the degrees add up to more than the {destinations} destinations")]
    Degrees {
        /// Destinations given.
        destinations: usize,
    },
    /// A topology of more processes than the communicator.
    #[error("{what} has {size} processes, but the communicator {comm}")]
    TooLarge {
        /// "the grid", "the graph".
        what: String,
        /// Its processes.
        size: i32,
        /// The communicator's.
        comm: i32,
    },
    /// A process whose own arguments to a collective topology call were
    /// refused there.
    #[error("process {rank} gave dist_graph_create invalid edges")]
    AtProcess {
        /// Its rank.
        rank: i32,
    },
    /// A neighborhood block that ends past its buffer.
    #[error("{which} block {block} ({len} bytes at {off}) ends beyond the {cap}-byte buffer")]
    Block {
        /// "send" or "receive".
        which: &'static str,
        /// The block.
        block: usize,
        /// Its length.
        len: usize,
        /// Its offset.
        off: usize,
        /// The buffer's bytes.
        cap: usize,
    },
    /// A neighborhood block on an edge numbered past the most parallel
    /// edges.
    #[error("{which} block {block}: round {round} is too large")]
    Round {
        /// "send" or "receive".
        which: &'static str,
        /// The block.
        block: usize,
        /// Its edge's round.
        round: u32,
    },
    /// A neighborhood receive buffer that is not one block per incoming
    /// neighbor.
    #[error("{call}: the receive buffer has {bytes} bytes, not {neighbors} neighbors × {block}")]
    NeighborBuffer {
        /// The call.
        call: String,
        /// Its bytes.
        bytes: usize,
        /// Incoming neighbors.
        neighbors: usize,
        /// Bytes per block.
        block: usize,
    },
}
