//! # mpi-tools — running and measuring MPI jobs on the DIMMnet-2 stack
//!
//! What is not part of an MPI program: the launcher `dnrun` ([`launcher`]:
//! the simulator, the ranks, their output and exit; [`contexts`]: the
//! ranks of a simulated job as user-level contexts of `dnrun`), the PMI-1 server
//! that lets programs built with MPICH join a `dnrun` job
//! ([`pmi_server`]), and the benchmarks `dnbench` and `tcpbench`
//! ([`bench`]). Kept out of the `mpi` crate so that an MPI program links
//! neither the command-line parser nor the signal handling.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)] // every unsafe operation says which rule it relies on

pub mod bench;
pub mod contexts;
mod job_io;
pub mod launcher;
pub mod pmi_server;
pub mod progress;
pub mod rma_bench;
pub mod spawner;
