//! A node's storage in simulated time: one queue per node (issue 50).
//!
//! Every access of a rank is a service of `io_op_ns` per contiguous piece
//! plus `io_ns_per_byte` per byte (the host profile), and the ranks of one
//! node share one storage device: an access starts when the node's
//! previous access has ended, or at the rank's clock if that is later, and
//! the rank waits in simulated time until its own has ended. The node's
//! "busy until" time is a word in the job directory (`io-queue.NODE`),
//! which the ranks of the node read and write one at a time, as the
//! simulator runs one party at a time; it is therefore deterministic.
//! A rank that runs ahead of another of its node within the simulator's
//! lookahead takes the queue first even if its clock is later: the error
//! is at most the lookahead (a microsecond or so), and the same every run.
//!
//! Off the simulator there is no queue: the real file system has its own.

use std::os::unix::fs::FileExt;
use std::path::Path;

/// When an access of `service` ps, asked for at `now`, starts and ends
/// on a device busy until `busy`: `(wait, new busy)`.
pub(crate) fn queue(busy: u64, now: u64, service: u64) -> (u64, u64) {
    let start = busy.max(now);
    (start - now, start.saturating_add(service))
}

/// The busy-until word of one node's storage.
pub(crate) struct NodeQueue(std::fs::File);

impl NodeQueue {
    /// The queue of `node` in the job directory `dir` (made by the first
    /// rank of the node to open a file).
    pub(crate) fn open(dir: &Path, node: u32) -> std::io::Result<NodeQueue> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join(format!("io-queue.{node}")))?;
        Ok(NodeQueue(f))
    }

    /// Take the device for `service` ps from `now`: how long to wait first.
    pub(crate) fn take(&self, now: u64, service: u64) -> std::io::Result<u64> {
        let mut word = [0u8; 8];
        // A new file is empty: the device was never busy.
        let busy = match self.0.read_at(&mut word, 0)? {
            8 => u64::from_le_bytes(word),
            _ => 0,
        };
        let (wait, busy) = queue(busy, now, service);
        self.0.write_all_at(&busy.to_le_bytes(), 0)?;
        Ok(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_queue_behind_each_other() {
        // Idle device: no wait.
        assert_eq!(queue(0, 100, 50), (0, 150));
        // Busy until 150: an access at 120 waits 30 and ends at 200.
        assert_eq!(queue(150, 120, 50), (30, 200));
        // An access after the device went idle starts at once.
        assert_eq!(queue(150, 400, 10), (0, 410));
        let dir = std::env::temp_dir().join(format!("dn-io-queue-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (NodeQueue::open(&dir, 3).unwrap(), NodeQueue::open(&dir, 3).unwrap());
        assert_eq!(a.take(1000, 500).unwrap(), 0);
        assert_eq!(b.take(1200, 500).unwrap(), 300);
        assert_eq!(NodeQueue::open(&dir, 4).unwrap().take(1200, 1).unwrap(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
