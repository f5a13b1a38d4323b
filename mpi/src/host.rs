//! Where a process runs, as MPI sees it: its host's name
//! (`MPI_Get_processor_name`, §9.1.2), the memory it shares with other
//! processes (its node on a backend that has nodes, else its host), and
//! `MPI_Comm_split_type`'s split by that (§7.4.2).

use crate::comm::{Color, Communicator, SimpleCommunicator};
use crate::error::{ArgError, Result};
use crate::info::Info;

/// This host's name (`localhost` when it has none).
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its whole length, which is the length passed; gethostname writes at most that.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "localhost".into()
    }
}

/// What `MPI_Get_hw_resource_info` says (§11.4.1, MPI 4.1): the one
/// hardware resource type this library recognizes in `split_type` (shared
/// memory), the host, and the `backend` the job runs over, if known.
pub fn hw_resource_info(backend: Option<&str>) -> Result<Info> {
    let mut pairs = Info::new();
    pairs.set("mpi_hw_resource_type", "mpi_shared_memory")?;
    pairs.set("host", &host_name())?;
    if let Some(b) = backend {
        pairs.set("dn_backend", b)?;
    }
    Ok(pairs)
}

/// How `MPI_Comm_split_type` groups processes (§7.4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitType {
    /// `MPI_COMM_TYPE_SHARED`: the processes that share memory.
    Shared,
    /// `MPI_COMM_TYPE_HW_UNGUIDED`: the next hardware level down, always a
    /// strict subset (here: shared memory, or nothing).
    HwUnguided,
    /// `MPI_COMM_TYPE_HW_GUIDED`: the level the info's
    /// `mpi_hw_resource_type` names.
    HwGuided,
    /// `MPI_COMM_TYPE_RESOURCE_GUIDED`: the same, for any resource.
    ResourceGuided,
    /// `MPI_UNDEFINED`: no communicator for this process.
    Undefined,
}

impl SimpleCommunicator {
    /// The shared-memory domain of this process, as a split color: its
    /// node where the backend has nodes (the simulator, DIMMnet-2 cards:
    /// the rank map's, explicit or in blocks), else its host.
    pub fn shared_domain(&self) -> Result<i32> {
        if let Some(node) = self.shared().borrow_mut().engine()?.node() {
            return Ok((node & 0x7fff_ffff) as i32);
        }
        Ok((adi::pmi::fnv1a(host_name().as_bytes()) & 0x7fff_ffff) as i32)
    }

    /// `MPI_Comm_split_type` (§7.4.2): split by the hardware this library
    /// knows, the memory a node's processes share (every implementation
    /// recognizes it). A guided split by a resource `hints` does not name
    /// as `mpi_shared_memory` gives `None`, as the standard says; an
    /// unguided split that would hold the whole communicator gives `None`
    /// too (it yields strict subsets only). Collective.
    pub fn split_type(&self, kind: SplitType, key: i32, hints: &Info) -> Result<Option<SimpleCommunicator>> {
        let shared_memory = hints.says("mpi_hw_resource_type", "mpi_shared_memory");
        let color = match kind {
            SplitType::Undefined => Color::Undefined,
            SplitType::Shared | SplitType::HwUnguided => Color::With(self.shared_domain()?),
            SplitType::HwGuided | SplitType::ResourceGuided if shared_memory => Color::With(self.shared_domain()?),
            SplitType::HwGuided | SplitType::ResourceGuided => Color::Undefined,
        };
        let made = self.split_by_color_with_key(color, key)?;
        Ok(match made {
            Some(c) if kind == SplitType::HwUnguided && c.size() == self.size() => None,
            other => other,
        })
    }
}

impl SplitType {
    /// The split type an ABI value names (`MPI_COMM_TYPE_SHARED`, ...,
    /// `MPI_UNDEFINED`).
    pub fn from_code(code: i32) -> Result<SplitType> {
        use abi_def as a;
        Ok(match code {
            a::MPI_COMM_TYPE_SHARED => SplitType::Shared,
            a::MPI_COMM_TYPE_HW_UNGUIDED => SplitType::HwUnguided,
            a::MPI_COMM_TYPE_HW_GUIDED => SplitType::HwGuided,
            a::MPI_COMM_TYPE_RESOURCE_GUIDED => SplitType::ResourceGuided,
            a::MPI_UNDEFINED => SplitType::Undefined,
            t => return Err(ArgError::SplitType { split_type: t }.into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_types_by_their_abi_values() {
        assert_eq!(SplitType::from_code(abi_def::MPI_COMM_TYPE_SHARED).ok(), Some(SplitType::Shared));
        assert_eq!(SplitType::from_code(abi_def::MPI_UNDEFINED).ok(), Some(SplitType::Undefined));
        assert_eq!(SplitType::from_code(abi_def::MPI_COMM_TYPE_RESOURCE_GUIDED).ok(), Some(SplitType::ResourceGuided));
        let e = SplitType::from_code(7).err().map(|e| (e.class(), e.to_string()));
        assert_eq!(
            e,
            Some((crate::ErrorClass::Arg, "invalid argument: split_type 7 is not one this library knows".into()))
        );
    }

    #[test]
    fn a_host_has_a_name() {
        assert!(!host_name().is_empty());
        let info = hw_resource_info(Some("udp")).ok();
        assert!(info.is_some_and(|i| i.says("dn_backend", "udp") && i.says("host", &host_name())));
    }
}
