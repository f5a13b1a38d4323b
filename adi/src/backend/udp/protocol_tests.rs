//! The reliable datagram protocol on the virtual network (issue 31 §5):
//! its timers asserted to the nanosecond, its recovery from loss,
//! duplication and reordering shown on schedules no real network would
//! give on demand, and its outcome the same on every run. No sockets and
//! no waiting: a test of ten simulated seconds takes milliseconds.

use std::time::Duration;

use proptest::prelude::*;

use super::virtual_net::{self, Fate, VirtualLink, VirtualNet};
use super::wire::{datagram, flag, Header};
use super::*;
use crate::transport::Transport;

/// One way through the virtual network.
const LATENCY: Duration = Duration::from_micros(10);
/// No test may take more simulated time than this.
const LIMIT: Duration = Duration::from_secs(3600);
/// The job number of every test.
const JOB: u32 = 7;

/// The default protocol, without the busy-poll (the virtual clock stands
/// still while a rank spins) and without socket offloads.
fn config() -> UdpConfig {
    UdpConfig { spin: Duration::ZERO, gso: false, gro: false, ..Default::default() }
}

type Rank = DatagramTransport<VirtualLink>;

/// What a rank of [`exchange`] ends with.
#[derive(Debug, PartialEq)]
struct Outcome {
    stats: UdpStats,
    /// Simulated time at the end of its finalize.
    done_at: Duration,
}

/// `k` ranks on a network treating datagrams as `fate` says: each sends
/// `n` messages of `len` bytes to every other, checks that each peer's
/// arrive exactly once, whole and in order, and finalizes.
fn exchange(k: u32, n: u32, len: usize, cfg: &UdpConfig, fate: Fate) -> Vec<Result<Outcome, String>> {
    let net = VirtualNet::new(k, LATENCY, LIMIT, fate);
    let ranks: Vec<Rank> =
        (0..k).map(|r| DatagramTransport::over(net.link(r), r, k, JOB, cfg.clone(), None).unwrap()).collect();
    let threads: Vec<_> = ranks
        .into_iter()
        .map(|mut t| {
            std::thread::spawn(move || -> Result<Outcome, String> {
                let me = t.rank();
                let message = |src: u32, i: u32| -> Vec<u8> {
                    let mut m = vec![src as u8; len.max(4)];
                    m[..4].copy_from_slice(&i.to_le_bytes());
                    m
                };
                let (mut sent, mut got) = (vec![n; k as usize], vec![n; k as usize]);
                for p in (0..k).filter(|&p| p != me) {
                    (sent[p as usize], got[p as usize]) = (0, 0);
                }
                let mut wrong = None;
                while sent.iter().chain(&got).any(|&c| c < n) {
                    for p in 0..k {
                        while sent[p as usize] < n
                            && t.try_send(p, &[&message(me, sent[p as usize])]).map_err(|e| e.to_string())?
                        {
                            sent[p as usize] += 1;
                        }
                    }
                    t.poll(&mut |src, m| {
                        let i = got[src as usize];
                        if m != message(src, i) && wrong.is_none() {
                            wrong = Some(format!("message {i} from {src} arrived wrong or out of order"));
                        }
                        got[src as usize] += 1;
                    })
                    .map_err(|e| e.to_string())?;
                    if let Some(w) = wrong.take() {
                        return Err(w);
                    }
                    t.idle().map_err(|e| e.to_string())?;
                }
                t.finalize().map_err(|e| e.to_string())?;
                Ok(Outcome { stats: t.stats(), done_at: t.link.elapsed() })
            })
        })
        .collect();
    threads.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("the rank panicked".into()))).collect()
}

/// Ranks 0 and 1 of a two-rank job on a network treating datagrams as
/// `fate` says, with the default protocol ([`config`]).
fn two(fate: Fate) -> (Rank, Rank) {
    let net = VirtualNet::new(2, LATENCY, LIMIT, fate);
    let open = |r| DatagramTransport::over(net.link(r), r, 2, JOB, config(), None).unwrap();
    (open(0), open(1))
}

/// Every datagram from rank 1 is lost: it plays the hung peer.
fn rank1_silent() -> Fate {
    Arc::new(|from, _, _| if from == 1 { vec![] } else { vec![Duration::ZERO] })
}

/// Run rank `t` in a thread that polls and idles, answering into the void
/// when its datagrams are lost, until its clock reads `until`.
fn poll_until(mut t: Rank, until: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(
        move || {
            while t.link.elapsed() < until && t.poll(&mut |_, _| {}).and_then(|_| t.idle()).is_ok() {}
        },
    )
}

/// Rank 1's transport in a thread running `body`, and rank 0 as a bare
/// link in the test's hands, to send whatever rank 0 could send.
fn forger<T: Send + 'static>(
    cfg: UdpConfig,
    body: impl FnOnce(&mut Rank) -> T + Send + 'static,
) -> (VirtualLink, std::thread::JoinHandle<(T, UdpStats)>) {
    let net = VirtualNet::new(2, LATENCY, LIMIT, virtual_net::reliable());
    let raw = net.link(0);
    let mut t = DatagramTransport::over(net.link(1), 1, 2, JOB, cfg, None).unwrap();
    let h = std::thread::spawn(move || {
        let out = body(&mut t);
        (out, t.stats())
    });
    (raw, h)
}

/// Data datagram `seq` from rank 0 to rank 1 holding the whole of `payload`.
fn data(seq: u32, payload: &[u8]) -> Header {
    let n = payload.len() as u32;
    Header { flags: flag::DATA, job: JOB, src: 0, dst: 1, seq, ack: 0, msg_len: n, frag: 0, nfrags: 1, payload: n }
}

/// Everything that reaches the bare link until the clock reads `t`.
fn listen_until(raw: &mut VirtualLink, t: Duration) -> Vec<Header> {
    let mut b = [0u8; 70_000];
    let mut got = Vec::new();
    while raw.elapsed() < t {
        let wait = t - raw.elapsed();
        if let Some(r) = raw.recv_wait(&mut b, wait).unwrap() {
            got.push(Header::parse(&b[..r.len], JOB, 0, 2).unwrap());
        }
    }
    got
}

/// Poll and idle until a message arrives; its bytes and simulated arrival.
fn receive(t: &mut Rank) -> Result<(Vec<u8>, Duration), TransportError> {
    loop {
        let mut got = None;
        t.poll(&mut |_, m| got = Some(m.to_vec()))?;
        if let Some(m) = got {
            return Ok((m, t.link.elapsed()));
        }
        t.idle()?;
    }
}

/// §2.3's retransmission timer: a lost datagram goes again `rto_min`
/// after it was sent, and the timeout doubles with each loss. With the
/// first `k` copies lost, the message arrives at exactly 5, 15, 35 and
/// 75 ms (plus one latency) for k = 1..4.
#[test]
fn a_lost_datagram_is_resent_when_its_timer_runs_out_and_the_timer_doubles() {
    for (lost, expect_ms) in [(0u64, 0u64), (1, 5), (2, 15), (3, 35), (4, 75)] {
        let fate: Fate = Arc::new(move |from, _, n| if from == 0 && n < lost { vec![] } else { vec![Duration::ZERO] });
        let (mut a, mut b) = two(fate);
        let sender = std::thread::spawn(move || {
            assert!(a.try_send(1, &[b"ping"]).unwrap());
            a.finalize().map(|()| a.stats())
        });
        let (m, at) = receive(&mut b).unwrap();
        b.finalize().unwrap();
        drop(b);
        let stats = sender.join().unwrap().unwrap();
        assert_eq!(m, b"ping");
        assert_eq!(at, Duration::from_millis(expect_ms) + LATENCY, "{lost} copies lost");
        assert_eq!(stats.timeouts, lost, "{stats:?}");
        assert_eq!(stats.retransmits, lost, "{stats:?}");
    }
}

/// A peer that answers nothing (its datagrams all lost, as under
/// `DN_UDP_FAULTS=blackhole=1`) is declared lost, by name, exactly
/// `peer_timeout` after the first datagram it did not acknowledge.
#[test]
fn a_silent_peer_is_lost_exactly_one_peer_timeout_after_the_first_unanswered_datagram() {
    let timeout = config().peer_timeout;
    let (mut a, b) = two(rank1_silent());
    // It receives and acknowledges, into the void, for twice as long.
    let silent = poll_until(b, 2 * timeout);
    assert!(a.try_send(1, &[b"hello"]).unwrap());
    let err = a.finalize().expect_err("a peer that never answered was not noticed");
    let at = a.link.elapsed();
    drop(a);
    silent.join().unwrap();
    assert!(matches!(err, TransportError::PeerLost { rank: 1, .. }), "{err}");
    assert_eq!(at, timeout);
}

/// Issue 30: a rank that only waits for a peer, owing it nothing, still
/// notices that the peer is gone. It pings the silent peer from a quarter
/// of the peer timeout on, every eighth, and gives up, naming it, exactly
/// one timeout after it last heard from it.
#[test]
fn a_rank_that_only_receives_notices_a_silent_peer_at_the_timeout() {
    let timeout = config().peer_timeout;
    let (mut a, b) = two(rank1_silent());
    let silent = poll_until(b, 2 * timeout);
    let err = receive(&mut a).expect_err("the wait for a silent peer never ended");
    let (at, stats) = (a.link.elapsed(), a.stats());
    drop(a);
    silent.join().unwrap();
    assert!(matches!(err, TransportError::PeerLost { rank: 1, .. }), "{err}");
    assert!(err.to_string().contains("ping"), "{err}");
    assert_eq!(at, timeout);
    // At 2.5, 3.75, 5, 6.25, 7.5 and 8.75 s.
    assert_eq!(stats.pings_sent, 6, "{stats:?}");
}

/// The other side of the same rule: a peer that sends nothing for three
/// peer timeouts but answers pings is waited for, and its message arrives.
#[test]
fn a_quiet_peer_that_answers_pings_is_waited_for() {
    let late = 3 * config().peer_timeout;
    let (mut a, mut b) = two(virtual_net::reliable());
    let quiet = std::thread::spawn(move || -> Result<UdpStats, TransportError> {
        while b.link.elapsed() < late {
            b.poll(&mut |_, _| {})?;
            b.idle()?;
        }
        assert!(b.try_send(0, &[b"at last"])?);
        b.finalize()?;
        Ok(b.stats())
    });
    let (m, at) = receive(&mut a).unwrap();
    a.finalize().unwrap();
    let stats = a.stats();
    drop(a);
    let theirs = quiet.join().unwrap().unwrap();
    assert_eq!(m, b"at last");
    assert!(at > late, "{at:?}");
    assert!(stats.pings_sent > 0 && theirs.pings_answered > 0, "{stats:?} {theirs:?}");
}

/// The receiver's own liveness check: a gap that the sender never fills
/// is asked for again every `rto_max` and ends the wait, naming the peer,
/// exactly `peer_timeout` after it opened.
#[test]
fn a_gap_that_is_never_filled_ends_with_an_error_naming_the_peer_at_the_timeout() {
    let cfg = UdpConfig { peer_timeout: Duration::from_millis(300), rto_max: Duration::from_millis(50), ..config() };
    let (mut raw, rank1) = forger(cfg, |t| receive(t).map(|_| ()).map_err(|e| (e, t.link.elapsed())));
    // Datagram 1 arrives at 10 us; datagram 0 never will.
    raw.send(1, &[IoSlice::new(&datagram(data(1, b"late"), b"late"))]).unwrap();
    let asked = listen_until(&mut raw, Duration::from_secs(1));
    drop(raw);
    let (result, stats) = rank1.join().unwrap();
    let (err, at) = result.expect_err("the gap never ended the wait");
    assert!(matches!(err, TransportError::PeerLost { rank: 0, .. }), "{err}");
    assert!(err.to_string().contains("datagram 0"), "{err}");
    assert_eq!(at, LATENCY + Duration::from_millis(300));
    // A NACK on arrival, then one every 50 ms: 5 more. The sixth would
    // fall at the timeout itself, where the error comes first.
    let nacks: Vec<_> = asked.iter().filter(|h| h.flags & flag::NACK != 0).collect();
    assert_eq!(nacks.len(), 6, "{asked:?}");
    assert!(nacks.iter().all(|h| h.seq == 0), "{nacks:?}");
    assert_eq!(stats.nacks_sent, 6);
}

/// A rank in finalize stays while a peer may still need an
/// acknowledgement from it: the peer's retransmission 600 ms later
/// (after the old 250 ms linger would have let the rank go) is still
/// answered, and the rank leaves once the peer says goodbye.
#[test]
fn finalize_waits_for_a_peer_that_has_not_said_goodbye() {
    let (mut raw, rank1) = forger(config(), |t| {
        let m = receive(t).map(|(m, _)| m);
        (m, t.finalize().map(|()| t.link.elapsed()))
    });
    let last = datagram(data(0, b"last"), b"last");
    raw.send(1, &[IoSlice::new(&last)]).unwrap();
    // Our ACK "was lost": ignore everything for a while, then retransmit.
    listen_until(&mut raw, Duration::from_millis(600));
    raw.send(1, &[IoSlice::new(&last)]).unwrap();
    let answer = listen_until(&mut raw, Duration::from_millis(600) + 2 * LATENCY);
    assert!(answer.iter().any(|h| h.flags & flag::ACK != 0 && h.ack == 1), "no acknowledgement: {answer:?}");
    let bye = Header { flags: flag::BYE | flag::HAVE_BYE, ack: 0, msg_len: 0, nfrags: 0, payload: 0, ..data(0, b"") };
    raw.send(1, &[IoSlice::new(&datagram(bye, b""))]).unwrap();
    // The rank needs nothing more from us: it must be gone by the time our
    // goodbye reached it.
    let bye_at = raw.elapsed() + LATENCY;
    drop(raw);
    let ((m, left), stats) = rank1.join().unwrap();
    assert_eq!(m.unwrap(), b"last");
    assert_eq!(left.unwrap(), bye_at, "the rank did not leave when the goodbye came");
    assert_eq!(stats.left_without_bye, 0);
}

/// Issue 8: at 50% loss a rank used to leave while a peer's last datagram
/// was still unacknowledged. With goodbyes no rank leaves while another
/// needs something from it; and the same schedule gives the same run,
/// to the counter and the nanosecond.
#[test]
fn finalize_at_half_loss_leaves_no_peer_behind_and_runs_the_same_every_time() {
    for seed in 1..=6 {
        let fate = virtual_net::random(seed, 0.5, 0.0, 0.0, Duration::ZERO);
        let first = exchange(4, 20, 100, &config(), fate.clone());
        for (rank, r) in first.iter().enumerate() {
            let o = r.as_ref().unwrap_or_else(|e| panic!("seed {seed}: rank {rank}: {e}"));
            assert!(o.stats.byes_sent >= 3, "seed {seed}: rank {rank} did not say goodbye to everyone");
            assert!(o.stats.retransmits > 0, "seed {seed}: rank {rank}: nothing lost at 50% loss?");
        }
        assert_eq!(exchange(4, 20, 100, &config(), fate), first, "seed {seed}: a second run differed");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any schedule of loss, duplication and reordering: every message
    /// arrives exactly once, whole and in order (checked in `exchange`),
    /// fragmented or not, and every rank finalizes.
    #[test]
    fn every_message_arrives_once_and_in_order_under_any_schedule(
        seed in any::<u64>(),
        ranks in 2u32..=4,
        messages in 1u32..=12,
        len in prop::sample::select(vec![1usize, 100, 2_500, 9_000]),
        loss in 0.0f64..0.4,
        dup in 0.0f64..0.3,
        reorder in 0.0f64..0.5,
        jitter_us in 1u64..3_000,
    ) {
        let cfg = UdpConfig { mtu: 1_000, window: 8, ..config() };
        let fate = virtual_net::random(seed, loss, dup, reorder, Duration::from_micros(jitter_us));
        for (rank, r) in exchange(ranks, messages, len, &cfg, fate).into_iter().enumerate() {
            prop_assert!(r.is_ok(), "rank {}: {:?}", rank, r);
        }
    }
}
