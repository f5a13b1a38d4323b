//! The UDP backend's settings: defaults, what the environment changes,
//! and the job's key for the authenticated mode.

use std::net::SocketAddr;
use std::time::Duration;

use super::io;
use super::wire::{AuthKey, HEADER, TAG};
use crate::error::TransportError;

/// Turns on authenticated mode (`1`).
pub const AUTH_ENV: &str = "DN_UDP_AUTH";
/// Where the job's key is, if not `$DN_JOB_DIR/udp.key`.
pub const KEY_FILE_ENV: &str = "DN_UDP_KEY_FILE";
/// The key file `dnrun` writes into the job directory.
pub const KEY_FILE: &str = "udp.key";

/// Read the job's key (`DN_UDP_KEY_FILE`, or the one `dnrun` wrote into
/// the job directory `job_dir`): exactly 32 bytes, readable by its owner
/// only.
pub fn load_key(job_dir: Option<&std::path::Path>) -> Result<AuthKey, TransportError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = match (crate::knobs::path(KEY_FILE_ENV), job_dir) {
        (Some(p), _) => p,
        (None, Some(d)) => d.join(KEY_FILE),
        (None, None) => {
            return Err(TransportError::Config(format!(
                "{AUTH_ENV}=1 needs the job's key: start the job with dnrun, or set {KEY_FILE_ENV} to a file of 32 random bytes shared by all ranks"
            )))
        }
    };
    let shown = path.display();
    // Opened without blocking and checked through the open descriptor: a
    // FIFO (or a device) given as the key file must be refused at once,
    // not block MPI_Init until the job's timeout, and what is read must
    // be the file that was checked.
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&path).map_err(|e| {
        TransportError::Config(format!(
            "{AUTH_ENV}=1: cannot read the key file {shown}: {e} (dnrun writes it; or set {KEY_FILE_ENV})"
        ))
    })?;
    let meta = file
        .metadata()
        .map_err(|e| TransportError::Config(format!("{AUTH_ENV}=1: cannot read the key file {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(TransportError::Config(format!(
            "{AUTH_ENV}=1: the key file {shown} is not a regular file ({:?}): give a file of 32 random bytes",
            meta.file_type()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(TransportError::Config(format!(
            "{AUTH_ENV}=1: the key file {shown} is readable by others; chmod 600 it"
        )));
    }
    let mut bytes = Vec::with_capacity(33);
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut file, 33), &mut bytes)
        .map_err(|e| TransportError::Config(format!("{AUTH_ENV}=1: cannot read the key file {shown}: {e}")))?;
    let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        TransportError::Config(format!(
            "{AUTH_ENV}=1: the key file {shown} holds {} bytes, not 32 (e.g. head -c 32 /dev/urandom > FILE)",
            if bytes.len() > 32 { "more than 32".to_string() } else { bytes.len().to_string() }
        ))
    })?;
    Ok(AuthKey(key))
}

/// Tunables (environment variables in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct UdpConfig {
    /// Largest datagram payload in bytes [`DN_UDP_MTU`].
    pub mtu: usize,
    /// Unacknowledged datagrams allowed per peer [`DN_UDP_WINDOW`].
    pub window: usize,
    /// Datagrams queued behind a full window before new messages wait in the engine.
    pub backlog: usize,
    /// Largest message the engine may hand over (larger rendezvous data is split by the engine).
    pub max_message: usize,
    /// Default eager threshold [`DN_EAGER_THRESHOLD`].
    pub eager_threshold: usize,
    /// First retransmission timeout.
    pub rto_min: Duration,
    /// Longest retransmission timeout (it doubles up to this).
    pub rto_max: Duration,
    /// A peer that acknowledges nothing for this long is declared lost [`DN_UDP_TIMEOUT_MS`].
    pub peer_timeout: Duration,
    /// Longest delay before a standalone ACK.
    pub ack_delay: Duration,
    /// Busy-poll time before sleeping [`DN_UDP_SPIN_US`].
    pub spin: Duration,
    /// In finalize, a peer whose goodbye we have but who has not confirmed
    /// ours is taken to have left after this long without a word from it
    /// (its last confirmation was lost; it owes and is owed nothing).
    pub linger: Duration,
    /// In finalize, a peer that has sent no goodbye is taken to have left
    /// after this long without a word from it (bounded by `peer_timeout`).
    /// A peer still waiting for an acknowledgement from us retransmits at
    /// least every `rto_max`, so leaving early needs ~15 losses in a row.
    pub goodbye_wait: Duration,
    /// Socket send and receive buffer size.
    pub sockbuf: usize,
    /// CRC over whole payloads, not just their first bytes [`DN_UDP_CHECKSUM=full`].
    pub full_crc: bool,
    /// Authenticated mode: the per-job key [`DN_UDP_AUTH=1`, key from
    /// `DN_UDP_KEY_FILE` or `$DN_JOB_DIR/udp.key`, written by `dnrun`].
    pub auth: Option<AuthKey>,
    /// Use UDP GSO where the kernel has it [`DN_UDP_OFFLOAD=0` turns it off].
    pub gso: bool,
    /// Use UDP GRO where the kernel has it [`DN_UDP_OFFLOAD=0|gso` turns it off].
    pub gro: bool,
    /// `mtu` was chosen by the user; otherwise it follows the path MTU to
    /// the peers (see [`UdpTransport::from_env`]).
    pub mtu_fixed: bool,
    /// `window` was chosen by the user; otherwise it follows the datagram
    /// size ([`UdpConfig::window_for`]) once the path has set it.
    pub window_fixed: bool,
    /// A rank with exactly one peer connects its socket to it
    /// [`DN_UDP_CONNECT=0` turns it off]. The kernel then keeps the route
    /// for sends and demultiplexes arrivals early, which saves about 0.35 us
    /// on each side of every datagram over veth (measured with a plain C
    /// ping-pong, docs/BENCHMARKS.md), and it drops datagrams from anyone
    /// else before they reach us (except those queued before the connect,
    /// which our own checks still drop). With more peers the one socket stays
    /// unconnected: per-peer sockets would cost a system call per peer on
    /// every poll.
    pub connect: bool,
}

/// Bytes a sender keeps in flight to one peer when the window follows
/// the datagram size ([`UdpConfig::window_for`]).
pub const IN_FLIGHT: usize = 256 * 1024;

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            mtu: 64_000,
            window: 64,
            backlog: 256,
            max_message: 64_000,
            // Measured: eager beats rendezvous up to the largest one-datagram
            // message (60 KB: 15 vs 27 us, 4.2 vs 3.0 GB/s); see docs/BENCHMARKS.md.
            eager_threshold: 64_000,
            rto_min: Duration::from_millis(5),
            rto_max: Duration::from_millis(200),
            peer_timeout: Duration::from_secs(10),
            ack_delay: Duration::from_micros(200),
            spin: Duration::from_micros(100),
            // Five repeats of a peer's goodbye at rto_max: only paid when a
            // final confirmation is lost.
            linger: Duration::from_secs(1),
            goodbye_wait: Duration::from_secs(3),
            sockbuf: 4 << 20,
            full_crc: false,
            auth: None,
            gso: true,
            gro: true,
            mtu_fixed: false,
            window_fixed: false,
            connect: true,
        }
    }
}

impl UdpConfig {
    /// Defaults with environment overrides.
    pub fn from_env(job_dir: Option<&std::path::Path>) -> Result<UdpConfig, TransportError> {
        let mut c = UdpConfig::default();
        use crate::knobs::{choice, integer as num};
        if let Some(v) = num("DN_UDP_MTU")? {
            c.mtu = v as usize;
            c.max_message = UdpConfig::max_message_for(c.mtu);
            c.mtu_fixed = true;
        }
        match choice("DN_UDP_OFFLOAD")? {
            Some(Offload::Off) => (c.gso, c.gro) = (false, false),
            Some(Offload::SendOnly) => c.gro = false,
            Some(Offload::Both) | None => {}
        }
        if let Some(v) = num("DN_UDP_WINDOW")? {
            c.window = v as usize;
            c.window_fixed = true;
        }
        if let Some(v) = num("DN_UDP_TIMEOUT_MS")? {
            c.peer_timeout = Duration::from_millis(v);
        }
        if let Some(v) = num("DN_UDP_SPIN_US")? {
            c.spin = Duration::from_micros(v);
        }
        if choice("DN_UDP_CONNECT")? == Some(Switch::Off) {
            c.connect = false;
        }
        if choice("DN_UDP_CHECKSUM")? == Some(Checksum::Full) {
            c.full_crc = true;
        }
        if choice(AUTH_ENV)? == Some(Switch::On) {
            c.auth = Some(load_key(job_dir)?);
        }
        c.validate()?;
        Ok(c)
    }

    /// Messages up to one datagram when datagrams are large (no reassembly
    /// copy for bulk data); with small datagrams (e.g. the paper's 1,024
    /// bytes), 64 KiB messages split into fragments.
    pub fn max_message_for(mtu: usize) -> usize {
        if mtu >= 16 * 1024 {
            mtu
        } else {
            64 * 1024
        }
    }

    /// The window for datagrams of `mtu` payload bytes: about
    /// [`IN_FLIGHT`] bytes, between 64 and 512 datagrams. With path-sized
    /// datagrams on a 1,500-byte veth (1,416 bytes: 185 datagrams), a
    /// window of 64 (90 KB) kept the sender waiting for ACKs: once the
    /// sender stopped copying, 128 to 512 reached 2.7-2.8 GB/s at 1 and 4
    /// MiB where 64 reached 2.3 (docs/BENCHMARKS.md). 64-KB datagrams
    /// (loopback) keep 64, already 4 MB in flight.
    pub fn window_for(mtu: usize) -> usize {
        (IN_FLIGHT / mtu.max(1)).clamp(64, 512)
    }

    /// The datagram payload for the path to `peers` (path MTU less the IP,
    /// UDP, our header and a tag), at most `largest`: 64000 on loopback,
    /// 1,416 bytes on a 1,500-byte Ethernet or veth, where one 64000-byte
    /// datagram would be cut into 44 IP fragments (measured 4x slower than
    /// GSO with path-sized datagrams, docs/BENCHMARKS.md).
    pub fn mtu_for_path(local: SocketAddr, peers: &[SocketAddr], largest: usize) -> usize {
        // One probe per host, not per rank: ranks on one host share a path.
        let mut hosts: Vec<SocketAddr> =
            peers.iter().filter(|p| **p != local).map(|p| SocketAddr::new(p.ip(), 9)).collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
            .iter()
            .filter_map(|p| {
                let ip = if p.is_ipv4() { 28 } else { 48 };
                io::path_mtu(local, *p).map(|m| m.saturating_sub(ip + HEADER + TAG))
            })
            .fold(largest, usize::min)
            .max(512)
    }

    /// Check the values are usable.
    pub fn validate(&self) -> Result<(), TransportError> {
        if !(64..=65_000).contains(&self.mtu) {
            return Err(TransportError::Config(format!("DN_UDP_MTU={} must be between 64 and 65000 bytes", self.mtu)));
        }
        if self.window == 0 || self.window > 4096 {
            return Err(TransportError::Config(format!(
                "DN_UDP_WINDOW={} must be between 1 and 4096 packets",
                self.window
            )));
        }
        if self.max_message / self.mtu >= u16::MAX as usize {
            return Err(TransportError::Config(
                "messages would need more than 65535 fragments; raise DN_UDP_MTU".into(),
            ));
        }
        Ok(())
    }
}

/// `DN_UDP_OFFLOAD`: the kernel's segmentation offloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offload {
    /// GSO and GRO where the kernel has them (`1`).
    Both,
    /// GSO only (`gso`).
    SendOnly,
    /// Neither (`0`).
    Off,
}

impl crate::knobs::Choice for Offload {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("1", Offload::Both), ("gso", Offload::SendOnly), ("0", Offload::Off)];
}

/// `DN_UDP_CHECKSUM`: what each datagram's CRC covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// The header and the first bytes (`prefix`).
    Prefix,
    /// All of it (`full`).
    Full,
}

impl crate::knobs::Choice for Checksum {
    const CHOICES: &'static [(&'static str, Self)] = &[("prefix", Checksum::Prefix), ("full", Checksum::Full)];
}

/// A variable that is `0` or `1` (`DN_UDP_CONNECT`, `DN_UDP_AUTH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// `0`.
    Off,
    /// `1`.
    On,
}

impl crate::knobs::Choice for Switch {
    const CHOICES: &'static [(&'static str, Self)] = &[("0", Switch::Off), ("1", Switch::On)];
}
