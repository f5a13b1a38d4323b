//! Access modes of an open file (MPI 4.1 §14.2.1): exactly one of read
//! only, read-write and write only — a choice, so a mode with none or two
//! of them cannot be made — and the flags.

use abi_def::{
    MPI_MODE_APPEND, MPI_MODE_CREATE, MPI_MODE_DELETE_ON_CLOSE, MPI_MODE_EXCL, MPI_MODE_RDONLY, MPI_MODE_RDWR,
    MPI_MODE_SEQUENTIAL, MPI_MODE_UNIQUE_OPEN, MPI_MODE_WRONLY,
};

use super::error::{fail, FileErrorClass};
use crate::Result;

/// Every bit that names an access or a flag.
const KNOWN: i32 = MPI_MODE_RDONLY
    | MPI_MODE_RDWR
    | MPI_MODE_WRONLY
    | MPI_MODE_CREATE
    | MPI_MODE_EXCL
    | MPI_MODE_DELETE_ON_CLOSE
    | MPI_MODE_UNIQUE_OPEN
    | MPI_MODE_SEQUENTIAL
    | MPI_MODE_APPEND;

/// Each access with its bit.
const ACCESS: [(Access, i32); 3] =
    [(Access::ReadOnly, MPI_MODE_RDONLY), (Access::ReadWrite, MPI_MODE_RDWR), (Access::WriteOnly, MPI_MODE_WRONLY)];

/// How the file may be accessed (`MPI_MODE_RDONLY`, `_RDWR`, `_WRONLY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    ReadOnly,
    /// Reading and writing.
    ReadWrite,
    /// Write only.
    WriteOnly,
}

/// An access mode: the access and the flags of §14.2.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessMode {
    /// Read, write, or both.
    pub access: Access,
    /// `MPI_MODE_CREATE`: create the file if it does not exist.
    pub create: bool,
    /// `MPI_MODE_EXCL`: fail if creating a file that exists.
    pub excl: bool,
    /// `MPI_MODE_DELETE_ON_CLOSE`: delete the file when it is closed.
    pub delete_on_close: bool,
    /// `MPI_MODE_UNIQUE_OPEN`: no one else opens the file meanwhile (a hint).
    pub unique_open: bool,
    /// `MPI_MODE_SEQUENTIAL`: accessed sequentially, through the shared
    /// file pointer only.
    pub sequential: bool,
    /// `MPI_MODE_APPEND`: both file pointers start at the end of the file.
    pub append: bool,
}

impl AccessMode {
    /// A mode with `access` and no flag.
    pub fn new(access: Access) -> AccessMode {
        AccessMode {
            access,
            create: false,
            excl: false,
            delete_on_close: false,
            unique_open: false,
            sequential: false,
            append: false,
        }
    }

    /// This mode with `MPI_MODE_CREATE`.
    pub fn create(self) -> AccessMode {
        AccessMode { create: true, ..self }
    }

    /// The combinations §14.2.1 makes erroneous, refused with
    /// `MPI_ERR_AMODE`: creating (or `EXCL`) a file opened read only, and
    /// a sequential file opened read-write.
    pub fn check(&self) -> Result<()> {
        if self.access == Access::ReadOnly && (self.create || self.excl) {
            return Err(fail(
                FileErrorClass::Amode,
                "MPI_MODE_CREATE and MPI_MODE_EXCL cannot be combined with MPI_MODE_RDONLY (MPI 4.1 §14.2.1): open it MPI_MODE_RDWR or MPI_MODE_WRONLY to create it",
            ));
        }
        if self.access == Access::ReadWrite && self.sequential {
            return Err(fail(
                FileErrorClass::Amode,
                "MPI_MODE_SEQUENTIAL cannot be combined with MPI_MODE_RDWR (MPI 4.1 §14.2.1)",
            ));
        }
        Ok(())
    }

    /// The mode of the ABI's bits (`MPI_MODE_*`, §14.2.1): exactly one
    /// of `MPI_MODE_RDONLY`, `_RDWR` and `_WRONLY`, and no bit that names
    /// no flag, else `MPI_ERR_AMODE`. The combinations [`check`](Self::check)
    /// refuses are not refused here.
    pub fn from_bits(bits: i32) -> Result<AccessMode> {
        if bits & !KNOWN != 0 {
            return Err(fail(
                FileErrorClass::Amode,
                format!("access mode {bits:#x} has bits that name no MPI_MODE_* flag"),
            ));
        }
        let mut chosen = ACCESS.iter().filter(|&&(_, b)| bits & b != 0);
        let (Some(&(access, _)), None) = (chosen.next(), chosen.next()) else {
            return Err(fail(
                FileErrorClass::Amode,
                format!("access mode {bits:#x} must have exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR and MPI_MODE_WRONLY (MPI 4.1 §14.2.1)"),
            ));
        };
        let on = |b: i32| bits & b != 0;
        Ok(AccessMode {
            access,
            create: on(MPI_MODE_CREATE),
            excl: on(MPI_MODE_EXCL),
            delete_on_close: on(MPI_MODE_DELETE_ON_CLOSE),
            unique_open: on(MPI_MODE_UNIQUE_OPEN),
            sequential: on(MPI_MODE_SEQUENTIAL),
            append: on(MPI_MODE_APPEND),
        })
    }

    /// The mode as the ABI's bits (`MPI_File_get_amode`).
    pub fn bits(&self) -> i32 {
        let access = ACCESS.iter().find(|(a, _)| *a == self.access).map_or(0, |&(_, b)| b);
        self.flags().iter().filter(|(on, _)| *on).fold(access, |all, (_, b)| all | b)
    }

    /// Each flag, with its bit.
    fn flags(&self) -> [(bool, i32); 6] {
        [
            (self.create, MPI_MODE_CREATE),
            (self.excl, MPI_MODE_EXCL),
            (self.delete_on_close, MPI_MODE_DELETE_ON_CLOSE),
            (self.unique_open, MPI_MODE_UNIQUE_OPEN),
            (self.sequential, MPI_MODE_SEQUENTIAL),
            (self.append, MPI_MODE_APPEND),
        ]
    }

    /// Reading is allowed.
    pub fn readable(&self) -> bool {
        self.access != Access::WriteOnly
    }

    /// Writing is allowed.
    pub fn writable(&self) -> bool {
        self.access != Access::ReadOnly
    }

    /// The mode as one word, to compare the processes' modes.
    pub(crate) fn word(&self) -> u8 {
        let a = match self.access {
            Access::ReadOnly => 0,
            Access::ReadWrite => 1,
            Access::WriteOnly => 2,
        };
        a | u8::from(self.create) << 2
            | u8::from(self.excl) << 3
            | u8::from(self.delete_on_close) << 4
            | u8::from(self.unique_open) << 5
            | u8::from(self.sequential) << 6
            | u8::from(self.append) << 7
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erroneous_combinations_are_refused() {
        assert!(AccessMode::new(Access::ReadOnly).create().check().is_err());
        assert!(AccessMode { excl: true, ..AccessMode::new(Access::ReadOnly) }.check().is_err());
        assert!(AccessMode { sequential: true, ..AccessMode::new(Access::ReadWrite) }.check().is_err());
        assert!(AccessMode { sequential: true, ..AccessMode::new(Access::WriteOnly) }.check().is_ok());
        assert!(AccessMode::new(Access::WriteOnly).create().check().is_ok());
    }

    #[test]
    fn bits_name_one_access_and_known_flags() {
        let m = AccessMode::from_bits(MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_APPEND).ok();
        assert_eq!(m, Some(AccessMode { append: true, ..AccessMode::new(Access::WriteOnly).create() }));
        for bad in [0, MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_MODE_CREATE, MPI_MODE_RDWR | 1 << 20, -1] {
            let e = AccessMode::from_bits(bad).err().map(|e| e.class());
            assert_eq!(e, Some(crate::ErrorClass::Amode), "{bad:#x}");
        }
        for bits in 0..1024 {
            if let Ok(m) = AccessMode::from_bits(bits) {
                assert_eq!(m.bits(), bits, "a round trip keeps every flag");
            }
        }
    }

    #[test]
    fn words_differ_by_any_flag() {
        let a = AccessMode::new(Access::ReadWrite);
        assert_ne!(a.word(), a.create().word());
        assert_ne!(a.word(), AccessMode { append: true, ..a }.word());
        assert_ne!(a.word(), AccessMode::new(Access::WriteOnly).word());
    }
}
