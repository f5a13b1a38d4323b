//! A device's refusal keeps its kind on the way up (issue 49, item 6):
//! the DIMMnet-2 backend over the model as a device (in real time, in a
//! thread), a store into memory the target never exposed for writing. The
//! device refuses it (`NotExposed`), and the backend reports a range
//! fault with the device's words, which the MPI layers turn into
//! `MPI_ERR_RMA_RANGE` (capi's unit test of the class).
#![cfg(feature = "dimmnet")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use adi::backend::dimmnet::{DimmnetConfig, DimmnetTransport, RankMap};
use adi::transport::Transport;
use adi::{DeviceFault, TransportError};
use hw_model::realtime::{Pace, Realtime};

#[test]
fn a_store_outside_what_the_target_exposed_is_a_range_fault() {
    let dir = std::env::temp_dir().join(format!("adi-device-faults-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let cfg = hw_model::ModelConfig {
        nodes: 1,
        slots: 2,
        partition_size: 16 << 20,
        timing: hw_model::HostProfile::load("p4-2003").expect("built-in profile").device,
    };
    let mut dev = Realtime::create(cfg, &dir.join("dev"), Pace::Fast).expect("the model as a device");
    let node = dev.node_path(0);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let device = std::thread::spawn(move || dev.run(&flag));

    let open = |rank| {
        let map = RankMap::block(2, 1).expect("two ranks on one node");
        DimmnetTransport::open(&node, rank as u16, rank, map, DimmnetConfig::default())
    };
    let (mut t0, _t1) = (open(0).expect("rank 0 opens"), open(1).expect("rank 1 opens"));
    let os = t0.one_sided().expect("DIMMnet-2 has one-sided access");
    // Slot 1's partition starts at 16 MiB; its first page is exposed for
    // reading only (the hello page), so a store there is a protection fault.
    let r = os.put(1, 16 << 20, &[1, 2, 3, 4]).and_then(|()| os.complete());
    stop.store(true, Ordering::SeqCst);
    device.join().expect("the device thread");
    let _ = std::fs::remove_dir_all(&dir);
    match r {
        Err(TransportError::Device { fault: DeviceFault::Range, message, .. }) => {
            assert!(message.contains("NotExposed"), "{message}");
        }
        other => panic!("a store into a read-only exposure gave {other:?}"),
    }
}
