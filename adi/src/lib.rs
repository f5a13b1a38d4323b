//! # adi — the protocol engine of the DIMMnet-2 MPI stack
//!
//! Written once for every backend (DESIGN §5): requests, the per-connection
//! send queues, the posted-receive and unexpected queues, matching on
//! (context id, source, tag) with wildcards and MPI's non-overtaking order,
//! the eager and rendezvous protocols with the control packets of seed 004
//! Fig. 6, and the progress engine. Backends implement [`Transport`]:
//!
//! * [`backend::dimmnet`] — DIMMnet-2 (simulated or real): IVS rings as
//!   virtual connections, BOTF for envelopes, RVS for rendezvous data;
//! * [`backend::local`] — threads of one process (tests);
//! * [`backend::udp`] — reliable UDP over one socket per rank (seed 001);
//! * [`backend::dpdk`] — the same protocol over DPDK ports (seed 000).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)] // every unsafe operation says which rule it relies on

pub mod backend;
pub mod config;
pub mod counters;
pub mod engine;
pub mod error;
pub mod hooks;
pub mod offload;
pub mod pmi;
pub mod transport;
pub mod wire;

pub use config::Config;
pub use counters::Counters;
pub use engine::{Done, Engine, Matched, ReqId, Source, Status, TagSel};
pub use error::{AdiError, TransportError};
pub use hooks::ProgressHook;
pub use transport::{Caps, HostCost, Lent, Region, RemoteMemory, SimClock, Transport};

/// Environment variable naming the backend (`sim`/`dimmnet`, `udp`, `local`).
pub const ENV_BACKEND: &str = "DN_BACKEND";

/// Build the transport the launcher asked for (`DN_BACKEND`). A process
/// started without a launcher (neither `DN_BACKEND` nor `DN_RANK` set) is a
/// single-rank job on the in-process backend.
pub fn transport_from_env() -> Result<Box<dyn Transport>, TransportError> {
    pmi::release_unused();
    let backend = match std::env::var(ENV_BACKEND) {
        Ok(b) => b,
        // Started by a standard launcher (PMI-1): UDP between the ranks,
        // addresses through the launcher's key-value space.
        Err(_) if std::env::var("DN_RANK").is_err() && pmi::launched_by_pmi() => "udp".into(),
        Err(_) if std::env::var("DN_RANK").is_err() => "local".into(),
        Err(_) => "sim".into(),
    };
    match backend.as_str() {
        #[cfg(feature = "dimmnet")]
        "sim" | "dimmnet" => Ok(Box::new(backend::dimmnet::DimmnetTransport::from_env()?)),
        #[cfg(not(feature = "dimmnet"))]
        "sim" | "dimmnet" => Err(TransportError::Config(format!(
            "{ENV_BACKEND}={backend}: this build of adi has no DIMMnet-2 backend; rebuild with the cargo feature `dimmnet`"
        ))),
        "udp" => Ok(Box::new(backend::udp::UdpTransport::from_env()?)),
        "dpdk" => Ok(Box::new(backend::dpdk::from_env()?)),
        "local" => backend::local::local_world(1, None, backend::local::default_caps())
            .pop()
            .map(|t| Box::new(t) as Box<dyn Transport>)
            .ok_or_else(|| TransportError::Config("no local transport".into())),
        other => Err(TransportError::Config(format!(
            "{ENV_BACKEND}={other:?} is not a backend (sim, dimmnet, udp, dpdk, local)"
        ))),
    }
}

/// An engine over the transport the launcher asked for.
pub fn engine_from_env() -> Result<Engine, AdiError> {
    Engine::new(transport_from_env()?)
}
