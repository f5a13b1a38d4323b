//! Property tests of the register protocol (DESIGN §7): random descriptors,
//! random doorbell sequences and random garbage written anywhere in a slot
//! never crash the model, never touch memory outside the issuing slot's
//! rights, never overwrite an unconsumed ring entry, and every invalid
//! command gets its error status. The same harness is `dimmnet-sim fuzz`.

use hw_model::model::PlantedFaults;
use hw_tools::fuzz::{case, run_case, run_case_planted, Op, Target};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_register_traffic_keeps_every_invariant(ops in case(48)) {
        if let Err(msg) = run_case(&Target::Simulator, &ops) {
            return Err(TestCaseError::fail(msg.to_string()));
        }
    }
}

/// The harness must be able to fail: an isolation check that sees a changed
/// victim byte reports it.
#[test]
fn the_isolation_check_catches_a_changed_victim_byte() {
    use hw_model::{Cluster, ClusterConfig};
    use hw_tools::harness::temp_dir;
    let mut cfg = ClusterConfig::new(temp_dir("fuzzcheck"), 2, 2);
    cfg.partition_size = hw_tools::fuzz::PARTITION;
    let mut cluster = Cluster::create(cfg).unwrap();
    let baseline = hw_tools::fuzz::prepare(&mut cluster);
    assert!(hw_tools::fuzz::check_isolation(&cluster, &baseline).is_ok());
    let base = cluster.model().partition_base(1) as usize;
    cluster.model_mut().sodimm_mut(0)[base + 77] ^= 1;
    let err = hw_tools::fuzz::check_isolation(&cluster, &baseline).unwrap_err().to_string();
    assert!(err.contains("node 0 slot 1") && err.contains("0x4d"), "{err}");
    assert_eq!(
        hw_tools::fuzz::check_isolation(&cluster, &baseline),
        Err(hw_tools::fuzz::Finding::Memory { node: 0, slot: 1, offset: 77 })
    );
}

/// Issue 7: the other slots' UR, LLCM, WW and PW are compared too. A word
/// changed in each region of a victim is reported; the receive counters
/// that packets legitimately move are not.
#[test]
fn the_isolation_check_catches_a_changed_victim_register_in_every_region() {
    use fpga_regs::{layout, ur, Region};
    use hw_model::{Cluster, ClusterConfig};
    use hw_tools::harness::temp_dir;
    for (node, slot) in [(0u16, 1u16), (1, 0), (1, 1)] {
        for region in Region::ALL {
            let mut cfg = ClusterConfig::new(temp_dir("fuzzregs"), 2, 2);
            cfg.partition_size = hw_tools::fuzz::PARTITION;
            let mut cluster = Cluster::create(cfg).unwrap();
            let baseline = hw_tools::fuzz::prepare(&mut cluster);
            let off = layout::slot_region_offset(slot as usize, region) + 0x40;
            let mmio = cluster.model().mmio(node);
            let w = mmio.read_u64(off).unwrap();
            mmio.write_u64(off, w ^ 0x100).unwrap();
            let err = hw_tools::fuzz::check_isolation(&cluster, &baseline).unwrap_err().to_string();
            assert!(err.contains(&format!("node {node} slot {slot}: {}", region.name())), "{err}");
        }
        let mut cfg = ClusterConfig::new(temp_dir("fuzzregs"), 2, 2);
        cfg.partition_size = hw_tools::fuzz::PARTITION;
        let mut cluster = Cluster::create(cfg).unwrap();
        let baseline = hw_tools::fuzz::prepare(&mut cluster);
        let off = layout::slot_region_offset(slot as usize, Region::Ur) + ur::off::RX_REFUSED;
        cluster.model().mmio(node).write_u64(off, 3).unwrap();
        assert!(hw_tools::fuzz::check_isolation(&cluster, &baseline).is_ok(), "a receive counter is not a finding");
    }
}

fn sends() -> Vec<Op> {
    (0..6).map(|i| Op::Send { len: 8 + 13 * i, botf: i % 2 == 0, from_sodimm: i % 3 == 0 }).collect()
}

/// Issue 7: IVS payloads are compared with what was sent. The same case
/// passes on the real model and fails on one that scrambles payloads.
#[test]
fn the_ivs_payload_check_catches_a_model_that_scrambles_payloads() {
    run_case(&Target::Simulator, &sends()).expect("the model keeps payloads");
    let planted = PlantedFaults { scramble_ivs: true, ..PlantedFaults::default() };
    let err = run_case_planted(&Target::Simulator, &sends(), planted).unwrap_err().to_string();
    assert!(err.contains("IVS payload 0") && err.contains("arrived changed"), "{err}");
}

/// Issue 28: the arrival queue (map 1.2) names the source of every record
/// accepted. The same case passes on the real model and fails on one that
/// names the wrong source.
#[test]
fn the_arrival_queue_check_catches_a_model_that_misnames_sources() {
    run_case(&Target::Simulator, &sends()).expect("the model names sources");
    let planted = PlantedFaults { misname_arrivals: true, ..PlantedFaults::default() };
    let err = run_case_planted(&Target::Simulator, &sends(), planted).unwrap_err().to_string();
    assert!(err.contains("arrival queue entry for record 0"), "{err}");
}

/// Issue 7: a panic in the model thread fails the case (and so the run,
/// with its seed); it does not hang it.
#[test]
fn a_model_panic_fails_the_case_instead_of_hanging() {
    let planted = PlantedFaults { panic_at_event: Some(3), ..PlantedFaults::default() };
    let err = run_case_planted(&Target::Simulator, &sends(), planted).unwrap_err().to_string();
    assert!(err.contains("model") && err.contains("panicked"), "{err}");
}

/// Issue 7: a device that cannot be opened is a set-up error, not a finding.
#[test]
fn fuzzing_a_missing_device_is_a_setup_error() {
    let target = Target::Device(std::path::Path::new("/nonexistent/node0.mmio"));
    match hw_tools::fuzz::fuzz(&target, 5, 5, 4) {
        hw_tools::fuzz::FuzzOutcome::Setup(e) => assert!(e.contains("cannot open /nonexistent/node0.mmio"), "{e}"),
        other => panic!("expected a set-up error, got {other:?}"),
    }
}

/// Issue 7: changed-word descriptors reach past the opcode, mode and flag
/// checks (random descriptors almost never do: 0 of 7,769 in one run).
#[test]
fn most_changed_descriptors_get_past_the_first_decode_checks() {
    use fpga_regs::{Command, ErrorCode};
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut mutants, mut past) = (0, 0);
    for _ in 0..2000 {
        let op = hw_tools::fuzz::op().new_tree(&mut runner).unwrap().current();
        if let Op::Mutant { proto, shape, word, how } = op {
            mutants += 1;
            let w = hw_tools::fuzz::mutant_words(proto, &shape, word, how);
            match Command::decode(&w) {
                Err(e) if matches!(e.code, ErrorCode::BadOpcode | ErrorCode::BadMode | ErrorCode::ReservedBits) => {}
                _ => past += 1,
            }
        }
    }
    assert!(mutants > 100, "the strategy generates changed descriptors ({mutants})");
    assert!(past * 2 > mutants, "only {past} of {mutants} changed descriptors got past the first checks");
}

/// Regression (found by the random test): stale descriptors fetched after a
/// doorbell rung far past the posted commands must all have ended before
/// the driver posts again, or they run after (and overwrite) its commands.
#[test]
fn commands_after_a_garbage_doorbell_are_not_overrun_by_stale_descriptors() {
    use hw_tools::fuzz::{Defect, Shape};
    let first = vec![
        Op::Send { len: 0, botf: false, from_sodimm: true },
        Op::Send { len: 0, botf: false, from_sodimm: false },
        Op::LocalRoundTrip { shape: Shape::Contiguous { off: 0, len: 0 }, seed: 0 },
        Op::Invalid(Defect::LocalOtherSlot),
        Op::Invalid(Defect::LocalOtherSlot),
        Op::Doorbell { delta: 26 },
        Op::LocalRoundTrip { shape: Shape::Contiguous { off: 0, len: 1 }, seed: 0 },
    ];
    let local = |len| Op::LocalRoundTrip { shape: Shape::Contiguous { off: 0, len }, seed: 0 };
    let other = || Op::Invalid(Defect::LocalOtherSlot);
    let second = vec![
        Op::Send { len: 81, botf: false, from_sodimm: true },
        local(0),
        other(),
        other(),
        other(),
        local(0),
        Op::Poke { region: 0, word: 264, value: 5 },
        Op::BotfRoundTrip { shape: Shape::Contiguous { off: 0, len: 1 }, seed: 0 },
        Op::Send { len: 0, botf: false, from_sodimm: false },
        Op::Doorbell { delta: 12 },
        local(0),
    ];
    for ops in [first, second] {
        for round in 0..10 {
            if let Err(e) = run_case(&Target::Simulator, &ops) {
                panic!("round {round}: {e}");
            }
        }
    }
}
