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

/// Whether `test` can run here (see [`sim_tests::dpdk_or_skip`]).
fn can_run(test: &str) -> bool {
    sim_tests::dpdk_or_skip(test)
}

fn run_with(test: &str, np: u32, env: &[&str]) -> (bool, String, String) {
    sim_tests::run_suite("dpdk", test, np, env)
}

fn run(test: &str, np: u32, env: &[&str]) -> String {
    if !can_run(test) {
        return String::new();
    }
    let out = sim_tests::run_suite_ok("dpdk", test, np, env);
    assert!(out.contains("(dpdk backend)"), "{test} did not run over DPDK:\n{out}");
    out
}

/// The suite's cases that run over DPDK (sim_tests::matrix), every
/// rank on this host.
macro_rules! dpdk_cases {
    ($($name:ident: $test:literal, $np:literal, $nodes:literal, [$($on:ident)*];)*) => {
        $(sim_tests::on_dpdk!([$($on)*] #[test] fn $name() { run($test, $np, &[]); });)*
    };
}

sim_tests::suite_matrix!(dpdk_cases);

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

/// Issue 30: liveness without data. The last rank computes for three peer
/// timeouts without calling MPI; its keep-alive thread answers for it,
/// whether the others sent it something first (they wait for its
/// acknowledgements) or only wait for it (they ping it). Hung instead, it
/// is named by every rank that waits for it, even one that owes it nothing.
#[test]
fn a_computing_rank_is_waited_for_and_a_hung_one_is_named() {
    if !can_run("a_computing_rank_is_waited_for_and_a_hung_one_is_named") {
        return;
    }
    for case in ["quiet-peer 3", "quiet-peer 3 send-first"] {
        run(case, 3, &["DN_UDP_TIMEOUT_MS=1000"]);
        let (ok, _, stderr) = run_with(case, 3, &["DN_UDP_FAULTS=blackhole=2", "DN_UDP_TIMEOUT_MS=1000"]);
        assert!(!ok && stderr.contains("rank 2 is unreachable"), "{case}: {stderr}");
    }
}

#[test]
fn a_peer_that_never_answers_ends_the_job_naming_it() {
    if !can_run("a_peer_that_never_answers_ends_the_job_naming_it") {
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
    if !can_run("a_bad_frame_size_is_refused_with_the_range") {
        return;
    }
    for bad in ["DN_DPDK_FRAME=100", "DN_DPDK_FRAME=70000", "DN_DPDK_FRAME=big"] {
        let (ok, _, stderr) = run_with("pingpong", 2, &[bad]);
        assert!(!ok, "{bad} was accepted");
        assert!(stderr.contains("DN_DPDK_FRAME") && stderr.contains("256..=65000"), "{bad}: {stderr}");
    }
}

/// Two network namespaces joined by a veth pair, removed on drop. The
/// ranks run one in each: af_packet's fanout groups are per namespace,
/// and DPDK derives a group's id from the process id and the interface
/// index, so two ranks in one namespace may collide (EINVAL).
struct Netns([String; 2]);

impl Netns {
    /// `None` where this process may not create namespaces (not root).
    fn create(tag: u32) -> Option<(Netns, [String; 2])> {
        let ns = [format!("dnt-a-{tag}"), format!("dnt-b-{tag}")];
        let ifs = [format!("dnta{tag}"), format!("dntb{tag}")];
        let ip = |args: &[&str]| std::process::Command::new("ip").args(args).output().is_ok_and(|o| o.status.success());
        if !ip(&["netns", "add", &ns[0]]) {
            return None;
        }
        let guard = Netns(ns.clone());
        let ok = ip(&["netns", "add", &ns[1]])
            && ip(&["link", "add", &ifs[0], "type", "veth", "peer", "name", &ifs[1]])
            && (0..2).all(|k| {
                ip(&["link", "set", &ifs[k], "netns", &ns[k]]) && ip(&["-n", &ns[k], "link", "set", &ifs[k], "up"])
            });
        ok.then_some((guard, ifs))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = std::process::Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// The af_packet path (`dnrun --dpdk-vdev`): two launchers in two network
/// namespaces, one rank each, each driving its end of a veth pair with
/// DPDK's af_packet PMD; the ranks find each other by MAC hellos. Frames the kernel sends on the
/// pair by itself (IPv6 router solicitations and the like) and each
/// rank's own frames, looped back to its tap, must be ignored.
/// `scripts/netns-dpdk.sh` runs the same between two namespaces.
#[test]
fn over_af_packet_each_rank_on_its_end_of_a_veth_pair() {
    if !can_run("over_af_packet_each_rank_on_its_end_of_a_veth_pair") {
        return;
    }
    let Some((netns, ifs)) = Netns::create(std::process::id() % 100_000) else {
        eprintln!("cannot create network namespaces here (not root?): af_packet not tested");
        return;
    };
    sim_tests::ensure_binaries();
    let dir = sim_tests::bin_dir();
    // Authenticated mode across two launchers: one key file for both
    // (hellos and data are tagged with it).
    let key = std::env::temp_dir().join(format!("dn-afp-key-{}", std::process::id()));
    std::fs::write(&key, [0x5au8; 32]).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let auth = ["-x", "DN_UDP_AUTH=1", "-x", &format!("DN_UDP_KEY_FILE={}", key.display())].map(String::from);
    let plain: [String; 0] = [];
    let cases: [(&str, &[String]); 7] = [
        ("allpairs", &plain),
        ("ordering", &plain),
        ("rndv-large", &plain),
        ("collectives", &plain),
        ("probe", &plain),
        ("poll-iprobe", &plain),
        ("allpairs", &auth),
    ];
    for (n, (test, extra)) in cases.iter().enumerate() {
        let job = (std::process::id() * 16 + n as u32).to_string();
        let spawn = |rank: usize| {
            std::process::Command::new("ip")
                .args(["netns", "exec", &netns.0[rank]])
                .arg(dir.join("dnrun"))
                .args(["-n", "2", "--ranks", &rank.to_string()])
                .args(["--backend", "dpdk", "--job-id", &job, "--timeout", "120"])
                .args(["--dpdk-vdev", &format!("net_af_packet0,iface={}", ifs[rank]), "-x", "DN_STATS=1"])
                .args(extra.iter())
                .arg("--")
                .arg(dir.join("mpi-suite"))
                .arg(test)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start dnrun")
        };
        let (r0, r1) = (spawn(0), spawn(1));
        let (o0, o1) = (r0.wait_with_output().unwrap(), r1.wait_with_output().unwrap());
        let text = |o: &std::process::Output| {
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
        };
        assert!(o0.status.success() && o1.status.success(), "{test}:\n{}\n{}", text(&o0), text(&o1));
        assert!(text(&o0).contains(&format!("OK {test} on 2 ranks (dpdk backend)")), "{test}: {}", text(&o0));
        // Every frame of the peer was known by its MAC.
        assert!(text(&o0).contains("dpdk datagrams:") && text(&o0).contains(" 0 unknown sender"), "{}", text(&o0));
    }
    let _ = std::fs::remove_file(&key);
}

/// DPDK's memif driver unmaps a ring when the process at the other end
/// exits, from its interrupt thread, while the polling thread may be
/// reading it: a rank crashed with SIGSEGV in CI (1 run in hundreds). So
/// no rank exits while another still polls the rings they share. Here one
/// rank polls on for 300 ms after its finalize, and fails if a peer's link
/// goes down meanwhile; without the wait, it fails in every run.
#[test]
fn no_rank_exits_while_a_peer_still_polls_their_rings() {
    run("allpairs", 4, &["DN_DPDK_TEST_POLL_BEFORE_LEAVING_MS=1:300"]);
    run("ring", 3, &["DN_DPDK_TEST_POLL_BEFORE_LEAVING_MS=0:300"]);
    run("pingpong", 2, &["DN_DPDK_TEST_POLL_BEFORE_LEAVING_MS=1:300"]);
}

/// `--dpdk-vdev` is for one rank per launcher, and a vdev must look like one.
#[test]
fn dpdk_vdev_misuse_is_refused_with_the_fix() {
    if !can_run("dpdk_vdev_misuse_is_refused_with_the_fix") {
        return;
    }
    let cases: [(&[&str], &str); 4] = [
        (&["--backend", "dpdk", "--dpdk-vdev", "net_af_packet0,iface=lo"], "exactly one rank"),
        (&["--backend", "dpdk", "--ranks", "0"], "needs --dpdk-vdev"),
        (&["--backend", "dpdk", "--ranks", "0", "--dpdk-vdev", "eth0"], "not an EAL vdev argument"),
        (&["--backend", "udp", "--dpdk-vdev", "net_af_packet0,iface=lo"], "is for --backend dpdk"),
    ];
    for (args, want) in cases {
        let out = dnrun(2, 1, args, "mpi-suite", &["pingpong"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{args:?}: {err}");
    }
}

/// `test` through a DPDK polling process per node (`--dpdk-poller node`)
/// on `nodes` nodes; must print OK. Returns stdout and stderr.
fn run_node(test: &str, np: u32, nodes: u16, env: &[&str]) -> String {
    if !can_run(test) {
        return String::new();
    }
    let (ok, stdout, stderr) = sim_tests::run_suite_with("dpdk", test, np, nodes, &["--dpdk-poller", "node"], env);
    let name = test.split_whitespace().next().unwrap_or(test);
    assert!(
        ok && stdout.contains(&format!("OK {name}")) && stdout.contains("(dpdk backend)"),
        "{test} on {np} ranks, {nodes} nodes, through pollers {env:?} failed:\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    stdout + &stderr
}

/// The counters of node `node`'s poller line in `DN_STATS` output: frames
/// to its ranks by slot, and to other nodes by queue.
fn poller_counts(out: &str, node: u32) -> (Vec<u64>, Vec<u64>) {
    let line = out
        .lines()
        .find(|l| l.contains(&format!("DPDK poller of node {node}:")))
        .unwrap_or_else(|| panic!("no poller line for node {node}:\n{out}"));
    let list = |after: &str| -> Vec<u64> {
        let s = line.split(after).nth(1).unwrap_or_else(|| panic!("no {after:?} in {line}"));
        let s = &s[s.find('[').unwrap() + 1..s.find(']').unwrap()];
        s.split(',').map(|v| v.trim().parse().unwrap()).collect()
    };
    (list("local ranks by slot"), list("other nodes by queue"))
}

/// The seed's dedicated polling process: the suite passes with every frame
/// going through one poller per node, on one node and on several, with
/// rank counts that leave a node's slots partly empty.
#[test]
fn through_a_polling_process_per_node_the_suite_passes() {
    for (test, np, nodes) in [
        ("pingpong", 2, 1),
        ("poll-iprobe", 2, 1),
        ("ordering", 2, 2),
        ("rndv-large", 2, 2),
        ("wildcard", 4, 2),
        ("collectives", 7, 3),
        ("nbc", 3, 2),
        ("probe", 2, 2),
    ] {
        run_node(test, np, nodes, &[]);
    }
}

/// Through pollers, the same hazard the other way round: a poller polls
/// every rank's rings, so each rank says it has left and waits for its
/// poller to let go of its rings before it exits. Each poller counts the
/// ranks whose link went down without that: none.
#[test]
fn through_pollers_every_rank_is_let_go_before_it_exits() {
    let out = run_node("allpairs", 5, 2, &["DN_STATS=1", "DN_DPDK_TEST_POLL_BEFORE_LEAVING_MS=4:300"]);
    if out.is_empty() {
        return;
    }
    for node in 0..2 {
        let line = out.lines().find(|l| l.contains(&format!("DPDK poller of node {node}:"))).unwrap_or_default();
        assert!(line.contains("; 0 ranks gone without leaving"), "node {node}:\n{out}");
    }
}

/// Queue steering between nodes: 5 ranks on 2 nodes are slots 0-2 on node
/// 0 and 0-1 on node 1. Node 0's poller sends node 1's ranks their frames
/// on queues 0 and 1 and never on queue 2 (no rank there); every local
/// slot receives; nothing is stray or dropped.
#[test]
fn between_nodes_each_rank_has_its_own_queue() {
    let out = run_node("allpairs", 5, 2, &["DN_STATS=1"]);
    if out.is_empty() {
        return;
    }
    let (to_rank0, to_node0) = poller_counts(&out, 0);
    let (to_rank1, to_node1) = poller_counts(&out, 1);
    assert_eq!(to_rank0.len(), 3, "{out}");
    assert_eq!(to_rank1.len(), 2, "{out}");
    assert!(to_rank0.iter().chain(&to_rank1).all(|&n| n > 0), "a rank received nothing:\n{out}");
    assert!(to_node0[0] > 0 && to_node0[1] > 0 && to_node0[2] == 0, "node 0's queues: {to_node0:?}\n{out}");
    assert!(to_node1.iter().all(|&n| n > 0), "node 1's queues: {to_node1:?}\n{out}");
    assert!(out.contains("0 stray"), "{out}");
}

/// Faults injected below the protocol still come out exactly once, in
/// order and intact when every frame also passes through the pollers.
#[test]
fn through_pollers_under_injected_faults() {
    run_node("allpairs", 4, 2, &[FAULTS]);
    run_node("rndv-large", 2, 2, &[FAULTS]);
}
