//! The host software's costs that simulated time charges (DESIGN §3,
//! calibrated host profiles; seed 004 §8.2, Table 2): their names, their
//! keys in a profile's JSON, and what each charges for.
//!
//! The MPI library (`adi`, `mpi`) charges them as it works, whatever the
//! backend; the model's host profiles (`hw_model::profile`) price them;
//! the simulator's control file (`simlink`) carries the table between the
//! two. A crate of its own, with nothing in it but the names, so that the
//! library need not link the simulator to name a cost.

macro_rules! host_costs {
    ($( $(#[doc = $doc:literal])* $name:ident = $idx:literal, $key:literal; )*) => {
        /// Host-side costs, charged by the host software in simulation.
        ///
        /// Values are picoseconds per event, except the per-byte costs
        /// ([`HostCost::per_byte`]), in femtoseconds per byte. The model
        /// fills them in from the host profile.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(usize)]
        pub enum HostCost { $( $(#[doc = $doc])* $name = $idx, )* }

        impl HostCost {
            /// Every cost.
            pub const ALL: &'static [HostCost] = &[$(HostCost::$name),*];
            /// Key in profile JSON files.
            pub fn key(self) -> &'static str { match self { $(HostCost::$name => $key,)* } }
            /// What it charges for.
            pub fn doc(self) -> &'static str { match self { $(HostCost::$name => concat!($($doc),*).trim(),)* } }
            /// Charged per byte: its table value is femtoseconds per byte,
            /// not picoseconds.
            pub fn per_byte(self) -> bool { matches!(self, HostCost::CopyByte | HostCost::IoByte) }
        }
    };
}

host_costs! {
    /// One uncached 8-byte load from UR, LLCM or PW.
    UcRead = 0, "uc_read_ns";
    /// One uncached 8-byte store to UR or LLCM.
    UcWrite = 1, "uc_write_ns";
    /// One write-combined 64-byte burst to WW (partial lines cost a whole burst).
    WcLine = 2, "wc_line_ns";
    /// Draining the write-combining buffers before a doorbell (sfence).
    WcFlush = 3, "wc_flush_ns";
    /// One byte copied between host buffers (femtoseconds).
    CopyByte = 4, "copy_ns_per_byte";
    /// Entering and leaving one MPI-layer call (argument checks, no request work).
    MpiCall = 5, "mpi_call_ns";
    /// One ADI operation: building or parsing a control packet, dispatching it.
    AdiOp = 6, "adi_op_ns";
    /// Creating and completing one request object.
    Request = 7, "request_ns";
    /// Examining one queue element while matching.
    MatchStep = 8, "match_step_ns";
    /// One pass of the progress engine that finds work.
    Progress = 9, "progress_ns";
    /// MPI-layer request processing: turning one point-to-point operation
    /// into an engine request when it starts, or into a status when it
    /// completes (seed 004 §8.2, Table 2 (6): "Request processing").
    MpiRequest = 10, "mpi_request_ns";
    /// Reading 8 bytes of PW, in the profile's PW access mode (uncached
    /// 8-byte loads in the paper; see `hw_model::profile::PwAccess`).
    PwRead = 11, "pw_read_ns";
    /// Not a cost: simulated time per unit of this machine's measured
    /// thread CPU time, for `--compute measured` (the profile's host is
    /// this much slower); in the table, ps per ns.
    ComputeScale = 12, "compute_scale";
    /// One contiguous file access (MPI-IO, MPI 4.1 chapter 14): the system
    /// call and the file system's work, the data already in the page cache.
    IoOp = 13, "io_op_ns";
    /// One byte moved between a buffer and a file (femtoseconds).
    IoByte = 14, "io_ns_per_byte";
}
