//! An in-process backend: ranks are threads of one process, messages go
//! through channels. It has no simulated time; it exists to test the
//! protocol engine quickly and to run MPI code inside one process.

use std::time::Duration;

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender, TrySendError};

use crate::error::TransportError;
use crate::transport::{Caps, Transport};

/// How long `idle` waits before concluding nothing will ever arrive.
pub const IDLE_LIMIT: Duration = Duration::from_secs(60);

/// One rank of an in-process job.
pub struct LocalTransport {
    rank: u32,
    peers: Vec<Sender<(u32, Vec<u8>)>>,
    inbox: Receiver<(u32, Vec<u8>)>,
    stash: Option<(u32, Vec<u8>)>,
    caps: Caps,
    idle_since: Option<std::time::Instant>,
}

/// Build `size` connected transports. With `queue = Some(n)`, each inbox
/// holds at most `n` messages, so senders see flow control.
pub fn local_world(size: u32, queue: Option<usize>, caps: Caps) -> Vec<LocalTransport> {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..size)
        .map(|_| match queue {
            Some(n) => bounded(n),
            None => unbounded(),
        })
        .unzip();
    rxs.into_iter()
        .enumerate()
        .map(|(r, inbox)| LocalTransport {
            rank: r as u32,
            peers: txs.clone(),
            inbox,
            stash: None,
            caps,
            idle_since: None,
        })
        .collect()
}

/// Capabilities suitable for tests: 64 KiB messages, 8 KiB eager threshold.
pub fn default_caps() -> Caps {
    Caps { max_message: 64 * 1024, eager_threshold: 8 * 1024 }
}

impl Transport for LocalTransport {
    fn name(&self) -> &'static str {
        "local"
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.peers.len() as u32
    }

    fn caps(&self) -> Caps {
        self.caps
    }

    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError> {
        let msg: Vec<u8> = parts.concat();
        let tx = self
            .peers
            .get(dest as usize)
            .ok_or(TransportError::PeerLost { rank: dest, reason: "no such rank".into() })?;
        match tx.try_send((self.rank, msg)) {
            Ok(()) => {
                self.idle_since = None;
                Ok(true)
            }
            Err(TrySendError::Full(_)) => Ok(false),
            Err(TrySendError::Disconnected(_)) => {
                Err(TransportError::PeerLost { rank: dest, reason: "its inbox is gone".into() })
            }
        }
    }

    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError> {
        let mut n = 0;
        if let Some((src, m)) = self.stash.take() {
            sink(src, &m);
            n += 1;
        }
        while let Ok((src, m)) = self.inbox.try_recv() {
            sink(src, &m);
            n += 1;
        }
        if n > 0 {
            self.idle_since = None;
        }
        Ok(n)
    }

    fn idle(&mut self) -> Result<(), TransportError> {
        if self.stash.is_some() {
            return Ok(());
        }
        // Wake on arrivals, and every millisecond so a sender whose peer's
        // inbox was full can retry (the channel has no "space" event).
        let since = *self.idle_since.get_or_insert_with(std::time::Instant::now);
        match self.inbox.recv_timeout(Duration::from_millis(1)) {
            Ok(m) => {
                self.stash = Some(m);
                self.idle_since = None;
                Ok(())
            }
            Err(RecvTimeoutError::Timeout) if since.elapsed() < IDLE_LIMIT => Ok(()),
            Err(RecvTimeoutError::Timeout) => Err(TransportError::Deadlock(format!(
                "rank {} received nothing for {} s while waiting",
                self.rank,
                IDLE_LIMIT.as_secs()
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(TransportError::Shutdown),
        }
    }
}
