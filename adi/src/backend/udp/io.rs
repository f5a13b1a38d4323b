//! Socket calls beyond `send_to`/`recv_from`: UDP segmentation offload
//! (GSO, `UDP_SEGMENT`) so that a window of equal-sized datagrams to one peer
//! leaves in one `sendmsg`, receive offload (GRO, `UDP_GRO`) so that they may
//! arrive in one `recvmsg`, and the path MTU (`IP_MTU`). Each is detected at
//! run time; where the kernel lacks it the backend sends and receives one
//! datagram per call, as before (see `udp(7)`).

use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use socket2::{MaybeUninitSlice, MsgHdr, MsgHdrMut, SockAddr, SockAddrStorage, SockRef};

/// `SOL_UDP` socket options (linux/udp.h).
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;
/// The kernel's limit on segments per GSO send (`UDP_MAX_SEGMENTS`, 64 before Linux 5.x raised it).
pub const MAX_SEGMENTS: usize = 64;
/// Largest UDP payload of one (super-)datagram over IPv4.
pub const MAX_GSO_BYTES: usize = 65_507;

/// Offloads this socket has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// `UDP_SEGMENT` works.
    pub gso: bool,
    /// `UDP_GRO` was turned on.
    pub gro: bool,
}

fn setsockopt_int(sock: &UdpSocket, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` lives across the call and its size is passed; the fd
    // is open for as long as `sock` is borrowed.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt_int(sock: &UdpSocket, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` outlive the call; `len` holds value's size.
    let r =
        unsafe { libc::getsockopt(sock.as_raw_fd(), level, name, (&mut value as *mut libc::c_int).cast(), &mut len) };
    if r == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Turn on what the kernel offers (`want_gso`/`want_gro` false: leave it off).
pub fn enable(sock: &UdpSocket, want_gso: bool, want_gro: bool) -> Offloads {
    Offloads {
        gso: want_gso && getsockopt_int(sock, libc::SOL_UDP, UDP_SEGMENT).is_ok(),
        gro: want_gro && setsockopt_int(sock, libc::SOL_UDP, UDP_GRO, 1).is_ok(),
    }
}

/// The path MTU towards `peer` from `local`'s address (`IP_MTU` of a
/// connected probe socket), if the kernel tells.
pub fn path_mtu(local: SocketAddr, peer: SocketAddr) -> Option<usize> {
    let probe = UdpSocket::bind(SocketAddr::new(local.ip(), 0)).ok()?;
    probe.connect(peer).ok()?;
    let (level, name) =
        if peer.is_ipv4() { (libc::IPPROTO_IP, libc::IP_MTU) } else { (libc::IPPROTO_IPV6, libc::IPV6_MTU) };
    getsockopt_int(&probe, level, name).ok().and_then(|m| usize::try_from(m).ok())
}

/// A control message carrying one `u16` (`UDP_SEGMENT`), laid out as
/// `cmsghdr` (len: usize, level: i32, type: i32) + data, padded to 8 bytes.
#[repr(C, align(8))]
struct SegmentCmsg([u8; 24]);

impl SegmentCmsg {
    fn new(size: u16) -> SegmentCmsg {
        let mut b = [0u8; 24];
        let len = std::mem::size_of::<usize>() + 8 + 2; // CMSG_LEN(2)
        b[..8].copy_from_slice(&(len as u64).to_ne_bytes());
        b[8..12].copy_from_slice(&libc::SOL_UDP.to_ne_bytes());
        b[12..16].copy_from_slice(&UDP_SEGMENT.to_ne_bytes());
        b[16..18].copy_from_slice(&size.to_ne_bytes());
        SegmentCmsg(b)
    }
}

/// Send `parts` as datagrams of `segment` bytes each (the last may be
/// shorter) in one call: the kernel splits them (GSO). `to` is `None` on
/// a connected socket.
pub fn send_segments(
    sock: &UdpSocket,
    to: Option<&SockAddr>,
    parts: &[IoSlice<'_>],
    segment: u16,
) -> io::Result<usize> {
    let cmsg = SegmentCmsg::new(segment);
    let msg = MsgHdr::new().with_buffers(parts).with_control(&cmsg.0);
    let msg = match to {
        Some(to) => msg.with_addr(to),
        None => msg,
    };
    SockRef::from(sock).sendmsg(&msg, 0)
}

/// Receive into `buf`: the length, the sender (when `sender`; a
/// connected socket knows it) and, with GRO, the size of the datagrams the
/// kernel coalesced (each `segment` bytes, the last possibly shorter);
/// `None` for a single datagram.
pub fn recv(sock: &UdpSocket, buf: &mut [u8], sender: bool) -> io::Result<(usize, Option<SocketAddr>, Option<usize>)> {
    let storage = SockAddrStorage::zeroed();
    let size = storage.size_of();
    // SAFETY: an all-zero storage is a valid (AF_UNSPEC) address, and its
    // full size lets the kernel write an IPv6 sender as well as an IPv4 one.
    let mut from = unsafe { SockAddr::new(storage, size) };
    let mut control = [MaybeUninit::<u8>::uninit(); 64];
    // SAFETY: `MaybeUninitSlice::new` takes initialised bytes as possibly
    // uninitialised ones (always sound); recvmsg only writes into them.
    let uninit: &mut [MaybeUninit<u8>] = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
    let mut bufs = [MaybeUninitSlice::new(uninit)];
    let (n, control_len) = {
        let msg = MsgHdrMut::new().with_buffers(&mut bufs).with_control(&mut control);
        let mut msg = if sender { msg.with_addr(&mut from) } else { msg };
        let n = SockRef::from(sock).recvmsg(&mut msg, 0)?;
        (n, msg.control_len())
    };
    let mut bytes = [0u8; 64];
    let control_len = control_len.min(bytes.len());
    for (b, c) in bytes.iter_mut().zip(&control[..control_len]) {
        // SAFETY: the kernel initialised the first `control_len` bytes.
        *b = unsafe { c.assume_init() };
    }
    let from = match sender {
        true => Some(from.as_socket().ok_or_else(|| io::Error::other("a datagram from a non-IP address"))?),
        false => None,
    };
    Ok((n, from, gro_segment(&bytes[..control_len])))
}

/// The `UDP_GRO` segment size in a control buffer, if there is one.
fn gro_segment(control: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at + 16 <= control.len() {
        let len = u64::from_ne_bytes(control[at..at + 8].try_into().ok()?) as usize;
        let level = i32::from_ne_bytes(control[at + 8..at + 12].try_into().ok()?);
        let kind = i32::from_ne_bytes(control[at + 12..at + 16].try_into().ok()?);
        if len < 16 {
            return None;
        }
        if level == libc::SOL_UDP && kind == UDP_GRO && at + 20 <= control.len() {
            let seg = i32::from_ne_bytes(control[at + 16..at + 20].try_into().ok()?);
            return usize::try_from(seg).ok().filter(|&s| s > 0);
        }
        at += len.div_ceil(8) * 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window of datagrams leaves in one GSO call and each arrives as
    /// itself (or coalesced by GRO, split back by segment size).
    #[test]
    fn segments_sent_in_one_call_arrive_as_datagrams() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let offloads = enable(&b, true, true);
        if !enable(&a, true, false).gso {
            eprintln!("no UDP_SEGMENT on this kernel; nothing to test");
            return;
        }
        let datagrams: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; if i == 4 { 300 } else { 1000 }]).collect();
        let parts: Vec<IoSlice<'_>> = datagrams.iter().map(|d| IoSlice::new(d)).collect();
        let to = SockAddr::from(b.local_addr().unwrap());
        assert_eq!(send_segments(&a, Some(&to), &parts, 1000).unwrap(), 4300);
        b.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 70_000];
        while got.len() < 5 {
            let (n, from, seg) = recv(&b, &mut buf, got.is_empty()).unwrap();
            // Asked for on the first receive only.
            assert_eq!(from, got.is_empty().then(|| a.local_addr().unwrap()));
            if !offloads.gro {
                assert!(seg.is_none());
            }
            let seg = seg.unwrap_or(n);
            got.extend(buf[..n].chunks(seg).map(<[u8]>::to_vec));
        }
        assert_eq!(got, datagrams);
    }

    /// The sender of a datagram received through `recv` is right for IPv6
    /// too (its address is longer than an IPv4 one).
    #[test]
    fn an_ipv6_sender_is_reported_whole() {
        let (Ok(a), Ok(b)) = (UdpSocket::bind("[::1]:0"), UdpSocket::bind("[::1]:0")) else {
            eprintln!("no IPv6 loopback here; nothing to test");
            return;
        };
        enable(&b, false, true);
        a.send_to(b"six", b.local_addr().unwrap()).unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 16];
        let (n, from, _) = recv(&b, &mut buf, true).unwrap();
        assert_eq!((&buf[..n], from), (&b"six"[..], Some(a.local_addr().unwrap())));
    }

    #[test]
    fn control_messages_are_parsed_defensively() {
        assert_eq!(gro_segment(&[]), None);
        assert_eq!(gro_segment(&[0u8; 16]), None, "a zero-length cmsg must not loop");
        let mut c = [0u8; 24];
        c[..8].copy_from_slice(&20u64.to_ne_bytes());
        c[8..12].copy_from_slice(&libc::SOL_UDP.to_ne_bytes());
        c[12..16].copy_from_slice(&UDP_GRO.to_ne_bytes());
        c[16..20].copy_from_slice(&1400i32.to_ne_bytes());
        assert_eq!(gro_segment(&c), Some(1400));
    }

    #[test]
    fn loopback_has_a_path_mtu() {
        let m = path_mtu("127.0.0.1:0".parse().unwrap(), "127.0.0.1:9".parse().unwrap());
        assert!(m.is_some_and(|m| m >= 1500), "{m:?}");
    }
}
