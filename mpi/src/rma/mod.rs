//! One-sided communication (MPI 4.1 chapter 12): windows, puts, gets,
//! accumulates and atomics, and the three kinds of synchronisation.
//!
//! * [`RawWindow`] is the whole chapter on raw pointers and datatypes:
//!   what the C ABI translates `MPI_Win_*`, `MPI_Put`, ... into.
//! * [`Window`] is the Rust API: a window that owns its memory, with
//!   typed operations that exist only on an epoch's guard, so that an
//!   operation outside an epoch does not compile.
//!
//! How the data moves (DESIGN §6, "One-sided communication"; docs/RMA.md):
//!
//! * on DIMMnet-2, a window made by `MPI_Win_create` or `MPI_Win_allocate`
//!   keeps its public copy on the card (the `card` module): the origin's
//!   card stores, loads and updates it atomically (RVS, RVL, AMO) with no
//!   CPU at the target, and synchronisation makes the private copy agree —
//!   MPI's separate memory model;
//! * everywhere else (UDP, DPDK, dynamic and shared-memory windows) an
//!   operation is a message on the window's context, applied by the
//!   target's progress (the `target` module's progress hook): the unified
//!   model.
//!
//! The synchronisation rules are one implementation for both ([`epoch`]):
//! every violation is `MPI_ERR_RMA_SYNC` before anything is sent; an
//! access outside the target's window is `MPI_ERR_RMA_RANGE`, and writes
//! nothing.

mod card;
pub mod epoch;
mod raw;
mod shm;
pub(crate) mod target;
mod typed;
pub mod wire;

pub use raw::{Issued, RawWindow, Target, Waiting};
pub use typed::{Exposure, FenceEpoch, LockEpoch, StartEpoch, Window};

use crate::staged::reduce::Elem;
use crate::{MpiError, Result, SystemOperation};

/// How an accumulate combines data into the target (MPI 4.1 §12.3.4):
/// a predefined reduction, `MPI_REPLACE` or `MPI_NO_OP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccOp {
    /// `target = origin ⊕ target`.
    System(SystemOperation),
    /// `MPI_REPLACE`: `target = origin`.
    Replace,
    /// `MPI_NO_OP`: the target is left as it is (a fetch).
    NoOp,
}

const SYSTEM_OPS: [SystemOperation; 12] = [
    SystemOperation::Sum,
    SystemOperation::Product,
    SystemOperation::Min,
    SystemOperation::Max,
    SystemOperation::LogicalAnd,
    SystemOperation::LogicalOr,
    SystemOperation::LogicalXor,
    SystemOperation::BitwiseAnd,
    SystemOperation::BitwiseOr,
    SystemOperation::BitwiseXor,
    SystemOperation::MinLoc,
    SystemOperation::MaxLoc,
];

impl AccOp {
    /// Its code on the wire (1-based; 0 is "none").
    pub fn code(self) -> u8 {
        match self {
            AccOp::System(op) => SYSTEM_OPS.iter().position(|o| *o == op).map_or(0, |i| i as u8 + 1),
            AccOp::Replace => 13,
            AccOp::NoOp => 14,
        }
    }

    /// The operation of a wire code.
    pub fn from_code(c: u8) -> Option<AccOp> {
        match c {
            13 => Some(AccOp::Replace),
            14 => Some(AccOp::NoOp),
            c => SYSTEM_OPS.get(usize::from(c).checked_sub(1)?).map(|o| AccOp::System(*o)),
        }
    }

    /// `acc = src ⊕ acc` on whole elements of `elem` (any alignment), as
    /// a datatype's data holds them (packed: [`Elem::packed_size`]).
    pub fn apply(self, elem: Option<Elem>, src: &[u8], acc: &mut [u8]) -> Result<()> {
        match self {
            AccOp::NoOp => Ok(()),
            AccOp::Replace if src.len() == acc.len() => {
                acc.copy_from_slice(src);
                Ok(())
            }
            AccOp::Replace => {
                Err(crate::error::SignatureError::Replace { origin: src.len(), target: acc.len() }.into())
            }
            AccOp::System(op) => match elem {
                Some(e) => e.combine_packed(op, src, acc),
                None => Err(MpiError::Op(crate::error::OpError::NeedsElement { op: format!("{op:?}") })),
            },
        }
    }

    /// Check that this operation is defined on `elem` (§12.3.4: the
    /// predefined operations on the types §6.9.2 allows them on).
    pub fn check(self, elem: Elem) -> Result<()> {
        let z = vec![0u8; elem.packed_size()];
        let mut acc = z.clone();
        self.apply(Some(elem), &z, &mut acc).map_err(|e| {
            MpiError::Op(crate::error::OpError::NotDefined {
                op: format!("{self:?}"),
                elem: format!("{elem:?}"),
                why: e.to_string(),
            })
        })
    }
}

/// The kind of a passive-target lock (`MPI_LOCK_EXCLUSIVE`, `MPI_LOCK_SHARED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    /// One origin at a time.
    Exclusive,
    /// Any number of origins together.
    Shared,
}

/// How a window's memory was made (`MPI_WIN_CREATE_FLAVOR`, §12.2.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `MPI_Win_create`: the caller's memory.
    Create,
    /// `MPI_Win_allocate`: memory the library allocated.
    Allocate,
    /// `MPI_Win_create_dynamic`: regions attached later.
    Dynamic,
    /// `MPI_Win_allocate_shared`: memory the group's processes share.
    Shared,
}

/// The memory model of a window (`MPI_WIN_MODEL`, §12.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// One copy: what a target's progress writes is its memory
    /// (`MPI_WIN_UNIFIED`).
    Unified,
    /// A public copy apart from the private one, made equal at
    /// synchronisation (`MPI_WIN_SEPARATE`).
    Separate,
}

/// The info key that asks for a window's memory model at creation
/// (`MPI_Win_create`, `MPI_Win_allocate`): `unified` (the default) or
/// `separate` (the card's public copy, where the transport has one).
pub const MODEL_KEY: &str = "dimmnet_memory_model";

impl Model {
    /// The model `info` asks for under [`MODEL_KEY`], if it names one.
    /// A value other than `unified` or `separate` is refused
    /// (`MPI_ERR_INFO_VALUE`) rather than ignored: the key is ours, and a
    /// misspelt model would otherwise give the other model silently.
    pub fn requested(info: &crate::info::Info) -> Result<Option<Model>> {
        match info.get(MODEL_KEY)? {
            None => Ok(None),
            Some(v) => match v.trim() {
                "unified" => Ok(Some(Model::Unified)),
                "separate" => Ok(Some(Model::Separate)),
                other => Err(MpiError::InfoValue {
                    key: MODEL_KEY.into(),
                    value: other.into(),
                    takes: "\"unified\" or \"separate\"".into(),
                }),
            },
        }
    }

    /// The model a window gets when its creator names none: `DN_RMA=card`
    /// (or `separate`) makes it separate, `DN_RMA=messages` forces unified
    /// whatever the info says, and without `DN_RMA` it is unified — what
    /// MPICH and Open MPI give, and what programs written against them
    /// assume (issue 47).
    pub(crate) fn by_default(path: Option<RmaPath>, asked: Option<Model>) -> Model {
        match path {
            None => asked.unwrap_or(Model::Unified),
            Some(RmaPath::Messages) => Model::Unified,
            Some(RmaPath::Card | RmaPath::Separate) => asked.unwrap_or(Model::Separate),
        }
    }
}

pub use crate::config::RmaPath;

/// The assertions a synchronisation call may carry (`MPI_MODE_*`,
/// §12.5.5): promises the program makes, which the library may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Assert {
    /// `MPI_MODE_NOCHECK`: the matching calls have been made (start,
    /// post), or no other process holds or asks for a conflicting lock
    /// (lock): no lock messages are sent.
    pub nocheck: bool,
    /// `MPI_MODE_NOSTORE`: no local stores since the last synchronisation.
    pub nostore: bool,
    /// `MPI_MODE_NOPUT`: no puts or accumulates until the next one.
    pub noput: bool,
    /// `MPI_MODE_NOPRECEDE`: the fence ends no epoch with operations.
    pub noprecede: bool,
    /// `MPI_MODE_NOSUCCEED`: the fence starts no epoch.
    pub nosucceed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_codes_round_trip() {
        for c in 0..=20u8 {
            if let Some(op) = AccOp::from_code(c) {
                assert_eq!(op.code(), c);
            }
        }
        assert_eq!(AccOp::from_code(0), None);
        assert_eq!(AccOp::from_code(15), None);
    }

    /// An accumulate's operation not defined on its element type is
    /// refused as `MPI_ERR_OP`, naming both; a predefined operation with no
    /// element type too.
    #[test]
    fn an_operation_undefined_on_its_elements_is_refused_naming_both() {
        let e = AccOp::System(SystemOperation::BitwiseAnd).check(Elem::F64).unwrap_err();
        let MpiError::Op(crate::error::OpError::NotDefined { op, elem, .. }) = e else { panic!("{e:?}") };
        assert_eq!((op.as_str(), elem.as_str()), ("System(BitwiseAnd)", "F64"));
        AccOp::System(SystemOperation::BitwiseAnd).check(Elem::I32).unwrap();
        let e = AccOp::System(SystemOperation::Sum).apply(None, &[0; 4], &mut [0; 4]).unwrap_err();
        assert_eq!(e, MpiError::Op(crate::error::OpError::NeedsElement { op: "Sum".into() }));
    }

    #[test]
    fn accumulate_combines_replaces_and_leaves() {
        let mut acc = 5i32.to_le_bytes().to_vec();
        AccOp::System(SystemOperation::Sum).apply(Some(Elem::I32), &7i32.to_le_bytes(), &mut acc).unwrap();
        assert_eq!(acc, 12i32.to_le_bytes());
        AccOp::NoOp.apply(None, &[9; 4], &mut acc).unwrap();
        assert_eq!(acc, 12i32.to_le_bytes());
        AccOp::Replace.apply(None, &[9; 4], &mut acc).unwrap();
        assert_eq!(acc, [9; 4]);
        assert!(AccOp::System(SystemOperation::BitwiseAnd).check(Elem::F64).is_err());
        assert!(AccOp::System(SystemOperation::Sum).apply(None, &[0; 4], &mut acc).is_err());
    }
}
