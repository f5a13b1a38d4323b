//! Accesses through a user data representation's conversion functions
//! (MPI 4.1 §14.5.3, `MPI_Register_datarep`).
//!
//! A write hands the conversion the access's data items, which it turns
//! into their file representation in a contiguous buffer; that buffer
//! goes through the view as the access's bytes. A read fills such a
//! buffer from the view and hands it to the conversion, which stores the
//! items into the caller's elements. `count` and `position` are counted
//! in data items (the predefined entries of the memory datatype's type
//! signature, tiled), not in whole datatypes and not in bytes (§14.5.3,
//! advice to users).
//!
//! Every data item must take as many bytes in the file as in memory
//! ([`Conversion`] implementers check it when the view is set): a
//! representation that changes sizes would change where the view's
//! bytes fall, which is not provided (`MPI_ERR_UNSUPPORTED_DATAREP`, as
//! for `external32`'s `long`).

use super::{Direction, File, Position};
use crate::datatype::zeroed_buffer;
use crate::error::{MpiError, Result};
use crate::staged::Span;
use crate::Status;

/// A user data representation's conversions for one access: the memory
/// datatype and the caller's buffer are the implementer's (the C ABI
/// keeps them beside the registered functions).
pub trait Conversion {
    /// The whole data items in `bytes` bytes of the access's data, and the
    /// bytes they take (fewer when `bytes` ends inside an item).
    fn whole_items(&self, bytes: u64) -> (u64, u64);
    /// Write `items` data items, from item `position` of the caller's
    /// buffer on, into `file` in the file representation
    /// (`write_conversion_fn`). An error is the conversion's failure.
    fn encode(&self, file: &mut [u8], items: u64, position: u64) -> Result<()>;
    /// Store the `items` data items in `file` (file representation) into
    /// the caller's buffer from item `position` on (`read_conversion_fn`).
    fn decode(&self, file: &[u8], items: u64, position: u64) -> Result<()>;
}

/// How the access is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calling {
    /// By this process alone (`MPI_File_write`, `_at`, `_shared`, ...).
    Alone,
    /// By every process of the file's group (`_all`, `_ordered`).
    Together,
}

impl File {
    /// Access `len` bytes of elements (the caller's, which `conv` knows)
    /// through `conv` (§14.5.3). A collective access takes part in the
    /// collective even when this process's conversion fails or its `len`
    /// ends inside a data item, so that the others do not wait for ever;
    /// the failure is then this process's error (`MPI_ERR_CONVERSION`, or
    /// `MPI_ERR_ARG` for the length).
    pub fn access_converted(
        &mut self,
        position: Position,
        direction: Direction,
        len: usize,
        conv: &dyn Conversion,
        calling: Calling,
    ) -> Result<Status> {
        let (items, used) = conv.whole_items(len as u64);
        let mut file = zeroed_buffer(len, "a conversion buffer")?;
        // What keeps this process's data out: a length that ends inside an
        // item, or (writing) a failed conversion. A collective access still
        // takes part, with no data, so that the others finish.
        let refused = match (used == len as u64, direction) {
            (false, _) => Err(super::ViewError::PartialItem { len }.into()),
            (true, Direction::Write) => conv.encode(&mut file, items, 0),
            (true, Direction::Read) => Ok(()),
        };
        if refused.is_err() {
            if calling == Calling::Alone && position != Position::Ordered {
                return refused.map(|()| Status::empty());
            }
            // SAFETY: the span is 0 bytes, so `either` reads and writes nothing at `file`'s pointer
            // (a live vector's, anyway).
            let _ = unsafe { self.either(position, direction, file.as_mut_ptr(), &Span::bytes(0), calling) };
            return refused.map(|()| Status::empty());
        }
        match direction {
            Direction::Write => {
                // SAFETY: `file` is our own vector of `len` bytes, alive past the call and not
                // modified during it: what `access_raw` asks of a write.
                unsafe { self.either(position, direction, file.as_mut_ptr(), &Span::bytes(len), calling) }
            }
            Direction::Read => {
                // SAFETY: `file` is our own vector of `len` bytes, writable and reached by nothing
                // else during the call: what `access_raw` asks of a read.
                let read = unsafe { self.either(position, direction, file.as_mut_ptr(), &Span::bytes(len), calling)? };
                let (items, used) = conv.whole_items(read.bytes());
                let whole = file.get(..used.min(read.bytes()) as usize).filter(|w| w.len() as u64 == used);
                let whole = whole.ok_or_else(|| {
                    MpiError::Conversion(crate::error::ConversionError::PartialRead { used, items, read: read.bytes() })
                })?;
                conv.decode(whole, items, 0)?;
                Ok(super::status(used))
            }
        }
    }

    /// Begin a split collective access through `conv`
    /// ([`File::begin_raw`] with [`File::access_converted`]).
    pub fn begin_converted(
        &mut self,
        position: Position,
        direction: Direction,
        len: usize,
        conv: &dyn Conversion,
    ) -> Result<()> {
        if self.split.is_some() {
            return Err(self.split_pending());
        }
        let result = self.access_converted(position, direction, len, conv, Calling::Together);
        self.keep_split(position, direction, result);
        Ok(())
    }

    /// # Safety
    /// As [`File::access_raw`]: every block of the span's elements at `buf` is, for the duration
    /// of the call, readable and not modified (a write), or writable and not otherwise accessed
    /// (a read).
    unsafe fn either(
        &mut self,
        position: Position,
        direction: Direction,
        buf: *mut u8,
        span: &Span,
        calling: Calling,
    ) -> Result<Status> {
        // SAFETY: the caller's guarantee on `buf`'s span for this call (`# Safety`) is what
        // `access_raw` and `access_all_raw` both ask.
        unsafe {
            match calling {
                Calling::Alone => self.access_raw(position, direction, buf, span, None),
                Calling::Together => self.access_all_raw(position, direction, buf, span, None),
            }
        }
    }
}
