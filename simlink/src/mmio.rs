//! Mapped memory shared between processes: the device's MMIO surface (a
//! character device on hardware, a file in simulation) and the simulator's
//! control file.
//!
//! Access goes through raw pointers, never through `&[u8]`, because another
//! process (or the device) may change the memory at any time. Register blocks
//! are handed out as `&T` only for types whose every field is a volatile or
//! atomic cell ([`MmioBlock`]), which is sound for memory that changes
//! underneath. This module holds the crate's only `unsafe` code.

use std::fs::File;
use std::path::Path;

use memmap2::{MmapOptions, MmapRaw};

/// Errors mapping or addressing shared memory.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// The file could not be opened or mapped.
    #[error("cannot map {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// An access fell outside the mapping.
    #[error("access at offset {offset:#x} (+{len}) is outside the {size:#x}-byte mapping")]
    OutOfRange {
        /// Offset requested.
        offset: usize,
        /// Length requested.
        len: usize,
        /// Mapping size.
        size: usize,
    },
    /// A regular file too short for the requested window: touching the
    /// missing part would kill the process with SIGBUS.
    #[error("{path} has {file_len} bytes but {need} are needed; is it a stale or foreign file? Restart the simulator (or remove the file) and retry")]
    TooShort {
        /// The file.
        path: String,
        /// Its length.
        file_len: u64,
        /// Bytes the mapping needs (offset + length).
        need: u64,
    },
}

/// A shared, writable mapping of part of a file.
pub struct Mapping {
    raw: MmapRaw,
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping").field("len", &self.raw.len()).finish()
    }
}

/// Marker for `#[repr(C)]` blocks made only of volatile or atomic cells, so
/// that a shared reference to mapped memory is sound while others write it.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, valid for every bit pattern, and
/// contain only `UnsafeCell`-based fields (volatile-register cells, atomics)
/// or padding that is never read.
pub unsafe trait MmioBlock {}

// SAFETY: every field is a volatile-register cell (VolatileCell = UnsafeCell)
// or an unread padding array; all bit patterns are valid u64s.
unsafe impl MmioBlock for fpga_regs::ur::UserRegs {}
// SAFETY: as above.
unsafe impl MmioBlock for fpga_regs::llcm::Llcm {}
// SAFETY: atomics and unread padding only.
unsafe impl MmioBlock for crate::simctl::CtlHeader {}
// SAFETY: atomics and unread padding only.
unsafe impl MmioBlock for crate::simctl::ActorRecord {}

impl Mapping {
    /// Map `len` bytes of `file` starting at `offset` (a multiple of the page size).
    /// A regular file must reach `offset + len` (a device node has no length).
    pub fn map(file: &File, path: &Path, offset: u64, len: usize) -> Result<Mapping, MapError> {
        let need = offset.saturating_add(len as u64);
        if let Ok(meta) = file.metadata() {
            if meta.is_file() && meta.len() < need {
                return Err(MapError::TooShort { path: path.display().to_string(), file_len: meta.len(), need });
            }
        }
        let raw = MmapOptions::new()
            .offset(offset)
            .len(len)
            .map_raw(file)
            .map_err(|source| MapError::Io { path: path.display().to_string(), source })?;
        Ok(Mapping { raw })
    }

    /// Open `path` read-write and map `len` bytes at `offset`.
    pub fn open(path: &Path, offset: u64, len: usize) -> Result<Mapping, MapError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| MapError::Io { path: path.display().to_string(), source })?;
        Mapping::map(&file, path, offset, len)
    }

    /// Mapping length.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.len() == 0
    }

    fn check(&self, offset: usize, len: usize, align: usize) -> Result<*mut u8, MapError> {
        let size = self.raw.len();
        let end = offset.checked_add(len);
        if end.is_none_or(|e| e > size) || offset % align != 0 {
            return Err(MapError::OutOfRange { offset, len, size });
        }
        // The mapping is page-aligned, so `offset % align == 0` gives an aligned pointer.
        Ok(self.raw.as_mut_ptr().wrapping_add(offset))
    }

    /// A register block at `offset`.
    pub fn block<T: MmioBlock>(&self, offset: usize) -> Result<&T, MapError> {
        let p = self.check(offset, std::mem::size_of::<T>(), std::mem::align_of::<T>())?;
        // SAFETY: `p` is in bounds and aligned (checked); the memory stays
        // mapped for the lifetime of `self`; `T: MmioBlock` is valid for any
        // bits and made of interior-mutable cells, so shared access is sound
        // even while other processes write the memory.
        Ok(unsafe { &*(p as *const T) })
    }

    /// Volatile 64-bit load at `offset` (8-byte aligned).
    pub fn read_u64(&self, offset: usize) -> Result<u64, MapError> {
        let p = self.check(offset, 8, 8)?;
        // SAFETY: in bounds and aligned (checked); volatile because the value
        // may be changed by another process or by the device.
        Ok(unsafe { std::ptr::read_volatile(p as *const u64) })
    }

    /// Volatile 64-bit store at `offset` (8-byte aligned).
    pub fn write_u64(&self, offset: usize, value: u64) -> Result<(), MapError> {
        let p = self.check(offset, 8, 8)?;
        // SAFETY: in bounds and aligned (checked); volatile so the store
        // reaches the device or the other process.
        unsafe { std::ptr::write_volatile(p as *mut u64, value) };
        Ok(())
    }

    /// Volatile 64-bit stores of `values` at `offset`, `offset + 8`, ...
    /// (8-byte aligned): one bounds check for the whole run.
    pub fn write_u64s(&self, offset: usize, values: &[u64]) -> Result<(), MapError> {
        let len =
            values.len().checked_mul(8).ok_or(MapError::OutOfRange { offset, len: usize::MAX, size: self.len() })?;
        let p = self.check(offset, len, 8)? as *mut u64;
        for (k, v) in values.iter().enumerate() {
            // SAFETY: `p.add(k)` for `k < values.len()` lies in the checked,
            // aligned range of `values.len() * 8` bytes at `offset`.
            unsafe { std::ptr::write_volatile(p.add(k), *v) };
        }
        Ok(())
    }

    /// Copy `dst.len()` bytes from `offset` into `dst`.
    pub fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<(), MapError> {
        let p = self.check(offset, dst.len(), 1)?;
        // SAFETY: the source range is in bounds (checked) and cannot overlap
        // `dst`, which is ordinary Rust memory. Concurrent writers are
        // excluded by the simulator's token or, on hardware, by the command
        // protocol (PW is read only after the command completed).
        unsafe { std::ptr::copy_nonoverlapping(p as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copy `src` to `offset`.
    pub fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<(), MapError> {
        let p = self.check(offset, src.len(), 1)?;
        // SAFETY: the destination range is in bounds (checked) and cannot
        // overlap `src`, which is ordinary Rust memory.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    /// Fill `len` bytes at `offset` with `byte`.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) -> Result<(), MapError> {
        let p = self.check(offset, len, 1)?;
        // SAFETY: the range is in bounds (checked).
        unsafe { std::ptr::write_bytes(p, byte, len) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_words_is_written_whole_or_refused_whole() {
        let path = std::env::temp_dir().join(format!("mmio-run-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let m = Mapping::open(&path, 0, 4096).unwrap();
        m.write_u64s(4080, &[1, 2]).unwrap();
        assert_eq!((m.read_u64(4080).unwrap(), m.read_u64(4088).unwrap()), (1, 2));
        // One word past the end: nothing is written.
        assert!(m.write_u64s(4080, &[7, 8, 9]).is_err());
        assert!(m.write_u64s(4, &[7]).is_err(), "misaligned");
        assert_eq!((m.read_u64(4080).unwrap(), m.read_u64(4088).unwrap()), (1, 2));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_file_shorter_than_the_window_is_refused_not_mapped() {
        let path = std::env::temp_dir().join(format!("mmio-short-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let err = Mapping::open(&path, 0, 8192).unwrap_err();
        assert!(matches!(err, MapError::TooShort { file_len: 4096, need: 8192, .. }), "{err}");
        let ok = Mapping::open(&path, 0, 4096);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(ok.unwrap().len(), 4096);
    }
}
