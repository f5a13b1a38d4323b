//! Windows on raw memory and datatypes (MPI 4.1 §12.2-12.6): the calls
//! of chapter 12 as the C ABI hands them over, with the synchronisation
//! rules of [`super::epoch`] checked before anything moves.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use adi::Engine;

use super::card::{self, Card};
use super::epoch::Epochs;
use super::shm::Segment;
use super::target::{Addr, Memory, Reply, Served, Win};
use super::wire::{Kind, Msg, EXCLUSIVE};
use super::{AccOp, Assert, Flavor, LockType, Model};
use crate::comm::{Communicator, SimpleCommunicator};
use crate::datatype::typemap::Typemap;
use crate::error::{BufferError, Overflow, SignatureError};
use crate::request::Request;
use crate::staged::reduce::Elem;
use crate::staged::{incoming, outgoing, Span};
use crate::{AttachError, MpiError, Rank, Result, PROC_NULL};

mod sync;

/// What one process of the window told the others at creation.
#[derive(Clone, Copy, Debug)]
struct Peer {
    size: u64,
    disp_unit: u32,
}

/// Memory the library allocated for a window.
enum Storage {
    /// The caller's (`MPI_Win_create`, dynamic windows).
    Caller,
    /// `MPI_Win_allocate`: cache-line aligned.
    Owned(#[allow(dead_code)] Vec<Line>),
    /// `MPI_Win_allocate_shared`: a segment every process of the group maps.
    Shared(#[allow(dead_code)] Segment),
}

/// 64 aligned bytes: the unit `MPI_Win_allocate` allocates in, so that
/// a window's memory suits any datatype (and a cache line starts it).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Where an operation's data goes at its target (MPI 4.1 §12.3): the
/// target's rank in the window's group, a displacement in the target's
/// displacement units (an address for a dynamic window), and `count`
/// elements of a datatype.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// Rank in the window's group ([`PROC_NULL`]: no operation).
    pub rank: Rank,
    /// Displacement, in the target's `disp_unit`s.
    pub disp: i64,
    /// The target datatype's layout.
    pub layout: &'a Typemap,
    /// Elements of it.
    pub count: usize,
}

/// A window (`MPI_Win`): memory of each process of a group, which the
/// others read and write with one-sided operations.
pub struct RawWindow {
    comm: SimpleCommunicator,
    /// The target side's state, which the engine's hook for the window's
    /// context serves.
    served: Served,
    flavor: Flavor,
    base: *mut u8,
    size: u64,
    disp_unit: u32,
    peers: Vec<Peer>,
    epochs: Epochs,
    /// Targets with operations issued since they last confirmed all.
    dirty: BTreeSet<Rank>,
    local: Arc<AtomicBool>,
    storage: Storage,
    name: String,
    /// The public copies on the card, when the transport has one-sided
    /// access ([`super::card`]); `None`: operations go as messages.
    card: Option<Card>,
    /// A conflict the last merge found (separate model), reported by the
    /// synchronisation call once its work is done.
    conflict: Option<MpiError>,
    /// An `MPI_Win_fence` under way ([`RawWindow::fence_begin`]).
    fencing: Option<Fencing>,
}

/// An `MPI_Win_fence` between its start and its end: what it waits for,
/// in order, and what it reports after.
struct Fencing {
    /// The epochs the fence opens, taken when it ends (`None`: the fence
    /// was out of order here and leaves them as they are).
    next: Option<Epochs>,
    /// This rank's operations' outcome, reported after the barrier: the
    /// fence is collective, so a failure never leaves it early.
    outcome: Result<()>,
    /// Every confirmation this rank asked for has come back.
    confirmed: bool,
    /// The barrier, once started.
    barrier: Option<Request<'static>>,
}

impl RawWindow {
    /// `MPI_Win_create` (§12.2.1): `size` bytes at `base` are this
    /// process's part of the window, in units of `disp_unit` bytes.
    /// Collective over `comm`.
    ///
    /// # Safety
    /// The `size` bytes at `base` are readable now and stay valid for reads and writes until the
    /// window is freed (or dropped); the program's own loads and stores of them never conflict
    /// with the window's operations, and happen outside MPI calls only as MPI 4.1 §12.7 allows.
    pub unsafe fn create(comm: &SimpleCommunicator, base: *mut u8, size: u64, disp_unit: u32) -> Result<RawWindow> {
        // SAFETY: the caller's guarantee on the `size` bytes at `base` (`# Safety`) is the one
        // `create_with` asks, word for word.
        unsafe { RawWindow::create_with(comm, base, size, disp_unit, None) }
    }

    /// [`RawWindow::create`] in the memory model `model` asks for
    /// (`None`: the default, [`Model::by_default`]). A separate window
    /// needs a transport with one-sided access (the card) at every
    /// process; where one lacks it, the window is unified.
    ///
    /// # Safety
    /// As [`RawWindow::create`]: the `size` bytes at `base` are readable now and stay valid for
    /// reads and writes until the window is freed (or dropped), accessed by the program only as
    /// MPI 4.1 §12.7 allows.
    pub unsafe fn create_with(
        comm: &SimpleCommunicator,
        base: *mut u8,
        size: u64,
        disp_unit: u32,
        model: Option<Model>,
    ) -> Result<RawWindow> {
        if size > 0 && base.is_null() {
            return Err(BufferError::NullWindowBase { bytes: size }.into());
        }
        // SAFETY: `base` is non-null when `size > 0` (checked above), and its `size` bytes are readable
        // now and valid for reads and writes until the window is freed, accessed by the program only
        // as §12.7 allows (`# Safety`): what `make` asks, the memory staying the caller's.
        unsafe { RawWindow::make(comm, Flavor::Create, base, size, disp_unit, Storage::Caller, model) }
    }

    /// `MPI_Win_allocate` (§12.2.2): `size` bytes the library allocates
    /// (zeroed, 64-byte aligned); [`RawWindow::base`] says where.
    pub fn allocate(comm: &SimpleCommunicator, size: u64, disp_unit: u32) -> Result<RawWindow> {
        RawWindow::allocate_with(comm, size, disp_unit, None)
    }

    /// [`RawWindow::allocate`] in the memory model `model` asks for, as
    /// [`RawWindow::create_with`].
    pub fn allocate_with(
        comm: &SimpleCommunicator,
        size: u64,
        disp_unit: u32,
        model: Option<Model>,
    ) -> Result<RawWindow> {
        let lines = usize::try_from(size.div_ceil(64))
            .map_err(|_| MpiError::WinSize(crate::error::WinSizeError::Bytes { bytes: size }))?;
        let mut v: Vec<Line> = Vec::new();
        v.try_reserve_exact(lines)
            .map_err(|_| MpiError::NoMemory { what: "MPI_Win_allocate's window".into(), bytes: size })?;
        v.resize(lines, Line([0; 64]));
        let base = v.as_mut_ptr().cast::<u8>();
        // SAFETY: `base` is `v`'s `lines * 64 >= size` zeroed bytes, whose heap block stays put when
        // `v` moves into `Storage::Owned`; the window drops `storage` only after deregistering (in
        // `free` or `Drop`, before its fields go), and nothing but the window reaches the bytes
        // until `base()` hands them out, under §12.7: what `make` asks.
        unsafe { RawWindow::make(comm, Flavor::Allocate, base, size, disp_unit, Storage::Owned(v), model) }
    }

    /// `MPI_Win_allocate_shared` (§12.2.3): memory every process of
    /// `comm` can load and store directly (one segment, each process's
    /// part after the one of the rank before); [`RawWindow::shared_query`]
    /// says where another's part is. The processes must share memory
    /// (one node): else [`MpiError::RmaShared`].
    pub fn allocate_shared(comm: &SimpleCommunicator, size: u64, disp_unit: u32) -> Result<RawWindow> {
        let seg = Segment::create(comm, size)?;
        let base = seg.mine();
        // SAFETY: `base` is this process's part of `seg`'s mapping, `size` bytes (the parts are laid
        // out from everyone's sizes), zero-filled by the kernel; the mapping lasts while
        // `Storage::Shared` keeps `seg`, which the window drops only after deregistering. The other
        // processes' direct loads and stores of it are theirs to keep to §12.7.
        unsafe { RawWindow::make(comm, Flavor::Shared, base, size, disp_unit, Storage::Shared(seg), None) }
    }

    /// `MPI_Win_create_dynamic` (§12.2.4): no memory until
    /// [`RawWindow::attach`]; targets are addressed by absolute address
    /// (`MPI_Get_address`).
    pub fn create_dynamic(comm: &SimpleCommunicator) -> Result<RawWindow> {
        // SAFETY: `size` is 0, so `make` reads nothing at the null `base` and registers a dynamic
        // memory with no region: memory comes with `attach`, under its own `# Safety`.
        unsafe { RawWindow::make(comm, Flavor::Dynamic, std::ptr::null_mut(), 0, 1, Storage::Caller, None) }
    }

    /// # Safety
    /// The `size` bytes at `base` are readable now and stay valid for reads and writes until the
    /// window is deregistered (by `free` or `Drop`; `storage` keeps them alive when the library
    /// owns them), and the program accesses them only as MPI 4.1 §12.7 allows (as
    /// [`RawWindow::create`]).
    unsafe fn make(
        comm: &SimpleCommunicator,
        flavor: Flavor,
        base: *mut u8,
        size: u64,
        disp_unit: u32,
        storage: Storage,
        model: Option<Model>,
    ) -> Result<RawWindow> {
        if comm.is_inter() {
            return Err(crate::error::InterError::IntraOnly { what: "a window (MPI 4.1 §12.2)".into() }.into());
        }
        if disp_unit == 0 {
            return Err(MpiError::Disp { unit: 0 });
        }
        let wc = comm.duplicate()?;
        // The card holds the public copy when the window asks for the
        // separate model and the transport can: everyone must, or no one
        // does. Shared and dynamic windows are unified everywhere (their
        // memory is loaded and stored directly, or attached later).
        let path = wc.shared().borrow().config.rma;
        let want =
            matches!(flavor, Flavor::Create | Flavor::Allocate) && Model::by_default(path, model) == Model::Separate;
        // SAFETY: `size > 0` here, so `base` is the `size` bytes readable now (`# Safety`); `initial`
        // is only read, and not kept past this call (`Card` copies it).
        let initial = if size == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(base, size as usize) } };
        let public = if want {
            let mut c = wc.shared().borrow_mut();
            let e = c.engine()?;
            match e.one_sided().map(|os| os.expose(size + card::HEADER)).transpose()?.flatten() {
                Some(addr) => {
                    let me = wc.members()[wc.rank() as usize];
                    Card::prepare(e, me, addr, initial)?;
                    addr
                }
                None => 0,
            }
        } else {
            0
        };
        let mut mine = Vec::with_capacity(20);
        mine.extend_from_slice(&size.to_le_bytes());
        mine.extend_from_slice(&disp_unit.to_le_bytes());
        mine.extend_from_slice(&public.to_le_bytes());
        let table = wc.allgather_bytes(&mine)?;
        let addrs: Vec<u64> =
            table.iter().map(|b| b.get(12..20).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes)).collect();
        let peers = table
            .iter()
            .map(|b| {
                let f = |r: std::ops::Range<usize>| b.get(r).ok_or(MpiError::Corrupt { what: "short window table" });
                Ok(Peer {
                    size: u64::from_le_bytes(f(0..8)?.try_into().unwrap_or_default()),
                    disp_unit: u32::from_le_bytes(f(8..12)?.try_into().unwrap_or_default()),
                })
            })
            .collect::<Result<Vec<Peer>>>()?;
        let local = Arc::new(AtomicBool::new(false));
        let memory = match flavor {
            Flavor::Dynamic => Memory::Dynamic(Default::default()),
            _ => Memory::Fixed { base: Addr(base), len: size },
        };
        let ctx = wc.ctx();
        let members = wc.members().to_vec();
        let card = if public != 0 && addrs.iter().all(|a| *a != 0) {
            let peers: Vec<(u32, u64)> = wc.members().iter().copied().zip(addrs.iter().copied()).collect();
            Some(Card::new(peers, wc.rank() as usize, initial))
        } else {
            if public != 0 {
                let mut c = wc.shared().borrow_mut();
                if let Some(os) = c.engine()?.one_sided() {
                    os.unexpose(public);
                }
            }
            None
        };
        let served = {
            let mut c = wc.shared().borrow_mut();
            let e = c.engine()?;
            // SAFETY: `memory` is the `size` bytes at `base` (or a dynamic window's regions, none
            // yet), valid for reads and writes until the window is deregistered, which `free` and
            // `Drop` of the window made below both do before `storage` goes, and the program keeps
            // to §12.7 (`# Safety`): what `Served::register` asks.
            match unsafe { Served::register(e, ctx, members, memory, local.clone()) } {
                Ok(s) => s,
                Err(err) => {
                    if let Some(card) = card {
                        card.close(e);
                    }
                    return Err(err);
                }
            }
        };
        Ok(RawWindow {
            card,
            conflict: None,
            fencing: None,
            comm: wc,
            served,
            flavor,
            base,
            size,
            disp_unit,
            peers,
            epochs: Epochs::default(),
            dirty: BTreeSet::new(),
            local,
            storage,
            name: String::new(),
        })
    }

    /// Run `f` with the window's card and the engine, when the card holds
    /// the public copies (`None`: it does not).
    fn on_card<R>(&self, f: impl FnOnce(&Card, &mut Engine) -> Result<R>) -> Option<Result<R>> {
        let card = self.card.as_ref()?;
        let mut c = self.comm.shared().borrow_mut();
        Some(c.engine().and_then(|e| f(card, e)))
    }

    /// Run `f` with the window's card, the engine and the window's memory
    /// (card only), keeping the first conflict it reports for
    /// [`RawWindow::conflicts`].
    fn with_copies(
        &mut self,
        f: impl FnOnce(&mut Card, &mut Engine, *mut u8) -> Result<Option<MpiError>>,
    ) -> Result<()> {
        let (base, comm) = (self.base, &self.comm);
        let Some(card) = self.card.as_mut() else { return Ok(()) };
        let mut c = comm.shared().borrow_mut();
        let found = f(card, c.engine()?, base)?;
        self.conflict = self.conflict.take().or(found);
        Ok(())
    }

    /// Make this process's private and public copies agree (card only).
    fn merge(&mut self) -> Result<()> {
        // SAFETY: `base` is the window's `size` bytes (the card, made only for created and allocated
        // windows, holds an image of exactly that length), valid for reads and writes until the window
        // is freed (`create`'s `# Safety`, or `storage`); `&mut self` keeps other calls on the window
        // out, and §12.7 keeps the program's own accesses out of a synchronisation call.
        self.with_copies(|card, e, base| unsafe { card.merge(e, base) })
    }

    /// Local stores out to the public copy (card only).
    fn publish(&mut self) -> Result<()> {
        // SAFETY: `base` is the window's `size` bytes, the card image's length, readable until the
        // window is freed (as in `merge`); §12.7 keeps the program's stores out during this call.
        self.with_copies(|card, e, base| unsafe { card.publish(e, base) })
    }

    /// The public copy in (card only).
    fn refresh(&mut self) -> Result<()> {
        // SAFETY: `base` is the window's `size` bytes, the card image's length, writable until the
        // window is freed (as in `merge`); `&mut self` and §12.7 keep other accesses out during it.
        self.with_copies(|card, e, base| unsafe { card.refresh(e, base) }.map(|_| None))
    }

    /// A conflict a merge found, once the synchronisation that found it
    /// is done (separate model, §12.7).
    fn conflicts(&mut self) -> Result<()> {
        self.conflict.take().map_or(Ok(()), Err)
    }

    /// Run `f` with the window's target-side state and the engine: a call
    /// that touches the window (the next progress pass looks at it).
    fn target<R>(&self, f: impl FnOnce(&mut Win, &mut Engine) -> Result<R>) -> Result<R> {
        let mut c = self.comm.shared().borrow_mut();
        let e = c.engine()?;
        let mut w = self.served.touch(e);
        f(&mut w, e)
    }

    /// Whether `f` holds of the window's target-side state (a read).
    fn looking(&self, c: &mut crate::context::Context, f: impl FnOnce(&Win) -> bool) -> Result<bool> {
        Ok(f(&self.served.look(c.engine()?)))
    }

    /// Report a failure a target sent back, or a peer's fault.
    fn failures(&self) -> Result<()> {
        match self.target(|w, _| Ok(w.take_any_failure()))? {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn send(&self, to: Rank, m: &Msg<'_>) -> Result<()> {
        self.target(|w, e| w.send(e, to as u32, m))
    }

    fn check_rank(&self, r: Rank) -> Result<()> {
        if r < 0 || r as usize >= self.peers.len() {
            return Err(MpiError::InvalidRank { rank: r, size: self.peers.len() as Rank });
        }
        Ok(())
    }

    // ---- attributes (§12.2.6) ---------------------------------------------

    /// This process's memory (`MPI_WIN_BASE`; null for a dynamic window).
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Its size in bytes (`MPI_WIN_SIZE`).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Its displacement unit (`MPI_WIN_DISP_UNIT`).
    pub fn disp_unit(&self) -> u32 {
        self.disp_unit
    }

    /// How it was made (`MPI_WIN_CREATE_FLAVOR`).
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// Its memory model (`MPI_WIN_MODEL`): separate when the card holds
    /// the public copies.
    pub fn model(&self) -> Model {
        if self.card.is_some() {
            Model::Separate
        } else {
            Model::Unified
        }
    }

    /// The communicator of its group (`MPI_Win_get_group` is its group).
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// Its name (`MPI_Win_get_name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Name it (`MPI_Win_set_name`).
    pub fn set_name(&mut self, name: &str) {
        self.name = name.to_string();
    }

    /// `MPI_Win_shared_query` (§12.2.3): size, displacement unit and base
    /// (in this process's address space) of `rank`'s part of a shared
    /// window; [`PROC_NULL`]: of the lowest rank whose part is not empty.
    /// A part of size 0 has a null base.
    ///
    /// On a window of another flavour (MPI 4.1 allows it), only this
    /// process's own memory is reachable by loads and stores: its own
    /// rank gives it (and [`PROC_NULL`], when it is the lowest rank with
    /// memory), any other rank size 0 and a null base.
    pub fn shared_query(&self, rank: Rank) -> Result<(u64, u32, *mut u8)> {
        if rank != PROC_NULL {
            self.check_rank(rank)?;
        }
        let Storage::Shared(seg) = &self.storage else {
            if self.flavor == Flavor::Dynamic {
                return Err(MpiError::RmaFlavor {
                    call: "MPI_Win_shared_query",
                    wants: "a window with memory of its own (a dynamic window has only what is attached)",
                });
            }
            let me = self.comm.rank();
            let first = self.peers.iter().position(|p| p.size > 0).map(|r| r as Rank);
            return Ok(if rank == me || (rank == PROC_NULL && first == Some(me)) {
                (self.size, self.disp_unit, self.base)
            } else {
                (0, self.disp_unit, std::ptr::null_mut())
            });
        };
        let r = if rank == PROC_NULL { self.peers.iter().position(|p| p.size > 0).unwrap_or(0) as Rank } else { rank };
        let p = self.peers[r as usize];
        // A process that gave no memory has no base either: a null one, not
        // an address inside the neighbour's part (MPICH's
        // win_shared_noncontig_put asserts it).
        let base = if p.size == 0 { std::ptr::null_mut() } else { seg.of(r as usize) };
        Ok((p.size, p.disp_unit, base))
    }

    /// `MPI_Win_attach` (§12.2.4): `size` bytes at `base` become
    /// reachable at their addresses.
    ///
    /// # Safety
    /// The `size` bytes at `base` stay valid for reads and writes until detached or the window is
    /// freed (or dropped), and the program accesses them only as MPI 4.1 §12.7 allows (as for
    /// [`RawWindow::create`]).
    pub unsafe fn attach(&mut self, base: *mut u8, size: u64) -> Result<()> {
        let a = base as u64;
        if size > 0 && base.is_null() {
            return Err(MpiError::RmaAttach(AttachError::Null));
        }
        let end = a.checked_add(size).ok_or(MpiError::RmaAttach(AttachError::Wraps { base: a, size }))?;
        self.target(|w, _| {
            let regions = w.regions()?;
            let before = regions.range(..end).next_back().filter(|(s, l)| **s + **l > a);
            if before.is_some() {
                return Err(MpiError::RmaAttach(AttachError::Overlap { base: a, end }));
            }
            regions.insert(a, size);
            Ok(())
        })
    }

    /// `MPI_Win_detach`: the region attached at `base` no longer is.
    pub fn detach(&mut self, base: *const u8) -> Result<()> {
        self.target(|w, _| {
            w.regions()?
                .remove(&(base as u64))
                .map(|_| ())
                .ok_or(MpiError::RmaAttach(AttachError::NotAttached { base: base as u64 }))
        })
    }

    // ---- communication (§12.3) --------------------------------------------

    /// The target blocks of `t`, checked inside the target's window (a
    /// dynamic window's target checks its own): byte offsets, lengths.
    fn blocks(&self, t: &Target<'_>) -> Result<Vec<(u64, u64)>> {
        let p = &self.peers[t.rank as usize];
        let dynamic = self.flavor == Flavor::Dynamic;
        let range = |lo: i128, hi: i128| {
            let wide = |v: i128| i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX });
            MpiError::from(crate::error::RmaRangeError::Outside {
                rank: t.rank,
                lo: wide(lo),
                hi: wide(hi),
                size: p.size,
            })
        };
        let start = i128::from(t.disp) * i128::from(if dynamic { 1 } else { p.disp_unit });
        let ext = t.layout.extent() as i128;
        let mut out: Vec<(u64, u64)> = Vec::new();
        let mut push = |off: i128, len: usize| -> Result<()> {
            if len == 0 {
                return Ok(());
            }
            let hi = off + len as i128;
            if off < 0 || hi > i128::from(u64::MAX) || (!dynamic && hi > i128::from(p.size)) {
                return Err(range(off, hi));
            }
            match out.last_mut() {
                Some((o, l)) if i128::from(*o + *l) == off => *l += len as u64,
                _ => out.push((off as u64, len as u64)),
            }
            Ok(())
        };
        match Span::of(Arc::new(t.layout.clone()), t.count)? {
            Span::Direct { offset, len } => push(start + offset as i128, len)?,
            Span::Scattered { .. } => {
                for i in 0..t.count {
                    for (o, l) in t.layout.blocks() {
                        push(start + i as i128 * ext + o as i128, l)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Checks common to every operation: the epoch, the rank, and that the
    /// origin's data is as long as the target's; the target blocks
    /// (`None`: `MPI_PROC_NULL`, nothing to do).
    fn prepare(&mut self, t: &Target<'_>, origin_len: Option<usize>) -> Result<Option<Vec<(u64, u64)>>> {
        self.failures()?;
        if t.rank == PROC_NULL {
            return Ok(None);
        }
        self.check_rank(t.rank)?;
        let bytes = t.layout.size.checked_mul(t.count).ok_or(MpiError::TooLarge(Overflow::TargetCount))?;
        if let Some(n) = origin_len.filter(|n| *n != bytes) {
            return Err(SignatureError::OriginTarget { origin: n as u64, target: bytes as u64 }.into());
        }
        let blocks = self.blocks(t)?;
        self.epochs.operation(t.rank)?;
        if self.card.is_none() {
            // Messages only: which targets a fence or flush must ask.
            self.dirty.insert(t.rank);
        }
        Ok(Some(blocks))
    }

    /// `MPI_Put` (§12.3.1): the origin's data to the target's memory.
    ///
    /// # Safety
    /// Every block of the span's elements at `origin` is readable, and not modified, for the
    /// duration of the call (they are copied or sent before it returns).
    pub unsafe fn put(&mut self, origin: *const u8, span: &Span, t: &Target<'_>) -> Result<()> {
        let Some(blocks) = self.prepare(t, Some(span.len()))? else { return Ok(()) };
        // SAFETY: the span's elements at `origin` are readable and unmodified for this call
        // (`# Safety`), and `data`, borrowed from them when direct, is put or encoded before it returns.
        let data = unsafe { outgoing(origin, span, "origin")? };
        let on_card = self.on_card(|card, e| {
            let mut at = 0usize;
            for &(off, len) in &blocks {
                card.put(e, t.rank as usize, off, &data[at..at + len as usize])?;
                at += len as usize;
            }
            Ok(())
        });
        if let Some(r) = on_card {
            return r;
        }
        self.send(t.rank, &Msg { blocks, data: &data, ..Msg::bare(Kind::Put, 0) })
    }

    /// `MPI_Accumulate` (§12.3.4): the origin's elements of `elem`,
    /// combined into the target's with `op`.
    ///
    /// # Safety
    /// As [`RawWindow::put`]: every block of the span's elements at `origin` is readable, and not
    /// modified, for the duration of the call.
    pub unsafe fn accumulate(
        &mut self,
        origin: *const u8,
        span: &Span,
        t: &Target<'_>,
        elem: Elem,
        op: AccOp,
    ) -> Result<()> {
        op.check(elem)?;
        let Some(blocks) = self.prepare(t, Some(span.len()))? else { return Ok(()) };
        check_elems(&blocks, elem)?;
        // SAFETY: the span's elements at `origin` are readable and unmodified for this call
        // (`# Safety`), and `data`, borrowed from them when direct, is applied or encoded before it
        // returns.
        let data = unsafe { outgoing(origin, span, "origin")? };
        if op == AccOp::NoOp {
            return Ok(());
        }
        if let Some(r) = self.on_card(|card, e| card.accumulate(e, t.rank as usize, &blocks, &data, elem, op, false)) {
            return r.map(drop);
        }
        self.send(t.rank, &Msg { op: Some(op), elem: Some(elem), blocks, data: &data, ..Msg::bare(Kind::Acc, 0) })
    }

    /// `MPI_Get` (§12.3.2): the target's data into the origin's buffer,
    /// there once the returned request is answered (or at the end of the
    /// epoch, or a flush).
    ///
    /// # Safety
    /// Every block of the span's elements at `origin` stays writable and is not otherwise
    /// accessed until the result is in place: before this call returns on the card, else when the
    /// reply comes (see [`Issued`]), or until the window forgets the buffer
    /// (`RawWindow::forget_reply_buffers`) or is freed or dropped.
    pub unsafe fn get(&mut self, origin: *mut u8, span: &Span, t: &Target<'_>) -> Result<Issued> {
        let Some(blocks) = self.prepare(t, Some(span.len()))? else { return Ok(Issued(0)) };
        let on_card = self.on_card(|card, e| {
            let mut data = vec![0u8; span.len()];
            let mut at = 0usize;
            for &(off, len) in &blocks {
                card.get(e, t.rank as usize, off, &mut data[at..at + len as usize])?;
                at += len as usize;
            }
            Ok(data)
        });
        if let Some(data) = on_card {
            // SAFETY: the span at `origin` is writable and untouched until the result is in place
            // (`# Safety`), which `place` does now, within this call.
            unsafe { place(origin, span, "origin", &data?)? };
            return Ok(Issued(0));
        }
        // SAFETY: the span at `origin` stays writable and untouched until the reply is placed or the
        // window forgets it (`# Safety`); `inc`, with its staging buffer, goes to `expect` as the
        // reply's place, as `incoming` and `expect` ask (nothing is read now: no `fill`).
        let id = unsafe {
            let inc = incoming(origin, span, "origin", false)?;
            self.target(|w, _| w.expect(t.rank as u32, Some(Reply(inc))))?
        };
        self.send(t.rank, &Msg { blocks, ..Msg::bare(Kind::Get, id) })?;
        Ok(Issued(id))
    }

    /// `MPI_Get_accumulate` (§12.3.5), and `MPI_Fetch_and_op` with one
    /// element: the target's elements into `result`, then the origin's
    /// combined into them (nothing is read from `origin` for `NoOp`).
    ///
    /// # Safety
    /// Unless `op` is `NoOp`, every block of `span`'s elements at `origin` is readable, and not
    /// modified, for the duration of the call; every block of `result_span`'s elements at `result`
    /// stays writable and not otherwise accessed until the result is in place, as `origin`'s in
    /// [`RawWindow::get`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn get_accumulate(
        &mut self,
        origin: *const u8,
        span: &Span,
        result: *mut u8,
        result_span: &Span,
        t: &Target<'_>,
        elem: Elem,
        op: AccOp,
    ) -> Result<Issued> {
        op.check(elem)?;
        let origin_len = (op != AccOp::NoOp).then_some(span.len());
        let Some(blocks) = self.prepare(t, origin_len)? else { return Ok(Issued(0)) };
        if result_span.len() != t.layout.size * t.count {
            return Err(SignatureError::ResultTarget {
                result: result_span.len() as u64,
                target: (t.layout.size * t.count) as u64,
            }
            .into());
        }
        check_elems(&blocks, elem)?;
        // SAFETY: for an operation other than `NoOp`, the span's elements at `origin` are readable and
        // unmodified for this call (`# Safety`); `data` is applied or encoded before it returns.
        let data = if op == AccOp::NoOp { Default::default() } else { unsafe { outgoing(origin, span, "origin")? } };
        if let Some(old) = self.on_card(|card, e| card.accumulate(e, t.rank as usize, &blocks, &data, elem, op, true)) {
            // SAFETY: `result`'s span is writable and untouched until the result is in place
            // (`# Safety`), which `place` does now, within this call.
            unsafe { place(result, result_span, "result", &old?)? };
            return Ok(Issued(0));
        }
        // SAFETY: `result`'s span stays writable and untouched until the reply is placed or the
        // window forgets it (`# Safety`); `inc`, with its staging buffer, goes to `expect` as the
        // reply's place, as `incoming` and `expect` ask (nothing is read now: no `fill`).
        let id = unsafe {
            let inc = incoming(result, result_span, "result", false)?;
            self.target(|w, _| w.expect(t.rank as u32, Some(Reply(inc))))?
        };
        let m = Msg { op: Some(op), elem: Some(elem), blocks, data: &data, ..Msg::bare(Kind::GetAcc, id) };
        self.send(t.rank, &m)?;
        Ok(Issued(id))
    }

    /// `MPI_Compare_and_swap` (§12.3.7): one element of `elem` at the
    /// target; if it equals `compare` it becomes `origin`; its old value
    /// goes to `result`.
    ///
    /// # Safety
    /// `origin` and `compare` each point to one element of `elem` (`elem.size()` bytes), readable
    /// and not modified for the duration of the call; `result`'s `elem.size()` bytes stay writable
    /// and not otherwise accessed until the result is in place, as `origin`'s in
    /// [`RawWindow::get`].
    pub unsafe fn compare_and_swap(
        &mut self,
        origin: *const u8,
        compare: *const u8,
        result: *mut u8,
        elem: Elem,
        rank: Rank,
        disp: i64,
    ) -> Result<Issued> {
        let n = elem.size();
        let layout = Typemap::basic(n, n, 1);
        let t = Target { rank, disp, layout: &layout, count: 1 };
        let Some(blocks) = self.prepare(&t, None)? else { return Ok(Issued(0)) };
        let span = Span::bytes(n);
        // SAFETY: `origin` and `compare` each hold `n = elem.size()` readable bytes, unmodified for
        // this call (`# Safety`); `o` and `c` are used by the card or copied into `data` before it ends.
        let (o, c) = unsafe { (outgoing(origin, &span, "origin")?, outgoing(compare, &span, "compare")?) };
        if let Some(old) = self.on_card(|card, e| card.compare_and_swap(e, rank as usize, blocks[0].0, elem, &o, &c)) {
            // SAFETY: `result`'s `n` bytes are writable and untouched until the result is in place
            // (`# Safety`), which `place` does now, within this call.
            unsafe { place(result, &span, "result", &old?)? };
            return Ok(Issued(0));
        }
        let mut data = c.into_owned();
        data.extend_from_slice(&o);
        // SAFETY: `result`'s `n` bytes stay writable and untouched until the reply is placed or the
        // window forgets them (`# Safety`); `inc` goes to `expect` as the reply's place, as
        // `incoming` and `expect` ask (nothing is read now: no `fill`).
        let id = unsafe {
            let inc = incoming(result, &span, "result", false)?;
            self.target(|w, _| w.expect(rank as u32, Some(Reply(inc))))?
        };
        self.send(rank, &Msg { elem: Some(elem), blocks, data: &data, ..Msg::bare(Kind::Cas, id) })?;
        Ok(Issued(id))
    }

    /// The request of an issued operation: what `MPI_Rget` and
    /// `MPI_Rget_accumulate` return (complete once the result is in
    /// place, §12.3.6).
    pub fn request(&self, op: Issued) -> Request<'static> {
        crate::rma::target::reply_request(self.comm.shared().clone(), self.served.clone(), op.0, self.comm.group())
    }

    /// A request complete already: what `MPI_Rput` and `MPI_Raccumulate`
    /// return, their data copied (§12.3.6).
    pub fn done(&self) -> Request<'static> {
        self.request(Issued(0))
    }

    /// `MPI_Win_sync` (§12.5.4): the public and private copies agree; in
    /// the unified model a memory barrier.
    pub fn sync(&mut self) -> Result<()> {
        self.comm.shared().borrow_mut().progress()?;
        std::sync::atomic::fence(Ordering::SeqCst);
        self.merge()?;
        self.failures()?;
        self.conflicts()
    }

    /// Whether the window may be freed: every epoch over and every
    /// operation complete (`MPI_Win_free`'s local part, §12.2.5). On an
    /// error nothing changed and the window stays usable.
    pub fn check_free(&mut self) -> Result<()> {
        self.epochs.free()?;
        self.card_complete()?;
        self.settle(None)
    }

    /// `MPI_Win_free` (§12.2.5): collective; every epoch must be over
    /// (else the error of [`RawWindow::check_free`], with the window
    /// gone all the same — call that first to keep it).
    pub fn free(mut self) -> Result<()> {
        self.check_free()?;
        let r = self.comm.barrier();
        if r.is_ok() {
            // A diagnostic only: its failure changes nothing of the free.
            // SAFETY: `base` is the window's `size` bytes (the card image's length), still readable:
            // `deregister` below has not run and `storage`, if ours, lives until `self` drops; §12.7
            // keeps the program's stores out during this call.
            let _ = self.with_copies(|card, e, base| unsafe { card.audit(e, base) }.map(|_| None));
        }
        self.deregister();
        r
    }

    fn deregister(&mut self) {
        let mut c = self.comm.shared().borrow_mut();
        let Ok(e) = c.engine() else { return };
        self.served.deregister(e);
        if let Some(card) = self.card.take() {
            card.close(e);
        }
    }

    /// Every put to the card has landed (nothing without a card).
    fn card_complete(&self) -> Result<()> {
        self.on_card(|card, e| card.complete(e)).unwrap_or(Ok(()))
    }

    /// Forget where the replies still due were to go: they are dropped
    /// when they come (a caller whose buffer was borrowed only for a call
    /// that failed).
    pub(crate) fn forget_reply_buffers(&self) {
        let _ = self.target(|w, _| {
            w.forget_buffers();
            Ok(())
        });
    }

    /// While the returned flag is set, arrivals for this window wait
    /// (the Rust API's local access).
    pub(crate) fn local_flag(&self) -> &Arc<AtomicBool> {
        &self.local
    }
}

impl Drop for RawWindow {
    /// A window dropped without [`RawWindow::free`] (an error path, or a
    /// program that never freed it) stops being served at once: nothing
    /// is written to its memory afterwards.
    fn drop(&mut self) {
        self.deregister();
    }
}

/// Put `data` (a result) into the span's elements at `buf`.
///
/// # Safety
/// Every block of the span's elements at `buf` is writable, and not otherwise accessed, for the
/// duration of the call.
unsafe fn place(buf: *mut u8, span: &Span, what: &str, data: &[u8]) -> Result<()> {
    // SAFETY: the span at `buf` is writable and untouched for this call (`# Safety`) and `inc` is
    // finished before it returns, as `incoming` asks; `inc.bytes()` is the caller's span or `inc`'s
    // own staging buffer, `inc.len` bytes, of which the first `n` are written, and then unpacked.
    unsafe {
        let mut inc = incoming(buf, span, what, false)?;
        let n = inc.len.min(data.len());
        inc.bytes()[..n].copy_from_slice(&data[..n]);
        inc.finish(n as u64);
    }
    Ok(())
}

/// An operation whose result is still to come (a get, a fetch, a swap):
/// in place after the next flush, unlock, complete or fence that covers
/// its target, or when [`RawWindow::request`]'s request completes.
/// Dropping it changes nothing.
#[derive(Debug)]
pub struct Issued(u64);

/// What a one-sided synchronisation still waits for once its messages are
/// out (the `*_begin` calls of [`RawWindow`]): finished by
/// [`RawWindow::finish`] or, letting other threads in meanwhile,
/// [`RawWindow::finish_or`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Waiting {
    /// Nothing: the call is over.
    Nothing,
    /// The replies to every request to a target (`None`: to all).
    Replies(Option<Rank>),
    /// The posts of the targets of `MPI_Win_start`'s access epoch.
    Posts,
    /// The completions of the origins of `MPI_Win_post`'s exposure epoch.
    Completions,
    /// The rest of an `MPI_Win_fence`: the confirmations it asked for,
    /// its barrier, the next epochs.
    Fence,
}

/// Each target block holds whole elements of `elem` (§12.3.4: the target
/// datatype is built from the origin's basic type).
fn check_elems(blocks: &[(u64, u64)], elem: Elem) -> Result<()> {
    let n = elem.packed_size() as u64;
    if elem.padded_pair().is_some() {
        // A padded pair's type map has a gap inside each element (its
        // struct's padding), so a block may hold part of one: the blocks
        // together hold whole elements.
        if blocks.iter().map(|b| b.1).sum::<u64>() % n != 0 {
            return Err(MpiError::Op(crate::error::OpError::PartOfPair { bytes: n }));
        }
        return Ok(());
    }
    if blocks.iter().any(|(_, l)| l % n != 0) {
        return Err(MpiError::Op(crate::error::OpError::SplitsElements { bytes: n }));
    }
    Ok(())
}
