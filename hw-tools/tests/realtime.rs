//! The model as a device in real time (`hw_model::realtime`), driven by the
//! device tests of `dimmnet-sim devcheck` in this process: the checks pass
//! on a sound device and fail on one with a planted defect, and a BAR's
//! write-combining file is used for WW when it is there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hw_model::model::PlantedFaults;
use hw_model::realtime::{Pace, Realtime};
use hw_model::ModelConfig;
use hw_tools::harness::temp_dir;

fn config(slots: u16) -> ModelConfig {
    ModelConfig {
        nodes: 1,
        slots,
        partition_size: 16 << 20,
        timing: hw_model::HostProfile::load("p4-2003").expect("built-in profile").device,
    }
}

/// Run `f` against a real-time device answering in another thread.
fn with_device<R>(faults: PlantedFaults, pace: Pace, f: impl FnOnce(&std::path::Path) -> R) -> R {
    let dir = temp_dir("realtime");
    let mut dev = Realtime::create(config(2), &dir, pace).unwrap();
    dev.model_mut().plant(faults);
    let node = dev.node_path(0);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let t = std::thread::spawn(move || dev.run(&flag));
    let r = f(&node);
    stop.store(true, Ordering::SeqCst);
    let report = t.join().expect("the device thread");
    assert!(report.stats.commands > 0, "{}", report.summary());
    assert!(!dir.exists(), "the device left {} behind", dir.display());
    r
}

#[test]
fn the_device_tests_pass_on_a_sound_device() {
    let mut lines = Vec::new();
    let r = with_device(PlantedFaults::default(), Pace::Fast, |p| hw_tools::devcheck::run(p, |l| lines.push(l)));
    assert_eq!(r, Ok(()));
    assert!(lines[0].contains("a card"), "the SIMULATED capability is cleared: {}", lines[0]);
    assert_eq!(lines.len(), 7, "{lines:#?}");
}

#[test]
fn the_device_tests_catch_a_device_that_changes_ivs_payloads() {
    let faults = PlantedFaults { scramble_ivs: true, ..PlantedFaults::default() };
    let r = with_device(faults, Pace::Wall, |p| hw_tools::devcheck::run(p, |_| {}));
    let err = r.expect_err("a device that scrambles IVS payloads passed");
    assert!(err.what.contains("IVS record 0") && err.what.contains("arrived changed"), "{err}");
}

/// A PCI BAR in sysfs is `resourceN`, with `resourceN_wc` beside it for a
/// prefetchable BAR; the driver maps WW from the second. Here both names
/// are hard links to one node file, so the bytes are the same either way.
#[test]
fn ww_is_mapped_from_a_bars_write_combining_file_when_there_is_one() {
    with_device(PlantedFaults::default(), Pace::Fast, |node| {
        let bar = temp_dir("bar");
        std::fs::create_dir_all(&bar).unwrap();
        let uc = bar.join("resource2");
        std::fs::hard_link(node, &uc).unwrap();
        let d = driver::Device::open(&uc, 0).unwrap();
        assert!(!d.ww_write_combining(), "no resource2_wc yet");
        drop(d);
        std::fs::hard_link(node, bar.join("resource2_wc")).unwrap();
        let mut lines = Vec::new();
        assert_eq!(hw_tools::devcheck::run(&uc, |l| lines.push(l)), Ok(()));
        assert!(lines[0].ends_with("WW write-combining"), "{}", lines[0]);
        // Not a sysfs BAR (no `resource` table beside it): no mapping types.
        assert_eq!(hw_tools::devcheck::bar_mapping_types(&uc), None);
        // Only `resource<digits>` names a BAR.
        let other = bar.join("resource");
        std::fs::hard_link(node, &other).unwrap();
        assert!(!driver::Device::open(&other, 0).unwrap().ww_write_combining());
        let _ = std::fs::remove_dir_all(&bar);
    });
}
