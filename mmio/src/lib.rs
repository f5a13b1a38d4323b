//! Mapped memory shared between processes: the device's MMIO surface (a
//! character device or PCI BAR on hardware, a file in simulation) and the
//! simulator's control file. The driver maps a real card through this
//! crate alone, with no simulator code (issue 49, item 5); `simlink`
//! re-exports it as `simlink::mmio` for the simulator's own files.
//!
//! Access goes through raw pointers, never through `&[u8]`, because another
//! process (or the device) may change the memory at any time. Register blocks
//! are handed out as `&T` only for types whose every field is a volatile or
//! atomic cell ([`MmioBlock`]), which is sound for memory that changes
//! underneath. This module holds the crate's only `unsafe` code.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

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

/// A shared, writable mapping of part of a file, or a page-aligned view of
/// part of another `Mapping` ([`Mapping::view`]), which keeps the whole
/// mapping alive.
pub struct Mapping {
    raw: Arc<MmapRaw>,
    /// Where this view starts in `raw` (a multiple of the page size).
    start: usize,
    /// Bytes of the view.
    len: usize,
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping").field("start", &self.start).field("len", &self.len).finish()
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

// SAFETY: `UserRegs` is `#[repr(C)]` and every field is a volatile-register
// cell (`VolatileCell` wraps an `UnsafeCell<u64>`) or an unread padding
// array of them; every bit pattern is a valid `u64`.
unsafe impl MmioBlock for fpga_regs::ur::UserRegs {}
// SAFETY: `Llcm` is `#[repr(C)]` and made only of `RingEntry`s (four
// `RW<u64>` cells each) and arrays of `RW<u64>` cells; every bit pattern is
// a valid `u64`.
unsafe impl MmioBlock for fpga_regs::llcm::Llcm {}

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
        Ok(Mapping { start: 0, len: raw.len(), raw: Arc::new(raw) })
    }

    /// The `len` bytes at `offset` (a multiple of the page size) of this
    /// mapping as a mapping of their own, without a new OS mapping: a
    /// process has at most `vm.max_map_count` (65,530 by default), and a
    /// simulated job of 10,000 ranks in one process would need 40,000 for
    /// the four windows of every slot.
    pub fn view(&self, offset: usize, len: usize) -> Result<Mapping, MapError> {
        if offset % fpga_regs::layout::PAGE_SIZE != 0 {
            return Err(MapError::OutOfRange { offset, len, size: self.len });
        }
        self.check(offset, len, 1)?;
        Ok(Mapping { raw: Arc::clone(&self.raw), start: self.start + offset, len })
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
        self.len
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, offset: usize, len: usize, align: usize) -> Result<*mut u8, MapError> {
        let size = self.len;
        let end = offset.checked_add(len);
        if end.is_none_or(|e| e > size) || offset % align != 0 {
            return Err(MapError::OutOfRange { offset, len, size });
        }
        // The mapping and every view start on a page, so `offset % align == 0`
        // gives an aligned pointer; `start + len` is inside `raw` (`view`).
        Ok(self.raw.as_mut_ptr().wrapping_add(self.start + offset))
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

    /// Volatile 64-bit loads of `out.len()` words from `offset`, `offset + 8`,
    /// ... (8-byte aligned): one bounds check for the whole run.
    pub fn read_u64s(&self, offset: usize, out: &mut [u64]) -> Result<(), MapError> {
        let len = out.len().checked_mul(8).ok_or(MapError::OutOfRange { offset, len: usize::MAX, size: self.len() })?;
        let p = self.check(offset, len, 8)? as *const u64;
        for (k, v) in out.iter_mut().enumerate() {
            // SAFETY: `p.add(k)` for `k < out.len()` lies in the checked,
            // aligned range of `out.len() * 8` bytes at `offset`; volatile
            // because another process or the device may write it.
            *v = unsafe { std::ptr::read_volatile(p.add(k)) };
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

    /// Zero `len` bytes at `offset`, giving the whole pages among them back
    /// to the OS (`MADV_REMOVE`: the file's pages are freed, and read back
    /// as zeros in every process that maps them) and writing zeros over the
    /// rest, or over everything where the file system cannot free pages.
    /// Zeroing a slot by writing would make every one of its pages resident
    /// (1 MiB per slot since register map 1.4, 10 GiB at 10,000 ranks).
    pub fn zero(&self, offset: usize, len: usize) -> Result<(), MapError> {
        self.check(offset, len, 1)?;
        let page = fpga_regs::layout::PAGE_SIZE;
        let first = offset.next_multiple_of(page);
        let last = (offset + len) / page * page;
        if first >= last {
            return self.fill(offset, len, 0);
        }
        // SAFETY: `first..last` is page-aligned (the mapping starts at a
        // page-aligned file offset and a view at a page of it, so `start`
        // and the pointer are page-aligned) and inside this view (checked
        // above), so inside `raw`. MADV_REMOVE only replaces the range's
        // pages with zero ones; the bytes are only ever reached through raw
        // pointers or `MmioBlock` cells, which allow them to change.
        let (at, n) = (self.start + first, last - first);
        let freed = unsafe { self.raw.unchecked_advise_range(memmap2::UncheckedAdvice::Remove, at, n) };
        if freed.is_err() {
            return self.fill(offset, len, 0);
        }
        self.fill(offset, first - offset, 0)?;
        self.fill(last, offset + len - last, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_reaches_only_its_pages_and_outlives_the_mapping_it_came_from() {
        let path = std::env::temp_dir().join(format!("mmio-view-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 4 * 4096]).unwrap();
        let whole = Mapping::open(&path, 0, 4 * 4096).unwrap();
        let v = whole.view(4096, 2 * 4096).unwrap();
        assert_eq!(v.len(), 2 * 4096);
        v.write_u64(0, 11).unwrap();
        assert_eq!(whole.read_u64(4096).unwrap(), 11, "the view's offset 0 is the mapping's 4096");
        assert!(v.read_u64(2 * 4096).is_err(), "past the view's end, though inside the mapping");
        assert!(whole.view(100, 8).is_err(), "a view starts on a page");
        assert!(whole.view(3 * 4096, 2 * 4096).is_err(), "and ends inside the mapping");
        let inner = v.view(4096, 4096).unwrap();
        drop((whole, v));
        inner.write_u64(8, 22).unwrap();
        assert_eq!(std::fs::read(&path).unwrap()[2 * 4096 + 8], 22, "the mapping lives as long as a view");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn zero_clears_exactly_its_range_and_frees_the_whole_pages() {
        let path = std::env::temp_dir().join(format!("mmio-zero-{}", std::process::id()));
        std::fs::write(&path, vec![0xA5u8; 5 * 4096]).unwrap();
        let m = Mapping::open(&path, 0, 5 * 4096).unwrap();
        // From the middle of page 0 to the middle of page 3: pages 1 and 2 whole.
        m.zero(2048, 3 * 4096).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes[..2048].iter().all(|&b| b == 0xA5), "before the range");
        assert!(bytes[2048..2048 + 3 * 4096].iter().all(|&b| b == 0), "the range");
        assert!(bytes[2048 + 3 * 4096..].iter().all(|&b| b == 0xA5), "after the range");
        assert_eq!(m.read_u64(4096).unwrap(), 0, "the mapping sees the freed page as zeros");
        m.write_u64s(4096, &[7]).unwrap();
        assert_eq!(m.read_u64(4096).unwrap(), 7, "and can write it again");
        // Less than a page, and nothing at all.
        m.zero(100, 8).unwrap();
        assert_eq!(m.read_u64(96).unwrap(), u64::from_ne_bytes([0xA5, 0xA5, 0xA5, 0xA5, 0, 0, 0, 0]));
        m.zero(5 * 4096, 0).unwrap();
        assert!(m.zero(4 * 4096, 4097).is_err(), "past the end");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_run_of_words_is_written_whole_or_refused_whole() {
        let path = std::env::temp_dir().join(format!("mmio-run-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let m = Mapping::open(&path, 0, 4096).unwrap();
        m.write_u64s(4080, &[1, 2]).unwrap();
        assert_eq!((m.read_u64(4080).unwrap(), m.read_u64(4088).unwrap()), (1, 2));
        let mut two = [0u64; 2];
        m.read_u64s(4080, &mut two).unwrap();
        assert_eq!(two, [1, 2]);
        assert!(m.read_u64s(4088, &mut two).is_err(), "one word past the end");
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
