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
pub mod job;
pub use dn_knobs as knobs;
pub mod offload;
pub mod pmi;
pub mod spawn;
pub mod transport;
pub mod wire;

pub use config::Config;
pub use counters::Counters;
pub use engine::{Done, Engine, Matched, PackSource, ReqId, Source, Status, TagSel, UnpackSink};
pub use error::{AdiError, DeviceFault, TransportError};
pub use hooks::{ContextHook, Polled, ProgressHook};
pub use job::JobEnv;
pub use transport::{
    Atomic, Caps, FlagWaker, HostCost, Lent, OneSided, Region, RemoteMemory, SimClock, Transport, Waker,
};

/// Environment variable naming the backend (`sim`/`dimmnet`, `udp`, `local`).
pub const ENV_BACKEND: &str = "DN_BACKEND";

/// How a backend opens a rank's transport for the job its launcher
/// described (`None`: no `dnrun` job).
pub type OpenTransport = fn(Option<&JobEnv>) -> Result<Box<dyn Transport>, TransportError>;

/// A backend: the names `DN_BACKEND` knows it by, how a rank opens it
/// from the job its launcher described (`None`: no `dnrun` job), and what
/// the launcher must prepare and check for a job on it (`None`: no
/// launcher job runs on it). The ranks and `dnrun` both iterate
/// [`BACKENDS`]: adding a backend is a folder under `backend/` and a line
/// there.
pub struct BackendEntry {
    /// `DN_BACKEND` values that select it; the first is its name.
    pub names: &'static [&'static str],
    /// Open this rank's transport.
    pub open: OpenTransport,
    /// The launcher's half.
    pub launch: Option<job::LaunchNeeds>,
}

impl BackendEntry {
    /// Its name (`DN_BACKEND`, `dnrun --backend`).
    pub fn name(&self) -> &'static str {
        self.names[0]
    }
}

/// Every backend, in the order `DN_BACKEND`'s error lists them.
pub const BACKENDS: &[BackendEntry] = &[
    BackendEntry {
        names: &["sim", "dimmnet"],
        open: open_dimmnet,
        launch: Some(job::LaunchNeeds {
            about: "the simulated DIMMnet-2 (starts dimmnet-sim)",
            simulator: true,
            datagram_key: false,
            options: &[],
            check: check_dimmnet,
        }),
    },
    BackendEntry {
        names: &["udp"],
        open: open_udp,
        launch: Some(job::LaunchNeeds {
            about: "reliable UDP over the host network (seed 001)",
            simulator: false,
            datagram_key: true,
            options: &["--hostfile", "--ranks"],
            check: backend::udp::addr::check_launch,
        }),
    },
    BackendEntry {
        names: &["dpdk"],
        open: |job| Ok(Box::new(backend::dpdk::from_job(job)?)),
        launch: Some(job::LaunchNeeds {
            about: "the same protocol over DPDK: memif between the ranks of this host (seed 000)",
            simulator: false,
            datagram_key: true,
            options: &["--ranks", "--dpdk-vdev", "--dpdk-poller"],
            check: backend::dpdk::check_launch,
        }),
    },
    BackendEntry { names: &["local"], open: open_local, launch: None },
];

/// `--backend udp`: shared memory with the ranks of this host
/// ([`backend::shm`]), UDP with the others (if any).
fn open_udp(job: Option<&JobEnv>) -> Result<Box<dyn Transport>, TransportError> {
    if let Some(j) = job.filter(|j| backend::shm::not_used_because(j).is_none()) {
        let near = backend::shm::ShmTransport::open(j)?;
        if backend::shm::whole_job_here(j) {
            return Ok(Box::new(near));
        }
        let far = backend::udp::UdpTransport::from_job(job)?;
        return Ok(Box::new(backend::shm::per_peer::PerPeer::new(near, far)?));
    }
    Ok(Box::new(backend::udp::UdpTransport::from_job(job)?))
}

/// The backend a launcher runs jobs on by this name.
pub fn launchable(name: &str) -> Option<&'static BackendEntry> {
    BACKENDS.iter().find(|b| b.launch.is_some() && b.names.contains(&name))
}

#[cfg(feature = "dimmnet")]
fn check_dimmnet(plan: &job::LaunchPlan<'_>) -> Result<(), job::LaunchRefusal> {
    backend::dimmnet::check_launch(plan)
}

#[cfg(not(feature = "dimmnet"))]
fn check_dimmnet(_: &job::LaunchPlan<'_>) -> Result<(), job::LaunchRefusal> {
    Err(job::LaunchRefusal::NotBuilt { backend: "sim", what: "DIMMnet-2 backend", feature: "dimmnet" })
}

#[cfg(feature = "dimmnet")]
fn open_dimmnet(job: Option<&JobEnv>) -> Result<Box<dyn Transport>, TransportError> {
    let job = job.ok_or_else(|| job::not_in_a_job("DIMMnet-2"))?;
    Ok(Box::new(backend::dimmnet::DimmnetTransport::from_job(job)?))
}

#[cfg(not(feature = "dimmnet"))]
fn open_dimmnet(_: Option<&JobEnv>) -> Result<Box<dyn Transport>, TransportError> {
    Err(TransportError::Config(format!(
        "{ENV_BACKEND}=sim: this build of adi has no DIMMnet-2 backend; rebuild with the cargo feature `dimmnet`"
    )))
}

/// A single-rank job in this process.
fn open_local(_: Option<&JobEnv>) -> Result<Box<dyn Transport>, TransportError> {
    backend::local::local_world(1, None, backend::local::default_caps())
        .pop()
        .map(|t| Box::new(t) as Box<dyn Transport>)
        .ok_or_else(|| TransportError::Config("no local transport".into()))
}

/// Build the transport the launcher asked for (`DN_BACKEND`), from the
/// job parsed once ([`JobEnv`]). A process started without a launcher
/// (neither `DN_BACKEND` nor `DN_RANK` set) is a single-rank job on the
/// in-process backend; one started by a standard launcher (PMI-1) uses
/// UDP between the ranks, with addresses through the launcher's
/// key-value space.
pub fn transport_from_env() -> Result<Box<dyn Transport>, TransportError> {
    pmi::release_unused();
    // Every DN_* variable, checked once, before any is used.
    knobs::check_environment()?;
    let job = JobEnv::from_env()?;
    let backend = match knobs::word(ENV_BACKEND)? {
        Some(b) => b,
        None if job.is_none() && pmi::launched_by_pmi() => "udp",
        None if job.is_none() => "local",
        None => "sim",
    };
    let entry = BACKENDS.iter().find(|b| b.names.contains(&backend)).ok_or_else(|| {
        let all: Vec<&str> = BACKENDS.iter().flat_map(|b| b.names.iter().copied()).collect();
        TransportError::Config(format!("{ENV_BACKEND}={backend:?} is not a backend ({})", all.join(", ")))
    })?;
    (entry.open)(job.as_ref())
}

/// An engine over the transport the launcher asked for.
pub fn engine_from_env() -> Result<Engine, AdiError> {
    Engine::new(transport_from_env()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every enum read from a variable takes exactly the words the
    /// variable is declared with (`dnrun --help-env` shows them).
    #[test]
    fn every_choice_takes_its_variables_words() {
        use knobs::words_match;
        assert!(words_match::<backend::dpdk::Polling>("DN_DPDK_POLLER"));
        assert!(words_match::<backend::udp::config::Offload>("DN_UDP_OFFLOAD"));
        assert!(words_match::<backend::udp::config::Checksum>("DN_UDP_CHECKSUM"));
        assert!(words_match::<backend::udp::config::Switch>("DN_UDP_CONNECT"));
        assert!(words_match::<backend::udp::config::Switch>("DN_UDP_AUTH"));
        assert!(words_match::<backend::shm::ShmUse>("DN_UDP_SHM"));
    }

    #[test]
    fn every_backend_name_selects_one_entry() {
        let names: Vec<&str> = BACKENDS.iter().flat_map(|b| b.names.iter().copied()).collect();
        for n in ["sim", "dimmnet", "udp", "dpdk", "local"] {
            assert_eq!(names.iter().filter(|&&x| x == n).count(), 1, "{n} in {names:?}");
        }
        // Without a dnrun job, the backends that need one say how to get one.
        for b in BACKENDS.iter().filter(|b| b.names[0] != "local") {
            let e = (b.open)(None).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("dnrun") || e.contains("DPDK") || e.contains("PMI"), "{}: {e}", b.names[0]);
        }
        let local = BACKENDS.iter().find(|b| b.names.contains(&"local")).map(|b| b.open);
        assert_eq!(local.and_then(|open| open(None).ok()).map(|t| t.size()), Some(1));
    }
}
