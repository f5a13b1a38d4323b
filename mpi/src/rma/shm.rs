//! The memory of `MPI_Win_allocate_shared` (MPI 4.1 §12.2.3): one
//! segment of POSIX shared memory that every process of the group maps,
//! each process's part right after the part of the rank before (the
//! standard's contiguous default).

use crate::comm::{Communicator, SimpleCommunicator};
use crate::error::RmaSharedError;
use crate::{MpiError, Result};

/// A mapped segment and where each process's part starts in it.
pub(crate) struct Segment {
    map: *mut u8,
    len: usize,
    starts: Vec<usize>,
    me: usize,
}

/// Create a shared-memory segment of `len` bytes, readable and writable
/// by this user only, under a fresh random name (exclusively: a name that
/// exists already, taken by anyone, is never opened but replaced by
/// another); its name, for the others to open.
fn create_segment(len: usize) -> Result<Vec<u8>> {
    for _ in 0..16 {
        let mut nonce = [0u8; 16];
        // SAFETY: getrandom writes at most `nonce.len()` bytes into it.
        let got = unsafe { libc::getrandom(nonce.as_mut_ptr().cast(), nonce.len(), 0) };
        if got != nonce.len() as isize {
            return Err(os("getrandom"));
        }
        let hex: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!("/dnmpi-win-{hex}");
        let c = std::ffi::CString::new(name.clone())
            .map_err(|_| MpiError::Internal { what: format!("the shared segment name {name:?} holds a NUL") })?;
        // SAFETY: `c` is a valid C string; the flags create a new segment
        // readable and writable by this user only, never an existing one.
        let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600) };
        if fd < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
                continue;
            }
            return Err(os("shm_open"));
        }
        // SAFETY: `ftruncate` passes no memory; `fd` is the descriptor `shm_open` just gave us, open.
        let sized = unsafe { libc::ftruncate(fd, len as libc::off_t) } == 0;
        let mut err = (!sized).then(|| os("ftruncate"));
        // The pages are taken now, not at the first store: in a full
        // /dev/shm that store would be a SIGBUS in the program.
        if err.is_none() && len > 0 {
            // SAFETY: `posix_fallocate` passes no memory; `fd` is our open descriptor and `0..len`
            // the segment's size.
            let e = unsafe { libc::posix_fallocate(fd, 0, len as libc::off_t) };
            if e != 0 {
                let why = std::io::Error::from_raw_os_error(e);
                err = Some(RmaSharedError::NoRoom { bytes: len, why: why.to_string() }.into());
            }
        }
        // SAFETY: `fd` is our open descriptor, closed once here and not used after; the segment
        // persists until unlinked.
        unsafe { libc::close(fd) };
        if let Some(e) = err {
            // SAFETY: `c` is a NUL-terminated string alive for the call, naming the segment we just
            // made, which goes.
            unsafe { libc::shm_unlink(c.as_ptr()) };
            return Err(e);
        }
        return Ok(name.into_bytes());
    }
    Err(RmaSharedError::NamesTaken.into())
}

fn os(call: &'static str) -> MpiError {
    RmaSharedError::System { call, why: std::io::Error::last_os_error().to_string() }.into()
}

impl Segment {
    /// Map a segment holding `size` bytes for this process and what each
    /// other process of `comm` asks; collective.
    pub(crate) fn create(comm: &SimpleCommunicator, size: u64) -> Result<Segment> {
        let node = comm.shared().borrow_mut().engine()?.node();
        let mut mine = size.to_le_bytes().to_vec();
        mine.extend_from_slice(&node.map_or(u64::MAX, u64::from).to_le_bytes());
        mine.extend_from_slice(crate::host::host_name().as_bytes());
        let table = comm.allgather_bytes(&mine)?;
        let field = |b: &[u8], i: usize| {
            b.get(8 * i..8 * i + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes).unwrap_or_default()
        };
        let place = |b: &[u8]| (field(b, 1), b.get(16..).unwrap_or_default().to_vec());
        if let Some(other) = table.iter().position(|b| place(b) != place(&mine)) {
            return Err(RmaSharedError::OtherNode { other, me: comm.rank() }.into());
        }
        let mut starts = Vec::with_capacity(table.len() + 1);
        let mut total = 0usize;
        for b in &table {
            starts.push(total);
            let n = usize::try_from(field(b, 0))
                .map_err(|_| MpiError::WinSize(crate::error::WinSizeError::SharedPart { bytes: field(b, 0) }))?;
            total = total.checked_add(n).ok_or(MpiError::WinSize(crate::error::WinSizeError::SharedTotal))?;
        }
        starts.push(total);
        let len = total.max(1);
        let first = comm.rank() == 0;
        // Rank 0 makes the segment under a name nobody can guess or hold
        // already (another job, or another node's ranks of this one when
        // they are contexts of one process), and tells the others.
        let made = if first { create_segment(len) } else { Ok(Vec::new()) };
        let told = comm.allgather_bytes(made.as_deref().unwrap_or_default())?;
        let name = match told.first() {
            Some(n) if !n.is_empty() => {
                std::ffi::CString::new(n.clone()).map_err(|_| MpiError::RmaShared(RmaSharedError::BadName))?
            }
            _ => {
                made?;
                return Err(RmaSharedError::NotCreated.into());
            }
        };
        // SAFETY: `name` is a NUL-terminated string alive for the call, which `shm_open` only reads.
        let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
        let map = if fd < 0 {
            Err(os("shm_open"))
        } else {
            // SAFETY: a new shared mapping of `len` bytes of the segment,
            // which rank 0 sized to `len`; the address is the kernel's choice.
            let p = unsafe {
                libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
            };
            // SAFETY: `fd` is our open descriptor, closed once and not used after; the mapping
            // stays valid without it.
            unsafe { libc::close(fd) };
            if p == libc::MAP_FAILED {
                Err(os("mmap"))
            } else {
                Ok(p.cast::<u8>())
            }
        };
        // Every process has mapped it (or failed): the name can go.
        let mapped = comm.allgather_bytes(&[u8::from(map.is_ok())])?;
        if first {
            // SAFETY: `name` is a NUL-terminated string alive for the call, which `shm_unlink` only
            // reads; every process has mapped the segment or failed to, so the name can go.
            unsafe { libc::shm_unlink(name.as_ptr()) };
        }
        let map = map?;
        let seg = Segment { map, len, starts, me: comm.rank() as usize };
        if let Some(r) = mapped.iter().position(|v| v.first() != Some(&1)) {
            return Err(RmaSharedError::NotMapped { rank: r }.into());
        }
        Ok(seg)
    }

    /// Where this process's part starts.
    pub(crate) fn mine(&self) -> *mut u8 {
        self.of(self.me)
    }

    /// Where rank `r`'s part starts in this process's mapping.
    pub(crate) fn of(&self, r: usize) -> *mut u8 {
        self.map.wrapping_add(self.starts.get(r).copied().unwrap_or(0))
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: `map..map + len` is exactly the mapping `create` made, unmapped only here (a
        // `Segment` is never copied); the window keeping it in `Storage::Shared` deregisters before
        // its fields drop, so the hook no longer touches it.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}
