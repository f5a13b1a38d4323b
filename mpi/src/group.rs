//! Process groups (MPI 4.1 §7.3): ordered sets of processes, made from a
//! communicator and from each other, compared, and turned into
//! communicators (`SimpleCommunicator::create_from_ranks`).
//!
//! A group here is the job ranks (`MPI_COMM_WORLD` ranks) of its members,
//! in group order.

use crate::comm::SimpleCommunicator;
use crate::{MpiError, Rank, RankError, Result, PROC_NULL};

/// An ordered set of processes (§7.3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    members: Vec<u32>,
}

/// How two groups relate (`MPI_Group_compare`, §7.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupRelation {
    /// The same members in the same order (`MPI_IDENT`).
    Identical,
    /// The same members in another order (`MPI_SIMILAR`).
    Similar,
    /// Other members (`MPI_UNEQUAL`).
    Unequal,
}

impl Group {
    /// The group with no members (`MPI_GROUP_EMPTY`).
    pub const EMPTY: Group = Group { members: Vec::new() };

    /// The group of `comm`'s processes (`MPI_Comm_group`): for an
    /// intercommunicator, its local group.
    pub fn of(comm: &SimpleCommunicator) -> Group {
        Group { members: comm.members().to_vec() }
    }

    /// The group of these job ranks, in this order.
    pub fn from_job_ranks(members: Vec<u32>) -> Group {
        Group { members }
    }

    /// The job ranks of the members, in group order.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    /// Number of members (`MPI_Group_size`).
    pub fn size(&self) -> Rank {
        self.members.len() as Rank
    }

    /// No members (`MPI_GROUP_EMPTY`).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The rank in this group of the process with job rank `job`, if it
    /// is a member (`MPI_Group_rank` of the calling process).
    pub fn rank_of(&self, job: u32) -> Option<Rank> {
        self.members.iter().position(|&m| m == job).map(|i| i as Rank)
    }

    /// How this group relates to `other` (`MPI_Group_compare`).
    pub fn compare(&self, other: &Group) -> GroupRelation {
        relation(&self.members, &other.members)
    }

    /// This group's members, then `other`'s that are not in it
    /// (`MPI_Group_union`, §7.3.2).
    pub fn union(&self, other: &Group) -> Group {
        let a = &self.members;
        Group { members: a.iter().chain(other.members.iter().filter(|m| !a.contains(m))).copied().collect() }
    }

    /// This group's members that are in `other`, in this group's order
    /// (`MPI_Group_intersection`).
    pub fn intersection(&self, other: &Group) -> Group {
        Group { members: self.members.iter().filter(|m| other.members.contains(m)).copied().collect() }
    }

    /// This group's members that are not in `other`
    /// (`MPI_Group_difference`).
    pub fn difference(&self, other: &Group) -> Group {
        Group { members: self.members.iter().filter(|m| !other.members.contains(m)).copied().collect() }
    }

    /// The members at `ranks`, in that order (`MPI_Group_incl`): each rank
    /// of this group, none twice.
    pub fn include(&self, ranks: &[Rank]) -> Result<Group> {
        self.check_ranks(ranks)?;
        Ok(Group { members: ranks.iter().map(|&r| self.members[r as usize]).collect() })
    }

    /// The members not at `ranks`, in group order (`MPI_Group_excl`).
    pub fn exclude(&self, ranks: &[Rank]) -> Result<Group> {
        self.check_ranks(ranks)?;
        let keep = self.members.iter().enumerate().filter(|(i, _)| !ranks.contains(&(*i as Rank)));
        Ok(Group { members: keep.map(|(_, m)| *m).collect() })
    }

    /// The ranks `(first, last, stride)` triplets name, in order
    /// (`MPI_Group_range_incl`/`_excl`, §7.3.2), refused when a stride is
    /// 0 or they name more ranks than the group has; [`Group::include`]
    /// or [`Group::exclude`] then checks them.
    pub fn ranges(&self, ranges: &[[Rank; 3]]) -> Result<Vec<Rank>> {
        let mut out = Vec::new();
        for &[first, last, stride] in ranges {
            if stride == 0 {
                return Err(crate::error::ArgError::ZeroStride.into());
            }
            let mut r = first;
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                out.push(r);
                if out.len() > self.members.len() {
                    return Err(MpiError::Ranks(RankError::TooMany { size: self.members.len() }));
                }
                r += stride;
            }
        }
        Ok(out)
    }

    /// The rank in `other` of each process at `ranks` in this group
    /// (`MPI_Group_translate_ranks`): `None` where it is not a member of
    /// `other`; [`PROC_NULL`] stays `PROC_NULL`.
    pub fn translate(&self, ranks: &[Rank], other: &Group) -> Result<Vec<Option<Rank>>> {
        ranks
            .iter()
            .map(|&r| {
                if r == PROC_NULL {
                    return Ok(Some(PROC_NULL));
                }
                let m = usize::try_from(r)
                    .ok()
                    .and_then(|i| self.members.get(i))
                    .ok_or(MpiError::Ranks(RankError::NotIn { rank: r, what: "group1", size: self.size() }))?;
                Ok(other.rank_of(*m))
            })
            .collect()
    }

    /// The ranks in `comm` of this group's members, which must all belong
    /// to it (`MPI_Comm_create`, `MPI_Comm_create_group`, §7.4.2).
    pub fn ranks_in(&self, comm: &SimpleCommunicator) -> Result<Vec<Rank>> {
        let in_comm = Group::of(comm);
        self.members.iter().map(|&m| in_comm.rank_of(m).ok_or(MpiError::Group { job_rank: m })).collect()
    }

    /// `ranks` are ranks of this group, none listed twice.
    fn check_ranks(&self, ranks: &[Rank]) -> Result<()> {
        let n = self.members.len();
        let mut seen = vec![false; n];
        for &r in ranks {
            let i = usize::try_from(r).ok().filter(|&i| i < n).ok_or(MpiError::Ranks(RankError::NotIn {
                rank: r,
                what: "a group",
                size: n as i32,
            }))?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(MpiError::Ranks(RankError::Twice { rank: r }));
            }
        }
        Ok(())
    }
}

/// How two member lists relate.
pub(crate) fn relation(a: &[u32], b: &[u32]) -> GroupRelation {
    if a == b {
        return GroupRelation::Identical;
    }
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    x.sort_unstable();
    y.sort_unstable();
    if x == y {
        GroupRelation::Similar
    } else {
        GroupRelation::Unequal
    }
}

/// How two communicators relate (`MPI_Comm_compare`, §7.4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommRelation {
    /// The same communicator (`MPI_IDENT`).
    Identical,
    /// Another communicator of the same group in the same order
    /// (`MPI_CONGRUENT`).
    Congruent,
    /// The same members in another order (`MPI_SIMILAR`).
    Similar,
    /// Other members (`MPI_UNEQUAL`).
    Unequal,
}

/// The tag a `*_from_group` call's string tag stands for (§7.4.2, MPI
/// 4.0): its FNV-1a hash, folded into the tags every process may use, so
/// that calls with the same string meet and calls with others (almost
/// always) do not.
pub fn string_tag(text: &[u8]) -> crate::Tag {
    (adi::pmi::fnv1a(text) % crate::TAG_UB as u32) as crate::Tag
}

impl SimpleCommunicator {
    /// How this communicator's group relates to `other`'s
    /// (`MPI_Comm_compare` without the identity of handles, §7.4.1).
    pub fn compare_groups(&self, other: &SimpleCommunicator) -> GroupRelation {
        relation(self.members(), other.members())
    }

    /// How this communicator relates to `other` (`MPI_Comm_compare`,
    /// §7.4.1): the same one, or by their (local) groups.
    pub fn compare(&self, other: &SimpleCommunicator) -> CommRelation {
        match self.compare_groups(other) {
            _ if self.ctx() == other.ctx() && self.is_inter() == other.is_inter() => CommRelation::Identical,
            GroupRelation::Identical => CommRelation::Congruent,
            GroupRelation::Similar => CommRelation::Similar,
            GroupRelation::Unequal => CommRelation::Unequal,
        }
    }

    /// `MPI_Comm_create` (§7.4.2), collective over this communicator: the
    /// communicator of the processes `ranks` (this process's group, by
    /// their ranks here, in the new order), `None` where this process is
    /// not in it. Made as a split: the groups may differ between processes
    /// if they are disjoint (since MPI 2.2), a group's lowest rank telling
    /// it apart. On an intercommunicator each side gives a subset of its
    /// own group, and the two subsets make the new intercommunicator.
    pub fn create(&self, ranks: &[Rank]) -> Result<Option<SimpleCommunicator>> {
        use crate::comm::{Color, Communicator};
        let (color, key) = match ranks.iter().position(|&r| r == self.rank()) {
            Some(i) if self.is_inter() => (Color::With(0), i as i32),
            Some(i) => (Color::With(ranks.iter().copied().min().unwrap_or(0)), i as i32),
            None => (Color::Undefined, 0),
        };
        self.split_by_color_with_key(color, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(m: &[u32]) -> Group {
        Group::from_job_ranks(m.to_vec())
    }

    #[test]
    fn set_operations_keep_the_standards_order() {
        let (a, b) = (g(&[4, 1, 7]), g(&[7, 2, 4]));
        assert_eq!(a.union(&b).members(), [4, 1, 7, 2]);
        assert_eq!(a.intersection(&b).members(), [4, 7]);
        assert_eq!(a.difference(&b).members(), [1]);
        assert_eq!(a.compare(&g(&[7, 4, 1])), GroupRelation::Similar);
        assert_eq!(a.compare(&a.clone()), GroupRelation::Identical);
        assert_eq!(a.compare(&b), GroupRelation::Unequal);
    }

    #[test]
    fn include_exclude_and_ranges_check_their_ranks() {
        let a = g(&[10, 11, 12, 13, 14]);
        assert_eq!(a.include(&[3, 0]).expect("incl").members(), [13, 10]);
        assert_eq!(a.exclude(&[3, 0]).expect("excl").members(), [11, 12, 14]);
        assert_eq!(a.include(&[5]).unwrap_err().to_string(), "rank 5 is not in a group of 5 processes");
        assert!(matches!(a.exclude(&[1, 1]), Err(MpiError::Ranks(RankError::Twice { rank: 1 }))));
        assert_eq!(a.ranges(&[[4, 0, -2]]).expect("ranges"), [4, 2, 0]);
        assert!(matches!(a.ranges(&[[0, 4, 0]]), Err(MpiError::Arg(crate::error::ArgError::ZeroStride))));
        assert!(matches!(a.ranges(&[[0, 4, 1], [0, 0, 1]]), Err(MpiError::Ranks(RankError::TooMany { size: 5 }))));
    }

    #[test]
    fn a_string_tag_is_a_valid_tag_and_tells_strings_apart() {
        let (a, b) = (string_tag(b"solver"), string_tag(b"halo"));
        assert!((0..=crate::TAG_UB).contains(&a) && (0..=crate::TAG_UB).contains(&b));
        assert_ne!(a, b);
        assert_eq!(a, string_tag(b"solver"));
    }

    #[test]
    fn translation_names_non_members_and_keeps_proc_null() {
        let (a, b) = (g(&[4, 1, 7]), g(&[7, 2]));
        assert_eq!(a.translate(&[2, 1, PROC_NULL], &b).expect("translate"), [Some(0), None, Some(PROC_NULL)]);
        assert!(a.translate(&[3], &b).is_err());
    }
}
