//! Shared memory between the ranks of one host (issue 49, item 9), as
//! MPICH CH4's and Open MPI's shared-memory transports: under
//! `dnrun --backend udp`, when every rank of the job runs on this host,
//! the ranks talk through rings in memory instead of UDP loopback. No
//! system call on the way: a send copies the message into the ring its
//! receiver reads, a receive copies it out (into the posted buffer, when
//! there is one).
//!
//! - **The memory.** Each rank creates one file in the job directory
//!   (`shm.<rank>`, mode 0600, on `/dev/shm` where `dnrun` puts jobs),
//!   which holds one [`ring`] per sender; every rank maps every other's.
//!   `dnrun` removes the files with the job directory.
//! - **Waiting.** A rank with nothing to do polls its rings for
//!   `DN_UDP_SPIN_US` microseconds, then sleeps on a futex word in its
//!   file. A sender that finds its receiver asleep (a flag beside the
//!   word, read after a fence, so that no wake-up is lost) bumps the word
//!   and wakes it: one system call, only then.
//! - **When.** The ranks of this host (those its `dnrun` starts,
//!   [`crate::JobEnv::host_ranks`]), at least two and at most
//!   [`MAX_RANKS`], in a job of fixed size (no room for spawned
//!   processes), with no injected datagram faults (`DN_UDP_FAULTS` tests
//!   the datagram protocol), and `DN_UDP_SHM` not `off`. Otherwise the
//!   ranks use UDP as before.
//! - **A transport per kind of peer.** When the job has ranks on other
//!   hosts too, each rank talks shared memory with the ranks of its host
//!   and UDP with the others ([`per_peer`]), as MPICH CH4 picks shared
//!   memory or the network by peer. A rank that sleeps then sleeps on its
//!   socket, and its host's peers wake it with an empty datagram.
//! - **A peer that dies** without finalizing is noticed while waiting
//!   (its process is gone) and reported as lost; `dnrun` ends the job in
//!   any case.

pub mod per_peer;
pub mod ring;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memmap2::MmapRaw;

use self::ring::{Consumer, Producer, Record, RingMem, CONTROL_BYTES};
use crate::error::TransportError;
use crate::transport::{Arrival, Caps, Transport, Waker, ARRIVAL_HEAD};

/// Backend name, in errors and `DN_STATS`.
pub const NAME: &str = "shm";
/// The most ranks a job may have to use shared memory (every rank maps
/// every other's file; past this the rings get too small to pay).
pub const MAX_RANKS: u32 = 1024;
/// How long a rank waits for the others' files at start-up.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest sleep before a waiting rank looks whether its peers live.
const SLEEP_SLICE: Duration = Duration::from_millis(50);
/// Empty polls between two yields of the CPU while spinning.
const YIELD_EVERY: u32 = 256;
/// File format.
const MAGIC: u64 = 0x444e_2d53_484d_0001; // "DN-SHM", version 1
const PAGE: usize = 4096;
/// Header word offsets (each hot word in a cache line of its own).
const H_MAGIC: usize = 0;
const H_RANK: usize = 8;
const H_SIZE: usize = 12;
const H_CAPACITY: usize = 16;
const H_PID: usize = 20;
const H_BELL: usize = 64;
const H_ASLEEP: usize = 128;
const H_LEFT: usize = 192;

fn err(msg: String) -> TransportError {
    TransportError::Backend { backend: NAME, msg }
}

/// Each ring's bytes for a job of `size` ranks: 16 MiB of rings per
/// receiving rank, a power of two from 16 KiB to 256 KiB each.
pub fn ring_capacity(size: u32) -> usize {
    let share = (16usize << 20) / size.max(1) as usize;
    let pow = if share.is_power_of_two() { share } else { share.next_power_of_two() / 2 };
    pow.clamp(16 << 10, 256 << 10)
}

/// A rank's file: header page, control blocks, rings: one per rank of
/// the host, in the order of [`crate::JobEnv::host_ranks`].
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// The ranks of the host.
    size: u32,
    capacity: usize,
}

impl Layout {
    fn control(&self, sender: u32) -> usize {
        PAGE + sender as usize * CONTROL_BYTES
    }
    fn data_base(&self) -> usize {
        (PAGE + self.size as usize * CONTROL_BYTES).div_ceil(PAGE) * PAGE
    }
    fn data(&self, sender: u32) -> usize {
        self.data_base() + sender as usize * self.capacity
    }
    fn bytes(&self) -> usize {
        self.data(self.size)
    }
}

/// One rank's mapped file.
struct Mapped {
    map: MmapRaw,
    layout: Layout,
}

impl Mapped {
    fn word32(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off % 64 == 0 || off % 4 == 0);
        // SAFETY: off is a header offset inside the first page (the file
        // is at least a page), 4-aligned in a page-aligned mapping that
        // lives as long as self; the other processes touch these words
        // atomically only.
        unsafe { &*(self.map.as_mut_ptr().add(off) as *const AtomicU32) }
    }
    fn word64(&self, off: usize) -> &AtomicU64 {
        // SAFETY: as in word32, 8-aligned.
        unsafe { &*(self.map.as_mut_ptr().add(off) as *const AtomicU64) }
    }
    fn ring(&self, sender: u32) -> RingMem {
        let l = self.layout;
        // SAFETY: both offsets lie inside the mapping (Layout::bytes is
        // its length, checked when it was mapped), and the pointers are
        // used only while self (kept in an Arc by every user) lives.
        unsafe {
            RingMem {
                control: self.map.as_mut_ptr().add(l.control(sender)),
                data: self.map.as_mut_ptr().add(l.data(sender)),
                capacity: l.capacity,
            }
        }
    }
}

/// One rank of a job, and its peers on this host through shared memory.
pub struct ShmTransport {
    rank: u32,
    size: u32,
    /// `Some` beside another transport ([`per_peer`]): the peers this
    /// rank found asleep, to be woken through that transport, instead of
    /// by the futex of their file.
    bells: Option<Vec<u32>>,
    me: Arc<Mapped>,
    /// Every peer's file (`None` for this rank), kept mapped for the rings.
    peers: Vec<Option<Arc<Mapped>>>,
    /// Each peer's ring into this rank's file.
    from: Vec<Option<Consumer>>,
    /// This rank's ring into each peer's file.
    to: Vec<Option<Producer>>,
    /// The peers whose ring refused a send, until one goes through: room
    /// appearing in them ends a wait as an arrival does.
    blocked: Vec<u32>,
    /// Each peer's process, to notice one that died.
    pids: Vec<i32>,
    caps: Caps,
    capacity: usize,
    spin: Duration,
    woken: Arc<ShmWaker>,
    stats: Stats,
}

#[derive(Debug, Default)]
struct Stats {
    sent: u64,
    received: u64,
    full: u64,
    sleeps: u64,
    wakes_sent: u64,
}

/// `DN_UDP_SHM`: whether the ranks of a job on one host may talk through
/// shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmUse {
    /// When the job allows it (`auto`).
    Auto,
    /// Never (`off`).
    Off,
}

impl crate::knobs::Choice for ShmUse {
    const CHOICES: &'static [(&'static str, Self)] = &[("auto", ShmUse::Auto), ("off", ShmUse::Off)];
}

/// Why the ranks of this host do not talk through shared memory
/// (`None`: they do, with each other).
pub fn not_used_because(job: &crate::JobEnv) -> Option<String> {
    use crate::knobs;
    if knobs::choice("DN_UDP_SHM").ok().flatten() == Some(ShmUse::Off) {
        return Some("DN_UDP_SHM=off".into());
    }
    if knobs::text("DN_UDP_FAULTS").is_some() {
        return Some("DN_UDP_FAULTS injects faults into datagrams".into());
    }
    if job.world.end < job.size || job.parent_port.is_some() {
        return Some("the job has room for spawned processes".into());
    }
    let here = job.host_ranks.len();
    if here > MAX_RANKS as usize {
        return Some(format!("more than {MAX_RANKS} ranks on this host"));
    }
    if here < 2 {
        return Some("one rank on this host".into());
    }
    if job.dir.is_none() {
        return Some("no job directory".into());
    }
    None
}

/// Whether every rank of the job is on this host (so shared memory
/// serves every peer, and no other transport is needed).
pub fn whole_job_here(job: &crate::JobEnv) -> bool {
    job.host_ranks.len() == job.size as usize
}

fn file_of(dir: &Path, rank: u32) -> PathBuf {
    dir.join(format!("shm.{rank}"))
}

impl ShmTransport {
    /// Create this rank's file in `job`'s directory, then map the file of
    /// every other rank of this host (waiting for them to appear).
    pub fn open(job: &crate::JobEnv) -> Result<ShmTransport, TransportError> {
        let dir = job.dir()?;
        let (rank, size) = (job.rank, job.size);
        let here = &job.host_ranks;
        // Each job rank's place among the ranks of this host: the ring it
        // writes into a peer's file; `None` for ranks of other hosts.
        let mut place: Vec<Option<u32>> = vec![None; size as usize];
        for (i, r) in here.iter().enumerate() {
            if let Some(p) = place.get_mut(*r as usize) {
                *p = Some(i as u32);
            }
        }
        if place.get(rank as usize).copied().flatten().is_none() {
            return Err(err(format!("rank {rank} is not among the ranks of its host ({here:?})")));
        }
        let layout = Layout { size: here.len() as u32, capacity: ring_capacity(here.len() as u32) };
        let me = Arc::new(create(dir, rank, layout)?);
        let start = Instant::now();
        let mut peers: Vec<Option<Arc<Mapped>>> = (0..size).map(|_| None).collect();
        loop {
            for &p in here {
                let slot = &mut peers[p as usize];
                if slot.is_none() && p != rank {
                    *slot = attach(dir, p, layout)?.map(Arc::new);
                }
            }
            let missing: Vec<String> =
                here.iter().filter(|p| **p != rank && peers[**p as usize].is_none()).map(|p| p.to_string()).collect();
            if missing.is_empty() {
                break;
            }
            if start.elapsed() > EXCHANGE_TIMEOUT {
                return Err(err(format!(
                    "rank(s) {} did not create their shared memory within {} s",
                    missing.join(", "),
                    EXCHANGE_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mine = place[rank as usize].unwrap_or(0);
        let from = place
            .iter()
            .enumerate()
            .map(|(p, at)| at.filter(|_| p as u32 != rank).map(|at| Consumer::new(me.ring(at))))
            .collect();
        let to = peers.iter().map(|m| m.as_ref().map(|m| Producer::new(m.ring(mine)))).collect();
        let pids =
            peers.iter().map(|m| m.as_ref().map_or(0, |m| m.word32(H_PID).load(Ordering::Relaxed) as i32)).collect();
        let max_message = ring::max_payload(layout.capacity);
        let spin = Duration::from_micros(crate::knobs::integer("DN_UDP_SPIN_US")?.unwrap_or(100));
        let woken = Arc::new(ShmWaker { me: me.clone(), flag: AtomicBool::new(false) });
        Ok(ShmTransport {
            rank,
            size,
            bells: None,
            me,
            peers,
            from,
            to,
            blocked: Vec::new(),
            pids,
            caps: Caps { max_message, eager_threshold: max_message - 64 },
            capacity: layout.capacity,
            spin,
            woken,
            stats: Stats::default(),
        })
    }

    /// Whether something arrived, or room appeared for a send that waits.
    fn any_ready(&self) -> bool {
        self.from.iter().flatten().any(Consumer::ready)
            || self.blocked.iter().any(|d| self.to[*d as usize].as_ref().is_some_and(Producer::room_grew))
    }

    /// A peer whose process is gone without leaving the job.
    fn lost_peer(&self) -> Option<u32> {
        (0..self.size).find(|&p| {
            let Some(m) = &self.peers[p as usize] else { return false };
            let pid = self.pids[p as usize];
            // SAFETY: kill with signal 0 only checks that the process
            // exists; it sends nothing.
            pid > 0 && m.word32(H_LEFT).load(Ordering::Acquire) == 0 && unsafe { libc::kill(pid, 0) } != 0
        })
    }

    fn wake(&mut self, dest: u32) {
        let Some(m) = &self.peers[dest as usize] else { return };
        match &mut self.bells {
            None => self.stats.wakes_sent += u64::from(ring_bell(m)),
            Some(bells) => {
                if asleep(m) && !bells.contains(&dest) {
                    bells.push(dest);
                }
            }
        }
    }

    /// Whether `peer` is a rank of this host, reached through shared memory.
    pub fn serves(&self, peer: u32) -> bool {
        self.to.get(peer as usize).is_some_and(Option::is_some)
    }

    /// Run beside another transport ([`per_peer`]): peers found asleep
    /// are not woken here but listed for [`ShmTransport::take_bells`].
    pub fn wake_through_other(&mut self) {
        self.bells = Some(Vec::new());
    }

    /// The peers found asleep since the last call, to wake through the
    /// other transport (they sleep on it).
    pub fn take_bells(&mut self) -> Vec<u32> {
        self.bells.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Whether a message waits, or room appeared for a send that waits.
    pub fn ready(&self) -> bool {
        self.any_ready() || self.woken.flag.load(Ordering::SeqCst)
    }

    /// About to sleep elsewhere: from now on peers see this rank asleep
    /// (and ring its bell); whether something arrived meanwhile, in which
    /// case the caller must not sleep. Undo with [`ShmTransport::awake`].
    pub fn going_to_sleep(&self) -> bool {
        self.me.word32(H_ASLEEP).store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.ready()
    }

    /// After a wait: an error if nothing waits and a peer of this host
    /// died without leaving the job.
    fn check_peers_alive(&self) -> Result<(), TransportError> {
        if !self.any_ready() {
            if let Some(p) = self.lost_peer() {
                return Err(TransportError::PeerLost {
                    rank: p,
                    reason: format!("its process ({}) ended without leaving the job", self.pids[p as usize]),
                });
            }
        }
        Ok(())
    }

    /// Awake again, after a wait elsewhere that may have called
    /// [`ShmTransport::going_to_sleep`]. If it did (its spin ran out), an
    /// error if nothing waits and a peer of this host died without
    /// leaving, as [`Transport::idle`] checks after its own spin.
    ///
    /// A wait that ended while spinning asks nothing: the check is a
    /// system call per peer (`kill(pid, 0)`), and a rank whose messages
    /// come over the socket would pay it on every one (0.25–0.3 us of a
    /// 3.4 us message between hosts, docs/BENCHMARKS.md).
    pub fn awake(&mut self) -> Result<(), TransportError> {
        let slept = self.me.word32(H_ASLEEP).swap(0, Ordering::SeqCst) != 0;
        self.woken.flag.store(false, Ordering::SeqCst);
        if slept {
            self.check_peers_alive()
        } else {
            Ok(())
        }
    }
}

/// Whether `m`'s rank sleeps. The fence pairs with the sleeper's fence
/// between its `asleep` store and its last look at the rings: either it
/// sees what we did before, or we see it asleep.
fn asleep(m: &Mapped) -> bool {
    fence(Ordering::SeqCst);
    m.word32(H_ASLEEP).load(Ordering::Relaxed) != 0
}

/// Wake `m`'s rank if it sleeps; whether it did.
fn ring_bell(m: &Mapped) -> bool {
    if !asleep(m) {
        return false;
    }
    m.word32(H_BELL).fetch_add(1, Ordering::SeqCst);
    futex_wake(m.word32(H_BELL));
    true
}

/// Create, size and publish this rank's file.
fn create(dir: &Path, rank: u32, layout: Layout) -> Result<Mapped, TransportError> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = dir.join(format!(".shm.{rank}.tmp"));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| err(format!("cannot create {}: {e}", tmp.display())))?;
    file.set_len(layout.bytes() as u64).map_err(|e| err(format!("cannot size {}: {e}", tmp.display())))?;
    let m = map(&file, &tmp, layout)?;
    m.word32(H_RANK).store(rank, Ordering::Relaxed);
    m.word32(H_SIZE).store(layout.size, Ordering::Relaxed);
    m.word32(H_CAPACITY).store(layout.capacity as u32, Ordering::Relaxed);
    m.word32(H_PID).store(std::process::id(), Ordering::Relaxed);
    m.word64(H_MAGIC).store(MAGIC, Ordering::Release);
    let fin = file_of(dir, rank);
    std::fs::rename(&tmp, &fin).map_err(|e| err(format!("cannot publish {}: {e}", fin.display())))?;
    Ok(m)
}

/// Map `rank`'s file if it is there yet, checking that it is one of this
/// job's: the same layout, its own rank.
fn attach(dir: &Path, rank: u32, layout: Layout) -> Result<Option<Mapped>, TransportError> {
    let path = file_of(dir, rank);
    let file = match std::fs::OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(format!("cannot open {}: {e}", path.display()))),
    };
    let len = file.metadata().map_err(|e| err(format!("cannot stat {}: {e}", path.display())))?.len();
    if len != layout.bytes() as u64 {
        return Err(err(format!("{} has {len} bytes, not {}: is it this job's?", path.display(), layout.bytes())));
    }
    let m = map(&file, &path, layout)?;
    let ok = m.word64(H_MAGIC).load(Ordering::Acquire) == MAGIC
        && m.word32(H_RANK).load(Ordering::Relaxed) == rank
        && m.word32(H_SIZE).load(Ordering::Relaxed) == layout.size
        && m.word32(H_CAPACITY).load(Ordering::Relaxed) as usize == layout.capacity;
    if !ok {
        return Err(err(format!("{} is not rank {rank}'s shared memory of this job", path.display())));
    }
    Ok(Some(m))
}

fn map(file: &File, path: &Path, layout: Layout) -> Result<Mapped, TransportError> {
    let map = MmapRaw::map_raw(file).map_err(|e| err(format!("cannot map {}: {e}", path.display())))?;
    if map.len() < layout.bytes() {
        return Err(err(format!("{} is shorter than its layout", path.display())));
    }
    Ok(Mapped { map, layout })
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a 4-aligned word of a shared mapping (not
    // PRIVATE: the sleeper is another process); it only wakes waiters.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX, std::ptr::null::<libc::timespec>());
    }
}

fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
    // SAFETY: FUTEX_WAIT on a 4-aligned word of a shared mapping, with a
    // relative timeout that lives across the call; it returns at once if
    // the word is no longer `seen`, on a wake, a signal or the timeout.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, seen, &ts as *const libc::timespec);
    }
}

/// Ends this rank's wait from another of its threads.
struct ShmWaker {
    me: Arc<Mapped>,
    flag: AtomicBool,
}

impl Waker for ShmWaker {
    fn wake(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.me.word32(H_BELL).fetch_add(1, Ordering::SeqCst);
        futex_wake(self.me.word32(H_BELL));
    }
}

/// A record handed to the engine before it is read whole.
struct ShmArrival<'a> {
    rec: &'a Record,
    head: [u8; ARRIVAL_HEAD],
    head_len: usize,
}

impl Arrival for ShmArrival<'_> {
    fn len(&self) -> usize {
        self.rec.len
    }
    fn head(&self) -> &[u8] {
        &self.head[..self.head_len]
    }
    fn read_rest(&mut self, out: &mut [u8]) -> Result<(), TransportError> {
        if self.head_len + out.len() > self.rec.len {
            return Err(err(format!(
                "asked for {} bytes past the {}-byte head of a {}-byte message",
                out.len(),
                self.head_len,
                self.rec.len
            )));
        }
        self.rec.copy_to(self.head_len, out);
        Ok(())
    }
}

impl Transport for ShmTransport {
    fn name(&self) -> &'static str {
        NAME
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn caps(&self) -> Caps {
        self.caps
    }

    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.caps.max_message {
            return Err(err(format!("a {len}-byte message exceeds the {}-byte maximum", self.caps.max_message)));
        }
        let Some(ring) = self.to.get_mut(dest as usize).and_then(Option::as_mut) else {
            return Err(err(format!("rank {dest} is not a peer of rank {} in a job of {}", self.rank, self.size)));
        };
        let pushed = ring.push(parts) || (ring.ask_for_room() && ring.push(parts));
        if !pushed {
            self.stats.full += 1;
            if !self.blocked.contains(&dest) {
                self.blocked.push(dest);
            }
            return Ok(false);
        }
        if !self.blocked.is_empty() {
            self.blocked.retain(|d| *d != dest);
        }
        self.stats.sent += 1;
        self.wake(dest);
        Ok(true)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError> {
        let mut buf = Vec::new();
        self.poll_arrivals(&mut |src, a| {
            buf.resize(a.len(), 0);
            let n = a.head().len();
            buf[..n].copy_from_slice(a.head());
            // A record's bytes are all there: the read cannot fail.
            let _ = a.read_rest(&mut buf[n..]);
            sink(src, &buf);
        })
    }

    fn poll_arrivals(&mut self, sink: &mut dyn FnMut(u32, &mut dyn Arrival)) -> Result<usize, TransportError> {
        let mut total = 0;
        let mut wanted: Vec<u32> = Vec::new();
        for (src, c) in self.from.iter_mut().enumerate() {
            let Some(c) = c else { continue };
            if !c.ready() {
                continue;
            }
            let n = c
                .drain(|rec| {
                    let mut a = ShmArrival { rec, head: [0; ARRIVAL_HEAD], head_len: rec.len.min(ARRIVAL_HEAD) };
                    rec.copy_to(0, &mut a.head[..a.head_len]);
                    sink(src as u32, &mut a);
                })
                .map_err(|e| TransportError::PeerLost { rank: src as u32, reason: e.to_string() })?;
            if c.room_wanted() {
                wanted.push(src as u32);
            }
            total += n;
        }
        for src in wanted {
            self.wake(src);
        }
        self.stats.received += total as u64;
        Ok(total)
    }

    fn idle(&mut self) -> Result<(), TransportError> {
        let woken = || self.woken.flag.swap(false, Ordering::SeqCst);
        if self.any_ready() || woken() {
            return Ok(());
        }
        let start = Instant::now();
        let mut polls = 0u32;
        while start.elapsed() < self.spin {
            if self.any_ready() || woken() {
                return Ok(());
            }
            // Give the CPU away now and then: a rank woken from its sleep
            // is often put on its waker's CPU, and a peer spinning there
            // would keep it from running for a whole time slice (seen as
            // milliseconds of ping-pong after every sleep).
            polls += 1;
            if polls % YIELD_EVERY == 0 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        let bell = self.me.word32(H_BELL);
        let seen = bell.load(Ordering::SeqCst);
        self.me.word32(H_ASLEEP).store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.any_ready() && !woken() {
            self.stats.sleeps += 1;
            futex_wait(bell, seen, SLEEP_SLICE);
        }
        self.me.word32(H_ASLEEP).store(0, Ordering::SeqCst);
        self.check_peers_alive()
    }

    fn report(&self) -> Option<String> {
        let s = &self.stats;
        Some(format!(
            "shared memory ({} KiB rings): {} messages sent, {} received; {} sends waited for room; {} sleeps, {} wake-ups sent",
            self.capacity / 1024,
            s.sent,
            s.received,
            s.full,
            s.sleeps,
            s.wakes_sent
        ))
    }

    fn finalize(&mut self) -> Result<(), TransportError> {
        // What was sent is in the receivers' files, which outlive this
        // process: nothing to wait for. Say we left, so that a peer that
        // waits on us does not take our exit for a crash.
        self.me.word32(H_LEFT).store(1, Ordering::Release);
        Ok(())
    }

    fn waker(&mut self) -> Result<Option<Arc<dyn Waker>>, TransportError> {
        Ok(Some(self.woken.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_shrink_as_jobs_grow() {
        assert_eq!(ring_capacity(2), 256 << 10);
        assert_eq!(ring_capacity(64), 256 << 10);
        assert_eq!(ring_capacity(100), 128 << 10);
        assert_eq!(ring_capacity(256), 64 << 10);
        assert_eq!(ring_capacity(1024), 16 << 10);
        let l = Layout { size: 3, capacity: 16 << 10 };
        assert_eq!(l.data_base() % PAGE, 0);
        assert!(l.control(2) + CONTROL_BYTES <= l.data_base());
        assert_eq!(l.bytes(), l.data_base() + 3 * (16 << 10));
    }

    fn job(dir: &Path, rank: u32, size: u32) -> crate::JobEnv {
        crate::JobEnv { job_id: 1, dir: Some(dir.to_path_buf()), ..crate::JobEnv::new(rank, size) }
    }

    /// Three ranks as threads of this process, each with its own
    /// transport over the files: every pair exchanges messages of every
    /// size up to the maximum, in order, with sleeping receivers.
    #[test]
    fn three_ranks_exchange_in_order() {
        let dir = std::env::temp_dir().join(format!("adi-shm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let size = 3u32;
        let threads: Vec<_> = (0..size)
            .map(|rank| {
                let j = job(&dir, rank, size);
                std::thread::spawn(move || {
                    let mut t = ShmTransport::open(&j).expect("open");
                    let max = t.caps().max_message;
                    let lens = [0usize, 1, 7, 64, 65, 4000, max];
                    let mut want: Vec<usize> = vec![0; size as usize];
                    let mut take = |t: &mut ShmTransport| {
                        t.poll_arrivals(&mut |src, a| {
                            let k = want[src as usize];
                            assert_eq!(a.len(), lens[k], "from {src}, message {k}");
                            let mut v = vec![0u8; a.len()];
                            a.read_from(0, &mut v).unwrap();
                            assert!(v.iter().all(|b| *b == (src * 16 + k as u32) as u8));
                            want[src as usize] += 1;
                        })
                        .expect("poll")
                    };
                    let mut got = 0;
                    for (i, len) in lens.iter().enumerate() {
                        for d in (0..size).filter(|d| *d != rank) {
                            let body = vec![(rank * 16 + i as u32) as u8; *len];
                            while !t.try_send(d, &[&body]).expect("send") {
                                got += take(&mut t);
                            }
                        }
                    }
                    while got < lens.len() * (size as usize - 1) {
                        let n = take(&mut t);
                        got += n;
                        if n == 0 {
                            t.idle().expect("idle");
                        }
                    }
                    t.finalize().unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().expect("a rank");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A peer of this host whose process ended without leaving is found
    /// once a wait has gone to sleep (its spin ran out), not by a wait
    /// that ended while spinning: that look is a system call per peer,
    /// and a rank whose messages come over the socket (`PerPeer`) would
    /// pay it on every message.
    #[test]
    fn a_dead_peer_is_found_after_a_sleep_not_at_every_wake() {
        let dir = std::env::temp_dir().join(format!("adi-shm-dead-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let j = job(&dir, 1, 2);
        let other = std::thread::spawn(move || {
            let t = ShmTransport::open(&j).expect("open rank 1");
            // Held open (not finalized, so not "left") until rank 0 is done.
            std::thread::park();
            drop(t);
        });
        let mut t = ShmTransport::open(&job(&dir, 0, 2)).expect("open rank 0");
        assert!(t.awake().is_ok() && !t.going_to_sleep() && t.awake().is_ok(), "rank 1 is alive");
        // Rank 1's process, as far as rank 0 knows, is one that has ended.
        let mut gone = std::process::Command::new("true").spawn().expect("spawn true");
        t.pids[1] = gone.id() as i32;
        gone.wait().expect("reap true");
        assert!(t.awake().is_ok(), "a wait that never went to sleep looked for dead peers");
        assert!(!t.going_to_sleep());
        match t.awake() {
            Err(TransportError::PeerLost { rank: 1, reason }) => {
                assert!(reason.contains("ended without leaving"), "{reason}")
            }
            other => panic!("a dead peer after a sleep gave {other:?}"),
        }
        // Its own wait, alone: the spin runs out, the sleep is one slice.
        let e = t.idle().expect_err("idle with a dead peer");
        assert!(matches!(e, TransportError::PeerLost { rank: 1, .. }), "{e}");
        other.thread().unpark();
        other.join().expect("rank 1");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Ranks 1 and 3 of a four-rank job on this host (0 and 2 elsewhere):
    /// they map only each other's files, and a send to a rank of another
    /// host is refused, not lost.
    #[test]
    fn only_the_ranks_of_this_host_are_peers() {
        let dir = std::env::temp_dir().join(format!("adi-shm-host-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let here = [1u32, 3];
        let threads: Vec<_> = here
            .iter()
            .map(|&rank| {
                let mut j = job(&dir, rank, 4);
                j.host_ranks = here.to_vec();
                std::thread::spawn(move || {
                    let mut t = ShmTransport::open(&j).expect("open");
                    let peer = if rank == 1 { 3 } else { 1 };
                    assert!(t.serves(peer) && !t.serves(0) && !t.serves(2) && !t.serves(rank));
                    let e = t.try_send(2, &[b"x"]).unwrap_err().to_string();
                    assert!(e.contains("rank 2 is not a peer"), "{e}");
                    while !t.try_send(peer, &[&[rank as u8; 100]]).expect("send") {}
                    let mut got = Vec::new();
                    while got.is_empty() {
                        t.poll(&mut |src, m| got.push((src, m.to_vec()))).expect("poll");
                        if got.is_empty() {
                            t.idle().expect("idle");
                        }
                    }
                    assert_eq!(got, vec![(peer, vec![peer as u8; 100])]);
                    t.finalize().unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().expect("a rank");
        }
        assert!(!dir.join("shm.0").exists() && !dir.join("shm.2").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_of_another_job_is_refused() {
        let dir = std::env::temp_dir().join(format!("adi-shm-other-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("shm.1"), b"not ours").unwrap();
        let e = ShmTransport::open(&job(&dir, 0, 2)).err().expect("refused");
        assert!(e.to_string().contains("is it this job's?"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
