//! What a fuzz case can find, and why a target cannot be fuzzed at all.

/// A violated invariant: what a case found. Each carries where and what
/// changed, so a report can be read without the case.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Finding {
    /// A register word of a victim slot changed that the case had no
    /// right to change.
    #[error(
        "node {node} slot {slot}: {region} word at {offset:#x} changed from {was:#x} to {now:#x} without the right to"
    )]
    Register {
        /// Node.
        node: u16,
        /// Slot.
        slot: u16,
        /// The region's name.
        region: &'static str,
        /// Byte offset in the region.
        offset: usize,
        /// Before the case.
        was: u64,
        /// After it.
        now: u64,
    },
    /// A byte of a victim's memory partition changed without the right to.
    #[error("node {node} slot {slot}: byte at partition offset {offset:#x} changed without the right to")]
    Memory {
        /// Node.
        node: u16,
        /// Slot.
        slot: u16,
        /// Byte offset in the partition.
        offset: usize,
    },
    /// The victim's ring counters say it holds more than its size.
    #[error("the victim ring holds more than its size: NWA {nwa} NRA {nra} size {size}")]
    Ring {
        /// Next write counter.
        nwa: u64,
        /// Next read counter.
        nra: u64,
        /// Ring size.
        size: u64,
    },
    /// An arrival-queue entry that names another record or source.
    #[error("arrival queue entry for record {record} of {accepted} is {word:#x}, not record {record} from source 0")]
    Arrival {
        /// The record.
        record: u64,
        /// Records accepted.
        accepted: u64,
        /// The entry's word.
        word: u64,
    },
    /// An IVS payload that is not in the victim's ring as sent.
    #[error(
        "IVS payload {index} ({len} B) arrived changed in the victim's ring at counter {counter}: byte {byte} is \
         {got:#04x}, sent {sent:#04x}"
    )]
    Payload {
        /// Which payload of the case.
        index: usize,
        /// Its length.
        len: usize,
        /// The ring counter it starts at.
        counter: u64,
        /// The first byte that differs.
        byte: usize,
        /// What the ring holds there.
        got: u8,
        /// What was sent.
        sent: u8,
    },
    /// An operation the device or driver got wrong (a wrong answer, an
    /// unexpected error).
    #[error("operation {index} {op}: {what}")]
    Operation {
        /// Its place in the case.
        index: usize,
        /// The operation.
        op: String,
        /// What went wrong.
        what: String,
    },
    /// The model itself failed (a panic in its thread).
    #[error("the model failed: {0}")]
    Model(String),
    /// The simulator or device could not be set up for the case.
    #[error(transparent)]
    Setup(#[from] SetupError),
}

/// A target that cannot be fuzzed at all: an error of the set-up, not a
/// finding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The simulator could not be created or started.
    #[error("cannot create a simulator: {0}")]
    Simulator(String),
    /// The device could not be opened or resynchronised.
    #[error("cannot open {path}: {why}")]
    Device {
        /// The device.
        path: std::path::PathBuf,
        /// Why.
        why: String,
    },
}
