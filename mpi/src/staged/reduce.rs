//! Reductions on buffers given as raw pointers (MPI 4.1 §6.9-6.11,
//! non-blocking §6.12): the element type is chosen at run time ([`Elem`],
//! the predefined datatypes the library reduces), the operation by the
//! caller ([`AnyOperation`]: a predefined one, or one built per element
//! type, as the C ABI's user functions are), and `MPI_IN_PLACE` follows
//! the standard's rule for each call.

use std::borrow::Cow;
use std::sync::Arc;

use super::{incoming, outgoing, Span, Staged, Unpack};
use crate::coll::{
    reduce_local_into, CommunicatorCollectives, Operation, Reducible, Root, SystemOperation, ValueIndex,
};
use crate::comm::{Communicator, SimpleCommunicator};
use crate::datatype::{Equivalence, Typemap};
use crate::error::{BufferError, SignatureError};
use crate::inter::InterRoot;
use crate::{Rank, Result};

/// The element type of a reduction: the predefined datatypes this library
/// reduces, by their Rust type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// `i8` (`MPI_SIGNED_CHAR`, `MPI_CHAR`, `MPI_INT8_T`, ...).
    I8,
    /// `u8` (`MPI_UNSIGNED_CHAR`, `MPI_BYTE`, `MPI_C_BOOL`, ...).
    U8,
    /// `i16`.
    I16,
    /// `u16`.
    U16,
    /// `i32` (`MPI_INT`, `MPI_LOGICAL`, ...).
    I32,
    /// `u32`.
    U32,
    /// `i64` (`MPI_LONG`, `MPI_AINT`, `MPI_COUNT`, ...).
    I64,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// A pair of `i32` for `MAXLOC`/`MINLOC` (`MPI_2INT`).
    Int2,
    /// An `f32` and an `i32` index (`MPI_FLOAT_INT`).
    FloatInt,
    /// An `f64` and an `i32` index, padded as C pads it (`MPI_DOUBLE_INT`).
    DoubleInt,
    /// An `i64` and an `i32` index, padded (`MPI_LONG_INT`).
    LongInt,
    /// An `i16` and an `i32` index, padded (`MPI_SHORT_INT`).
    ShortInt,
    /// Two `f32` (`MPI_2REAL`).
    Real2,
    /// Two `f64` (`MPI_2DOUBLE_PRECISION`).
    Double2,
    /// A complex of two `f32` (`MPI_C_FLOAT_COMPLEX`, `MPI_COMPLEX`).
    C32,
    /// A complex of two `f64` (`MPI_C_DOUBLE_COMPLEX`, `MPI_DOUBLE_COMPLEX`).
    C64,
    /// C's `long double` (`MPI_LONG_DOUBLE`): x87 extended, 16 bytes.
    LongDouble,
    /// A `long double` and an `i32` index, padded (`MPI_LONG_DOUBLE_INT`).
    LongDoubleInt,
    /// A complex of two `long double` (`MPI_C_LONG_DOUBLE_COMPLEX`).
    C80,
}

/// Run `$body` with `$T` the Rust type of element kind `$e`.
macro_rules! with_elem {
    ($e:expr, $T:ident => $body:expr) => {
        with_elem!(@ $e, $T, $body; I8: i8, U8: u8, I16: i16, U16: u16, I32: i32, U32: u32, I64: i64, U64: u64,
            F32: f32, F64: f64, Int2: ValueIndex<i32, i32>, FloatInt: ValueIndex<f32, i32>,
            DoubleInt: crate::coll::op::DoubleInt, LongInt: crate::coll::op::LongInt,
            ShortInt: crate::coll::op::ShortInt, Real2: ValueIndex<f32, f32>, Double2: ValueIndex<f64, f64>,
            C32: crate::coll::op::Complex<f32>, C64: crate::coll::op::Complex<f64>,
            LongDouble: crate::coll::op::LongDouble, LongDoubleInt: crate::coll::op::LongDoubleInt,
            C80: crate::coll::op::Complex<crate::coll::op::LongDouble>)
    };
    (@ $e:expr, $T:ident, $body:expr; $($v:ident: $t:ty),*) => {
        match $e {
            $(Elem::$v => {
                type $T = $t;
                $body
            })*
        }
    };
}

impl Elem {
    /// Bytes per element.
    pub fn size(self) -> usize {
        with_elem!(self, T => std::mem::size_of::<T>())
    }
}

impl Elem {
    /// For a `(value, index)` pair whose C struct has padding
    /// (`MPI_DOUBLE_INT`, `MPI_LONG_INT`, `MPI_SHORT_INT`,
    /// `MPI_LONG_DOUBLE_INT`): the value's bytes and the padding after it.
    /// A datatype's data holds such a pair packed — the value, then the
    /// 4-byte index — as its type map says (§5.1.3), not as the struct.
    pub fn padded_pair(self) -> Option<(usize, usize)> {
        match self {
            Elem::DoubleInt | Elem::LongInt => Some((8, 0)),
            Elem::ShortInt => Some((2, 2)),
            Elem::LongDoubleInt => Some((16, 0)),
            _ => None,
        }
    }

    /// Bytes of one element in a datatype's packed data: [`Elem::size`]
    /// less the padding of a padded pair.
    pub fn packed_size(self) -> usize {
        self.padded_pair().map_or(self.size(), |(v, _)| v + 4)
    }

    /// [`Elem::combine`] on packed elements ([`Elem::packed_size`] bytes
    /// each): what the data of an accumulate's datatypes holds. A padded
    /// pair is laid out as its struct for the operation and packed again.
    pub fn combine_packed(self, op: SystemOperation, src: &[u8], acc: &mut [u8]) -> Result<()> {
        let Some((v, pad)) = self.padded_pair() else { return self.combine(op, src, acc) };
        let (p, n) = (v + 4, self.size());
        if src.len() != acc.len() || src.len() % p != 0 {
            return Err(SignatureError::Runs { a: src.len(), b: acc.len(), elem: p, packed: true }.into());
        }
        let widen = |packed: &[u8]| {
            let mut out = vec![0u8; packed.len() / p * n];
            for (w, k) in out.chunks_exact_mut(n).zip(packed.chunks_exact(p)) {
                w[..v].copy_from_slice(&k[..v]);
                w[v + pad..v + pad + 4].copy_from_slice(&k[v..]);
            }
            out
        };
        let wide_src = widen(src);
        let mut wide_acc = widen(acc);
        self.combine(op, &wide_src, &mut wide_acc)?;
        for (w, k) in wide_acc.chunks_exact(n).zip(acc.chunks_exact_mut(p)) {
            k[..v].copy_from_slice(&w[..v]);
            k[v..].copy_from_slice(&w[v + pad..v + pad + 4]);
        }
        Ok(())
    }

    /// `acc = src ⊕ acc` on bytes holding whole elements of this type
    /// (any alignment), with a predefined operation: the combining step of
    /// `MPI_Accumulate` at a target (MPI 4.1 §12.3.4). An error names the
    /// pair if MPI does not define the operation on the type.
    pub fn combine(self, op: SystemOperation, src: &[u8], acc: &mut [u8]) -> Result<()> {
        if src.len() != acc.len() || src.len() % self.size() != 0 {
            return Err(SignatureError::Runs { a: src.len(), b: acc.len(), elem: self.size(), packed: false }.into());
        }
        with_elem!(self, T => {
            let o = Operation::system::<T>(op)?;
            (o.f)(src, acc);
            Ok(())
        })
    }
}

/// A reduction operation for every element type of [`Elem`].
pub trait AnyOperation {
    /// The operation on elements of `T`.
    fn on<T: Reducible>(&self) -> Result<Operation>;
}

impl AnyOperation for SystemOperation {
    fn on<T: Reducible>(&self) -> Result<Operation> {
        Operation::system::<T>(*self)
    }
}

/// A reduction's send argument.
#[derive(Clone, Copy)]
pub enum Input {
    /// `MPI_IN_PLACE`: the data is in the receive buffer (where the call
    /// allows it).
    InPlace,
    /// Elements at this address.
    At(*const u8),
}

/// `count` elements of `T` at `p`, checked for null and alignment.
///
/// # Safety
/// When `count > 0`, the `count * size_of::<T>()` bytes at `p` are readable and not written by
/// anyone for the lifetime `'a` chosen.
unsafe fn elems<'a, T: Equivalence>(p: *const u8, count: usize, what: &str) -> Result<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(BufferError::Misaligned { what: what.into() }.into());
    }
    // SAFETY: `p` is non-null and aligned for `T` (checked above), and its `count` elements are
    // readable and unmodified for `'a` (`# Safety`); any bytes are a valid `T` (it is `Pod`).
    Ok(unsafe { std::slice::from_raw_parts(p.cast(), count) })
}

/// `count` writable elements of `T` at `p`, checked for null and alignment.
///
/// # Safety
/// When `count > 0`, the `count * size_of::<T>()` bytes at `p` are writable and not otherwise
/// accessed (read or written) for the lifetime `'a` chosen.
unsafe fn elems_mut<'a, T: Equivalence>(p: *mut u8, count: usize, what: &str) -> Result<&'a mut [T]> {
    if count == 0 {
        return Ok(&mut []);
    }
    if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(BufferError::Misaligned { what: what.into() }.into());
    }
    // SAFETY: `p` is non-null and aligned for `T` (checked above), and its `count` elements are
    // writable and reached only through this slice for `'a` (`# Safety`); any bytes are a valid `T`.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), count) })
}

/// The elements a reduction sends (the collectives copy them when they
/// start): `n` at the send buffer, or with `MPI_IN_PLACE` (where
/// `in_place_ok`) a copy of the receive buffer's, taken before the
/// receive buffer is handed out (§6.9.3).
///
/// # Safety
/// When `n > 0`: with [`Input::At`], its `n` elements of `T` are readable and unmodified for
/// the lifetime `'a` chosen; with [`Input::InPlace`] where `in_place_ok`, `recv`'s `n` elements
/// are readable now (they are copied).
unsafe fn sent<'a, T: Equivalence>(send: Input, recv: *const u8, n: usize, in_place_ok: bool) -> Result<Cow<'a, [T]>> {
    // SAFETY: `elems` is called only when `n > 0`: on `recv`, readable now and copied at once
    // (`to_vec`), or on the send buffer, readable and unmodified for `'a` (`# Safety`); `elems`
    // checks null and alignment.
    unsafe {
        Ok(match send {
            // Nothing is read: a zero count takes any send argument.
            _ if n == 0 => Cow::Borrowed(&[]),
            Input::InPlace if in_place_ok => Cow::Owned(elems::<T>(recv, n, "recvbuf")?.to_vec()),
            Input::InPlace => return Err(BufferError::InPlace { place: "here" }.into()),
            Input::At(p) => Cow::Borrowed(elems::<T>(p, n, "sendbuf")?),
        })
    }
}

/// `MPI_Ireduce` (§6.9.1): `count` elements from everyone, combined at
/// the root into `recv` (significant there only); `MPI_IN_PLACE` at the
/// root.
///
/// # Safety
/// With [`Input::At`], the send buffer's `count` elements of `elem` are readable for this call
/// (the collective copies them). At the root, `recv`'s `count` elements are readable now with
/// [`Input::InPlace`], stay writable and not otherwise accessed until the returned operation
/// completes or is dropped, and do not overlap the send buffer.
pub unsafe fn ireduce(
    c: &SimpleCommunicator,
    root: Rank,
    elem: Elem,
    send: Input,
    recv: *mut u8,
    count: usize,
    op: &impl AnyOperation,
) -> Result<Staged> {
    let root = super::coll::root_of(c, root)?;
    let at_root = c.rank() == root;
    let p = c.process_at_rank(root);
    with_elem!(elem, T => {
        let op = op.on::<T>()?;
        // SAFETY: `sent` reads the send buffer's `count` elements, readable for this call, or in
        // place at the root `recv`'s, readable now (`# Safety`); `s` is used only by the call
        // below, which copies it.
        let s = unsafe { sent::<T>(send, recv, count, at_root)? };
        Ok(Staged::plain(if at_root {
            // SAFETY: at the root, `recv`'s `count` elements stay writable and untouched until the
            // operation completes or is dropped (`# Safety`), which is as long as the `'static`
            // slice is used; they do not overlap the send buffer `s` may borrow.
            let into: &'static mut [T] = unsafe { elems_mut::<T>(recv, count, "recvbuf")? };
            p.immediate_reduce_into_root(&s, into, &op)?
        } else {
            p.immediate_reduce_into(&s, &op)?
        }))
    })
}

/// The reductions in which every process sends and receives `count`
/// elements (§6.9.6, §6.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Everyone {
    /// `MPI_Iallreduce`.
    Allreduce,
    /// `MPI_Iscan`.
    Scan,
    /// `MPI_Iexscan`.
    Exscan,
}

/// `MPI_Iallreduce`, `MPI_Iscan`, `MPI_Iexscan`; `MPI_IN_PLACE` anywhere.
///
/// # Safety
/// With [`Input::At`], the send buffer's `count` elements of `elem` are readable for this call
/// (the collective copies them) and do not overlap `recv`'s. `recv`'s `count` elements are
/// readable now with [`Input::InPlace`], and stay writable and not otherwise accessed until the
/// returned operation completes or is dropped.
pub unsafe fn ieveryone(
    c: &SimpleCommunicator,
    kind: Everyone,
    elem: Elem,
    send: Input,
    recv: *mut u8,
    count: usize,
    op: &impl AnyOperation,
) -> Result<Staged> {
    with_elem!(elem, T => {
        let op = op.on::<T>()?;
        // SAFETY: `sent` reads the send buffer's `count` elements, readable for this call, or in
        // place `recv`'s, readable now (`# Safety`); `s` is used only by the call below, which
        // copies it.
        let s = unsafe { sent::<T>(send, recv, count, true)? };
        // SAFETY: `recv`'s `count` elements stay writable and untouched until the operation completes
        // or is dropped (`# Safety`), as long as the `'static` slice is used; they do not overlap the
        // send buffer `s` may borrow.
        let into: &'static mut [T] = unsafe { elems_mut::<T>(recv, count, "recvbuf")? };
        Ok(Staged::plain(match kind {
            Everyone::Allreduce => c.immediate_all_reduce_into(&s, into, &op)?,
            Everyone::Scan => c.immediate_scan_into(&s, into, &op)?,
            Everyone::Exscan => c.immediate_exclusive_scan_into(&s, into, &op)?,
        }))
    })
}

/// `MPI_Ireduce_scatter_block` (§6.10.2): `count` elements per process
/// sent (in `recv` with `MPI_IN_PLACE`), this process's block received.
///
/// # Safety
/// With [`Input::At`], the send buffer's `count` elements per process are readable for this
/// call (the collective copies them) and do not overlap `recv`'s; with [`Input::InPlace`],
/// `recv`'s `count` elements per process are readable now. `recv`'s first `count` elements stay
/// writable and not otherwise accessed until the returned operation completes or is dropped.
pub unsafe fn ireduce_scatter_block(
    c: &SimpleCommunicator,
    elem: Elem,
    send: Input,
    recv: *mut u8,
    count: usize,
    op: &impl AnyOperation,
) -> Result<Staged> {
    let total = count * c.size() as usize;
    with_elem!(elem, T => {
        let op = op.on::<T>()?;
        // SAFETY: `sent` reads `total` elements of the send buffer, readable for this call, or in
        // place of `recv`, readable now (`# Safety`); `s` is used only by the call below, which
        // copies it.
        let s = unsafe { sent::<T>(send, recv, total, true)? };
        // SAFETY: `recv`'s first `count` elements stay writable and untouched until the operation
        // completes or is dropped (`# Safety`), as long as the `'static` slice is used; they do not
        // overlap the send buffer `s` may borrow.
        let into: &'static mut [T] = unsafe { elems_mut::<T>(recv, count, "recvbuf")? };
        Ok(Staged::plain(c.immediate_reduce_scatter_block_into(&s, into, &op)?))
    })
}

/// `MPI_Ireduce_scatter` (§6.10.1): the all-reduce of everyone's
/// `sum(counts)` elements into a whole the operation owns, of which this
/// process copies out its block at completion.
///
/// # Safety
/// With [`Input::At`], the send buffer's `sum(counts)` elements are readable for this call
/// (they are copied) and do not overlap `recv`'s; with [`Input::InPlace`], `recv`'s
/// `sum(counts)` elements are readable now. `recv`'s first `counts[rank]` elements stay writable
/// and not otherwise accessed until the returned operation completes or is dropped.
pub unsafe fn ireduce_scatter(
    c: &SimpleCommunicator,
    elem: Elem,
    send: Input,
    recv: *mut u8,
    counts: &[usize],
    op: &impl AnyOperation,
) -> Result<Staged> {
    let total: usize = counts.iter().sum();
    let me = c.rank() as usize;
    let (from, mine) = (counts[..me].iter().sum::<usize>(), counts[me]);
    with_elem!(elem, T => {
        let op = op.on::<T>()?;
        // SAFETY: `sent` reads `total` elements of the send buffer, readable for this call, or in
        // place of `recv`, readable now (`# Safety`); `s` is copied into `all` and by the call
        // below, and not kept.
        let s = unsafe { sent::<T>(send, recv, total, true)? };
        // SAFETY: `recv`'s `mine` elements stay writable and untouched until the operation completes
        // or is dropped (`# Safety`); the slice is written only by the `then` below, at completion,
        // and does not overlap the send buffer `s` may borrow.
        let into: &'static mut [T] = unsafe { elems_mut::<T>(recv, mine, "recvbuf")? };
        let mut all = s.to_vec();
        // SAFETY: `whole` is `all`'s `total` initialized heap elements (`all` copies `s`, of `total`),
        // which stay put when `all` moves into the `then` below; the operation keeps `then` in its
        // stage, dropped after the request (which waits), and `then` reads `all` only after
        // completion, so `whole` is `all`'s only access while the reduction writes it.
        let whole: &'static mut [T] = unsafe { std::slice::from_raw_parts_mut(all.as_mut_ptr(), total) };
        let mut a = Staged::plain(c.immediate_all_reduce_into(&s, whole, &op)?);
        a.stage.then = Some(Box::new(move || into.copy_from_slice(&all[from..from + mine])));
        Ok(a)
    })
}

/// A reduction on a derived datatype (MPI 4.1 §6.9.2 allows any datatype
/// its operation is defined on): `run` reduces packed copies, and the
/// result is unpacked into the caller's elements at completion.
///
/// `send_n` elements of `layout` are read from `send` now (none where the
/// call reads nothing there); `recv_n` are packed from `recv` now (for
/// `MPI_IN_PLACE` and the values a scan keeps) and written back when the
/// returned operation completes. `run` gets the packed send argument and
/// the packed receive buffer, and reduces them as elements of the
/// predefined type the datatype is made of, or as packed datatype elements
/// with a user operation.
///
/// # Safety
/// With [`Input::At`], every block of the `send_n` elements of `layout` at its address is
/// readable for this call; every block of the `recv_n` elements of `layout` at `recv` is
/// readable now, and stays writable and not otherwise accessed until the returned operation
/// completes or is dropped. (The pointers `run` gets stay valid until the operation it returns
/// completes: the packed send copy and the staging buffer go into its stage.)
pub unsafe fn packed(
    layout: &Arc<Typemap>,
    send: Input,
    send_n: usize,
    recv: *mut u8,
    recv_n: usize,
    run: impl FnOnce(Input, *mut u8) -> Result<Staged>,
) -> Result<Staged> {
    // SAFETY: the buffers are left as `Packed::new` asks (`# Safety`): the receive elements until
    // the operation `run` makes completes, which keeps `p.unpack` (in its `then`, below).
    let p = unsafe { Packed::new(layout, send, send_n, recv, recv_n) }?;
    let mut s = run(p.send, p.recv)?;
    s.stage.hold.extend(p.held);
    if let Some(u) = p.unpack {
        // After the operation's own completion work (MPI_Ireduce_scatter
        // copies its block into the packed buffer), unpack.
        let before = s.stage.then.take();
        s.stage.then = Some(Box::new(move || {
            if let Some(f) = before {
                f();
            }
            // SAFETY: this runs at the operation's completion (its request ended), until which the
            // caller keeps `recv`'s `recv_n` elements writable and untouched (`# Safety`).
            unsafe { u.finish(0) }
        }));
    }
    Ok(s)
}

/// [`packed`] for a reduction that completes within the call (the
/// intercommunicator ones, `MPI_Reduce_local`).
///
/// # Safety
/// With [`Input::At`], every block of the `send_n` elements of `layout` at its address is
/// readable for this call; every block of the `recv_n` elements at `recv` is readable, writable
/// and not otherwise accessed for this call.
pub unsafe fn packed_now(
    layout: &Arc<Typemap>,
    send: Input,
    send_n: usize,
    recv: *mut u8,
    recv_n: usize,
    run: impl FnOnce(Input, *mut u8) -> Result<()>,
) -> Result<()> {
    // SAFETY: the buffers are left as `Packed::new` asks for this call (`# Safety`), and `p.unpack`
    // is finished or dropped before it returns.
    let p = unsafe { Packed::new(layout, send, send_n, recv, recv_n) }?;
    run(p.send, p.recv)?;
    if let Some(u) = p.unpack {
        // SAFETY: `run` has returned, so the reduction into the staging buffer is over; `recv`'s
        // `recv_n` elements are still writable and untouched within this call (`# Safety`).
        unsafe { u.finish(0) }
    }
    drop(p.held);
    Ok(())
}

/// The packed operands of a reduction on a derived datatype.
struct Packed {
    send: Input,
    held: Option<Vec<u8>>,
    recv: *mut u8,
    unpack: Option<Unpack>,
}

impl Packed {
    /// # Safety
    /// With [`Input::At`] and `send_n > 0`, every block of the `send_n` elements of `layout` at
    /// its address is readable for this call. When `recv_n > 0`, every block of the `recv_n`
    /// elements of `layout` at `recv` is readable now, and stays writable and not otherwise
    /// accessed until the returned value's `unpack` is finished or dropped (for a direct span, for
    /// as long as its `recv` pointer is used).
    unsafe fn new(layout: &Arc<Typemap>, send: Input, send_n: usize, recv: *mut u8, recv_n: usize) -> Result<Packed> {
        let (send, held) = match send {
            Input::At(p) if send_n > 0 => {
                // SAFETY: every block of the `send_n` elements at `p` is readable for this call
                // (`# Safety`), and `into_owned` copies a direct span's bytes before it ends.
                let bytes = unsafe { outgoing(p, &Span::of(layout.clone(), send_n)?, "sendbuf") }?.into_owned();
                (Input::At(bytes.as_ptr()), Some(bytes))
            }
            other => (other, None),
        };
        if recv_n == 0 {
            return Ok(Packed { send, held, recv: std::ptr::null_mut(), unpack: None });
        }
        // SAFETY: `recv`'s `recv_n` elements are readable now (`fill`: an in-place reduction starts
        // from them), and writable and untouched until the returned `unpack` is finished or dropped
        // (`# Safety`): what `incoming` asks.
        let inc = unsafe { incoming(recv, &Span::of(layout.clone(), recv_n)?, "recvbuf", true) }?;
        Ok(Packed { send, held, recv: inc.ptr, unpack: inc.stage.map(Unpack::whole) })
    }
}

/// `MPI_Reduce_local` (§6.9.7): `inout = input op inout`, here; the
/// buffers must not overlap.
///
/// # Safety
/// `input`'s `count` elements of `elem` are readable, and `inout`'s readable, writable and not
/// otherwise accessed, for the duration of the call (their overlap is checked).
pub unsafe fn reduce_local(
    elem: Elem,
    input: *const u8,
    inout: *mut u8,
    count: usize,
    op: &impl AnyOperation,
) -> Result<()> {
    let bytes = count * elem.size();
    let (i, o) = (input as usize, inout as usize);
    if bytes > 0 && i < o + bytes && o < i + bytes {
        return Err(BufferError::ReduceLocalOverlap.into());
    }
    with_elem!(elem, T => {
        // SAFETY: `input`'s `count` elements are readable and `inout`'s writable and untouched for this
        // call (`# Safety`), and their byte ranges do not overlap (checked above), so the shared and
        // the mutable slice never alias.
        let (a, b) = unsafe { (elems::<T>(input, count, "inbuf")?, elems_mut::<T>(inout, count, "inoutbuf")?) };
        reduce_local_into(a, b, &op.on::<T>()?)
    })
}

/// `MPI_Reduce` (`root` given) and `MPI_Allreduce` on an
/// intercommunicator (§6.9.1, §6.9.6): the result is the other group's.
///
/// # Safety
/// Where significant (the send buffer unless `root` is `Here` or `Idle`; `recv` when `root` is
/// `None` or `Here`), each buffer's `count` elements of `elem` are readable (send) or writable
/// and not otherwise accessed (`recv`) for the duration of the call; the two do not overlap.
pub unsafe fn inter_reduce(
    c: &SimpleCommunicator,
    root: Option<InterRoot>,
    elem: Elem,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    op: &impl AnyOperation,
) -> Result<()> {
    with_elem!(elem, T => {
        let op = op.on::<T>()?;
        // SAFETY: `elems` and `elems_mut` are called only on the buffers significant for `root`, whose
        // `count` elements are readable (send) or writable and untouched (`recv`) for this call and
        // do not overlap (`# Safety`); both slices end with the call.
        unsafe {
            let s: &[T] = match root {
                Some(InterRoot::Here | InterRoot::Idle) => &[],
                _ => elems::<T>(send, count, "sendbuf")?,
            };
            let r: &mut [T] = match root {
                Some(InterRoot::Here) | None => elems_mut::<T>(recv, count, "recvbuf")?,
                _ => &mut [],
            };
            match root {
                Some(root) => c.inter_reduce(root, s, r, &op),
                None => c.inter_all_reduce(s, r, &op),
            }
        }
    })
}

/// `MPI_Reduce_scatter(_block)` on an intercommunicator: this group's
/// blocks of the other group's reduction (§6.11.2).
///
/// # Safety
/// The send buffer's `sum(counts)` elements of `elem` are readable, and `recv`'s `counts[rank]`
/// elements writable and not otherwise accessed, for the duration of the call; the two do not
/// overlap.
pub unsafe fn inter_reduce_scatter(
    c: &SimpleCommunicator,
    elem: Elem,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    op: &impl AnyOperation,
) -> Result<()> {
    let (total, mine) = (counts.iter().sum::<usize>(), counts[c.rank() as usize]);
    with_elem!(elem, T => {
        // SAFETY: the send buffer's `total` elements are readable and `recv`'s `mine` writable and
        // untouched for this call, and they do not overlap (`# Safety`); both slices end with it.
        let (s, r) = unsafe { (elems::<T>(send, total, "sendbuf")?, elems_mut::<T>(recv, mine, "recvbuf")?) };
        c.inter_reduce_scatter(s, r, counts, &op.on::<T>()?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MpiError;

    #[test]
    fn a_local_reduction_combines_and_refuses_overlap() {
        let (a, mut b) = ([1i32, 2, 3], [10i32, 20, 30]);
        // SAFETY: both hold three i32 for the call.
        unsafe { reduce_local(Elem::I32, a.as_ptr().cast(), b.as_mut_ptr().cast(), 3, &SystemOperation::Sum) }
            .expect("sum");
        assert_eq!(b, [11, 22, 33]);
        let p = b.as_mut_ptr().cast::<u8>();
        // SAFETY: refused before anything is read.
        let e = unsafe { reduce_local(Elem::I32, p, p, 3, &SystemOperation::Sum) };
        assert!(matches!(e, Err(MpiError::Buffer(_))));
        assert_eq!(Elem::FloatInt.size(), 8);
        // C's layouts on this ABI: {double; int} and {long; int} are 16
        // bytes, {short; int} 8, complex numbers two of their parts.
        assert_eq!((Elem::DoubleInt.size(), Elem::LongInt.size(), Elem::ShortInt.size()), (16, 16, 8));
        assert_eq!((Elem::C32.size(), Elem::C64.size(), Elem::Double2.size()), (8, 16, 16));
    }

    #[test]
    fn padded_pairs_combine_packed() {
        // MPI_SHORT_INT packed: a 2-byte value, then the 4-byte index.
        let pack = |v: i16, i: i32| [&v.to_le_bytes()[..], &i.to_le_bytes()[..]].concat();
        let src = [pack(5, 1), pack(-3, 1)].concat();
        let mut acc = [pack(4, 0), pack(-2, 0)].concat();
        assert_eq!(Elem::ShortInt.packed_size(), 6);
        Elem::ShortInt.combine_packed(SystemOperation::MaxLoc, &src, &mut acc).unwrap();
        assert_eq!(acc, [pack(5, 1), pack(-2, 0)].concat());
        // MPI_DOUBLE_INT packed: 12 bytes; a 16-byte run is not whole elements.
        let d = |v: f64, i: i32| [&v.to_le_bytes()[..], &i.to_le_bytes()[..]].concat();
        let mut acc = d(1.0, 7);
        Elem::DoubleInt.combine_packed(SystemOperation::MinLoc, &d(0.5, 9), &mut acc).unwrap();
        assert_eq!(acc, d(0.5, 9));
        assert!(Elem::DoubleInt.combine_packed(SystemOperation::MinLoc, &[0; 16], &mut [0; 16]).is_err());
        // Types without padding combine as they are.
        assert_eq!(Elem::Int2.packed_size(), Elem::Int2.size());
    }
}
