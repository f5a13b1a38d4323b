//! Waits that name many device words (issue 28). A rank of an N-rank MPI
//! job watches one ring word per peer while it waits. The control file
//! used to hold 16 watch words; a longer list became "wake me on any
//! change" and forgot the values the process had read, so a message that
//! landed between the process reading its rings and handing over never
//! woke it: every job of more than 17 ranks could deadlock. These tests
//! open exactly that window on purpose, at the device level, with a long
//! word list (`idle_on`) and with a poll round too long for the driver's
//! own read log (`poll`).

use driver::{Device, DriverError};
use fpga_regs::{Command, Pattern, Peer, Space};
use hw_model::ClusterConfig;
use hw_tools::harness::{run_actors, temp_dir, ActorFn};

const MIB: u64 = 1 << 20;
const RING: u32 = 4096;
/// Simulated time the receiver computes between two ring reads (ns): long
/// enough that the sender's message lands in the middle of the round.
const GAP_NS: f64 = 10_000.0;

/// How the receiver waits on the words it read.
type WaitFn = fn(&Device, &[(u32, u64)]) -> Result<(), DriverError>;

fn actor<R: Send + 'static>(peer: Peer, f: impl FnOnce(Device) -> R + Send + 'static) -> (Peer, ActorFn<R>) {
    (peer, Box::new(f))
}

/// 3 nodes x 8 slots: the receiver at (0, 0) sets up a ring for each of
/// the 23 other sources (far more words than the old 16), the one sender
/// at (1, 0) sends an 8-byte IVS once the receiver has read its ring.
fn cluster(tag: &str) -> ClusterConfig {
    let mut c = ClusterConfig::new(temp_dir(tag), 3, 8);
    c.partition_size = 4 * MIB;
    c
}

fn sources(me: Peer) -> Vec<Peer> {
    (0..3u16).flat_map(|n| (0..8u16).map(move |s| Peer::new(n, s))).filter(|p| *p != me).collect()
}

/// Set up the rings, read the sender's NWA first and every other ring after
/// it with `GAP_NS` of computing in between, then wait on what was read.
fn receiver(mut d: Device, wait: WaitFn) -> u64 {
    let me = d.info().me;
    let base = d.info().sodimm_base;
    let srcs = sources(me);
    for (k, s) in srcs.iter().enumerate() {
        d.ring_setup(*s, base + MIB + k as u64 * RING as u64, RING).unwrap();
    }
    // The sender is at index 7 of the list ((1, 0) follows the seven
    // other slots of node 0): read it first.
    let sender = Peer::new(1, 0);
    let mut order = srcs.clone();
    order.retain(|p| *p != sender);
    order.insert(0, sender);
    loop {
        d.observe().unwrap();
        let mut words = Vec::new();
        for s in &order {
            let nwa = d.ring_nwa(*s).unwrap();
            if nwa > 0 {
                return nwa;
            }
            words.push((d.ring_nwa_word(*s).unwrap(), nwa));
            d.compute(GAP_NS).unwrap();
        }
        wait(&d, &words).unwrap_or_else(|e| panic!("the wait failed: {e}"));
    }
}

fn sender(mut d: Device) {
    // Ring the doorbell after the receiver has read this ring (at about
    // 100 us) and long before it has read the last one.
    d.compute(150_000.0).unwrap();
    d.write_ww(0, &[7u8; 8]).unwrap();
    d.run(&Command::Ivs { peer: Peer::new(0, 0), space: Space::Window, src: Pattern::Contiguous { addr: 0, len: 8 } })
        .unwrap();
}

fn run(tag: &str, wait: WaitFn) {
    let (_, report, results) = run_actors(
        cluster(tag),
        vec![
            actor(Peer::new(0, 0), move |d| {
                // Start reading at 100 us, well after the sender attached.
                d.compute(100_000.0).unwrap();
                receiver(d, wait)
            }),
            actor(Peer::new(1, 0), |d| {
                sender(d);
                0
            }),
        ],
    )
    .unwrap();
    assert_eq!(results[0], 8, "the receiver saw the 8-byte record");
    assert_eq!(report.deadlocks, 0);
}

/// A list of 23 words, with the values read: the wait ends at once because
/// one word already moved on while the receiver was reading the others.
#[test]
fn a_wait_on_more_words_than_used_to_fit_sees_a_change_made_during_the_round() {
    run("wait-long-list", |d, words| {
        assert!(words.len() > 16, "the list must be longer than the old limit");
        d.idle_on(words)
    });
}

/// The same round waited through the driver's own read log (`Device::idle`),
/// which lists at most 32 words: longer rounds wait for any change since
/// the round's first read, so the change is not missed either.
#[test]
fn a_wait_on_a_round_longer_than_the_read_log_sees_a_change_made_during_the_round() {
    run("wait-long-round", |d, words| {
        assert!(words.len() > 16);
        // Read a few more words so that the round overflows the 32-word log.
        for k in 0..16 {
            d.read_llcm(fpga_regs::llcm::off::SCRATCH + 8 * k).unwrap();
        }
        d.idle()
    });
}

/// More words than the control file can hold are refused, not watched less.
#[test]
fn a_wait_on_too_many_words_is_refused() {
    let (_, _, results) = run_actors(
        cluster("wait-too-many"),
        vec![actor(Peer::new(0, 0), |d: Device| {
            let words: Vec<(u32, u64)> = (0..simlink::simctl::MAX_WATCH as u32 + 1).map(|k| (8 * k, 0)).collect();
            d.idle_on(&words).err().map(|e| e.to_string())
        })],
    )
    .unwrap();
    let msg = results[0].clone().expect("the wait was accepted");
    assert!(msg.contains("more than the simulator can watch"), "{msg}");
}
