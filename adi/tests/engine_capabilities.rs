//! The transport's optional capabilities (issue 10): a backend without
//! [`RemoteMemory`] moves rendezvous data in DATA packets; one with it gets
//! the data stored into the receiver's landing zone and nothing else; a
//! backend without [`SimClock`] has no simulated time and computes for free.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use adi::backend::local::{default_caps, local_world, LocalTransport};
use adi::{Caps, Config, Engine, Region, RemoteMemory, Source, TagSel, Transport, TransportError};

/// Landing zones of every rank, by (rank, zone id): the "remote memory".
type Zones = Arc<Mutex<HashMap<(u32, u32), Vec<u8>>>>;

/// What the transports of a job did: bytes through `try_send`, puts, reads.
#[derive(Default)]
struct Seen {
    sent: AtomicU64,
    puts: AtomicU64,
    reads: AtomicU64,
}

/// The in-process backend, counting what it sends, plus (if `remote`)
/// remote stores into a shared map.
struct WithRemote {
    inner: LocalTransport,
    remote: bool,
    zones: Zones,
    next: u32,
    seen: Arc<Seen>,
}

impl Transport for WithRemote {
    fn name(&self) -> &'static str {
        "local+remote"
    }
    fn rank(&self) -> u32 {
        self.inner.rank()
    }
    fn size(&self) -> u32 {
        self.inner.size()
    }
    fn caps(&self) -> Caps {
        self.inner.caps()
    }
    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError> {
        let ok = self.inner.try_send(dest, parts)?;
        if ok {
            self.seen.sent.fetch_add(parts.iter().map(|p| p.len() as u64).sum(), Relaxed);
        }
        Ok(ok)
    }
    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError> {
        self.inner.poll(sink)
    }
    fn idle(&mut self) -> Result<(), TransportError> {
        self.inner.idle()
    }
    fn remote_memory(&mut self) -> Option<&mut dyn RemoteMemory> {
        if self.remote {
            Some(self)
        } else {
            None
        }
    }
    fn finalize(&mut self) -> Result<(), TransportError> {
        self.inner.finalize()
    }
}

/// Addresses are `rank << 32 | zone id << 24 | offset`.
impl RemoteMemory for WithRemote {
    fn alloc(&mut self, len: u64) -> Result<Option<Region>, TransportError> {
        let id = self.next;
        self.next += 1;
        let len = len.min(100_000);
        self.zones.lock().unwrap().insert((self.rank(), id), vec![0; len as usize]);
        Ok(Some(Region { addr: (self.rank() as u64) << 32 | (id as u64) << 24, len, id }))
    }
    fn put(&mut self, dest: u32, addr: u64, data: &[u8]) -> Result<(), TransportError> {
        assert_eq!(addr >> 32, dest as u64, "a put to another rank's address");
        let (id, off) = ((addr >> 24) as u32 & 0xff, (addr & 0xff_ffff) as usize);
        let mut zones = self.zones.lock().unwrap();
        let zone = zones.get_mut(&(dest, id)).expect("a put into a zone that was not allocated");
        zone[off..off + data.len()].copy_from_slice(data);
        self.seen.puts.fetch_add(1, Relaxed);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
    fn read(&mut self, region: &Region, offset: u64, out: &mut [u8]) -> Result<(), TransportError> {
        let zones = self.zones.lock().unwrap();
        let zone = &zones[&(self.rank(), region.id)];
        out.copy_from_slice(&zone[offset as usize..offset as usize + out.len()]);
        self.seen.reads.fetch_add(1, Relaxed);
        Ok(())
    }
    fn free(&mut self, region: Region) {
        self.zones.lock().unwrap().remove(&(self.rank(), region.id));
    }
}

fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + 5) as u8).collect()
}

/// Send 250,000 bytes (three landing zones' worth) from rank 0 to rank 1
/// by rendezvous, check every byte, and say what the transports did.
fn rendezvous(remote: bool) -> Arc<Seen> {
    let zones: Zones = Arc::default();
    let seen = Arc::new(Seen::default());
    let len = 250_000;
    let handles: Vec<_> = local_world(2, None, default_caps())
        .into_iter()
        .map(|inner| {
            let (zones, seen) = (zones.clone(), seen.clone());
            std::thread::spawn(move || {
                let rank = inner.rank();
                let t = WithRemote { inner, remote, zones, next: 0, seen };
                let cfg = Config { eager_threshold: 1024, force_rendezvous: false, print_stats: false };
                let mut e = Engine::with_config(Box::new(t), cfg);
                if rank == 0 {
                    e.send(1, 3, 0, &message(len), false).unwrap();
                } else {
                    let (st, data) = e.recv(Source::Rank(0), TagSel::Tag(3), 0, len as u64).unwrap();
                    assert_eq!(st.len, len as u64);
                    assert!(data == message(len), "rendezvous data differs");
                    assert_eq!(e.counters().rndv_recv, 1);
                }
                e.finalize().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let left = zones.lock().unwrap().len();
    assert_eq!(left, 0, "{left} landing zone(s) were never freed");
    seen
}

#[test]
fn without_remote_memory_rendezvous_data_goes_in_packets() {
    let seen = rendezvous(false);
    assert_eq!(seen.puts.load(Relaxed), 0);
    assert!(seen.sent.load(Relaxed) >= 250_000, "only {} bytes were sent", seen.sent.load(Relaxed));
}

#[test]
fn with_remote_memory_rendezvous_data_is_stored_into_landing_zones() {
    let seen = rendezvous(true);
    // Three zones of 100,000 bytes: three puts, three reads, and only
    // control packets through try_send.
    assert_eq!((seen.puts.load(Relaxed), seen.reads.load(Relaxed)), (3, 3));
    assert!(seen.sent.load(Relaxed) < 10_000, "{} bytes went through try_send", seen.sent.load(Relaxed));
}

#[test]
fn a_transport_without_a_sim_clock_has_no_simulated_time() {
    let t = local_world(1, None, default_caps()).pop().unwrap();
    let cfg = Config { eager_threshold: 1024, force_rendezvous: false, print_stats: false };
    let mut e = Engine::with_config(Box::new(t), cfg);
    assert_eq!(e.now_ps(), None);
    assert_eq!(e.cost_counts(), None);
    e.compute(1e9).unwrap(); // a second of "work" costs nothing outside the simulator
    e.finalize().unwrap();
}
