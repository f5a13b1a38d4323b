//! The error classes of MPI-IO (MPI 4.1 §14.7, Table 14.5) and how the
//! operating system's errors map onto them.

use crate::MpiError;

pub use crate::error::{FileErrorClass, ViewError};

/// A file error of `class`, saying `msg`.
pub(crate) fn fail(class: FileErrorClass, msg: impl Into<String>) -> MpiError {
    MpiError::File { class, msg: msg.into() }
}

/// The error for `e`, an error of the operating system while doing `what`
/// (for example "opening /data/out.bin").
pub(crate) fn os(e: &std::io::Error, what: &str) -> MpiError {
    use FileErrorClass as C;
    let class = match e.raw_os_error() {
        Some(libc::ENOENT) => C::NoSuchFile,
        Some(libc::EACCES | libc::EPERM) => C::Access,
        Some(libc::EEXIST) => C::FileExists,
        Some(libc::EROFS) => C::ReadOnly,
        Some(libc::ENOSPC) => C::NoSpace,
        Some(libc::EDQUOT) => C::Quota,
        Some(libc::ENAMETOOLONG | libc::EISDIR | libc::ENOTDIR | libc::ELOOP) => C::BadFile,
        Some(libc::ETXTBSY | libc::EBUSY) => C::FileInUse,
        Some(libc::EBADF) => C::Access,
        _ => C::Io,
    };
    fail(class, format!("{what}: {e}"))
}

/// The class of `e` and its message, flattened for an exchange between
/// processes: the class as a small integer, then the message.
pub(crate) fn encode(e: &MpiError) -> Vec<u8> {
    let class = match e {
        MpiError::File { class, .. } => *class as u8 + 1,
        _ => 0,
    };
    let mut v = vec![class];
    v.extend_from_slice(e.to_string().as_bytes());
    v
}

/// The error [`encode`] flattened, reported by process `rank`.
pub(crate) fn decode(b: &[u8], rank: i32) -> MpiError {
    use FileErrorClass as C;
    const ALL: [C; 15] = [
        C::File,
        C::NotSame,
        C::Amode,
        C::UnsupportedDatarep,
        C::UnsupportedOperation,
        C::NoSuchFile,
        C::FileExists,
        C::BadFile,
        C::Access,
        C::NoSpace,
        C::Quota,
        C::ReadOnly,
        C::FileInUse,
        C::Io,
        C::DupDatarep,
    ];
    let msg = format!("on rank {rank}: {}", String::from_utf8_lossy(b.get(1..).unwrap_or_default()));
    match b.first().and_then(|c| c.checked_sub(1)).and_then(|c| ALL.get(c as usize)) {
        Some(class) => fail(*class, msg),
        None => fail(C::Io, msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_survive_the_exchange() {
        for class in [FileErrorClass::File, FileErrorClass::Io, FileErrorClass::Quota, FileErrorClass::NoSuchFile] {
            let e = fail(class, "why");
            match decode(&encode(&e), 3) {
                MpiError::File { class: c, msg } => {
                    assert_eq!(c, class);
                    assert_eq!(msg, "on rank 3: why");
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(decode(&[], 0), MpiError::File { class: FileErrorClass::Io, .. }));
    }

    #[test]
    fn os_errors_map_to_their_classes() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert!(matches!(os(&e, "x"), MpiError::File { class: FileErrorClass::NoSuchFile, .. }));
        let e = std::io::Error::from_raw_os_error(libc::EEXIST);
        assert!(matches!(os(&e, "x"), MpiError::File { class: FileErrorClass::FileExists, .. }));
    }
}
