//! `dnrun`: start an MPI job on the simulated DIMMnet-2 (or over UDP).
//!
//! `dnrun -n 4 --nodes 2 -- target/release/dnbench latency`

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mpi::launcher::{launch, Backend, DpdkPolling, LaunchOptions};

/// Run an MPI program as NP processes.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None, trailing_var_arg = true, args_override_self = true)]
struct Args {
    /// Number of processes (ranks).
    #[arg(short = 'n', long = "np")]
    np: u32,
    /// Number of nodes; ranks are placed in blocks of ceil(NP/NODES).
    #[arg(long, default_value_t = 1)]
    nodes: u16,
    /// Transport: the simulated DIMMnet-2, or UDP over the host network.
    #[arg(long, value_enum, default_value = "sim")]
    backend: Backend,
    /// Simulator host profile: p4-2003, modern, or a JSON file.
    #[arg(long, default_value = "p4-2003")]
    profile: String,
    /// Write the simulated device's Chrome trace here (open in Perfetto).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Stop the job after this many seconds (wall clock).
    #[arg(long)]
    timeout: Option<u64>,
    /// SO-DIMM per simulated slot, in MiB.
    #[arg(long, default_value_t = 64)]
    partition_mib: u64,
    /// Set an environment variable for every rank (KEY=VALUE; repeatable).
    #[arg(long = "env", short = 'x')]
    env: Vec<String>,
    /// Print the simulator's summary.
    #[arg(short, long)]
    verbose: bool,
    /// UDP across hosts: a file with one host:port per rank, in rank order.
    #[arg(long)]
    hostfile: Option<PathBuf>,
    /// Start only these ranks on this host (e.g. 0-3 or 0,2,4); the default is all.
    #[arg(long, value_parser = parse_ranks)]
    ranks: Option<RankList>,
    /// Job id stamped on every UDP datagram; give the same one on every host.
    #[arg(long)]
    job_id: Option<u32>,
    /// DPDK across hosts or namespaces: the one interface this host's rank
    /// shares with the others, as an EAL --vdev argument (e.g.
    /// net_af_packet0,iface=eth1); start one rank per host with --ranks
    /// and the same --job-id everywhere. Default: memif between the ranks
    /// of this host.
    #[arg(long)]
    dpdk_vdev: Option<String>,
    /// DPDK on this host: who polls the receive queues. `rank`: each rank
    /// its own interfaces. `node`: a polling process per node (--nodes)
    /// receives for the node's ranks and hands frames over through shared
    /// memory (seed 000 §4.1; costs a core, see docs/BENCHMARKS.md).
    #[arg(long, value_enum, default_value = "rank")]
    dpdk_poller: DpdkPolling,
    /// The program and its arguments (after `--`).
    #[arg(required = true)]
    command: Vec<String>,
}

/// A list of ranks given as `0-3,6`.
#[derive(Clone, Debug)]
struct RankList(Vec<u32>);

fn parse_ranks(s: &str) -> Result<RankList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("{part:?} is not a rank or a range like 4-7");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        return Err("no ranks given".into());
    }
    Ok(RankList(out))
}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.len() == 3 && argv[1] == mpi::launcher::REAPER_ARG {
        return ExitCode::from(mpi::launcher::reap(std::path::Path::new(&argv[2])) as u8);
    }
    if argv.len() >= 2 && argv[1] == mpi::launcher::POLLER_ARG {
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
                eprintln!("dnrun: cannot install a signal handler: {e}");
            }
        }
        return ExitCode::from(mpi::launcher::run_dpdk_poller(&argv[2..], &stop) as u8);
    }
    let a = Args::parse();
    let mut env = Vec::new();
    for kv in &a.env {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => env.push((k.to_string(), v.to_string())),
            _ => {
                eprintln!("dnrun: --env {kv:?} must be KEY=VALUE");
                return ExitCode::from(2);
            }
        }
    }
    let opts = LaunchOptions {
        np: a.np,
        nodes: a.nodes,
        backend: a.backend,
        profile: a.profile,
        trace: a.trace,
        timeout: a.timeout.map(Duration::from_secs),
        partition_mib: a.partition_mib,
        program: PathBuf::from(&a.command[0]),
        args: a.command[1..].to_vec(),
        env,
        verbose: a.verbose,
        hostfile: a.hostfile,
        ranks: a.ranks.map(|r| r.0),
        job_id: a.job_id,
        dpdk_vdev: a.dpdk_vdev,
        dpdk_polling: a.dpdk_poller,
        reaper: std::env::current_exe().ok(),
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        if let Err(e) = signal_hook::flag::register(sig, interrupted.clone()) {
            eprintln!("dnrun: cannot install a signal handler: {e}");
        }
    }
    match launch(&opts, &interrupted) {
        Ok(report) => ExitCode::from(report.exit_code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("dnrun: {e}");
            ExitCode::from(2)
        }
    }
}
