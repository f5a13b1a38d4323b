//! A background thread of the library that wakes now and then until it is
//! told to stop: the keep-alive thread ([`crate::keepalive`]) and the
//! stand-in for a rank blocked outside MPI ([`crate::outside`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::Result;

/// A running watcher thread; stopped and joined when dropped.
pub(crate) struct Watcher {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    /// Start `body` on a thread called `name`; it gets the stop flag, which
    /// it must look at after every `std::thread::park_timeout` (dropping
    /// the watcher sets it and unparks the thread). `what` names the
    /// thread in the error.
    pub(crate) fn start(name: &str, what: &str, body: impl FnOnce(&AtomicBool) + Send + 'static) -> Result<Watcher> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&flag))
            .map_err(|e| crate::error::InitError::Thread { what: what.into(), why: e.to_string() })?;
        Ok(Watcher { stop, handle: Some(handle) })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            // The thread only ever returns.
            let _ = h.join();
        }
    }
}
