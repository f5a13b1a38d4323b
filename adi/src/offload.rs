//! Collective offload: a capability of backends whose device can execute a
//! collective's schedule by itself (issue 9, `DN_NBC_PROGRESS=offload`).
//!
//! The MPI layer lowers a schedule (seed 002's CAD graph, §3) into a
//! [`Program`]: steps that name buffers by number and peers by job rank,
//! predecessors by index. A backend that offers [`Offload`] places the
//! buffers in device memory, translates ranks into its own addresses and
//! starts the program; the host is free until [`Offload::offload_test`]
//! says it ended. Nothing here is specific to one device.

use crate::error::TransportError;

/// What a step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// Send `src` to `peer`.
    Send,
    /// Receive from `peer` into `dst`.
    Recv,
    /// `dst = src ⊕ dst` with the program's reduction.
    Reduce,
    /// `dst = src`.
    Copy,
}

/// `len` bytes at `off` of buffer `buf` (0: send, 1: receive, 2..: temporaries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// Buffer number.
    pub buf: u8,
    /// Offset in bytes.
    pub off: u64,
    /// Length in bytes.
    pub len: u64,
}

/// One step of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// What it does.
    pub kind: StepKind,
    /// Source (Send, Reduce, Copy).
    pub src: Span,
    /// Destination (Recv, Reduce, Copy).
    pub dst: Span,
    /// Peer as a job rank (Send, Recv).
    pub peer: u32,
    /// Message tag within the program (Send, Recv).
    pub round: u32,
    /// First predecessor in [`Program::deps`].
    pub first_dep: u32,
    /// Number of predecessors.
    pub n_deps: u32,
}

/// Predefined reductions a device may implement (MPI 4.1 §6.9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// `MPI_SUM`.
    Sum,
    /// `MPI_PROD`.
    Prod,
    /// `MPI_MIN`.
    Min,
    /// `MPI_MAX`.
    Max,
    /// `MPI_LAND`.
    Land,
    /// `MPI_LOR`.
    Lor,
    /// `MPI_LXOR`.
    Lxor,
    /// `MPI_BAND`.
    Band,
    /// `MPI_BOR`.
    Bor,
    /// `MPI_BXOR`.
    Bxor,
}

/// Element types of offloaded reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

/// A collective's schedule, ready for a device.
#[derive(Clone, Copy, Debug)]
pub struct Program<'a> {
    /// The steps; each depends only on earlier ones.
    pub steps: &'a [Step],
    /// Predecessor indices.
    pub deps: &'a [u32],
    /// Buffer sizes: send, receive, then the temporaries.
    pub bufs: &'a [u64],
    /// The reduction of every Reduce step.
    pub reduce: Option<(Reduction, Elem)>,
    /// Identifies this collective's messages: equal on every rank taking
    /// part, different for any two collectives that may overlap.
    pub key: u64,
}

/// A program running on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffloadId(pub u32);

/// A backend's device executes programs.
pub trait Offload {
    /// Start `p` with the caller's `send` bytes and the receive buffer's
    /// initial contents `recv` (which may be shorter than the buffer, or
    /// empty, when the program writes the rest before reading it). `Ok(None)`: not now (every device slot busy,
    /// or no device memory free); the caller runs the schedule itself.
    fn offload_start(&mut self, p: &Program, send: &[u8], recv: &[u8]) -> Result<Option<OffloadId>, TransportError>;
    /// Whether the program has ended; an error if it failed.
    fn offload_test(&mut self, id: OffloadId) -> Result<bool, TransportError>;
    /// After it ended: copy `out.len()` bytes at `offset` of its receive
    /// buffer into `out` (as often as needed).
    fn offload_read(&mut self, id: OffloadId, offset: u64, out: &mut [u8]) -> Result<(), TransportError>;
    /// Release the program's resources (after the reads).
    fn offload_release(&mut self, id: OffloadId);
}
