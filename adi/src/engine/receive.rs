//! Posting receives, probes and cancels (MPI 4.1 §3.4–3.8): matched
//! against the unexpected queue first, else queued as posted.

use super::*;

impl Engine {
    // ---- receiving ------------------------------------------------------------

    /// Post a receive of at most `capacity` bytes into a vector the engine
    /// allocates (returned by [`Done::Received`]).
    pub fn irecv(&mut self, src: Source, tag: TagSel, ctx: u32, capacity: u64) -> Result<ReqId, AdiError> {
        self.post_recv(src, tag, ctx, capacity, RecvBuf::Owned(Vec::new()))
    }

    /// Post a receive straight into the caller's buffer (completed as
    /// [`Done::Placed`]): data is written there and nowhere else, except an
    /// eager message that arrived before the receive (one copy out of the
    /// unexpected queue). A longer message fills the buffer and ends in
    /// [`AdiError::Truncated`]; nothing is written past `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid, and untouched by anyone else, until the engine
    /// no longer holds the request: until it is completed by
    /// [`Engine::test`]/[`Engine::wait`]/`wait_all`, cancelled with
    /// [`Engine::cancel_recv`] returning `true` and then completed, abandoned
    /// with [`Engine::abandon`], or the engine is dropped or finalized.
    /// `mpi::request::scope` is the safe wrapper that guarantees this.
    pub unsafe fn irecv_into(&mut self, src: Source, tag: TagSel, ctx: u32, buf: &mut [u8]) -> Result<ReqId, AdiError> {
        let raw = RawBytes { ptr: buf.as_mut_ptr(), len: buf.len() };
        self.post_recv(src, tag, ctx, buf.len() as u64, RecvBuf::Borrowed(raw))
    }

    /// Post a receive whose bytes go to `sink` as they arrive (completed
    /// as [`Done::Placed`]): at most one chunk is staged at a time. A
    /// longer message than the sink's capacity fills it and ends in
    /// [`AdiError::Truncated`].
    pub fn irecv_unpacked(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        sink: Box<dyn UnpackSink>,
    ) -> Result<ReqId, AdiError> {
        let capacity = sink.capacity();
        self.post_recv(src, tag, ctx, capacity, RecvBuf::Unpack(sink))
    }

    pub(super) fn post_recv(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        capacity: u64,
        buf: RecvBuf,
    ) -> Result<ReqId, AdiError> {
        if let Source::Rank(r) = src {
            self.check_rank(r)?;
        }
        self.charge(HostCost::Request, 1);
        let id = self.new_recv(ctx, capacity, buf)?;
        match self.search_unexpected(src, tag, ctx) {
            Some(u) => self.receive_matched(id, u),
            None => {
                self.st.posted.push(Posted { id, src, tag, ctx });
                let c = &mut self.st.counters;
                c.posted_max = c.posted_max.max(self.st.posted.len() as u64);
            }
        }
        self.apply_charges();
        Ok(id)
    }

    pub(super) fn new_recv(&mut self, ctx: u32, capacity: u64, buf: RecvBuf) -> Result<ReqId, AdiError> {
        let req = RecvReq {
            ctx,
            capacity,
            state: RecvState::Posted,
            env: None,
            sreq: 0,
            buf,
            received: 0,
            region: None,
            error: None,
        };
        self.st.reqs.insert(Req::Recv(req))
    }

    pub(super) fn receive_matched(&mut self, id: ReqId, u: Unexpected) {
        match u.kind {
            UnexpectedKind::Eager(data, _) => self.st.deliver_eager(id, u.env, std::borrow::Cow::Owned(data)),
            UnexpectedKind::Rts { sreq } => self.st.start_rendezvous(id, u.env, sreq),
        }
    }

    /// Matched probe (`MPI_Improbe`, MPI 4.1 §3.8.2): take the first
    /// matching message that has arrived off the unexpected queue, so that
    /// the caller can size a buffer and receive exactly it.
    pub fn improbe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Option<Matched>, AdiError> {
        Ok(self.improbe_pass(src, tag, ctx)?.0)
    }

    /// [`Engine::improbe`], and whether its progress pass moved anything.
    pub(super) fn improbe_pass(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
    ) -> Result<(Option<Matched>, bool), AdiError> {
        if let Source::Rank(r) = src {
            self.check_rank(r)?;
        }
        let worked = self.progress()?;
        Ok((self.search_unexpected(src, tag, ctx).map(|u| Matched { u }), worked))
    }

    /// Blocking matched probe (`MPI_Mprobe`): [`Engine::improbe`] until a
    /// message matches, idling the transport in between as `probe` does.
    pub fn mprobe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Matched, AdiError> {
        loop {
            if let Some(m) = self.mprobe_until(src, tag, ctx, &|_| false)? {
                return Ok(m);
            }
        }
    }

    /// [`Engine::mprobe`], giving up (`None`) where it would idle once
    /// `stop` holds (another thread wants the library); `stop` is told
    /// whether anything moved since the probe began (a progress pass did
    /// work, or a wait ended).
    pub fn mprobe_until(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        stop: &dyn Fn(bool) -> bool,
    ) -> Result<Option<Matched>, AdiError> {
        self.probe_loop(stop, |e| e.improbe_pass(src, tag, ctx))
    }

    /// Make probe passes (`pass`: what it found, and whether its progress
    /// moved anything) until one finds something, idling between them,
    /// or until `stop`, asked where the loop would idle, says to give up.
    pub(super) fn probe_loop<T>(
        &mut self,
        stop: &dyn Fn(bool) -> bool,
        mut pass: impl FnMut(&mut Self) -> Result<(Option<T>, bool), AdiError>,
    ) -> Result<Option<T>, AdiError> {
        let mut moved = false;
        loop {
            let (found, worked) = pass(self)?;
            if found.is_some() {
                return Ok(found);
            }
            moved |= worked;
            if stop(moved) {
                return Ok(None);
            }
            self.st.counters.idle_waits += 1;
            self.t.idle()?;
            moved = true;
        }
    }

    /// Receive a matched message into a vector the engine allocates.
    pub fn imrecv(&mut self, msg: Matched, capacity: u64) -> Result<ReqId, AdiError> {
        self.charge(HostCost::Request, 1);
        let id = self.new_recv(msg.u.env.ctx, capacity, RecvBuf::Owned(Vec::new()))?;
        self.receive_matched(id, msg.u);
        self.apply_charges();
        Ok(id)
    }

    /// Receive a matched message into the caller's buffer (`MPI_Imrecv`).
    ///
    /// # Safety
    /// As for [`Engine::irecv_into`].
    pub unsafe fn imrecv_into(&mut self, msg: Matched, buf: &mut [u8]) -> Result<ReqId, AdiError> {
        self.charge(HostCost::Request, 1);
        let raw = RawBytes { ptr: buf.as_mut_ptr(), len: buf.len() };
        let id = self.new_recv(msg.u.env.ctx, buf.len() as u64, RecvBuf::Borrowed(raw))?;
        self.receive_matched(id, msg.u);
        self.apply_charges();
        Ok(id)
    }

    /// Whether receive `id` is still posted: no message has matched it yet.
    pub fn is_posted(&self, id: ReqId) -> bool {
        matches!(self.st.reqs.get(id), Some(Req::Recv(r)) if matches!(r.state, RecvState::Posted))
    }

    /// Note (`on`) or stop noting the contexts of messages that match a
    /// posted receive on context `ctx`: what [`Engine::serve_context`] and
    /// [`Engine::stop_serving`] keep in step with the served contexts, so a
    /// pass polls only the served contexts that matched, not every one.
    pub(super) fn watch_context(&mut self, ctx: u32, on: bool) {
        if on {
            self.st.posted.watched.insert(ctx);
        } else {
            self.st.posted.watched.remove(&ctx);
        }
    }

    /// Cancel a receive (MPI 4.1 §3.8.4): `true` if it had not matched a
    /// message and is now cancelled (it completes as [`Done::Cancelled`],
    /// its buffer untouched), `false` if it had matched and will complete
    /// normally. Sends are cancelled with [`Engine::cancel_send`].
    pub fn cancel_recv(&mut self, id: ReqId) -> Result<bool, AdiError> {
        match self.st.reqs.get_mut(id) {
            Some(Req::Recv(r)) if matches!(r.state, RecvState::Posted) => {
                r.state = RecvState::Cancelled;
                r.buf = RecvBuf::Owned(Vec::new());
                let ctx = r.ctx;
                self.st.posted.remove(ctx, id);
                Ok(true)
            }
            Some(Req::Recv(_)) => Ok(false),
            Some(Req::Send(_)) => Err(AdiError::WrongKind { id, wants: "receive" }),
            None => Err(AdiError::BadRequest(id)),
        }
    }

    /// Cancel a send (MPI 4.1 §3.8.4): the receiver is asked to withdraw
    /// its message if no receive has matched it, and the send is complete
    /// once it answers — as [`Done::Cancelled`] if it did, else as usual.
    /// Asking twice changes nothing.
    pub fn cancel_send(&mut self, id: ReqId) -> Result<(), AdiError> {
        let dest = match self.st.reqs.get_mut(id) {
            Some(Req::Send(s)) if s.cancel == SendCancel::NotAsked => {
                s.cancel = SendCancel::Asked;
                s.dest
            }
            Some(Req::Send(_)) => return Ok(()),
            Some(Req::Recv(_)) => return Err(AdiError::WrongKind { id, wants: "send" }),
            None => return Err(AdiError::BadRequest(id)),
        };
        self.charge(HostCost::AdiOp, 1);
        // After the message itself: packets to one peer stay in order.
        self.enqueue(dest, Outgoing::new(Packet::Cancel { sreq: id }, Payload::None, None))
    }

    /// Forget a request whatever its state, after an error made waiting for
    /// it pointless: the engine never touches its buffer again. A posted
    /// receive leaves the posted queue; a send not yet handed to the
    /// transport is not sent; a rendezvous in flight is left unfinished (its
    /// peer may wait: this is for a job that is failing).
    pub fn abandon(&mut self, id: ReqId) {
        if let Some(Req::Send(s)) = self.st.reqs.get(id) {
            if s.held.is_some_and(|token| !self.t.lent_released(s.dest, token)) {
                // The transport still points into the buffer: make it copy.
                self.t.unlend(s.dest);
            }
        }
        if let Some(req) = self.st.reqs.remove(id) {
            if let Req::Recv(r) = &req {
                self.st.posted.remove(r.ctx, id);
            }
            if let Req::Recv(RecvReq { region: Some(region), .. }) = req {
                if let Some(m) = self.t.remote_memory() {
                    m.free(region);
                }
            }
            self.st.need_landing.retain(|r| *r != id);
        }
    }

    pub(super) fn search_unexpected(&mut self, src: Source, tag: TagSel, ctx: u32) -> Option<Unexpected> {
        let (found, steps) = self.st.find_unexpected(src, tag, ctx);
        self.charge(HostCost::MatchStep, steps);
        found.and_then(|i| self.st.unexpected.remove(i))
    }

    /// Blocking receive.
    pub fn recv(&mut self, src: Source, tag: TagSel, ctx: u32, capacity: u64) -> Result<(Status, Vec<u8>), AdiError> {
        let id = self.irecv(src, tag, ctx, capacity)?;
        match self.wait(id)? {
            Done::Received { status, data } => Ok((status, data)),
            _ => Err(AdiError::BadRequest(id)),
        }
    }

    /// Blocking receive into the caller's buffer (no copy but the one into
    /// `buf`, see [`Engine::irecv_into`]).
    pub fn recv_into(&mut self, src: Source, tag: TagSel, ctx: u32, buf: &mut [u8]) -> Result<Status, AdiError> {
        // SAFETY: `buf` is borrowed for this whole call, and the request is
        // gone when it returns: `wait` completes it, or abandons it if it fails.
        let id = unsafe { self.irecv_into(src, tag, ctx, buf)? };
        match self.wait(id)? {
            Done::Placed { status } => Ok(status),
            _ => Err(AdiError::BadRequest(id)),
        }
    }

    /// Non-blocking probe: the envelope of the first matching unexpected message.
    pub fn iprobe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Option<Status>, AdiError> {
        Ok(self.iprobe_pass(src, tag, ctx)?.0)
    }

    /// [`Engine::iprobe`], and whether its progress pass moved anything.
    pub(super) fn iprobe_pass(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
    ) -> Result<(Option<Status>, bool), AdiError> {
        let worked = self.progress()?;
        let (found, steps) = self.st.find_unexpected(src, tag, ctx);
        self.charge(HostCost::MatchStep, steps);
        let env = found.and_then(|i| self.st.unexpected.get(i)).map(|u| u.env);
        Ok((env.map(|e| Status { source: e.src, tag: e.tag, len: e.len }), worked))
    }

    /// The envelope of the first unexpected message on context `ctx` whose
    /// source and tag satisfy `pred`, without a progress pass, without
    /// charging simulated time and without counting a search: for a layer
    /// above that looks, inside its own progress, for messages it only
    /// expects when something went wrong (a collective's failure notice, a
    /// message of another collective in its place).
    pub fn peek_unexpected(&self, ctx: u32, pred: &dyn Fn(u32, i32) -> bool) -> Option<Status> {
        let env = self.st.unexpected.iter().map(|u| u.env).find(|e| e.ctx == ctx && pred(e.src, e.tag))?;
        Some(Status { source: env.src, tag: env.tag, len: env.len })
    }

    /// Blocking probe.
    pub fn probe(&mut self, src: Source, tag: TagSel, ctx: u32) -> Result<Status, AdiError> {
        loop {
            if let Some(s) = self.probe_until(src, tag, ctx, &|_| false)? {
                return Ok(s);
            }
        }
    }

    /// [`Engine::probe`], giving up (`None`) where it would idle once
    /// `stop` holds, told what [`Engine::mprobe_until`]'s is.
    pub fn probe_until(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: u32,
        stop: &dyn Fn(bool) -> bool,
    ) -> Result<Option<Status>, AdiError> {
        self.probe_loop(stop, |e| e.iprobe_pass(src, tag, ctx))
    }
}
