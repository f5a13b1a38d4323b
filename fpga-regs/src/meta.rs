//! Machine-readable description of the register map, used by the exporters
//! (C header, JSON, Markdown). Offsets in these tables are computed with
//! `offset_of!` from the `#[repr(C)]` register blocks, so the exported map
//! cannot drift from the structs the driver and the model use.

use serde::Serialize;

/// Who may write a register (every register is readable without side effects).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Access {
    /// Written by the device only; host writes are ignored.
    RO,
    /// Written by the host; the device reads it.
    RW,
}

/// Where a fact comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Source {
    /// Stated in seed 004 (the DIMMnet-2 MPICH2 paper).
    Paper,
    /// Our decision: the paper is silent.
    Ours,
}

/// A bit field inside a 64-bit register or descriptor word.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Field {
    /// Field name (lower snake case).
    pub name: &'static str,
    /// Least significant bit.
    pub lsb: u32,
    /// Width in bits.
    pub width: u32,
    /// What it means.
    pub doc: &'static str,
}

impl Field {
    /// Mask of the field, shifted to bit 0.
    pub const fn mask(&self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }

    /// Extract the field from a word.
    pub const fn get(&self, word: u64) -> u64 {
        (word >> self.lsb) & self.mask()
    }

    /// Return `word` with the field replaced by `value` (truncated to the width).
    pub const fn set(&self, word: u64, value: u64) -> u64 {
        let m = self.mask() << self.lsb;
        (word & !m) | ((value << self.lsb) & m)
    }

    /// Whether `value` fits in the field.
    pub const fn fits(&self, value: u64) -> bool {
        value & !self.mask() == 0
    }
}

/// Declare a `Field` constant.
#[macro_export]
macro_rules! field {
    ($name:literal, $lsb:literal, $width:literal, $doc:literal) => {
        $crate::meta::Field { name: $name, lsb: $lsb, width: $width, doc: $doc }
    };
}

/// A 64-bit register (or an array of them) inside a region.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Register {
    /// Register name (upper snake case).
    pub name: &'static str,
    /// Byte offset from the start of its region.
    pub offset: usize,
    /// Number of elements (1 for a plain register).
    pub count: usize,
    /// Distance between elements in bytes (the element size for arrays of blocks).
    pub stride: usize,
    /// 64-bit words per element.
    pub words: usize,
    /// Who writes it.
    pub access: Access,
    /// Whether the paper says it exists or we made it up.
    pub source: Source,
    /// What it is.
    pub doc: &'static str,
    /// Bit fields of the first word (empty when the word is one number).
    pub fields: &'static [Field],
}

/// A descriptor or header word layout.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Word {
    /// Word index (64-bit words, little-endian).
    pub index: usize,
    /// Fields of the word.
    pub fields: &'static [Field],
}

/// A named numeric constant inside an enumeration.
#[derive(Clone, Debug, Serialize)]
pub struct EnumValue {
    /// Name (upper snake case).
    pub name: String,
    /// Value.
    pub value: u64,
    /// Meaning.
    pub doc: String,
}

/// An enumeration exported to C/JSON/Markdown.
#[derive(Clone, Debug, Serialize)]
pub struct EnumInfo {
    /// Enumeration name (upper snake case prefix).
    pub name: &'static str,
    /// What it enumerates.
    pub doc: &'static str,
    /// Whether it is a set of flag bits rather than exclusive values.
    pub bitflags: bool,
    /// The values.
    pub values: Vec<EnumValue>,
}
