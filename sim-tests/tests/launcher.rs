//! `dnrun` as a process supervisor (issue 7): a refused command line
//! starts nothing and leaves nothing, and `kill -9 dnrun` takes the
//! simulator, the ranks and the job's /dev/shm directory with it.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sim_tests::{bin_dir, ensure_binaries, marked_processes};

/// A value no other process on the host carries in its environment.
fn marker(tag: &str) -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{tag}-{}-{t}", std::process::id())
}

fn job_dirs_of(pid: u32) -> Vec<PathBuf> {
    sim_tests::leftover_job_dirs(pid)
}

/// Poll `f` until it holds (a liveness bound, not a timing assertion).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn dnrun_cmd(marker: &str, args: &[&str]) -> Command {
    ensure_binaries();
    let dir = bin_dir();
    let mut c = Command::new(dir.join("dnrun"));
    c.args(args)
        .env("DN_SIM_BIN", dir.join("dimmnet-sim"))
        .env("DN_TEST_MARKER", marker)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

#[test]
fn refused_command_lines_start_nothing_and_leave_nothing() {
    let suite = bin_dir().join("mpi-suite");
    let suite = suite.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["-n", "2", "--ranks", "0-1", "--", suite, "pingpong"],
            "--ranks is for --backend udp or dpdk; a job on sim does not take it",
        ),
        (vec!["-n", "2", "--backend", "udp", "--ranks", "5", "--", suite, "pingpong"], "names rank 5"),
        (vec!["-n", "4", "--backend", "udp", "--ranks", "3-1", "--", suite, "pingpong"], "\"3-1\" is an empty range"),
        (vec!["-n", "4", "--backend", "udp", "--ranks", "0-2,1", "--", suite, "pingpong"], "rank 1 is listed twice"),
        (vec!["-n", "0", "--", suite, "pingpong"], "-n must be at least 1"),
        (vec!["-n", "40", "--", suite, "pingpong"], "at most 16"),
        (vec!["-n", "2", "--", "/nonexistent/program"], "does not exist"),
        (vec!["-n", "2", "--", "no-such-program-on-path-xyz"], "not found on PATH"),
        (vec!["-n", "2", "-x", "=v", "--", suite, "pingpong"], "KEY=VALUE"),
        (vec!["-n", "2", "--backend", "udp", "--hostfile", "/nonexistent", "--", suite, "pingpong"], "--hostfile"),
        (vec!["-n", "1025", "--backend", "udp", "--", suite, "pingpong"], "more than dnrun starts as processes (1024)"),
        (vec!["-n", "1100", "--nodes", "100", "--", suite, "pingpong"], "as contexts (up to 16384 ranks)"),
        (vec!["-n", "17000", "--nodes", "17000", "--", suite, "pingpong"], "at most 16384 (put more ranks on a node"),
        (
            vec!["-n", "16385", "--nodes", "1100", "--", suite, "pingpong"],
            "16500 slots; the simulated fabric has at most 16384",
        ),
    ];
    for (args, expect) in cases {
        let m = marker("refused");
        let child = dnrun_cmd(&m, &args).spawn().unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} was not refused: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: expected {expect:?} in: {stderr}");
        assert_eq!(marked_processes(&m), Vec::<u32>::new(), "{args:?} left processes running");
        assert_eq!(job_dirs_of(pid), Vec::<PathBuf>::new(), "{args:?} left files in /dev/shm");
    }
}

#[test]
fn kill_9_of_dnrun_leaves_no_process_and_no_file() {
    for backend in ["sim", "udp"] {
        let m = marker(&format!("kill9-{backend}"));
        // Ranks that never attach: the simulator waits for them for ever.
        let mut child =
            dnrun_cmd(&m, &["-n", "2", "--nodes", "2", "--backend", backend, "--", "sleep", "600"]).spawn().unwrap();
        let pid = child.id();
        let expect = if backend == "sim" { 4 } else { 3 }; // reaper, (simulator,) two ranks
        eventually("dnrun started its children", || marked_processes(&m).len() > expect);
        assert_eq!(job_dirs_of(pid).len(), 1, "the job directory exists while the job runs");
        assert!(Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success());
        let _ = child.wait();
        eventually(&format!("{backend}: every process of the job is gone"), || marked_processes(&m).is_empty());
        eventually(&format!("{backend}: the job directory is gone"), || job_dirs_of(pid).is_empty());
    }
}

/// Marked processes whose command line holds `arg`.
fn marked_with_arg(marker: &str, arg: &str) -> Vec<u32> {
    marked_processes(marker)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        })
        .collect()
}

/// DPDK polling processes (`--dpdk-poller node`) are children like the
/// simulator: one that dies stops the job with its node named; a rank that
/// fails takes them down; `kill -9 dnrun` leaves none behind.
#[test]
fn dpdk_pollers_are_supervised_like_the_ranks() {
    if !sim_tests::dpdk_or_skip("dpdk_pollers_are_supervised_like_the_ranks") {
        return;
    }
    let poller = mpi_tools::launcher::POLLER_ARG;
    let job = ["-n", "3", "--nodes", "2", "--backend", "dpdk", "--dpdk-poller", "node", "--"];

    // A poller killed while the ranks run.
    let m = marker("poller-dies");
    let child = dnrun_cmd(&m, &[&job[..], &["sleep", "600"]].concat()).spawn().unwrap();
    let pid = child.id();
    eventually("two pollers started", || marked_with_arg(&m, poller).len() == 2);
    let victim = marked_with_arg(&m, poller).into_iter().max().unwrap();
    assert!(Command::new("kill").args(["-9", &victim.to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the DPDK polling process of node") && stderr.contains("stopping the job"), "{stderr}");
    eventually("every process of the job is gone", || marked_processes(&m).is_empty());
    eventually("the job directory is gone", || job_dirs_of(pid).is_empty());

    // A rank that fails.
    let m = marker("rank-fails");
    let child = dnrun_cmd(&m, &[&job[..], &["sh", "-c", "sleep 0.5; exit 3"]].concat()).spawn().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    eventually("the pollers are gone after a rank failed", || marked_processes(&m).is_empty());

    // kill -9 of the launcher.
    let m = marker("kill9-pollers");
    let mut child = dnrun_cmd(&m, &[&job[..], &["sleep", "600"]].concat()).spawn().unwrap();
    eventually("two pollers started", || marked_with_arg(&m, poller).len() == 2);
    assert!(Command::new("kill").args(["-9", &child.id().to_string()]).status().unwrap().success());
    let _ = child.wait();
    eventually("the pollers are gone after kill -9 of dnrun", || marked_processes(&m).is_empty());
}

#[test]
fn dpdk_poller_misuse_is_refused() {
    let suite = bin_dir().join("mpi-suite");
    let suite = suite.to_str().unwrap();
    for (args, expect) in [
        (vec!["-n", "2", "--dpdk-poller", "node", "--", suite, "pingpong"], "--dpdk-poller is for --backend dpdk"),
        (vec!["-n", "2", "--dpdk-poller", "sometimes", "--", suite, "pingpong"], "invalid value"),
    ] {
        let out = dnrun_cmd(&marker("poller-misuse"), &args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: expected {expect:?} in {stderr}");
    }
    if sim_tests::dpdk_or_skip("the --dpdk-poller misuse cases") {
        let args = ["-n", "2", "--ranks", "0", "--backend", "dpdk", "--dpdk-vdev", "net_af_packet0,iface=lo"];
        let out = dnrun_cmd(&marker("poller-misuse"), &[&args[..], &["--dpdk-poller", "node", "--", suite]].concat())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--dpdk-poller node is for memif"), "{stderr}");
        // More ports than the EAL allows (issue 30: hundreds of EAL lines
        // from inside MPI_Init): refused up front, the limit named, and
        // nothing started.
        let max = dpdk_sys::max_ports().unwrap();
        let too_many = (max + 8).to_string();
        for (extra, expect) in [
            (&[][..], "use --dpdk-poller node"),
            (&["--dpdk-poller", "node"][..], "spread the ranks over more --nodes"),
        ] {
            let m = marker("too-many-ports");
            let args = [&["-n", &too_many, "--backend", "dpdk"][..], extra, &["--", suite, "pingpong"]].concat();
            let out = dnrun_cmd(&m, &args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(&format!("allows {max} per process")) && stderr.contains(expect), "{stderr}");
            assert!(marked_processes(&m).is_empty(), "a refused job started processes");
        }
    }
}

/// Issue 30: a job's directory and files are its owner's alone, created so
/// (the jobs run under umask 000, which would leave anything not created
/// with its mode world-readable), on every backend; the memif sockets are
/// files in that directory, so two DPDK jobs with the same `--job-id` do
/// not clash.
#[test]
fn job_files_are_the_owners_alone() {
    ensure_binaries();
    let dir = bin_dir();
    let mut cases: Vec<(&str, Vec<&str>)> = vec![("sim", vec!["--nodes", "2"]), ("udp", vec!["-x", "DN_UDP_AUTH=1"])];
    if sim_tests::dpdk_or_skip("job_files_are_the_owners_alone (dpdk)") {
        cases.push(("dpdk", vec!["--job-id", "7"]));
        cases.push(("dpdk", vec!["--job-id", "7", "--dpdk-poller", "node", "--nodes", "2"]));
    }
    for (backend, flags) in cases {
        let out = Command::new("sh")
            .arg("-c")
            .arg("umask 000; exec \"$0\" \"$@\"")
            .arg(dir.join("dnrun"))
            .args(["-n", "3", "--timeout", "120", "--backend", backend])
            .args(&flags)
            .arg("--")
            .arg(dir.join("mpi-suite"))
            .arg("private-files")
            .env("DN_SIM_BIN", dir.join("dimmnet-sim"))
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(
            out.status.success() && stdout.contains("OK private-files"),
            "{backend} {flags:?}:\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
        eprintln!("{backend} {flags:?}: {}", stdout.lines().find(|l| l.starts_with("private-files")).unwrap_or(""));
    }
}

/// Two DPDK jobs with the same `--job-id` at once: both complete (their
/// memif sockets live in their own job directories).
#[test]
fn two_dpdk_jobs_with_one_job_id_both_run() {
    if !sim_tests::dpdk_or_skip("two_dpdk_jobs_with_one_job_id_both_run") {
        return;
    }
    let start = || {
        sim_tests::dnrun_command(2, 1, &["--backend", "dpdk", "--job-id", "7"], "mpi-suite", &["rndv-large"])
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    for (name, child) in [("first", a), ("second", b)] {
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && stdout.contains("OK rndv-large"), "{name} job:\n{stdout}\n{stderr}");
    }
}

/// Issue 30: a rank started by a PMI process manager ends when the manager
/// goes away before `MPI_Finalize` (a killed `mpiexec.hydra` whose ranks
/// were not killed with it) instead of running on alone. The manager here
/// is a minimal PMI-1 server over `PMI_PORT` that hangs up once the
/// one-rank job is blocked in a receive nobody will satisfy.
#[test]
fn a_rank_ends_when_its_process_manager_hangs_up() {
    use std::io::{BufRead, BufReader, Write};
    ensure_binaries();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().to_string();
    let mut rank = Command::new(bin_dir().join("mpi-suite"))
        .arg("stuck")
        .env("PMI_PORT", &port)
        .env("PMI_ID", "0")
        .env_remove("DN_RANK")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (conn, _) = listener.accept().unwrap();
    let hangup = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut w = conn;
    let mut kv = std::collections::HashMap::new();
    let mut out = BufReader::new(rank.stdout.take().unwrap());
    let serve = std::thread::spawn(move || loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let words = adi::pmi::words(&line);
        let arg = |k: &str| words.get(k).cloned().unwrap_or_default();
        let reply = match arg("cmd").as_str() {
            "initack" => "cmd=initack\ncmd=set size=1\ncmd=set rank=0\ncmd=set debug=0".to_string(),
            "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into(),
            "get_maxes" => "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024".into(),
            "get_my_kvsname" => "cmd=my_kvsname kvsname=kvs_test".into(),
            "get_universe_size" => "cmd=universe_size size=1 rc=0".into(),
            "get_appnum" => "cmd=appnum appnum=0".into(),
            "put" => {
                kv.insert(arg("key"), arg("value"));
                "cmd=put_result rc=0".into()
            }
            "barrier_in" => "cmd=barrier_out".into(),
            "get" => match kv.get(&arg("key")) {
                Some(v) => format!("cmd=get_result rc=0 value={v}"),
                None => "cmd=get_result rc=-1".into(),
            },
            other => format!("cmd={other}_result rc=-1"),
        };
        if writeln!(w, "{reply}").is_err() {
            return;
        }
    });
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    if !line.contains("stuck: rank 0 waiting") {
        let _ = rank.kill();
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(rank.stderr.as_mut().unwrap(), &mut err);
        panic!("the rank did not start: {line:?}\n{err}");
    }
    // The manager goes away: its side of the connection closes.
    hangup.shutdown(std::net::Shutdown::Both).unwrap();
    serve.join().unwrap();
    let status = {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(st) = rank.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = rank.kill();
                panic!("the rank outlived its process manager by 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut err = String::new();
    std::io::Read::read_to_string(rank.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!status.success() && err.contains("closed its connection before MPI_Finalize"), "{status}: {err}");
}

/// Issue 47, break 12: with `/dev/shm` too small for the simulator's
/// files, the job is refused at start with the sizes and what to do — it
/// used to start, and the simulator died of SIGBUS at the first touch of a
/// page tmpfs could not give, with nothing said. A small tmpfs is mounted
/// over `/dev/shm` in a private mount namespace (`unshare -m`); where that
/// is not permitted the test says it was not run.
#[test]
fn a_full_dev_shm_is_named_not_a_sigbus() {
    ensure_binaries();
    let dnrun = bin_dir().join("dnrun");
    let suite = bin_dir().join("mpi-suite");
    let script = format!(
        "mount -t tmpfs -o size=2m none /dev/shm || exit 99; exec {} -n 4 --nodes 4 -q -- {} pingpong",
        dnrun.display(),
        suite.display()
    );
    let o = match Command::new("unshare").args(["-m", "sh", "-c", &script]).output() {
        Ok(o) if o.status.code() != Some(99) && !String::from_utf8_lossy(&o.stderr).contains("unshare failed") => o,
        _ => {
            eprintln!("SKIPPED a_full_dev_shm_is_named_not_a_sigbus: cannot mount a tmpfs in a private namespace here");
            return;
        }
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("no room for the simulator's files") && err.contains("df -h /dev/shm"), "{err}");
    assert!(!err.contains("SIGBUS"), "{err}");
}
