//! The one interface every backend implements (DESIGN §5).
//!
//! It is shaped so that a ring-based device with remote stores (DIMMnet-2:
//! IVS rings + RVS), a datagram socket (UDP: one socket, fragmentation and
//! reliability inside the backend) and a poll-mode NIC (DPDK) all fit:
//!
//! * messages are ordered and reliable per destination (`try_send`), and a
//!   backend may refuse one for now (credits, window) instead of blocking;
//! * arrivals are drained by polling (`poll`), and `idle` blocks until
//!   something may have changed (the simulator yields; sockets sleep);
//! * everything else is a capability a backend offers or not (issue 10):
//!   [`RemoteMemory`] (store into a receiver-provided region: DIMMnet-2's
//!   RVS; the engine falls back to DATA packets without it), [`SimClock`]
//!   (simulated time and host-cost accounting: the simulator only) and
//!   [`crate::offload::Offload`] (collective schedules run by the device).

use std::ops::Range;
use std::sync::Arc;

use crate::error::TransportError;
pub use dn_host_cost::HostCost;

/// What a transport can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Largest message (header + payload) `try_send` accepts.
    pub max_message: usize,
    /// The backend's default eager/rendezvous switch (payload bytes).
    pub eager_threshold: usize,
}

/// What [`Transport::try_send_lent`] did with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lent {
    /// Not now (flow control); retry later.
    NotNow,
    /// Accepted; the bytes were copied (or sent) and are free again.
    Copied,
    /// Accepted; the transport keeps a pointer to the bytes until
    /// `lent_released(dest, token)`.
    Held(u64),
}

/// A landing zone for rendezvous data in the receiver's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Address the sender writes to (transport-specific).
    pub addr: u64,
    /// Bytes available.
    pub len: u64,
    /// Transport's handle.
    pub id: u32,
}

/// A transport backend.
pub trait Transport: Send {
    /// Backend name (`dimmnet`, `udp`, `local`, ...).
    fn name(&self) -> &'static str;
    /// This process's rank.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Capabilities.
    fn caps(&self) -> Caps;
    /// Send one message made of `parts` to `dest` (never this rank), in order
    /// after every message previously accepted for `dest`. `Ok(false)` means
    /// "not now" (flow control); the caller retries later.
    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError>;
    /// Like [`Transport::try_send`] for a header plus a range of a shared
    /// buffer: a transport that must keep the bytes (e.g. for retransmission)
    /// can hold a reference instead of copying them.
    fn try_send_shared(
        &mut self,
        dest: u32,
        header: &[u8],
        data: &Arc<Vec<u8>>,
        range: Range<usize>,
    ) -> Result<bool, TransportError> {
        self.try_send(dest, &[header, &data[range]])
    }
    /// Like [`Transport::try_send_shared`] for bytes the engine only borrows
    /// from its caller: a transport that sends later or resends (UDP) may
    /// keep a pointer to `data` instead of copying it, and says so with
    /// [`Lent::Held`]; the engine then keeps the send incomplete (its buffer
    /// lent) until [`Transport::lent_released`] says the transport is done.
    /// The default copies (`try_send`).
    ///
    /// # Safety
    /// After [`Lent::Held`], `data` must stay valid and unchanged until
    /// `lent_released(dest, token)` returns `true`, [`Transport::unlend`]
    /// for `dest` has been called, or the transport is dropped.
    unsafe fn try_send_lent(&mut self, dest: u32, header: &[u8], data: &[u8]) -> Result<Lent, TransportError> {
        Ok(if self.try_send(dest, &[header, data])? { Lent::Copied } else { Lent::NotNow })
    }
    /// Whether the bytes of the send that returned `Lent::Held(token)` to
    /// `dest` are no longer needed (acknowledged).
    fn lent_released(&self, _dest: u32, _token: u64) -> bool {
        true
    }
    /// Copy every lent buffer still held for `dest` (the engine is about to
    /// give a buffer back before its send completed: an error path).
    fn unlend(&mut self, _dest: u32) {}
    /// Hand every message that has arrived to `sink(source, bytes)`.
    /// Returns the number of messages delivered.
    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError>;
    /// Like [`Transport::poll`], but a message may be handed over before
    /// all of it has been read, as an [`Arrival`]: its first bytes, and the
    /// rest on demand, so that the engine can read a payload straight into
    /// the posted receive's buffer (issue 8: DIMMnet-2 reads PW into the
    /// user's buffer). By default every message arrives whole.
    fn poll_arrivals(&mut self, sink: &mut dyn FnMut(u32, &mut dyn Arrival)) -> Result<usize, TransportError> {
        self.poll(&mut |src, msg| sink(src, &mut Whole(msg)))
    }
    /// Nothing to do: block until something may have changed.
    fn idle(&mut self) -> Result<(), TransportError>;
    /// The node this rank runs on, when the backend places ranks on nodes
    /// of its own (the simulator's, or DIMMnet-2 cards): the ranks of one
    /// node share memory (`MPI_COMM_TYPE_SHARED`). `None`: the host is
    /// the node.
    fn node(&self) -> Option<u32> {
        None
    }
    /// Simulated time and host-cost accounting, if this transport runs
    /// against the simulator (`None` on sockets, DPDK and real hardware).
    fn sim_clock(&self) -> Option<&dyn SimClock> {
        None
    }
    /// Stores into memory the receiver exposed (rendezvous without DATA
    /// packets), if the backend can do them.
    fn remote_memory(&mut self) -> Option<&mut dyn RemoteMemory> {
        None
    }
    /// Loads, stores and atomics on other ranks' device memory with no
    /// CPU at the other end (DIMMnet-2: RVL, RVS, AMO), for one-sided
    /// windows whose public copy lives on the card (`None`: the backend
    /// has none, and one-sided operations go as messages).
    fn one_sided(&mut self) -> Option<&mut dyn OneSided> {
        None
    }
    /// The device executes collective schedules (`None`: it cannot, and
    /// the MPI layer runs them on the host).
    fn offload(&mut self) -> Option<&mut dyn crate::offload::Offload> {
        None
    }
    /// How often the process must look at this transport even while the
    /// program computes outside MPI, or its peers take it for lost: the
    /// datagram protocol declares a peer that answers nothing for its
    /// timeout lost. `None` (the default): peers never time out.
    fn keepalive(&self) -> Option<std::time::Duration> {
        None
    }
    /// Backend counters, for `DN_STATS=1`.
    fn report(&self) -> Option<String> {
        None
    }
    /// Leave the job (after the engine has drained its queues).
    fn finalize(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
    /// A way for the process's other threads to end a wait in
    /// [`Transport::idle`] (`MPI_THREAD_MULTIPLE`: a thread calls the
    /// library while another waits inside it). `None`: this transport's
    /// idle waits are short anyway. Called once, at the library's start.
    fn waker(&mut self) -> Result<Option<Arc<dyn Waker>>, TransportError> {
        Ok(None)
    }
}

/// How another thread of the process ends a wait in [`Transport::idle`]
/// (see [`Transport::waker`]).
pub trait Waker: Send + Sync {
    /// End the current wait in `idle`, or make the next one end at once.
    fn wake(&self);
    /// Let a [`Waker::wake`] from now on end this thread's next wait:
    /// called by the thread inside the library before it looks whether
    /// another thread wants it (and so before a wait it can give up for
    /// that thread). A wait not armed so may ignore wakes: it is one whose
    /// thread could not hand the library over anyway.
    fn arm(&self) {}
    /// The process lets several threads call the library: while it has
    /// threads besides the one that waits, a wait is no proof of a
    /// deadlock (the simulator's deadlock report waits for them, see
    /// `simlink::scheduler::report_stall`).
    fn set_threaded(&self) {}
    /// Undo [`Waker::set_threaded`].
    fn clear_threaded(&self) {}
    /// Whether [`Waker::set_threaded`] is in force.
    fn threaded(&self) -> bool {
        false
    }
}

/// A [`Waker`] for transports whose idle waits poll a flag between short
/// sleeps: `wake` sets it, and the waiting thread takes it.
#[derive(Debug, Default)]
pub struct FlagWaker(std::sync::atomic::AtomicBool);

impl FlagWaker {
    /// Whether a wake came since the last look (and forget it).
    pub fn take(&self) -> bool {
        self.0.swap(false, std::sync::atomic::Ordering::AcqRel)
    }
}

impl Waker for FlagWaker {
    fn wake(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// The simulator's actor wakes through its control file (see
/// [`simlink::actor::Poker`]).
#[cfg(feature = "dimmnet")]
impl Waker for simlink::actor::Poker {
    fn wake(&self) {
        self.poke();
    }
    fn arm(&self) {
        simlink::actor::Poker::arm(self);
    }
    fn set_threaded(&self) {
        simlink::actor::Poker::set_threaded(self);
    }
    fn clear_threaded(&self) {
        simlink::actor::Poker::clear_threaded(self);
    }
    fn threaded(&self) -> bool {
        simlink::actor::Poker::threaded(self)
    }
}

/// Whether this process hosts ranks as user-level contexts (DESIGN §3):
/// then a thread blocked in the operating system blocks every rank of it,
/// and nothing can stand in for one.
pub fn ranks_are_contexts() -> bool {
    // Ranks are contexts only on the simulator, which the DIMMnet-2
    // backend drives: a build without it has none.
    #[cfg(feature = "dimmnet")]
    return simlink::contexts::in_host();
    #[cfg(not(feature = "dimmnet"))]
    false
}

/// Simulated time: a capability of transports that run against the
/// simulator ([`Transport::sim_clock`]). The engine and the MPI layer
/// charge their host work here so that simulated time includes it
/// (DESIGN §3, calibrated host profiles).
pub trait SimClock {
    /// Charge `n` units of host work `cost` to simulated time.
    fn charge(&self, cost: HostCost, n: u64);
    /// Simulated time in picoseconds.
    fn now_ps(&self) -> u64;
    /// How many of each host cost has been charged, indexed by [`HostCost`].
    fn cost_counts(&self) -> Vec<u64>;
    /// The profile's cost of each [`HostCost`] in picoseconds
    /// (femtoseconds per byte for copies).
    fn cost_table(&self) -> Vec<u64>;
    /// Simulate `ns` of application computation.
    fn compute(&self, ns: f64) -> Result<(), TransportError>;
    /// Simulate `ns` of waiting on the operating system (a socket) and
    /// hand the token to the simulator, whatever the horizon: a rank that
    /// waits on another process outside the simulation must let it run
    /// (and look at wake-ups from outside, `simlink::actor::Poker`).
    fn pause(&self, ns: f64) -> Result<(), TransportError>;
    /// Have the simulation expect `count` more ranks, started for a spawn
    /// (MPI 4.1 §11.8): they begin at this rank's clock, and nothing is
    /// simulated until every one of them has joined.
    fn expect_ranks(&self, count: u32);
}

/// Remote stores into a landing zone the receiver exposed: a capability
/// of backends whose network writes into another node's memory
/// ([`Transport::remote_memory`]; DIMMnet-2's RVS, seed 004 §5). The engine
/// uses it for rendezvous data and sends DATA packets without it.
pub trait RemoteMemory {
    /// Receiver: reserve up to `len` bytes of landing zone (`None`: none free now).
    fn alloc(&mut self, len: u64) -> Result<Option<Region>, TransportError>;
    /// Sender: write `data` at `addr` in `dest`'s memory (may return before it lands).
    fn put(&mut self, dest: u32, addr: u64, data: &[u8]) -> Result<(), TransportError>;
    /// Sender: wait until every put has landed.
    fn flush(&mut self) -> Result<(), TransportError>;
    /// Receiver: copy `out.len()` bytes at `offset` of a landing zone.
    fn read(&mut self, region: &Region, offset: u64, out: &mut [u8]) -> Result<(), TransportError>;
    /// Receiver: give a landing zone back.
    fn free(&mut self, region: Region);
}

/// What an atomic does to one element of device memory
/// ([`OneSided::atomic`]): MPI's accumulate operations as a card's atomic
/// unit has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Atomic {
    /// `*addr = operand ⊕ *addr`.
    Reduce(crate::offload::Reduction),
    /// `*addr = operand`.
    Replace,
    /// Nothing written: an atomic read.
    Fetch,
    /// `*addr = operand` if `*addr == compare`.
    CompareSwap {
        /// The value compared with.
        compare: u64,
    },
}

/// One-sided access to other ranks' device memory, with no CPU at the
/// other end: a capability of backends whose card does loads, stores and
/// atomics across the network ([`Transport::one_sided`]; DIMMnet-2's RVL,
/// RVS and AMO). Addresses are device-memory addresses a peer exposed.
pub trait OneSided {
    /// Reserve `len` bytes of this rank's device memory that every peer
    /// may read, write and update atomically; its address (`None`: not
    /// enough is free).
    fn expose(&mut self, len: u64) -> Result<Option<u64>, TransportError>;
    /// Give back what [`OneSided::expose`] reserved at `addr`.
    fn unexpose(&mut self, addr: u64);
    /// Store `data` at `addr` of `dest`'s device memory (this rank's own
    /// included); may return before it lands ([`OneSided::complete`]).
    fn put(&mut self, dest: u32, addr: u64, data: &[u8]) -> Result<(), TransportError>;
    /// Load `out.len()` bytes at `addr` of `dest`'s device memory.
    fn get(&mut self, dest: u32, addr: u64, out: &mut [u8]) -> Result<(), TransportError>;
    /// One atomic on the element of `elem` at `addr` of `dest`'s device
    /// memory (aligned to it); its old value, in the low bytes.
    fn atomic(
        &mut self,
        dest: u32,
        addr: u64,
        op: Atomic,
        elem: crate::offload::Elem,
        operand: u64,
    ) -> Result<u64, TransportError>;
    /// Wait until every put so far has landed.
    fn complete(&mut self) -> Result<(), TransportError>;
}

/// A message handed to the engine before all of it has been read
/// ([`Transport::poll_arrivals`]).
pub trait Arrival {
    /// The message's length in bytes.
    fn len(&self) -> usize;
    /// Whether the message is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The message's first bytes, already read: all of it, or at least
    /// [`ARRIVAL_HEAD`] bytes (enough for any engine header).
    fn head(&self) -> &[u8];
    /// Read the bytes that follow [`Arrival::head`], in order, into `out`
    /// (at most `len() - head().len()` bytes; fewer leave the end unread).
    /// Called at most once, and only before the sink returns.
    fn read_rest(&mut self, out: &mut [u8]) -> Result<(), TransportError>;

    /// Fill `out` with the message's bytes from `skip` on: those already in
    /// the head first, then the rest read from the transport. `out` may be
    /// shorter than what is left (a truncated receive reads only that).
    fn read_from(&mut self, skip: usize, out: &mut [u8]) -> Result<(), TransportError> {
        let head = self.head().get(skip..).unwrap_or_default();
        let n = out.len().min(head.len());
        out[..n].copy_from_slice(&head[..n]);
        self.read_rest(&mut out[n..])
    }
}

/// How many bytes an [`Arrival`]'s head holds at least when the message is
/// longer: every engine header fits, and it is a multiple of 8 so that a
/// device read split there costs what one read would.
pub const ARRIVAL_HEAD: usize = 64;

/// A message that arrived whole.
pub struct Whole<'a>(pub &'a [u8]);

impl Arrival for Whole<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn head(&self) -> &[u8] {
        self.0
    }
    fn read_rest(&mut self, out: &mut [u8]) -> Result<(), TransportError> {
        match out.len() {
            0 => Ok(()),
            n => Err(TransportError::Backend {
                backend: "engine",
                msg: format!("asked for {n} bytes past the end of a whole message"),
            }),
        }
    }
}
