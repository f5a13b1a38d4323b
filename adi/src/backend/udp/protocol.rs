//! The datagram protocol of seed 001 (§2.2–2.4): sending and resending,
//! acknowledging, reassembly, the timers, and leaving the job; over a
//! [`Link`], which does the I/O and tells the time.

use super::*;

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
    pub(super) fn mode_flags(&self) -> u8 {
        (if self.cfg.full_crc { flag::FULL_CRC } else { 0 }) | if self.cfg.auth.is_some() { flag::AUTH } else { 0 }
    }

    /// Send one sealed datagram (`head` then `body`, then its tag in
    /// authenticated mode), through the fault injector if there is one.
    pub(super) fn emit(&mut self, dest: u32, head: &[u8], body: &[u8]) -> Result<(), TransportError> {
        let verdict = self.verdict(dest, head.len() + body.len());
        self.emit_as(dest, head, body, verdict)
    }

    /// What the fault injector does with a datagram of `len` bytes to `dest`.
    pub(super) fn verdict(&mut self, dest: u32, len: usize) -> Verdict {
        match &mut self.faults {
            Some(f) => f.decide(dest, len),
            None => Verdict::Send,
        }
    }

    /// [`Self::emit`] with the injector's decision already made.
    pub(super) fn emit_as(
        &mut self,
        dest: u32,
        head: &[u8],
        body: &[u8],
        verdict: Verdict,
    ) -> Result<(), TransportError> {
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
    pub(super) fn raw_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<(), TransportError> {
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

    pub(super) fn link_err(&self, what: &str, e: std::io::Error) -> TransportError {
        TransportError::Backend { backend: L::NAME, msg: format!("{what}: {e}") }
    }

    /// Stamp the current cumulative ACK into a data datagram, seal and send it.
    pub(super) fn transmit(&mut self, dest: u32, i: usize) -> Result<(), TransportError> {
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
    pub(super) fn start_data(
        &mut self,
        dest: u32,
        msg_len: usize,
        frag: usize,
        nfrags: usize,
        payload: usize,
    ) -> (u32, Vec<u8>) {
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
    pub(super) fn queue_held(
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
    pub(super) fn pump(&mut self, dest: u32) -> Result<(), TransportError> {
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
    pub(super) fn go_back(&mut self, dest: u32, from: u32) -> Result<(), TransportError> {
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
    pub(super) fn send_window(&mut self, dest: u32, first: usize, count: usize) -> Result<(), TransportError> {
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
    pub(super) fn gso_run(&self, d: usize, i: usize, end: usize) -> usize {
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
    pub(super) fn send_run(&mut self, dest: u32, i: usize, j: usize) -> Result<bool, TransportError> {
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

    pub(super) fn control(&mut self, dest: u32, flags: u8, seq: u32) -> Result<(), TransportError> {
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
    pub(super) fn acked(&mut self, src: u32, ack: u32) {
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
    pub(super) fn recv_one(&mut self) -> Result<Option<Received>, TransportError> {
        if let Some(x) = self.stashed.take() {
            return Ok(Some(x));
        }
        let r = self.link.recv(&mut self.buf).map_err(|e| self.link_err("cannot receive", e))?;
        if r.is_some_and(|r| r.batched) {
            self.stats.gro_batches += 1;
        }
        Ok(r)
    }

    pub(super) fn reject(&mut self, r: Reject) {
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
    pub(super) fn handle(
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
    pub(super) fn timers(&mut self) -> Result<(), TransportError> {
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
    pub(super) fn watches(&self, d: usize) -> bool {
        d != self.rank as usize
            && !self.rx[d].got_bye
            && !self.leaving
            && !self.faults.as_ref().is_some_and(Faults::is_hung)
            && (self.link.watched_from_start(d as u32) || self.tx[d].next_seq > 0 || self.rx[d].expected > 0)
    }

    /// How often a silent peer is pinged once it is due.
    pub(super) fn ping_every(&self) -> Duration {
        self.cfg.peer_timeout / 8
    }

    /// When silent peer `d` is due a ping: a quarter of the peer timeout
    /// after it was last heard, then every [`Self::ping_every`].
    pub(super) fn ping_due(&self, d: usize) -> Instant {
        let rx = &self.rx[d];
        let first = rx.heard + self.cfg.peer_timeout / 4;
        rx.pinged.map_or(first, |t| first.max(t + self.ping_every()))
    }

    /// The earliest timer, if any.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
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
    pub(super) fn goodbye_from(&mut self, src: u32, have: bool) -> Result<(), TransportError> {
        let rx = &mut self.rx[src as usize];
        rx.got_bye = true;
        rx.has_ours |= have;
        if self.leaving && (!have || !rx.told_have) {
            self.goodbye(src)?;
        }
        Ok(())
    }

    /// Send our goodbye to `dest`, confirming theirs if we have it.
    pub(super) fn goodbye(&mut self, dest: u32) -> Result<(), TransportError> {
        let have = self.rx[dest as usize].got_bye;
        self.rx[dest as usize].told_have |= have;
        self.stats.byes_sent += 1;
        self.control(dest, flag::BYE | if have { flag::HAVE_BYE } else { 0 }, 0)
    }

    /// Whether finalize may stop waiting for `p`, and whether that is
    /// because it fell silent without a goodbye.
    pub(super) fn farewell_done(&self, p: usize, now: Instant) -> (bool, bool) {
        let rx = &self.rx[p];
        let silent = now.saturating_duration_since(rx.heard);
        if rx.got_bye && (rx.has_ours || silent >= self.cfg.linger) {
            return (true, false);
        }
        let wait = self.cfg.goodbye_wait.min(self.cfg.peer_timeout);
        (silent >= wait, silent >= wait)
    }

    pub(super) fn all_acked(&self) -> bool {
        self.tx.iter().all(|t| t.unacked.is_empty() && t.queued.is_empty())
    }
}
