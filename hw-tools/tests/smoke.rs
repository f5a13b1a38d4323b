use driver::Device;
use fpga_regs::{Command, PacketHeader, Pattern, Peer};
use hw_model::ClusterConfig;
use hw_tools::harness::{temp_dir, SimCluster};

#[test]
fn vs_then_vl_round_trips() {
    let mut cfg = ClusterConfig::new(temp_dir("smoke"), 2, 1);
    cfg.expected_actors = 2;
    let sim = SimCluster::start(cfg).unwrap();
    let p0 = sim.node_path(0);
    let p1 = sim.node_path(1);
    let t1 = std::thread::spawn(move || {
        let mut dev = Device::open(&p1, 0).unwrap();
        let me = dev.info().clone();
        dev.ring_setup(Peer::new(0, 0), me.sodimm_base, 4096).unwrap();
        let n = dev
            .poll(|d| {
                let a = d.ring_available(Peer::new(0, 0)).unwrap();
                (a > 0).then_some(a)
            })
            .unwrap();
        dev.ring_load(Peer::new(0, 0), 0, 32, 0).unwrap();
        let mut buf = [0u8; 32];
        dev.read_pw(0, &mut buf).unwrap();
        dev.ring_consume(Peer::new(0, 0), 32).unwrap();
        (n, buf, dev.now_ps().unwrap())
    });
    let mut dev = Device::open(&p0, 0).unwrap();
    let base = dev.info().sodimm_base;
    dev.write_ww(0, b"hello, SO-DIMM!!").unwrap();
    dev.run(&Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base, len: 16 } }).unwrap();
    let t0 = dev.now_ps().unwrap();
    dev.run(&Command::Vl { src: Pattern::Contiguous { addr: base, len: 128 }, pw_off: 256 }).unwrap();
    let t1v = dev.now_ps().unwrap();
    let mut buf = [0u8; 16];
    dev.read_pw(256, &mut buf).unwrap();
    assert_eq!(&buf, b"hello, SO-DIMM!!");
    println!("VL 128B took {} ns", (t1v - t0) as f64 / 1000.0);
    // BOTF IVS to node 1
    let mut img = PacketHeader::ivs(Peer::new(1, 0), 32).encode().to_vec();
    img.extend_from_slice(&[7u8; 32]);
    dev.write_ww(1024, &img).unwrap();
    let t2 = dev.now_ps().unwrap();
    dev.run(&Command::Botf { ww_off: 1024, len: 64 }).unwrap();
    drop(dev);
    let (n, data, t_seen) = t1.join().unwrap();
    assert_eq!(n, 32);
    assert_eq!(data, [7u8; 32]);
    println!("BOTF start {} seen-by-receiver-after-VL {}", t2, t_seen);
    let (_cluster, report) = sim.join().unwrap();
    println!("{report:?}");
}
