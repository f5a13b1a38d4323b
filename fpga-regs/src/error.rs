//! Device error codes, as reported in completion entries and `LAST_ERROR`.
//!
//! The paper does not list the controller's error reporting; these codes are
//! **ours**. Every command that the controller refuses completes with one of
//! them and is never performed (partially or otherwise).

use serde::Serialize;

macro_rules! error_codes {
    ($( $(#[doc = $doc:literal])* $name:ident = $val:literal, $hint:literal; )*) => {
        /// Why the controller refused a command or an incoming packet.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
        #[repr(u16)]
        pub enum ErrorCode {
            $( $(#[doc = $doc])* $name = $val, )*
        }

        impl ErrorCode {
            /// Every code, in numeric order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name),*];

            /// Decode a raw status value; `None` for values no device reports.
            pub fn from_raw(raw: u16) -> Option<ErrorCode> {
                match raw { $( $val => Some(ErrorCode::$name), )* _ => None }
            }

            /// Stable upper-snake name, as in the C header.
            pub fn name(self) -> &'static str {
                match self { $( ErrorCode::$name => stringify!($name), )* }
            }

            /// One-line description.
            pub fn doc(self) -> &'static str {
                match self { $( ErrorCode::$name => concat!($($doc),*).trim(), )* }
            }

            /// What a user should do about it.
            pub fn hint(self) -> &'static str {
                match self { $( ErrorCode::$name => $hint, )* }
            }
        }
    };
}

error_codes! {
    /// The command completed.
    Ok = 0, "nothing to do";
    /// The opcode field names no command.
    BadOpcode = 1, "encode descriptors with fpga_regs::Command, or use a valid opcode (1..=8)";
    /// The vector mode field names no mode, or the mode is not allowed for this command.
    BadMode = 2, "use contiguous, stride, list or packed-list; BOTF takes contiguous only";
    /// A reserved field or flag bit is not zero.
    ReservedBits = 3, "clear reserved descriptor words and flag bits";
    /// A window offset plus length runs past the end of WW or PW.
    WindowRange = 4, "keep window offsets and lengths inside the 64 KiB WW/PW";
    /// A local SO-DIMM access falls outside the issuing slot's partition.
    OutOfPartition = 5, "address only your own partition (UR SODIMM_BASE/SODIMM_SIZE)";
    /// The destination node does not exist.
    NoSuchNode = 6, "use a node number below UR TOPOLOGY.num_nodes";
    /// The destination slot does not exist.
    NoSuchSlot = 7, "use a slot number below UR TOPOLOGY.num_slots";
    /// The remote slot has not exposed that SO-DIMM range with that permission.
    NotExposed = 8, "have the remote process register the range in its EXPOSE table";
    /// The remote IVS ring for this source is not enabled.
    RingDisabled = 9, "have the receiver configure and enable the ring for this source";
    /// The remote IVS ring is misconfigured (outside the partition, bad size, or bad pointers).
    RingInvalid = 10, "ring base/size must lie in the receiver's partition, size a non-zero multiple of 8, NWA-NRA within size";
    /// The payload is larger than a packet or larger than the remote ring.
    TooLarge = 11, "split the data; IVS/BOTF payloads are limited to LIMITS.max_payload and the ring size";
    /// A BOTF packet image carries a TYPE the host may not send.
    BadPacketType = 12, "BOTF images may carry TYPE IVS, RVS or RVL only";
    /// A BOTF packet image header is inconsistent (length, mode, pattern block).
    BadPacketHeader = 13, "build the image with fpga_regs::PacketHeader and make the length match";
    /// A doorbell value went backwards or past the command queue depth.
    DoorbellInvalid = 14, "write DOORBELL = number of descriptors posted, at most CMD_FETCHED + 32";
    /// A list entry points outside the accessible range.
    ListRange = 15, "keep every list element inside the partition or window";
    /// A schedule table is malformed, or a schedule met a message that does not fit it.
    BadSchedule = 16, "build schedule tables with fpga_regs::sched; every process of a collective must pass matching counts";
    /// A schedule was started on a completion slot whose schedule is still running.
    ScheduleBusy = 17, "wait for SCHED_DONE of the slot before reusing it";
    /// A schedule message arrived early and the device's early-message store was full.
    ScheduleOverflow = 18, "start fewer collectives at once, or start them on every process sooner";
    /// An AMO names no operation or element type the atomic unit has, a bitwise operation on floating point, or an address not aligned to its element.
    BadAtomic = 19, "use AMO_OP 1..=13 on ELEM_TYPE 1..=10 (no bitwise operation on floats), word 1 = the element's size, an aligned address";
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}; {}", self.name(), *self as u16, self.doc(), self.hint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_dense() {
        for (i, c) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(*c as u16 as usize, i);
            assert_eq!(ErrorCode::from_raw(*c as u16), Some(*c));
        }
        assert_eq!(ErrorCode::from_raw(ErrorCode::ALL.len() as u16), None);
    }
}
