//! Sending (the request slab's send side): eager and rendezvous starts,
//! the per-destination queues of packets the transport could not take yet,
//! and flushing them in order.

use super::*;

impl Engine {
    /// Start a send of `data` (standard mode, or synchronous with `sync`),
    /// which the engine owns (and may share with a transport that keeps it
    /// for retransmission).
    pub fn isend(&mut self, dest: u32, tag: i32, ctx: u32, data: Vec<u8>, sync: bool) -> Result<ReqId, AdiError> {
        self.start_send(dest, tag, ctx, SendData::Owned(Arc::new(data)), sync)
    }

    /// Start a send straight from the caller's buffer: no copy is made
    /// unless the transport must keep the bytes after handing them on (UDP's
    /// retransmission buffer).
    ///
    /// # Safety
    /// `data` must stay valid and unmodified until the engine no longer holds
    /// the request: until it is completed by [`Engine::test`] or
    /// [`Engine::wait`] (or `wait_all`), abandoned with [`Engine::abandon`],
    /// or the engine is dropped or finalized. `mpi::request::scope` is the
    /// safe wrapper that guarantees this.
    pub unsafe fn isend_borrowed(
        &mut self,
        dest: u32,
        tag: i32,
        ctx: u32,
        data: &[u8],
        sync: bool,
    ) -> Result<ReqId, AdiError> {
        let raw = RawBytes { ptr: data.as_ptr() as *mut u8, len: data.len() };
        self.start_send(dest, tag, ctx, SendData::Borrowed(raw), sync)
    }

    /// Start a send of a message made on demand by `src`, one chunk at a
    /// time, as the transport takes it: a packet's worth, or a window of
    /// the receiver's memory (issue 30: a message of a non-contiguous
    /// datatype is never packed whole). Retransmissions keep their own
    /// copies, as for any send.
    pub fn isend_packed(
        &mut self,
        dest: u32,
        tag: i32,
        ctx: u32,
        src: Box<dyn PackSource>,
        sync: bool,
    ) -> Result<ReqId, AdiError> {
        if usize::try_from(src.len()).is_err() {
            return Err(AdiError::TooLarge { bytes: src.len() });
        }
        self.start_send(dest, tag, ctx, SendData::Packed(src), sync)
    }

    fn start_send(&mut self, dest: u32, tag: i32, ctx: u32, data: SendData, sync: bool) -> Result<ReqId, AdiError> {
        self.check_rank(dest)?;
        self.charge(HostCost::AdiOp, 1);
        self.charge(HostCost::Request, 1);
        let len = data.len();
        let env = Envelope { ctx, tag, src: self.st.rank, len: len as u64 };
        let eager = self.eager_ok(dest, len, sync);
        let state = if eager { SendState::Queued } else { SendState::Rendezvous };
        let id =
            self.st.reqs.insert(Req::Send(SendReq { dest, data, state, held: None, cancel: SendCancel::NotAsked }))?;
        self.count_send(dest, eager, env.len);
        if eager {
            let payload = Payload::Slice { req: id, offset: 0, len: len as u64, lend: false };
            self.enqueue(dest, Outgoing::new(Packet::Eager { env, sreq: id }, payload, Some(id)))?;
        } else {
            self.enqueue(dest, Outgoing::new(Packet::Rts { env, sreq: id, sync }, Payload::None, None))?;
        }
        Ok(id)
    }

    fn count_send(&mut self, dest: u32, eager: bool, len: u64) {
        let c = &mut self.st.counters;
        if dest == self.st.rank {
            c.self_msgs += 1;
        }
        if eager {
            c.eager_sent += 1;
            c.eager_bytes_sent += len;
        } else {
            c.rndv_sent += 1;
            c.rndv_bytes_sent += len;
        }
    }

    /// Blocking send. Eager messages go straight to the transport without a
    /// request when nothing is queued for `dest` (seed 004 §6.1).
    pub fn send(&mut self, dest: u32, tag: i32, ctx: u32, data: &[u8], sync: bool) -> Result<(), AdiError> {
        self.check_rank(dest)?;
        if dest != self.st.rank && self.eager_ok(dest, data.len(), sync) && !self.st.sendq.contains_key(&dest) {
            self.charge(HostCost::AdiOp, 1);
            let env = Envelope { ctx, tag, src: self.st.rank, len: data.len() as u64 };
            let mut hdr = [0u8; MAX_HEADER];
            let n = Packet::Eager { env, sreq: NO_SREQ }.encode(&mut hdr);
            if self.t.try_send(dest, &[&hdr[..n], data])? {
                self.count_send(dest, true, env.len);
                return Ok(());
            }
            // Flow control: fall back to a queued request (charged again as one).
        }
        // SAFETY: `data` outlives this call, and the request is gone when it
        // returns: `wait` completes it, or abandons it if it fails.
        let id = unsafe { self.isend_borrowed(dest, tag, ctx, data, sync)? };
        self.wait(id).map(|_| ())
    }

    pub(super) fn enqueue(&mut self, dest: u32, o: Outgoing) -> Result<(), AdiError> {
        if dest == self.st.rank {
            let mut msg = o.hdr[..o.hlen as usize].to_vec();
            match &o.payload {
                Payload::None => {}
                Payload::Slice { req, offset, len, .. } => {
                    if let Some(Req::Send(s)) = self.st.reqs.get(*req) {
                        msg.extend_from_slice(&s.data.range(*offset, *len));
                    }
                    // A message to self waits in the self inbox: one copy
                    // more than a message from a peer (counted once per
                    // message: at its first bytes).
                    if *len > 0 {
                        self.st.counters.recv_copies += u64::from(*offset == 0);
                        self.st.counters.recv_copy_bytes += *len;
                    }
                }
            }
            self.st.self_inbox.push_back(msg);
            if let Some(id) = o.completes {
                self.complete_send(id);
            }
            return Ok(());
        }
        let q = self.st.sendq.entry(dest).or_default();
        q.push_back(o);
        self.st.queued += 1;
        if q.len() > 1 {
            self.st.counters.send_queued += 1;
        }
        self.st.counters.send_queue_max = self.st.counters.send_queue_max.max(q.len() as u64);
        self.flush(dest)?;
        Ok(())
    }

    fn complete_send(&mut self, id: ReqId) {
        if let Some(Req::Send(s)) = self.st.reqs.get_mut(id) {
            s.state = SendState::Done;
            // The transport has the bytes (or a shared reference to owned
            // ones): forget the caller's buffer at once.
            s.data = SendData::Owned(Arc::default());
        }
    }

    /// Hand queued packets for `dest` to the transport, in order.
    fn flush(&mut self, dest: u32) -> Result<bool, AdiError> {
        let mut sent = false;
        while let Some(o) = self.st.sendq.get(&dest).and_then(|q| q.front()) {
            let hdr = &o.hdr[..o.hlen as usize];
            let ok = match &o.payload {
                Payload::None => self.t.try_send(dest, &[hdr])?,
                Payload::Slice { req, offset, len, lend } => {
                    let range = *offset as usize..(*offset + *len) as usize;
                    match self.st.reqs.get(*req) {
                        Some(Req::Send(SendReq { data: SendData::Owned(v), .. })) => {
                            self.t.try_send_shared(dest, hdr, v, range)?
                        }
                        Some(Req::Send(SendReq { data: d @ SendData::Packed(_), .. })) => {
                            self.t.try_send(dest, &[hdr, &d.range(*offset, *len)])?
                        }
                        Some(Req::Send(SendReq { data: SendData::Borrowed(b), .. })) if !*lend => {
                            self.t.try_send(dest, &[hdr, &b.bytes()[range]])?
                        }
                        Some(Req::Send(SendReq { data: SendData::Borrowed(b), .. })) => {
                            let b = *b;
                            // SAFETY: isend_borrowed's contract keeps the
                            // bytes valid and unchanged while the request is
                            // alive, and a held request stays alive (is_done
                            // is false) until the transport releases them, or
                            // abandon makes the transport copy them first.
                            match unsafe { self.t.try_send_lent(dest, hdr, &b.bytes()[range])? } {
                                crate::transport::Lent::NotNow => false,
                                crate::transport::Lent::Copied => true,
                                crate::transport::Lent::Held(token) => {
                                    if let Some(Req::Send(s)) = self.st.reqs.get_mut(*req) {
                                        s.held = Some(s.held.map_or(token, |t| t.max(token)));
                                    }
                                    true
                                }
                            }
                        }
                        // Abandoned: the message is not sent.
                        _ => true,
                    }
                }
            };
            if !ok {
                break;
            }
            sent = true;
            self.st.queued -= 1;
            let o = match self.st.sendq.entry(dest) {
                Entry::Occupied(mut q) => {
                    let o = q.get_mut().pop_front();
                    if q.get().is_empty() {
                        q.remove();
                    }
                    o
                }
                Entry::Vacant(_) => None,
            };
            if let Some(id) = o.and_then(|o| o.completes) {
                self.complete_send(id);
            }
        }
        Ok(sent)
    }

    pub(super) fn flush_all(&mut self) -> Result<bool, AdiError> {
        if !self.st.outbox.is_empty() {
            let outbox = std::mem::take(&mut self.st.outbox);
            for (dest, o) in outbox {
                self.st.counters.control_sent += 1;
                self.enqueue(dest, o)?;
            }
        }
        let mut sent = false;
        if self.st.queued == 0 {
            return Ok(false);
        }
        let waiting: Vec<u32> = self.st.sendq.keys().copied().collect();
        for d in waiting {
            sent |= self.flush(d)?;
        }
        Ok(sent)
    }
}
