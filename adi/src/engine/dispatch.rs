//! What arrives: the engine's state handling each packet (seed 004 §5,
//! §6.2): eager data into the posted receive or the unexpected queue, the
//! rendezvous steps (RTS, CTS, DATA, FTS), cancels.

use super::*;

impl State {
    pub(super) fn charge(&mut self, c: HostCost, n: u64) {
        self.charges[c as usize] += n;
        self.charged = true;
    }

    pub(super) fn fail(&mut self, e: AdiError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Queue a control packet built by the engine (one ADI operation).
    pub(super) fn post_out(&mut self, dest: u32, o: Outgoing) {
        self.charge(HostCost::AdiOp, 1);
        self.outbox.push((dest, o));
    }

    /// Search the posted queue for `env` (an arriving envelope).
    pub(super) fn match_posted(&mut self, env: &Envelope) -> Option<ReqId> {
        self.counters.posted_searches += 1;
        let (found, steps) = self.posted.take_match(env);
        self.counters.posted_steps += steps;
        self.charge(HostCost::MatchStep, steps);
        found
    }

    /// Search the unexpected queue for a receive's (source, tag, context):
    /// the position of the first match (MPI's order), counted, and the
    /// number of elements examined (for the caller to charge).
    pub(super) fn find_unexpected(&mut self, src: Source, tag: TagSel, ctx: u32) -> (Option<usize>, u64) {
        self.counters.unexpected_searches += 1;
        let mut steps = 0u64;
        let found = self.unexpected.iter().position(|u| {
            steps += 1;
            matches(src, tag, ctx, &u.env)
        });
        self.counters.unexpected_steps += steps;
        (found, steps)
    }

    pub(super) fn push_unexpected(&mut self, u: Unexpected) {
        self.unexpected.push_back(u);
        self.counters.unexpected_total += 1;
        self.counters.unexpected_max = self.counters.unexpected_max.max(self.unexpected.len() as u64);
    }

    pub(super) fn recv_mut(&mut self, id: ReqId) -> Option<&mut RecvReq> {
        match self.reqs.get_mut(id) {
            Some(Req::Recv(r)) => Some(r),
            _ => None,
        }
    }

    /// An eager message matched receive `id`: `data` is borrowed from the
    /// transport (a posted receive: copied once, into the receive's buffer)
    /// or owned by the unexpected queue (the "tmp buffer" of Fig. 7: copied
    /// out of it into a caller's buffer, charged and counted as the one
    /// extra copy; an engine-owned receive takes the buffer itself).
    pub(super) fn deliver_eager(&mut self, id: ReqId, env: Envelope, data: std::borrow::Cow<'_, [u8]>) {
        let (copies, copy_bytes) = (&mut self.counters.recv_copies, &mut self.counters.recv_copy_bytes);
        let charges = &mut self.charges;
        let Some(Req::Recv(r)) = self.reqs.get_mut(id) else { return };
        let keep = (r.capacity.min(env.len)) as usize;
        match (&mut r.buf, data) {
            (RecvBuf::Owned(v), std::borrow::Cow::Borrowed(d)) => *v = d[..keep].to_vec(),
            (RecvBuf::Owned(v), std::borrow::Cow::Owned(mut d)) => {
                // The unexpected buffer becomes the receive's. Charged as the
                // copy out of it that Fig. 7 makes (the model's calibration
                // assumes one), though no byte moves here.
                charges[HostCost::CopyByte as usize] += d.len() as u64;
                d.truncate(keep);
                *v = d;
            }
            (buf @ RecvBuf::Borrowed(_), std::borrow::Cow::Borrowed(d)) => buf.put(0, &d[..keep]),
            (buf @ RecvBuf::Unpack(_), d) => buf.put(0, &d[..keep]),
            (buf @ RecvBuf::Borrowed(_), std::borrow::Cow::Owned(d)) => {
                charges[HostCost::CopyByte as usize] += d.len() as u64;
                if keep > 0 {
                    *copies += 1;
                    *copy_bytes += keep as u64;
                }
                buf.put(0, &d[..keep]);
            }
        }
        self.charged = true;
        r.finish_eager(env);
    }

    /// An eager message that matched receive `id` arrived in parts (the
    /// transport has read only `a.head()`): its payload goes from the head
    /// and then straight from the transport into the receive's buffer, with
    /// no buffer of the transport's in between (issue 8). A truncated
    /// receive reads only what fits.
    pub(super) fn deliver_eager_parts(&mut self, id: ReqId, env: Envelope, hlen: usize, a: &mut dyn Arrival) {
        let Some(Req::Recv(r)) = self.reqs.get_mut(id) else { return };
        let keep = (r.capacity.min(env.len)) as usize;
        let filled = match &mut r.buf {
            RecvBuf::Borrowed(b) => match b.region_mut(0, keep) {
                Some(out) => a.read_from(hlen, out),
                None => Ok(()), // unreachable: keep <= capacity = the buffer's length
            },
            RecvBuf::Owned(v) => {
                v.resize(keep, 0);
                a.read_from(hlen, v)
            }
            buf @ RecvBuf::Unpack(_) => buf.fill(0, keep, |out| a.read_from(hlen, out)),
        };
        if let Err(e) = filled {
            return self.fail(e.into());
        }
        r.finish_eager(env);
        self.charged = true;
        self.counters.recv_direct += 1;
    }

    /// Dispatch a message the transport handed over as an [`Arrival`]: a
    /// whole one as [`State::dispatch`] does; of one that arrived in parts,
    /// an eager payload that matches a posted receive is read straight into
    /// it, and anything else is read whole first.
    pub(super) fn dispatch_arrival(&mut self, src: u32, a: &mut dyn Arrival) {
        let total = a.len();
        if a.head().len() >= total {
            return self.dispatch(src, &a.head()[..total]);
        }
        match Packet::decode_head(src, a.head(), total) {
            Ok((Packet::Eager { env, sreq }, hlen)) => {
                self.charge(HostCost::AdiOp, 1);
                self.counters.eager_recv += 1;
                self.counters.eager_bytes_recv += env.len;
                if let Some(id) = self.match_posted(&env) {
                    return self.deliver_eager_parts(id, env, hlen, a);
                }
                let mut v = vec![0u8; total - hlen];
                match a.read_from(hlen, &mut v) {
                    Ok(()) => self.push_unexpected(Unexpected { env, kind: UnexpectedKind::Eager(v, sreq) }),
                    Err(e) => self.fail(e.into()),
                }
            }
            Err(e) => self.fail(e),
            Ok(_) => {
                let mut v = vec![0u8; total];
                match a.read_from(0, &mut v) {
                    Ok(()) => self.dispatch(src, &v),
                    Err(e) => self.fail(e.into()),
                }
            }
        }
    }

    /// An RTS matched receive `id`: ask for the data.
    pub(super) fn start_rendezvous(&mut self, id: ReqId, env: Envelope, sreq: u32) {
        let remote = self.remote_memory && env.src != self.rank;
        let Some(r) = self.recv_mut(id) else { return };
        r.env = Some(env);
        r.sreq = sreq;
        r.state = RecvState::Rendezvous;
        if let RecvBuf::Owned(v) = &mut r.buf {
            // Filled in order as the data arrives: no zeroing pass.
            *v = Vec::with_capacity(r.capacity.min(env.len) as usize);
        }
        if env.len > r.capacity {
            r.error = Some(AdiError::Truncated { sender: env.src, tag: env.tag, len: env.len, capacity: r.capacity });
        }
        if remote && env.len > 0 {
            self.need_landing.push_back(id);
        } else {
            let cts = Packet::Cts { sreq, rreq: id, offset: 0, len: env.len, addr: None };
            self.post_out(env.src, Outgoing::new(cts, Payload::None, None));
        }
    }

    /// Dispatch one arriving message (Fig. 7).
    pub(super) fn dispatch(&mut self, src: u32, msg: &[u8]) {
        self.charge(HostCost::AdiOp, 1);
        let (p, hlen) = match Packet::decode(src, msg) {
            Ok(x) => x,
            Err(e) => return self.fail(e),
        };
        match p {
            Packet::Eager { env, sreq } => {
                self.counters.eager_recv += 1;
                self.counters.eager_bytes_recv += env.len;
                let data = &msg[hlen..];
                match self.match_posted(&env) {
                    Some(id) => self.deliver_eager(id, env, std::borrow::Cow::Borrowed(data)),
                    None => self.push_unexpected(Unexpected { env, kind: UnexpectedKind::Eager(data.to_vec(), sreq) }),
                }
            }
            Packet::Cancel { sreq } => {
                // The sender's message, if no receive has matched it yet
                // (nor a matched probe taken it): withdrawn.
                let at = self.unexpected.iter().position(|u| {
                    u.env.src == src
                        && sreq != NO_SREQ
                        && matches!(u.kind, UnexpectedKind::Eager(_, s) | UnexpectedKind::Rts { sreq: s } if s == sreq)
                });
                let won = at.and_then(|i| self.unexpected.remove(i)).is_some();
                self.post_out(src, Outgoing::new(Packet::Cancelled { sreq, won }, Payload::None, None));
            }
            Packet::Cancelled { sreq, won } => match self.reqs.get_mut(sreq) {
                Some(Req::Send(s)) if s.dest == src && s.cancel == SendCancel::Asked => {
                    if won {
                        s.cancel = SendCancel::Won;
                        s.state = SendState::Done;
                        s.data = SendData::Owned(Arc::default());
                    } else {
                        s.cancel = SendCancel::Lost;
                    }
                }
                _ => self.fail(AdiError::Protocol {
                    sender: src,
                    what: format!("an answer to a cancellation never asked, of send request {sreq:#x}"),
                }),
            },
            Packet::Rts { env, sreq, .. } => {
                self.counters.rndv_recv += 1;
                self.counters.rndv_bytes_recv += env.len;
                match self.match_posted(&env) {
                    Some(id) => self.start_rendezvous(id, env, sreq),
                    None => self.push_unexpected(Unexpected { env, kind: UnexpectedKind::Rts { sreq } }),
                }
            }
            Packet::Cts { sreq, rreq, offset, len, addr } => {
                match self.reqs.get(sreq) {
                    Some(Req::Send(s))
                        if s.dest == src && offset.checked_add(len).is_some_and(|e| e <= s.data.len() as u64) => {}
                    _ => {
                        return self.fail(AdiError::Protocol {
                            sender: src,
                            what: format!("CTS for unknown or mismatched send request {sreq:#x}"),
                        })
                    }
                }
                self.cts_work.push_back((src, CtsWork { sreq, rreq, offset, len, addr }));
            }
            Packet::Fts { rreq, offset, len } => {
                let Some(r) = self.rendezvous_from(src, rreq, "FTS", offset, len) else { return };
                if r.region.is_some() {
                    self.fts_work.push_back((rreq, offset, len));
                } else {
                    // Checked above: offset + len is within the message.
                    self.finish_segment(rreq, offset + len);
                }
            }
            Packet::Data { rreq, offset, len } => {
                let data = &msg[hlen..];
                let Some(r) = self.rendezvous_from(src, rreq, "DATA", offset, len) else { return };
                let keep = r.capacity.min(r.env.map_or(0, |e| e.len));
                if offset < keep {
                    let (o, n) = (offset as usize, (keep - offset).min(len) as usize);
                    r.buf.put(o, &data[..n]);
                }
            }
        }
    }

    /// The receive `rreq` that an FTS or DATA packet (`what`) from `src`
    /// covering `offset..offset + len` refers to; a protocol error (and
    /// `None`) unless it is a rendezvous receive matched to a message from
    /// `src` that contains that range.
    pub(super) fn rendezvous_from(
        &mut self,
        src: u32,
        rreq: ReqId,
        what: &str,
        offset: u64,
        len: u64,
    ) -> Option<&mut RecvReq> {
        let fits = |r: &RecvReq| {
            matches!(r.state, RecvState::Rendezvous)
                && r.env.is_some_and(|e| e.src == src && offset.checked_add(len).is_some_and(|end| end <= e.len))
        };
        if self.recv_mut(rreq).is_some_and(|r| fits(r)) {
            return self.recv_mut(rreq);
        }
        self.fail(AdiError::Protocol {
            sender: src,
            what: format!("{what} for bytes {offset}+{len} of receive request {rreq:#x}, which is not a rendezvous from this rank that long"),
        });
        None
    }

    /// Bytes up to `upto` are in place: done, or ask for the next segment.
    pub(super) fn finish_segment(&mut self, rreq: ReqId, upto: u64) {
        let Some(r) = self.recv_mut(rreq) else { return };
        r.received = upto;
        let total = r.env.map_or(0, |e| e.len);
        if upto >= total {
            if let RecvBuf::Owned(v) = &mut r.buf {
                v.resize(r.capacity.min(total) as usize, 0);
            }
            r.state = RecvState::Done;
        } else {
            self.need_landing.push_back(rreq);
        }
    }
}
