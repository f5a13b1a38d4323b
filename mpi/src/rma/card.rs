//! One-sided communication done by the card (DESIGN §6): a window's
//! **public copy lives in the target's device memory** and other ranks'
//! cards store into it (RVS), load from it (RVL) and update it atomically
//! (AMO, register map 1.3) — the target's CPU does nothing. The private
//! copy is the window's host memory; synchronisation makes the two agree
//! (MPI's separate memory model, `MPI_WIN_SEPARATE`, §12.4).
//!
//! This model is asked for (info `dimmnet_memory_model=separate`, or
//! `DN_RMA=card`); windows are unified by default (issue 47).
//!
//! Layout of each public copy: a 64-byte header — the passive-target lock
//! word, then the accumulate mutex — and the window's bytes.
//!
//! * **Locks** (§12.5.3) are taken by atomics on the target's lock word:
//!   bit 63 is the exclusive holder, bits 0–31 count shared holders, and
//!   bits 32–62 count the passive-target epochs other processes have
//!   ended there ([`VISIT`]). Exclusive is a compare-and-swap of the word
//!   with no holder to the same word with [`EXCLUSIVE`] set, shared an add
//!   of 1 that is taken back if the exclusive bit was set; both retry
//!   (making a progress pass between tries) until they hold.
//! * **What the library can see of erroneous programs** (§12.7), which a
//!   real card could not report: a local store and a remote update of the
//!   same bytes between two synchronisations is `MPI_ERR_RMA_CONFLICT`
//!   (at the synchronisation that finds it); local stores still not
//!   public while other processes ended passive-target epochs here (they
//!   may have read the old values) are named once per window on the
//!   job's error output, at the next synchronisation or at the free.
//! * **Accumulates** of an operation and type the atomic unit has, on
//!   elements aligned to their size, are one AMO per element; the others (`MPI_MINLOC`/`MPI_MAXLOC` pairs) load,
//!   combine and store under the target's accumulate mutex. MPI's default
//!   `accumulate_ops` (`same_op_no_op`) means one location never sees both
//!   kinds at once.
//! * **Synchronisation** (fence, post/wait, `MPI_Win_sync`, a lock of
//!   one's own window) merges: the bytes this process stored locally since
//!   the last synchronisation — those where the private copy differs from
//!   the image kept then — go to the public copy, then the public copy
//!   comes back into the private one. Accesses that conflict (a local
//!   store and a remote put to one location in one epoch) are erroneous in
//!   MPI, so the merge loses nothing a correct program wrote.

use adi::{Atomic, Engine, HostCost};

use super::AccOp;
use crate::staged::reduce::Elem;
use crate::{MpiError, Result, SystemOperation};

/// Bytes before the window's own in each public copy.
pub(crate) const HEADER: u64 = 64;
/// The exclusive bit of a lock word (the rest counts shared holders).
pub(crate) const EXCLUSIVE: u64 = 1 << 63;
/// Offset of the accumulate mutex in the header.
const MUTEX: u64 = 8;
/// Offset of the passive-target lock word in the header.
pub(crate) const LOCK: u64 = 0;
/// One passive-target epoch ended by another process, in the lock word.
const VISIT: u64 = 1 << 32;
/// The lock word's epoch count (bits 32–62).
const VISITS: u64 = !EXCLUSIVE & !(VISIT - 1);
/// The lock word's holders: the exclusive bit and the shared count.
const HOLDERS: u64 = EXCLUSIVE | (VISIT - 1);

fn one_sided(e: &mut Engine) -> Result<&mut dyn adi::OneSided> {
    e.one_sided().ok_or(MpiError::Win(crate::error::WinError::LostOneSided))
}

/// A window's card-side state at this process.
#[derive(Debug)]
pub(crate) struct Card {
    /// Each group rank's job rank and public copy address.
    peers: Vec<(u32, u64)>,
    /// This process's group rank.
    me: usize,
    /// The public copy as of the last synchronisation.
    shadow: Vec<u8>,
    /// The lock word's epoch count ([`VISITS`]) at the last synchronisation.
    seen: u64,
    /// Whether unpublished local stores read by others were named already.
    warned: bool,
}

/// The atomic unit's element type for `e`, if it has one.
fn native(e: Elem) -> Option<adi::offload::Elem> {
    use adi::offload::Elem as D;
    Some(match e {
        Elem::I8 => D::I8,
        Elem::U8 => D::U8,
        Elem::I16 => D::I16,
        Elem::U16 => D::U16,
        Elem::I32 => D::I32,
        Elem::U32 => D::U32,
        Elem::I64 => D::I64,
        Elem::U64 => D::U64,
        Elem::F32 => D::F32,
        Elem::F64 => D::F64,
        Elem::Int2
        | Elem::FloatInt
        | Elem::DoubleInt
        | Elem::LongInt
        | Elem::ShortInt
        | Elem::Real2
        | Elem::Double2
        | Elem::C32
        | Elem::C64
        | Elem::LongDouble
        | Elem::LongDoubleInt
        | Elem::C80 => return None,
    })
}

/// The atomic unit's operation for `op`, if it has one.
fn native_op(op: AccOp) -> Option<Atomic> {
    use adi::offload::Reduction as R;
    Some(match op {
        AccOp::Replace => Atomic::Replace,
        AccOp::NoOp => Atomic::Fetch,
        AccOp::System(s) => Atomic::Reduce(match s {
            SystemOperation::Sum => R::Sum,
            SystemOperation::Product => R::Prod,
            SystemOperation::Min => R::Min,
            SystemOperation::Max => R::Max,
            SystemOperation::LogicalAnd => R::Land,
            SystemOperation::LogicalOr => R::Lor,
            SystemOperation::LogicalXor => R::Lxor,
            SystemOperation::BitwiseAnd => R::Band,
            SystemOperation::BitwiseOr => R::Bor,
            SystemOperation::BitwiseXor => R::Bxor,
            SystemOperation::MinLoc | SystemOperation::MaxLoc => return None,
        }),
    })
}

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

impl Card {
    /// Fill this process's freshly exposed public copy at `addr`: a zero
    /// header (lock word, mutex) and the private copy `initial`. Done
    /// before the addresses are exchanged, so no peer can reach the copy
    /// (and take its lock) before it is ready.
    pub(crate) fn prepare(e: &mut Engine, job: u32, addr: u64, initial: &[u8]) -> Result<()> {
        let os = one_sided(e)?;
        os.put(job, addr, &[0u8; HEADER as usize])?;
        os.put(job, addr + HEADER, initial)?;
        Ok(os.complete()?)
    }

    /// The card side of a window, from everyone's public copy address
    /// (`peers[i]`: group rank `i`'s job rank and address), each prepared
    /// ([`Card::prepare`]) with this process's private copy `initial`.
    pub(crate) fn new(peers: Vec<(u32, u64)>, me: usize, initial: &[u8]) -> Card {
        Card { peers, me, shadow: initial.to_vec(), seen: 0, warned: false }
    }

    fn at(&self, t: usize) -> (u32, u64) {
        self.peers[t]
    }

    /// Store `data` at window byte `off` of target `t` (lands by [`Card::complete`]).
    pub(crate) fn put(&self, e: &mut Engine, t: usize, off: u64, data: &[u8]) -> Result<()> {
        let (job, addr) = self.at(t);
        Ok(one_sided(e)?.put(job, addr + HEADER + off, data)?)
    }

    /// Load window bytes `off..off + out.len()` of target `t`.
    pub(crate) fn get(&self, e: &mut Engine, t: usize, off: u64, out: &mut [u8]) -> Result<()> {
        let (job, addr) = self.at(t);
        Ok(one_sided(e)?.get(job, addr + HEADER + off, out)?)
    }

    /// Every put so far has landed.
    pub(crate) fn complete(&self, e: &mut Engine) -> Result<()> {
        Ok(one_sided(e)?.complete()?)
    }

    fn amo(&self, e: &mut Engine, t: usize, at: u64, op: Atomic, elem: adi::offload::Elem, v: u64) -> Result<u64> {
        let (job, addr) = self.at(t);
        Ok(one_sided(e)?.atomic(job, addr + at, op, elem, v)?)
    }

    /// Combine `data` into the target's `blocks` with `op` (an accumulate),
    /// returning the old bytes when `fetch`; atomic per element (§12.7.1).
    #[allow(clippy::too_many_arguments)] // an accumulate's own arguments
    pub(crate) fn accumulate(
        &self,
        e: &mut Engine,
        t: usize,
        blocks: &[(u64, u64)],
        data: &[u8],
        elem: Elem,
        op: AccOp,
        fetch: bool,
    ) -> Result<Vec<u8>> {
        let mut old = Vec::with_capacity(if fetch { blocks.iter().map(|b| b.1 as usize).sum() } else { 0 });
        let unit = native(elem).zip(native_op(op)).filter(|_| self.aligned(t, blocks, elem.size()));
        if let Some((d, a)) = unit {
            let n = elem.size();
            let mut at = 0usize;
            for &(off, len) in blocks {
                for k in 0..(len as usize / n) {
                    let operand = if op == AccOp::NoOp { 0 } else { word(&data[at..at + n]) };
                    let was = self.amo(e, t, HEADER + off + (k * n) as u64, a, d, operand)?;
                    if fetch {
                        old.extend_from_slice(&was.to_le_bytes()[..n]);
                    }
                    at += n;
                }
            }
            return Ok(old);
        }
        // Load, combine and store under the target's accumulate mutex.
        self.hold(e, t, MUTEX, true)?;
        let r = (|| {
            if elem.padded_pair().is_some() {
                // Its elements may straddle blocks: load all, combine as one run.
                let mut acc = vec![0u8; blocks.iter().map(|b| b.1 as usize).sum()];
                let mut at = 0usize;
                for &(off, len) in blocks {
                    self.get(e, t, off, &mut acc[at..at + len as usize])?;
                    at += len as usize;
                }
                if fetch {
                    old.extend_from_slice(&acc);
                }
                if op != AccOp::NoOp {
                    op.apply(Some(elem), data, &mut acc)?;
                    let mut at = 0usize;
                    for &(off, len) in blocks {
                        self.put(e, t, off, &acc[at..at + len as usize])?;
                        at += len as usize;
                    }
                }
                return self.complete(e);
            }
            let mut at = 0usize;
            for &(off, len) in blocks {
                let mut acc = vec![0u8; len as usize];
                self.get(e, t, off, &mut acc)?;
                if fetch {
                    old.extend_from_slice(&acc);
                }
                if op != AccOp::NoOp {
                    op.apply(Some(elem), &data[at..at + len as usize], &mut acc)?;
                    self.put(e, t, off, &acc)?;
                }
                at += len as usize;
            }
            self.complete(e)
        })();
        self.release(e, t, MUTEX, true)?;
        r.map(|_| old)
    }

    /// Whether every element of `blocks` (of `n` bytes each) at target `t`
    /// is aligned to its size in the card's memory, as its atomic unit
    /// requires. MPI puts no alignment rule on displacements; a location
    /// that is not aligned is always reached the other way (under the
    /// accumulate mutex) by every origin, since every access to it has the
    /// same address, so the two ways never meet on one location.
    fn aligned(&self, t: usize, blocks: &[(u64, u64)], n: usize) -> bool {
        let base = self.at(t).1 + HEADER;
        let n = n as u64;
        blocks.iter().all(|&(off, len)| (base + off) % n == 0 && len % n == 0)
    }

    /// `MPI_Compare_and_swap` of one element at window byte `off` of `t`.
    pub(crate) fn compare_and_swap(
        &self,
        e: &mut Engine,
        t: usize,
        off: u64,
        elem: Elem,
        origin: &[u8],
        compare: &[u8],
    ) -> Result<Vec<u8>> {
        let d = native(elem)
            .ok_or_else(|| MpiError::Op(crate::error::OpError::NoCompareSwap { elem: format!("{elem:?}") }))?;
        let n = elem.size();
        if self.aligned(t, &[(off, n as u64)], n) {
            let was = self.amo(e, t, HEADER + off, Atomic::CompareSwap { compare: word(compare) }, d, word(origin))?;
            return Ok(was.to_le_bytes()[..n].to_vec());
        }
        // Not aligned: load, compare and store under the accumulate mutex,
        // as every other atomic on this location does.
        self.hold(e, t, MUTEX, true)?;
        let r = (|| {
            let mut was = vec![0u8; n];
            self.get(e, t, off, &mut was)?;
            if was == compare {
                self.put(e, t, off, origin)?;
            }
            self.complete(e).map(|_| was)
        })();
        self.release(e, t, MUTEX, true)?;
        r
    }

    /// Take target `t`'s lock word (`at` in the header) exclusively or
    /// shared, retrying until it holds.
    pub(crate) fn hold(&self, e: &mut Engine, t: usize, at: u64, exclusive: bool) -> Result<()> {
        use adi::offload::{Elem as D, Reduction as R};
        // The epoch count the word is thought to carry (a failed
        // compare-and-swap says what it really is).
        let mut visits = 0u64;
        loop {
            let got = if exclusive {
                let was = self.amo(e, t, at, Atomic::CompareSwap { compare: visits }, D::U64, visits | EXCLUSIVE)?;
                if was != visits && was & HOLDERS == 0 {
                    // Free, but counted other epochs than we thought: retry at once.
                    visits = was;
                    continue;
                }
                visits = was & VISITS;
                was & HOLDERS == 0
            } else {
                let was = self.amo(e, t, at, Atomic::Reduce(R::Sum), D::U64, 1)?;
                if was & EXCLUSIVE != 0 {
                    self.amo(e, t, at, Atomic::Reduce(R::Sum), D::U64, u64::MAX)?;
                }
                was & EXCLUSIVE == 0
            };
            if got {
                return Ok(());
            }
            // Someone else holds it: keep this process's own duties moving.
            e.progress()?;
        }
    }

    /// Release what [`Card::hold`] took; a passive-target epoch at
    /// another process counts one [`VISIT`] there, in the same atomic.
    pub(crate) fn release(&self, e: &mut Engine, t: usize, at: u64, exclusive: bool) -> Result<()> {
        use adi::offload::{Elem as D, Reduction as R};
        let minus = if exclusive { EXCLUSIVE.wrapping_neg() } else { u64::MAX };
        let visit = if at == LOCK && t != self.me { VISIT } else { 0 };
        self.amo(e, t, at, Atomic::Reduce(R::Sum), D::U64, minus.wrapping_add(visit))?;
        Ok(())
    }

    /// The epoch count of this process's own lock word, now.
    fn visits(&self, e: &mut Engine) -> Result<u64> {
        let (job, addr) = self.at(self.me);
        let mut w = [0u8; 8];
        one_sided(e)?.get(job, addr + LOCK, &mut w)?;
        Ok(u64::from_le_bytes(w) & VISITS)
    }

    /// Name, once per window, local stores that others may have read
    /// stale: `visits` (the lock word's count now) differs from the one
    /// of the last synchronisation, and stores are still not public.
    fn stale(&mut self, visits: u64, when: &str) {
        if visits == self.seen || self.warned {
            return;
        }
        self.warned = true;
        let epochs = (visits.wrapping_sub(self.seen) & VISITS) >> 32;
        eprintln!(
            "dimmnet mpi: window of rank {} (separate memory model): local stores were not yet in the public copy \
             while other processes ended {epochs} passive-target epoch(s) on it, so they may have read the old \
             values (found {when}). In the separate model a local store becomes public at the owner's next \
             MPI_Win_sync, MPI_Win_fence, MPI_Win_post or lock of its own window (MPI 4.1 §12.7); or create the \
             window unified (the default: no dimmnet_memory_model=separate, no DN_RMA=card).",
            self.me
        );
    }

    /// The first byte of `run` (window offset `start`) that both a local
    /// store and a remote update changed since the last synchronisation.
    fn conflict(&self, e: &mut Engine, start: usize, run: &[u8]) -> Result<Option<usize>> {
        let mut public = vec![0u8; run.len()];
        self.get(e, self.me, start as u64, &mut public)?;
        let old = &self.shadow[start..start + run.len()];
        Ok((0..run.len()).find(|&i| public[i] != old[i] && run[i] != old[i]).map(|i| start + i))
    }

    /// Local stores out: the runs of bytes of the private copy that
    /// differ from the image of the last synchronisation go to the public
    /// copy, and have landed when this returns. A byte that a remote
    /// update changed too is a conflict (§12.7): the local store wins,
    /// and the error says where, once the caller's synchronisation is done.
    ///
    /// # Safety
    /// `private` points to the window's memory, `shadow.len()` bytes, readable and not written by
    /// anyone else for the duration of the call.
    pub(crate) unsafe fn publish(&mut self, e: &mut Engine, private: *const u8) -> Result<Option<MpiError>> {
        let n = self.shadow.len();
        if n == 0 {
            return Ok(None);
        }
        // SAFETY: `n = shadow.len() > 0` here, and `private` is `n` bytes readable and not otherwise
        // written during this call (`# Safety`); `mem` ends with it.
        let mem = unsafe { std::slice::from_raw_parts(private, n) };
        let mut conflict = None;
        let mut stored = false;
        let mut i = 0;
        while i < n {
            if mem[i] == self.shadow[i] {
                i += 1;
                continue;
            }
            if !stored {
                stored = true;
                let visits = self.visits(e)?;
                self.stale(visits, "when they were published");
            }
            let start = i;
            while i < n && mem[i] != self.shadow[i] {
                i += 1;
            }
            if conflict.is_none() {
                conflict = self.conflict(e, start, &mem[start..i])?;
            }
            self.put(e, self.me, start as u64, &mem[start..i])?;
        }
        e.charge(HostCost::CopyByte, n as u64);
        self.complete(e)?;
        Ok(conflict.map(|byte| MpiError::RmaConflict { rank: self.me as i32, byte }))
    }

    /// What others stored in: the public copy comes into the private one,
    /// and becomes the image of this synchronisation.
    ///
    /// # Safety
    /// `private` is the window's memory, `shadow.len()` bytes, writable and
    /// not otherwise accessed during the call.
    pub(crate) unsafe fn refresh(&mut self, e: &mut Engine, private: *mut u8) -> Result<()> {
        let n = self.shadow.len();
        if n == 0 {
            return Ok(());
        }
        // The header comes along, for the lock word's epoch count.
        let mut public = vec![0u8; HEADER as usize + n];
        let (job, addr) = self.at(self.me);
        one_sided(e)?.get(job, addr, &mut public)?;
        let visits = word(&public[LOCK as usize..LOCK as usize + 8]) & VISITS;
        public.drain(..HEADER as usize);
        // Only the bytes that changed are written: a window over memory
        // the program may only read (others only read it too) is never
        // stored to (issue 47, break 2).
        let mut i = 0;
        while i < n {
            // SAFETY: `i < n`, inside `private`'s `n` bytes, readable and untouched by others during
            // this call (`# Safety`).
            if unsafe { *private.add(i) } == public[i] {
                i += 1;
                continue;
            }
            let start = i;
            // SAFETY: `i < n` (tested first), inside `private`'s `n` readable bytes (`# Safety`).
            while i < n && unsafe { *private.add(i) } != public[i] {
                i += 1;
            }
            // SAFETY: `start..i` lies within `private`'s `n` writable bytes (`# Safety`) and within
            // `public`'s `n` bytes (`i <= n`); `public` is a separate allocation, so they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(public.as_ptr().add(start), private.add(start), i - start) };
        }
        e.charge(HostCost::CopyByte, n as u64);
        self.shadow = public;
        self.seen = visits;
        if visits >= 1 << 61 {
            // Keep the count far from the exclusive bit: take away what was
            // seen (others only add and take back their own holds).
            use adi::offload::{Elem as D, Reduction as R};
            self.amo(e, self.me, LOCK, Atomic::Reduce(R::Sum), D::U64, visits.wrapping_neg())?;
            self.seen = 0;
        }
        Ok(())
    }

    /// [`Card::publish`] then [`Card::refresh`]: the copies agree.
    ///
    /// # Safety
    /// `private` points to the window's memory, `shadow.len()` bytes, readable, writable and not
    /// otherwise accessed for the duration of the call (what [`Card::publish`] and
    /// [`Card::refresh`] ask).
    pub(crate) unsafe fn merge(&mut self, e: &mut Engine, private: *mut u8) -> Result<Option<MpiError>> {
        // SAFETY: `private`'s `shadow.len()` bytes are readable, writable and untouched by others for
        // this call (`# Safety`), which covers `publish` and `refresh`; `publish` leaves `shadow`'s
        // length as it is.
        unsafe {
            let conflict = self.publish(e, private)?;
            self.refresh(e, private)?;
            Ok(conflict)
        }
    }

    /// At the window's free: name local stores that never became public
    /// while others ended passive-target epochs here.
    ///
    /// # Safety
    /// As [`Card::publish`]: `private` points to the window's memory, `shadow.len()` bytes,
    /// readable and not written by anyone else for the duration of the call.
    pub(crate) unsafe fn audit(&mut self, e: &mut Engine, private: *const u8) -> Result<()> {
        let n = self.shadow.len();
        // SAFETY: when `n > 0`, `private` is `n = shadow.len()` bytes readable and not otherwise written
        // during this call (`# Safety`); `mem` ends with it.
        let mem = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(private, n) } };
        if mem != self.shadow.as_slice() {
            let visits = self.visits(e)?;
            self.stale(visits, "at MPI_Win_free");
        }
        Ok(())
    }

    /// Give the public copy back (the window is freed).
    pub(crate) fn close(&self, e: &mut Engine) {
        if let Some(os) = e.one_sided() {
            os.unexpose(self.peers[self.me].1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_has_the_accumulates_it_should() {
        assert!(native(Elem::F64).is_some() && native(Elem::Int2).is_none());
        assert!(native_op(AccOp::System(SystemOperation::MaxLoc)).is_none());
        assert_eq!(native_op(AccOp::NoOp), Some(Atomic::Fetch));
        assert_eq!(word(&[1, 2]), 0x0201);
        // Releasing an exclusive lock takes away exactly its bit.
        assert_eq!((EXCLUSIVE + 3).wrapping_add(EXCLUSIVE.wrapping_neg()), 3);
    }

    #[test]
    fn an_unlock_counts_one_visit_and_frees_its_hold() {
        let (v, held) = (3 * VISIT, 2u64);
        // A shared holder of three leaves: two holders, one more visit.
        let after = (v | held | 1).wrapping_add(u64::MAX.wrapping_add(VISIT));
        assert_eq!((after & HOLDERS, after & VISITS), (held, 4 * VISIT));
        // The exclusive holder leaves: no holder, one more visit.
        let after = (v | EXCLUSIVE).wrapping_add(EXCLUSIVE.wrapping_neg().wrapping_add(VISIT));
        assert_eq!((after & HOLDERS, after & VISITS), (0, 4 * VISIT));
        // The fields do not overlap and cover the word.
        assert_eq!(HOLDERS & VISITS, 0);
        assert_eq!(HOLDERS | VISITS, u64::MAX);
    }
}
