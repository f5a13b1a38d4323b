//! How fast the simulator itself runs: wall time for 100,000 BOTF (IVS)
//! round trips between two nodes, with the two endpoints as threads of one
//! process and as two separate processes (as `dnrun` runs MPI ranks).
//!
//! `cargo bench -p hw-tools --bench sim_speed [-- ITERATIONS]`
//! Goal (issue #2): under 2 s for 100,000 round trips on a 2-core machine.

use std::path::Path;
use std::process::Command as Process;
use std::time::Instant;

use driver::{Device, OpenOptions};
use fpga_regs::packet::PacketHeader;
use fpga_regs::{Command, Peer};
use hw_model::ClusterConfig;
use hw_tools::harness::{temp_dir, SimCluster};

/// One side of the ping-pong: `first` sends first.
fn endpoint(path: &Path, slot_node: u16, actor: u32, iters: u32) -> u64 {
    let mut d = Device::open_with(path, &OpenOptions { slot: 0, actor: Some(actor) }).expect("open");
    let me = Peer::new(slot_node, 0);
    let other = Peer::new(1 - slot_node, 0);
    let base = d.info().sodimm_base;
    d.ring_setup(other, base, 64 * 1024).expect("ring");
    let mut img = PacketHeader::ivs(other, 32).encode().to_vec();
    img.extend_from_slice(&[me.node as u8; 32]);
    d.write_ww(0, &img).expect("ww");
    let botf = Command::Botf { ww_off: 0, len: img.len() as u32 };
    let mut last = None;
    let first = slot_node == 0;
    for _ in 0..iters {
        if first {
            let t = d.submit(&botf).expect("botf");
            if let Some(p) = last.replace(t) {
                d.wait(p).expect("botf completion");
            }
        }
        d.poll(|d| (d.ring_available(other).unwrap_or(0) >= 32).then_some(())).expect("reply");
        d.ring_consume(other, 32).expect("consume");
        if !first {
            let t = d.submit(&botf).expect("botf");
            if let Some(p) = last.replace(t) {
                d.wait(p).expect("botf completion");
            }
        }
    }
    if let Some(p) = last {
        d.wait(p).expect("botf completion");
    }
    d.now_ps().unwrap_or(0)
}

fn cluster() -> SimCluster {
    let mut cfg = ClusterConfig::new(temp_dir("simspeed"), 2, 1);
    cfg.expected_actors = 2;
    SimCluster::start(cfg).expect("cluster")
}

fn main() {
    // Child process mode.
    if let (Ok(role), Ok(path), Ok(iters)) =
        (std::env::var("SIM_SPEED_ROLE"), std::env::var("SIM_SPEED_PATH"), std::env::var("SIM_SPEED_ITERS"))
    {
        let node: u16 = role.parse().expect("role");
        let iters: u32 = iters.parse().expect("iters");
        endpoint(Path::new(&path), node, node as u32, iters);
        return;
    }
    let iters: u32 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);

    // Threads.
    let sim = cluster();
    let (p0, p1) = (sim.node_path(0), sim.node_path(1));
    let start = Instant::now();
    let t = std::thread::spawn(move || endpoint(&p1, 1, 1, iters));
    let sim_end = endpoint(&p0, 0, 0, iters);
    t.join().expect("pong thread");
    let threads = start.elapsed();
    let (_, report) = sim.join().expect("model");
    println!(
        "sim_speed/threads:   {iters} BOTF round trips in {:.3} s wall ({:.2} us wall per round trip); {:.3} us simulated per one-way; {} scheduler grants",
        threads.as_secs_f64(),
        threads.as_secs_f64() * 1e6 / iters as f64,
        sim_end as f64 / 1e6 / iters as f64 / 2.0,
        report.grants
    );

    // Processes.
    let sim = cluster();
    let exe = std::env::current_exe().expect("exe");
    let start = Instant::now();
    let children: Vec<_> = (0..2u16)
        .map(|node| {
            Process::new(&exe)
                .env("SIM_SPEED_ROLE", node.to_string())
                .env("SIM_SPEED_PATH", sim.node_path(node))
                .env("SIM_SPEED_ITERS", iters.to_string())
                .spawn()
                .expect("spawn endpoint")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success(), "an endpoint process failed");
    }
    let procs = start.elapsed();
    let (_, report) = sim.join().expect("model");
    println!(
        "sim_speed/processes: {iters} BOTF round trips in {:.3} s wall ({:.2} us wall per round trip); {} scheduler grants",
        procs.as_secs_f64(),
        procs.as_secs_f64() * 1e6 / iters as f64,
        report.grants
    );
}
