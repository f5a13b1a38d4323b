//! MPI programs over the UDP backend (seed 001) on loopback: the whole suite,
//! the suite under injected faults, a lost peer, stray datagrams, and the
//! one-socket-per-rank property.

/// Every test here is of the datagram protocol: shared memory, which the
/// ranks of one host use by default (`tests/mpi_shm.rs`), is off.
fn run_with(test: &str, np: u32, env: &[&str]) -> (bool, String, String) {
    let mut env = env.to_vec();
    env.insert(0, "DN_UDP_SHM=off");
    sim_tests::run_suite("udp", test, np, &env)
}

fn run(test: &str, np: u32, env: &[&str]) -> String {
    let mut env = env.to_vec();
    env.insert(0, "DN_UDP_SHM=off");
    sim_tests::run_suite_ok("udp", test, np, &env)
}

/// The suite's cases that run over UDP (sim_tests::matrix), every
/// rank on this host.
macro_rules! udp_cases {
    ($($name:ident: $test:literal, $np:literal, $nodes:literal, [$($on:ident)*];)*) => {
        $(sim_tests::on_udp!([$($on)*] #[test] fn $name() { run($test, $np, &[]); });)*
    };
}

sim_tests::suite_matrix!(udp_cases);

const FAULTS: &str = "DN_UDP_FAULTS=loss=0.05,dup=0.05,reorder=0.05,corrupt=0.01,seed=7";

/// Exactly once, in order, byte-identical under loss, duplication,
/// reordering and corruption: every byte is checked by the programs, order
/// by `ordering` and `wildcard`, and `DN_STATS` shows the faults happened.
#[test]
fn collectives_under_injected_faults() {
    run("collectives", 5, &[FAULTS]);
}

#[test]
fn all_pairs_under_injected_faults() {
    let out = run("allpairs", 4, &[FAULTS, "DN_STATS=1"]);
    let injected: u64 = out
        .lines()
        .filter_map(|l| l.split("injected faults: ").nth(1))
        .flat_map(|s| s.split(',').filter_map(|p| p.split_whitespace().next()?.parse::<u64>().ok()))
        .sum();
    assert!(injected > 10, "the fault injector did nothing:\n{out}");
    assert!(out.contains("corrupt"), "{out}");
}

#[test]
fn order_and_wildcards_under_injected_faults() {
    run("ordering", 2, &[FAULTS]);
    run("wildcard", 4, &[FAULTS]);
    run("mixed", 4, &[FAULTS]);
}

#[test]
fn large_messages_under_injected_faults() {
    run("rndv-large", 2, &[FAULTS]);
}

#[test]
fn small_datagrams_fragment_and_reassemble_under_faults() {
    // The paper's 1,024-byte packets and 10-packet window.
    let out = run("allpairs", 3, &[FAULTS, "DN_UDP_MTU=1024", "DN_UDP_WINDOW=10", "DN_STATS=1"]);
    let reassembled: u64 = out
        .lines()
        .filter_map(|l| l.split(" messages direct, ").nth(1))
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert!(reassembled > 0, "nothing was fragmented:\n{out}");
}

/// Issue 30: liveness without data. The last rank computes for three peer
/// timeouts without calling MPI; its keep-alive thread answers for it,
/// whether the others sent it something first (they wait for its
/// acknowledgements) or only wait for it (they ping it). Hung instead, it
/// is named by every rank that waits for it, even one that owes it nothing.
#[test]
fn a_computing_rank_is_waited_for_and_a_hung_one_is_named() {
    for case in ["quiet-peer 3", "quiet-peer 3 send-first"] {
        run(case, 3, &["DN_UDP_TIMEOUT_MS=1000"]);
        let (ok, _, stderr) = run_with(case, 3, &["DN_UDP_FAULTS=blackhole=2", "DN_UDP_TIMEOUT_MS=1000"]);
        assert!(!ok && stderr.contains("rank 2 is unreachable"), "{case}: {stderr}");
    }
    // 31 messages waiting for the computing rank's acknowledgement: its
    // keep-alive takes them all at each wake-up, not one per wake-up.
    run("quiet-peer 3 send-first", 32, &["DN_UDP_TIMEOUT_MS=1000"]);
}

/// Issue 30: an allreduce, an allgather and an iallreduce whose counts
/// differ between ranks fail on every rank (the rank that finds the fault
/// tells the others; they used to wait for ever), so do a broadcast and an
/// allreduce called at the same point, and a correct allreduce afterwards
/// still works.
#[test]
fn mismatched_collectives_fail_on_every_rank_and_the_communicator_goes_on() {
    for np in [2, 3, 5] {
        let out = run("coll-mismatch-all", np, &[]);
        assert_eq!(out.matches(" refused: ").count(), 3 * np as usize, "{np} ranks:\n{out}");
        // Different collectives at one point (they used to succeed with a
        // wrong sum): everyone but the broadcast's root refuses.
        let out = run("coll-kind-mismatch", np, &[]);
        assert_eq!(out.matches(" refused: ").count(), 2 * np as usize - 1, "{np} ranks:\n{out}");
        assert!(out.contains("called MPI_Bcast where this process called MPI_Allreduce"), "{out}");
    }
}

#[test]
fn a_peer_that_never_answers_ends_the_job_naming_it() {
    let (ok, _, stderr) = run_with("allpairs", 3, &["DN_UDP_FAULTS=blackhole=1", "DN_UDP_TIMEOUT_MS=1500"]);
    assert!(!ok);
    assert!(stderr.contains("rank 1 is unreachable"), "{stderr}");
    assert!(stderr.contains("DN_UDP_TIMEOUT_MS=1500"), "{stderr}");
}

#[test]
fn stray_datagrams_are_dropped_and_counted() {
    // An unconnected socket (the rule with more than one peer): our checks drop them.
    let out = run("udp-garbage", 2, &["DN_UDP_CONNECT=0"]);
    assert!(out.contains("dropped:"), "{out}");
    let out = run("udp-garbage", 3, &[]);
    assert!(out.contains("dropped:"), "{out}");
}

/// A rank with one peer connects its socket: the kernel drops datagrams
/// from any other address, so none reaches our checks (and the one from the
/// right header but a wrong address cannot even be tried).
#[test]
fn a_socket_connected_to_its_one_peer_never_sees_strays() {
    run("udp-garbage kernel", 2, &[]);
}

#[test]
fn sixteen_ranks_use_sixteen_sockets() {
    let out = run("sockets", 16, &[]);
    assert!(out.contains("sockets: 16 in total for 16 ranks"), "{out}");
}

/// `n` UDP ports free on loopback for a host file, below the kernel's
/// ephemeral range (32768-60999 here): a port found free by binding port 0
/// and released could be handed to any socket bound meanwhile, such as
/// another test's rank (CI once failed so: "cannot bind 127.0.0.1:54337:
/// Address already in use"). Each call of this process takes new
/// candidates, from a start that differs between processes.
fn quiet_ports(n: usize) -> Vec<u16> {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 400) as u16 * 25;
    let mut found = Vec::new();
    while found.len() < n {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(k < 2_000, "no free UDP port below the ephemeral range");
        let port = 20_000 + (base - 20_000 + k) % 12_000;
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            found.push(port);
        }
    }
    found
}

/// Two launchers, one per "host" (both on loopback here), starting the
/// ranks `a` and `b` of an `np`-rank job of `case`, meeting through a host
/// file; `env` for both. Their outputs (stdout and stderr together), after
/// checking that both succeeded.
fn two_hosts(np: u32, a: &str, b: &str, case: &str, env: &[(&str, &str)]) -> [String; 2] {
    sim_tests::ensure_binaries();
    let ports = quiet_ports(np as usize);
    let hostfile = std::env::temp_dir().join(format!("dn-hosts-{}-{a}-{b}", std::process::id()));
    let text: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
    std::fs::write(&hostfile, format!("# {np} ranks on two 'hosts'\n{text}")).unwrap();
    let dir = sim_tests::bin_dir();
    let job_id = 4000 + np;
    let launch = |ranks: &str| {
        let mut cmd = std::process::Command::new(dir.join("dnrun"));
        cmd.args(["-n", &np.to_string(), "--backend", "udp", "--timeout", "120"])
            .args(["--job-id", &job_id.to_string(), "--ranks", ranks])
            .arg("--hostfile")
            .arg(&hostfile)
            .arg("--")
            .arg(dir.join("mpi-suite"))
            .args(case.split(' '));
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    };
    let (mut ca, mut cb) = (launch(a), launch(b));
    let first = std::thread::spawn(move || ca.output().unwrap());
    let second = cb.output().unwrap();
    let first = first.join().unwrap();
    let _ = std::fs::remove_file(&hostfile);
    [first, second].map(|o| {
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{text}");
        text
    })
}

/// Two launchers, one per "host", each starting half of the ranks, meeting
/// through a host file (on loopback here).
#[test]
fn ranks_started_separately_meet_through_a_host_file() {
    for shm in ["auto", "off"] {
        let [a, _] = two_hosts(4, "0-1", "2,3", "allpairs", &[("DN_UDP_SHM", shm)]);
        assert!(a.contains("OK allpairs on 4 ranks (udp backend)"), "{a}");
    }
}

/// Issue 49, item 9: a transport per kind of peer. Of a job on two
/// hosts, the ranks of one host talk through shared memory and UDP only
/// with the other host's (here three ranks and one: the lone rank has no
/// shared memory at all). The counters show both paths carried messages,
/// and that the sleeping ranks were woken through their sockets;
/// `DN_UDP_SHM=off` is the control.
#[test]
fn the_ranks_of_one_host_use_shared_memory_and_udp_between_hosts() {
    let stats = [("DN_STATS", "1")];
    for case in ["allpairs", "collectives", "ordering"] {
        let [three, one] = two_hosts(4, "0-2", "3", case, &stats);
        let shm_lines: Vec<&str> = three.lines().filter(|l| l.starts_with("shared memory")).collect();
        assert_eq!(shm_lines.len(), 3, "{three}");
        for l in shm_lines {
            assert!(!l.contains(": 0 messages sent, 0 received"), "{l}");
        }
        let udp_sent: u64 = three
            .lines()
            .filter(|l| l.starts_with("udp datagrams"))
            .map(|l| counter(l, "udp datagrams: ", " sent"))
            .sum();
        assert!(udp_sent > 0, "{three}");
        assert!(!one.contains("shared memory"), "{one}");
        assert!(one.contains("udp datagrams"), "{one}");
    }
    // Rank 1 waits 5 s for rank 0 of its host, asleep on its socket: rank
    // 0's message goes through shared memory and its wake-up through UDP.
    let [three, _] = two_hosts(4, "0-2", "3", "idle", &stats);
    assert!(three.contains("idle: a 5 s blocking receive used"), "{three}");
    let bells: u64 = three
        .lines()
        .filter_map(|l| l.split("wake-ups of this host's peers: ").nth(1))
        .map(|t| counter(t, "", " sent"))
        .sum();
    assert!(bells > 0, "{three}");
    // A progress thread waits in the transport while the program calls
    // MPI: its waits end on either side's news (ranks 0 and 2 on one
    // host, 1 and 3 on the other).
    let [a, _] = two_hosts(4, "0,2", "1,3", "nbc", &[("DN_NBC_PROGRESS", "thread")]);
    assert!(a.contains("OK nbc on 4 ranks (udp backend)"), "{a}");
    let [off, _] = two_hosts(4, "0-2", "3", "allpairs", &[("DN_STATS", "1"), ("DN_UDP_SHM", "off")]);
    assert!(!off.contains("shared memory"), "{off}");
}

/// The number in `line` between `before` and `after`.
fn counter(line: &str, before: &str, after: &str) -> u64 {
    let rest = line.split(before).nth(1).unwrap_or_else(|| panic!("no {before:?} in {line}"));
    rest.split(after).next().and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("no number in {line}"))
}

/// Issue 9: UDP has no device to offload to; `DN_NBC_PROGRESS=offload`
/// says so once and gives the collectives a progress thread instead.
#[test]
fn offload_falls_back_to_a_progress_thread_and_says_so() {
    let out = run("nbc", 3, &["DN_NBC_PROGRESS=offload"]);
    assert_eq!(out.matches("the udp backend has no collective offload; a progress thread").count(), 1, "{out}");
}

/// Issue 9: every collective, blocking and non-blocking, with the real
/// progress thread running beside the program, on odd and even rank counts
/// (1 included) and under injected faults.
#[test]
fn collectives_with_a_real_progress_thread_match_the_reference() {
    for np in [1, 2, 9] {
        run("collectives", np, &["DN_NBC_PROGRESS=thread"]);
    }
    for np in [3, 5, 8] {
        run("nbc", np, &["DN_NBC_PROGRESS=thread"]);
    }
    run("collectives", 3, &["DN_NBC_PROGRESS=thread", FAULTS]);
    run("nbc", 4, &["DN_NBC_PROGRESS=thread", FAULTS]);
}

/// Issue 9: with `DN_NBC_PROGRESS=thread`, a broadcast (rendezvous, root
/// 2) and an all-reduce complete on the other ranks while rank 0 computes
/// without calling MPI; they cannot without rank 0's part. The manual run
/// is the control: the same program fails there (rank 0's part never
/// happens), so the test can tell a thread from none.
#[test]
fn a_progress_thread_moves_collectives_while_the_application_computes() {
    for np in [3, 4] {
        let out = run("overlap 120", np, &["DN_NBC_PROGRESS=thread"]);
        assert!(out.contains("moved something, failed: None"), "{out}");
    }
    run("overlap 120", 3, &["DN_NBC_PROGRESS=thread", FAULTS]);
    let (ok, _, stderr) = run_with("overlap 2", 3, &["DN_NBC_PROGRESS=manual"]);
    assert!(!ok);
    assert!(stderr.contains("the collectives did not progress while rank 0 computed outside MPI"), "{stderr}");
}

/// `DN_UDP_AUTH=1`: dnrun writes a per-job key, every datagram carries a
/// keyed tag, and the stray datagrams of `udp-garbage` (some with valid
/// CRCs) are all dropped as unauthenticated; the suite still passes under
/// injected faults.
#[test]
fn authenticated_mode_drops_what_lacks_the_jobs_key() {
    let out = run("udp-garbage", 2, &["DN_UDP_AUTH=1", "DN_UDP_CONNECT=0"]);
    assert!(out.contains("bogus ACK/NACK), 7 unauthenticated"), "{out}");
    run("allpairs", 4, &[FAULTS, "DN_UDP_AUTH=1"]);
}

#[test]
fn authenticated_mode_without_a_key_is_a_clear_error() {
    let (ok, _, stderr) = run_with("pingpong", 2, &["DN_UDP_AUTH=1", "DN_UDP_KEY_FILE=/nonexistent/udp.key"]);
    assert!(!ok);
    assert!(stderr.contains("cannot read the key file /nonexistent/udp.key"), "{stderr}");
    let (ok, _, stderr) = run_with("pingpong", 2, &["DN_UDP_AUTH=yes"]);
    assert!(!ok);
    assert!(stderr.contains("DN_UDP_AUTH=\"yes\": DN_UDP_AUTH takes `0`, `1`"), "{stderr}");
    // A FIFO (private, so it passes the permission check) is refused at
    // once; it used to block MPI_Init until the job's timeout.
    let dir = sim_tests::bin_dir().join(format!("udp-key-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("key");
    let made = std::process::Command::new("mkfifo").args(["-m", "600"]).arg(&fifo).status().expect("run mkfifo");
    assert!(made.success());
    let key = format!("DN_UDP_KEY_FILE={}", fifo.display());
    let out = sim_tests::dnrun(
        2,
        1,
        &["--backend", "udp", "--timeout", "60", "-x", "DN_UDP_SHM=off", "-x", "DN_UDP_AUTH=1", "-x", &key],
        "mpi-suite",
        &["pingpong"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("is not a regular file"), "{stderr}");
    assert!(!stderr.contains("timeout"), "refused only at the timeout: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 29: over UDP a passive target is served by the progress thread:
/// rank 1 sleeps a second with no MPI call while rank 0 locks it, puts,
/// fetch-and-adds and unlocks, and rank 0's "done" is waiting when rank 1
/// wakes (`mpi-suite rma-passive`; no clock is read). Without the thread
/// the same epoch waits for rank 1, as MPI allows.
#[test]
fn a_progress_thread_serves_a_sleeping_passive_target() {
    run("rma-passive", 2, &["DN_NBC_PROGRESS=thread"]);
}
