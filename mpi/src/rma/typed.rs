//! The Rust face of one-sided communication: a [`Window`] of `T`s that
//! owns its memory, whose operations exist only on the guard of an
//! epoch — a put outside an epoch does not compile:
//!
//! ```compile_fail
//! # fn f(w: &mut mpi::rma::Window<i32>) -> mpi::Result<()> {
//! w.put(1, 0, &[1, 2, 3])?; // no such method: open an epoch first
//! # Ok(()) }
//! ```
//!
//! ```no_run
//! # fn main() -> mpi::Result<()> {
//! use mpi::rma::{LockType, Window};
//! use mpi::traits::*;
//! let universe = mpi::initialize()?;
//! let world = universe.world();
//! let mut w = Window::<u64>::allocate(&world, 4)?;
//! {
//!     let mut e = w.lock(0, LockType::Shared)?;
//!     let before = e.fetch_and_op(0, 0, 1, mpi::SystemOperation::Sum)?;
//!     e.unlock()?;
//!     println!("ticket {before}");
//! }
//! w.free()
//! # }
//! ```
//!
//! Puts copy their data; gets, fetches and swaps wait for their result,
//! so no buffer is borrowed past the call and forgetting a guard
//! (`mem::forget`) can only leave an epoch open, never memory written
//! after its owner let go. The window's own memory is reached through
//! [`Window::local`], which holds incoming operations back while the
//! slice is out.

use std::any::TypeId;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

use super::raw::{RawWindow, Target};
use super::{AccOp, Assert, LockType, Model};
use crate::comm::SimpleCommunicator;
use crate::datatype::typemap::Typemap;
use crate::datatype::Equivalence;
use crate::staged::reduce::Elem;
use crate::staged::Span;
use crate::{MpiError, Rank, Result, SystemOperation};

/// A window of `len` elements of `T` at each process, owned by the
/// library (`MPI_Win_allocate` with `disp_unit = size_of::<T>()`):
/// displacements count elements.
pub struct Window<T: Equivalence> {
    raw: RawWindow,
    len: usize,
    _t: PhantomData<T>,
}

/// The element type of `T` for accumulates and atomics.
fn elem_of<T: 'static>() -> Result<Elem> {
    let t = TypeId::of::<T>();
    let table: [(TypeId, Elem); 10] = [
        (TypeId::of::<i8>(), Elem::I8),
        (TypeId::of::<u8>(), Elem::U8),
        (TypeId::of::<i16>(), Elem::I16),
        (TypeId::of::<u16>(), Elem::U16),
        (TypeId::of::<i32>(), Elem::I32),
        (TypeId::of::<u32>(), Elem::U32),
        (TypeId::of::<i64>(), Elem::I64),
        (TypeId::of::<u64>(), Elem::U64),
        (TypeId::of::<f32>(), Elem::F32),
        (TypeId::of::<f64>(), Elem::F64),
    ];
    table
        .iter()
        .find(|(id, _)| *id == t)
        .map(|(_, e)| *e)
        .ok_or_else(|| MpiError::Op(crate::error::OpError::NotANumber { type_name: std::any::type_name::<T>() }))
}

/// Alignment of a window's memory at its process (`RawWindow`'s blocks).
const WINDOW_ALIGN: usize = 64;

/// Refuse an element type aligned to more than the window's memory:
/// [`Window::local`] hands the elements out as `&[T]`, which must be
/// aligned for `T`.
fn aligned_enough<T>() -> Result<()> {
    let align = std::mem::align_of::<T>();
    if align > WINDOW_ALIGN {
        return Err(
            crate::error::ArgError::WindowAlign { ty: std::any::type_name::<T>(), align, most: WINDOW_ALIGN }.into()
        );
    }
    Ok(())
}

impl<T: Equivalence> Window<T> {
    /// Allocate `len` zeroed elements at this process (collective over
    /// `comm`; each process may give another `len`).
    pub fn allocate(comm: &SimpleCommunicator, len: usize) -> Result<Window<T>> {
        Window::allocate_with(comm, len, None)
    }

    /// [`Window::allocate`] in the memory model `model` asks for (`None`:
    /// the default, unified unless `DN_RMA` says otherwise). `Separate`
    /// puts the public copies on the card, where the transport has one:
    /// a passive-target epoch then needs nothing of its target's CPU.
    pub fn allocate_with(comm: &SimpleCommunicator, len: usize, model: Option<Model>) -> Result<Window<T>> {
        aligned_enough::<T>()?;
        let sz = std::mem::size_of::<T>();
        let bytes = len.checked_mul(sz).ok_or(MpiError::WinSize(crate::error::WinSizeError::Elements { len }))?;
        let raw = RawWindow::allocate_with(comm, bytes as u64, sz.max(1) as u32, model)?;
        Ok(Window { raw, len, _t: PhantomData })
    }

    /// Elements at this process.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether this process's part is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// This process's elements, for local loads and stores: operations
    /// that arrive meanwhile wait until the guard is dropped (MPI 4.1
    /// §12.7: local accesses and remote updates of the same memory must
    /// not overlap). Taking and dropping the guard synchronise the
    /// window's copies (`MPI_Win_sync`).
    pub fn local(&mut self) -> Result<Local<'_, T>> {
        // Where the card holds the public copy (the separate model), the
        // private copy is made to agree with it first (`MPI_Win_sync`), and
        // again when the guard goes, so that local stores become public.
        self.raw.sync()?;
        let flag = self.raw.local_flag().clone();
        // Set under the library's lock: no progress pass is writing now.
        let g = self.raw.communicator().shared().borrow_mut();
        flag.store(true, Ordering::Release);
        drop(g);
        Ok(Local { w: self })
    }

    /// `MPI_Win_fence` (collective): an epoch in which every process may
    /// access every other; [`FenceEpoch::end`] ends it with the next fence.
    pub fn fence(&mut self) -> Result<FenceEpoch<'_, T>> {
        self.raw.fence(Assert::default())?;
        Ok(FenceEpoch { w: self })
    }

    /// `MPI_Win_lock`: a passive-target epoch at `rank`.
    pub fn lock(&mut self, rank: Rank, kind: LockType) -> Result<LockEpoch<'_, T>> {
        self.raw.lock(kind, rank, Assert::default())?;
        Ok(LockEpoch { w: self, rank: Some(rank), open: true })
    }

    /// `MPI_Win_lock_all`: a shared passive-target epoch at every process.
    pub fn lock_all(&mut self) -> Result<LockEpoch<'_, T>> {
        self.raw.lock_all(Assert::default())?;
        Ok(LockEpoch { w: self, rank: None, open: true })
    }

    /// `MPI_Win_start`: an access epoch to `group` (window ranks), once
    /// each has posted.
    pub fn start(&mut self, group: &[Rank]) -> Result<StartEpoch<'_, T>> {
        self.raw.start(group, Assert::default())?;
        Ok(StartEpoch { w: self, open: true })
    }

    /// `MPI_Win_post`: expose this process's elements to `group`;
    /// [`Exposure::wait`] ends it once they all completed.
    pub fn post(&mut self, group: &[Rank]) -> Result<Exposure<'_, T>> {
        self.raw.post(group, Assert::default())?;
        Ok(Exposure { w: self, open: true })
    }

    /// `MPI_Win_free` (collective).
    pub fn free(self) -> Result<()> {
        self.raw.free()
    }

    fn put(&mut self, rank: Rank, disp: usize, data: &[T]) -> Result<()> {
        let layout = Typemap::of::<T>();
        let t = Target { rank, disp: disp as i64, layout: &layout, count: data.len() };
        let span = Span::bytes(std::mem::size_of_val(data));
        // SAFETY: `data` is the span's `size_of_val(data)` bytes, borrowed (so readable and
        // unmodified) for this call, which copies or sends them before returning: what `put` asks.
        unsafe { self.raw.put(data.as_ptr().cast(), &span, &t) }
    }

    fn get(&mut self, rank: Rank, disp: usize, out: &mut [T]) -> Result<()> {
        let layout = Typemap::of::<T>();
        let t = Target { rank, disp: disp as i64, layout: &layout, count: out.len() };
        let span = Span::bytes(std::mem::size_of_val(out));
        // SAFETY: `out`'s `size_of_val(out)` bytes are mutably borrowed for this call, so writable and
        // reached by nothing else; `settle_or_forget` below waits for the reply or, on any error,
        // makes the window forget the buffer, so the borrow outlasts the result's placing, as `get`
        // asks.
        let r = unsafe { self.raw.get(out.as_mut_ptr().cast(), &span, &t) };
        self.settle_or_forget(r)
    }

    /// Wait for the request of a call whose result goes into a buffer
    /// borrowed only for the call; if waiting fails, the window forgets
    /// every such buffer, so that a late reply is never written.
    fn settle_or_forget(&mut self, r: Result<super::Issued>) -> Result<()> {
        match r.and_then(|op| self.raw.request(op).wait()) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.raw.forget_reply_buffers();
                Err(e)
            }
        }
    }

    fn accumulate(&mut self, rank: Rank, disp: usize, data: &[T], op: SystemOperation) -> Result<()>
    where
        T: 'static,
    {
        let elem = elem_of::<T>()?;
        let layout = Typemap::of::<T>();
        let t = Target { rank, disp: disp as i64, layout: &layout, count: data.len() };
        let span = Span::bytes(std::mem::size_of_val(data));
        // SAFETY: `data` is the span's `size_of_val(data)` bytes, borrowed (so readable and
        // unmodified) for this call, which copies or sends them before returning: what `accumulate`
        // asks.
        unsafe { self.raw.accumulate(data.as_ptr().cast(), &span, &t, elem, AccOp::System(op)) }
    }

    fn fetch(&mut self, rank: Rank, disp: usize, value: T, op: AccOp) -> Result<T>
    where
        T: 'static,
    {
        let elem = elem_of::<T>()?;
        let layout = Typemap::of::<T>();
        let t = Target { rank, disp: disp as i64, layout: &layout, count: 1 };
        let span = Span::bytes(std::mem::size_of::<T>());
        let mut out = T::zeroed();
        let v = [value];
        // SAFETY: `v` is one `T`, the span's `size_of::<T>()` bytes, readable and unmodified for the
        // call; `out`, a local `T` of the same size, is reached only by the window until
        // `settle_or_forget` below has waited for the reply or made the window forget it: what
        // `get_accumulate` asks.
        let r = unsafe {
            self.raw.get_accumulate(v.as_ptr().cast(), &span, (&mut out as *mut T).cast(), &span, &t, elem, op)
        };
        self.settle_or_forget(r)?;
        Ok(out)
    }

    fn swap(&mut self, rank: Rank, disp: usize, compare: T, new: T) -> Result<T>
    where
        T: 'static,
    {
        let elem = elem_of::<T>()?;
        let mut out = T::zeroed();
        let (c, n) = ([compare], [new]);
        // SAFETY: `c` and `n` are one `T` each, `elem.size() == size_of::<T>()` bytes, readable and
        // unmodified for the call; `out`, a local `T`, is reached only by the window until
        // `settle_or_forget` below has waited for the reply or made the window forget it: what
        // `compare_and_swap` asks.
        let r = unsafe {
            self.raw.compare_and_swap(
                n.as_ptr().cast(),
                c.as_ptr().cast(),
                (&mut out as *mut T).cast(),
                elem,
                rank,
                disp as i64,
            )
        };
        self.settle_or_forget(r)?;
        Ok(out)
    }
}

/// This process's elements, out for local access ([`Window::local`]).
pub struct Local<'w, T: Equivalence> {
    w: &'w mut Window<T>,
}

impl<T: Equivalence> std::ops::Deref for Local<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if self.w.len == 0 {
            return &[];
        }
        // SAFETY: `base()` is the `Storage::Owned` block `allocate_with` made for `len` elements of `T`,
        // zeroed and since written only with whole bytes, so `len` valid `T`s (`T` is `Pod`); the
        // window keeps it while `self.w` is borrowed. Incoming operations are held back while this
        // guard lives (the flag set under the library's lock), so nothing writes it meanwhile. The
        // block is 64-byte aligned and `allocate_with` refused any `T` aligned to more.
        unsafe { std::slice::from_raw_parts(self.w.raw.base().cast::<T>(), self.w.len) }
    }
}

impl<T: Equivalence> std::ops::DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.w.len == 0 {
            return &mut [];
        }
        // SAFETY: the same `len` valid, aligned `T`s as `deref`'s, held back from incoming operations;
        // `&mut self` borrows the guard exclusively, so this slice is the only
        // reference to them while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.w.raw.base().cast::<T>(), self.w.len) }
    }
}

impl<T: Equivalence> Drop for Local<'_, T> {
    fn drop(&mut self) {
        let flag = self.w.raw.local_flag().clone();
        let g = self.w.raw.communicator().shared().borrow_mut();
        flag.store(false, Ordering::Release);
        drop(g);
        // Local stores out to the public copy (an error here shows at the
        // window's next call).
        let _ = self.w.raw.sync();
    }
}

/// The operations every epoch guard offers.
macro_rules! operations {
    ($guard:ident) => {
        impl<T: Equivalence + 'static> $guard<'_, T> {
            /// `MPI_Put`: `data` to `rank`'s elements from `disp` on (copied now).
            pub fn put(&mut self, rank: Rank, disp: usize, data: &[T]) -> Result<()> {
                self.w.put(rank, disp, data)
            }

            /// `MPI_Get`: `rank`'s elements from `disp` on into `out`
            /// (waits for them).
            pub fn get(&mut self, rank: Rank, disp: usize, out: &mut [T]) -> Result<()> {
                self.w.get(rank, disp, out)
            }

            /// `MPI_Accumulate`: combine `data` into `rank`'s elements with `op`.
            pub fn accumulate(&mut self, rank: Rank, disp: usize, data: &[T], op: SystemOperation) -> Result<()> {
                self.w.accumulate(rank, disp, data, op)
            }

            /// `MPI_Fetch_and_op`: `rank`'s element at `disp` before `op`
            /// combined `value` into it, atomically.
            pub fn fetch_and_op(&mut self, rank: Rank, disp: usize, value: T, op: SystemOperation) -> Result<T> {
                self.w.fetch(rank, disp, value, AccOp::System(op))
            }

            /// `MPI_Fetch_and_op` with `MPI_REPLACE`: swap in `value`.
            pub fn swap(&mut self, rank: Rank, disp: usize, value: T) -> Result<T> {
                self.w.fetch(rank, disp, value, AccOp::Replace)
            }

            /// `MPI_Compare_and_swap`: `rank`'s element at `disp`, which
            /// became `new` if it was `compare`.
            pub fn compare_and_swap(&mut self, rank: Rank, disp: usize, compare: T, new: T) -> Result<T> {
                self.w.swap(rank, disp, compare, new)
            }
        }
    };
}

/// An epoch between two fences ([`Window::fence`]).
pub struct FenceEpoch<'w, T: Equivalence> {
    w: &'w mut Window<T>,
}

impl<T: Equivalence> FenceEpoch<'_, T> {
    /// The next fence (collective): every operation of the epoch is
    /// complete everywhere, and no new epoch starts.
    pub fn end(self) -> Result<()> {
        self.w.raw.fence(Assert { nosucceed: true, ..Assert::default() })
    }

    /// The next fence, which starts another epoch at once.
    pub fn fence(&mut self) -> Result<()> {
        self.w.raw.fence(Assert::default())
    }
}

operations!(FenceEpoch);

/// A passive-target epoch ([`Window::lock`], [`Window::lock_all`]);
/// dropping it unlocks (reporting nothing: call [`LockEpoch::unlock`]
/// to see errors).
pub struct LockEpoch<'w, T: Equivalence> {
    w: &'w mut Window<T>,
    rank: Option<Rank>,
    open: bool,
}

impl<T: Equivalence> LockEpoch<'_, T> {
    /// `MPI_Win_flush` (or `_flush_all`): every operation so far is
    /// complete at its target.
    pub fn flush(&mut self) -> Result<()> {
        self.w.raw.flush(self.rank)
    }

    /// `MPI_Win_unlock` (or `_unlock_all`).
    pub fn unlock(mut self) -> Result<()> {
        self.open = false;
        match self.rank {
            Some(r) => self.w.raw.unlock(r),
            None => self.w.raw.unlock_all(),
        }
    }
}

impl<T: Equivalence> Drop for LockEpoch<'_, T> {
    fn drop(&mut self) {
        if self.open {
            let _ = match self.rank {
                Some(r) => self.w.raw.unlock(r),
                None => self.w.raw.unlock_all(),
            };
        }
    }
}

operations!(LockEpoch);

/// An access epoch of general active-target synchronisation
/// ([`Window::start`]); dropping it completes (call
/// [`StartEpoch::complete`] to see errors).
pub struct StartEpoch<'w, T: Equivalence> {
    w: &'w mut Window<T>,
    open: bool,
}

impl<T: Equivalence> StartEpoch<'_, T> {
    /// `MPI_Win_complete`.
    pub fn complete(mut self) -> Result<()> {
        self.open = false;
        self.w.raw.complete()
    }
}

impl<T: Equivalence> Drop for StartEpoch<'_, T> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.w.raw.complete();
        }
    }
}

operations!(StartEpoch);

/// An exposure epoch ([`Window::post`]); dropping it waits (call
/// [`Exposure::wait`] to see errors).
pub struct Exposure<'w, T: Equivalence> {
    w: &'w mut Window<T>,
    open: bool,
}

impl<T: Equivalence> Exposure<'_, T> {
    /// `MPI_Win_start` inside this exposure epoch: an access epoch to
    /// `group` (a process may expose its window and access others' at
    /// once, §12.5.2).
    pub fn start(&mut self, group: &[Rank]) -> Result<StartEpoch<'_, T>> {
        self.w.start(group)
    }

    /// `MPI_Win_wait`: every origin of the group has completed.
    pub fn wait(mut self) -> Result<()> {
        self.open = false;
        self.w.raw.wait_exposure()
    }

    /// `MPI_Win_test`: whether every origin has completed (then the
    /// epoch is over and the guard should be dropped).
    pub fn test(&mut self) -> Result<bool> {
        let done = self.w.raw.test_exposure()?;
        self.open &= !done;
        Ok(done)
    }
}

impl<T: Equivalence> Drop for Exposure<'_, T> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.w.raw.wait_exposure();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_element_type_aligned_past_the_window_memory_is_refused() {
        #[repr(C, align(128))]
        struct Wide([u8; 128]);
        assert!(super::aligned_enough::<u64>().is_ok());
        assert!(super::aligned_enough::<[u8; 64]>().is_ok());
        let e = super::aligned_enough::<Wide>().unwrap_err().to_string();
        assert!(e.contains("aligned to 128 bytes"), "{e}");
    }
}
