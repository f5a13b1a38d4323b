//! The MPI standard ABI's definition (`abi-def`: handle values,
//! constants, C types and prototypes, the one source of `mpi.h`), and
//! this library's own use of `MPI_Status`'s implementation words.

pub use abi_def::*;

/// `MPI_Status` as the ABI lays it out: three public fields and five
/// implementation words. Ours: the received byte count in `internal[0..2]`
/// (low, high 32 bits) and the cancelled flag in `internal[2]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MpiStatus {
    /// `MPI_SOURCE`.
    pub source: i32,
    /// `MPI_TAG`.
    pub tag: i32,
    /// `MPI_ERROR`.
    pub error: i32,
    /// `MPI_internal`.
    pub internal: [i32; 5],
}

impl MpiStatus {
    /// The status of a completed operation that moved `bytes` bytes.
    pub fn new(source: i32, tag: i32, bytes: u64, cancelled: bool) -> MpiStatus {
        MpiStatus {
            source,
            tag,
            error: MPI_SUCCESS,
            internal: [bytes as u32 as i32, (bytes >> 32) as u32 as i32, cancelled as i32, 0, 0],
        }
    }

    /// Bytes the operation moved.
    pub fn bytes(&self) -> u64 {
        u64::from(self.internal[0] as u32) | (u64::from(self.internal[1] as u32) << 32)
    }

    /// Whether the operation was cancelled.
    pub fn cancelled(&self) -> bool {
        self.internal[2] != 0
    }

    /// Set the bytes the operation moved, leaving the other fields alone.
    pub fn set_bytes(&mut self, bytes: u64) {
        self.internal[0] = bytes as u32 as i32;
        self.internal[1] = (bytes >> 32) as u32 as i32;
    }

    /// Set whether the operation was cancelled, leaving the other fields alone.
    pub fn set_cancelled(&mut self, cancelled: bool) {
        self.internal[2] = cancelled as i32;
    }

    /// The status of a receive from `MPI_PROC_NULL` (MPI 4.1 §3.10).
    pub fn proc_null() -> MpiStatus {
        MpiStatus::new(MPI_PROC_NULL, MPI_ANY_TAG, 0, false)
    }

    /// The empty status (§3.7.3): what completing a null or inactive
    /// request, or a send, reports.
    pub fn empty() -> MpiStatus {
        MpiStatus::new(MPI_ANY_SOURCE, MPI_ANY_TAG, 0, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed header is what the tables generate (regenerate with
    /// `cargo run -p capi --bin gen-mpi-h > capi/include/mpi.h`).
    #[test]
    fn the_committed_header_is_the_generated_one() {
        let committed = include_str!("../include/mpi.h");
        assert!(
            committed == header(),
            "capi/include/mpi.h is stale: run `cargo run -p capi --bin gen-mpi-h > capi/include/mpi.h`"
        );
    }

    /// The mpi crate's statuses use the ABI's values (`mpi::Status::proc_null`),
    /// and `MPI_Status` is the ABI's 32 bytes.
    #[test]
    fn the_mpi_crate_agrees_with_the_abi() {
        assert_eq!((mpi::ANY_SOURCE, mpi::ANY_TAG, mpi::PROC_NULL), (MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_PROC_NULL));
        assert_eq!(std::mem::size_of::<MpiStatus>(), 32);
    }

    #[test]
    fn a_status_keeps_64_bit_counts() {
        let s = MpiStatus::new(3, 7, (5 << 32) + 9, false);
        assert_eq!((s.bytes(), s.cancelled()), ((5 << 32) + 9, false));
    }
}
