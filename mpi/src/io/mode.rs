//! Access modes of an open file (MPI 4.1 §14.2.1): exactly one of read
//! only, read-write and write only — a choice, so a mode with none or two
//! of them cannot be made — and the flags.

use super::error::{fail, FileErrorClass};
use crate::Result;

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
    fn words_differ_by_any_flag() {
        let a = AccessMode::new(Access::ReadWrite);
        assert_ne!(a.word(), a.create().word());
        assert_ne!(a.word(), AccessMode { append: true, ..a }.word());
        assert_ne!(a.word(), AccessMode::new(Access::WriteOnly).word());
    }
}
