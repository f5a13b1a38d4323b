//! Driver errors: each says what went wrong and what to do about it.

use fpga_regs::ErrorCode;

/// Everything the driver can report.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The device path could not be opened or mapped.
    #[error("cannot open DIMMnet-2 device {path}: {reason}")]
    Open {
        /// Path given.
        path: String,
        /// Why.
        reason: String,
    },
    /// The mapped memory is not a DIMMnet-2 slot of a compatible version.
    #[error("{path} is not a compatible DIMMnet-2 device: {reason}")]
    Incompatible {
        /// Path given.
        path: String,
        /// Why.
        reason: String,
    },
    /// The simulator refused to attach this process.
    #[error("the simulator refused to attach: {0}")]
    AttachRefused(String),
    /// The simulator is not running (or stopped answering).
    #[error("the simulator is not running: {0}")]
    SimulatorGone(String),
    /// The simulator found every process waiting with nothing in flight.
    #[error("simulation deadlock: {message}")]
    Deadlock {
        /// The simulator's description (who waits, who left).
        message: String,
        /// Some IVS packets were waiting for ring space nobody will free.
        packets_held: bool,
    },
    /// The simulator is shutting down.
    #[error("the simulator is shutting down")]
    Shutdown,
    /// The device refused a command.
    #[error("{op} (command #{seq}) refused by the device: {code}")]
    Device {
        /// The command.
        op: &'static str,
        /// Its sequence number.
        seq: u64,
        /// Why.
        code: ErrorCode,
    },
    /// The device reported a status value no version of the map defines.
    #[error("command #{seq} completed with unknown status {raw}; is the driver older than the device?")]
    UnknownStatus {
        /// Sequence number.
        seq: u64,
        /// Raw status.
        raw: u16,
    },
    /// An argument is outside what the device supports.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// Waited too long for real hardware.
    #[error("timed out after {0:?} waiting for the device; is the card alive?")]
    Timeout(std::time::Duration),
    /// A ticket that was already waited for, or never issued.
    #[error("unknown command ticket #{0}")]
    UnknownTicket(u64),
}

impl DriverError {
    /// The device's error code, if the device refused a command.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            DriverError::Device { code, .. } => Some(*code),
            _ => None,
        }
    }
}
