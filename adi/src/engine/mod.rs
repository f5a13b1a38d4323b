//! The protocol engine (seed 004 §5–7, after MPICH2's ADI3 and Open MPI's ob1).
//!
//! * Requests (§6.1) live in a table; their ids travel in control packets
//!   (`sender_req_id`, `receiver_req_id`).
//! * Three queues (§6.1): a send queue per connection (messages the
//!   transport's flow control made wait), the posted-receive queue and the
//!   unexpected queue, both searched in order so that MPI's non-overtaking
//!   rule holds (MPI 4.1 §3.5): messages from one sender arrive in order, and
//!   each queue is FIFO.
//! * Protocols (§5): eager (envelope + data in one packet) for standard-mode
//!   messages up to the threshold; rendezvous (RTS → CTS → data → FTS) above
//!   it and for every synchronous-mode send, so that its completion means the
//!   receive was matched.
//! * Progress (§6.3, Fig. 7): `progress` receives control packets and drives
//!   every pending request; `wait` is the `while (!completed) progress_wait()`
//!   loop of `MPI_Send` (§7), idling the transport when a pass finds nothing.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use crate::config::Config;
use crate::counters::Counters;
use crate::error::{AdiError, TransportError};
use crate::transport::{Arrival, Caps, HostCost, Region, RemoteMemory, Transport};
use crate::wire::{Envelope, Packet, ENVELOPE_LEN, MAX_HEADER, SHORT_LEN};

mod send;

mod dispatch;
mod progress;
mod queues;
mod receive;

/// A request handle: 24-bit slot index and 8-bit generation.
pub type ReqId = u32;

/// Which sender a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `MPI_ANY_SOURCE`.
    Any,
    /// One rank of the job.
    Rank(u32),
}

/// Which tag a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagSel {
    /// `MPI_ANY_TAG`.
    Any,
    /// One tag.
    Tag(i32),
}

/// What a completed receive or a probe reports (MPI_Status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// Sender's rank in the job.
    pub source: u32,
    /// Tag.
    pub tag: i32,
    /// Message length in bytes.
    pub len: u64,
}

/// A completed request.
#[derive(Debug, PartialEq, Eq)]
pub enum Done {
    /// A send completed (its buffer may be reused).
    Sent,
    /// A receive into an engine-owned buffer ([`Engine::irecv`]) completed.
    Received {
        /// Envelope of the message.
        status: Status,
        /// The data.
        data: Vec<u8>,
    },
    /// A receive into a caller's buffer ([`Engine::irecv_into`]) completed:
    /// the first `min(status.len, capacity)` bytes of that buffer hold the
    /// message.
    Placed {
        /// Envelope of the message.
        status: Status,
    },
    /// A receive was cancelled before it matched a message, or a send's
    /// message was withdrawn before a receive matched it (MPI 4.1 §3.8.4).
    Cancelled,
}

/// A message taken off the unexpected queue by [`Engine::improbe`] (MPI 4.1
/// §3.8.2, `MPI_Improbe`): no other receive can match it any more, so it must
/// be received with [`Engine::imrecv`] or [`Engine::imrecv_into`]. Dropping
/// it discards an eager message and leaves a rendezvous sender waiting.
#[derive(Debug)]
#[must_use = "a matched message must be received (imrecv), or it is lost"]
pub struct Matched {
    u: Unexpected,
}

impl Matched {
    /// The message's envelope.
    pub fn status(&self) -> Status {
        Status { source: self.u.env.src, tag: self.u.env.tag, len: self.u.env.len }
    }
}

/// Bytes of a caller's buffer that the engine reads (a send) or writes (a
/// receive) until the request using them completes.
///
/// Built only by the `unsafe` entry points [`Engine::isend_borrowed`] and
/// [`Engine::irecv_into`], whose contract keeps `ptr..ptr + len` valid (and,
/// for a send, unchanged; for a receive, not accessed by anyone else) until
/// the engine no longer holds the request: it is completed by
/// `test`/`wait`, cancelled, or the engine is dropped. The engine forgets
/// the pointer at completion (a finished send's bytes are released as soon
/// as the transport has them), so nothing is read or written after that.
#[derive(Clone, Copy, Debug)]
struct RawBytes {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a RawBytes stands for the `&'a [u8]` (send) or `&'a mut [u8]`
// (receive) its creator lent to the engine, and both of those are `Send`
// (u8 is `Send + Sync`). The engine is only ever reached through `&mut`
// (one thread at a time: a progress thread takes it under the same lock as
// the application), so moving it to another thread adds no aliasing that
// the borrow it replaces would not have allowed.
unsafe impl Send for RawBytes {}

impl RawBytes {
    /// The whole buffer, read-only.
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: by the contract of isend_borrowed/irecv_into (see the type),
        // ptr..ptr+len is valid for reads while the request holding this
        // value is alive, and nobody writes it meanwhile; len > 0 so ptr is
        // a real pointer, not the dangling one of an empty slice.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// `n` bytes at `at`, for writing; `None` unless `at + n <= len`.
    fn region_mut(&mut self, at: usize, n: usize) -> Option<&mut [u8]> {
        if at.checked_add(n).is_none_or(|end| end > self.len) {
            return None;
        }
        if n == 0 {
            return Some(&mut []);
        }
        // SAFETY: checked above that at..at+n lies inside the buffer, which
        // irecv_into's contract keeps valid and exclusively ours while the
        // receive is alive; the returned borrow is tied to &mut self, so no
        // two overlapping slices exist at once.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at), n) })
    }
}

/// A message whose bytes are made on demand, one chunk at a time (a
/// datatype's elements packed from the caller's memory, MPI 4.1 §5.1):
/// the engine holds at most one chunk of it at once, a packet's worth or
/// a remote-memory window's ([`Engine::isend_packed`]).
pub trait PackSource: Send {
    /// Bytes in the message.
    fn len(&self) -> u64;
    /// Whether the message is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Write bytes `off..off + out.len()` of the message into `out`.
    fn pack(&self, off: u64, out: &mut [u8]);
}

/// Where a message's bytes go as they arrive, one chunk at a time (a
/// datatype's elements in the caller's memory): the engine stages at most
/// one chunk ([`Engine::irecv_unpacked`]).
pub trait UnpackSink: Send {
    /// Bytes it takes; a longer message is truncated (`MPI_ERR_TRUNCATE`).
    fn capacity(&self) -> u64;
    /// Put bytes `off..off + data.len()` of the message in their places.
    fn unpack(&mut self, off: u64, data: &[u8]);
}

/// Where a send's bytes are until it completes.
enum SendData {
    /// Owned by the engine (shared with a transport that keeps them for
    /// retransmission).
    Owned(Arc<Vec<u8>>),
    /// The caller's buffer ([`Engine::isend_borrowed`]).
    Borrowed(RawBytes),
    /// Made on demand ([`Engine::isend_packed`]).
    Packed(Box<dyn PackSource>),
}

impl std::fmt::Debug for SendData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendData::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
            SendData::Borrowed(b) => write!(f, "{b:?}"),
            SendData::Packed(p) => write!(f, "Packed({} bytes)", p.len()),
        }
    }
}

impl SendData {
    /// Bytes `off..off + len`: in place, or packed for the occasion.
    fn range(&self, off: u64, len: u64) -> std::borrow::Cow<'_, [u8]> {
        use std::borrow::Cow;
        let r = off as usize..(off + len) as usize;
        match self {
            SendData::Owned(v) => Cow::Borrowed(&v[r]),
            SendData::Borrowed(b) => Cow::Borrowed(&b.bytes()[r]),
            SendData::Packed(p) => {
                let mut out = vec![0u8; len as usize];
                p.pack(off, &mut out);
                Cow::Owned(out)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            SendData::Owned(v) => v.len(),
            SendData::Borrowed(b) => b.len,
            SendData::Packed(p) => p.len() as usize,
        }
    }
}

/// Where a receive puts the message.
enum RecvBuf {
    /// A vector the engine grows as data arrives (filled in order: no
    /// zeroing pass), handed over at completion.
    Owned(Vec<u8>),
    /// The caller's buffer ([`Engine::irecv_into`]).
    Borrowed(RawBytes),
    /// Unpacked as it arrives ([`Engine::irecv_unpacked`]).
    Unpack(Box<dyn UnpackSink>),
}

impl std::fmt::Debug for RecvBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecvBuf::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
            RecvBuf::Borrowed(b) => write!(f, "{b:?}"),
            RecvBuf::Unpack(u) => write!(f, "Unpack({} bytes)", u.capacity()),
        }
    }
}

impl RecvBuf {
    /// Let `read` fill `n` bytes at `at`: in place, or in a chunk that is
    /// unpacked afterwards.
    fn fill<E>(&mut self, at: usize, n: usize, read: impl FnOnce(&mut [u8]) -> Result<(), E>) -> Result<(), E> {
        match self {
            RecvBuf::Unpack(u) => {
                let mut chunk = vec![0u8; n];
                read(&mut chunk)?;
                u.unpack(at as u64, &chunk);
                Ok(())
            }
            buf => read(buf.region(at, n)),
        }
    }

    /// Copy `data` to offset `at` (the caller checked `at + data.len()`
    /// against the capacity).
    fn put(&mut self, at: usize, data: &[u8]) {
        match self {
            RecvBuf::Owned(v) if at == v.len() => v.extend_from_slice(data),
            RecvBuf::Owned(v) => {
                if v.len() < at + data.len() {
                    v.resize(at + data.len(), 0);
                }
                v[at..at + data.len()].copy_from_slice(data);
            }
            RecvBuf::Borrowed(b) => {
                if let Some(out) = b.region_mut(at, data.len()) {
                    out.copy_from_slice(data);
                }
            }
            RecvBuf::Unpack(u) => u.unpack(at as u64, data),
        }
    }

    /// `n` bytes at `at` to be filled in place (by a transport's read).
    fn region(&mut self, at: usize, n: usize) -> &mut [u8] {
        match self {
            RecvBuf::Owned(v) => {
                if v.len() < at + n {
                    v.resize(at + n, 0);
                }
                &mut v[at..at + n]
            }
            RecvBuf::Borrowed(b) => b.region_mut(at, n).unwrap_or(&mut []),
            // `fill` unpacks a chunk instead; nothing is read in place.
            RecvBuf::Unpack(_) => &mut [],
        }
    }
}

#[derive(Debug)]
enum SendState {
    /// Eager packet waiting in a send queue.
    Queued,
    /// Rendezvous: RTS sent, waiting for CTS.
    Rendezvous,
    Done,
}

#[derive(Debug)]
struct SendReq {
    dest: u32,
    data: SendData,
    state: SendState,
    /// The transport holds a pointer into the borrowed buffer until
    /// `lent_released(dest, token)`: the send is not complete before.
    held: Option<u64>,
    /// Where a cancellation of it stands (MPI 4.1 §3.8.4).
    cancel: SendCancel,
}

/// A send's cancellation: asked of the receiver, which withdraws the
/// message if no receive has matched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendCancel {
    NotAsked,
    /// CANCEL sent; the send is not complete until the answer comes.
    Asked,
    /// The message was matched first: the send completes as usual.
    Lost,
    /// The message was withdrawn: the send completes as cancelled.
    Won,
}

#[derive(Debug)]
enum RecvState {
    Posted,
    /// Matched an RTS; waiting for a landing zone or data.
    Rendezvous,
    Done,
    /// Cancelled before it matched.
    Cancelled,
}

#[derive(Debug)]
struct RecvReq {
    ctx: u32,
    capacity: u64,
    state: RecvState,
    env: Option<Envelope>,
    sreq: u32,
    buf: RecvBuf,
    /// Bytes of the message accounted for (copied or skipped).
    received: u64,
    region: Option<Region>,
    error: Option<AdiError>,
}

impl RecvReq {
    /// An eager message `env` is in the buffer: done, or truncated.
    fn finish_eager(&mut self, env: Envelope) {
        self.env = Some(env);
        self.received = env.len;
        if env.len > self.capacity {
            self.error =
                Some(AdiError::Truncated { sender: env.src, tag: env.tag, len: env.len, capacity: self.capacity });
        }
        self.state = RecvState::Done;
    }
}

#[derive(Debug)]
enum Req {
    Send(SendReq),
    Recv(RecvReq),
}

/// The request id of a blocking eager send, which has none: no slab id is
/// this (the slab holds fewer than `1 << 24` slots, so its largest index
/// is never `0xFF_FFFF`).
const NO_SREQ: u32 = u32::MAX;

#[derive(Default)]
struct Slab {
    slots: Vec<(u8, Option<Req>)>,
    free: Vec<u32>,
}

#[derive(Debug)]
enum UnexpectedKind {
    /// The data (the "tmp buffer" of Fig. 7), and the sender's request
    /// ([`NO_SREQ`]: a blocking send's, which is never cancelled).
    Eager(Vec<u8>, u32),
    /// A request to send.
    Rts { sreq: u32 },
}

#[derive(Debug)]
struct Unexpected {
    env: Envelope,
    kind: UnexpectedKind,
}

#[derive(Debug)]
struct Posted {
    id: ReqId,
    src: Source,
    tag: TagSel,
    ctx: u32,
}

/// The posted receives, a queue per context. A message is only ever
/// matched with receives of its own context (MPI 4.1 §3.5: matching is
/// within a communicator), so it is compared with those alone, in the
/// order they were posted, and a search is charged for those steps only:
/// receives kept posted on other contexts — one per window for one-sided
/// traffic (`mpi::rma::target`), a communicator's persistent ones — cost a
/// message of another context nothing, as in MPICH CH4's per-communicator
/// queues (issue 47: 1,000 idle windows had made an unrelated ping-pong
/// 20 us slower in simulated time).
/// Hashes a context id with one multiplication: the posted queues are
/// looked up on every receive and every arrival (the hot path), where
/// SipHash would cost more than the search it serves.
#[derive(Default)]
struct CtxHasher(u64);

/// Emptied queues kept for reuse before a sweep drops them: a context's
/// queue then lives across its receives, with no allocation per receive,
/// and memory stays bounded however many contexts come and go.
const KEPT_EMPTY: usize = 64;

#[derive(Debug, Default)]
struct PostedQueues {
    by_ctx: std::collections::HashMap<u32, VecDeque<Posted>, std::hash::BuildHasherDefault<CtxHasher>>,
    len: usize,
    /// Contexts whose matches are noted in `hits` ([`Engine::watch_context`]).
    watched: std::collections::HashSet<u32, std::hash::BuildHasherDefault<CtxHasher>>,
    hits: Vec<u32>,
}

#[derive(Debug)]
enum Payload {
    None,
    /// Part of a send request's data.
    Slice {
        req: ReqId,
        offset: u64,
        len: u64,
        /// Rendezvous data: the transport may hold on to a borrowed buffer
        /// until it is acknowledged (the send completes after its FTS
        /// anyway). Eager payloads are copied instead, so that a small
        /// send's completion never waits for an acknowledgement.
        lend: bool,
    },
}

#[derive(Debug)]
struct Outgoing {
    hdr: [u8; MAX_HEADER],
    hlen: u8,
    payload: Payload,
    /// Send request completed once this packet is handed to the transport.
    completes: Option<ReqId>,
}

impl Outgoing {
    fn new(p: Packet, payload: Payload, completes: Option<ReqId>) -> Outgoing {
        let mut hdr = [0u8; MAX_HEADER];
        let n = p.encode(&mut hdr);
        Outgoing { hdr, hlen: n as u8, payload, completes }
    }
}

/// Work that needs the transport, found while dispatching.
#[derive(Debug)]
struct CtsWork {
    sreq: u32,
    rreq: u32,
    offset: u64,
    len: u64,
    addr: Option<u64>,
}

fn matches(src: Source, tag: TagSel, ctx: u32, env: &Envelope) -> bool {
    env.ctx == ctx
        && match src {
            Source::Any => true,
            Source::Rank(r) => r == env.src,
        }
        && match tag {
            TagSel::Any => true,
            TagSel::Tag(t) => t == env.tag,
        }
}

/// Everything but the transport, so dispatch can run inside `Transport::poll`.
struct State {
    rank: u32,
    size: u32,
    cfg: Config,
    caps: Caps,
    /// Whether the transport offers [`crate::transport::RemoteMemory`].
    remote_memory: bool,
    reqs: Slab,
    posted: PostedQueues,
    unexpected: VecDeque<Unexpected>,
    /// Packets waiting for the transport, by destination; only destinations
    /// with something queued have an entry (a job of 10,000 ranks must not
    /// cost every rank a queue per peer), in rank order for `flush_all`.
    sendq: BTreeMap<u32, VecDeque<Outgoing>>,
    outbox: Vec<(u32, Outgoing)>,
    self_inbox: VecDeque<Vec<u8>>,
    need_landing: VecDeque<ReqId>,
    cts_work: VecDeque<(u32, CtsWork)>,
    fts_work: VecDeque<(ReqId, u64, u64)>,
    counters: Counters,
    error: Option<AdiError>,
    /// Host-cost charges accumulated during dispatch (applied after poll).
    charges: [u64; 16],
    charged: bool,
    /// Packets waiting in the per-connection send queues.
    queued: usize,
}

/// The protocol engine of one process.
pub struct Engine {
    t: Box<dyn Transport>,
    st: State,
    /// Work of the layers above, run by every progress pass (see
    /// [`crate::hooks`]); taken out while it runs.
    hooks: Vec<Box<dyn crate::ProgressHook>>,
    /// The work of communication contexts ([`Engine::serve_context`]).
    served: Served,
}

/// The [`crate::ContextHook`]s, and which of them the next pass looks at.
#[derive(Default)]
struct Served {
    by_ctx: std::collections::BTreeMap<u32, Box<dyn crate::ContextHook>>,
    /// The contexts a pass polls: a message matched on them, a call
    /// touched them, or they were not idle after their last poll.
    attention: std::collections::BTreeSet<u32>,
    /// The context whose hook is being polled (out of `by_ctx` meanwhile).
    running: Option<u32>,
    /// Whether the running hook was withdrawn during its own poll.
    withdrawn: bool,
    /// The contexts being polled in this pass (kept to reuse its memory).
    due: Vec<u32>,
    /// A pass is running the hooks: a pass inside one of them runs none.
    in_hooks: bool,
}

impl Engine {
    /// An engine over `transport`, with the backend's defaults overridden by
    /// the environment ([`Config::from_env`]).
    pub fn new(transport: Box<dyn Transport>) -> Result<Engine, AdiError> {
        let caps = transport.caps();
        let cfg = Config::from_env(caps.eager_threshold).map_err(TransportError::from)?;
        Ok(Engine::with_config(transport, cfg))
    }

    /// An engine with an explicit configuration.
    pub fn with_config(mut transport: Box<dyn Transport>, cfg: Config) -> Engine {
        let caps = transport.caps();
        let remote_memory = transport.remote_memory().is_some();
        let (rank, size) = (transport.rank(), transport.size());
        Engine {
            t: transport,
            st: State {
                rank,
                size,
                cfg,
                caps,
                remote_memory,
                reqs: Slab::default(),
                posted: PostedQueues::default(),
                unexpected: VecDeque::new(),
                sendq: BTreeMap::new(),
                outbox: Vec::new(),
                self_inbox: VecDeque::new(),
                need_landing: VecDeque::new(),
                cts_work: VecDeque::new(),
                fts_work: VecDeque::new(),
                counters: Counters::default(),
                error: None,
                charges: [0; 16],
                charged: false,
                queued: 0,
            },
            hooks: Vec::new(),
            served: Served::default(),
        }
    }

    /// Register `hook`: from now on every progress pass advances it, until
    /// it says it has ended ([`crate::hooks`]).
    pub fn add_hook(&mut self, hook: Box<dyn crate::ProgressHook>) {
        self.hooks.push(hook);
    }

    /// Serve context `ctx` with `hook` from now on: a progress pass polls
    /// it when a message matched a receive posted on `ctx`, when a call
    /// [attended](Engine::attend) to it, or while it is not idle. Refused
    /// if `ctx` is served already.
    pub fn serve_context(&mut self, ctx: u32, hook: Box<dyn crate::ContextHook>) -> Result<(), AdiError> {
        if self.served.by_ctx.contains_key(&ctx) || self.served.running == Some(ctx) {
            return Err(AdiError::ServedTwice { ctx });
        }
        self.watch_context(ctx, true);
        self.served.by_ctx.insert(ctx, hook);
        self.served.attention.insert(ctx);
        Ok(())
    }

    /// Stop serving `ctx`: its hook is dropped (at the end of its poll if
    /// this is called from inside it) and never polled again.
    pub fn stop_serving(&mut self, ctx: u32) {
        self.watch_context(ctx, false);
        self.served.attention.remove(&ctx);
        if self.served.by_ctx.remove(&ctx).is_none() && self.served.running == Some(ctx) {
            self.served.withdrawn = true;
        }
    }

    /// A call touched the work of `ctx`: the next pass polls its hook.
    pub fn attend(&mut self, ctx: u32) {
        if self.served.by_ctx.contains_key(&ctx) || self.served.running == Some(ctx) {
            self.served.attention.insert(ctx);
        }
    }

    /// The contexts the next progress pass will poll (for tests of the
    /// layers above: an idle context costs a pass nothing).
    pub fn attended(&self) -> Vec<u32> {
        self.served.attention.iter().copied().collect()
    }

    /// Whether any registered hook has work: a busy [`crate::ProgressHook`],
    /// or any served context.
    pub fn hooks_busy(&self) -> bool {
        !self.served.by_ctx.is_empty() || self.hooks.iter().any(|h| h.busy())
    }

    /// Run every busy hook once, then the served contexts that need it;
    /// whether any moved something. A progress pass made inside a hook
    /// (a collective's blocking step, a window's reply) runs no hook of
    /// either kind: `in_hooks` says one is running.
    fn run_hooks(&mut self) -> Result<bool, AdiError> {
        if self.served.in_hooks {
            return Ok(false);
        }
        self.served.in_hooks = true;
        let r = self.run_hooks_once();
        self.served.in_hooks = false;
        r
    }

    /// [`Engine::run_hooks`], outside any other hook.
    fn run_hooks_once(&mut self) -> Result<bool, AdiError> {
        let mut hooks = std::mem::take(&mut self.hooks);
        let mut worked = false;
        let mut failed = None;
        hooks.retain_mut(|h| {
            if failed.is_some() || !h.busy() {
                return true;
            }
            match h.poll(self) {
                Ok(p) => {
                    worked |= p.moved;
                    !p.ended
                }
                Err(e) => {
                    failed = Some(e);
                    true
                }
            }
        });
        // Hooks registered while these ran go after them.
        hooks.append(&mut self.hooks);
        self.hooks = hooks;
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(self.run_served()? | worked)
    }

    /// Poll the served contexts that need it, in context order.
    fn run_served(&mut self) -> Result<bool, AdiError> {
        let Served { by_ctx, attention, .. } = &mut self.served;
        attention.extend(self.st.posted.hits.drain(..).filter(|c| by_ctx.contains_key(c)));
        if attention.is_empty() {
            return Ok(false);
        }
        let mut worked = false;
        let mut due = std::mem::take(&mut self.served.due);
        due.clear();
        due.extend(self.served.attention.iter().copied());
        let mut failed = None;
        for &ctx in &due {
            let Some(mut h) = self.served.by_ctx.remove(&ctx) else {
                self.served.attention.remove(&ctx);
                continue;
            };
            self.served.running = Some(ctx);
            let r = h.poll(self);
            self.served.running = None;
            let idle = r.is_ok() && h.idle(self);
            if std::mem::take(&mut self.served.withdrawn) {
                drop(h);
            } else {
                self.served.by_ctx.insert(ctx, h);
                if idle {
                    self.served.attention.remove(&ctx);
                }
            }
            match r {
                Ok(w) => worked |= w,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.served.due = due;
        failed.map_or(Ok(worked), Err)
    }

    /// This process's rank.
    pub fn rank(&self) -> u32 {
        self.st.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.st.size
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.st.cfg
    }

    /// Change the eager/rendezvous threshold.
    pub fn set_eager_threshold(&mut self, bytes: usize) {
        self.st.cfg.eager_threshold = bytes;
    }

    /// Send every message by rendezvous (`true`) or use the threshold again.
    pub fn set_force_rendezvous(&mut self, on: bool) {
        self.st.cfg.force_rendezvous = on;
    }

    /// The transport's collective offload, if its device has one.
    pub fn offload(&mut self) -> Option<&mut dyn crate::offload::Offload> {
        self.t.offload()
    }

    /// How the process's other threads end this engine's wait in
    /// [`Engine::idle`] (see [`crate::Transport::waker`]).
    pub fn waker(&mut self) -> Result<Option<std::sync::Arc<dyn crate::transport::Waker>>, AdiError> {
        Ok(self.t.waker()?)
    }

    /// The transport's one-sided access to device memory, if it has it.
    pub fn one_sided(&mut self) -> Option<&mut dyn crate::transport::OneSided> {
        self.t.one_sided()
    }

    /// The transport's capabilities.
    pub fn caps(&self) -> Caps {
        self.st.caps
    }

    /// The transport's own counters, if it keeps any.
    pub fn transport_report(&self) -> Option<String> {
        self.t.report()
    }

    /// The transport's name.
    pub fn backend(&self) -> &'static str {
        self.t.name()
    }

    /// The node this rank runs on, when the backend has nodes of its own
    /// ([`crate::Transport::node`]).
    pub fn node(&self) -> Option<u32> {
        self.t.node()
    }

    /// Counters.
    pub fn counters(&self) -> Counters {
        Counters {
            posted_depth: self.st.posted.len() as u64,
            unexpected_depth: self.st.unexpected.len() as u64,
            ..self.st.counters.clone()
        }
    }

    /// Charge host work (simulation only).
    #[inline]
    pub fn charge(&self, c: HostCost, n: u64) {
        if let Some(clock) = self.t.sim_clock() {
            clock.charge(c, n);
        }
    }

    /// Host costs charged so far, by kind (simulation only).
    pub fn cost_counts(&self) -> Option<Vec<u64>> {
        self.t.sim_clock().map(|c| c.cost_counts())
    }

    /// The profile's cost of each kind of host operation (simulation only).
    pub fn cost_table(&self) -> Option<Vec<u64>> {
        self.t.sim_clock().map(|c| c.cost_table())
    }

    /// On the simulator, have the schedule expect `count` more ranks the
    /// launcher started for a spawn ([`crate::transport::SimClock::expect_ranks`]);
    /// elsewhere they join by themselves.
    pub fn expect_ranks(&self, count: u32) {
        if let Some(clock) = self.t.sim_clock() {
            clock.expect_ranks(count);
        }
    }

    /// Simulated time in picoseconds, when simulated.
    pub fn now_ps(&self) -> Option<u64> {
        self.t.sim_clock().map(|c| c.now_ps())
    }

    /// Account for `ns` of application computation in simulated time (a
    /// no-op outside the simulator).
    pub fn compute(&mut self, ns: f64) -> Result<(), AdiError> {
        match self.t.sim_clock() {
            Some(clock) => Ok(clock.compute(ns)?),
            None => Ok(()),
        }
    }

    /// Simulate `ns` of waiting on the operating system and let the others
    /// run ([`SimClock::pause`]); no-op outside the simulator.
    pub fn pause(&mut self, ns: f64) -> Result<(), AdiError> {
        match self.t.sim_clock() {
            Some(clock) => Ok(clock.pause(ns)?),
            None => Ok(()),
        }
    }

    fn check_rank(&self, r: u32) -> Result<(), AdiError> {
        if r >= self.st.size {
            return Err(AdiError::BadRank { rank: r, size: self.st.size });
        }
        Ok(())
    }

    /// Whether a standard-mode message of `len` bytes to `dest` goes eagerly.
    pub fn eager_ok(&self, dest: u32, len: usize, sync: bool) -> bool {
        !sync
            && !self.st.cfg.force_rendezvous
            && len <= self.st.cfg.eager_threshold
            && (dest == self.st.rank || len + ENVELOPE_LEN <= self.st.caps.max_message)
    }
}

/// The transport's remote stores, for a step of the rendezvous that needs
/// them: only reached when a landing zone exists, which only a transport
/// with [`RemoteMemory`] hands out; a peer's CTS naming an address on a
/// transport without them is an error, not a panic.
fn remote(t: &mut dyn Transport) -> Result<&mut dyn RemoteMemory, TransportError> {
    let backend = t.name();
    t.remote_memory().ok_or_else(|| TransportError::Backend {
        backend,
        msg: "a peer asked for a remote write, but this backend has no remote memory".into(),
    })
}
