//! The one-sided traffic of a window, as the engine's progress hook for
//! the window's context (DESIGN §5: "RMA target processing ... registers
//! hooks with it"; [`adi::ContextHook`]): each window keeps one receive
//! posted on its context, and every progress pass of the engine — inside
//! any MPI call, or the progress thread's — that finds a message there
//! applies what origins sent (puts, accumulates, lock requests, ...) and
//! takes in the replies this process waits for as an origin. The window
//! owns its state ([`Served`]); the engine's hook holds the same state.
//!
//! This is the active-message path of MPI 4.1 chapter 12, the same for
//! every backend: the target's memory is the window (the unified model,
//! §12.4), and its progress applies the operations one at a time, in the
//! order each origin issued them, which makes every accumulate atomic
//! per element (§12.7.1).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use adi::{AdiError, ContextHook, Done, Engine, ReqId, Source, TagSel};

use super::wire::{Kind, Msg, EXCLUSIVE, FAILED};
use super::AccOp;
use crate::staged::Incoming;

/// An address in this process's memory that the hook may write (a
/// window's memory, or an origin buffer waiting for a reply).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Addr(pub(crate) *mut u8);

// SAFETY: an `Addr` is only read or written through its window's `Win`, which
// is only touched with the library's lock (`context::Locked`) held ([`Served`]
// asks for the engine, which that lock guards), so by one thread at a time; the
// memory it points to is valid for as long as the registration that handed it
// over says (see `Served::register` and `Win::expect`).
unsafe impl Send for Addr {}

/// A window's memory at this process, as the target sees it.
#[derive(Debug)]
pub(crate) enum Memory {
    /// `len` bytes at `base` (`MPI_Win_create`, `_allocate`, `_allocate_shared`).
    Fixed {
        /// First byte.
        base: Addr,
        /// Bytes.
        len: u64,
    },
    /// Regions attached to a dynamic window, by address (`MPI_Win_attach`).
    Dynamic(BTreeMap<u64, u64>),
}

impl Memory {
    /// Where `len` bytes at `off` of the window are, if they are inside it.
    fn find(&self, off: u64, len: u64) -> Option<*mut u8> {
        let end = off.checked_add(len)?;
        match self {
            Memory::Fixed { base, len: size } => (end <= *size).then(|| base.0.wrapping_add(off as usize)),
            Memory::Dynamic(regions) => {
                // The bytes may run on through regions attached end to end
                // (MPICH's win_dynamic_rma_flush_get attaches two halves of
                // one array and reads across them): they are one stretch
                // of this process's memory, all of it attached.
                let (&start, &size) = regions.range(..=off).next_back()?;
                let mut reach = start.checked_add(size)?;
                while reach < end {
                    let &next = regions.get(&reach)?;
                    if next == 0 {
                        return None;
                    }
                    reach = reach.checked_add(next)?;
                }
                (off < start.checked_add(size)? || len == 0 && off == reach).then_some(off as *mut u8)
            }
        }
    }
}

/// An origin's buffer waiting for a reply (a get, a fetch, a swap).
pub(crate) struct Reply(pub(crate) Incoming);

// SAFETY: a `Reply` holds an `Incoming` (raw pointers to an origin's buffer, and an owned staging
// buffer); like `Addr`, it is only touched under the library's lock, by one thread at a time, and
// its buffer stays valid until the reply is placed or forgotten (`Win::expect`'s `# Safety`).
unsafe impl Send for Reply {}

/// Why a target could not do what an origin asked. It travels in the
/// reply: the range errors with their figures, the others as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Bytes outside the target's window (`MPI_ERR_RMA_RANGE`).
    Outside { lo: u64, hi: u64, size: u64 },
    /// Bytes in no region attached to a dynamic window (`MPI_ERR_RMA_RANGE`).
    NotAttached { lo: u64, hi: u64 },
    /// Another error: its text.
    Other(String),
}

impl Failure {
    fn other(why: impl Into<String>) -> Failure {
        Failure::Other(why.into())
    }

    /// As a reply's data: a byte saying which, then its figures (little
    /// endian) or its text.
    fn encode(&self) -> Vec<u8> {
        match self {
            Failure::Other(why) => [&[0u8][..], why.as_bytes()].concat(),
            Failure::Outside { lo, hi, size } => {
                [&[1u8][..], &lo.to_le_bytes(), &hi.to_le_bytes(), &size.to_le_bytes()].concat()
            }
            Failure::NotAttached { lo, hi } => [&[2u8][..], &lo.to_le_bytes(), &hi.to_le_bytes()].concat(),
        }
    }

    /// A reply's data back: anything that is not one of the encodings is
    /// reported as a malformed reply, never trusted.
    fn decode(b: &[u8]) -> Failure {
        let word = |i: usize| b.get(1 + 8 * i..9 + 8 * i).and_then(|w| w.try_into().ok()).map(u64::from_le_bytes);
        match (b.first(), b.len()) {
            (Some(0), _) => Failure::Other(String::from_utf8_lossy(&b[1..]).into_owned()),
            (Some(1), 25) => match (word(0), word(1), word(2)) {
                (Some(lo), Some(hi), Some(size)) => Failure::Outside { lo, hi, size },
                _ => Failure::malformed(b),
            },
            (Some(2), 17) => match (word(0), word(1)) {
                (Some(lo), Some(hi)) => Failure::NotAttached { lo, hi },
                _ => Failure::malformed(b),
            },
            _ => Failure::malformed(b),
        }
    }

    fn malformed(b: &[u8]) -> Failure {
        Failure::Other(format!("the target's failure reply is malformed ({} bytes)", b.len()))
    }

    fn into_error(self) -> crate::MpiError {
        match self {
            Failure::Outside { lo, hi, size } => crate::error::RmaRangeError::TargetWindow { lo, hi, size }.into(),
            Failure::NotAttached { lo, hi } => crate::error::RmaRangeError::NotAttached { lo, hi }.into(),
            Failure::Other(why) => crate::error::WinError::AtTarget { why }.into(),
        }
    }
}

/// A request this process sent as an origin and waits to hear about.
struct Pending {
    /// The target, by rank in the window's group.
    target: u32,
    /// Where the reply's bytes go.
    into: Option<Reply>,
}

/// Who holds or waits for the lock of a window at this target (§12.5.3):
/// one exclusive holder or any number of shared ones; requests that
/// cannot be granted wait in arrival order, so no origin starves.
#[derive(Default, Debug)]
struct LockTable {
    exclusive: Option<u32>,
    shared: Vec<u32>,
    queue: VecDeque<(u32, u64, bool)>,
}

impl LockTable {
    fn free_for(&self, exclusive: bool) -> bool {
        self.exclusive.is_none() && (!exclusive || self.shared.is_empty())
    }

    fn take(&mut self, src: u32, exclusive: bool) {
        if exclusive {
            self.exclusive = Some(src);
        } else {
            self.shared.push(src);
        }
    }

    /// Whether `src` held a lock, which is now released.
    fn release(&mut self, src: u32) -> bool {
        if self.exclusive == Some(src) {
            self.exclusive = None;
            return true;
        }
        match self.shared.iter().position(|s| *s == src) {
            Some(i) => {
                self.shared.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// The waiting requests that can be granted now, in order.
    fn grantable(&mut self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        while let Some(&(src, id, excl)) = self.queue.front() {
            if !self.free_for(excl) {
                break;
            }
            self.queue.pop_front();
            self.take(src, excl);
            out.push((src, id));
        }
        out
    }
}

/// One window's state at this process.
pub(crate) struct Win {
    /// The window's context (its own communicator's).
    ctx: u32,
    /// Job rank of each process of the window's group.
    members: Vec<u32>,
    /// The receive kept posted on the context.
    recv: Option<ReqId>,
    memory: Memory,
    /// Set while the Rust API hands out this process's window memory for
    /// local access: arrivals then wait in `deferred`.
    local: Arc<AtomicBool>,
    deferred: VecDeque<(u32, i32, Vec<u8>)>,
    lock: LockTable,
    /// `MPI_Win_post` notices received, by origin (group rank).
    posts: Vec<u32>,
    /// `MPI_Win_complete` notices received, by origin (group rank).
    completes: Vec<u32>,
    /// As an origin: requests waiting for their reply, by id.
    pending: HashMap<u64, Pending>,
    /// As an origin: replies that reported a failure, by id.
    failed: HashMap<u64, Failure>,
    /// As a target: the first operation of each origin (group rank) that
    /// could not be applied since its last flush, reported by the next
    /// reply to a flush or an unlock.
    refused: HashMap<u32, Failure>,
    /// A message no origin of this library would send: reported by every
    /// call on the window.
    fault: Option<String>,
    /// Sends of replies and notices still in the engine.
    sends: Vec<ReqId>,
    /// Numbers for replies (0: none wanted).
    next_id: u64,
    /// Served until `MPI_Win_free`'s deregistration: after it nothing is
    /// written to `memory`, and calls are refused.
    open: bool,
}

/// A window's target-side state, held by the window (its calls) and by
/// the engine's progress hook for the window's context, which polls it
/// only when a message matched there, a call touched it or it has sends
/// in flight or messages held back: an idle window costs a pass nothing,
/// so making the N-th window is not N times slower than the first (issue
/// 47, break 7: creating 8,000 windows took 35 s).
///
/// Both reach the state only with the library's lock held (the methods
/// ask for the engine, which that lock guards), so the state's own lock is
/// never waited for: the hook finds it taken only when a pass runs inside
/// a call on the same window, and leaves the window to the next pass.
#[derive(Clone)]
pub(crate) struct Served {
    ctx: u32,
    win: Arc<Mutex<Win>>,
}

/// The engine's side of a [`Served`] window.
struct Hook(Arc<Mutex<Win>>);

fn engine_err(e: AdiError) -> crate::MpiError {
    e.into()
}

impl Served {
    /// Serve window `ctx` from now on: keep a receive posted on its
    /// context and apply what arrives to `memory`.
    ///
    /// # Safety
    /// `memory` stays valid for reads and writes until [`Served::deregister`],
    /// and is accessed by nothing else during MPI calls that are not about
    /// this window's local memory (MPI 4.1 §12.7's rules for the program).
    pub(crate) unsafe fn register(
        e: &mut Engine,
        ctx: u32,
        members: Vec<u32>,
        memory: Memory,
        local: Arc<AtomicBool>,
    ) -> crate::Result<Served> {
        let n = members.len();
        let recv = Some(e.irecv(Source::Any, TagSel::Any, ctx, u64::MAX).map_err(engine_err)?);
        let win = Arc::new(Mutex::new(Win {
            ctx,
            members,
            recv,
            memory,
            local,
            deferred: VecDeque::new(),
            lock: LockTable::default(),
            posts: vec![0; n],
            completes: vec![0; n],
            pending: HashMap::new(),
            failed: HashMap::new(),
            refused: HashMap::new(),
            fault: None,
            sends: Vec::new(),
            next_id: 0,
            open: true,
        }));
        if let Err(err) = e.serve_context(ctx, Box::new(Hook(win.clone()))) {
            if let Some(r) = recv {
                e.abandon(r);
            }
            return Err(engine_err(err));
        }
        Ok(Served { ctx, win })
    }

    /// Stop serving the window (after the barrier of `MPI_Win_free`):
    /// nothing is written to its memory afterwards, replies still due are
    /// dropped, and calls are refused.
    pub(crate) fn deregister(&self, e: &mut Engine) {
        e.stop_serving(self.ctx);
        let mut w = self.look(e);
        if !std::mem::take(&mut w.open) {
            return;
        }
        if let Some(r) = w.recv.take() {
            if e.cancel_recv(r).unwrap_or(false) {
                let _ = e.test(r);
            } else {
                e.abandon(r);
            }
        }
        for s in std::mem::take(&mut w.sends) {
            e.abandon(s);
        }
        w.pending.clear();
        w.failed.clear();
        w.deferred.clear();
    }

    /// The window's state, for a call that changes it: the next progress
    /// pass looks at the window.
    pub(crate) fn touch(&self, e: &mut Engine) -> MutexGuard<'_, Win> {
        e.attend(self.ctx);
        self.look(e)
    }

    /// The window's state, to read it (the engine stands for the library's
    /// lock, under which alone the state is reached).
    pub(crate) fn look(&self, _: &Engine) -> MutexGuard<'_, Win> {
        self.win.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Win {
    fn opened(&mut self) -> crate::Result<&mut Win> {
        if self.open {
            Ok(self)
        } else {
            Err(crate::MpiError::Win(crate::error::WinError::Freed))
        }
    }

    /// Attach or detach a region of a dynamic window.
    pub(crate) fn regions(&mut self) -> crate::Result<&mut BTreeMap<u64, u64>> {
        match &mut self.opened()?.memory {
            Memory::Dynamic(r) => Ok(r),
            Memory::Fixed { .. } => Err(crate::MpiError::RmaFlavor {
                call: "MPI_Win_attach and MPI_Win_detach",
                wants: "a window made by MPI_Win_create_dynamic",
            }),
        }
    }

    /// A number for a request to `target` (group rank) whose reply goes
    /// to `into` (or only completes it).
    ///
    /// # Safety
    /// With `into`, every byte its `Incoming` writes (the `len` bytes at its `ptr`, and the
    /// elements its staging buffer is unpacked into) stays writable, and is not otherwise
    /// accessed, until the reply arrived ([`Win::outstanding`] no longer counts it), the buffer is
    /// forgotten ([`Win::forget`], [`Win::forget_buffers`]) or the window is deregistered.
    pub(crate) unsafe fn expect(&mut self, target: u32, into: Option<Reply>) -> crate::Result<u64> {
        let w = self.opened()?;
        w.next_id += 1;
        let id = w.next_id;
        w.pending.insert(id, Pending { target, into });
        Ok(id)
    }

    /// Drop the buffers replies still due were to go to.
    pub(crate) fn forget_buffers(&mut self) {
        for p in self.pending.values_mut() {
            p.into = None;
        }
    }

    /// Drop the buffer the reply to `id` was to go to.
    pub(crate) fn forget(&mut self, id: u64) {
        if let Some(p) = self.pending.get_mut(&id) {
            p.into = None;
        }
    }

    /// Requests to `target` (all targets: `None`) still without a reply.
    pub(crate) fn outstanding(&self, target: Option<u32>) -> usize {
        self.pending.values().filter(|p| target.is_none_or(|t| p.target == t)).count()
    }

    /// Whether request `id` has its reply.
    pub(crate) fn answered(&self, id: u64) -> bool {
        !self.pending.contains_key(&id)
    }

    /// The failure the reply to `id` reported, once (taken).
    pub(crate) fn take_failure(&mut self, id: u64) -> Option<crate::MpiError> {
        self.failed.remove(&id).map(Failure::into_error)
    }

    /// Any failure a reply reported that no one has taken (taken), or the
    /// fault of a peer that sent something malformed (kept: the window is
    /// not usable after it).
    pub(crate) fn take_any_failure(&mut self) -> Option<crate::MpiError> {
        if !self.open {
            return None;
        }
        if let Some(f) = self.fault.clone() {
            return Some(crate::error::WinError::Fault { why: f }.into());
        }
        let id = self.failed.keys().min().copied()?;
        self.failed.remove(&id).map(Failure::into_error)
    }

    /// Notices counted so far: `MPI_Win_post` (from targets) when `posts`,
    /// else `MPI_Win_complete` (from origins), of group rank `r`.
    pub(crate) fn notices(&self, r: u32, posts: bool) -> u32 {
        let v = if posts { &self.posts } else { &self.completes };
        v.get(r as usize).copied().unwrap_or(0)
    }

    /// Use up one notice of `r` (see [`Win::notices`]).
    pub(crate) fn consume_notice(&mut self, r: u32, posts: bool) {
        let v = if posts { &mut self.posts } else { &mut self.completes };
        if let Some(n) = v.get_mut(r as usize) {
            *n = n.saturating_sub(1);
        }
    }

    /// Send `m` to group rank `to` of the window.
    pub(crate) fn send(&mut self, e: &mut Engine, to: u32, m: &Msg<'_>) -> crate::Result<()> {
        let w = self.opened()?;
        let dest = *w
            .members
            .get(to as usize)
            .ok_or(crate::MpiError::InvalidRank { rank: to as i32, size: w.members.len() as i32 })?;
        let (tag, bytes) = m.encode();
        let id = e.isend(dest, tag, w.ctx, bytes, false).map_err(engine_err)?;
        w.sends.push(id);
        Ok(())
    }
}

impl Win {
    fn group_rank(&self, job: u32) -> Option<u32> {
        self.members.iter().position(|m| *m == job).map(|i| i as u32)
    }

    fn reply(&mut self, e: &mut Engine, to: u32, id: u64, result: Result<&[u8], Failure>) -> Result<(), AdiError> {
        let enc;
        let (flags, data) = match &result {
            Ok(d) => (0, *d),
            Err(f) => {
                enc = f.encode();
                (FAILED, &enc[..])
            }
        };
        let m = Msg { flags, data, ..Msg::bare(Kind::Reply, id) };
        let (tag, bytes) = m.encode();
        let dest = self.members[to as usize];
        let s = e.isend(dest, tag, self.ctx, bytes, false)?;
        self.sends.push(s);
        Ok(())
    }

    /// The memory of every block, checked inside the window first: all
    /// of them, or an error (and nothing is touched).
    fn places(&self, blocks: &[(u64, u64)]) -> Result<Vec<(*mut u8, usize)>, Failure> {
        blocks
            .iter()
            .map(|&(off, len)| {
                self.memory.find(off, len).map(|p| (p, len as usize)).ok_or_else(|| {
                    let (lo, hi) = (off, off.saturating_add(len));
                    match &self.memory {
                        Memory::Fixed { len: size, .. } => Failure::Outside { lo, hi, size: *size },
                        Memory::Dynamic(_) => Failure::NotAttached { lo, hi },
                    }
                })
            })
            .collect()
    }

    /// Copy the blocks' bytes out.
    fn gather(places: &[(*mut u8, usize)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(places.iter().map(|p| p.1).sum());
        for &(p, n) in places {
            // SAFETY: `p..p + n` lies inside the registered memory (`places` checked it), which
            // `Served::register`'s `# Safety` keeps valid for reads, and free of the program's
            // conflicting stores (§12.7), until the window is deregistered.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(p, n) });
        }
        out
    }

    /// Combine `data` into the blocks with `op` (stores for `Replace`).
    fn combine(places: &[(*mut u8, usize)], data: &[u8], op: AccOp, m: &Msg<'_>) -> Result<(), Failure> {
        let room: usize = places.iter().map(|p| p.1).sum();
        if op != AccOp::NoOp && room != data.len() {
            return Err(Failure::other(format!("{} bytes of data for {room} bytes of target blocks", data.len())));
        }
        if op == AccOp::NoOp {
            return Ok(());
        }
        if m.elem.is_some_and(|e| e.padded_pair().is_some()) && op != AccOp::Replace {
            // A padded pair's elements may straddle blocks (its type map
            // has a gap inside each): combine the blocks' bytes as one run.
            let mut acc = Self::gather(places);
            op.apply(m.elem, data, &mut acc).map_err(|e| Failure::other(e.to_string()))?;
            let mut at = 0;
            for &(p, n) in places {
                // SAFETY: `p..p + n` lies inside the registered memory (`places` checked it), valid
                // for writes by `Served::register`'s `# Safety`; `acc` is `gather`'s copy of the blocks,
                // a separate vector of `room` bytes, and `at + n <= room`.
                unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr().add(at), p, n) };
                at += n;
            }
            return Ok(());
        }
        let mut at = 0;
        for &(p, n) in places {
            // SAFETY: `p..p + n` lies inside the registered memory (`places` checked it), valid for
            // reads and writes and free of the program's accesses by `Served::register`'s `# Safety`;
            // `data` is the message, not window memory, so the two do not overlap, and the slice
            // ends with this iteration.
            let acc = unsafe { std::slice::from_raw_parts_mut(p, n) };
            op.apply(m.elem, &data[at..at + n], acc).map_err(|e| Failure::other(e.to_string()))?;
            at += n;
        }
        Ok(())
    }

    /// Apply one message from job rank `src`.
    fn handle(&mut self, e: &mut Engine, src: u32, tag: i32, bytes: &[u8]) -> Result<(), AdiError> {
        let Some(from) = self.group_rank(src) else {
            self.fault = Some(format!("a one-sided message from rank {src}, which is not in the window's group"));
            return Ok(());
        };
        let m = match Msg::decode(src, tag, bytes) {
            Ok(m) => m,
            Err(err) => {
                self.fault = Some(err.to_string());
                return Ok(());
            }
        };
        match m.kind {
            Kind::Put | Kind::Acc => {
                let op = if m.kind == Kind::Put { AccOp::Replace } else { m.op.unwrap_or(AccOp::NoOp) };
                let r = self.places(&m.blocks).and_then(|p| Win::combine(&p, m.data, op, &m));
                if let Err(why) = r {
                    self.refused.entry(from).or_insert(why);
                }
            }
            Kind::Get | Kind::GetAcc => {
                let r = self.places(&m.blocks).and_then(|p| {
                    let old = Win::gather(&p);
                    if m.kind == Kind::GetAcc {
                        Win::combine(&p, m.data, m.op.unwrap_or(AccOp::NoOp), &m)?;
                    }
                    Ok(old)
                });
                match r {
                    Ok(old) => self.reply(e, from, m.id, Ok(&old))?,
                    Err(why) => self.reply(e, from, m.id, Err(why))?,
                }
            }
            Kind::Cas => {
                let n = m.data.len() / 2;
                let r = match m.blocks.as_slice() {
                    [(off, len)] if *len as usize == n && m.data.len() == 2 * n => self.places(&[(*off, *len)]),
                    _ => Err(Failure::other("a compare-and-swap names one element and carries two")),
                };
                match r {
                    Ok(p) => {
                        let old = Win::gather(&p);
                        if old == m.data[..n] {
                            // SAFETY: `p[0].0` starts the one `n`-byte block `places` found inside the
                            // registered memory, writable by `Served::register`'s `# Safety`; the source
                            // is the message's last `n` bytes, a separate buffer.
                            unsafe { std::ptr::copy_nonoverlapping(m.data[n..].as_ptr(), p[0].0, n) };
                        }
                        self.reply(e, from, m.id, Ok(&old))?;
                    }
                    Err(why) => self.reply(e, from, m.id, Err(why))?,
                }
            }
            Kind::Flush => {
                let r = self.refused.remove(&from);
                self.reply(e, from, m.id, r.map_or(Ok(&[]), Err))?;
            }
            Kind::Lock => {
                let excl = m.flags & EXCLUSIVE != 0;
                if self.lock.queue.is_empty() && self.lock.free_for(excl) {
                    self.lock.take(from, excl);
                    self.reply(e, from, m.id, Ok(&[]))?;
                } else {
                    self.lock.queue.push_back((from, m.id, excl));
                }
            }
            Kind::Unlock => {
                let held = self.lock.release(from);
                let r = self.refused.remove(&from);
                let r = match (held, r) {
                    (_, Some(why)) => Err(why),
                    (false, None) => Err(Failure::other("an unlock from an origin that holds no lock here")),
                    (true, None) => Ok(&[][..]),
                };
                self.reply(e, from, m.id, r)?;
                for (to, id) in self.lock.grantable() {
                    self.reply(e, to, id, Ok(&[]))?;
                }
            }
            // Saturating: a peer that floods notices cannot make them wrap.
            Kind::Post => self.posts[from as usize] = self.posts[from as usize].saturating_add(1),
            Kind::Complete => self.completes[from as usize] = self.completes[from as usize].saturating_add(1),
            Kind::Reply => match self.pending.remove(&m.id) {
                Some(p) if p.target == from => {
                    if m.flags & FAILED != 0 {
                        self.failed.insert(m.id, Failure::decode(m.data));
                    } else if let Some(Reply(mut inc)) = p.into {
                        let n = inc.len.min(m.data.len());
                        // SAFETY: `inc` went to `Win::expect`, whose `# Safety` keeps its buffer
                        // (the origin's span, or its own staging buffer) writable and untouched
                        // until this reply is placed; `inc.bytes()` has `inc.len` bytes and `n` is
                        // at most that, and `finish` unpacks them into the origin's elements.
                        unsafe {
                            inc.bytes()[..n].copy_from_slice(&m.data[..n]);
                            inc.finish(n as u64);
                        }
                    }
                }
                other => {
                    if let Some(p) = other {
                        self.pending.insert(m.id, p);
                    }
                    self.fault = Some(format!("rank {src} answered a one-sided request {} it was not sent", m.id));
                }
            },
        }
        Ok(())
    }

    /// Whether a progress pass has nothing to do here until a message
    /// matches its receive or a call touches it: no sends in flight, no
    /// message held back, and the receive still waiting for a match.
    fn idle(&self, e: &Engine) -> bool {
        self.sends.is_empty() && self.deferred.is_empty() && self.recv.is_some_and(|r| e.is_posted(r))
    }

    /// Take what has arrived, apply it, and keep the receive posted.
    fn poll(&mut self, e: &mut Engine) -> Result<bool, AdiError> {
        let mut worked = false;
        self.sends.retain(|s| match e.is_done(*s) {
            Ok(true) => {
                let _ = e.test(*s);
                false
            }
            Ok(false) => true,
            Err(_) => false,
        });
        let open = !self.local.load(Ordering::Acquire);
        if open {
            while let Some((src, tag, data)) = self.deferred.pop_front() {
                self.handle(e, src, tag, &data)?;
                worked = true;
            }
        }
        while let Some(r) = self.recv {
            if !e.is_done(r)? {
                break;
            }
            self.recv = Some(e.irecv(Source::Any, TagSel::Any, self.ctx, u64::MAX)?);
            worked = true;
            match e.test(r)? {
                Some(Done::Received { status, data }) if open => self.handle(e, status.source, status.tag, &data)?,
                Some(Done::Received { status, data }) => self.deferred.push_back((status.source, status.tag, data)),
                _ => {}
            }
        }
        Ok(worked)
    }
}

impl ContextHook for Hook {
    /// Take what arrived for the window; a window a call on this thread
    /// holds (a pass inside that call) waits for the next pass.
    fn poll(&mut self, e: &mut Engine) -> Result<bool, AdiError> {
        match self.0.try_lock() {
            Ok(mut w) => w.poll(e),
            Err(TryLockError::Poisoned(p)) => p.into_inner().poll(e),
            Err(TryLockError::WouldBlock) => Ok(false),
        }
    }

    fn idle(&self, e: &Engine) -> bool {
        match self.0.try_lock() {
            Ok(w) => w.idle(e),
            Err(TryLockError::Poisoned(p)) => p.into_inner().idle(e),
            Err(TryLockError::WouldBlock) => false,
        }
    }
}

/// The request of a one-sided operation: complete once the reply `id` of
/// window `ctx` has come (at once for `id` 0; `MPI_Rget`, ...; MPI 4.1
/// §12.3.6).
pub(crate) fn reply_request(
    shared: crate::context::Shared,
    win: Served,
    id: u64,
    group: std::rc::Rc<crate::members::Group>,
) -> crate::Request<'static> {
    crate::Request::pending(shared, Box::new(AwaitedReply { win, id }), group)
}

/// A one-sided operation waiting for its target's reply.
struct AwaitedReply {
    win: Served,
    id: u64,
}

impl crate::request::Pending for AwaitedReply {
    fn is_done(&self, c: &mut crate::context::Context) -> crate::Result<bool> {
        Ok(self.id == 0 || self.win.look(c.engine()?).answered(self.id))
    }

    fn complete(self: Box<Self>, c: &mut crate::context::Context) -> crate::Result<crate::Status> {
        let e = c.engine()?;
        crate::context::charge_request(e);
        match self.win.touch(e).take_failure(self.id) {
            Some(err) => Err(err),
            None => Ok(crate::Status::empty()),
        }
    }

    fn abandon(self: Box<Self>, c: &mut crate::context::Context) {
        if let Ok(e) = c.engine() {
            self.win.touch(e).forget(self.id);
        }
    }

    fn cannot_cancel(&self) -> crate::MpiError {
        crate::MpiError::Request(crate::error::RequestMisuse::NotCancellable {
            what: "a one-sided operation's request",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target's refusal reaches the origin with its figures, and a reply
    /// that is none of the encodings is reported, not trusted.
    #[test]
    fn failures_travel_with_their_figures() {
        for f in [
            Failure::Outside { lo: 8, hi: 4104, size: 4096 },
            Failure::NotAttached { lo: 0x1000, hi: 0x1010 },
            Failure::other("an unlock from an origin that holds no lock here"),
        ] {
            assert_eq!(Failure::decode(&f.encode()), f);
        }
        let e = Failure::Outside { lo: 8, hi: 4104, size: 4096 }.into_error();
        assert_eq!(
            e,
            crate::MpiError::RmaRange(crate::error::RmaRangeError::TargetWindow { lo: 8, hi: 4104, size: 4096 })
        );
        assert!(e.to_string().contains("bytes 8..4104 lie outside the target's window of 4096 bytes"));
        for bad in [&[][..], &[1, 2, 3][..], &[2; 30][..], &[9, 0][..]] {
            let Failure::Other(why) = Failure::decode(bad) else { panic!("{bad:?} decoded as a range error") };
            assert!(why.contains("malformed"), "{why}");
        }
    }

    #[test]
    fn locks_are_granted_in_arrival_order_and_shared_ones_together() {
        let mut t = LockTable::default();
        assert!(t.free_for(true));
        t.take(0, false);
        t.take(1, false);
        assert!(!t.free_for(true) && t.free_for(false));
        t.queue.push_back((2, 20, true));
        t.queue.push_back((3, 30, false));
        assert!(t.grantable().is_empty(), "an exclusive request waits for the shared holders");
        assert!(t.release(0) && t.release(1));
        assert!(!t.release(1), "released twice");
        assert_eq!(t.grantable(), vec![(2, 20)], "the shared request behind it waits its turn");
        assert!(t.release(2));
        assert_eq!(t.grantable(), vec![(3, 30)]);
    }

    /// A pass looks only at windows with something to do: after one
    /// pass, 1,000 idle windows are out of its sight, and a message to one
    /// of them brings that one back, alone.
    #[test]
    fn progress_looks_only_at_windows_with_something_to_do() {
        use adi::backend::local::{default_caps, local_world};
        let mut world = local_world(2, None, default_caps()).into_iter();
        let mut e0 = Engine::new(Box::new(world.next().unwrap())).unwrap();
        let mut e1 = Engine::new(Box::new(world.next().unwrap())).unwrap();
        let mut mem = vec![0u8; 8];
        let mut wins = Vec::new();
        for ctx in 100..1100 {
            let memory = Memory::Fixed { base: Addr(mem.as_mut_ptr()), len: 8 };
            // SAFETY: `mem`'s 8 bytes stay valid for reads and writes until every registration is
            // deregistered below, before `mem` drops.
            let w = unsafe { Served::register(&mut e0, ctx, vec![0, 1], memory, Arc::new(AtomicBool::new(false))) };
            wins.push(w.unwrap());
        }
        assert_eq!(e0.attended().len(), 1000);
        e0.progress().unwrap();
        assert!(e0.attended().is_empty(), "{} idle windows still looked at", e0.attended().len());
        let (tag, data) = Msg::bare(Kind::Flush, 0).encode();
        e1.send(0, tag, 700, &data, false).unwrap();
        e0.progress().unwrap();
        // The flush's reply is in flight: window 700 alone stays in sight
        // until it has gone.
        assert!(e0.attended().iter().all(|&c| c == 700), "{:?}", e0.attended());
        // ... and it was served: the flush is answered.
        let mut reply = [0u8; 64];
        let st = e1.recv_into(Source::Rank(0), TagSel::Any, 700, &mut reply).unwrap();
        assert!(st.len > 0, "window 700 did not answer the flush");
        // A reply still due when the window is freed: its request (which
        // holds the state) completes, with nothing to report.
        // SAFETY: no buffer (`into` is `None`): the reply places nothing.
        let id = unsafe { wins[0].touch(&mut e0).expect(1, None) }.unwrap();
        assert!(!wins[0].look(&e0).answered(id));
        for w in &wins {
            w.deregister(&mut e0);
        }
        assert!(wins[0].look(&e0).answered(id), "a freed window's request waits for ever");
        assert!(wins[0].touch(&mut e0).take_failure(id).is_none());
        assert!(!e0.hooks_busy(), "a deregistered window is still served");
        let mut w = wins[0].touch(&mut e0);
        assert!(w.regions().is_err() && w.take_any_failure().is_none(), "a deregistered window took a call");
        drop(w);
        drop(wins);
        drop(mem);
    }

    #[test]
    fn dynamic_memory_finds_only_attached_bytes() {
        let m = Memory::Dynamic(BTreeMap::from([(0x1000, 16), (0x2000, 8)]));
        assert!(m.find(0x1000, 16).is_some());
        assert!(m.find(0x1008, 9).is_none(), "runs past the region");
        assert!(m.find(0x1800, 1).is_none(), "between regions");
        assert!(m.find(0x2000, 8).is_some());
        let joined = Memory::Dynamic(BTreeMap::from([(0x1000, 16), (0x1010, 16), (0x1030, 8)]));
        assert!(joined.find(0x1008, 24).is_some(), "across two regions attached end to end");
        assert!(joined.find(0x1008, 40).is_none(), "into the gap after them");
        assert!(joined.find(0x1020, 8).is_none(), "in the gap");
        assert!(m.find(u64::MAX, 2).is_none(), "overflow");
        let f = Memory::Fixed { base: Addr(std::ptr::null_mut()), len: 8 };
        assert!(f.find(0, 8).is_some() && f.find(1, 8).is_none() && f.find(8, 0).is_some());
    }
}
