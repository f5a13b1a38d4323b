//! One-sided communication done by the card (DESIGN §6): a window's
//! **public copy lives in the target's device memory** and other ranks'
//! cards store into it (RVS), load from it (RVL) and update it atomically
//! (AMO, register map 1.3) — the target's CPU does nothing. The private
//! copy is the window's host memory; synchronisation makes the two agree
//! (MPI's separate memory model, `MPI_WIN_SEPARATE`, §12.4).
//!
//! Layout of each public copy: a 64-byte header — the passive-target lock
//! word, then the accumulate mutex — and the window's bytes.
//!
//! * **Locks** (§12.5.3) are taken by atomics on the target's lock word:
//!   exclusive is a compare-and-swap of 0 to [`EXCLUSIVE`], shared an add
//!   of 1 that is taken back if the exclusive bit was set; both retry
//!   (making a progress pass between tries) until they hold.
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

fn one_sided(e: &mut Engine) -> Result<&mut dyn adi::OneSided> {
    e.one_sided().ok_or_else(|| MpiError::Win("the transport lost its one-sided access".into()))
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
        Card { peers, me, shadow: initial.to_vec() }
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
        let d = native(elem).ok_or_else(|| MpiError::Op(format!("no compare-and-swap on {elem:?}")))?;
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
        loop {
            let got = if exclusive {
                self.amo(e, t, at, Atomic::CompareSwap { compare: 0 }, D::U64, EXCLUSIVE)? == 0
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

    /// Release what [`Card::hold`] took.
    pub(crate) fn release(&self, e: &mut Engine, t: usize, at: u64, exclusive: bool) -> Result<()> {
        use adi::offload::{Elem as D, Reduction as R};
        let minus = if exclusive { EXCLUSIVE.wrapping_neg() } else { u64::MAX };
        self.amo(e, t, at, Atomic::Reduce(R::Sum), D::U64, minus)?;
        Ok(())
    }

    /// Local stores out: the runs of bytes of the private copy that
    /// differ from the image of the last synchronisation go to the public
    /// copy, and have landed when this returns.
    ///
    /// # Safety
    /// `private` is the window's memory, `shadow.len()` bytes, readable.
    pub(crate) unsafe fn publish(&self, e: &mut Engine, private: *const u8) -> Result<()> {
        let n = self.shadow.len();
        if n == 0 {
            return Ok(());
        }
        // SAFETY: this function's contract.
        let mem = unsafe { std::slice::from_raw_parts(private, n) };
        let mut i = 0;
        while i < n {
            if mem[i] == self.shadow[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < n && mem[i] != self.shadow[i] {
                i += 1;
            }
            self.put(e, self.me, start as u64, &mem[start..i])?;
        }
        e.charge(HostCost::CopyByte, n as u64);
        self.complete(e)
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
        let mut public = std::mem::take(&mut self.shadow);
        let r = self.get(e, self.me, 0, &mut public);
        if r.is_ok() {
            // SAFETY: this function's contract.
            unsafe { std::ptr::copy_nonoverlapping(public.as_ptr(), private, n) };
            e.charge(HostCost::CopyByte, n as u64);
        }
        self.shadow = public;
        r
    }

    /// [`Card::publish`] then [`Card::refresh`]: the copies agree.
    ///
    /// # Safety
    /// As [`Card::refresh`].
    pub(crate) unsafe fn merge(&mut self, e: &mut Engine, private: *mut u8) -> Result<()> {
        // SAFETY: this function's contract covers both.
        unsafe {
            self.publish(e, private)?;
            self.refresh(e, private)
        }
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
}
