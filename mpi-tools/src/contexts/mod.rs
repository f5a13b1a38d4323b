//! Ranks as user-level contexts of `dnrun` itself (DESIGN §3, issue 46).
//!
//! On the simulator a grant is a hand-off between two parties. With every
//! rank a process of its own, each hand-off is two trips through the
//! kernel's scheduler (4–5 us with 2 processes, 14–23 us with 1,024 on the
//! 2-core machine of docs/BENCHMARKS.md), and that floor, not the
//! simulator's work, made a 1,024-rank job ten times slower than SimGrid
//! SMPI. Here `dnrun` runs the model and every rank in its own process,
//! each rank on a stack of its own, and a grant is a switch between stacks
//! in user space:
//!
//! * [`program`] decides whether the program can be loaded that way and
//!   writes the per-rank copies (each copy loaded once gives the rank its
//!   own globals, as SimGrid SMPI's dlopen privatization does);
//! * `host` keeps the table of ranks and switches them (their stacks,
//!   their `errno` and `environ`, and the per-rank state of the MPI
//!   library they share, `simlink::contexts`);
//! * [`emulate`] does what a process did for free: per-rank exit and exit
//!   handlers, per-rank output, crashes that name the rank;
//! * [`run_job`] runs a job: the model (`hw_model::Cluster`, here instead
//!   of a `dimmnet-sim` process) drives the ranks through
//!   [`hw_model::Contexts`], and the job ends as a job of processes ends.
//!
//! The scheduler, its lookahead and the driver's register-level access to
//! its slot are the same in both modes, and so are the simulated times,
//! traces and output (the test suite compares them for every C program).

pub mod emulate;
mod host;
pub mod program;
mod stack;

use std::ffi::{CString, OsString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use host::Ended;

use crate::launcher::{JobReport, LaunchError, LaunchOptions};

/// How the ranks of a job run (`dnrun --rank-mode`, `DN_RANK_MODE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RankMode {
    /// Contexts when the job can run so (the simulator, and a program
    /// [`program::inspect`] accepts), processes otherwise.
    #[default]
    Auto,
    /// Every rank a user-level context of `dnrun`; a job that cannot run
    /// so is refused, saying why.
    Contexts,
    /// Every rank a process of its own.
    Processes,
}

/// The environment variable that gives `--rank-mode`'s default.
pub const ENV_RANK_MODE: &str = "DN_RANK_MODE";

impl RankMode {
    /// `--rank-mode`'s default: `DN_RANK_MODE`, else `auto`.
    pub fn from_env() -> Result<RankMode, adi::knobs::KnobError> {
        Ok(adi::knobs::choice(ENV_RANK_MODE)?.unwrap_or_default())
    }
}

/// The words of `DN_RANK_MODE`, which are `--rank-mode`'s.
impl adi::knobs::Choice for RankMode {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("auto", RankMode::Auto), ("contexts", RankMode::Contexts), ("processes", RankMode::Processes)];
}

/// Memory mappings a rank takes beside its program's copy: its slot's
/// windows (one mapping, `driver::Device`), the simulator's control file,
/// its stack and the stack's guard page.
const MAPPINGS_PER_RANK: usize = 4;

/// Refuse a job whose `ranks` contexts (of `program`, on `nodes` simulated
/// nodes) would need more memory mappings than the kernel lets one process
/// have (`vm.max_map_count`, 65,530 by default: about 7,000 ranks of a
/// small C program), saying how many fit and how to raise the limit. A
/// process past it fails in the middle of loading a rank, with `ENOMEM`.
pub fn check_mappings(ranks: u32, nodes: u32, program: &program::Loadable) -> Result<(), TooManyMappings> {
    let Some(limit) = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|s| s.trim().parse().ok())
    else {
        return Ok(());
    };
    let now = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count());
    // The model maps every node's file once; some slack for libraries a
    // rank's first calls load.
    let fixed = now + nodes as usize + 256;
    let per_rank = program.mappings + MAPPINGS_PER_RANK;
    mapping_verdict(ranks as usize, per_rank, fixed, limit)
}

/// A job of contexts that needs more memory mappings than the kernel lets
/// one process have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{ranks} ranks as contexts of one process need about {need} memory mappings ({per_rank} per rank), but \
     vm.max_map_count is {limit}, so at most {fit} ranks fit; raise it (as root: \
     sysctl -w vm.max_map_count={suggest}) or run fewer ranks"
)]
pub struct TooManyMappings {
    /// Ranks in the job.
    pub ranks: usize,
    /// Mappings the job needs.
    pub need: usize,
    /// Mappings per rank.
    pub per_rank: usize,
    /// `vm.max_map_count`.
    pub limit: usize,
    /// The most ranks that fit.
    pub fit: usize,
    /// A limit that fits the job with a quarter to spare.
    pub suggest: usize,
}

fn mapping_verdict(ranks: usize, per_rank: usize, fixed: usize, limit: usize) -> Result<(), TooManyMappings> {
    let need = fixed + ranks * per_rank;
    if need <= limit {
        return Ok(());
    }
    let fit = limit.saturating_sub(fixed) / per_rank;
    let suggest = (need + need / 4).next_multiple_of(65_536);
    Err(TooManyMappings { ranks, need, per_rank, limit, fit, suggest })
}

/// The address of the table a host exports (kept in `dnrun` by its `main`).
pub fn host_table_address() -> usize {
    std::ptr::addr_of!(host::dn_contexts_host_v1) as usize
}

/// Write `data` to a new file `path` that only its owner may read, write
/// and execute (a rank's program copy).
pub(crate) fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o700).open(path)?.write_all(data)
}

/// Whether programs can be mapped executable from files in `dir` (not on a
/// `noexec` file system).
fn exec_allowed(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: statvfs writes into the struct we pass, from a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_NOEXEC == 0 }
}

/// The stack each rank gets: the size a process's main thread would
/// (`ulimit -s`), 8 MiB when unlimited. Reserved, not committed: pages a
/// rank never touches cost nothing.
pub fn stack_size() -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    let cur = if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut lim) } == 0 { lim.rlim_cur } else { 0 };
    match cur {
        libc::RLIM_INFINITY | 0 => 8 << 20,
        n => (n as usize).clamp(256 << 10, 1 << 30),
    }
}

/// What [`run_job`] needs from the launcher.
pub(crate) struct ContextJob<'a> {
    /// The command line.
    pub opts: &'a LaunchOptions,
    /// The program, inspected.
    pub program: &'a program::Loadable,
    /// `argv[0]`, as a process would get it.
    pub argv0: &'a Path,
    /// The job directory (`job/` inside holds what ranks share).
    pub dir: &'a Path,
    /// Where the simulator's files go.
    pub sim_dir: PathBuf,
    /// Slots per node.
    pub slots: u32,
    /// The variables each rank gets on top of `dnrun`'s own environment.
    pub env_of: &'a dyn Fn(u32) -> Vec<(OsString, OsString)>,
    /// Set by `dnrun`'s signal handlers.
    pub interrupted: &'a Arc<AtomicBool>,
}

/// How the job stands, shared with the watchdog thread.
struct Shared {
    /// Set to end the run (the model stops scheduling at once).
    stop: AtomicBool,
    /// Why the job is being stopped, and the exit code that explains it.
    stopped: Mutex<Option<(String, i32)>>,
    /// Per rank: it has ended.
    ended: Vec<AtomicBool>,
    /// The main thread has left the run.
    done: AtomicBool,
}

impl Shared {
    /// Stop the job for `why` (the first reason stays).
    fn stop(&self, why: String, code: i32) {
        let mut s = self.stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if s.is_none() {
            *s = Some((why, code));
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn running(&self) -> Vec<u32> {
        (0..self.ended.len() as u32).filter(|&r| !self.ended[r as usize].load(Ordering::SeqCst)).collect()
    }
}

/// The model's view of the ranks ([`hw_model::Contexts`]), and the
/// launcher's rules for when a rank's end ends the job.
struct Driver<'a> {
    shared: &'a Shared,
    finalized_dir: PathBuf,
    codes: Vec<Option<i32>>,
    /// Measure the time spent in the ranks (`-v`).
    timing: bool,
    in_ranks: Duration,
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        _ => "signal",
    }
}

impl Driver<'_> {
    fn after(&mut self, r: usize, step: host::Step) {
        let host::Step::Ended(end) = step else { return };
        self.shared.ended[r].store(true, Ordering::SeqCst);
        let (code, why) = match end {
            Ended::Code(c) => {
                // As a process's exit status: the low byte.
                let c = c & 0xff;
                (c, (c != 0).then(|| format!("rank {r} exited with code {c}; stopping the job")))
            }
            Ended::Signal { sig, overflow } => {
                let what = if overflow {
                    format!(
                        "rank {r} overflowed its stack of {} KiB (a rank's stack is `ulimit -s`; raise it, or run with --rank-mode processes) and was killed by signal {sig} ({})",
                        stack_size() >> 10,
                        signal_name(sig)
                    )
                } else {
                    format!("rank {r} was killed by signal {sig} ({})", signal_name(sig))
                };
                (128 + sig, Some(format!("{what}; stopping the job")))
            }
        };
        self.codes[r] = Some(code);
        if let Some(why) = why {
            self.shared.stop(why, code);
            return;
        }
        let finalized = self.finalized_dir.join(format!("finalized.{r}")).exists();
        let others = self.shared.running();
        if !finalized && !others.is_empty() {
            self.shared.stop(
                format!(
                    "rank {r} exited (code 0) without calling MPI finalize while other ranks were still running; stopping the job"
                ),
                1,
            );
        } else if others.is_empty() {
            // Everyone has ended: the run is over.
            self.shared.stop.store(true, Ordering::SeqCst);
        }
    }
}

impl hw_model::Contexts for Driver<'_> {
    fn resume(&mut self, actor: usize) {
        let t0 = self.timing.then(Instant::now);
        let step = host::resume(actor);
        if let Some(t0) = t0 {
            self.in_ranks += t0.elapsed();
        }
        self.after(actor, step);
    }

    fn idle(&mut self) -> bool {
        match host::start_next() {
            Some((r, step)) => {
                self.after(r, step);
                true
            }
            None => {
                if !self.shared.stop.load(Ordering::SeqCst) {
                    let waiting: Vec<String> = self.shared.running().iter().map(u32::to_string).collect();
                    self.shared.stop(
                        format!(
                            "rank(s) {} wait to join the simulation, and nothing else can run; stopping the job",
                            waiting.join(", ")
                        ),
                        1,
                    );
                }
                false
            }
        }
    }
}

/// Load the shared libraries the program names, from where the program
/// itself would take them, before any rank runs: their initializers run
/// once, in the host (C++'s `std::cout`, set up by libstdc++, then writes
/// through C's `stdout`, which routes each rank's output to it), and every
/// copy of the program then finds them loaded.
///
/// The Fortran runtime buffers its standard units for the whole process
/// when they are not terminals, and would write one rank's lines as
/// another's (or at `exit`, as nobody's): before it loads, its
/// `GFORTRAN_UNBUFFERED_PRECONNECTED` is set (unless the user set it), so
/// each `WRITE` to them reaches the rank's output as the rank runs.
fn preload(program: &program::Loadable) -> Result<(), LaunchError> {
    for (name, path) in &program.needed {
        if name.starts_with("libgfortran") && std::env::var_os("GFORTRAN_UNBUFFERED_PRECONNECTED").is_none() {
            std::env::set_var("GFORTRAN_UNBUFFERED_PRECONNECTED", "y");
        }
        let target = path.as_ref().map_or_else(|| name.clone(), |p| p.display().to_string());
        let c = CString::new(target.clone()).map_err(|_| LaunchError::Usage(format!("{target}: a NUL in the name")))?;
        // SAFETY: a NUL-terminated name; the library is one the program
        // links, loaded for good (never closed).
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if h.is_null() {
            let why = host::dl_error();
            return Err(LaunchError::Spawn {
                rank: 0,
                program: program.path.display().to_string(),
                reason: format!("cannot load {name}, which it links: {why}"),
            });
        }
    }
    Ok(())
}

/// The whole environment of rank `rank`: `dnrun`'s, with `extra` on top.
fn environment(extra: Vec<(OsString, OsString)>) -> Vec<CString> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in extra {
        match env.iter_mut().find(|(ek, _)| *ek == k) {
            Some(e) => e.1 = v,
            None => env.push((k, v)),
        }
    }
    env.into_iter()
        .filter_map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv).ok()
        })
        .collect()
}

/// Run a job whose ranks are contexts of this process, to its end.
pub(crate) fn run_job(job: ContextJob<'_>) -> Result<JobReport, LaunchError> {
    let opts = job.opts;
    let np = opts.np;
    let start = Instant::now();
    // The model, here instead of a `dimmnet-sim serve` process.
    let profile = hw_model::HostProfile::load(&opts.profile).map_err(|e| LaunchError::Simulator(e.to_string()))?;
    let mut cfg = hw_model::ClusterConfig::new(job.sim_dir.clone(), opts.nodes, job.slots as u16);
    cfg.profile = profile;
    cfg.trace = opts.trace.clone();
    cfg.trace_meta = vec![("rank_mode".into(), "contexts".into())];
    cfg.expected_actors = np;
    cfg.partition_size = opts
        .partition_mib
        .checked_mul(1 << 20)
        .ok_or_else(|| LaunchError::Usage("--partition-mib is too large".into()))?;
    if let Some(l) = adi::knobs::choice("DN_SIM_LOOKAHEAD").map_err(|e| LaunchError::Usage(e.to_string()))? {
        cfg.lookahead = l;
    }
    let mut cluster = hw_model::Cluster::create(cfg).map_err(|e| LaunchError::Simulator(e.to_string()))?;

    // Where the copies go: the job directory, unless it is on a file
    // system that forbids executing what it holds.
    let copies = if exec_allowed(job.dir) {
        job.dir.join("ranks")
    } else {
        std::env::temp_dir().join(format!("{}-ranks", job.dir.file_name().unwrap_or_default().to_string_lossy()))
    };
    let _remove_copies = RemoveDir(copies.clone());
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&copies)
            .map_err(|e| LaunchError::Io(format!("cannot create {}: {e}", copies.display())))?;
    }
    let argv0 = CString::new(job.argv0.as_os_str().as_encoded_bytes())
        .map_err(|_| LaunchError::Usage("a NUL in the program's name".into()))?;
    let args: Vec<CString> = opts
        .args
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| LaunchError::Usage("a NUL in the program's arguments".into()))?;
    let mut specs = Vec::with_capacity(np as usize);
    for r in 0..np {
        let copy = job.program.copy_for(r, &copies).map_err(|e| LaunchError::Spawn {
            rank: r,
            program: job.program.path.display().to_string(),
            reason: format!("cannot write its copy into {}: {e}", copies.display()),
        })?;
        let argv = std::iter::once(argv0.clone()).chain(args.iter().cloned()).collect();
        specs.push(host::RankSpec { copy, argv, env: environment((job.env_of)(r)) });
    }
    preload(job.program)?;
    emulate::route_stdio().map_err(|e| LaunchError::Io(format!("cannot route the ranks' output: {e}")))?;
    emulate::catch_faults().map_err(|e| LaunchError::Io(format!("cannot catch the ranks' faults: {e}")))?;
    // A rank reads nothing from the launcher's input, as a process started
    // with its input closed.
    redirect_stdin();
    host::install(specs, job.program.main_offset, opts.tag_output, stack_size());
    if opts.verbose {
        eprintln!(
            "dnrun: {np} ranks run as contexts of this process (--rank-mode contexts), each with a stack of {} KiB",
            stack_size() >> 10
        );
    }

    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        stopped: Mutex::new(None),
        ended: (0..np).map(|_| AtomicBool::new(false)).collect(),
        done: AtomicBool::new(false),
    });
    let watchdog = spawn_watchdog(shared.clone(), opts.timeout, job.interrupted.clone(), job.dir.to_path_buf());
    let _progress = crate::progress::Progress::start(&job.sim_dir, np, opts.quiet);
    let mut driver = Driver {
        shared: &shared,
        finalized_dir: job.dir.join("job"),
        codes: vec![None; np as usize],
        timing: opts.verbose,
        in_ranks: Duration::ZERO,
    };
    let run = cluster.run_with(&shared.stop, Some(&mut driver));
    shared.done.store(true, Ordering::SeqCst);
    // What the ranks left unfinished on a line comes out, with a newline.
    host::with(|h| {
        for r in h.running() {
            h.output(r as usize, 0, &[], true);
            h.output(r as usize, 1, &[], true);
        }
    });
    host::uninstall();
    if let Some(w) = watchdog {
        let _ = w.join();
    }
    let report = run.and_then(|_| cluster.finish()).map_err(|e| LaunchError::Simulator(e.to_string()))?;
    let stopped = shared.stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let (codes, driver_ns) = (driver.codes, driver.in_ranks.as_nanos());
    if let Some((msg, _)) = &stopped {
        eprintln!("dnrun: {msg}");
        for (rank, c) in codes.iter().enumerate() {
            if let Some(c) = c.filter(|c| *c != 0) {
                eprintln!("dnrun:   rank {rank}: exit code {c}");
            }
        }
    }
    if opts.verbose || stopped.is_some() {
        // The line `dimmnet-sim serve` prints, as dnrun passes it on for processes.
        eprintln!("dnrun: dimmnet-sim: {}", report.summary());
        if opts.verbose {
            eprintln!(
                "dnrun: wall time {:.3} s, of which {:.3} s in the ranks (their code, and switching to them)",
                start.elapsed().as_secs_f64(),
                driver_ns as f64 * 1e-9
            );
        }
    }
    let exit_code = match &stopped {
        Some((_, c)) => (*c).max(1),
        None => codes.iter().map(|c| c.unwrap_or(1)).max().unwrap_or(0),
    };
    Ok(JobReport { codes, stopped: stopped.map(|(m, _)| m), exit_code })
}

/// Removes a directory when dropped.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Point descriptor 0 at `/dev/null`.
fn redirect_stdin() {
    // SAFETY: open and dup2 on descriptors this process owns; a failure
    // leaves descriptor 0 as it was.
    unsafe {
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::dup2(fd, 0);
            libc::close(fd);
        }
    }
}

/// A thread that ends the job on `--timeout` or an interrupt: it asks the
/// model to stop (checked between grants), and if a rank does not hand
/// over within a grace period (it computes, or waits outside MPI), it
/// ends `dnrun` itself, as `dnrun` kills rank processes.
fn spawn_watchdog(
    shared: Arc<Shared>,
    timeout: Option<Duration>,
    interrupted: Arc<AtomicBool>,
    dir: PathBuf,
) -> Option<std::thread::JoinHandle<()>> {
    let start = Instant::now();
    std::thread::Builder::new()
        .name("dnrun-watchdog".into())
        .spawn(move || {
            let mut since: Option<Instant> = None;
            while !shared.done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
                if since.is_none() {
                    if interrupted.load(Ordering::SeqCst) {
                        shared.stop("interrupted; stopping the job".into(), 130);
                    } else if let Some(t) = timeout.filter(|t| start.elapsed() > *t) {
                        let list: Vec<String> = shared.running().iter().map(u32::to_string).collect();
                        shared.stop(
                            format!(
                                "the job exceeded --timeout {} s; rank(s) {} were still running; stopping them",
                                t.as_secs(),
                                list.join(", ")
                            ),
                            124,
                        );
                    }
                    if shared.stop.load(Ordering::SeqCst) {
                        since = Some(Instant::now());
                    }
                }
                if since.is_some_and(|s| s.elapsed() > Duration::from_secs(2)) && !shared.done.load(Ordering::SeqCst) {
                    let (msg, code) = shared
                        .stopped
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .clone()
                        .unwrap_or_else(|| ("stopping the job".into(), 1));
                    eprintln!("dnrun: {msg}");
                    eprintln!(
                        "dnrun: a rank does not hand over to the simulator (it computes, or waits outside MPI); ending dnrun"
                    );
                    let _ = std::fs::remove_dir_all(&dir);
                    // SAFETY: ends the process at once by the system call;
                    // nothing of it is used after.
                    unsafe { libc::syscall(libc::SYS_exit_group, code) };
                }
            }
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::mapping_verdict;

    /// `DN_RANK_MODE` and `--rank-mode` take the same words, and they are
    /// the enum's.
    #[test]
    fn the_rank_modes_words_are_the_declarations_and_the_options() {
        use super::RankMode;
        assert!(adi::knobs::words_match::<RankMode>("DN_RANK_MODE"));
        for (word, mode) in <RankMode as adi::knobs::Choice>::CHOICES {
            assert_eq!(<RankMode as clap::ValueEnum>::from_str(word, false), Ok(*mode));
        }
    }

    #[test]
    fn a_job_past_the_mapping_limit_is_refused_with_the_largest_that_fits_and_the_fix() {
        assert_eq!(mapping_verdict(6_000, 9, 3_000, 65_530), Ok(()));
        let why = mapping_verdict(10_000, 9, 3_000, 65_530).unwrap_err();
        assert_eq!((why.need, why.fit, why.suggest), (93_000, 6_947, 131_072));
        let why = why.to_string();
        assert!(why.contains("93000 memory mappings"), "{why}");
        assert!(why.contains("at most 6947 ranks fit"), "{why}");
        assert!(why.contains("sysctl -w vm.max_map_count=131072"), "{why}");
        // A limit below what the process already holds: nothing fits.
        assert_eq!(mapping_verdict(1, 9, 70_000, 65_530).unwrap_err().fit, 0);
    }
}
