//! The type constructors as the C calls make them (MPI 4.1 §5.1.2-5.1.7),
//! and what each records of how it was called (§5.1.13): the typemap it
//! builds, and the combiner and arguments `MPI_Type_get_envelope` and
//! `MPI_Type_get_contents` return, in the form (`int` or large count) the
//! constructor was called in. The Rust API's constructors are
//! [`crate::datatype::UserDatatype`]'s; the handles are the C library's.

use std::sync::Arc;

use abi_def as abi;

use super::basis::Basis;
use crate::datatype::{Typemap, TypemapBuilder};
use crate::error::{ArgError, MpiError, Overflow, Result, TypeError};

/// Which form of a constructor was called (§5.1.13): the `int` form, or
/// the large-count (`_c`) form, whose counts, block lengths,
/// displacements and bounds `MPI_Type_get_contents_c` returns as large
/// counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The `int` form.
    Int,
    /// The large-count (`_c`) form.
    Large,
}

/// How a datatype was built (§5.1.13): its combiner (`MPI_COMBINER_*`, as
/// the ABI numbers them) and its arguments as `MPI_Type_get_contents`
/// returns them; `P` is how the caller names the old types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents<P> {
    /// The combiner.
    pub combiner: i32,
    /// The `int` arguments.
    pub ints: Vec<i32>,
    /// The address arguments.
    pub aints: Vec<isize>,
    /// The large-count arguments (the `_c` forms').
    pub counts: Vec<i64>,
    /// The old datatypes.
    pub types: Vec<P>,
}

impl<P> Contents<P> {
    /// `MPI_Type_get_envelope(_c)` (§5.1.13): how many integers,
    /// addresses, large counts and datatypes. The `int` form cannot
    /// describe a large-count constructor's.
    pub fn envelope(&self, form: Form) -> Result<[usize; 4]> {
        if form == Form::Int && !self.counts.is_empty() {
            return Err(TypeError::LargeCountConstructor.into());
        }
        Ok([self.ints.len(), self.aints.len(), self.counts.len(), self.types.len()])
    }

    /// What a datatype of `size` bytes so built is made of, given its old
    /// types' bases in order ([`Basis::repeat`] of its one old type, or
    /// [`Basis::structure`] of a struct's blocks).
    pub fn basis(&self, size: usize, olds: &[Basis]) -> Result<Basis> {
        match olds {
            [old] if self.combiner != abi::MPI_COMBINER_STRUCT => Basis::repeat(old, size),
            parts => {
                // A struct's counts: `count, blocklengths...` (ints, or large counts).
                let lens: Vec<i64> = match self.counts.is_empty() {
                    true => self.ints.iter().skip(1).map(|&v| i64::from(v)).collect(),
                    false => self.counts.iter().skip(1).copied().collect(),
                };
                Basis::structure(parts.iter().zip(lens).map(|(b, n)| (b, n.max(0) as u64)))
            }
        }
    }
}

/// A constructor's arguments as §5.1.13 records them: its counts (and
/// displacements in extents), then its byte displacements and bounds.
#[derive(Clone, Debug)]
pub struct Args {
    form: Form,
    combiner: i32,
    counts: Vec<i64>,
    addrs: Vec<i64>,
}

impl Args {
    /// The arguments of a `combiner` call in `form`: `counts` came from
    /// `int` arguments in the `int` form, so they fit one.
    pub fn new(form: Form, combiner: i32, counts: Vec<i64>, addrs: Vec<i64>) -> Args {
        Args { form, combiner, counts, addrs }
    }

    /// The record, with the old types `types`.
    pub fn contents<P>(self, types: Vec<P>) -> Contents<P> {
        let Args { form, combiner, mut counts, addrs } = self;
        match form {
            Form::Int => Contents {
                combiner,
                ints: counts.iter().map(|&v| v as i32).collect(),
                aints: addrs.iter().map(|&v| v as isize).collect(),
                counts: vec![],
                types,
            },
            Form::Large => {
                counts.extend(addrs);
                Contents { combiner, ints: vec![], aints: vec![], counts, types }
            }
        }
    }
}

/// A count argument: not negative (`MPI_ERR_COUNT`).
pub fn count_arg(n: i64, what: &'static str) -> Result<usize> {
    usize::try_from(n).map_err(|_| MpiError::NegativeCount { what, count: n })
}

/// A displacement or bound in bytes or extents: an address-sized value.
pub fn disp_arg(v: i64) -> Result<isize> {
    isize::try_from(v).map_err(|_| ArgError::Displacement { value: v }.into())
}

fn times(a: isize, b: isize) -> Result<isize> {
    a.checked_mul(b).ok_or(MpiError::TooLarge(Overflow::Datatype))
}

/// `MPI_Type_contiguous(_c)` (§5.1.2).
pub fn contiguous(form: Form, count: i64, old: &Arc<Typemap>) -> Result<(Typemap, Args)> {
    let args = Args::new(form, abi::MPI_COMBINER_CONTIGUOUS, vec![count], vec![]);
    Ok((blocks(old, &[count], &[0], true)?, args))
}

/// `MPI_Type_vector` and `MPI_Type_create_hvector`, in both forms
/// (§5.1.2): `count` blocks of `blocklength` elements, `stride` apart (in
/// extents of `old`, or in bytes when `bytes`).
pub fn vector(
    form: Form,
    count: i64,
    blocklength: i64,
    stride: i64,
    bytes: bool,
    old: &Arc<Typemap>,
) -> Result<(Typemap, Args)> {
    let n = count_arg(count, "count")?;
    let len = count_arg(blocklength, "blocklength")?;
    let args = match bytes {
        true => Args::new(form, abi::MPI_COMBINER_HVECTOR, vec![count, blocklength], vec![stride]),
        false => Args::new(form, abi::MPI_COMBINER_VECTOR, vec![count, blocklength, stride], vec![]),
    };
    let step = times(disp_arg(stride)?, if bytes { 1 } else { old.extent() })?;
    Ok((Typemap::vector(n, len, step, old)?, args))
}

/// The block lengths of an indexed constructor: one per block, or the one
/// length of every block (`*_block`).
#[derive(Clone, Debug)]
pub enum Lengths {
    /// One per block.
    Each(Vec<i64>),
    /// Every block's.
    Same(i64),
}

/// `MPI_Type_indexed`, `create_hindexed`, `create_indexed_block` and
/// `create_hindexed_block` (`combiner`), in both forms (§5.1.2): `count`
/// blocks at displacements `disps`, in extents of `old`, or in bytes when
/// `bytes`.
pub fn indexed(
    form: Form,
    combiner: i32,
    bytes: bool,
    count: i64,
    lens: Lengths,
    disps: Vec<i64>,
    old: &Arc<Typemap>,
) -> Result<(Typemap, Args)> {
    let n = count_arg(count, "count")?;
    let given = match lens {
        Lengths::Each(v) => v,
        Lengths::Same(len) => vec![len],
    };
    let all = if given.len() == n { given.clone() } else { vec![given.first().copied().unwrap_or(0); n] };
    let mut counts = vec![count];
    counts.extend_from_slice(&given);
    let layout = blocks(old, &all, &disps, !bytes)?;
    let args = match bytes {
        true => Args::new(form, combiner, counts, disps),
        false => {
            counts.extend_from_slice(&disps);
            Args::new(form, combiner, counts, vec![])
        }
    };
    Ok((layout, args))
}

/// Blocks of one old type: block `i` has `lens[i]` elements at
/// `disps[i]` (in bytes, or in extents of `old` when `in_extents`).
fn blocks(old: &Arc<Typemap>, lens: &[i64], disps: &[i64], in_extents: bool) -> Result<Typemap> {
    let unit = if in_extents { old.extent() } else { 1 };
    let mut b = TypemapBuilder::new();
    for (&len, &d) in lens.iter().zip(disps) {
        b.place(old, times(disp_arg(d)?, unit)?, count_arg(len, "a block length")?)?;
    }
    Ok(b.finish())
}

/// `MPI_Type_create_struct(_c)` (§5.1.2): block `i` is `lens[i]`
/// elements of `olds[i]` at byte `disps[i]`, the extent padded as a C
/// compiler pads a struct (§5.1.6).
pub fn structure(form: Form, lens: Vec<i64>, disps: Vec<i64>, olds: &[Arc<Typemap>]) -> Result<(Typemap, Args)> {
    let mut b = TypemapBuilder::new();
    for ((&len, &d), old) in lens.iter().zip(&disps).zip(olds) {
        b.place(old, disp_arg(d)?, count_arg(len, "a block length")?)?;
    }
    let mut counts = vec![lens.len() as i64];
    counts.extend_from_slice(&lens);
    Ok((b.finish_struct()?, Args::new(form, abi::MPI_COMBINER_STRUCT, counts, disps)))
}

/// `MPI_Type_create_resized(_c)` (§5.1.7): `old` with new bounds.
pub fn resized(form: Form, old: &Typemap, lb: i64, extent: i64) -> Result<(Typemap, Args)> {
    let layout = old.resized(disp_arg(lb)?, disp_arg(extent)?)?;
    Ok((layout, Args::new(form, abi::MPI_COMBINER_RESIZED, vec![], vec![lb, extent])))
}

/// `MPI_Type_dup` (§5.1.10): the same typemap.
pub fn dup(old: &Typemap) -> (Typemap, Args) {
    (old.clone(), Args::new(Form::Int, abi::MPI_COMBINER_DUP, vec![], vec![]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Arc<Typemap> {
        Arc::new(Typemap::of::<i32>())
    }

    /// Each form records its arguments where §5.1.13 puts them.
    #[test]
    fn constructors_record_their_arguments_in_their_form() {
        let (l, a) = vector(Form::Int, 3, 2, 4, false, &int()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((l.size, l.extent()), (24, 40));
        let c = a.contents(vec!["int"]);
        assert_eq!(
            (c.combiner, &c.ints[..], c.envelope(Form::Int).ok()),
            (abi::MPI_COMBINER_VECTOR, &[3, 2, 4][..], Some([3, 0, 0, 1]))
        );
        let (_, a) =
            indexed(Form::Large, abi::MPI_COMBINER_HINDEXED, true, 2, Lengths::Each(vec![1, 2]), vec![0, 16], &int())
                .unwrap_or_else(|e| panic!("{e}"));
        let c = a.contents(vec!["int"]);
        assert_eq!(&c.counts[..], &[2, 1, 2, 0, 16][..]);
        let e = c.envelope(Form::Int).err().map(|e| e.class());
        assert_eq!(e, Some(crate::ErrorClass::Type));
        let (l, _) =
            indexed(Form::Int, abi::MPI_COMBINER_INDEXED_BLOCK, false, 2, Lengths::Same(2), vec![0, 3], &int())
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((l.size, l.extent()), (16, 20));
    }

    /// A struct pads its extent; its basis counts each block's elements.
    #[test]
    fn a_struct_pads_and_its_basis_mixes() {
        let d = Arc::new(Typemap::of::<f64>());
        let (l, a) = structure(Form::Int, vec![1, 1], vec![0, 8], &[int(), d]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((l.size, l.extent()), (12, 16));
        let c = a.contents(vec![0, 1]);
        assert_eq!(&c.ints[..], &[2, 1, 1][..]);
        let bi =
            Basis::predefined(&[crate::datatype::external32::Basic::Swap(4)], Some(super::super::reduce::Elem::I32));
        let bd =
            Basis::predefined(&[crate::datatype::external32::Basic::Swap(8)], Some(super::super::reduce::Elem::F64));
        assert_eq!(c.basis(l.size, &[bi, bd]).map(|b| b.element()).ok(), Some(Err(TypeError::Mixed)));
    }

    #[test]
    fn bad_arguments_are_refused_with_their_classes() {
        let class = |r: Result<(Typemap, Args)>| r.err().map(|e| e.class());
        assert_eq!(class(contiguous(Form::Int, -1, &int())), Some(crate::ErrorClass::Count));
        assert_eq!(class(vector(Form::Int, 2, -1, 1, false, &int())), Some(crate::ErrorClass::Count));
        assert_eq!(class(resized(Form::Large, &int(), i64::MAX, i64::MAX)), Some(crate::ErrorClass::Count));
    }
}
