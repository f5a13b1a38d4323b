//! A reduction's arguments as a call gives them (MPI 4.1 §6.9.2): its
//! datatype, its operation and its send argument; and how the operands are
//! then reduced. A predefined datatype's elements are reduced in the
//! caller's buffers as they are; a derived datatype's are packed first
//! ([`packed`]), and reduced as elements of the one predefined type the
//! datatype is built from, or whole by a user operation (§6.9.5).

use std::sync::Arc;

use super::basis::Reduces;
use super::reduce::{packed, packed_now, AnyOperation, Elem, Input};
use super::Staged;
use crate::coll::{Operation, Reducible, SystemOperation};
use crate::datatype::Typemap;
use crate::error::{BufferError, Result, TypeError};

/// A reduction's datatype, as it takes part.
#[derive(Clone, Copy)]
pub enum ReduceType<'a> {
    /// A predefined datatype, whose elements are `Elem`s.
    Predefined(Elem),
    /// A derived datatype: its layout, and what it reduces as.
    Derived(&'a Arc<Typemap>, Reduces),
}

/// An operation a reduction takes: a predefined one, or a user's, which
/// reduces a derived datatype's elements whole (§6.9.5).
pub trait ReduceOp: AnyOperation + Sized {
    /// The predefined operation it is, or `None` for a user function.
    fn predefined(&self) -> Option<SystemOperation>;

    /// This user operation on packed elements of `layout` (a derived
    /// datatype), one datatype element at a time.
    fn on_elements(self, layout: Arc<Typemap>) -> Self;
}

/// The operation a reduction runs.
pub enum ReductionOp<O> {
    /// The call's.
    Given(O),
    /// A predefined operation on a derived datatype built from a padded
    /// pair type (`MPI_DOUBLE_INT`, ...): the packed data holds each pair
    /// as the type map says, the value then the `int` (§5.1.3), not as its
    /// C struct, so the pairs are combined in that form
    /// ([`Elem::combine_packed`]).
    PackedPairs(SystemOperation, Elem),
}

impl<O: AnyOperation> AnyOperation for ReductionOp<O> {
    fn on<T: Reducible>(&self) -> Result<Operation> {
        match self {
            ReductionOp::Given(o) => o.on::<T>(),
            &ReductionOp::PackedPairs(op, elem) => {
                Ok(Operation::from_bytes(elem.packed_size(), true, move |src: &[u8], acc: &mut [u8]| {
                    // Checked when the reduction was made (`Reduction::new`).
                    let _ = elem.combine_packed(op, src, acc);
                }))
            }
        }
    }
}

/// A reduction's arguments, ready for the collective: the element type
/// and the operation the engine reduces with, the send argument, and how
/// the operands are laid out.
pub struct Reduction<O> {
    elem: Elem,
    op: ReductionOp<O>,
    send: Input,
    /// Engine elements in one datatype element.
    per: usize,
    /// The layout to pack the operands from, for a derived datatype that
    /// is not one dense block.
    layout: Option<Arc<Typemap>>,
}

/// The layout of a derived datatype whose elements a reduction packs:
/// none for one dense block at the buffer's address, which the engine
/// reads and writes as it is (it copies what it sends anyway).
fn packing(layout: &Arc<Typemap>) -> Option<Arc<Typemap>> {
    (!(layout.dense() && layout.true_lb == 0)).then(|| layout.clone())
}

impl<O: ReduceOp> Reduction<O> {
    /// The reduction of elements of `ty` by `op`, from `send` (§6.9.2): a
    /// predefined operation on a derived datatype needs one predefined
    /// type under it; a user operation needs elements that follow one
    /// another (a positive extent). A datatype of no data reduces nothing,
    /// whatever the operation.
    pub fn new(ty: ReduceType<'_>, op: O, send: Input) -> Result<Reduction<O>> {
        let (layout, reduces) = match ty {
            ReduceType::Predefined(elem) => {
                return Ok(Reduction { elem, op: ReductionOp::Given(op), send, per: 1, layout: None })
            }
            ReduceType::Derived(l, r) => (l, r),
        };
        if layout.size == 0 {
            return Ok(Reduction { elem: Elem::U8, op: ReductionOp::Given(op), send, per: 0, layout: None });
        }
        let Some(system) = op.predefined() else {
            if layout.extent() <= 0 {
                return Err(TypeError::Extent { extent: layout.extent() }.into());
            }
            let op = ReductionOp::Given(op.on_elements(layout.clone()));
            return Ok(Reduction { elem: Elem::U8, op, send, per: layout.size, layout: packing(layout) });
        };
        let elem = reduces.elem(layout.size)?;
        if elem.padded_pair().is_none() {
            let per = layout.size / elem.size();
            return Ok(Reduction { elem, op: ReductionOp::Given(op), send, per, layout: packing(layout) });
        }
        // Pairs packed in the type map's form, combined as bytes; an
        // operation not defined on them is refused here, not per element.
        let zero = vec![0u8; elem.packed_size()];
        elem.combine_packed(system, &zero, &mut zero.clone())?;
        let op = ReductionOp::PackedPairs(system, elem);
        Ok(Reduction { elem: Elem::U8, op, send, per: layout.size, layout: Some(layout.clone()) })
    }

    /// The element type the engine reduces.
    pub fn elem(&self) -> Elem {
        self.elem
    }

    /// The operation.
    pub fn op(&self) -> &ReductionOp<O> {
        &self.op
    }

    /// `n` datatype elements, in the engine's elements.
    pub fn n(&self, n: usize) -> usize {
        n * self.per
    }

    /// Refuse a send buffer that overlaps the receive buffer (MPI 4.1 §2.9
    /// forbids aliased arguments; `MPI_IN_PLACE` is the way to reduce in
    /// place). The engine reads one while writing the other, so an overlap
    /// would be a wrong answer, not only a broken rule. A derived datatype
    /// is reduced from packed copies and needs no check.
    fn disjoint(&self, send_n: usize, recv: *mut u8, recv_n: usize) -> Result<()> {
        let Input::At(send) = self.send else { return Ok(()) };
        let size = self.elem.size();
        let (s0, r0) = (send as usize, recv as usize);
        let (s1, r1) = (s0.saturating_add(send_n.saturating_mul(size)), r0.saturating_add(recv_n.saturating_mul(size)));
        if s0 < s1 && r0 < r1 && s0 < r1 && r0 < s1 {
            return Err(BufferError::Aliased.into());
        }
        Ok(())
    }

    /// Run `f` on the operands: the caller's buffers for a predefined
    /// datatype; packed copies for a derived one, `send_n` elements read
    /// from the send argument and `recv_n` from (and at completion back
    /// into) `recv`.
    ///
    /// # Safety
    /// With [`Input::At`], the send argument's `send_n` datatype elements are readable for this call;
    /// `recv`'s `recv_n` are readable now and stay writable and not otherwise accessed until the
    /// operation `f` returns completes or is dropped ([`packed`]'s requirement for a derived datatype,
    /// and `f`'s own for a predefined one, whose buffers it gets as they are).
    pub unsafe fn run(
        &self,
        send_n: usize,
        recv: *mut u8,
        recv_n: usize,
        f: impl FnOnce(Input, *mut u8) -> Result<Staged>,
    ) -> Result<Staged> {
        match &self.layout {
            None => {
                self.disjoint(send_n, recv, recv_n)?;
                f(self.send, recv)
            }
            // SAFETY: the send argument's `send_n` elements are readable for this call and `recv`'s
            // `recv_n` are left to the operation until it completes (`run`'s `# Safety`): what
            // `packed` requires.
            Some(l) => unsafe { packed(l, self.send, send_n, recv, recv_n, f) },
        }
    }

    /// [`Reduction::run`] for a reduction that completes within the call.
    ///
    /// # Safety
    /// With [`Input::At`], the send argument's `send_n` datatype elements are readable for this call;
    /// `recv`'s `recv_n` are readable, writable and not otherwise accessed for this call.
    pub unsafe fn run_now(
        &self,
        send_n: usize,
        recv: *mut u8,
        recv_n: usize,
        f: impl FnOnce(Input, *mut u8) -> Result<()>,
    ) -> Result<()> {
        match &self.layout {
            None => {
                self.disjoint(send_n, recv, recv_n)?;
                f(self.send, recv)
            }
            // SAFETY: the send argument's `send_n` elements are readable and `recv`'s `recv_n`
            // readable, writable and untouched for this call (`run_now`'s `# Safety`): what
            // `packed_now` requires.
            Some(l) => unsafe { packed_now(l, self.send, send_n, recv, recv_n, f) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::TypemapBuilder;

    /// An operation that says whether it is a user's and on what layout.
    #[derive(Clone)]
    struct Op {
        user: bool,
        on: Option<usize>,
    }

    impl AnyOperation for Op {
        fn on<T: Reducible>(&self) -> Result<Operation> {
            Operation::system::<T>(SystemOperation::Sum)
        }
    }

    impl ReduceOp for Op {
        fn predefined(&self) -> Option<SystemOperation> {
            (!self.user).then_some(SystemOperation::Sum)
        }
        fn on_elements(self, layout: Arc<Typemap>) -> Self {
            Op { on: Some(layout.size), ..self }
        }
    }

    fn ints(n: usize, stride: isize) -> Arc<Typemap> {
        Arc::new(Typemap::vector(n, 1, stride, &Arc::new(Typemap::basic(4, 4, 1))).unwrap())
    }

    #[test]
    fn a_derived_type_reduces_as_its_element_or_whole_for_a_user() {
        let strided = ints(3, 8);
        let system = Op { user: false, on: None };
        let r = Reduction::new(ReduceType::Derived(&strided, Reduces::As(Elem::I32)), system, Input::InPlace).unwrap();
        assert_eq!((r.elem(), r.n(2)), (Elem::I32, 6));
        assert!(r.layout.is_some(), "a strided type is reduced packed");
        let user = Op { user: true, on: None };
        let r = Reduction::new(ReduceType::Derived(&strided, Reduces::Mixed), user, Input::InPlace).unwrap();
        let ReductionOp::Given(op) = r.op() else { panic!("a user operation is the call's") };
        assert_eq!((r.elem(), r.n(2), op.on), (Elem::U8, 24, Some(12)));
        let dense = ints(3, 4);
        let r = Reduction::new(
            ReduceType::Derived(&dense, Reduces::As(Elem::I32)),
            Op { user: false, on: None },
            Input::InPlace,
        )
        .unwrap();
        assert!(r.layout.is_none(), "one dense block is reduced where it is");
    }

    #[test]
    fn what_cannot_be_reduced_is_refused_as_a_type_error() {
        let strided = ints(3, 8);
        let mixed =
            Reduction::new(ReduceType::Derived(&strided, Reduces::Mixed), Op { user: false, on: None }, Input::InPlace);
        assert!(matches!(mixed, Err(crate::MpiError::Type(TypeError::Mixed))));
        let mut b = TypemapBuilder::new();
        b.place(&Arc::new(Typemap::basic(4, 4, 1)), 0, 1).unwrap();
        let backwards = Arc::new(b.finish().resized(0, -4).unwrap());
        let user = Reduction::new(
            ReduceType::Derived(&backwards, Reduces::As(Elem::I32)),
            Op { user: true, on: None },
            Input::InPlace,
        );
        assert!(matches!(user, Err(crate::MpiError::Type(TypeError::Extent { extent: -4 }))));
        // No data: nothing to combine, whatever the type is made of.
        let empty = Arc::new(Typemap::vector(0, 1, 4, &Arc::new(Typemap::basic(4, 4, 1))).unwrap());
        let r =
            Reduction::new(ReduceType::Derived(&empty, Reduces::Mixed), Op { user: false, on: None }, Input::InPlace)
                .unwrap();
        assert_eq!(r.n(5), 0);
    }

    #[test]
    fn overlapping_send_and_receive_buffers_are_refused() {
        let mut buf = [0u32; 8];
        let p = buf.as_mut_ptr().cast::<u8>();
        let r = Reduction::new(ReduceType::Predefined(Elem::I32), Op { user: false, on: None }, Input::At(p)).unwrap();
        // SAFETY: `f` is refused before it runs; nothing is read or written.
        let e = unsafe { r.run_now(4, p.wrapping_add(8), 4, |_, _| Ok(())) };
        assert!(matches!(e, Err(crate::MpiError::Buffer(BufferError::Aliased))));
        // SAFETY: the closure touches nothing; the two halves of `buf` do not overlap.
        unsafe { r.run_now(4, p.wrapping_add(16), 4, |_, _| Ok(())) }.unwrap();
    }
}
