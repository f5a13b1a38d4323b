//! The collective engine through the driver (`SCHED`, `fpga_regs::sched`):
//! a two-node schedule with a reduction moves and combines the right bytes
//! without the hosts; malformed tables, a busy completion slot and a full
//! early-message store are reported, never run or dropped silently.

use driver::{Device, DriverError};
use fpga_regs::sched::{ElemType, Entry, EntryKind, ReduceOp, TableHeader, EARLY_STORE_BYTES};
use fpga_regs::ur;
use fpga_regs::{Command, ErrorCode, Pattern, Peer};
use hw_model::ClusterConfig;
use hw_tools::harness::{run_actors, temp_dir, ActorFn};

const MIB: u64 = 1 << 20;

fn cfg(tag: &str, partition: u64) -> ClusterConfig {
    let mut c = ClusterConfig::new(temp_dir(tag), 2, 1);
    c.partition_size = partition;
    c
}

fn actor<R: Send + 'static>(peer: Peer, f: impl FnOnce(Device) -> R + Send + 'static) -> (Peer, ActorFn<R>) {
    (peer, Box::new(f))
}

/// Write `data` at SO-DIMM `addr` through WW and VS.
fn store(d: &mut Device, addr: u64, data: &[u8]) {
    for (i, c) in data.chunks(32 * 1024).enumerate() {
        d.write_ww(0, c).unwrap();
        d.run(&Command::Vs {
            ww_off: 0,
            dst: Pattern::Contiguous { addr: addr + (i * 32 * 1024) as u64, len: c.len() as u32 },
        })
        .unwrap();
    }
}

/// Read `len` bytes at SO-DIMM `addr` through VL and PW.
fn load(d: &mut Device, addr: u64, len: usize) -> Vec<u8> {
    d.run(&Command::Vl { src: Pattern::Contiguous { addr, len: len as u32 }, pw_off: 0 }).unwrap();
    let mut out = vec![0u8; len];
    d.read_pw(0, &mut out).unwrap();
    out
}

fn table(h: TableHeader, entries: &[Entry], deps: &[u32]) -> Vec<u8> {
    let mut out: Vec<u8> = h.encode().iter().flat_map(|w| w.to_le_bytes()).collect();
    for e in entries {
        out.extend(e.encode().iter().flat_map(|w| w.to_le_bytes()));
    }
    out.extend(deps.iter().flat_map(|d| d.to_le_bytes()));
    out.resize(h.table_bytes() as usize, 0);
    out
}

fn entry(kind: EntryKind, peer: Peer, src: u64, dst: u64, len: u32, round: u32, deps: (u32, u32)) -> Entry {
    Entry { kind, peer, src, dst, len, round, first_dep: deps.0, n_deps: deps.1 }
}

/// Wait until SCHED_DONE[k] reaches `n`; the result word.
fn wait_done(d: &Device, k: usize, n: u64) -> u64 {
    let word = (ur::off::SCHED_DONE + 8 * k) as u32;
    loop {
        let v = d.read_ur(ur::off::SCHED_DONE + 8 * k);
        if v >= n {
            assert_eq!(v, n, "one schedule ended on slot {k}");
            return d.read_ur(ur::off::SCHED_RESULT + 8 * k);
        }
        d.idle_on(&[(word, v)]).unwrap();
    }
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn a_two_node_schedule_sends_receives_and_reduces_by_itself() {
    let (a, b) = (Peer::new(0, 0), Peer::new(1, 0));
    let key = 0xC0FF_EE00_0000_0001;
    // A sends its 16 words to B and receives B's sum back; B adds A's
    // words into its own and returns the sum. B starts 50 us later, so
    // A's message waits in B's early store.
    let va: Vec<u32> = (0..16).map(|i| i * 3 + 1).collect();
    let vb: Vec<u32> = (0..16).map(|i| u32::MAX - i).collect();
    let expect: Vec<u32> = va.iter().zip(&vb).map(|(x, y)| x.wrapping_add(*y)).collect();
    let (va2, vb2) = (va.clone(), vb.clone());
    let a_side = move |mut d: Device| {
        let base = d.info().sodimm_base;
        let (t, src, dst) = (base, base + 4096, base + 8192);
        store(&mut d, src, &va2.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        let h = TableHeader { entries: 2, deps: 0, key, done_slot: 3, op: ReduceOp::None, elem: ElemType::None };
        let es = [entry(EntryKind::Send, b, src, 0, 64, 0, (0, 0)), entry(EntryKind::Recv, b, 0, dst, 64, 1, (0, 0))];
        store(&mut d, t, &table(h, &es, &[]));
        d.run(&Command::Sched { table: t }).unwrap();
        let result = wait_done(&d, 3, 1);
        assert_eq!(ur::sched_result::STATUS.get(result), 0);
        u32s(&load(&mut d, dst, 64))
    };
    let b_side = move |mut d: Device| {
        d.compute(50_000.0).unwrap();
        let base = d.info().sodimm_base;
        let (t, acc, tmp) = (base, base + 4096, base + 8192);
        store(&mut d, acc, &vb2.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        let h = TableHeader { entries: 3, deps: 2, key, done_slot: 0, op: ReduceOp::Sum, elem: ElemType::U32 };
        let es = [
            entry(EntryKind::Recv, a, 0, tmp, 64, 0, (0, 0)),
            entry(EntryKind::Reduce, Peer::new(0, 0), tmp, acc, 64, 0, (0, 1)),
            entry(EntryKind::Send, a, acc, 0, 64, 1, (1, 1)),
        ];
        store(&mut d, t, &table(h, &es, &[0, 1]));
        d.run(&Command::Sched { table: t }).unwrap();
        let result = wait_done(&d, 0, 1);
        assert_eq!(ur::sched_result::STATUS.get(result), 0);
        u32s(&load(&mut d, acc, 64))
    };
    let (_, report, results) = run_actors(cfg("sched-two", 8 * MIB), vec![actor(a, a_side), actor(b, b_side)]).unwrap();
    assert_eq!(results[0], expect, "A got B's sum back");
    assert_eq!(results[1], expect, "B reduced in place");
    assert_eq!(report.stats.schedules, 2);
    assert_eq!(report.stats.errors, 0);
}

#[test]
fn malformed_tables_and_a_busy_slot_are_refused() {
    let a = Peer::new(0, 0);
    let body = move |mut d: Device| {
        let base = d.info().sodimm_base;
        let code = |r: Result<driver::Completion, DriverError>| match r {
            Err(DriverError::Device { code, .. }) => code,
            other => panic!("expected a refusal, got {other:?}"),
        };
        // No magic.
        store(&mut d, base, &[0u8; 64]);
        let bad_magic = code(d.run(&Command::Sched { table: base }));
        // A dependency on a later entry (a cycle).
        let h = TableHeader { entries: 1, deps: 1, key: 1, done_slot: 0, op: ReduceOp::None, elem: ElemType::None };
        let cyc = [entry(EntryKind::Copy, Peer::new(0, 0), base + 4096, base + 8192, 8, 0, (0, 1))];
        store(&mut d, base, &table(h, &cyc, &[0]));
        let cycle = code(d.run(&Command::Sched { table: base }));
        // Outside the partition.
        let far = [entry(EntryKind::Copy, Peer::new(0, 0), base + 4096, base + 64 * MIB, 8, 0, (0, 0))];
        let h0 = TableHeader { deps: 0, ..h };
        store(&mut d, base, &table(h0, &far, &[]));
        let outside = code(d.run(&Command::Sched { table: base }));
        // A receive that never comes keeps slot 0 busy; a second start there is refused.
        let wait = [entry(EntryKind::Recv, Peer::new(1, 0), 0, base + 4096, 8, 0, (0, 0))];
        store(&mut d, base, &table(h0, &wait, &[]));
        d.run(&Command::Sched { table: base }).unwrap();
        let busy = code(d.run(&Command::Sched { table: base }));
        let done = d.read_ur(ur::off::SCHED_DONE);
        (bad_magic, cycle, outside, busy, done)
    };
    let idle = move |d: Device| {
        d.compute(1_000.0).unwrap();
        (ErrorCode::Ok, ErrorCode::Ok, ErrorCode::Ok, ErrorCode::Ok, 0)
    };
    let (_, _, r) = run_actors(cfg("sched-bad", 8 * MIB), vec![actor(a, body), actor(Peer::new(1, 0), idle)]).unwrap();
    assert_eq!(r[0].0, ErrorCode::BadSchedule);
    assert_eq!(r[0].1, ErrorCode::BadSchedule);
    assert_eq!(r[0].2, ErrorCode::OutOfPartition);
    assert_eq!(r[0].3, ErrorCode::ScheduleBusy);
    assert_eq!(r[0].4, 0, "no refused table ran");
}

#[test]
fn a_full_early_store_fails_the_senders_schedule_instead_of_dropping() {
    let (a, b) = (Peer::new(0, 0), Peer::new(1, 0));
    let chunk = 6 * MIB as u32;
    let n = (EARLY_STORE_BYTES / chunk as u64) as u32 + 1;
    let sender = move |mut d: Device| {
        let base = d.info().sodimm_base;
        let h = TableHeader { entries: n, deps: 0, key: 9, done_slot: 1, op: ReduceOp::None, elem: ElemType::None };
        let es: Vec<Entry> = (0..n).map(|i| entry(EntryKind::Send, b, base + MIB, 0, chunk, i, (0, 0))).collect();
        store(&mut d, base, &table(h, &es, &[]));
        d.run(&Command::Sched { table: base }).unwrap();
        let result = wait_done(&d, 1, 1);
        ErrorCode::from_raw(ur::sched_result::STATUS.get(result) as u16)
    };
    // The receiver never starts a schedule.
    let receiver = move |d: Device| {
        d.compute(1_000.0).unwrap();
        None
    };
    let (_, report, r) = run_actors(cfg("sched-full", 32 * MIB), vec![actor(a, sender), actor(b, receiver)]).unwrap();
    assert_eq!(r[0], Some(ErrorCode::ScheduleOverflow));
    assert!(report.stats.errors >= 1, "the failure is counted");
}
