//! Creating the simulator's files safely: never through a symlink, never
//! over a file some other party made, and never leaving a partial set behind
//! when start-up fails part-way (issue 7: `serve --dir` followed a symlink
//! named `node0.mmio` and overwrote its target).

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Create `path` for reading and writing, as a new regular file.
///
/// A regular file already there is a stale leftover of a simulator that is
/// gone (the caller has checked that no live simulator owns the directory):
/// it is removed first. Anything else (a symlink, a directory, a device, a
/// socket) is refused. The file is then created with `O_CREAT | O_EXCL |
/// O_NOFOLLOW`, so an entry that appears in between is refused too.
pub fn create_exclusive(path: &Path) -> io::Result<File> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => std::fs::remove_file(path)?,
        Ok(m) => {
            let t = m.file_type();
            let kind = if t.is_symlink() {
                "a symbolic link"
            } else if t.is_dir() {
                "a directory"
            } else if t.is_socket() || t.is_fifo() {
                "a socket or FIFO"
            } else {
                "not a regular file"
            };
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("refusing to replace it: it is {kind}, not a file a simulator made"),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // Mode 0600: a simulator's files hold the ranks' data.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Free bytes for an unprivileged user in the file system of `dir`.
///
/// The simulator's files live in `/dev/shm`, a tmpfs: a file is sized
/// there without its pages, which are taken when first touched. If the
/// file system is full by then, the touch is a `SIGBUS` — so the room is
/// looked at before the files are made, and a shortfall reported by name.
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    // SAFETY: an all-zero statvfs is a valid value of the plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` is writable for the call.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// A fresh directory name for a cluster under /dev/shm (or the temp dir).
pub fn temp_dir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let root = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    root.join(format!("dimmnet-{tag}-{}-{n}", std::process::id()))
}

/// Files (and optionally their directory) that are removed again unless
/// the start-up that created them completes and calls [`Created::keep`].
#[derive(Debug, Default)]
pub struct Created {
    files: Vec<PathBuf>,
    dir: Option<PathBuf>,
}

impl Created {
    /// Nothing created yet.
    pub fn new() -> Created {
        Created::default()
    }

    /// Remember a directory this start-up created (removed last, if empty).
    pub fn dir(&mut self, dir: PathBuf) {
        self.dir = Some(dir);
    }

    /// Create `path` with [`create_exclusive`] and remember it.
    pub fn file(&mut self, path: &Path) -> io::Result<File> {
        let f = create_exclusive(path)?;
        self.files.push(path.to_path_buf());
        Ok(f)
    }

    /// Remember a file created elsewhere (removed again on failure).
    pub fn adopt(&mut self, path: PathBuf) {
        self.files.push(path);
    }

    /// Start-up succeeded: hand over the list of files (the caller removes
    /// them when it shuts down).
    pub fn keep(mut self) -> Vec<PathBuf> {
        self.dir = None;
        std::mem::take(&mut self.files)
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_is_refused_and_its_target_untouched() {
        let dir = temp_dir("files-symlink");
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("precious");
        std::fs::write(&target, b"keep me").unwrap();
        let link = dir.join("node0.mmio");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = create_exclusive(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        // A dangling symlink is refused the same way.
        std::fs::remove_file(&target).unwrap();
        assert!(create_exclusive(&link).is_err());
        assert!(!target.exists(), "a dangling symlink's target was created");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stale_regular_file_is_replaced_and_a_failed_start_removes_what_it_made() {
        let dir = temp_dir("files-created");
        let mut c = Created::new();
        std::fs::create_dir_all(&dir).unwrap();
        c.dir(dir.clone());
        std::fs::write(dir.join("a"), b"stale").unwrap();
        c.file(&dir.join("a")).unwrap();
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"", "the stale file was replaced");
        c.file(&dir.join("b")).unwrap();
        drop(c);
        assert!(!dir.exists(), "a start-up that did not complete left {}", dir.display());
    }
}
