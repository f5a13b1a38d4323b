//! The DPDK transport itself, built only with the `dpdk` feature: the EAL,
//! its ports and mempools, and the datagram protocol over them.

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
            format!(
                "the DPDK polling process of node {node} did not start (start the job with dnrun --dpdk-poller node)"
            )
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

    fn empty(eal: Eal, pool: &'static Mempool, frame: usize, job: u32, rank: u32, size: u32, what: String) -> DpdkLink {
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
        let h = Hello { job: self.job, rank: self.rank, size: self.size, knows_all: self.missing().next().is_none() };
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
    let pool =
        Mempool::create(&eal, "dn_pool", buffers, room).map_err(|e| dpdk_err("cannot create the packet pool", e))?;
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
