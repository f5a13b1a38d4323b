//! The UDP backend: the reliable protocol of seed 001 under the transport trait.
//!
//! * One UDP socket per rank carries everything (data, ACKs, NACKs) for all
//!   peers — the point of the paper: a TCP mesh needs a connection per pair
//!   (§1), this needs one port per process.
//! * Messages are split into datagrams of at most `mtu` payload bytes and
//!   reassembled per source (§2.2); a message that fits in one datagram is
//!   handed to the engine straight from the receive buffer, without a
//!   staging copy.
//! * Reliability (§2.3): per-pair sequence numbers, cumulative ACKs, a
//!   retransmission timer and Go-Back-N, a NACK as soon as a gap is seen,
//!   duplicates discarded; a peer that acknowledges nothing for
//!   `peer_timeout` ends the job with an error naming it.
//! * Flow control (§2.4): at most `window` unacknowledged datagrams per peer
//!   (the paper used 10 packets of 1,024 bytes; our defaults come from
//!   measurements on loopback, see docs/BENCHMARKS.md); ACKs ride on reverse
//!   traffic, and a standalone ACK goes only after half a window or a short
//!   delay without reverse traffic.
//! * Anything that is not a valid datagram of this job from a known peer is
//!   dropped and counted, never delivered.
//!
//! Waiting busy-polls the socket for `spin` (as MPI libraries poll), then
//! sleeps in the kernel until a datagram or the next timer.
//!
//! The protocol does no I/O and reads no clock of its own: datagrams and
//! time both come through its [`Link`]. Its tests (`protocol_tests`) run
//! it over a virtual network whose clock moves only when every rank waits,
//! so that each timer is asserted exactly and any schedule of loss,
//! duplication and reordering can be replayed.

pub mod addr;
pub mod faults;
pub mod io;
pub mod link;
#[cfg(test)]
mod protocol_tests;
#[cfg(test)]
pub(crate) mod virtual_net;
pub mod wire;

use std::collections::VecDeque;
use std::io::{ErrorKind, IoSlice};
use std::net::{SocketAddr, UdpSocket};

use self::link::{Link, Received, UdpLink};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use self::faults::{FaultSpec, Faults, Verdict};
use self::wire::{flag, seal, seal_parts, seq_lt, AuthKey, Header, Reject, HEADER, TAG};
use crate::error::TransportError;
use crate::transport::{Caps, Lent, Transport};

/// Turns on authenticated mode (`1`).
pub const AUTH_ENV: &str = "DN_UDP_AUTH";
/// Once another thread may end a wait ([`Transport::waker`]), the longest
/// a wait sleeps in the kernel before it looks whether one did: the
/// longest a thread entering the library waits for one that idles in it.
pub const WOKEN_WITHIN: Duration = Duration::from_millis(1);
/// Where the job's key is, if not `$DN_JOB_DIR/udp.key`.
pub const KEY_FILE_ENV: &str = "DN_UDP_KEY_FILE";
/// The key file `dnrun` writes into the job directory.
pub const KEY_FILE: &str = "udp.key";

/// Read the job's key (`DN_UDP_KEY_FILE`, or the one `dnrun` wrote into
/// the job directory `job_dir`): exactly 32 bytes, readable by its owner
/// only.
pub fn load_key(job_dir: Option<&std::path::Path>) -> Result<AuthKey, TransportError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = match (crate::knobs::path(KEY_FILE_ENV), job_dir) {
        (Some(p), _) => p,
        (None, Some(d)) => d.join(KEY_FILE),
        (None, None) => {
            return Err(TransportError::Config(format!(
                "{AUTH_ENV}=1 needs the job's key: start the job with dnrun, or set {KEY_FILE_ENV} to a file of 32 random bytes shared by all ranks"
            )))
        }
    };
    let shown = path.display();
    // Opened without blocking and checked through the open descriptor: a
    // FIFO (or a device) given as the key file must be refused at once,
    // not block MPI_Init until the job's timeout, and what is read must
    // be the file that was checked.
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&path).map_err(|e| {
        TransportError::Config(format!(
            "{AUTH_ENV}=1: cannot read the key file {shown}: {e} (dnrun writes it; or set {KEY_FILE_ENV})"
        ))
    })?;
    let meta = file
        .metadata()
        .map_err(|e| TransportError::Config(format!("{AUTH_ENV}=1: cannot read the key file {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(TransportError::Config(format!(
            "{AUTH_ENV}=1: the key file {shown} is not a regular file ({:?}): give a file of 32 random bytes",
            meta.file_type()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(TransportError::Config(format!(
            "{AUTH_ENV}=1: the key file {shown} is readable by others; chmod 600 it"
        )));
    }
    let mut bytes = Vec::with_capacity(33);
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut file, 33), &mut bytes)
        .map_err(|e| TransportError::Config(format!("{AUTH_ENV}=1: cannot read the key file {shown}: {e}")))?;
    let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        TransportError::Config(format!(
            "{AUTH_ENV}=1: the key file {shown} holds {} bytes, not 32 (e.g. head -c 32 /dev/urandom > FILE)",
            if bytes.len() > 32 { "more than 32".to_string() } else { bytes.len().to_string() }
        ))
    })?;
    Ok(AuthKey(key))
}

/// Tunables (environment variables in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct UdpConfig {
    /// Largest datagram payload in bytes [`DN_UDP_MTU`].
    pub mtu: usize,
    /// Unacknowledged datagrams allowed per peer [`DN_UDP_WINDOW`].
    pub window: usize,
    /// Datagrams queued behind a full window before new messages wait in the engine.
    pub backlog: usize,
    /// Largest message the engine may hand over (larger rendezvous data is split by the engine).
    pub max_message: usize,
    /// Default eager threshold [`DN_EAGER_THRESHOLD`].
    pub eager_threshold: usize,
    /// First retransmission timeout.
    pub rto_min: Duration,
    /// Longest retransmission timeout (it doubles up to this).
    pub rto_max: Duration,
    /// A peer that acknowledges nothing for this long is declared lost [`DN_UDP_TIMEOUT_MS`].
    pub peer_timeout: Duration,
    /// Longest delay before a standalone ACK.
    pub ack_delay: Duration,
    /// Busy-poll time before sleeping [`DN_UDP_SPIN_US`].
    pub spin: Duration,
    /// In finalize, a peer whose goodbye we have but who has not confirmed
    /// ours is taken to have left after this long without a word from it
    /// (its last confirmation was lost; it owes and is owed nothing).
    pub linger: Duration,
    /// In finalize, a peer that has sent no goodbye is taken to have left
    /// after this long without a word from it (bounded by `peer_timeout`).
    /// A peer still waiting for an acknowledgement from us retransmits at
    /// least every `rto_max`, so leaving early needs ~15 losses in a row.
    pub goodbye_wait: Duration,
    /// Socket send and receive buffer size.
    pub sockbuf: usize,
    /// CRC over whole payloads, not just their first bytes [`DN_UDP_CHECKSUM=full`].
    pub full_crc: bool,
    /// Authenticated mode: the per-job key [`DN_UDP_AUTH=1`, key from
    /// `DN_UDP_KEY_FILE` or `$DN_JOB_DIR/udp.key`, written by `dnrun`].
    pub auth: Option<AuthKey>,
    /// Use UDP GSO where the kernel has it [`DN_UDP_OFFLOAD=0` turns it off].
    pub gso: bool,
    /// Use UDP GRO where the kernel has it [`DN_UDP_OFFLOAD=0|gso` turns it off].
    pub gro: bool,
    /// `mtu` was chosen by the user; otherwise it follows the path MTU to
    /// the peers (see [`UdpTransport::from_env`]).
    pub mtu_fixed: bool,
    /// `window` was chosen by the user; otherwise it follows the datagram
    /// size ([`UdpConfig::window_for`]) once the path has set it.
    pub window_fixed: bool,
    /// A rank with exactly one peer connects its socket to it
    /// [`DN_UDP_CONNECT=0` turns it off]. The kernel then keeps the route
    /// for sends and demultiplexes arrivals early, which saves about 0.35 us
    /// on each side of every datagram over veth (measured with a plain C
    /// ping-pong, docs/BENCHMARKS.md), and it drops datagrams from anyone
    /// else before they reach us (except those queued before the connect,
    /// which our own checks still drop). With more peers the one socket stays
    /// unconnected: per-peer sockets would cost a system call per peer on
    /// every poll.
    pub connect: bool,
}

/// Bytes a sender keeps in flight to one peer when the window follows
/// the datagram size ([`UdpConfig::window_for`]).
pub const IN_FLIGHT: usize = 256 * 1024;

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            mtu: 64_000,
            window: 64,
            backlog: 256,
            max_message: 64_000,
            // Measured: eager beats rendezvous up to the largest one-datagram
            // message (60 KB: 15 vs 27 us, 4.2 vs 3.0 GB/s); see docs/BENCHMARKS.md.
            eager_threshold: 64_000,
            rto_min: Duration::from_millis(5),
            rto_max: Duration::from_millis(200),
            peer_timeout: Duration::from_secs(10),
            ack_delay: Duration::from_micros(200),
            spin: Duration::from_micros(100),
            // Five repeats of a peer's goodbye at rto_max: only paid when a
            // final confirmation is lost.
            linger: Duration::from_secs(1),
            goodbye_wait: Duration::from_secs(3),
            sockbuf: 4 << 20,
            full_crc: false,
            auth: None,
            gso: true,
            gro: true,
            mtu_fixed: false,
            window_fixed: false,
            connect: true,
        }
    }
}

impl UdpConfig {
    /// Defaults with environment overrides.
    pub fn from_env(job_dir: Option<&std::path::Path>) -> Result<UdpConfig, TransportError> {
        let mut c = UdpConfig::default();
        use crate::knobs::{integer as num, word};
        if let Some(v) = num("DN_UDP_MTU")? {
            c.mtu = v as usize;
            c.max_message = UdpConfig::max_message_for(c.mtu);
            c.mtu_fixed = true;
        }
        match word("DN_UDP_OFFLOAD")? {
            Some("0") => (c.gso, c.gro) = (false, false),
            Some("gso") => c.gro = false,
            _ => {}
        }
        if let Some(v) = num("DN_UDP_WINDOW")? {
            c.window = v as usize;
            c.window_fixed = true;
        }
        if let Some(v) = num("DN_UDP_TIMEOUT_MS")? {
            c.peer_timeout = Duration::from_millis(v);
        }
        if let Some(v) = num("DN_UDP_SPIN_US")? {
            c.spin = Duration::from_micros(v);
        }
        if word("DN_UDP_CONNECT")? == Some("0") {
            c.connect = false;
        }
        if word("DN_UDP_CHECKSUM")? == Some("full") {
            c.full_crc = true;
        }
        if word(AUTH_ENV)? == Some("1") {
            c.auth = Some(load_key(job_dir)?);
        }
        c.validate()?;
        Ok(c)
    }

    /// Messages up to one datagram when datagrams are large (no reassembly
    /// copy for bulk data); with small datagrams (e.g. the paper's 1,024
    /// bytes), 64 KiB messages split into fragments.
    pub fn max_message_for(mtu: usize) -> usize {
        if mtu >= 16 * 1024 {
            mtu
        } else {
            64 * 1024
        }
    }

    /// The window for datagrams of `mtu` payload bytes: about
    /// [`IN_FLIGHT`] bytes, between 64 and 512 datagrams. With path-sized
    /// datagrams on a 1,500-byte veth (1,416 bytes: 185 datagrams), a
    /// window of 64 (90 KB) kept the sender waiting for ACKs: once the
    /// sender stopped copying, 128 to 512 reached 2.7-2.8 GB/s at 1 and 4
    /// MiB where 64 reached 2.3 (docs/BENCHMARKS.md). 64-KB datagrams
    /// (loopback) keep 64, already 4 MB in flight.
    pub fn window_for(mtu: usize) -> usize {
        (IN_FLIGHT / mtu.max(1)).clamp(64, 512)
    }

    /// The datagram payload for the path to `peers` (path MTU less the IP,
    /// UDP, our header and a tag), at most `largest`: 64000 on loopback,
    /// 1,416 bytes on a 1,500-byte Ethernet or veth, where one 64000-byte
    /// datagram would be cut into 44 IP fragments (measured 4x slower than
    /// GSO with path-sized datagrams, docs/BENCHMARKS.md).
    pub fn mtu_for_path(local: SocketAddr, peers: &[SocketAddr], largest: usize) -> usize {
        // One probe per host, not per rank: ranks on one host share a path.
        let mut hosts: Vec<SocketAddr> =
            peers.iter().filter(|p| **p != local).map(|p| SocketAddr::new(p.ip(), 9)).collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
            .iter()
            .filter_map(|p| {
                let ip = if p.is_ipv4() { 28 } else { 48 };
                io::path_mtu(local, *p).map(|m| m.saturating_sub(ip + HEADER + TAG))
            })
            .fold(largest, usize::min)
            .max(512)
    }

    /// Check the values are usable.
    pub fn validate(&self) -> Result<(), TransportError> {
        if !(64..=65_000).contains(&self.mtu) {
            return Err(TransportError::Config(format!("DN_UDP_MTU={} must be between 64 and 65000 bytes", self.mtu)));
        }
        if self.window == 0 || self.window > 4096 {
            return Err(TransportError::Config(format!(
                "DN_UDP_WINDOW={} must be between 1 and 4096 packets",
                self.window
            )));
        }
        if self.max_message / self.mtu >= u16::MAX as usize {
            return Err(TransportError::Config(
                "messages would need more than 65535 fragments; raise DN_UDP_MTU".into(),
            ));
        }
        Ok(())
    }
}

/// Datagram-level counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Datagrams sent (retransmissions included).
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// Data datagrams retransmitted.
    pub retransmits: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// NACKs sent and received.
    pub nacks_sent: u64,
    /// NACKs received.
    pub nacks_received: u64,
    /// Standalone ACKs sent.
    pub acks_sent: u64,
    /// Duplicates discarded.
    pub duplicates: u64,
    /// Out-of-order datagrams discarded (Go-Back-N).
    pub out_of_order: u64,
    /// Messages delivered whole from one datagram (no staging copy).
    pub direct: u64,
    /// Messages reassembled from several datagrams.
    pub reassembled: u64,
    /// Dropped: truncated, foreign, other job, unknown sender, corrupt,
    /// malformed, unauthenticated.
    pub rejected: [u64; 7],
    /// Faults injected: dropped, duplicated, reordered, corrupted.
    pub injected: [u64; 4],
    /// ACKs and NACKs for sequence numbers never sent (forged or stale
    /// beyond the window), discarded with their datagram.
    pub bogus_acks: u64,
    /// Goodbyes sent in finalize (first ones and repeats).
    pub byes_sent: u64,
    /// Peers left behind in finalize without their goodbye, after
    /// `goodbye_wait` of silence.
    pub left_without_bye: u64,
    /// Pings sent to peers that had been silent for a quarter of the peer
    /// timeout, and pings from peers answered.
    pub pings_sent: u64,
    /// Pings from peers answered.
    pub pings_answered: u64,
    /// Send calls that carried several datagrams (UDP GSO).
    pub gso_sends: u64,
    /// Receive calls that returned several coalesced datagrams (UDP GRO).
    pub gro_batches: u64,
    /// GSO sends the kernel refused (GSO is then turned off).
    pub gso_fallbacks: u64,
}

struct Sent {
    seq: u32,
    /// The header and, for copied messages, the payload.
    datagram: Vec<u8>,
    /// A payload held by reference (zero-copy bulk data), sent after `datagram`.
    body: Option<Body>,
}

/// Bulk bytes a datagram refers to instead of holding them.
#[derive(Clone)]
enum Body {
    /// Part of an engine-owned buffer.
    Shared(Arc<Vec<u8>>, Range<usize>),
    /// Part of a caller's buffer lent through `try_send_lent`, whose
    /// contract keeps `ptr..ptr + len` valid and unchanged until this
    /// datagram is acknowledged (`lent_released`) or `unlend` copies it.
    Lent { ptr: *const u8, len: usize },
}

// SAFETY: `Body::Lent` stands for the `&[u8]` lent through `try_send_lent`,
// which is `Send`; the transport is reached through `&mut` only (one thread
// at a time), and it only ever reads those bytes.
unsafe impl Send for Body {}

impl Body {
    fn bytes(&self) -> &[u8] {
        match self {
            Body::Shared(b, r) => &b[r.clone()],
            // SAFETY: try_send_lent's contract (above): the bytes stay valid
            // and unchanged while this datagram is held; len > 0 (an empty
            // body is never lent).
            Body::Lent { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

struct PeerTx {
    next_seq: u32,
    /// Data datagrams built and acknowledged so far (never wrap: the tokens
    /// of lent sends).
    built_total: u64,
    acked_total: u64,
    /// Sent and not yet acknowledged, oldest first (the Go-Back-N window).
    unacked: VecDeque<Sent>,
    /// Built but not sent: the window was full.
    queued: VecDeque<Sent>,
    /// When the oldest unacknowledged datagram was (re)sent.
    timer: Option<Instant>,
    rto: Duration,
    /// Last time this peer acknowledged something new.
    progress: Instant,
    retries: u32,
}

struct PeerRx {
    expected: u32,
    staging: Vec<u8>,
    /// Data datagrams accepted since we last told the peer.
    unacked: u32,
    ack_due: Option<Instant>,
    /// The gap we last sent a NACK for.
    nacked: Option<u32>,
    /// The next fragment expected of the message being reassembled, and
    /// that message's length (every fragment must agree).
    frag_next: u32,
    frag_len: u32,
    /// Since when a gap has been open (a datagram missing after later ones
    /// arrived), and when it was last asked for.
    gap_since: Option<Instant>,
    gap_asked: Option<Instant>,
    /// The last time a valid datagram came from this peer.
    heard: Instant,
    /// When we last pinged it (it had been silent; see [`flag::PING`]).
    pinged: Option<Instant>,
    /// Its goodbye arrived (it is finalizing and fully acknowledged).
    got_bye: bool,
    /// It has confirmed ours (HAVE_BYE).
    has_ours: bool,
    /// We have told it that we have its goodbye.
    told_have: bool,
    /// When to repeat our goodbye, and the current repeat interval.
    bye_next: Option<Instant>,
    bye_rto: Duration,
}

/// The UDP transport of one rank: the reliable datagram protocol over a UDP socket.
pub type UdpTransport = DatagramTransport<UdpLink>;

/// The reliable datagram protocol of one rank over a [`Link`].
pub struct DatagramTransport<L: Link> {
    link: L,
    rank: u32,
    size: u32,
    job: u32,
    cfg: UdpConfig,
    tx: Vec<PeerTx>,
    rx: Vec<PeerRx>,
    buf: Vec<u8>,
    /// A receive `idle` made: length, sender, GRO segment size.
    stashed: Option<Received>,
    /// Set by another thread to end a wait in `idle` (see
    /// [`Transport::waker`]); once there is one, a wait sleeps at most
    /// [`WOKEN_WITHIN`] at a time.
    woken: Option<std::sync::Arc<crate::transport::FlagWaker>>,
    /// When the receive being handled was made: one clock read per
    /// receive, not per datagram (a GRO batch holds up to 46 of them).
    rx_now: Instant,
    pool: Vec<Vec<u8>>,
    faults: Option<Faults>,
    held: Option<(Vec<u8>, u32)>,
    stats: UdpStats,
    /// In finalize with every own datagram acknowledged: goodbyes go out.
    leaving: bool,
}

fn io_err(what: &str, e: std::io::Error) -> TransportError {
    TransportError::Backend { backend: "udp", msg: format!("{what}: {e}") }
}

impl UdpTransport {
    /// Create the one socket of this rank, bound to `bind`.
    pub fn bind(bind: SocketAddr, cfg: &UdpConfig) -> Result<UdpSocket, TransportError> {
        let domain = if bind.is_ipv4() { Domain::IPV4 } else { Domain::IPV6 };
        let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| io_err("cannot create a UDP socket", e))?;
        let _ = s.set_recv_buffer_size(cfg.sockbuf);
        let _ = s.set_send_buffer_size(cfg.sockbuf);
        s.bind(&bind.into()).map_err(|e| io_err(&format!("cannot bind {bind}"), e))?;
        s.set_nonblocking(true).map_err(|e| io_err("cannot make the socket non-blocking", e))?;
        Ok(s.into())
    }

    /// A transport over `sock` (already bound) for `rank` of a job whose
    /// ranks listen at `peers`.
    pub fn new(
        sock: UdpSocket,
        rank: u32,
        peers: Vec<SocketAddr>,
        job: u32,
        cfg: UdpConfig,
        faults: Option<FaultSpec>,
    ) -> Result<UdpTransport, TransportError> {
        UdpTransport::with_late_peers(sock, rank, peers.into_iter().map(Some).collect(), None, job, cfg, faults)
    }

    /// [`UdpTransport::new`] where the ranks whose address is `None` have
    /// not started yet, and publish their addresses in `late` when they do
    /// (spawned processes, MPI 4.1 §11.8).
    pub fn with_late_peers(
        sock: UdpSocket,
        rank: u32,
        peers: Vec<Option<SocketAddr>>,
        late: Option<std::path::PathBuf>,
        job: u32,
        cfg: UdpConfig,
        faults: Option<FaultSpec>,
    ) -> Result<UdpTransport, TransportError> {
        cfg.validate()?;
        let size = peers.len() as u32;
        if rank >= size {
            return Err(TransportError::Config(format!("rank {rank} is outside the {size}-rank address list")));
        }
        // GRO makes every receive a recvmsg with a control buffer, 0.4 us
        // more per round trip on loopback; it pays only where datagrams are
        // path-sized and arrive in batches (measured, docs/BENCHMARKS.md).
        let link = UdpLink::new(sock, rank, peers, late, cfg.gso, cfg.gro && cfg.mtu < 16 * 1024, cfg.connect);
        DatagramTransport::over(link, rank, size, job, cfg, faults)
    }

    /// Open from the environment `dnrun --backend udp` sets (see [`addr`]).
    pub fn from_job(job: Option<&crate::JobEnv>) -> Result<UdpTransport, TransportError> {
        let cfg = UdpConfig::from_env(job.and_then(|j| j.dir.as_deref()))?;
        let faults = faults::from_env()?;
        let addr::Exchanged { sock, rank, peers, job, late } = addr::exchange(&cfg, job)?;
        let mut cfg = cfg;
        if !cfg.mtu_fixed {
            if let Ok(local) = sock.local_addr() {
                // Ranks spawned later publish addresses of this host's (`late`).
                let known: Vec<SocketAddr> = peers.iter().flatten().copied().collect();
                cfg.mtu = UdpConfig::mtu_for_path(local, &known, cfg.mtu);
                cfg.max_message = UdpConfig::max_message_for(cfg.mtu);
            }
        }
        if !cfg.window_fixed {
            cfg.window = UdpConfig::window_for(cfg.mtu);
        }
        // Injected corruption happens before the kernel computes the UDP
        // checksum, so only our own CRC can catch it.
        cfg.full_crc |= faults.is_some();
        UdpTransport::with_late_peers(sock, rank, peers, late, job, cfg, faults)
    }
}

impl<L: Link> DatagramTransport<L> {
    /// The protocol for `rank` of `size` ranks of job `job` over `link`.
    pub fn over(
        link: L,
        rank: u32,
        size: u32,
        job: u32,
        cfg: UdpConfig,
        faults: Option<FaultSpec>,
    ) -> Result<DatagramTransport<L>, TransportError> {
        cfg.validate()?;
        if rank >= size {
            return Err(TransportError::Config(format!("rank {rank} is outside the {size}-rank job")));
        }
        let now = link.now();
        let buf_len = link.recv_buffer(HEADER + cfg.mtu + TAG);
        let tx = (0..size)
            .map(|_| PeerTx {
                next_seq: 0,
                built_total: 0,
                acked_total: 0,
                unacked: VecDeque::new(),
                queued: VecDeque::new(),
                timer: None,
                rto: cfg.rto_min,
                progress: now,
                retries: 0,
            })
            .collect();
        let rx = (0..size)
            .map(|_| PeerRx {
                expected: 0,
                staging: Vec::new(),
                unacked: 0,
                ack_due: None,
                nacked: None,
                frag_next: 0,
                frag_len: 0,
                gap_since: None,
                gap_asked: None,
                heard: now,
                pinged: None,
                got_bye: false,
                has_ours: false,
                told_have: false,
                bye_next: None,
                bye_rto: cfg.rto_min,
            })
            .collect();
        Ok(DatagramTransport {
            link,
            rank,
            size,
            job,
            buf: vec![0u8; buf_len],
            cfg,
            tx,
            rx,
            stashed: None,
            woken: None,
            rx_now: now,
            pool: Vec::new(),
            faults: faults.map(|f| Faults::new(f, rank)),
            held: None,
            stats: UdpStats::default(),
            leaving: false,
        })
    }

    /// Counters.
    pub fn stats(&self) -> UdpStats {
        let mut s = self.stats.clone();
        if let Some(f) = &self.faults {
            s.injected = f.injected;
        }
        s
    }

    /// The flags every datagram of this transport carries.
    fn mode_flags(&self) -> u8 {
        (if self.cfg.full_crc { flag::FULL_CRC } else { 0 }) | if self.cfg.auth.is_some() { flag::AUTH } else { 0 }
    }

    /// Send one sealed datagram (`head` then `body`, then its tag in
    /// authenticated mode), through the fault injector if there is one.
    fn emit(&mut self, dest: u32, head: &[u8], body: &[u8]) -> Result<(), TransportError> {
        let verdict = self.verdict(dest, head.len() + body.len());
        self.emit_as(dest, head, body, verdict)
    }

    /// What the fault injector does with a datagram of `len` bytes to `dest`.
    fn verdict(&mut self, dest: u32, len: usize) -> Verdict {
        match &mut self.faults {
            Some(f) => f.decide(dest, len),
            None => Verdict::Send,
        }
    }

    /// [`Self::emit`] with the injector's decision already made.
    fn emit_as(&mut self, dest: u32, head: &[u8], body: &[u8], verdict: Verdict) -> Result<(), TransportError> {
        let tag = self.cfg.auth.as_ref().map(|k| k.tag(&[head, body]));
        let tag: &[u8] = tag.as_ref().map_or(&[], |t| &t[..]);
        match verdict {
            Verdict::Drop => return Ok(()),
            Verdict::Hold => {
                // Released after the next datagram (or at the next poll).
                if let Some((old, to)) = self.held.replace(([head, body, tag].concat(), dest)) {
                    self.raw_send(to, &[&old])?;
                }
                return Ok(());
            }
            Verdict::Corrupt(i) => {
                let mut c = [head, body, tag].concat();
                c[i] ^= 0x5A;
                self.raw_send(dest, &[&c])?;
            }
            Verdict::Duplicate => {
                self.raw_send(dest, &[head, body, tag])?;
                self.raw_send(dest, &[head, body, tag])?;
            }
            Verdict::Send => self.raw_send(dest, &[head, body, tag])?,
        }
        if let Some((old, to)) = self.held.take() {
            self.raw_send(to, &[&old])?;
        }
        Ok(())
    }

    /// Send the non-empty `parts` as one datagram.
    fn raw_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<(), TransportError> {
        let mut slices = [IoSlice::new(&[]); 3];
        let mut n = 0;
        for p in parts.iter().filter(|p| !p.is_empty()) {
            slices[n] = IoSlice::new(p);
            n += 1;
        }
        match self.link.send(dest, &slices[..n]) {
            Ok(()) => {
                self.stats.sent += 1;
                Ok(())
            }
            Err(e) => Err(self.link_err(&format!("cannot send to rank {dest} at {}", self.link.describe(dest)), e)),
        }
    }

    fn link_err(&self, what: &str, e: std::io::Error) -> TransportError {
        TransportError::Backend { backend: L::NAME, msg: format!("{what}: {e}") }
    }

    /// Stamp the current cumulative ACK into a data datagram, seal and send it.
    fn transmit(&mut self, dest: u32, i: usize) -> Result<(), TransportError> {
        let ack = self.rx[dest as usize].expected;
        let (mut d, body) = {
            let q = &mut self.tx[dest as usize].unacked;
            (std::mem::take(&mut q[i].datagram), q[i].body.clone())
        };
        d[20..24].copy_from_slice(&ack.to_le_bytes());
        let body_bytes: &[u8] = body.as_ref().map_or(&[], |b| b.bytes());
        seal_parts(&mut d, body_bytes);
        let r = self.emit(dest, &d, body_bytes);
        self.tx[dest as usize].unacked[i].datagram = d;
        // Our data carried the ACK.
        let rx = &mut self.rx[dest as usize];
        rx.unacked = 0;
        rx.ack_due = None;
        r
    }

    /// Takes the next sequence number towards `dest` and starts a datagram
    /// (from the buffer pool) holding the DATA header of fragment `frag` of
    /// `nfrags` of a `msg_len`-byte message, `payload` bytes of which follow.
    fn start_data(&mut self, dest: u32, msg_len: usize, frag: usize, nfrags: usize, payload: usize) -> (u32, Vec<u8>) {
        let mut dg = self.pool.pop().unwrap_or_default();
        dg.resize(HEADER, 0);
        let tx = &mut self.tx[dest as usize];
        let seq = tx.next_seq;
        tx.next_seq = seq.wrapping_add(1);
        tx.built_total += 1;
        Header {
            flags: flag::DATA | self.mode_flags(),
            job: self.job,
            src: self.rank,
            dst: dest,
            seq,
            ack: 0,
            msg_len: msg_len as u32,
            frag: frag as u16,
            nfrags: nfrags as u16,
            payload: payload as u32,
        }
        .write(&mut dg);
        (seq, dg)
    }

    /// Queue a message of `header` followed by `len` bytes of bulk data
    /// that stay where they are: fragment `k` carries its share of them as
    /// `part(offset, n)` (bytes `offset..offset + n` of the bulk data),
    /// after its protocol header (and, in the first fragment, `header`),
    /// and is sent from there as iovecs. `false`: the backlog is full.
    /// `header` fits one fragment; `len > 0`.
    fn queue_held(
        &mut self,
        dest: u32,
        header: &[u8],
        len: usize,
        part: impl Fn(usize, usize) -> Body,
    ) -> Result<bool, TransportError> {
        let (mtu, h) = (self.cfg.mtu, header.len());
        let total = h + len;
        if total > self.cfg.max_message {
            return Err(TransportError::Backend {
                backend: L::NAME,
                msg: format!("a {total}-byte message exceeds the maximum"),
            });
        }
        let d = dest as usize;
        let nfrags = total.div_ceil(mtu);
        if !self.tx[d].queued.is_empty() && self.tx[d].queued.len() + nfrags > self.cfg.backlog {
            return Ok(false);
        }
        for frag in 0..nfrags {
            let n = (total - frag * mtu).min(mtu);
            let (seq, mut dg) = self.start_data(dest, total, frag, nfrags, n);
            // The bulk bytes of this fragment: message bytes
            // frag * mtu .. + n, less the header in front of them.
            let (at, bulk) = if frag == 0 {
                dg.extend_from_slice(header);
                (0, n - h)
            } else {
                (frag * mtu - h, n)
            };
            let body = (bulk > 0).then(|| part(at, bulk));
            self.tx[d].queued.push_back(Sent { seq, datagram: dg, body });
        }
        self.pump(dest)?;
        Ok(true)
    }

    /// Move queued datagrams into the window and send them.
    fn pump(&mut self, dest: u32) -> Result<(), TransportError> {
        let d = dest as usize;
        let first = self.tx[d].unacked.len();
        while self.tx[d].unacked.len() < self.cfg.window && !self.tx[d].queued.is_empty() {
            let tx = &mut self.tx[d];
            if let Some(s) = tx.queued.pop_front() {
                if tx.unacked.is_empty() {
                    let now = self.link.now();
                    tx.timer = Some(now);
                    tx.progress = now;
                }
                tx.unacked.push_back(s);
            }
        }
        let count = self.tx[d].unacked.len() - first;
        self.send_window(dest, first, count)
    }

    /// Go back N: resend every unacknowledged datagram from `from` on.
    fn go_back(&mut self, dest: u32, from: u32) -> Result<(), TransportError> {
        let d = dest as usize;
        let start = self.tx[d].unacked.iter().position(|s| s.seq == from).unwrap_or(0);
        let count = self.tx[d].unacked.len() - start;
        self.stats.retransmits += count as u64;
        self.send_window(dest, start, count)?;
        self.tx[d].timer = Some(self.link.now());
        Ok(())
    }

    /// Send `count` unacknowledged datagrams from index `first` to `dest`:
    /// runs of equal-sized ones (the last of a run may be shorter) in one
    /// GSO call each, the rest one by one. The fault injector decides per
    /// datagram: a dropped one leaves the batch, a duplicated, held back or
    /// corrupted one leaves on its own after it.
    fn send_window(&mut self, dest: u32, first: usize, count: usize) -> Result<(), TransportError> {
        let d = dest as usize;
        let end = first + count;
        let mut i = first;
        while i < end {
            let j = if self.link.offloads().gso { self.gso_run(d, i, end) } else { i + 1 };
            if j - i < 2 || !self.send_run(dest, i, j)? {
                for k in i..j {
                    self.transmit(dest, k)?;
                }
            }
            i = j;
        }
        Ok(())
    }

    /// The end of the longest run from `i` that one GSO call can carry.
    fn gso_run(&self, d: usize, i: usize, end: usize) -> usize {
        let tag = if self.cfg.auth.is_some() { TAG } else { 0 };
        let q = &self.tx[d].unacked;
        let size = |k: usize| q[k].datagram.len() + q[k].body.as_ref().map_or(0, |b| b.bytes().len()) + tag;
        let seg = size(i);
        let (mut j, mut total) = (i + 1, seg);
        while j < end && j - i < io::MAX_SEGMENTS {
            let n = size(j);
            if n > seg || total + n > io::MAX_GSO_BYTES {
                break;
            }
            total += n;
            j += 1;
            if n < seg {
                break;
            }
        }
        j
    }

    /// Send unacked datagrams `i..j` in one GSO call. `false`: the kernel
    /// refused GSO (now off for good); the caller sends them one by one.
    fn send_run(&mut self, dest: u32, i: usize, j: usize) -> Result<bool, TransportError> {
        let d = dest as usize;
        let ack = self.rx[d].expected.to_le_bytes();
        let mut tags = Vec::new();
        let mut batch = Vec::with_capacity(j - i);
        let mut apart = Vec::new();
        for k in i..j {
            let s = &self.tx[d].unacked[k];
            let len = s.datagram.len() + s.body.as_ref().map_or(0, |b| b.bytes().len());
            match self.verdict(dest, len) {
                Verdict::Send => batch.push(k),
                Verdict::Drop => {}
                other => apart.push((k, other)),
            }
            let s = &mut self.tx[d].unacked[k];
            s.datagram[20..24].copy_from_slice(&ack);
            let body: &[u8] = s.body.as_ref().map_or(&[], |b| b.bytes());
            seal_parts(&mut s.datagram, body);
            if let Some(key) = &self.cfg.auth {
                tags.push(key.tag(&[&s.datagram, body]));
            }
        }
        let q = &self.tx[d].unacked;
        let seg = q[i].datagram.len()
            + q[i].body.as_ref().map_or(0, |b| b.bytes().len())
            + tags.first().map_or(0, |t| t.len());
        let mut iov = Vec::with_capacity(3 * (j - i));
        for &k in &batch {
            let n = k - i;
            iov.push(IoSlice::new(&q[k].datagram));
            if let Some(b) = q[k].body.as_ref().map(Body::bytes).filter(|b| !b.is_empty()) {
                iov.push(IoSlice::new(b));
            }
            if let Some(t) = tags.get(n) {
                iov.push(IoSlice::new(t));
            }
        }
        let r = if batch.is_empty() { Ok(0) } else { self.link.send_segments(dest, &iov, seg as u16) };
        drop(iov);
        match r {
            Ok(_) => {
                self.stats.sent += batch.len() as u64;
                self.stats.gso_sends += 1;
            }
            // A full socket buffer or an ICMP error from an earlier
            // datagram: the protocol recovers by retransmission.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::ConnectionRefused) => {}
            Err(_) => {
                // E.g. EIO from a device without checksum offload.
                self.link.disable_gso();
                self.stats.gso_fallbacks += 1;
                return Ok(false);
            }
        }
        for (k, verdict) in apart {
            let s = &self.tx[d].unacked[k];
            let (head, body) = (s.datagram.clone(), s.body.clone());
            self.emit_as(dest, &head, body.as_ref().map_or(&[], |b| b.bytes()), verdict)?;
        }
        // Our data carried the ACK.
        let rx = &mut self.rx[d];
        rx.unacked = 0;
        rx.ack_due = None;
        Ok(true)
    }

    fn control(&mut self, dest: u32, flags: u8, seq: u32) -> Result<(), TransportError> {
        let h = Header {
            flags: flags | self.mode_flags(),
            job: self.job,
            src: self.rank,
            dst: dest,
            seq,
            ack: self.rx[dest as usize].expected,
            msg_len: 0,
            frag: 0,
            nfrags: 0,
            payload: 0,
        };
        let mut d = [0u8; HEADER];
        h.write(&mut d);
        seal(&mut d);
        let rx = &mut self.rx[dest as usize];
        rx.unacked = 0;
        rx.ack_due = None;
        self.emit(dest, &d, &[])
    }

    /// A cumulative ACK from `src`: everything before `ack` arrived.
    fn acked(&mut self, src: u32, ack: u32) {
        let tx = &mut self.tx[src as usize];
        let mut moved = false;
        while tx.unacked.front().is_some_and(|s| seq_lt(s.seq, ack)) {
            if let Some(s) = tx.unacked.pop_front() {
                tx.acked_total += 1;
                if self.pool.len() < 64 {
                    let mut v = s.datagram;
                    v.clear();
                    self.pool.push(v);
                }
            }
            moved = true;
        }
        if moved {
            let now = self.link.now();
            tx.progress = now;
            tx.retries = 0;
            tx.rto = self.cfg.rto_min;
            tx.timer = if tx.unacked.is_empty() { None } else { Some(now) };
        }
    }

    /// Take one receive (stashed or from the link); `None` when there is none.
    fn recv_one(&mut self) -> Result<Option<Received>, TransportError> {
        if let Some(x) = self.stashed.take() {
            return Ok(Some(x));
        }
        let r = self.link.recv(&mut self.buf).map_err(|e| self.link_err("cannot receive", e))?;
        if r.is_some_and(|r| r.batched) {
            self.stats.gro_batches += 1;
        }
        Ok(r)
    }

    fn reject(&mut self, r: Reject) {
        let i = match r {
            Reject::Truncated => 0,
            Reject::Foreign => 1,
            Reject::OtherJob => 2,
            Reject::UnknownSender => 3,
            Reject::Corrupt => 4,
            Reject::Malformed => 5,
            Reject::Unauthenticated => 6,
        };
        self.stats.rejected[i] += 1;
    }

    /// Handle the datagram in `self.buf[at..at + len]`; returns whether a message was delivered.
    fn handle(
        &mut self,
        at: usize,
        len: usize,
        from: Option<u32>,
        sink: &mut dyn FnMut(u32, &[u8]),
    ) -> Result<bool, TransportError> {
        self.stats.received += 1;
        // A datagram longer than the largest we send was truncated by recv.
        if len > HEADER + self.cfg.mtu + TAG {
            self.reject(Reject::Truncated);
            return Ok(false);
        }
        // Authenticated mode: nothing is read before its tag is checked.
        let len = match &self.cfg.auth {
            Some(key) if key.verify(&self.buf[at..at + len]) => len - TAG,
            None if len < 4 || self.buf[at + 3] & flag::AUTH == 0 => len,
            _ => {
                self.reject(Reject::Unauthenticated);
                return Ok(false);
            }
        };
        let h = match Header::parse(&self.buf[at..at + len], self.job, self.rank, self.size) {
            Ok(h) => h,
            Err(r) => {
                self.reject(r);
                return Ok(false);
            }
        };
        if from != Some(h.src) {
            self.reject(Reject::UnknownSender);
            return Ok(false);
        }
        // An acknowledgement of something never sent is believed by nobody:
        // it would free datagrams the peer never received, and with them
        // the retransmissions that would repair the loss.
        let next = self.tx[h.src as usize].next_seq;
        if seq_lt(next, h.ack) || (h.flags & flag::NACK != 0 && !seq_lt(h.seq, next)) {
            self.stats.bogus_acks += 1;
            self.reject(Reject::Malformed);
            return Ok(false);
        }
        // A fragment must fit the message it claims, in order, and the
        // message the largest we accept: checked before the sequence number
        // is consumed, so a forged fragment cannot swallow a real one.
        if h.flags & flag::DATA != 0 {
            let rx = &self.rx[h.src as usize];
            let payload = (len - HEADER) as u64;
            let staged = if h.frag == 0 { 0 } else { rx.staging.len() as u64 };
            let consistent = h.nfrags >= 1
                && h.frag < h.nfrags
                && (h.msg_len as usize) <= self.cfg.max_message
                && staged + payload <= h.msg_len as u64
                && (h.frag == 0 || rx.frag_next == h.frag as u32 && rx.frag_len == h.msg_len);
            if !consistent && h.seq == rx.expected {
                self.reject(Reject::Malformed);
                return Ok(false);
            }
        }
        self.acked(h.src, h.ack);
        self.rx[h.src as usize].heard = self.rx_now;
        if h.flags & flag::PING != 0 {
            self.stats.pings_answered += 1;
            self.stats.acks_sent += 1;
            self.control(h.src, flag::ACK, 0)?;
            return Ok(false);
        }
        if h.flags & flag::BYE != 0 {
            self.goodbye_from(h.src, h.flags & flag::HAVE_BYE != 0)?;
            return Ok(false);
        }
        if h.flags & flag::NACK != 0 {
            self.stats.nacks_received += 1;
            if self.tx[h.src as usize].unacked.iter().any(|s| s.seq == h.seq) {
                self.go_back(h.src, h.seq)?;
            }
        }
        if h.flags & flag::DATA == 0 {
            return Ok(false);
        }
        let s = h.src as usize;
        let expected = self.rx[s].expected;
        if h.seq != expected {
            if seq_lt(h.seq, expected) {
                // A duplicate: our ACK may have been lost; repeat it soon.
                self.stats.duplicates += 1;
                self.rx[s].ack_due.get_or_insert(self.rx_now);
            } else {
                // A gap: ask for the first missing datagram once per gap
                // (and again from the timers while it stays open).
                self.stats.out_of_order += 1;
                if self.rx[s].nacked != Some(expected) {
                    self.rx[s].nacked = Some(expected);
                    let now = self.rx_now;
                    self.rx[s].gap_since.get_or_insert(now);
                    self.rx[s].gap_asked = Some(now);
                    self.stats.nacks_sent += 1;
                    self.control(h.src, flag::NACK, expected)?;
                }
            }
            return Ok(false);
        }
        {
            let rx = &mut self.rx[s];
            rx.expected = expected.wrapping_add(1);
            rx.nacked = None;
            rx.gap_since = None;
            rx.gap_asked = None;
            rx.unacked += 1;
            if rx.ack_due.is_none() {
                rx.ack_due = Some(self.rx_now + self.cfg.ack_delay);
            }
        }
        // Half a window owed: acknowledge now rather than after the rest
        // of the batch, so that the sender's window reopens early.
        if self.rx[s].unacked as usize >= self.cfg.window.div_ceil(2) {
            self.stats.acks_sent += 1;
            self.control(h.src, flag::ACK, 0)?;
        }
        if h.nfrags == 1 {
            if h.msg_len as usize != len - HEADER {
                self.reject(Reject::Malformed);
                return Ok(false);
            }
            // Fits in one datagram: straight from the receive buffer, no staging copy.
            self.stats.direct += 1;
            sink(h.src, &self.buf[at + HEADER..at + len]);
            return Ok(true);
        }
        let (rx, buf) = (&mut self.rx[s], &self.buf);
        if h.frag == 0 {
            rx.staging.clear();
            rx.frag_len = h.msg_len;
        }
        rx.staging.extend_from_slice(&buf[at + HEADER..at + len]);
        rx.frag_next = h.frag as u32 + 1;
        if h.frag + 1 < h.nfrags {
            return Ok(false);
        }
        let msg = std::mem::take(&mut rx.staging);
        if msg.len() != h.msg_len as usize {
            self.rx[s].staging = msg;
            self.rx[s].staging.clear();
            self.reject(Reject::Malformed);
            return Ok(false);
        }
        self.stats.reassembled += 1;
        sink(h.src, &msg);
        self.rx[s].staging = msg;
        self.rx[s].staging.clear();
        Ok(true)
    }

    /// Retransmission timers, delayed ACKs, peer loss.
    fn timers(&mut self) -> Result<(), TransportError> {
        let now = self.link.now();
        let hung = self.faults.as_ref().is_some_and(Faults::is_hung);
        for p in 0..self.size {
            if p == self.rank {
                continue;
            }
            let d = p as usize;
            if let Some(t) = self.tx[d].timer {
                if !hung && now.duration_since(self.tx[d].progress) >= self.cfg.peer_timeout {
                    let tx = &self.tx[d];
                    return Err(TransportError::PeerLost {
                            rank: p,
                            reason: format!(
                                "it did not acknowledge any of {} pending datagram(s) for {:.1} s despite {} retransmission round(s) (DN_UDP_TIMEOUT_MS={})",
                                tx.unacked.len(),
                                now.duration_since(tx.progress).as_secs_f64(),
                                tx.retries,
                            self.cfg.peer_timeout.as_millis()
                        ),
                    });
                }
                if now.duration_since(t) >= self.tx[d].rto {
                    self.stats.timeouts += 1;
                    let first = self.tx[d].unacked.front().map(|s| s.seq).unwrap_or(0);
                    self.go_back(p, first)?;
                    let tx = &mut self.tx[d];
                    tx.retries += 1;
                    tx.rto = (tx.rto * 2).min(self.cfg.rto_max);
                }
            }
            // The receiver's own liveness check: a gap that the sender does
            // not fill (its retransmissions stopped, for example after an
            // acknowledgement it should not have believed) is asked for
            // again every rto_max, and ends the job after peer_timeout with
            // an error naming the peer instead of a silent hang.
            if let Some(since) = self.rx[d].gap_since {
                let expected = self.rx[d].expected;
                if !hung && now.duration_since(since) >= self.cfg.peer_timeout {
                    return Err(TransportError::PeerLost {
                        rank: p,
                        reason: format!(
                            "datagram {expected} from it has been missing for {:.1} s although later ones arrived and it was asked for again (DN_UDP_TIMEOUT_MS={})",
                            now.duration_since(since).as_secs_f64(),
                            self.cfg.peer_timeout.as_millis()
                        ),
                    });
                }
                if self.rx[d].gap_asked.is_some_and(|t| now.duration_since(t) >= self.cfg.rto_max) {
                    self.rx[d].gap_asked = Some(now);
                    self.stats.nacks_sent += 1;
                    self.control(p, flag::NACK, expected)?;
                }
            }
            // Liveness without data (issue 30): a peer silent for a
            // quarter of the peer timeout is pinged, and again every eighth;
            // one that answers nothing for the whole timeout is lost, even
            // if we only wait for it and owe it nothing. A peer that said
            // goodbye has left; in finalize the goodbyes decide.
            if self.watches(d) {
                let silent = now.saturating_duration_since(self.rx[d].heard);
                if silent >= self.cfg.peer_timeout {
                    return Err(TransportError::PeerLost {
                        rank: p,
                        reason: format!(
                            "nothing came from it for {:.1} s, not even an answer to a ping every {} ms (DN_UDP_TIMEOUT_MS={})",
                            silent.as_secs_f64(),
                            self.ping_every().as_millis(),
                            self.cfg.peer_timeout.as_millis()
                        ),
                    });
                }
                if now >= self.ping_due(d) {
                    self.rx[d].pinged = Some(now);
                    self.stats.pings_sent += 1;
                    self.control(p, flag::PING, 0)?;
                }
            }
            // Half a window owed is acknowledged on arrival (`handle`);
            // here only the delayed ACK whose time has come.
            if self.rx[d].ack_due.is_some_and(|t| now >= t) {
                self.stats.acks_sent += 1;
                self.control(p, flag::ACK, 0)?;
            }
        }
        Ok(())
    }

    /// Whether peer `d`'s silence is watched (pinged, and fatal after the
    /// peer timeout): not ourselves, not a peer that said goodbye, not in
    /// finalize (where the goodbyes decide), not when we play the hung peer.
    fn watches(&self, d: usize) -> bool {
        d != self.rank as usize
            && !self.rx[d].got_bye
            && !self.leaving
            && !self.faults.as_ref().is_some_and(Faults::is_hung)
            && (self.link.watched_from_start(d as u32) || self.tx[d].next_seq > 0 || self.rx[d].expected > 0)
    }

    /// How often a silent peer is pinged once it is due.
    fn ping_every(&self) -> Duration {
        self.cfg.peer_timeout / 8
    }

    /// When silent peer `d` is due a ping: a quarter of the peer timeout
    /// after it was last heard, then every [`Self::ping_every`].
    fn ping_due(&self, d: usize) -> Instant {
        let rx = &self.rx[d];
        let first = rx.heard + self.cfg.peer_timeout / 4;
        rx.pinged.map_or(first, |t| first.max(t + self.ping_every()))
    }

    /// The earliest timer, if any.
    fn next_deadline(&self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        for d in (0..self.size as usize).filter(|&d| self.watches(d)) {
            let at = self.ping_due(d).min(self.rx[d].heard + self.cfg.peer_timeout);
            best = Some(best.map_or(at, |b| b.min(at)));
        }
        for (d, tx) in self.tx.iter().enumerate() {
            if let Some(t) = tx.timer {
                let at = (t + tx.rto).min(tx.progress + self.cfg.peer_timeout);
                best = Some(best.map_or(at, |b| b.min(at)));
            }
            if let Some(t) = self.rx[d].ack_due {
                best = Some(best.map_or(t, |b| b.min(t)));
            }
            if let Some(t) = self.rx[d].gap_asked {
                let at = (t + self.cfg.rto_max).min(self.rx[d].gap_since.unwrap_or(t) + self.cfg.peer_timeout);
                best = Some(best.map_or(at, |b| b.min(at)));
            }
            if let Some(t) = self.rx[d].bye_next {
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        }
        best
    }

    /// A goodbye from `src` (`have`: it has ours). Once we are leaving we
    /// answer a goodbye that does not yet confirm ours, and confirm theirs
    /// once, so both ends learn that the other needs nothing more.
    fn goodbye_from(&mut self, src: u32, have: bool) -> Result<(), TransportError> {
        let rx = &mut self.rx[src as usize];
        rx.got_bye = true;
        rx.has_ours |= have;
        if self.leaving && (!have || !rx.told_have) {
            self.goodbye(src)?;
        }
        Ok(())
    }

    /// Send our goodbye to `dest`, confirming theirs if we have it.
    fn goodbye(&mut self, dest: u32) -> Result<(), TransportError> {
        let have = self.rx[dest as usize].got_bye;
        self.rx[dest as usize].told_have |= have;
        self.stats.byes_sent += 1;
        self.control(dest, flag::BYE | if have { flag::HAVE_BYE } else { 0 }, 0)
    }

    /// Whether finalize may stop waiting for `p`, and whether that is
    /// because it fell silent without a goodbye.
    fn farewell_done(&self, p: usize, now: Instant) -> (bool, bool) {
        let rx = &self.rx[p];
        let silent = now.saturating_duration_since(rx.heard);
        if rx.got_bye && (rx.has_ours || silent >= self.cfg.linger) {
            return (true, false);
        }
        let wait = self.cfg.goodbye_wait.min(self.cfg.peer_timeout);
        (silent >= wait, silent >= wait)
    }

    fn all_acked(&self) -> bool {
        self.tx.iter().all(|t| t.unacked.is_empty() && t.queued.is_empty())
    }
}

impl<L: Link> Transport for DatagramTransport<L> {
    fn name(&self) -> &'static str {
        L::NAME
    }

    fn waker(&mut self) -> Result<Option<std::sync::Arc<dyn crate::transport::Waker>>, TransportError> {
        let w = self.woken.get_or_insert_with(Default::default).clone();
        Ok(Some(w))
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn caps(&self) -> Caps {
        Caps {
            max_message: self.cfg.max_message,
            eager_threshold: self.cfg.eager_threshold.min(self.cfg.max_message - 64),
        }
    }

    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.cfg.max_message {
            return Err(TransportError::Backend {
                backend: L::NAME,
                msg: format!("a {len}-byte message exceeds the maximum"),
            });
        }
        let d = dest as usize;
        let nfrags = len.div_ceil(self.cfg.mtu).max(1);
        if !self.tx[d].queued.is_empty() && self.tx[d].queued.len() + nfrags > self.cfg.backlog {
            return Ok(false);
        }
        // Build the datagrams (payloads copied once, kept for retransmission).
        let mut flat = parts.iter().flat_map(|p| std::iter::once(*p)).filter(|p| !p.is_empty());
        let mut cur: &[u8] = flat.next().unwrap_or(&[]);
        for frag in 0..nfrags {
            let n = (len - frag * self.cfg.mtu).min(self.cfg.mtu);
            let (seq, mut dg) = self.start_data(dest, len, frag, nfrags, n);
            let mut want = n;
            while want > 0 {
                if cur.is_empty() {
                    cur = flat.next().unwrap_or(&[]);
                    if cur.is_empty() {
                        break;
                    }
                }
                let take = cur.len().min(want);
                dg.extend_from_slice(&cur[..take]);
                cur = &cur[take..];
                want -= take;
            }
            self.tx[d].queued.push_back(Sent { seq, datagram: dg, body: None });
        }
        self.pump(dest)?;
        Ok(true)
    }

    fn try_send_shared(
        &mut self,
        dest: u32,
        header: &[u8],
        data: &Arc<Vec<u8>>,
        range: Range<usize>,
    ) -> Result<bool, TransportError> {
        let Some(body) = data.get(range.clone()) else {
            return Err(TransportError::Backend {
                backend: L::NAME,
                msg: format!("send range {range:?} lies outside its {}-byte buffer", data.len()),
            });
        };
        if header.len() > self.cfg.mtu || body.is_empty() {
            return self.try_send(dest, &[header, body]);
        }
        // The bulk bytes stay in the engine's buffer until acknowledged.
        let start = range.start;
        self.queue_held(dest, header, body.len(), |at, n| Body::Shared(data.clone(), start + at..start + at + n))
    }

    unsafe fn try_send_lent(&mut self, dest: u32, header: &[u8], data: &[u8]) -> Result<Lent, TransportError> {
        if header.len() > self.cfg.mtu || data.is_empty() {
            // Nothing to hold (or a header that needs fragments itself): copy.
            return Ok(if self.try_send(dest, &[header, data])? { Lent::Copied } else { Lent::NotNow });
        }
        // The bulk bytes stay in the caller's buffer until acknowledged
        // (the caller's contract keeps them there), every fragment's part
        // of them sent from there with the datagram's header as iovecs.
        let part = |at: usize, n: usize| Body::Lent { ptr: data[at..at + n].as_ptr(), len: n };
        if !self.queue_held(dest, header, data.len(), part)? {
            return Ok(Lent::NotNow);
        }
        Ok(Lent::Held(self.tx[dest as usize].built_total))
    }

    fn lent_released(&self, dest: u32, token: u64) -> bool {
        self.tx.get(dest as usize).is_none_or(|tx| tx.acked_total >= token)
    }

    fn unlend(&mut self, dest: u32) {
        let Some(tx) = self.tx.get_mut(dest as usize) else { return };
        for s in tx.unacked.iter_mut().chain(tx.queued.iter_mut()) {
            if let Some(b @ Body::Lent { .. }) = &s.body {
                let copy = b.bytes().to_vec();
                let n = copy.len();
                s.body = Some(Body::Shared(Arc::new(copy), 0..n));
            }
        }
    }

    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError> {
        if let Some((old, to)) = self.held.take() {
            self.raw_send(to, &[&old])?;
        }
        let mut delivered = 0;
        for _ in 0..256 {
            let Some(Received { len, from, seg, .. }) = self.recv_one()? else { break };
            self.rx_now = self.link.now();
            let mut at = 0;
            while at < len {
                let n = seg.min(len - at);
                if self.handle(at, n, from, sink)? {
                    delivered += 1;
                }
                at += n;
            }
            // A message is ready: hand it over before asking the socket
            // again. In a ping-pong the next receive finds nothing, and the
            // system call it costs would delay the reply (about 0.4 us per
            // message on loopback and veth). The engine polls again.
            if delivered > 0 {
                break;
            }
        }
        self.timers()?;
        for p in 0..self.size {
            if p != self.rank && !self.tx[p as usize].queued.is_empty() {
                self.pump(p)?;
            }
        }
        Ok(delivered)
    }

    fn idle(&mut self) -> Result<(), TransportError> {
        if self.stashed.is_some() {
            return Ok(());
        }
        let woken = |w: &Option<std::sync::Arc<crate::transport::FlagWaker>>| w.as_ref().is_some_and(|w| w.take());
        if woken(&self.woken) {
            return Ok(());
        }
        // Busy-poll first, as MPI libraries do...
        let start = self.link.now();
        let deadline = self.next_deadline();
        let yield_idle = self.link.yield_when_idle();
        while self.link.now().saturating_duration_since(start) < self.cfg.spin {
            if let Some(x) = self.recv_one()? {
                self.stashed = Some(x);
                return Ok(());
            }
            if deadline.is_some_and(|t| self.link.now() >= t) || woken(&self.woken) {
                return Ok(());
            }
            if yield_idle {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        // ...then sleep in the kernel until a datagram or the next timer.
        let wait = deadline.map_or(Duration::from_millis(50), |t| t.saturating_duration_since(self.link.now()));
        let most = if self.woken.is_some() { WOKEN_WITHIN } else { Duration::from_millis(50) };
        let wait = wait.clamp(Duration::from_micros(50), most);
        let r = self.link.recv_wait(&mut self.buf, wait).map_err(|e| self.link_err("cannot receive", e))?;
        if r.is_some_and(|r| r.batched) {
            self.stats.gro_batches += 1;
        }
        self.stashed = r;
        Ok(())
    }

    fn keepalive(&self) -> Option<Duration> {
        // Pings start a quarter of the timeout into a silence: answering
        // sixteen times per timeout leaves a peer a dozen looks to find us.
        Some(self.cfg.peer_timeout / 16)
    }

    fn report(&self) -> Option<String> {
        let s = self.stats();
        Some(format!(
            "{} datagrams: {} sent, {} received; {} retransmitted after {} timeouts; NACKs {} sent {} received; {} standalone ACKs; {} duplicates and {} out-of-order discarded; {} messages direct, {} reassembled; dropped: {} truncated, {} foreign, {} other job, {} unknown sender, {} corrupt, {} malformed ({} bogus ACK/NACK), {} unauthenticated; goodbyes: {} sent, {} peers left without one; pings: {} sent, {} answered; offload: {} GSO sends, {} GRO batches, {} GSO refusals; injected faults: {} lost, {} duplicated, {} reordered, {} corrupted",
            L::NAME, s.sent, s.received, s.retransmits, s.timeouts, s.nacks_sent, s.nacks_received, s.acks_sent, s.duplicates,
            s.out_of_order, s.direct, s.reassembled, s.rejected[0], s.rejected[1], s.rejected[2], s.rejected[3],
            s.rejected[4], s.rejected[5], s.bogus_acks, s.rejected[6], s.byes_sent, s.left_without_bye, s.pings_sent, s.pings_answered, s.gso_sends, s.gro_batches, s.gso_fallbacks, s.injected[0], s.injected[1], s.injected[2], s.injected[3]
        ))
    }

    fn finalize(&mut self) -> Result<(), TransportError> {
        // Our datagrams must all be acknowledged before we leave...
        let mut sink = |_: u32, _: &[u8]| {};
        while !self.all_acked() {
            self.poll(&mut sink)?;
            if !self.all_acked() {
                self.idle()?;
            }
        }
        // ...then goodbyes (seed 001 has no connection teardown; this is
        // ours): we leave once every peer has said that it needs nothing
        // more from us (its goodbye: all its datagrams acknowledged) and
        // knows the same of us. Until then we keep acknowledging its
        // retransmissions, so a lost final ACK is repeated, and repeat our
        // goodbye with backoff. The last confirmation can always be lost;
        // a peer whose goodbye we hold is then let go after `linger` of
        // silence, and one that never said goodbye after `goodbye_wait`.
        self.leaving = true;
        let now = self.link.now();
        for p in 0..self.size {
            // In a job with room for spawned processes, only the peers data
            // went to or came from: the others may have left long ago.
            let d = p as usize;
            let traffic = self.tx[d].next_seq > 0 || self.rx[d].expected > 0;
            if p == self.rank || !self.link.reachable(p) || !(traffic || self.link.watched_from_start(p)) {
                continue;
            }
            let rx = &mut self.rx[p as usize];
            rx.heard = rx.heard.max(now);
            rx.bye_rto = self.cfg.rto_min;
            rx.bye_next = Some(now + self.cfg.rto_min);
            self.goodbye(p)?;
        }
        loop {
            self.poll(&mut sink)?;
            let now = self.link.now();
            let mut done = true;
            for p in 0..self.size {
                let d = p as usize;
                if p == self.rank || self.rx[d].bye_next.is_none() {
                    continue;
                }
                let (ok, silent) = self.farewell_done(d, now);
                if ok {
                    self.rx[d].bye_next = None;
                    self.stats.left_without_bye += silent as u64;
                    continue;
                }
                done = false;
                if self.rx[d].bye_next.is_some_and(|t| now >= t) {
                    let rx = &mut self.rx[d];
                    rx.bye_rto = (rx.bye_rto * 2).min(self.cfg.rto_max);
                    rx.bye_next = Some(now + rx.bye_rto);
                    self.goodbye(p)?;
                }
            }
            if done {
                return self.link.leave().map_err(|e| self.link_err("cannot leave the job", e));
            }
            self.idle()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wire::{datagram, flag, Header, HEADER};
    use super::*;

    /// Rank 1 as a real transport; rank 0 is a raw socket at the address
    /// rank 1 expects, so that the test can forge anything rank 0 could send.
    fn pair() -> (UdpTransport, std::net::UdpSocket, SocketAddr) {
        let cfg = UdpConfig::default();
        let raw = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let sock = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), &cfg).unwrap();
        let me = sock.local_addr().unwrap();
        let t = UdpTransport::new(sock, 1, vec![raw.local_addr().unwrap(), me], 7, cfg, None).unwrap();
        (t, raw, me)
    }

    fn data(seq: u32, payload: &[u8]) -> Header {
        Header {
            flags: flag::DATA,
            job: 7,
            src: 0,
            dst: 1,
            seq,
            ack: 0,
            msg_len: payload.len() as u32,
            frag: 0,
            nfrags: 1,
            payload: payload.len() as u32,
        }
    }

    /// `k` real transports in `k` threads with `faults`: each sends `n`
    /// messages to every other, receives theirs and finalizes.
    fn exchange_and_finalize(
        k: usize,
        faults: Option<FaultSpec>,
        n: usize,
        len: usize,
        cfg: UdpConfig,
    ) -> Vec<Result<UdpStats, TransportError>> {
        let socks: Vec<_> = (0..k).map(|_| UdpTransport::bind("127.0.0.1:0".parse().unwrap(), &cfg).unwrap()).collect();
        let addrs: Vec<SocketAddr> = socks.iter().map(|s| s.local_addr().unwrap()).collect();
        let handles: Vec<_> = socks
            .into_iter()
            .enumerate()
            .map(|(rank, sock)| {
                let (cfg, addrs, faults) = (cfg.clone(), addrs.clone(), faults.clone());
                std::thread::spawn(move || -> Result<UdpStats, TransportError> {
                    let me = rank as u32;
                    let mut t = UdpTransport::new(sock, me, addrs, 9, cfg, faults)?;
                    let mut sent = vec![0; k];
                    let mut got = vec![0; k];
                    sent[rank] = n;
                    got[rank] = n;
                    while sent.iter().chain(&got).any(|&c| c < n) {
                        for (p, count) in sent.iter_mut().enumerate() {
                            while *count < n && t.try_send(p as u32, &[&vec![me as u8; len]])? {
                                *count += 1;
                            }
                        }
                        t.poll(&mut |src, m| {
                            assert_eq!(m, &vec![src as u8; len][..]);
                            got[src as usize] += 1;
                        })?;
                        t.idle()?;
                    }
                    t.finalize()?;
                    Ok(t.stats())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    /// Poll until `want` messages arrived or a bound of polls passed.
    fn drain(t: &mut UdpTransport, want: usize) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        for _ in 0..2000 {
            t.poll(&mut |_, m| got.push(m.to_vec())).unwrap();
            if got.len() >= want {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        got
    }

    /// Authenticated mode (issue 8): a datagram with a valid CRC is still
    /// dropped and counted unless it carries a tag made with the job's key.
    #[test]
    fn without_the_jobs_key_a_valid_datagram_is_dropped() {
        let key = AuthKey([7u8; 32]);
        let cfg = UdpConfig { auth: Some(key.clone()), ..Default::default() };
        let raw = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let sock = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), &cfg).unwrap();
        let me = sock.local_addr().unwrap();
        let mut t = UdpTransport::new(sock, 1, vec![raw.local_addr().unwrap(), me], 7, cfg, None).unwrap();
        let tagged = |h: Header, k: &AuthKey| {
            let mut d = datagram(Header { flags: h.flags | flag::AUTH, ..h }, b"data");
            let tag = k.tag(&[&d]);
            d.extend_from_slice(&tag);
            d
        };
        // Spoofed with a valid CRC, no tag; a tag made with another key; a
        // right tag on altered bytes.
        raw.send_to(&datagram(data(0, b"data"), b"data"), me).unwrap();
        raw.send_to(&tagged(data(0, b"data"), &AuthKey([8u8; 32])), me).unwrap();
        let mut altered = tagged(data(0, b"data"), &key);
        altered[HEADER] ^= 1;
        seal_parts(&mut altered[..HEADER + 4], &[]);
        raw.send_to(&altered, me).unwrap();
        for _ in 0..200 {
            if t.stats().rejected[6] >= 3 {
                break;
            }
            assert!(drain(&mut t, 0).is_empty());
        }
        assert_eq!(t.stats().rejected[6], 3, "{:?}", t.stats());
        raw.send_to(&tagged(data(0, b"data"), &key), me).unwrap();
        assert_eq!(drain(&mut t, 1), vec![b"data".to_vec()]);
        // What it sends is tagged with the key.
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        t.try_send(0, &[b"back"]).unwrap();
        let mut b = [0u8; 256];
        let (n, _) = raw.recv_from(&mut b).unwrap();
        assert!(key.verify(&b[..n]) && !AuthKey([8u8; 32]).verify(&b[..n]));
        // A rank without a key drops tagged datagrams.
        let (mut plain, raw2, me2) = pair();
        raw2.send_to(&tagged(data(0, b"data"), &key), me2).unwrap();
        for _ in 0..200 {
            if plain.stats().rejected[6] >= 1 {
                break;
            }
            assert!(drain(&mut plain, 0).is_empty());
        }
        assert_eq!(plain.stats().rejected[6], 1);
    }

    /// Messages of many datagrams leave in GSO calls (where the kernel has
    /// UDP_SEGMENT), arrive intact and in order (each is checked), and the
    /// batches hold tags in authenticated mode too.
    #[test]
    fn fragmented_messages_go_out_in_gso_batches() {
        for auth in [None, Some(AuthKey([3u8; 32]))] {
            let cfg = UdpConfig { mtu: 1000, window: 64, auth, ..Default::default() };
            let stats: Vec<_> =
                exchange_and_finalize(3, None, 30, 20_000, cfg).into_iter().map(|r| r.unwrap()).collect();
            let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            if io::enable(&probe, true, false).gso {
                assert!(stats.iter().all(|s| s.gso_sends > 0), "{stats:?}");
            }
        }
    }

    /// Issue 8: an ACK for a sequence number never sent is discarded and
    /// counted; the datagrams it claims to acknowledge stay queued for
    /// retransmission.
    #[test]
    fn an_ack_for_data_never_sent_is_not_believed() {
        let (mut t, raw, me) = pair();
        assert!(t.try_send(0, &[b"hello"]).unwrap());
        let forged = Header { flags: flag::ACK, ack: 1000, msg_len: 0, payload: 0, ..data(0, b"") };
        raw.send_to(&datagram(forged, b""), me).unwrap();
        let nack = Header { flags: flag::NACK, seq: 500, msg_len: 0, payload: 0, ..data(0, b"") };
        raw.send_to(&datagram(nack, b""), me).unwrap();
        drain(&mut t, 0);
        for _ in 0..200 {
            if t.stats().bogus_acks >= 2 {
                break;
            }
            drain(&mut t, 0);
        }
        assert_eq!(t.stats().bogus_acks, 2);
        assert_eq!(t.tx[0].unacked.len(), 1, "the forged ACK freed a datagram the peer never received");
        // A true ACK is still believed.
        let ack = Header { flags: flag::ACK, ack: 1, msg_len: 0, payload: 0, ..data(0, b"") };
        raw.send_to(&datagram(ack, b""), me).unwrap();
        for _ in 0..200 {
            drain(&mut t, 0);
            if t.tx[0].unacked.is_empty() {
                break;
            }
        }
        assert!(t.tx[0].unacked.is_empty());
    }

    /// A lent buffer is sent and resent from the caller's memory until
    /// acknowledged; `unlend` makes the transport copy it, after which the
    /// caller may overwrite it and a retransmission still carries the
    /// original bytes.
    #[test]
    fn a_lent_buffer_is_held_until_acknowledged_and_copied_by_unlend() {
        let (mut t, raw, me) = pair();
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = vec![0x5Au8; 3000];
        // SAFETY: `buf` is not written before unlend below.
        let token = match unsafe { t.try_send_lent(0, b"hdr", &buf).unwrap() } {
            Lent::Held(token) => token,
            other => panic!("a 3000-byte body was not held: {other:?}"),
        };
        assert!(!t.lent_released(0, token));
        let mut d = vec![0u8; 70_000];
        let n = raw.recv(&mut d).unwrap();
        assert_eq!(&d[n - 3000..n], &buf[..]);
        t.unlend(0);
        buf.fill(0);
        // The retransmission (no ACK came) carries the copy.
        let mut resent = None;
        for _ in 0..2000 {
            drain(&mut t, 0);
            raw.set_nonblocking(true).unwrap();
            if let Ok(n) = raw.recv(&mut d) {
                resent = Some(d[n - 3000..n].to_vec());
                break;
            }
            raw.set_nonblocking(false).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        let resent = resent.expect("never retransmitted");
        assert!(resent.iter().all(|b| *b == 0x5A), "the retransmission did not carry the original bytes");
        let ack = Header { flags: flag::ACK, ack: 1, msg_len: 0, payload: 0, ..data(0, b"") };
        raw.send_to(&datagram(ack, b""), me).unwrap();
        for _ in 0..200 {
            drain(&mut t, 0);
            if t.lent_released(0, token) {
                break;
            }
        }
        assert!(t.lent_released(0, token), "the ACK did not release the lent buffer");
    }

    /// The window follows the datagram size: about 256 KiB in flight,
    /// never fewer than 64 datagrams nor more than 512.
    #[test]
    fn the_window_keeps_about_a_quarter_mebibyte_in_flight() {
        assert_eq!(UdpConfig::window_for(1416), 185); // 1,500-byte veth
        assert_eq!(UdpConfig::window_for(1024), 256); // the paper's datagrams
        assert_eq!(UdpConfig::window_for(64_000), 64); // loopback
        assert_eq!(UdpConfig::window_for(64), 512);
    }

    /// Issue 8: a lent message of several fragments goes out from the
    /// caller's buffer (every fragment's bulk part points into it: no
    /// copy), and the buffer is released only when the last fragment is
    /// acknowledged.
    #[test]
    fn a_lent_message_of_several_fragments_is_sent_from_the_callers_buffer() {
        let (mut t, raw, me) = pair();
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        t.cfg.mtu = 1000;
        let buf: Vec<u8> = (0..3500u32).map(|i| (i * 7 % 251) as u8).collect();
        // SAFETY: `buf` is neither written nor freed before the end of the test.
        let token = match unsafe { t.try_send_lent(0, b"hdr", &buf).unwrap() } {
            Lent::Held(token) => token,
            other => panic!("a 4-fragment body was not held: {other:?}"),
        };
        let range = buf.as_ptr_range();
        let bodies: Vec<(*const u8, usize)> = (t.tx[0].unacked.iter().chain(&t.tx[0].queued))
            .map(|s| match &s.body {
                Some(Body::Lent { ptr, len }) => (*ptr, *len),
                _ => panic!("a fragment holds a copy"),
            })
            .collect();
        assert_eq!(bodies.iter().map(|b| b.1).collect::<Vec<_>>(), [997, 1000, 1000, 503]);
        assert!(bodies.iter().all(|&(p, n)| range.contains(&p) && p.wrapping_add(n) <= range.end));
        // What arrives is the header then the buffer, in order.
        let mut got = Vec::new();
        let mut d = vec![0u8; 70_000];
        for _ in 0..4 {
            let n = raw.recv(&mut d).unwrap();
            got.extend_from_slice(&d[HEADER..n]);
        }
        assert_eq!(&got[..3], b"hdr");
        assert_eq!(&got[3..], &buf[..]);
        for (ack, released) in [(3, false), (4, true)] {
            let h = Header { flags: flag::ACK, ack, msg_len: 0, payload: 0, ..data(0, b"") };
            raw.send_to(&datagram(h, b""), me).unwrap();
            for _ in 0..200 {
                drain(&mut t, 0);
                if t.lent_released(0, token) || t.tx[0].acked_total == u64::from(ack) {
                    break;
                }
            }
            assert_eq!(t.lent_released(0, token), released, "after an ACK of {ack} of 4 fragments");
        }
    }

    /// Issue 8: a forged first fragment of an absurd message (65535
    /// fragments, 4 GB) with the next sequence number is refused without
    /// consuming that number, so the real message that follows arrives.
    #[test]
    fn a_forged_fragment_cannot_swallow_the_real_message() {
        let (mut t, raw, me) = pair();
        let forged = Header { msg_len: u32::MAX, nfrags: 65535, frag: 0, ..data(0, b"junk") };
        raw.send_to(&datagram(forged, b"junk"), me).unwrap();
        // A middle fragment out of order, and one longer than its message.
        let stray = Header { msg_len: 8, nfrags: 2, frag: 1, ..data(0, b"junk") };
        raw.send_to(&datagram(stray, b"junk"), me).unwrap();
        let long = Header { msg_len: 2, nfrags: 2, frag: 0, ..data(0, b"junk") };
        raw.send_to(&datagram(long, b"junk"), me).unwrap();
        raw.send_to(&datagram(data(0, b"real"), b"real"), me).unwrap();
        let got = drain(&mut t, 1);
        assert_eq!(got, vec![b"real".to_vec()]);
        assert!(t.stats().rejected[5] >= 3, "{:?}", t.stats());
        assert!(t.rx[0].staging.capacity() < 1 << 20, "the forged length was allocated");
    }

    /// Send `ds` from the raw peer and give loopback time to queue them all
    /// in the transport's socket.
    fn queue_all(raw: &std::net::UdpSocket, me: SocketAddr, ds: &[Vec<u8>]) {
        for d in ds {
            raw.send_to(d, me).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    /// Latency: once a message is delivered, `poll` returns instead of
    /// asking the socket again (that receive would find nothing in a
    /// ping-pong and delay the reply by a system call). Two queued messages
    /// take two polls.
    #[test]
    fn poll_hands_over_a_message_before_receiving_again() {
        let (mut t, raw, me) = pair();
        queue_all(&raw, me, &[datagram(data(0, b"one"), b"one"), datagram(data(1, b"two"), b"two")]);
        let mut got = Vec::new();
        assert_eq!(t.poll(&mut |_, m| got.push(m.to_vec())).unwrap(), 1);
        assert_eq!(got, vec![b"one".to_vec()]);
        assert_eq!(t.poll(&mut |_, m| got.push(m.to_vec())).unwrap(), 1);
        assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec()]);
    }

    /// Bandwidth: half a window of datagrams owed is acknowledged at once,
    /// in the middle of a batch, not after the rest of it, so the sender's
    /// window reopens early. A 40-fragment message: the first ACK says 32.
    #[test]
    fn half_a_window_is_acknowledged_in_the_middle_of_a_batch() {
        let (mut t, raw, me) = pair();
        let half = t.cfg.window.div_ceil(2) as u32;
        let n = half + 8;
        let frags: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let h = Header { msg_len: 4 * n, frag: i as u16, nfrags: n as u16, payload: 4, ..data(i, b"") };
                datagram(h, &i.to_le_bytes())
            })
            .collect();
        queue_all(&raw, me, &frags);
        let got = drain(&mut t, 1);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0], (0..n).flat_map(u32::to_le_bytes).collect::<Vec<u8>>());
        raw.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 2048];
        let (len, _) = raw.recv_from(&mut b).unwrap();
        let h = Header::parse(&b[..len], 7, 0, 2).unwrap();
        assert!(h.flags & flag::ACK != 0, "{h:?}");
        assert_eq!(h.ack, half, "the first ACK comes after half a window, not after the batch");
    }
}
