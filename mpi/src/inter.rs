//! Intercommunicators (MPI 4.1 §7.6): two disjoint groups, where a send
//! names a rank of the other group and a collective moves data from one
//! group to the other (§6.2.2).
//!
//! An intercommunicator is a [`SimpleCommunicator`] whose point-to-point
//! ranks refer to the remote group (`SimpleCommunicator::peers`). Each
//! one has three context ids, agreed by both groups when it is made:
//! `ctx` for point-to-point, `ctx + 1` for its collectives, and a private
//! intracommunicator over the local group on `ctx + 2`/`ctx + 3` for the
//! collectives' local steps.
//!
//! The collectives are blocking, and linear between the groups: the root
//! talks to each remote process, and where both groups send to each
//! other, the "low" group (the one whose leader has the lower job rank)
//! sends first, so that neither side can wait on the other.

use std::rc::Rc;

use crate::coll::{IntoOperation, Root};
use crate::comm::{Communicator, Group, Inter, SimpleCommunicator};
use crate::datatype::Equivalence;
use crate::error::{CollectiveError, InterError, MpiError, Result};
use crate::{Rank, Tag};

/// The root argument of a rooted intercommunicator collective (§6.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterRoot {
    /// This process is the root (`MPI_ROOT`).
    Here,
    /// Another process of this group is the root (`MPI_PROC_NULL`).
    Idle,
    /// The root is this rank of the remote group.
    Remote(Rank),
}

impl InterRoot {
    /// The root a C call's `root` argument names on intercommunicator `c`
    /// (§6.2.2): `MPI_ROOT` (`-4`) in the root's group, `MPI_PROC_NULL`
    /// for the others of that group, a rank of the remote group in the
    /// other group.
    pub fn from_arg(c: &SimpleCommunicator, root: Rank) -> Result<InterRoot> {
        let remote = c.remote_members().map_or(0, |m| m.len()) as Rank;
        match root {
            abi_def::MPI_ROOT => Ok(InterRoot::Here),
            crate::PROC_NULL => Ok(InterRoot::Idle),
            r if (0..remote).contains(&r) => Ok(InterRoot::Remote(r)),
            r => Err(MpiError::Root { root: r, size: remote }),
        }
    }
}

/// Tags of the intercommunicator's own messages, on its collective
/// context (and its local communicator's): below the schedules' tags
/// (`1 << 30` and up) and apart from the splits' (2, 3).
mod tag {
    pub const AGREE: i32 = 16;
    pub const BCAST: i32 = 17;
    pub const GATHER: i32 = 18;
    pub const SCATTER: i32 = 19;
    pub const ALLGATHER: i32 = 20;
    pub const ALLTOALL: i32 = 21;
    pub const REDUCE: i32 = 22;
    pub const BARRIER: i32 = 23;
    pub const SPLIT: i32 = 24;
    pub const REDUCE_SCATTER: i32 = 25;
    /// `MPI_Intercomm_create`'s messages carry the user's tag in the low bits.
    pub const CREATE: i32 = 1 << 28;
}

/// What a local leader sends its members when `MPI_Intercomm_create`
/// failed there, then whether it was a port's error (a reply of two
/// words; a real one has at least three: the id, low, a member).
const FAILED: u32 = u32::MAX;
/// After [`FAILED`]: the leader's failure was a port's (`MPI_ERR_PORT`).
const FAILED_PORT: u32 = 1;
/// After [`FAILED`]: the leader's failure was a spawn's (`MPI_ERR_SPAWN`).
const FAILED_SPAWN: u32 = 2;

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn unwords(b: &[u8]) -> Result<Vec<u32>> {
    if b.len() % 4 != 0 {
        return Err(MpiError::Corrupt { what: "corrupt intercommunicator agreement" });
    }
    Ok(b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// `got` into `into`, which must be the same length (§6.2.2: the amount
/// of data sent must equal the amount received).
fn place(into: &mut [u8], got: &[u8], call: &str) -> Result<()> {
    if got.len() != into.len() {
        return Err(CollectiveError::InterBlock { call: call.to_string(), got: got.len(), want: into.len() }.into());
    }
    into.copy_from_slice(got);
    Ok(())
}

impl SimpleCommunicator {
    /// Whether this is an intercommunicator (`MPI_Comm_test_inter`).
    pub fn is_inter(&self) -> bool {
        self.inter.is_some()
    }

    /// The remote group's job ranks, in its rank order
    /// (`MPI_Comm_remote_group`), for an intercommunicator.
    pub fn remote_members(&self) -> Option<&[u32]> {
        self.inter.as_ref().map(|i| &i.remote.members[..])
    }

    /// An error naming `what` on an intercommunicator.
    pub(crate) fn intra_only(&self, what: &str) -> Result<()> {
        if self.is_inter() {
            return Err(InterError::IntraOnly { what: what.to_string() }.into());
        }
        Ok(())
    }

    fn inter_parts(&self) -> Result<&Inter> {
        self.inter.as_deref().ok_or(MpiError::Inter(InterError::NotInter))
    }

    /// Make an intercommunicator between this communicator's group and
    /// the group whose leader is `remote_leader` of `peer`
    /// (`MPI_Intercomm_create`, §7.6.2). Every process of both groups
    /// calls it; `local_leader` and `remote_leader` need only be
    /// meaningful at the leaders, and `tag` tells concurrent creations
    /// on `peer` apart.
    pub fn create_intercomm(
        &self,
        local_leader: Rank,
        peer: &SimpleCommunicator,
        remote_leader: Rank,
        tag: Tag,
    ) -> Result<SimpleCommunicator> {
        self.intra_only("the local communicator of MPI_Intercomm_create")?;
        let t = tag::CREATE | (tag & 0x0FFF_FFFF);
        self.intercomm_with(local_leader, t, "MPI_Intercomm_create", |ctx| {
            let them = peer.job_rank(remote_leader)?;
            let me = self.group.members[self.rank as usize];
            if them == me {
                return Err(InterError::LeaderIsSelf.into());
            }
            let mine: Vec<u32> = [ctx].into_iter().chain(self.group.members.iter().copied()).collect();
            let low = me < them;
            let theirs = if low {
                peer.coll_send(remote_leader, t, &words(&mine))?;
                unwords(&peer.coll_recv(remote_leader, t)?)?
            } else {
                let theirs = unwords(&peer.coll_recv(remote_leader, t)?)?;
                peer.coll_send(remote_leader, t, &words(&mine))?;
                theirs
            };
            let (&rctx, remote) =
                theirs.split_first().ok_or(MpiError::Corrupt { what: "corrupt intercommunicator agreement" })?;
            Ok((ctx.max(rctx), low, remote.to_vec()))
        })
    }

    /// An intercommunicator of this group and another (`call`: the
    /// calls of §7.6.2 and §11.10), collective here: `local_leader`
    /// gathers the members' next free context ids (messages tagged `t`),
    /// runs `exchange` with the largest, which meets the other group's
    /// leader and gives the context id both groups use, whether this
    /// group is the low one, and the other group's members; whatever
    /// happens there, the members hear of it, so that a failure at the
    /// leader does not leave them waiting.
    pub(crate) fn intercomm_with(
        &self,
        local_leader: Rank,
        t: i32,
        call: &str,
        exchange: impl FnOnce(u32) -> Result<(u32, bool, Vec<u32>)>,
    ) -> Result<SimpleCommunicator> {
        self.job_rank(local_leader)?;
        let next = self.shared.borrow().next_ctx;
        let (ctx, low, remote) = if self.rank == local_leader {
            let mut ctx = next;
            for r in (0..self.size()).filter(|&r| r != local_leader) {
                ctx = ctx.max(*unwords(&self.coll_recv(r, t)?)?.first().unwrap_or(&0));
            }
            let outcome = exchange(ctx);
            let out: Vec<u32> = match &outcome {
                Ok((ctx, low, remote)) => [*ctx, u32::from(*low)].into_iter().chain(remote.iter().copied()).collect(),
                // The kind of failure goes too: a bad port is a bad port
                // at every member (`MPI_ERR_PORT`), not only at the root.
                Err(e) => vec![
                    FAILED,
                    match e {
                        MpiError::Port(_) => FAILED_PORT,
                        MpiError::Spawn(_) => FAILED_SPAWN,
                        _ => 0,
                    },
                ],
            };
            for r in (0..self.size()).filter(|&r| r != local_leader) {
                self.coll_send(r, t, &words(&out))?;
            }
            outcome?
        } else {
            self.coll_send(local_leader, t, &words(&[next]))?;
            let got = unwords(&self.coll_recv(local_leader, t)?)?;
            match got[..] {
                [FAILED, kind] => {
                    let call = call.to_string();
                    return Err(match kind {
                        FAILED_PORT => crate::error::PortError::AtLeader { call }.into(),
                        FAILED_SPAWN => crate::error::SpawnError::AtLeader { call }.into(),
                        _ => InterError::AtLeader { call }.into(),
                    });
                }
                [ctx, low, ref remote @ ..] => (ctx, low != 0, remote.to_vec()),
                _ => return Err(MpiError::Corrupt { what: "corrupt intercommunicator agreement" }),
            }
        };
        self.check_agreed(ctx, &remote)?;
        if let Some(m) = remote.iter().find(|&&m| self.group.comm_rank(m) >= 0) {
            return Err(InterError::NotDisjoint { call: call.to_string(), process: *m }.into());
        }
        Ok(self.inter_from(ctx, self.group.members.clone(), remote, low))
    }

    /// Check what another process sent in an agreement, which a corrupt or
    /// forged message could make anything: a context id with room for the
    /// four an intercommunicator takes, below `MPI_COMM_SELF`'s, and
    /// members that are distinct processes of the job.
    fn check_agreed(&self, ctx: u32, remote: &[u32]) -> Result<()> {
        crate::context::check_agreed(ctx, 4)?;
        let n = self.shared.borrow_mut().engine()?.size();
        let mut seen = std::collections::HashSet::new();
        if let Some(m) = remote.iter().find(|&&m| m >= n || !seen.insert(m)) {
            return Err(crate::error::ContextError::RemoteMember { member: *m, size: n }.into());
        }
        Ok(())
    }

    /// An intercommunicator on context `ctx` from the processes `local`
    /// (this one among them) to `remote`.
    pub(crate) fn inter_from(&self, ctx: u32, local: Vec<u32>, remote: Vec<u32>, low: bool) -> SimpleCommunicator {
        // An idup's ids are the leader's to hand out, not the agreements'.
        if ctx < crate::context::DUP_BASE {
            let mut sh = self.shared.borrow_mut();
            sh.next_ctx = sh.next_ctx.max(ctx + 4);
        }
        let base = self.make_child(local, ctx);
        let inter = Inter {
            remote: Rc::new(Group::new(remote)),
            local: base.make_child(base.group.members.clone(), ctx + 2),
            low,
        };
        SimpleCommunicator { inter: Some(Rc::new(inter)), ..base }
    }

    /// Both groups agree on a context id free everywhere, and each learns
    /// the other's `extra` word: the local leaders exchange them.
    fn inter_agree(&self, extra: u32) -> Result<(u32, u32)> {
        let i = self.inter_parts()?;
        let next = self.shared.borrow().next_ctx;
        let local = &i.local;
        let (ctx, theirs) = if local.rank == 0 {
            let mut ctx = next;
            for r in 1..local.size() {
                ctx = ctx.max(*unwords(&local.coll_recv(r, tag::AGREE)?)?.first().unwrap_or(&0));
            }
            let got = self.leaders_swap(&words(&[ctx, extra]), tag::AGREE)?;
            let (rctx, rextra) = match unwords(&got)?[..] {
                [c, e] => (c, e),
                _ => return Err(MpiError::Corrupt { what: "corrupt intercommunicator agreement" }),
            };
            let ctx = ctx.max(rctx);
            for r in 1..local.size() {
                local.coll_send(r, tag::AGREE, &words(&[ctx, rextra]))?;
            }
            (ctx, rextra)
        } else {
            local.coll_send(0, tag::AGREE, &words(&[next]))?;
            match unwords(&local.coll_recv(0, tag::AGREE)?)?[..] {
                [c, e] => (c, e),
                _ => return Err(MpiError::Corrupt { what: "corrupt intercommunicator agreement" }),
            }
        };
        self.check_agreed(ctx, &[])?;
        let mut sh = self.shared.borrow_mut();
        sh.next_ctx = sh.next_ctx.max(ctx + 4);
        Ok((ctx, theirs))
    }

    /// The local leader's `mine` for the remote leader's, the low group's
    /// leader sending first.
    fn leaders_swap(&self, mine: &[u8], t: i32) -> Result<Vec<u8>> {
        if self.inter_parts()?.low {
            self.coll_send(0, t, mine)?;
            self.coll_recv(0, t)
        } else {
            let got = self.coll_recv(0, t)?;
            self.coll_send(0, t, mine)?;
            Ok(got)
        }
    }

    /// A duplicate with new contexts (`MPI_Comm_dup` of an intercommunicator).
    pub(crate) fn inter_duplicate(&self) -> Result<SimpleCommunicator> {
        let (ctx, _) = self.inter_agree(0)?;
        let i = self.inter_parts()?;
        Ok(self.inter_from(ctx, self.group.members.clone(), i.remote.members.clone(), i.low))
    }

    /// `MPI_Comm_split` of an intercommunicator (§7.4.2): each group is
    /// split by color, and the two groups' subgroups of one color form a
    /// new intercommunicator, ordered by key and then by old rank. A
    /// process whose color is negative (`MPI_UNDEFINED`), or whose color
    /// the other group does not have, gets none.
    ///
    /// All the new intercommunicators share one context id, agreed by
    /// both groups: their processes are disjoint. Each group's colors and
    /// keys are gathered locally; the leaders swap the tables.
    pub(crate) fn inter_split(&self, color: i32, key: i32) -> Result<Option<SimpleCommunicator>> {
        let i = self.inter_parts()?;
        let mine: Vec<u8> = color.to_le_bytes().into_iter().chain(key.to_le_bytes()).collect();
        let table = i.local.allgather_bytes(&mine)?.concat();
        let (ctx, _) = self.inter_agree(0)?;
        let theirs = if i.local.rank == 0 {
            let got = self.leaders_swap(&table, tag::SPLIT)?;
            for r in 1..i.local.size() {
                i.local.coll_send(r, tag::SPLIT, &got)?;
            }
            got
        } else {
            i.local.coll_recv(0, tag::SPLIT)?
        };
        if table.len() != 8 * self.group.members.len() || theirs.len() != 8 * i.remote.members.len() {
            return Err(MpiError::Corrupt { what: "corrupt intercommunicator split table" });
        }
        if color < 0 {
            return Ok(None);
        }
        // The members of `members` whose entry in `table` has this color,
        // by (key, rank).
        let pick = |table: &[u8], members: &[u32]| -> Vec<u32> {
            let word = |e: &[u8], at: usize| i32::from_le_bytes([e[at], e[at + 1], e[at + 2], e[at + 3]]);
            let mut g: Vec<(i32, usize, u32)> = table
                .chunks_exact(8)
                .zip(members)
                .enumerate()
                .filter(|(_, (e, _))| word(e, 0) == color)
                .map(|(r, (e, &m))| (word(e, 4), r, m))
                .collect();
            g.sort_unstable();
            g.into_iter().map(|(_, _, m)| m).collect()
        };
        let remote = pick(&theirs, &i.remote.members);
        if remote.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.inter_from(ctx, pick(&table, &self.group.members), remote, i.low)))
    }

    /// The intracommunicator of both groups (`MPI_Intercomm_merge`,
    /// §7.6.2): the group that passed `high = false` first; when both
    /// passed the same, the low group first.
    pub fn merge(&self, high: bool) -> Result<SimpleCommunicator> {
        let (ctx, their_high) = self.inter_agree(u32::from(high))?;
        let i = self.inter_parts()?;
        let mine_first = if high == (their_high != 0) { i.low } else { !high };
        let (a, b) = if mine_first { (&self.group, &i.remote) } else { (&i.remote, &self.group) };
        let members = a.members.iter().chain(&b.members).copied().collect();
        Ok(self.make_child(members, ctx))
    }

    /// `MPI_Barrier` on an intercommunicator: no process leaves before
    /// every process of both groups has entered.
    pub(crate) fn inter_barrier(&self) -> Result<()> {
        let i = self.inter_parts()?;
        i.local.barrier()?;
        if i.local.rank == 0 {
            self.leaders_swap(&[], tag::BARRIER)?;
        }
        // Nobody leaves this one before the leader, who has heard from the
        // other group, enters it.
        i.local.barrier()
    }

    /// `MPI_Bcast` on an intercommunicator: `buf` goes from the root to
    /// every process of the other group.
    pub fn inter_broadcast(&self, root: InterRoot, buf: &mut [u8]) -> Result<()> {
        let i = self.inter_parts()?;
        match root {
            InterRoot::Here => self.coll_send(0, tag::BCAST, buf),
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(r) => {
                if i.local.rank == 0 {
                    place(buf, &self.coll_recv(r, tag::BCAST)?, "MPI_Bcast")?;
                }
                i.local.process_at_rank(0).broadcast_into(buf)
            }
        }
    }

    /// `MPI_Gather(v)` on an intercommunicator: the root receives block
    /// `r` of `recv` from remote rank `r`.
    pub fn inter_gather(&self, root: InterRoot, send: &[u8], recv: &mut [&mut [u8]]) -> Result<()> {
        self.inter_parts()?;
        match root {
            InterRoot::Here => {
                for (r, block) in recv.iter_mut().enumerate() {
                    place(block, &self.coll_recv(r as Rank, tag::GATHER)?, "MPI_Gather")?;
                }
                Ok(())
            }
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(r) => self.coll_send(r, tag::GATHER, send),
        }
    }

    /// `MPI_Scatter(v)` on an intercommunicator: the root sends block `r`
    /// of `send` to remote rank `r`.
    pub fn inter_scatter(&self, root: InterRoot, send: &[&[u8]], recv: &mut [u8]) -> Result<()> {
        self.inter_parts()?;
        match root {
            InterRoot::Here => {
                for (r, block) in send.iter().enumerate() {
                    self.coll_send(r as Rank, tag::SCATTER, block)?;
                }
                Ok(())
            }
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(r) => place(recv, &self.coll_recv(r, tag::SCATTER)?, "MPI_Scatter"),
        }
    }

    /// Send `send[r]` to each remote rank `r` and receive `recv[r]` from
    /// it, the low group sending first.
    fn exchange(&self, send: &[&[u8]], recv: &mut [&mut [u8]], t: i32, call: &str) -> Result<()> {
        let i = self.inter_parts()?;
        let n = i.remote.members.len();
        if send.len() != n || recv.len() != n {
            return Err(CollectiveError::RemoteBlocks {
                call: call.to_string(),
                send: send.len(),
                recv: recv.len(),
                remote: n,
            }
            .into());
        }
        let sends = |c: &Self| send.iter().enumerate().try_for_each(|(r, b)| c.coll_send(r as Rank, t, b));
        if i.low {
            sends(self)?;
        }
        for (r, block) in recv.iter_mut().enumerate() {
            place(block, &self.coll_recv(r as Rank, t)?, call)?;
        }
        if !i.low {
            sends(self)?;
        }
        Ok(())
    }

    /// `MPI_Allgather(v)` on an intercommunicator: `recv[r]` is remote
    /// rank `r`'s `send`.
    pub fn inter_all_gather(&self, send: &[u8], recv: &mut [&mut [u8]]) -> Result<()> {
        let blocks = vec![send; recv.len()];
        self.exchange(&blocks, recv, tag::ALLGATHER, "MPI_Allgather")
    }

    /// `MPI_Alltoall(v)` on an intercommunicator: `send[r]` goes to remote
    /// rank `r`, whose block for this process arrives in `recv[r]`.
    pub fn inter_all_to_all(&self, send: &[&[u8]], recv: &mut [&mut [u8]]) -> Result<()> {
        self.exchange(send, recv, tag::ALLTOALL, "MPI_Alltoall")
    }

    /// The reduction of the local group's `send`, at local rank 0.
    fn local_reduce<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], op: O) -> Result<Vec<T>> {
        let i = self.inter_parts()?;
        let root = i.local.process_at_rank(0);
        let mut acc = send.to_vec();
        if i.local.rank == 0 {
            root.reduce_into_root(send, &mut acc, op)?;
        } else {
            root.reduce_into(send, op)?;
        }
        Ok(acc)
    }

    /// `MPI_Reduce` on an intercommunicator: the root receives the
    /// reduction of the other group's `send`.
    pub fn inter_reduce<T: Equivalence, O: IntoOperation<T>>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<()> {
        match root {
            InterRoot::Here => place(bytemuck::cast_slice_mut(recv), &self.coll_recv(0, tag::REDUCE)?, "MPI_Reduce"),
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(r) => {
                let acc = self.local_reduce(send, op)?;
                if self.rank == 0 {
                    self.coll_send(r, tag::REDUCE, bytemuck::cast_slice(&acc))?;
                }
                Ok(())
            }
        }
    }

    /// `MPI_Allreduce` on an intercommunicator: every process receives the
    /// reduction of the other group's `send`.
    pub fn inter_all_reduce<T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<()> {
        let acc = self.local_reduce(send, op)?;
        let i = self.inter_parts()?;
        if i.local.rank == 0 {
            let theirs = self.leaders_swap(bytemuck::cast_slice(&acc), tag::REDUCE)?;
            place(bytemuck::cast_slice_mut(recv), &theirs, "MPI_Allreduce")?;
        }
        i.local.process_at_rank(0).broadcast_into(recv)
    }

    /// `MPI_Reduce_scatter(_block)` on an intercommunicator (§6.11.2):
    /// the reduction of the other group's `send` is scattered over this
    /// group, `counts[r]` elements to local rank `r`. Both groups' `send`
    /// hold the same number of elements, the sum of `counts`.
    ///
    /// Each group reduces at its leader, the leaders swap the results and
    /// scatter them. A leader whose counts do not match what arrived
    /// sends each member a block one byte too long, so that every process
    /// gets an error rather than waiting.
    pub fn inter_reduce_scatter<T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: O,
    ) -> Result<()> {
        let i = self.inter_parts()?;
        let size = std::mem::size_of::<T>();
        if counts.len() != self.group.members.len() || send.len() != counts.iter().sum::<usize>() {
            return Err(CollectiveError::ReduceScatterCounts {
                counts: counts.len(),
                size: self.group.members.len(),
                send: send.len(),
                total: counts.iter().sum::<usize>(),
            }
            .into());
        }
        let acc = self.local_reduce(send, op)?;
        if i.local.rank != 0 {
            let got = i.local.coll_recv(0, tag::REDUCE_SCATTER)?;
            return place(bytemuck::cast_slice_mut(recv), &got, "MPI_Reduce_scatter");
        }
        let theirs = self.leaders_swap(bytemuck::cast_slice(&acc), tag::REDUCE_SCATTER)?;
        let agreed = theirs.len() == acc.len() * size;
        let mut at = counts[0] * size;
        for (r, &k) in counts.iter().enumerate().skip(1) {
            let block = match theirs.get(at..at + k * size) {
                Some(b) if agreed => b.to_vec(),
                _ => vec![0; k * size + 1],
            };
            i.local.coll_send(r as Rank, tag::REDUCE_SCATTER, &block)?;
            at += k * size;
        }
        if !agreed {
            return Err(CollectiveError::GroupsDiffer { theirs: theirs.len(), ours: acc.len() * size }.into());
        }
        place(bytemuck::cast_slice_mut(recv), &theirs[..counts[0] * size], "MPI_Reduce_scatter")
    }
}
