//! The cycle-approximate device model: N nodes × S slots, their command
//! engines, SO-DIMM ports and links, and the events that move data.
//!
//! The model is a discrete-event simulation: every operation reserves the
//! resources it uses ([`Timeline`]s in device cycles) and schedules its
//! effects as events; events are processed strictly in `(time, sequence)`
//! order, so the same inputs always give the same results and the same trace.
//! The host side is not simulated here: host processes (actors) read and write
//! the MMIO surface directly, and the scheduler ([`crate::sched`]) tells the
//! model when they rang a doorbell or may have advanced a ring pointer.
//!
//! What is modelled (seed 004 §2): VL, VS, RVL, RVS, IVS and BOTF with the
//! contiguous, stride, list and packed-list modes; per-source IVS rings with
//! backpressure (a full ring holds the packet, never drops or overwrites);
//! protection of SO-DIMM partitions and of remote memory (exposure table).
//! What is approximated (ours): data is sampled when a command starts; a
//! multi-packet RVS/RVL transfer takes effect when its last packet arrives;
//! held packets wait in per-source queues without blocking the link.

mod coll;
mod exec;
mod rx;

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::path::Path;

use fpga_regs::layout::{self, Region, SLOT_STRIDE};
use fpga_regs::packet::HEADER_LEN;
use fpga_regs::ur::{self, Caps, Status, CQ_DEPTH};
use fpga_regs::{ErrorCode, Opcode, Peer};
use simlink::mmio::Mapping;

use crate::profile::DeviceTiming;
use crate::time::{SimTime, Timeline};
use crate::trace::{Arg, Trace};

/// Shape of a cluster.
#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// Number of nodes.
    pub nodes: u16,
    /// Slots (processes) per node.
    pub slots: u16,
    /// SO-DIMM bytes per slot.
    pub partition_size: u64,
    /// Device timing.
    pub timing: DeviceTiming,
}

/// Errors building a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The shape is not supported.
    #[error("invalid cluster shape: {0}")]
    Shape(String),
    /// A file could not be created or mapped.
    #[error("{0}")]
    Map(#[from] simlink::mmio::MapError),
    /// I/O error creating files.
    #[error("cannot create {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// OS error.
        source: std::io::Error,
    },
}

impl ModelConfig {
    /// Check the shape against the register map's limits.
    pub fn validate(&self) -> Result<(), ModelError> {
        let shape = |m: String| Err(ModelError::Shape(m));
        if self.nodes == 0 || self.nodes as usize > layout::MAX_NODES {
            return shape(format!("--nodes must be 1..={}", layout::MAX_NODES));
        }
        if self.slots == 0 || self.slots as usize > layout::MAX_SLOTS {
            return shape(format!("--slots must be 1..={}", layout::MAX_SLOTS));
        }
        if self.nodes as usize * self.slots as usize > layout::MAX_SOURCES {
            return shape(format!("nodes x slots must be at most {} (one IVS ring per source)", layout::MAX_SOURCES));
        }
        if self.partition_size < 1 << 20
            || self.partition_size % layout::PAGE_SIZE as u64 != 0
            || self.partition_size > 1 << 32
        {
            return shape("the SO-DIMM partition must be a page multiple between 1 MiB and 4 GiB".into());
        }
        Ok(())
    }
}

/// Counters describing a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Stats {
    /// Events processed.
    pub events: u64,
    /// Commands completed.
    pub commands: u64,
    /// Commands refused.
    pub errors: u64,
    /// Packets sent over links or loopback.
    pub packets: u64,
    /// IVS packets that had to wait for ring space.
    pub held: u64,
    /// Bytes moved by commands and schedules that completed successfully
    /// (what the livelock check counts as progress).
    pub bytes: u64,
    /// Schedules that ended (collective engine).
    pub schedules: u64,
}

/// A range of a slot's MMIO surface that the device wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    /// Node.
    pub node: u16,
    /// Slot.
    pub slot: u16,
    /// Offset from the start of the slot.
    pub off: u32,
    /// Length in bytes.
    pub len: u32,
}

impl Touch {
    /// Whether the 8-byte word at slot offset `word` overlaps this range.
    pub fn covers(&self, word: u32) -> bool {
        word < self.off.saturating_add(self.len) && self.off < word.saturating_add(8)
    }
}

/// Where a command's data lands when it completes.
#[derive(Debug)]
pub(crate) enum Deposit {
    /// Into PW at an offset.
    Pw { off: u32, data: Vec<u8> },
    /// Into local SO-DIMM, scattered over segments.
    SoDimm { segments: Vec<(u64, u32)>, data: Vec<u8> },
}

/// What a packet carries (the model's internal form of the header + payload).
#[derive(Debug)]
pub(crate) enum PacketKind {
    Ivs {
        data: Vec<u8>,
    },
    Rvs {
        segments: Vec<(u64, u32)>,
        data: Vec<u8>,
    },
    RvlRequest {
        segments: Vec<(u64, u32)>,
        reply: fpga_regs::Near,
    },
    RvlResponse {
        data: Vec<u8>,
        reply: fpga_regs::Near,
    },
    Ack {
        bytes: u64,
    },
    Nack {
        code: ErrorCode,
    },
    /// A schedule SEND (collective engine): key and round match it to a RECV.
    Sched {
        key: u64,
        round: u32,
        data: Vec<u8>,
    },
    /// The receiving engine accepted (or refused) a schedule message.
    SchedAck {
        key: u64,
        status: ErrorCode,
    },
}

impl PacketKind {
    fn payload_len(&self) -> u64 {
        match self {
            PacketKind::Ivs { data }
            | PacketKind::Rvs { data, .. }
            | PacketKind::RvlResponse { data, .. }
            | PacketKind::Sched { data, .. } => data.len() as u64,
            PacketKind::SchedAck { .. } => 0,
            PacketKind::RvlRequest { segments, .. } => 16 + 8 * segments.len() as u64,
            PacketKind::Ack { .. } | PacketKind::Nack { .. } => 0,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            PacketKind::Ivs { .. } => "IVS",
            PacketKind::Rvs { .. } => "RVS",
            PacketKind::RvlRequest { .. } => "RVL req",
            PacketKind::RvlResponse { .. } => "RVL resp",
            PacketKind::Ack { .. } => "ACK",
            PacketKind::Nack { .. } => "NACK",
            PacketKind::Sched { .. } => "SCHED msg",
            PacketKind::SchedAck { .. } => "SCHED ack",
        }
    }
}

/// A packet in flight.
#[derive(Debug)]
pub(crate) struct Packet {
    pub src: Peer,
    pub dst: Peer,
    /// Command sequence number at the source that this packet belongs to.
    pub seq: u64,
    /// Generation of the source slot when the command was issued.
    pub gen: u64,
    pub kind: PacketKind,
}

#[derive(Debug)]
pub(crate) enum Event {
    /// The command engine of a slot may fetch its next descriptor.
    Fetch { node: u16, slot: u16 },
    /// A command ends.
    Complete { node: u16, slot: u16, seq: u64, gen: u64, status: ErrorCode, bytes: u64, deposit: Option<Deposit> },
    /// A packet reaches its destination controller.
    Arrive(Packet),
    /// An accepted IVS record is in SO-DIMM: publish NWA and acknowledge.
    RingCommit { node: u16, slot: u16, source: usize, record: u64, ack: Packet },
    /// A schedule entry finished (collective engine).
    SchedEntry(coll::EntryRef),
}

impl Event {
    /// The one slot whose words the event changes, at its own time (a
    /// command's fetch and completion: the issuer's; a packet's arrival
    /// and a ring commit: the destination's; a schedule entry: its
    /// engine's). It reaches any other slot only by sending a packet
    /// ([`Model::send`]), which arrives at least [`Model::hop`] later.
    fn at(&self) -> Peer {
        match self {
            Event::Fetch { node, slot } | Event::Complete { node, slot, .. } | Event::RingCommit { node, slot, .. } => {
                Peer::new(*node, *slot)
            }
            Event::Arrive(p) => p.dst,
            Event::SchedEntry(e) => Peer::new(e.node, e.slot),
        }
    }

    /// Whether processing the event may put a packet on the wire (which may
    /// come back to its slot). A completion sends nothing, unless it
    /// restarts an engine that stalled on a full completion queue (the
    /// cluster checks [`Model::engine_stalled`] for that); an arriving
    /// acknowledgement or RVL response only completes a command.
    fn may_send(&self) -> bool {
        match self {
            Event::Complete { .. } => false,
            Event::Arrive(p) => !matches!(
                p.kind,
                PacketKind::Ack { .. }
                    | PacketKind::Nack { .. }
                    | PacketKind::SchedAck { .. }
                    | PacketKind::RvlResponse { .. }
            ),
            Event::Fetch { .. } | Event::RingCommit { .. } | Event::SchedEntry(_) => true,
        }
    }

    /// The regions of its slot the event, or an event it schedules at its
    /// own slot without a packet, may write ([`Touches`]). Every event may
    /// write UR (status, counters, completions). LLCM: only an IVS arrival
    /// (its ring commit follows) and the commit itself. PW: only a fetch (a
    /// VL completes later), a completion that deposits there, and an RVL
    /// response on its way into PW.
    fn touches(&self) -> Touches {
        let extra = match self {
            Event::Fetch { .. } => Touches::PW,
            Event::Complete { deposit: Some(Deposit::Pw { .. }), .. } => Touches::PW,
            Event::Complete { .. } | Event::SchedEntry(_) => Touches::NONE,
            Event::RingCommit { .. } => Touches::LLCM,
            Event::Arrive(p) => match p.kind {
                PacketKind::Ivs { .. } => Touches::LLCM,
                PacketKind::RvlResponse { reply: fpga_regs::Near::Window(_), .. } => Touches::PW,
                _ => Touches::NONE,
            },
        };
        Touches(Touches::UR.0 | extra.0)
    }
}

/// Which host-visible regions of a slot an event may write (bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touches(u8);

impl Touches {
    const NONE: Touches = Touches(0);
    /// User registers.
    pub const UR: Touches = Touches(1);
    /// Low Latency Common Memory.
    pub const LLCM: Touches = Touches(2);
    /// Prefetch Window.
    pub const PW: Touches = Touches(4);
    /// The regions, in the order of [`Model::next_event_touching`]'s index.
    const ALL: [Touches; 3] = [Touches::UR, Touches::LLCM, Touches::PW];

    fn contains(self, r: Touches) -> bool {
        self.0 & r.0 == r.0
    }

    fn index(self) -> usize {
        Touches::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// A pending event, in the model's order: time, then the slot it changes
/// (its source index), then the order it was scheduled in. Ordering ties
/// by slot first keeps equal-time events at different slots (which may
/// contend for their node's SO-DIMM port or link) in an order that does not
/// depend on when each process happened to report its doorbells.
struct Scheduled {
    time: SimTime,
    key: u32,
    seq: u64,
    event: Event,
}

impl Scheduled {
    fn order(&self) -> (SimTime, u32, u64) {
        (self.time, self.key, self.seq)
    }
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        self.order() == o.order()
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> Ordering {
        self.order().cmp(&o.order())
    }
}

/// A command fetched and not yet complete.
#[derive(Debug)]
pub(crate) struct Inflight {
    /// What it is (`None`: a descriptor that does not decode, refused).
    pub op: Option<Opcode>,
    pub start: SimTime,
    /// It asked a remote slot for data that will land in this slot's PW
    /// (an RVL, or a BOTF carrying an RVL request).
    pub remote_read: bool,
}

/// An IVS packet waiting for ring space.
#[derive(Debug)]
pub(crate) struct Held {
    pub pkt: Packet,
    pub since: SimTime,
}

/// Per-slot controller state.
#[derive(Debug, Default)]
pub(crate) struct SlotState {
    pub posted: u64,
    pub fetched: u64,
    pub completed: u64,
    pub errors: u64,
    pub issue_time: [SimTime; CQ_DEPTH],
    pub fetch_pending: bool,
    pub stalled: bool,
    pub bad_doorbell: Option<u64>,
    pub inflight: BTreeMap<u64, Inflight>,
    pub engine: Timeline,
    /// Per source: IVS packets waiting for ring space, in arrival order.
    pub held: BTreeMap<usize, VecDeque<Held>>,
    /// Per source: bytes accepted into the ring but not yet published in NWA.
    pub pending_ring: BTreeMap<usize, u64>,
    pub rx_refused: u64,
    pub rx_accepted: u64,
    pub generation: u64,
    /// Shadows of read-only registers, restored over any host write.
    pub status_word: u64,
    pub last_error_word: u64,
    pub completion_words: [(u64, u64); CQ_DEPTH],
    /// The last command that completed: what it was, how it ended, bytes.
    pub last_done: Option<(Option<Opcode>, ErrorCode, u64)>,
    /// The collective engine.
    pub sched: coll::SchedState,
}

#[derive(Debug, Default)]
pub(crate) struct NodeState {
    pub slots: Vec<SlotState>,
    pub tx: Timeline,
    pub rx: Timeline,
    pub sodimm_port: Timeline,
}

/// Pending events' `(time, seq)`, earliest first.
type TimeHeap = BinaryHeap<Reverse<(SimTime, u64)>>;

/// The model of a whole cluster.
pub struct Model {
    pub(crate) cfg: ModelConfig,
    pub(crate) mmio: Vec<Mapping>,
    pub(crate) sodimm: Vec<memmap2::MmapMut>,
    pub(crate) nodes: Vec<NodeState>,
    events: BinaryHeap<Reverse<Scheduled>>,
    /// The same events' `(time, seq)` per slot (by source index), so that
    /// the earliest event of a slot or of a node is found without a scan.
    slot_events: Vec<TimeHeap>,
    /// The earliest `(time, seq)` of each node's events, and the same
    /// ordered: the earliest event on another node is found without a scan.
    node_first: Vec<Option<(SimTime, u32, u64)>>,
    nodes_by_first: std::collections::BTreeSet<(SimTime, u32, u64, u16)>,
    /// Those of them that may send a packet ([`Event::may_send`]).
    slot_send_events: Vec<TimeHeap>,
    /// Those of them that may write the slot's UR, LLCM and PW
    /// ([`Event::touches`]), by region.
    slot_region_events: [Vec<TimeHeap>; 3],
    next_seq: u64,
    now: SimTime,
    touched: Vec<Touch>,
    pub(crate) trace: Option<Trace>,
    pub(crate) stats: Stats,
    pub(crate) planted: PlantedFaults,
}

/// Defects that can be planted in a model so that a test can show that a
/// checker catches them (mutation testing of the fuzzer). Never set outside
/// such tests.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PlantedFaults {
    /// Panic when this many events have been processed.
    pub panic_at_event: Option<u64>,
    /// Flip the first byte of every IVS payload written into a ring.
    pub scramble_ivs: bool,
    /// Name the wrong source in every arrival queue entry.
    pub misname_arrivals: bool,
}

impl Model {
    /// The last command of a slot that completed: its opcode (`None`: a
    /// descriptor that did not decode), its status and the bytes it moved.
    pub fn last_command(&self, node: u16, slot: u16) -> Option<(Option<Opcode>, ErrorCode, u64)> {
        self.nodes.get(node as usize)?.slots.get(slot as usize)?.last_done
    }

    /// Plant defects (mutation tests only).
    #[doc(hidden)]
    pub fn plant(&mut self, faults: PlantedFaults) {
        self.planted = faults;
    }

    /// Build a model whose MMIO surfaces are the files `mmio_paths[n]`
    /// (created and sized here), and initialise every slot's read-only registers.
    pub fn create(cfg: ModelConfig, dir: &Path) -> Result<Model, ModelError> {
        cfg.validate()?;
        let size = layout::node_mmio_size(cfg.slots as usize);
        let mut mmio = Vec::new();
        let mut sodimm = Vec::new();
        // Node files are new regular files, never followed through a
        // symlink, and removed again if a later node fails.
        let mut created = crate::files::Created::new();
        for n in 0..cfg.nodes {
            let path = dir.join(simlink::simctl::node_file_name(n));
            let file =
                created.file(&path).map_err(|source| ModelError::Io { path: path.display().to_string(), source })?;
            file.set_len(size as u64).map_err(|source| ModelError::Io { path: path.display().to_string(), source })?;
            mmio.push(Mapping::map(&file, &path, 0, size)?);
            let bytes = cfg.partition_size as usize * cfg.slots as usize;
            let anon = memmap2::MmapOptions::new()
                .len(bytes)
                .map_anon()
                .map_err(|source| ModelError::Io { path: "anonymous SO-DIMM memory".into(), source })?;
            sodimm.push(anon);
        }
        created.keep();
        let nodes_slots = cfg.nodes as usize * cfg.slots as usize;
        let cfg_slots = cfg.slots as usize;
        let nodes = (0..cfg.nodes)
            .map(|_| NodeState { slots: (0..cfg.slots).map(|_| SlotState::default()).collect(), ..Default::default() })
            .collect();
        let mut m = Model {
            cfg,
            mmio,
            sodimm,
            nodes,
            events: BinaryHeap::new(),
            slot_events: (0..nodes_slots).map(|_| BinaryHeap::new()).collect(),
            node_first: vec![None; nodes_slots / cfg_slots],
            slot_send_events: (0..nodes_slots).map(|_| BinaryHeap::new()).collect(),
            nodes_by_first: std::collections::BTreeSet::new(),
            slot_region_events: std::array::from_fn(|_| (0..nodes_slots).map(|_| BinaryHeap::new()).collect()),
            next_seq: 0,
            now: SimTime::ZERO,
            touched: Vec::new(),
            trace: None,
            stats: Stats::default(),
            planted: PlantedFaults::default(),
        };
        for n in 0..m.cfg.nodes {
            for s in 0..m.cfg.slots {
                m.init_slot_registers(n, s);
            }
        }
        Ok(m)
    }

    /// Attach a trace writer.
    pub fn set_trace(&mut self, trace: Trace) {
        self.trace = Some(trace);
    }

    /// Take the trace writer back (to finish it).
    pub fn take_trace(&mut self) -> Option<Trace> {
        self.trace.take()
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Run statistics.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Time of the last processed event.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Time of the next pending event.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.events.peek().map(|Reverse(s)| s.time)
    }

    /// The earliest pending event at `peer`'s slot (one that changes its words).
    pub fn next_event_at(&self, peer: Peer) -> Option<SimTime> {
        let key = layout::source_index(peer.node, peer.slot, self.cfg.slots);
        self.slot_events.get(key)?.peek().map(|Reverse((t, _))| *t)
    }

    /// Every pending event's time, the slot whose words it changes and
    /// whether it may send a packet (as [`Model::next_send_at`] counts it),
    /// in no particular order (for checks; the scheduler uses the indexes).
    pub fn pending_events(&self) -> impl Iterator<Item = (SimTime, Peer, bool)> + '_ {
        self.events.iter().map(|Reverse(s)| {
            let at = s.event.at();
            (s.time, at, s.event.may_send() || self.engine_stalled(at))
        })
    }

    /// The earliest pending event at `peer`'s slot that may send a packet:
    /// every one of them while its command engine is stalled (a completion
    /// restarts it), else those that send by themselves.
    pub fn next_send_at(&self, peer: Peer) -> Option<SimTime> {
        if self.engine_stalled(peer) {
            return self.next_event_at(peer);
        }
        let key = layout::source_index(peer.node, peer.slot, self.cfg.slots);
        self.slot_send_events.get(key)?.peek().map(|Reverse((t, _))| *t)
    }

    /// Whether `peer`'s command engine waits for a completion-queue entry
    /// (the next completion restarts it: it fetches, and may send).
    pub fn engine_stalled(&self, peer: Peer) -> bool {
        self.nodes[peer.node as usize].slots[peer.slot as usize].stalled
    }

    /// The earliest pending event that may write `region` of `peer`'s slot.
    pub fn next_event_touching(&self, peer: Peer, region: Touches) -> Option<SimTime> {
        let key = layout::source_index(peer.node, peer.slot, self.cfg.slots);
        self.slot_region_events[region.index()].get(key)?.peek().map(|Reverse((t, _))| *t)
    }

    /// Whether data from elsewhere may still land in `peer`'s PW: a remote
    /// read it issued is in flight. Otherwise only the slot's own events
    /// (its local VL completions) can change its PW.
    pub fn remote_reads_in_flight(&self, peer: Peer) -> bool {
        self.nodes[peer.node as usize].slots[peer.slot as usize].inflight.values().any(|f| f.remote_read)
    }

    /// The earliest pending event at another slot of `peer`'s node.
    pub fn next_event_beside(&self, peer: Peer) -> Option<SimTime> {
        (0..self.cfg.slots)
            .filter(|s| *s != peer.slot)
            .filter_map(|s| self.next_event_at(Peer::new(peer.node, s)))
            .min()
    }

    /// The earliest pending event at a slot of a node other than `node`.
    pub fn next_event_off_node(&self, node: u16) -> Option<SimTime> {
        self.nodes_by_first.iter().find(|(_, _, _, n)| *n != node).map(|(t, _, _, _)| *t)
    }

    /// The shortest time for anything that happens at slot `a` to change
    /// slot `b` (`a != b`): the first event it can cause there is a packet's
    /// arrival ([`Model::send`]), which takes at least the loopback path of
    /// a node or the network (`nic_tx + link + nic_rx`), plus putting a
    /// packet header through it (at least one cycle, so this is never 0).
    /// This is the simulator's lookahead between slots (DESIGN §3).
    pub fn hop(&self, a: Peer, b: Peer) -> SimTime {
        let t = &self.cfg.timing;
        let header = HEADER_LEN as u64;
        if a.node == b.node {
            t.cycles(t.loopback_cycles) + t.xfer(header, t.window_bytes_per_cycle)
        } else {
            let wire = t.xfer(header.saturating_add(t.wire_overhead_bytes), t.link_bytes_per_cycle);
            t.cycles(t.nic_tx_cycles.saturating_add(t.link_latency_cycles).saturating_add(t.nic_rx_cycles)) + wire
        }
    }

    /// The least time from a packet leaving one slot's engine to a change
    /// of another slot's LLCM, beyond the hop: its fetch had to execute
    /// (`exec`), and an IVS record is published (NWA, the arrival queue)
    /// only once it is in SO-DIMM (`sodimm_latency + status_write`, see
    /// `ring_accept`). LLCM changes in no other way.
    pub fn ring_latency(&self) -> SimTime {
        let t = &self.cfg.timing;
        t.cycles(t.exec_cycles.saturating_add(t.sodimm_latency_cycles).saturating_add(t.status_write_cycles))
    }

    /// [`Model::hop`] within a node and across nodes.
    pub fn hops(&self) -> (SimTime, SimTime) {
        (self.hop(Peer::new(0, 0), Peer::new(0, 1)), self.hop(Peer::new(0, 0), Peer::new(1, 0)))
    }

    /// Whether some IVS packet is held by backpressure anywhere.
    pub fn has_held_packets(&self) -> bool {
        self.nodes.iter().any(|n| n.slots.iter().any(|s| s.held.values().any(|q| !q.is_empty())))
    }

    /// Host-visible words the model changed since the last call, swapped
    /// into `buf` (whose old contents are dropped; both buffers keep their
    /// capacity, so steady-state event processing does not allocate).
    pub fn swap_touched(&mut self, buf: &mut Vec<Touch>) {
        buf.clear();
        std::mem::swap(buf, &mut self.touched);
    }

    /// Record that `len` bytes at `off` (from the start of the slot) changed.
    pub(crate) fn touch(&mut self, node: u16, slot: u16, off: usize, len: usize) {
        self.touched.push(Touch { node, slot, off: off as u32, len: len as u32 });
    }

    /// Record that a UR register changed.
    pub(crate) fn touch_ur(&mut self, node: u16, slot: u16, reg: usize) {
        self.touch(node, slot, layout::UR_OFFSET + reg, 8);
    }

    pub(crate) fn schedule(&mut self, time: SimTime, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let time = time.max(self.now);
        let at = event.at();
        let key = layout::source_index(at.node, at.slot, self.cfg.slots);
        self.slot_events[key].push(Reverse((time, seq)));
        let touches = event.touches();
        for (r, heaps) in Touches::ALL.iter().zip(self.slot_region_events.iter_mut()) {
            if touches.contains(*r) {
                heaps[key].push(Reverse((time, seq)));
            }
        }
        if event.may_send() {
            self.slot_send_events[key].push(Reverse((time, seq)));
        }
        let node = at.node as usize;
        let order = (time, key as u32, seq);
        if self.node_first[node].is_none_or(|first| order < first) {
            if let Some((t, k, q)) = self.node_first[node] {
                self.nodes_by_first.remove(&(t, k, q, at.node));
            }
            self.node_first[node] = Some(order);
            self.nodes_by_first.insert((time, key as u32, seq, at.node));
        }
        self.events.push(Reverse(Scheduled { time, key: key as u32, seq, event }));
    }

    /// Process the next event, if any. Returns its time.
    pub fn step(&mut self) -> Option<SimTime> {
        let Reverse(s) = self.events.pop()?;
        // Events leave in (time, slot, seq) order, so the earliest of its slot is this one.
        let at = s.event.at();
        let key = layout::source_index(at.node, at.slot, self.cfg.slots);
        let popped = self.slot_events[key].pop();
        debug_assert_eq!(popped, Some(Reverse((s.time, s.seq))));
        let touches = s.event.touches();
        for (r, heaps) in Touches::ALL.iter().zip(self.slot_region_events.iter_mut()) {
            if touches.contains(*r) {
                let popped = heaps[key].pop();
                debug_assert_eq!(popped, Some(Reverse((s.time, s.seq))));
            }
        }
        if s.event.may_send() {
            let popped = self.slot_send_events[key].pop();
            debug_assert_eq!(popped, Some(Reverse((s.time, s.seq))));
        }
        // It was its node's earliest event too.
        debug_assert_eq!(self.node_first[at.node as usize], Some(s.order()));
        self.nodes_by_first.remove(&(s.time, s.key, s.seq, at.node));
        let base = layout::source_index(at.node, 0, self.cfg.slots);
        let first = self.slot_events[base..base + self.cfg.slots as usize]
            .iter()
            .enumerate()
            .filter_map(|(k, h)| h.peek().map(|Reverse((t, q))| (*t, (base + k) as u32, *q)))
            .min();
        self.node_first[at.node as usize] = first;
        if let Some((t, k, q)) = first {
            self.nodes_by_first.insert((t, k, q, at.node));
        }
        self.now = s.time;
        self.stats.events += 1;
        if self.planted.panic_at_event == Some(self.stats.events) {
            panic!("planted model fault: panic at event {}", self.stats.events);
        }
        match s.event {
            Event::Fetch { node, slot } => self.fetch(node, slot, s.time),
            Event::Complete { node, slot, seq, gen, status, bytes, deposit } => {
                self.complete(node, slot, seq, gen, status, bytes, deposit, s.time)
            }
            Event::Arrive(pkt) => self.arrive(pkt, s.time),
            Event::RingCommit { node, slot, source, record, ack } => {
                self.ring_commit(node, slot, source, record, ack, s.time)
            }
            Event::SchedEntry(e) => self.sched_entry_done(e, s.time),
        }
        Some(s.time)
    }

    // ---- MMIO helpers -------------------------------------------------------

    pub(crate) fn ur_off(slot: u16, reg: usize) -> usize {
        Model::region_off(slot, Region::Ur, reg)
    }

    pub(crate) fn region_off(slot: u16, region: Region, off: usize) -> usize {
        layout::slot_region_offset(slot as usize, region) + off
    }

    /// Read a UR register of a slot (the model's own view).
    pub fn read_ur(&self, node: u16, slot: u16, reg: usize) -> u64 {
        // Offsets are computed from validated node/slot numbers and register
        // constants, so they are always inside the mapping.
        self.mmio[node as usize].read_u64(Model::ur_off(slot, reg)).unwrap_or(0)
    }

    pub(crate) fn write_ur(&self, node: u16, slot: u16, reg: usize, v: u64) {
        let _ = self.mmio[node as usize].write_u64(Model::ur_off(slot, reg), v);
    }

    fn init_slot_registers(&mut self, n: u16, s: u16) {
        let cfg = &self.cfg;
        let caps = Caps::VECTOR_LOCAL
            | Caps::VECTOR_REMOTE
            | Caps::IVS
            | Caps::BOTF
            | Caps::MODE_STRIDE
            | Caps::MODE_LIST
            | Caps::MODE_PACKED_LIST
            | Caps::SCHED
            | Caps::ARRIVALS
            | Caps::SIMULATED;
        let caps_word = ur::caps::EXPOSE_ENTRIES.set(
            ur::caps::CQ_DEPTH.set(ur::caps::FLAGS.set(0, caps.bits() as u64), CQ_DEPTH as u64),
            ur::EXPOSE_ENTRIES as u64,
        );
        let limits = ur::limits::RING_ENTRIES
            .set(ur::limits::MAX_PAYLOAD.set(0, ur::MAX_PAYLOAD as u64), layout::MAX_SOURCES as u64);
        let topo = ur::Topology { node: n, slot: s, nodes: cfg.nodes, slots: cfg.slots }.encode();
        let base = self.partition_base(s);
        let size = cfg.partition_size;
        let clock = (cfg.timing.clock_mhz * 1e6).round() as u64;
        for (reg, v) in [
            (ur::off::ID, ur::id_value()),
            (ur::off::TOPOLOGY, topo),
            (ur::off::CAPS, caps_word),
            (ur::off::SODIMM_BASE, base),
            (ur::off::SODIMM_SIZE, size),
            (ur::off::LIMITS, limits),
            (ur::off::CLOCK_HZ, clock),
        ] {
            self.write_ur(n, s, reg, v);
        }
    }

    /// Absolute SO-DIMM base address of a slot's partition.
    pub fn partition_base(&self, slot: u16) -> u64 {
        slot as u64 * self.cfg.partition_size
    }

    /// Reset a slot for a new process: clear its registers, windows, LLCM and
    /// SO-DIMM partition, drop held packets and forget its in-flight commands.
    pub fn reset_slot(&mut self, node: u16, slot: u16) {
        let map = &self.mmio[node as usize];
        let _ = map.fill(slot as usize * SLOT_STRIDE, SLOT_STRIDE, 0);
        let base = self.partition_base(slot) as usize;
        let len = self.cfg.partition_size as usize;
        let mem = &mut self.sodimm[node as usize];
        // Return the partition's pages to the OS: they read back as zeros
        // without being touched (private anonymous mapping).
        // SAFETY: `base..base+len` lies inside the mapping (partition of a
        // validated slot); MADV_DONTNEED on a private anonymous mapping only
        // replaces the pages with zero-fill-on-demand ones, and no reference
        // into this memory is held across the call.
        let advised = unsafe { mem.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, base, len) };
        if advised.is_err() {
            mem[base..base + len].fill(0);
        }
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        let gen = st.generation + 1;
        *st = SlotState { generation: gen, ..Default::default() };
        self.init_slot_registers(node, slot);
        self.touch(node, slot, 0, SLOT_STRIDE);
    }

    // ---- doorbells and host activity ---------------------------------------

    /// The host of `(node, slot)` may have written DOORBELL. `issue_time`
    /// gives the simulated time at which each newly posted command was
    /// rung; `now` is the host's clock when it handed control back.
    pub fn doorbell(&mut self, node: u16, slot: u16, now: SimTime, issue_time: impl Fn(u64) -> SimTime) {
        let db = self.read_ur(node, slot, ur::off::DOORBELL);
        let st = &self.nodes[node as usize].slots[slot as usize];
        if db == st.posted {
            return;
        }
        let valid = db > st.posted && db - st.fetched <= CQ_DEPTH as u64;
        if !valid {
            if st.bad_doorbell != Some(db) {
                self.nodes[node as usize].slots[slot as usize].bad_doorbell = Some(db);
                self.report_error(node, slot, ErrorCode::DoorbellInvalid, None, now);
                self.update_status(node, slot);
            }
            return;
        }
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        st.bad_doorbell = None;
        for seq in st.posted..db {
            st.issue_time[seq as usize % CQ_DEPTH] = issue_time(seq);
        }
        st.posted = db;
        self.update_status(node, slot);
        self.kick_fetch(node, slot);
    }

    fn kick_fetch(&mut self, node: u16, slot: u16) {
        let fetch = self.cfg.timing.cycles(self.cfg.timing.fetch_cycles);
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        if st.fetch_pending || st.fetched >= st.posted {
            return;
        }
        st.fetch_pending = true;
        let t = (st.issue_time[st.fetched as usize % CQ_DEPTH] + fetch).max(st.engine.free_at());
        self.schedule(t, Event::Fetch { node, slot });
    }

    /// The host of `(node, slot)` ran until `now`: it may have advanced ring
    /// read pointers (accept held packets) or acknowledged errors.
    pub fn host_activity(&mut self, node: u16, slot: u16, now: SimTime) {
        self.restore_read_only(node, slot);
        self.update_status(node, slot);
        let sources: Vec<usize> = self.nodes[node as usize].slots[slot as usize]
            .held
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(k, _)| *k)
            .collect();
        for src in sources {
            self.drain_held(node, slot, src, now);
        }
    }

    /// Put back every read-only UR register and completion entry from the
    /// model's shadows: on hardware, host stores to them are ignored; in the
    /// simulator's shared file they land, so the model undoes them each time
    /// the host hands over control.
    pub(crate) fn restore_read_only(&mut self, node: u16, slot: u16) {
        self.init_slot_registers(node, slot);
        let st = &self.nodes[node as usize].slots[slot as usize];
        let held: u64 = st.held.values().map(|q| q.len() as u64).sum();
        let regs = [
            (ur::off::CMD_FETCHED, st.fetched),
            (ur::off::CMD_COMPLETED, st.completed),
            (ur::off::STATUS, st.status_word),
            (ur::off::ERROR_COUNT, st.errors),
            (ur::off::LAST_ERROR, st.last_error_word),
            (ur::off::RX_REFUSED, st.rx_refused),
            (ur::off::RX_HELD, held),
            (ur::off::RX_ACCEPTED, st.rx_accepted),
            (ur::off::INFLIGHT, st.inflight.len() as u64),
        ];
        let completions = st.completion_words;
        for (reg, v) in regs {
            self.write_ur(node, slot, reg, v);
        }
        self.restore_sched_words(node, slot);
        for (i, (done, result)) in completions.iter().enumerate() {
            let base = ur::off::COMPLETIONS + i * ur::off::COMPLETION_STRIDE;
            self.write_ur(node, slot, base, *done);
            self.write_ur(node, slot, base + 8, *result);
        }
    }

    pub(crate) fn update_status(&mut self, node: u16, slot: u16) {
        let st = &self.nodes[node as usize].slots[slot as usize];
        let ack = self.read_ur(node, slot, ur::off::ERROR_ACK);
        let mut status = Status::empty();
        if ack != st.errors {
            status |= Status::ERROR;
        }
        if !st.inflight.is_empty() || st.fetched < st.posted {
            status |= Status::BUSY;
        }
        let held: u64 = st.held.values().map(|q| q.len() as u64).sum();
        if held > 0 {
            status |= Status::RX_HELD;
        }
        if st.bad_doorbell.is_some() {
            status |= Status::DOORBELL_INVALID;
        }
        let inflight = st.inflight.len() as u64;
        if st.status_word != status.bits() {
            self.touch_ur(node, slot, ur::off::STATUS);
        }
        if self.read_ur(node, slot, ur::off::RX_HELD) != held {
            self.touch_ur(node, slot, ur::off::RX_HELD);
        }
        if self.read_ur(node, slot, ur::off::INFLIGHT) != inflight {
            self.touch_ur(node, slot, ur::off::INFLIGHT);
        }
        self.nodes[node as usize].slots[slot as usize].status_word = status.bits();
        self.write_ur(node, slot, ur::off::STATUS, status.bits());
        self.write_ur(node, slot, ur::off::RX_HELD, held);
        self.write_ur(node, slot, ur::off::INFLIGHT, inflight);
    }

    pub(crate) fn report_error(&mut self, node: u16, slot: u16, code: ErrorCode, seq: Option<u64>, at: SimTime) {
        self.stats.errors += 1;
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        st.errors += 1;
        let errors = st.errors;
        let mut w = ur::last_error::CODE.set(0, code as u64);
        if let Some(seq) = seq {
            w = ur::last_error::HAS_SEQ.set(w, 1);
            w = ur::last_error::SEQ.set(w, seq & 0xffff_ffff);
        }
        self.nodes[node as usize].slots[slot as usize].last_error_word = w;
        self.write_ur(node, slot, ur::off::LAST_ERROR, w);
        self.write_ur(node, slot, ur::off::ERROR_COUNT, errors);
        if let Some(t) = self.trace.as_mut() {
            t.instant(code.name(), "error", node as u32, slot as u32, at, &[("seq", Arg::U(seq.unwrap_or(u64::MAX)))]);
        }
        self.touch_ur(node, slot, ur::off::ERROR_COUNT);
        self.touch_ur(node, slot, ur::off::LAST_ERROR);
    }

    // ---- completion ---------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        node: u16,
        slot: u16,
        seq: u64,
        gen: u64,
        status: ErrorCode,
        bytes: u64,
        deposit: Option<Deposit>,
        t: SimTime,
    ) {
        if self.nodes[node as usize].slots[slot as usize].generation != gen {
            return; // the process that issued it is gone
        }
        if let Some(d) = deposit {
            match d {
                Deposit::Pw { off, data } => {
                    let at = Region::Pw.offset() + off as usize;
                    let _ = self.mmio[node as usize].write_bytes(slot as usize * SLOT_STRIDE + at, &data);
                    self.touch(node, slot, at, data.len());
                }
                Deposit::SoDimm { segments, data } => self.scatter(node, &segments, &data),
            }
        }
        let st = &mut self.nodes[node as usize].slots[slot as usize];
        let Some(inf) = st.inflight.remove(&seq) else {
            return;
        };
        st.completed += 1;
        let completed = st.completed;
        let was_stalled = std::mem::take(&mut st.stalled);
        let idx = seq as usize % CQ_DEPTH;
        let base = ur::off::COMPLETIONS + idx * ur::off::COMPLETION_STRIDE;
        let result = ur::CompletionResult { status: status as u16, bytes }.encode();
        self.nodes[node as usize].slots[slot as usize].completion_words[idx] = (seq + 1, result);
        self.write_ur(node, slot, base + 8, result);
        self.write_ur(node, slot, base, seq + 1);
        self.write_ur(node, slot, ur::off::CMD_COMPLETED, completed);
        self.stats.commands += 1;
        if status == ErrorCode::Ok {
            self.stats.bytes += bytes;
        }
        self.nodes[node as usize].slots[slot as usize].last_done = Some((inf.op, status, bytes));
        if status != ErrorCode::Ok {
            self.report_error(node, slot, status, Some(seq), t);
        }
        self.update_status(node, slot);
        if let Some(tr) = self.trace.as_mut() {
            let name = if status == ErrorCode::Ok {
                format!("{} {}B", inf.op.map_or("?", Opcode::name), bytes)
            } else {
                format!("{} {}", inf.op.map_or("descriptor", Opcode::name), status.name())
            };
            tr.span(
                &name,
                "cmd",
                node as u32,
                slot as u32,
                inf.start,
                t,
                &[("seq", Arg::U(seq)), ("bytes", Arg::U(bytes))],
            );
        }
        self.touch(node, slot, layout::UR_OFFSET + base, 16);
        self.touch_ur(node, slot, ur::off::CMD_COMPLETED);
        if was_stalled {
            let st = &mut self.nodes[node as usize].slots[slot as usize];
            if !st.fetch_pending {
                st.fetch_pending = true;
                self.schedule(t, Event::Fetch { node, slot });
            }
        }
    }

    // ---- SO-DIMM access -----------------------------------------------------

    /// Gather validated segments (anything out of range reads as zeros:
    /// callers validate first, this only keeps a bug from panicking).
    pub(crate) fn gather(&self, node: u16, segments: &[(u64, u32)]) -> Vec<u8> {
        let mem = &self.sodimm[node as usize];
        let mut out = Vec::with_capacity(segments.iter().map(|s| s.1 as usize).sum());
        for &(a, l) in segments {
            match mem.get(a as usize..a as usize + l as usize) {
                Some(src) => out.extend_from_slice(src),
                None => out.resize(out.len() + l as usize, 0),
            }
        }
        out
    }

    /// Scatter `data` over validated segments (out-of-range parts are skipped).
    pub(crate) fn scatter(&mut self, node: u16, segments: &[(u64, u32)], data: &[u8]) {
        let mem = &mut self.sodimm[node as usize];
        let mut pos = 0usize;
        for &(a, l) in segments {
            let l = l as usize;
            if let (Some(dst), Some(src)) = (mem.get_mut(a as usize..a as usize + l), data.get(pos..pos + l)) {
                dst.copy_from_slice(src);
            }
            pos += l;
        }
    }

    /// Read SO-DIMM bytes directly (for tests and invariant checks).
    pub fn sodimm(&self, node: u16) -> &[u8] {
        &self.sodimm[node as usize]
    }

    /// Write SO-DIMM bytes directly (test set-up only; a host cannot do this).
    pub fn sodimm_mut(&mut self, node: u16) -> &mut [u8] {
        &mut self.sodimm[node as usize]
    }

    /// The MMIO surface of a node.
    pub fn mmio(&self, node: u16) -> &Mapping {
        &self.mmio[node as usize]
    }

    /// Time for one SO-DIMM pass over `segments`.
    pub(crate) fn sodimm_time(&self, segments: &[(u64, u32)]) -> SimTime {
        let t = &self.cfg.timing;
        let mut c = 0u64;
        for s in segments {
            // Saturating: validated profiles cannot overflow, and no profile may.
            c = c.saturating_add(
                t.sodimm_latency_cycles.saturating_add((s.1 as u64).div_ceil(t.sodimm_bytes_per_cycle)),
            );
        }
        t.cycles(c.max(1))
    }
}
