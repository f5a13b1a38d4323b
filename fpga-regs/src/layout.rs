//! Where things are: the per-slot layout of a node's MMIO surface.
//!
//! Seed 004 §2 says that DIMMnet-2 hands every process its own set of hardware
//! resources (UR, LLCM, WW, PW and a share of the SO-DIMM) so that processes
//! cannot disturb each other, and that a process reaches them by `mmap()` of
//! the device. The paper gives no offsets or sizes; every number in this
//! module is **ours**, chosen so that:
//!
//! * each slot is a whole number of pages and slot-aligned, so a process maps
//!   only its own slot (the OS can refuse the rest);
//! * each window is page-aligned on its own, so the host can map WW
//!   write-combining and PW/UR/LLCM uncachable (the paper's MTRR setup, §8.1);
//! * WW and PW are 64 KiB, the largest single vector transfer we benchmark.

/// Host page size the layout is aligned to.
pub const PAGE_SIZE: usize = 4096;

/// Distance between two slots in a node's MMIO surface (1 MiB since map
/// 1.4, whose ring table for 16,384 sources made LLCM 528 KiB; 256 KiB
/// before). Only the pages a slot touches take memory.
pub const SLOT_STRIDE: usize = 0x10_0000;

/// User Register page: capabilities, command queue, completions, status.
pub const UR_OFFSET: usize = 0x0_0000;
/// Size of the UR page.
pub const UR_SIZE: usize = 0x1000;

/// Low Latency Common Memory: the IVS ring table, host scratch and (map
/// 1.2) the arrival queue.
pub const LLCM_OFFSET: usize = 0x0_4000;
/// Size of LLCM: 16 KiB in map 1.1; 48 KiB in map 1.2, which added ring
/// entries for sources 256-1023 and the arrival queue; 528 KiB in map 1.4,
/// which added the entries of sources 1,024-16,383 after them. On a card,
/// on-chip memory of even 48 KiB for each of 16 slots is more than the
/// block RAM of the 2003 prototype's FPGA, so such a card would hold fewer
/// slots or keep the ring table in external SRAM; a job touches only the
/// entries of its own sources.
pub const LLCM_SIZE: usize = 0x8_4000;

/// Write Window: the host writes data and BOTF packet images here
/// (0x1_0000 before map 1.4).
pub const WW_OFFSET: usize = 0x9_0000;
/// Size of WW (64 KiB).
pub const WW_SIZE: usize = 0x1_0000;

/// Prefetch Window: the device deposits VL/RVL data here for the host
/// (0x2_0000 before map 1.4).
pub const PW_OFFSET: usize = 0xA_0000;
/// Size of PW (64 KiB).
pub const PW_SIZE: usize = 0x1_0000;

/// Largest number of nodes a fabric may have (ours; 64 before map 1.2,
/// 1,024 before map 1.4).
pub const MAX_NODES: usize = 16_384;
/// Largest number of slots (processes) per node (ours).
pub const MAX_SLOTS: usize = 16;
/// Largest `nodes × slots`: one IVS ring-table entry per possible source
/// (ours; 256 before map 1.2, 1,024 before map 1.4).
pub const MAX_SOURCES: usize = 16_384;

/// Default SO-DIMM partition per slot (64 MiB; the model can be configured).
pub const DEFAULT_PARTITION_SIZE: u64 = 64 << 20;

/// Device clock: the DIMMnet-2 FPGA runs at 100 MHz (seed 004 Table 1).
pub const DEVICE_CLOCK_HZ: u64 = 100_000_000;

/// How the host must map a window (seed 004 §8.1: WW write-combining, PW uncachable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Caching {
    /// Uncached: every load and store reaches the device, in order.
    Uncached,
    /// Write-combining: stores are merged into 64-byte bursts; never read.
    WriteCombining,
}

/// One of a slot's four host-visible windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Region {
    /// User Register page.
    Ur,
    /// Low Latency Common Memory.
    Llcm,
    /// Write Window.
    Ww,
    /// Prefetch Window.
    Pw,
}

impl Region {
    /// All regions, in address order.
    pub const ALL: [Region; 4] = [Region::Ur, Region::Llcm, Region::Ww, Region::Pw];

    /// Offset of the region inside a slot.
    pub const fn offset(self) -> usize {
        match self {
            Region::Ur => UR_OFFSET,
            Region::Llcm => LLCM_OFFSET,
            Region::Ww => WW_OFFSET,
            Region::Pw => PW_OFFSET,
        }
    }

    /// Size of the region in bytes.
    pub const fn size(self) -> usize {
        match self {
            Region::Ur => UR_SIZE,
            Region::Llcm => LLCM_SIZE,
            Region::Ww => WW_SIZE,
            Region::Pw => PW_SIZE,
        }
    }

    /// How the host maps it.
    pub const fn caching(self) -> Caching {
        match self {
            Region::Ww => Caching::WriteCombining,
            _ => Caching::Uncached,
        }
    }

    /// Short upper-case name as used in the papers.
    pub const fn name(self) -> &'static str {
        match self {
            Region::Ur => "UR",
            Region::Llcm => "LLCM",
            Region::Ww => "WW",
            Region::Pw => "PW",
        }
    }

    /// What the region is for.
    pub const fn doc(self) -> &'static str {
        match self {
            Region::Ur => "User Register: capabilities, command queue, doorbell, completions, status and errors",
            Region::Llcm => "Low Latency Common Memory: IVS ring table (NWA written by the controller, NRA by the host) and host scratch",
            Region::Ww => "Write Window: data for VS/RVS/IVS and BOTF packet images, written by the host",
            Region::Pw => "Prefetch Window: data deposited by VL/RVL, read by the host",
        }
    }
}

/// Byte offset of `region` of `slot` in a node's MMIO surface.
pub const fn slot_region_offset(slot: usize, region: Region) -> usize {
    slot * SLOT_STRIDE + region.offset()
}

/// Size of a node's MMIO surface with `slots` slots.
pub const fn node_mmio_size(slots: usize) -> usize {
    slots * SLOT_STRIDE
}

/// Global index of a source process, used to index IVS ring tables.
pub const fn source_index(node: u16, slot: u16, slots_per_node: u16) -> usize {
    node as usize * slots_per_node as usize + slot as usize
}

const _: () = {
    assert!(SLOT_STRIDE % PAGE_SIZE == 0);
    assert!(UR_OFFSET % PAGE_SIZE == 0 && UR_SIZE % PAGE_SIZE == 0);
    assert!(LLCM_OFFSET % PAGE_SIZE == 0 && LLCM_SIZE % PAGE_SIZE == 0);
    assert!(WW_OFFSET % PAGE_SIZE == 0 && WW_SIZE % PAGE_SIZE == 0);
    assert!(PW_OFFSET % PAGE_SIZE == 0 && PW_SIZE % PAGE_SIZE == 0);
    assert!(UR_OFFSET + UR_SIZE <= LLCM_OFFSET);
    assert!(LLCM_OFFSET + LLCM_SIZE <= WW_OFFSET);
    assert!(WW_OFFSET + WW_SIZE <= PW_OFFSET);
    assert!(PW_OFFSET + PW_SIZE <= SLOT_STRIDE);
    assert!(MAX_NODES * MAX_SLOTS >= MAX_SOURCES);
};
