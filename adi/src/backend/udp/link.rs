//! What the reliable datagram protocol needs from the network below it: send
//! a datagram to a rank, receive one and say which rank sent it. The UDP
//! socket ([`UdpLink`]) is one such link; DPDK ports are another
//! (`backend::dpdk`). The protocol above (sequence numbers, ACKs,
//! retransmission, reassembly, goodbyes, fault injection, authentication)
//! is written once for both.

use std::collections::HashMap;
use std::io::{self, ErrorKind, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::io as sockio;
use super::io::Offloads;

/// One receive: `len` bytes at the start of the buffer, from the rank
/// `from` (`None`: an address that is no rank of this job), made of
/// datagrams of `seg` bytes each (the last may be shorter; several only
/// when the link coalesced them, as UDP GRO does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Bytes received.
    pub len: usize,
    /// The sending rank, if the sender's address is one of the job's.
    pub from: Option<u32>,
    /// Size of each datagram in it.
    pub seg: usize,
    /// Whether the link coalesced several datagrams (GRO).
    pub batched: bool,
}

/// A datagram link between the ranks of a job.
pub trait Link: Send {
    /// Backend name for messages and `DN_STATS`.
    const NAME: &'static str;
    /// Send one datagram made of `parts` to rank `dest`. A full queue or a
    /// transient refusal is `Ok(())`: the protocol retransmits.
    fn send(&mut self, dest: u32, parts: &[IoSlice<'_>]) -> io::Result<()>;
    /// Send `parts` to `dest` as datagrams of `segment` bytes each in one
    /// call (GSO). Only called when [`Link::offloads`] has `gso`.
    fn send_segments(&mut self, dest: u32, parts: &[IoSlice<'_>], segment: u16) -> io::Result<usize> {
        let _ = (dest, parts, segment);
        Err(io::Error::from(ErrorKind::Unsupported))
    }
    /// Whether `rank` has an address (a rank of a job with room for
    /// spawned processes may not have started): one that has none gets no
    /// goodbye, and is waited for by nobody.
    fn reachable(&mut self, rank: u32) -> bool {
        let _ = rank;
        true
    }
    /// Whether `rank` is watched for liveness from the start, before any
    /// datagram went either way: every rank of a job of fixed size; in a
    /// job with room for spawned processes none is (ranks come and go:
    /// one is watched once data went to or came from it).
    fn watched_from_start(&self, rank: u32) -> bool {
        let _ = rank;
        true
    }
    /// What the link can batch.
    fn offloads(&self) -> Offloads {
        Offloads::default()
    }
    /// Stop using GSO (a send with it failed).
    fn disable_gso(&mut self) {}
    /// Whether a rank waiting for traffic should give its core away
    /// between polls (`sched_yield`) instead of spinning: true when the
    /// frames it waits for are moved by another process of this host that
    /// may need the core (the DPDK polling process).
    fn yield_when_idle(&self) -> bool {
        false
    }
    /// Receive into `buf` without blocking; `None` when nothing is there.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>>;
    /// Receive into `buf`, waiting up to `wait` for something to arrive.
    fn recv_wait(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<Received>>;
    /// The receive buffer this link needs for datagrams of `mtu` payload bytes.
    fn recv_buffer(&self, datagram: usize) -> usize {
        datagram + 1
    }
    /// A description of `rank`'s address, for error messages.
    fn describe(&self, rank: u32) -> String;
    /// The protocol's clock: every timer (retransmission, delayed ACK,
    /// peer loss, goodbyes) reads it here, so that a link can bring its
    /// own time. Real links use the host's monotonic clock; the test
    /// network's (`virtual_net`) advances only when every rank waits, so
    /// that the protocol's timing is exact and repeatable.
    fn now(&self) -> Instant {
        Instant::now()
    }
    /// Leave the job: called once, at the end of a clean finalize; the
    /// link is not used afterwards. A link whose rings are memory shared
    /// with other processes returns only once none of them touches those
    /// rings any more, so that this process's exit cannot pull the memory
    /// from under a peer that still polls it.
    fn leave(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One UDP socket per rank (seed 001): every peer's datagrams arrive on it.
pub struct UdpLink {
    sock: UdpSocket,
    /// Every rank's address, `None` while unknown (a rank not yet spawned).
    peers: Vec<Option<SocketAddr>>,
    /// Where ranks that start later publish their addresses (the job
    /// directory of a job with room for spawned processes, MPI 4.1 §11.8).
    late: Option<std::path::PathBuf>,
    by_addr: HashMap<SocketAddr, u32>,
    offloads: Offloads,
    /// Connected to its one peer (this rank): sends name no address and
    /// receives come from it.
    connected_to: Option<u32>,
    blocking: bool,
}

impl UdpLink {
    /// A link over `sock` for `rank` of a job whose ranks listen at `peers`:
    /// turns on the offloads the kernel has and `gso`/`gro` allow, and
    /// connects the socket when there is one peer and `connect` allows.
    ///
    /// A rank whose address is `None` is looked up in `late` (see
    /// [`super::addr::lookup`]) when a datagram goes to it or comes from an
    /// address not yet known.
    pub fn new(
        sock: UdpSocket,
        rank: u32,
        peers: Vec<Option<SocketAddr>>,
        late: Option<std::path::PathBuf>,
        gso: bool,
        gro: bool,
        connect: bool,
    ) -> UdpLink {
        let offloads = sockio::enable(&sock, gso, gro);
        let own = peers.get(rank as usize).copied().flatten();
        let other = 1 - rank.min(1);
        let theirs = peers.get(other as usize).copied().flatten();
        let connected = connect
            && late.is_none()
            && peers.len() == 2
            && own.is_some_and(|own| theirs.is_some_and(|t| t != own))
            && theirs.is_some_and(|t| sock.connect(t).is_ok());
        let by_addr = peers.iter().enumerate().filter_map(|(r, a)| a.map(|a| (a, r as u32))).collect();
        UdpLink { sock, peers, late, by_addr, offloads, connected_to: connected.then_some(other), blocking: false }
    }

    /// `dest`'s address, looked up in the job directory the first time if
    /// it started after this rank; `None` while it has not published one.
    fn addr(&mut self, dest: u32) -> Option<SocketAddr> {
        let known = *self.peers.get(dest as usize)?;
        known.or_else(|| self.learn(dest))
    }

    /// Look `rank`'s published address up ([`super::addr::lookup`]).
    fn learn(&mut self, rank: u32) -> Option<SocketAddr> {
        let a = super::addr::lookup(self.late.as_deref()?, rank)?;
        self.peers[rank as usize] = Some(a);
        self.by_addr.insert(a, rank);
        Some(a)
    }

    /// The rank a datagram from `from` comes from: known, or one of the
    /// ranks started since that has published its address by now.
    fn sender(&mut self, from: SocketAddr) -> Option<u32> {
        if let Some(r) = self.by_addr.get(&from) {
            return Some(*r);
        }
        self.late.as_ref()?;
        let unknown: Vec<u32> = (0..self.peers.len() as u32).filter(|r| self.peers[*r as usize].is_none()).collect();
        unknown.into_iter().find(|r| self.learn(*r) == Some(from))
    }

    fn set_blocking(&mut self, on: bool) {
        if self.blocking != on && self.sock.set_nonblocking(!on).is_ok() {
            self.blocking = on;
        }
    }

    fn recv_call(&mut self, buf: &mut [u8]) -> io::Result<Received> {
        // Connected, the socket takes datagrams from its peer only: the
        // kernel need not write the sender's address back (a receive
        // without it is the call TCP's busy-polled read makes).
        let sender = self.connected_to.is_none();
        let (len, from, seg) = match (self.offloads.gro, sender) {
            (true, _) => sockio::recv(&self.sock, buf, sender)?,
            (false, true) => {
                let (n, from) = self.sock.recv_from(buf)?;
                (n, Some(from), None)
            }
            (false, false) => (self.sock.recv(buf)?, None, None),
        };
        Ok(Received {
            len,
            from: match from {
                Some(from) => self.sender(from),
                None => self.connected_to,
            },
            seg: seg.unwrap_or(len).max(1),
            batched: seg.is_some(),
        })
    }
}

/// Errors that mean "nothing now" on a UDP socket: an empty queue, a
/// timeout, a signal, or an ICMP error left by an earlier datagram.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted | ErrorKind::ConnectionRefused
    )
}

impl Link for UdpLink {
    const NAME: &'static str = "udp";

    fn send(&mut self, dest: u32, parts: &[IoSlice<'_>]) -> io::Result<()> {
        // A rank not started yet: the datagram is lost, and retransmitted
        // until it is there (or the peer timeout names it).
        let Some(addr) = self.addr(dest) else { return Ok(()) };
        self.set_blocking(false);
        loop {
            let r = if self.connected_to.is_some() {
                // Naming the address would make the kernel look the route up again.
                SockRef::from(&self.sock).send_vectored(parts)
            } else if parts.len() == 1 {
                self.sock.send_to(&parts[0], addr)
            } else {
                SockRef::from(&self.sock).send_to_vectored(parts, &addr.into())
            };
            match r {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // A full socket buffer or an ICMP error from an earlier
                // datagram: the protocol recovers by retransmission.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::ConnectionRefused) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    fn send_segments(&mut self, dest: u32, parts: &[IoSlice<'_>], segment: u16) -> io::Result<usize> {
        let Some(addr) = self.addr(dest) else { return Ok(parts.iter().map(|p| p.len()).sum()) };
        let to = socket2::SockAddr::from(addr);
        self.set_blocking(false);
        loop {
            match sockio::send_segments(&self.sock, self.connected_to.is_none().then_some(&to), parts, segment) {
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }

    fn offloads(&self) -> Offloads {
        self.offloads
    }

    fn reachable(&mut self, rank: u32) -> bool {
        self.addr(rank).is_some()
    }

    fn watched_from_start(&self, _rank: u32) -> bool {
        self.late.is_none()
    }

    fn disable_gso(&mut self) {
        self.offloads.gso = false;
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        self.set_blocking(false);
        match self.recv_call(buf) {
            Ok(r) => Ok(Some(r)),
            Err(e) if transient(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn recv_wait(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<Received>> {
        self.set_blocking(true);
        let _ = self.sock.set_read_timeout(Some(wait.max(Duration::from_micros(1))));
        let r = self.recv_call(buf);
        self.set_blocking(false);
        match r {
            Ok(r) => Ok(Some(r)),
            Err(e) if transient(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn recv_buffer(&self, datagram: usize) -> usize {
        // GRO hands over up to a whole 64 KiB super-datagram.
        if self.offloads.gro {
            70_000
        } else {
            datagram + 1
        }
    }

    fn describe(&self, rank: u32) -> String {
        match self.peers.get(rank as usize) {
            Some(Some(a)) => a.to_string(),
            Some(None) => "(not started)".into(),
            None => "?".into(),
        }
    }
}
