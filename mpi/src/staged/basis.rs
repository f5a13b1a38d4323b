//! What a datatype is made of beyond its layout: its type signature (MPI
//! 4.1 §5.1.11) as the basic elements the `external32` representation
//! converts (§13.5.2), and the one predefined element type a predefined
//! reduction (§6.9.2) or an accumulate (§12.3.4) combines.
//!
//! A derived datatype's [`Basis`] is made from its old types' when it is
//! built ([`Basis::repeat`], [`Basis::structure`]), so it stays the size of
//! the type's description: the signature is runs of the old types'
//! signatures, the element type one value.

use std::sync::Arc;

use super::reduce::Elem;
use crate::datatype::external32::{Basic, Signature};
use crate::error::{Result, TypeError};

/// The element type a datatype's elements reduce as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduces {
    /// Elements of one predefined number, pair or complex type.
    As(Elem),
    /// Built from more than one predefined type.
    Mixed,
    /// A predefined type no reduction is defined on (a wide character,
    /// `MPI_PACKED`, ...), or built from one.
    Not,
}

impl Reduces {
    /// The types built from parts that reduce as `parts` do: as their one
    /// element type if they share it.
    fn of_parts(parts: impl IntoIterator<Item = Reduces>) -> Reduces {
        let mut found = None;
        for p in parts {
            match (p, found) {
                (Reduces::Not, _) => return Reduces::Not,
                (Reduces::Mixed, _) => found = Some(Reduces::Mixed),
                (r, None) => found = Some(r),
                (r, Some(f)) if r != f => found = Some(Reduces::Mixed),
                _ => {}
            }
        }
        found.unwrap_or(Reduces::Not)
    }

    /// The element a predefined operation or an accumulate combines in a
    /// datatype of `size` bytes of data that reduces so (a padded pair
    /// counts as its data, [`Elem::packed_size`]).
    pub fn elem(self, size: usize) -> std::result::Result<Elem, TypeError> {
        match self {
            Reduces::As(e) if size % e.packed_size() == 0 => Ok(e),
            Reduces::As(e) => Err(TypeError::PartElement { size, elem: e.packed_size() }),
            Reduces::Mixed => Err(TypeError::Mixed),
            Reduces::Not => Err(TypeError::NotReducible),
        }
    }
}

/// What a datatype is made of: its signature and the element type it
/// reduces as.
#[derive(Clone, Debug)]
pub struct Basis {
    signature: Arc<Signature>,
    reduces: Reduces,
}

impl Basis {
    /// A predefined datatype of basic elements `basics` (one, or two for a
    /// complex or pair type), which reduces as `elem` (`None`: no
    /// reduction is defined on it).
    pub fn predefined(basics: &[Basic], elem: Option<Elem>) -> Basis {
        Basis { signature: Arc::new(Signature::of(basics)), reduces: elem.map_or(Reduces::Not, Reduces::As) }
    }

    /// A datatype of `size` bytes made of elements of one old type (a
    /// contiguous, vector, indexed or resized type, §5.1.2, §5.1.7): as
    /// many of the old type's elements as its size holds.
    pub fn repeat(old: &Basis, size: usize) -> Result<Basis> {
        let times = match old.signature.native_size() {
            0 => 0,
            each => size as u64 / each,
        };
        let mut signature = Signature::default();
        signature.push(old.signature.clone(), times)?;
        Ok(Basis { signature: Arc::new(signature), reduces: old.reduces })
    }

    /// A struct type (§5.1.2): block `i` holds `blocks[i].1` elements of
    /// the old type whose basis is `blocks[i].0`. Every old type counts
    /// for the element type, blocks of no elements too.
    pub fn structure<'a>(blocks: impl IntoIterator<Item = (&'a Basis, u64)>) -> Result<Basis> {
        let mut signature = Signature::default();
        let mut parts = Vec::new();
        for (b, n) in blocks {
            signature.push(b.signature.clone(), n)?;
            parts.push(b.reduces);
        }
        Ok(Basis { signature: Arc::new(signature), reduces: Reduces::of_parts(parts) })
    }

    /// The type signature, as `external32` converts it.
    pub fn signature(&self) -> &Arc<Signature> {
        &self.signature
    }

    /// The element type it reduces as.
    pub fn reduces(&self) -> Reduces {
        self.reduces
    }

    /// The predefined element a reduction or an accumulate combines in
    /// this datatype, whole elements of it.
    pub fn element(&self) -> std::result::Result<Elem, TypeError> {
        self.reduces.elem(self.signature.native_size() as usize)
    }

    /// The element an accumulate combines (§12.3.4): the target datatype's.
    /// The origin's, when the operation reads it (`None` under `MPI_NO_OP`,
    /// whose origin datatype may be anything, `MPI_DATATYPE_NULL` too),
    /// must be the same basic type, unless the call moves no data on either
    /// side (`moves_data` false: a count or a size of 0, where any
    /// datatypes may meet).
    pub fn accumulated(
        origin: Option<&Basis>,
        target: &Basis,
        moves_data: bool,
    ) -> std::result::Result<Elem, TypeError> {
        let e = target.element()?;
        match origin {
            Some(o) if moves_data && o.element()? != e => Err(TypeError::AccumulateBases),
            _ => Ok(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Basis {
        Basis::predefined(&[Basic::Swap(4)], Some(Elem::I32))
    }

    fn double() -> Basis {
        Basis::predefined(&[Basic::Swap(8)], Some(Elem::F64))
    }

    /// An accumulate's origin and target agree on their element, unless
    /// the origin is not read or nothing moves.
    #[test]
    fn an_accumulate_combines_the_targets_element() {
        let (i, d) = (int(), double());
        assert_eq!(Basis::accumulated(Some(&i), &i, true), Ok(Elem::I32));
        assert_eq!(Basis::accumulated(Some(&d), &i, true), Err(TypeError::AccumulateBases));
        assert_eq!(Basis::accumulated(None, &i, true), Ok(Elem::I32));
        assert_eq!(Basis::accumulated(Some(&d), &i, false), Ok(Elem::I32));
        let mixed = Basis::structure([(&i, 1), (&d, 1)]).map(|b| b.element());
        assert_eq!(mixed.ok(), Some(Err(TypeError::Mixed)));
    }

    #[test]
    fn a_repeated_type_keeps_its_element_and_counts_its_basics() {
        let v = Basis::repeat(&int(), 12).unwrap();
        assert_eq!(v.reduces(), Reduces::As(Elem::I32));
        assert_eq!(v.signature().native_size(), 12);
        assert_eq!(v.signature().external_size(), 12);
        // Of a type of no data: nothing, whatever the size says.
        let empty = Basis::repeat(&Basis::structure([]).unwrap(), 64).unwrap();
        assert_eq!(empty.signature().native_size(), 0);
    }

    #[test]
    fn a_struct_reduces_only_when_all_its_old_types_agree() {
        let same = Basis::structure([(&int(), 2), (&int(), 0)]).unwrap();
        assert_eq!(same.reduces().elem(8), Ok(Elem::I32));
        let mixed = Basis::structure([(&int(), 1), (&double(), 1)]).unwrap();
        assert_eq!(mixed.reduces().elem(12), Err(TypeError::Mixed));
        assert_eq!(mixed.signature().native_size(), 12);
        // A block of no elements still counts (the standard's signature
        // has none of it, but the type is still built from it).
        let zero = Basis::structure([(&int(), 1), (&double(), 0)]).unwrap();
        assert_eq!(zero.reduces(), Reduces::Mixed);
        let wide = Basis::predefined(&[Basic::Swap(4)], None);
        assert_eq!(Basis::structure([(&wide, 1), (&int(), 1)]).unwrap().reduces(), Reduces::Not);
        assert_eq!(Basis::structure([(&same, 1), (&mixed, 1)]).unwrap().reduces(), Reduces::Mixed);
    }

    #[test]
    fn an_element_cut_by_the_size_is_refused() {
        assert_eq!(Reduces::As(Elem::F64).elem(12), Err(TypeError::PartElement { size: 12, elem: 8 }));
        assert_eq!(Reduces::Not.elem(4), Err(TypeError::NotReducible));
        // A pair's data is its value and its int, without the padding.
        assert_eq!(Reduces::As(Elem::DoubleInt).elem(24), Ok(Elem::DoubleInt));
    }
}
