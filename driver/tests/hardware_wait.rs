//! The real card's wait, driven on a plain mapped file with no simulator
//! (issue 7): a timeout is per wait, so time spent in earlier waits never
//! fails a later one, and there is none unless one is set. The "device" is
//! the file; the test plays the card by writing completion entries, from a
//! fake clock that advances one second per reading, so nothing depends on
//! how fast this machine is.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use driver::fpga_regs::layout::{self, Region};
use driver::fpga_regs::ur;
use driver::fpga_regs::{Command, Pattern};
use driver::simlink::mmio::Mapping;
use driver::{Device, DriverError};

/// A one-slot "card" in a plain file, with the identity registers a card
/// has after reset.
fn card(name: &str) -> (std::path::PathBuf, Mapping) {
    let p = std::env::temp_dir().join(format!("dn-hwwait-{}-{name}", std::process::id()));
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
    f.set_len(layout::node_mmio_size(1) as u64).unwrap();
    let m = Mapping::map(&f, &p, 0, layout::node_mmio_size(1)).unwrap();
    let u = Region::Ur.offset();
    let topo = ur::Topology { node: 0, slot: 0, nodes: 1, slots: 1 }.encode();
    for (reg, v) in [
        (ur::off::ID, ur::id_value()),
        (ur::off::TOPOLOGY, topo),
        (ur::off::SODIMM_BASE, 0),
        (ur::off::SODIMM_SIZE, 1 << 20),
        (ur::off::LIMITS, ur::limits::MAX_PAYLOAD.set(0, ur::MAX_PAYLOAD as u64)),
    ] {
        m.write_u64(u + reg, v).unwrap();
    }
    (p, m)
}

/// A `Cell` that a `Send` clock can hold.
#[derive(Default)]
struct Cell<T>(Mutex<T>);

impl<T: Copy> Cell<T> {
    fn new(v: T) -> Cell<T> {
        Cell(Mutex::new(v))
    }
    fn get(&self) -> T {
        *self.0.lock().unwrap()
    }
    fn set(&self, v: T) {
        *self.0.lock().unwrap() = v;
    }
}

/// A clock that advances one second per reading and, at reading `at`,
/// completes command `seq` in the card (status OK).
struct Script {
    ticks: Arc<Cell<u64>>,
    complete_at: Arc<Cell<Option<(u64, u64)>>>,
}

fn scripted(d: &mut Device, card: Mapping) -> Script {
    let ticks = Arc::new(Cell::new(0u64));
    let complete_at: Arc<Cell<Option<(u64, u64)>>> = Arc::new(Cell::new(None));
    let (t, c) = (ticks.clone(), complete_at.clone());
    let base = Instant::now();
    d.set_wait_clock(Box::new(move || {
        let n = t.get() + 1;
        t.set(n);
        if let Some((at, seq)) = c.get() {
            if n >= at {
                let e = Region::Ur.offset()
                    + ur::off::COMPLETIONS
                    + (seq as usize % ur::CQ_DEPTH) * ur::off::COMPLETION_STRIDE;
                card.write_u64(e + 8, 0).unwrap();
                card.write_u64(e, seq + 1).unwrap();
                c.set(None);
            }
        }
        base + Duration::from_secs(n)
    }));
    Script { ticks, complete_at }
}

fn vs() -> Command {
    Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: 0, len: 8 } }
}

#[test]
fn each_wait_has_its_own_timeout_and_a_wait_that_never_ends_times_out() {
    let (path, m) = card("per-wait");
    let mut d = Device::open(&path, 0).unwrap();
    d.set_wait_timeout(Some(Duration::from_secs(10)));
    let s = scripted(&mut d, m);
    // Three waits of about 8 fake seconds each: 24 s in all, each under 10 s.
    for _ in 0..3 {
        let t = d.submit(&vs()).unwrap();
        s.complete_at.set(Some((s.ticks.get() + 8, t.0)));
        d.wait(t).expect("a wait shorter than the timeout succeeds, whatever earlier waits took");
    }
    assert!(s.ticks.get() >= 24, "the waits took {} fake seconds", s.ticks.get());
    // A command the card never completes: the wait ends with Timeout.
    let t = d.submit(&vs()).unwrap();
    let err = d.wait(t).unwrap_err();
    assert!(matches!(err, DriverError::Timeout(d) if d == Duration::from_secs(10)), "{err}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn without_a_timeout_a_wait_lasts_as_long_as_the_card_takes() {
    let (path, m) = card("unbounded");
    let mut d = Device::open(&path, 0).unwrap();
    let s = scripted(&mut d, m);
    d.set_wait_timeout(Some(Duration::from_secs(1)));
    d.set_wait_timeout(None);
    let t = d.submit(&vs()).unwrap();
    // The clock is read only when a timeout is set: complete from another
    // thread after a while instead.
    let seq = t.0;
    let writer = std::thread::spawn({
        let path = path.clone();
        move || {
            std::thread::sleep(Duration::from_millis(200));
            let m = Mapping::open(&path, 0, layout::node_mmio_size(1)).unwrap();
            let e =
                Region::Ur.offset() + ur::off::COMPLETIONS + (seq as usize % ur::CQ_DEPTH) * ur::off::COMPLETION_STRIDE;
            m.write_u64(e + 8, 0).unwrap();
            m.write_u64(e, seq + 1).unwrap();
        }
    });
    d.wait(t).expect("no timeout by default");
    writer.join().unwrap();
    assert_eq!(s.ticks.get(), 0, "no timeout set: the clock is never read");
    let _ = std::fs::remove_file(&path);
}

/// The MPI engine waits through `idle_on` across a whole job (a rank may
/// wait for minutes while a peer computes): it never times out, even with
/// a device timeout set. It once shared a 10 s timer that nothing reset.
#[test]
fn the_engines_waits_never_time_out() {
    let (path, m) = card("idle-on");
    let mut d = Device::open(&path, 0).unwrap();
    let s = scripted(&mut d, m);
    d.set_wait_timeout(Some(Duration::from_secs(1)));
    for _ in 0..1000 {
        d.idle_on(&[]).expect("an engine wait never times out");
        d.idle().expect("an engine wait never times out");
    }
    assert_eq!(s.ticks.get(), 0);
    let _ = std::fs::remove_file(&path);
}
