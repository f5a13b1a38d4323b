//! `dnrun`: start an MPI job on the simulated DIMMnet-2 (or over UDP).
//!
//! `dnrun -n 4 --nodes 2 -- target/release/dnbench latency`

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mpi_tools::launcher::{launch, Backend, DpdkPolling, LaunchOptions};

/// Run an MPI program as NP processes.
#[derive(Parser, Debug)]
#[command(
    version,
    about,
    long_about = None,
    trailing_var_arg = true,
    args_override_self = true,
    after_help = "Every DN_* environment variable, what it takes and what it does: dnrun --help-env"
)]
struct Args {
    /// Number of processes (ranks).
    #[arg(short = 'n', long = "np")]
    np: u32,
    /// Number of nodes; ranks are placed in blocks of ceil(NP/NODES) (of the
    /// universe's, with --universe-size). 1 by default, or as many as a
    /// universe above 16 processes needs.
    #[arg(long)]
    nodes: Option<u16>,
    /// Every process the job may have (MPI_UNIVERSE_SIZE), the NP started
    /// and those its ranks may spawn (MPI_Comm_spawn); NP by default.
    /// The simulator and UDP. hydra spells it -usize; MPIEXEC_UNIVERSE_SIZE sets it
    /// too.
    #[arg(long = "universe-size")]
    universe_size: Option<u32>,
    /// Transport (the list comes from the backend registry, see `args`).
    #[arg(long, value_parser = Backend::parse, default_value = "sim")]
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
    /// No progress line on the terminal while a simulated job runs.
    #[arg(short, long)]
    quiet: bool,
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
    /// Prefix every line of output with the rank that printed it, `[rank] `
    /// (Open MPI's --tag-output, MPICH's -l). By default output passes
    /// through unchanged, as mpirun passes it.
    #[arg(short = 'l', long = "tag-output")]
    tag_output: bool,
    /// Ranks per node (MPICH's -ppn): sets --nodes to ceil(NP / PPN).
    #[arg(long)]
    ppn: Option<u32>,
    /// Simulator: what a program's own computation between MPI calls costs
    /// in simulated time. `none` (the default): nothing, and every run of a
    /// job gives the same simulated times. `measured`: the thread CPU time
    /// of each burst, times the profile's compute_scale (`measured:SCALE`
    /// to give the scale), SimGrid's simulate-computation; simulated times
    /// then vary from run to run. C and Python programs; Rust programs
    /// charge theirs with Universe::compute.
    #[arg(long, default_value = "none")]
    compute: String,
    /// How the ranks run on the simulator: `contexts` (every rank a
    /// user-level context of dnrun: a grant is a switch between stacks, not
    /// two trips through the kernel), `processes` (every rank a process of
    /// its own: any program, mpi4py included), or `auto` (contexts when the
    /// program can be loaded so, processes otherwise; -v says why). The
    /// default comes from DN_RANK_MODE, else auto.
    #[arg(long, value_enum)]
    rank_mode: Option<mpi_tools::contexts::RankMode>,
    /// The program and its arguments (after `--`).
    #[arg(required = true)]
    command: Vec<String>,
}

/// Parse the command line, `--backend`'s help listing the registry's backends.
fn args(argv: Vec<std::ffi::OsString>) -> Args {
    use clap::{CommandFactory, FromArgMatches};
    let list: Vec<String> = Backend::all().map(|b| format!("{}: {}", b.name(), b.needs().about)).collect();
    let cmd = Args::command().mut_arg("backend", |a| a.help(format!("Transport. {}", list.join("; "))));
    Args::from_arg_matches(&cmd.get_matches_from(argv)).unwrap_or_else(|e| e.exit())
}

/// A list of ranks given as `0-3,6`.
#[derive(Clone, Debug)]
struct RankList(Vec<u32>);

fn parse_ranks(s: &str) -> Result<RankList, String> {
    // The job's size is checked once every option is read (`--ranks`
    // names rank N, but the job has ...).
    adi::job::parse_rank_list(s, None).map(RankList).map_err(|e| e.to_string())
}

/// hydra's `MPIEXEC_UNIVERSE_SIZE`, when `--universe-size` is not given:
/// never below the job (a universe holds it), and only where processes
/// can be spawned (the simulator and UDP), so that a setting meant for a whole
/// session does not refuse jobs on other backends.
fn universe_from_env(np: u32, backend: &Backend) -> Option<u32> {
    let v: u32 = std::env::var("MPIEXEC_UNIVERSE_SIZE").ok()?.trim().parse().ok()?;
    backend.can_spawn().then_some(v.max(np))
}

/// Options that take a value, so that the value is not taken for the
/// program when scanning for where dnrun's own options end.
const WITH_VALUE: &[&str] = &[
    "-n",
    "--np",
    "--nodes",
    "--backend",
    "--profile",
    "--trace",
    "--timeout",
    "--partition-mib",
    "-x",
    "--env",
    "--hostfile",
    "--ranks",
    "--job-id",
    "--dpdk-vdev",
    "--dpdk-poller",
    "--ppn",
    "--compute",
    "--rank-mode",
    "--universe-size",
];

/// Accept the spellings of the common launchers (`mpiexec`/`mpirun` are
/// dnrun under another name): MPICH's and Open MPI's `-np N`, `-ppn N`,
/// and `-genv`/`-env KEY VALUE` (for `-x KEY=VALUE`), in dnrun's own
/// options only: the program's arguments pass untouched.
fn mpiexec_flags(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(argv.len());
    let mut it = argv.into_iter();
    out.extend(it.next()); // the program name
    while let Some(a) = it.next() {
        let Some(s) = a.to_str().map(str::to_string) else {
            out.push(a);
            out.extend(it);
            break;
        };
        match s.as_str() {
            "--" => {
                out.push(a);
                out.extend(it);
                break;
            }
            "-np" | "-ppn" => {
                out.push(format!("-{s}").into());
                out.extend(it.next());
            }
            "-usize" => {
                out.push("--universe-size".into());
                out.extend(it.next());
            }
            "-genv" | "-env" => match (it.next(), it.next()) {
                (Some(k), Some(v)) => {
                    out.push("-x".into());
                    let mut kv = k;
                    kv.push("=");
                    kv.push(v);
                    out.push(kv);
                }
                // Incomplete: let the parser say what is missing.
                (k, _) => {
                    out.push("-x".into());
                    out.extend(k);
                }
            },
            _ if WITH_VALUE.contains(&s.as_str()) => {
                out.push(a);
                out.extend(it.next());
            }
            _ if s.starts_with('-') => out.push(a),
            _ => {
                // The program: it and its arguments as they are.
                out.push(a);
                out.extend(it);
                break;
            }
        }
    }
    out
}

mod interpose;

fn main() -> ExitCode {
    // The functions a host answers for its ranks stay in the executable.
    std::hint::black_box(interpose::keep());
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.len() == 3 && argv[1] == mpi_tools::launcher::REAPER_ARG {
        return ExitCode::from(mpi_tools::launcher::reap(std::path::Path::new(&argv[2])) as u8);
    }
    if argv.len() >= 2 && argv[1] == mpi_tools::launcher::POLLER_ARG {
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
                eprintln!("dnrun: cannot install a signal handler: {e}");
            }
        }
        return ExitCode::from(mpi_tools::launcher::run_dpdk_poller(&argv[2..], &stop) as u8);
    }
    if argv.len() == 2 && argv[1] == "--help-env" {
        print!("{}", adi::knobs::markdown());
        return ExitCode::SUCCESS;
    }
    let a = args(mpiexec_flags(argv));
    let universe = a.universe_size.or_else(|| universe_from_env(a.np, &a.backend));
    let nodes = match a.ppn {
        None => a.nodes.unwrap_or_else(|| {
            // The fewest nodes that hold the universe (16 slots each).
            let most = fpga_regs::layout::MAX_SLOTS as u32;
            u16::try_from(universe.unwrap_or(1).div_ceil(most).max(1)).unwrap_or(u16::MAX)
        }),
        Some(0) => {
            eprintln!("dnrun: --ppn must be at least 1");
            return ExitCode::from(2);
        }
        Some(ppn) => match u16::try_from(a.np.div_ceil(ppn)) {
            Ok(n) => n,
            Err(_) => {
                eprintln!("dnrun: --ppn {ppn} with {} ranks makes more than 65535 nodes", a.np);
                return ExitCode::from(2);
            }
        },
    };
    let mut env = Vec::new();
    match a.compute.parse::<mpi::compute::ComputeMode>() {
        Ok(mpi::compute::ComputeMode::None) => {}
        Ok(_) => {
            if a.backend.needs().simulator {
                eprintln!(
                    "dnrun: --compute {}: simulated times include this host's measured CPU time and differ from run to run (--compute none is repeatable)",
                    a.compute
                );
            }
            env.push((mpi::compute::ENV_COMPUTE.to_string(), a.compute.clone()));
        }
        Err(e) => {
            eprintln!("dnrun: --compute: {e}");
            return ExitCode::from(2);
        }
    }
    for kv in &a.env {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => env.push((k.to_string(), v.to_string())),
            _ => {
                eprintln!("dnrun: --env {kv:?} must be KEY=VALUE");
                return ExitCode::from(2);
            }
        }
    }
    let rank_mode = match a.rank_mode {
        Some(m) => m,
        None => match mpi_tools::contexts::RankMode::from_env() {
            Ok(m) => m,
            Err(e) => {
                eprintln!("dnrun: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let opts = LaunchOptions {
        np: a.np,
        universe,
        nodes,
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
        tag_output: a.tag_output,
        quiet: a.quiet,
        rank_mode,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(args: &[&str]) -> Vec<String> {
        let v = std::iter::once("mpiexec").chain(args.iter().copied()).map(std::ffi::OsString::from).collect();
        mpiexec_flags(v).into_iter().skip(1).map(|s| s.into_string().unwrap()).collect()
    }

    #[test]
    fn mpich_and_open_mpi_spellings_become_dnruns_and_the_program_keeps_its_own() {
        assert_eq!(
            rewrite(&["-np", "4", "-genv", "A", "1", "-l", "./prog", "-np", "3", "-genv", "B", "2"]),
            ["--np", "4", "-x", "A=1", "-l", "./prog", "-np", "3", "-genv", "B", "2"]
        );
        assert_eq!(rewrite(&["-n", "-np", "--", "-np"]), ["-n", "-np", "--", "-np"], "a value is not rewritten");
        assert_eq!(rewrite(&["-ppn", "2", "-x", "-np=1", "prog"]), ["--ppn", "2", "-x", "-np=1", "prog"]);
        let a = Args::parse_from(mpiexec_flags(
            ["mpirun", "-np", "6", "-ppn", "4", "--tag-output", "p", "x"].map(std::ffi::OsString::from).to_vec(),
        ));
        assert_eq!((a.np, a.ppn, a.tag_output, a.command), (6, Some(4), true, vec!["p".to_string(), "x".to_string()]));
    }
}
