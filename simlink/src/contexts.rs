//! Ranks as user-level contexts of one process (DESIGN §3): what the code
//! running in a rank asks of the process that hosts it.
//!
//! A *host* (`dnrun --rank-mode contexts`) runs the model and every rank of
//! a simulated job in one process, each rank a context with a stack of its
//! own, switched in user space: the model hands a rank the token by
//! switching to it, and the rank hands it back by switching back (no futex,
//! no system call, no OS scheduler in a grant). The host exports one
//! symbol, [`HOST_SYMBOL`], a [`HostAbi`] table of C functions; the code of
//! a rank (the actor end of the hand-off in whichever copy of this crate
//! the rank's MPI library carries, and that library's per-process state)
//! finds it once with `dlsym` and uses it instead of the kernel. A process
//! without the symbol is an ordinary rank process.
//!
//! The table is C, not Rust: the host and the library a rank runs
//! (`libmpi_abi.so`) are built separately and each has its own copy of
//! this crate.

use std::ffi::c_void;
use std::sync::OnceLock;

/// The name under which a host exports its [`HostAbi`] table.
pub const HOST_SYMBOL: &std::ffi::CStr = c"dn_contexts_host_v1";

/// The table's layout version ([`HostAbi::version`]).
pub const ABI_VERSION: u32 = 1;

/// What a host offers the ranks it runs.
#[repr(C)]
pub struct HostAbi {
    /// [`ABI_VERSION`]: a rank refuses a table of another version.
    pub version: u32,
    /// Hand the CPU back to the host's scheduler (the model); returns when
    /// the host switches to this rank again. Called only by a rank.
    pub suspend: unsafe extern "C" fn(),
    /// Make `*cell`, a pointer-sized word of process-wide memory, the
    /// current rank's: the host saves it and sets it to null when it
    /// switches a rank out, and restores the rank's value when it switches
    /// the rank in; every rank starts with null. How a shared library
    /// loaded once for all ranks keeps one state per rank (see
    /// [`rank_local`]). Registering the same cell twice is harmless.
    pub rank_local: unsafe extern "C" fn(cell: *mut *mut c_void),
    /// The rank now running, or `u32::MAX` when none is (the host's own
    /// code runs).
    pub current: unsafe extern "C" fn() -> u32,
    /// The running rank's `argv` (NULL-terminated, the program's name
    /// first), or null when no rank runs: what `std::env::args` would give
    /// the rank were it a process (in a host it gives the host's).
    pub argv: unsafe extern "C" fn() -> *const *const std::ffi::c_char,
}

/// The host this process runs in as one of its contexts, if it does.
/// Looked up once; a table of another version is ignored (and a rank then
/// behaves as a process, which its host detects as a rank that never
/// hands over).
pub fn host() -> Option<&'static HostAbi> {
    static HOST: OnceLock<Option<&'static HostAbi>> = OnceLock::new();
    *HOST.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only
        // reads the loaded objects' symbol tables.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, HOST_SYMBOL.as_ptr()) } as *const HostAbi;
        // SAFETY: a host exports the symbol as a `static HostAbi` that
        // lives as long as the process; its first field is the version,
        // which every version of the table keeps first.
        (!p.is_null()).then(|| unsafe { &*p }).filter(|h| h.version == ABI_VERSION)
    })
}

/// Whether this process is a host of ranks and this code runs in one of
/// them (or in the host itself).
pub fn in_host() -> bool {
    host().is_some()
}

/// Hand the CPU to the host's scheduler until it switches back to this
/// rank. Outside a host this does nothing.
pub fn suspend() {
    if let Some(h) = host() {
        // SAFETY: the host's function; called from a rank (the only
        // callers are the actor end's waits, which run in ranks).
        unsafe { (h.suspend)() }
    }
}

/// Register `cell` with the host so that it holds one value per rank (see
/// [`HostAbi::rank_local`]); outside a host it stays process-wide. Returns
/// whether a host took it.
///
/// # Safety
/// `cell` stays valid, and is accessed only by this process's host thread
/// while registered (for ever: there is no way back).
pub unsafe fn rank_local(cell: *mut *mut c_void) -> bool {
    match host() {
        Some(h) => {
            // SAFETY: the caller's contract on `cell`.
            unsafe { (h.rank_local)(cell) };
            true
        }
        None => false,
    }
}

/// The rank the host is running now (`None` outside a host, or while the
/// host's own code runs).
pub fn current_rank() -> Option<u32> {
    // SAFETY: the host's function, callable at any time.
    host().map(|h| unsafe { (h.current)() }).filter(|r| *r != u32::MAX)
}

/// The running rank's arguments, the program's name first (`None` outside
/// a host: `std::env::args` has them).
pub fn args() -> Option<Vec<String>> {
    let h = host()?;
    // SAFETY: the host's function, callable at any time.
    let mut p = unsafe { (h.argv)() };
    if p.is_null() {
        return None;
    }
    let mut out = Vec::new();
    // SAFETY: a NULL-terminated array of NUL-terminated strings that live
    // as long as the rank (the host keeps them in its table).
    unsafe {
        while !(*p).is_null() {
            out.push(std::ffi::CStr::from_ptr(*p).to_string_lossy().into_owned());
            p = p.add(1);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test binary exports no host table: its code is an ordinary process.
    #[test]
    fn an_ordinary_process_has_no_host() {
        assert!(host().is_none());
        assert!(!in_host());
        assert_eq!(current_rank(), None);
        assert_eq!(args(), None);
        suspend(); // a no-op, not a hang
        let mut cell: *mut c_void = std::ptr::null_mut();
        // SAFETY: a local that outlives the call; no host keeps it.
        assert!(!unsafe { rank_local(&mut cell) });
    }
}
