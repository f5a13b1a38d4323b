//! Datatypes. Typed buffers: plain-old-data values, slices and vectors
//! (MPI 4.1 §3.2: the basic datatypes; anything `bytemuck::Pod` maps to
//! contiguous bytes); derived datatypes ([`UserDatatype`], §5.1) over
//! [`typemap`]s, the one datatype engine of the Rust API and the C ABI.

use bytemuck::Pod;

pub mod arrays;
pub mod external32;
pub mod typemap;
mod user;

pub use typemap::{Typemap, TypemapBuilder};
pub use user::{MutView, UserDatatype, View};

/// A type that maps to contiguous bytes (MPI's basic datatypes). Implemented
/// for the primitive numbers and arrays of them; implement it for your own
/// `#[derive(Pod, Zeroable)] #[repr(C)]` structs with `impl Equivalence for T {}`.
pub trait Equivalence: Pod {}

macro_rules! equivalence {
    ($($t:ty),*) => { $(impl Equivalence for $t {})* };
}
equivalence!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
impl<T: Equivalence, const N: usize> Equivalence for [T; N] where [T; N]: Pod {}

/// Something that can be sent: a value, a slice or a vector of [`Equivalence`] types.
pub trait Buffer {
    /// The bytes to send.
    fn as_bytes(&self) -> &[u8];
}

/// Something that can be received into.
pub trait BufferMut {
    /// The bytes to fill.
    fn as_bytes_mut(&mut self) -> &mut [u8];
}

impl<T: Equivalence> Buffer for T {
    fn as_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
}

impl<T: Equivalence> Buffer for [T] {
    fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
}

impl<T: Equivalence> Buffer for Vec<T> {
    fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
}

impl<T: Equivalence> BufferMut for T {
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::bytes_of_mut(self)
    }
}

impl<T: Equivalence> BufferMut for [T] {
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }
}

impl<T: Equivalence> BufferMut for Vec<T> {
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }
}

/// `len` zeroed bytes (a staging or packing buffer), or
/// [`MpiError::NoMemory`](crate::MpiError::NoMemory) naming `what` when the
/// allocator cannot give them: a count no memory holds fails the call
/// (`MPI_ERR_NO_MEM`), it does not abort the process.
///
/// More than the host's memory and swap is refused before asking: under
/// Linux's overcommit such an allocation may be granted and the process
/// then killed while the zeros are written. (Only sizes of 1 GiB and more
/// are checked: the check is a system call, and this is on every
/// scattered send and receive.)
pub fn zeroed_buffer(len: usize, what: &str) -> crate::Result<Vec<u8>> {
    let refuse = || crate::MpiError::NoMemory { what: what.into(), bytes: len as u64 };
    if len >= 1 << 30 && len as u64 > host_memory() {
        return Err(refuse());
    }
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| refuse())?;
    v.resize(len, 0);
    Ok(v)
}

/// Bytes of memory and swap on this host (`u64::MAX` if unknown).
fn host_memory() -> u64 {
    // SAFETY: `sysinfo` only writes the struct it is given, which is
    // zeroed plain data owned here.
    let info = unsafe {
        let mut i: libc::sysinfo = std::mem::zeroed();
        if libc::sysinfo(&mut i) != 0 {
            return u64::MAX;
        }
        i
    };
    let unit = u64::from(info.mem_unit.max(1));
    (info.totalram as u64).saturating_add(info.totalswap as u64).saturating_mul(unit)
}

/// Bytes to a vector of `T` (copied, so alignment does not matter).
pub(crate) fn vec_from_bytes<T: Pod>(bytes: &[u8]) -> Option<Vec<T>> {
    let sz = std::mem::size_of::<T>();
    if sz == 0 || bytes.len() % sz != 0 {
        return None;
    }
    let mut v: Vec<T> = vec![T::zeroed(); bytes.len() / sz];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(bytes);
    Some(v)
}

/// How many elements of a type a message holds (`MPI_Get_count`): with
/// the datatypes, as it is a question about an element type (and so that
/// the status module needs nothing of the errors).
impl crate::status::Status {
    /// Number of `T` elements (`MPI_Get_count`); an error if the length is not a multiple.
    pub fn count<T: bytemuck::Pod>(&self) -> crate::Result<usize> {
        let sz = std::mem::size_of::<T>();
        if sz == 0 || self.bytes() % sz as u64 != 0 {
            return Err(crate::MpiError::Count { bytes: self.bytes(), elem: sz });
        }
        Ok((self.bytes() / sz as u64) as usize)
    }
}
