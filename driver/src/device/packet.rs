//! Sending a packet by BOTF (seed 004 §8.3) from a typed header: the
//! driver writes the image into WW itself, so it knows where the packet
//! goes without reading WW back.

use fpga_regs::packet::PacketType;

use super::*;

impl Device {
    /// Send one packet by BOTF (seed 004 §8.3): write `header` and then the
    /// concatenation of `payload` into WW at `ww_off` as one gather (from
    /// where the pieces are, no image assembled first), and post BOTF for
    /// it. The caller says where the packet goes by the header it hands
    /// over, so the driver knows which of its own words the command may
    /// change without reading WW back. `header.payload_len` must be the
    /// payload's length, and at most [`MAX_PACKET_PIECES`] pieces are taken.
    pub fn submit_packet(
        &mut self,
        ww_off: usize,
        header: &PacketHeader,
        payload: &[&[u8]],
    ) -> Result<Ticket, DriverError> {
        let len: usize = payload.iter().map(|p| p.len()).sum();
        if len != header.payload_len as usize {
            return Err(DriverError::Invalid(format!(
                "a packet header says {} payload bytes but {len} were given; set payload_len to the payload's length",
                header.payload_len
            )));
        }
        if payload.len() > MAX_PACKET_PIECES {
            return Err(DriverError::Invalid(format!(
                "a packet of {} pieces; at most {MAX_PACKET_PIECES} are gathered, join some first",
                payload.len()
            )));
        }
        let image = header.encode();
        let mut parts: [&[u8]; MAX_PACKET_PIECES + 1] = [&[]; MAX_PACKET_PIECES + 1];
        parts[0] = &image;
        parts[1..=payload.len()].copy_from_slice(payload);
        self.write_ww_gather(ww_off, &parts[..=payload.len()])?;
        let image_len = image.len() + len;
        let cmd = Command::Botf { ww_off: ww_off as u32, len: image_len as u32 };
        let effects = self.packet_effects(header, self.posted);
        self.post(cmd.encode(), cmd.opcode().name(), effects)
    }

    /// What a BOTF of a packet with `header` may change in this slot: only
    /// its completion entry when the packet writes another node (IVS, RVS);
    /// a packet to this node, or one that asks for data back, may change
    /// anything.
    pub(super) fn packet_effects(&self, header: &PacketHeader, seq: u64) -> Effects {
        if header.dst != self.info.me && matches!(header.ptype, PacketType::Ivs | PacketType::Rvs) {
            Effects { entry: seq as usize % CQ_DEPTH, llcm: false, pw: false }
        } else {
            Effects::anything(seq)
        }
    }
}
