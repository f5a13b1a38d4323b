//! The synchronisation rules of one-sided communication (MPI 4.1 §12.5),
//! written once for every backend: which epochs a process has open on a
//! window, which calls may open or close them, and which targets an
//! operation may reach. Anything else is `MPI_ERR_RMA_SYNC`
//! ([`MpiError::RmaSync`]), raised before anything is sent.

use std::collections::BTreeMap;

use super::LockType;
use crate::error::RmaSyncError;
use crate::{MpiError, Rank, Result};

/// The access epoch this process has open on a window (as an origin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// None: no operation may be issued.
    None,
    /// Between two fences (§12.5.1); `used` once an operation was issued,
    /// which makes the epoch real: until then another kind of
    /// synchronisation may follow the fence.
    Fence {
        /// An operation was issued since the fence.
        used: bool,
    },
    /// Between `MPI_Win_start` and `MPI_Win_complete` (§12.5.2): these
    /// targets, by rank in the window's group.
    Start(Vec<Rank>),
    /// Passive target (§12.5.3): the targets locked with `MPI_Win_lock`.
    Lock(BTreeMap<Rank, Locked>),
    /// `MPI_Win_lock_all`: every target, shared.
    LockAll {
        /// Taken with `MPI_MODE_NOCHECK` (no lock messages were sent).
        nocheck: bool,
    },
}

/// One target locked with `MPI_Win_lock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Locked {
    /// Exclusive or shared.
    pub kind: LockType,
    /// Taken with `MPI_MODE_NOCHECK`: no lock was asked of the target.
    pub nocheck: bool,
}

/// The exposure epoch this process has open on a window (as a target).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exposure {
    /// None.
    None,
    /// Between two fences.
    Fence,
    /// Between `MPI_Win_post` and `MPI_Win_wait`: these origins.
    Post(Vec<Rank>),
}

/// A window's epochs at this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epochs {
    /// As an origin.
    pub access: Access,
    /// As a target.
    pub exposure: Exposure,
}

fn sync(e: RmaSyncError) -> MpiError {
    MpiError::RmaSync(e)
}

impl Default for Epochs {
    fn default() -> Self {
        Epochs { access: Access::None, exposure: Exposure::None }
    }
}

impl Epochs {
    /// Whether no access epoch but an unused fence's is open (another
    /// synchronisation may start).
    fn access_free(&self) -> bool {
        matches!(self.access, Access::None | Access::Fence { used: false })
    }

    /// `MPI_Win_fence` (§12.5.1): ends the fence epochs, and opens new
    /// ones unless `nosucceed`.
    pub fn fence(&mut self, nosucceed: bool) -> Result<()> {
        match (&self.access, &self.exposure) {
            (Access::None | Access::Fence { .. }, Exposure::None | Exposure::Fence) => {}
            (Access::Start(_), _) => {
                return Err(sync(RmaSyncError::Fence { why: "inside an access epoch begun by MPI_Win_start" }))
            }
            (Access::Lock(_) | Access::LockAll { .. }, _) => {
                return Err(sync(RmaSyncError::Fence { why: "while this process holds a lock on the window" }))
            }
            (_, Exposure::Post(_)) => {
                return Err(sync(RmaSyncError::Fence { why: "inside an exposure epoch begun by MPI_Win_post" }))
            }
        }
        if nosucceed {
            *self = Epochs::default();
        } else {
            *self = Epochs { access: Access::Fence { used: false }, exposure: Exposure::Fence };
        }
        Ok(())
    }

    /// `MPI_Win_start` to `group` (§12.5.2).
    pub fn start(&mut self, group: Vec<Rank>) -> Result<()> {
        if !self.access_free() {
            return Err(sync(RmaSyncError::InsideAccess { call: "MPI_Win_start", open: self.access_name() }));
        }
        self.access = Access::Start(group);
        Ok(())
    }

    /// `MPI_Win_complete`: the targets of the epoch it ends.
    pub fn complete(&mut self) -> Result<Vec<Rank>> {
        match std::mem::replace(&mut self.access, Access::None) {
            Access::Start(g) => Ok(g),
            other => {
                self.access = other;
                Err(sync(RmaSyncError::CompleteWithoutStart { open: self.access_name() }))
            }
        }
    }

    /// `MPI_Win_post` to `group`.
    pub fn post(&mut self, group: Vec<Rank>) -> Result<()> {
        if let Exposure::Post(_) = self.exposure {
            return Err(sync(RmaSyncError::PostInsidePost));
        }
        self.exposure = Exposure::Post(group);
        Ok(())
    }

    /// The origins of the exposure epoch `MPI_Win_wait` (or a successful
    /// `MPI_Win_test`) ends; it stays open until [`Epochs::end_post`].
    pub fn posted(&self) -> Result<&[Rank]> {
        match &self.exposure {
            Exposure::Post(g) => Ok(g),
            _ => Err(sync(RmaSyncError::Without { call: "MPI_Win_wait or MPI_Win_test", opener: "MPI_Win_post" })),
        }
    }

    /// The exposure epoch of `MPI_Win_post` ended.
    pub fn end_post(&mut self) {
        self.exposure = Exposure::None;
    }

    /// `MPI_Win_lock` on `target`.
    pub fn lock(&mut self, target: Rank, kind: LockType, nocheck: bool) -> Result<()> {
        let free = self.access_free();
        match &mut self.access {
            Access::Lock(m) if m.contains_key(&target) => Err(sync(RmaSyncError::LockedAlready { rank: target })),
            Access::Lock(m) => {
                m.insert(target, Locked { kind, nocheck });
                Ok(())
            }
            _ if free => {
                self.access = Access::Lock(BTreeMap::from([(target, Locked { kind, nocheck })]));
                Ok(())
            }
            _ => Err(sync(RmaSyncError::InsideAccess { call: "MPI_Win_lock", open: self.access_name() })),
        }
    }

    /// `MPI_Win_unlock` on `target`: how it was locked.
    pub fn unlock(&mut self, target: Rank) -> Result<Locked> {
        if let Access::Lock(m) = &mut self.access {
            if let Some(l) = m.remove(&target) {
                if m.is_empty() {
                    self.access = Access::None;
                }
                return Ok(l);
            }
        }
        Err(sync(RmaSyncError::NotLocked { call: "MPI_Win_unlock", rank: target }))
    }

    /// `MPI_Win_lock_all`.
    pub fn lock_all(&mut self, nocheck: bool) -> Result<()> {
        if !self.access_free() {
            return Err(sync(RmaSyncError::InsideAccess { call: "MPI_Win_lock_all", open: self.access_name() }));
        }
        self.access = Access::LockAll { nocheck };
        Ok(())
    }

    /// `MPI_Win_unlock_all`: whether the locks were taken with `NOCHECK`.
    pub fn unlock_all(&mut self) -> Result<bool> {
        match self.access {
            Access::LockAll { nocheck } => {
                self.access = Access::None;
                Ok(nocheck)
            }
            _ => Err(sync(RmaSyncError::Without { call: "MPI_Win_unlock_all", opener: "MPI_Win_lock_all" })),
        }
    }

    /// An operation to `target`: allowed inside an access epoch that
    /// includes it (and it makes a fence epoch real).
    pub fn operation(&mut self, target: Rank) -> Result<()> {
        let ok = match &mut self.access {
            Access::None => false,
            Access::Fence { used } => {
                *used = true;
                true
            }
            Access::Start(g) => g.contains(&target),
            Access::Lock(m) => m.contains_key(&target),
            Access::LockAll { .. } => true,
        };
        if ok {
            return Ok(());
        }
        Err(sync(match self.access {
            Access::None => RmaSyncError::NoEpoch,
            _ => RmaSyncError::NotInEpoch { rank: target, open: self.access_name() },
        }))
    }

    /// `MPI_Win_flush` and friends on `target` (`None`: all): only inside
    /// a passive-target epoch that includes it.
    pub fn flush(&self, target: Option<Rank>) -> Result<()> {
        match (&self.access, target) {
            (Access::LockAll { .. }, _) => Ok(()),
            (Access::Lock(_), None) => Ok(()),
            (Access::Lock(m), Some(t)) if m.contains_key(&t) => Ok(()),
            _ => Err(sync(match target {
                Some(t) => RmaSyncError::NotLocked { call: "MPI_Win_flush", rank: t },
                None => RmaSyncError::FlushAllOutside,
            })),
        }
    }

    /// `MPI_Win_free`: every epoch must be over (a fence epoch ends with
    /// the window).
    pub fn free(&self) -> Result<()> {
        match (&self.access, &self.exposure) {
            (Access::None | Access::Fence { .. }, Exposure::None | Exposure::Fence) => Ok(()),
            _ => Err(sync(RmaSyncError::FreeInEpoch {
                open: if matches!(self.exposure, Exposure::Post(_)) {
                    "MPI_Win_post".into()
                } else {
                    self.access_name()
                },
            })),
        }
    }

    /// Targets of the open passive-target epoch: `None` for all.
    pub fn locked(&self) -> Option<Vec<Rank>> {
        match &self.access {
            Access::Lock(m) => Some(m.keys().copied().collect()),
            _ => None,
        }
    }

    fn access_name(&self) -> String {
        match &self.access {
            Access::None => "none".into(),
            Access::Fence { .. } => "MPI_Win_fence".into(),
            Access::Start(_) => "MPI_Win_start".into(),
            Access::Lock(_) => "MPI_Win_lock".into(),
            Access::LockAll { .. } => "MPI_Win_lock_all".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_need_an_epoch_that_includes_the_target() {
        let mut e = Epochs::default();
        assert_eq!(e.operation(0), Err(MpiError::RmaSync(RmaSyncError::NoEpoch)));
        e.start(vec![1, 2]).unwrap();
        e.operation(2).unwrap();
        let Err(MpiError::RmaSync(RmaSyncError::NotInEpoch { rank: 0, open })) = e.operation(0) else {
            panic!("rank 0 is not in the start group")
        };
        assert!(open.starts_with("MPI_Win_start"), "{open}");
        assert_eq!(e.complete().unwrap(), vec![1, 2]);
        assert!(e.complete().is_err(), "complete twice");
        e.lock(3, LockType::Shared, false).unwrap();
        e.operation(3).unwrap();
        assert!(e.operation(1).is_err());
        assert_eq!(e.lock(3, LockType::Exclusive, false), Err(RmaSyncError::LockedAlready { rank: 3 }.into()));
        e.flush(Some(3)).unwrap();
        assert_eq!(e.flush(Some(1)), Err(RmaSyncError::NotLocked { call: "MPI_Win_flush", rank: 1 }.into()));
        assert_eq!(e.unlock(1).map(drop), Err(RmaSyncError::NotLocked { call: "MPI_Win_unlock", rank: 1 }.into()));
        e.unlock(3).unwrap();
        assert_eq!(e.access, Access::None);
    }

    #[test]
    fn a_fence_epoch_with_operations_excludes_other_synchronisation() {
        let mut e = Epochs::default();
        e.fence(false).unwrap();
        // An unused fence epoch may be followed by a lock...
        e.lock(0, LockType::Exclusive, false).unwrap();
        assert!(e.fence(false).is_err(), "fence while locked");
        e.unlock(0).unwrap();
        e.fence(false).unwrap();
        e.operation(1).unwrap();
        // ...a used one may not.
        assert!(e.lock_all(false).is_err());
        assert!(e.start(vec![1]).is_err());
        e.fence(true).unwrap();
        assert!(e.operation(1).is_err(), "NOSUCCEED opens no epoch");
    }

    #[test]
    fn exposure_epochs_nest_with_access_but_not_with_each_other() {
        let mut e = Epochs::default();
        e.post(vec![0]).unwrap();
        assert!(e.post(vec![1]).is_err());
        e.start(vec![0]).unwrap();
        assert!(e.free().is_err());
        assert!(e.fence(false).is_err());
        e.complete().unwrap();
        assert_eq!(e.posted().unwrap(), &[0]);
        e.end_post();
        assert!(e.posted().is_err());
        e.free().unwrap();
        e.lock_all(true).unwrap();
        assert!(e.free().is_err());
        assert!(e.unlock_all().unwrap());
    }
}
