//! Completion and progress (seed 004 §6.3, Fig. 7): test, wait, the
//! progress pass over the transport and the hooks, the rendezvous work,
//! and finalize.

use super::*;

impl Engine {
    // ---- completion -------------------------------------------------------------

    /// Whether request `id` has completed (it stays allocated until waited for).
    pub fn is_done(&self, id: ReqId) -> Result<bool, AdiError> {
        match self.st.reqs.get(id) {
            Some(Req::Send(s)) => Ok(matches!(s.state, SendState::Done)
                && s.cancel != SendCancel::Asked
                && s.held.is_none_or(|token| self.t.lent_released(s.dest, token))),
            Some(Req::Recv(r)) => Ok(matches!(r.state, RecvState::Done | RecvState::Cancelled)),
            None => Err(AdiError::BadRequest(id)),
        }
    }

    pub(super) fn take_done(&mut self, id: ReqId) -> Result<Done, AdiError> {
        // Completing and freeing the request (seed 004 §7: MPID_Release_request).
        self.charge(HostCost::Request, 1);
        match self.st.reqs.remove(id) {
            Some(Req::Send(s)) if s.cancel == SendCancel::Won => Ok(Done::Cancelled),
            Some(Req::Send(_)) => Ok(Done::Sent),
            Some(Req::Recv(r)) => {
                if let Some(e) = r.error {
                    return Err(e);
                }
                if matches!(r.state, RecvState::Cancelled) {
                    return Ok(Done::Cancelled);
                }
                let env = r.env.unwrap_or(Envelope { ctx: r.ctx, tag: 0, src: 0, len: 0 });
                let status = Status { source: env.src, tag: env.tag, len: env.len };
                Ok(match r.buf {
                    RecvBuf::Owned(data) => Done::Received { status, data },
                    RecvBuf::Borrowed(_) | RecvBuf::Unpack(_) => Done::Placed { status },
                })
            }
            None => Err(AdiError::BadRequest(id)),
        }
    }

    /// Make progress once; if `id` completed, free it and return the result.
    pub fn test(&mut self, id: ReqId) -> Result<Option<Done>, AdiError> {
        if !self.is_done(id)? {
            self.progress()?;
        }
        if self.is_done(id)? {
            self.take_done(id).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Wait for a request (the MPI_Send loop of seed 004 §7).
    /// If waiting fails (a transport error), the request is abandoned
    /// ([`Engine::abandon`]): the engine keeps no pointer into its buffer.
    pub fn wait(&mut self, id: ReqId) -> Result<Done, AdiError> {
        if let Err(e) = self.wait_until(|e| e.is_done(id).unwrap_or(true)) {
            self.abandon(id);
            return Err(e);
        }
        self.take_done(id)
    }

    /// Wait for every request; results in order. If waiting fails, every
    /// request not yet completed is abandoned.
    pub fn wait_all(&mut self, ids: &[ReqId]) -> Result<Vec<Done>, AdiError> {
        if let Err(e) = self.wait_until(|e| ids.iter().all(|id| e.is_done(*id).unwrap_or(true))) {
            for id in ids {
                self.abandon(*id);
            }
            return Err(e);
        }
        ids.iter().map(|id| self.take_done(*id)).collect()
    }

    /// Nothing to do: let the transport wait for the network (in simulation,
    /// hand over until a watched device word changes). For callers that run
    /// their own progress loop around [`Engine::progress`].
    pub fn idle(&mut self) -> Result<(), AdiError> {
        self.st.counters.idle_waits += 1;
        Ok(self.t.idle()?)
    }

    /// Progress until `done` holds, idling the transport when a pass finds nothing.
    pub fn wait_until(&mut self, mut done: impl FnMut(&Engine) -> bool) -> Result<(), AdiError> {
        loop {
            if done(self) {
                return Ok(());
            }
            let worked = self.progress()?;
            if done(self) {
                return Ok(());
            }
            if !worked {
                self.st.counters.idle_waits += 1;
                self.t.idle()?;
            }
        }
    }

    pub(super) fn apply_charges(&mut self) {
        if !std::mem::take(&mut self.st.charged) {
            return;
        }
        let clock = self.t.sim_clock();
        for (i, n) in self.st.charges.iter_mut().enumerate() {
            if *n > 0 {
                if let (Some(clock), Some(c)) = (clock, HostCost::ALL.get(i)) {
                    clock.charge(*c, *n);
                }
                *n = 0;
            }
        }
    }

    /// One pass of the progress engine: the busy progress hooks, receive,
    /// drive rendezvous work and the send queues, the hooks again. Returns
    /// whether anything happened.
    pub fn progress(&mut self) -> Result<bool, AdiError> {
        if !self.hooks_busy() {
            return self.progress_own();
        }
        let mut worked = self.run_hooks()?;
        worked |= self.progress_own()?;
        worked |= self.run_hooks()?;
        Ok(worked)
    }

    /// How often a thread of the process must call [`Engine::keep_alive`]
    /// while the program computes outside MPI ([`Transport::keepalive`];
    /// `None`: never).
    pub fn keepalive_interval(&self) -> Option<std::time::Duration> {
        self.t.keepalive()
    }

    /// A progress pass of the engine alone, without the hooks: the
    /// transport answers its peers (acknowledgements, pings) and arrivals
    /// are matched, but no collective schedule moves, so the progress mode
    /// the program chose stays what it is (MPI 4.1 §2.9 lets the library
    /// progress at any time).
    pub fn keep_alive(&mut self) -> Result<bool, AdiError> {
        self.progress_own()
    }

    /// The engine's own part of a progress pass.
    pub(super) fn progress_own(&mut self) -> Result<bool, AdiError> {
        self.st.counters.progress_passes += 1;
        let mut worked = self.flush_all()?;
        let st = &mut self.st;
        let n = self.t.poll_arrivals(&mut |src, a| st.dispatch_arrival(src, a))?;
        worked |= n > 0;
        // Messages to self go round until none is left, so that an
        // exchange with oneself (a synchronous or rendezvous send: request,
        // clear-to-send, data) completes within one pass, as the copy it
        // is — a program that drops a self-receive after one test (mpi4py's
        // test suite does) then finds its buffer already written.
        loop {
            while let Some(msg) = self.st.self_inbox.pop_front() {
                let rank = self.st.rank;
                self.st.dispatch(rank, &msg);
                worked = true;
            }
            self.apply_charges();
            if let Some(e) = self.st.error.take() {
                return Err(e);
            }
            worked |= self.rendezvous_work()?;
            worked |= self.flush_all()?;
            if self.st.self_inbox.is_empty() {
                break;
            }
        }
        if worked {
            self.charge(HostCost::Progress, 1);
        }
        self.apply_charges();
        Ok(worked)
    }

    /// Rendezvous steps that need the transport: landing zones + CTS,
    /// data transfer + FTS, and copying landed data out.
    pub(super) fn rendezvous_work(&mut self) -> Result<bool, AdiError> {
        let mut worked = false;
        // Receivers: allocate a landing zone and send CTS.
        while let Some(&id) = self.st.need_landing.front() {
            let (sender, sreq, offset, remaining) = match self.st.recv_mut(id) {
                Some(r) => {
                    let env = r.env.unwrap_or(Envelope { ctx: 0, tag: 0, src: 0, len: 0 });
                    (env.src, r.sreq, r.received, env.len - r.received)
                }
                None => {
                    self.st.need_landing.pop_front();
                    continue;
                }
            };
            let Some(region) = remote(&mut *self.t)?.alloc(remaining)? else { break };
            self.st.need_landing.pop_front();
            if let Some(r) = self.st.recv_mut(id) {
                r.region = Some(region);
            }
            let cts = Packet::Cts { sreq, rreq: id, offset, len: region.len, addr: Some(region.addr) };
            self.st.post_out(sender, Outgoing::new(cts, Payload::None, None));
            worked = true;
        }
        // Senders: move the data, then FTS.
        while let Some((dest, w)) = self.st.cts_work.pop_front() {
            worked = true;
            let last = match self.st.reqs.get(w.sreq) {
                Some(Req::Send(s)) => w.offset + w.len >= s.data.len() as u64,
                _ => continue,
            };
            match w.addr {
                Some(addr) if dest != self.st.rank => {
                    if w.len > 0 {
                        if let Some(Req::Send(s)) = self.st.reqs.get(w.sreq) {
                            let data = s.data.range(w.offset, w.len);
                            remote(&mut *self.t)?.put(dest, addr, &data)?;
                        }
                        remote(&mut *self.t)?.flush()?;
                    }
                }
                _ => {
                    // DATA packets, as large as the transport allows.
                    let chunk = (self.st.caps.max_message - SHORT_LEN).max(1) as u64;
                    let mut off = w.offset;
                    let end = w.offset + w.len;
                    while off < end {
                        let n = chunk.min(end - off);
                        let p = Packet::Data { rreq: w.rreq, offset: off, len: n };
                        self.st.post_out(
                            dest,
                            Outgoing::new(p, Payload::Slice { req: w.sreq, offset: off, len: n, lend: true }, None),
                        );
                        off += n;
                    }
                }
            }
            let fts = Packet::Fts { rreq: w.rreq, offset: w.offset, len: w.len };
            self.st.post_out(dest, Outgoing::new(fts, Payload::None, last.then_some(w.sreq)));
        }
        // Receivers: copy landed data out of the landing zone.
        while let Some((id, offset, len)) = self.st.fts_work.pop_front() {
            worked = true;
            let Some(r) = self.st.recv_mut(id) else { continue };
            let Some(region) = r.region.take() else { continue };
            let keep = r.capacity.min(r.env.map_or(0, |e| e.len));
            if offset < keep {
                let (o, n) = (offset as usize, (keep - offset).min(len) as usize);
                let t = remote(&mut *self.t)?;
                r.buf.fill(o, n, |out| t.read(&region, 0, out))?;
            }
            remote(&mut *self.t)?.free(region);
            self.st.finish_segment(id, offset + len);
        }
        Ok(worked)
    }

    /// Complete every queued send and leave the job.
    pub fn finalize(mut self) -> Result<Counters, AdiError> {
        self.wait_until(|e| {
            e.st.sendq.is_empty()
                && e.st.outbox.is_empty()
                && e.st.cts_work.is_empty()
                && e.st.need_landing.is_empty()
                && e.st.fts_work.is_empty()
        })?;
        self.t.finalize()?;
        if self.st.cfg.print_stats {
            eprintln!("[rank {}] {} backend counters:\n{}", self.st.rank, self.t.name(), self.counters());
            if let Some(r) = self.t.report() {
                eprintln!("{r}");
            }
        }
        Ok(self.counters())
    }

    /// Receive and drop every message still in the unexpected queue, and
    /// return their envelopes (source in the job, tag, context, length).
    ///
    /// For finalize, once every rank has entered it (MPI 4.1 §11.2.2: a
    /// message still unreceived then is the program's error): a
    /// rendezvous send waits for its receiver's CTS, so an unreceived one
    /// would keep its sender in finalize for good. Taking the data ends
    /// the sender's wait; the caller warns about what was dropped.
    pub fn drain_unexpected(&mut self) -> Result<Vec<Envelope>, AdiError> {
        let mut dropped = Vec::new();
        while let Some(env) = self.st.unexpected.front().map(|u| u.env) {
            // Into no room at all: the data is taken and thrown away as a
            // truncated receive's is, so nothing of the size the envelope
            // claims (a peer may lie) is allocated.
            match self.recv(Source::Rank(env.src), TagSel::Tag(env.tag), env.ctx, 0) {
                Ok(_) | Err(AdiError::Truncated { .. }) => dropped.push(env),
                Err(e) => return Err(e),
            }
        }
        Ok(dropped)
    }

    /// Requests still alive (not yet waited for or freed).
    pub fn live_requests(&self) -> usize {
        self.st.reqs.slots.len() - self.st.reqs.free.len()
    }
}
