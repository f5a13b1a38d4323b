//! IVS rings (seed 004 §2): setting up a source's ring in LLCM, reading
//! what arrived through VL into PW, consuming it (NRA), and the arrival
//! queue of register map 1.2 that says which rings to read.

use super::*;

impl Device {
    pub(super) fn source_index(&self, src: Peer) -> Result<usize, DriverError> {
        if src.node >= self.info.nodes || src.slot >= self.info.slots {
            return Err(DriverError::Invalid(format!(
                "{src} is not in this {}x{} fabric",
                self.info.nodes, self.info.slots
            )));
        }
        Ok(layout::source_index(src.node, src.slot, self.info.slots))
    }

    /// Set up and enable the ring for messages from `src` at
    /// `[base, base+size)` of this slot's SO-DIMM (seed 004 §2, IPUSH).
    pub fn ring_setup(&mut self, src: Peer, base: u64, size: u32) -> Result<(), DriverError> {
        let idx = self.source_index(src)?;
        if size == 0 || size as u64 % fpga_regs::llcm::RING_ALIGN != 0 || base % fpga_regs::llcm::RING_ALIGN != 0 {
            return Err(DriverError::Invalid(format!(
                "ring base {base:#x} and size {size} must be non-zero multiples of 8"
            )));
        }
        self.check_partition(base, size as u64)?;
        let e = fpga_regs::llcm::off::ring(idx);
        use fpga_regs::llcm::{off, RingState};
        self.write_llcm(e + off::RING_SIZE_CTRL, RingState::size_ctrl(size, false))?;
        self.write_llcm(e + off::RING_NWA, 0)?;
        self.write_llcm(e + off::RING_NRA, 0)?;
        self.write_llcm(e + off::RING_BASE, base)?;
        self.write_llcm(e + off::RING_SIZE_CTRL, RingState::size_ctrl(size, true))?;
        if self.rings.len() <= idx {
            self.rings.resize(idx + 1, RingLocal::default());
        }
        self.rings[idx] = RingLocal { base, size, nra: 0 };
        Ok(())
    }

    fn ring(&self, src: Peer) -> Result<(usize, &RingLocal), DriverError> {
        let idx = self.source_index(src)?;
        self.rings
            .get(idx)
            .filter(|r| r.size != 0)
            .map(|r| (idx, r))
            .ok_or_else(|| DriverError::Invalid(format!("no ring is set up for {src}")))
    }

    /// Bytes appended to `src`'s ring and not yet consumed (one uncached read of NWA).
    pub fn ring_available(&self, src: Peer) -> Result<u64, DriverError> {
        let (_, r) = self.ring(src)?;
        let nra = r.nra;
        let size = r.size as u64;
        Ok(self.ring_nwa(src)?.wrapping_sub(nra).min(size))
    }

    /// The raw NWA of `src`'s ring (one uncached read).
    pub fn ring_nwa(&self, src: Peer) -> Result<u64, DriverError> {
        let (idx, _) = self.ring(src)?;
        self.read_llcm(fpga_regs::llcm::off::ring(idx) + fpga_regs::llcm::off::RING_NWA)
    }

    /// Copy `len` ring bytes starting `skip` bytes past NRA into PW at
    /// `pw_off` with VL (two VLs when the range wraps). Does not consume.
    pub fn ring_load(&mut self, src: Peer, skip: u64, len: u64, pw_off: u32) -> Result<(), DriverError> {
        let (_, r) = self.ring(src)?;
        if len == 0 {
            return Ok(());
        }
        let size = r.size as u64;
        if skip.checked_add(len).is_none_or(|end| end > size) {
            return Err(DriverError::Invalid(format!(
                "ring read of {len} bytes at +{skip} exceeds the {}-byte ring",
                r.size
            )));
        }
        let pos = r.nra.wrapping_add(skip) % size;
        let first = (size - pos).min(len);
        let base = r.base;
        let cmd1 = Command::Vl { src: fpga_regs::Pattern::Contiguous { addr: base + pos, len: first as u32 }, pw_off };
        let t1 = self.submit(&cmd1)?;
        let t2 = if first < len {
            let cmd2 = Command::Vl {
                src: fpga_regs::Pattern::Contiguous { addr: base, len: (len - first) as u32 },
                pw_off: pw_off + first as u32,
            };
            Some(self.submit(&cmd2)?)
        } else {
            None
        };
        self.wait(t1)?;
        if let Some(t2) = t2 {
            self.wait(t2)?;
        }
        Ok(())
    }

    /// Whether the device keeps the arrival queue (map 1.2).
    pub fn has_arrivals(&self) -> bool {
        self.info.caps.contains(Caps::ARRIVALS)
    }

    /// Start following the arrival queue at the device's current count
    /// (`RX_ACCEPTED`, one uncached read): every record published from now
    /// on is reported by [`Device::read_arrivals`]. Take it before enabling
    /// the rings it is to report on.
    pub fn arrival_cursor(&self) -> Result<ArrivalCursor, DriverError> {
        if !self.has_arrivals() {
            return Err(DriverError::Invalid(format!(
                "this device (register map {}.{}) has no arrival queue; it came with map 1.2",
                self.info.version.0, self.info.version.1
            )));
        }
        Ok(ArrivalCursor(self.read_ur(ur::off::RX_ACCEPTED)))
    }

    /// Push the source of every record published in any ring since
    /// `cursor` onto `out`, oldest first, and move the cursor past them:
    /// one uncached read when there are none, one more per record.
    /// `Ok(false)`: more than `ARRIVAL_ENTRIES` records went by (some
    /// entries were overwritten) or an entry names no source of this
    /// fabric — the caller must look at every ring once.
    pub fn read_arrivals(&self, cursor: &mut ArrivalCursor, out: &mut Vec<Peer>) -> Result<bool, DriverError> {
        use fpga_regs::llcm::{arrival, off, ARRIVAL_ENTRIES};
        let head = self.read_ur(ur::off::RX_ACCEPTED);
        let from = cursor.0;
        cursor.0 = head;
        let n = head.wrapping_sub(from);
        if n > ARRIVAL_ENTRIES as u64 {
            return Ok(false);
        }
        let sources = self.info.nodes as usize * self.info.slots as usize;
        for k in from..from.wrapping_add(n) {
            match arrival::decode(k, self.read_llcm(off::arrival(k))?) {
                Some(idx) if idx < sources => {
                    let slots = self.info.slots as usize;
                    out.push(Peer::new((idx / slots) as u16, (idx % slots) as u16));
                }
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// What a wait for the next arrival watches, for [`Device::idle_on`]:
    /// `RX_ACCEPTED` with the value `cursor` last read there.
    pub fn arrivals_watch(&self, cursor: &ArrivalCursor) -> (u32, u64) {
        ((Region::Ur.offset() + ur::off::RX_ACCEPTED) as u32, cursor.0)
    }

    /// Advance `src`'s NRA by `bytes` (rounded up to the 8-byte record alignment).
    pub fn ring_consume(&mut self, src: Peer, bytes: u64) -> Result<(), DriverError> {
        let idx = self.source_index(src)?;
        let r = self
            .rings
            .get_mut(idx)
            .filter(|r| r.size != 0)
            .ok_or_else(|| DriverError::Invalid(format!("no ring is set up for {src}")))?;
        r.nra += fpga_regs::llcm::record_len(bytes);
        let nra = r.nra;
        self.write_llcm(fpga_regs::llcm::off::ring(idx) + fpga_regs::llcm::off::RING_NRA, nra)
    }

    /// The host's NRA for `src`'s ring.
    pub fn ring_nra(&self, src: Peer) -> Result<u64, DriverError> {
        Ok(self.ring(src)?.1.nra)
    }
}
