//! How ranks learn each other's addresses at start-up.
//!
//! * **One host (`dnrun --backend udp`)**: every rank binds its socket to
//!   `DN_UDP_BIND` (default `127.0.0.1`) on a port the OS picks, writes
//!   `udp.<rank>` = `ip:port` into the job directory `DN_JOB_DIR` (atomically:
//!   write then rename), and waits until all `DN_SIZE` files exist. Binding
//!   before publishing means no rank ever sends to a socket that does not
//!   exist yet.
//! * **Several hosts**: a host file (`DN_UDP_HOSTFILE`, `dnrun --hostfile`)
//!   lists one `host:port` per rank, in rank order (`#` comments and blank
//!   lines ignored). Every rank binds its own line and knows the others from
//!   the file; start the ranks of each host with
//!   `dnrun --backend udp --hostfile FILE --ranks 4-7 --job-id N -- prog`.
//!
//! Every datagram carries the job id (`DN_JOB_ID`), so stray datagrams of
//! another job on the same ports are dropped.

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use super::{UdpConfig, UdpTransport};
use crate::error::TransportError;

/// How long a rank waits for the others to publish their addresses.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

fn cfg_err(m: String) -> TransportError {
    TransportError::Config(m)
}

/// Parse a host file: one `host:port` per rank.
pub fn parse_hostfile(text: &str) -> Result<Vec<SocketAddr>, TransportError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let addr = line
            .to_socket_addrs()
            .map_err(|e| cfg_err(format!("host file line {}: {line:?} is not host:port ({e})", n + 1)))?
            .next()
            .ok_or_else(|| cfg_err(format!("host file line {}: {line:?} resolves to nothing", n + 1)))?;
        if addr.port() == 0 {
            return Err(cfg_err(format!("host file line {}: {line:?} needs an explicit port", n + 1)));
        }
        out.push(addr);
    }
    Ok(out)
}

/// Bind and learn the peers of `job` (the one `dnrun` described), or,
/// outside a `dnrun` job, through the standard launcher's PMI-1.
pub fn exchange(cfg: &UdpConfig, job: Option<&crate::JobEnv>) -> Result<Exchanged, TransportError> {
    let Some(job) = job else {
        return match crate::pmi::Pmi::from_env()? {
            Some(pmi) => exchange_through_pmi(pmi, cfg).map(|(sock, rank, peers, job)| Exchanged {
                sock,
                rank,
                peers: peers.into_iter().map(Some).collect(),
                job,
                late: None,
            }),
            None => Err(crate::job::not_in_a_job("UDP")),
        };
    };
    if job.world.end < job.size {
        // Room for spawned processes (MPI 4.1 §11.8): the ranks up to this
        // world's last have published (or are about to: this world's); the
        // others are looked up when they first matter.
        let dir = job.dir()?;
        if crate::knobs::is_set("DN_UDP_HOSTFILE") {
            return Err(cfg_err(
                "a job with room for spawned processes finds its ranks in the job directory, not in a host file".into(),
            ));
        }
        let sock = bind_local(cfg)?;
        let me = sock.local_addr().map_err(|e| cfg_err(format!("no local address: {e}")))?;
        publish(dir, job.rank, me)?;
        let mut peers: Vec<Option<SocketAddr>> =
            gather(dir, job.world.end, EXCHANGE_TIMEOUT)?.into_iter().map(Some).collect();
        peers.resize(job.size as usize, None);
        return Ok(Exchanged { sock, rank: job.rank, peers, job: job.job_id, late: Some(dir.to_path_buf()) });
    }
    let (rank, size, job_id) = (job.rank, job.size, job.job_id);
    if let Some(path) = crate::knobs::path("DN_UDP_HOSTFILE") {
        let path = path.display();
        let text = std::fs::read_to_string(path.to_string())
            .map_err(|e| cfg_err(format!("cannot read host file {path}: {e}")))?;
        let peers = parse_hostfile(&text)?;
        if peers.len() != size as usize {
            return Err(cfg_err(format!(
                "host file {path} lists {} addresses but the job has {size} ranks",
                peers.len()
            )));
        }
        let sock = UdpTransport::bind(peers[rank as usize], cfg)?;
        return Ok(Exchanged { sock, rank, peers: peers.into_iter().map(Some).collect(), job: job_id, late: None });
    }
    let dir = job.dir()?;
    let sock = bind_local(cfg)?;
    let me = sock.local_addr().map_err(|e| cfg_err(format!("no local address: {e}")))?;
    publish(dir, rank, me)?;
    let peers = gather(dir, size, EXCHANGE_TIMEOUT)?;
    Ok(Exchanged { sock, rank, peers: peers.into_iter().map(Some).collect(), job: job_id, late: None })
}

/// What [`exchange`] learnt.
pub struct Exchanged {
    /// This rank's socket, bound.
    pub sock: UdpSocket,
    /// This rank.
    pub rank: u32,
    /// Every rank's address; `None` for ranks not started yet.
    pub peers: Vec<Option<SocketAddr>>,
    /// The job's number.
    pub job: u32,
    /// Where the ranks not started yet will publish theirs ([`lookup`]).
    pub late: Option<std::path::PathBuf>,
}

/// Bind on `DN_UDP_BIND` (loopback by default), a port the OS picks.
fn bind_local(cfg: &UdpConfig) -> Result<UdpSocket, TransportError> {
    let bind_ip = crate::knobs::text("DN_UDP_BIND").unwrap_or_else(|| "127.0.0.1".into());
    let bind: SocketAddr =
        format!("{bind_ip}:0").parse().map_err(|_| cfg_err(format!("DN_UDP_BIND={bind_ip:?} is not an IP address")))?;
    UdpTransport::bind(bind, cfg)
}

/// `rank`'s address as it published it in the job directory `dir`, if it
/// has (a rank spawned after this one started).
pub fn lookup(dir: &Path, rank: u32) -> Option<SocketAddr> {
    std::fs::read_to_string(dir.join(format!("udp.{rank}"))).ok()?.trim().parse().ok()
}

/// Under a standard launcher (PMI-1): bind, `put` our address, `barrier`,
/// `get` everyone's. The job id is derived from the key-value space's
/// name, alike on every rank.
fn exchange_through_pmi(
    mut pmi: crate::pmi::Pmi,
    cfg: &UdpConfig,
) -> Result<(UdpSocket, u32, Vec<SocketAddr>, u32), TransportError> {
    let sock = match crate::knobs::text("DN_UDP_BIND") {
        Some(ip) => UdpTransport::bind(
            format!("{ip}:0").parse().map_err(|_| cfg_err(format!("DN_UDP_BIND={ip:?} is not an IP address")))?,
            cfg,
        )?,
        None => bind_as_launcher_names_us(cfg)?,
    };
    let me = sock.local_addr().map_err(|e| cfg_err(format!("no local address: {e}")))?;
    pmi.put(&format!("dn-udp-{}", pmi.rank), &me.to_string())?;
    pmi.barrier()?;
    let mut peers = Vec::with_capacity(pmi.size as usize);
    for r in 0..pmi.size {
        let text = pmi.get(&format!("dn-udp-{r}"))?;
        peers.push(text.parse().map_err(|_| cfg_err(format!("rank {r} published a bad address {text:?}")))?);
    }
    let (rank, job) = (pmi.rank, crate::pmi::job_id(&pmi.kvsname));
    pmi.keep();
    Ok((sock, rank, peers, job))
}

/// The variable in which hydra gives each process its host's name as the
/// hosts file (`-f`) spells it.
const HYDRA_HOSTNAME: &str = "MPIR_CVAR_CH3_INTERFACE_HOSTNAME";

/// Bind where the other hosts can reach us: the address of our host's
/// name as the launcher gave it (hydra: [`HYDRA_HOSTNAME`], e.g.
/// `10.199.0.2` from a hosts file of addresses), when it is an address of
/// this machine; else loopback, for a job on one host. `DN_UDP_BIND`
/// overrides both.
fn bind_as_launcher_names_us(cfg: &UdpConfig) -> Result<UdpSocket, TransportError> {
    use std::net::ToSocketAddrs;
    let named = std::env::var(HYDRA_HOSTNAME).ok().and_then(|h| (h.as_str(), 0).to_socket_addrs().ok());
    for addr in named.into_iter().flatten().filter(|a| a.is_ipv4()) {
        if let Ok(sock) = UdpTransport::bind(addr, cfg) {
            return Ok(sock);
        }
    }
    UdpTransport::bind(SocketAddr::from(([127, 0, 0, 1], 0)), cfg)
}

fn publish(dir: &Path, rank: u32, addr: SocketAddr) -> Result<(), TransportError> {
    let tmp = dir.join(format!(".udp.{rank}.tmp"));
    let fin = dir.join(format!("udp.{rank}"));
    crate::job::write_private(&tmp, addr.to_string().as_bytes())
        .map_err(|e| cfg_err(format!("cannot write {}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, &fin).map_err(|e| cfg_err(format!("cannot publish {}: {e}", fin.display())))
}

fn gather(dir: &Path, size: u32, timeout: Duration) -> Result<Vec<SocketAddr>, TransportError> {
    let start = Instant::now();
    let mut peers: Vec<Option<SocketAddr>> = vec![None; size as usize];
    loop {
        for (r, slot) in peers.iter_mut().enumerate() {
            if slot.is_none() {
                if let Ok(text) = std::fs::read_to_string(dir.join(format!("udp.{r}"))) {
                    *slot = Some(
                        text.trim()
                            .parse()
                            .map_err(|_| cfg_err(format!("rank {r} published a bad address {text:?}")))?,
                    );
                }
            }
        }
        if peers.iter().all(Option::is_some) {
            return Ok(peers.into_iter().flatten().collect());
        }
        if start.elapsed() > timeout {
            let missing: Vec<String> =
                peers.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(r, _)| r.to_string()).collect();
            return Err(cfg_err(format!(
                "rank(s) {} did not publish their UDP address within {} s",
                missing.join(", "),
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The launcher's checks of a UDP job (see [`crate::job::LaunchNeeds`]):
/// ranks on other hosts are found through a file of every rank's address.
pub fn check_launch(plan: &crate::job::LaunchPlan<'_>) -> Result<(), crate::job::LaunchRefusal> {
    if plan.across_hosts && !plan.hostfile {
        return Err(crate::job::LaunchRefusal::NeedsHostfile);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_files_parse_with_comments_and_errors_name_the_line() {
        let peers = parse_hostfile("# two ranks\n127.0.0.1:4000\n\n127.0.0.1:4001 # second\n").unwrap();
        assert_eq!(peers.len(), 2);
        assert_eq!(peers[1].port(), 4001);
        assert!(parse_hostfile("127.0.0.1\n").unwrap_err().to_string().contains("line 1"));
        assert!(parse_hostfile("127.0.0.1:0\n").unwrap_err().to_string().contains("explicit port"));
    }
}
