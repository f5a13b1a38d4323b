//! # mpi — MPI for the DIMMnet-2 stack
//!
//! The API follows the `mpi` crate (rsmpi), with one difference: every call
//! returns a `Result` instead of aborting.
//!
//! ```no_run
//! use mpi::traits::*;
//! # fn main() -> mpi::Result<()> {
//! let universe = mpi::initialize()?;
//! let world = universe.world();
//! if world.rank() == 0 {
//!     world.process_at_rank(1).send(&[1u32, 2, 3][..])?;
//! } else if world.rank() == 1 {
//!     let (v, status) = world.any_process().receive_vec::<u32>()?;
//!     assert_eq!((v, status.source_rank()), (vec![1, 2, 3], 0));
//! }
//! # Ok(()) }
//! ```
//!
//! Run programs with the launcher: `dnrun -n 4 --nodes 2 -- ./my_program`
//! (crate `mpi-tools`, with the PMI-1 server and the benchmarks: an MPI
//! program links none of them).
//! The transport (simulated DIMMnet-2, UDP, ...) is the launcher's choice;
//! nothing in this crate depends on it.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)] // every unsafe operation says which rule it relies on

pub mod attr;
pub mod bsend;
pub mod coll;
mod comm;
pub mod compute;
pub mod config;
mod context;
pub mod datatype;
pub mod dup;
pub mod errhandler;
mod error;
pub mod error_codes;
pub mod greq;
pub mod group;
pub mod host;
pub mod info;
pub mod inter;
pub mod io;
mod keepalive;
mod locked;
mod members;
mod outside;
pub mod partitioned;
pub mod persistent;
pub mod port;
pub mod request;
pub mod rma;
pub mod sendrecv;
pub mod session;
pub mod slot;
pub mod spawn;
pub mod staged;
mod status;
pub mod topo;
mod topology;
pub mod turns;
mod universe;
mod watcher;

pub use coll::{CommunicatorCollectives, Operation, Root, SystemOperation, ValueIndex};
pub use comm::{
    check_tag, probe, AnyProcess, Color, Communicator, Destination, Message, Process, SimpleCommunicator, Source,
    Status,
};
pub use error::{
    ArgError, AttachError, BufferError, CollectiveError, ContextError, ConversionError, DarrayProblem, DimsError,
    ErrorClass, InitError, InterError, JoinError, KeyvalError, MpiError, OpError, Overflow, PartitionError, PortError,
    RankError, RequestMisuse, Result, RmaRangeError, RmaSharedError, RmaSyncError, ServiceError, SignatureError,
    SpawnError, TopologyArgError, TypeError, WinError, WinSizeError,
};
pub use request::{CancelGuard, Request};
pub use universe::{abort_status, initialize, ProgressMode, Universe, ENV_JOB_DIR, THREAD_IDLE, THREAD_POLL_NS};

/// A process rank.
pub type Rank = i32;
/// A message tag.
pub type Tag = i32;
/// A count of elements (`MPI_Count` in the variable-count collectives).
pub type Count = i32;
/// `MPI_PROC_NULL`: no process (MPI 4.1 §3.10), the value of the MPI 5.0
/// standard ABI, as a [`Status`]'s source.
pub const PROC_NULL: Rank = -3;
/// `MPI_ANY_SOURCE`, the MPI 5.0 standard ABI's value, as a [`Status`]'s source.
pub const ANY_SOURCE: Rank = -1;
/// `MPI_ANY_TAG`, the MPI 5.0 standard ABI's value, as a [`Status`]'s tag.
pub const ANY_TAG: Tag = -2;
/// Largest tag (`MPI_TAG_UB`).
pub const TAG_UB: Tag = i32::MAX;

/// The traits to import for point-to-point calls.
pub mod traits {
    pub use crate::coll::{CommunicatorCollectives, Root};
    pub use crate::comm::{Communicator, Destination, Source};
    pub use crate::datatype::{Buffer, BufferMut, Equivalence};
}
