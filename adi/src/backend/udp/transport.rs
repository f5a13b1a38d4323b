//! The UDP backend as the engine sees it: [`Transport`] over the datagram
//! protocol.

use super::*;

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
            if len == 0 {
                // An empty datagram only woke this rank from its sleep on
                // the socket (a peer of its host, `Beside`).
                self.stats.bells += 1;
                continue;
            }
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
        self.idle_beside(&mut Alone)
    }

    fn keepalive(&self) -> Option<Duration> {
        // Pings start a quarter of the timeout into a silence: answering
        // sixteen times per timeout leaves a peer a dozen looks to find us.
        Some(self.cfg.peer_timeout / 16)
    }

    fn report(&self) -> Option<String> {
        let s = self.stats();
        Some(format!(
            "{} datagrams: {} sent, {} received; {} retransmitted after {} timeouts; NACKs {} sent {} received; {} standalone ACKs; {} duplicates and {} out-of-order discarded; {} messages direct, {} reassembled; dropped: {} truncated, {} foreign, {} other job, {} unknown sender, {} corrupt, {} malformed ({} bogus ACK/NACK), {} unauthenticated; goodbyes: {} sent, {} peers left without one; pings: {} sent, {} answered; offload: {} GSO sends, {} GRO batches, {} GSO refusals; injected faults: {} lost, {} duplicated, {} reordered, {} corrupted; wake-ups of this host's peers: {} sent, {} received",
            L::NAME, s.sent, s.received, s.retransmits, s.timeouts, s.nacks_sent, s.nacks_received, s.acks_sent, s.duplicates,
            s.out_of_order, s.direct, s.reassembled, s.rejected[0], s.rejected[1], s.rejected[2], s.rejected[3],
            s.rejected[4], s.rejected[5], s.bogus_acks, s.rejected[6], s.byes_sent, s.left_without_bye, s.pings_sent, s.pings_answered, s.gso_sends, s.gro_batches, s.gso_fallbacks, s.injected[0], s.injected[1], s.injected[2], s.injected[3], s.bells_sent, s.bells
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

/// Another transport a rank waits on beside the datagram protocol's
/// (shared memory with the ranks of its host: `backend::shm::per_peer`).
pub trait Beside {
    /// How many spins of the wait look at the socket once (each look is
    /// a system call of about half a microsecond).
    fn socket_every(&self) -> u32;
    /// Whether it has something to do (looked at while spinning).
    fn ready(&mut self) -> bool;
    /// A sleep on the socket is next: from now on its peers must wake this
    /// rank with a datagram ([`DatagramTransport::ring`]); whether it has
    /// something after all (then the rank does not sleep).
    fn going_to_sleep(&mut self) -> bool;
}

/// Nothing beside.
struct Alone;

impl Beside for Alone {
    fn socket_every(&self) -> u32 {
        1
    }
    fn ready(&mut self) -> bool {
        false
    }
    fn going_to_sleep(&mut self) -> bool {
        false
    }
}

impl<L: Link> DatagramTransport<L> {
    /// [`Transport::idle`], waiting on `other` too: it ends while
    /// spinning once `other` is ready, and does not sleep if `other`
    /// has something when told a sleep is next (then `other` must wake
    /// this rank with a [`DatagramTransport::ring`] from a peer).
    pub fn idle_beside(&mut self, other: &mut dyn Beside) -> Result<(), TransportError> {
        if self.stashed.is_some() {
            return Ok(());
        }
        let woken = |w: &Option<std::sync::Arc<crate::transport::FlagWaker>>| w.as_ref().is_some_and(|w| w.take());
        if woken(&self.woken) || other.ready() {
            return Ok(());
        }
        // Busy-poll first, as MPI libraries do...
        let start = self.link.now();
        let deadline = self.next_deadline();
        let yield_idle = self.link.yield_when_idle();
        // Beside shared memory, whose look costs a few loads, the socket
        // (a system call) may be asked only every few spins, so that a
        // message of this host is seen within a few loads' time.
        let every = other.socket_every().max(1);
        let mut spins = 0u32;
        while self.link.now().saturating_duration_since(start) < self.cfg.spin {
            spins = spins.wrapping_add(1);
            if spins % every == 0 {
                if let Some(x) = self.recv_one()? {
                    self.stashed = Some(x);
                    return Ok(());
                }
            }
            if deadline.is_some_and(|t| self.link.now() >= t) || woken(&self.woken) || other.ready() {
                return Ok(());
            }
            if yield_idle {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        // ...then sleep in the kernel until a datagram or the next timer.
        if other.going_to_sleep() {
            return Ok(());
        }
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

    /// Whether a wait received a datagram that no poll has handled yet.
    pub fn has_received(&self) -> bool {
        self.stashed.is_some()
    }

    /// Wake `dest` from a sleep on its socket: an empty datagram, which
    /// carries nothing and is dropped on arrival (see [`Beside`]).
    pub fn ring(&mut self, dest: u32) -> Result<(), TransportError> {
        self.stats.bells_sent += 1;
        self.link.send(dest, &[]).map_err(|e| self.link_err("cannot wake a peer", e))
    }
}
