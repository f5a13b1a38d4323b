//! A transport per kind of peer (issue 49, item 9), as MPICH CH4 picks
//! shared memory or the network for each operation by "is the peer
//! local": a rank of a job spread over hosts talks through shared memory
//! ([`ShmTransport`]) with the ranks of its host and through the datagram
//! protocol ([`UdpTransport`]) with the others.
//!
//! - **Order.** A peer is served by one transport for the whole job, so
//!   the order of the messages to it is that transport's.
//! - **Sizes.** The engine sees the smaller of the two transports' largest
//!   message and eager limit.
//! - **Waiting.** A rank with nothing to do spins on both; then it sleeps
//!   on its socket (as a UDP rank does), marked asleep in its shared-memory
//!   file, and a peer of its host that writes to it then sends it an empty
//!   datagram ([`UdpTransport::ring`]) instead of waking a futex.
//! - **Liveness and leaving** are the datagram protocol's for every peer
//!   (it pings the ranks of this host too, and they answer), and shared
//!   memory notices a peer of this host whose process is gone.

use std::ops::Range;
use std::sync::Arc;

use super::ShmTransport;
use crate::backend::udp::{Beside, UdpTransport};
use crate::error::TransportError;
use crate::transport::{Arrival, Caps, Lent, Transport, Waker};

/// One rank: shared memory with its host's ranks, UDP with the others.
pub struct PerPeer {
    near: ShmTransport,
    far: UdpTransport,
    caps: Caps,
    /// Polls since the socket was last looked at.
    far_skipped: u32,
    /// The last poll that delivered anything found it on the socket only:
    /// the rank talks with other hosts now, and looks at the socket first.
    far_first: bool,
}

/// How many polls (and spins of a wait) may pass before the socket is
/// looked at again, while the rank's traffic is with its host: each
/// look is a system call, about twice a whole message through shared
/// memory; the datagram protocol's timers and acknowledgements still run
/// within a few passes.
const FAR_EVERY: u32 = 16;

impl PerPeer {
    /// Join the two transports of one rank; `near` serves the ranks of its
    /// host (its [`ShmTransport::serves`]), `far` every other.
    pub fn new(mut near: ShmTransport, far: UdpTransport) -> Result<PerPeer, TransportError> {
        if near.rank() != far.rank() || near.size() != far.size() {
            return Err(TransportError::Config(format!(
                "shared memory is rank {} of {} and UDP rank {} of {}: not one job",
                near.rank(),
                near.size(),
                far.rank(),
                far.size()
            )));
        }
        near.wake_through_other();
        let (a, b) = (near.caps(), far.caps());
        let caps = Caps {
            max_message: a.max_message.min(b.max_message),
            eager_threshold: a.eager_threshold.min(b.eager_threshold),
        };
        Ok(PerPeer { near, far, caps, far_skipped: 0, far_first: false })
    }

    /// Whether this poll looks at the socket: while the traffic is with
    /// other hosts, when a wait saw a datagram arrive, and otherwise every
    /// [`FAR_EVERY`] polls.
    fn far_due(&mut self) -> bool {
        if self.far_first || self.far.has_received() || self.far_skipped + 1 >= FAR_EVERY {
            self.far_skipped = 0;
            return true;
        }
        self.far_skipped += 1;
        false
    }

    /// A poll delivered `near` messages from shared memory and `far` from
    /// the socket: note which side the traffic is on; the total.
    fn delivered(&mut self, near: usize, far: usize) -> usize {
        if near > 0 || far > 0 {
            self.far_first = near == 0;
        }
        near + far
    }

    /// Wake, through their sockets, the peers of this host that shared
    /// memory found asleep.
    fn ring_bells(&mut self) -> Result<(), TransportError> {
        for dest in self.near.take_bells() {
            self.far.ring(dest)?;
        }
        Ok(())
    }
}

/// Shared memory as the datagram protocol waits beside it, and how many
/// spins look at the socket once.
struct Near<'a>(&'a ShmTransport, u32);

impl Beside for Near<'_> {
    fn socket_every(&self) -> u32 {
        self.1
    }
    fn ready(&mut self) -> bool {
        self.0.ready()
    }
    fn going_to_sleep(&mut self) -> bool {
        self.0.going_to_sleep()
    }
}

/// Ends a wait of another thread in either transport.
struct BothWakers(Vec<Arc<dyn Waker>>);

impl Waker for BothWakers {
    fn wake(&self) {
        self.0.iter().for_each(|w| w.wake());
    }
    fn arm(&self) {
        self.0.iter().for_each(|w| w.arm());
    }
}

impl Transport for PerPeer {
    fn name(&self) -> &'static str {
        self.far.name()
    }

    fn rank(&self) -> u32 {
        self.far.rank()
    }

    fn size(&self) -> u32 {
        self.far.size()
    }

    fn caps(&self) -> Caps {
        self.caps
    }

    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError> {
        if !self.near.serves(dest) {
            return self.far.try_send(dest, parts);
        }
        let sent = self.near.try_send(dest, parts)?;
        self.ring_bells()?;
        Ok(sent)
    }

    fn try_send_shared(
        &mut self,
        dest: u32,
        header: &[u8],
        data: &Arc<Vec<u8>>,
        range: Range<usize>,
    ) -> Result<bool, TransportError> {
        if !self.near.serves(dest) {
            return self.far.try_send_shared(dest, header, data, range);
        }
        let sent = self.near.try_send_shared(dest, header, data, range)?;
        self.ring_bells()?;
        Ok(sent)
    }

    unsafe fn try_send_lent(&mut self, dest: u32, header: &[u8], data: &[u8]) -> Result<Lent, TransportError> {
        if !self.near.serves(dest) {
            // SAFETY: the caller keeps `data` valid and unchanged until
            // `lent_released(dest, token)`, which goes to the same
            // transport (`far` serves `dest` for the whole job).
            return unsafe { self.far.try_send_lent(dest, header, data) };
        }
        // SAFETY: as above, with `near` serving `dest`.
        let lent = unsafe { self.near.try_send_lent(dest, header, data) }?;
        self.ring_bells()?;
        Ok(lent)
    }

    fn lent_released(&self, dest: u32, token: u64) -> bool {
        if self.near.serves(dest) {
            self.near.lent_released(dest, token)
        } else {
            self.far.lent_released(dest, token)
        }
    }

    fn unlend(&mut self, dest: u32) {
        if self.near.serves(dest) {
            self.near.unlend(dest)
        } else {
            self.far.unlend(dest)
        }
    }

    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError> {
        let n = self.near.poll(sink)?;
        self.ring_bells()?;
        if !self.far_due() {
            return Ok(self.delivered(n, 0));
        }
        let m = self.far.poll(sink)?;
        Ok(self.delivered(n, m))
    }

    fn poll_arrivals(&mut self, sink: &mut dyn FnMut(u32, &mut dyn Arrival)) -> Result<usize, TransportError> {
        let n = self.near.poll_arrivals(sink)?;
        self.ring_bells()?;
        if !self.far_due() {
            return Ok(self.delivered(n, 0));
        }
        let m = self.far.poll_arrivals(sink)?;
        Ok(self.delivered(n, m))
    }

    fn idle(&mut self) -> Result<(), TransportError> {
        let every = if self.far_first { 1 } else { FAR_EVERY };
        let waited = self.far.idle_beside(&mut Near(&self.near, every));
        let awake = self.near.awake();
        waited.and(awake)
    }

    fn keepalive(&self) -> Option<std::time::Duration> {
        self.far.keepalive()
    }

    fn report(&self) -> Option<String> {
        let parts: Vec<String> = [self.near.report(), self.far.report()].into_iter().flatten().collect();
        Some(parts.join("\n"))
    }

    fn finalize(&mut self) -> Result<(), TransportError> {
        let near = self.near.finalize();
        // The datagram protocol waits for every peer's goodbye, this
        // host's too: they poll their sockets until they leave.
        let far = self.far.finalize();
        near.and(far)
    }

    fn waker(&mut self) -> Result<Option<Arc<dyn Waker>>, TransportError> {
        let wakers: Vec<Arc<dyn Waker>> = [self.near.waker()?, self.far.waker()?].into_iter().flatten().collect();
        Ok(Some(Arc::new(BothWakers(wakers))))
    }
}
