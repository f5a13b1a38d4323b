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

use std::collections::VecDeque;
use std::sync::Arc;

use crate::config::Config;
use crate::counters::Counters;
use crate::error::{AdiError, TransportError};
use crate::transport::{Arrival, Caps, HostCost, Region, RemoteMemory, Transport};
use crate::wire::{Envelope, Packet, ENVELOPE_LEN, MAX_HEADER, SHORT_LEN};

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

impl Slab {
    fn insert(&mut self, r: Req) -> Result<ReqId, AdiError> {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.slots.len() >= (1 << 24) - 1 {
                    return Err(AdiError::Invalid("more than 16 million outstanding requests".into()));
                }
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[idx as usize];
        slot.1 = Some(r);
        Ok((idx << 8) | slot.0 as u32)
    }

    fn get_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        let (idx, gen) = ((id >> 8) as usize, (id & 0xff) as u8);
        match self.slots.get_mut(idx) {
            Some((g, Some(r))) if *g == gen => Some(r),
            _ => None,
        }
    }

    fn get(&self, id: ReqId) -> Option<&Req> {
        let (idx, gen) = ((id >> 8) as usize, (id & 0xff) as u8);
        match self.slots.get(idx) {
            Some((g, Some(r))) if *g == gen => Some(r),
            _ => None,
        }
    }

    fn remove(&mut self, id: ReqId) -> Option<Req> {
        let (idx, gen) = ((id >> 8) as usize, (id & 0xff) as u8);
        match self.slots.get_mut(idx) {
            Some((g, r @ Some(_))) if *g == gen => {
                *g = g.wrapping_add(1);
                self.free.push(idx as u32);
                r.take()
            }
            _ => None,
        }
    }
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

impl std::hash::Hasher for CtxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

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

impl PostedQueues {
    fn push(&mut self, p: Posted) {
        if self.by_ctx.len() > self.len + KEPT_EMPTY {
            self.by_ctx.retain(|_, q| !q.is_empty());
        }
        self.by_ctx.entry(p.ctx).or_default().push_back(p);
        self.len += 1;
    }

    /// The first receive that matches `env`, taken out of its queue, and
    /// how many receives were compared.
    fn take_match(&mut self, env: &Envelope) -> (Option<ReqId>, u64) {
        let Some(q) = self.by_ctx.get_mut(&env.ctx) else { return (None, 0) };
        let mut steps = 0u64;
        let found = q.iter().position(|p| {
            steps += 1;
            matches(p.src, p.tag, p.ctx, env)
        });
        let id = found.and_then(|i| q.remove(i)).map(|p| p.id);
        if id.is_some() {
            self.len -= 1;
            if !self.watched.is_empty() && self.watched.contains(&env.ctx) {
                self.hits.push(env.ctx);
            }
        }
        (id, steps)
    }

    /// Withdraw receive `id` of context `ctx`, if it is posted.
    fn remove(&mut self, ctx: u32, id: ReqId) {
        if let Some(q) = self.by_ctx.get_mut(&ctx) {
            let before = q.len();
            q.retain(|p| p.id != id);
            self.len -= before - q.len();
        }
    }

    fn len(&self) -> usize {
        self.len
    }
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
    sendq: Vec<VecDeque<Outgoing>>,
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

impl State {
    fn charge(&mut self, c: HostCost, n: u64) {
        self.charges[c as usize] += n;
        self.charged = true;
    }

    fn fail(&mut self, e: AdiError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Queue a control packet built by the engine (one ADI operation).
    fn post_out(&mut self, dest: u32, o: Outgoing) {
        self.charge(HostCost::AdiOp, 1);
        self.outbox.push((dest, o));
    }

    /// Search the posted queue for `env` (an arriving envelope).
    fn match_posted(&mut self, env: &Envelope) -> Option<ReqId> {
        self.counters.posted_searches += 1;
        let (found, steps) = self.posted.take_match(env);
        self.counters.posted_steps += steps;
        self.charge(HostCost::MatchStep, steps);
        found
    }

    /// Search the unexpected queue for a receive's (source, tag, context):
    /// the position of the first match (MPI's order), counted, and the
    /// number of elements examined (for the caller to charge).
    fn find_unexpected(&mut self, src: Source, tag: TagSel, ctx: u32) -> (Option<usize>, u64) {
        self.counters.unexpected_searches += 1;
        let mut steps = 0u64;
        let found = self.unexpected.iter().position(|u| {
            steps += 1;
            matches(src, tag, ctx, &u.env)
        });
        self.counters.unexpected_steps += steps;
        (found, steps)
    }

    fn push_unexpected(&mut self, u: Unexpected) {
        self.unexpected.push_back(u);
        self.counters.unexpected_total += 1;
        self.counters.unexpected_max = self.counters.unexpected_max.max(self.unexpected.len() as u64);
    }

    fn recv_mut(&mut self, id: ReqId) -> Option<&mut RecvReq> {
        match self.reqs.get_mut(id) {
            Some(Req::Recv(r)) => Some(r),
            _ => None,
        }
    }

    /// An eager message matched receive `id`: `data` is borrowed from the
    /// transport (a posted receive: copied once, into the receive's buffer)
    /// or owned by the unexpected queue (the "tmp buffer" of Fig. 7: copied
    /// out of it into a caller's buffer, charged and counted as the one
    /// extra copy; an engine-owned receive takes the buffer itself).
    fn deliver_eager(&mut self, id: ReqId, env: Envelope, data: std::borrow::Cow<'_, [u8]>) {
        let (copies, copy_bytes) = (&mut self.counters.recv_copies, &mut self.counters.recv_copy_bytes);
        let charges = &mut self.charges;
        let Some(Req::Recv(r)) = self.reqs.get_mut(id) else { return };
        let keep = (r.capacity.min(env.len)) as usize;
        match (&mut r.buf, data) {
            (RecvBuf::Owned(v), std::borrow::Cow::Borrowed(d)) => *v = d[..keep].to_vec(),
            (RecvBuf::Owned(v), std::borrow::Cow::Owned(mut d)) => {
                // The unexpected buffer becomes the receive's. Charged as the
                // copy out of it that Fig. 7 makes (the model's calibration
                // assumes one), though no byte moves here.
                charges[HostCost::CopyByte as usize] += d.len() as u64;
                d.truncate(keep);
                *v = d;
            }
            (buf @ RecvBuf::Borrowed(_), std::borrow::Cow::Borrowed(d)) => buf.put(0, &d[..keep]),
            (buf @ RecvBuf::Unpack(_), d) => buf.put(0, &d[..keep]),
            (buf @ RecvBuf::Borrowed(_), std::borrow::Cow::Owned(d)) => {
                charges[HostCost::CopyByte as usize] += d.len() as u64;
                if keep > 0 {
                    *copies += 1;
                    *copy_bytes += keep as u64;
                }
                buf.put(0, &d[..keep]);
            }
        }
        self.charged = true;
        r.finish_eager(env);
    }

    /// An eager message that matched receive `id` arrived in parts (the
    /// transport has read only `a.head()`): its payload goes from the head
    /// and then straight from the transport into the receive's buffer, with
    /// no buffer of the transport's in between (issue 8). A truncated
    /// receive reads only what fits.
    fn deliver_eager_parts(&mut self, id: ReqId, env: Envelope, hlen: usize, a: &mut dyn Arrival) {
        let Some(Req::Recv(r)) = self.reqs.get_mut(id) else { return };
        let keep = (r.capacity.min(env.len)) as usize;
        let filled = match &mut r.buf {
            RecvBuf::Borrowed(b) => match b.region_mut(0, keep) {
                Some(out) => a.read_from(hlen, out),
                None => Ok(()), // unreachable: keep <= capacity = the buffer's length
            },
            RecvBuf::Owned(v) => {
                v.resize(keep, 0);
                a.read_from(hlen, v)
            }
            buf @ RecvBuf::Unpack(_) => buf.fill(0, keep, |out| a.read_from(hlen, out)),
        };
        if let Err(e) = filled {
            return self.fail(e.into());
        }
        r.finish_eager(env);
        self.charged = true;
        self.counters.recv_direct += 1;
    }

    /// Dispatch a message the transport handed over as an [`Arrival`]: a
    /// whole one as [`State::dispatch`] does; of one that arrived in parts,
    /// an eager payload that matches a posted receive is read straight into
    /// it, and anything else is read whole first.
    fn dispatch_arrival(&mut self, src: u32, a: &mut dyn Arrival) {
        let total = a.len();
        if a.head().len() >= total {
            return self.dispatch(src, &a.head()[..total]);
        }
        match Packet::decode_head(src, a.head(), total) {
            Ok((Packet::Eager { env, sreq }, hlen)) => {
                self.charge(HostCost::AdiOp, 1);
                self.counters.eager_recv += 1;
                self.counters.eager_bytes_recv += env.len;
                if let Some(id) = self.match_posted(&env) {
                    return self.deliver_eager_parts(id, env, hlen, a);
                }
                let mut v = vec![0u8; total - hlen];
                match a.read_from(hlen, &mut v) {
                    Ok(()) => self.push_unexpected(Unexpected { env, kind: UnexpectedKind::Eager(v, sreq) }),
                    Err(e) => self.fail(e.into()),
                }
            }
            Err(e) => self.fail(e),
            Ok(_) => {
                let mut v = vec![0u8; total];
                match a.read_from(0, &mut v) {
                    Ok(()) => self.dispatch(src, &v),
                    Err(e) => self.fail(e.into()),
                }
            }
        }
    }

    /// An RTS matched receive `id`: ask for the data.
    fn start_rendezvous(&mut self, id: ReqId, env: Envelope, sreq: u32) {
        let remote = self.remote_memory && env.src != self.rank;
        let Some(r) = self.recv_mut(id) else { return };
        r.env = Some(env);
        r.sreq = sreq;
        r.state = RecvState::Rendezvous;
        if let RecvBuf::Owned(v) = &mut r.buf {
            // Filled in order as the data arrives: no zeroing pass.
            *v = Vec::with_capacity(r.capacity.min(env.len) as usize);
        }
        if env.len > r.capacity {
            r.error = Some(AdiError::Truncated { sender: env.src, tag: env.tag, len: env.len, capacity: r.capacity });
        }
        if remote && env.len > 0 {
            self.need_landing.push_back(id);
        } else {
            let cts = Packet::Cts { sreq, rreq: id, offset: 0, len: env.len, addr: None };
            self.post_out(env.src, Outgoing::new(cts, Payload::None, None));
        }
    }

    /// Dispatch one arriving message (Fig. 7).
    fn dispatch(&mut self, src: u32, msg: &[u8]) {
        self.charge(HostCost::AdiOp, 1);
        let (p, hlen) = match Packet::decode(src, msg) {
            Ok(x) => x,
            Err(e) => return self.fail(e),
        };
        match p {
            Packet::Eager { env, sreq } => {
                self.counters.eager_recv += 1;
                self.counters.eager_bytes_recv += env.len;
                let data = &msg[hlen..];
                match self.match_posted(&env) {
                    Some(id) => self.deliver_eager(id, env, std::borrow::Cow::Borrowed(data)),
                    None => self.push_unexpected(Unexpected { env, kind: UnexpectedKind::Eager(data.to_vec(), sreq) }),
                }
            }
            Packet::Cancel { sreq } => {
                // The sender's message, if no receive has matched it yet
                // (nor a matched probe taken it): withdrawn.
                let at = self.unexpected.iter().position(|u| {
                    u.env.src == src
                        && sreq != NO_SREQ
                        && matches!(u.kind, UnexpectedKind::Eager(_, s) | UnexpectedKind::Rts { sreq: s } if s == sreq)
                });
                let won = at.and_then(|i| self.unexpected.remove(i)).is_some();
                self.post_out(src, Outgoing::new(Packet::Cancelled { sreq, won }, Payload::None, None));
            }
            Packet::Cancelled { sreq, won } => match self.reqs.get_mut(sreq) {
                Some(Req::Send(s)) if s.dest == src && s.cancel == SendCancel::Asked => {
                    if won {
                        s.cancel = SendCancel::Won;
                        s.state = SendState::Done;
                        s.data = SendData::Owned(Arc::default());
                    } else {
                        s.cancel = SendCancel::Lost;
                    }
                }
                _ => self.fail(AdiError::Protocol {
                    sender: src,
                    what: format!("an answer to a cancellation never asked, of send request {sreq:#x}"),
                }),
            },
            Packet::Rts { env, sreq, .. } => {
                self.counters.rndv_recv += 1;
                self.counters.rndv_bytes_recv += env.len;
                match self.match_posted(&env) {
                    Some(id) => self.start_rendezvous(id, env, sreq),
                    None => self.push_unexpected(Unexpected { env, kind: UnexpectedKind::Rts { sreq } }),
                }
            }
            Packet::Cts { sreq, rreq, offset, len, addr } => {
                match self.reqs.get(sreq) {
                    Some(Req::Send(s))
                        if s.dest == src && offset.checked_add(len).is_some_and(|e| e <= s.data.len() as u64) => {}
                    _ => {
                        return self.fail(AdiError::Protocol {
                            sender: src,
                            what: format!("CTS for unknown or mismatched send request {sreq:#x}"),
                        })
                    }
                }
                self.cts_work.push_back((src, CtsWork { sreq, rreq, offset, len, addr }));
            }
            Packet::Fts { rreq, offset, len } => {
                let Some(r) = self.rendezvous_from(src, rreq, "FTS", offset, len) else { return };
                if r.region.is_some() {
                    self.fts_work.push_back((rreq, offset, len));
                } else {
                    // Checked above: offset + len is within the message.
                    self.finish_segment(rreq, offset + len);
                }
            }
            Packet::Data { rreq, offset, len } => {
                let data = &msg[hlen..];
                let Some(r) = self.rendezvous_from(src, rreq, "DATA", offset, len) else { return };
                let keep = r.capacity.min(r.env.map_or(0, |e| e.len));
                if offset < keep {
                    let (o, n) = (offset as usize, (keep - offset).min(len) as usize);
                    r.buf.put(o, &data[..n]);
                }
            }
        }
    }

    /// The receive `rreq` that an FTS or DATA packet (`what`) from `src`
    /// covering `offset..offset + len` refers to; a protocol error (and
    /// `None`) unless it is a rendezvous receive matched to a message from
    /// `src` that contains that range.
    fn rendezvous_from(&mut self, src: u32, rreq: ReqId, what: &str, offset: u64, len: u64) -> Option<&mut RecvReq> {
        let fits = |r: &RecvReq| {
            matches!(r.state, RecvState::Rendezvous)
                && r.env.is_some_and(|e| e.src == src && offset.checked_add(len).is_some_and(|end| end <= e.len))
        };
        if self.recv_mut(rreq).is_some_and(|r| fits(r)) {
            return self.recv_mut(rreq);
        }
        self.fail(AdiError::Protocol {
            sender: src,
            what: format!("{what} for bytes {offset}+{len} of receive request {rreq:#x}, which is not a rendezvous from this rank that long"),
        });
        None
    }

    /// Bytes up to `upto` are in place: done, or ask for the next segment.
    fn finish_segment(&mut self, rreq: ReqId, upto: u64) {
        let Some(r) = self.recv_mut(rreq) else { return };
        r.received = upto;
        let total = r.env.map_or(0, |e| e.len);
        if upto >= total {
            if let RecvBuf::Owned(v) = &mut r.buf {
                v.resize(r.capacity.min(total) as usize, 0);
            }
            r.state = RecvState::Done;
        } else {
            self.need_landing.push_back(rreq);
        }
    }
}

/// The protocol engine of one process.
pub struct Engine {
    t: Box<dyn Transport>,
    st: State,
    /// Work of the layers above, run by every progress pass (see
    /// [`crate::hooks`]); taken out while it runs.
    hooks: Vec<Box<dyn crate::ProgressHook>>,
}

impl Engine {
    /// An engine over `transport`, with the backend's defaults overridden by
    /// the environment ([`Config::from_env`]).
    pub fn new(transport: Box<dyn Transport>) -> Result<Engine, AdiError> {
        let caps = transport.caps();
        let cfg = Config::from_env(caps.eager_threshold).map_err(AdiError::Invalid)?;
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
                sendq: (0..size).map(|_| VecDeque::new()).collect(),
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
        }
    }

    /// Register `hook`: from now on every progress pass advances it
    /// ([`crate::hooks`]).
    pub fn add_hook(&mut self, hook: Box<dyn crate::ProgressHook>) {
        self.hooks.push(hook);
    }

    /// The registered hook of type `T` (`None` while it runs, or if none is).
    pub fn hook_mut<T: crate::ProgressHook + 'static>(&mut self) -> Option<&mut T> {
        self.hooks.iter_mut().find_map(|h| h.as_any_mut().downcast_mut::<T>())
    }

    /// Run `f` with the registered hook of type `T` and the engine both
    /// (`None` while it runs, or if none is): the hook is taken out of the
    /// list meanwhile, so a progress pass inside `f` does not run it.
    pub fn with_hook<T: crate::ProgressHook + 'static, R>(
        &mut self,
        f: impl FnOnce(&mut T, &mut Engine) -> R,
    ) -> Option<R> {
        let i = self.hooks.iter_mut().position(|h| h.as_any_mut().is::<T>())?;
        let mut h = self.hooks.remove(i);
        let r = h.as_any_mut().downcast_mut::<T>().map(|t| f(t, self));
        let at = i.min(self.hooks.len());
        self.hooks.insert(at, h);
        r
    }

    /// Whether any registered hook has work.
    pub fn hooks_busy(&self) -> bool {
        self.hooks.iter().any(|h| h.busy())
    }

    /// Run every busy hook once; whether any moved something. Hooks run
    /// with the list taken out, so a progress pass inside one runs none.
    fn run_hooks(&mut self) -> Result<bool, AdiError> {
        let mut hooks = std::mem::take(&mut self.hooks);
        let mut result = Ok(false);
        for h in hooks.iter_mut() {
            if h.busy() {
                match h.poll(self) {
                    Ok(w) => result = result.map(|worked| worked | w),
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
        }
        // Hooks registered while these ran go after them.
        hooks.append(&mut self.hooks);
        self.hooks = hooks;
        result
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

    // ---- sending --------------------------------------------------------------

    /// Start a send of `data` (standard mode, or synchronous with `sync`),
    /// which the engine owns (and may share with a transport that keeps it
    /// for retransmission).
    pub fn isend(&mut self, dest: u32, tag: i32, ctx: u32, data: Vec<u8>, sync: bool) -> Result<ReqId, AdiError> {
        self.start_send(dest, tag, ctx, SendData::Owned(Arc::new(data)), sync)
    }

    /// Start a send straight from the caller's buffer: no copy is made
    /// unless the transport must keep the bytes after handing them on (UDP's
    /// retransmission buffer).
    ///
    /// # Safety
    /// `data` must stay valid and unmodified until the engine no longer holds
    /// the request: until it is completed by [`Engine::test`] or
    /// [`Engine::wait`] (or `wait_all`), abandoned with [`Engine::abandon`],
    /// or the engine is dropped or finalized. `mpi::request::scope` is the
    /// safe wrapper that guarantees this.
    pub unsafe fn isend_borrowed(
        &mut self,
        dest: u32,
        tag: i32,
        ctx: u32,
        data: &[u8],
        sync: bool,
    ) -> Result<ReqId, AdiError> {
        let raw = RawBytes { ptr: data.as_ptr() as *mut u8, len: data.len() };
        self.start_send(dest, tag, ctx, SendData::Borrowed(raw), sync)
    }

    /// Start a send of a message made on demand by `src`, one chunk at a
    /// time, as the transport takes it: a packet's worth, or a window of
    /// the receiver's memory (issue 30: a message of a non-contiguous
    /// datatype is never packed whole). Retransmissions keep their own
    /// copies, as for any send.
    pub fn isend_packed(
        &mut self,
        dest: u32,
        tag: i32,
        ctx: u32,
        src: Box<dyn PackSource>,
        sync: bool,
    ) -> Result<ReqId, AdiError> {
        if usize::try_from(src.len()).is_err() {
            return Err(AdiError::Invalid(format!(
                "a message of {} bytes is more than this host can address",
                src.len()
            )));
        }
        self.start_send(dest, tag, ctx, SendData::Packed(src), sync)
    }

    fn start_send(&mut self, dest: u32, tag: i32, ctx: u32, data: SendData, sync: bool) -> Result<ReqId, AdiError> {
        self.check_rank(dest)?;
        self.charge(HostCost::AdiOp, 1);
        self.charge(HostCost::Request, 1);
        let len = data.len();
        let env = Envelope { ctx, tag, src: self.st.rank, len: len as u64 };
        let eager = self.eager_ok(dest, len, sync);
        let state = if eager { SendState::Queued } else { SendState::Rendezvous };
        let id =
            self.st.reqs.insert(Req::Send(SendReq { dest, data, state, held: None, cancel: SendCancel::NotAsked }))?;
        self.count_send(dest, eager, env.len);
        if eager {
            let payload = Payload::Slice { req: id, offset: 0, len: len as u64, lend: false };
            self.enqueue(dest, Outgoing::new(Packet::Eager { env, sreq: id }, payload, Some(id)))?;
        } else {
            self.enqueue(dest, Outgoing::new(Packet::Rts { env, sreq: id, sync }, Payload::None, None))?;
        }
        Ok(id)
    }

    fn count_send(&mut self, dest: u32, eager: bool, len: u64) {
        let c = &mut self.st.counters;
        if dest == self.st.rank {
            c.self_msgs += 1;
        }
        if eager {
            c.eager_sent += 1;
            c.eager_bytes_sent += len;
        } else {
            c.rndv_sent += 1;
            c.rndv_bytes_sent += len;
        }
    }

    /// Blocking send. Eager messages go straight to the transport without a
    /// request when nothing is queued for `dest` (seed 004 §6.1).
    pub fn send(&mut self, dest: u32, tag: i32, ctx: u32, data: &[u8], sync: bool) -> Result<(), AdiError> {
        self.check_rank(dest)?;
        if dest != self.st.rank && self.eager_ok(dest, data.len(), sync) && self.st.sendq[dest as usize].is_empty() {
            self.charge(HostCost::AdiOp, 1);
            let env = Envelope { ctx, tag, src: self.st.rank, len: data.len() as u64 };
            let mut hdr = [0u8; MAX_HEADER];
            let n = Packet::Eager { env, sreq: NO_SREQ }.encode(&mut hdr);
            if self.t.try_send(dest, &[&hdr[..n], data])? {
                self.count_send(dest, true, env.len);
                return Ok(());
            }
            // Flow control: fall back to a queued request (charged again as one).
        }
        // SAFETY: `data` outlives this call, and the request is gone when it
        // returns: `wait` completes it, or abandons it if it fails.
        let id = unsafe { self.isend_borrowed(dest, tag, ctx, data, sync)? };
        self.wait(id).map(|_| ())
    }

    fn enqueue(&mut self, dest: u32, o: Outgoing) -> Result<(), AdiError> {
        if dest == self.st.rank {
            let mut msg = o.hdr[..o.hlen as usize].to_vec();
            match &o.payload {
                Payload::None => {}
                Payload::Slice { req, offset, len, .. } => {
                    if let Some(Req::Send(s)) = self.st.reqs.get(*req) {
                        msg.extend_from_slice(&s.data.range(*offset, *len));
                    }
                    // A message to self waits in the self inbox: one copy
                    // more than a message from a peer (counted once per
                    // message: at its first bytes).
                    if *len > 0 {
                        self.st.counters.recv_copies += u64::from(*offset == 0);
                        self.st.counters.recv_copy_bytes += *len;
                    }
                }
            }
            self.st.self_inbox.push_back(msg);
            if let Some(id) = o.completes {
                self.complete_send(id);
            }
            return Ok(());
        }
        let q = &mut self.st.sendq[dest as usize];
        q.push_back(o);
        self.st.queued += 1;
        if q.len() > 1 {
            self.st.counters.send_queued += 1;
        }
        self.st.counters.send_queue_max = self.st.counters.send_queue_max.max(q.len() as u64);
        self.flush(dest)?;
        Ok(())
    }

    fn complete_send(&mut self, id: ReqId) {
        if let Some(Req::Send(s)) = self.st.reqs.get_mut(id) {
            s.state = SendState::Done;
            // The transport has the bytes (or a shared reference to owned
            // ones): forget the caller's buffer at once.
            s.data = SendData::Owned(Arc::default());
        }
    }

    /// Hand queued packets for `dest` to the transport, in order.
    fn flush(&mut self, dest: u32) -> Result<bool, AdiError> {
        let mut sent = false;
        while let Some(o) = self.st.sendq[dest as usize].front() {
            let hdr = &o.hdr[..o.hlen as usize];
            let ok = match &o.payload {
                Payload::None => self.t.try_send(dest, &[hdr])?,
                Payload::Slice { req, offset, len, lend } => {
                    let range = *offset as usize..(*offset + *len) as usize;
                    match self.st.reqs.get(*req) {
                        Some(Req::Send(SendReq { data: SendData::Owned(v), .. })) => {
                            self.t.try_send_shared(dest, hdr, v, range)?
                        }
                        Some(Req::Send(SendReq { data: d @ SendData::Packed(_), .. })) => {
                            self.t.try_send(dest, &[hdr, &d.range(*offset, *len)])?
                        }
                        Some(Req::Send(SendReq { data: SendData::Borrowed(b), .. })) if !*lend => {
                            self.t.try_send(dest, &[hdr, &b.bytes()[range]])?
                        }
                        Some(Req::Send(SendReq { data: SendData::Borrowed(b), .. })) => {
                            let b = *b;
                            // SAFETY: isend_borrowed's contract keeps the
                            // bytes valid and unchanged while the request is
                            // alive, and a held request stays alive (is_done
                            // is false) until the transport releases them, or
                            // abandon makes the transport copy them first.
                            match unsafe { self.t.try_send_lent(dest, hdr, &b.bytes()[range])? } {
                                crate::transport::Lent::NotNow => false,
                                crate::transport::Lent::Copied => true,
                                crate::transport::Lent::Held(token) => {
                                    if let Some(Req::Send(s)) = self.st.reqs.get_mut(*req) {
                                        s.held = Some(s.held.map_or(token, |t| t.max(token)));
                                    }
                                    true
                                }
                            }
                        }
                        // Abandoned: the message is not sent.
                        _ => true,
                    }
                }
            };
            if !ok {
                break;
            }
            sent = true;
            self.st.queued -= 1;
            let o = self.st.sendq[dest as usize].pop_front();
            if let Some(id) = o.and_then(|o| o.completes) {
                self.complete_send(id);
            }
        }
        Ok(sent)
    }

    fn flush_all(&mut self) -> Result<bool, AdiError> {
        if !self.st.outbox.is_empty() {
            let outbox = std::mem::take(&mut self.st.outbox);
            for (dest, o) in outbox {
                self.st.counters.control_sent += 1;
                self.enqueue(dest, o)?;
            }
        }
        let mut sent = false;
        if self.st.queued == 0 {
            return Ok(false);
        }
        for d in 0..self.st.size {
            if !self.st.sendq[d as usize].is_empty() {
                sent |= self.flush(d)?;
            }
        }
        Ok(sent)
    }

    // ---- receiving ------------------------------------------------------------

    /// Post a receive of at most `capacity` bytes into a vector the engine
    /// allocates (returned by [`Done::Received`]).
    pub fn irecv(&mut self, src: Source, tag: TagSel, ctx: u32, capacity: u64) -> Result<ReqId, AdiError> {
        self.post_recv(src, tag, ctx, capacity, RecvBuf::Owned(Vec::new()))
    }

    /// Post a receive straight into the caller's buffer (completed as
    /// [`Done::Placed`]): data is written there and nowhere else, except an
    /// eager message that arrived before the receive (one copy out of the
    /// unexpected queue). A longer message fills the buffer and ends in
    /// [`AdiError::Truncated`]; nothing is written past `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid, and untouched by anyone else, until the engine
    /// no longer holds the request: until it is completed by
    /// [`Engine::test`]/[`Engine::wait`]/`wait_all`, cancelled with
    /// [`Engine::cancel_recv`] returning `true` and then completed, abandoned
    /// with [`Engine::abandon`], or the engine is dropped or finalized.
    /// `mpi::request::scope` is the safe wrapper that guarantees this.
    pub unsafe fn irecv_into(&mut self, src: Source, tag: TagSel, ctx: u32, buf: &mut [u8]) -> Result<ReqId, AdiError> {
        let raw = RawBytes { ptr: buf.as_mut_ptr(), len: buf.len() };
        self.post_recv(src, tag, ctx, buf.len() as u64, RecvBuf::Borrowed(raw))
    }

    /// Post a receive whose bytes go to `sink` as they arrive (completed
    /// as [`Done::Placed`]): at most one chunk is staged at a time. A
    /// longer message than the sink's capacity fills it and ends in
    /// [`AdiError::Truncated`].
    pub fn irecv_unpacked(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        sink: Box<dyn UnpackSink>,
    ) -> Result<ReqId, AdiError> {
        let capacity = sink.capacity();
        self.post_recv(src, tag, ctx, capacity, RecvBuf::Unpack(sink))
    }

    fn post_recv(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        capacity: u64,
        buf: RecvBuf,
    ) -> Result<ReqId, AdiError> {
        if let Source::Rank(r) = src {
            self.check_rank(r)?;
        }
        self.charge(HostCost::Request, 1);
        let id = self.new_recv(ctx, capacity, buf)?;
        match self.search_unexpected(src, tag, ctx) {
            Some(u) => self.receive_matched(id, u),
            None => {
                self.st.posted.push(Posted { id, src, tag, ctx });
                let c = &mut self.st.counters;
                c.posted_max = c.posted_max.max(self.st.posted.len() as u64);
            }
        }
        self.apply_charges();
        Ok(id)
    }

    fn new_recv(&mut self, ctx: u32, capacity: u64, buf: RecvBuf) -> Result<ReqId, AdiError> {
        let req = RecvReq {
            ctx,
            capacity,
            state: RecvState::Posted,
            env: None,
            sreq: 0,
            buf,
            received: 0,
            region: None,
            error: None,
        };
        self.st.reqs.insert(Req::Recv(req))
    }

    fn receive_matched(&mut self, id: ReqId, u: Unexpected) {
        match u.kind {
            UnexpectedKind::Eager(data, _) => self.st.deliver_eager(id, u.env, std::borrow::Cow::Owned(data)),
            UnexpectedKind::Rts { sreq } => self.st.start_rendezvous(id, u.env, sreq),
        }
    }

    /// Matched probe (`MPI_Improbe`, MPI 4.1 §3.8.2): take the first
    /// matching message that has arrived off the unexpected queue, so that
    /// the caller can size a buffer and receive exactly it.
    pub fn improbe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Option<Matched>, AdiError> {
        Ok(self.improbe_pass(src, tag, ctx)?.0)
    }

    /// [`Engine::improbe`], and whether its progress pass moved anything.
    fn improbe_pass(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<(Option<Matched>, bool), AdiError> {
        if let Source::Rank(r) = src {
            self.check_rank(r)?;
        }
        let worked = self.progress()?;
        Ok((self.search_unexpected(src, tag, ctx).map(|u| Matched { u }), worked))
    }

    /// Blocking matched probe (`MPI_Mprobe`): [`Engine::improbe`] until a
    /// message matches, idling the transport in between as `probe` does.
    pub fn mprobe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Matched, AdiError> {
        loop {
            if let Some(m) = self.mprobe_until(src, tag, ctx, &|_| false)? {
                return Ok(m);
            }
        }
    }

    /// [`Engine::mprobe`], giving up (`None`) where it would idle once
    /// `stop` holds (another thread wants the library); `stop` is told
    /// whether anything moved since the probe began (a progress pass did
    /// work, or a wait ended).
    pub fn mprobe_until(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        stop: &dyn Fn(bool) -> bool,
    ) -> Result<Option<Matched>, AdiError> {
        self.probe_loop(stop, |e| e.improbe_pass(src, tag, ctx))
    }

    /// Make probe passes (`pass`: what it found, and whether its progress
    /// moved anything) until one finds something, idling between them,
    /// or until `stop`, asked where the loop would idle, says to give up.
    fn probe_loop<T>(
        &mut self,
        stop: &dyn Fn(bool) -> bool,
        mut pass: impl FnMut(&mut Self) -> Result<(Option<T>, bool), AdiError>,
    ) -> Result<Option<T>, AdiError> {
        let mut moved = false;
        loop {
            let (found, worked) = pass(self)?;
            if found.is_some() {
                return Ok(found);
            }
            moved |= worked;
            if stop(moved) {
                return Ok(None);
            }
            self.st.counters.idle_waits += 1;
            self.t.idle()?;
            moved = true;
        }
    }

    /// Receive a matched message into a vector the engine allocates.
    pub fn imrecv(&mut self, msg: Matched, capacity: u64) -> Result<ReqId, AdiError> {
        self.charge(HostCost::Request, 1);
        let id = self.new_recv(msg.u.env.ctx, capacity, RecvBuf::Owned(Vec::new()))?;
        self.receive_matched(id, msg.u);
        self.apply_charges();
        Ok(id)
    }

    /// Receive a matched message into the caller's buffer (`MPI_Imrecv`).
    ///
    /// # Safety
    /// As for [`Engine::irecv_into`].
    pub unsafe fn imrecv_into(&mut self, msg: Matched, buf: &mut [u8]) -> Result<ReqId, AdiError> {
        self.charge(HostCost::Request, 1);
        let raw = RawBytes { ptr: buf.as_mut_ptr(), len: buf.len() };
        let id = self.new_recv(msg.u.env.ctx, buf.len() as u64, RecvBuf::Borrowed(raw))?;
        self.receive_matched(id, msg.u);
        self.apply_charges();
        Ok(id)
    }

    /// Whether receive `id` is still posted: no message has matched it yet.
    pub fn is_posted(&self, id: ReqId) -> bool {
        matches!(self.st.reqs.get(id), Some(Req::Recv(r)) if matches!(r.state, RecvState::Posted))
    }

    /// Note (`on`) or stop noting the contexts of messages that match a
    /// posted receive on context `ctx`, for [`Engine::take_watched`]: a
    /// progress hook that keeps receives posted on many contexts (one per
    /// window) then looks only at those that matched, not at every one on
    /// every pass.
    pub fn watch_context(&mut self, ctx: u32, on: bool) {
        if on {
            self.st.posted.watched.insert(ctx);
        } else {
            self.st.posted.watched.remove(&ctx);
        }
    }

    /// The watched contexts on which a posted receive matched a message
    /// since the last call (a context once per match).
    pub fn take_watched(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.st.posted.hits)
    }

    /// Cancel a receive (MPI 4.1 §3.8.4): `true` if it had not matched a
    /// message and is now cancelled (it completes as [`Done::Cancelled`],
    /// its buffer untouched), `false` if it had matched and will complete
    /// normally. Sends are cancelled with [`Engine::cancel_send`].
    pub fn cancel_recv(&mut self, id: ReqId) -> Result<bool, AdiError> {
        match self.st.reqs.get_mut(id) {
            Some(Req::Recv(r)) if matches!(r.state, RecvState::Posted) => {
                r.state = RecvState::Cancelled;
                r.buf = RecvBuf::Owned(Vec::new());
                let ctx = r.ctx;
                self.st.posted.remove(ctx, id);
                Ok(true)
            }
            Some(Req::Recv(_)) => Ok(false),
            Some(Req::Send(_)) => Err(AdiError::Invalid("only receives can be cancelled".into())),
            None => Err(AdiError::BadRequest(id)),
        }
    }

    /// Cancel a send (MPI 4.1 §3.8.4): the receiver is asked to withdraw
    /// its message if no receive has matched it, and the send is complete
    /// once it answers — as [`Done::Cancelled`] if it did, else as usual.
    /// Asking twice changes nothing.
    pub fn cancel_send(&mut self, id: ReqId) -> Result<(), AdiError> {
        let dest = match self.st.reqs.get_mut(id) {
            Some(Req::Send(s)) if s.cancel == SendCancel::NotAsked => {
                s.cancel = SendCancel::Asked;
                s.dest
            }
            Some(Req::Send(_)) => return Ok(()),
            Some(Req::Recv(_)) => return Err(AdiError::Invalid("cancel_send on a receive".into())),
            None => return Err(AdiError::BadRequest(id)),
        };
        self.charge(HostCost::AdiOp, 1);
        // After the message itself: packets to one peer stay in order.
        self.enqueue(dest, Outgoing::new(Packet::Cancel { sreq: id }, Payload::None, None))
    }

    /// Forget a request whatever its state, after an error made waiting for
    /// it pointless: the engine never touches its buffer again. A posted
    /// receive leaves the posted queue; a send not yet handed to the
    /// transport is not sent; a rendezvous in flight is left unfinished (its
    /// peer may wait: this is for a job that is failing).
    pub fn abandon(&mut self, id: ReqId) {
        if let Some(Req::Send(s)) = self.st.reqs.get(id) {
            if s.held.is_some_and(|token| !self.t.lent_released(s.dest, token)) {
                // The transport still points into the buffer: make it copy.
                self.t.unlend(s.dest);
            }
        }
        if let Some(req) = self.st.reqs.remove(id) {
            if let Req::Recv(r) = &req {
                self.st.posted.remove(r.ctx, id);
            }
            if let Req::Recv(RecvReq { region: Some(region), .. }) = req {
                if let Some(m) = self.t.remote_memory() {
                    m.free(region);
                }
            }
            self.st.need_landing.retain(|r| *r != id);
        }
    }

    fn search_unexpected(&mut self, src: Source, tag: TagSel, ctx: u32) -> Option<Unexpected> {
        let (found, steps) = self.st.find_unexpected(src, tag, ctx);
        self.charge(HostCost::MatchStep, steps);
        found.and_then(|i| self.st.unexpected.remove(i))
    }

    /// Blocking receive.
    pub fn recv(&mut self, src: Source, tag: TagSel, ctx: u32, capacity: u64) -> Result<(Status, Vec<u8>), AdiError> {
        let id = self.irecv(src, tag, ctx, capacity)?;
        match self.wait(id)? {
            Done::Received { status, data } => Ok((status, data)),
            _ => Err(AdiError::BadRequest(id)),
        }
    }

    /// Blocking receive into the caller's buffer (no copy but the one into
    /// `buf`, see [`Engine::irecv_into`]).
    pub fn recv_into(&mut self, src: Source, tag: TagSel, ctx: u32, buf: &mut [u8]) -> Result<Status, AdiError> {
        // SAFETY: `buf` is borrowed for this whole call, and the request is
        // gone when it returns: `wait` completes it, or abandons it if it fails.
        let id = unsafe { self.irecv_into(src, tag, ctx, buf)? };
        match self.wait(id)? {
            Done::Placed { status } => Ok(status),
            _ => Err(AdiError::BadRequest(id)),
        }
    }

    /// Non-blocking probe: the envelope of the first matching unexpected message.
    pub fn iprobe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Option<Status>, AdiError> {
        Ok(self.iprobe_pass(src, tag, ctx)?.0)
    }

    /// [`Engine::iprobe`], and whether its progress pass moved anything.
    fn iprobe_pass(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<(Option<Status>, bool), AdiError> {
        let worked = self.progress()?;
        let (found, steps) = self.st.find_unexpected(src, tag, ctx);
        self.charge(HostCost::MatchStep, steps);
        let env = found.and_then(|i| self.st.unexpected.get(i)).map(|u| u.env);
        Ok((env.map(|e| Status { source: e.src, tag: e.tag, len: e.len }), worked))
    }

    /// The envelope of the first unexpected message on context `ctx` whose
    /// source and tag satisfy `pred`, without a progress pass, without
    /// charging simulated time and without counting a search: for a layer
    /// above that looks, inside its own progress, for messages it only
    /// expects when something went wrong (a collective's failure notice, a
    /// message of another collective in its place).
    pub fn peek_unexpected(&self, ctx: u32, pred: &dyn Fn(u32, i32) -> bool) -> Option<Status> {
        let env = self.st.unexpected.iter().map(|u| u.env).find(|e| e.ctx == ctx && pred(e.src, e.tag))?;
        Some(Status { source: env.src, tag: env.tag, len: env.len })
    }

    /// Blocking probe.
    pub fn probe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Status, AdiError> {
        loop {
            if let Some(s) = self.probe_until(src, tag, ctx, &|_| false)? {
                return Ok(s);
            }
        }
    }

    /// [`Engine::probe`], giving up (`None`) where it would idle once
    /// `stop` holds, told what [`Engine::mprobe_until`]'s is.
    pub fn probe_until(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        stop: &dyn Fn(bool) -> bool,
    ) -> Result<Option<Status>, AdiError> {
        self.probe_loop(stop, |e| e.iprobe_pass(src, tag, ctx))
    }

    // ---- completion -------------------------------------------------------------

    /// Whether request `id` has completed (it stays allocated until waited for).
    pub fn is_done(&self, id: ReqId) -> Result<bool, AdiError> {
        match self.st.reqs.get(id) {
            Some(Req::Send(s)) => Ok(matches!(s.state, SendState::Done)
                && s.cancel != SendCancel::Asked
                && s.held.is_none_or(|token| self.t.lent_released(s.dest, token))),
            Some(Req::Recv(r)) => Ok(matches!(r.state, RecvState::Done | RecvState::Cancelled)),
            None => Err(AdiError::BadRequest(id)),
        }
    }

    fn take_done(&mut self, id: ReqId) -> Result<Done, AdiError> {
        // Completing and freeing the request (seed 004 §7: MPID_Release_request).
        self.charge(HostCost::Request, 1);
        match self.st.reqs.remove(id) {
            Some(Req::Send(s)) if s.cancel == SendCancel::Won => Ok(Done::Cancelled),
            Some(Req::Send(_)) => Ok(Done::Sent),
            Some(Req::Recv(r)) => {
                if let Some(e) = r.error {
                    return Err(e);
                }
                if matches!(r.state, RecvState::Cancelled) {
                    return Ok(Done::Cancelled);
                }
                let env = r.env.unwrap_or(Envelope { ctx: r.ctx, tag: 0, src: 0, len: 0 });
                let status = Status { source: env.src, tag: env.tag, len: env.len };
                Ok(match r.buf {
                    RecvBuf::Owned(data) => Done::Received { status, data },
                    RecvBuf::Borrowed(_) | RecvBuf::Unpack(_) => Done::Placed { status },
                })
            }
            None => Err(AdiError::BadRequest(id)),
        }
    }

    /// Make progress once; if `id` completed, free it and return the result.
    pub fn test(&mut self, id: ReqId) -> Result<Option<Done>, AdiError> {
        if !self.is_done(id)? {
            self.progress()?;
        }
        if self.is_done(id)? {
            self.take_done(id).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Wait for a request (the MPI_Send loop of seed 004 §7).
    /// If waiting fails (a transport error), the request is abandoned
    /// ([`Engine::abandon`]): the engine keeps no pointer into its buffer.
    pub fn wait(&mut self, id: ReqId) -> Result<Done, AdiError> {
        if let Err(e) = self.wait_until(|e| e.is_done(id).unwrap_or(true)) {
            self.abandon(id);
            return Err(e);
        }
        self.take_done(id)
    }

    /// Wait for every request; results in order. If waiting fails, every
    /// request not yet completed is abandoned.
    pub fn wait_all(&mut self, ids: &[ReqId]) -> Result<Vec<Done>, AdiError> {
        if let Err(e) = self.wait_until(|e| ids.iter().all(|id| e.is_done(*id).unwrap_or(true))) {
            for id in ids {
                self.abandon(*id);
            }
            return Err(e);
        }
        ids.iter().map(|id| self.take_done(*id)).collect()
    }

    /// Nothing to do: let the transport wait for the network (in simulation,
    /// hand over until a watched device word changes). For callers that run
    /// their own progress loop around [`Engine::progress`].
    pub fn idle(&mut self) -> Result<(), AdiError> {
        self.st.counters.idle_waits += 1;
        Ok(self.t.idle()?)
    }

    /// Progress until `done` holds, idling the transport when a pass finds nothing.
    pub fn wait_until(&mut self, mut done: impl FnMut(&Engine) -> bool) -> Result<(), AdiError> {
        loop {
            if done(self) {
                return Ok(());
            }
            let worked = self.progress()?;
            if done(self) {
                return Ok(());
            }
            if !worked {
                self.st.counters.idle_waits += 1;
                self.t.idle()?;
            }
        }
    }

    fn apply_charges(&mut self) {
        if !std::mem::take(&mut self.st.charged) {
            return;
        }
        let clock = self.t.sim_clock();
        for (i, n) in self.st.charges.iter_mut().enumerate() {
            if *n > 0 {
                if let (Some(clock), Some(c)) = (clock, HostCost::ALL.get(i)) {
                    clock.charge(*c, *n);
                }
                *n = 0;
            }
        }
    }

    /// One pass of the progress engine: the busy progress hooks, receive,
    /// drive rendezvous work and the send queues, the hooks again. Returns
    /// whether anything happened.
    pub fn progress(&mut self) -> Result<bool, AdiError> {
        if !self.hooks_busy() {
            return self.progress_own();
        }
        let mut worked = self.run_hooks()?;
        worked |= self.progress_own()?;
        worked |= self.run_hooks()?;
        Ok(worked)
    }

    /// How often a thread of the process must call [`Engine::keep_alive`]
    /// while the program computes outside MPI ([`Transport::keepalive`];
    /// `None`: never).
    pub fn keepalive_interval(&self) -> Option<std::time::Duration> {
        self.t.keepalive()
    }

    /// A progress pass of the engine alone, without the hooks: the
    /// transport answers its peers (acknowledgements, pings) and arrivals
    /// are matched, but no collective schedule moves, so the progress mode
    /// the program chose stays what it is (MPI 4.1 §2.9 lets the library
    /// progress at any time).
    pub fn keep_alive(&mut self) -> Result<bool, AdiError> {
        self.progress_own()
    }

    /// The engine's own part of a progress pass.
    fn progress_own(&mut self) -> Result<bool, AdiError> {
        self.st.counters.progress_passes += 1;
        let mut worked = self.flush_all()?;
        let st = &mut self.st;
        let n = self.t.poll_arrivals(&mut |src, a| st.dispatch_arrival(src, a))?;
        worked |= n > 0;
        // Messages to self go round until none is left, so that an
        // exchange with oneself (a synchronous or rendezvous send: request,
        // clear-to-send, data) completes within one pass, as the copy it
        // is — a program that drops a self-receive after one test (mpi4py's
        // test suite does) then finds its buffer already written.
        loop {
            while let Some(msg) = self.st.self_inbox.pop_front() {
                let rank = self.st.rank;
                self.st.dispatch(rank, &msg);
                worked = true;
            }
            self.apply_charges();
            if let Some(e) = self.st.error.take() {
                return Err(e);
            }
            worked |= self.rendezvous_work()?;
            worked |= self.flush_all()?;
            if self.st.self_inbox.is_empty() {
                break;
            }
        }
        if worked {
            self.charge(HostCost::Progress, 1);
        }
        self.apply_charges();
        Ok(worked)
    }

    /// Rendezvous steps that need the transport: landing zones + CTS,
    /// data transfer + FTS, and copying landed data out.
    fn rendezvous_work(&mut self) -> Result<bool, AdiError> {
        let mut worked = false;
        // Receivers: allocate a landing zone and send CTS.
        while let Some(&id) = self.st.need_landing.front() {
            let (sender, sreq, offset, remaining) = match self.st.recv_mut(id) {
                Some(r) => {
                    let env = r.env.unwrap_or(Envelope { ctx: 0, tag: 0, src: 0, len: 0 });
                    (env.src, r.sreq, r.received, env.len - r.received)
                }
                None => {
                    self.st.need_landing.pop_front();
                    continue;
                }
            };
            let Some(region) = remote(&mut *self.t)?.alloc(remaining)? else { break };
            self.st.need_landing.pop_front();
            if let Some(r) = self.st.recv_mut(id) {
                r.region = Some(region);
            }
            let cts = Packet::Cts { sreq, rreq: id, offset, len: region.len, addr: Some(region.addr) };
            self.st.post_out(sender, Outgoing::new(cts, Payload::None, None));
            worked = true;
        }
        // Senders: move the data, then FTS.
        while let Some((dest, w)) = self.st.cts_work.pop_front() {
            worked = true;
            let last = match self.st.reqs.get(w.sreq) {
                Some(Req::Send(s)) => w.offset + w.len >= s.data.len() as u64,
                _ => continue,
            };
            match w.addr {
                Some(addr) if dest != self.st.rank => {
                    if w.len > 0 {
                        if let Some(Req::Send(s)) = self.st.reqs.get(w.sreq) {
                            let data = s.data.range(w.offset, w.len);
                            remote(&mut *self.t)?.put(dest, addr, &data)?;
                        }
                        remote(&mut *self.t)?.flush()?;
                    }
                }
                _ => {
                    // DATA packets, as large as the transport allows.
                    let chunk = (self.st.caps.max_message - SHORT_LEN).max(1) as u64;
                    let mut off = w.offset;
                    let end = w.offset + w.len;
                    while off < end {
                        let n = chunk.min(end - off);
                        let p = Packet::Data { rreq: w.rreq, offset: off, len: n };
                        self.st.post_out(
                            dest,
                            Outgoing::new(p, Payload::Slice { req: w.sreq, offset: off, len: n, lend: true }, None),
                        );
                        off += n;
                    }
                }
            }
            let fts = Packet::Fts { rreq: w.rreq, offset: w.offset, len: w.len };
            self.st.post_out(dest, Outgoing::new(fts, Payload::None, last.then_some(w.sreq)));
        }
        // Receivers: copy landed data out of the landing zone.
        while let Some((id, offset, len)) = self.st.fts_work.pop_front() {
            worked = true;
            let Some(r) = self.st.recv_mut(id) else { continue };
            let Some(region) = r.region.take() else { continue };
            let keep = r.capacity.min(r.env.map_or(0, |e| e.len));
            if offset < keep {
                let (o, n) = (offset as usize, (keep - offset).min(len) as usize);
                let t = remote(&mut *self.t)?;
                r.buf.fill(o, n, |out| t.read(&region, 0, out))?;
            }
            remote(&mut *self.t)?.free(region);
            self.st.finish_segment(id, offset + len);
        }
        Ok(worked)
    }

    /// Complete every queued send and leave the job.
    pub fn finalize(mut self) -> Result<Counters, AdiError> {
        self.wait_until(|e| {
            e.st.sendq.iter().all(|q| q.is_empty())
                && e.st.outbox.is_empty()
                && e.st.cts_work.is_empty()
                && e.st.need_landing.is_empty()
                && e.st.fts_work.is_empty()
        })?;
        self.t.finalize()?;
        if self.st.cfg.print_stats {
            eprintln!("[rank {}] {} backend counters:\n{}", self.st.rank, self.t.name(), self.counters());
            if let Some(r) = self.t.report() {
                eprintln!("{r}");
            }
        }
        Ok(self.counters())
    }

    /// Receive and drop every message still in the unexpected queue, and
    /// return their envelopes (source in the job, tag, context, length).
    ///
    /// For finalize, once every rank has entered it (MPI 4.1 §11.2.2: a
    /// message still unreceived then is the program's error): a
    /// rendezvous send waits for its receiver's CTS, so an unreceived one
    /// would keep its sender in finalize for good. Taking the data ends
    /// the sender's wait; the caller warns about what was dropped.
    pub fn drain_unexpected(&mut self) -> Result<Vec<Envelope>, AdiError> {
        let mut dropped = Vec::new();
        while let Some(env) = self.st.unexpected.front().map(|u| u.env) {
            // Into no room at all: the data is taken and thrown away as a
            // truncated receive's is, so nothing of the size the envelope
            // claims (a peer may lie) is allocated.
            match self.recv(Source::Rank(env.src), TagSel::Tag(env.tag), env.ctx, 0) {
                Ok(_) | Err(AdiError::Truncated { .. }) => dropped.push(env),
                Err(e) => return Err(e),
            }
        }
        Ok(dropped)
    }

    /// Requests still alive (not yet waited for or freed).
    pub fn live_requests(&self) -> usize {
        self.st.reqs.slots.len() - self.st.reqs.free.len()
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

#[cfg(test)]
mod posted_queue_tests {
    use super::*;

    /// Matching stays within a context and in posting order, and queues
    /// emptied by a stream of short-lived contexts do not pile up.
    #[test]
    fn posted_queues_match_per_context_and_stay_bounded() {
        let mut q = PostedQueues::default();
        let env = |ctx, tag| Envelope { ctx, tag, src: 1, len: 0 };
        q.push(Posted { id: 1, src: Source::Any, tag: TagSel::Any, ctx: 7 });
        q.push(Posted { id: 2, src: Source::Any, tag: TagSel::Tag(5), ctx: 8 });
        q.push(Posted { id: 3, src: Source::Any, tag: TagSel::Tag(5), ctx: 8 });
        assert_eq!(q.take_match(&env(9, 5)), (None, 0), "no queue for context 9");
        assert_eq!(q.take_match(&env(8, 5)), (Some(2), 1), "context 7's receive is not searched");
        assert_eq!(q.take_match(&env(8, 5)), (Some(3), 1));
        assert_eq!(q.len(), 1);
        for ctx in 1000..11_000 {
            q.push(Posted { id: ctx, src: Source::Any, tag: TagSel::Any, ctx });
            assert_eq!(q.take_match(&env(ctx, 0)).0, Some(ctx));
        }
        assert!(q.by_ctx.len() <= KEPT_EMPTY + 2, "{} queues kept", q.by_ctx.len());
        q.remove(7, 1);
        assert_eq!(q.len(), 0);
    }
}
