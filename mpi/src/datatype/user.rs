//! Derived datatypes for Rust programs (MPI 4.1 §5.1), in rsmpi's style:
//! a [`UserDatatype`] built from the typemaps of [`Equivalence`] types or
//! other derived types, and [`View`]/[`MutView`]: `count` elements of a
//! datatype over a byte buffer, sent with
//! [`Destination::send_view`](crate::traits::Destination::send_view) and
//! received with
//! [`Source::receive_into_view`](crate::traits::Source::receive_into_view).
//!
//! ```
//! use mpi::datatype::UserDatatype;
//! // Every other i32 of a row of 8: a vector of 4 blocks of 1, stride 2.
//! let every_other = UserDatatype::vector(4, 1, 2, &UserDatatype::of::<i32>()).unwrap();
//! assert_eq!((every_other.size(), every_other.extent()), (16, 28));
//! let row: Vec<i32> = (0..8).collect();
//! let packed = every_other.pack(bytemuck::cast_slice(&row), 1).unwrap();
//! assert_eq!(bytemuck::cast_slice::<u8, i32>(&packed), &[0, 2, 4, 6]);
//! ```
//!
//! A view is checked when it is made: every byte its elements reach lies
//! inside its buffer, so moving data through it cannot read or write
//! outside (the C ABI, which gets pointers, uses the typemap's raw forms).

use std::sync::Arc;

use super::typemap::{Typemap, TypemapBuilder};
use super::Equivalence;
use crate::error::{MpiError, Result};

/// A derived datatype: a typemap built by the constructors of §5.1.2-5.1.7.
#[derive(Clone, Debug, PartialEq)]
pub struct UserDatatype {
    map: Arc<Typemap>,
}

fn times(a: isize, b: isize) -> Result<isize> {
    a.checked_mul(b).ok_or(MpiError::TooLarge(crate::error::Overflow::Datatype))
}

impl UserDatatype {
    /// The datatype of one `T` (a basic datatype).
    pub fn of<T: Equivalence>() -> UserDatatype {
        UserDatatype { map: Arc::new(Typemap::of::<T>()) }
    }

    /// A datatype over a typemap built elsewhere (the C ABI's).
    pub fn from_typemap(map: Arc<Typemap>) -> UserDatatype {
        UserDatatype { map }
    }

    /// The typemap.
    pub fn typemap(&self) -> &Arc<Typemap> {
        &self.map
    }

    /// Bytes of data in one element (`MPI_Type_size`).
    pub fn size(&self) -> usize {
        self.map.size
    }

    /// `ub - lb` (`MPI_Type_get_extent`).
    pub fn extent(&self) -> isize {
        self.map.extent()
    }

    /// `count` elements of `old`, one after the other (`MPI_Type_contiguous`).
    pub fn contiguous(count: usize, old: &UserDatatype) -> Result<UserDatatype> {
        let mut b = TypemapBuilder::new();
        b.place(&old.map, 0, count)?;
        Ok(UserDatatype { map: Arc::new(b.finish()) })
    }

    /// `count` blocks of `blocklength` elements of `old`, `stride`
    /// extents of `old` apart (`MPI_Type_vector`). One entry in the
    /// description however many blocks.
    pub fn vector(count: usize, blocklength: usize, stride: isize, old: &UserDatatype) -> Result<UserDatatype> {
        UserDatatype::hvector(count, blocklength, times(stride, old.extent())?, old)
    }

    /// As [`UserDatatype::vector`] with the stride in bytes
    /// (`MPI_Type_create_hvector`).
    pub fn hvector(count: usize, blocklength: usize, stride: isize, old: &UserDatatype) -> Result<UserDatatype> {
        Ok(UserDatatype { map: Arc::new(Typemap::vector(count, blocklength, stride, &old.map)?) })
    }

    /// Block `i` of `blocklengths[i]` elements of `old` at
    /// `displacements[i]` extents of `old` (`MPI_Type_indexed`).
    pub fn indexed(blocklengths: &[usize], displacements: &[isize], old: &UserDatatype) -> Result<UserDatatype> {
        let ext = old.extent();
        let bytes = displacements.iter().map(|&d| times(d, ext)).collect::<Result<Vec<_>>>()?;
        UserDatatype::hindexed(blocklengths, &bytes, old)
    }

    /// As [`UserDatatype::indexed`] with the displacements in bytes
    /// (`MPI_Type_create_hindexed`).
    pub fn hindexed(blocklengths: &[usize], displacements: &[isize], old: &UserDatatype) -> Result<UserDatatype> {
        same_len(blocklengths.len(), displacements.len())?;
        let mut b = TypemapBuilder::new();
        for (&n, &d) in blocklengths.iter().zip(displacements) {
            b.place(&old.map, d, n)?;
        }
        Ok(UserDatatype { map: Arc::new(b.finish()) })
    }

    /// Block `i` of `blocklengths[i]` elements of `types[i]` at byte
    /// `displacements[i]`, the extent padded as a C compiler pads a
    /// struct (`MPI_Type_create_struct`, §5.1.6).
    pub fn structured(
        blocklengths: &[usize],
        displacements: &[isize],
        types: &[&UserDatatype],
    ) -> Result<UserDatatype> {
        same_len(blocklengths.len(), displacements.len())?;
        same_len(blocklengths.len(), types.len())?;
        let mut b = TypemapBuilder::new();
        for ((&n, &d), t) in blocklengths.iter().zip(displacements).zip(types) {
            b.place(&t.map, d, n)?;
        }
        Ok(UserDatatype { map: Arc::new(b.finish_struct()?) })
    }

    /// The same data with lower bound `lb` and extent `extent`
    /// (`MPI_Type_create_resized`, §5.1.7).
    pub fn resized(&self, lb: isize, extent: isize) -> Result<UserDatatype> {
        Ok(UserDatatype { map: Arc::new(self.map.resized(lb, extent)?) })
    }

    /// Pack `count` elements of `buf` (§5.2): an error if they reach
    /// outside it.
    pub fn pack(&self, buf: &[u8], count: usize) -> Result<Vec<u8>> {
        self.map.pack(buf, count)
    }

    /// Unpack `packed` into elements of `buf`: an error if they reach
    /// outside it.
    pub fn unpack(&self, packed: &[u8], buf: &mut [u8]) -> Result<()> {
        self.map.unpack(packed, buf)
    }
}

fn same_len(a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(crate::error::ArgError::ArrayLengths { a, b }.into());
    }
    Ok(())
}

/// `count` elements of a datatype in a buffer, the first at its start:
/// what a send takes (packed when the datatype is not one block).
pub struct View<'a> {
    buf: &'a [u8],
    count: usize,
    datatype: &'a UserDatatype,
}

impl<'a> View<'a> {
    /// `count` elements of `datatype` in `buf`: an error if they reach
    /// outside it.
    pub fn new(buf: &'a [u8], count: usize, datatype: &'a UserDatatype) -> Result<View<'a>> {
        datatype.map.check_fits(count, buf.len())?;
        Ok(View { buf, count, datatype })
    }

    /// The bytes a send of this view takes: the buffer's own when the
    /// elements are one block, else a packed copy.
    pub fn bytes(&self) -> Result<std::borrow::Cow<'a, [u8]>> {
        let m = &self.datatype.map;
        if self.count == 0 || m.size == 0 {
            return Ok(std::borrow::Cow::Borrowed(&[]));
        }
        match (m.dense(), m.one_block) {
            (true, Some((off, _))) => {
                let len = m.packed_len(self.count)?;
                let off = usize::try_from(off)
                    .map_err(|_| crate::error::ArgError::NegativeDisplacement { displ: off as i64 })?;
                Ok(std::borrow::Cow::Borrowed(&self.buf[off..off + len]))
            }
            _ => Ok(std::borrow::Cow::Owned(m.pack(self.buf, self.count)?)),
        }
    }
}

/// `count` elements of a datatype in a buffer, for a receive.
pub struct MutView<'a> {
    buf: &'a mut [u8],
    count: usize,
    datatype: &'a UserDatatype,
}

impl<'a> MutView<'a> {
    /// `count` elements of `datatype` in `buf`: an error if they reach
    /// outside it.
    pub fn new(buf: &'a mut [u8], count: usize, datatype: &'a UserDatatype) -> Result<MutView<'a>> {
        datatype.map.check_fits(count, buf.len())?;
        Ok(MutView { buf, count, datatype })
    }

    /// Bytes of the packed elements: the most a receive takes.
    pub fn packed_len(&self) -> Result<usize> {
        self.datatype.map.packed_len(self.count)
    }

    /// Place `packed` (a received message) into the elements.
    pub fn unpack(&mut self, packed: &[u8]) -> Result<()> {
        self.datatype.map.unpack(packed, self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_checked_when_made_and_empty_ones_move_nothing() {
        let int = UserDatatype::of::<i32>();
        // One int at byte 100, as a dense type: no element fits an empty buffer.
        let far = UserDatatype::hindexed(&[1], &[100], &int).unwrap().resized(100, 4).unwrap();
        assert!(far.typemap().dense());
        assert!(View::new(&[], 1, &far).is_err());
        let none = View::new(&[], 0, &far).unwrap();
        assert!(none.bytes().unwrap().is_empty());
        let buf = [7u8; 104];
        assert_eq!(View::new(&buf, 1, &far).unwrap().bytes().unwrap().len(), 4);
        // Scattered: packed; the gaps are not sent.
        let v = UserDatatype::vector(2, 1, 3, &int).unwrap();
        let data: Vec<u8> = (0..16).collect();
        assert_eq!(&*View::new(&data, 1, &v).unwrap().bytes().unwrap(), &[0, 1, 2, 3, 12, 13, 14, 15]);
        let mut back = [0u8; 16];
        let mut mv = MutView::new(&mut back, 1, &v).unwrap();
        assert_eq!(mv.packed_len().unwrap(), 8);
        mv.unpack(&[1, 1, 1, 1, 2, 2, 2, 2]).unwrap();
        assert_eq!(back, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2]);
        assert!(UserDatatype::structured(&[1, 1], &[0], &[&int, &int]).is_err(), "arrays of different lengths");
    }
}
