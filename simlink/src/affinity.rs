//! Keeping every hand-off on one CPU.
//!
//! Exactly one party of a simulation runs at a time, so the parties gain
//! nothing from running on different CPUs, and they pay for it: waking a
//! process that sleeps on another CPU costs an inter-processor interrupt,
//! which on a virtual machine costs a trip through the hypervisor. Measured
//! on the 2-core CI machine (docs/BENCHMARKS.md, "Hand-off cost"): a futex
//! ping-pong between two processes costs about 28 us per round trip when
//! they sleep on different CPUs and 1.8 us when both are pinned to one.
//! So the model pins itself to one CPU and publishes it in the control
//! file; each actor pins the threads that hand over to the same CPU while
//! it is attached, and neither side spins (spinning on a shared CPU only
//! delays the party that has work).

use std::mem::MaybeUninit;

/// A thread's CPU affinity mask, to put back later.
#[derive(Clone, Copy)]
pub struct Mask(libc::cpu_set_t);

impl std::fmt::Debug for Mask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|c| self.contains(*c)).collect();
        write!(f, "Mask({cpus:?})")
    }
}

impl Mask {
    /// How many CPUs the mask holds.
    pub fn count(&self) -> usize {
        (0..libc::CPU_SETSIZE as usize).filter(|c| self.contains(*c)).count()
    }

    /// Whether `cpu` is in the mask.
    pub fn contains(&self, cpu: usize) -> bool {
        // SAFETY: CPU_ISSET reads one bit of the set; `cpu` is checked
        // against the set's size first.
        cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, &self.0) }
    }
}

/// The calling thread's affinity mask.
pub fn current_mask() -> std::io::Result<Mask> {
    let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: sched_getaffinity writes at most `size_of::<cpu_set_t>()`
    // bytes into the zeroed set we own; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: zero-initialised, then filled in by the kernel: a valid cpu_set_t.
    Ok(Mask(unsafe { set.assume_init() }))
}

/// Put the calling thread's mask back (see [`pin_current_thread`]).
pub fn restore(mask: &Mask) -> std::io::Result<()> {
    // SAFETY: sched_setaffinity reads the set we pass, of its own size;
    // pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask.0) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Pin the calling thread to `cpu`; returns the mask it had.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<Mask> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("CPU {cpu} does not exist")));
    }
    let old = current_mask()?;
    let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: the set is zero-initialised (an empty set is valid) and
    // CPU_SET writes one bit inside it (`cpu` is below CPU_SETSIZE).
    let set = unsafe {
        libc::CPU_SET(cpu, &mut *set.as_mut_ptr());
        set.assume_init()
    };
    restore(&Mask(set))?;
    Ok(old)
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_a_thread_and_restoring_it() {
        std::thread::spawn(|| {
            let before = current_mask().unwrap();
            let cpu = (0..libc::CPU_SETSIZE as usize).find(|c| before.contains(*c)).unwrap();
            let old = pin_current_thread(cpu).unwrap();
            let now = current_mask().unwrap();
            assert!(now.contains(cpu));
            assert_eq!((0..libc::CPU_SETSIZE as usize).filter(|c| now.contains(*c)).count(), 1);
            assert_eq!(current_cpu(), Some(cpu), "the thread moved to its CPU");
            restore(&old).unwrap();
            let back = current_mask().unwrap();
            assert!((0..libc::CPU_SETSIZE as usize).all(|c| back.contains(c) == before.contains(c)));
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
    }
}
