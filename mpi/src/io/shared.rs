//! The shared file pointer (MPI 4.1 §14.4.4): one offset for all the
//! processes that opened a file together, kept in a small file beside it
//! and moved under an exclusive `flock`, so that processes on one host or
//! on hosts that share the file system see one pointer. Each process
//! opens the small file itself: `flock` excludes open file descriptions,
//! so two ranks running as contexts of one process exclude each other too
//! (and never wait on each other, as a context does not give up its turn
//! between taking the lock and releasing it).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::os;
use crate::Result;

/// The shared pointer of one open file.
#[derive(Debug)]
pub(crate) struct SharedPointer {
    file: File,
    path: PathBuf,
}

/// The name of the pointer's file for data file `data`, made unique by `token`.
pub(crate) fn path_for(data: &Path, token: &str) -> PathBuf {
    let name = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = data.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.join(format!(".{name}.dnmpi-shfp-{token}"))
}

impl SharedPointer {
    /// Make the pointer's file at `path`, the pointer at `start`.
    pub(crate) fn create(path: PathBuf, start: u64) -> Result<SharedPointer> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| os(&e, &format!("creating the shared file pointer {}", path.display())))?;
        file.write_all_at(&start.to_le_bytes(), 0)
            .map_err(|e| os(&e, &format!("writing the shared file pointer {}", path.display())))?;
        Ok(SharedPointer { file, path })
    }

    /// Open the pointer's file another process made.
    pub(crate) fn join(path: PathBuf) -> Result<SharedPointer> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| os(&e, &format!("opening the shared file pointer {}", path.display())))?;
        Ok(SharedPointer { file, path })
    }

    /// The pointer's file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` on the pointer's value under the lock, storing what it returns.
    fn update(&self, f: impl FnOnce(u64) -> u64) -> Result<u64> {
        let fd = self.file.as_raw_fd();
        let what = |doing: &str| format!("{doing} the shared file pointer {}", self.path.display());
        // SAFETY: `flock` passes no memory; `fd` is `self.file`'s descriptor, open for the call.
        if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
            return Err(os(&std::io::Error::last_os_error(), &what("locking")));
        }
        let r = (|| {
            let mut b = [0u8; 8];
            self.file.read_exact_at(&mut b, 0).map_err(|e| os(&e, &what("reading")))?;
            let old = u64::from_le_bytes(b);
            self.file.write_all_at(&f(old).to_le_bytes(), 0).map_err(|e| os(&e, &what("writing")))?;
            Ok(old)
        })();
        // SAFETY: `flock` passes no memory; `fd` is `self.file`'s descriptor, still open, and this
        // description holds the lock taken above.
        unsafe { libc::flock(fd, libc::LOCK_UN) };
        r
    }

    /// Add `n` to the pointer, returning its value before.
    pub(crate) fn fetch_add(&self, n: u64) -> Result<u64> {
        self.update(|p| p.saturating_add(n))
    }

    /// The pointer.
    pub(crate) fn get(&self) -> Result<u64> {
        self.update(|p| p)
    }

    /// Set the pointer to `v`.
    pub(crate) fn set(&self, v: u64) -> Result<()> {
        self.update(|_| v).map(drop)
    }

    /// Remove the pointer's file (by the one process that made it, once
    /// every process has closed the data file).
    pub(crate) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_openers_share_one_pointer() {
        let dir = std::env::temp_dir().join(format!("dnmpi-shfp-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = path_for(&dir.join("data.bin"), "t1");
        assert!(p.file_name().unwrap().to_string_lossy().starts_with(".data.bin.dnmpi-shfp-"));
        let a = SharedPointer::create(p.clone(), 5).unwrap();
        let b = SharedPointer::join(p.clone()).unwrap();
        assert_eq!(a.fetch_add(3).unwrap(), 5);
        assert_eq!(b.fetch_add(2).unwrap(), 8);
        assert_eq!(a.get().unwrap(), 10);
        b.set(1).unwrap();
        assert_eq!(a.get().unwrap(), 1);
        // A second creation with the same token is refused, never shared by accident.
        assert!(SharedPointer::create(p.clone(), 0).is_err());
        a.remove();
        assert!(!p.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
