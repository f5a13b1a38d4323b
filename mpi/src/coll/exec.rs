//! The one executor of collective schedules: a node fires when all its
//! predecessors are done (seed 002 §3: "issue" and "query"). Blocking
//! collectives run it to completion; non-blocking ones advance it from
//! `test` and `wait`.
//!
//! A collective that fails on one member (counts that do not match, MPI
//! 4.1 §6.1: a message longer or shorter than its receive) would leave the
//! others waiting for messages that member will never send. So the member
//! that finds the fault withdraws its receives and sends and tells every
//! other member in a notice (round [`NOTICE_ROUND`] of the collective's
//! tag); a member still waiting in that collective finds the notice and
//! fails too, naming the rank and the fault. Every member ends, none
//! waits for ever, and the communicator stays usable: the next collective
//! has another sequence number, so nothing left of this one can match it.

use adi::offload::{OffloadId, Program, Span, Step, StepKind};
use adi::{Done, Engine, HostCost, ReqId, Source, TagSel};

use super::op::Operation;
use super::schedule::{Kind, Schedule, Slice, BUF_RECV, NOTICE_ROUND};
use crate::error::{CollectiveError, MpiError, Result};

/// Which collective a schedule carries out, as the MPI operation the
/// program called (a blocking call and its non-blocking form are one
/// kind; the v-forms are their plain form's kind, since the roots of some
/// and the leaves of others call either). Part of every message tag, so
/// that messages of different collectives never match, and a process that
/// finds another's kind in its collective's place reports the mismatch
/// (MPI 4.1 §6.1: every process calls the same collective).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum CollKind {
    /// `MPI_Barrier`.
    Barrier = 1,
    /// `MPI_Bcast`.
    Bcast,
    /// `MPI_Gather(v)`.
    Gather,
    /// `MPI_Scatter(v)`.
    Scatter,
    /// `MPI_Allgather(v)`.
    Allgather,
    /// `MPI_Alltoall(v)`.
    Alltoall,
    /// `MPI_Reduce`.
    Reduce,
    /// `MPI_Allreduce` (and `MPI_Reduce_scatter`, built on it).
    Allreduce,
    /// `MPI_Reduce_scatter_block`.
    ReduceScatterBlock,
    /// `MPI_Scan`.
    Scan,
    /// `MPI_Exscan`.
    Exscan,
    /// A neighbourhood collective or `MPI_Alltoallw` (one exchange of blocks).
    Neighbor,
    /// A schedule of the program's own (seed 002's API).
    Schedule,
    /// `MPI_Comm_idup`'s context id, from the leader to every member
    /// (`crate::dup`; also `MPI_Comm_create` under
    /// `MPI_THREAD_MULTIPLE`).
    Dup,
    /// `MPI_Comm_create_group`'s context id under `MPI_THREAD_MULTIPLE`,
    /// from the group's first process to the others, numbered by the
    /// call's tag (`crate::dup`).
    CreateGroup,
}

impl CollKind {
    const ALL: [CollKind; 15] = [
        CollKind::Barrier,
        CollKind::Bcast,
        CollKind::Gather,
        CollKind::Scatter,
        CollKind::Allgather,
        CollKind::Alltoall,
        CollKind::Reduce,
        CollKind::Allreduce,
        CollKind::ReduceScatterBlock,
        CollKind::Scan,
        CollKind::Exscan,
        CollKind::Neighbor,
        CollKind::Schedule,
        CollKind::Dup,
        CollKind::CreateGroup,
    ];

    /// The kind with this number in a tag.
    fn from_bits(bits: u32) -> Option<CollKind> {
        CollKind::ALL.into_iter().find(|k| *k as u32 == bits)
    }

    /// What the program called, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CollKind::Barrier => "MPI_Barrier",
            CollKind::Bcast => "MPI_Bcast",
            CollKind::Gather => "MPI_Gather(v)",
            CollKind::Scatter => "MPI_Scatter(v)",
            CollKind::Allgather => "MPI_Allgather(v)",
            CollKind::Alltoall => "MPI_Alltoall(v)",
            CollKind::Reduce => "MPI_Reduce",
            CollKind::Allreduce => "MPI_Allreduce or MPI_Reduce_scatter",
            CollKind::ReduceScatterBlock => "MPI_Reduce_scatter_block",
            CollKind::Scan => "MPI_Scan",
            CollKind::Exscan => "MPI_Exscan",
            CollKind::Neighbor => "a neighbourhood collective or MPI_Alltoallw",
            CollKind::Schedule => "a schedule of its own",
            CollKind::Dup => "MPI_Comm_idup",
            CollKind::CreateGroup => "MPI_Comm_create_group",
        }
    }
}

/// Where a collective sits in its communicator's matching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seq {
    /// The collective's number among those started on the communicator:
    /// every member starts them in the same order (MPI 4.1 §6.1).
    Started(u32),
    /// A start of a persistent collective: its number among the persistent
    /// collectives initialized on the communicator, which every member
    /// initializes in the same order but may start in any (§6.13), then
    /// its start and its schedule within the start, a few bits each.
    Persistent(u32),
}

/// A collective's identity on its communicator: 14 bits of its sequence
/// number there (outstanding non-blocking collectives never match each
/// other's messages, up to 16,384 of them at once), a bit set for a
/// persistent collective's start (numbered apart, [`Seq::Persistent`]) and
/// 5 bits of its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp(u32);

impl Stamp {
    const SEQ_BITS: u32 = 14;
    const KIND_BITS: u32 = 6;
    const PERSISTENT: u32 = 1 << 5;

    pub(crate) fn new(seq: Seq, kind: CollKind) -> Stamp {
        let (n, flag) = match seq {
            Seq::Started(n) => (n, 0),
            Seq::Persistent(n) => (n, Self::PERSISTENT),
        };
        Stamp(((n & ((1 << Self::SEQ_BITS) - 1)) << Self::KIND_BITS) | flag | kind as u32)
    }

    /// The stamp in a collective message's tag (see [`tag`]).
    fn of_tag(tag: i32) -> Stamp {
        Stamp((tag as u32 >> 10) & ((1 << (Self::SEQ_BITS + Self::KIND_BITS)) - 1))
    }

    /// The same place in the matching order: sequence number, and
    /// persistent or not.
    fn same_place(self, other: Stamp) -> bool {
        self.0 >> 5 == other.0 >> 5
    }

    /// A message of collective `self` that collective `other` on the same
    /// communicator meets shows that the members called different
    /// collectives: same place, other kind. Idups and group creations are
    /// numbered apart from the other collectives (`crate::dup`), so never.
    fn mismatches(self, other: Stamp) -> bool {
        let dup = |s: Stamp| matches!(s.kind(), Some(CollKind::Dup | CollKind::CreateGroup));
        self.same_place(other) && self != other && !dup(self) && !dup(other)
    }

    fn kind(self) -> Option<CollKind> {
        CollKind::from_bits(self.0 & (Self::PERSISTENT - 1))
    }

    /// The sequence number's low bits, for messages.
    fn seq(self) -> u32 {
        self.0 >> Self::KIND_BITS
    }
}

/// The message tag of a schedule node: collective messages travel on the
/// communicator's collective context with bit 30 set (the library's own
/// internal messages use small tags there), the collective's [`Stamp`]
/// (20 bits) and 10 bits of round.
pub(crate) fn tag(stamp: Stamp, round: u32) -> i32 {
    ((1 << 30) | (stamp.0 << 10) | (round & 0x3FF)) as i32
}

/// Whether a message with `ctx` and `tag` is a collective's (see [`tag`]):
/// on a collective context (odd), with bit 30 of the tag set.
pub(crate) fn is_collective(ctx: u32, tag: i32) -> bool {
    ctx % 2 == 1 && tag & (1 << 30) != 0
}

/// A schedule being executed, with its buffers.
pub(crate) struct Exec {
    sched: Schedule,
    bufs: Vec<Vec<u8>>,
    op: Option<Operation>,
    /// Job rank of each communicator rank.
    members: Vec<u32>,
    ctx: u32,
    stamp: Stamp,
    /// Predecessors not yet done, per node.
    missing: Vec<u32>,
    /// Successors, flattened: `succ[succ_start[i]..succ_start[i + 1]]`.
    succ_start: Vec<u32>,
    succ: Vec<u32>,
    ready: Vec<u32>,
    /// Receives in flight, and sends whose completion the collective waits for.
    running: Vec<(u32, ReqId)>,
    sends: Vec<ReqId>,
    done: usize,
    /// Every node done and every send completed.
    complete: bool,
    /// The part of the receive buffer that is the result (`None`: all of it).
    result: Option<(usize, usize)>,
    /// Why the execution stopped, until its request reports it.
    error: Option<MpiError>,
    /// The fault found here, while the notices to the other members go out.
    failing: Option<MpiError>,
    /// The execution failed on another member's notice (it is not passed on).
    notified: bool,
    /// The device executes it (`DN_NBC_PROGRESS=offload`).
    device: Option<OffloadId>,
    /// The receive buffer's initial contents were copied to the device.
    staged_recv: bool,
}

impl Exec {
    /// Prepare `sched` with the caller's `send` bytes and a receive buffer
    /// of `recv` (its initial contents matter for in-place operations and
    /// broadcast roots).
    pub(crate) fn new(
        sched: Schedule,
        send: Vec<u8>,
        recv: Vec<u8>,
        op: Option<Operation>,
        members: Vec<u32>,
        ctx: u32,
        stamp: Stamp,
    ) -> Result<Exec> {
        sched
            .validate(send.len() as u64, recv.len() as u64, members.len() as u32)
            .map_err(|e| MpiError::Internal { what: format!("bad collective schedule: {e}") })?;
        let n = sched.nodes.len();
        let mut bufs = vec![send, recv];
        bufs.extend(sched.tmp.iter().map(|&l| vec![0u8; l as usize]));
        let mut count = vec![0u32; n + 1];
        for i in 0..n {
            for &p in sched.preds(i) {
                count[p as usize] += 1;
            }
        }
        let mut succ_start = vec![0u32; n + 1];
        for i in 0..n {
            succ_start[i + 1] = succ_start[i] + count[i];
        }
        let mut fill = succ_start.clone();
        let mut succ = vec![0u32; sched.deps.len()];
        for i in 0..n {
            for &p in sched.preds(i) {
                succ[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
            }
        }
        let missing: Vec<u32> = (0..n).map(|i| sched.preds(i).len() as u32).collect();
        let ready = (0..n as u32).rev().filter(|&i| missing[i as usize] == 0).collect();
        Ok(Exec {
            sched,
            bufs,
            op,
            members,
            ctx,
            stamp,
            missing,
            succ_start,
            succ,
            ready,
            running: Vec::new(),
            sends: Vec::new(),
            done: 0,
            complete: false,
            result: None,
            error: None,
            failing: None,
            notified: false,
            device: None,
            staged_recv: false,
        })
    }

    /// Whether a device could execute this schedule: it has nodes, and
    /// its operation (if any) is one a reduction unit has. The answer
    /// depends on the operation only, never on whether this rank's part
    /// reduces (a leaf of a reduction tree does not), so that every rank
    /// of a correct program makes the same choice and the messages of one
    /// collective all go the same way. A rank without nodes exchanges no
    /// messages, so its choice does not matter.
    pub(crate) fn offloadable(&self) -> bool {
        !self.sched.nodes.is_empty() && self.op.as_ref().is_none_or(|o| o.device.is_some())
    }

    /// The schedule as a device program's steps (peers as job ranks).
    /// Building it is host work, one ADI operation per node; done once per
    /// collective, however long the device keeps the start waiting.
    pub(crate) fn offload_steps(&mut self, e: &Engine) -> Vec<Step> {
        e.charge(HostCost::AdiOp, self.sched.nodes.len() as u64);
        // Copying into device memory is host work (PIO through WW): skip the
        // receive buffer when no node reads it before a predecessor wrote it
        // (a broadcast's non-roots, a gather's leaves).
        self.staged_recv = self.reads_recv_first();
        let span = |s: &Slice| Span { buf: s.buf, off: s.off, len: s.len };
        self.sched
            .nodes
            .iter()
            .map(|n| Step {
                kind: match n.kind {
                    Kind::Send => StepKind::Send,
                    Kind::Recv => StepKind::Recv,
                    Kind::Calc => StepKind::Reduce,
                    Kind::Copy => StepKind::Copy,
                },
                src: span(&n.src),
                dst: span(&n.dst),
                peer: if matches!(n.kind, Kind::Send | Kind::Recv) { self.members[n.peer as usize] } else { 0 },
                round: n.round,
                first_dep: n.first_dep,
                n_deps: n.n_deps,
            })
            .collect()
    }

    /// Hand the schedule (its `steps`, from [`Exec::offload_steps`]) to the
    /// device: `Ok(false)` when it has no room right now (try again after
    /// progress), an error when it never will.
    pub(crate) fn try_offload(&mut self, e: &mut Engine, steps: &[Step]) -> Result<bool> {
        let bufs: Vec<u64> = self.bufs.iter().map(|b| b.len() as u64).collect();
        let reduce = self.op.as_ref().and_then(|o| o.device);
        // Messages of one collective: its communicator's collective context
        // and its stamp there (as the host executor's tags): collectives of
        // different kinds never match, and the simulator reports the wait.
        let key = ((self.ctx as u64) << 32) | self.stamp.0 as u64;
        let prog = Program { steps, deps: &self.sched.deps, bufs: &bufs, reduce, key };
        let recv: &[u8] = if self.staged_recv { &self.bufs[1] } else { &[] };
        let Some(dev) = e.offload() else { return Ok(true) };
        match dev.offload_start(&prog, &self.bufs[0], recv).map_err(adi::AdiError::from)? {
            Some(id) => {
                self.device = Some(id);
                // Only the receive buffer is used again (for the result).
                self.bufs[0] = Vec::new();
                self.bufs.iter_mut().skip(BUF_RECV as usize + 1).for_each(|b| *b = Vec::new());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Whether some node reads bytes of the receive buffer that none of its
    /// (transitive) predecessors wrote first: then the buffer's initial
    /// contents matter (in-place operations, a broadcast's root).
    fn reads_recv_first(&self) -> bool {
        let nodes = &self.sched.nodes;
        let writes = |n: &super::schedule::Node| matches!(n.kind, Kind::Recv | Kind::Calc | Kind::Copy);
        let covers = |w: &Slice, r: &Slice| w.buf == r.buf && w.off <= r.off && r.off + r.len <= w.off + w.len;
        let mut seen = vec![false; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            let mut reads: Vec<Slice> = Vec::new();
            if matches!(n.kind, Kind::Send | Kind::Calc | Kind::Copy) && n.src.buf == BUF_RECV {
                reads.push(n.src);
            }
            if n.kind == Kind::Calc && n.dst.buf == BUF_RECV {
                reads.push(n.dst);
            }
            for r in reads.into_iter().filter(|r| r.len > 0) {
                // Search the ancestors for a writer that covers the read.
                seen.iter_mut().for_each(|s| *s = false);
                let mut stack: Vec<u32> = self.sched.preds(i).to_vec();
                let mut found = false;
                while let Some(p) = stack.pop() {
                    if std::mem::replace(&mut seen[p as usize], true) {
                        continue;
                    }
                    let pn = &nodes[p as usize];
                    if writes(pn) && covers(&pn.dst, &r) {
                        found = true;
                        break;
                    }
                    stack.extend_from_slice(self.sched.preds(p as usize));
                }
                if !found {
                    return true;
                }
            }
        }
        false
    }

    /// The parts of `lo..hi` of the receive buffer that some node writes,
    /// merged and sorted.
    fn written_recv(&self, lo: usize, hi: usize) -> Vec<(usize, usize)> {
        let mut w: Vec<(usize, usize)> = self
            .sched
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, Kind::Recv | Kind::Calc | Kind::Copy) && n.dst.buf == BUF_RECV)
            .map(|n| ((n.dst.off as usize).max(lo), ((n.dst.off + n.dst.len) as usize).min(hi)))
            .filter(|(a, b)| a < b)
            .collect();
        w.sort_unstable();
        let mut out: Vec<(usize, usize)> = Vec::with_capacity(w.len());
        for (a, b) in w {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        out
    }

    /// Whether the device is executing it.
    pub(crate) fn on_device(&self) -> bool {
        self.device.is_some()
    }

    /// Progress of a schedule on the device: collect the result once it ended.
    fn device_progress(&mut self, e: &mut Engine, id: OffloadId) -> Result<bool> {
        let dev = e.offload().ok_or_else(|| MpiError::Internal { what: "the offload device went away".into() })?;
        if !dev.offload_test(id).map_err(adi::AdiError::from)? {
            return Ok(false);
        }
        // Only the result comes back (PIO reads through PW are the dearest
        // host work on DIMMnet-2), and, when the receive buffer was not
        // copied in, only what the schedule wrote: the rest of the caller's
        // buffer keeps its contents (MPI leaves a gatherv's gaps alone).
        let len = self.bufs[BUF_RECV as usize].len();
        let (lo, hi) = self.result.map_or((0, len), |(o, l)| (o, o + l));
        let ranges = if self.staged_recv { vec![(lo, hi)] } else { self.written_recv(lo, hi) };
        let mut read = Ok(());
        for (a, b) in ranges {
            read = dev.offload_read(id, a as u64, &mut self.bufs[BUF_RECV as usize][a..b]);
            if read.is_err() {
                break;
            }
        }
        dev.offload_release(id);
        read.map_err(adi::AdiError::from)?;
        self.device = None;
        self.done = self.sched.nodes.len();
        Ok(true)
    }

    fn slice(&self, s: &Slice) -> &[u8] {
        &self.bufs[s.buf as usize][s.off as usize..(s.off + s.len) as usize]
    }

    fn finish(&mut self, i: u32) {
        self.done += 1;
        let (a, b) = (self.succ_start[i as usize] as usize, self.succ_start[i as usize + 1] as usize);
        for k in a..b {
            let s = self.succ[k] as usize;
            self.missing[s] -= 1;
            if self.missing[s] == 0 {
                self.ready.push(s as u32);
            }
        }
    }

    fn fire(&mut self, e: &mut Engine, i: u32) -> Result<()> {
        let n = self.sched.nodes[i as usize];
        match n.kind {
            Kind::Send => {
                let data = self.slice(&n.src).to_vec();
                let id = e.isend(self.members[n.peer as usize], tag(self.stamp, n.round), self.ctx, data, false)?;
                // The data was copied: the buffer may be reused at once.
                self.sends.push(id);
                self.finish(i);
            }
            Kind::Recv => {
                let src = Source::Rank(self.members[n.peer as usize]);
                let id = e.irecv(src, TagSel::Tag(tag(self.stamp, n.round)), self.ctx, n.dst.len)?;
                self.running.push((i, id));
            }
            Kind::Copy | Kind::Calc => {
                e.charge(HostCost::CopyByte, n.src.len);
                let op = match n.kind {
                    Kind::Calc => Some(self.op.clone().ok_or_else(|| MpiError::Internal {
                        what: "a reduction schedule without an operation".into(),
                    })?),
                    _ => None,
                };
                let (a, b) = (n.src.buf as usize, n.dst.buf as usize);
                let range = |s: &Slice| s.off as usize..(s.off + s.len) as usize;
                // Two buffers: borrow both; one buffer: the source is copied
                // first, since the ranges may overlap.
                let copied;
                let (src, dst): (&[u8], &mut [u8]) = if a == b {
                    copied = self.bufs[a][range(&n.src)].to_vec();
                    (&copied, &mut self.bufs[b][range(&n.dst)])
                } else if a < b {
                    let (lo, hi) = self.bufs.split_at_mut(b);
                    (&lo[a][range(&n.src)], &mut hi[0][range(&n.dst)])
                } else {
                    let (lo, hi) = self.bufs.split_at_mut(a);
                    (&hi[0][range(&n.src)], &mut lo[b][range(&n.dst)])
                };
                match op {
                    Some(op) => (op.f)(src, dst),
                    None => dst.copy_from_slice(src),
                }
                self.finish(i);
            }
        }
        Ok(())
    }

    /// Start what can start and collect what finished; `true` once every
    /// node is done and every send has completed. The caller drives the
    /// engine's progress (every wait of the library does, between calls).
    pub(crate) fn progress(&mut self, e: &mut Engine) -> Result<bool> {
        if let Some(id) = self.device {
            return self.device_progress(e, id);
        }
        loop {
            while let Some(i) = self.ready.pop() {
                self.fire(e, i)?;
            }
            let mut finished = false;
            let mut k = 0;
            while k < self.running.len() {
                let (i, id) = self.running[k];
                // The caller drives the engine; here only collect what finished.
                let done = if e.is_done(id)? { Some(e.wait(id)?) } else { None };
                match done {
                    Some(Done::Received { status, data }) => {
                        self.running.swap_remove(k);
                        let n = self.sched.nodes[i as usize];
                        if data.len() as u64 != n.dst.len {
                            return Err(CollectiveError::BlockSize {
                                rank: status.source as i32,
                                got: data.len() as u64,
                                want: n.dst.len,
                            }
                            .into());
                        }
                        self.bufs[n.dst.buf as usize][n.dst.off as usize..(n.dst.off + n.dst.len) as usize]
                            .copy_from_slice(&data);
                        self.finish(i);
                        finished = true;
                    }
                    Some(Done::Sent) => {
                        self.running.swap_remove(k);
                        self.finish(i);
                        finished = true;
                    }
                    Some(Done::Placed { .. } | Done::Cancelled) => {
                        return Err(MpiError::Internal { what: "a collective's receive completed unlike one".into() })
                    }
                    None => k += 1,
                }
            }
            if !finished && self.ready.is_empty() {
                break;
            }
        }
        if self.done < self.sched.nodes.len() {
            self.look_for_notice(e)?;
            return Ok(false);
        }
        // Every completed send is collected (not only the last): a wait that
        // ended because one of them completed must find it gone, or it
        // would return at once again and spin.
        let mut k = 0;
        while k < self.sends.len() {
            if e.is_done(self.sends[k])? {
                e.wait(self.sends[k])?;
                self.sends.swap_remove(k);
            } else {
                k += 1;
            }
        }
        Ok(self.sends.is_empty())
    }

    /// Progress once, keeping an error for the owner; `true` once the
    /// execution has ended (completed or failed).
    pub(crate) fn advance(&mut self, e: &mut Engine) -> bool {
        if self.complete || self.error.is_some() {
            return true;
        }
        if self.failing.is_some() {
            return self.notices_sent(e);
        }
        match self.progress(e) {
            Ok(done) => {
                self.complete = done;
                done
            }
            Err(err) => self.fail(e, err),
        }
    }

    /// The execution failed with `err`: withdraw every receive and send it
    /// has in flight (their peers are told, or told us), and unless a
    /// notice told us, tell every other member.
    fn fail(&mut self, e: &mut Engine, err: MpiError) -> bool {
        for (_, id) in self.running.drain(..) {
            e.abandon(id);
        }
        for id in self.sends.drain(..) {
            e.abandon(id);
        }
        if self.notified || self.device.is_some() {
            self.error = Some(err);
            return true;
        }
        let me = e.rank();
        let mut text = err.to_string();
        let mut cut = text.len().min(1024);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        for &m in self.members.iter().filter(|&&m| m != me) {
            // Best effort: a member that cannot be reached fails on its own.
            if let Ok(id) = e.isend(m, tag(self.stamp, NOTICE_ROUND), self.ctx, text.as_bytes().to_vec(), false) {
                self.sends.push(id);
            }
        }
        self.failing = Some(err);
        self.notices_sent(e)
    }

    /// Whether the notices of a failure have gone out; the failure is then
    /// the execution's outcome.
    fn notices_sent(&mut self, e: &mut Engine) -> bool {
        let mut k = 0;
        while k < self.sends.len() {
            let id = self.sends[k];
            match e.is_done(id) {
                Ok(false) => k += 1,
                // Sent; or it failed, and that member fails on its own.
                done => {
                    match done {
                        Ok(_) => drop(e.wait(id)),
                        Err(_) => e.abandon(id),
                    }
                    self.sends.swap_remove(k);
                }
            }
        }
        if self.sends.is_empty() {
            self.error = self.failing.take();
        }
        self.error.is_some()
    }

    /// A notice from a member that found this collective broken: this
    /// member fails too, with the fault that member found. Or a message of
    /// another kind of collective in this one's place (same sequence
    /// number): the processes called different collectives, and this
    /// member fails, naming both, and tells the others.
    fn look_for_notice(&mut self, e: &mut Engine) -> Result<()> {
        let me = self.stamp;
        let notice = tag(me, NOTICE_ROUND);
        let found =
            e.peek_unexpected(self.ctx, &|_, t| t == notice || (t & (1 << 30) != 0 && Stamp::of_tag(t).mismatches(me)));
        let Some(st) = found else { return Ok(()) };
        let rank = self.members.iter().position(|&m| m == st.source).map_or(-1, |r| r as i64);
        if st.tag != notice {
            let theirs = Stamp::of_tag(st.tag).kind().map_or("an unknown collective", CollKind::name);
            let mine = me.kind().map_or("an unknown collective", CollKind::name);
            return Err(CollectiveError::DifferentCalls {
                rank: rank as i32,
                theirs: theirs.to_string(),
                mine: mine.to_string(),
                seq: u64::from(me.seq()),
            }
            .into());
        }
        let sel = TagSel::Tag(notice);
        let id = e.irecv(Source::Rank(st.source), sel, self.ctx, st.len)?;
        let text = match e.wait(id)? {
            Done::Received { data, .. } => String::from_utf8_lossy(&data).into_owned(),
            _ => String::new(),
        };
        self.notified = true;
        Err(CollectiveError::FailedAt { rank: rank as i32, reason: text }.into())
    }

    /// Nodes done so far (to tell whether a pass did anything).
    pub(crate) fn done_nodes(&self) -> usize {
        self.done
    }

    /// `Ok(true)` once complete, the error if it failed (reported once).
    pub(crate) fn outcome(&mut self) -> Result<bool> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self.complete),
        }
    }

    /// Whether the execution has ended (completed or failed).
    pub(crate) fn ended(&self) -> bool {
        self.complete || self.error.is_some()
    }

    /// Only `len` bytes at `off` of the receive buffer are the result.
    pub(crate) fn set_result(&mut self, off: usize, len: usize) {
        self.result = Some((off, len));
    }

    /// The result (after completion): the receive buffer, or its part set
    /// with [`Exec::set_result`].
    pub(crate) fn take_recv(&mut self) -> Vec<u8> {
        let all = std::mem::take(&mut self.bufs[BUF_RECV as usize]);
        match self.result {
            Some((off, len)) => all.get(off..off + len).map(<[u8]>::to_vec).unwrap_or_default(),
            None => all,
        }
    }
}

impl crate::comm::SimpleCommunicator {
    /// The place of the next collective on this communicator: the next
    /// started number, or, while a persistent collective starts, its place
    /// (each start launches one schedule).
    pub(crate) fn next_coll_seq(&self) -> Seq {
        if let Some(p) = self.group.starting.get() {
            return Seq::Persistent(p);
        }
        let s = self.group.coll_seq.get();
        self.group.coll_seq.set(s.wrapping_add(1));
        Seq::Started(s)
    }
}
