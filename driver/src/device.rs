//! The device: map one slot, typed register access, commands, completions.
//!
//! A process maps only its own slot (seed 004 §2): UR and LLCM uncached, WW
//! write-combining, PW uncached, each as its own mapping at
//! `slot * SLOT_STRIDE + region offset`. The same code maps a real character
//! device or a simulator node file; only the [`Platform`] differs.

use std::cell::Cell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering::SeqCst};

use dn_mmio::Mapping;
use fpga_regs::layout::{self, Region, SLOT_STRIDE};
use fpga_regs::packet::PacketHeader;
use fpga_regs::ur::{self, Caps, CompletionResult, ExposePerm, Topology, UserRegs, CQ_DEPTH, EXPOSE_ENTRIES};
use fpga_regs::{Command, ErrorCode, Opcode, Peer};
use simlink::simctl::{self, HostCost, Watch};
use volatile_register::RW;

use crate::error::DriverError;
use crate::platform::{Effects, Hardware, Platform, SimActor, WaitStart, Watched};

mod packet;
mod rings;

/// The most payload pieces [`Device::submit_packet`] gathers into one packet.
pub const MAX_PACKET_PIECES: usize = 7;

/// Facts read from the slot's capability registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// This process's node and slot.
    pub me: Peer,
    /// Nodes in the fabric.
    pub nodes: u16,
    /// Slots per node.
    pub slots: u16,
    /// Absolute SO-DIMM address of this slot's partition.
    pub sodimm_base: u64,
    /// Size of the partition.
    pub sodimm_size: u64,
    /// Capabilities.
    pub caps: Caps,
    /// Largest IVS/BOTF payload.
    pub max_payload: u32,
    /// Register map version (major, minor).
    pub version: (u16, u16),
}

/// Where a host is in the arrival queue (map 1.2, `fpga_regs::llcm`): the
/// number of records the device had published when it last looked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrivalCursor(u64);

/// A posted command, to be waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// A completed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Sequence number.
    pub seq: u64,
    /// Bytes moved.
    pub bytes: u64,
}

/// Error registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorStatus {
    /// Errors reported since reset.
    pub count: u64,
    /// The most recent one.
    pub last: Option<ErrorCode>,
    /// Sequence number (low 32 bits) of the most recent failed command.
    pub last_seq: Option<u32>,
    /// Errors not yet acknowledged.
    pub unacknowledged: u64,
}

/// Options for [`Device::open_with`].
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Slot to map.
    pub slot: u16,
    /// Simulator actor record to take (the MPI rank), for a start-up-order
    /// independent schedule. Ignored on hardware.
    pub actor: Option<u32>,
}

/// Most distinct words a [`ReadLog`] lists; a round that reads more waits
/// for any change since its first read instead.
const READ_LOG_WORDS: usize = 32;

/// The words read since the last [`Device::observe`], with the value last
/// read from each: what a poll that found nothing waits on.
#[derive(Default)]
struct ReadLog {
    n: Cell<usize>,
    words: [Cell<(u32, u64)>; READ_LOG_WORDS],
    /// The slot's epoch at the round's first read (see [`Platform::epoch`]).
    since: Cell<u64>,
}

impl ReadLog {
    /// Record that the word at `slot_off` read `value`, at `epoch`.
    #[inline]
    fn log(&self, slot_off: usize, value: u64, epoch: u64) {
        let w = (slot_off & !7) as u32;
        let n = self.n.get();
        if n == 0 {
            self.since.set(epoch);
        }
        if n > READ_LOG_WORDS {
            return;
        }
        if let Some(c) = self.words[..n.min(READ_LOG_WORDS)].iter().find(|c| c.get().0 == w) {
            c.set((w, value));
            return;
        }
        if n < READ_LOG_WORDS {
            self.words[n].set((w, value));
        }
        self.n.set(n + 1);
    }

    fn reset(&self) {
        self.n.set(0);
    }

    /// What a wait on this round's reads waits for: the words with their
    /// values; a round too long to list, any change since its first read;
    /// a round that read nothing, any change from `now`.
    fn with<R>(&self, now: u64, f: impl FnOnce(Watch<'_>) -> R) -> R {
        let n = self.n.get();
        if n == 0 {
            return f(Watch::ChangeSince(now));
        }
        if n > READ_LOG_WORDS {
            return f(Watch::ChangeSince(self.since.get()));
        }
        let mut buf = [(0u32, 0u64); READ_LOG_WORDS];
        for (b, c) in buf.iter_mut().zip(&self.words) {
            *b = c.get();
        }
        f(Watch::Words(&buf[..n]))
    }
}

/// Commands posted and not yet waited for. At most [`CQ_DEPTH`] are on the
/// device, one per queue entry; results read early (to free an entry) wait
/// in `reaped`, a short list in posting order (a backend that keeps its
/// tickets waits for them oldest first, so the one it asks for is nearly
/// always the first: cheaper than hashing each).
struct Pending {
    slots: [Option<(u64, &'static str)>; CQ_DEPTH],
    reaped: VecDeque<(u64, &'static str, CompletionResult)>,
}

impl Pending {
    fn new() -> Pending {
        Pending { slots: [None; CQ_DEPTH], reaped: VecDeque::new() }
    }

    fn get(&self, seq: u64) -> Option<&'static str> {
        match self.slots[seq as usize % CQ_DEPTH] {
            Some((s, n)) if s == seq => Some(n),
            _ => None,
        }
    }

    fn remove(&mut self, seq: u64) -> Option<&'static str> {
        let slot = &mut self.slots[seq as usize % CQ_DEPTH];
        match *slot {
            Some((s, n)) if s == seq => {
                *slot = None;
                Some(n)
            }
            _ => None,
        }
    }

    /// The command still holding the queue entry `seq` needs, if any.
    fn occupant(&self, seq: u64) -> Option<u64> {
        self.slots[seq as usize % CQ_DEPTH].map(|(s, _)| s).filter(|s| *s != seq)
    }

    fn take_reaped(&mut self, seq: u64) -> Option<(&'static str, CompletionResult)> {
        let at = self.reaped.iter().position(|(s, _, _)| *s == seq)?;
        self.reaped.remove(at).map(|(_, op, r)| (op, r))
    }

    fn clear(&mut self) {
        *self = Pending::new();
    }

    fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count() + self.reaped.len()
    }
}

/// What the host keeps of one source's ring; `size == 0` means no ring is
/// set up (`ring_setup` refuses an empty ring).
#[derive(Clone, Copy, Default)]
struct RingLocal {
    base: u64,
    nra: u64,
    size: u32,
}

/// One mapped slot of a DIMMnet-2 device.
pub struct Device {
    path: PathBuf,
    ur: Mapping,
    llcm: Mapping,
    ww: Mapping,
    pw: Mapping,
    info: DeviceInfo,
    platform: Platform,
    posted: u64,
    pending: Pending,
    ww_dirty: bool,
    /// WW is mapped from a BAR's write-combining file (`resourceN_wc`).
    ww_write_combining: bool,
    /// By source index: one entry per possible source, 24 bytes each (a
    /// 10,000-rank job holds 10^8 of them).
    rings: Vec<RingLocal>,
    reads: ReadLog,
    /// UR ID as read at open: a constant of the device ([`Device::settle`]).
    id_word: u64,
}

// SAFETY (for every call below): the register lives in a mapping owned by
// the Device for its whole lifetime, and any u64 is a valid value for the
// memory; what the value means is the device's business (it validates it).
fn reg_write(reg: &RW<u64>, value: u64) {
    // SAFETY: see above; volatile-register marks writes unsafe only because
    // device registers can have side effects, which ours (MMIO) are meant to.
    unsafe { reg.write(value) }
}

/// `…/resourceN_wc` for a sysfs `…/resourceN` that has one.
fn wc_sibling(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let n = name.strip_prefix("resource")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(path.with_file_name(format!("{name}_wc"))).filter(|p| p.exists())
}

/// `reason` with what to do when the OS ran out of mappings: at thousands
/// of ranks in one process (ranks as contexts) that is `vm.max_map_count`,
/// not memory.
fn mapping_advice(reason: String) -> String {
    if reason.contains("os error 12") {
        let most = std::fs::read_to_string("/proc/sys/vm/max_map_count").unwrap_or_default();
        format!(
            "{reason}; if memory is not short, the process has used up its memory mappings \
             (vm.max_map_count = {}): raise it (sysctl -w vm.max_map_count=262144) or run fewer ranks per process",
            most.trim()
        )
    } else {
        reason
    }
}

impl Device {
    /// Open `path` (a device node, or a simulator node file) and map `slot`.
    pub fn open(path: impl AsRef<Path>, slot: u16) -> Result<Device, DriverError> {
        Device::open_with(path, &OpenOptions { slot, actor: None })
    }

    /// Open with options.
    pub fn open_with(path: impl AsRef<Path>, opts: &OpenOptions) -> Result<Device, DriverError> {
        let path = path.as_ref().to_path_buf();
        let open_err = |reason: String| DriverError::Open { path: path.display().to_string(), reason };
        let file =
            std::fs::OpenOptions::new().read(true).write(true).open(&path).map_err(|e| open_err(e.to_string()))?;
        if opts.slot as usize >= layout::MAX_SLOTS {
            return Err(DriverError::Invalid(format!(
                "slot {} is beyond the largest slot number {}",
                opts.slot,
                layout::MAX_SLOTS - 1
            )));
        }
        let base = opts.slot as u64 * SLOT_STRIDE as u64;
        if let Ok(meta) = file.metadata() {
            if meta.is_file() && meta.len() < base + SLOT_STRIDE as u64 {
                return Err(open_err(format!(
                    "slot {} is not in this device (file has {} slots)",
                    opts.slot,
                    meta.len() / SLOT_STRIDE as u64
                )));
            }
        }
        // A regular file (the simulator's node file, a PCI BAR in sysfs) is
        // mapped once per slot and every window is a view of it: one OS
        // mapping per rank instead of four, so 10,000 ranks of one process
        // stay under `vm.max_map_count`. A device node may give each window
        // its own caching (seed 004 §8.1), so each gets its own mapping.
        let whole = match file.metadata() {
            Ok(meta) if meta.is_file() => Some(
                Mapping::map(&file, &path, base, SLOT_STRIDE).map_err(|e| open_err(mapping_advice(e.to_string())))?,
            ),
            _ => None,
        };
        let map = |r: Region| {
            match &whole {
                Some(w) => w.view(r.offset(), r.size()),
                None => Mapping::map(&file, &path, base + r.offset() as u64, r.size()),
            }
            .map_err(|e| open_err(mapping_advice(e.to_string())))
        };
        // A PCI BAR in sysfs: `resourceN` maps uncached, `resourceN_wc`
        // (present for a prefetchable BAR) write-combining. WW is the window
        // the card's interface lets the host fill with write-combined bursts
        // (seed 004 §2.2), so it comes from the second file when there is
        // one; the doorbell's fence drains it (`ring_doorbell`).
        let wc = wc_sibling(&path)
            .and_then(|p| std::fs::OpenOptions::new().read(true).write(true).open(&p).ok().map(|f| (p, f)));
        let ww = match &wc {
            Some((wc_path, wc_file)) => {
                Mapping::map(wc_file, wc_path, base + Region::Ww.offset() as u64, Region::Ww.size())
                    .map_err(|e| open_err(e.to_string()))?
            }
            None => map(Region::Ww)?,
        };
        let (ur_map, llcm, pw) = (map(Region::Ur)?, map(Region::Llcm)?, map(Region::Pw)?);
        let regs = ur_map.block::<UserRegs>(0).map_err(|e| open_err(e.to_string()))?;
        let id = regs.id.read();
        let incompatible = |reason: String| DriverError::Incompatible { path: path.display().to_string(), reason };
        if ur::id::MAGIC.get(id) != ur::MAGIC as u64 {
            return Err(incompatible(format!(
                "bad magic {:#x} in UR ID (expected {:#x})",
                ur::id::MAGIC.get(id),
                ur::MAGIC
            )));
        }
        let major = ur::id::MAJOR.get(id) as u16;
        if major != ur::VERSION_MAJOR {
            return Err(incompatible(format!(
                "register map version {major}.x, this driver speaks {}.x",
                ur::VERSION_MAJOR
            )));
        }
        let topo = Topology::decode(regs.topology.read());
        let caps = Caps::from_bits_truncate(ur::caps::FLAGS.get(regs.caps.read()) as u32);
        let info = DeviceInfo {
            me: Peer::new(topo.node, topo.slot),
            nodes: topo.nodes,
            slots: topo.slots,
            sodimm_base: regs.sodimm_base.read(),
            sodimm_size: regs.sodimm_size.read(),
            caps,
            max_payload: ur::limits::MAX_PAYLOAD.get(regs.limits.read()) as u32,
            version: (major, ur::id::MINOR.get(id) as u16),
        };
        let sim_dir = path.parent().map(|p| p.join(simctl::FILE_NAME)).filter(|p| p.exists());
        let platform = match sim_dir {
            Some(ctl) if caps.contains(Caps::SIMULATED) => {
                let dir = ctl.parent().unwrap_or(Path::new("."));
                Platform::Simulated(SimActor::attach(dir, topo.node, topo.slot, opts.actor)?)
            }
            _ => Platform::Hardware(Hardware::new()),
        };
        let mut dev = Device {
            path,
            ur: ur_map,
            llcm,
            ww,
            pw,
            info,
            platform,
            posted: 0,
            pending: Pending::new(),
            ww_dirty: false,
            ww_write_combining: wc.is_some(),
            rings: Vec::new(),
            reads: ReadLog::default(),
            id_word: id,
        };
        // A freshly attached slot starts at zero; on hardware, continue from
        // whatever the previous owner left (the doorbell is monotonic).
        dev.posted = dev.regs().doorbell.read();
        Ok(dev)
    }

    fn regs(&self) -> &UserRegs {
        // Mapped and checked in `open_with`.
        self.ur.block::<UserRegs>(0).expect("UR mapped at open")
    }

    /// Whether WW is mapped write-combining (from a PCI BAR's
    /// `resourceN_wc` beside the `resourceN` opened), rather than through the
    /// same mapping as the other windows.
    pub fn ww_write_combining(&self) -> bool {
        self.ww_write_combining
    }

    /// Facts about this slot.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Charge host work to the simulated clock (no-op on hardware).
    #[inline]
    pub fn charge(&self, cost: HostCost, n: u64) {
        self.platform.charge(cost, n);
    }

    /// Account for `ns` nanoseconds of application work in simulated time
    /// (no-op on hardware), then let earlier-clocked processes catch up.
    pub fn compute(&self, ns: f64) -> Result<(), DriverError> {
        self.platform.advance((ns.max(0.0) * 1000.0) as u64);
        self.platform.observe()
    }

    /// Account for `ns` nanoseconds of waiting on something outside the
    /// simulation, then hand control to the simulator whatever the horizon
    /// (no-op on hardware): the others run, and wake-ups from outside are
    /// looked at.
    pub fn pause(&self, ns: f64) -> Result<(), DriverError> {
        self.platform.advance((ns.max(0.0) * 1000.0) as u64);
        self.platform.sync()
    }

    /// Re-synchronise with the device after raw [`Device::poke`]s of
    /// DOORBELL: wait until every fetched command has ended, then continue
    /// from the device's fetch count. Outstanding tickets are forgotten.
    pub fn resync(&mut self) -> Result<(), DriverError> {
        self.pending.clear();
        self.platform.sync()?;
        self.settle()?;
        // The device changes these words while we read them, so the order
        // matters. BUSY first: once it is clear, nothing more is fetched
        // until we ring again, so the counts read after it are final. (Read
        // last, a clear BUSY could belong to a later moment than a stale
        // fetch count, and we would post over commands still to be fetched.)
        let fetched = self.poll(|d| {
            if d.status().contains(ur::Status::BUSY) {
                return None;
            }
            let fetched = d.read_ur(ur::off::CMD_FETCHED);
            let done = d.read_ur(ur::off::CMD_COMPLETED);
            (done == fetched).then_some(fetched)
        })?;
        self.posted = fetched;
        let regs = self.ur.block::<UserRegs>(0).expect("UR mapped at open");
        self.uc_write(&regs.doorbell, fetched);
        Ok(())
    }

    /// On hardware, wait until the device has seen every store this process
    /// made to the slot, so that what is read next reflects them. A card
    /// sees each store as it comes and ignores stores to its read-only
    /// registers, so there this is two stores to UR ID and two loads. The
    /// model as a device (`dimmnet-sim serve --realtime`) sees the host's
    /// stores by looking, between passes, and undoes a store to a read-only
    /// register in the pass after it: once ID reads back its value twice,
    /// a whole pass has begun after every earlier store was visible, and
    /// has acted on them (a raw doorbell included). Without this, a resync
    /// right after a raw doorbell could read the counts from before the
    /// device saw it, and post over what it then fetched.
    fn settle(&mut self) -> Result<(), DriverError> {
        if !matches!(self.platform, Platform::Hardware(_)) {
            return Ok(());
        }
        let id = self.id_word;
        for _ in 0..2 {
            self.ur.write_u64(ur::off::ID, !id).map_err(|e| DriverError::Invalid(e.to_string()))?;
            self.poll(|d| (d.read_ur(ur::off::ID) == id).then_some(()))?;
        }
        Ok(())
    }

    /// How many of each host cost this process has charged, indexed by
    /// [`HostCost`] (simulation only).
    pub fn cost_counts(&self) -> Option<[u64; simlink::simctl::COST_SLOTS]> {
        self.platform.cost_counts()
    }

    /// The host profile's cost of each [`HostCost`] in picoseconds
    /// (femtoseconds per byte for copies), simulation only.
    pub fn cost_table(&self) -> Option<[u64; simlink::simctl::COST_SLOTS]> {
        self.platform.cost_table()
    }

    /// Simulated time in picoseconds (`None` on hardware).
    pub fn now_ps(&self) -> Option<u64> {
        self.platform.now_ps()
    }

    /// In simulation, have the model expect `count` more processes (ranks a
    /// rank spawned, MPI 4.1 §11.8), beginning at this process's clock; no
    /// party runs until all have attached. Nothing on hardware.
    pub fn expect_actors(&self, count: u32) {
        self.platform.expect_actors(count)
    }

    /// In simulation, what the process's other threads use to end this
    /// process's wait in [`Device::idle`] (see [`simlink::actor::Poker`]);
    /// `None` on hardware, whose waits spin.
    pub fn poker(&self) -> Result<Option<simlink::actor::Poker>, DriverError> {
        self.platform.poker()
    }

    /// Start a round of polls: in simulation, catch up with the model if
    /// this process ran past its horizon, and start recording which device
    /// words the round reads.
    pub fn observe(&self) -> Result<(), DriverError> {
        self.reads.reset();
        self.platform.observe()
    }

    /// A round of polls found nothing: block until the device writes one of
    /// the words read since [`Device::observe`] (simulation) or spin once
    /// (hardware).
    pub fn idle(&self) -> Result<(), DriverError> {
        self.reads.with(self.platform.epoch(), |w| self.platform.idle(w, WaitStart::UNBOUNDED))
    }

    /// Limit how long one of this device's own waits ([`Device::wait`],
    /// [`Device::run`], [`Device::poll`]) may spin on a real card; `None`
    /// (the default) waits for ever. Each wait has its own limit. No effect
    /// in simulation, where a wait that cannot end is reported as a deadlock.
    pub fn set_wait_timeout(&self, timeout: Option<std::time::Duration>) {
        self.platform.set_wait_timeout(timeout);
    }

    /// Measure hardware wait timeouts on a fake clock (tests only).
    #[doc(hidden)]
    pub fn set_wait_clock(&mut self, clock: Box<dyn Fn() -> std::time::Instant + Send>) {
        self.platform.set_wait_clock(clock);
    }

    /// Block until the device changes one of `words` — `(slot offset, value
    /// this process last read there)`, see [`Device::ring_nwa_word`] and
    /// [`Device::completion_word`] — or spin once on hardware. A word that
    /// already differs from its value ends the wait at once, so a change
    /// that happened while this process was busy is never missed. An empty
    /// list waits for any change; more than [`simctl::MAX_WATCH`] words is
    /// an error in simulation (nothing is ever silently watched less).
    pub fn idle_on(&self, words: &[(u32, u64)]) -> Result<(), DriverError> {
        let watch = if words.is_empty() { Watch::ChangeSince(self.platform.epoch()) } else { Watch::Words(words) };
        self.platform.idle(watch, WaitStart::UNBOUNDED)
    }

    /// Slot offset of the completion word of a command (for [`Device::idle_on`]).
    pub fn completion_word(&self, t: Ticket) -> u32 {
        (Region::Ur.offset() + ur::off::COMPLETIONS + (t.0 as usize % CQ_DEPTH) * ur::off::COMPLETION_STRIDE) as u32
    }

    /// Slot offset of the NWA word of `src`'s ring (for [`Device::idle_on`]).
    pub fn ring_nwa_word(&self, src: Peer) -> Result<u32, DriverError> {
        let idx = self.source_index(src)?;
        Ok((Region::Llcm.offset() + fpga_regs::llcm::off::ring(idx) + fpga_regs::llcm::off::RING_NWA) as u32)
    }

    #[inline]
    fn uc_read(&self, reg: &volatile_register::RO<u64>) -> u64 {
        self.platform.charge(HostCost::UcRead, 1);
        let off = reg as *const _ as usize - self.regs() as *const _ as usize;
        // A failed hand-over (shutdown, simulator gone) fails the next
        // observe/idle the same way, so the value read here goes nowhere.
        let _ = self.platform.before_read(Device::watched_ur(off));
        let v = reg.read();
        self.reads.log(Region::Ur.offset() + off, v, self.platform.epoch());
        v
    }

    /// What kind of UR word lies at `off`.
    #[inline]
    fn watched_ur(off: usize) -> Watched {
        let entries = ur::off::COMPLETIONS..ur::off::COMPLETIONS + CQ_DEPTH * ur::off::COMPLETION_STRIDE;
        if entries.contains(&off) {
            Watched::Completion((off - ur::off::COMPLETIONS) / ur::off::COMPLETION_STRIDE)
        } else if off == ur::off::RX_ACCEPTED {
            // Moves only when a record is published in a ring, together
            // with that ring's NWA: as current as LLCM.
            Watched::Llcm
        } else {
            Watched::UrRegister
        }
    }

    #[inline]
    fn uc_write(&self, reg: &RW<u64>, v: u64) {
        self.platform.charge(HostCost::UcWrite, 1);
        reg_write(reg, v);
    }

    // ---- windows ------------------------------------------------------------

    /// Write `data` into WW at `off` (write-combined: charged per 64-byte line).
    pub fn write_ww(&mut self, off: usize, data: &[u8]) -> Result<(), DriverError> {
        check_range("WW", off, data.len(), layout::WW_SIZE)?;
        if data.is_empty() {
            return Ok(());
        }
        let lines = (off % 64 + data.len()).div_ceil(64) as u64;
        self.platform.charge(HostCost::WcLine, lines);
        self.ww.write_bytes(off, data).map_err(|e| DriverError::Invalid(e.to_string()))?;
        self.ww_dirty = true;
        Ok(())
    }

    /// Write the concatenation of `parts` into WW at `off`: a gather, so
    /// that a packet goes into WW from where its pieces are (a header here,
    /// the user's buffer there) with no image assembled first. Charged as
    /// one write of the whole: per 64-byte write-combining line touched.
    pub fn write_ww_gather(&mut self, off: usize, parts: &[&[u8]]) -> Result<(), DriverError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        check_range("WW", off, len, layout::WW_SIZE)?;
        if len == 0 {
            return Ok(());
        }
        let lines = (off % 64 + len).div_ceil(64) as u64;
        self.platform.charge(HostCost::WcLine, lines);
        let mut at = off;
        for p in parts.iter().filter(|p| !p.is_empty()) {
            self.ww.write_bytes(at, p).map_err(|e| DriverError::Invalid(e.to_string()))?;
            at += p.len();
        }
        self.ww_dirty = true;
        Ok(())
    }

    /// Read `buf.len()` bytes from PW at `off`, charged per 8 bytes at the
    /// profile's PW read cost (uncached 8-byte loads on the paper's host).
    pub fn read_pw(&self, off: usize, buf: &mut [u8]) -> Result<(), DriverError> {
        check_range("PW", off, buf.len(), layout::PW_SIZE)?;
        self.platform.charge(HostCost::PwRead, (buf.len() as u64).div_ceil(8));
        self.platform.before_read(Watched::Pw)?;
        self.pw.read_bytes(off, buf).map_err(|e| DriverError::Invalid(e.to_string()))?;
        if let (0, Some(w)) = (off % 8, buf.first_chunk::<8>()) {
            self.reads.log(Region::Pw.offset() + off, u64::from_le_bytes(*w), self.platform.epoch());
        }
        Ok(())
    }

    /// Read a 64-bit word of LLCM scratch or ring table (uncached).
    pub fn read_llcm(&self, off: usize) -> Result<u64, DriverError> {
        self.platform.charge(HostCost::UcRead, 1);
        self.platform.before_read(Watched::Llcm)?;
        let v = self.llcm.read_u64(off).map_err(|e| DriverError::Invalid(e.to_string()))?;
        self.reads.log(Region::Llcm.offset() + off, v, self.platform.epoch());
        Ok(v)
    }

    /// Write a 64-bit word of LLCM (uncached).
    pub fn write_llcm(&self, off: usize, v: u64) -> Result<(), DriverError> {
        self.platform.charge(HostCost::UcWrite, 1);
        self.llcm.write_u64(off, v).map_err(|e| DriverError::Invalid(e.to_string()))
    }

    /// Raw access to the slot for fuzzing: write `value` at byte `off` of
    /// `region`. Bypasses every check the typed API makes; the device must
    /// cope. Charged like any uncached (or write-combined) store.
    pub fn poke(&mut self, region: Region, off: usize, value: u64) -> Result<(), DriverError> {
        let map = match region {
            Region::Ur => &self.ur,
            Region::Llcm => &self.llcm,
            Region::Ww => &self.ww,
            Region::Pw => &self.pw,
        };
        let cost = if region == Region::Ww { HostCost::WcLine } else { HostCost::UcWrite };
        self.platform.charge(cost, 1);
        map.write_u64(off & !7, value).map_err(|e| DriverError::Invalid(e.to_string()))?;
        if region == Region::Ur && (off & !7) == ur::off::DOORBELL {
            // Tell the simulator when the (possibly garbage) doorbell was rung.
            let v = value.min(self.posted + CQ_DEPTH as u64);
            for seq in self.posted..v {
                self.platform.doorbell(seq, Effects::anything(seq));
            }
        }
        Ok(())
    }

    /// Raw read of a 64-bit word of `region`.
    pub fn peek(&self, region: Region, off: usize) -> Result<u64, DriverError> {
        let map = match region {
            Region::Ur => &self.ur,
            Region::Llcm => &self.llcm,
            Region::Ww => &self.ww,
            Region::Pw => &self.pw,
        };
        self.platform.charge(HostCost::UcRead, 1);
        self.platform.before_read(match region {
            Region::Ur => Device::watched_ur(off & !7),
            Region::Llcm => Watched::Llcm,
            Region::Ww => Watched::Ww,
            Region::Pw => Watched::Pw,
        })?;
        let v = map.read_u64(off & !7).map_err(|e| DriverError::Invalid(e.to_string()))?;
        self.reads.log(region.offset() + off, v, self.platform.epoch());
        Ok(v)
    }

    // ---- commands -----------------------------------------------------------

    /// Post a command. Blocks only while all 32 queue entries are in use.
    pub fn submit(&mut self, cmd: &Command) -> Result<Ticket, DriverError> {
        let effects = self.effects(cmd, self.posted);
        self.post(cmd.encode(), cmd.opcode().name(), effects)
    }

    /// Which of this slot's own words command `seq` may change (for the
    /// simulator's conservative read check; see [`Effects`]). A BOTF posted
    /// by [`Device::submit`] may carry any packet the host wrote, so it may
    /// change anything; [`Device::submit_packet`] knows better.
    fn effects(&self, cmd: &Command, seq: u64) -> Effects {
        let me = self.info.me;
        let only_ur = Effects { entry: seq as usize % CQ_DEPTH, llcm: false, pw: false };
        match cmd {
            Command::Vs { .. } | Command::Rvs { .. } => only_ur,
            Command::Vl { .. } | Command::Amo { .. } => Effects { pw: true, ..only_ur },
            Command::Rvl { dst, .. } => Effects { pw: matches!(dst, fpga_regs::Near::Window(_)), ..only_ur },
            Command::Ivs { peer, .. } => Effects { llcm: *peer == me, ..only_ur },
            // The schedule runs on after the command ends: it may write this
            // slot's SCHED words at any time and send to anyone.
            Command::Sched { .. } | Command::Botf { .. } => Effects::anything(seq),
        }
    }

    /// Post raw descriptor words as they are (for fuzzing the device's
    /// decoder); the device refuses anything malformed with an error status.
    pub fn submit_raw(&mut self, words: [u64; 8]) -> Result<Ticket, DriverError> {
        let name = Opcode::from_raw(words[0] as u8).map_or("RAW", Opcode::name);
        self.post(words, name, Effects::anything(self.posted))
    }

    fn post(&mut self, words: [u64; 8], name: &'static str, effects: Effects) -> Result<Ticket, DriverError> {
        let seq = self.posted;
        // Entry seq % 32 may be rewritten once command seq - 32 has ended.
        if let Some(old) = self.pending.occupant(seq) {
            self.reap_blocking(old)?;
        }
        let regs = self.ur.block::<UserRegs>(0).expect("UR mapped at open");
        let slot = &regs.descriptors[seq as usize % CQ_DEPTH];
        for (reg, w) in slot.words.iter().zip(words) {
            self.uc_write(reg, w);
        }
        self.ring_doorbell(seq + 1, effects);
        self.pending.slots[seq as usize % CQ_DEPTH] = Some((seq, name));
        self.posted = seq + 1;
        Ok(Ticket(seq))
    }

    fn ring_doorbell(&mut self, value: u64, effects: Effects) {
        if self.ww_dirty {
            // Drain write-combining buffers so the device sees WW before the doorbell.
            self.platform.charge(HostCost::WcFlush, 1);
            self.ww_dirty = false;
        }
        fence(SeqCst);
        let regs = self.ur.block::<UserRegs>(0).expect("UR mapped at open");
        self.uc_write(&regs.doorbell, value);
        self.platform.doorbell(value - 1, effects);
    }

    fn read_completion(&self, seq: u64) -> Option<CompletionResult> {
        let regs = self.regs();
        let e = &regs.completions[seq as usize % CQ_DEPTH];
        if self.uc_read(&e.done) != seq + 1 {
            return None;
        }
        Some(CompletionResult::decode(self.uc_read(&e.result)))
    }

    fn reap_blocking(&mut self, seq: u64) -> Result<(), DriverError> {
        let r = self.wait_completion(seq)?;
        if let Some(op) = self.pending.remove(seq) {
            self.pending.reaped.push_back((seq, op, r));
        }
        Ok(())
    }

    fn finish(seq: u64, op: &'static str, r: CompletionResult) -> Result<Completion, DriverError> {
        match ErrorCode::from_raw(r.status) {
            Some(ErrorCode::Ok) => Ok(Completion { seq, bytes: r.bytes }),
            Some(code) => Err(DriverError::Device { op, seq, code }),
            None => Err(DriverError::UnknownStatus { seq, raw: r.status }),
        }
    }

    /// Block until command `seq` has ended.
    ///
    /// In simulation, a command rung since the last hand-over may change its
    /// completion entry `lookahead` after its doorbell, so a conservative
    /// read there hands over first — and, the command being rarely done that
    /// soon, hands over a second time to wait. Knowing the one word it will
    /// read, this wait hands over once instead: it charges the read, then
    /// waits on the word (ending at once if the device changed it by this
    /// clock). The simulated times are those of the conservative
    /// sync-read-wait-read sequence: when the change came later than the
    /// read, the read that sees it is charged again.
    fn wait_completion(&self, seq: u64) -> Result<CompletionResult, DriverError> {
        let idx = seq as usize % CQ_DEPTH;
        let word = self.completion_word(Ticket(seq));
        let e = &self.regs().completions[idx];
        let start = self.platform.wait_start();
        loop {
            self.observe()?;
            self.platform.charge(HostCost::UcRead, 1);
            if self.platform.read_needs_sync(Watched::Completion(idx)) {
                // The model's current view, read for the wait (not a host access).
                let seen = e.done.read();
                if seen != seq + 1 {
                    let at = self.platform.now_ps();
                    self.platform.idle(Watch::Words(&[(word, seen)]), start)?;
                    if self.platform.now_ps() != at {
                        // Changed after the read: the read that sees it comes now.
                        self.platform.charge(HostCost::UcRead, 1);
                    }
                }
            }
            let done = e.done.read();
            self.reads.log(word as usize, done, self.platform.epoch());
            if done == seq + 1 {
                // Written together with the done word: as current as it.
                self.platform.charge(HostCost::UcRead, 1);
                return Ok(CompletionResult::decode(e.result.read()));
            }
            self.reads.with(self.platform.epoch(), |w| self.platform.idle(w, start))?;
        }
    }

    /// Poll `f` until it yields a value, letting the device progress between
    /// polls (on a card, for at most the wait timeout, if one is set).
    pub fn poll<T>(&self, mut f: impl FnMut(&Device) -> Option<T>) -> Result<T, DriverError> {
        let start = self.platform.wait_start();
        loop {
            self.observe()?;
            if let Some(v) = f(self) {
                return Ok(v);
            }
            self.reads.with(self.platform.epoch(), |w| self.platform.idle(w, start))?;
        }
    }

    /// Wait for a command to end. A refused command is an error.
    pub fn wait(&mut self, t: Ticket) -> Result<Completion, DriverError> {
        if let Some((op, r)) = self.pending.take_reaped(t.0) {
            return Device::finish(t.0, op, r);
        }
        let Some(op) = self.pending.get(t.0) else {
            return Err(DriverError::UnknownTicket(t.0));
        };
        let r = self.wait_completion(t.0)?;
        self.pending.remove(t.0);
        Device::finish(t.0, op, r)
    }

    /// Check once whether a command has ended (`Ok(None)`: not yet).
    pub fn try_wait(&mut self, t: Ticket) -> Result<Option<Completion>, DriverError> {
        if let Some((op, r)) = self.pending.take_reaped(t.0) {
            return Device::finish(t.0, op, r).map(Some);
        }
        let Some(op) = self.pending.get(t.0) else {
            return Err(DriverError::UnknownTicket(t.0));
        };
        self.observe()?;
        match self.read_completion(t.0) {
            None => Ok(None),
            Some(r) => {
                self.pending.remove(t.0);
                Device::finish(t.0, op, r).map(Some)
            }
        }
    }

    /// Post a command and wait for it.
    pub fn run(&mut self, cmd: &Command) -> Result<Completion, DriverError> {
        let t = self.submit(cmd)?;
        self.wait(t)
    }

    /// Commands posted and not yet waited for.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    // ---- status and errors --------------------------------------------------

    /// The error registers.
    pub fn errors(&self) -> ErrorStatus {
        let regs = self.regs();
        let count = self.uc_read(&regs.error_count);
        let last = self.uc_read(&regs.last_error);
        let ack = regs.error_ack.read();
        self.platform.charge(HostCost::UcRead, 1);
        ErrorStatus {
            count,
            last: (count > 0).then(|| ErrorCode::from_raw(ur::last_error::CODE.get(last) as u16)).flatten(),
            last_seq: (ur::last_error::HAS_SEQ.get(last) == 1).then_some(ur::last_error::SEQ.get(last) as u32),
            unacknowledged: count.saturating_sub(ack),
        }
    }

    /// Acknowledge every error reported so far (clears `STATUS.ERROR`).
    pub fn ack_errors(&self) {
        let regs = self.regs();
        let count = self.uc_read(&regs.error_count);
        self.uc_write(&regs.error_ack, count);
    }

    /// The STATUS register.
    pub fn status(&self) -> ur::Status {
        ur::Status::from_bits_truncate(self.uc_read(&self.regs().status))
    }

    /// Read a UR register by offset (diagnostics).
    pub fn read_ur(&self, off: usize) -> u64 {
        self.platform.charge(HostCost::UcRead, 1);
        let _ = self.platform.before_read(Device::watched_ur(off & !7));
        let v = self.ur.read_u64(off & !7).unwrap_or(0);
        self.reads.log(Region::Ur.offset() + off, v, self.platform.epoch());
        v
    }

    // ---- exposure -----------------------------------------------------------

    /// Let remote RVS (`REMOTE_WRITE`) / RVL (`REMOTE_READ`) touch
    /// `[base, base+size)` of this slot's partition, in exposure entry `index`.
    pub fn expose(&self, index: usize, base: u64, size: u32, perm: ExposePerm) -> Result<(), DriverError> {
        if index >= EXPOSE_ENTRIES {
            return Err(DriverError::Invalid(format!("exposure entry {index} does not exist (0..{EXPOSE_ENTRIES})")));
        }
        self.check_partition(base, size as u64)?;
        let e = &self.regs().expose[index];
        self.uc_write(&e.size_perm, 0);
        self.uc_write(&e.base, base);
        self.uc_write(&e.size_perm, ur::expose::PERM.set(ur::expose::SIZE.set(0, size as u64), perm.bits()));
        Ok(())
    }

    /// Withdraw exposure entry `index`.
    pub fn unexpose(&self, index: usize) -> Result<(), DriverError> {
        if index >= EXPOSE_ENTRIES {
            return Err(DriverError::Invalid(format!("exposure entry {index} does not exist (0..{EXPOSE_ENTRIES})")));
        }
        self.uc_write(&self.regs().expose[index].size_perm, 0);
        Ok(())
    }

    /// Check that a range lies in this slot's partition.
    pub fn check_partition(&self, base: u64, len: u64) -> Result<(), DriverError> {
        let lo = self.info.sodimm_base;
        let hi = lo + self.info.sodimm_size;
        if base < lo || base.checked_add(len).is_none_or(|e| e > hi) {
            return Err(DriverError::Invalid(format!(
                "SO-DIMM range {base:#x}+{len:#x} is outside this slot's partition {lo:#x}..{hi:#x}"
            )));
        }
        Ok(())
    }

    /// Leave the simulator explicitly (also happens on drop).
    pub fn detach(&self) {
        if let Platform::Simulated(a) = &self.platform {
            a.detach();
        }
    }
}

fn check_range(what: &str, off: usize, len: usize, size: usize) -> Result<(), DriverError> {
    if off.checked_add(len).is_none_or(|e| e > size) {
        return Err(DriverError::Invalid(format!("{what} range {off:#x}+{len:#x} exceeds the {size}-byte window")));
    }
    Ok(())
}
