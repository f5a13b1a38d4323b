//! The DIMMnet-2 backend as the engine sees it: its `Transport`,
//! `SimClock` and `RemoteMemory` implementations.

use super::*;

impl Transport for DimmnetTransport {
    fn name(&self) -> &'static str {
        BACKEND
    }

    fn node(&self) -> Option<u32> {
        Some(u32::from(self.map.peer(self.rank).node))
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn caps(&self) -> Caps {
        // A message may use half a ring and must fit PW when read back.
        let max = (self.cfg.ring_bytes as usize / 2).min(PW_COPY as usize) - DN_HDR;
        Caps { max_message: max, eager_threshold: self.cfg.eager_threshold.min(max - 64) }
    }

    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.caps().max_message {
            return Err(TransportError::Backend {
                backend: BACKEND,
                msg: format!("a {len}-byte message exceeds the backend maximum"),
            });
        }
        self.connect(dest)?;
        if record_len((DN_HDR + len) as u64) + CREDIT_RESERVE > self.room(dest) {
            return Ok(false);
        }
        self.send_record(dest, KIND_MSG, parts)?;
        Ok(true)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError> {
        // Whole messages, assembled in a buffer kept across calls.
        let mut whole = std::mem::take(&mut self.rx);
        let mut failed = None;
        let n = self.poll_arrivals(&mut |src, a| {
            whole.resize(a.len(), 0);
            match a.read_from(0, &mut whole) {
                Ok(()) => sink(src, &whole),
                Err(e) => failed = Some(e),
            }
        });
        self.rx = whole;
        match failed {
            Some(e) => Err(e),
            None => n,
        }
    }

    fn poll_arrivals(&mut self, sink: &mut dyn FnMut(u32, &mut dyn Arrival)) -> Result<usize, TransportError> {
        self.dev.observe().map_err(map_err)?;
        if matches!(self.incoming, Incoming::Queue { .. }) {
            return self.poll_queue(sink);
        }
        let mut n = 0;
        for i in 0..self.size {
            let s = (self.next_poll + i) % self.size;
            if s != self.rank {
                n += self.drain_ring(s, sink)?;
            }
        }
        self.next_poll = (self.next_poll + 1) % self.size;
        self.return_credit()?;
        Ok(n)
    }

    fn idle(&mut self) -> Result<(), TransportError> {
        let mut words = std::mem::take(&mut self.idle_words);
        words.clear();
        match &self.incoming {
            Incoming::Scan { watch, .. } if !self.off.busy() => {
                self.idle_words = words;
                return self.dev.idle_on(watch).map_err(map_err);
            }
            Incoming::Scan { watch, .. } => words.extend_from_slice(watch),
            Incoming::Queue { cursor, .. } => words.push(self.dev.arrivals_watch(cursor)),
        }
        self.off.watch(&mut words);
        let r = self.dev.idle_on(&words).map_err(map_err);
        self.idle_words = words;
        r
    }

    fn waker(&mut self) -> Result<Option<Arc<dyn crate::transport::Waker>>, TransportError> {
        Ok(self.dev.poker().map_err(map_err)?.map(|p| Arc::new(p) as Arc<dyn crate::transport::Waker>))
    }

    fn offload(&mut self) -> Option<&mut dyn crate::offload::Offload> {
        // Only a device that has the collective engine.
        if self.dev.info().caps.contains(fpga_regs::ur::Caps::SCHED) {
            Some(self)
        } else {
            None
        }
    }

    fn sim_clock(&self) -> Option<&dyn SimClock> {
        // Real hardware has no simulated time.
        self.dev.now_ps().map(|_| self as &dyn SimClock)
    }

    fn one_sided(&mut self) -> Option<&mut dyn crate::transport::OneSided> {
        Some(self)
    }

    fn remote_memory(&mut self) -> Option<&mut dyn RemoteMemory> {
        Some(self)
    }

    fn finalize(&mut self) -> Result<(), TransportError> {
        RemoteMemory::flush(self)?;
        self.ww.drain(&mut self.dev)?;
        self.dev.detach();
        Ok(())
    }
}

/// Simulated time is the simulator's, reached through the driver's platform.
impl SimClock for DimmnetTransport {
    fn charge(&self, cost: HostCost, n: u64) {
        self.dev.charge(cost, n);
    }

    fn expect_ranks(&self, count: u32) {
        self.dev.expect_actors(count);
    }

    fn now_ps(&self) -> u64 {
        self.dev.now_ps().unwrap_or(0)
    }

    fn compute(&self, ns: f64) -> Result<(), TransportError> {
        self.dev.compute(ns).map_err(map_err)
    }

    fn pause(&self, ns: f64) -> Result<(), TransportError> {
        self.dev.pause(ns).map_err(map_err)
    }

    fn cost_counts(&self) -> Vec<u64> {
        self.dev.cost_counts().map(|c| c.to_vec()).unwrap_or_default()
    }

    fn cost_table(&self) -> Vec<u64> {
        self.dev.cost_table().map(|c| c.to_vec()).unwrap_or_default()
    }
}

/// Rendezvous data goes with RVS from WW straight into a landing zone of
/// the receiver's partition (seed 004 §5), which it reads back through VL.
impl RemoteMemory for DimmnetTransport {
    fn alloc(&mut self, len: u64) -> Result<Option<Region>, TransportError> {
        let Some(i) = self.zones.iter().position(|z| !z) else { return Ok(None) };
        self.zones[i] = true;
        let addr = self.landing_base + i as u64 * self.cfg.zone_bytes;
        Ok(Some(Region { addr, len: len.min(self.cfg.zone_bytes), id: i as u32 }))
    }

    fn put(&mut self, dest: u32, addr: u64, data: &[u8]) -> Result<(), TransportError> {
        let peer = self.map.peer(dest);
        let mut puts = std::mem::take(&mut self.puts);
        let r = self.through_ww(addr, data, |ww, dst| Command::Rvs { peer, src: Near::Window(ww), dst }, &mut puts);
        self.puts = puts;
        r
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        for t in std::mem::take(&mut self.puts) {
            match self.dev.wait(t) {
                Ok(_) | Err(DriverError::UnknownTicket(_)) => {} // already reaped by the WW allocator
                Err(e) => return Err(map_err(e)),
            }
        }
        Ok(())
    }

    fn read(&mut self, region: &Region, offset: u64, out: &mut [u8]) -> Result<(), TransportError> {
        self.load(region.addr + offset, out)
    }

    fn free(&mut self, region: Region) {
        if let Some(z) = self.zones.get_mut(region.id as usize) {
            *z = false;
        }
    }
}
