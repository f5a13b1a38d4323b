//! # hw-tools — what drives the DIMMnet-2 model through the driver
//!
//! The model (`hw-model`) does not depend on the driver; these do:
//!
//! * [`harness`] — run a cluster in a thread and drive it from test code;
//! * [`probe`] — `dimmnet-sim probe`, the device micro-benchmarks;
//! * [`fuzz`] — `dimmnet-sim fuzz`, the register-protocol fuzzer;
//! * [`fuzz_input`] — the coverage-guided fuzzer's byte format;
//! * [`devcheck`] — `dimmnet-sim devcheck`, the device tests a card (or the
//!   model in real time) must pass;
//!
//! and the binaries `dimmnet-sim` (serve, serve --realtime, devcheck, probe, fuzz) and `dimmnet-regs`
//! (the register map as a C header, JSON or a spec page).

#![warn(missing_docs)]

pub mod devcheck;
pub mod fuzz;
pub mod fuzz_input;
pub mod harness;
pub mod probe;
