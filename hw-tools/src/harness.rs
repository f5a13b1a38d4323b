//! Run a cluster in a background thread and drive it from the calling
//! process: what tests, `probe` and `fuzz` use. The actors are ordinary
//! driver `Device`s (usually one per thread), exactly as separate processes
//! would be.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use simlink::simctl;

use hw_model::cluster::{Cluster, ClusterConfig, ClusterError, RunReport};

/// Deterministic test data: `n` bytes from a xorshift64 generator seeded
/// with `seed`, so a receiver can regenerate what a sender sent.
pub fn pattern_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub use hw_model::files::temp_dir;

/// A cluster running in a background thread.
pub struct SimCluster {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<(Cluster, RunReport), ClusterError>>>,
}

impl SimCluster {
    /// Create the cluster (its files exist when this returns) and start the scheduler.
    pub fn start(cfg: ClusterConfig) -> Result<SimCluster, ClusterError> {
        SimCluster::spawn(Cluster::create(cfg)?)
    }

    /// Start the scheduler of a cluster created (and perhaps prepared) by the caller.
    pub fn spawn(mut cluster: Cluster) -> Result<SimCluster, ClusterError> {
        let dir = cluster.dir().to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("dimmnet-model".into())
            .spawn(move || {
                cluster.run(&flag)?;
                let report = cluster.finish()?;
                Ok((cluster, report))
            })
            .map_err(|source| ClusterError::Io { what: "cannot start model thread", path: String::new(), source })?;
        Ok(SimCluster { dir, stop, handle: Some(handle) })
    }

    /// The cluster directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of node `n`'s MMIO file.
    pub fn node_path(&self, node: u16) -> PathBuf {
        self.dir.join(simctl::node_file_name(node))
    }

    /// Wait for the run to end (all expected actors detached) and get the
    /// cluster back for inspection. Files are removed when it is dropped.
    pub fn join(mut self) -> Result<(Cluster, RunReport), ClusterError> {
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ClusterError::Io {
                what: "model thread panicked",
                path: self.dir.display().to_string(),
                source: std::io::Error::other("panic"),
            }),
            None => Err(ClusterError::Io {
                what: "already joined",
                path: String::new(),
                source: std::io::Error::other("joined"),
            }),
        }
    }

    /// Stop the scheduler and join.
    pub fn stop(self) -> Result<(Cluster, RunReport), ClusterError> {
        self.stop.store(true, Ordering::SeqCst);
        self.join()
    }
}

impl Drop for SimCluster {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.stop.store(true, Ordering::SeqCst);
            let _ = h.join();
        }
    }
}

/// A process body for [`run_actors`].
pub type ActorFn<R> = Box<dyn FnOnce(driver::Device) -> R + Send>;

/// Errors from [`run_actors`].
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The simulator failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// An actor could not open its slot.
    #[error("actor {index} ({peer}) could not open its slot: {source}")]
    Open {
        /// Actor index.
        index: usize,
        /// Its slot.
        peer: fpga_regs::Peer,
        /// Why.
        source: driver::DriverError,
    },
    /// An actor panicked.
    #[error("actor {0} panicked: {1}")]
    Panic(usize, String),
}

/// Run one thread per actor on a fresh cluster of `cfg`'s shape (actor `i`
/// takes record `i`, so the schedule is independent of thread start order),
/// wait for all of them and for the model, and return the cluster for
/// inspection together with each actor's result.
pub fn run_actors<R: Send + 'static>(
    mut cfg: ClusterConfig,
    actors: Vec<(fpga_regs::Peer, ActorFn<R>)>,
) -> Result<(Cluster, RunReport, Vec<R>), HarnessError> {
    cfg.expected_actors = actors.len() as u32;
    let sim = SimCluster::start(cfg)?;
    let mut handles = Vec::new();
    for (i, (peer, body)) in actors.into_iter().enumerate() {
        let path = sim.node_path(peer.node);
        handles.push(std::thread::spawn(move || {
            let opts = driver::OpenOptions { slot: peer.slot, actor: Some(i as u32) };
            let dev = driver::Device::open_with(&path, &opts).map_err(|source| HarnessError::Open {
                index: i,
                peer,
                source,
            })?;
            Ok::<R, HarnessError>(body(dev))
        }));
    }
    let mut results = Vec::new();
    let mut failure = None;
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failure = failure.or(Some(HarnessError::Panic(i, msg)));
            }
        }
    }
    // An actor that never attached would leave the model waiting for it.
    let (cluster, report) = if failure.is_some() { sim.stop()? } else { sim.join()? };
    match failure {
        Some(e) => Err(e),
        None => Ok((cluster, report, results)),
    }
}
