//! Safe wrappers over the bindings: each type owns what DPDK handed out.

use std::ffi::{CStr, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::ffi;
use crate::{Error, Hint, PortConfig, Result};

static STARTED: AtomicBool = AtomicBool::new(false);

fn strerror(code: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local
    // NUL-terminated string for any code.
    unsafe { CStr::from_ptr(ffi::rte_strerror(code)) }.to_string_lossy().into_owned()
}

fn errno() -> i32 {
    // SAFETY: reads the calling thread's rte_errno.
    unsafe { ffi::dn_errno() }
}

fn call_err(call: &'static str, code: i32, hint: &'static str) -> Error {
    let code = code.abs();
    Error::Call { call, code, msg: strerror(code), hint: Hint(hint) }
}

/// The DPDK environment abstraction layer of this process.
#[derive(Debug)]
pub struct Eal(());

impl Eal {
    /// Start the EAL with `args` (`args[0]` is the program name; see
    /// [`crate::eal_args`]). Once per process: a second call is
    /// [`Error::AlreadyStarted`]. The EAL is never cleaned up: with memif,
    /// `rte_eal_cleanup` can race its interrupt thread and crash, and the
    /// operating system frees everything at exit; ports are stopped and
    /// closed when dropped.
    pub fn init(args: &[String]) -> Result<Eal> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(Error::AlreadyStarted);
        }
        let owned: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_str()).map_err(|_| Error::Invalid(format!("EAL argument {a:?} contains NUL"))))
            .collect::<Result<_>>()?;
        let mut argv: Vec<*mut std::ffi::c_char> = owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
        argv.push(std::ptr::null_mut());
        let argc = i32::try_from(owned.len()).map_err(|_| Error::Invalid("too many EAL arguments".into()))?;
        // The EAL pins this thread to its lcore's CPU. Ranks are processes
        // that the kernel must be free to spread over the cores (two
        // processes pinned to one CPU took 8 ms per round trip instead of
        // microseconds), so the mask is put back after init.
        // SAFETY: a zeroed cpu_set_t is a valid empty set; the size passed is its size.
        let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `mask` outlives the call and its size is passed.
        let have_mask = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) } == 0;
        // SAFETY: argv holds argc valid NUL-terminated strings (kept alive
        // by `owned`, which outlives the call) and a terminating null. The
        // EAL may permute argv's pointers but does not write through them;
        // it keeps no reference past the call except to strings it copies.
        let r = unsafe { ffi::rte_eal_init(argc, argv.as_mut_ptr()) };
        // The EAL may keep pointers into argv (e.g. for the program name):
        // keep the strings for the life of the process.
        std::mem::forget(owned);
        if have_mask {
            // SAFETY: `mask` is the set read above; its size is passed.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask) };
        }
        if r < 0 {
            return Err(call_err(
                "rte_eal_init",
                errno(),
                "the arguments are printed by `dnrun --backend dpdk -v`; with no hugepages use --no-huge -m 128",
            ));
        }
        Ok(Eal(()))
    }

    /// Create the virtual device `name` with `args` (as `--vdev=name,args`
    /// would at start-up), e.g. a memif client once its server listens.
    pub fn add_vdev(&self, name: &str, args: &str) -> Result<()> {
        let n = CString::new(name).map_err(|_| Error::Invalid(format!("vdev name {name:?} contains NUL")))?;
        let a = CString::new(args).map_err(|_| Error::Invalid(format!("vdev arguments {args:?} contain NUL")))?;
        // SAFETY: both strings outlive the call; the EAL is running (self).
        let r = unsafe { ffi::rte_vdev_init(n.as_ptr(), a.as_ptr()) };
        if r != 0 {
            return Err(call_err("rte_vdev_init", r, "is the driver (e.g. net_memif) installed? (scripts/setup.sh)"));
        }
        Ok(())
    }

    /// The TSC frequency the EAL measured (cycles per second).
    pub fn tsc_hz(&self) -> u64 {
        // SAFETY: valid after rte_eal_init, which `self` proves.
        unsafe { ffi::rte_get_tsc_hz() }
    }
}

/// A pool of packet buffers. It lives until the process exits: an mbuf
/// may sit in a queue or in a [`Mbuf`] anywhere, and freeing its pool
/// first would leave it dangling.
#[derive(Debug)]
pub struct Mempool(NonNull<ffi::rte_mempool>);

// SAFETY: DPDK mempools are thread-safe (lock-free rings; the per-lcore
// caches are bypassed on threads that are not EAL lcores).
unsafe impl Send for Mempool {}
// SAFETY: as above.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// A pool of `n` buffers of `data_room` bytes each (headroom included).
    ///
    /// The pool is a stack (DPDK's `stack` mempool driver) where the system
    /// has it: the buffer freed last is handed out next, still in the CPU's
    /// cache. A ring pool (DPDK's default) hands buffers out in FIFO order,
    /// so a process cycles through all of them and every frame lands in
    /// cold memory; the ring is the fallback.
    pub fn create(_eal: &Eal, name: &str, n: u32, data_room: u16) -> Result<&'static Mempool> {
        let cname = CString::new(name).map_err(|_| Error::Invalid(format!("pool name {name:?} contains NUL")))?;
        // SAFETY: cname and the ops name outlive the call (DPDK copies
        // names); the EAL is running (`_eal`). A cache of 0 keeps buffers
        // from hiding in per-lcore caches.
        let stack = unsafe {
            ffi::rte_pktmbuf_pool_create_by_ops(
                cname.as_ptr(),
                n,
                0,
                0,
                data_room,
                ffi::rte_socket_id() as i32,
                c"stack".as_ptr(),
            )
        };
        let p = match NonNull::new(stack) {
            Some(p) => p,
            None => {
                // SAFETY: as above.
                let ring = unsafe {
                    ffi::rte_pktmbuf_pool_create(cname.as_ptr(), n, 0, 0, data_room, ffi::rte_socket_id() as i32)
                };
                NonNull::new(ring).ok_or_else(|| {
                    call_err(
                        "rte_pktmbuf_pool_create",
                        errno(),
                        "give the EAL more memory (-m) or ask for fewer buffers",
                    )
                })?
            }
        };
        Ok(Box::leak(Box::new(Mempool(p))))
    }

    /// A fresh buffer, empty; `None` when the pool is exhausted.
    pub fn alloc(&'static self) -> Option<Mbuf> {
        // SAFETY: the pool is valid for the life of the process.
        NonNull::new(unsafe { ffi::dn_pktmbuf_alloc(self.0.as_ptr()) }).map(Mbuf)
    }
}

/// One packet buffer, owned: freed when dropped.
#[derive(Debug)]
pub struct Mbuf(NonNull<ffi::rte_mbuf>);

// SAFETY: an mbuf is plain memory owned by whoever holds the pointer; its
// pool outlives it (pools are never freed) and freeing is thread-safe.
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// The packet's bytes (its first segment; see [`Mbuf::segments`]).
    pub fn data(&self) -> &[u8] {
        let mut len = 0u16;
        // SAFETY: self owns a valid mbuf; the returned pointer addresses
        // `len` initialised bytes of its first segment, valid while self is.
        unsafe {
            let p = ffi::dn_pktmbuf_data(self.0.as_ptr(), &mut len);
            std::slice::from_raw_parts(p.cast::<u8>(), usize::from(len))
        }
    }

    /// The packet's length over all segments.
    pub fn pkt_len(&self) -> usize {
        // SAFETY: self owns a valid mbuf.
        unsafe { ffi::dn_pktmbuf_pkt_len(self.0.as_ptr()) as usize }
    }

    /// Number of chained segments (1 for a packet that fits one buffer).
    pub fn segments(&self) -> u16 {
        // SAFETY: self owns a valid mbuf.
        unsafe { ffi::dn_pktmbuf_nb_segs(self.0.as_ptr()) }
    }

    /// Bytes that can still be appended.
    pub fn tailroom(&self) -> usize {
        // SAFETY: self owns a valid mbuf.
        usize::from(unsafe { ffi::dn_pktmbuf_tailroom(self.0.as_ptr()) })
    }

    /// Append `len` bytes to the packet and return them to be filled;
    /// `None` when the buffer has less tailroom.
    pub fn append(&mut self, len: usize) -> Option<&mut [u8]> {
        let n = u16::try_from(len).ok()?;
        // SAFETY: self owns a valid mbuf exclusively (&mut); on success the
        // pointer addresses `len` bytes of its buffer past the old end,
        // valid while self is and aliased by nothing else.
        unsafe {
            let p = ffi::dn_pktmbuf_append(self.0.as_ptr(), n);
            if p.is_null() {
                return None;
            }
            // Fresh tailroom may hold old bytes of a previous packet; they
            // are initialised memory (the pool zeroes nothing, but it never
            // hands out uninitialised memory: DPDK memzones are zeroed).
            Some(std::slice::from_raw_parts_mut(p.cast::<u8>(), len))
        }
    }

    /// Append a copy of `bytes`; `false` (nothing appended) when they do not fit.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        match self.append(bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }

    fn into_raw(self) -> *mut ffi::rte_mbuf {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }
}

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: self owns the mbuf and nothing else refers to it.
        unsafe { ffi::dn_pktmbuf_free(self.0.as_ptr()) }
    }
}

/// An Ethernet port, started; stopped and closed when dropped.
#[derive(Debug)]
pub struct Port {
    id: u16,
    rx_queues: u16,
    tx_queues: u16,
}

impl Port {
    /// Configure and start the port named `name` (a vdev given to the EAL,
    /// e.g. `net_memif0`), receiving into `pool`.
    pub fn start(_eal: &Eal, name: &str, pool: &'static Mempool, cfg: PortConfig) -> Result<Port> {
        let cname = CString::new(name).map_err(|_| Error::Invalid(format!("port name {name:?} contains NUL")))?;
        let mut id = 0u16;
        // SAFETY: cname and id outlive the call.
        if unsafe { ffi::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) } != 0 {
            return Err(Error::NoPort(name.to_string()));
        }
        let conf = ffi::rte_eth_conf::default();
        // SAFETY: the port id is valid (looked up above) and conf outlives the call.
        let r = unsafe { ffi::rte_eth_dev_configure(id, cfg.rx_queues, cfg.tx_queues, &conf) };
        if r != 0 {
            return Err(call_err("rte_eth_dev_configure", r, "does the driver offer that many queues?"));
        }
        // From here the port is configured: dropping `port` closes it.
        let port = Port { id, rx_queues: cfg.rx_queues, tx_queues: cfg.tx_queues };
        // SAFETY: a valid port.
        let socket = unsafe { ffi::rte_socket_id() };
        for q in 0..cfg.rx_queues {
            // SAFETY: a configured port; a null rx_conf takes the driver's
            // defaults; the pool lives for the process.
            let r = unsafe {
                ffi::rte_eth_rx_queue_setup(id, q, cfg.descriptors, socket, std::ptr::null(), pool.0.as_ptr())
            };
            if r != 0 {
                return Err(call_err("rte_eth_rx_queue_setup", r, "fewer descriptors, or a larger pool"));
            }
        }
        for q in 0..cfg.tx_queues {
            // SAFETY: a configured port; a null tx_conf takes the defaults.
            let r = unsafe { ffi::rte_eth_tx_queue_setup(id, q, cfg.descriptors, socket, std::ptr::null()) };
            if r != 0 {
                return Err(call_err("rte_eth_tx_queue_setup", r, "fewer descriptors"));
            }
        }
        // SAFETY: a configured port with its queues set up.
        let r = unsafe { ffi::rte_eth_dev_start(id) };
        if r != 0 {
            return Err(call_err("rte_eth_dev_start", r, ""));
        }
        Ok(port)
    }

    /// The port's id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The port's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        let mut a = ffi::rte_ether_addr::default();
        // SAFETY: a valid port; `a` outlives the call.
        unsafe { ffi::rte_eth_macaddr_get(self.id, &mut a) };
        a.addr_bytes
    }

    /// Whether the link is up (for memif: the peer has connected).
    pub fn link_up(&self) -> bool {
        let mut l = ffi::rte_eth_link::default();
        // SAFETY: a valid port; `l` outlives the call.
        let r = unsafe { ffi::rte_eth_link_get_nowait(self.id, &mut l) };
        r == 0 && l.link_status() == ffi::RTE_ETH_LINK_UP as u16
    }

    /// Receive up to `max` packets from queue `q` into `out` (appended);
    /// returns how many arrived.
    pub fn rx_burst(&mut self, q: u16, out: &mut Vec<Mbuf>, max: u16) -> usize {
        if q >= self.rx_queues {
            return 0;
        }
        let mut raw = [std::ptr::null_mut::<ffi::rte_mbuf>(); 64];
        let n = max.min(raw.len() as u16);
        // SAFETY: a started port and a configured queue, polled only
        // through &mut self (one thread); raw holds room for n pointers.
        let got = unsafe { ffi::dn_rx_burst(self.id, q, raw.as_mut_ptr(), n) };
        for p in &raw[..usize::from(got)] {
            // The driver hands over ownership of each non-null mbuf.
            if let Some(p) = NonNull::new(*p) {
                out.push(Mbuf(p));
            }
        }
        usize::from(got)
    }

    /// Hand packets from the front of `pkts` to transmit queue `q`; those
    /// the queue took leave `pkts` (the driver frees them once sent), the
    /// rest stay for a retry. Returns how many were taken.
    pub fn tx_burst(&mut self, q: u16, pkts: &mut Vec<Mbuf>) -> usize {
        if q >= self.tx_queues || pkts.is_empty() {
            return 0;
        }
        let n = pkts.len().min(64);
        let mut raw = [std::ptr::null_mut::<ffi::rte_mbuf>(); 64];
        for (r, m) in raw.iter_mut().zip(&pkts[..n]) {
            *r = m.0.as_ptr();
        }
        // SAFETY: a started port and a configured queue, used only through
        // &mut self; raw holds n valid mbufs that we own.
        let sent = usize::from(unsafe { ffi::dn_tx_burst(self.id, q, raw.as_mut_ptr(), n as u16) });
        // The first `sent` now belong to the driver: forget them without freeing.
        for m in pkts.drain(..sent) {
            let _ = m.into_raw();
        }
        sent
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: the port was configured by Port::start; stop then close
        // is the order DPDK asks for, and the port is not used again.
        unsafe {
            ffi::rte_eth_dev_stop(self.id);
            ffi::rte_eth_dev_close(self.id);
        }
    }
}

/// The CPU's time-stamp counter (cycles; see [`Eal::tsc_hz`]).
pub fn tsc() -> u64 {
    // SAFETY: reads the TSC; no state.
    unsafe { ffi::dn_tsc() }
}
