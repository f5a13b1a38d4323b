//! MPI programs over the DPDK backend (seed 000's transport under the same
//! trait): memif interfaces between the ranks of this host, the whole
//! suite, the suite under faults injected below the protocol (in the path
//! to the PMD), and a peer that stops answering.
//!
//! These need the system's DPDK (scripts/setup.sh installs it). A build
//! without it runs the one test that checks the error message instead.

use sim_tests::dnrun;

fn have_dpdk() -> bool {
    adi::backend::dpdk::available().is_ok()
}

fn run_with(test: &str, np: u32, env: &[&str]) -> (bool, String, String) {
    sim_tests::run_suite("dpdk", test, np, env)
}

fn run(test: &str, np: u32, env: &[&str]) -> String {
    if !have_dpdk() {
        eprintln!("no DPDK in this build: {test} not run");
        return String::new();
    }
    let out = sim_tests::run_suite_ok("dpdk", test, np, env);
    assert!(out.contains("(dpdk backend)"), "{test} did not run over DPDK:\n{out}");
    out
}

macro_rules! suite {
    ($($name:ident: $test:literal, $np:literal;)*) => {
        $(#[test] fn $name() { run($test, $np, &[]); })*
    };
}

suite! {
    pingpong_2r: "pingpong", 2;
    ring_4r: "ring", 4;
    allpairs_4r: "allpairs", 4;
    allpairs_8r: "allpairs", 8;
    wildcard_4r: "wildcard", 4;
    unexpected_2r: "unexpected", 2;
    many_requests_4r: "many-requests", 4;
    ordering_2r: "ordering", 2;
    rndv_large_2r: "rndv-large", 2;
    mixed_4r: "mixed", 4;
    lent_3r: "lent", 3;
    probe_2r: "probe", 2;
    sync_2r: "sync", 2;
    comms_4r: "comms", 4;
    poll_iprobe_2r: "poll-iprobe", 2;
    poll_test_2r: "poll-test", 2;
    poll_testall_5r: "poll-testall", 5;
    collectives_7r: "collectives", 7;
    collectives_1r: "collectives", 1;
    collectives_5r: "collectives", 5;
    nbc_3r: "nbc", 3;
}

const FAULTS: &str = "DN_UDP_FAULTS=loss=0.05,dup=0.05,reorder=0.05,corrupt=0.01,seed=11";

/// Exactly once, in order and intact when frames are dropped, duplicated,
/// reordered and corrupted on their way to the PMD: the programs check
/// every byte and the order, and `DN_STATS` shows the faults happened.
#[test]
fn all_pairs_and_order_under_injected_faults() {
    let out = run("allpairs", 4, &[FAULTS, "DN_STATS=1"]);
    if out.is_empty() {
        return;
    }
    let injected: u64 = out
        .lines()
        .filter_map(|l| l.split("injected faults: ").nth(1))
        .flat_map(|s| s.split(',').filter_map(|p| p.split_whitespace().next()?.parse::<u64>().ok()))
        .sum();
    assert!(injected > 10, "the fault injector did nothing:\n{out}");
    assert!(out.contains("dpdk datagrams:"), "{out}");
    run("ordering", 2, &[FAULTS]);
    run("rndv-large", 2, &[FAULTS]);
    run("collectives", 3, &[FAULTS]);
}

#[test]
fn a_peer_that_never_answers_ends_the_job_naming_it() {
    if !have_dpdk() {
        return;
    }
    let (ok, _, stderr) = run_with("allpairs", 3, &["DN_UDP_FAULTS=blackhole=1", "DN_UDP_TIMEOUT_MS=1500"]);
    assert!(!ok);
    assert!(stderr.contains("rank 1 is unreachable"), "{stderr}");
}

#[test]
fn without_dpdk_the_launcher_says_what_is_missing() {
    let out = dnrun(2, 1, &["--backend", "dpdk"], "mpi-suite", &["pingpong"]);
    if have_dpdk() {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("--backend dpdk:") && err.contains("setup.sh"), "{err}");
    }
}

/// Frames other than the default: small ones (a 2 KiB message spans
/// several, large messages many) and the largest; every byte is checked.
#[test]
fn small_and_large_frames_carry_every_message() {
    run("allpairs", 3, &["DN_DPDK_FRAME=512"]);
    run("rndv-large", 2, &["DN_DPDK_FRAME=2048"]);
    run("rndv-large", 2, &["DN_DPDK_FRAME=65000"]);
}

/// A frame size out of range is refused with the range, not a crash.
#[test]
fn a_bad_frame_size_is_refused_with_the_range() {
    if !have_dpdk() {
        return;
    }
    for bad in ["DN_DPDK_FRAME=100", "DN_DPDK_FRAME=70000", "DN_DPDK_FRAME=big"] {
        let (ok, _, stderr) = run_with("pingpong", 2, &[bad]);
        assert!(!ok, "{bad} was accepted");
        assert!(stderr.contains("DN_DPDK_FRAME") && stderr.contains("256 to 65000"), "{bad}: {stderr}");
    }
}
