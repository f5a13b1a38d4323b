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
        Ok(crate::knobs::choice(DN_DPDK_POLLER)?.unwrap_or(Polling::Rank))
    }
}

/// The words of `DN_DPDK_POLLER` (and `dnrun --dpdk-poller`).
impl crate::knobs::Choice for Polling {
    const CHOICES: &'static [(&'static str, Self)] = &[("rank", Polling::Rank), ("node", Polling::Node)];
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

use crate::job::LaunchRefusal;

fn cfg_err(m: String) -> TransportError {
    TransportError::Config(m)
}

/// Why this build cannot run the DPDK backend.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// adi was built without its `dpdk` feature.
    #[error("this build of adi has no `dpdk` feature")]
    NoFeature,
    /// The `dpdk` feature is on but the system's DPDK was not found.
    #[cfg(feature = "dpdk")]
    #[error(transparent)]
    System(#[from] dpdk_sys::Error),
}

/// Whether this build can run the DPDK backend, and if not, why.
pub fn available() -> Result<(), Unavailable> {
    #[cfg(feature = "dpdk")]
    {
        Ok(dpdk_sys::available()?)
    }
    #[cfg(not(feature = "dpdk"))]
    {
        Err(Unavailable::NoFeature)
    }
}

/// Refuse a memif job that needs more Ethernet ports in one process than
/// this DPDK build allows (`RTE_MAX_ETHPORTS`; 32 in Debian's): with
/// per-rank polling each rank has a port per peer; with `--dpdk-poller
/// node` a rank has one and its node's poller one per local rank and one
/// per other node. The refusal names the limit and what fits.
pub fn check_port_count(np: u32, nodes: u32, node_pollers: bool) -> Result<(), LaunchRefusal> {
    let Some(max) = dpdk_max_ports() else { return Ok(()) };
    let need = if node_pollers {
        let layout = NodeLayout::new(np, nodes.max(1));
        (layout.slots + layout.nodes() - 1) as usize
    } else {
        np.saturating_sub(1) as usize
    };
    if need > max {
        return Err(LaunchRefusal::TooManyPorts { np, need, max, node_pollers });
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
mod with_dpdk;

/// The launcher's checks of a DPDK job (see [`crate::job::LaunchNeeds`]):
/// DPDK is built in; across hosts, one rank per launcher on a shared
/// interface that looks like an EAL vdev; the node pollers only for memif
/// on this host; no more ports than the EAL has.
pub fn check_launch(plan: &crate::job::LaunchPlan<'_>) -> Result<(), LaunchRefusal> {
    available().map_err(|e| LaunchRefusal::DpdkMissing { why: e.to_string() })?;
    match plan.dpdk_vdev {
        None if plan.across_hosts => return Err(LaunchRefusal::NeedsVdev),
        Some(v) if plan.local.len() != 1 || plan.np < 2 => {
            return Err(LaunchRefusal::VdevOneRank { vdev: v.to_string() })
        }
        Some(v) if !v.starts_with("net_") || v.split(',').next().is_some_and(|n| n.len() <= 4) => {
            return Err(LaunchRefusal::NotAVdev { vdev: v.to_string() })
        }
        _ => {}
    }
    if plan.node_pollers && plan.dpdk_vdev.is_some() {
        return Err(LaunchRefusal::PollersWithVdev);
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
