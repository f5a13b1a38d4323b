//! The job launcher behind `dnrun`: start the simulator (or pick another
//! backend), start the ranks as separate processes with what they need in
//! their environment, forward their output (with rank prefixes on request), and tear
//! everything down — on success, on the first failing rank, on a timeout or
//! on Ctrl-C — leaving no process and no file behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod supervise;
use supervise::*;
pub use supervise::{reap, run_dpdk_poller, POLLER_ARG, REAPER_ARG};

/// Which transport the ranks use: an entry of the one registry of
/// backends ([`adi::BACKENDS`]) that a launcher can run jobs on.
#[derive(Clone, Copy)]
pub struct Backend {
    entry: &'static adi::BackendEntry,
    needs: &'static adi::job::LaunchNeeds,
}

impl Backend {
    /// The backend called `name` (`--backend`), if a launcher runs jobs on it.
    pub fn named(name: &str) -> Option<Backend> {
        let entry = adi::launchable(name)?;
        Some(Backend { entry, needs: entry.launch.as_ref()? })
    }

    /// Every backend a launcher runs jobs on, in the registry's order.
    pub fn all() -> impl Iterator<Item = Backend> {
        adi::BACKENDS.iter().filter_map(|b| Backend::named(b.name()))
    }

    /// Its name, as `DN_BACKEND` gives it to the ranks.
    pub fn name(&self) -> &'static str {
        self.entry.name()
    }

    /// Whether ranks on it can spawn processes (MPI 4.1 §11.8): the
    /// simulator admits them into the run, UDP learns their addresses from
    /// the job directory, DPDK's spawned ranks connect to their node's
    /// polling process (which has an interface waiting for each).
    pub fn can_spawn(&self) -> bool {
        self.needs().simulator || matches!(self.name(), "udp" | "dpdk")
    }

    /// What the launcher prepares and checks for it.
    pub fn needs(&self) -> &'static adi::job::LaunchNeeds {
        self.needs
    }

    /// `--backend`'s value parser: a name of the registry, or an error
    /// listing them.
    pub fn parse(name: &str) -> Result<Backend, UnknownBackend> {
        Backend::named(name).ok_or_else(|| UnknownBackend { name: name.to_string() })
    }
}

/// A `--backend` that is none of the registry's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a backend; use one of ({})", Backend::all().map(|b| format!("{}: {}", b.name(), b.needs.about)).collect::<Vec<_>>().join("; "))]
pub struct UnknownBackend {
    /// The name given.
    pub name: String,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for Backend {
    fn eq(&self, other: &Backend) -> bool {
        std::ptr::eq(self.entry, other.entry)
    }
}

/// Who polls DPDK receive queues (seed 000 §4.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DpdkPolling {
    /// Each rank polls its own interfaces.
    #[default]
    Rank,
    /// A polling process per node receives for the node's ranks.
    Node,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Number of ranks.
    pub np: u32,
    /// Every process the job may have (`MPI_UNIVERSE_SIZE`): `np`, or more
    /// to leave room for processes the ranks spawn (MPI 4.1 §11.8).
    pub universe: Option<u32>,
    /// Number of (simulated) nodes.
    pub nodes: u16,
    /// Backend.
    pub backend: Backend,
    /// Host profile for the simulator.
    pub profile: String,
    /// Chrome trace of the device.
    pub trace: Option<PathBuf>,
    /// Stop the job after this long.
    pub timeout: Option<Duration>,
    /// SO-DIMM per slot (MiB).
    pub partition_mib: u64,
    /// Program and arguments.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment for the ranks.
    pub env: Vec<(String, String)>,
    /// Print the simulator's summary.
    pub verbose: bool,
    /// UDP: one `host:port` per rank, for jobs across hosts.
    pub hostfile: Option<PathBuf>,
    /// Start only these ranks here (the others run elsewhere); all by default.
    pub ranks: Option<Vec<u32>>,
    /// Job id stamped on every datagram (random when not given).
    pub job_id: Option<u32>,
    /// DPDK: the one interface the local rank shares with every peer (an
    /// EAL `--vdev` argument such as `net_af_packet0,iface=eth1`); `None`:
    /// memif between the ranks of this host.
    pub dpdk_vdev: Option<String>,
    /// DPDK: who polls the receive queues.
    pub dpdk_polling: DpdkPolling,
    /// Prefix each line a rank prints with `[rank] ` (`--tag-output`, `-l`);
    /// by default output passes through as the rank wrote it, as `mpirun`
    /// passes it, so that a rank's `--json` pipes straight into a parser.
    pub tag_output: bool,
    /// No progress line (`--quiet`; there is none off a terminal anyway).
    pub quiet: bool,
    /// How the ranks run: contexts of `dnrun` or processes
    /// ([`crate::contexts`]).
    pub rank_mode: crate::contexts::RankMode,
    /// A program that understands `__dnrun-reaper DIR` ([`reap`]): `dnrun`
    /// itself. Started first, it stops the job's processes and removes its
    /// files if the launcher is killed outright (`kill -9`).
    pub reaper: Option<PathBuf>,
}

/// The value a rank will see for `key`: `-x` first, then ours.
fn rank_env(opts: &LaunchOptions, key: &'static str) -> Option<String> {
    opts.env.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone()).or_else(|| adi::knobs::raw(key))
}

/// Every `DN_*` variable the ranks will see (ours, with `-x` on top),
/// checked before anything starts: a misspelt name or value is refused
/// here, once, rather than by every rank at `MPI_Init`.
fn check_knobs(opts: &LaunchOptions) -> Result<(), LaunchError> {
    let mut vars: std::collections::BTreeMap<String, String> =
        std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect();
    vars.extend(opts.env.iter().cloned());
    adi::knobs::check(vars).map_err(|e| LaunchError::Usage(e.to_string()))
}

/// Authenticated UDP (`DN_UDP_AUTH=1`): a fresh 32-byte key for this job,
/// readable by its owner only, in the job directory where the ranks look
/// for it — unless the user gave one (`DN_UDP_KEY_FILE`, e.g. for a job
/// across hosts).
fn write_udp_key(opts: &LaunchOptions, job_dir: &Path) -> Result<(), LaunchError> {
    use std::os::unix::fs::OpenOptionsExt;
    if rank_env(opts, adi::backend::udp::AUTH_ENV).as_deref() != Some("1")
        || rank_env(opts, adi::backend::udp::KEY_FILE_ENV).is_some()
    {
        return Ok(());
    }
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(|e| LaunchError::Io(format!("cannot read /dev/urandom for the job's UDP key: {e}")))?;
    let path = job_dir.join(adi::backend::udp::KEY_FILE);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(&key))
        .map_err(|e| LaunchError::Io(format!("cannot write the job's UDP key {}: {e}", path.display())))
}

/// How a job ended.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// Exit code per rank (128 + signal for signals; `None` if never reaped).
    pub codes: Vec<Option<i32>>,
    /// Why the job was stopped early, if it was.
    pub stopped: Option<String>,
    /// The exit code `dnrun` returns: the worst rank's, or when the job was
    /// stopped, the failing rank's (1 for an exit without finalize, 124 for a
    /// timeout, 130 for an interrupt).
    pub exit_code: i32,
}

/// A launch failure before or around the ranks.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Bad options.
    #[error("{0}")]
    Usage(String),
    /// The simulator could not be started.
    #[error("cannot start the simulator: {0}")]
    Simulator(String),
    /// A rank could not be started.
    #[error("cannot start rank {rank} ({program}): {reason}")]
    Spawn {
        /// Rank.
        rank: u32,
        /// Program.
        program: String,
        /// Why.
        reason: String,
    },
    /// File-system trouble.
    #[error("{0}")]
    Io(String),
    /// The job breaks a rule or limit of its backend.
    #[error(transparent)]
    Refused(#[from] adi::job::LaunchRefusal),
}

/// Ranks per node: `ceil(np / nodes)`.
pub fn slots_per_node(np: u32, nodes: u16) -> u32 {
    np.div_ceil(nodes.max(1) as u32)
}

fn job_dir() -> PathBuf {
    let root = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let nonce =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    root.join(format!("dnrun-{}-{nonce:x}", std::process::id()))
}

/// Create the job directory `dir` and its `job` folder, both mode 0700 from
/// the start: the simulator's files (which hold every rank's messages),
/// the memif sockets and the rendezvous files inside are then out of
/// other users' reach whatever the umask. A name that exists already is
/// refused, not reused: it may be another user's.
fn make_job_dir(dir: &Path) -> Result<(), LaunchError> {
    use std::os::unix::fs::DirBuilderExt;
    let mut b = std::fs::DirBuilder::new();
    b.mode(0o700);
    b.create(dir)
        .and_then(|()| b.create(dir.join("job")))
        .map_err(|e| LaunchError::Io(format!("cannot create the job directory {}: {e}", dir.display())))
}

/// Locate `dimmnet-sim`: `$DN_SIM_BIN`, next to this executable, or on `PATH`.
pub fn find_simulator() -> Option<PathBuf> {
    if let Some(p) = adi::knobs::path("DN_SIM_BIN") {
        return Some(p);
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            let p = dir.join("dimmnet-sim");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("dimmnet-sim")).find(|p| p.is_file()))
}

/// Resolve the program like `execvp` would, so that a missing or
/// non-executable program is refused before anything is started.
fn resolve_program(p: &Path) -> Result<PathBuf, LaunchError> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |c: &Path| std::fs::metadata(c).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if p.as_os_str().is_empty() {
        return Err(LaunchError::Usage("no program given after --".into()));
    }
    if p.components().count() > 1 || p.is_absolute() {
        return if runnable(p) {
            Ok(p.to_path_buf())
        } else if p.exists() {
            Err(LaunchError::Usage(format!("{} is not an executable file", p.display())))
        } else {
            Err(LaunchError::Usage(format!("{} does not exist", p.display())))
        };
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(p)).find(|c| runnable(c)))
        .ok_or_else(|| LaunchError::Usage(format!("{} was not found on PATH", p.display())))
}

/// Refuse a job this host cannot hold: `dnrun` keeps two pipes and a pidfd
/// per local rank (and, while the rank starts, its PMI socket and a thread
/// serving it), and the ranks are processes of this user.
fn check_host_limits(local_ranks: usize, contexts: bool) -> Result<(), LaunchError> {
    if contexts && local_ranks > MAX_LOCAL_RANKS {
        return Err(LaunchError::Usage(format!(
            "{local_ranks} ranks on one host is more than a simulated fabric holds ({MAX_LOCAL_RANKS} slots)"
        )));
    }
    if !contexts && local_ranks > MAX_LOCAL_PROCESSES {
        return Err(LaunchError::Usage(format!(
            "{local_ranks} ranks on one host is more than dnrun starts as processes ({MAX_LOCAL_PROCESSES}); \
             spread the job over hosts with --hostfile and --ranks, or, on the simulator, run a C program \
             linked with libmpi_abi.so.1 as contexts (up to {MAX_LOCAL_RANKS} ranks)"
        )));
    }
    if contexts {
        // One process, one thread: no descriptors or processes per rank.
        return Ok(());
    }
    let need_fds = 4 * local_ranks as u64 + 64;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit write/read only the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 && lim.rlim_cur < need_fds {
        if lim.rlim_max >= need_fds {
            let raised = libc::rlimit { rlim_cur: need_fds, rlim_max: lim.rlim_max };
            // SAFETY: as above.
            unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) };
        } else {
            return Err(LaunchError::Usage(format!(
                "{local_ranks} ranks need about {need_fds} open files in dnrun, but this host allows {} \
                 (raise `ulimit -n`, or start fewer ranks per host with --ranks)",
                lim.rlim_max
            )));
        }
    }
    let need_tasks = 2 * local_ranks as u64 + 64;
    // SAFETY: as above.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut lim) } == 0
        && lim.rlim_cur != libc::RLIM_INFINITY
        && lim.rlim_cur < need_tasks
    {
        return Err(LaunchError::Usage(format!(
            "{local_ranks} ranks need about {need_tasks} processes and threads, but `ulimit -u` is {}",
            lim.rlim_cur
        )));
    }
    Ok(())
}

/// How the ranks of this job run: `Some(program)` to run them as contexts
/// of `dnrun` ([`crate::contexts`]), `None` as processes. `auto` takes
/// contexts when it can and says why not under `-v`; `contexts` that
/// cannot be is refused, saying why.
fn choose_rank_mode(
    opts: &LaunchOptions,
    program: &Path,
) -> Result<Option<crate::contexts::program::Loadable>, LaunchError> {
    use crate::contexts::RankMode;
    let why_not = if opts.rank_mode == RankMode::Processes {
        return Ok(None);
    } else if opts.universe.is_some_and(|u| u > opts.np) {
        "a job with room to spawn processes (--universe-size) runs its ranks as processes".to_string()
    } else if !opts.backend.needs().simulator {
        format!("--backend {} runs its ranks as processes (contexts are the simulator's)", opts.backend.name())
    } else {
        match crate::contexts::program::inspect(program) {
            Ok(l) => match crate::contexts::check_mappings(opts.np, u32::from(opts.nodes), &l) {
                Ok(()) => return Ok(Some(l)),
                Err(why) if opts.rank_mode == RankMode::Auto => {
                    // Said without -v: a job this large as processes is
                    // much slower, and the fix is one command.
                    eprintln!("dnrun: ranks run as processes: {why}");
                    return Ok(None);
                }
                Err(why) => why.to_string(),
            },
            Err(e) => e.to_string(),
        }
    };
    if opts.rank_mode == RankMode::Contexts {
        return Err(LaunchError::Usage(format!("--rank-mode contexts: {why_not}; use --rank-mode processes")));
    }
    if opts.verbose {
        eprintln!("dnrun: ranks run as processes: {why_not}");
    }
    Ok(None)
}

/// The most ranks `dnrun` starts on one host as contexts (documented in
/// docs/guide/running.md): as many as the simulated fabric has slots.
pub const MAX_LOCAL_RANKS: usize = fpga_regs::layout::MAX_SOURCES;

/// The most ranks `dnrun` starts on one host as processes: every one is a
/// process with its pipes, pidfd and PMI connection, and a job of more
/// than about a thousand no longer starts within the PMI timeouts on a
/// small host.
pub const MAX_LOCAL_PROCESSES: usize = 1024;

struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The launcher options that only some backends take
/// ([`adi::job::LaunchNeeds::options`]).
pub const BACKEND_OPTIONS: [&str; 4] = ["--hostfile", "--ranks", "--dpdk-vdev", "--dpdk-poller"];

/// Run a job to completion.
///
/// Every option is checked before anything is started, so a refused
/// command line leaves no process and no file behind; once started, every
/// child is held by a guard that stops it on any error path, has a
/// parent-death signal, and is known to the reaper (see [`reap`]).
pub fn launch(opts: &LaunchOptions, interrupted: &Arc<AtomicBool>) -> Result<JobReport, LaunchError> {
    if opts.np == 0 {
        return Err(LaunchError::Usage("-n must be at least 1".into()));
    }
    if opts.nodes == 0 {
        return Err(LaunchError::Usage("--nodes must be at least 1".into()));
    }
    check_knobs(opts)?;
    let universe = opts.universe.unwrap_or(opts.np);
    if universe < opts.np {
        return Err(LaunchError::Usage(format!(
            "--universe-size {universe} is below -n {}: the universe holds every process of the job",
            opts.np
        )));
    }
    let spawning = universe > opts.np;
    if spawning && !opts.backend.can_spawn() {
        return Err(LaunchError::Usage(format!(
            "--universe-size: processes can be spawned on the simulator, over UDP and over DPDK, not on \
             --backend {} yet (docs/guide/spawn.md)",
            opts.backend.name()
        )));
    }
    if spawning && opts.hostfile.is_some() {
        return Err(LaunchError::Usage(
            "--universe-size and --hostfile do not go together: spawned processes \
             start on this host and publish their addresses in the job directory"
                .into(),
        ));
    }
    if spawning && opts.ranks.is_some() {
        return Err(LaunchError::Usage("--universe-size and --ranks do not go together".into()));
    }
    if spawning && universe as usize > MAX_LOCAL_PROCESSES {
        return Err(LaunchError::Usage(format!(
            "--universe-size {universe} is above the {MAX_LOCAL_PROCESSES} processes dnrun starts on one host"
        )));
    }
    // The fabric has a slot for every process of the universe.
    let slots = slots_per_node(universe, opts.nodes);
    let most = fpga_regs::layout::MAX_SLOTS as u32;
    if spawning && slots > most {
        return Err(LaunchError::Usage(format!(
            "--universe-size {universe} on {} node(s) needs {slots} slots per node, and a node has at most {most}: \
             give --nodes {} or more",
            opts.nodes,
            universe.div_ceil(most)
        )));
    }
    let local: Vec<u32> = match &opts.ranks {
        Some(r) => r.clone(),
        None => (0..opts.np).collect(),
    };
    if let Some(bad) = local.iter().find(|r| **r >= opts.np) {
        return Err(LaunchError::Usage(format!("--ranks names rank {bad}, but the job has {} ranks", opts.np)));
    }
    if let Some(dup) = local.iter().enumerate().find(|(i, r)| local[..*i].contains(r)).map(|(_, r)| r) {
        return Err(LaunchError::Usage(format!("--ranks names rank {dup} twice")));
    }
    // The options of some backends only (BACKEND_OPTIONS), given to another.
    let given: [(&str, bool); BACKEND_OPTIONS.len()] = [
        ("--hostfile", opts.hostfile.is_some()),
        ("--ranks", opts.ranks.is_some()),
        ("--dpdk-vdev", opts.dpdk_vdev.is_some()),
        ("--dpdk-poller", opts.dpdk_polling == DpdkPolling::Node),
    ];
    let needs = opts.backend.needs();
    if let Some((option, _)) = given.iter().find(|(o, on)| *on && !needs.options.contains(o)) {
        let takers: Vec<&str> = Backend::all().filter(|b| b.needs.options.contains(option)).map(|b| b.name()).collect();
        return Err(LaunchError::Usage(format!(
            "{option} is for --backend {}; a job on {} does not take it",
            takers.join(" or "),
            opts.backend.name()
        )));
    }
    // Over DPDK, processes spawned later join their node's polling process,
    // which has an interface waiting for each slot of the universe; ranks
    // with ports of their own set them up at start, for the ranks there are.
    let polling = match spawning && opts.backend.name() == "dpdk" {
        true if opts.dpdk_vdev.is_some() => {
            return Err(LaunchError::Usage(
                "--universe-size and --dpdk-vdev do not go together: spawned processes join their node's DPDK \
                 polling process, on this host"
                    .into(),
            ))
        }
        true => DpdkPolling::Node,
        false => opts.dpdk_polling,
    };
    if polling == DpdkPolling::Node && opts.reaper.is_none() {
        return Err(LaunchError::Usage("--dpdk-poller node needs the dnrun program to start the pollers".into()));
    }
    let plan = adi::job::LaunchPlan {
        np: opts.np,
        nodes: u32::from(opts.nodes),
        local: &local,
        across_hosts: opts.ranks.is_some(),
        hostfile: opts.hostfile.is_some(),
        dpdk_vdev: opts.dpdk_vdev.as_deref(),
        node_pollers: polling == DpdkPolling::Node,
    };
    (needs.check)(&plan)?;
    if let Some(h) = &opts.hostfile {
        if !h.is_file() {
            return Err(LaunchError::Usage(format!("--hostfile {} is not a readable file", h.display())));
        }
    }
    let program = resolve_program(&opts.program)?;
    let contexts = choose_rank_mode(opts, &program)?;
    let sim_bin = match needs.simulator && contexts.is_none() {
        true => Some(find_simulator().ok_or_else(|| {
            LaunchError::Simulator("dimmnet-sim not found next to dnrun or on PATH (build with `cargo build --release`, or set DN_SIM_BIN)".into())
        })?),
        false => None,
    };
    check_host_limits(local.len().max(universe as usize), contexts.is_some())?;

    let dir = job_dir();
    make_job_dir(&dir)?;
    let _cleanup = Cleanup(dir.clone());
    if needs.datagram_key {
        write_udp_key(opts, &dir.join("job"))?;
    }
    let mut spawner = match spawning {
        true => Some(
            crate::spawner::Spawner::new(&dir.join("job"), opts.np, universe)
                .map_err(|e| LaunchError::Io(format!("cannot make the spawn requests' folder: {e}")))?,
        ),
        false => None,
    };
    // Declared after the cleanup, so dropped first: it is told "done" and
    // then the directory goes.
    let mut reaper = Reaper::start(opts.reaper.as_deref(), &dir);
    let sim_dir = dir.join("sim");

    let job_id = opts.job_id.unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        (t as u32) ^ std::process::id().rotate_left(16)
    });
    let host_ranks: Vec<u32> = match opts.ranks {
        Some(_) => {
            let mut here = local.clone();
            here.sort_unstable();
            here
        }
        None => (0..universe).collect(),
    };
    // The job as each rank reads it (adi::JobEnv), written by adi's own
    // half of the contract.
    let job_of = |rank: u32| adi::JobEnv {
        job_id,
        dir: Some(dir.join("job")),
        nodes: opts.nodes,
        world: 0..opts.np,
        host_ranks: host_ranks.clone(),
        sim_dir: Some(sim_dir.clone()),
        ..adi::JobEnv::new(rank, universe)
    };
    // What each rank finds in its environment on top of dnrun's: the job,
    // the backend's settings, then the user's (-x).
    let env_of_job = |job: &adi::JobEnv| -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let mut v: Vec<(std::ffi::OsString, std::ffi::OsString)> =
            job.vars().into_iter().map(|(k, val)| (k.into(), val)).collect();
        v.push((adi::ENV_BACKEND.into(), opts.backend.name().into()));
        v.extend(opts.hostfile.iter().map(|h| ("DN_UDP_HOSTFILE".into(), h.clone().into())));
        v.extend(opts.dpdk_vdev.iter().map(|d| (adi::backend::dpdk::DN_DPDK_VDEV.into(), d.into())));
        if polling == DpdkPolling::Node {
            v.push((adi::backend::dpdk::DN_DPDK_POLLER.into(), "node".into()));
        }
        v.extend(opts.env.iter().map(|(k, val)| (k.into(), val.into())));
        v
    };
    let rank_env = |rank: u32| env_of_job(&job_of(rank));
    if let Some(loadable) = &contexts {
        return crate::contexts::run_job(crate::contexts::ContextJob {
            opts,
            program: loadable,
            argv0: &program,
            dir: &dir,
            sim_dir: sim_dir.clone(),
            slots,
            env_of: &rank_env,
            interrupted,
        });
    }

    let mut sim = Guard(None);
    let mut sim_err: Option<std::thread::JoinHandle<String>> = None;
    if let Some(bin) = &sim_bin {
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .args(["--nodes", &opts.nodes.to_string(), "--slots", &slots.to_string()])
            .arg("--dir")
            .arg(&sim_dir)
            .args(["--actors", &opts.np.to_string(), "--profile", &opts.profile])
            .args(["--partition-mib", &opts.partition_mib.to_string()]);
        if let Some(t) = &opts.trace {
            cmd.arg("--trace").arg(t).args(["--trace-meta", "rank_mode=processes"]);
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null());
        // SIGTERM: the simulator removes its files on the way out.
        supervised(&mut cmd, libc::SIGTERM);
        let child = cmd.spawn().map_err(|e| LaunchError::Simulator(format!("{}: {e}", bin.display())))?;
        reaper.watch(child.id());
        sim = Guard(Some(child));
        let (out, err) = match sim.get() {
            Some(c) => (c.stdout.take(), c.stderr.take()),
            None => (None, None),
        };
        sim_err = err.map(|mut e| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = e.read_to_string(&mut s);
                s
            })
        });
        // Wait for "ready".
        let mut line = String::new();
        let ok = out.map(|o| BufReader::new(o).read_line(&mut line).is_ok() && line.contains("ready")).unwrap_or(false);
        if !ok {
            drop(sim);
            let msg = sim_err.take().and_then(|h| h.join().ok()).unwrap_or_default();
            return Err(LaunchError::Simulator(format!("it did not become ready: {}", msg.trim())));
        }
    }

    let _progress =
        sim.get().is_some().then(|| crate::progress::Progress::start(&sim_dir, opts.np, opts.quiet)).flatten();
    let mut children: Vec<Guard> = Vec::new();
    // Every rank's output and exit, through one epoll set on this thread.
    let mut io = crate::job_io::JobIo::new(opts.tag_output)
        .map_err(|e| LaunchError::Io(format!("cannot set up the ranks' output forwarding: {e}")))?;
    let start = Instant::now();
    // DPDK polling processes, one per node with ranks, before the ranks
    // (a rank waits for its node's poller to listen).
    let mut pollers: Vec<(u32, Guard)> = Vec::new();
    if let (DpdkPolling::Node, Some(me)) = (polling, &opts.reaper) {
        // A slot for every process of the universe; the job starts with -n.
        let layout = adi::backend::dpdk::NodeLayout::new(universe, u32::from(opts.nodes));
        for node in 0..layout.nodes() {
            let mut cmd = Command::new(me);
            cmd.arg(POLLER_ARG)
                .args([job_id, node, universe, u32::from(opts.nodes)].map(|v| v.to_string()))
                .arg(dir.join("job"))
                .arg(opts.np.to_string())
                .envs(opts.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            // SIGTERM: the poller prints its figures and leaves.
            supervised(&mut cmd, libc::SIGTERM);
            let child = cmd.spawn().map_err(|e| {
                LaunchError::Io(format!("cannot start the DPDK polling process ({}): {e}", me.display()))
            })?;
            reaper.watch(child.id());
            pollers.push((node, Guard(Some(child))));
        }
    }
    // PMI-1 for programs built against another MPI (MPICH's); our own
    // ranks read DN_RANK and close the socket (adi::pmi::release_unused). Only when every rank
    // runs here: a job across hosts has no one server for its barrier.
    let pmi = opts.ranks.is_none().then(|| crate::pmi_server::PmiServer::new(opts.np, job_id, dir.join("job")));
    for &rank in &local {
        let mut cmd = Command::new(&program);
        let pmi_end = match &pmi {
            Some(_) => Some(
                std::os::unix::net::UnixStream::pair()
                    .map_err(|e| LaunchError::Io(format!("cannot make the PMI socket of rank {rank}: {e}")))?,
            ),
            None => None,
        };
        if let Some((_, theirs)) = &pmi_end {
            use std::os::fd::AsRawFd;
            let fd = theirs.as_raw_fd();
            cmd.env("PMI_FD", fd.to_string())
                .env("PMI_RANK", rank.to_string())
                .env("PMI_SIZE", opts.np.to_string())
                .env(adi::pmi::SERVED_BY_DNRUN, "1");
            // SAFETY: runs in the child between fork and exec; fcntl is a
            // plain system call (async-signal-safe). It lets the rank's end
            // of the socket, open in the parent until after the spawn,
            // survive the exec; no other descriptor is touched.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        cmd.args(&opts.args).envs(rank_env(rank)).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        supervised(&mut cmd, libc::SIGKILL);
        let spawned = cmd.spawn();
        if let (Some(server), Some((ours, theirs))) = (&pmi, pmi_end) {
            // The rank holds its end now (or never will): close ours of it.
            drop(theirs);
            if spawned.is_ok() {
                if let Err(e) = server.serve(rank, ours) {
                    // Our own ranks do not need it; another MPI's rank
                    // fails on the closed socket, naming PMI.
                    eprintln!("dnrun: cannot serve PMI to rank {rank}: {e}");
                }
            }
        }
        match spawned {
            Ok(mut c) => {
                reaper.watch(c.id());
                let watched = io.add(rank, &mut c);
                children.push(Guard(Some(c)));
                if let Err(e) = watched {
                    // The guards stop the ranks already started and the simulator.
                    return Err(LaunchError::Io(format!("cannot watch rank {rank}'s output and exit: {e}")));
                }
            }
            Err(e) => {
                // The guards stop the ranks already started and the simulator.
                return Err(LaunchError::Spawn { rank, program: program.display().to_string(), reason: e.to_string() });
            }
        }
    }

    // From here on the ranks are reaped through `io` (in the order they
    // exit, so the first failure is the one named), never by a guard.
    for mut guard in children {
        drop(guard.take());
    }
    let mut running = local.len();
    let mut local = local;
    let mut codes: Vec<Option<i32>> = vec![None; universe as usize];
    let mut stopped: Option<String> = None;
    // The exit code that explains the stop (the failing rank's, or 1/124/130).
    let mut culprit: Option<i32> = None;
    let mut kill_at: Option<Instant> = None;
    while running > 0 {
        let exits = match io.poll(Duration::from_millis(5)) {
            Ok(exits) => exits,
            Err(e) => {
                stopped.get_or_insert(format!("cannot watch the ranks: {e}; stopping the job"));
                culprit.get_or_insert(1);
                Vec::new()
            }
        };
        for (rank, st) in exits {
            let rank = rank as usize;
            running -= 1;
            let st = match st {
                Ok(st) => st,
                Err(e) => {
                    stopped.get_or_insert(format!("cannot watch rank {rank}: {e}"));
                    codes[rank] = Some(1);
                    continue;
                }
            };
            codes[rank] = Some(code_of(st));
            let finalized = dir.join("job").join(format!("finalized.{rank}")).exists();
            if stopped.is_none() {
                if !st.success() {
                    stopped = Some(format!("{}; stopping the job", describe(rank as u32, st)));
                    culprit = Some(code_of(st));
                } else if !finalized && running > 0 {
                    culprit = Some(1);
                    stopped = Some(format!(
                        "rank {rank} exited (code 0) without calling MPI finalize while other ranks were still running; stopping the job"
                    ));
                }
            }
        }
        if let (Some(sp), None) = (spawner.as_mut(), &stopped) {
            for taken in sp.take() {
                let planned = taken.request.and_then(|r| sp.plan(&r).map(|p| (r, p)));
                let (req, planned) = match planned {
                    Ok(x) => x,
                    Err(why) => {
                        let why = adi::spawn::SpawnReply::Refused(why.to_string());
                        crate::spawner::Spawner::answer(&taken.reply, &why);
                        continue;
                    }
                };
                let first = planned.first().map_or(0, |p| p.rank);
                let world = first..first + planned.len() as u32;
                for p in &planned {
                    let job = adi::JobEnv {
                        world: world.clone(),
                        parent_port: Some(req.port.clone()),
                        appnum: Some(p.appnum),
                        ..job_of(p.rank)
                    };
                    let mut cmd = Command::new(&p.program);
                    cmd.args(&p.args)
                        .envs(env_of_job(&job))
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped());
                    if let Some(w) = &p.wdir {
                        cmd.current_dir(w);
                    }
                    supervised(&mut cmd, libc::SIGKILL);
                    let started = cmd.spawn().map_err(|e| e.to_string()).and_then(|mut c| {
                        reaper.watch(c.id());
                        io.add(p.rank, &mut c).map_err(|e| format!("cannot watch its output and exit: {e}"))
                    });
                    match started {
                        Ok(()) => {
                            running += 1;
                            local.push(p.rank);
                        }
                        Err(e) => {
                            // Those started already cannot be taken back
                            // from a simulation that has not admitted them:
                            // the job stops.
                            stopped = Some(format!(
                                "cannot start spawned rank {} ({}): {e}; stopping the job",
                                p.rank,
                                p.program.display()
                            ));
                            culprit = Some(1);
                            break;
                        }
                    }
                }
                let reply = match &stopped {
                    None => adi::spawn::SpawnReply::Started { first, count: planned.len() as u32 },
                    Some(why) => adi::spawn::SpawnReply::Refused(why.clone()),
                };
                crate::spawner::Spawner::answer(&taken.reply, &reply);
            }
        }
        if stopped.is_none() {
            if let Some(t) = opts.timeout {
                if start.elapsed() > t {
                    let mut list: Vec<u32> = io.running().map(|(r, _)| r).collect();
                    list.sort_unstable();
                    let list: Vec<String> = list.iter().map(u32::to_string).collect();
                    stopped = Some(format!(
                        "the job exceeded --timeout {} s; rank(s) {} were still running; stopping them",
                        t.as_secs(),
                        list.join(", ")
                    ));
                    culprit = Some(124);
                }
            }
            if let Some((rank, code)) = pmi.as_ref().and_then(|p| p.aborted()) {
                stopped = Some(format!("rank {rank} called MPI_Abort with exit code {code}; stopping the job"));
                culprit = Some(code);
            }
            if interrupted.load(Ordering::SeqCst) {
                stopped = Some("interrupted; stopping the job".into());
                culprit = Some(130);
            }
            for (node, p) in pollers.iter_mut() {
                if let Some(Ok(Some(st))) = p.get().map(|c| c.try_wait()) {
                    stopped = Some(format!("the DPDK polling process of node {node} exited ({st}); stopping the job"));
                    culprit = Some(1);
                }
            }
            if let Some(s) = sim.get() {
                if let Ok(Some(st)) = s.try_wait() {
                    if !st.success() {
                        use std::os::unix::process::ExitStatusExt;
                        // A SIGBUS is a page of a mapped file that could not
                        // be had: the file system under the job is full.
                        let why = if st.signal() == Some(libc::SIGBUS) {
                            " — a mapped file's page could not be had: is /dev/shm full? (df -h /dev/shm)"
                        } else {
                            ""
                        };
                        stopped = Some(format!("the simulator exited ({st}{why}); stopping the job"));
                        culprit = Some(1);
                    }
                }
            }
        }
        if stopped.is_some() {
            // SIGTERM every remaining rank's process group, SIGKILL after 2 s.
            let sig = match kill_at {
                None => {
                    kill_at = Some(Instant::now() + Duration::from_secs(2));
                    Some(libc::SIGTERM)
                }
                Some(t) if Instant::now() > t => Some(libc::SIGKILL),
                _ => None,
            };
            if let Some(sig) = sig {
                for (_, pid) in io.running() {
                    // SAFETY: kill(2) on the rank's own process group (created
                    // with process_group(0)); no memory is involved.
                    unsafe { libc::kill(-(pid as i32), sig) };
                }
            }
        }
    }
    // What the ranks wrote before they ended comes before what dnrun says.
    // (A pipe a rank's own child still holds open is not waited for long.)
    let drain_until = Instant::now() + Duration::from_secs(2);
    while io.output_open() && Instant::now() < drain_until {
        let _ = io.poll(Duration::from_millis(20));
    }
    if let Some(msg) = &stopped {
        eprintln!("dnrun: {msg}");
        for (rank, c) in codes.iter().enumerate() {
            if let Some(c) = c {
                if *c != 0 {
                    eprintln!("dnrun:   rank {rank}: exit code {c}");
                }
            }
        }
    }
    // After a clean end the simulator leaves by itself once every rank has
    // detached; give it a moment. After a stop, ranks may never have
    // attached, and it would wait for them: stop it at once.
    if let Some(mut s) = sim.take() {
        if stopped.is_none() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(s.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let mut kids = vec![Some(s)];
        terminate(&mut kids, Duration::from_secs(2));
    }
    // The pollers outlive the ranks (a rank's last frames pass through
    // them); SIGTERM makes them print their figures and leave.
    let mut kids: Vec<Option<Child>> = pollers.iter_mut().map(|(_, g)| g.take()).collect();
    terminate(&mut kids, Duration::from_secs(2));
    let sim_summary = sim_err.and_then(|h| h.join().ok()).unwrap_or_default();
    if opts.verbose || stopped.is_some() {
        for l in sim_summary.lines() {
            eprintln!("dnrun: {l}");
        }
    }
    // The worst rank exit code; when dnrun stopped the job, the code of what
    // caused it (the ranks it killed are not the culprits).
    let exit_code = match culprit {
        Some(c) => c.max(1),
        None => local.iter().map(|r| codes[*r as usize].unwrap_or(1)).max().unwrap_or(0),
    };
    Ok(JobReport { codes, stopped, exit_code })
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// One registry: every backend a launcher can run is there by name,
    /// the in-process one is not, and every option a backend takes is one
    /// the launcher knows.
    #[test]
    fn dnrun_runs_every_registered_backend_and_knows_their_options() {
        let names: Vec<&str> = Backend::all().map(|b| b.name()).collect();
        assert_eq!(names, ["sim", "udp", "dpdk"]);
        assert!(Backend::named("local").is_none());
        assert_eq!(Backend::named("dimmnet").map(|b| b.name()), Some("sim"));
        let err = Backend::parse("tcp").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("(sim: ") && err.contains("; udp: ") && err.contains("; dpdk: "), "{err}");
        for b in Backend::all() {
            for o in b.needs().options {
                assert!(BACKEND_OPTIONS.contains(o), "{}: {o} is no launcher option", b.name());
            }
        }
    }
}
