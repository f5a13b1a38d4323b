//! A rank's stack: reserved, not committed (untouched pages cost nothing),
//! with a guard region below it as deep as the kernel's gap below a
//! process's main stack (1 MiB), so that a frame larger than a page (a C
//! program's `char buf[65536]` in a deep recursion) cannot step over the
//! guard into the next rank's stack below: it faults in the guard, and
//! the host reports the rank's stack overflow (`emulate`).

use corosensei::stack::{Stack, StackPointer};

/// The guard region below every rank's stack.
pub const GUARD: usize = 1 << 20;

/// A stack of `size` usable bytes above a [`GUARD`] of inaccessible ones.
pub struct RankStack {
    /// The start of the whole mapping (the guard's bottom).
    low: usize,
    len: usize,
}

impl RankStack {
    /// Reserve a stack with `size` usable bytes (rounded up to pages).
    pub fn new(size: usize) -> std::io::Result<RankStack> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let size = size.max(corosensei::stack::MIN_STACK_SIZE).next_multiple_of(page);
        let len = size + GUARD;
        // SAFETY: a fresh private anonymous mapping; nothing else uses the
        // address range the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let stack = RankStack { low: p as usize, len };
        // SAFETY: the top `size` bytes of the mapping made above.
        if unsafe { libc::mprotect((stack.low + GUARD) as *mut libc::c_void, size, libc::PROT_READ | libc::PROT_WRITE) }
            != 0
        {
            return Err(std::io::Error::last_os_error()); // `stack` unmaps it
        }
        Ok(stack)
    }

    /// Whether `addr` is in the guard region (a fault there is an overflow).
    pub fn in_guard(limit: usize, addr: usize) -> bool {
        (limit..limit + GUARD).contains(&addr)
    }
}

impl Drop for RankStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, which nothing uses once the
        // coroutine that ran on it is gone.
        unsafe { libc::munmap(self.low as *mut libc::c_void, self.len) };
    }
}

// SAFETY: `base` is the top of a mapping that stays valid while the value
// lives and is 16-byte aligned (a page boundary); `limit` is the mapping's
// bottom, the guard region included, as corosensei's own stacks count it.
unsafe impl Stack for RankStack {
    fn base(&self) -> StackPointer {
        StackPointer::new(self.low + self.len).expect("a mapping is never at address 0")
    }

    fn limit(&self) -> StackPointer {
        StackPointer::new(self.low).expect("a mapping is never at address 0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_lies_below_the_usable_stack_and_is_inaccessible() {
        let s = RankStack::new(64 << 10).unwrap();
        let (low, base) = (s.limit().get(), s.base().get());
        assert_eq!(base - low, (64 << 10) + GUARD);
        assert!(RankStack::in_guard(low, low) && RankStack::in_guard(low, low + GUARD - 1));
        assert!(!RankStack::in_guard(low, low + GUARD));
        // The usable part can be written, the guard cannot (mincore says
        // nothing of protection; /proc/self/maps does).
        // SAFETY: the byte just below the base is in the usable part.
        unsafe { *((base - 1) as *mut u8) = 1 };
        // The kernel merges the guard with an adjacent inaccessible
        // anonymous mapping (another test's guard, a thread's), so look for
        // the line whose range holds the whole guard, not one starting at it.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let holds_guard = |l: &&str| {
            let range = l.split_whitespace().next().unwrap_or("");
            let (a, b) = range.split_once('-').unwrap_or(("", ""));
            let (a, b) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16));
            matches!((a, b), (Ok(a), Ok(b)) if a <= low && low + GUARD <= b)
        };
        let guard = maps.lines().find(holds_guard).expect("a mapping holding the whole guard");
        assert!(guard.contains("---p"), "{guard}");
    }
}
