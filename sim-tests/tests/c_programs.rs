//! Unmodified C MPI programs (issue 11): compiled once with our `mpicc`
//! against the standard-ABI `mpi.h`, then run under `dnrun` on the
//! simulated DIMMnet-2, over UDP and over DPDK with the same binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sim_tests::{bin_dir, build_c as build, dnrun, ensure_binaries, repo};

fn c_basic() -> &'static Path {
    static B: OnceLock<PathBuf> = OnceLock::new();
    B.get_or_init(|| build("basic"))
}

fn run(np: u32, nodes: u16, extra: &[&str], prog: &Path) -> (bool, String) {
    run_with(np, nodes, extra, prog, &[])
}

/// [`run`] with arguments for the program: whether it succeeded, and its
/// output and errors.
fn run_with(np: u32, nodes: u16, extra: &[&str], prog: &Path, args: &[&str]) -> (bool, String) {
    let out = dnrun(np, nodes, extra, prog.to_str().unwrap(), args);
    (out.status.success(), output_text(&out))
}

/// A job's output and errors, one after the other.
fn output_text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The `dnrun` flags of each backend a program runs on here, each with a
/// `--timeout` (the simulator, UDP, and DPDK when this build has it).
fn every_backend(what: &str) -> Vec<Vec<&'static str>> {
    let mut b = vec![vec!["--timeout", "60"], vec!["--backend", "udp", "--timeout", "60"]];
    if sim_tests::dpdk_or_skip(what) {
        b.push(vec!["--backend", "dpdk", "--timeout", "60"]);
    }
    b
}

fn basic_ok(np: u32, nodes: u16, extra: &[&str]) {
    let (ok, text) = run(np, nodes, extra, c_basic());
    assert!(ok && text.contains(&format!("OK c-basic on {np} ranks")), "c-basic on {np} ranks {extra:?}:\n{text}");
}

#[test]
fn a_c_program_runs_on_the_simulator_with_odd_and_even_rank_counts() {
    for (np, nodes) in [(1, 1), (2, 2), (3, 3), (5, 2), (8, 4)] {
        basic_ok(np, nodes, &[]);
    }
}

/// The ABI claim: the binary built once runs on every backend.
#[test]
fn the_same_binary_runs_over_udp_and_dpdk() {
    basic_ok(2, 1, &["--backend", "udp"]);
    basic_ok(3, 1, &["--backend", "udp"]);
    if sim_tests::dpdk_or_skip("the_same_binary_runs_over_udp_and_dpdk (its DPDK part)") {
        basic_ok(3, 1, &["--backend", "dpdk"]);
    }
}

/// MPI_ERRORS_ARE_FATAL by default: the job ends, naming the rank and the call.
#[test]
fn an_error_under_the_default_handler_ends_the_job_naming_rank_and_call() {
    let (ok, text) = run(2, 1, &[], &build("fatal"));
    assert!(!ok, "the job succeeded:\n{text}");
    assert!(text.contains("rank 1 in MPI_Send") && text.contains("rank 99"), "{text}");
    assert!(!text.contains("not reached"), "{text}");
}

/// Two threads in MPI at once under `MPI_THREAD_SERIALIZED` end the job
/// with a message instead of hanging, on every backend (issue 30: UDP and
/// DPDK hung until `--timeout`); threads that take turns are served
/// (sim-tests/c/threads.c).
#[test]
fn two_threads_in_mpi_at_once_end_the_job_saying_so() {
    let prog = build("threads");
    for extra in every_backend("two_threads_in_mpi_at_once (dpdk)") {
        let (ok, text) = run(2, 1, &extra, &prog);
        // On the simulator the blocked receive may be found a deadlock
        // first (simulated time runs while the other thread sleeps): an
        // error that ends the job too.
        let on_sim = !extra.contains(&"--backend");
        let said = text.contains("two threads called MPI at the same time")
            || (on_sim && text.contains("no progress is possible: deadlock"));
        assert!(!ok && said && !text.contains("timed out"), "{extra:?}:\n{text}");
        let (ok, text) = run_with(2, 1, &extra, &prog, &["serial"]);
        assert!(ok && text.contains("OK threads on 2 ranks: got 41"), "serial {extra:?}:\n{text}");
    }
}

/// `MPI_Abort(code)` never reads as success (issue 30): the job's status
/// is the code's low byte, and 1 where that byte is 0 (256, 0), on one
/// rank and on several.
#[test]
fn an_abort_never_exits_zero() {
    let prog = build("fatal");
    for (np, code, want) in [(1, "256", 1), (2, "256", 1), (1, "0", 1), (2, "7", 7), (1, "-1", 255)] {
        let out = dnrun(np, 1, &[], prog.to_str().unwrap(), &["abort", code]);
        let text = output_text(&out);
        assert_eq!(out.status.code(), Some(want), "MPI_Abort({code}) on {np} ranks:\n{text}");
    }
}

/// A user-defined operation that calls MPI ends the job with a message
/// instead of deadlocking on the library's lock.
#[test]
fn mpi_called_inside_a_user_operation_ends_the_job() {
    let (ok, text) = run(2, 1, &[], &build("reenter"));
    assert!(!ok, "the job succeeded:\n{text}");
    assert!(text.contains("a user-defined reduction operation, §6.9.5"), "{text}");
    assert!(!text.contains("not reached"), "{text}");
}

/// Every function the header declares is in the library (a program that
/// takes each one's address links), and nothing undeclared is exported
/// under an MPI_ name.
#[test]
fn every_declared_function_is_exported_and_nothing_else() {
    let names: Vec<&str> = mpi_abi::abi::FUNCTIONS
        .iter()
        .map(|f| f.split('(').next().unwrap().rsplit(' ').next().unwrap().trim_start_matches('*'))
        .collect();
    let mut src = String::from("#include <mpi.h>\n#include <stdio.h>\nint main(void) {\n    void *f[] = {\n");
    for n in &names {
        src += &format!("        (void *){n},\n");
    }
    src += "    };\n    printf(\"%zu\\n\", sizeof f / sizeof f[0]);\n    return 0;\n}\n";
    let dir = bin_dir().join("c-exports");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("all.c"), src).unwrap();
    let exe = dir.join("all");
    let o = Command::new(sim_tests::c_prefix().join("bin/mpicc"))
        .args(["-std=c99", "-pedantic", "-Wall", "-o"])
        .arg(&exe)
        .arg(dir.join("all.c"))
        .output()
        .expect("run mpicc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(&exe).output().expect("run the program");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), names.len().to_string());
    let nm =
        Command::new("nm").args(["-D", "--defined-only"]).arg(sim_tests::c_prefix().join("lib/libmpi_abi.so")).output();
    if let Ok(nm) = nm {
        let text = String::from_utf8_lossy(&nm.stdout);
        let exported: Vec<&str> =
            text.lines().filter_map(|l| l.split_whitespace().nth(2)).filter(|s| s.starts_with("MPI_")).collect();
        for e in &exported {
            assert!(names.contains(e), "{e} is exported but not declared in mpi.h");
        }
        assert_eq!(exported.len(), names.len(), "{exported:?}");
    }
}

#[test]
fn mpicc_shows_its_command() {
    let o = Command::new(sim_tests::c_prefix().join("bin/mpicc")).arg("-show").output().expect("run mpicc");
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("/include") && s.contains("-lmpi_abi") && s.contains("rpath"), "{s}");
}

/// `mpiexec.hydra`, if this host has MPICH's (scripts/setup.sh installs it).
fn hydra() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/bin/mpiexec.hydra");
    p.is_file().then_some(p)
}

fn run_hydra(np: u32, prog: &Path, args: &[&str]) -> (bool, String) {
    let hydra = hydra().expect("hydra");
    let out = Command::new("timeout")
        .arg("120")
        .arg(hydra)
        .args(["-n", &np.to_string()])
        .arg(prog)
        .args(args)
        .output()
        .expect("run mpiexec.hydra");
    let text = output_text(&out);
    (out.status.success(), text)
}

/// A standard launcher nobody here wrote: MPICH's hydra starts the ranks
/// and they find each other through its PMI-1 key-value space, then talk
/// over UDP. The C program and a Rust MPI program alike, odd and even
/// rank counts.
#[test]
fn mpich_hydra_launches_our_programs_through_pmi_1() {
    if hydra().is_none() {
        eprintln!("no mpiexec.hydra on this host (scripts/setup.sh installs mpich): not run");
        return;
    }
    for np in [1, 2, 4] {
        let (ok, text) = run_hydra(np, c_basic(), &[]);
        assert!(ok && text.contains(&format!("OK c-basic on {np} ranks")), "hydra -n {np} c-basic:\n{text}");
    }
    ensure_binaries();
    let suite = bin_dir().join("mpi-suite");
    for (test, np) in [("allpairs", 3), ("collectives", 5)] {
        let (ok, text) = run_hydra(np, &suite, &[test]);
        assert!(ok && text.contains(&format!("OK {test} on {np} ranks (udp backend)")), "hydra {test}:\n{text}");
    }
    // An error under the default handler still names the rank and the call.
    let (ok, text) = run_hydra(2, &build("fatal"), &[]);
    assert!(!ok && text.contains("rank 1 in MPI_Send"), "{text}");
}

/// hydra across two "hosts" (network namespaces, a hosts file of their
/// addresses; `scripts/netns-hydra.sh`): the ranks on each host bind the
/// address the hosts file gives theirs, so the ones across the veth pair
/// reach each other. And the DPDK backend, which hydra cannot start,
/// says so.
#[test]
fn mpich_hydra_runs_one_job_across_two_network_namespaces() {
    if hydra().is_none() {
        eprintln!("no mpiexec.hydra on this host (scripts/setup.sh installs mpich): not run");
        return;
    }
    let out = Command::new(hydra().expect("hydra"))
        .args(["-n", "2", "-genv", "DN_BACKEND", "dpdk"])
        .arg(c_basic())
        .output()
        .expect("run mpiexec.hydra");
    let text = output_text(&out);
    assert!(!out.status.success() && text.contains("under a PMI launcher"), "DPDK under hydra:\n{text}");
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("/proc/self")) == 0;
    if !root {
        eprintln!("not root: network namespaces not tested");
        return;
    }
    ensure_binaries();
    let script = repo().join("scripts/netns-hydra.sh");
    let suite = bin_dir().join("mpi-suite");
    for (prog, np, args, want) in [
        (c_basic().to_path_buf(), "4", vec![], "OK c-basic on 4 ranks".to_string()),
        (c_basic().to_path_buf(), "3", vec![], "OK c-basic on 3 ranks".to_string()),
        (suite, "4", vec!["collectives"], "OK collectives on 4 ranks (udp backend)".to_string()),
    ] {
        let out = Command::new(&script).arg(&prog).arg(np).args(&args).output().expect("run netns-hydra.sh");
        let text = output_text(&out);
        assert!(out.status.success() && text.contains(&want), "netns-hydra {} {np} {args:?}:\n{text}", prog.display());
    }
}

/// The other direction: a program built against MPICH (its own
/// `mpicc.mpich`, its own library) runs under `dnrun`, which serves it
/// PMI-1 as hydra would — so one launcher starts our programs and theirs.
/// Odd and even rank counts, on either backend setting (MPICH ignores
/// ours); an `MPI_Abort` on rank 1 stops the job with its code.
#[test]
fn dnrun_serves_pmi_1_to_a_program_built_with_mpich() {
    let mpicc = PathBuf::from("/usr/bin/mpicc.mpich");
    if !mpicc.is_file() {
        eprintln!("no mpicc.mpich on this host (scripts/setup.sh installs mpich): not run");
        return;
    }
    let prog = bin_dir().join("c-foreign-mpich");
    let o = Command::new(&mpicc)
        .args(["-std=c11", "-Wall", "-Werror", "-O2", "-o"])
        .arg(&prog)
        .arg(repo().join("sim-tests/c/foreign.c"))
        .output()
        .expect("run mpicc.mpich");
    assert!(o.status.success(), "mpicc.mpich foreign.c failed:\n{}", String::from_utf8_lossy(&o.stderr));
    for (np, extra) in [(1, &["--backend", "udp"][..]), (3, &["--backend", "udp"][..]), (4, &[][..])] {
        let (ok, text) = run(np, 1, extra, &prog);
        assert!(ok && text.contains(&format!("OK foreign on {np} ranks")), "dnrun -n {np} {extra:?} foreign:\n{text}");
    }
    let out = dnrun(3, 1, &["--backend", "udp"], prog.to_str().unwrap(), &["abort"]);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(3), "MPI_Abort(3) on rank 1:\n{text}");
    assert!(text.contains("rank 1"), "the launcher names the aborting rank:\n{text}");
}

/// The C layer charges the simulated host what the Rust API charges: a C
/// ping-pong's 0-byte one-way latency on the simulated P4 is seed 004
/// Table 2's 5.12 us, as dnbench's is (simulated time is deterministic).
#[test]
fn a_c_ping_pong_keeps_the_papers_zero_byte_latency() {
    let (ok, text) = run(2, 2, &[], &build("pingpong"));
    let us: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("OK pingpong 0 B: ")?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no latency line:\n{text}"));
    assert!(ok && (us - 5.12).abs() < 0.02, "{us} us one way, Table 2 says 5.12:\n{text}");
}

/// Issue 30: a 128 MiB message of a vector type goes packed and unpacked
/// a chunk at a time, on every backend: the data lands in place, the gaps
/// untouched, and neither rank's peak memory grows by a quarter of the
/// message during the transfer (it grew by the whole message on each side
/// when it was packed and staged whole). A receive of half of it is
/// truncated without a byte written past it, and rank 0 sends the whole to
/// itself.
#[test]
fn a_large_message_of_a_derived_type_is_never_packed_whole() {
    let prog = build("bigtype");
    for b in every_backend("a 128 MiB vector over DPDK") {
        // Three ranks: the third takes no part in the transfers.
        let (ok, text) = run(3, 2, &b, &prog);
        assert!(ok && text.contains("OK bigtype"), "{b:?}:\n{text}");
        assert!(text.contains("memory: peak grew by"), "{b:?}: memory not measured:\n{text}");
    }
}

/// A receive left active at MPI_Finalize is cancelled with a warning
/// instead of hanging the job.
#[test]
fn finalize_with_a_receive_never_matched_does_not_hang() {
    let prog = build("leftover");
    let (ok, text) = run(2, 1, &["--timeout", "60"], &prog);
    assert!(ok && text.contains("OK leftover") && text.contains("1 requests still active"), "{text}");
    // Issue 30: rendezvous sends never received (one freed, one left
    // active) end too, with a warning naming each, on every backend.
    for b in every_backend("leftover sends over DPDK") {
        let (ok, text) = run_with(2, 1, &b, &prog, &["sends"]);
        assert!(ok && text.contains("OK leftover"), "{b:?}:\n{text}");
        for tag in [5, 6] {
            let warned =
                format!("dropped a message of 1048576 bytes from job rank 0 (tag {tag}) that was never received");
            assert!(text.contains(&warned), "{b:?}: no warning for tag {tag}:\n{text}");
        }
    }
}

/// Persistent requests, cancellation, attributes, names and non-blocking
/// collectives (sim-tests/c/more.c) on every backend and under hydra.
#[test]
fn persistent_requests_cancellation_attributes_and_nonblocking_collectives() {
    let prog = everywhere("more", &[(1, 1), (2, 2), (3, 3), (5, 2)]);
    if hydra().is_some() {
        let (ok, text) = run_hydra(3, &prog, &[]);
        assert!(ok && text.contains("OK c-more on 3 ranks"), "hydra c-more:\n{text}");
    }
}

/// Completion after an error (sim-tests/c/complete.c): a truncated
/// receive among others gives MPI_ERR_IN_STATUS with every status's
/// MPI_ERROR set and every handle freed, on every backend. (That the C
/// calls wait in one call is `mpi-suite one-call-waits`: they are the
/// Rust API's `settle`.)
#[test]
fn completion_after_an_error_frees_handles_and_reports_in_status() {
    everywhere("complete", &[(1, 1), (2, 2), (3, 3), (5, 2)]);
}

/// Build `sim-tests/c/<name>.c` and run it on the simulator at each
/// `(ranks, nodes)`, then on 3 ranks over UDP and DPDK; each run must
/// print "OK c-<name> on N ranks". The binary, for further runs.
fn everywhere(name: &str, sim: &[(u32, u16)]) -> PathBuf {
    let prog = build(name);
    let ok = |np: u32, nodes: u16, extra: &[&str]| {
        let (ok, text) = run(np, nodes, extra, &prog);
        let want = format!("OK c-{name} on {np} ranks");
        assert!(ok && text.contains(&want), "c-{name} on {np} {extra:?}:\n{text}");
    };
    for &(np, nodes) in sim {
        ok(np, nodes, &[]);
    }
    ok(3, 1, &["--backend", "udp"]);
    if sim_tests::dpdk_or_skip("a C program's DPDK run") {
        ok(3, 1, &["--backend", "dpdk"]);
    }
    prog
}

/// `MPI_THREAD_MULTIPLE` (sim-tests/c/multiple.c): a blocking receive
/// that only another thread's (late) send satisfies, two threads per rank
/// doing point-to-point and collectives on their own communicators, a
/// generalized request and partitions completed by other threads, two
/// threads per rank making communicators in opposite orders on
/// neighboring ranks (`MPI_Comm_create`, `_create_group`,
/// `_create_from_group`); on the
/// simulator at odd and even rank counts and 32 ranks, over UDP and DPDK.
/// A 0-byte ping-pong under `MPI_THREAD_MULTIPLE` from one thread keeps
/// simulated time exact: the same latency run after run.
#[test]
fn thread_multiple_blocking_calls_block_only_their_thread() {
    everywhere("multiple", &[(1, 1), (2, 2), (3, 3), (5, 2), (32, 8)]);
    let pp = build("pingpong");
    let lat = |_| {
        let (ok, text) = run_with(2, 2, &[], &pp, &["2000", "0", "multiple"]);
        assert!(ok, "{text}");
        text.lines()
            .find_map(|l| l.strip_prefix("OK pingpong 0 B: "))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no latency in:\n{text}"))
    };
    let (a, b) = (lat(0), lat(1));
    assert_eq!(a, b, "two runs of one MPI_THREAD_MULTIPLE ping-pong differ in simulated time");
    assert!(a.ends_with("(MPI_THREAD_MULTIPLE)"), "{a}");
}

/// Partitioned communication (sim-tests/c/partitioned.c): requests
/// paired in initialization order, partitions made ready piecewise,
/// `MPI_Parrived`, a strided receive, the errors.
#[test]
fn partitioned_communication() {
    let prog = everywhere("partitioned", &[(1, 1), (2, 2), (3, 3), (5, 2)]);
    // A send started with a partition never marked: finalize names it.
    let (ok, text) = run_with(2, 2, &[], &prog, &["unsent"]);
    let want = "1 started partitioned sends never went (not every partition was marked with MPI_Pready)";
    assert!(ok && text.matches(want).count() == 2, "{text}");
}

/// Handles are recycled (sim-tests/c/recycle.c): a million user-defined
/// operations, datatypes, communicators and requests made and freed, with
/// the resident set flat (within 2 MiB) from the 100,000th round on. The
/// communicator table kept a slot per communicator ever made (issue 47).
#[test]
fn freed_handles_leave_memory_flat() {
    let prog = build("recycle");
    for (np, nodes, rounds) in [(1, 1, "1000000"), (3, 3, "200000")] {
        let (ok, text) = run_with(np, nodes, &[], &prog, &[rounds]);
        assert!(ok && text.contains(&format!("OK c-recycle on {np} ranks ({rounds} rounds")), "{text}");
    }
}

/// Idle windows cost a message nothing (sim-tests/c/idle_windows.c): a
/// 0-byte ping-pong's simulated round trip is the same, to the picosecond,
/// with 10 and with 1,000 windows alive. Each window keeps a receive posted;
/// when all contexts shared one posted queue, 1,000 of them made it 30.23 us
/// instead of 10.23 (issue 47, break 7).
#[test]
fn idle_windows_cost_an_unrelated_message_nothing() {
    let prog = build("idle_windows");
    let rtt = |n: &str| {
        let (ok, text) = run_with(2, 2, &[], &prog, &[n]);
        assert!(ok && text.contains("OK c-idle_windows on 2 ranks"), "{text}");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("round trip with {n} windows: ")))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no round trip in:\n{text}"))
    };
    assert_eq!(rtt("10"), rtt("1000"), "1,000 idle windows changed a ping-pong's simulated round trip");
}

/// Windows are unified by default (sim-tests/c/unified.c, issue 47): a
/// program that fills its window with plain stores, calls `MPI_Barrier`
/// and lets a neighbour `MPI_Rget` it gets the stored values, and a put
/// is seen by its owner after a lock of its own window — on the simulator
/// at 2, 3 and 5 ranks and over UDP. Before, on the simulator, 131,072 of
/// 131,072 doubles came back stale. Asked for the separate model (the
/// card's public copy), the same program is erroneous (§12.7), and the
/// library says so on the error output instead of staying silent; a
/// local store and a remote put of one location is `MPI_ERR_RMA_CONFLICT`.
#[test]
fn windows_are_unified_by_default_and_separate_ones_report_misuse() {
    let prog = build("unified");
    for (np, nodes) in [(2, 2), (3, 3), (5, 2)] {
        let (ok, text) = run(np, nodes, &[], &prog);
        assert!(ok && text.contains(&format!("OK c-unified on {np} ranks (unified)")), "{np} ranks:\n{text}");
        assert!(!text.contains("stale"), "{text}");
    }
    let (ok, text) = run_with(3, 1, &["--backend", "udp"], &prog, &["unified", "4096"]);
    assert!(ok && text.contains("OK c-unified on 3 ranks (unified)"), "over UDP:\n{text}");
    for np in [2, 3] {
        let (ok, text) = run_with(np, np as u16, &[], &prog, &["separate"]);
        assert!(
            ok && text.contains(&format!("OK c-unified on {np} ranks (separate)")),
            "separate, {np} ranks:\n{text}"
        );
        assert!(text.contains("values stale in the separate model"), "{text}");
        assert!(text.contains("may have read the old values"), "stale data went unnamed:\n{text}");
        assert!(text.contains("rank 0: conflict reported"), "{text}");
    }
}

/// Passive-target locks are fair and visible (sim-tests/c/locks.c, issue
/// 47, breaks 4 and 5): an exclusive lock asked for as a stream of shared
/// epochs starts is granted before half of them (on the card's retried
/// lock word, only after all of them); a lock deadlock is reported by the
/// simulator at once, not left to run until the job's timeout; both on
/// the simulator at 3, 5 and 8 ranks, and the grant (not its place in the
/// stream, which is the OS scheduler's there) over UDP.
#[test]
fn locks_are_granted_in_order_and_a_lock_deadlock_is_seen() {
    let prog = build("locks");
    let granted = |np: u32, nodes: u16, extra: &[&str]| {
        // Over UDP where the request falls in the stream is the OS
        // scheduler's: checked granted, not bounded (no wall-clock bounds).
        let bound = if extra.contains(&"udp") { "unbounded" } else { "bounded" };
        let (ok, text) = run_with(np, nodes, extra, &prog, &["fair", "200", bound]);
        assert!(ok && text.contains(&format!("OK c-locks on {np} ranks")), "{np} ranks {extra:?}:\n{text}");
        text.lines().find(|l| l.starts_with("exclusive lock granted after")).map(str::to_string).unwrap_or_default()
    };
    for (np, nodes) in [(3, 3), (5, 2), (8, 4)] {
        let a = granted(np, nodes, &[]);
        assert_eq!(a, granted(np, nodes, &[]), "{np} ranks: the grant order is not deterministic");
    }
    granted(5, 1, &["--backend", "udp"]);
    let out = sim_tests::dnrun_command(2, 2, &["--timeout", "120"], prog.to_str().unwrap(), &["deadlock"])
        .output()
        .expect("run dnrun");
    let text = output_text(&out);
    assert!(!out.status.success() && text.contains("deadlock at"), "the lock deadlock was not reported:\n{text}");
    assert!(!text.contains("did not happen"), "{text}");
}

/// Processes of one job at different thread levels (sim-tests/c/mixed_levels.c,
/// issue 47, break 8): even ranks at `MPI_THREAD_MULTIPLE`, odd ones at
/// `MPI_THREAD_SINGLE`, duplicate communicators and use them — on the
/// simulator at 2, 3 and 5 ranks and over UDP. Before, the two levels
/// duplicated in two ways that did not meet, and the job hung.
#[test]
fn ranks_at_different_thread_levels_duplicate_communicators() {
    let prog = build("mixed_levels");
    for (np, nodes, backend) in [(2, 2, "sim"), (3, 3, "sim"), (5, 2, "sim"), (3, 1, "udp")] {
        let extra = ["--backend", backend, "--rank-mode", "processes", "--timeout", "120"];
        let extra = if backend == "udp" { &extra[..2] } else { &extra[..] };
        let (ok, text) = run(np, nodes, extra, &prog);
        assert!(ok && text.contains(&format!("OK c-mixed_levels on {np} ranks")), "{np} ranks, {backend}:\n{text}");
    }
}

/// Sessions (sim-tests/c/session.c): a program without `MPI_Init` opens
/// a session, makes communicators from its process sets, uses its error
/// handler and buffer, closes it and opens another, then starts the world
/// model.
#[test]
fn sessions_without_mpi_init() {
    everywhere("session", &[(1, 1), (2, 2), (3, 3), (5, 2)]);
}

/// What MPI 4.1 and the 5.0 ABI add (sim-tests/c/mpi41.c): persistent
/// collectives started many times and together with persistent
/// point-to-point, the large-count forms (and `MPI_ERR_COUNT` past the
/// library's limit), handles as ints, the tool interface, the MPI-1
/// attribute names, and unsupported functions failing by name.
#[test]
fn mpi41_persistent_collectives_large_counts_and_the_whole_abi() {
    everywhere("mpi41", &[(1, 1), (2, 2), (3, 3), (5, 2)]);
}

/// Derived datatypes in point-to-point and collectives, packing, the
/// v-collectives, scans and reduce-scatters (sim-tests/c/types.c), with
/// odd rank counts and roots other than 0.
#[test]
fn derived_datatypes_v_collectives_and_scans() {
    everywhere("types", &[(1, 1), (2, 2), (3, 3), (5, 2), (8, 4)]);
}

/// Subarrays, distributed arrays over the grid MPI_Dims_create picks,
/// the large-count constructors and their decoding, and the Fortran kind
/// types (sim-tests/c/arrays.c).
#[test]
fn subarrays_distributed_arrays_and_large_count_types() {
    everywhere("arrays", &[(1, 1), (2, 2), (3, 3), (5, 2), (8, 4)]);
}

/// User-defined reduction operations, commutative and not, in blocking
/// and non-blocking reductions, scans, reduce-scatter and Reduce_local,
/// and the errors around them (sim-tests/c/ops.c).
#[test]
fn user_defined_operations_reduce_in_rank_order() {
    everywhere("ops", &[(1, 1), (2, 2), (3, 3), (5, 2), (8, 4)]);
}

/// Process topologies and neighborhood collectives (sim-tests/c/topo.c):
/// grids, graphs and distributed graphs, their queries, the five
/// neighborhood collectives blocking and non-blocking, and the errors; at
/// 1 and 2 ranks a periodic dimension's two neighbors are one process.
#[test]
fn topologies_and_neighborhood_collectives() {
    everywhere("topo", &[(1, 1), (2, 2), (3, 3), (4, 2), (6, 3), (8, 4)]);
}

/// Intercommunicators between the even and the odd ranks: creation,
/// point-to-point across, the blocking collectives with MPI_ROOT and
/// MPI_PROC_NULL roots, merge and dup, and the refused operations
/// (sim-tests/c/inter.c); odd counts give groups of different sizes.
#[test]
fn intercommunicators_carry_point_to_point_and_collectives() {
    everywhere("inter", &[(2, 2), (3, 3), (5, 2), (8, 4)]);
}

/// Groups, communicators made from them, attributes, buffered sends,
/// matched probes and the any/some completions (sim-tests/c/groups.c).
#[test]
fn groups_attributes_buffered_sends_and_matched_probes() {
    let prog = everywhere("groups", &[(1, 1), (2, 2), (3, 3), (5, 2), (8, 4)]);
    // A duplication refused by an attribute's copy callback is completed,
    // not left active for finalize to find.
    let (ok, text) = run(3, 3, &[], &prog);
    assert!(ok && !text.contains("still active"), "{text}");
}

/// Run `prog` with `dnrun -v` and return (its "OK ..." line, the
/// simulator's summary line): both carry simulated times, which must be
/// the same in every run of the same job.
fn scale_run(np: u32, nodes: u16, prog: &Path) -> (String, String) {
    let (ok, text) = run(np, nodes, &["-v"], prog);
    let want = format!("OK c-scale on {np} ranks");
    let line = |prefix: &str| text.lines().find(|l| l.contains(prefix)).map(str::to_string);
    match (ok, line(&want), line("dimmnet-sim: done at")) {
        (true, Some(okl), Some(summary)) => (okl, summary),
        _ => panic!("c-scale on {np} ranks, {nodes} nodes:\n{text}"),
    }
}

/// Issue 28: jobs of more than 17 ranks deadlocked on the simulator. A
/// rank watches one ring word per peer while it waits; past the control
/// file's 16 watch words the wait fell back to "any change wakes me" and
/// forgot the values it had read, so a message that landed while the rank
/// was between reading its rings and handing over never woke it. One rank
/// per node at 32 and 64 ranks, two per node at an odd 33, and 37 ranks
/// on 5 nodes (the last node not full); the same job twice gives the same
/// simulated times, device statistics and grants.
#[test]
fn jobs_of_32_and_64_ranks_finish_and_repeat_exactly() {
    let prog = build("scale");
    for (np, nodes) in [(32, 32), (64, 64), (33, 17), (37, 5)] {
        let first = scale_run(np, nodes, &prog);
        if np == 64 {
            assert_eq!(scale_run(np, nodes, &prog), first, "a second run of {np} ranks differs");
        }
    }
    let first = scale_run(32, 32, &prog);
    assert_eq!(scale_run(32, 32, &prog), first, "a second run of 32 ranks differs");
}

/// Issue 46: past the 1,024 sources of register map 1.3. 1,040 ranks, 16
/// per node on 65 nodes, as contexts (the default for a C program): ranks
/// 1,024 and up are sources whose ring entries sit in map 1.4's far table,
/// and every rank takes messages from them (the ring's neighbour, the
/// allreduce, the broadcast from the last rank).
#[test]
fn a_job_of_more_than_1024_ranks_runs_past_the_old_ring_table() {
    let prog = build("scale");
    let (ok, summary) = scale_run(1040, 65, &prog);
    assert!(ok.contains("OK c-scale on 1040 ranks"), "{ok}");
    assert!(summary.contains(" 0 errors"), "{summary}");
}

/// Issue 28: how far ahead of the others a process may run changes how
/// often the simulator hands over, never what it computes. The same job
/// under every lookahead mode (none: SimGrid's strict lowest-clock order;
/// hop: a packet's hop; full: the default) gives identical output,
/// simulated times, events, commands and packets, and the full lookahead
/// hands over least. Two rank counts: the ring-scanning receive path (9
/// ranks, 3 per node) and the arrival queue (24 ranks, 4 per node).
#[test]
fn the_lookahead_changes_hand_overs_never_results() {
    let prog = build("scale");
    for (np, nodes) in [(9u32, 3u16), (24, 6)] {
        let mut runs = Vec::new();
        for mode in ["none", "hop", "full"] {
            sim_tests::ensure_binaries();
            let dir = bin_dir();
            let out = Command::new(dir.join("dnrun"))
                .args(["-v", "-n", &np.to_string(), "--nodes", &nodes.to_string(), "--timeout", "300", "--"])
                .arg(&prog)
                .env("DN_SIM_BIN", dir.join("dimmnet-sim"))
                .env("DN_SIM_LOOKAHEAD", mode)
                .output()
                .expect("run dnrun");
            let text = output_text(&out);
            let ok = text.lines().find(|l| l.contains("OK c-scale")).map(str::to_string);
            let summary = text.lines().find(|l| l.contains("dimmnet-sim: done at")).map(str::to_string);
            let (Some(ok), Some(summary)) = (ok, summary) else { panic!("{mode}, {np} ranks:\n{text}") };
            let (result, grants) = summary.split_once(" scheduler grants").expect("a grant count");
            let (result, count) = result.rsplit_once(", ").expect("a grant count");
            let count: u64 = count.parse().expect("a number of grants");
            runs.push((mode, ok, result.to_string(), count, grants.to_string()));
        }
        for r in &runs[1..] {
            assert_eq!((&r.1, &r.2), (&runs[0].1, &runs[0].2), "{np} ranks: lookahead {} changed the results", r.0);
        }
        assert!(runs[2].3 < runs[0].3, "{np} ranks: the full lookahead handed over no less: {runs:?}");
    }
}

/// Issue 28, computation between MPI calls: by default it costs no
/// simulated time (a burst of computation between two MPI_Wtime calls takes
/// only the calls' own cost); with `--compute measured:SCALE` it costs its
/// thread CPU time times SCALE (bounds from the loop's own CPU time, which
/// the program measures; CPU time, not wall time); a bad mode is refused.
#[test]
fn computation_between_calls_is_charged_only_when_measured() {
    let prog = build("compute");
    let burst = |extra: &[&str]| -> (f64, f64) {
        let (ok, text) = run(2, 2, extra, &prog);
        let line = text.lines().find(|l| l.contains("OK c-compute on 2 ranks")).map(str::to_string);
        let parse = |l: &str, key: &str| -> Option<f64> { l.split(key).next()?.rsplit(' ').next()?.parse().ok() };
        match (ok, line) {
            (true, Some(l)) => (parse(&l, " us simulated").unwrap(), parse(&l, " us CPU").unwrap()),
            _ => panic!("c-compute {extra:?}:\n{text}"),
        }
    };
    let (none, cpu) = burst(&[]);
    assert!(none < 1.0, "computation cost {none} us by default (its CPU time was {cpu} us)");
    assert!(cpu > 1000.0, "the loop took {cpu} us of CPU: too short to measure anything");
    let (again, _) = burst(&[]);
    assert_eq!(none, again, "the default is repeatable");
    let (measured, cpu) = burst(&["--compute", "measured:3"]);
    assert!(measured >= 3.0 * cpu, "measured {measured} us simulated for {cpu} us of CPU at scale 3");
    assert!(measured < 3.0 * cpu * 2.0 + 1000.0, "measured {measured} us for {cpu} us of CPU at scale 3");
    let (ok, text) = run(2, 2, &["--compute", "sometimes"], &prog);
    assert!(!ok && text.contains("give none, measured"), "{text}");
}

/// One-sided communication, every call of MPI 4.1 chapter 12
/// (sim-tests/c/rma.c): the four window flavours, every operation in its
/// plain, request and large-count forms with derived datatypes, the three
/// kinds of synchronisation, and the errors — on the simulator at 1, 2,
/// 3, 5 and 8 ranks (and with the card's separate model at 2 and 5), over
/// UDP (3 and 8) and DPDK, and under MPICH's hydra.
#[test]
fn one_sided_communication_every_call_every_backend() {
    let prog = everywhere("rma", &[(1, 1), (2, 2), (3, 3), (5, 2), (8, 4)]);
    // The card's public copies (the separate model), asked for by DN_RMA.
    for (np, nodes) in [(2, 2), (5, 2)] {
        let (ok, text) = run(np, nodes, &["-x", "DN_RMA=card"], &prog);
        assert!(ok && text.contains(&format!("OK c-rma on {np} ranks")), "c-rma on {np} ranks, DN_RMA=card:\n{text}");
    }
    let (ok, text) = run(8, 1, &["--backend", "udp"], &prog);
    assert!(ok && text.contains("OK c-rma on 8 ranks"), "c-rma on 8 ranks over UDP:\n{text}");
    if hydra().is_some() {
        let (ok, text) = run_hydra(3, &prog, &[]);
        assert!(ok && text.contains("OK c-rma on 3 ranks"), "hydra -n 3 c-rma:\n{text}");
    }
}

/// MPI-IO from C (sim-tests/c/io.c, issue 50): explicit offsets, a
/// strided view, the shared pointer and ordered access, non-blocking and
/// split collective forms, and the error classes of §14.7 on the files'
/// handler, at 1, 3 and 4 ranks on the simulator, as contexts and as
/// processes, and over UDP.
#[test]
fn files_are_read_and_written_through_views_and_pointers() {
    let prog = build("io");
    let dir = std::env::temp_dir().join(format!("dn-c-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    for (np, nodes, extra) in [
        (1, 1, vec![]),
        (3, 3, vec![]),
        (4, 2, vec!["--rank-mode", "processes"]),
        (3, 1, vec!["--backend", "udp", "--timeout", "60"]),
    ] {
        let (ok, text) = run_with(np, nodes, &extra, &prog, &[d]);
        assert!(ok && text.contains(&format!("OK c-io on {np} ranks")), "{np} ranks {extra:?}:\n{text}");
        assert!(text.contains("1 file still open"), "the file left open went unnamed:\n{text}");
        // Only the data file of the file left open remains: no shared
        // pointer's file, no other data file.
        let left: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(left, ["c-io.dat"], "files left behind");
        std::fs::remove_file(dir.join("c-io.dat")).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// User data representations (sim-tests/c/datarep.c, issue 50, MPI 4.1
/// §14.5.3): conversion functions in both forms, the file's bytes checked
/// through a native view, a short read, a representation that changes
/// sizes refused, and a conversion failing in one rank of a collective,
/// at 1, 3 and 8 ranks, as processes, and over UDP.
#[test]
fn user_data_representations_convert_every_access() {
    let prog = build("datarep");
    let dir = std::env::temp_dir().join(format!("dn-c-datarep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    for (np, nodes, extra) in [
        (1, 1, vec![]),
        (3, 2, vec![]),
        (8, 4, vec![]),
        (3, 1, vec!["--rank-mode", "processes"]),
        (3, 1, vec!["--backend", "udp", "--timeout", "60"]),
    ] {
        let (ok, text) = run_with(np, nodes, &extra, &prog, &[d]);
        assert!(ok && text.contains(&format!("OK c-datarep on {np} ranks")), "{np} ranks {extra:?}:\n{text}");
    }
    let left = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(left, 0, "files left behind in {}", dir.display());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Client/server connections within a job (sim-tests/c/ports.c, issue
/// 50): the name service, bad ports refused with MPI_ERR_PORT, accept and
/// connect both ways round (roots other than 0), two groups connecting to
/// one port, on the simulator at 1 to 8 ranks (as contexts and as
/// processes), over UDP and DPDK; and MPI_Comm_join over a TCP socket on
/// the simulator in both rank modes and over UDP, also with a rank blocked
/// in accept() before its peer connects.
#[test]
fn groups_of_a_job_connect_through_ports_and_sockets() {
    let prog = everywhere("ports", &[(1, 1), (2, 2), (3, 3), (5, 2), (8, 4)]);
    for (np, extra) in [
        (2, vec!["--rank-mode", "processes"]),
        (3, vec!["--rank-mode", "contexts"]),
        (2, vec!["--backend", "udp", "--timeout", "60"]),
    ] {
        let (ok, text) = run_with(np, 2, &extra, &prog, &["join"]);
        assert!(ok && text.contains(&format!("OK c-ports on {np} ranks")), "join, {np} ranks {extra:?}:\n{text}");
    }
    // Rank 0 blocks in accept() before rank 1 connects, holding the
    // simulation: the library stands in for it (mpi/src/outside.rs), or
    // the run would hang to its timeout.
    for (np, extra) in [
        (2, vec!["--rank-mode", "processes", "--timeout", "60"]),
        (3, vec!["--rank-mode", "processes", "--timeout", "60"]),
        (3, vec!["--backend", "udp", "--timeout", "60"]),
    ] {
        let (ok, text) = run_with(np, 2, &extra, &prog, &["join-blocking"]);
        assert!(
            ok && text.contains(&format!("OK c-ports on {np} ranks")),
            "join-blocking, {np} ranks {extra:?}:\n{text}"
        );
    }
}

/// Process creation (sim-tests/c/spawn.c, issue 50): `MPI_Comm_spawn`
/// from a root other than 0, `MPI_Comm_spawn_multiple` with
/// `MPI_APPNUM`, `MPI_Comm_get_parent`, `MPI_UNIVERSE_SIZE`, messages,
/// collectives and a merge across the intercommunicator, and spawns that
/// fail with `MPI_ERR_SPAWN` at every parent while the job goes on; on
/// the simulator at 1, 2, 5, 8 and 33 ranks over 1 to 3 nodes, where the
/// simulated time the job ends at is the same run after run, over UDP
/// and over DPDK (through the node pollers). A job with no room (no
/// `--universe-size`) fails the spawns; one in contexts, or on a DPDK
/// shared segment (`--dpdk-vdev`), is refused by name.
#[test]
fn ranks_spawn_processes_into_the_running_simulation_deterministically() {
    let prog = build("spawn");
    for (np, nodes) in [(1, 1), (2, 2), (5, 2), (8, 3), (33, 3)] {
        let usize = (np + 4).to_string();
        let extra = ["--universe-size", &usize, "--timeout", "120"];
        let (ok, first) = run(np, nodes, &extra, &prog);
        let want = format!("OK c-spawn on {np} ranks at ");
        assert!(ok && first.contains(&want), "c-spawn on {np}:\n{first}");
        let (ok, again) = run(np, nodes, &extra, &prog);
        let at = |t: &str| t.lines().find(|l| l.starts_with(&want)).map(str::to_string);
        assert!(ok && at(&again) == at(&first), "c-spawn on {np} again:\n{again}\nfirst:\n{first}");
    }
    for np in [1, 3] {
        let usize = (np + 4).to_string();
        let (ok, text) = run(np, 1, &["--universe-size", &usize, "--backend", "udp", "--timeout", "60"], &prog);
        assert!(ok && text.contains(&format!("OK c-spawn on {np} ranks")), "c-spawn over UDP on {np}:\n{text}");
    }
    // Over DPDK the spawned ranks join their node's polling process.
    if sim_tests::dpdk_or_skip("spawning over DPDK") {
        for (np, nodes) in [(1, 1), (3, 2)] {
            let usize = (np + 4).to_string();
            let (ok, text) =
                run(np, nodes, &["--universe-size", &usize, "--backend", "dpdk", "--timeout", "60"], &prog);
            assert!(ok && text.contains(&format!("OK c-spawn on {np} ranks")), "c-spawn over DPDK on {np}:\n{text}");
        }
    }
    // No room: the universe is the job.
    let (ok, text) = run(2, 1, &[], &prog);
    assert!(!ok && text.contains("MPI_UNIVERSE_SIZE 2"), "{text}");
    for (extra, says) in [
        (vec!["--universe-size", "4", "--backend", "dpdk", "--dpdk-vdev", "net_null0"], "do not go together"),
        (vec!["--universe-size", "4", "--rank-mode", "contexts"], "runs its ranks as processes"),
        (vec!["--universe-size", "1"], "below -n 2"),
    ] {
        let (ok, text) = run(2, 1, &extra, &prog);
        assert!(!ok && text.contains(says), "{extra:?}:\n{text}");
    }
}
