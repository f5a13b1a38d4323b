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
pub(crate) mod config;
pub mod faults;
pub mod io;
pub mod link;
mod protocol;
#[cfg(test)]
mod protocol_tests;
mod transport;
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
use self::wire::{flag, seal, seal_parts, seq_lt, Header, Reject, HEADER, TAG};
use crate::error::TransportError;
use crate::transport::{Caps, Lent, Transport};

pub use self::config::{load_key, UdpConfig, AUTH_ENV, IN_FLIGHT, KEY_FILE, KEY_FILE_ENV};
pub use self::transport::Beside;

/// Once another thread may end a wait ([`Transport::waker`]), the longest
/// a wait sleeps in the kernel before it looks whether one did: the
/// longest a thread entering the library waits for one that idles in it.
pub const WOKEN_WITHIN: Duration = Duration::from_millis(1);

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
    /// Empty datagrams sent to wake a peer of this host from its sleep on
    /// the socket (`backend::shm::per_peer`).
    pub bells_sent: u64,
    /// Empty datagrams received: a peer of this host woke this rank.
    pub bells: u64,
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

#[cfg(test)]
mod tests {
    use super::wire::{datagram, flag, AuthKey, Header, HEADER};
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
