//! MPI programs under `dnrun --backend udp` whose ranks all run on this
//! host, so that they talk through shared memory (issue 49, item 9;
//! `adi::backend::shm`): the whole suite, a progress thread beside the
//! program, a rank that dies, and the cases that keep UDP.

fn run_with(test: &str, np: u32, env: &[&str]) -> (bool, String, String) {
    sim_tests::run_suite("udp", test, np, env)
}

fn run(test: &str, np: u32, env: &[&str]) -> String {
    sim_tests::run_suite_ok("udp", test, np, env)
}

/// The suite's cases that run over UDP (sim_tests::matrix), every rank on
/// this host: over shared memory.
macro_rules! shm_cases {
    ($($name:ident: $test:literal, $np:literal, $nodes:literal, [$($on:ident)*];)*) => {
        $(sim_tests::on_udp!([$($on)*] #[test] fn $name() {
            let out = run($test, $np, &[]);
            // One rank has no peer: it keeps the UDP backend.
            let want = if $np == 1 { "(udp backend)" } else { "(shm backend)" };
            assert!(out.contains(want), "{out}");
        });)*
    };
}

sim_tests::suite_matrix!(shm_cases);

#[test]
fn thirty_three_ranks_exchange_all_pairs() {
    run("allpairs", 33, &[]);
    run("collectives", 33, &[]);
}

/// What keeps the ranks on UDP: `DN_UDP_SHM=off`, and injected datagram
/// faults (they test the datagram protocol).
#[test]
fn shared_memory_can_be_turned_off_and_faults_keep_udp() {
    let out = run("pingpong", 2, &["DN_UDP_SHM=off"]);
    assert!(out.contains("(udp backend)"), "{out}");
    let out = run("pingpong", 2, &["DN_UDP_FAULTS=loss=0.01,seed=3"]);
    assert!(out.contains("(udp backend)"), "{out}");
    let out = run("pingpong", 2, &[]);
    assert!(out.contains("(shm backend)"), "{out}");
}

/// `DN_STATS=1` shows the shared memory's counters: messages both ways,
/// sends that waited for room (the rendezvous of `rndv-large` fills the
/// rings).
#[test]
fn the_counters_show_the_rings_at_work() {
    let out = run("rndv-large", 2, &["DN_STATS=1"]);
    let line = out.lines().find(|l| l.starts_with("shared memory (256 KiB rings)")).unwrap_or_else(|| panic!("{out}"));
    let sent: u64 = line.split(": ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(sent > 100, "{line}");
}

/// Non-blocking collectives with a progress thread beside the program: the
/// thread and the program share the transport, and a wait in one is ended
/// from the other (the transport's waker).
#[test]
fn a_progress_thread_works_over_shared_memory() {
    run("nbc", 3, &["DN_NBC_PROGRESS=thread"]);
    let out = run("overlap 120", 3, &["DN_NBC_PROGRESS=thread"]);
    assert!(out.contains("moved something, failed: None"), "{out}");
    run("rma-passive", 2, &["DN_NBC_PROGRESS=thread"]);
}

/// A rank that leaves without finalizing: the job fails, naming it, and
/// leaves no files behind (the rings are in the job directory).
#[test]
fn a_rank_that_exits_early_ends_the_job_naming_it() {
    let (ok, _, stderr) = run_with("early-exit", 3, &[]);
    assert!(!ok, "the job must fail");
    assert!(stderr.contains("rank 1 exited (code 0) without calling MPI finalize"), "{stderr}");
    assert!(sim_tests::leftover_job_dirs(std::process::id()).is_empty());
}
