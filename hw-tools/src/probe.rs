//! `dimmnet-sim probe`: device-level micro-benchmarks through the driver, in
//! simulated time (seed 004 Table 2 rows 3 and 4, and 64 KiB bandwidths).
//!
//! * `botf_ivs_32B_us` — BOTF with TYPE=IVS carrying 32 bytes, node to node,
//!   one way: half the round trip of a BOTF ping-pong in which each side
//!   writes the packet image into WW, rings BOTF, and polls its ring's NWA
//!   in LLCM until the reply is visible (consuming it after replying).
//! * `vl_128B_us` — VL of 128 bytes, from the first descriptor write until
//!   the completion is observed, i.e. the data is readable in PW.
//! * `*_64KiB_MBps` — one 64 KiB VS, VL, RVS or RVL, from posting to
//!   observed completion.

use std::path::PathBuf;

use driver::{Device, DriverError};
use fpga_regs::packet::PacketHeader;
use fpga_regs::ur::ExposePerm;
use fpga_regs::{Command, Near, Pattern, Peer};
use serde::Serialize;

use crate::harness::{temp_dir, SimCluster};
use hw_model::cluster::ClusterConfig;
use hw_model::profile::HostProfile;

/// Probe results (simulated).
#[allow(non_snake_case)]
#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    /// Host profile used.
    pub profile: String,
    /// Iterations per latency figure.
    pub iterations: u32,
    /// BOTF (TYPE=IVS), 32 bytes, one way (us).
    pub botf_ivs_32B_us: f64,
    /// VL, 128 bytes, until readable in PW (us).
    pub vl_128B_us: f64,
    /// VS of 64 KiB (MB/s, 10^6 bytes per second).
    pub vs_64KiB_MBps: f64,
    /// VL of 64 KiB (MB/s).
    pub vl_64KiB_MBps: f64,
    /// RVS of 64 KiB node to node (MB/s).
    pub rvs_64KiB_MBps: f64,
    /// RVL of 64 KiB node to node (MB/s).
    pub rvl_64KiB_MBps: f64,
}

/// Errors running the probe.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Simulator failure.
    #[error(transparent)]
    Cluster(#[from] hw_model::cluster::ClusterError),
    /// Driver failure.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// A thread panicked.
    #[error("probe thread failed: {0}")]
    Thread(String),
}

const IMAGE_OFF: usize = 0;
const BULK: u32 = 64 * 1024;

fn now(d: &Device) -> u64 {
    d.now_ps().unwrap_or(0)
}

fn botf_packet(dst: Peer) -> PacketHeader {
    PacketHeader::ivs(dst, 32)
}

/// Wait until at least `n` bytes are in `src`'s ring.
fn wait_ring(d: &Device, src: Peer, n: u64) -> Result<(), DriverError> {
    d.poll(|d| match d.ring_available(src) {
        Ok(a) if a >= n => Some(Ok(())),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })?
}

/// Run the probe on a fresh 2-node cluster.
pub fn run_probe(profile: HostProfile, iterations: u32) -> Result<ProbeReport, ProbeError> {
    let iterations = iterations.max(1);
    let mut cfg = ClusterConfig::new(temp_dir("probe"), 2, 1);
    cfg.profile = profile.clone();
    cfg.expected_actors = 2;
    let sim = SimCluster::start(cfg)?;
    let (p0, p1): (PathBuf, PathBuf) = (sim.node_path(0), sim.node_path(1));
    let a = Peer::new(0, 0);
    let b = Peer::new(1, 0);
    let total = iterations + 10;

    let responder = std::thread::spawn(move || -> Result<(), DriverError> {
        let mut d = Device::open(&p1, 0)?;
        let base = d.info().sodimm_base;
        d.ring_setup(a, base, 64 * 1024)?;
        d.expose(0, base + (1 << 20), 1 << 20, ExposePerm::REMOTE_READ | ExposePerm::REMOTE_WRITE)?;
        let (hdr, body) = (botf_packet(a), [0xBBu8; 32]);
        let mut last = None;
        for _ in 0..total {
            wait_ring(&d, a, 32)?;
            let t = d.submit_packet(IMAGE_OFF, &hdr, &[&body])?;
            // Off the critical path: reap the previous BOTF, consume the request.
            if let Some(prev) = last.replace(t) {
                d.wait(prev)?;
            }
            d.ring_consume(a, 32)?;
        }
        if let Some(t) = last {
            d.wait(t)?;
        }
        Ok(())
    });

    let run = || -> Result<ProbeReport, DriverError> {
        let mut d = Device::open(&p0, 0)?;
        let base = d.info().sodimm_base;
        d.ring_setup(b, base, 64 * 1024)?;
        let (hdr, body) = (botf_packet(b), [0xAAu8; 32]);
        let mut rtt = 0u64;
        let mut last = None;
        for i in 0..total {
            let t0 = now(&d);
            let t = d.submit_packet(IMAGE_OFF, &hdr, &[&body])?;
            if let Some(prev) = last.replace(t) {
                d.wait(prev)?;
            }
            wait_ring(&d, b, 32)?;
            if i >= 10 {
                rtt += now(&d) - t0;
            }
            d.ring_consume(b, 32)?;
        }
        if let Some(t) = last {
            d.wait(t)?;
        }
        let botf = rtt as f64 / iterations as f64 / 2.0 / 1e6;

        let mut vl = 0u64;
        for _ in 0..iterations {
            let t0 = now(&d);
            d.run(&Command::Vl { src: Pattern::Contiguous { addr: base + 4096, len: 128 }, pw_off: 0 })?;
            vl += now(&d) - t0;
        }
        let vl = vl as f64 / iterations as f64 / 1e6;

        let mbps = |ps: u64| BULK as f64 / (ps as f64 / 1e12) / 1e6;
        let timed = |d: &mut Device, c: Command| -> Result<u64, DriverError> {
            let t0 = now(d);
            d.run(&c)?;
            Ok(now(d) - t0)
        };
        d.write_ww(0, &vec![0x5A; BULK as usize])?;
        let vs =
            timed(&mut d, Command::Vs { ww_off: 0, dst: Pattern::Contiguous { addr: base + (2 << 20), len: BULK } })?;
        let vlb =
            timed(&mut d, Command::Vl { src: Pattern::Contiguous { addr: base + (2 << 20), len: BULK }, pw_off: 0 })?;
        // The responder (node 1, slot 0: partition base 0) exposed [1 MiB, 2 MiB).
        let rbase = 1 << 20;
        let rvs = timed(
            &mut d,
            Command::Rvs { peer: b, src: Near::Window(0), dst: Pattern::Contiguous { addr: rbase, len: BULK } },
        )?;
        let rvl = timed(
            &mut d,
            Command::Rvl { peer: b, src: Pattern::Contiguous { addr: rbase, len: BULK }, dst: Near::Window(0) },
        )?;
        Ok(ProbeReport {
            profile: profile.name.clone(),
            iterations,
            botf_ivs_32B_us: round3(botf),
            vl_128B_us: round3(vl),
            vs_64KiB_MBps: round1(mbps(vs)),
            vl_64KiB_MBps: round1(mbps(vlb)),
            rvs_64KiB_MBps: round1(mbps(rvs)),
            rvl_64KiB_MBps: round1(mbps(rvl)),
        })
    };
    let report = run();
    let responded = responder.join().map_err(|_| ProbeError::Thread("responder panicked".into()))?;
    let _ = sim.join()?;
    responded?;
    Ok(report?)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
