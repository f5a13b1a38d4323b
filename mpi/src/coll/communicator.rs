//! The calls of [`Communicator`] on a [`SimpleCommunicator`]: its rank
//! and size, and those that are collectives over it (the barrier, the
//! duplication and the splits, MPI 4.1 §6.14, §7.4), so they live with
//! the collectives.

use crate::comm::{le_i32, AnyProcess, Color, Communicator, Process, SimpleCommunicator};
use crate::context::charge_call;
use crate::error::{ArgError, MpiError, Result};
use crate::Rank;

impl Communicator for SimpleCommunicator {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> Rank {
        self.group.members.len() as Rank
    }

    fn process_at_rank(&self, r: Rank) -> Process<'_> {
        Process { comm: self, rank: r }
    }

    fn any_process(&self) -> AnyProcess<'_> {
        AnyProcess { comm: self }
    }

    /// Dissemination barrier: ⌈log2 n⌉ rounds of zero-byte messages, run
    /// as a schedule like every collective.
    fn barrier(&self) -> Result<()> {
        if self.inter.is_some() {
            return self.inter_barrier();
        }
        super::CommunicatorCollectives::immediate_barrier(self)?.finish_blocking()
    }

    fn duplicate(&self) -> Result<SimpleCommunicator> {
        // The duplicate keeps the topology and gets copies of the cached
        // values (§7.4.2).
        let c = match self.inter.is_some() {
            true => self.inter_duplicate()?,
            false => {
                let mut c = self.split_by_color_with_key(Color::With(0), self.rank)?.unwrap_or_else(|| self.clone());
                c.topo = self.topo.clone();
                c
            }
        };
        self.group.attrs.copy_into(&c.group.attrs);
        Ok(c)
    }

    fn split_by_color(&self, color: Color) -> Result<Option<SimpleCommunicator>> {
        self.split_by_color_with_key(color, 0)
    }

    fn split_by_color_with_key(&self, color: Color, key: i32) -> Result<Option<SimpleCommunicator>> {
        charge_call(self.shared.borrow_mut().engine()?);
        let (c, wrong) = color.vote();
        let made = match self.is_inter() {
            true => self.inter_split(c, key)?,
            false => self.intra_split(c, key)?,
        };
        match wrong {
            Some(color) => Err(ArgError::SplitColor { color }.into()),
            None => Ok(made),
        }
    }
}

impl SimpleCommunicator {
    /// The split of an intracommunicator, this member contributing color
    /// `c` (`-1`: no group) and `key`.
    fn intra_split(&self, c: i32, key: i32) -> Result<Option<SimpleCommunicator>> {
        // Everyone contributes (color, key, next free context id).
        let next = self.shared.borrow().next_ctx;
        let mut mine = c.to_le_bytes().to_vec();
        mine.extend(key.to_le_bytes());
        mine.extend(next.to_le_bytes());
        let table = self.allgather_bytes(&mine)?;
        let mut ctx = 0u32;
        let mut group: Vec<(i32, Rank, u32)> = Vec::new();
        for (r, e) in table.iter().enumerate() {
            if e.len() != 12 {
                return Err(MpiError::Corrupt { what: "corrupt split table" });
            }
            ctx = ctx.max(le_i32(e, 8) as u32);
            if le_i32(e, 0) == c && c >= 0 {
                group.push((le_i32(e, 4), r as Rank, self.group.members[r]));
            }
        }
        // Every member of the parent agrees on `ctx`; the groups are disjoint.
        crate::context::check_agreed(ctx, 2)?;
        self.shared.borrow_mut().next_ctx = ctx + 2;
        if c < 0 {
            return Ok(None);
        }
        group.sort();
        Ok(Some(self.make_child(group.into_iter().map(|g| g.2).collect(), ctx)))
    }
}
