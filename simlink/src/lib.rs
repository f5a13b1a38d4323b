//! # simlink — how the simulator and the processes it runs meet
//!
//! Not part of the hardware. The device's MMIO surface is laid out exactly
//! as `fpga-regs` says; everything else the simulation needs is here, in one
//! place:
//!
//! * [`affinity`] — keeping every hand-off on one CPU;
//! * [`contexts`] — what a rank that is a user-level context of a host
//!   process (ranks as contexts, DESIGN §3) asks of its host;
//! * [`mmio`] — memory shared between processes (the node files, the
//!   control file): the `dn-mmio` crate, which the driver also uses alone
//!   to map a real card;
//! * [`simctl`] — the control file `sim.ctl`: its layout, the host-cost
//!   table, typed actor states, yield requests and grant results, and the
//!   futex hand-off primitives;
//! * [`actor`] — the actor end of the hand-off (what a process does to
//!   attach, yield and be granted the token);
//! * [`model`] — the model end (admitting, granting, collecting yields);
//! * [`process`] — whether a party's process still lives (zombies count as gone);
//! * [`scheduler`] — the scheduling rules as pure functions (lowest clock
//!   first, the horizon, deadlock), unit-tested without any file.

#![warn(missing_docs)]

pub mod actor;
pub mod affinity;
pub mod contexts;
pub use dn_mmio as mmio;
pub mod model;
pub mod process;
pub mod scheduler;
pub mod simctl;
