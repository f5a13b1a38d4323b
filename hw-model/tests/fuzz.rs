//! Property tests of the register protocol (DESIGN §7): random descriptors,
//! random doorbell sequences and random garbage written anywhere in a slot
//! never crash the model, never touch memory outside the issuing slot's
//! rights, never overwrite an unconsumed ring entry, and every invalid
//! command gets its error status. The same harness is `dimmnet-sim fuzz`.

use hw_model::fuzz::{case, run_case, Target};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_register_traffic_keeps_every_invariant(ops in case(48)) {
        if let Err(msg) = run_case(&Target::Simulator, &ops) {
            return Err(TestCaseError::fail(msg));
        }
    }
}

/// The harness must be able to fail: an isolation check that sees a changed
/// victim byte reports it.
#[test]
fn the_isolation_check_catches_a_changed_victim_byte() {
    use hw_model::harness::temp_dir;
    use hw_model::{Cluster, ClusterConfig};
    let mut cfg = ClusterConfig::new(temp_dir("fuzzcheck"), 2, 2);
    cfg.partition_size = hw_model::fuzz::PARTITION;
    let mut cluster = Cluster::create(cfg).unwrap();
    hw_model::fuzz::prepare(&mut cluster);
    assert!(hw_model::fuzz::check_isolation(&cluster).is_ok());
    let base = cluster.model().partition_base(1) as usize;
    cluster.model_mut().sodimm_mut(0)[base + 77] ^= 1;
    let err = hw_model::fuzz::check_isolation(&cluster).unwrap_err();
    assert!(err.contains("node 0 slot 1") && err.contains("0x4d"), "{err}");
}
