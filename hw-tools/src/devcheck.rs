//! `dimmnet-sim devcheck`: the device tests a card must pass, run through
//! the driver against whatever a path maps: a card's BAR (in a virtual
//! machine, `scripts/vm-test.sh`), or the node file of `dimmnet-sim serve
//! --realtime` (the test suite). Two slots of one node talk to each other,
//! each driven by its own thread as two processes would, with wall-clock
//! timeouts so that a device that stops answering is a failure, never a
//! hang.
//!
//! What it checks (seed 004 §2–3; DESIGN §7):
//!
//! * the slot's identity registers (magic, version, topology, capabilities);
//! * VS then VL in every vector mode, byte for byte;
//! * RVS and RVL between the two slots in every mode, into the range the
//!   other slot exposed;
//! * IVS records through the other slot's ring, in order, many times the
//!   ring's size (so it wraps and the sender meets backpressure);
//! * protection: the other slot's partition, memory it did not expose, a
//!   bad opcode, reserved bits, an invalid doorbell, each refused with its
//!   code, and the slot usable again after `resync`;
//! * the atomic unit: both slots fetch-and-add one word concurrently, and
//!   every add lands and sees a different old value.

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use driver::{Device, DriverError};
use fpga_regs::sched::{ElemType, ReduceOp};
use fpga_regs::ur::{self, Caps, ExposePerm, Status};
use fpga_regs::{Atomic, Command, ErrorCode, Near, Pattern, Peer, Region, Space};

use crate::harness::pattern_bytes;

/// How long any one wait may take before the device counts as hung.
const WAIT_LIMIT: Duration = Duration::from_secs(20);
/// Where index lists go in WW.
const LIST_OFF: u32 = 0xC000;
/// The other slot's exposed range, from the start of its partition.
const EXPOSED_OFF: u64 = 1 << 20;
const EXPOSED_LEN: u32 = 256 * 1024;
/// The other slot's ring for this one: where, and how big.
const RING_OFF: u64 = 2 << 20;
const RING_SIZE: u32 = 16 * 1024;
/// IVS records sent through that ring (of 200 to 1,000 bytes: about 40
/// times the ring).
const IVS_RECORDS: u64 = 1000;
/// Fetch-and-adds per slot.
const ADDS: u64 = 200;

/// One check's outcome, as printed.
pub type Line = String;

fn fail(what: &str) -> impl Fn(DriverError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn open(path: &Path, slot: u16) -> Result<Device, String> {
    let d = Device::open(path, slot).map_err(|e| format!("cannot open slot {slot} of {}: {e}", path.display()))?;
    d.set_wait_timeout(Some(WAIT_LIMIT));
    Ok(d)
}

fn read_pw(d: &Device, off: usize, len: usize) -> Result<Vec<u8>, String> {
    let mut v = vec![0u8; len];
    d.read_pw(off, &mut v).map_err(fail("PW read"))?;
    Ok(v)
}

/// Every vector mode over a 64 KiB span at `base`, with its index list.
fn patterns(base: u64) -> Vec<(Pattern, Vec<u8>)> {
    let list: Vec<u32> = vec![480, 0, 160, 320, 48, 640, 800, 96, 960, 1120];
    let packed: Vec<(u32, u32)> = vec![(600, 7), (0, 33), (100, 64), (300, 1), (400, 120), (50, 20)];
    vec![
        (Pattern::Contiguous { addr: base + 0x100, len: 3000 }, vec![]),
        (Pattern::Stride { addr: base + 0x1000, elem: 24, stride: 100, count: 20 }, vec![]),
        (
            Pattern::List { base: base + 0x4000, elem: 16, count: list.len() as u32, list_off: LIST_OFF },
            list.iter().flat_map(|o| o.to_le_bytes()).collect(),
        ),
        (
            Pattern::PackedList { base: base + 0x8000, count: packed.len() as u32, list_off: LIST_OFF },
            packed.iter().flat_map(|(o, l)| o.to_le_bytes().into_iter().chain(l.to_le_bytes())).collect(),
        ),
    ]
}

fn total(p: &Pattern, list: &[u8]) -> Result<usize, String> {
    Ok(p.segments(list).map_err(|e| format!("{p:?}: {e}"))?.iter().map(|s| s.1 as usize).sum())
}

fn ivs_record(i: u64) -> Vec<u8> {
    pattern_bytes(0xD1 + i, 200 + (i as usize * 37) % 800)
}

fn identity(d: &Device) -> Result<Line, String> {
    let info = d.info();
    let caps = Caps::from_bits_truncate(ur::caps::FLAGS.get(d.read_ur(ur::off::CAPS)) as u32);
    if !caps.contains(Caps::VECTOR_LOCAL | Caps::VECTOR_REMOTE | Caps::IVS | Caps::ATOMIC) {
        return Err(format!("capabilities {caps:?} lack what these checks use"));
    }
    if info.slots < 2 {
        return Err(format!("node {} has {} slot; these checks need 2", info.me.node, info.slots));
    }
    Ok(format!(
        "identity: register map {}.{}, node {} of {}, {} slots, partition {} MiB, {}, WW {}",
        info.version.0,
        info.version.1,
        info.me.node,
        info.nodes,
        info.slots,
        info.sodimm_size >> 20,
        if caps.contains(Caps::SIMULATED) { "a simulator" } else { "a card" },
        if d.ww_write_combining() { "write-combining" } else { "mapped with the other windows" }
    ))
}

/// How the kernel mapped a PCI BAR opened through sysfs
/// (`…/0000:00:05.0/resource2`): the entries of
/// `/sys/kernel/debug/x86/pat_memtype_list` inside the BAR's physical
/// range, while this process holds its mappings. `None` when the path is
/// not a sysfs BAR or debugfs is not mounted.
pub fn bar_mapping_types(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let index: usize = name.strip_prefix("resource")?.parse().ok()?;
    let resource = std::fs::read_to_string(path.with_file_name("resource")).ok()?;
    let parse = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let mut fields = resource.lines().nth(index)?.split_whitespace();
    let (start, end) = (parse(fields.next()?)?, parse(fields.next()?)?);
    let list = std::fs::read_to_string("/sys/kernel/debug/x86/pat_memtype_list").ok()?;
    let inside: Vec<&str> = list
        .lines()
        .filter(|l| {
            let Some(range) = l.split('[').nth(1).and_then(|r| r.split(']').next()) else { return false };
            let Some(lo) = range.split_whitespace().nth(1).and_then(|r| r.split('-').next()) else { return false };
            parse(lo).is_some_and(|a| (start..=end).contains(&a))
        })
        .collect();
    Some(format!(
        "BAR {start:#x}-{end:#x}: {}",
        if inside.is_empty() { "no PAT entries".into() } else { inside.join("; ") }
    ))
}

fn local_modes(d: &mut Device) -> Result<Line, String> {
    let base = d.info().sodimm_base;
    let mut bytes = 0;
    for (k, (p, list)) in patterns(base).into_iter().enumerate() {
        let data = pattern_bytes(k as u64 + 1, total(&p, &list)?);
        d.write_ww(0, &data).map_err(fail("WW write"))?;
        d.write_ww(LIST_OFF as usize, &list).map_err(fail("WW write"))?;
        d.run(&Command::Vs { ww_off: 0, dst: p }).map_err(fail("VS"))?;
        d.run(&Command::Vl { src: p, pw_off: 0x100 }).map_err(fail("VL"))?;
        if read_pw(d, 0x100, data.len())? != data {
            return Err(format!("VS then VL {:?}: PW does not hold what WW held", p.mode()));
        }
        bytes += data.len();
    }
    Ok(format!("VS/VL: 4 vector modes, {bytes} bytes back byte for byte"))
}

fn remote_modes(d: &mut Device, peer: Peer, peer_base: u64) -> Result<Line, String> {
    let mut bytes = 0;
    for (k, (p, list)) in patterns(peer_base + EXPOSED_OFF).into_iter().enumerate() {
        let data = pattern_bytes(100 + k as u64, total(&p, &list)?);
        d.write_ww(0, &data).map_err(fail("WW write"))?;
        d.write_ww(LIST_OFF as usize, &list).map_err(fail("WW write"))?;
        d.run(&Command::Rvs { peer, src: Near::Window(0), dst: p }).map_err(fail("RVS"))?;
        d.run(&Command::Rvl { peer, src: p, dst: Near::Window(0x2000) }).map_err(fail("RVL"))?;
        if read_pw(d, 0x2000, data.len())? != data {
            return Err(format!("RVS then RVL {:?} to {peer}: the bytes differ", p.mode()));
        }
        bytes += data.len();
    }
    Ok(format!("RVS/RVL to {peer}: 4 vector modes, {bytes} bytes back byte for byte"))
}

fn send_records(d: &mut Device, peer: Peer) -> Result<Line, String> {
    for i in 0..IVS_RECORDS {
        let rec = ivs_record(i);
        d.write_ww(0, &rec).map_err(fail("WW write"))?;
        let src = Pattern::Contiguous { addr: 0, len: rec.len() as u32 };
        d.run(&Command::Ivs { peer, space: Space::Window, src }).map_err(fail("IVS"))?;
    }
    Ok(format!("IVS to {peer}: {IVS_RECORDS} records sent through a {} KiB ring", RING_SIZE / 1024))
}

/// Receive every record, checking each; a wrong one is reported once all
/// have been consumed, so the sender never waits on a full ring for ever.
fn receive_records(d: &mut Device, src: Peer) -> Result<Line, String> {
    let mut first_wrong = None;
    for i in 0..IVS_RECORDS {
        let want = ivs_record(i);
        let len = want.len() as u64;
        d.poll(|d| (d.ring_available(src).ok()? >= fpga_regs::llcm::record_len(len)).then_some(()))
            .map_err(fail("waiting for an IVS record"))?;
        d.ring_load(src, 0, len, 0x8000).map_err(fail("ring load"))?;
        if first_wrong.is_none() && read_pw(d, 0x8000, want.len())? != want {
            first_wrong = Some(format!("IVS record {i} from {src} arrived changed"));
        }
        d.ring_consume(src, len).map_err(fail("ring consume"))?;
    }
    if let Some(e) = first_wrong {
        return Err(e);
    }
    Ok(format!("IVS from {src}: {IVS_RECORDS} records in order, byte for byte"))
}

fn protection(d: &mut Device, peer: Peer, peer_base: u64) -> Result<Line, String> {
    let me = d.info().clone();
    let contiguous = |addr, len| Pattern::Contiguous { addr, len };
    let cases = [
        (Command::Vl { src: contiguous(peer_base, 64), pw_off: 0 }, ErrorCode::OutOfPartition),
        (
            Command::Vs { ww_off: 0, dst: contiguous(me.sodimm_base + me.sodimm_size - 8, 64) },
            ErrorCode::OutOfPartition,
        ),
        (Command::Vl { src: contiguous(me.sodimm_base, 4096), pw_off: 0xF800 }, ErrorCode::WindowRange),
        (Command::Rvs { peer, src: Near::Window(0), dst: contiguous(peer_base, 64) }, ErrorCode::NotExposed),
        (Command::Rvl { peer, src: contiguous(peer_base + RING_OFF, 64), dst: Near::Window(0) }, ErrorCode::NotExposed),
        (
            Command::Rvl { peer: Peer::new(me.nodes, 0), src: contiguous(0, 8), dst: Near::Window(0) },
            ErrorCode::NoSuchNode,
        ),
    ];
    let before = d.errors().count;
    for (c, code) in &cases {
        match d.run(c) {
            Err(e) if e.code() == Some(*code) => {}
            Err(e) => return Err(format!("{c:?}: refused with {e}, expected {}", code.name())),
            Ok(_) => return Err(format!("{c:?} was carried out; it must be refused with {}", code.name())),
        }
    }
    let mut raw = Command::Vl { src: contiguous(me.sodimm_base, 8), pw_off: 0 }.encode();
    raw[7] = 1;
    for (words, code) in [(raw, ErrorCode::ReservedBits), ([0; 8], ErrorCode::BadOpcode)] {
        let t = d.submit_raw(words).map_err(fail("raw descriptor"))?;
        match d.wait(t) {
            Err(e) if e.code() == Some(code) => {}
            other => return Err(format!("raw descriptor {words:x?}: {other:?}, expected {}", code.name())),
        }
    }
    let refused = d.errors().count - before;
    if refused != cases.len() as u64 + 2 {
        return Err(format!("ERROR_COUNT rose by {refused}, {} commands were refused", cases.len() + 2));
    }
    // A doorbell past what was posted is refused, and the slot recovers.
    let db = d.read_ur(ur::off::DOORBELL);
    d.poke(Region::Ur, ur::off::DOORBELL, db + 1000).map_err(fail("doorbell write"))?;
    d.poll(|d| d.status().contains(Status::DOORBELL_INVALID).then_some(()))
        .map_err(fail("waiting for DOORBELL_INVALID"))?;
    d.resync().map_err(fail("resync"))?;
    d.ack_errors();
    d.poll(|d| (!d.status().contains(Status::ERROR)).then_some(()))
        .map_err(fail("waiting for STATUS.ERROR to clear"))?;
    d.run(&Command::Vl { src: contiguous(me.sodimm_base, 8), pw_off: 0 }).map_err(fail("VL after resync"))?;
    Ok(format!("protection: {} refusals with their codes, an invalid doorbell, recovery", cases.len() + 2))
}

fn fetch_adds(d: &mut Device, peer: Peer, addr: u64) -> Result<Vec<u64>, String> {
    let add = Command::Amo {
        peer,
        addr,
        op: Atomic::Reduce(ReduceOp::Sum),
        elem: ElemType::U64,
        operand: 1,
        compare: 0,
        pw_off: 0x100,
    };
    let mut seen = Vec::new();
    for _ in 0..ADDS {
        d.run(&add).map_err(fail("fetch-and-add"))?;
        let old = read_pw(d, 0x100, 8)?;
        seen.push(u64::from_le_bytes(old.try_into().map_err(|_| "short PW read")?));
    }
    Ok(seen)
}

/// A check the device failed: which, and what it saw (the first failure
/// ends the run).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what}")]
pub struct CheckFailed {
    /// The check, and what it saw against what it expected.
    pub what: String,
}

/// Run every check on slots 0 and 1 of `path`, calling `out` with a line
/// per check passed. The first failure ends the run with its description.
pub fn run(path: &Path, out: impl FnMut(Line)) -> Result<(), CheckFailed> {
    run_checks(path, out).map_err(|what| CheckFailed { what })
}

fn run_checks(path: &Path, mut out: impl FnMut(Line)) -> Result<(), String> {
    let mut a = open(path, 0)?;
    out(identity(&a)?);
    if let Some(types) = bar_mapping_types(path) {
        out(format!("mapping types: {types}"));
    }
    let me = a.info().me;
    let b_peer = Peer::new(me.node, 1);
    let a_base = a.info().sodimm_base;
    let b_base = a_base + a.info().sodimm_size;
    out(local_modes(&mut a)?);
    // Slot 1 runs in its own thread, as its own process would.
    let phase = Arc::new(Barrier::new(2));
    let b_phase = phase.clone();
    let path_b = path.to_path_buf();
    let b = std::thread::spawn(move || -> Result<(Vec<Line>, Vec<u64>), String> {
        // Whatever happens, meet the other thread at each barrier, so a
        // failure here is reported, not a hang there.
        let mut setup = (|| {
            let mut d = open(&path_b, 1)?;
            let base = d.info().sodimm_base;
            d.write_ww(0, &[0u8; 64]).map_err(fail("WW write"))?;
            d.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base + EXPOSED_OFF, len: 64 } })
                .map_err(fail("VS"))?;
            d.expose(0, base + EXPOSED_OFF, EXPOSED_LEN, ExposePerm::REMOTE_READ | ExposePerm::REMOTE_WRITE)
                .map_err(fail("expose"))?;
            d.ring_setup(me, base + RING_OFF, RING_SIZE).map_err(fail("ring setup"))?;
            Ok::<Device, String>(d)
        })();
        b_phase.wait(); // 1: exposed, ring set up
        let received = match &mut setup {
            Ok(d) => receive_records(d, me),
            Err(e) => Err(e.clone()),
        };
        b_phase.wait(); // 2: records received, counter zeroed; adds begin
        let adds = match (&mut setup, &received) {
            (Ok(d), Ok(_)) => {
                let counter = d.info().sodimm_base + EXPOSED_OFF;
                fetch_adds(d, b_peer, counter)
            }
            _ => Err("no fetch-and-adds: an earlier check failed".into()),
        };
        b_phase.wait(); // 3: adds done
        Ok((vec![received?], adds?))
    });
    let result = (|| {
        phase.wait(); // 1
        let sent = send_records(&mut a, b_peer);
        let remote = remote_modes(&mut a, b_peer, b_base);
        // The remote modes wrote the counter's bytes: start it at zero
        // before either slot adds.
        let counter = b_base + EXPOSED_OFF;
        let zero = a.write_ww(0, &[0u8; 8]).map_err(fail("WW write")).and_then(|_| {
            let dst = Pattern::Contiguous { addr: counter, len: 8 };
            a.run(&Command::Rvs { peer: b_peer, src: Near::Window(0), dst }).map(drop).map_err(fail("RVS"))
        });
        phase.wait(); // 2
        let adds = zero.and_then(|_| fetch_adds(&mut a, b_peer, counter));
        phase.wait(); // 3
        Ok::<_, String>((sent?, remote?, adds?))
    })();
    let joined = b.join().map_err(|_| "the slot 1 thread panicked".to_string())?;
    let (sent, remote, a_adds) = result?;
    let (b_lines, b_adds) = joined?;
    out(sent);
    for l in b_lines {
        out(l);
    }
    out(remote);
    let mut all: Vec<u64> = a_adds.iter().chain(&b_adds).copied().collect();
    all.sort_unstable();
    if all != (0..2 * ADDS).collect::<Vec<_>>() {
        return Err(format!("fetch-and-add: the {} old values seen are not 0..{} each once", all.len(), 2 * ADDS));
    }
    out(format!("atomics: {} concurrent fetch-and-adds from two slots, each saw a different old value", 2 * ADDS));
    out(protection(&mut a, b_peer, b_base)?);
    Ok(())
}
