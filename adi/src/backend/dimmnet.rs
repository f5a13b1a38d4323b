//! The DIMMnet-2 backend (seed 004 §4–5).
//!
//! * Virtual connections are IVS rings: every rank gives each source rank
//!   its own ring in its SO-DIMM partition (IPUSH), so messages from one
//!   sender arrive in order and nothing is lost.
//! * Messages (control packets, eager data) are sent with BOTF, TYPE=IVS:
//!   the host writes the packet image into WW and the controller sends it.
//!   A message longer than one packet payload is sent as consecutive
//!   packets into the same ring.
//! * The receiver reads its rings through VL into PW and advances NRA.
//! * Rendezvous data goes with RVS from WW straight into a landing zone the
//!   receiver exposed (its "buffer" of seed 004 §5); the receiver copies it
//!   out through VL/PW. Unlike the paper, user buffers are ordinary host
//!   memory, so staging through WW and PW is this backend's job.
//!
//! Flow control (ours): the sender counts the bytes it appended to each
//! peer's ring; the receiver reports how much it consumed in every message
//! it sends back (16-byte backend header), or in an explicit credit message
//! once a quarter of the ring is unreported. Ordinary messages leave two
//! credit messages' worth of room, so credit can always flow and the device
//! never has to hold a packet (which would stall the command queue).
//!
//! Partition layout (ours): a 4 KiB hello page at the partition base
//! (exposed for remote reads: peers RVL it to know this rank is ready), the
//! rings from +64 KiB, then landing zones from the next MiB boundary
//! (exposed for remote writes). Unless `DN_RING_KIB` says otherwise, rings
//! are 64 KiB, or the largest power of two that lets every peer's ring and
//! the landing zones fit the partition (32 KiB at 1,024 ranks in 64 MiB).
//!
//! Finding new messages (ours): with up to [`DEFAULT_SCAN_PEERS`] peers a
//! poll reads every ring's NWA, as seed 004 §7 does. With more, scanning
//! costs an uncached read per peer per poll (110 us of the paper's host at
//! 1,024 ranks), so the rank follows the device's arrival queue (register
//! map 1.2) instead: one read of `RX_ACCEPTED` when nothing came, one more
//! per record, and only the rings named are drained.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::job::LaunchRefusal;
use driver::{ArrivalCursor, Device, DriverError, OpenOptions, Ticket};
use fpga_regs::llcm::{record_len, RING_ALIGN};
use fpga_regs::packet::PacketHeader;
use fpga_regs::ur::{ExposePerm, MAX_PAYLOAD};
use fpga_regs::{Command, ErrorCode, Near, Pattern, Peer};

mod traits;

mod first_fit;
mod offload;
mod one_sided;

use crate::error::TransportError;
use crate::transport::{Arrival, Caps, HostCost, Region, RemoteMemory, SimClock, Transport, ARRIVAL_HEAD};

const BACKEND: &str = "dimmnet";
/// Backend header in front of every message in a ring.
const DN_HDR: usize = 16;
const KIND_MSG: u8 = 1;
const KIND_CREDIT: u8 = 2;
/// Bytes the sender may still append to a peer's ring of `ring` bytes, with
/// `acked` of the `sent` bytes consumed there. Saturating: a peer's credit
/// is checked against `sent` before it is believed, and even so the sum may
/// not wrap.
fn ring_room(acked: u64, sent: u64, ring: u32) -> u64 {
    acked.saturating_add(ring as u64).saturating_sub(sent)
}

/// Room kept in every ring for credit messages.
const CREDIT_RESERVE: u64 = 2 * DN_HDR as u64;
const HELLO_MAGIC: u64 = u64::from_le_bytes(*b"DNADIHI1");
/// Where rings start in the partition.
const RING_AREA: u64 = 64 * 1024;
/// How many bytes of a ring are loaded first (header plus small messages).
const PEEK: u64 = 256;
/// PW areas: ring reads, second half of long ring reads, connection probes, landing-zone copies.
const PW_RING: u32 = 0;
const PW_CONNECT: u32 = 0x7000;
const PW_COPY: u32 = 0x8000;
const PW_COPY_HALF: u64 = 0x4000;
/// WW: packet images and rendezvous staging chunks.
const WW_CHUNK: usize = 16 * 1024;

/// Most peers whose rings a poll reads one by one; with more, the rank
/// follows the arrival queue (`DN_RING_SCAN_PEERS` changes it). Jobs of up
/// to 17 ranks thus run the seed's receive path unchanged.
pub const DEFAULT_SCAN_PEERS: u32 = 16;

/// Largest ring the automatic size picks.
const AUTO_RING_MAX: u32 = 64 * 1024;

/// Tunables.
#[derive(Clone, Debug)]
pub struct DimmnetConfig {
    /// Bytes per IVS ring (one ring per source rank); 0: the largest power
    /// of two up to 64 KiB with which every ring and the landing zones fit
    /// the partition.
    pub ring_bytes: u32,
    /// Bytes per landing zone.
    pub zone_bytes: u64,
    /// Number of landing zones.
    pub zones: usize,
    /// Default eager threshold.
    pub eager_threshold: usize,
    /// Follow the arrival queue instead of reading every ring when a rank
    /// has more peers than this (and the device has the queue).
    pub scan_peers: u32,
}

impl Default for DimmnetConfig {
    fn default() -> Self {
        DimmnetConfig {
            ring_bytes: 0,
            zone_bytes: 1 << 20,
            zones: 8,
            eager_threshold: 16 * 1024,
            scan_peers: DEFAULT_SCAN_PEERS,
        }
    }
}

/// How a rank finds messages that arrived (see the module documentation).
enum Incoming {
    /// Read every peer's NWA: the words idle watches, with the value last
    /// read, and each rank's index among them.
    Scan { watch: Vec<(u32, u64)>, watch_of: Vec<usize> },
    /// Follow the arrival queue.
    Queue {
        cursor: ArrivalCursor,
        /// Scratch: the sources the last read named, and whether a rank
        /// was named already this poll.
        named: Vec<Peer>,
        marked: Vec<bool>,
        /// Ranks to drain this poll.
        drain: Vec<u32>,
        /// Rank of each source index (`u32::MAX`: none).
        rank_of: Vec<u32>,
    },
}

/// Where each rank runs: node and slot.
#[derive(Clone, Debug)]
pub struct RankMap {
    peers: Vec<Peer>,
}

impl RankMap {
    /// Ranks in blocks: `ceil(size / nodes)` consecutive ranks per node.
    pub fn block(size: u32, nodes: u16) -> Result<RankMap, TransportError> {
        if nodes == 0 || size == 0 {
            return Err(TransportError::Config("a job needs at least one node and one rank".into()));
        }
        let per = size.div_ceil(nodes as u32);
        Ok(RankMap { peers: (0..size).map(|r| Peer::new((r / per) as u16, (r % per) as u16)).collect() })
    }

    /// An explicit map: `"0.0,0.1,1.0"` (node.slot per rank).
    pub fn parse(s: &str) -> Result<RankMap, TransportError> {
        let bad = || TransportError::Config(format!("rank map {s:?} must look like 0.0,0.1,1.0 (node.slot per rank)"));
        let peers = s
            .split(',')
            .map(|e| {
                let (n, sl) = e.trim().split_once('.').ok_or_else(bad)?;
                Ok(Peer::new(n.parse().map_err(|_| bad())?, sl.parse().map_err(|_| bad())?))
            })
            .collect::<Result<Vec<_>, TransportError>>()?;
        Ok(RankMap { peers })
    }

    /// The slot of `rank`.
    pub fn peer(&self, rank: u32) -> Peer {
        self.peers[rank as usize]
    }

    /// Number of ranks.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}

fn map_err(e: DriverError) -> TransportError {
    match e {
        DriverError::Deadlock { message, .. } => TransportError::Deadlock(message),
        DriverError::Shutdown => TransportError::Shutdown,
        DriverError::Device { code, .. } => {
            TransportError::Device { backend: BACKEND, fault: fault_of(code), message: e.to_string() }
        }
        other => TransportError::Backend { backend: BACKEND, msg: other.to_string() },
    }
}

/// The kind of fault each of the device's codes is (`fpga_regs::ErrorCode`,
/// docs/REGISTERS.md "Errors"), for the MPI error class a program sees.
pub(crate) fn fault_of(code: fpga_regs::ErrorCode) -> crate::DeviceFault {
    use crate::DeviceFault as F;
    use fpga_regs::ErrorCode as C;
    match code {
        // The remote slot did not expose the range with that permission;
        // a list element or a local access outside what may be touched.
        C::NotExposed | C::OutOfPartition | C::ListRange => F::Range,
        C::NoSuchNode | C::NoSuchSlot => F::NoSuchPeer,
        C::RingDisabled | C::RingInvalid | C::TooLarge | C::ScheduleOverflow => F::PeerNotReady,
        C::BadAtomic => F::Atomic,
        C::Ok
        | C::BadOpcode
        | C::BadMode
        | C::ReservedBits
        | C::WindowRange
        | C::BadPacketType
        | C::BadPacketHeader
        | C::DoorbellInvalid
        | C::BadSchedule
        | C::ScheduleBusy => F::Malformed,
    }
}

/// WW as a ring of staging areas, each reusable once the command that read it completed.
struct WwRing {
    head: usize,
    live: VecDeque<(usize, usize, Ticket)>,
}

impl WwRing {
    fn new() -> WwRing {
        WwRing { head: 0, live: VecDeque::new() }
    }

    /// Reserve `n` bytes (rounded to 64), waiting for older commands still
    /// reading them. Allocation walks WW in order, so the commands to wait
    /// for are always the oldest ones, at the front of `live`.
    fn alloc(&mut self, dev: &mut Device, n: usize) -> Result<usize, TransportError> {
        let n = n.div_ceil(64) * 64;
        if self.head + n > fpga_regs::layout::WW_SIZE {
            // Skip the tail: retire what older laps left there first.
            while self.live.front().is_some_and(|&(s, _, _)| s >= self.head) {
                self.retire_front(dev)?;
            }
            self.head = 0;
        }
        let (lo, hi) = (self.head, self.head + n);
        while self.live.front().is_some_and(|&(s, len, _)| s < hi && lo < s + len) {
            self.retire_front(dev)?;
        }
        self.head = hi;
        Ok(lo)
    }

    fn retire_front(&mut self, dev: &mut Device) -> Result<(), TransportError> {
        if let Some((_, _, t)) = self.live.pop_front() {
            match dev.wait(t) {
                Ok(_) | Err(DriverError::UnknownTicket(_)) => {}
                Err(e) => return Err(map_err(e)),
            }
        }
        Ok(())
    }

    fn used(&mut self, start: usize, len: usize, t: Ticket) {
        self.live.push_back((start, len, t));
    }

    fn drain(&mut self, dev: &mut Device) -> Result<(), TransportError> {
        while !self.live.is_empty() {
            self.retire_front(dev)?;
        }
        Ok(())
    }
}

/// A message in a source's ring whose head has been read from PW: the rest
/// is read on demand, from the part of the peek load past the head, then
/// through a VL of what follows into PW (`PW_COPY`), into the caller's
/// buffer directly.
struct RingArrival<'a> {
    dev: &'a mut Device,
    peer: Peer,
    head: &'a [u8],
    len: usize,
    /// Message bytes in the peek load (PW_RING after the record header).
    inline: usize,
    /// Ring offset (from the consumed position) of the bytes past `inline`.
    rest_at: u64,
    read: bool,
}

impl Arrival for RingArrival<'_> {
    fn len(&self) -> usize {
        self.len
    }

    fn head(&self) -> &[u8] {
        self.head
    }

    fn read_rest(&mut self, out: &mut [u8]) -> Result<(), TransportError> {
        let room = self.len - self.head.len();
        if self.read || out.len() > room {
            return Err(TransportError::Backend {
                backend: BACKEND,
                msg: format!("read of {} bytes past a message's head where {room} remain, or read twice", out.len()),
            });
        }
        self.read = true;
        let in_peek = (self.inline - self.head.len()).min(out.len());
        if in_peek > 0 {
            let at = PW_RING as usize + DN_HDR + self.head.len();
            self.dev.read_pw(at, &mut out[..in_peek]).map_err(map_err)?;
        }
        let more = out.len() - in_peek;
        if more > 0 {
            self.dev.ring_load(self.peer, self.rest_at, more as u64, PW_COPY).map_err(map_err)?;
            self.dev.read_pw(PW_COPY as usize, &mut out[in_peek..]).map_err(map_err)?;
        }
        Ok(())
    }
}

/// Credit-based flow with one peer: what this rank consumed of the peer's
/// ring here and reported to it, and what it appended to its ring there
/// and heard back as consumed.
#[derive(Clone, Copy, Debug, Default)]
struct Flow {
    /// Bytes of the peer's ring consumed (our NRA).
    consumed: u64,
    /// Consumption last reported to the peer.
    reported: u64,
    /// Bytes appended to the peer's ring.
    sent: u64,
    /// The peer's consumption of our data, as last reported.
    acked: u64,
    /// The peer's rings are set up (its hello page answered).
    connected: bool,
}

/// The ring size when none is given: 64 KiB, or the largest power of two
/// (at least 4 KiB) with which `ranks` rings after the hello area and
/// `landing` bytes of landing zones from the next MiB fit `partition`
/// (too small a partition is reported by the caller's size check).
fn auto_ring_bytes(ranks: u32, landing: u64, partition: u64) -> u32 {
    let fits = |ring: u64| (RING_AREA + ranks as u64 * ring).div_ceil(1 << 20) * (1 << 20) + landing <= partition;
    let mut ring = AUTO_RING_MAX;
    while ring > 4096 && !fits(ring as u64) {
        ring /= 2;
    }
    ring
}

/// The DIMMnet-2 transport of one rank.
pub struct DimmnetTransport {
    dev: Device,
    rank: u32,
    size: u32,
    map: RankMap,
    cfg: DimmnetConfig,
    part_size: u64,
    /// Flow state with each peer this rank has sent to or received from
    /// (none for the others: at 10,000 ranks a rank talks to a few dozen).
    flows: BTreeMap<u32, Flow>,
    ww: WwRing,
    puts: Vec<Ticket>,
    zones: Vec<bool>,
    landing_base: u64,
    rx: Vec<u8>,
    /// The head of the message being delivered (read from PW).
    head: Vec<u8>,
    incoming: Incoming,
    next_poll: u32,
    /// Collective programs on the device.
    off: offload::OffloadState,
    /// One-sided windows' public copies.
    os: one_sided::OneSidedState,
    /// Scratch for the words idle watches.
    idle_words: Vec<(u32, u64)>,
}

impl DimmnetTransport {
    /// Open the device of `rank` and set up its rings, landing zones and hello page.
    pub fn open(
        device: &Path,
        slot: u16,
        rank: u32,
        map: RankMap,
        cfg: DimmnetConfig,
    ) -> Result<DimmnetTransport, TransportError> {
        let size = map.len() as u32;
        if rank >= size {
            return Err(TransportError::Config(format!("rank {rank} is outside the {size}-rank map")));
        }
        let mut cfg = cfg;
        if cfg.ring_bytes != 0 && (cfg.ring_bytes < 4096 || cfg.ring_bytes % 8 != 0) {
            return Err(TransportError::Config(format!(
                "ring size {} must be a multiple of 8 of at least 4 KiB",
                cfg.ring_bytes
            )));
        }
        let mut dev = Device::open_with(device, &OpenOptions { slot, actor: Some(rank) }).map_err(map_err)?;
        let info = dev.info().clone();
        if info.me != map.peer(rank) {
            return Err(TransportError::Config(format!(
                "rank {rank} should run on {} but opened {}",
                map.peer(rank),
                info.me
            )));
        }
        let base = info.sodimm_base;
        if cfg.ring_bytes == 0 {
            cfg.ring_bytes = auto_ring_bytes(size, cfg.zones as u64 * cfg.zone_bytes, info.sodimm_size);
        }
        let rings_end = RING_AREA + size as u64 * cfg.ring_bytes as u64;
        let landing = rings_end.div_ceil(1 << 20) << 20;
        let need = landing + cfg.zones as u64 * cfg.zone_bytes;
        if need > info.sodimm_size {
            return Err(TransportError::Config(format!(
                "{size} rings of {} B and {} landing zones of {} B need {need} B of SO-DIMM, but a slot has {} B",
                cfg.ring_bytes, cfg.zones, cfg.zone_bytes, info.sodimm_size
            )));
        }
        // The arrival cursor comes before the rings: every record they take is reported.
        // A wait names at most MAX_WATCH_PEERS ring words, however many
        // DN_RING_SCAN_PEERS allows.
        let scan_most = cfg.scan_peers.min(simlink::simctl::MAX_WATCH_PEERS as u32);
        let queue = size - 1 > scan_most && dev.has_arrivals();
        let cursor = if queue { Some(dev.arrival_cursor().map_err(map_err)?) } else { None };
        for s in 0..size {
            if s != rank {
                dev.ring_setup(map.peer(s), base + RING_AREA + s as u64 * cfg.ring_bytes as u64, cfg.ring_bytes)
                    .map_err(map_err)?;
            }
        }
        let landing_base = base + landing;
        let landing_len = cfg.zones as u64 * cfg.zone_bytes;
        let landing_len = u32::try_from(landing_len).map_err(|_| {
            TransportError::Config(format!(
                "{} landing zones of {} B ({landing_len} B) exceed the 4 GiB an exposure entry can describe; \
                 lower DN_ZONES or DN_ZONE_KIB",
                cfg.zones, cfg.zone_bytes
            ))
        })?;
        dev.expose(1, landing_base, landing_len, ExposePerm::REMOTE_WRITE).map_err(map_err)?;
        // Hello page: written with VS, then exposed for reading.
        let mut hello = HELLO_MAGIC.to_le_bytes().to_vec();
        hello.extend((rank as u64).to_le_bytes());
        hello.extend((cfg.ring_bytes as u64).to_le_bytes());
        hello.extend(landing_base.to_le_bytes());
        dev.write_ww(0, &hello).map_err(map_err)?;
        dev.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: hello.len() as u32 } })
            .map_err(map_err)?;
        dev.expose(0, base, 4096, ExposePerm::REMOTE_READ).map_err(map_err)?;
        // What the rings and landing zones leave: the collective offload's
        // arena, and in its last quarter the public copies of one-sided
        // windows, which every peer may read, write and update atomically.
        let arena = landing_base + landing_len as u64;
        let arena_len = info.sodimm_size - need;
        // (An exposure entry describes at most 4 GiB.)
        let rma_len = (arena_len / 4).min(u32::MAX as u64) / 64 * 64;
        if rma_len > 0 {
            let both = ExposePerm::REMOTE_READ | ExposePerm::REMOTE_WRITE;
            dev.expose(2, arena + arena_len - rma_len, rma_len as u32, both).map_err(map_err)?;
        }
        let incoming = match cursor {
            Some(cursor) => {
                let mut rank_of = vec![u32::MAX; info.nodes as usize * info.slots as usize];
                for r in 0..size {
                    let p = map.peer(r);
                    rank_of[fpga_regs::layout::source_index(p.node, p.slot, info.slots)] = r;
                }
                Incoming::Queue {
                    cursor,
                    named: Vec::new(),
                    marked: vec![false; size as usize],
                    drain: Vec::new(),
                    rank_of,
                }
            }
            None => {
                let mut watch = Vec::new();
                let mut watch_of = vec![usize::MAX; size as usize];
                for s in (0..size).filter(|s| *s != rank) {
                    watch_of[s as usize] = watch.len();
                    watch.push((dev.ring_nwa_word(map.peer(s)).map_err(map_err)?, 0));
                }
                Incoming::Scan { watch, watch_of }
            }
        };
        Ok(DimmnetTransport {
            part_size: info.sodimm_size,
            dev,
            rank,
            size,
            map,
            zones: vec![false; cfg.zones],
            cfg,
            flows: BTreeMap::new(),
            ww: WwRing::new(),
            puts: Vec::new(),
            landing_base,
            rx: Vec::new(),
            head: Vec::new(),
            incoming,
            next_poll: 0,
            off: offload::OffloadState::new(arena, arena_len - rma_len),
            os: one_sided::OneSidedState {
                area: first_fit::FirstFit::new(arena + arena_len - rma_len, rma_len),
                puts: Vec::new(),
            },
            idle_words: Vec::new(),
        })
    }

    /// Open for `job` ([`crate::JobEnv`]: rank, size, nodes), with this
    /// backend's own settings from the environment `dnrun` sets:
    /// the job's `sim_dir` (or `DN_DEVICE`, the mapped device file, for a real
    /// card; the slot is the rank's in `DN_RANKMAP`),
    /// optionally `DN_RANKMAP` (else ranks fill the job's nodes in blocks),
    /// `DN_RING_KIB`, `DN_ZONE_KIB`, `DN_ZONES`.
    pub fn from_job(job: &crate::JobEnv) -> Result<DimmnetTransport, TransportError> {
        use crate::knobs;
        let (rank, size) = (job.rank, job.size);
        let map = match knobs::text("DN_RANKMAP") {
            Some(m) => RankMap::parse(&m)?,
            None => RankMap::block(size, job.nodes)?,
        };
        if map.len() as u32 != size {
            return Err(TransportError::Config(format!("DN_RANKMAP lists {} ranks but DN_SIZE is {size}", map.len())));
        }
        let me = map.peer(rank);
        let path: PathBuf = match knobs::path("DN_DEVICE") {
            Some(d) => d,
            None => job
                .sim_dir
                .as_deref()
                .ok_or_else(|| {
                    TransportError::Config(format!("{} is not set; start the job with dnrun", crate::job::ENV_SIM_DIR))
                })?
                .join(simlink::simctl::node_file_name(me.node)),
        };
        let d = DimmnetConfig::default();
        // Every knob in its declared range (a zone of 0 KiB used to livelock
        // the simulator, a ring of 4 GiB + 4 KiB wrapped to 4 KiB); the
        // ranges fit the types below.
        let cfg = DimmnetConfig {
            ring_bytes: knobs::integer("DN_RING_KIB")?.map_or(d.ring_bytes, |k| k as u32 * 1024),
            zone_bytes: knobs::integer("DN_ZONE_KIB")?.map_or(d.zone_bytes, |k| k * 1024),
            zones: knobs::integer("DN_ZONES")?.map_or(d.zones, |z| z as usize),
            eager_threshold: d.eager_threshold,
            scan_peers: knobs::integer("DN_RING_SCAN_PEERS")?.map_or(d.scan_peers, |n| n as u32),
        };
        DimmnetTransport::open(&path, me.slot, rank, map, cfg)
    }

    /// The flow with `peer`, created on first use.
    fn flow(&mut self, peer: u32) -> &mut Flow {
        self.flows.entry(peer).or_default()
    }

    /// The flow with `peer` as it stands (all zero before first use).
    fn flow_of(&self, peer: u32) -> Flow {
        self.flows.get(&peer).copied().unwrap_or_default()
    }

    fn partition_base(&self, p: Peer) -> u64 {
        p.slot as u64 * self.part_size
    }

    /// Make sure `dest` has set up its rings (RVL of its hello page).
    fn connect(&mut self, dest: u32) -> Result<(), TransportError> {
        if self.flow_of(dest).connected {
            return Ok(());
        }
        let peer = self.map.peer(dest);
        let hello = Pattern::Contiguous { addr: self.partition_base(peer), len: 8 };
        for _ in 0..100_000 {
            match self.dev.run(&Command::Rvl { peer, src: hello, dst: Near::Window(PW_CONNECT) }) {
                Ok(_) => {
                    let mut m = [0u8; 8];
                    self.dev.read_pw(PW_CONNECT as usize, &mut m).map_err(map_err)?;
                    if u64::from_le_bytes(m) == HELLO_MAGIC {
                        self.flow(dest).connected = true;
                        return Ok(());
                    }
                }
                Err(e) if e.code() == Some(ErrorCode::NotExposed) => {}
                Err(e) => return Err(map_err(e)),
            }
            self.dev.compute(1000.0).map_err(map_err)?;
        }
        Err(TransportError::PeerLost { rank: dest, reason: "it never set up its DIMMnet-2 rings".into() })
    }

    /// Append one backend message (header + parts) to `dest`'s ring with BOTF.
    fn send_record(&mut self, dest: u32, kind: u8, parts: &[&[u8]]) -> Result<(), TransportError> {
        let peer = self.map.peer(dest);
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut hdr = [0u8; DN_HDR];
        hdr[0] = kind;
        hdr[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        let flow = self.flow(dest);
        hdr[8..16].copy_from_slice(&flow.consumed.to_le_bytes());
        flow.reported = flow.consumed;
        // The byte stream [hdr | parts...] split into packet payloads.
        let total = DN_HDR + len;
        let mut pieces: [&[u8]; 4] = [&hdr, &[], &[], &[]];
        if parts.len() > 3 {
            return Err(TransportError::Backend { backend: BACKEND, msg: "too many message parts".into() });
        }
        pieces[1..1 + parts.len()].copy_from_slice(parts);
        let (mut part, mut at) = (0usize, 0usize);
        let mut left = total;
        while left > 0 {
            let n = left.min(MAX_PAYLOAD);
            // Gathered into WW from where the pieces are (seed 004 §8.3's
            // "write WW from the user's buffer"): no packet image between.
            let ivs = PacketHeader::ivs(peer, n as u32);
            let mut gather: [&[u8]; 5] = [&[]; 5];
            let mut k = 0;
            let mut want = n;
            while want > 0 {
                let p = pieces[part];
                let take = (p.len() - at).min(want);
                gather[k] = &p[at..at + take];
                k += 1;
                want -= take;
                at += take;
                if at == p.len() {
                    part += 1;
                    at = 0;
                }
            }
            let image_len = fpga_regs::packet::HEADER_LEN + n;
            let at_ww = self.ww.alloc(&mut self.dev, image_len)?;
            let t = self.dev.submit_packet(at_ww, &ivs, &gather[..k]).map_err(map_err)?;
            self.ww.used(at_ww, image_len, t);
            left -= n;
        }
        self.flow(dest).sent += record_len(total as u64);
        Ok(())
    }

    fn room(&self, dest: u32) -> u64 {
        let f = self.flow_of(dest);
        ring_room(f.acked, f.sent, self.cfg.ring_bytes)
    }

    /// Read everything available in `src`'s ring; returns messages delivered.
    /// A message is handed over with its first bytes read from PW; the
    /// engine reads the rest from PW straight into where it goes.
    fn drain_ring(&mut self, src: u32, sink: &mut dyn FnMut(u32, &mut dyn Arrival)) -> Result<usize, TransportError> {
        let peer = self.map.peer(src);
        let nwa = self.dev.ring_nwa(peer).map_err(map_err)?;
        if let Incoming::Scan { watch, watch_of } = &mut self.incoming {
            watch[watch_of[src as usize]].1 = nwa;
        }
        let corrupt = |what: String| TransportError::Backend {
            backend: BACKEND,
            msg: format!("corrupt record ({what}) in the ring from rank {src}"),
        };
        let avail = nwa.wrapping_sub(self.flow_of(src).consumed).min(self.cfg.ring_bytes as u64);
        if avail % RING_ALIGN != 0 {
            // The controller only ever advances NWA by whole records.
            return Err(corrupt(format!("write pointer {nwa:#x} is not a multiple of {RING_ALIGN}")));
        }
        let mut pos = 0u64;
        let mut delivered = 0;
        let max_message = self.caps().max_message as u64;
        while avail - pos >= DN_HDR as u64 {
            let load = (avail - pos).min(PEEK);
            self.dev.ring_load(peer, pos, load, PW_RING).map_err(map_err)?;
            let mut hdr = [0u8; DN_HDR];
            self.dev.read_pw(PW_RING as usize, &mut hdr).map_err(map_err)?;
            let len = u32::from_le_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]) as u64;
            let mut c = [0u8; 8];
            c.copy_from_slice(&hdr[8..16]);
            let credit = u64::from_le_bytes(c);
            let total = DN_HDR as u64 + len;
            match hdr[0] {
                KIND_CREDIT if len != 0 => return Err(corrupt(format!("credit record with {len} payload bytes"))),
                KIND_CREDIT => {}
                KIND_MSG if len > max_message => {
                    return Err(corrupt(format!("{len}-byte message, above the {max_message}-byte maximum")))
                }
                KIND_MSG => {
                    if total > avail - pos {
                        break; // the rest of a long message is still arriving
                    }
                    // The head: the whole message if it came with the peek,
                    // else its first ARRIVAL_HEAD bytes (a multiple of 8, so
                    // the split read costs what one read did).
                    let inline = (load - DN_HDR as u64).min(len) as usize;
                    let head = if inline as u64 == len { inline } else { ARRIVAL_HEAD.min(inline) };
                    self.head.resize(head, 0);
                    self.dev.read_pw(PW_RING as usize + DN_HDR, &mut self.head).map_err(map_err)?;
                }
                other => return Err(corrupt(format!("kind {other}"))),
            }
            // Credit acknowledges bytes we sent into src's ring; more than
            // we ever sent is a corrupt (or forged) record, not room.
            let sent = self.flow_of(src).sent;
            if credit > sent {
                return Err(corrupt(format!("credit for {credit} B, but only {sent} B were sent")));
            }
            let a = &mut self.flow(src).acked;
            *a = (*a).max(credit);
            let at = pos;
            pos += record_len(total);
            if hdr[0] == KIND_MSG {
                let inline = (load - DN_HDR as u64).min(len) as usize;
                let mut a = RingArrival {
                    dev: &mut self.dev,
                    peer,
                    head: &self.head,
                    len: len as usize,
                    inline,
                    // Where this record's bytes past the peek load start (the
                    // ring is consumed only after the loop).
                    rest_at: at + load,
                    read: false,
                };
                sink(src, &mut a);
                delivered += 1;
            }
        }
        if pos > 0 {
            self.dev.ring_consume(peer, pos).map_err(map_err)?;
            self.flow(src).consumed += pos;
        }
        Ok(delivered)
    }

    /// Return credit explicitly to sources that sent a lot and got nothing back.
    fn return_credit(&mut self) -> Result<(), TransportError> {
        // Only a peer whose unreported consumption reached a quarter of its
        // ring is owed credit: nearly always none, and then nothing is
        // allocated (this runs at every poll).
        let quarter = self.cfg.ring_bytes as u64 / 4;
        let owed: Vec<u32> =
            self.flows.iter().filter(|(_, f)| f.consumed - f.reported >= quarter).map(|(&s, _)| s).collect();
        for s in owed {
            self.return_credit_to(s)?;
        }
        Ok(())
    }

    /// Return credit to `s` if it sent a lot and got nothing back (only
    /// draining its ring can make that so).
    fn return_credit_to(&mut self, s: u32) -> Result<(), TransportError> {
        let quarter = self.cfg.ring_bytes as u64 / 4;
        let f = self.flow_of(s);
        if s != self.rank && f.consumed - f.reported >= quarter && self.room(s) >= DN_HDR as u64 {
            self.send_record(s, KIND_CREDIT, &[])?;
        }
        Ok(())
    }

    /// A poll that follows the arrival queue: drain the rings it names, in
    /// the order their first record arrived (every ring when the queue
    /// overflowed), and return credit to their senders.
    fn poll_queue(&mut self, sink: &mut dyn FnMut(u32, &mut dyn Arrival)) -> Result<usize, TransportError> {
        let Incoming::Queue { cursor, named, marked, drain, rank_of } = &mut self.incoming else {
            return Ok(0);
        };
        named.clear();
        drain.clear();
        if self.dev.read_arrivals(cursor, named).map_err(map_err)? {
            for p in named.iter() {
                let r = rank_of[fpga_regs::layout::source_index(p.node, p.slot, self.dev.info().slots)];
                if r != u32::MAX && r != self.rank && !marked[r as usize] {
                    marked[r as usize] = true;
                    drain.push(r);
                }
            }
        } else {
            drain.extend((0..self.size).filter(|r| *r != self.rank));
        }
        let ranks = std::mem::take(drain);
        let mut n = 0;
        let mut out = Ok(());
        for &r in &ranks {
            if let Incoming::Queue { marked, .. } = &mut self.incoming {
                marked[r as usize] = false;
            }
            if out.is_ok() {
                out = self.drain_ring(r, sink).map(|k| n += k).and_then(|()| self.return_credit_to(r));
            }
        }
        if let Incoming::Queue { drain, .. } = &mut self.incoming {
            *drain = ranks;
        }
        out.map(|()| n)
    }
}

impl DimmnetTransport {
    /// Send `data` to SO-DIMM from `addr` on in WW-sized chunks: each chunk
    /// is written into WW and carried by `cmd(ww offset, destination)`
    /// (VS locally, RVS remotely); the tickets go to `tickets`.
    fn through_ww(
        &mut self,
        addr: u64,
        data: &[u8],
        cmd: impl Fn(u32, Pattern) -> Command,
        tickets: &mut Vec<Ticket>,
    ) -> Result<(), TransportError> {
        for (k, chunk) in data.chunks(WW_CHUNK).enumerate() {
            let at = self.ww.alloc(&mut self.dev, chunk.len())?;
            self.dev.write_ww(at, chunk).map_err(map_err)?;
            let dst = Pattern::Contiguous { addr: addr + (k * WW_CHUNK) as u64, len: chunk.len() as u32 };
            let t = self.dev.submit(&cmd(at as u32, dst)).map_err(map_err)?;
            self.ww.used(at, chunk.len(), t);
            tickets.push(t);
        }
        Ok(())
    }

    /// Copy `out.len()` bytes at SO-DIMM `addr` into `out` through VL and PW.
    fn load(&mut self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        // Double-buffered: VL the next half of PW while reading the previous one.
        let total = out.len() as u64;
        let load = |dev: &mut Device, k: u64| -> Result<Ticket, TransportError> {
            let off = k * PW_COPY_HALF;
            let len = PW_COPY_HALF.min(total - off);
            let pw = PW_COPY + ((k % 2) * PW_COPY_HALF) as u32;
            dev.submit(&Command::Vl { src: Pattern::Contiguous { addr: addr + off, len: len as u32 }, pw_off: pw })
                .map_err(map_err)
        };
        let chunks = total.div_ceil(PW_COPY_HALF);
        let mut next = if chunks > 0 { Some(load(&mut self.dev, 0)?) } else { None };
        for k in 0..chunks {
            if let Some(t) = next.take() {
                self.dev.wait(t).map_err(map_err)?;
            }
            if k + 1 < chunks {
                next = Some(load(&mut self.dev, k + 1)?);
            }
            let off = (k * PW_COPY_HALF) as usize;
            let len = PW_COPY_HALF.min(total - k * PW_COPY_HALF) as usize;
            let pw = (PW_COPY as u64 + (k % 2) * PW_COPY_HALF) as usize;
            self.dev.read_pw(pw, &mut out[off..off + len]).map_err(map_err)?;
        }
        Ok(())
    }
}

/// The launcher's checks of a simulated job (see [`crate::job::LaunchNeeds`]):
/// its ranks must fit the simulated fabric's nodes, slots and sources.
pub fn check_launch(plan: &crate::job::LaunchPlan<'_>) -> Result<(), LaunchRefusal> {
    use fpga_regs::layout::{MAX_NODES, MAX_SLOTS, MAX_SOURCES};
    let (np, nodes) = (plan.np, plan.nodes.max(1));
    let slots = np.div_ceil(nodes);
    if slots as usize > MAX_SLOTS {
        return Err(LaunchRefusal::TooManySlots { np, nodes, slots, max: MAX_SLOTS });
    }
    if nodes as usize > MAX_NODES {
        return Err(LaunchRefusal::TooManyNodes { nodes, max: MAX_NODES });
    }
    if nodes as usize * slots as usize > MAX_SOURCES {
        return Err(LaunchRefusal::TooManySources { np, nodes, slots, max: MAX_SOURCES });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal keeps its kind (issue 49, item 6): a protection fault is a
    /// range error, not "other", and the message is the device's.
    #[test]
    fn device_refusals_keep_their_kind() {
        use crate::DeviceFault;
        let refused = |code| map_err(DriverError::Device { op: "RVS", seq: 7, code });
        match refused(fpga_regs::ErrorCode::NotExposed) {
            TransportError::Device { fault: DeviceFault::Range, message, .. } => {
                assert!(message.contains("RVS (command #7) refused by the device: NotExposed (8)"), "{message}");
                assert!(message.contains("EXPOSE table"), "the hint is kept: {message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            refused(fpga_regs::ErrorCode::NoSuchSlot),
            TransportError::Device { fault: DeviceFault::NoSuchPeer, .. }
        ));
        assert!(matches!(
            refused(fpga_regs::ErrorCode::BadAtomic),
            TransportError::Device { fault: DeviceFault::Atomic, .. }
        ));
        // Every kind is some code's.
        let kinds: std::collections::HashSet<DeviceFault> =
            fpga_regs::ErrorCode::ALL.iter().map(|c| fault_of(*c)).collect();
        assert_eq!(kinds.len(), 5);
        assert!(matches!(map_err(DriverError::Shutdown), TransportError::Shutdown));
    }

    #[test]
    fn ring_room_never_wraps_on_a_huge_credit() {
        assert_eq!(ring_room(0, 0, 4096), 4096);
        assert_eq!(ring_room(100, 4196, 4096), 0);
        assert_eq!(ring_room(u64::MAX - 10, 0, 4096), u64::MAX);
        assert_eq!(ring_room(0, 9000, 4096), 0);
    }

    #[test]
    fn rank_maps_refuse_what_they_cannot_place() {
        assert!(RankMap::block(0, 1).is_err());
        assert!(RankMap::block(3, 0).is_err());
        assert!(RankMap::parse("0.0,x").is_err());
        let m = RankMap::block(5, 2).unwrap();
        assert_eq!(m.peer(4), Peer::new(1, 1));
    }

    #[test]
    fn automatic_rings_shrink_until_every_peer_fits() {
        const MIB: u64 = 1 << 20;
        assert_eq!(auto_ring_bytes(2, 8 * MIB, 64 * MIB), 64 * 1024, "the 64 KiB default while it fits");
        assert_eq!(auto_ring_bytes(900, 8 * MIB, 64 * MIB), 32 * 1024);
        assert_eq!(auto_ring_bytes(1024, 8 * MIB, 64 * MIB), 32 * 1024, "1,024 ranks in the default partition");
        assert_eq!(auto_ring_bytes(1024, 8 * MIB, 16 * MIB), 4096);
        assert_eq!(auto_ring_bytes(1024, 8 * MIB, 8 * MIB), 4096, "never below 4 KiB; the size check refuses it");
    }
}
