//! Non-blocking duplication (`MPI_Comm_idup`, MPI 4.1 §7.4.2).
//!
//! A blocking duplicate agrees on a context id free at every member: the
//! largest of the members' next free ids. That needs every member's
//! answer before anyone can go on, so two ranks that start idups on
//! overlapping communicators in different orders, or that send to each
//! other before waiting, would wait for ever.
//!
//! An idup needs no agreement. The context ids from `DUP_BASE` (2^30) up are
//! shared out among the job's processes: process `p` of `n` owns the
//! blocks of four ids `DUP_BASE + 4 * (p + n * k)`, `k = 0, 1, ...`, and
//! hands them out in order as the *leader* of an idup (rank 0 of an
//! intracommunicator; rank 0 of the low group of an intercommunicator,
//! whose duplicate takes all four ids). No other process ever hands out a
//! leader's ids, and the blocking agreements stay below `DUP_BASE`, so the
//! leader's choice is free everywhere. The leader picks it at the call;
//! the others learn it from a broadcast that runs as a schedule, like any
//! non-blocking collective, over both groups of an intercommunicator.

use std::cell::RefCell;
use std::rc::Rc;

use crate::coll::exec::CollKind;
use crate::comm::{SimpleCommunicator, SELF_CTX};
use crate::request::Request;
use crate::staged::Staged;
use crate::{MpiError, Result};

/// The first context id of the idups' share; the blocking agreements
/// hand out ids below it.
pub(crate) const DUP_BASE: u32 = 1 << 30;

/// A context id a blocking agreement settled on, which must leave room
/// for the `ids` it takes below [`DUP_BASE`].
pub(crate) fn check_agreed(ctx: u32, ids: u32) -> Result<()> {
    if ctx.checked_add(ids).is_none_or(|end| end > DUP_BASE) {
        return Err(MpiError::Invalid(format!(
            "no context id is left for a new communicator (agreed on {ctx}; {DUP_BASE} ids in all): \
             free communicators the program no longer uses"
        )));
    }
    Ok(())
}

/// The duplicate an idup makes, once its broadcast has completed.
type Made = Rc<RefCell<Option<Result<SimpleCommunicator>>>>;

/// An `MPI_Comm_idup` under way: the broadcast of the new context id,
/// and the duplicate it makes when it completes.
pub struct Duplicating {
    staged: Staged,
    made: Made,
}

impl Duplicating {
    /// Wait for the duplicate (`MPI_Wait` on the idup's request).
    pub fn wait(self) -> Result<SimpleCommunicator> {
        self.staged.wait()?;
        take(&self.made)
    }

    /// The duplicate if it is made, the operation back if not.
    pub fn test(self) -> Result<std::result::Result<SimpleCommunicator, Duplicating>> {
        match self.staged.test()? {
            Ok(_) => take(&self.made).map(Ok),
            Err(staged) => Ok(Err(Duplicating { staged, made: self.made })),
        }
    }

    /// The operation, for a request table, and the cell the duplicate
    /// appears in when the operation completes ([`DupCell::take`]).
    pub fn into_parts(self) -> (Staged, DupCell) {
        (self.staged, DupCell(self.made))
    }
}

/// Where an idup's duplicate appears once its operation has completed.
pub struct DupCell(Made);

impl DupCell {
    /// The duplicate (or why it could not be made), once the operation
    /// has completed; `None` before.
    pub fn take(&self) -> Option<Result<SimpleCommunicator>> {
        self.0.borrow_mut().take()
    }
}

fn take(made: &Made) -> Result<SimpleCommunicator> {
    made.borrow_mut()
        .take()
        .unwrap_or_else(|| Err(MpiError::Invalid("internal: MPI_Comm_idup completed without its communicator".into())))
}

impl SimpleCommunicator {
    /// Start duplicating this communicator without waiting for the other
    /// members (`MPI_Comm_idup`, §7.4.2): the duplicate has the same
    /// group (both groups, for an intercommunicator), its topology, and
    /// new contexts. Every member calls it, in the same order as its
    /// other collectives on this communicator.
    pub fn immediate_duplicate(&self) -> Result<Duplicating> {
        // Both groups of an intercommunicator, the low one first: the
        // leader is its rank 0.
        let (members, me) = match &self.inter {
            None => (self.group.members.clone(), self.rank as u32),
            Some(i) => {
                let (low, high) = if i.low {
                    (&self.group.members, &i.remote.members)
                } else {
                    (&i.remote.members, &self.group.members)
                };
                let at = if i.low { 0 } else { low.len() as u32 };
                (low.iter().chain(high.iter()).copied().collect::<Vec<u32>>(), at + self.rank as u32)
            }
        };
        let n = members.len() as u32;
        let leader = members[0];
        let job = self.shared.borrow_mut().engine()?.size();
        let mut recv = vec![0u8; 4];
        if me == 0 {
            let mut sh = self.shared.borrow_mut();
            let k = sh.next_dup;
            let ctx = u64::from(DUP_BASE) + 4 * (u64::from(leader) + u64::from(job) * u64::from(k));
            if ctx + 8 > u64::from(SELF_CTX) {
                return Err(MpiError::Invalid(format!(
                    "MPI_Comm_idup: process {leader} has handed out all its {k} context ids for idups; \
                     use MPI_Comm_dup"
                )));
            }
            sh.next_dup = k + 1;
            recv = (ctx as u32).to_le_bytes().to_vec();
        }
        let seq = self.group.dup_seq.get();
        self.group.dup_seq.set(seq.wrapping_add(1));
        let sched = crate::coll::algo::bcast_binomial(n, me, 0, 4);
        let x = crate::coll::launch(
            self,
            CollKind::Dup,
            crate::coll::exec::Seq::Started(seq),
            members,
            sched,
            Vec::new(),
            recv,
            None,
        )?;
        // The broadcast's result lands in `hold`, read by `then` at completion.
        let mut hold = vec![0u8; 4];
        // SAFETY: `hold`'s heap bytes do not move when the vector does; the
        // `Staged` keeps the vector (in its stage, dropped after the
        // request and after `then` has run) until the operation completes,
        // and nothing else refers to it.
        let out: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(hold.as_mut_ptr(), 4) };
        let at = hold.as_ptr();
        let request = Request::collective(self.shared.clone(), x, Some(out), self.group.clone());
        let made: Made = Rc::new(RefCell::new(None));
        let (parent, cell) = (self.clone(), made.clone());
        let mut staged = Staged::keeping(request, vec![hold], None);
        staged.stage.then = Some(Box::new(move || {
            // SAFETY: as for `out`: `at` is the held vector's 4 bytes,
            // alive until after this runs, written by the completion that
            // runs before it.
            let got = unsafe { std::ptr::read(at.cast::<[u8; 4]>()) };
            *cell.borrow_mut() = Some(parent.dup_on(u32::from_le_bytes(got), leader, job));
        }));
        Ok(Duplicating { staged, made })
    }

    /// The duplicate on context `ctx`, which `leader` handed out: checked,
    /// since a corrupt or forged message could make it anything.
    fn dup_on(&self, ctx: u32, leader: u32, job: u32) -> Result<SimpleCommunicator> {
        let block = ctx.checked_sub(DUP_BASE).map(|d| (d % 4, d / 4));
        if !matches!(block, Some((0, b)) if b % job == leader) || ctx > SELF_CTX - 8 {
            return Err(MpiError::Invalid(format!(
                "MPI_Comm_idup: context id {ctx} from its leader (process {leader}) is not one it may hand out"
            )));
        }
        Ok(match &self.inter {
            None => {
                let mut c = self.make_child(self.group.members.clone(), ctx);
                c.topo = self.topo.clone();
                c
            }
            Some(i) => self.inter_from(ctx, self.group.members.clone(), i.remote.members.clone(), i.low),
        })
    }
}
