//! The cycle-approximate device model: N nodes × S slots, their command
//! engines, SO-DIMM ports and links, and the events that move data.
//!
//! The model is a discrete-event simulation: every operation reserves the
//! resources it uses ([`Timeline`]s in device cycles) and schedules its
//! effects as events; events are processed strictly in `(time, slot,
//! sequence)` order, so the same inputs always give the same results and the same trace.
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

mod agenda;
mod coll;
mod exec;
mod rx;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use fpga_regs::layout::{self, Region, SLOT_STRIDE};
use fpga_regs::packet::HEADER_LEN;
use fpga_regs::ur::{self, Caps, Status, CQ_DEPTH};
use fpga_regs::{ErrorCode, Opcode, Peer};
use simlink::mmio::Mapping;

use crate::profile::DeviceTiming;
use crate::time::{SimTime, Timeline};
use crate::trace::{Arg, Trace};

mod complete;

mod host;

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
    /// An atomic operation on the receiver's SO-DIMM (the AMO command).
    AmoRequest {
        addr: u64,
        op: fpga_regs::Atomic,
        elem: fpga_regs::sched::ElemType,
        operand: u64,
        compare: u64,
        pw_off: u32,
    },
    /// The old value of an AMO, for the issuer's PW.
    AmoResponse {
        old: Vec<u8>,
        pw_off: u32,
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
            // Operation, element type, operand and compare value.
            PacketKind::AmoRequest { .. } => 24,
            PacketKind::AmoResponse { old, .. } => old.len() as u64,
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
            PacketKind::AmoRequest { .. } => "AMO req",
            PacketKind::AmoResponse { .. } => "AMO resp",
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

    /// What processing the event may put on the wire, and where to (a
    /// packet can come back to the event's own slot: directly when it is
    /// addressed there, or as a round trip). A completion sends nothing,
    /// unless it restarts an engine that stalled on a full completion queue
    /// (the cluster checks [`Model::engine_stalled`] for that); an arriving
    /// acknowledgement or RVL response only completes a command; a ring
    /// commit and an arriving IVS, RVS or RVL request answer the packet's
    /// source only. A fetch, and the collective engine, may send anywhere.
    pub fn sends(&self) -> Sends {
        let answer = |src: Peer, at: Peer| if src == at { Sends::MaySelf } else { Sends::To(src) };
        match self {
            Event::Complete { .. } => Sends::Nothing,
            Event::RingCommit { ack, .. } => answer(ack.dst, ack.src),
            Event::Arrive(p) => match p.kind {
                PacketKind::Ack { .. }
                | PacketKind::Nack { .. }
                | PacketKind::SchedAck { .. }
                | PacketKind::RvlResponse { .. }
                | PacketKind::AmoResponse { .. } => Sends::Nothing,
                PacketKind::Ivs { .. }
                | PacketKind::Rvs { .. }
                | PacketKind::RvlRequest { .. }
                | PacketKind::AmoRequest { .. } => answer(p.src, p.dst),
                PacketKind::Sched { .. } => Sends::MaySelf,
            },
            Event::Fetch { .. } | Event::SchedEntry(_) => Sends::MaySelf,
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
                PacketKind::AmoResponse { .. } => Touches::PW,
                _ => Touches::NONE,
            },
        };
        Touches(Touches::UR.0 | extra.0)
    }
}

/// What an event may send ([`Event::sends`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sends {
    /// No packet.
    Nothing,
    /// Only to this slot, never its own.
    To(Peer),
    /// Anywhere, its own slot included.
    MaySelf,
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
    /// Every region.
    pub const REGIONS: [Touches; 3] = [Touches::UR, Touches::LLCM, Touches::PW];

    fn contains(self, r: Touches) -> bool {
        self.0 & r.0 == r.0
    }

    /// The bits (UR 1, LLCM 2, PW 4).
    pub fn bits(self) -> u8 {
        self.0
    }

    /// The region a word at slot offset `off` lies in, as far as what can
    /// change it goes: `RX_ACCEPTED`, in UR, moves only with a ring commit,
    /// so it counts as LLCM; WW, which only the host writes, as nothing.
    pub fn of_word(off: u32) -> Touches {
        let off = off as usize;
        if off == layout::UR_OFFSET + ur::off::RX_ACCEPTED {
            return Touches::LLCM;
        }
        match Region::ALL.iter().find(|r| (r.offset()..r.offset() + r.size()).contains(&off)) {
            Some(Region::Ur) => Touches::UR,
            Some(Region::Llcm) => Touches::LLCM,
            Some(Region::Pw) => Touches::PW,
            _ => Touches::NONE,
        }
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

/// The most slots a cluster has for its scheduler to scan pending events
/// instead of indexing them by slot (see [`Model::is_indexed`]).
pub const SCAN_SLOTS: usize = 16;

/// What the scheduler needs of a pending event at a slot.
#[derive(Clone, Copy, Debug)]
struct PendingAt {
    time: SimTime,
    seq: u64,
    touches: Touches,
    sends: Sends,
}

/// Read-only UR words that are the same in every slot (computed once:
/// the host may overwrite them, and the model restores them at every
/// hand-over).
#[derive(Clone, Copy, Debug)]
struct ConstantRegs {
    id: u64,
    caps: u64,
    limits: u64,
    clock_hz: u64,
}

impl ConstantRegs {
    fn of(cfg: &ModelConfig) -> ConstantRegs {
        let caps = Caps::VECTOR_LOCAL
            | Caps::VECTOR_REMOTE
            | Caps::IVS
            | Caps::BOTF
            | Caps::MODE_STRIDE
            | Caps::MODE_LIST
            | Caps::MODE_PACKED_LIST
            | Caps::SCHED
            | Caps::ARRIVALS
            | Caps::ATOMIC
            | Caps::SIMULATED;
        let caps = ur::caps::EXPOSE_ENTRIES.set(
            ur::caps::CQ_DEPTH.set(ur::caps::FLAGS.set(0, caps.bits() as u64), CQ_DEPTH as u64),
            ur::EXPOSE_ENTRIES as u64,
        );
        let limits = ur::limits::RING_ENTRIES
            .set(ur::limits::MAX_PAYLOAD.set(0, ur::MAX_PAYLOAD as u64), layout::MAX_SOURCES as u64);
        let clock_hz = (cfg.timing.clock_mhz * 1e6).round() as u64;
        ConstantRegs { id: ur::id_value(), caps, limits, clock_hz }
    }
}

/// The model of a whole cluster.
pub struct Model {
    pub(crate) cfg: ModelConfig,
    constant_regs: ConstantRegs,
    pub(crate) mmio: Vec<Mapping>,
    pub(crate) sodimm: Vec<memmap2::MmapMut>,
    pub(crate) nodes: Vec<NodeState>,
    events: agenda::Agenda,
    /// A summary of the same events per slot (by source index), so that
    /// the scheduler finds a slot's earliest event of each kind without a
    /// scan of every event. A slot has few pending events at a time (its
    /// commands in flight and what is arriving), so a short list is
    /// cheaper to keep than a heap per kind.
    slot_pending: Vec<Vec<PendingAt>>,
    /// Whether `slot_pending` and `changed` are kept: only for clusters of
    /// more than [`SCAN_SLOTS`] slots; a smaller one's few pending events
    /// are scanned where needed, which costs less than keeping an index.
    indexed: bool,
    /// Slots whose pending events (or engine) changed since the scheduler
    /// last looked ([`Model::take_changed_slots`]).
    changed: Vec<Peer>,
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

    /// The capability word every slot shows.
    pub(crate) fn constant_caps(&self) -> u64 {
        self.constant_regs.caps
    }

    /// Change the capability word every slot shows, and show it.
    pub(crate) fn set_constant_caps(&mut self, caps: u64) {
        self.constant_regs.caps = caps;
        for n in 0..self.cfg.nodes {
            for s in 0..self.cfg.slots {
                self.init_slot_registers(n, s);
            }
        }
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
        let nodes = (0..cfg.nodes)
            .map(|_| NodeState { slots: (0..cfg.slots).map(|_| SlotState::default()).collect(), ..Default::default() })
            .collect();
        let mut m = Model {
            constant_regs: ConstantRegs::of(&cfg),
            cfg,
            mmio,
            sodimm,
            nodes,
            events: agenda::Agenda::default(),
            slot_pending: (0..nodes_slots).map(|_| Vec::new()).collect(),
            indexed: nodes_slots > SCAN_SLOTS,
            changed: Vec::new(),
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
        self.events.first_time()
    }

    /// The earliest pending event at `peer`'s slot (one that changes its words).
    pub fn next_event_at(&self, peer: Peer) -> Option<SimTime> {
        self.first_at(peer, |_| true)
    }

    /// The earliest pending event at `peer`'s slot that `keep` accepts.
    fn first_at(&self, peer: Peer, keep: impl Fn(&PendingAt) -> bool) -> Option<SimTime> {
        if !self.indexed {
            return self
                .events
                .iter()
                .filter(|e| e.peer == peer)
                .map(|e| PendingAt { time: e.time, seq: e.seq, touches: e.touches, sends: e.sends })
                .filter(|e| keep(e))
                .map(|e| e.time)
                .min();
        }
        let key = layout::source_index(peer.node, peer.slot, self.cfg.slots);
        self.slot_pending.get(key)?.iter().filter(|e| keep(e)).map(|e| e.time).min()
    }

    /// Whether pending events are indexed by slot ([`SCAN_SLOTS`]); if not,
    /// [`Model::take_changed_slots`] reports nothing and the scheduler scans
    /// [`Model::pending_events`] instead.
    pub fn is_indexed(&self) -> bool {
        self.indexed
    }

    /// Every pending event's time, the slot whose words it changes and
    /// what it may send (as [`Model::next_send_at`] counts it: anything, to
    /// its own slot too, while that slot's engine is stalled), in no
    /// particular order (for checks; the scheduler uses the indexes).
    pub fn pending_events(&self) -> impl Iterator<Item = (SimTime, Peer, Sends, Touches)> + '_ {
        self.events
            .iter()
            .map(|e| (e.time, e.peer, if self.engine_stalled(e.peer) { Sends::MaySelf } else { e.sends }, e.touches))
    }

    /// The earliest pending events at `peer`'s slot that may send a packet:
    /// to the slot itself, and (only) to another slot of its node and of
    /// another node. While its command engine is stalled, every event may
    /// send anywhere (a completion restarts it).
    pub fn next_send_at(&self, peer: Peer) -> (Option<SimTime>, Option<SimTime>, Option<SimTime>) {
        if self.engine_stalled(peer) {
            return (self.next_event_at(peer), None, None);
        }
        let to = |near: bool| move |e: &PendingAt| matches!(e.sends, Sends::To(p) if (p.node == peer.node) == near);
        (
            self.first_at(peer, |e| e.sends == Sends::MaySelf),
            self.first_at(peer, to(true)),
            self.first_at(peer, to(false)),
        )
    }

    /// Whether `peer`'s command engine waits for a completion-queue entry
    /// (the next completion restarts it: it fetches, and may send).
    pub fn engine_stalled(&self, peer: Peer) -> bool {
        self.nodes[peer.node as usize].slots[peer.slot as usize].stalled
    }

    /// The earliest pending event that may write `region` of `peer`'s slot.
    pub fn next_event_touching(&self, peer: Peer, region: Touches) -> Option<SimTime> {
        self.first_at(peer, |e| e.touches.contains(region))
    }

    /// The earliest pending event at `peer`'s slot that writes any of the
    /// regions `bits` ([`Touches::bits`]).
    pub fn next_event_touching_any(&self, peer: Peer, bits: u8) -> Option<SimTime> {
        self.first_at(peer, |e| e.touches.0 & bits != 0)
    }

    /// Whether data from elsewhere may still land in `peer`'s PW: a remote
    /// read it issued is in flight. Otherwise only the slot's own events
    /// (its local VL completions) can change its PW.
    pub fn remote_reads_in_flight(&self, peer: Peer) -> bool {
        self.nodes[peer.node as usize].slots[peer.slot as usize].inflight.values().any(|f| f.remote_read)
    }

    /// The earliest pending event at `peer`'s slot that may put a packet
    /// on the wire (anywhere), or every event while its engine is stalled.
    pub fn next_packet_at(&self, peer: Peer) -> Option<SimTime> {
        if self.engine_stalled(peer) {
            return self.next_event_at(peer);
        }
        let (a, b, c) = self.next_send_at(peer);
        [a, b, c].into_iter().flatten().min()
    }

    /// The slots whose pending events, or engine, changed since the last
    /// call (each at most once per change; the caller dedups), moved into `out`.
    pub fn take_changed_slots(&mut self, out: &mut Vec<Peer>) {
        out.clear();
        std::mem::swap(out, &mut self.changed);
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

    /// The least time from an actor being woken to anything it does
    /// reaching another slot, beyond the hop: a doorbell is fetched and
    /// executed first (`fetch + exec`), and ring space it frees takes a
    /// held packet's SO-DIMM write before the acknowledgement leaves
    /// (`sodimm_latency + status_write`; see `drain_held`).
    pub fn wake_latency(&self) -> SimTime {
        let t = &self.cfg.timing;
        let doorbell = t.fetch_cycles.saturating_add(t.exec_cycles);
        let drain = t.sodimm_latency_cycles.saturating_add(t.status_write_cycles);
        t.cycles(doorbell.min(drain))
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
        if self.indexed {
            self.slot_pending[key].push(PendingAt { time, seq, touches: event.touches(), sends: event.sends() });
            self.changed.push(at);
        }
        self.events.push(time, key as u32, seq, event);
    }

    /// Process the next event, if any. Returns its time.
    pub fn step(&mut self) -> Option<SimTime> {
        let s = self.events.pop()?;
        // Events leave in (time, slot, seq) order, so the earliest of its slot is this one.
        let at = s.peer;
        let key = layout::source_index(at.node, at.slot, self.cfg.slots);
        if self.indexed {
            let list = &mut self.slot_pending[key];
            match list.iter().position(|e| e.seq == s.seq) {
                Some(k) => {
                    list.swap_remove(k);
                }
                None => debug_assert!(false, "event {} missing from its slot's list", s.seq),
            }
            // Its slot's events change now, and its engine may stall or restart.
            self.changed.push(at);
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

    /// Put `v` back in a read-only UR register if the host changed it:
    /// nearly always it did not, and a read leaves the cache line clean
    /// where a write would dirty it (at 1,024 ranks these lines are cold,
    /// and their write-backs were a tenth of the simulator's cache misses).
    fn restore_ur(&self, node: u16, slot: u16, reg: usize, v: u64) {
        if self.read_ur(node, slot, reg) != v {
            self.write_ur(node, slot, reg, v);
        }
    }

    /// [`Model::restore_ur`] for a run of words at `reg`, last word first:
    /// a completion entry is (done, result), and a host reading it while
    /// the device runs (a card, or `serve --realtime`) must never see a
    /// restored done word beside a result not yet restored.
    pub(crate) fn restore_ur_words(&self, node: u16, slot: u16, reg: usize, words: &[u64]) {
        let map = &self.mmio[node as usize];
        let base = Model::ur_off(slot, reg);
        // Nearly always the host changed nothing: one checked run of loads
        // and a comparison, instead of a checked load per word.
        let mut now = [0u64; 2 * CQ_DEPTH];
        if let Some(now) = now.get_mut(..words.len()) {
            if map.read_u64s(base, now).is_ok() && now == words {
                return;
            }
        }
        for (k, v) in words.iter().enumerate().rev() {
            if map.read_u64(base + 8 * k).ok() != Some(*v) {
                let _ = map.write_u64(base + 8 * k, *v);
            }
        }
    }

    fn init_slot_registers(&mut self, n: u16, s: u16) {
        for (reg, v) in self.constant_words(n, s) {
            self.write_ur(n, s, reg, v);
        }
    }

    /// The read-only registers whose values never change, and their values.
    fn constant_words(&self, n: u16, s: u16) -> [(usize, u64); 7] {
        let topo = ur::Topology { node: n, slot: s, nodes: self.cfg.nodes, slots: self.cfg.slots }.encode();
        let c = self.constant_regs;
        [
            (ur::off::ID, c.id),
            (ur::off::TOPOLOGY, topo),
            (ur::off::CAPS, c.caps),
            (ur::off::SODIMM_BASE, self.partition_base(s)),
            (ur::off::SODIMM_SIZE, self.cfg.partition_size),
            (ur::off::LIMITS, c.limits),
            (ur::off::CLOCK_HZ, c.clock_hz),
        ]
    }

    /// Absolute SO-DIMM base address of a slot's partition.
    pub fn partition_base(&self, slot: u16) -> u64 {
        slot as u64 * self.cfg.partition_size
    }

    /// Reset a slot for a new process: clear its registers, windows, LLCM and
    /// SO-DIMM partition, drop held packets and forget its in-flight commands.
    pub fn reset_slot(&mut self, node: u16, slot: u16) {
        let map = &self.mmio[node as usize];
        let _ = map.zero(slot as usize * SLOT_STRIDE, SLOT_STRIDE);
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
}
