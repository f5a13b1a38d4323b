//! The job a rank belongs to, as its launcher describes it: parsed once,
//! here, for every backend (the contract between `dnrun` and a rank).
//!
//! `dnrun` describes the job with a [`JobEnv`] and writes it into each
//! rank's environment with [`JobEnv::vars`] (`DN_RANK`, `DN_SIZE`,
//! `DN_JOB_ID`, `DN_JOB_DIR`, `DN_NODES`, ...: the variables [`JOB_VARS`]
//! names, each declared once in [`crate::knobs`]); the rank reads them back
//! with [`JobEnv::from_env`]. Both halves are this module, so the two cannot
//! drift apart. A backend reads what it needs from the [`JobEnv`], and only
//! its own settings (`DN_RANKMAP`, `DN_UDP_*`, ...) from the environment.
//! A process without `DN_RANK` is in no `dnrun` job: it runs alone, or
//! under a standard launcher that speaks PMI-1 ([`crate::pmi`]).

use std::path::{Path, PathBuf};

use crate::TransportError;

/// This process's rank in the job.
pub const ENV_RANK: &str = "DN_RANK";
/// The number of ranks.
pub const ENV_SIZE: &str = "DN_SIZE";
/// A number that tells this job from others on the same hosts.
pub const ENV_JOB_ID: &str = "DN_JOB_ID";
/// The job's private directory (rendezvous files, keys, sockets).
pub const ENV_JOB_DIR: &str = "DN_JOB_DIR";
/// How many nodes (simulated, or DPDK polling domains) the ranks fill.
pub const ENV_NODES: &str = "DN_NODES";
/// The ranks of the job that make this process's `MPI_COMM_WORLD`,
/// `FIRST:COUNT` (all of them when unset): a job whose universe has room
/// for spawned processes (`dnrun --universe-size`) numbers them after the
/// first world, and each spawn's processes are a world of their own
/// (MPI 4.1 §11.8.2).
pub const ENV_WORLD: &str = "DN_WORLD";
/// The ranks the launcher of this host starts (`dnrun --ranks`), which
/// share its job directory: `A,B-C,...` in increasing order. Not set: every
/// rank of the job is on this host.
pub const ENV_HOST_RANKS: &str = "DN_HOST_RANKS";
/// Set in spawned processes: the port their parents accept on (their
/// `MPI_Init` connects to it, and `MPI_Comm_get_parent` is the result).
pub const ENV_PARENT_PORT: &str = "DN_PARENT_PORT";
/// Set in spawned processes: which command of the spawn they run
/// (`MPI_APPNUM`, §11.8.4).
pub const ENV_APPNUM: &str = "DN_APPNUM";
/// The simulator's files (its control file and a file per node), in a
/// job on the simulator.
pub const ENV_SIM_DIR: &str = "DN_SIM_DIR";

/// Every variable a [`JobEnv`] is written to and read from: the launcher's
/// contract with its ranks. Each is declared in [`crate::knobs`] as set by
/// `dnrun` for the ranks.
pub const JOB_VARS: &[&str] = &[
    ENV_RANK,
    ENV_SIZE,
    ENV_JOB_ID,
    ENV_JOB_DIR,
    ENV_NODES,
    ENV_WORLD,
    ENV_HOST_RANKS,
    ENV_PARENT_PORT,
    ENV_APPNUM,
    ENV_SIM_DIR,
];

/// What the launcher told this rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEnv {
    /// This process's rank (below `size`).
    pub rank: u32,
    /// Ranks in the job (at least 1).
    pub size: u32,
    /// The job's number (0 when the launcher gave none).
    pub job_id: u32,
    /// The job's private directory, when the launcher made one.
    pub dir: Option<PathBuf>,
    /// Nodes the ranks fill, in blocks (1 when not given).
    pub nodes: u16,
    /// The ranks of this process's `MPI_COMM_WORLD` ([`ENV_WORLD`]);
    /// `rank` is among them.
    pub world: std::ops::Range<u32>,
    /// The parents' port, in a spawned process ([`ENV_PARENT_PORT`]).
    pub parent_port: Option<String>,
    /// `MPI_APPNUM` ([`ENV_APPNUM`]), in a spawned process.
    pub appnum: Option<u32>,
    /// The ranks on this host, which share the job directory
    /// ([`ENV_HOST_RANKS`]), in increasing order; `rank` is among them.
    pub host_ranks: Vec<u32>,
    /// The simulator's files ([`ENV_SIM_DIR`]), in a job on the simulator.
    pub sim_dir: Option<PathBuf>,
}

/// Write `bytes` to `path`, a file only its owner may read or write:
/// created with mode 0600 (so no umask widens it and no `chmod` leaves a
/// window), truncated if it exists.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?.write_all(bytes)
}

fn cfg_err(m: String) -> TransportError {
    TransportError::Config(m)
}

/// `k`'s value as a number no larger than `max` (no truncating casts:
/// `DN_SIZE=4294967298` is refused, not read as 2).
fn number(k: &str, v: &str, max: u64) -> Result<u64, TransportError> {
    let n: u64 = v.trim().parse().map_err(|_| cfg_err(format!("{k}={v:?} is not a number")))?;
    if n > max {
        return Err(cfg_err(format!("{k}={n} is out of range: it must be at most {max}")));
    }
    Ok(n)
}

impl JobEnv {
    /// The job from the environment; `None` when `DN_RANK` is not set.
    pub fn from_env() -> Result<Option<JobEnv>, TransportError> {
        JobEnv::from_vars(crate::knobs::raw)
    }

    /// The job from variables `get` looks up (the environment, or a test's).
    pub fn from_vars(get: impl Fn(&'static str) -> Option<String>) -> Result<Option<JobEnv>, TransportError> {
        let Some(rank) = get(ENV_RANK) else { return Ok(None) };
        let rank = number(ENV_RANK, &rank, u32::MAX.into())? as u32;
        let size = get(ENV_SIZE).ok_or_else(|| cfg_err(format!("{ENV_RANK} is set but {ENV_SIZE} is not")))?;
        let size = number(ENV_SIZE, &size, u32::MAX.into())? as u32;
        if rank >= size {
            return Err(cfg_err(format!("{ENV_RANK}={rank} is not below {ENV_SIZE}={size}")));
        }
        let job_id = get(ENV_JOB_ID).map(|v| number(ENV_JOB_ID, &v, u32::MAX.into())).transpose()?.unwrap_or(0) as u32;
        let nodes = get(ENV_NODES).map(|v| number(ENV_NODES, &v, u16::MAX.into())).transpose()?.unwrap_or(1) as u16;
        if nodes == 0 {
            return Err(cfg_err(format!("{ENV_NODES}=0: a job needs at least one node")));
        }
        let dir = get(ENV_JOB_DIR).filter(|d| !d.is_empty()).map(PathBuf::from);
        let world = match get(ENV_WORLD) {
            None => 0..size,
            Some(w) => {
                let bad = || cfg_err(format!("{ENV_WORLD}={w:?} must be FIRST:COUNT, a range of the {size} ranks"));
                let (first, count) = w.split_once(':').ok_or_else(bad)?;
                let first = number(ENV_WORLD, first, u32::MAX.into())? as u32;
                let count = number(ENV_WORLD, count, u32::MAX.into())? as u32;
                let end = first.checked_add(count).filter(|e| *e <= size && count > 0).ok_or_else(bad)?;
                if !(first..end).contains(&rank) {
                    return Err(cfg_err(format!("{ENV_RANK}={rank} is not in its world {ENV_WORLD}={w:?}")));
                }
                first..end
            }
        };
        let parent_port = get(ENV_PARENT_PORT).filter(|p| !p.is_empty());
        let appnum = get(ENV_APPNUM).map(|v| number(ENV_APPNUM, &v, i32::MAX as u64)).transpose()?.map(|a| a as u32);
        let host_ranks = match get(ENV_HOST_RANKS) {
            None => (0..size).collect(),
            Some(list) => {
                let ranks = parse_rank_list(&list, Some(size))
                    .map_err(|why| cfg_err(format!("{ENV_HOST_RANKS}={list:?}: {why}")))?;
                if ranks.binary_search(&rank).is_err() {
                    return Err(cfg_err(format!("{ENV_RANK}={rank} is not among {ENV_HOST_RANKS}={list:?}")));
                }
                ranks
            }
        };
        let sim_dir = get(ENV_SIM_DIR).filter(|d| !d.is_empty()).map(PathBuf::from);
        Ok(Some(JobEnv { rank, size, job_id, dir, nodes, world, parent_port, appnum, host_ranks, sim_dir }))
    }

    /// A job of `size` ranks seen from `rank`, everything else as when
    /// unset (no directory, one node, every rank in the world and on this
    /// host): what a launcher starts from before it fills in the rest.
    pub fn new(rank: u32, size: u32) -> JobEnv {
        JobEnv {
            rank,
            size,
            job_id: 0,
            dir: None,
            nodes: 1,
            world: 0..size,
            parent_port: None,
            appnum: None,
            host_ranks: (0..size).collect(),
            sim_dir: None,
        }
    }

    /// The variables that tell a rank this job, for its launcher to set:
    /// [`JobEnv::from_vars`] reads them back to an equal `JobEnv`. A field
    /// at its default (a world of every rank, every rank on this host, no
    /// port) writes nothing.
    pub fn vars(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        let mut v: Vec<(&'static str, std::ffi::OsString)> = vec![
            (ENV_RANK, self.rank.to_string().into()),
            (ENV_SIZE, self.size.to_string().into()),
            (ENV_JOB_ID, self.job_id.to_string().into()),
            (ENV_NODES, self.nodes.to_string().into()),
        ];
        if let Some(d) = &self.dir {
            v.push((ENV_JOB_DIR, d.clone().into()));
        }
        if self.world != (0..self.size) {
            v.push((ENV_WORLD, format!("{}:{}", self.world.start, self.world.len()).into()));
        }
        if !self.host_ranks.iter().copied().eq(0..self.size) {
            v.push((ENV_HOST_RANKS, format_rank_list(&self.host_ranks).into()));
        }
        if let Some(p) = &self.parent_port {
            v.push((ENV_PARENT_PORT, p.into()));
        }
        if let Some(a) = self.appnum {
            v.push((ENV_APPNUM, a.to_string().into()));
        }
        if let Some(d) = &self.sim_dir {
            v.push((ENV_SIM_DIR, d.clone().into()));
        }
        v
    }

    /// The job directory, which this backend needs.
    pub fn dir(&self) -> Result<&Path, TransportError> {
        self.dir.as_deref().ok_or_else(|| cfg_err(format!("{ENV_JOB_DIR} is not set; start the job with dnrun")))
    }
}

/// What is wrong with a list of ranks (`dnrun --ranks`, `DN_HOST_RANKS`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RankListError {
    /// A part is neither a number nor `A-B`.
    #[error("{part:?} is not a rank or a range like 4-7")]
    NotARank {
        /// The part.
        part: String,
    },
    /// A range whose end is below its start.
    #[error("{part:?} is an empty range (write the lower rank first, as in 4-7)")]
    Empty {
        /// The part.
        part: String,
    },
    /// A rank past the job's.
    #[error("rank {rank} is not one of the job's {size} ranks")]
    OutOfJob {
        /// The rank.
        rank: u32,
        /// The job's ranks.
        size: u32,
    },
    /// A rank listed twice.
    #[error("rank {rank} is listed twice")]
    Twice {
        /// The rank.
        rank: u32,
    },
}

/// Ranks written `A,B-C,...` (`size`: the job's ranks, which they must be
/// below, when known): in increasing order, each once.
pub fn parse_rank_list(list: &str, size: Option<u32>) -> Result<Vec<u32>, RankListError> {
    let mut out: Vec<u32> = Vec::new();
    for part in list.split(',').map(str::trim) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let num = |t: &str| t.trim().parse::<u32>().map_err(|_| RankListError::NotARank { part: part.into() });
        let (a, b) = (num(a)?, num(b)?);
        if a > b {
            return Err(RankListError::Empty { part: part.into() });
        }
        if let Some(size) = size.filter(|s| b >= *s) {
            return Err(RankListError::OutOfJob { rank: b, size });
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    if let Some(w) = out.windows(2).find(|w| w[0] == w[1]) {
        return Err(RankListError::Twice { rank: w[0] });
    }
    Ok(out)
}

/// `ranks` written as [`parse_rank_list`] reads them: runs of consecutive
/// ranks as `A-B`, in increasing order (`[5, 0, 1, 2]` is `0-2,5`).
pub fn format_rank_list(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if i == j { sorted[i].to_string() } else { format!("{}-{}", sorted[i], sorted[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// The error for a backend that needs a `dnrun` job and is not in one.
pub fn not_in_a_job(backend: &str) -> TransportError {
    cfg_err(format!("the {backend} backend needs {ENV_RANK} and {ENV_SIZE}: start the job with dnrun"))
}

/// What a launcher must prepare for a job on one backend, and check before
/// it starts anything: the launcher's half of a [`crate::BackendEntry`],
/// so that `dnrun` iterates the same registry as the ranks.
pub struct LaunchNeeds {
    /// One line for the launcher's help.
    pub about: &'static str,
    /// The simulator process, started before the ranks.
    pub simulator: bool,
    /// The job's key for authenticated datagrams (`DN_UDP_AUTH=1`), written
    /// into the job directory for the ranks.
    pub datagram_key: bool,
    /// The launcher options, beyond the common ones, that apply to it
    /// (given to another backend, they are refused, naming the ones that
    /// take them).
    pub options: &'static [&'static str],
    /// The job against the backend's limits and rules; the error says what
    /// to change.
    pub check: fn(&LaunchPlan<'_>) -> Result<(), LaunchRefusal>,
}

/// Why a launcher refuses a job before it starts anything
/// ([`LaunchNeeds::check`]). Each carries the figures that broke the rule
/// and its message says what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchRefusal {
    /// The backend is not in this build of adi.
    #[error("--backend {backend}: this build of adi has no {what}; rebuild with the cargo feature `{feature}`")]
    NotBuilt {
        /// The backend's launcher name.
        backend: &'static str,
        /// What is missing.
        what: &'static str,
        /// The cargo feature that builds it.
        feature: &'static str,
    },
    /// The system lacks what the backend needs (DPDK's libraries).
    #[error("--backend dpdk: {why}. Run scripts/setup.sh (installs libdpdk-dev) and rebuild, or use --backend udp")]
    DpdkMissing {
        /// What the build found missing.
        why: String,
    },
    /// Ranks on other hosts over UDP without the file of their addresses.
    #[error("--ranks across hosts needs --hostfile (the addresses of every rank)")]
    NeedsHostfile,
    /// Ranks on other hosts over DPDK without a shared interface.
    #[error(
        "--ranks with --backend dpdk needs --dpdk-vdev (the interface shared with the other hosts); without it \
         every rank runs here over memif"
    )]
    NeedsVdev,
    /// A shared DPDK interface with other than one local rank of a job of two or more.
    #[error(
        "--dpdk-vdev {vdev}: start exactly one rank of a job of 2 or more here (e.g. -n 2 --ranks 0), and the \
         others on the other ends of the segment with the same --job-id"
    )]
    VdevOneRank {
        /// The interface given.
        vdev: String,
    },
    /// A `--dpdk-vdev` that is no EAL vdev argument.
    #[error("--dpdk-vdev {vdev:?} is not an EAL vdev argument (NAME[,KEY=VALUE...], e.g. net_af_packet0,iface=eth1)")]
    NotAVdev {
        /// The interface given.
        vdev: String,
    },
    /// Node pollers asked for with a shared interface.
    #[error(
        "--dpdk-poller node is for memif between the ranks of this host; with --dpdk-vdev each rank polls its own \
         interface"
    )]
    PollersWithVdev,
    /// More Ethernet ports in one process than the DPDK build allows.
    #[error(
        "{np} ranks over DPDK memif need {need} Ethernet ports in {}, but this DPDK allows {max} per process \
         (RTE_MAX_ETHPORTS): {}",
        if *node_pollers { "the busiest node's DPDK polling process" } else { "each rank (one memif port per peer)" },
        if *node_pollers {
            "spread the ranks over more --nodes".to_string()
        } else {
            format!(
                "at most {} ranks poll their own ports; use --dpdk-poller node (one port per rank, on a node \
                 poller) with --nodes, or --backend udp",
                max + 1
            )
        }
    )]
    TooManyPorts {
        /// Ranks in the job.
        np: u32,
        /// Ports the busiest process needs.
        need: usize,
        /// `RTE_MAX_ETHPORTS`.
        max: usize,
        /// Whether a poller per node holds the ports.
        node_pollers: bool,
    },
    /// More ranks per simulated node than a DIMMnet-2 node has slots.
    #[error(
        "{np} ranks on {nodes} nodes needs {slots} slots per node; a DIMMnet-2 node has at most {max} (use more \
         --nodes, or a larger -ppn no more than {max})"
    )]
    TooManySlots {
        /// Ranks in the job.
        np: u32,
        /// Nodes asked for.
        nodes: u32,
        /// Slots per node that needs.
        slots: u32,
        /// `fpga_regs::layout::MAX_SLOTS`.
        max: usize,
    },
    /// More simulated nodes than the fabric addresses.
    #[error("{nodes} nodes: a simulated DIMMnet-2 fabric has at most {max} (put more ranks on a node with -ppn)")]
    TooManyNodes {
        /// Nodes asked for.
        nodes: u32,
        /// `fpga_regs::layout::MAX_NODES`.
        max: usize,
    },
    /// More slots in all than every slot's ring table has sources.
    #[error(
        "{np} ranks on {nodes} nodes of {slots} slots are {} slots; the simulated fabric has at most {max} (one IVS \
         ring per source in every slot's table)",
        *nodes as usize * *slots as usize
    )]
    TooManySources {
        /// Ranks in the job.
        np: u32,
        /// Nodes asked for.
        nodes: u32,
        /// Slots per node.
        slots: u32,
        /// `fpga_regs::layout::MAX_SOURCES`.
        max: usize,
    },
}

/// A job as its launcher plans it, for [`LaunchNeeds::check`].
pub struct LaunchPlan<'a> {
    /// Ranks in the job.
    pub np: u32,
    /// Nodes the ranks are placed on.
    pub nodes: u32,
    /// The ranks started by this launcher (all, unless `--ranks`).
    pub local: &'a [u32],
    /// Some ranks run on other hosts (`--ranks`).
    pub across_hosts: bool,
    /// Every rank's address is in a file (`--hostfile`).
    pub hostfile: bool,
    /// DPDK: the interface shared with the other hosts (`--dpdk-vdev`).
    pub dpdk_vdev: Option<&'a str>,
    /// DPDK: a polling process per node (`--dpdk-poller node`).
    pub node_pollers: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_ranks_are_read_as_a_list_and_checked() {
        assert_eq!(parse_rank_list("0-2,5, 7", Some(8)).unwrap(), vec![0, 1, 2, 5, 7]);
        assert_eq!(parse_rank_list("3,1", Some(4)).unwrap(), vec![1, 3]);
        assert_eq!(parse_rank_list("9,20-21", None).unwrap(), vec![9, 20, 21]);
        for (bad, why) in [
            ("1,1", "twice"),
            ("0-3,2", "twice"),
            ("0-8", "not one of the job's 8 ranks"),
            ("2-1", "empty range"),
            ("x", "not a rank"),
            ("", "not a rank"),
            ("1,,2", "not a rank"),
        ] {
            let e = parse_rank_list(bad, Some(8)).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let vars = |list: &'static str| {
            move |k: &'static str| match k {
                "DN_RANK" => Some("1".to_string()),
                "DN_SIZE" => Some("4".to_string()),
                "DN_HOST_RANKS" => Some(list.to_string()),
                _ => None,
            }
        };
        let j = JobEnv::from_vars(vars("0-1")).unwrap().unwrap();
        assert_eq!(j.host_ranks, vec![0, 1]);
        let e = JobEnv::from_vars(vars("2-3")).unwrap_err().to_string();
        assert!(e.contains("DN_RANK=1 is not among DN_HOST_RANKS"), "{e}");
        let all = JobEnv::from_vars(|k| match k {
            "DN_RANK" => Some("1".to_string()),
            "DN_SIZE" => Some("3".to_string()),
            _ => None,
        });
        assert_eq!(all.unwrap().unwrap().host_ranks, vec![0, 1, 2]);
    }

    use super::*;

    /// The launcher's half: whatever job it describes, the rank reads the
    /// same job back.
    #[test]
    fn a_job_written_by_the_launcher_is_read_back_by_the_rank() {
        let mut jobs = vec![JobEnv::new(0, 1), JobEnv::new(6, 7)];
        let mut full = JobEnv::new(5, 12);
        full.job_id = u32::MAX;
        full.dir = Some("/dev/shm/dnrun-1/job".into());
        full.nodes = 3;
        full.world = 4..9;
        full.parent_port = Some("dn-port:2:17".into());
        full.appnum = Some(1);
        full.host_ranks = vec![0, 1, 2, 5, 7, 8, 11];
        full.sim_dir = Some("/dev/shm/dnrun-1/sim".into());
        jobs.push(full);
        let mut lone = JobEnv::new(3, 4);
        lone.host_ranks = vec![3];
        jobs.push(lone);
        for job in jobs {
            let vars = job.vars();
            for (k, _) in &vars {
                assert!(JOB_VARS.contains(k), "{k} is written but not one of JOB_VARS");
            }
            let back = JobEnv::from_vars(|k| {
                vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string_lossy().into_owned())
            });
            assert_eq!(back.unwrap(), Some(job));
        }
    }

    /// Every variable of the contract is declared once, as set by the
    /// launcher for the ranks, and every such declaration is in the
    /// contract (or is PMI's, which the PMI server sets).
    #[test]
    fn the_job_variables_are_the_declared_ones() {
        use crate::knobs::{Reader, KNOBS};
        for k in JOB_VARS {
            let declared = crate::knobs::knob(k).map(|d| d.reader);
            assert_eq!(declared, Some(Reader::SetForRanks), "{k}");
        }
        for k in KNOBS.iter().filter(|k| k.reader == Reader::SetForRanks) {
            assert!(JOB_VARS.contains(&k.name) || k.name == crate::pmi::SERVED_BY_DNRUN, "{}", k.name);
        }
    }

    #[test]
    fn rank_lists_are_written_as_runs_and_read_back() {
        assert_eq!(format_rank_list(&[5, 0, 1, 2, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_rank_list(&[3]), "3");
        for ranks in [vec![0], vec![0, 2, 4], vec![1, 2, 3, 9, 10, 12]] {
            assert_eq!(parse_rank_list(&format_rank_list(&ranks), None).unwrap(), ranks);
        }
    }

    fn parse(vars: &[(&str, &str)]) -> Result<Option<JobEnv>, TransportError> {
        JobEnv::from_vars(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn a_job_is_read_with_its_defaults() {
        assert_eq!(parse(&[]).unwrap(), None);
        let j = parse(&[("DN_RANK", "2"), ("DN_SIZE", " 5 ")]).unwrap().unwrap();
        assert_eq!(j, JobEnv::new(2, 5));
        assert_eq!(j.host_ranks, vec![0, 1, 2, 3, 4]);
        assert_eq!((j.nodes, j.world.clone(), j.dir.clone(), j.sim_dir.clone()), (1, 0..5, None, None));
        assert!(j.dir().unwrap_err().to_string().contains("DN_JOB_DIR is not set"));
        let j =
            parse(&[("DN_RANK", "0"), ("DN_SIZE", "1"), ("DN_JOB_ID", "7"), ("DN_NODES", "3"), ("DN_JOB_DIR", "/x")])
                .unwrap()
                .unwrap();
        assert_eq!((j.job_id, j.nodes, j.dir().unwrap()), (7, 3, Path::new("/x")));
        let j = parse(&[
            ("DN_RANK", "3"),
            ("DN_SIZE", "6"),
            ("DN_WORLD", "2:3"),
            ("DN_PARENT_PORT", "p"),
            ("DN_APPNUM", "1"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((j.world, j.parent_port.as_deref(), j.appnum), (2..5, Some("p"), Some(1)));
    }

    #[test]
    fn bad_values_are_refused_by_name() {
        for (vars, says) in [
            (&[("DN_RANK", "1")][..], "DN_SIZE is not"),
            (&[("DN_RANK", "x"), ("DN_SIZE", "2")][..], "DN_RANK=\"x\" is not a number"),
            (&[("DN_RANK", "2"), ("DN_SIZE", "2")][..], "not below DN_SIZE=2"),
            (&[("DN_RANK", "0"), ("DN_SIZE", "4294967298")][..], "DN_SIZE=4294967298 is out of range"),
            (&[("DN_RANK", "0"), ("DN_SIZE", "2"), ("DN_NODES", "0")][..], "DN_NODES=0"),
            (&[("DN_RANK", "0"), ("DN_SIZE", "2"), ("DN_NODES", "70000")][..], "DN_NODES=70000 is out of range"),
            (&[("DN_RANK", "0"), ("DN_SIZE", "2"), ("DN_JOB_ID", "-1")][..], "DN_JOB_ID=\"-1\""),
            (&[("DN_RANK", "0"), ("DN_SIZE", "4"), ("DN_WORLD", "2")][..], "must be FIRST:COUNT"),
            (&[("DN_RANK", "0"), ("DN_SIZE", "4"), ("DN_WORLD", "3:2")][..], "must be FIRST:COUNT"),
            (&[("DN_RANK", "0"), ("DN_SIZE", "4"), ("DN_WORLD", "1:0")][..], "must be FIRST:COUNT"),
            (&[("DN_RANK", "0"), ("DN_SIZE", "4"), ("DN_WORLD", "2:2")][..], "not in its world"),
        ] {
            let e = parse(vars).unwrap_err().to_string();
            assert!(e.contains(says), "{vars:?}: {e}");
        }
    }
}
