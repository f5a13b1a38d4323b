//! Device-level behaviour through the driver: every command and vector mode
//! moves the right bytes between nodes, rings wrap and apply backpressure,
//! protection refuses what it must, and runs are deterministic.

use driver::{Device, DriverError, HostCost};
use fpga_regs::packet::{PacketHeader, PacketType, PatternBlock};
use fpga_regs::ur::{ExposePerm, Status};
use fpga_regs::{Command, Region};
use fpga_regs::{ErrorCode, Near, Pattern, Peer, Space, VectorMode};
use hw_model::{Cluster, ClusterConfig};
use hw_tools::harness::{pattern_bytes, run_actors, temp_dir, ActorFn, SimCluster};

const MIB: u64 = 1 << 20;
const LIST_OFF: u32 = 0xC000;

/// Deterministic test data: a fresh pattern for every call.
struct Rng(u64);
impl Rng {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        pattern_bytes(self.0, n)
    }
}

fn cfg(tag: &str, nodes: u16, slots: u16) -> ClusterConfig {
    let mut c = ClusterConfig::new(temp_dir(tag), nodes, slots);
    c.partition_size = 8 * MIB;
    c
}

fn actor<R: Send + 'static>(peer: Peer, f: impl FnOnce(Device) -> R + Send + 'static) -> (Peer, ActorFn<R>) {
    (peer, Box::new(f))
}

/// The four modes at `base`, and the index list bytes each needs (in WW at LIST_OFF).
fn patterns(base: u64) -> Vec<(Pattern, Vec<u8>)> {
    let list: Vec<u32> = vec![480, 0, 160, 320, 48, 640, 800, 96, 960, 1120];
    let list_bytes: Vec<u8> = list.iter().flat_map(|o| o.to_le_bytes()).collect();
    let packed: Vec<(u32, u32)> = vec![(600, 7), (0, 33), (100, 64), (300, 1), (400, 120), (50, 20)];
    let packed_bytes: Vec<u8> =
        packed.iter().flat_map(|(o, l)| o.to_le_bytes().into_iter().chain(l.to_le_bytes())).collect();
    vec![
        (Pattern::Contiguous { addr: base + 0x100, len: 1000 }, vec![]),
        (Pattern::Stride { addr: base + 0x1000, elem: 24, stride: 100, count: 20 }, vec![]),
        (Pattern::List { base: base + 0x4000, elem: 16, count: 10, list_off: LIST_OFF }, list_bytes),
        (Pattern::PackedList { base: base + 0x8000, count: 6, list_off: LIST_OFF }, packed_bytes),
    ]
}

fn total(p: &Pattern, list: &[u8]) -> usize {
    p.segments(list).unwrap().iter().map(|s| s.1 as usize).sum()
}

/// Expected SO-DIMM contents: (node, address, bytes).
type Expect = Vec<(u16, u64, Vec<u8>)>;

fn expect_scatter(node: u16, p: &Pattern, list: &[u8], data: &[u8], out: &mut Expect) {
    let mut pos = 0;
    for (a, l) in p.segments(list).unwrap() {
        out.push((node, a, data[pos..pos + l as usize].to_vec()));
        pos += l as usize;
    }
}

fn check_memory(cluster: &Cluster, expect: &Expect) {
    for (node, addr, bytes) in expect {
        let mem = cluster.model().sodimm(*node);
        assert_eq!(&mem[*addr as usize..*addr as usize + bytes.len()], &bytes[..], "node {node} SO-DIMM at {addr:#x}");
    }
}

fn read_pw(d: &Device, off: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    d.read_pw(off, &mut v).unwrap();
    v
}

/// Read the next `len`-byte record from `src`'s ring.
fn ring_next(d: &mut Device, src: Peer, len: u64) -> Vec<u8> {
    d.poll(|d| (d.ring_available(src).unwrap() >= fpga_regs::llcm::record_len(len)).then_some(())).unwrap();
    d.ring_load(src, 0, len, 0x8000).unwrap();
    let v = read_pw(d, 0x8000, len as usize);
    d.ring_consume(src, len).unwrap();
    v
}

fn botf_image(h: PacketHeader, payload: &[u8]) -> Vec<u8> {
    let mut img = h.encode().to_vec();
    img.extend_from_slice(payload);
    img
}

#[test]
fn every_command_and_vector_mode_moves_the_right_bytes() {
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    // Payloads B must receive through its ring, in order (computed identically by both sides).
    fn ivs_payloads(a_base: u64) -> Vec<Vec<u8>> {
        let mut rng = Rng(77);
        let mut out = Vec::new();
        for (p, list) in patterns(a_base + 2 * MIB) {
            out.push(rng.bytes(total(&p, &list)));
        }
        for (p, list) in patterns(0) {
            out.push(rng.bytes(total(&p, &list)));
        }
        out.push(rng.bytes(32));
        out.push(b"done".to_vec());
        out
    }

    let body_a = move |mut d: Device| -> Expect {
        let me = d.info().clone();
        let base = me.sodimm_base;
        let b_base = 0; // node 1 slot 0: partition at 0
        let mut rng = Rng(1);
        let mut expect = Expect::new();
        // Wait until B has exposed memory and set up its ring.
        d.compute(50_000.0).unwrap();

        // VS then VL, every mode.
        for (p, list) in patterns(base) {
            let data = rng.bytes(total(&p, &list));
            d.write_ww(0, &data).unwrap();
            d.write_ww(LIST_OFF as usize, &list).unwrap();
            let c = d.run(&Command::Vs { ww_off: 0, dst: p }).unwrap();
            assert_eq!(c.bytes, data.len() as u64);
            d.run(&Command::Vl { src: p, pw_off: 0x100 }).unwrap();
            assert_eq!(read_pw(&d, 0x100, data.len()), data, "VS/VL {:?}", p.mode());
            expect_scatter(me.me.node, &p, &list, &data, &mut expect);
        }
        // RVS from WW then RVL into PW, every mode, against B's exposed MiB.
        for (p, list) in patterns(b_base + MIB) {
            let data = rng.bytes(total(&p, &list));
            d.write_ww(0, &data).unwrap();
            d.write_ww(LIST_OFF as usize, &list).unwrap();
            d.run(&Command::Rvs { peer: b, src: Near::Window(0), dst: p }).unwrap();
            d.run(&Command::Rvl { peer: b, src: p, dst: Near::Window(0x2000) }).unwrap();
            assert_eq!(read_pw(&d, 0x2000, data.len()), data, "RVS/RVL {:?}", p.mode());
            expect_scatter(1, &p, &list, &data, &mut expect);
        }
        // RVS from local SO-DIMM, RVL into local SO-DIMM, then VL to check.
        let data = rng.bytes(3000);
        d.write_ww(0, &data).unwrap();
        d.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base + 3 * MIB, len: 3000 } }).unwrap();
        let remote = Pattern::Contiguous { addr: b_base + MIB + 0x10000, len: 3000 };
        d.run(&Command::Rvs { peer: b, src: Near::SoDimm(base + 3 * MIB), dst: remote }).unwrap();
        d.run(&Command::Rvl { peer: b, src: remote, dst: Near::SoDimm(base + 4 * MIB) }).unwrap();
        d.run(&Command::Vl { src: Pattern::Contiguous { addr: base + 4 * MIB, len: 3000 }, pw_off: 0 }).unwrap();
        assert_eq!(read_pw(&d, 0, 3000), data);
        expect.push((1, b_base + MIB + 0x10000, data.clone()));

        // IVS: gather from SO-DIMM with every mode, then from WW with every mode.
        let payloads = ivs_payloads(base);
        let mut k = 0;
        for (p, list) in patterns(base + 2 * MIB) {
            let want = &payloads[k];
            k += 1;
            // Lay the data out in SO-DIMM where the pattern gathers it from.
            d.write_ww(0, want).unwrap();
            d.write_ww(LIST_OFF as usize, &list).unwrap();
            d.run(&Command::Vs { ww_off: 0, dst: p }).unwrap();
            let c = d.run(&Command::Ivs { peer: b, space: Space::SoDimm, src: p }).unwrap();
            assert_eq!(c.bytes, want.len() as u64);
        }
        for (p, list) in patterns(0) {
            // The same patterns over WW offsets (base 0), data scattered into WW.
            let want = &payloads[k];
            k += 1;
            let mut pos = 0;
            for (a, l) in p.segments(&list).unwrap() {
                d.write_ww(a as usize, &want[pos..pos + l as usize]).unwrap();
                pos += l as usize;
            }
            d.write_ww(LIST_OFF as usize, &list).unwrap();
            d.run(&Command::Ivs { peer: b, space: Space::Window, src: p }).unwrap();
        }
        // BOTF with TYPE=IVS, the packet gathered by the driver from three
        // pieces (how the dimmnet backend sends).
        let body = &payloads[k];
        k += 1;
        let (x, rest) = body.split_at(5);
        let (y, z) = rest.split_at(11);
        let t = d.submit_packet(0x4000, &PacketHeader::ivs(b, 32), &[x, y, z]).unwrap();
        assert_eq!(d.wait(t).unwrap().bytes, 32);
        // BOTF with TYPE=RVS and TYPE=RVL, every mode.
        for (p, list) in patterns(b_base + 2 * MIB) {
            let data = rng.bytes(total(&p, &list));
            let mut payload = Vec::new();
            if p.mode() != VectorMode::Contiguous {
                payload.extend(PatternBlock::of(&p).encode());
                payload.extend(&list);
            }
            payload.extend(&data);
            let mut h = PacketHeader::ivs(b, payload.len() as u32);
            h.ptype = PacketType::Rvs;
            h.mode = p.mode();
            h.addr = p.base();
            let img = botf_image(h, &payload);
            d.write_ww(0x4000, &img).unwrap();
            d.run(&Command::Botf { ww_off: 0x4000, len: img.len() as u32 }).unwrap();
            let mut req = PatternBlock::of(&p).encode().to_vec();
            req.extend(&list);
            let mut h = PacketHeader::ivs(b, req.len() as u32);
            h.ptype = PacketType::RvlRequest;
            h.mode = p.mode();
            h.addr = p.base();
            h.aux = 0x6000;
            let img = botf_image(h, &req);
            d.write_ww(0x4000, &img).unwrap();
            d.run(&Command::Botf { ww_off: 0x4000, len: img.len() as u32 }).unwrap();
            assert_eq!(read_pw(&d, 0x6000, data.len()), data, "BOTF RVS/RVL {:?}", p.mode());
            expect_scatter(1, &p, &list, &data, &mut expect);
        }
        let done = &payloads[k];
        d.write_ww(0, done).unwrap();
        d.run(&Command::Ivs {
            peer: b,
            space: Space::Window,
            src: Pattern::Contiguous { addr: 0, len: done.len() as u32 },
        })
        .unwrap();
        assert_eq!(d.errors().count, 0);
        expect
    };

    let body_b = move |mut d: Device| -> usize {
        let base = d.info().sodimm_base;
        d.expose(0, base + MIB, 2 * MIB as u32, ExposePerm::REMOTE_READ | ExposePerm::REMOTE_WRITE).unwrap();
        d.ring_setup(a, base + 4 * MIB, 64 * 1024).unwrap();
        let payloads = ivs_payloads(0); // A's partition base is 0 as well (slot 0)
        for (i, want) in payloads.iter().enumerate() {
            let got = ring_next(&mut d, a, want.len() as u64);
            assert_eq!(&got, want, "ring record {i}");
        }
        payloads.len()
    };

    let (cluster, report, results) = run_actors(
        cfg("modes", 2, 1),
        vec![actor(a, move |d| (body_a(d), 0)), actor(b, move |d| (Expect::new(), body_b(d)))],
    )
    .unwrap();
    check_memory(&cluster, &results[0].0);
    assert_eq!(results[1].1, 10);
    assert_eq!(report.stats.errors, 0);
}

#[test]
fn ring_wraps_around_and_keeps_order() {
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    let msg = |i: u32| -> Vec<u8> {
        let len = 8 + (i * 13) % 57;
        (0..len).map(|j| (i * 31 + j) as u8).collect()
    };
    let sender = move |mut d: Device| {
        d.compute(10_000.0).unwrap();
        for i in 0..200u32 {
            let m = msg(i);
            d.write_ww(0, &m).unwrap();
            d.run(&Command::Ivs {
                peer: b,
                space: Space::Window,
                src: Pattern::Contiguous { addr: 0, len: m.len() as u32 },
            })
            .unwrap();
        }
    };
    let receiver = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.ring_setup(a, base, 256).unwrap();
        let mut wrapped = 0;
        for i in 0..200u32 {
            let m = msg(i);
            let before = d.ring_nra(a).unwrap() % 256;
            assert_eq!(ring_next(&mut d, a, m.len() as u64), m, "message {i}");
            if before + fpga_regs::llcm::record_len(m.len() as u64) > 256 {
                wrapped += 1;
            }
        }
        wrapped
    };
    let (_, report, results) =
        run_actors(cfg("wrap", 2, 1), vec![actor(a, move |d| (sender(d), 0usize).1), actor(b, receiver)]).unwrap();
    assert!(results[1] > 10, "records crossed the ring end {} times", results[1]);
    assert_eq!(report.stats.errors, 0);
}

#[test]
fn ring_counters_wrap_past_the_top_of_u64() {
    // NWA and NRA are host-writable: a host may start them anywhere, and
    // NWA - NRA is taken modulo 2^64 (this used to refuse the third record).
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    const START: u64 = u64::MAX - 15;
    let sender = move |mut d: Device| {
        d.compute(10_000.0).unwrap();
        d.write_ww(0, &[7u8; 8]).unwrap();
        let ivs = Command::Ivs { peer: b, space: Space::Window, src: Pattern::Contiguous { addr: 0, len: 8 } };
        let tickets: Vec<_> = (0..3).map(|_| d.submit(&ivs).unwrap()).collect();
        let done: Vec<bool> = tickets.into_iter().map(|t| d.wait(t).is_ok()).collect();
        done == [true; 3]
    };
    let receiver = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.ring_setup(a, base, 256).unwrap();
        let e = fpga_regs::llcm::off::ring(0);
        d.write_llcm(e + fpga_regs::llcm::off::RING_NWA, START).unwrap();
        d.write_llcm(e + fpga_regs::llcm::off::RING_NRA, START).unwrap();
        d.poll(|d| (d.ring_nwa(a).unwrap() == START.wrapping_add(24)).then_some(())).is_ok()
    };
    let (_, report, results) = run_actors(cfg("ring-top", 2, 1), vec![actor(a, sender), actor(b, receiver)]).unwrap();
    assert_eq!(results, vec![true, true]);
    assert_eq!(report.stats.errors, 0);
}

#[test]
fn slow_consumer_with_fast_producer_loses_and_overwrites_nothing() {
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    const N: u32 = 300;
    let producer = move |mut d: Device| {
        d.compute(10_000.0).unwrap();
        let mut tickets = std::collections::VecDeque::new();
        for i in 0..N {
            let mut m = i.to_le_bytes().to_vec();
            m.extend((0..36).map(|j| (i as u8).wrapping_mul(7).wrapping_add(j)));
            // One WW slot per queue entry, so a record is never rewritten before it is sent.
            let off = (i as usize % 32) * 64;
            d.write_ww(off, &m).unwrap();
            let t = d
                .submit(&Command::Ivs {
                    peer: b,
                    space: Space::Window,
                    src: Pattern::Contiguous { addr: off as u64, len: 40 },
                })
                .unwrap();
            tickets.push_back(t);
            if tickets.len() == 32 {
                d.wait(tickets.pop_front().unwrap()).unwrap();
            }
        }
        for t in tickets {
            d.wait(t).unwrap();
        }
        d.status()
    };
    let consumer = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.ring_setup(a, base, 512).unwrap();
        let mut max_used = 0;
        for i in 0..N {
            d.compute(3_000.0).unwrap(); // a slow consumer: 3 us per message
            max_used = max_used.max(d.ring_available(a).unwrap());
            let m = ring_next(&mut d, a, 40);
            assert_eq!(u32::from_le_bytes([m[0], m[1], m[2], m[3]]), i, "message {i} out of order or lost");
            for (j, byte) in m[4..].iter().enumerate() {
                assert_eq!(*byte, (i as u8).wrapping_mul(7).wrapping_add(j as u8), "message {i} corrupted");
            }
        }
        assert!(max_used <= 512);
        (max_used, d.read_ur(fpga_regs::ur::off::RX_ACCEPTED))
    };
    let (_, report, results) = run_actors(
        cfg("slow", 2, 1),
        vec![actor(a, move |d| (Some(producer(d)), None)), actor(b, move |d| (None, Some(consumer(d))))],
    )
    .unwrap();
    let (max_used, accepted) = results[1].1.unwrap();
    assert!(report.stats.held > 0, "the producer never had to wait: the test did not exercise backpressure");
    assert_eq!(accepted, N as u64);
    assert!(max_used >= 400, "the ring never filled up (max {max_used} bytes used)");
    assert!(!results[0].0.unwrap().contains(Status::ERROR));
    assert_eq!(report.stats.errors, 0);
}

#[test]
fn protection_refuses_other_memory_and_leaves_it_untouched() {
    let attacker = Peer::new(0, 0);
    let victim = Peer::new(0, 1);
    let remote = Peer::new(1, 0);
    let canary: Vec<u8> = (0..65536u32).map(|i| (i * 7 + 3) as u8).collect();
    let c2 = canary.clone();
    let victim_body = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.write_ww(0, &c2).unwrap();
        d.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 65536 } }).unwrap();
        d.expose(0, base, 4096, ExposePerm::REMOTE_READ).unwrap();
        base
    };
    let remote_body = move |d: Device| d.info().sodimm_base;
    let attack = move |mut d: Device| {
        d.compute(100_000.0).unwrap(); // let the others set up first
        let me = d.info().clone();
        let victim_base = me.sodimm_base + me.sodimm_size; // slot 1 follows slot 0
        let end = me.sodimm_base + me.sodimm_size;
        let contiguous = |addr, len| Pattern::Contiguous { addr, len };
        let mut refused = 0u64;
        let mut expect = |d: &mut Device, c: Command, code: ErrorCode| {
            let err = d.run(&c).expect_err(&format!("{c:?} must be refused"));
            assert_eq!(err.code(), Some(code), "{c:?}: {err}");
            refused += 1;
        };
        expect(&mut d, Command::Vl { src: contiguous(victim_base, 64), pw_off: 0 }, ErrorCode::OutOfPartition);
        expect(&mut d, Command::Vs { ww_off: 0, dst: contiguous(victim_base + 100, 64) }, ErrorCode::OutOfPartition);
        expect(&mut d, Command::Vs { ww_off: 0, dst: contiguous(end - 8, 64) }, ErrorCode::OutOfPartition);
        expect(&mut d, Command::Vl { src: contiguous(me.sodimm_base, 4096), pw_off: 0xF800 }, ErrorCode::WindowRange);
        expect(
            &mut d,
            Command::Vs { ww_off: 0, dst: Pattern::Stride { addr: end - 4096, elem: 8, stride: 1024, count: 5 } },
            ErrorCode::OutOfPartition,
        );
        d.write_ww(0x8000, &(me.sodimm_size as u32).to_le_bytes()).unwrap();
        expect(
            &mut d,
            Command::Vl { src: Pattern::List { base: me.sodimm_base, elem: 8, count: 1, list_off: 0x8000 }, pw_off: 0 },
            ErrorCode::ListRange,
        );
        expect(
            &mut d,
            Command::Rvs { peer: victim, src: Near::Window(0), dst: contiguous(victim_base + 8192, 64) },
            ErrorCode::NotExposed,
        );
        expect(
            &mut d,
            Command::Rvs { peer: victim, src: Near::Window(0), dst: contiguous(victim_base, 64) },
            ErrorCode::NotExposed,
        );
        expect(
            &mut d,
            Command::Rvl { peer: victim, src: contiguous(victim_base + 4000, 200), dst: Near::Window(0) },
            ErrorCode::NotExposed,
        );
        expect(
            &mut d,
            Command::Rvs { peer: remote, src: Near::Window(0), dst: contiguous(0, 64) },
            ErrorCode::NotExposed,
        );
        expect(
            &mut d,
            Command::Ivs { peer: victim, space: Space::Window, src: contiguous(0, 8) },
            ErrorCode::RingDisabled,
        );
        expect(
            &mut d,
            Command::Rvs { peer: Peer::new(5, 0), src: Near::Window(0), dst: contiguous(0, 8) },
            ErrorCode::NoSuchNode,
        );
        expect(
            &mut d,
            Command::Rvl { peer: Peer::new(1, 3), src: contiguous(0, 8), dst: Near::Window(0) },
            ErrorCode::NoSuchSlot,
        );
        expect(
            &mut d,
            Command::Rvl { peer: remote, src: contiguous(0, 8), dst: Near::SoDimm(victim_base) },
            ErrorCode::OutOfPartition,
        );
        let mut h = PacketHeader::ivs(remote, 0);
        h.ptype = PacketType::Ack;
        d.write_ww(0, &h.encode()).unwrap();
        expect(&mut d, Command::Botf { ww_off: 0, len: 32 }, ErrorCode::BadPacketType);
        d.write_ww(0, &PacketHeader::ivs(remote, 64).encode()).unwrap();
        expect(&mut d, Command::Botf { ww_off: 0, len: 40 }, ErrorCode::BadPacketHeader);
        // A packet whose header disagrees with its payload, or of too many
        // pieces, is refused by the driver before anything is posted.
        let posted = d.outstanding();
        let e = d.submit_packet(0, &PacketHeader::ivs(remote, 8), &[&[0u8; 4]]).unwrap_err();
        assert!(e.to_string().contains("says 8 payload bytes but 4"), "{e}");
        let pieces = [&[0u8; 1][..]; driver::MAX_PACKET_PIECES + 1];
        let e = d.submit_packet(0, &PacketHeader::ivs(remote, pieces.len() as u32), &pieces).unwrap_err();
        assert!(e.to_string().contains("at most 7 are gathered"), "{e}");
        assert_eq!(d.outstanding(), posted);
        let mut raw = Command::Vl { src: contiguous(me.sodimm_base, 8), pw_off: 0 }.encode();
        raw[7] = 1;
        let t = d.submit_raw(raw).unwrap();
        assert_eq!(d.wait(t).unwrap_err().code(), Some(ErrorCode::ReservedBits));
        refused += 1;
        let t = d.submit_raw([0; 8]).unwrap();
        assert_eq!(d.wait(t).unwrap_err().code(), Some(ErrorCode::BadOpcode));
        refused += 1;
        // Reading what the victim exposed is allowed.
        d.run(&Command::Rvl { peer: victim, src: contiguous(victim_base, 4096), dst: Near::Window(0) }).unwrap();
        let mut buf = vec![0u8; 4096];
        d.read_pw(0, &mut buf).unwrap();
        let errs = d.errors();
        assert_eq!(errs.count, refused);
        assert!(d.status().contains(Status::ERROR));
        d.ack_errors();
        // STATUS.ERROR clears once the device has seen the acknowledgement.
        d.poll(|d| (!d.status().contains(Status::ERROR)).then_some(())).unwrap();
        buf
    };
    let (cluster, _, results) = run_actors(
        cfg("protect", 2, 2),
        vec![
            actor(victim, move |d| (victim_body(d), Vec::new())),
            actor(remote, move |d| (remote_body(d), Vec::new())),
            actor(attacker, move |d| (0, attack(d))),
        ],
    )
    .unwrap();
    assert_eq!(results[2].1, canary[..4096], "RVL of the exposed range returns the victim's data");
    let victim_base = results[0].0 as usize;
    assert_eq!(&cluster.model().sodimm(0)[victim_base..victim_base + 65536], &canary[..], "victim memory changed");
    assert!(cluster.model().sodimm(1)[..8 * MIB as usize].iter().all(|b| *b == 0), "remote memory changed");
    assert_eq!(cluster.model().read_ur(1, 0, fpga_regs::ur::off::RX_REFUSED), 1);
}

#[test]
fn invalid_doorbells_are_refused_and_the_driver_recovers() {
    let (_, _, results) = run_actors(
        cfg("doorbell", 1, 1),
        vec![actor(Peer::new(0, 0), |mut d: Device| {
            d.poke(Region::Ur, fpga_regs::ur::off::DOORBELL, 1000).unwrap();
            let st = d.poll(|d| Some(d.status()).filter(|s| s.contains(Status::DOORBELL_INVALID))).unwrap();
            let errs = d.errors();
            d.resync().unwrap();
            let base = d.info().sodimm_base;
            d.run(&Command::Vl { src: Pattern::Contiguous { addr: base, len: 8 }, pw_off: 0 }).unwrap();
            (st, errs)
        })],
    )
    .unwrap();
    let (st, errs) = results[0];
    assert!(st.contains(Status::DOORBELL_INVALID), "status {st:?}");
    assert_eq!(errs.count, 1);
    assert_eq!(errs.last, Some(ErrorCode::DoorbellInvalid));
}

/// A mixed workload with backpressure, written as a trace.
fn traced_run(trace: &std::path::Path) -> (u64, Vec<u64>) {
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    let mut c = cfg("det", 2, 1);
    c.trace = Some(trace.to_path_buf());
    let (_, report, results) = run_actors(
        c,
        vec![
            actor(a, move |mut d: Device| {
                let base = d.info().sodimm_base;
                d.ring_setup(b, base, 2048).unwrap();
                for i in 0..60u32 {
                    d.write_ww(0, &[i as u8; 200]).unwrap();
                    d.run(&Command::Ivs {
                        peer: b,
                        space: Space::Window,
                        src: Pattern::Contiguous { addr: 0, len: 200 },
                    })
                    .unwrap();
                    if i % 10 == 0 {
                        d.run(&Command::Rvs {
                            peer: b,
                            src: Near::Window(0),
                            dst: Pattern::Contiguous { addr: MIB, len: 4096 },
                        })
                        .unwrap();
                    }
                }
                let mut times = Vec::new();
                for _ in 0..20 {
                    let _ = ring_next(&mut d, b, 64);
                    times.push(d.now_ps().unwrap());
                }
                times
            }),
            actor(b, move |mut d: Device| {
                let base = d.info().sodimm_base;
                d.expose(0, base + MIB, MIB as u32, ExposePerm::REMOTE_WRITE).unwrap();
                d.ring_setup(a, base, 1024).unwrap();
                for i in 0..60u32 {
                    d.compute(500.0 + (i % 7) as f64 * 300.0).unwrap();
                    let m = ring_next(&mut d, a, 200);
                    assert_eq!(m, vec![i as u8; 200]);
                    if i % 3 == 0 {
                        d.write_ww(0, &[0xCD; 64]).unwrap();
                        d.run(&Command::Ivs {
                            peer: a,
                            space: Space::Window,
                            src: Pattern::Contiguous { addr: 0, len: 64 },
                        })
                        .unwrap();
                    }
                }
                vec![d.now_ps().unwrap()]
            }),
        ],
    )
    .unwrap();
    let mut times = results[0].clone();
    times.extend(&results[1]);
    (report.sim_time_ps, times)
}

#[test]
fn runs_are_deterministic_to_the_byte() {
    let t1 = temp_dir("trace1").with_extension("json");
    let t2 = temp_dir("trace2").with_extension("json");
    let (end1, times1) = traced_run(&t1);
    // A second run while this machine is busy with something else.
    let spinner = std::thread::spawn(|| {
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        x
    });
    let (end2, times2) = traced_run(&t2);
    spinner.join().unwrap();
    let (b1, b2) = (std::fs::read(&t1).unwrap(), std::fs::read(&t2).unwrap());
    let _ = (std::fs::remove_file(&t1), std::fs::remove_file(&t2));
    assert_eq!(end1, end2);
    assert_eq!(times1, times2);
    assert!(b1.len() > 1000, "trace is suspiciously small");
    assert!(b1 == b2, "traces differ");
    let v: serde_json::Value = serde_json::from_slice(&b1).expect("the trace is valid JSON");
    let events = v["traceEvents"].as_array().unwrap();
    for kind in ["cmd", "pkt"] {
        assert!(events.iter().any(|e| e["cat"] == kind), "no {kind} events in the trace");
    }
    assert!(events.iter().any(|e| e["ph"] == "C"), "no ring pointer counters in the trace");
    assert!(events.iter().any(|e| e["name"] == "ring full: packet held"), "backpressure is not in the trace");
}

#[test]
fn an_idle_simulator_sleeps_in_the_kernel() {
    use simlink::simctl::CtlHeader;
    let sim = SimCluster::start(cfg("idle", 2, 1)).unwrap();
    let ctl = simlink::mmio::Mapping::open(&sim.dir().join("sim.ctl"), 0, 4096).unwrap();
    let h = ctl.block::<CtlHeader>(0).unwrap();
    // Wait (without a time assertion) until the model blocks in FUTEX_WAIT.
    let mut asleep = false;
    for _ in 0..2000 {
        if h.model_sleeping.load(std::sync::atomic::Ordering::SeqCst) == 1 {
            asleep = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(asleep, "the idle model never went to sleep");
    drop(ctl);
    sim.stop().unwrap();
}

#[test]
fn a_process_that_waits_forever_is_told_about_the_deadlock() {
    let (_, report, results) = run_actors(
        cfg("deadlock", 2, 1),
        vec![
            actor(Peer::new(0, 0), |mut d: Device| {
                let base = d.info().sodimm_base;
                d.ring_setup(Peer::new(1, 0), base, 256).unwrap();
                // Nobody will ever send to us.
                let err = d.poll(|d| (d.ring_available(Peer::new(1, 0)).unwrap() > 0).then_some(())).unwrap_err();
                matches!(err, DriverError::Deadlock { packets_held: false, .. }).then(|| err.to_string())
            }),
            actor(Peer::new(1, 0), |d: Device| {
                d.charge(HostCost::MpiCall, 1);
                None
            }),
        ],
    )
    .unwrap();
    let msg = results[0].clone().expect("a deadlock error");
    assert!(msg.contains("actor 0 (node 0 slot 0)") && msg.contains("actor 1 exited"), "{msg}");
    assert_eq!(report.deadlocks, 1);
}

/// Most register polls a polling test allows before calling the simulation stuck.
const POLL_LIMIT: u64 = 1_000_000;

#[test]
fn a_process_polling_its_own_command_sees_it_complete() {
    // One process, no blocking wait: it rings a doorbell and then only reads
    // the completion registers. The device must still run the command.
    let (_, _, results) = run_actors(
        cfg("poll-self", 1, 1),
        vec![actor(Peer::new(0, 0), |mut d: Device| {
            let base = d.info().sodimm_base;
            d.write_ww(0, &[7u8; 64]).unwrap();
            let t = d.submit(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 64 } }).unwrap();
            let rung = d.now_ps().unwrap();
            let mut polls = 0u64;
            while d.try_wait(t).unwrap().is_none() {
                polls += 1;
                assert!(polls < POLL_LIMIT, "the command never completed while its issuer polled");
            }
            (polls, d.now_ps().unwrap() - rung)
        })],
    )
    .unwrap();
    let (polls, took) = results[0];
    // A 64-byte VS takes well under a microsecond; the poller sees it then.
    assert!(polls > 0 && took < 2_000_000, "{polls} polls, completion seen after {took} ps");
}

#[test]
fn a_process_polling_registers_lets_a_waiting_peer_run() {
    // The peer blocks on its own command (it waits for a device event), then
    // sends; the poller only reads its ring pointer. The poller must hand
    // over at the device event, or the peer never runs and nothing arrives.
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    let poller = move |d: Device| {
        let mut d = d;
        let base = d.info().sodimm_base;
        d.ring_setup(b, base, 4096).unwrap();
        let mut polls = 0u64;
        loop {
            d.observe().unwrap();
            if d.ring_available(b).unwrap() > 0 {
                break;
            }
            polls += 1;
            assert!(polls < POLL_LIMIT, "no record arrived while the receiver polled its ring pointer");
        }
        (polls, d.now_ps().unwrap())
    };
    let sender = move |mut d: Device| {
        d.compute(10_000.0).unwrap();
        let base = d.info().sodimm_base;
        d.write_ww(0, &[1u8; 32]).unwrap();
        d.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 32 } }).unwrap();
        d.run(&Command::Ivs { peer: a, space: Space::Window, src: Pattern::Contiguous { addr: 0, len: 32 } }).unwrap();
        (0, d.now_ps().unwrap())
    };
    let run = || run_actors(cfg("poll-peer", 2, 1), vec![actor(a, poller), actor(b, sender)]).unwrap().2;
    let (r1, r2) = (run(), run());
    assert_eq!(r1, r2, "simulated times differ between two runs");
    let (_, seen) = r1[0];
    let (_, sent) = r1[1];
    assert!(seen > 10_000_000 && seen < sent + 5_000_000, "record seen at {seen} ps, sent by {sent} ps");
}

#[test]
fn commands_that_move_nothing_for_ever_are_reported_as_a_livelock() {
    // Issue 7: a sender that retries a zero-length write for ever (what a
    // zero-sized landing zone once caused) is reported, naming what it
    // spins on, instead of running until the job's timeout.
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    let spinner = move |mut d: Device| {
        let base = d.info().sodimm_base;
        for i in 0..1_000_000u64 {
            match d.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 0 } }) {
                Ok(_) => {}
                Err(DriverError::Deadlock { message, .. }) => return Ok((i, message)),
                Err(e) => return Err(format!("unexpected error {e}")),
            }
        }
        Err("a million zero-length commands and no livelock reported".to_string())
    };
    // A peer that sleeps in a blocking wait on something that never comes.
    let sleeper = move |d: Device| {
        let r = d.poll(|d| (d.read_ur(fpga_regs::ur::off::RX_ACCEPTED) > 0).then_some(()));
        match r {
            Err(DriverError::Deadlock { message, .. }) => Ok((0, message)),
            other => Err(format!("the sleeper ended with {other:?}")),
        }
    };
    let (_, report, results) = run_actors(cfg("livelock", 2, 1), vec![actor(a, spinner), actor(b, sleeper)]).unwrap();
    let (n, msg) = results[0].clone().unwrap();
    assert!(n >= hw_model::cluster::LIVELOCK_COMMANDS, "declared after only {n} commands");
    assert!(
        msg.contains("livelock")
            && msg.contains("(node 0 slot 0, waiting on the device): last command VS ended Ok (0 B)"),
        "{msg}"
    );
    assert!(results[1].is_ok(), "{:?}", results[1]);
    assert!(report.deadlocks >= 1);
}

#[test]
fn commands_that_move_data_are_never_a_livelock() {
    // The same loop moving 8 bytes per command runs to its end.
    let a = Peer::new(0, 0);
    let worker = move |mut d: Device| {
        let base = d.info().sodimm_base;
        for _ in 0..30_000 {
            d.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 8 } }).unwrap();
        }
        d.now_ps().unwrap()
    };
    let (_, report, t) = run_actors(cfg("no-livelock", 1, 1), vec![actor(a, worker)]).unwrap();
    assert!(t[0] > hw_model::cluster::LIVELOCK_WINDOW.0, "the loop must outlast the window ({} ps)", t[0]);
    assert_eq!(report.deadlocks, 0);
}

#[test]
fn a_computing_poller_hands_over_before_a_waiting_peer_would_wake() {
    // S sends to W, which is waiting on its ring; W then sends to X, which
    // computes and polls its own ring without ever blocking. X must hand
    // over before W is woken (the arrival at W schedules the ring commit
    // that wakes it), or W never runs and X polls for ever. The scheduler
    // once counted only what an event itself writes, not what it schedules.
    let (s, w, x) = (Peer::new(0, 0), Peer::new(1, 0), Peer::new(2, 0));
    let sender = move |mut d: Device| {
        d.compute(10_000.0).unwrap();
        d.write_ww(0, &[5u8; 16]).unwrap();
        d.run(&Command::Ivs { peer: w, space: Space::Window, src: Pattern::Contiguous { addr: 0, len: 16 } }).unwrap();
        0u64
    };
    let waiter = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.ring_setup(s, base, 4096).unwrap();
        d.poll(|d| (d.ring_available(s).unwrap() > 0).then_some(())).unwrap();
        d.write_ww(0, &[6u8; 16]).unwrap();
        let sent = d.now_ps().unwrap();
        d.run(&Command::Ivs { peer: x, space: Space::Window, src: Pattern::Contiguous { addr: 0, len: 16 } }).unwrap();
        sent
    };
    let poller = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.ring_setup(w, base, 4096).unwrap();
        let mut polls = 0u64;
        loop {
            d.compute(500.0).unwrap();
            d.observe().unwrap();
            if d.ring_available(w).unwrap() > 0 {
                break;
            }
            polls += 1;
            assert!(polls < POLL_LIMIT, "the record from the woken peer never arrived");
        }
        d.now_ps().unwrap()
    };
    let run =
        || run_actors(cfg("poll-chain", 3, 1), vec![actor(s, sender), actor(w, waiter), actor(x, poller)]).unwrap().2;
    let (r1, r2) = (run(), run());
    assert_eq!(r1, r2, "simulated times differ between two runs");
    assert!(r1[2] > r1[1], "seen at {} ps, before it was sent at {} ps", r1[2], r1[1]);
    assert!(r1[2] < r1[1] + 10_000_000, "seen at {} ps, long after it was sent at {} ps", r1[2], r1[1]);
}

#[test]
fn a_sender_that_computes_and_polls_hands_its_doorbell_over() {
    // X sends to W (waiting on its ring), then computes and polls its own
    // ring for the answer without ever blocking on the send. The model
    // learns of a doorbell only when X hands over, so X must hand over by
    // the time the command could act, or W is never woken.
    let (x, w) = (Peer::new(0, 0), Peer::new(1, 0));
    let waiter = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.ring_setup(x, base, 4096).unwrap();
        d.poll(|d| (d.ring_available(x).unwrap() > 0).then_some(())).unwrap();
        d.write_ww(0, &[6u8; 16]).unwrap();
        d.run(&Command::Ivs { peer: x, space: Space::Window, src: Pattern::Contiguous { addr: 0, len: 16 } }).unwrap();
        0u64
    };
    let sender = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.ring_setup(w, base, 4096).unwrap();
        d.compute(5_000.0).unwrap();
        d.write_ww(0, &[5u8; 16]).unwrap();
        let t = d
            .submit(&Command::Ivs { peer: w, space: Space::Window, src: Pattern::Contiguous { addr: 0, len: 16 } })
            .unwrap();
        let mut polls = 0u64;
        loop {
            d.compute(500.0).unwrap();
            d.observe().unwrap();
            if d.ring_available(w).unwrap() > 0 {
                break;
            }
            polls += 1;
            assert!(polls < POLL_LIMIT, "the answer never arrived: the send was never handed to the model");
        }
        d.wait(t).unwrap();
        d.now_ps().unwrap()
    };
    let run = || run_actors(cfg("doorbell-handover", 2, 1), vec![actor(x, sender), actor(w, waiter)]).unwrap().2;
    let (r1, r2) = (run(), run());
    assert_eq!(r1, r2, "simulated times differ between two runs");
}

#[test]
fn a_gathered_ww_write_stores_the_concatenation_and_costs_one_write() {
    // Issue 8: packets go into WW gathered from their pieces. The bytes must
    // be the concatenation, and the charge that of one write of the whole
    // (per 64-byte line touched), not one per piece: pieces split a line.
    let (_, _, results) = run_actors(
        cfg("ww-gather", 1, 1),
        vec![actor(Peer::new(0, 0), |mut d: Device| {
            let base = d.info().sodimm_base;
            let (a, b, c) = (pattern_bytes(1, 16), pattern_bytes(2, 45), pattern_bytes(3, 100));
            let whole: Vec<u8> = [&a[..], &b[..], &c[..]].concat();
            let slot = HostCost::WcLine as usize;
            let before = d.cost_counts().unwrap()[slot];
            d.write_ww_gather(8, &[&a, &[], &b, &c]).unwrap();
            let gathered = d.cost_counts().unwrap()[slot] - before;
            d.write_ww(0x1008, &whole).unwrap();
            let single = d.cost_counts().unwrap()[slot] - before - gathered;
            d.run(&Command::Vs { ww_off: 8, dst: Pattern::Contiguous { addr: base, len: whole.len() as u32 } })
                .unwrap();
            d.run(&Command::Vl { src: Pattern::Contiguous { addr: base, len: whole.len() as u32 }, pw_off: 0 })
                .unwrap();
            let back = read_pw(&d, 0, whole.len());
            let refused = d.write_ww_gather(fpga_regs::layout::WW_SIZE - 8, &[&a]).is_err();
            (back == whole, gathered, single, refused)
        })],
    )
    .unwrap();
    let (same, gathered, single, refused) = results[0];
    assert!(same, "the gathered bytes are not the concatenation");
    // 161 bytes from offset 8: 3 lines, as one write; piece by piece, 5.
    assert_eq!((gathered, single), (3, 3));
    assert!(refused, "a gather past the end of WW must be refused");
}

/// The AMO command (map 1.3): two origins on one node add to one counter
/// of a third process's SO-DIMM concurrently, and every old value they get
/// back is different (the target's atomic unit serialises them); compare-
/// and-swap and fetch work; a misaligned address, a bitwise operation on a
/// float and a range exposed read-only are refused; and one AMO costs the
/// same simulated time run after run.
#[test]
fn the_atomic_unit_serialises_concurrent_updates_and_refuses_what_it_must() {
    use fpga_regs::sched::{ElemType, ReduceOp};
    use fpga_regs::Atomic;
    const ROUNDS: u64 = 50;
    let target = Peer::new(1, 0);
    let target_body = move |mut d: Device| {
        let base = d.info().sodimm_base;
        d.write_ww(0, &[0u8; 64]).unwrap();
        d.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 64 } }).unwrap();
        d.expose(0, base, 4096, ExposePerm::REMOTE_READ | ExposePerm::REMOTE_WRITE).unwrap();
        d.expose(1, base + 4096, 4096, ExposePerm::REMOTE_READ).unwrap();
        (base, Vec::new(), 0)
    };
    let origin = move |mut d: Device| {
        d.compute(50_000.0).unwrap(); // the target exposes first
                                      // Slot 0's partition (the target's, on node 1) starts where slot 0's does here.
        let base = d.info().sodimm_base - d.info().me.slot as u64 * d.info().sodimm_size;
        let amo = |op, elem, addr, operand, compare| Command::Amo {
            peer: target,
            addr,
            op,
            elem,
            operand,
            compare,
            pw_off: 0x100,
        };
        let old = |d: &mut Device, c: Command| {
            d.run(&c).unwrap();
            u64::from_le_bytes(read_pw(d, 0x100, 8).try_into().unwrap())
        };
        let add = amo(Atomic::Reduce(ReduceOp::Sum), ElemType::U64, base, 1, 0);
        let t0 = d.now_ps().unwrap();
        let mut seen = vec![old(&mut d, add)];
        let one = d.now_ps().unwrap() - t0;
        for _ in 1..ROUNDS {
            seen.push(old(&mut d, add));
        }
        // Refusals: misaligned, bitwise on a float, read-only range.
        for (c, code) in [
            (amo(Atomic::Reduce(ReduceOp::Sum), ElemType::U64, base + 4, 1, 0), ErrorCode::BadAtomic),
            (amo(Atomic::Reduce(ReduceOp::Bxor), ElemType::F64, base + 8, 1, 0), ErrorCode::BadAtomic),
            (amo(Atomic::Replace, ElemType::U32, base + 4096, 1, 0), ErrorCode::NotExposed),
        ] {
            assert_eq!(d.run(&c).unwrap_err().code(), Some(code), "{c:?}");
        }
        (seen, one)
    };
    let (cluster, _, results) = run_actors(
        cfg("atomic", 2, 2),
        vec![
            actor(target, target_body),
            actor(Peer::new(0, 0), move |d| {
                let (s, one) = origin(d);
                (0, s, one)
            }),
            actor(Peer::new(0, 1), move |d| {
                let (s, one) = origin(d);
                (0, s, one)
            }),
        ],
    )
    .unwrap();
    let base = results[0].0 as usize;
    let counter = u64::from_le_bytes(cluster.model().sodimm(1)[base..base + 8].try_into().unwrap());
    assert_eq!(counter, 2 * ROUNDS, "every add landed");
    let mut all: Vec<u64> = results[1].1.iter().chain(&results[2].1).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..2 * ROUNDS).collect::<Vec<_>>(), "each add saw a different old value");
    assert!(
        cluster.model().sodimm(1)[base + 4096..base + 8192].iter().all(|b| *b == 0),
        "the read-only range was written"
    );
    // One fetch-and-add on the paper's fabric: request and response across
    // the link, the unit's read-modify-write between (simulated, exact).
    assert_eq!(results[1].2, 3_637_500, "first AMO's simulated time");
}
