//! # driver — the user-level DIMMnet-2 driver
//!
//! Open a device path and map one slot with memmap2, then issue commands
//! through typed registers (volatile-register cells over the `fpga-regs`
//! layout). The same code drives the real card (a character device mapped
//! with the WW write-combining / PW uncachable attributes of seed 004 §8.1)
//! and the simulator (a node file under a cluster directory): in simulation
//! the process additionally attaches to the scheduler, charges host costs to
//! a simulated clock, and tells the model when it rang a doorbell.
//!
//! ```no_run
//! use driver::Device;
//! use fpga_regs::{Command, Pattern};
//! # fn main() -> Result<(), driver::DriverError> {
//! let mut dev = Device::open("/dev/shm/dimmnet/node0.mmio", 0)?;
//! let base = dev.info().sodimm_base;
//! dev.write_ww(0, b"hello, SO-DIMM!!")?;
//! dev.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 16 } })?;
//! dev.run(&Command::Vl { src: Pattern::Contiguous { addr: base, len: 16 }, pw_off: 0 })?;
//! let mut buf = [0u8; 16];
//! dev.read_pw(0, &mut buf)?;
//! assert_eq!(&buf, b"hello, SO-DIMM!!");
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod device;
mod error;
pub mod platform;

pub use device::{ArrivalCursor, Completion, Device, DeviceInfo, ErrorStatus, OpenOptions, Ticket, MAX_PACKET_PIECES};
pub use error::DriverError;
pub use fpga_regs;
pub use simlink;
pub use simlink::simctl::HostCost;
