//! `dimmnet-sim`: run a simulated DIMMnet-2 cluster, probe it, or fuzz a device.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use hw_model::{Cluster, ClusterConfig, HostProfile};

/// Simulated DIMMnet-2 cluster.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a cluster until interrupted (or, with --actors, until the job's
    /// processes have all attached and left). Files are removed on exit.
    Serve {
        /// Number of nodes.
        #[arg(long, default_value_t = 2)]
        nodes: u16,
        /// Slots (processes) per node.
        #[arg(long, default_value_t = 1)]
        slots: u16,
        /// Directory for node files and the control file (e.g. /dev/shm/dimmnet).
        #[arg(long)]
        dir: PathBuf,
        /// Host profile: p4-2003, modern, or a JSON file.
        #[arg(long, default_value = "p4-2003")]
        profile: String,
        /// Write a Chrome trace-event JSON file (open in Perfetto).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// KEY=VALUE for the trace's metadata (its otherData; repeatable).
        #[arg(long = "trace-meta")]
        trace_meta: Vec<String>,
        /// Expected number of processes: start only when all have attached,
        /// stop when all have left, report deadlocks.
        #[arg(long, default_value_t = 0)]
        actors: u32,
        /// SO-DIMM partition per slot, in MiB.
        #[arg(long, default_value_t = 64)]
        partition_mib: u64,
        /// The CPU the simulator and every simulated process hand over on:
        /// a number, `auto` or `none` (not pinned: the parties spin briefly
        /// instead of sleeping). `auto` pins a job of more than three times
        /// as many processes as this process may use CPUs, on the CPU it
        /// starts on, and leaves smaller jobs unpinned: measured on 2 vCPUs
        /// (a `dnbench allreduce` of 8 bytes), pinning wins from 8 processes
        /// up (8: 1.18 s against 1.28 s; 16: 2.33 s against 4.59 s),
        /// spinning below (6: 0.60 s against 0.67 s; 2, 100,000 ping-pongs:
        /// 0.93 s against 1.34 s). The default comes from DN_SIM_CPU, else
        /// auto.
        #[arg(long)]
        cpu: Option<String>,
        /// How far ahead of the others a process may run: full (a packet's
        /// hop, and the ring commit after it), hop, or none. Every mode
        /// gives the same simulated times; smaller ones hand over more. The
        /// default comes from DN_SIM_LOOKAHEAD, else full.
        #[arg(long)]
        lookahead: Option<String>,
        /// Be a device instead of a simulator: no process joins a scheduler;
        /// the model watches every slot's doorbell and executes commands as
        /// they come, so an unmodified driver (or a virtual machine mapping a
        /// node file as a PCI BAR) talks to it as to a card. PACE is `wall`
        /// (simulated time follows wall time; the default) or `fast` (every
        /// pending event at once). No control file is written.
        #[arg(long, value_name = "PACE", num_args = 0..=1, default_missing_value = "wall",
              conflicts_with_all = ["actors", "trace", "lookahead", "cpu"])]
        realtime: Option<hw_model::realtime::Pace>,
    },
    /// Drive random register sequences through the driver and check the
    /// device's invariants after each case; a failure prints the seed and
    /// the minimal sequence that reproduces it.
    Fuzz {
        /// Device to fuzz (a real card's node, or a `serve` node file). By
        /// default each case runs on a fresh in-process simulator, which also
        /// checks memory isolation.
        #[arg(long)]
        device: Option<PathBuf>,
        /// Number of cases.
        #[arg(long, default_value_t = 256)]
        cases: u32,
        /// Random seed (printed when omitted, so a run can be repeated).
        #[arg(long)]
        seed: Option<u64>,
        /// Most operations per case.
        #[arg(long, default_value_t = 64)]
        max_ops: usize,
    },
    /// The device tests a card must pass, through the driver, on slots 0
    /// and 1 of DEVICE: a card's BAR (e.g. a PCI `resource2` file in
    /// sysfs), or a node file of `serve --realtime`. Prints a line per check;
    /// fails on the first that does not hold.
    Devcheck {
        /// The device (node file or BAR resource file) to test.
        #[arg(long)]
        device: PathBuf,
    },
    /// Device-level micro-benchmarks in simulated time.
    Probe {
        /// Host profile: p4-2003, modern, or a JSON file.
        #[arg(long, default_value = "p4-2003")]
        profile: String,
        /// Iterations per latency figure.
        #[arg(long, default_value_t = 1000)]
        iters: u32,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dimmnet-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `serve --realtime`: the model as a device until a signal.
fn serve_realtime(
    nodes: u16,
    slots: u16,
    dir: PathBuf,
    profile: HostProfile,
    partition_mib: u64,
    pace: hw_model::realtime::Pace,
) -> Result<(), String> {
    let cfg = hw_model::ModelConfig {
        nodes,
        slots,
        partition_size: partition_mib.checked_mul(1 << 20).ok_or("--partition-mib is too large")?,
        timing: profile.device.clone(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| format!("cannot install signal handler: {e}"))?;
    }
    let mut dev = hw_model::realtime::Realtime::create(cfg, &dir, pace).map_err(|e| e.to_string())?;
    println!("dimmnet-sim: ready {} (a device in real time, pace {pace})", dir.display());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let report = dev.run(&stop);
    drop(dev); // removes its files
    eprintln!("dimmnet-sim: {}", report.summary());
    Ok(())
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Serve { nodes, slots, dir, profile, realtime: Some(pace), partition_mib, .. } => {
            let profile = HostProfile::load(&profile).map_err(|e| e.to_string())?;
            serve_realtime(nodes, slots, dir, profile, partition_mib, pace)
        }
        Cmd::Serve {
            nodes,
            slots,
            dir,
            profile,
            trace,
            trace_meta,
            actors,
            partition_mib,
            cpu,
            lookahead,
            realtime: None,
        } => {
            let profile = HostProfile::load(&profile).map_err(|e| e.to_string())?;
            let mut cfg = ClusterConfig::new(dir, nodes, slots);
            cfg.profile = profile;
            cfg.trace = trace;
            for kv in trace_meta {
                let (k, v) = kv.split_once('=').ok_or_else(|| format!("--trace-meta {kv:?} is not KEY=VALUE"))?;
                cfg.trace_meta.push((k.to_string(), v.to_string()));
            }
            cfg.expected_actors = actors;
            cfg.partition_size = partition_mib.checked_mul(1 << 20).ok_or("--partition-mib is too large")?;
            cfg.lookahead = match lookahead {
                Some(l) => l.parse().map_err(|e: dn_knobs::UnknownWord| e.to_string())?,
                None => dn_knobs::choice("DN_SIM_LOOKAHEAD")
                    .map_err(|e| e.to_string())?
                    .unwrap_or(hw_model::LookaheadMode::Full),
            };
            let cpu = cpu.or_else(|| dn_knobs::text("DN_SIM_CPU")).unwrap_or_else(|| "auto".into());
            cfg.cpu = match cpu.as_str() {
                "none" => None,
                "auto" => {
                    let cpus = simlink::affinity::current_mask().map(|m| m.count()).unwrap_or(1).max(1);
                    (actors as usize > 3 * cpus).then(simlink::affinity::current_cpu).flatten()
                }
                n => {
                    let c: usize = n.parse().map_err(|_| format!("--cpu {n:?}: give a CPU number, auto or none"))?;
                    let allowed = simlink::affinity::current_mask().map_err(|e| format!("--cpu: {e}"))?;
                    if !allowed.contains(c) {
                        return Err(format!("--cpu {c}: this process may not run on CPU {c}"));
                    }
                    Some(c)
                }
            };
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
                signal_hook::flag::register(sig, stop.clone())
                    .map_err(|e| format!("cannot install signal handler: {e}"))?;
            }
            let mut cluster = Cluster::create(cfg).map_err(|e| e.to_string())?;
            println!("dimmnet-sim: ready {}", cluster.dir().display());
            use std::io::Write;
            let _ = std::io::stdout().flush();
            cluster.run(&stop).map_err(|e| e.to_string())?;
            let report = cluster.finish().map_err(|e| e.to_string())?;
            eprintln!("dimmnet-sim: {}", report.summary());
            Ok(())
        }
        Cmd::Fuzz { device, cases, seed, max_ops } => {
            use hw_tools::fuzz::{fuzz, FuzzOutcome, Target};
            let seed = seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
            let target = match &device {
                Some(p) => Target::Device(p),
                None => Target::Simulator,
            };
            let what = device.as_ref().map_or("a fresh simulator per case".to_string(), |p| p.display().to_string());
            eprintln!("dimmnet-sim fuzz: {cases} cases of up to {max_ops} operations on {what}, seed {seed}");
            match fuzz(&target, cases, seed, max_ops.max(1)) {
                FuzzOutcome::Passed { cases } => {
                    println!("fuzz: {cases} cases passed (seed {seed})");
                    Ok(())
                }
                FuzzOutcome::Setup(e) => Err(e),
                FuzzOutcome::Failed { seed, reason, ops } => {
                    println!("fuzz: FAILED with seed {seed}: {reason}");
                    println!("minimal sequence ({} operations):", ops.len());
                    for (i, op) in ops.iter().enumerate() {
                        println!("  {i:3}: {op:?}");
                    }
                    Err(format!("invariant violated; reproduce with --seed {seed}"))
                }
            }
        }
        Cmd::Devcheck { device } => {
            let outcome = hw_tools::devcheck::run(&device, |line| println!("devcheck: ok {line}"));
            match outcome {
                Ok(()) => {
                    println!("devcheck: all checks passed on {}", device.display());
                    Ok(())
                }
                Err(e) => {
                    println!("devcheck: FAILED: {e}");
                    Err(format!("a device check failed on {}", device.display()))
                }
            }
        }
        Cmd::Probe { profile, iters, json } => {
            let profile = HostProfile::load(&profile).map_err(|e| e.to_string())?;
            let r = hw_tools::probe::run_probe(profile, iters).map_err(|e| e.to_string())?;
            if json {
                println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
            } else {
                println!("profile {} ({} iterations), simulated:", r.profile, r.iterations);
                println!(
                    "  BOTF (IVS) 32 B one way   {:>8.3} us   (seed 004 Table 2 row 3: 2.04 us)",
                    r.botf_ivs_32B_us
                );
                println!("  VL 128 B                  {:>8.3} us   (seed 004 Table 2 row 4: 0.68 us)", r.vl_128B_us);
                println!("  VS  64 KiB                {:>8.1} MB/s", r.vs_64KiB_MBps);
                println!("  VL  64 KiB                {:>8.1} MB/s", r.vl_64KiB_MBps);
                println!("  RVS 64 KiB                {:>8.1} MB/s", r.rvs_64KiB_MBps);
                println!("  RVL 64 KiB                {:>8.1} MB/s", r.rvl_64KiB_MBps);
            }
            Ok(())
        }
    }
}
