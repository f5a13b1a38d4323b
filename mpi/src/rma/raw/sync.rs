//! Synchronisation of a window on raw memory (MPI 4.1 §12.5): fences,
//! general active target (post, start, complete, wait), passive target
//! (locks) and flushes, each as a blocking call and as a `_begin` step
//! that a non-blocking caller finishes with [`RawWindow::finish`].

use super::*;

impl RawWindow {
    // ---- synchronisation (§12.5) ------------------------------------------

    /// Ask each of `targets` to confirm everything this process sent it
    /// (the answers are waited for as [`Waiting::Replies`]).
    fn ask_confirm(&mut self, targets: Vec<Rank>) -> Result<()> {
        for &t in &targets {
            // SAFETY: `into` is `None`: the reply places nothing, so `expect` has no buffer to keep valid.
            let id = self.target(|w, _| unsafe { w.expect(t as u32, None) })?;
            self.send(t, &Msg::bare(Kind::Flush, id))?;
            self.dirty.remove(&t);
        }
        Ok(())
    }

    /// Wait until every request to `target` (all: `None`) has its reply,
    /// then report any failure.
    pub(super) fn settle(&self, target: Option<Rank>) -> Result<()> {
        self.replies_or(target, &|_| false).map(drop)
    }

    /// `MPI_Win_fence` (§12.5.1): every operation of the epoch it ends is
    /// complete at its origin and target; collective.
    pub fn fence(&mut self, assert: Assert) -> Result<()> {
        let w = self.fence_begin(assert)?;
        self.finish(w)
    }

    /// [`RawWindow::fence`] up to its waits (as [`RawWindow::lock_begin`]):
    /// the confirmations asked for; then [`RawWindow::finish_or`] waits
    /// for them, runs the barrier and opens the next epochs. A separate
    /// window's fence runs whole here.
    pub fn fence_begin(&mut self, assert: Assert) -> Result<Waiting> {
        if self.fencing.is_some() {
            return Err(MpiError::RmaSync(crate::error::RmaSyncError::Fence {
                why: "while another fence on the window is under way",
            }));
        }
        let mut next = self.epochs.clone();
        if let Err(e) = next.fence(assert.nosucceed) {
            // Out of order here (`MPI_ERR_RMA_SYNC`), but the others are
            // in the fence: take part in its barrier, then say so.
            self.fencing = Some(Fencing { next: None, outcome: Err(e), confirmed: true, barrier: None });
            return Ok(Waiting::Fence);
        }
        let dirty: Vec<Rank> = std::mem::take(&mut self.dirty).into_iter().collect();
        let (outcome, confirmed) = if self.card.is_some() {
            // Separate model: every put landed, local stores out; after
            // everyone's, the public copy in.
            (self.card_complete().and_then(|_| self.publish()).and_then(|_| self.settle(None)), true)
        } else {
            (self.ask_confirm(dirty), false)
        };
        // A failure of this rank's operations (a target refused an access)
        // is this rank's to report, but the fence is collective: the
        // others are in its barrier, and the window goes on to the next
        // epoch for everyone.
        self.fencing = Some(Fencing { next: Some(next), outcome, confirmed, barrier: None });
        Ok(Waiting::Fence)
    }

    /// The rest of a fence, `false` where `stop` gave up a wait.
    fn fence_or(&mut self, stop: &dyn Fn(bool) -> bool) -> Result<bool> {
        let Some(mut f) = self.fencing.take() else { return Ok(true) };
        let r = self.fence_steps(&mut f, stop);
        match r {
            Ok(false) => {
                self.fencing = Some(f);
                Ok(false)
            }
            Ok(true) => {
                let Some(next) = f.next else { return f.outcome.map(|_| true) };
                self.refresh()?;
                self.epochs = next;
                f.outcome.and_then(|_| self.conflicts()).map(|_| true)
            }
            Err(e) => Err(e),
        }
    }

    fn fence_steps(&mut self, f: &mut Fencing, stop: &dyn Fn(bool) -> bool) -> Result<bool> {
        if !f.confirmed {
            match self.replies_or(None, stop) {
                Ok(false) => return Ok(false),
                Ok(true) => {}
                Err(e) if f.outcome.is_ok() => f.outcome = Err(e),
                Err(_) => {}
            }
            f.confirmed = true;
        }
        let barrier = match &f.barrier {
            Some(b) => b,
            None => f.barrier.insert(crate::coll::CommunicatorCollectives::immediate_barrier(&self.comm)?),
        };
        let shared = self.comm.shared().clone();
        if !shared.borrow_mut().wait_until_or(|c| barrier.is_done(c), stop)? {
            return Ok(false);
        }
        if let Some(b) = f.barrier.take() {
            b.finish_blocking()?;
        }
        Ok(true)
    }

    /// `MPI_Win_start` (§12.5.2): an access epoch to the processes of
    /// `group` (ranks in the window's group), once each has posted.
    pub fn start(&mut self, group: &[Rank], assert: Assert) -> Result<()> {
        let w = self.start_begin(group, assert)?;
        self.finish(w)
    }

    /// [`RawWindow::start`] up to its wait for the targets' posts (as
    /// [`RawWindow::lock_begin`]).
    pub fn start_begin(&mut self, group: &[Rank], assert: Assert) -> Result<Waiting> {
        for &r in group {
            self.check_rank(r)?;
        }
        self.epochs.start(group.to_vec())?;
        Ok(if assert.nocheck { Waiting::Nothing } else { Waiting::Posts })
    }

    /// The posts of every target of the access epoch `MPI_Win_start`
    /// opened, taken once all have come; `false` where `stop` gave up.
    fn posts_or(&self, stop: &dyn Fn(bool) -> bool) -> Result<bool> {
        let crate::rma::epoch::Access::Start(group) = &self.epochs.access else { return Ok(true) };
        let posted = |w: &Win| group.iter().all(|&t| w.notices(t as u32, true) > 0);
        let mut c = self.comm.shared().borrow_mut();
        if !c.wait_until_or(|c| self.looking(c, posted), stop)? {
            return Ok(false);
        }
        drop(c);
        for &t in group {
            self.target(|w, _| {
                w.consume_notice(t as u32, true);
                Ok(())
            })?;
        }
        Ok(true)
    }

    /// `MPI_Win_complete`: the epoch of `MPI_Win_start` ends; its
    /// operations are complete here, and each target learns it.
    pub fn complete(&mut self) -> Result<()> {
        let w = self.complete_begin()?;
        self.finish(w)
    }

    /// [`RawWindow::complete`] up to its wait for the replies still due
    /// (as [`RawWindow::lock_begin`]).
    pub fn complete_begin(&mut self) -> Result<Waiting> {
        let group = self.epochs.complete()?;
        // On the card, the puts must have landed before a target hears of
        // it. A failure is reported after every target has heard: each
        // waits for its notice in MPI_Win_wait.
        let landed = self.card_complete();
        for &t in &group {
            self.send(t, &Msg::bare(Kind::Complete, 0))?;
            self.dirty.remove(&t);
        }
        match landed {
            Ok(()) => Ok(Waiting::Replies(None)),
            Err(e) => Err(self.settle(None).err().unwrap_or(e)),
        }
    }

    /// `MPI_Win_post` (§12.5.2): expose the window to the processes of
    /// `group`.
    pub fn post(&mut self, group: &[Rank], assert: Assert) -> Result<()> {
        for &r in group {
            self.check_rank(r)?;
        }
        self.epochs.post(group.to_vec())?;
        self.publish()?;
        if !assert.nocheck {
            for &o in group {
                self.send(o, &Msg::bare(Kind::Post, 0))?;
            }
        }
        self.conflicts()
    }

    fn all_completed(w: &Win, origins: &[Rank]) -> bool {
        let mut need = std::collections::BTreeMap::<u32, u32>::new();
        for &o in origins {
            *need.entry(o as u32).or_default() += 1;
        }
        need.iter().all(|(o, n)| w.notices(*o, false) >= *n)
    }

    fn end_exposure(&mut self, origins: &[Rank]) -> Result<()> {
        for &o in origins {
            self.target(|w, _| {
                w.consume_notice(o as u32, false);
                Ok(())
            })?;
        }
        self.epochs.end_post();
        self.refresh()?;
        self.failures()
    }

    /// `MPI_Win_wait`: the epoch of `MPI_Win_post` ends once every origin
    /// of its group has completed.
    pub fn wait_exposure(&mut self) -> Result<()> {
        let w = self.wait_exposure_begin()?;
        self.finish(w)
    }

    /// [`RawWindow::wait_exposure`] up to its wait (as
    /// [`RawWindow::lock_begin`]).
    pub fn wait_exposure_begin(&mut self) -> Result<Waiting> {
        self.epochs.posted()?;
        Ok(Waiting::Completions)
    }

    /// The end of the exposure epoch once every origin has completed;
    /// `false` where `stop` gave up.
    fn completions_or(&mut self, stop: &dyn Fn(bool) -> bool) -> Result<bool> {
        let origins = self.epochs.posted()?.to_vec();
        let done = self
            .comm
            .shared()
            .borrow_mut()
            .wait_until_or(|c| self.looking(c, |w| Self::all_completed(w, &origins)), stop)?;
        if done {
            self.end_exposure(&origins)?;
        }
        Ok(done)
    }

    /// `MPI_Win_test`: [`RawWindow::wait_exposure`] if every origin has
    /// completed (`true`), else nothing (`false`).
    pub fn test_exposure(&mut self) -> Result<bool> {
        let origins = self.epochs.posted()?.to_vec();
        self.comm.shared().borrow_mut().progress()?;
        let ready = self.looking(&mut self.comm.shared().borrow_mut(), |w| Self::all_completed(w, &origins))?;
        if ready {
            self.end_exposure(&origins)?;
        }
        Ok(ready)
    }

    /// `MPI_Win_lock` (§12.5.3): a passive-target epoch at `rank`, once
    /// the target grants the lock.
    pub fn lock(&mut self, kind: LockType, rank: Rank, assert: Assert) -> Result<()> {
        let w = self.lock_begin(kind, rank, assert)?;
        self.finish(w)
    }

    /// [`RawWindow::lock`] up to its wait: the request is out, and what is
    /// left is [`RawWindow::finish`] (or [`RawWindow::finish_or`], which
    /// lets another thread in while it waits: `MPI_THREAD_MULTIPLE`).
    pub fn lock_begin(&mut self, kind: LockType, rank: Rank, assert: Assert) -> Result<Waiting> {
        self.failures()?;
        if rank == PROC_NULL {
            return Ok(Waiting::Nothing);
        }
        self.check_rank(rank)?;
        self.epochs.lock(rank, kind, assert.nocheck)?;
        if self.card.is_none() {
            if assert.nocheck {
                return Ok(Waiting::Nothing);
            }
            self.send_locks(&[rank], kind)?;
            return Ok(Waiting::Replies(None));
        }
        if !assert.nocheck {
            self.take_locks(&[rank], kind)?;
        }
        if rank == self.comm.rank() {
            // A lock of one's own window: the private copy sees the public one.
            self.merge()?;
        }
        self.conflicts().map(|_| Waiting::Nothing)
    }

    /// The card's locks, taken (they do not wait for the target's CPU).
    fn take_locks(&mut self, ranks: &[Rank], kind: LockType) -> Result<()> {
        let excl = kind == LockType::Exclusive;
        self.on_card(|card, e| ranks.iter().try_for_each(|&t| card.hold(e, t as usize, card::LOCK, excl)))
            .unwrap_or(Ok(()))
    }

    /// Lock requests out to `ranks` (messages); granted when answered.
    fn send_locks(&mut self, ranks: &[Rank], kind: LockType) -> Result<()> {
        let flags = if kind == LockType::Exclusive { EXCLUSIVE } else { 0 };
        for &t in ranks {
            // SAFETY: `into` is `None`: the reply places nothing, so `expect` has no buffer to keep valid.
            let id = self.target(|w, _| unsafe { w.expect(t as u32, None) })?;
            self.send(t, &Msg { flags, ..Msg::bare(Kind::Lock, id) })?;
        }
        Ok(())
    }

    fn release_begin(&mut self, ranks: &[Rank], kind: LockType, nocheck: bool) -> Result<Waiting> {
        if self.card.is_some() {
            self.card_complete()?;
            if ranks.contains(&self.comm.rank()) {
                self.merge()?;
            }
            let excl = kind == LockType::Exclusive;
            if !nocheck {
                self.on_card(|card, e| ranks.iter().try_for_each(|&t| card.release(e, t as usize, card::LOCK, excl)))
                    .unwrap_or(Ok(()))?;
            }
            return self.settle(None).and_then(|_| self.conflicts()).map(|_| Waiting::Nothing);
        }
        for &t in ranks {
            // SAFETY: `into` is `None`: the reply places nothing, so `expect` has no buffer to keep valid.
            let id = self.target(|w, _| unsafe { w.expect(t as u32, None) })?;
            self.send(t, &Msg::bare(if nocheck { Kind::Flush } else { Kind::Unlock }, id))?;
            self.dirty.remove(&t);
        }
        Ok(Waiting::Replies(None))
    }

    /// `MPI_Win_unlock`: the epoch at `rank` ends; its operations are
    /// complete there.
    pub fn unlock(&mut self, rank: Rank) -> Result<()> {
        let w = self.unlock_begin(rank)?;
        self.finish(w)
    }

    /// [`RawWindow::unlock`] up to its wait (as [`RawWindow::lock_begin`]).
    pub fn unlock_begin(&mut self, rank: Rank) -> Result<Waiting> {
        if rank == PROC_NULL {
            return Ok(Waiting::Nothing);
        }
        self.check_rank(rank)?;
        let l = self.epochs.unlock(rank)?;
        self.release_begin(&[rank], l.kind, l.nocheck)
    }

    /// `MPI_Win_lock_all`: a shared passive-target epoch at every process.
    pub fn lock_all(&mut self, assert: Assert) -> Result<()> {
        let w = self.lock_all_begin(assert)?;
        self.finish(w)
    }

    /// [`RawWindow::lock_all`] up to its wait (as [`RawWindow::lock_begin`]).
    pub fn lock_all_begin(&mut self, assert: Assert) -> Result<Waiting> {
        self.failures()?;
        self.epochs.lock_all(assert.nocheck)?;
        let all: Vec<Rank> = (0..self.peers.len() as Rank).collect();
        if self.card.is_none() {
            if assert.nocheck {
                return Ok(Waiting::Nothing);
            }
            self.send_locks(&all, LockType::Shared)?;
            return Ok(Waiting::Replies(None));
        }
        if !assert.nocheck {
            self.take_locks(&all, LockType::Shared)?;
        }
        self.merge()?;
        self.conflicts().map(|_| Waiting::Nothing)
    }

    /// `MPI_Win_unlock_all`.
    pub fn unlock_all(&mut self) -> Result<()> {
        let w = self.unlock_all_begin()?;
        self.finish(w)
    }

    /// [`RawWindow::unlock_all`] up to its wait (as [`RawWindow::lock_begin`]).
    pub fn unlock_all_begin(&mut self) -> Result<Waiting> {
        let nocheck = self.epochs.unlock_all()?;
        let all: Vec<Rank> = (0..self.peers.len() as Rank).collect();
        self.release_begin(&all, LockType::Shared, nocheck)
    }

    /// `MPI_Win_flush` (`Some(rank)`) and `MPI_Win_flush_all` (`None`):
    /// every operation to the target(s) is complete there.
    pub fn flush(&mut self, rank: Option<Rank>) -> Result<()> {
        let w = self.flush_begin(rank)?;
        self.finish(w)
    }

    /// [`RawWindow::flush`] up to its wait (as [`RawWindow::lock_begin`]).
    pub fn flush_begin(&mut self, rank: Option<Rank>) -> Result<Waiting> {
        if rank == Some(PROC_NULL) {
            return Ok(Waiting::Nothing);
        }
        if let Some(r) = rank {
            self.check_rank(r)?;
        }
        self.epochs.flush(rank)?;
        if self.card.is_some() {
            self.card_complete()?;
            return self.settle(rank).map(|_| Waiting::Nothing);
        }
        let targets: Vec<Rank> = self.dirty.iter().copied().filter(|t| rank.is_none_or(|r| r == *t)).collect();
        for &t in &targets {
            // SAFETY: `into` is `None`: the reply places nothing, so `expect` has no buffer to keep valid.
            let id = self.target(|w, _| unsafe { w.expect(t as u32, None) })?;
            self.send(t, &Msg::bare(Kind::Flush, id))?;
            self.dirty.remove(&t);
        }
        Ok(Waiting::Replies(rank))
    }

    /// The end of a synchronisation a `*_begin` call started: wait for
    /// what it left.
    pub fn finish(&mut self, w: Waiting) -> Result<()> {
        self.finish_or(w, &|_| false).map(drop)
    }

    /// [`RawWindow::finish`], giving up (`false`) where it would idle once
    /// `stop` says so: another thread wants the library
    /// (`MPI_THREAD_MULTIPLE`, as `mpi::request::settle_until`). Call it
    /// again with the same `w` until it returns `true`.
    pub fn finish_or(&mut self, w: Waiting, stop: &dyn Fn(bool) -> bool) -> Result<bool> {
        match w {
            Waiting::Nothing => Ok(true),
            Waiting::Replies(t) => self.replies_or(t, stop),
            Waiting::Posts => self.posts_or(stop),
            Waiting::Completions => self.completions_or(stop),
            Waiting::Fence => self.fence_or(stop),
        }
    }

    /// The replies to every request to `target` (all: `None`), then any
    /// failure they reported; `false` where `stop` gave up.
    fn replies_or(&self, target: Option<Rank>, stop: &dyn Fn(bool) -> bool) -> Result<bool> {
        let mut c = self.comm.shared().borrow_mut();
        // One progress pass whatever is due: a program that spins on its
        // own window with flushes or syncs (mpi4py's `util.sync`) must see
        // what others sent it (MPI 4.1 §2.9: MPI calls make progress).
        c.progress()?;
        let done = c.wait_until_or(|c| self.looking(c, |w| w.outstanding(target.map(|t| t as u32)) == 0), stop)?;
        drop(c);
        if done {
            self.failures()?;
        }
        Ok(done)
    }

    /// `MPI_Win_flush_local` and `_local_all`: every operation to the
    /// target(s) is complete here (origin buffers free, results in place).
    pub fn flush_local(&mut self, rank: Option<Rank>) -> Result<()> {
        if rank == Some(PROC_NULL) {
            return Ok(());
        }
        if let Some(r) = rank {
            self.check_rank(r)?;
        }
        self.epochs.flush(rank)?;
        self.card_complete()?;
        self.settle(rank)
    }
}
