//! Run a cluster in a background thread and drive it from the calling
//! process: what tests, `probe` and `fuzz` use. The actors are ordinary
//! driver `Device`s (usually one per thread), exactly as separate processes
//! would be.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use fpga_regs::simctl;

use crate::cluster::{Cluster, ClusterConfig, ClusterError, RunReport};

/// A fresh directory name for a cluster under /dev/shm (or the temp dir).
pub fn temp_dir(tag: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let root = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    root.join(format!("dimmnet-{tag}-{}-{n}", std::process::id()))
}

/// A cluster running in a background thread.
pub struct SimCluster {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<(Cluster, RunReport), ClusterError>>>,
}

impl SimCluster {
    /// Create the cluster (its files exist when this returns) and start the scheduler.
    pub fn start(cfg: ClusterConfig) -> Result<SimCluster, ClusterError> {
        let mut cluster = Cluster::create(cfg)?;
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
            .map_err(|source| ClusterError::Io {
                what: "cannot start model thread",
                path: String::new(),
                source,
            })?;
        Ok(SimCluster {
            dir,
            stop,
            handle: Some(handle),
        })
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
