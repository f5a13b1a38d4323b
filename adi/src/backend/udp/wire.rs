//! The datagram header (seed 001 §2.1, Fig. 1, plus what safety needs).
//!
//! From the paper: source and destination process numbers, per-pair send and
//! acknowledged sequence numbers, data length, fragment id and fragment
//! count, flags (ACK). Ours: a magic and version, a job id (datagrams of
//! another job are dropped), a NACK flag, the payload length (truncation
//! check) and a CRC-32 of header and payload (corruption check).
//!
//! | offset | field |
//! |---|---|
//! | 0 | magic `u16` = 0x4455 |
//! | 2 | version `u8` = 2 |
//! | 3 | flags `u8`: DATA 1, ACK 2 (ack only), NACK 4, FULL_CRC 8, BYE 16, HAVE_BYE 32, AUTH 64, PING 128 |
//! | 4 | job id `u32` |
//! | 8 | source rank `u32` |
//! | 12 | destination rank `u32` |
//! | 16 | sequence number of this packet (DATA) or first missing one (NACK) `u32` |
//! | 20 | cumulative ack: next sequence number expected from the destination `u32` |
//! | 24 | message length `u32` |
//! | 28 | fragment id `u16`, fragment count `u16` |
//! | 32 | payload length `u32` |
//! | 36 | CRC-32 (below) `u32` |
//!
//! The CRC-32 covers the header (with this field zero) and the first
//! [`CRC_PREFIX`] payload bytes — where the protocol engine keeps its own
//! header — or, with FULL_CRC, the whole payload. The rest of the payload is
//! protected by the UDP checksum, which the kernel verifies; FULL_CRC is set
//! when faults are injected (they corrupt bytes before the kernel sees them)
//! or on request (`DN_UDP_CHECKSUM=full`).
//!
//! **Authenticated mode** (`DN_UDP_AUTH=1`): the CRC is no secret, so a
//! process that can spoof the source address could inject data with a valid
//! CRC. With a per-job key ([`AuthKey`], from the launcher), every datagram
//! sets AUTH and ends with a [`TAG`]-byte tag: BLAKE3 in keyed mode over the
//! sealed header and the payload, truncated to 128 bits. A receiver with a
//! key drops every datagram without a valid tag; one without a key drops
//! every datagram with AUTH. Replays of a captured datagram are what the
//! sequence numbers already discard as duplicates.

/// Header size.
pub const HEADER: usize = 40;
/// Magic.
pub const MAGIC: u16 = 0x4455;
/// Version (2: PING).
pub const VERSION: u8 = 2;

/// Flags.
pub mod flag {
    /// Carries message data.
    pub const DATA: u8 = 1;
    /// Acknowledgement only.
    pub const ACK: u8 = 2;
    /// Negative acknowledgement: `seq` is the first missing packet.
    pub const NACK: u8 = 4;
    /// The CRC covers the whole payload.
    pub const FULL_CRC: u8 = 8;
    /// Goodbye: the sender is finalizing and every datagram it sent to the
    /// destination is acknowledged, so it needs nothing more from it.
    pub const BYE: u8 = 16;
    /// With BYE: the sender has the destination's goodbye too.
    pub const HAVE_BYE: u8 = 32;
    /// A keyed tag of [`super::TAG`] bytes follows the payload.
    pub const AUTH: u8 = 64;
    /// Are you there? Sent to a peer silent for a quarter of the peer
    /// timeout and answered at once with an ACK, so that a rank that only
    /// waits for data can tell a quiet peer from a lost one.
    pub const PING: u8 = 128;
}

/// Bytes of the authentication tag (authenticated mode).
pub const TAG: usize = 16;

/// The per-job key of authenticated mode. Its `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthKey(pub [u8; 32]);

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthKey(..)")
    }
}

impl AuthKey {
    /// The tag of a datagram given as its parts (sealed header first).
    pub fn tag(&self, parts: &[&[u8]]) -> [u8; TAG] {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        for p in parts {
            h.update(p);
        }
        let mut out = [0u8; TAG];
        h.finalize_xof().fill(&mut out);
        out
    }

    /// Whether `d` (header, payload, tag) carries AUTH and a valid tag;
    /// compared in constant time.
    pub fn verify(&self, d: &[u8]) -> bool {
        if d.len() < HEADER + TAG || d[3] & flag::AUTH == 0 {
            return false;
        }
        let (body, tag) = d.split_at(d.len() - TAG);
        let want = self.tag(&[body]);
        want.iter().zip(tag).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// Payload bytes always covered by the CRC.
pub const CRC_PREFIX: usize = 64;

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Flags.
    pub flags: u8,
    /// Job id.
    pub job: u32,
    /// Source rank.
    pub src: u32,
    /// Destination rank.
    pub dst: u32,
    /// Sequence number.
    pub seq: u32,
    /// Cumulative ack.
    pub ack: u32,
    /// Message length.
    pub msg_len: u32,
    /// Fragment id.
    pub frag: u16,
    /// Fragment count.
    pub nfrags: u16,
    /// Payload length.
    pub payload: u32,
}

/// Why a datagram was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Shorter than a header, or the payload length disagrees.
    Truncated,
    /// Wrong magic or version.
    Foreign,
    /// Another job.
    OtherJob,
    /// Not addressed to us, or from a rank (or address) we do not know.
    UnknownSender,
    /// CRC mismatch.
    Corrupt,
    /// Inconsistent fields.
    Malformed,
    /// Authenticated mode: no AUTH flag or a wrong tag (forged, or from a
    /// rank without the job's key); without a key: a datagram with AUTH.
    Unauthenticated,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl Header {
    /// Write the header into the first [`HEADER`] bytes of `out` (CRC left zero).
    pub fn write(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        out[2] = VERSION;
        out[3] = self.flags;
        out[4..8].copy_from_slice(&self.job.to_le_bytes());
        out[8..12].copy_from_slice(&self.src.to_le_bytes());
        out[12..16].copy_from_slice(&self.dst.to_le_bytes());
        out[16..20].copy_from_slice(&self.seq.to_le_bytes());
        out[20..24].copy_from_slice(&self.ack.to_le_bytes());
        out[24..28].copy_from_slice(&self.msg_len.to_le_bytes());
        out[28..30].copy_from_slice(&self.frag.to_le_bytes());
        out[30..32].copy_from_slice(&self.nfrags.to_le_bytes());
        out[32..36].copy_from_slice(&self.payload.to_le_bytes());
        out[36..40].copy_from_slice(&0u32.to_le_bytes());
    }

    /// Decode and validate a whole datagram for `job`, addressed to `me`, in a job of `size` ranks.
    pub fn parse(d: &[u8], job: u32, me: u32, size: u32) -> Result<Header, Reject> {
        if d.len() < HEADER {
            return Err(Reject::Truncated);
        }
        if u16_at(d, 0) != MAGIC || d[2] != VERSION {
            return Err(Reject::Foreign);
        }
        let h = Header {
            flags: d[3],
            job: u32_at(d, 4),
            src: u32_at(d, 8),
            dst: u32_at(d, 12),
            seq: u32_at(d, 16),
            ack: u32_at(d, 20),
            msg_len: u32_at(d, 24),
            frag: u16_at(d, 28),
            nfrags: u16_at(d, 30),
            payload: u32_at(d, 32),
        };
        if h.payload as usize != d.len() - HEADER {
            return Err(Reject::Truncated);
        }
        if checksum(&d[..HEADER], &[&d[HEADER..]]) != u32_at(d, 36) {
            return Err(Reject::Corrupt);
        }
        if h.job != job {
            return Err(Reject::OtherJob);
        }
        if h.dst != me || h.src >= size || h.src == me {
            return Err(Reject::UnknownSender);
        }
        if h.flags == 0 {
            return Err(Reject::Malformed);
        }
        // A goodbye and a ping are control datagrams of their own.
        if (h.flags & flag::HAVE_BYE != 0 && h.flags & flag::BYE == 0)
            || (h.flags & flag::BYE != 0 && h.flags & (flag::DATA | flag::NACK) != 0)
            || (h.flags & flag::PING != 0 && h.flags & (flag::DATA | flag::NACK | flag::BYE) != 0)
        {
            return Err(Reject::Malformed);
        }
        if h.flags & flag::DATA != 0 && (h.nfrags == 0 || h.frag >= h.nfrags || h.payload > h.msg_len) {
            return Err(Reject::Malformed);
        }
        Ok(h)
    }
}

/// CRC-32 of a datagram given as its header and its payload in pieces.
pub fn checksum(header: &[u8], payload: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header[..36]);
    h.update(&[0u8; 4]);
    let mut left = if header[3] & flag::FULL_CRC != 0 { usize::MAX } else { CRC_PREFIX };
    for p in payload {
        let n = p.len().min(left);
        h.update(&p[..n]);
        left -= n;
        if left == 0 {
            break;
        }
    }
    h.finalize()
}

/// Fill in the CRC of a datagram given as header (+ payload start) and the rest.
pub fn seal_parts(head: &mut [u8], rest: &[u8]) {
    let c = checksum(&head[..HEADER], &[&head[HEADER..], rest]);
    head[36..40].copy_from_slice(&c.to_le_bytes());
}

/// Fill in the CRC of a complete datagram.
pub fn seal(d: &mut [u8]) {
    seal_parts(d, &[]);
}

/// `a < b` in wrapping sequence-number space.
pub fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// A sealed datagram of header `h` and `payload`: what a test forges.
#[cfg(test)]
pub(crate) fn datagram(h: Header, payload: &[u8]) -> Vec<u8> {
    let mut d = vec![0u8; HEADER + payload.len()];
    h.write(&mut d);
    d[HEADER..].copy_from_slice(payload);
    seal(&mut d);
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> Header {
        Header {
            flags: flag::DATA,
            job: 77,
            src: 1,
            dst: 0,
            seq: 5,
            ack: 9,
            msg_len: 3,
            frag: 0,
            nfrags: 1,
            payload: 3,
        }
    }

    #[test]
    fn valid_datagrams_parse_and_bad_ones_are_classified() {
        let d = datagram(header(), b"abc");
        assert_eq!(Header::parse(&d, 77, 0, 4), Ok(header()));
        assert_eq!(Header::parse(&d, 78, 0, 4), Err(Reject::OtherJob));
        assert_eq!(Header::parse(&d[..30], 77, 0, 4), Err(Reject::Truncated));
        assert_eq!(Header::parse(&d[..42], 77, 0, 4), Err(Reject::Truncated));
        assert_eq!(Header::parse(&d, 77, 2, 4), Err(Reject::UnknownSender));
        assert_eq!(Header::parse(&d, 77, 0, 1), Err(Reject::UnknownSender));
        let mut c = d.clone();
        c[HEADER + 1] ^= 0x40;
        assert_eq!(Header::parse(&c, 77, 0, 4), Err(Reject::Corrupt));
        let mut f = d.clone();
        f[0] = 0;
        assert_eq!(Header::parse(&f, 77, 0, 4), Err(Reject::Foreign));
        let bad = datagram(Header { frag: 1, ..header() }, b"abc");
        assert_eq!(Header::parse(&bad, 77, 0, 4), Err(Reject::Malformed));
        let bye = Header { flags: flag::BYE | flag::HAVE_BYE, msg_len: 0, nfrags: 0, payload: 0, ..header() };
        assert!(Header::parse(&datagram(bye, b""), 77, 0, 4).is_ok());
        let ping = Header { flags: flag::PING, ..bye };
        assert!(Header::parse(&datagram(ping, b""), 77, 0, 4).is_ok());
        for flags in [
            flag::HAVE_BYE,
            flag::BYE | flag::DATA,
            flag::BYE | flag::NACK,
            flag::PING | flag::DATA,
            flag::PING | flag::NACK,
            flag::PING | flag::BYE,
        ] {
            let bad = datagram(Header { flags, ..bye }, b"");
            assert_eq!(Header::parse(&bad, 77, 0, 4), Err(Reject::Malformed), "flags {flags:#x}");
        }
    }

    #[test]
    fn without_full_crc_only_the_payload_prefix_is_covered() {
        let h = Header { flags: flag::DATA, msg_len: 100, payload: 100, ..header() };
        let mut payload = vec![1u8; 100];
        let d = datagram(h, &payload);
        payload[99] ^= 1;
        let mut late = d.clone();
        late[HEADER + 99] ^= 1;
        assert!(Header::parse(&late, 77, 0, 4).is_ok(), "beyond the prefix the UDP checksum protects the data");
        let mut early = d.clone();
        early[HEADER + 10] ^= 1;
        assert_eq!(Header::parse(&early, 77, 0, 4), Err(Reject::Corrupt));
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(seq_lt(u32::MAX, 0));
        assert!(seq_lt(5, 6));
        assert!(!seq_lt(6, 5));
    }

    proptest! {
        #[test]
        fn garbage_never_panics(d in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Header::parse(&d, 1, 0, 4);
        }

        #[test]
        fn any_single_bit_flip_is_rejected(bit in 0usize..(HEADER + 3) * 8) {
            let mut d = datagram(header(), b"abc");
            d[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(Header::parse(&d, 77, 0, 4).is_err());
        }
    }
}
