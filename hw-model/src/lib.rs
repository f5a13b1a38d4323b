//! # hw-model — a cycle-approximate DIMMnet-2 cluster
//!
//! N nodes × S slots of DIMMnet-2 (seed 004 §2) and the InfiniBand fabric
//! between them, in deterministic simulated time. Each node's MMIO surface is
//! a file laid out exactly as `fpga-regs` says, so any process maps a slot the
//! way it would map the real card; the `driver` crate does exactly that.
//!
//! * [`model`] — the device: command engines, SO-DIMM, rings, links.
//! * [`cluster`] — files, control file and the scheduler (one party runs at a time).
//! * [`profile`] — host profiles (`p4-2003`, `modern`, or JSON).
//! * [`realtime`] — the model as a device answering in real time (no scheduler).
//! * [`trace`] — Chrome trace-event output.
//! * [`files`] — creating the simulator's files without following symlinks.
//!
//! The model does not depend on the driver: what drives it through the
//! driver (the test harness, `dimmnet-sim probe` and `fuzz`) is in
//! `hw-tools`, and the control protocol it shares with the processes it runs
//! is in `simlink`.

#![warn(missing_docs)]

pub mod cluster;
pub mod files;
pub mod model;
pub mod order;
pub mod profile;
pub mod realtime;
pub mod time;
pub mod trace;

pub use cluster::{Cluster, ClusterConfig, ClusterError, Contexts, LookaheadMode, RunReport};
pub use model::{Model, ModelConfig, Sends, Touches};
pub use profile::HostProfile;
pub use time::SimTime;
