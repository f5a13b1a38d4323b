//! Supervision of the processes a job starts: a guard that stops each one
//! on every error path, the parent-death signal, how an exit is described,
//! and the reaper that cleans up after a `dnrun` killed with SIGKILL.

use super::*;

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        _ => "signal",
    }
}

pub(super) fn describe(rank: u32, st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("rank {rank} exited with code {c}"),
        (None, Some(s)) => format!("rank {rank} was killed by signal {s} ({})", signal_name(s)),
        _ => format!("rank {rank} ended abnormally"),
    }
}

pub(super) fn code_of(st: ExitStatus) -> i32 {
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

/// Kill a child's whole process group: SIGTERM, then SIGKILL after a grace period.
pub(super) fn terminate(children: &mut [Option<Child>], grace: Duration) {
    for c in children.iter().flatten() {
        // SAFETY: kill(2) on the child's process group (negative pid); the
        // group exists because we created it with process_group(0).
        unsafe { libc::kill(-(c.id() as i32), libc::SIGTERM) };
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && children.iter_mut().flatten().any(|c| matches!(c.try_wait(), Ok(None))) {
        std::thread::sleep(Duration::from_millis(10));
    }
    for c in children.iter_mut().flatten() {
        if matches!(c.try_wait(), Ok(None)) {
            // SAFETY: as above, SIGKILL to the child's process group.
            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
            let _ = c.wait();
        }
    }
}

/// A child process that is stopped (its whole process group) and reaped
/// when the guard is dropped, on every error path.
pub(super) struct Guard(pub(super) Option<Child>);

impl Guard {
    pub(super) fn get(&mut self) -> Option<&mut Child> {
        self.0.as_mut()
    }

    /// Hand the child over: the guard no longer stops it.
    pub(super) fn take(&mut self) -> Option<Child> {
        self.0.take()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.is_some() {
            terminate(std::slice::from_mut(&mut self.0), Duration::from_millis(500));
        }
    }
}

/// Run `child` in its own process group, and have the kernel send it `sig`
/// when the launcher dies (`PR_SET_PDEATHSIG`), so that `kill -9 dnrun`
/// does not leave it running.
pub(super) fn supervised(cmd: &mut Command, sig: libc::c_int) {
    let parent = std::process::id() as libc::pid_t;
    cmd.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: prctl, getppid and _exit
    // are plain system calls that allocate nothing and take no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The launcher may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(125);
            }
            Ok(())
        });
    }
}

/// The argument that makes `dnrun` act as the job's reaper.
pub const REAPER_ARG: &str = "__dnrun-reaper";
/// `dnrun __dnrun-dpdk-poller JOB NODE NP NODES DIR [STARTED]`: run the
/// DPDK polling process of one node ([`run_dpdk_poller`]); NP is the
/// universe, STARTED (default NP) the ranks the job starts with.
pub const POLLER_ARG: &str = "__dnrun-dpdk-poller";

/// The DPDK polling process of a node, as `dnrun` starts it: serve until
/// SIGTERM, then print what it did when `DN_STATS` is set. Returns the
/// exit code.
pub fn run_dpdk_poller(args: &[std::ffi::OsString], stop: &AtomicBool) -> i32 {
    use adi::backend::dpdk::poller;
    let n = |i: usize| args.get(i)?.to_str()?.parse::<u32>().ok();
    let parsed: Option<(u32, u32, u32, u32)> = (|| Some((n(0)?, n(1)?, n(2)?, n(3)?)))();
    let started = match args.get(5) {
        None => parsed.map(|p| p.2),
        Some(_) => n(5),
    };
    let (Some((job, node, np, nodes)), Some(dir), Some(started)) = (parsed, args.get(4), started) else {
        eprintln!("dnrun: {POLLER_ARG} takes JOB NODE NP NODES DIR [STARTED] (dnrun starts it; see --dpdk-poller)");
        return 2;
    };
    let result = poller::PollerOptions::from_env(job, node, np, nodes, PathBuf::from(dir))
        .and_then(|o| poller::run(&o.starting_with(started), stop));
    match result {
        Ok(stats) => {
            // DN_STATS=1, as the ranks read it (adi::config).
            if adi::config::stats_wanted() {
                // One write, so that two pollers' lines do not interleave.
                let line = format!("dnrun: DPDK poller of node {node}: {stats}\n");
                let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            }
            0
        }
        Err(e) => {
            eprintln!("dnrun: the DPDK polling process of node {node}: {e}");
            1
        }
    }
}

/// The reaper: read `pgid N` lines from stdin until `done` or end of file.
/// At end of file without `done` the launcher died: kill every process
/// group it named and remove the job directory `dir` (only a `dnrun-*`
/// directory, so a stray invocation cannot remove anything else).
pub fn reap(dir: &Path) -> i32 {
    // SAFETY: setting signal dispositions to SIG_IGN at start-up, before
    // any thread exists; a terminal hang-up or Ctrl-C must not stop the
    // reaper before it has done its work.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    let mut groups = Vec::new();
    let mut done = false;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line == "done" {
            done = true;
            break;
        }
        if let Some(pg) = line.strip_prefix("pgid ").and_then(|p| p.parse::<libc::pid_t>().ok()) {
            if pg > 1 {
                groups.push(pg);
            }
        }
    }
    if !done {
        for pg in &groups {
            // SAFETY: kill(2) on a process group the launcher created; no memory involved.
            unsafe { libc::kill(-pg, libc::SIGKILL) };
        }
    }
    let is_job_dir = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("dnrun-"));
    if is_job_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    0
}

/// The launcher's line to its reaper (absent when there is none).
pub(super) struct Reaper(Option<(Child, std::process::ChildStdin)>);

impl Reaper {
    pub(super) fn start(program: Option<&Path>, dir: &Path) -> Reaper {
        let Some(program) = program else { return Reaper(None) };
        let mut cmd = Command::new(program);
        cmd.arg(REAPER_ARG).arg(dir).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
        match cmd.spawn() {
            Ok(mut c) => match c.stdin.take() {
                Some(i) => Reaper(Some((c, i))),
                None => Reaper(None),
            },
            Err(e) => {
                eprintln!("dnrun: warning: cannot start the reaper ({e}); kill -9 of dnrun would leave the job behind");
                Reaper(None)
            }
        }
    }

    pub(super) fn watch(&mut self, pgid: u32) {
        if let Some((_, i)) = self.0.as_mut() {
            let _ = writeln!(i, "pgid {pgid}");
            let _ = i.flush();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some((mut c, mut i)) = self.0.take() {
            let _ = writeln!(i, "done");
            drop(i);
            let _ = c.wait();
        }
    }
}
