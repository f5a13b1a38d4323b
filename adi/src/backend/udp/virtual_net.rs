//! A network of datagram [`Link`]s inside one process, on a virtual clock:
//! the reliable datagram protocol's tests run on it without sockets and
//! without waiting (issue 31 §5).
//!
//! Each rank runs in its own thread, as a rank of a job would. Time is a
//! conservative discrete-event clock: it stands still while any rank is
//! working, and moves only when every rank waits in [`Link::recv_wait`],
//! straight to the earliest of their wake-up times and the arrivals in
//! flight. A datagram sent at `t` arrives at `t + latency` (plus what the
//! network's [`Fate`] adds), so at any instant the datagrams a rank can
//! receive were all sent at earlier instants: what each rank sees, and
//! when, is the same on every run, and the protocol's timers (RTO, delayed
//! ACKs, peer loss, goodbyes) can be asserted to the nanosecond.
//!
//! Loss, duplication and reordering are decided by a [`Fate`]: a pure
//! function of the sender, the receiver and the sender's datagram count,
//! so that a schedule is the same however the threads interleave.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, IoSlice};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::link::{Link, Received};

/// What becomes of the `n`-th datagram from `from` to `to`: one entry per
/// copy delivered, each the delay it gets beyond the network's latency
/// (empty: lost; two entries: duplicated; a larger delay than the next
/// datagram's: reordered).
pub type Fate = Arc<dyn Fn(u32, u32, u64) -> Vec<Duration> + Send + Sync>;

/// Every datagram arrives once, after the latency.
pub fn reliable() -> Fate {
    Arc::new(|_, _, _| vec![Duration::ZERO])
}

/// A random schedule from `seed`: each datagram is lost with probability
/// `loss`, else delivered, duplicated with probability `dup`, and held back
/// by up to `jitter` with probability `reorder`.
pub fn random(seed: u64, loss: f64, dup: f64, reorder: f64, jitter: Duration) -> Fate {
    Arc::new(move |from, to, n| {
        let mut h = mix(seed ^ mix(u64::from(from) << 32 | u64::from(to)) ^ mix(n.wrapping_add(0x9e37)));
        let mut draw = || {
            h = mix(h);
            (h >> 11) as f64 / (1u64 << 53) as f64
        };
        if draw() < loss {
            return Vec::new();
        }
        let copies = if draw() < dup { 2 } else { 1 };
        (0..copies).map(|_| if draw() < reorder { jitter.mul_f64(draw()) } else { Duration::ZERO }).collect()
    })
}

/// splitmix64's finaliser: a well-mixed hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A datagram in flight, ordered by arrival time, then sender, then the
/// sender's count: an order no thread interleaving can change.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Arrival {
    at: Duration,
    from: u32,
    n: u64,
    copy: usize,
    bytes: Vec<u8>,
}

struct State {
    now: Duration,
    /// Datagrams on their way to each rank.
    inbox: Vec<BinaryHeap<Reverse<Arrival>>>,
    /// Datagrams each rank has sent.
    sent: Vec<u64>,
    /// When a waiting rank wants to wake at the latest (`None`: working).
    waiting: Vec<Option<Duration>>,
    /// Ranks whose link still exists.
    live: Vec<bool>,
    /// The clock passed `limit`: every call fails from then on.
    expired: bool,
}

struct Shared {
    base: Instant,
    latency: Duration,
    limit: Duration,
    fate: Fate,
    state: Mutex<State>,
    moved: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A rank that panicked holding the lock leaves the state as
        // consistent as any other instant: keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// If every live rank waits, move the clock to the next event and wake
    /// them all.
    fn advance(&self, st: &mut State) {
        let mut next: Option<Duration> = None;
        for (r, live) in st.live.iter().enumerate() {
            if !live {
                continue;
            }
            let Some(until) = st.waiting[r] else { return };
            let first = st.inbox[r].peek().map_or(until, |Reverse(a)| a.at.min(until));
            next = Some(next.map_or(first, |n| n.min(first)));
        }
        let Some(next) = next else { return };
        if next > self.limit {
            st.expired = true;
        }
        st.now = st.now.max(next);
        st.waiting.iter_mut().for_each(|w| *w = None);
        self.moved.notify_all();
    }
}

/// The network: make one link per rank with [`VirtualNet::link`].
#[derive(Clone)]
pub struct VirtualNet {
    shared: Arc<Shared>,
}

impl VirtualNet {
    /// A network of `size` ranks whose datagrams take `latency` (at least
    /// 1 ns: a datagram must never be receivable at the instant it was
    /// sent), treated as `fate` says; the clock may not pass `limit`.
    pub fn new(size: u32, latency: Duration, limit: Duration, fate: Fate) -> VirtualNet {
        let n = size as usize;
        VirtualNet {
            shared: Arc::new(Shared {
                base: Instant::now(),
                latency: latency.max(Duration::from_nanos(1)),
                limit,
                fate,
                state: Mutex::new(State {
                    now: Duration::ZERO,
                    inbox: (0..n).map(|_| BinaryHeap::new()).collect(),
                    sent: vec![0; n],
                    waiting: vec![None; n],
                    live: vec![false; n],
                    expired: false,
                }),
                moved: Condvar::new(),
            }),
        }
    }

    /// Rank `rank`'s link. Make every rank's link before any rank runs:
    /// the clock waits only for ranks whose link exists.
    pub fn link(&self, rank: u32) -> VirtualLink {
        self.shared.lock().live[rank as usize] = true;
        VirtualLink { shared: Arc::clone(&self.shared), rank }
    }
}

/// One rank's end of a [`VirtualNet`].
pub struct VirtualLink {
    shared: Arc<Shared>,
    rank: u32,
}

fn expired() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the virtual clock passed the test's limit")
}

impl VirtualLink {
    /// Virtual time since the network was made.
    pub fn elapsed(&self) -> Duration {
        self.shared.lock().now
    }

    fn take(st: &mut State, rank: u32, buf: &mut [u8]) -> Option<Received> {
        let inbox = &mut st.inbox[rank as usize];
        if inbox.peek().is_none_or(|Reverse(a)| a.at > st.now) {
            return None;
        }
        let Reverse(a) = inbox.pop()?;
        // A datagram longer than the buffer is cut, as a UDP socket cuts it.
        let len = a.bytes.len().min(buf.len());
        buf[..len].copy_from_slice(&a.bytes[..len]);
        Some(Received { len, from: Some(a.from), seg: len.max(1), batched: false })
    }
}

impl Drop for VirtualLink {
    fn drop(&mut self) {
        let shared = Arc::clone(&self.shared);
        let mut st = shared.lock();
        st.live[self.rank as usize] = false;
        st.waiting[self.rank as usize] = None;
        shared.advance(&mut st);
    }
}

impl Link for VirtualLink {
    const NAME: &'static str = "virtual";

    fn send(&mut self, dest: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
        let mut st = self.shared.lock();
        if st.expired {
            return Err(expired());
        }
        let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let n = st.sent[self.rank as usize];
        st.sent[self.rank as usize] += 1;
        let at = st.now + self.shared.latency;
        for (copy, delay) in (self.shared.fate)(self.rank, dest, n).into_iter().enumerate() {
            let a = Arrival { at: at + delay, from: self.rank, n, copy, bytes: bytes.clone() };
            if let Some(inbox) = st.inbox.get_mut(dest as usize) {
                inbox.push(Reverse(a));
            }
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        let mut st = self.shared.lock();
        if st.expired {
            return Err(expired());
        }
        Ok(Self::take(&mut st, self.rank, buf))
    }

    fn recv_wait(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<Received>> {
        let shared = Arc::clone(&self.shared);
        let mut st = shared.lock();
        let until = st.now + wait;
        loop {
            if st.expired {
                return Err(expired());
            }
            if let Some(r) = Self::take(&mut st, self.rank, buf) {
                return Ok(Some(r));
            }
            if st.now >= until {
                return Ok(None);
            }
            st.waiting[self.rank as usize] = Some(until);
            shared.advance(&mut st);
            // Whoever moves the clock clears every rank's wait, so a rank
            // is counted as waiting again only after it has looked at the
            // new instant.
            while st.waiting[self.rank as usize].is_some() && !st.expired {
                st = shared.moved.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    fn describe(&self, rank: u32) -> String {
        format!("virtual rank {rank}")
    }

    fn now(&self) -> Instant {
        self.shared.base + self.shared.lock().now
    }
}
