//! Control packets (seed 004 §6.2, Fig. 6).
//!
//! Every packet starts with a Type byte. The eager-send packet carries the
//! envelope (`match` = tag, rank, context id; `data_sz`) and the sender's
//! request id, followed by the data; RTS carries the same envelope; CTS
//! carries the sender's and receiver's request ids and where to put the data
//! (for transports with remote writes: an address in the receiver's memory;
//! the paper's `iovec`); FTS carries the receiver's request id. DATA (ours)
//! carries a piece of a rendezvous message on transports without remote
//! writes. CANCEL (ours) asks the receiver to withdraw an unmatched
//! message of send `sreq`, and CANCELLED answers whether it did (flag WON).
//! Layouts (little-endian) are ours:
//!
//! | type | bytes | fields |
//! |---|---|---|
//! | EAGER, RTS | 32 | type, flags, _, ctx u32, tag i32, src u32, len u64, sreq u32, _ u32 |
//! | CTS | 40 | type, flags, _, sreq u32, rreq u32, _ u32, offset u64, len u64, addr u64 |
//! | FTS, DATA | 24 | type, flags, _, rreq u32, offset u64, len u64 |
//! | CANCEL, CANCELLED | 24 | type, flags, _, sreq u32, _ |

use crate::error::AdiError;

/// Packet type codes.
pub mod kind {
    /// Eager send: envelope + data.
    pub const EAGER: u8 = 1;
    /// Rendezvous request to send: envelope.
    pub const RTS: u8 = 2;
    /// Rendezvous clear to send: where to put the data.
    pub const CTS: u8 = 3;
    /// Rendezvous finish: the data is in place.
    pub const FTS: u8 = 4;
    /// Rendezvous data for transports without remote writes.
    pub const DATA: u8 = 5;
    /// Withdraw a send's message if it has not matched (MPI 4.1 §3.8.4).
    pub const CANCEL: u8 = 6;
    /// The answer to CANCEL.
    pub const CANCELLED: u8 = 7;
}

/// Flag: the sender used synchronous mode.
pub const FLAG_SYNC: u8 = 1;
/// Flag: CTS carries a remote address.
pub const FLAG_ADDR: u8 = 2;
/// Flag: CANCELLED says the message was withdrawn.
pub const FLAG_WON: u8 = 4;

/// Header sizes.
pub const ENVELOPE_LEN: usize = 32;
/// CTS size.
pub const CTS_LEN: usize = 40;
/// FTS / DATA header size.
pub const SHORT_LEN: usize = 24;

/// The matching part of a message (MPI "envelope").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// Context id (communicator).
    pub ctx: u32,
    /// Tag.
    pub tag: i32,
    /// Sender's rank in the job.
    pub src: u32,
    /// Message length in bytes.
    pub len: u64,
}

/// A decoded control packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Eager send; the data follows the header.
    Eager {
        /// Envelope.
        env: Envelope,
        /// Sender's request id.
        sreq: u32,
    },
    /// Request to send.
    Rts {
        /// Envelope.
        env: Envelope,
        /// Sender's request id.
        sreq: u32,
        /// Synchronous mode.
        sync: bool,
    },
    /// Clear to send bytes `offset..offset+len`.
    Cts {
        /// Sender's request id.
        sreq: u32,
        /// Receiver's request id.
        rreq: u32,
        /// First byte wanted.
        offset: u64,
        /// Bytes wanted.
        len: u64,
        /// Where to write them (remote-write transports).
        addr: Option<u64>,
    },
    /// Bytes `offset..offset+len` are in place.
    Fts {
        /// Receiver's request id.
        rreq: u32,
        /// First byte.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// Bytes `offset..` follow the header.
    Data {
        /// Receiver's request id.
        rreq: u32,
        /// First byte.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// Withdraw the message of send `sreq` if no receive has matched it.
    Cancel {
        /// Sender's request id.
        sreq: u32,
    },
    /// Whether the message of send `sreq` was withdrawn.
    Cancelled {
        /// Sender's request id.
        sreq: u32,
        /// Withdrawn: it will never be received.
        won: bool,
    },
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn get64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Largest encoded header.
pub const MAX_HEADER: usize = CTS_LEN;

impl Packet {
    /// Encode into `out`; returns the header length.
    pub fn encode(&self, out: &mut [u8; MAX_HEADER]) -> usize {
        *out = [0; MAX_HEADER];
        match *self {
            Packet::Eager { env, sreq } | Packet::Rts { env, sreq, .. } => {
                let (k, sync) = match self {
                    Packet::Rts { sync, .. } => (kind::RTS, *sync),
                    _ => (kind::EAGER, false),
                };
                out[0] = k;
                out[1] = if sync { FLAG_SYNC } else { 0 };
                put32(out, 4, env.ctx);
                put32(out, 8, env.tag as u32);
                put32(out, 12, env.src);
                put64(out, 16, env.len);
                put32(out, 24, sreq);
                ENVELOPE_LEN
            }
            Packet::Cts { sreq, rreq, offset, len, addr } => {
                out[0] = kind::CTS;
                out[1] = if addr.is_some() { FLAG_ADDR } else { 0 };
                put32(out, 4, sreq);
                put32(out, 8, rreq);
                put64(out, 16, offset);
                put64(out, 24, len);
                put64(out, 32, addr.unwrap_or(0));
                CTS_LEN
            }
            Packet::Fts { rreq, offset, len } | Packet::Data { rreq, offset, len } => {
                out[0] = if matches!(self, Packet::Fts { .. }) { kind::FTS } else { kind::DATA };
                put32(out, 4, rreq);
                put64(out, 8, offset);
                put64(out, 16, len);
                SHORT_LEN
            }
            Packet::Cancel { sreq } => {
                out[0] = kind::CANCEL;
                put32(out, 4, sreq);
                SHORT_LEN
            }
            Packet::Cancelled { sreq, won } => {
                out[0] = kind::CANCELLED;
                out[1] = if won { FLAG_WON } else { 0 };
                put32(out, 4, sreq);
                SHORT_LEN
            }
        }
    }

    /// Decode the packet at the start of `msg`, which the transport received
    /// from rank `src` (an envelope naming another rank is refused); returns
    /// it and its header length.
    pub fn decode(src: u32, msg: &[u8]) -> Result<(Packet, usize), AdiError> {
        Packet::decode_head(src, msg, msg.len())
    }

    /// Decode a packet of `total` bytes from its first bytes `head` (which
    /// must hold the whole header); lengths are checked against `total`.
    pub fn decode_head(src: u32, head: &[u8], total: usize) -> Result<(Packet, usize), AdiError> {
        let msg = head;
        let bad = |what: &str| AdiError::Protocol { sender: src, what: what.to_string() };
        let k = *msg.first().ok_or_else(|| bad("empty message"))?;
        let need = match k {
            kind::EAGER | kind::RTS => ENVELOPE_LEN,
            kind::CTS => CTS_LEN,
            kind::FTS | kind::DATA | kind::CANCEL | kind::CANCELLED => SHORT_LEN,
            other => return Err(bad(&format!("unknown packet type {other}"))),
        };
        if msg.len() < need || total < need {
            return Err(bad(&format!("type {k} packet of {total} bytes is shorter than its {need}-byte header")));
        }
        let flags = msg[1];
        let p = match k {
            kind::EAGER | kind::RTS => {
                let env = Envelope {
                    ctx: get32(msg, 4),
                    tag: get32(msg, 8) as i32,
                    src: get32(msg, 12),
                    len: get64(msg, 16),
                };
                if env.src != src {
                    return Err(bad(&format!("envelope claims to come from rank {}", env.src)));
                }
                let sreq = get32(msg, 24);
                if k == kind::EAGER {
                    if total as u64 - ENVELOPE_LEN as u64 != env.len {
                        return Err(bad("eager packet length disagrees with its envelope"));
                    }
                    Packet::Eager { env, sreq }
                } else {
                    Packet::Rts { env, sreq, sync: flags & FLAG_SYNC != 0 }
                }
            }
            kind::CTS => Packet::Cts {
                sreq: get32(msg, 4),
                rreq: get32(msg, 8),
                offset: get64(msg, 16),
                len: get64(msg, 24),
                addr: (flags & FLAG_ADDR != 0).then(|| get64(msg, 32)),
            },
            kind::FTS => Packet::Fts { rreq: get32(msg, 4), offset: get64(msg, 8), len: get64(msg, 16) },
            kind::CANCEL => Packet::Cancel { sreq: get32(msg, 4) },
            kind::CANCELLED => Packet::Cancelled { sreq: get32(msg, 4), won: flags & FLAG_WON != 0 },
            _ => {
                let (rreq, offset, len) = (get32(msg, 4), get64(msg, 8), get64(msg, 16));
                if total as u64 - SHORT_LEN as u64 != len {
                    return Err(bad("data packet length disagrees with its header"));
                }
                Packet::Data { rreq, offset, len }
            }
        };
        Ok((p, need))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn packet() -> impl Strategy<Value = Packet> {
        // Envelopes name the rank the transport says they came from (3 below).
        let env = (any::<u32>(), any::<i32>(), 0u64..64).prop_map(|(ctx, tag, len)| Envelope { ctx, tag, src: 3, len });
        prop_oneof![
            (env.clone(), any::<u32>()).prop_map(|(env, sreq)| Packet::Eager { env, sreq }),
            (env, any::<u32>(), any::<bool>()).prop_map(|(env, sreq, sync)| Packet::Rts { env, sreq, sync }),
            (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>(), proptest::option::of(any::<u64>()))
                .prop_map(|(sreq, rreq, offset, len, addr)| Packet::Cts { sreq, rreq, offset, len, addr }),
            (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(rreq, offset, len)| Packet::Fts {
                rreq,
                offset,
                len
            }),
            (any::<u32>(), any::<u64>(), 0u64..64).prop_map(|(rreq, offset, len)| Packet::Data { rreq, offset, len }),
            any::<u32>().prop_map(|sreq| Packet::Cancel { sreq }),
            (any::<u32>(), any::<bool>()).prop_map(|(sreq, won)| Packet::Cancelled { sreq, won }),
        ]
    }

    proptest! {
        #[test]
        fn packets_round_trip(p in packet()) {
            let mut h = [0u8; MAX_HEADER];
            let n = p.encode(&mut h);
            let mut msg = h[..n].to_vec();
            let payload = match p { Packet::Eager { env, .. } => env.len, Packet::Data { len, .. } => len, _ => 0 };
            msg.extend(std::iter::repeat_n(7u8, payload as usize));
            prop_assert_eq!(Packet::decode(3, &msg).unwrap(), (p, n));
        }

        #[test]
        fn an_envelope_naming_another_sender_is_refused(p in packet()) {
            let mut h = [0u8; MAX_HEADER];
            let n = p.encode(&mut h);
            let mut msg = h[..n].to_vec();
            let payload = match p { Packet::Eager { env, .. } => env.len, Packet::Data { len, .. } => len, _ => 0 };
            msg.extend(std::iter::repeat_n(7u8, payload as usize));
            let named = matches!(p, Packet::Eager { .. } | Packet::Rts { .. });
            prop_assert_eq!(Packet::decode(4, &msg).is_err(), named);
        }

        #[test]
        fn garbage_never_panics(msg in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Packet::decode(1, &msg);
        }
    }
}
