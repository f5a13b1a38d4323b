//! The DPDK backend: the reliable datagram protocol of the UDP backend
//! (seed 001's, written once in [`super::udp::DatagramTransport`]) over
//! DPDK poll-mode ports instead of a kernel socket (seed 000 §4).
//!
//! **On one host (this version)**: every pair of ranks shares one
//! `net_memif` interface (shared-memory rings between the two processes;
//! the lower rank is the server). memif has no flow director, so queue
//! selection is emulated by giving each peer its own interface: a frame's
//! port tells whose it is, and the datagram header's source rank must
//! agree. Each rank polls its own ports on its own thread; nothing goes
//! through the kernel after start-up.
//!
//! Frames are Ethernet: destination and source MAC, EtherType
//! [`ETHERTYPE`], then one datagram of the protocol (header with sequence
//! number, ACK, message length and fragment index; payload). Messages
//! longer than a frame are fragmented and reassembled by the protocol;
//! losses are repaired by its ACKs and retransmissions, and a peer that
//! acknowledges nothing for `DN_UDP_TIMEOUT_MS` ends the job with an
//! error naming it. The tunables are the UDP backend's (`DN_UDP_WINDOW`,
//! `DN_UDP_FAULTS`, `DN_UDP_AUTH`, ...).
//!
//! Start-up: each rank starts the EAL (no hugepages, no PCI, no shared
//! files) with the server side of its interfaces to higher ranks,
//! publishes `dpdk.<rank>` in the job directory, and then adds the client
//! side to each lower rank once that rank has published (a memif client
//! that finds no server retries only after seconds). The sockets are
//! files in the job directory, which is its owner's alone
//! ([`socket_in`]).
//!
//! **On a shared segment** (`DN_DPDK_VDEV`, `dnrun --dpdk-vdev`: one rank
//! per host or namespace, e.g. af_packet on a veth end): one port for all
//! peers. Ranks broadcast hellos (EtherType [`HELLO_ETHERTYPE`]) until they
//! know every rank's MAC (seed 000: MAC addresses exchanged at
//! initialisation); frames then go to the peer's MAC, and a frame's source
//! MAC says who sent it. Frames are sized to the interface's MTU.
//!
//! **Through a polling process per node** (`DN_DPDK_POLLER=node`, `dnrun
//! --dpdk-poller node`; seed 000 §4.1, the dedicated-process method): see
//! [`poller`]. Each rank has one memif interface, to its node's poller;
//! the pollers of two nodes share one memif interface with one queue per
//! rank slot, and the sending poller picks the queue of the destination
//! rank (memif has no flow director: the queue is the steering). Frames
//! carry the ranks' own MAC addresses ([`rank_mac`]), so the pollers route
//! them without reading the protocol header.

use std::io::{self, IoSlice};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::udp::faults;
use super::udp::link::{Link, Received};
use super::udp::wire::{AuthKey, HEADER, TAG};
use super::udp::{DatagramTransport, UdpConfig};
use crate::error::TransportError;

/// EtherType of our frames (IEEE 802 local experimental 1).
pub const ETHERTYPE: u16 = 0x88B5;
/// EtherType of the hellos that exchange MAC addresses on a shared
/// segment (IEEE 802 local experimental 2).
pub const HELLO_ETHERTYPE: u16 = 0x88B6;
/// Environment variable (`dnrun --dpdk-vdev`): the one DPDK interface a
/// rank shares with every peer, as an EAL `--vdev` argument, e.g.
/// `net_af_packet0,iface=veth0`. Unset: memif between the ranks of this host.
pub const DN_DPDK_VDEV: &str = "DN_DPDK_VDEV";
/// Environment variable (`dnrun --dpdk-poller`): `rank` (each rank polls
/// its own interfaces, the default) or `node` (a polling process per node
/// receives for every rank of the node; [`poller`]).
pub const DN_DPDK_POLLER: &str = "DN_DPDK_POLLER";
/// Ethernet header bytes.
const ETH: usize = 14;

pub mod poller;

/// Who polls the receive queues (seed 000 §4.1 names both methods).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polling {
    /// Each rank polls its own interfaces (the "MPI process" method).
    Rank,
    /// A dedicated process per node polls the node's interfaces and hands
    /// frames to its ranks through shared memory (the "dedicated process"
    /// method).
    Node,
}

impl Polling {
    /// From `DN_DPDK_POLLER` (unset: [`Polling::Rank`]).
    pub fn from_env() -> Result<Polling, TransportError> {
        match crate::knobs::word(DN_DPDK_POLLER)? {
            Some("node") => Ok(Polling::Node),
            _ => Ok(Polling::Rank),
        }
    }
}

/// Where the ranks of a job sit: blocks of `slots` ranks per node (as
/// `dnrun --nodes` places them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLayout {
    /// Ranks in the job.
    pub size: u32,
    /// Rank slots per node: `ceil(size / nodes)`.
    pub slots: u32,
}

impl NodeLayout {
    /// `size` ranks over `nodes` nodes.
    pub fn new(size: u32, nodes: u32) -> NodeLayout {
        NodeLayout { size, slots: size.div_ceil(nodes.max(1)).max(1) }
    }
    /// The node `rank` runs on.
    pub fn node_of(&self, rank: u32) -> u32 {
        rank / self.slots
    }
    /// `rank`'s slot on its node: the receive queue that carries its frames.
    pub fn slot_of(&self, rank: u32) -> u32 {
        rank % self.slots
    }
    /// Nodes that have at least one rank.
    pub fn nodes(&self) -> u32 {
        self.size.div_ceil(self.slots)
    }
    /// The ranks of `node`.
    pub fn ranks_of(&self, node: u32) -> std::ops::Range<u32> {
        (node * self.slots).min(self.size)..((node + 1) * self.slots).min(self.size)
    }
}

/// The MAC address a rank's frames carry when ranks go through polling
/// processes: locally administered (`02`), then `DN`, then the rank.
pub fn rank_mac(rank: u32) -> [u8; 6] {
    let r = rank.to_be_bytes();
    [0x02, b'D', b'N', r[1], r[2], r[3]]
}

/// The rank a [`rank_mac`] address names, if it is one of a job of `size`.
pub fn rank_of_mac(mac: &[u8], size: u32) -> Option<u32> {
    match mac {
        [0x02, b'D', b'N', a, b, c] => Some(u32::from_be_bytes([0, *a, *b, *c])).filter(|r| *r < size),
        _ => None,
    }
}

/// The job-directory file a node's poller writes once its interfaces listen.
pub fn poller_ready_file(dir: &std::path::Path, node: u32) -> std::path::PathBuf {
    dir.join(format!("dpdk-poller.{node}"))
}

/// The job-directory file a node's poller writes once all its
/// interfaces are connected (its ranks' and the other nodes' pollers').
pub fn poller_up_file(dir: &std::path::Path, node: u32) -> std::path::PathBuf {
    dir.join(format!("dpdk-poller.{node}.up"))
}

/// The job-directory file a rank that reaches its node's poller writes
/// once its link is up: in a job with room for spawned processes, how the
/// others learn that it has started ([`Link::reachable`]).
pub fn started_file(dir: &std::path::Path, rank: u32) -> std::path::PathBuf {
    dir.join(format!("dpdk.{rank}.started"))
}

/// The job-directory file a rank writes at the end of a clean finalize,
/// once it no longer touches any memif ring ([`Link::leave`]).
pub fn left_file(dir: &std::path::Path, rank: u32) -> std::path::PathBuf {
    dir.join(format!("dpdk.{rank}.left"))
}

/// The job-directory file a node's poller writes once it no longer
/// touches the rings it shares with `rank`, after `rank` has left.
pub fn poller_released_file(dir: &std::path::Path, node: u32, rank: u32) -> std::path::PathBuf {
    dir.join(format!("dpdk-poller.{node}.released.{rank}"))
}

/// The job-directory file a node's poller writes once it has stopped
/// and no longer touches the rings it shares with the other pollers.
pub fn poller_stopped_file(dir: &std::path::Path, node: u32) -> std::path::PathBuf {
    dir.join(format!("dpdk-poller.{node}.stopped"))
}

/// Environment variable, for tests: `RANK:MS` makes rank `RANK` keep
/// polling its rings for `MS` milliseconds at the end of finalize before
/// it says it has left, so that the other processes of the job would
/// leave while it polls if they did not wait for it.
pub const POLL_BEFORE_LEAVING_ENV: &str = "DN_DPDK_TEST_POLL_BEFORE_LEAVING_MS";

/// The memif arguments of the interface between `rank` and its node's
/// poller (the poller is the server), its socket in the job directory
/// `dir`.
pub fn poller_rank_args(dir: &Path, node: u32, rank: u32, frame: usize, server: bool) -> String {
    let role = if server { "server" } else { "client" };
    let mac = rank_mac(rank).map(|b| format!("{b:02x}")).join(":");
    format!(
        "role={role},socket={},socket-abstract=no,id=0,bsize={frame},rsize={},mac={mac}",
        socket_in(dir, &format!("n{node}-r{rank}")).display(),
        poller::RANK_RING_LOG2
    )
}

/// The memif socket named `name` of the job whose directory is `dir`.
///
/// A socket file in the job directory, not a name in the abstract
/// namespace: the directory is its owner's alone (mode 0700, made so by
/// `dnrun`), so no other user of the host can connect to a job's socket
/// before its own rank does, and two jobs never share a name whatever
/// their `--job-id`s.
pub fn socket_in(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("memif-{name}"))
}

/// The longest socket path the kernel takes (`sun_path`, less its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Refuse a job directory too deep for its memif sockets' paths.
pub fn check_socket_dir(dir: &Path) -> Result<(), TransportError> {
    let longest = socket_in(dir, "n65535-r4294967295");
    if longest.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(cfg_err(format!(
            "the job directory {} is too deep for memif socket paths ({} bytes at most): \
             start the job from dnrun with /dev/shm or a short TMPDIR",
            dir.display(),
            MAX_SOCKET_PATH
        )));
    }
    Ok(())
}
/// Default frame size: bytes of packet data per mbuf and memif buffer
/// (`DN_DPDK_FRAME`). memif moves frames through shared memory, so a frame
/// is not bound by an Ethernet MTU; see docs/BENCHMARKS.md for the sizes
/// measured.
pub const DEFAULT_FRAME: usize = 9216;
/// Frame sizes `DN_DPDK_FRAME` accepts (an mbuf's data room is 16 bits).
pub const FRAME_RANGE: std::ops::RangeInclusive<usize> = 256..=65_000;
/// Environment variable: the frame size (bytes, Ethernet header included).
/// Every rank of a job must use the same.
pub const FRAME_ENV: &str = "DN_DPDK_FRAME";

/// The frame size from `DN_DPDK_FRAME`, or the default.
pub fn frame_from_env() -> Result<usize, TransportError> {
    // The declared range is FRAME_RANGE (a test keeps them the same).
    Ok(crate::knobs::integer(FRAME_ENV)?.map_or(DEFAULT_FRAME, |n| n as usize))
}

/// The DPDK transport of one rank.
pub type DpdkTransport = DatagramTransport<DpdkLink>;

fn cfg_err(m: String) -> TransportError {
    TransportError::Config(m)
}

/// Whether this build can run the DPDK backend, and if not, why.
pub fn available() -> Result<(), String> {
    #[cfg(feature = "dpdk")]
    {
        dpdk_sys::available().map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "dpdk"))]
    {
        Err("this build of adi has no `dpdk` feature".into())
    }
}

/// Refuse a memif job that needs more Ethernet ports in one process than
/// this DPDK build allows (`RTE_MAX_ETHPORTS`; 32 in Debian's): with
/// per-rank polling each rank has a port per peer; with `--dpdk-poller
/// node` a rank has one and its node's poller one per local rank and one
/// per other node. The error names the limit and what fits.
pub fn check_port_count(np: u32, nodes: u32, node_pollers: bool) -> Result<(), String> {
    let Some(max) = dpdk_max_ports() else { return Ok(()) };
    let (need, who) = if node_pollers {
        let layout = NodeLayout::new(np, nodes.max(1));
        ((layout.slots + layout.nodes() - 1) as usize, "the busiest node's DPDK polling process")
    } else {
        (np.saturating_sub(1) as usize, "each rank (one memif port per peer)")
    };
    if need > max {
        let hint = if node_pollers {
            "spread the ranks over more --nodes".to_string()
        } else {
            format!(
                "at most {} ranks poll their own ports; use --dpdk-poller node (one port per rank, on a node poller) \
                 with --nodes, or --backend udp",
                max + 1
            )
        };
        return Err(format!(
            "{np} ranks over DPDK memif need {need} Ethernet ports in {who}, but this DPDK allows {max} per process \
             (RTE_MAX_ETHPORTS): {hint}"
        ));
    }
    Ok(())
}

fn dpdk_max_ports() -> Option<usize> {
    #[cfg(feature = "dpdk")]
    {
        dpdk_sys::max_ports()
    }
    #[cfg(not(feature = "dpdk"))]
    {
        None
    }
}

/// The memif socket of the pair `a`, `b` of the job whose directory is
/// `dir` ([`socket_in`]).
pub fn memif_socket(dir: &Path, a: u32, b: u32) -> PathBuf {
    socket_in(dir, &format!("{}-{}", a.min(b), a.max(b)))
}

/// The memif arguments of `rank`'s interface to `peer`, with `frame`-byte
/// buffers and 512 of them per ring (the protocol's window is 64).
pub fn memif_args(dir: &Path, rank: u32, peer: u32, frame: usize) -> String {
    let role = if rank < peer { "server" } else { "client" };
    let socket = memif_socket(dir, rank, peer);
    format!("role={role},socket={},socket-abstract=no,id=0,bsize={frame},rsize=9", socket.display())
}

/// The protocol settings for DPDK: datagrams sized to one `frame`, no
/// kernel offloads, the rest from the environment.
pub fn config_from_env(frame: usize, job_dir: Option<&std::path::Path>) -> Result<UdpConfig, TransportError> {
    let mut cfg = UdpConfig::from_env(job_dir)?;
    cfg.mtu = frame - ETH - HEADER - TAG;
    cfg.max_message = UdpConfig::max_message_for(cfg.mtu);
    cfg.mtu_fixed = true;
    cfg.gso = false;
    cfg.gro = false;
    cfg.connect = false;
    Ok(cfg)
}

/// First bytes of a hello.
const HELLO_MAGIC: &[u8; 4] = b"DNHI";
/// Bytes of a hello before its tag.
const HELLO: usize = 17;

/// What a hello says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Job id.
    pub job: u32,
    /// The sender's rank.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// Whether the sender knows every rank's MAC.
    pub knows_all: bool,
}

/// A hello (EtherType [`HELLO_ETHERTYPE`]) from `src`: magic, job, rank,
/// size, flags (1: the sender knows every rank's MAC); in authenticated
/// mode (`DN_UDP_AUTH=1`) then a keyed tag over those bytes and `src`, so
/// that only a holder of the job's key can claim a rank, and only for the
/// MAC it sends from (a replayed hello from another MAC fails).
pub fn hello_body(h: Hello, src: [u8; 6], key: Option<&AuthKey>) -> Vec<u8> {
    let mut b = Vec::with_capacity(HELLO + TAG);
    b.extend_from_slice(HELLO_MAGIC);
    b.extend_from_slice(&h.job.to_le_bytes());
    b.extend_from_slice(&h.rank.to_le_bytes());
    b.extend_from_slice(&h.size.to_le_bytes());
    b.push(h.knows_all as u8);
    if let Some(k) = key {
        let tag = k.tag(&[&b, &src]);
        b.extend_from_slice(&tag);
    }
    b
}

/// The hello in `body` from `src`, if it is one, and (with a key) carries
/// a valid tag for `src`. Err: a hello whose tag fails.
pub fn parse_hello(body: &[u8], src: [u8; 6], key: Option<&AuthKey>) -> Option<Result<Hello, ()>> {
    if body.len() < HELLO || &body[..4] != HELLO_MAGIC {
        return None;
    }
    let word = |i: usize| u32::from_le_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
    let h = Hello { job: word(4), rank: word(8), size: word(12), knows_all: body[16] & 1 != 0 };
    if let Some(k) = key {
        let ok = body.len() >= HELLO + TAG && {
            let want = k.tag(&[&body[..HELLO], &src]);
            want.iter().zip(&body[HELLO..HELLO + TAG]).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        };
        if !ok {
            return Some(Err(()));
        }
    }
    Some(Ok(h))
}

#[cfg(feature = "dpdk")]
pub use with_dpdk::DpdkLink;

#[cfg(not(feature = "dpdk"))]
/// The DPDK link (not in this build).
pub struct DpdkLink(());

#[cfg(not(feature = "dpdk"))]
impl DpdkLink {
    fn set_late(&mut self, _: bool) {}
}

#[cfg(not(feature = "dpdk"))]
impl Link for DpdkLink {
    const NAME: &'static str = "dpdk";
    fn send(&mut self, _: u32, _: &[IoSlice<'_>]) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    fn recv(&mut self, _: &mut [u8]) -> io::Result<Option<Received>> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    fn recv_wait(&mut self, _: &mut [u8], _: Duration) -> io::Result<Option<Received>> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    fn describe(&self, _: u32) -> String {
        String::new()
    }
}

/// Open the rank's transport for `job`, the one `dnrun --backend dpdk`
/// described (with this backend's own settings from the environment).
pub fn from_job(job: Option<&crate::JobEnv>) -> Result<DpdkTransport, TransportError> {
    available().map_err(|e| {
        cfg_err(format!("--backend dpdk: {e}. Install DPDK with scripts/setup.sh and rebuild, or use --backend udp"))
    })?;
    let Some(job) = job else {
        if crate::pmi::launched_by_pmi() {
            return Err(cfg_err(
                "DN_BACKEND=dpdk under a PMI launcher (hydra): the DPDK backend's ranks find each other through \
                 dnrun (memif sockets in its job directory, or MAC hellos with --dpdk-vdev), which a PMI launcher \
                 does not provide. Start the job with this prefix's mpiexec --backend dpdk, or use UDP under hydra \
                 (leave DN_BACKEND unset)"
                    .into(),
            ));
        }
        return Err(crate::job::not_in_a_job("DPDK"));
    };
    let (rank, size, job_id) = (job.rank, job.size, job.job_id);
    let vdev = crate::knobs::text(DN_DPDK_VDEV);
    let polling = Polling::from_env()?;
    if polling == Polling::Node && vdev.is_some() {
        return Err(cfg_err(format!(
            "{DN_DPDK_POLLER}=node is for memif on one host; with {DN_DPDK_VDEV} each rank polls its interface"
        )));
    }
    let frame = match (&vdev, crate::knobs::integer(FRAME_ENV)?) {
        (Some(v), None) => shared_frame(v),
        _ => frame_from_env()?,
    };
    let dir = job.dir()?;
    if vdev.is_none() {
        check_socket_dir(dir)?;
    }
    let mut cfg = config_from_env(frame, Some(dir))?;
    let faults = faults::from_env()?;
    // Injected corruption must be caught by our own CRC over the whole payload.
    cfg.full_crc |= faults.is_some();
    let nodes = u32::from(job.nodes);
    let how = match polling {
        Polling::Rank => Open::Own { vdev: vdev.as_deref(), auth: cfg.auth.clone() },
        Polling::Node => Open::ViaPoller(NodeLayout::new(size, nodes)),
    };
    // A job with room for spawned processes (MPI 4.1 §11.8): ranks beyond
    // this rank's world may start later, through their node's poller.
    let late = (job.world.end - job.world.start) < size;
    if late && !matches!(how, Open::ViaPoller(_)) {
        return Err(cfg_err(format!(
            "a job with room to spawn processes runs over DPDK through a polling process per node              ({DN_DPDK_POLLER}=node, which dnrun sets with --universe-size)"
        )));
    }
    let mut link = open_link(rank, size, job_id, frame, dir, how)?;
    link.set_late(late);
    DatagramTransport::over(link, rank, size, job_id, cfg, faults)
}

/// Where the kernel puts a received Ethernet frame in an af_packet
/// (TPACKET_V2) ring frame: the 32-byte header and the 20-byte link-layer
/// address, aligned, so that the IP header lands 16-aligned: 66 bytes. A
/// longer frame is cut (`tp_snaplen`), and the protocol would drop it as
/// truncated, again and again.
const AF_PACKET_RX_OFFSET: usize = 66;

/// The value of `key=` in a vdev argument.
fn vdev_arg<'a>(vdev: &'a str, key: &str) -> Option<&'a str> {
    vdev.split(',').skip(1).find_map(|kv| kv.trim().strip_prefix(key)?.strip_prefix('='))
}

/// af_packet's ring frame size (`framesz=`, DPDK's default 2,048) when
/// `vdev` is an af_packet interface: a frame must fit one less what the
/// kernel puts before a received frame ([`AF_PACKET_RX_OFFSET`]), and
/// every packet buffer must hold one.
pub fn af_packet_framesz(vdev: &str) -> Option<usize> {
    vdev.starts_with("net_af_packet")
        .then(|| vdev_arg(vdev, "framesz").and_then(|v| v.trim().parse().ok()).unwrap_or(2048))
}

/// The frame size on a shared segment: the interface's MTU plus the
/// Ethernet header when the vdev names a kernel interface (`iface=`, as
/// af_packet and tap do), else a standard Ethernet frame; on af_packet no
/// more than its ring frames carry (a jumbo MTU needs `framesz=`).
pub fn shared_frame(vdev: &str) -> usize {
    let mtu = vdev_arg(vdev, "iface")
        .and_then(|i| std::fs::read_to_string(format!("/sys/class/net/{i}/mtu")).ok())
        .and_then(|m| m.trim().parse::<usize>().ok())
        .unwrap_or(1500);
    let cap = af_packet_framesz(vdev).map_or(usize::MAX, |f| f.saturating_sub(AF_PACKET_RX_OFFSET));
    (mtu + ETH).min(cap).clamp(*FRAME_RANGE.start(), *FRAME_RANGE.end())
}

/// How a rank reaches the network: its own port (memif to each peer, or
/// the shared segment `vdev`), or its node's polling process.
#[cfg_attr(not(feature = "dpdk"), allow(dead_code))] // read only by the DPDK build
enum Open<'a> {
    Own { vdev: Option<&'a str>, auth: Option<AuthKey> },
    ViaPoller(NodeLayout),
}

fn open_link(
    rank: u32,
    size: u32,
    job: u32,
    frame: usize,
    dir: &std::path::Path,
    how: Open<'_>,
) -> Result<DpdkLink, TransportError> {
    #[cfg(feature = "dpdk")]
    match how {
        Open::Own { vdev: Some(v), auth } => with_dpdk::DpdkLink::open_shared(rank, size, job, frame, v, auth),
        Open::Own { vdev: None, .. } => with_dpdk::DpdkLink::open(rank, size, job, frame, dir),
        Open::ViaPoller(layout) => with_dpdk::DpdkLink::open_via_poller(rank, layout, job, frame, dir),
    }
    #[cfg(not(feature = "dpdk"))]
    {
        let _ = (rank, size, job, frame, dir, how);
        Err(cfg_err("this build of adi has no `dpdk` feature".into()))
    }
}

#[cfg(feature = "dpdk")]
mod with_dpdk {
    use super::*;
    use crate::backend::udp::io::Offloads;
    use dpdk_sys::{eal_args, Eal, Mbuf, Mempool, Port, PortConfig};

    use std::collections::VecDeque;
    use std::time::Instant;

    /// How long start-up waits for the other ranks and the links.
    pub(super) const START_TIMEOUT: Duration = Duration::from_secs(60);
    /// How often a rank repeats its hello while it misses peers.
    const HELLO_EVERY: Duration = Duration::from_millis(10);
    const BROADCAST: [u8; 6] = [0xff; 6];

    pub(super) fn dpdk_err(what: &str, e: dpdk_sys::Error) -> TransportError {
        TransportError::Backend { backend: "dpdk", msg: format!("{what}: {e}") }
    }

    /// Per-peer memif ports of one rank, or one port on a shared segment.
    pub struct DpdkLink {
        _eal: Eal,
        /// Frame size (bytes, Ethernet header included).
        frame: usize,
        pool: &'static Mempool,
        job: u32,
        rank: u32,
        size: u32,
        /// The ports: one per peer (memif) or one for all (shared).
        ports: Vec<Port>,
        /// Which port reaches each rank (`None` for this rank).
        port_of: Vec<Option<usize>>,
        /// memif: the rank at the other end of each port. On a shared
        /// segment `None`: the source MAC says who sent a frame.
        rank_of_port: Vec<Option<u32>>,
        /// Our MAC on each port.
        my_mac: Vec<[u8; 6]>,
        /// Shared segment: each rank's MAC, from its hello.
        peer_mac: Vec<Option<[u8; 6]>>,
        /// What the segment is, for messages.
        what: String,
        /// Through a polling process: the node this rank runs on.
        via_poller: Option<u32>,
        /// Shared segment in authenticated mode: the job's key, which
        /// hellos must be tagged with.
        hello_key: Option<AuthKey>,
        /// Hellos dropped because their tag failed.
        forged_hellos: u64,
        /// Whether runs of datagrams go out in one burst ([`Link::send_segments`]).
        batch: bool,
        /// memif: the job directory, where leaving is announced
        /// ([`Link::leave`]); `None` on a shared segment, whose rings are
        /// the kernel's.
        dir: Option<std::path::PathBuf>,
        /// The job has room for spawned processes: peers may start later
        /// ([`Link::reachable`]), and none is watched before traffic.
        late: bool,
        /// Peers seen started (their [`started_file`]).
        started: Vec<bool>,
        /// Frames received and not yet handed over, with their port.
        pending: VecDeque<(Mbuf, usize)>,
        /// Where the next receive poll starts (fairness among peers).
        next: usize,
        out: Vec<Mbuf>,
        rx: Vec<Mbuf>,
    }

    impl DpdkLink {
        /// Start the EAL and connect to every other rank of the job over
        /// memif, one interface per pair.
        pub fn open(
            rank: u32,
            size: u32,
            job: u32,
            frame: usize,
            dir: &std::path::Path,
        ) -> Result<DpdkLink, TransportError> {
            let servers: Vec<String> =
                ((rank + 1)..size).map(|p| format!("net_memif{p},{}", memif_args(dir, rank, p, frame))).collect();
            let (eal, pool) = start_eal(rank, size, job, frame.max(2048), &servers)?;
            let cfg = PortConfig { rx_queues: 1, tx_queues: 1, descriptors: 512 };
            let mut ports: Vec<Option<Port>> = (0..size).map(|_| None).collect();
            for p in (rank + 1)..size {
                let port = Port::start(&eal, &format!("net_memif{p}"), pool, cfg)
                    .map_err(|e| dpdk_err(&format!("cannot start the interface to rank {p}"), e))?;
                ports[p as usize] = Some(port);
            }
            // Servers listen: say so, then connect to the lower ranks' servers.
            let mine = dir.join(format!("dpdk.{rank}"));
            crate::job::write_private(&mine, b"ready")
                .map_err(|e| cfg_err(format!("cannot write {}: {e}", mine.display())))?;
            let deadline = Instant::now() + START_TIMEOUT;
            for p in 0..rank {
                wait_for_file(&dir.join(format!("dpdk.{p}")), deadline, || {
                    format!("rank {p} did not start its DPDK interfaces")
                })?;
                let name = format!("net_memif{p}");
                eal.add_vdev(&name, &memif_args(dir, rank, p, frame))
                    .map_err(|e| dpdk_err(&format!("cannot create the interface to rank {p}"), e))?;
                let port = Port::start(&eal, &name, pool, cfg)
                    .map_err(|e| dpdk_err(&format!("cannot start the interface to rank {p}"), e))?;
                ports[p as usize] = Some(port);
            }
            for (p, port) in ports.iter().enumerate() {
                let Some(port) = port else { continue };
                wait_link(port, deadline, || {
                    format!("the memif link to rank {p} (socket {})", memif_socket(dir, rank, p as u32).display())
                })?;
            }
            let mut link = DpdkLink::empty(eal, pool, frame, job, rank, size, "memif interfaces".into());
            link.dir = Some(dir.to_path_buf());
            for (p, port) in ports.into_iter().enumerate() {
                let Some(port) = port else { continue };
                link.port_of[p] = Some(link.ports.len());
                link.rank_of_port.push(Some(p as u32));
                link.my_mac.push(port.mac());
                link.ports.push(port);
            }
            Ok(link)
        }

        /// Start the EAL with the one interface `vdev` names (e.g.
        /// `net_af_packet0,iface=eth1`), shared with every other rank:
        /// ranks find each other's MAC by hello frames (seed 000: MAC
        /// addresses exchanged at initialisation).
        pub fn open_shared(
            rank: u32,
            size: u32,
            job: u32,
            frame: usize,
            vdev: &str,
            auth: Option<AuthKey>,
        ) -> Result<DpdkLink, TransportError> {
            let name = vdev.split(',').next().unwrap_or_default().trim().to_string();
            // af_packet refuses buffers smaller than its ring frames.
            let buffer = frame.max(af_packet_framesz(vdev).unwrap_or(2048));
            let (eal, pool) = start_eal(rank, size, job, buffer, &[vdev.to_string()])?;
            let cfg = PortConfig { rx_queues: 1, tx_queues: 1, descriptors: 512 };
            let port = Port::start(&eal, &name, pool, cfg)
                .map_err(|e| dpdk_err(&format!("cannot start {name} ({DN_DPDK_VDEV}={vdev})"), e))?;
            let deadline = Instant::now() + START_TIMEOUT;
            wait_link(&port, deadline, || format!("the link of {name}"))?;
            let mut link = DpdkLink::empty(eal, pool, frame, job, rank, size, format!("{name} ({vdev})"));
            link.hello_key = auth;
            link.my_mac.push(port.mac());
            link.ports.push(port);
            link.rank_of_port.push(None);
            for p in 0..size {
                if p != rank {
                    link.port_of[p as usize] = Some(0);
                }
            }
            // Hello until every rank's MAC is known; data frames that come
            // meanwhile (from ranks that already know ours) wait in `pending`.
            let mut last = None::<Instant>;
            while link.missing().next().is_some() {
                let now = Instant::now();
                if now > deadline {
                    let missing: Vec<u32> = link.missing().collect();
                    return Err(TransportError::Backend {
                        backend: "dpdk",
                        msg: format!(
                            "no hello from rank(s) {missing:?} on {} within {}s: start every rank of the job on the \
                             same segment with the same --job-id{}",
                            link.what,
                            START_TIMEOUT.as_secs(),
                            match link.forged_hellos {
                                0 => String::new(),
                                n => format!(
                                    " ({n} hellos failed authentication: give every rank the same key with \
                                     DN_UDP_KEY_FILE)"
                                ),
                            }
                        ),
                    });
                }
                if last.is_none_or(|t| now - t >= HELLO_EVERY) {
                    link.send_hello(0, BROADCAST);
                    last = Some(now);
                }
                link.poll_ports();
                std::thread::sleep(Duration::from_micros(200));
            }
            Ok(link)
        }

        /// Start the EAL with one memif interface, to the polling process
        /// of this rank's node ([`super::poller`]), once that process
        /// listens. Every rank's MAC is known from its number
        /// ([`rank_mac`]): no hellos.
        pub fn open_via_poller(
            rank: u32,
            layout: NodeLayout,
            job: u32,
            frame: usize,
            dir: &std::path::Path,
        ) -> Result<DpdkLink, TransportError> {
            let size = layout.size;
            let node = layout.node_of(rank);
            let deadline = Instant::now() + START_TIMEOUT;
            wait_for_file(&poller_ready_file(dir, node), deadline, || {
                format!("the DPDK polling process of node {node} did not start (start the job with dnrun --dpdk-poller node)")
            })?;
            let vdev = format!("net_memif0,{}", poller_rank_args(dir, node, rank, frame, false));
            let (eal, pool) = start_eal(rank, size, job, frame.max(2048), &[vdev])?;
            let cfg = PortConfig { rx_queues: 1, tx_queues: 1, descriptors: 1024 };
            let port = Port::start(&eal, "net_memif0", pool, cfg)
                .map_err(|e| dpdk_err(&format!("cannot start the interface to the poller of node {node}"), e))?;
            wait_link(&port, deadline, || format!("the memif link to the DPDK polling process of node {node}"))?;
            // Send nothing before every rank is connected to its poller.
            for n in 0..layout.nodes() {
                wait_for_file(&poller_up_file(dir, n), deadline, || {
                    format!("the DPDK polling process of node {n} did not see all its ranks and links")
                })?;
            }
            let mut link =
                DpdkLink::empty(eal, pool, frame, job, rank, size, format!("the DPDK polling process of node {node}"));
            link.via_poller = Some(node);
            link.dir = Some(dir.to_path_buf());
            // Ranks spawned later learn from this that we are here.
            let started = started_file(dir, rank);
            crate::job::write_private(&started, b"up")
                .map_err(|e| cfg_err(format!("cannot write {}: {e}", started.display())))?;
            link.my_mac.push(rank_mac(rank));
            link.ports.push(port);
            link.rank_of_port.push(None);
            for p in (0..size).filter(|&p| p != rank) {
                link.port_of[p as usize] = Some(0);
                link.peer_mac[p as usize] = Some(rank_mac(p));
            }
            Ok(link)
        }

        fn empty(
            eal: Eal,
            pool: &'static Mempool,
            frame: usize,
            job: u32,
            rank: u32,
            size: u32,
            what: String,
        ) -> DpdkLink {
            DpdkLink {
                _eal: eal,
                frame,
                pool,
                job,
                rank,
                size,
                ports: Vec::new(),
                port_of: vec![None; size as usize],
                rank_of_port: Vec::new(),
                my_mac: Vec::new(),
                peer_mac: vec![None; size as usize],
                what,
                via_poller: None,
                hello_key: None,
                forged_hellos: 0,
                batch: true,
                dir: None,
                late: false,
                started: vec![false; size as usize],
                pending: VecDeque::new(),
                next: 0,
                out: Vec::with_capacity(1),
                rx: Vec::with_capacity(32),
            }
        }

        /// Whether the job has room for spawned processes
        /// ([`DpdkLink::late`]).
        pub(super) fn set_late(&mut self, late: bool) {
            self.late = late;
        }

        /// Ranks whose MAC a shared-segment link does not know yet.
        fn missing(&self) -> impl Iterator<Item = u32> + '_ {
            (0..self.size).filter(|&p| p != self.rank && self.peer_mac[p as usize].is_none())
        }

        /// Send our hello to `dst` on port `port`.
        fn send_hello(&mut self, port: usize, dst: [u8; 6]) {
            let h =
                Hello { job: self.job, rank: self.rank, size: self.size, knows_all: self.missing().next().is_none() };
            let body = hello_body(h, self.my_mac[port], self.hello_key.as_ref());
            let _ = self.send_frames(port, dst, HELLO_ETHERTYPE, &[IoSlice::new(&body)], body.len());
        }

        /// A hello arrived on a shared segment: learn the sender's MAC
        /// (the first one only: a later claim is ignored; in authenticated
        /// mode only a hello tagged with the job's key counts), and answer
        /// a sender that still misses ranks.
        fn on_hello(&mut self, port: usize, src: [u8; 6], body: &[u8]) {
            if self.rank_of_port[port].is_some() {
                return;
            }
            let h = match parse_hello(body, src, self.hello_key.as_ref()) {
                None => return,
                Some(Err(())) => {
                    self.forged_hellos += 1;
                    return;
                }
                Some(Ok(h)) => h,
            };
            if h.job != self.job || h.size != self.size || h.rank >= h.size || h.rank == self.rank {
                return;
            }
            let known = self.peer_mac[h.rank as usize].get_or_insert(src);
            if *known == src && !h.knows_all {
                self.send_hello(port, src);
            }
        }

        /// Poll every port once (starting after the last one served);
        /// hellos are handled here, other frames queued.
        fn poll_ports(&mut self) {
            let n = self.ports.len();
            for k in 0..n {
                let p = (self.next + k) % n;
                if self.ports[p].rx_burst(0, &mut self.rx, 32) == 0 {
                    continue;
                }
                let mut rx = std::mem::take(&mut self.rx);
                for m in rx.drain(..) {
                    let data = m.data();
                    if data.len() >= ETH && data[12..14] == HELLO_ETHERTYPE.to_be_bytes() {
                        let src: [u8; 6] = data[6..12].try_into().unwrap_or_default();
                        let body = data[ETH..].to_vec();
                        self.on_hello(p, src, &body);
                    } else {
                        self.pending.push_back((m, p));
                    }
                }
                self.rx = rx;
            }
            self.next = (self.next + 1) % n.max(1);
        }

        /// The port that reaches `dest`, and the MAC to send to: the
        /// peer's from its hello on a shared segment, broadcast on memif
        /// (a pair has one receiver).
        fn route(&self, dest: u32) -> io::Result<(usize, [u8; 6])> {
            let port = self.port_of.get(dest as usize).copied().flatten();
            let port =
                port.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no interface to rank {dest}")))?;
            Ok((port, self.peer_mac[dest as usize].unwrap_or(BROADCAST)))
        }

        /// `parts`, cut every `segment` bytes, as frames out of `port` in
        /// one burst (one system call on af_packet). Returns how many
        /// frames were handed over. No buffer, or a full ring after a few
        /// tries, drops the rest: like a full socket buffer, the protocol
        /// resends.
        fn send_frames(
            &mut self,
            port: usize,
            dst: [u8; 6],
            ethertype: u16,
            parts: &[IoSlice<'_>],
            segment: usize,
        ) -> io::Result<usize> {
            if segment == 0 || ETH + segment > self.frame {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a {segment}-byte datagram does not fit a {}-byte frame", self.frame),
                ));
            }
            let (mut part, mut at) = (0, 0);
            let mut left: usize = parts.iter().map(|p| p.len()).sum();
            while left > 0 {
                let n = segment.min(left);
                let Some(mut m) = self.pool.alloc() else { break };
                let Some(frame) = m.append(ETH + n) else { break };
                frame[..6].copy_from_slice(&dst);
                frame[6..12].copy_from_slice(&self.my_mac[port]);
                frame[12..14].copy_from_slice(&ethertype.to_be_bytes());
                let mut o = ETH;
                while o < ETH + n {
                    let p = &parts[part][at..];
                    let k = p.len().min(ETH + n - o);
                    frame[o..o + k].copy_from_slice(&p[..k]);
                    (o, at) = (o + k, at + k);
                    if at == parts[part].len() {
                        (part, at) = (part + 1, 0);
                    }
                }
                self.out.push(m);
                left -= n;
            }
            let mut sent = 0;
            for _ in 0..8 {
                sent += self.ports[port].tx_burst(0, &mut self.out);
                if self.out.is_empty() {
                    break;
                }
            }
            self.out.clear();
            Ok(sent)
        }
    }

    /// Start the EAL of `rank` with `vdevs` and a pool of packet buffers
    /// of `buffer` data bytes (at least a frame, and at least what the PMD
    /// demands).
    fn start_eal(
        rank: u32,
        size: u32,
        job: u32,
        buffer: usize,
        vdevs: &[String],
    ) -> Result<(Eal, &'static Mempool), TransportError> {
        // Buffers: a window's worth in flight and a burst pending per
        // peer, with room to spare.
        start_eal_as("dn-rank", &format!("dn-{job}-{rank}"), 1023 + 256 * size, buffer, vdevs)
    }

    /// Start the EAL as `program` with files prefixed `prefix` (none are
    /// written: `--no-shconf`), `vdevs`, and a pool of `buffers` packet
    /// buffers of `buffer` data bytes; the EAL's memory follows.
    pub(super) fn start_eal_as(
        program: &str,
        prefix: &str,
        buffers: u32,
        buffer: usize,
        vdevs: &[String],
    ) -> Result<(Eal, &'static Mempool), TransportError> {
        let mem = 48 + (buffers as usize * (buffer + 512)).div_ceil(1 << 20) as u32;
        let args = eal_args(program, prefix, mem, vdevs);
        let eal = Eal::init(&args).map_err(|e| dpdk_err(&format!("cannot start DPDK ({})", args.join(" ")), e))?;
        // Headroom included, the data room is a u16.
        let room = (buffer + 128).min(u16::MAX as usize) as u16;
        let pool = Mempool::create(&eal, "dn_pool", buffers, room)
            .map_err(|e| dpdk_err("cannot create the packet pool", e))?;
        Ok((eal, pool))
    }

    /// Wait until `path` exists (another process of the job wrote it);
    /// past `deadline`, fail with `late()` and the time waited.
    pub(super) fn wait_for_file(
        path: &std::path::Path,
        deadline: Instant,
        late: impl FnOnce() -> String,
    ) -> Result<(), TransportError> {
        while !path.exists() {
            if Instant::now() > deadline {
                return Err(cfg_err(format!("{} within {}s", late(), START_TIMEOUT.as_secs())));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    }

    /// Wait until `port`'s link is up.
    pub(super) fn wait_link(port: &Port, deadline: Instant, what: impl Fn() -> String) -> Result<(), TransportError> {
        while !port.link_up() {
            if Instant::now() > deadline {
                return Err(TransportError::Backend {
                    backend: "dpdk",
                    msg: format!("{} did not come up within {}s", what(), START_TIMEOUT.as_secs()),
                });
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    }

    /// Wait until no process in `holders` touches the memif rings it
    /// shares with us: each holder is a port and the file the process at
    /// its other end writes once it no longer touches them. A port whose
    /// link is down needs no wait: its peer has gone, and the EAL has
    /// already unmapped what it shared with it. No deadline: a peer still
    /// working keeps us (MPI_Finalize is collective), and one that died
    /// took its link down.
    pub(super) fn wait_released(ports: &[Port], mut holders: Vec<(usize, std::path::PathBuf)>) {
        while !holders.is_empty() {
            holders.retain(|(port, file)| ports[*port].link_up() && !file.exists());
            if !holders.is_empty() {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    }

    impl Drop for DpdkLink {
        fn drop(&mut self) {
            // Stopping a memif port whose peer has already gone can
            // deadlock with the EAL's interrupt thread (seen: a rank stuck
            // in a futex in finalize, 1 run in ~40), as rte_eal_cleanup can
            // crash in it. The process is leaving: the ports are left to
            // the exit, which closes their sockets and frees their memory.
            for p in self.ports.drain(..) {
                std::mem::forget(p);
            }
        }
    }

    impl Link for DpdkLink {
        const NAME: &'static str = "dpdk";

        fn send(&mut self, dest: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
            let (port, dst) = self.route(dest)?;
            let len = parts.iter().map(|p| p.len()).sum();
            self.send_frames(port, dst, ETHERTYPE, parts, len).map(drop)
        }

        /// A run of datagrams (`parts` cut every `segment` bytes) in one
        /// burst: one frame each, one `tx_burst` for all.
        fn send_segments(&mut self, dest: u32, parts: &[IoSlice<'_>], segment: u16) -> io::Result<usize> {
            let (port, dst) = self.route(dest)?;
            self.send_frames(port, dst, ETHERTYPE, parts, segment as usize)
        }

        fn offloads(&self) -> Offloads {
            Offloads { gso: self.batch, gro: false }
        }

        fn reachable(&mut self, rank: u32) -> bool {
            if !self.late {
                return true;
            }
            let Some(seen) = self.started.get(rank as usize).copied() else { return false };
            if !seen {
                let up = self.dir.as_deref().is_some_and(|d| started_file(d, rank).exists());
                self.started[rank as usize] = up;
            }
            self.started[rank as usize]
        }

        fn watched_from_start(&self, _rank: u32) -> bool {
            !self.late
        }

        fn disable_gso(&mut self) {
            self.batch = false;
        }

        fn yield_when_idle(&self) -> bool {
            // The poller must run for anything to arrive: on a host with
            // fewer cores than busy processes, spinning starves it (a
            // round trip took 115 us instead of 6-9; docs/BENCHMARKS.md).
            self.via_poller.is_some()
        }

        fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
            if self.pending.is_empty() {
                self.poll_ports();
            }
            while let Some((m, port)) = self.pending.pop_front() {
                let data = m.data();
                if m.segments() != 1 || data.len() < ETH || data[12..14] != ETHERTYPE.to_be_bytes() {
                    // Not one of our frames: hand over nothing from it.
                    continue;
                }
                let from = match self.rank_of_port[port] {
                    Some(r) => Some(r),
                    None if self.via_poller.is_some() => rank_of_mac(&data[6..12], self.size),
                    None => {
                        let src = &data[6..12];
                        if src == self.my_mac[port] {
                            continue; // our own frame, looped back to the tap
                        }
                        self.peer_mac.iter().position(|m| m.is_some_and(|m| m == src)).map(|r| r as u32)
                    }
                };
                // As recv_from does: what fits. The buffer is one byte
                // longer than any datagram we send, so an oversized frame
                // shows as truncated and the protocol drops it.
                let body = &data[ETH..];
                let n = body.len().min(buf.len());
                buf[..n].copy_from_slice(&body[..n]);
                return Ok(Some(Received { len: n, from, seg: n.max(1), batched: false }));
            }
            Ok(None)
        }

        fn recv_wait(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<Received>> {
            // Nothing to block on: poll, and sleep between polls so that an
            // idle rank leaves the core to others.
            let until = Instant::now() + wait;
            loop {
                if let Some(r) = self.recv(buf)? {
                    return Ok(Some(r));
                }
                if Instant::now() >= until {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_micros(20));
            }
        }

        fn recv_buffer(&self, datagram: usize) -> usize {
            datagram.max(self.frame) + 1
        }

        /// memif rings are memory shared with the process at the other
        /// end, and DPDK's memif driver unmaps it from its interrupt
        /// thread when that process exits, while the polling thread may be
        /// reading it: a peer that polled on while we left crashed with
        /// SIGSEGV (seen in CI, 1 run in hundreds). So leaving is a
        /// handshake in the job directory: we stop touching our rings, say
        /// so ([`left_file`]), and exit only once every process we share
        /// rings with has said the same (the other ranks over per-pair
        /// memif; our node's poller, [`poller_released_file`]).
        fn leave(&mut self) -> io::Result<()> {
            let Some(dir) = self.dir.clone() else { return Ok(()) };
            let linger = match crate::knobs::text(POLL_BEFORE_LEAVING_ENV) {
                None => 0,
                Some(v) => {
                    let (r, ms) = v
                        .split_once(':')
                        .and_then(|(r, ms)| Some((r.parse::<u32>().ok()?, ms.parse::<u64>().ok()?)))
                        .ok_or_else(|| {
                            io::Error::new(
                                io::ErrorKind::InvalidInput,
                                format!("{POLL_BEFORE_LEAVING_ENV}={v:?}: give RANK:MILLISECONDS"),
                            )
                        })?;
                    if r == self.rank {
                        ms
                    } else {
                        0
                    }
                }
            };
            let until = Instant::now() + Duration::from_millis(linger);
            while Instant::now() < until {
                self.poll_ports();
                self.pending.clear();
                // The hazard itself: a peer gone while we still poll.
                if let Some(p) = (0..self.ports.len()).find(|&p| !self.ports[p].link_up()) {
                    let who = self.rank_of_port[p].map_or_else(|| self.what.clone(), |r| format!("rank {r}"));
                    return Err(io::Error::other(format!(
                        "{who} left while this rank still polled the memif rings it shares with it"
                    )));
                }
            }
            crate::job::write_private(&left_file(&dir, self.rank), b"left")?;
            let holders = match self.via_poller {
                Some(node) => vec![(0, poller_released_file(&dir, node, self.rank))],
                None => self
                    .rank_of_port
                    .iter()
                    .enumerate()
                    .filter_map(|(port, r)| Some((port, left_file(&dir, (*r)?))))
                    .collect(),
            };
            wait_released(&self.ports, holders);
            Ok(())
        }

        fn describe(&self, rank: u32) -> String {
            if self.via_poller.is_some() {
                return format!("rank {rank} through {} (memif; dnrun --dpdk-poller node)", self.what);
            }
            match self.rank_of_port.first() {
                Some(None) => format!("{} (rank {rank}'s MAC from its hello)", self.what),
                _ => format!("memif interface net_memif{rank}"),
            }
        }
    }
}

/// The launcher's checks of a DPDK job (see [`crate::job::LaunchNeeds`]):
/// DPDK is built in; across hosts, one rank per launcher on a shared
/// interface that looks like an EAL vdev; the node pollers only for memif
/// on this host; no more ports than the EAL has.
pub fn check_launch(plan: &crate::job::LaunchPlan<'_>) -> Result<(), String> {
    available().map_err(|e| {
        format!("--backend dpdk: {e}. Run scripts/setup.sh (installs libdpdk-dev) and rebuild, or use --backend udp")
    })?;
    match plan.dpdk_vdev {
        None if plan.across_hosts => {
            return Err("--ranks with --backend dpdk needs --dpdk-vdev (the interface shared with the other hosts); \
                        without it every rank runs here over memif"
                .into())
        }
        Some(v) if plan.local.len() != 1 || plan.np < 2 => {
            return Err(format!(
                "--dpdk-vdev {v}: start exactly one rank of a job of 2 or more here (e.g. -n 2 --ranks 0), \
                 and the others on the other ends of the segment with the same --job-id"
            ))
        }
        Some(v) if !v.starts_with("net_") || v.split(',').next().is_some_and(|n| n.len() <= 4) => {
            return Err(format!(
                "--dpdk-vdev {v:?} is not an EAL vdev argument (NAME[,KEY=VALUE...], e.g. net_af_packet0,iface=eth1)"
            ))
        }
        _ => {}
    }
    if plan.node_pollers && plan.dpdk_vdev.is_some() {
        return Err("--dpdk-poller node is for memif between the ranks of this host; with --dpdk-vdev each rank \
                    polls its own interface"
            .into());
    }
    if plan.dpdk_vdev.is_none() {
        check_port_count(plan.np, plan.nodes, plan.node_pollers)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In authenticated mode a hello counts only with the job's key and
    /// from the MAC it was tagged for: a forged or replayed hello cannot
    /// take a rank's frames.
    #[test]
    fn an_authenticated_hello_is_bound_to_the_key_and_the_sender_mac() {
        let (key, other) = (AuthKey([7; 32]), AuthKey([8; 32]));
        let (mac, thief) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 66]);
        let h = Hello { job: 9, rank: 1, size: 3, knows_all: false };
        let body = hello_body(h, mac, Some(&key));
        assert_eq!(parse_hello(&body, mac, Some(&key)), Some(Ok(h)));
        assert_eq!(parse_hello(&body, thief, Some(&key)), Some(Err(())), "replayed from another MAC");
        assert_eq!(parse_hello(&body, mac, Some(&other)), Some(Err(())), "another job's key");
        let plain = hello_body(h, mac, None);
        assert_eq!(parse_hello(&plain, mac, Some(&key)), Some(Err(())), "no tag");
        let mut flipped = body.clone();
        flipped[8] ^= 1; // claims rank 0
        assert_eq!(parse_hello(&flipped, mac, Some(&key)), Some(Err(())));
        // Without a key, as before: any well-formed hello; not a hello at all: None.
        assert_eq!(parse_hello(&plain, thief, None), Some(Ok(h)));
        assert_eq!(parse_hello(b"DNHX and more bytes", mac, None), None);
        assert_eq!(parse_hello(&body[..10], mac, Some(&key)), None);
    }

    #[test]
    fn a_shared_frame_follows_the_mtu_but_fits_af_packet_ring_frames() {
        // lo's MTU is 65,536: a tap frame is capped by our range only.
        assert_eq!(shared_frame("net_tap0,iface=lo"), *FRAME_RANGE.end());
        // af_packet's default ring frames carry 1,982 bytes of a received frame.
        assert_eq!(shared_frame("net_af_packet0,iface=lo"), 1982);
        assert_eq!(shared_frame("net_af_packet0,iface=lo,framesz=16384,blocksz=16384"), 16318);
        // An interface that does not exist: a standard Ethernet frame.
        assert_eq!(shared_frame("net_af_packet0,iface=dn-no-such-if"), 1514);
        assert_eq!(af_packet_framesz("net_tap0,iface=lo"), None);
        assert_eq!(af_packet_framesz("net_af_packet1,framesz=4096,iface=eth0"), Some(4096));
    }
}
