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
//! abstract (no file) and vanish with the processes.
//!
//! Not yet: the dedicated polling process per node and af_packet between
//! namespaces (issue 10 continues).

use std::io::{self, IoSlice};
use std::time::Duration;

use super::udp::addr::env_num;
use super::udp::faults;
use super::udp::link::{Link, Received};
use super::udp::wire::{HEADER, TAG};
use super::udp::{DatagramTransport, UdpConfig};
use crate::error::TransportError;

/// EtherType of our frames (IEEE 802 local experimental 1).
pub const ETHERTYPE: u16 = 0x88B5;
/// Ethernet header bytes.
const ETH: usize = 14;
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
    let Ok(v) = std::env::var(FRAME_ENV) else { return Ok(DEFAULT_FRAME) };
    match v.trim().parse::<usize>() {
        Ok(n) if FRAME_RANGE.contains(&n) => Ok(n),
        _ => Err(cfg_err(format!(
            "{FRAME_ENV}={v:?}: give a frame size in bytes from {} to {}",
            FRAME_RANGE.start(),
            FRAME_RANGE.end()
        ))),
    }
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

/// The memif socket of the pair `a`, `b` of job `job` (abstract namespace).
pub fn memif_socket(job: u32, a: u32, b: u32) -> String {
    format!("/dn-memif-{job}-{}-{}", a.min(b), a.max(b))
}

/// The memif arguments of `rank`'s interface to `peer`, with `frame`-byte
/// buffers and 512 of them per ring (the protocol's window is 64).
pub fn memif_args(job: u32, rank: u32, peer: u32, frame: usize) -> String {
    let role = if rank < peer { "server" } else { "client" };
    format!("role={role},socket={},socket-abstract=yes,id=0,bsize={frame},rsize=9", memif_socket(job, rank, peer))
}

/// The protocol settings for DPDK: datagrams sized to one `frame`, no
/// kernel offloads, the rest from the environment.
pub fn config_from_env(frame: usize) -> Result<UdpConfig, TransportError> {
    let mut cfg = UdpConfig::from_env()?;
    cfg.mtu = frame - ETH - HEADER - TAG;
    cfg.max_message = UdpConfig::max_message_for(cfg.mtu);
    cfg.mtu_fixed = true;
    cfg.gso = false;
    cfg.gro = false;
    cfg.connect = false;
    Ok(cfg)
}

#[cfg(feature = "dpdk")]
pub use with_dpdk::DpdkLink;

#[cfg(not(feature = "dpdk"))]
/// The DPDK link (not in this build).
pub struct DpdkLink(());

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

/// Open the rank's transport from the environment `dnrun --backend dpdk` sets.
pub fn from_env() -> Result<DpdkTransport, TransportError> {
    available().map_err(|e| {
        cfg_err(format!("--backend dpdk: {e}. Install DPDK with scripts/setup.sh and rebuild, or use --backend udp"))
    })?;
    let num = |k: &str| -> Result<u32, TransportError> {
        let v = env_num(k)?;
        u32::try_from(v).map_err(|_| cfg_err(format!("{k}={v} is too large")))
    };
    let (rank, size, job) = (num("DN_RANK")?, num("DN_SIZE")?, num("DN_JOB_ID")?);
    if rank >= size {
        return Err(cfg_err(format!("DN_RANK={rank} is outside a job of {size} ranks")));
    }
    let frame = frame_from_env()?;
    let mut cfg = config_from_env(frame)?;
    let faults = faults::from_env()?;
    // Injected corruption must be caught by our own CRC over the whole payload.
    cfg.full_crc |= faults.is_some();
    let dir = std::env::var_os("DN_JOB_DIR")
        .map(std::path::PathBuf::from)
        .ok_or_else(|| cfg_err("DN_JOB_DIR is not set; start the job with dnrun".into()))?;
    let link = open_link(rank, size, job, frame, &dir)?;
    DatagramTransport::over(link, rank, size, job, cfg, faults)
}

#[cfg(not(feature = "dpdk"))]
fn open_link(_: u32, _: u32, _: u32, _: usize, _: &std::path::Path) -> Result<DpdkLink, TransportError> {
    Err(cfg_err("this build of adi has no `dpdk` feature".into()))
}

#[cfg(feature = "dpdk")]
fn open_link(rank: u32, size: u32, job: u32, frame: usize, dir: &std::path::Path) -> Result<DpdkLink, TransportError> {
    with_dpdk::DpdkLink::open(rank, size, job, frame, dir)
}

#[cfg(feature = "dpdk")]
mod with_dpdk {
    use super::*;
    use dpdk_sys::{eal_args, Eal, Mbuf, Mempool, Port, PortConfig};
    use std::collections::VecDeque;
    use std::time::Instant;

    /// How long start-up waits for the other ranks and the links.
    const START_TIMEOUT: Duration = Duration::from_secs(60);

    fn dpdk_err(what: &str, e: dpdk_sys::Error) -> TransportError {
        TransportError::Backend { backend: "dpdk", msg: format!("{what}: {e}") }
    }

    /// Per-peer memif ports of one rank.
    pub struct DpdkLink {
        _eal: Eal,
        /// Frame size (bytes, Ethernet header included).
        frame: usize,
        pool: &'static Mempool,
        /// The port to each rank (`None` for this rank).
        ports: Vec<Option<Port>>,
        /// Our interface's MAC towards each rank.
        macs: Vec<[u8; 6]>,
        /// Frames received and not yet handed over, with their sender.
        pending: VecDeque<(Mbuf, u32)>,
        /// Where the next receive poll starts (fairness among peers).
        next: usize,
        out: Vec<Mbuf>,
        rx: Vec<Mbuf>,
    }

    impl DpdkLink {
        /// Start the EAL and connect to every other rank of the job.
        pub fn open(
            rank: u32,
            size: u32,
            job: u32,
            frame: usize,
            dir: &std::path::Path,
        ) -> Result<DpdkLink, TransportError> {
            let servers: Vec<String> =
                ((rank + 1)..size).map(|p| format!("net_memif{p},{}", memif_args(job, rank, p, frame))).collect();
            // Buffers: a window's worth in flight and a burst pending per
            // peer, with room to spare; the EAL's memory follows.
            let buffers = 1023 + 256 * size;
            let mem = 48 + (buffers as usize * (frame + 512)).div_ceil(1 << 20) as u32;
            let args = eal_args("dn-rank", &format!("dn-{job}-{rank}"), mem, &servers);
            let eal = Eal::init(&args).map_err(|e| dpdk_err(&format!("cannot start DPDK ({})", args.join(" ")), e))?;
            // Within FRAME_RANGE, so the data room fits its 16 bits.
            let room = (frame + 128).min(u16::MAX as usize) as u16;
            let pool = Mempool::create(&eal, "dn_pool", buffers, room)
                .map_err(|e| dpdk_err("cannot create the packet pool", e))?;
            let cfg = PortConfig { rx_queues: 1, tx_queues: 1, descriptors: 512 };
            let mut ports: Vec<Option<Port>> = (0..size).map(|_| None).collect();
            for p in (rank + 1)..size {
                let port = Port::start(&eal, &format!("net_memif{p}"), pool, cfg)
                    .map_err(|e| dpdk_err(&format!("cannot start the interface to rank {p}"), e))?;
                ports[p as usize] = Some(port);
            }
            // Servers listen: say so, then connect to the lower ranks' servers.
            let mine = dir.join(format!("dpdk.{rank}"));
            std::fs::write(&mine, b"ready").map_err(|e| cfg_err(format!("cannot write {}: {e}", mine.display())))?;
            let deadline = Instant::now() + START_TIMEOUT;
            for p in 0..rank {
                let theirs = dir.join(format!("dpdk.{p}"));
                while !theirs.exists() {
                    if Instant::now() > deadline {
                        return Err(cfg_err(format!(
                            "rank {p} did not start its DPDK interfaces within {}s",
                            START_TIMEOUT.as_secs()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                let name = format!("net_memif{p}");
                eal.add_vdev(&name, &memif_args(job, rank, p, frame))
                    .map_err(|e| dpdk_err(&format!("cannot create the interface to rank {p}"), e))?;
                let port = Port::start(&eal, &name, pool, cfg)
                    .map_err(|e| dpdk_err(&format!("cannot start the interface to rank {p}"), e))?;
                ports[p as usize] = Some(port);
            }
            for (p, port) in ports.iter().enumerate() {
                let Some(port) = port else { continue };
                while !port.link_up() {
                    if Instant::now() > deadline {
                        return Err(TransportError::Backend {
                            backend: "dpdk",
                            msg: format!(
                                "the memif link to rank {p} did not come up within {}s (socket {})",
                                START_TIMEOUT.as_secs(),
                                memif_socket(job, rank, p as u32)
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            let macs = ports.iter().map(|p| p.as_ref().map_or([0; 6], Port::mac)).collect();
            Ok(DpdkLink {
                _eal: eal,
                frame,
                pool,
                ports,
                macs,
                pending: VecDeque::new(),
                next: 0,
                out: Vec::with_capacity(1),
                rx: Vec::with_capacity(32),
            })
        }

        /// Poll every port once (starting after the last one served).
        fn poll_ports(&mut self) {
            let n = self.ports.len();
            for k in 0..n {
                let p = (self.next + k) % n;
                let Some(port) = self.ports[p].as_mut() else { continue };
                if port.rx_burst(0, &mut self.rx, 32) > 0 {
                    self.pending.extend(self.rx.drain(..).map(|m| (m, p as u32)));
                }
            }
            self.next = (self.next + 1) % n.max(1);
        }
    }

    impl Drop for DpdkLink {
        fn drop(&mut self) {
            // Stopping a memif port whose peer has already gone can
            // deadlock with the EAL's interrupt thread (seen: a rank stuck
            // in a futex in finalize, 1 run in ~40), as rte_eal_cleanup can
            // crash in it. The process is leaving: the ports are left to
            // the exit, which closes their sockets and frees their memory.
            for p in self.ports.drain(..).flatten() {
                std::mem::forget(p);
            }
        }
    }

    impl Link for DpdkLink {
        const NAME: &'static str = "dpdk";

        fn send(&mut self, dest: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
            let len: usize = parts.iter().map(|p| p.len()).sum();
            let Some(mut m) = self.pool.alloc() else {
                // No buffer now: like a full socket buffer, the protocol resends.
                return Ok(());
            };
            let Some(frame) = m.append(ETH + len) else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a {len}-byte datagram does not fit a {}-byte frame", self.frame),
                ));
            };
            // Source: our interface to `dest`. Destination: broadcast, as
            // a memif pair has one receiver and peer addresses are not
            // exchanged yet (af_packet will need them).
            frame[..6].copy_from_slice(&[0xff; 6]);
            frame[6..12].copy_from_slice(&self.macs[dest as usize]);
            frame[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
            let mut at = ETH;
            for p in parts {
                frame[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            let port = self
                .ports
                .get_mut(dest as usize)
                .and_then(Option::as_mut)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no interface to rank {dest}")))?;
            self.out.push(m);
            // A full ring drops the frame after a few tries: the protocol resends.
            for _ in 0..8 {
                if port.tx_burst(0, &mut self.out) > 0 {
                    break;
                }
            }
            self.out.clear();
            Ok(())
        }

        fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
            if self.pending.is_empty() {
                self.poll_ports();
            }
            while let Some((m, from)) = self.pending.pop_front() {
                let data = m.data();
                if m.segments() != 1 || data.len() < ETH || data[12..14] != ETHERTYPE.to_be_bytes() {
                    // Not one of our frames: hand over nothing from it.
                    continue;
                }
                // As recv_from does: what fits. The buffer is one byte
                // longer than any datagram we send, so an oversized frame
                // shows as truncated and the protocol drops it.
                let body = &data[ETH..];
                let n = body.len().min(buf.len());
                buf[..n].copy_from_slice(&body[..n]);
                return Ok(Some(Received { len: n, from: Some(from), seg: n.max(1), batched: false }));
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

        fn describe(&self, rank: u32) -> String {
            format!("memif interface net_memif{rank}")
        }
    }
}
