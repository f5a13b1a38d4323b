//! `dnbench`: OSU-style point-to-point benchmarks, run under `dnrun`.
//!
//! * `latency` — ping-pong between ranks 0 and 1; one-way latency is half
//!   the round trip (as osu_latency).
//! * `bw` — rank 0 sends a window of non-blocking messages, rank 1 answers
//!   each window with a 4-byte acknowledgement (as osu_bw).
//! * `bibw` — both ranks send a window to each other at once (as osu_bibw).
//! * `poll` — rank 1 computes for `--delay-us` and then sends 5 bytes; rank
//!   0 loops on `iprobe` until it sees them. Reports the polls, the simulated
//!   time and the wall time it took to simulate (DESIGN §3: a polling
//!   program must cost bounded wall time per simulated millisecond).
//!
//! On the simulator, times are simulated (the clock of the rank); elsewhere
//! they are wall time. `--layer adi` runs the ping-pong on the protocol engine
//! directly, bypassing the MPI layer (seed 004 Table 2 row 5).
//!
//! * `bcast`, `reduce`, `allreduce`, `allgather`, `alltoall`, `barrier` —
//!   the average time per call over all ranks (as osu_bcast and friends);
//! * `ibcast`, `iallreduce` — the same non-blocking, and the overlap: the
//!   call is started, the rank computes for as long as the pure
//!   communication took (in ten slices with a `test` between them, so that
//!   manual progress has a chance; `--slices 0`: in one piece, no `test`),
//!   then waits; overlap is the share of the
//!   communication time the computation hid (osu_ibcast's definition).
//!
//! * `put`, `get`, `acc`, `fop`, `cas`, `put-bw`, `get-bw` — the OSU
//!   one-sided set (`mpi_tools::rma_bench`), with `--sync lock` (a flush
//!   per iteration) or `--sync fence`.
//!
//! `dnrun -n 2 -- target/release/dnbench latency --sizes 0,1K,64K --json`

use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use mpi::traits::*;
use mpi::Universe;
use mpi_tools::bench::{bw_iterations, iterations_for, Row, BW_MAX_WARMUP, LATENCY_WARMUP};
use mpi_tools::rma_bench::{self, RmaTest, Sync};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Test {
    /// One-way latency (half round trip).
    Latency,
    /// Unidirectional bandwidth.
    Bw,
    /// Bidirectional bandwidth.
    Bibw,
    /// An iprobe loop waiting for a late message.
    Poll,
    /// `MPI_Bcast` latency from rank 0 (osu_bcast).
    Bcast,
    /// `MPI_Reduce` (sum of u64) to rank 0 (osu_reduce).
    Reduce,
    /// `MPI_Allreduce` (sum of u64) (osu_allreduce).
    Allreduce,
    /// `MPI_Gather` to rank 0; the size is each rank's block (osu_gather).
    Gather,
    /// `MPI_Scatter` from rank 0; the size is each rank's block (osu_scatter).
    Scatter,
    /// `MPI_Allgather`; the size is each rank's block (osu_allgather).
    Allgather,
    /// `MPI_Alltoall`; the size is each pair's block (osu_alltoall).
    Alltoall,
    /// `MPI_Barrier` (osu_barrier; sizes ignored).
    Barrier,
    /// `MPI_Ibcast` with overlap (osu_ibcast).
    Ibcast,
    /// `MPI_Iallreduce` with overlap (osu_iallreduce).
    Iallreduce,
    /// Seed 002's benchmark: a broadcast from rank 0 while every rank
    /// multiplies fixed-size matrices (`--matrix 4|40`), calling `test`
    /// after each product; reports the total time and the share of it spent
    /// outside computation, against the blocking broadcast.
    Kacc,
    /// `MPI_Put` + completion latency, rank 0 to rank 1 (osu_put_latency).
    Put,
    /// `MPI_Get` + completion latency (osu_get_latency).
    Get,
    /// `MPI_Accumulate` (sum of u64) + completion latency (osu_acc_latency).
    Acc,
    /// `MPI_Fetch_and_op` on one u64 + completion (osu_fop_latency; sizes ignored).
    Fop,
    /// `MPI_Compare_and_swap` on one u64 + completion (osu_cas_latency; sizes ignored).
    Cas,
    /// `MPI_Put` bandwidth: a window of puts per completion (osu_put_bw).
    PutBw,
    /// `MPI_Get` bandwidth: a window of gets per completion (osu_get_bw).
    GetBw,
}

impl Test {
    fn collective(self) -> bool {
        !matches!(self, Test::Latency | Test::Bw | Test::Bibw | Test::Poll | Test::Kacc) && self.one_sided().is_none()
    }

    fn one_sided(self) -> Option<RmaTest> {
        Some(match self {
            Test::Put => RmaTest::Put,
            Test::Get => RmaTest::Get,
            Test::Acc => RmaTest::Acc,
            Test::Fop => RmaTest::Fop,
            Test::Cas => RmaTest::Cas,
            Test::PutBw => RmaTest::PutBw,
            Test::GetBw => RmaTest::GetBw,
            _ => return None,
        })
    }
}

/// How a one-sided benchmark completes each iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SyncArg {
    /// One `MPI_Win_lock`, then `MPI_Win_flush` per iteration (OSU's `flush`).
    Lock,
    /// `MPI_Win_fence` per iteration on both ranks.
    Fence,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Protocol {
    /// The backend's threshold decides.
    Auto,
    /// Eager whenever the transport allows.
    Eager,
    /// Always rendezvous (RTS/CTS/data/FTS), even for 0 bytes.
    Rndv,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Layer {
    /// Through the MPI API.
    Mpi,
    /// Directly on the ADI protocol engine (latency only).
    Adi,
}

/// OSU-style MPI benchmarks.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Which benchmark.
    #[arg(value_enum)]
    test: Test,
    /// Message sizes: a list (`0,1,4K,1M`) or a power-of-two range (`0:4M`).
    #[arg(long, default_value = "0:4M")]
    sizes: String,
    /// Iterations per size (sizes of 64 KiB and more use a tenth, at least 10).
    #[arg(long, default_value_t = 1000)]
    iters: u32,
    /// Warm-up iterations per size.
    #[arg(long, default_value_t = LATENCY_WARMUP)]
    warmup: u32,
    /// Messages per window (bw, bibw).
    #[arg(long, default_value_t = 64)]
    window: u32,
    /// Force a protocol.
    #[arg(long, value_enum, default_value = "auto")]
    protocol: Protocol,
    /// Measure through the MPI layer or directly on the ADI engine.
    #[arg(long, value_enum, default_value = "mpi")]
    layer: Layer,
    /// Print one JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// Latency on the simulator: also print how many host operations of each
    /// kind each rank charged per round trip, and what they cost.
    #[arg(long)]
    breakdown: bool,
    /// `poll`: how long rank 1 computes before it sends (microseconds).
    #[arg(long, default_value_t = 1000.0, value_parser = non_negative_us)]
    delay_us: f64,
    /// `kacc`: the side of the square matrices multiplied during the broadcast.
    #[arg(long, default_value_t = 4)]
    matrix: usize,
    /// `ibcast`, `iallreduce`: how many slices the computation is cut into,
    /// with a `test` after each; 0 computes in one piece with no MPI call
    /// until the wait (only a progress thread or the device can then
    /// overlap anything).
    #[arg(long, default_value_t = 10)]
    slices: u32,
    /// `ibcast`, `iallreduce` on a real network: "compute" by sleeping (as a
    /// process waiting for an accelerator or a disk does), leaving the core
    /// to a progress thread; without it the computation spins.
    #[arg(long)]
    sleep_compute: bool,
    /// One-sided benchmarks: how each iteration completes.
    #[arg(long, value_enum, default_value = "lock")]
    sync: SyncArg,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dnbench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let sizes = adi::config::parse_size_list(&args.sizes).map_err(|e| e.to_string())?;
    let universe = mpi::initialize().map_err(|e| e.to_string())?;
    let world = universe.world();
    if args.test == Test::Kacc {
        kacc(&universe, args, &sizes).map_err(|e| e.to_string())?;
        return universe.finalize().map_err(|e| e.to_string());
    }
    if args.test.collective() {
        collectives(&universe, args, &sizes).map_err(|e| e.to_string())?;
        return universe.finalize().map_err(|e| e.to_string());
    }
    if world.size() < 2 {
        return Err("run with at least 2 ranks: dnrun -n 2 -- dnbench ...".into());
    }
    if let Some(t) = args.test.one_sided() {
        let sync = if args.sync == SyncArg::Lock { Sync::Lock } else { Sync::Fence };
        let rows = rma_bench::run(&universe, t, sync, &sizes, args.iters, args.warmup, args.window)
            .map_err(|e| e.to_string())?;
        if world.rank() == 0 {
            if args.json {
                println!("{}", serde_json::to_string(&rows).map_err(|e| e.to_string())?);
            } else {
                for r in &rows {
                    println!("{}", r.text());
                }
                let clock = if universe.is_simulated() { "simulated" } else { "wall" };
                println!(
                    "# {:?} over {} ({clock} time), sync {:?}",
                    args.test,
                    universe.backend().unwrap_or("?"),
                    args.sync
                );
            }
        }
        return universe.finalize().map_err(|e| e.to_string());
    }
    if args.layer == Layer::Adi && args.test != Test::Latency {
        return Err("--layer adi is available for `latency` only".into());
    }
    if args.test == Test::Poll {
        poll(&universe, args.delay_us, args.json).map_err(|e| e.to_string())?;
        return universe.finalize().map_err(|e| e.to_string());
    }
    universe
        .with_engine(|e| match args.protocol {
            Protocol::Auto => {}
            Protocol::Eager => e.set_eager_threshold(usize::MAX),
            Protocol::Rndv => e.set_force_rendezvous(true),
        })
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for &size in &sizes {
        let iters = iterations_for(size, args.iters);
        let protocol = universe
            .with_engine(|e| if e.eager_ok(1, size, false) { "eager" } else { "rndv" })
            .map_err(|e| e.to_string())?;
        let row = match args.test {
            Test::Latency => {
                let before = universe.with_engine(|e| e.cost_counts()).map_err(|e| e.to_string())?;
                let us = latency(&universe, args.layer, size, iters, args.warmup).map_err(|e| e.to_string())?;
                if args.breakdown {
                    breakdown(&universe, before, iters + args.warmup).map_err(|e| e.to_string())?;
                }
                Row { size, latency_us: Some(us), mbps: None, overlap_pct: None, protocol, iterations: iters }
            }
            Test::Bw | Test::Bibw => {
                let iters = bw_iterations(size, args.iters);
                let warmup = args.warmup.min(BW_MAX_WARMUP);
                let mbps = bandwidth(&universe, args.test == Test::Bibw, size, iters, args.window, warmup)
                    .map_err(|e| e.to_string())?;
                Row { size, latency_us: None, mbps: Some(mbps), overlap_pct: None, protocol, iterations: iters }
            }
            _ => unreachable!("handled before the size loop"),
        };
        if world.rank() == 0 && !args.json {
            println!("{}", row.text());
        }
        rows.push(row);
    }
    if world.rank() == 0 {
        if args.json {
            println!("{}", serde_json::to_string(&rows).map_err(|e| e.to_string())?);
        } else {
            let clock = if universe.is_simulated() { "simulated" } else { "wall" };
            println!(
                "# {} over {} ({clock} time), layer {:?}",
                format!("{:?}", args.test).to_lowercase(),
                universe.backend().unwrap_or("?"),
                args.layer
            );
        }
    }
    universe.finalize().map_err(|e| e.to_string())
}

/// The collective benchmarks: average time per call over every rank.
fn collectives(u: &Universe, args: &Args, sizes: &[usize]) -> mpi::Result<()> {
    use mpi::SystemOperation::Sum;
    let world = u.world();
    let n = world.size() as usize;
    let sizes: &[usize] = if args.test == Test::Barrier { &[0] } else { sizes };
    let mut rows = Vec::new();
    for &size in sizes {
        let iters = iterations_for(size * n.max(1), args.iters).max(1);
        let elems = size.div_ceil(8);
        let send = vec![1u64; elems * if matches!(args.test, Test::Alltoall | Test::Scatter) { n } else { 1 }];
        let mut recv =
            vec![
                0u64;
                elems * if matches!(args.test, Test::Allgather | Test::Alltoall | Test::Gather) { n } else { 1 }
            ];
        let root = world.process_at_rank(0);
        let one = |recv: &mut Vec<u64>| -> mpi::Result<()> {
            match args.test {
                Test::Bcast => root.broadcast_into(&mut recv[..]),
                Test::Reduce if world.rank() == 0 => root.reduce_into_root(&send, recv, Sum),
                Test::Reduce => root.reduce_into(&send, Sum),
                Test::Allreduce => world.all_reduce_into(&send, recv, Sum),
                Test::Allgather => world.all_gather_into(&send[..], &mut recv[..]),
                Test::Gather if world.rank() == 0 => root.gather_into_root(&send[..], &mut recv[..]),
                Test::Gather => root.gather_into(&send[..]),
                Test::Scatter if world.rank() == 0 => root.scatter_into_root(&send[..], &mut recv[..]),
                Test::Scatter => root.scatter_into(&mut recv[..]),
                Test::Alltoall => world.all_to_all_into(&send[..], &mut recv[..]),
                Test::Barrier => world.barrier(),
                Test::Ibcast => root.immediate_broadcast_into(&mut recv[..])?.wait().map(drop),
                Test::Iallreduce => world.immediate_all_reduce_into(&send, recv, Sum)?.wait().map(drop),
                _ => Ok(()),
            }
        };
        world.barrier()?;
        let mut t0 = u.wtime();
        for i in 0..args.warmup + iters {
            if i == args.warmup {
                t0 = u.wtime();
            }
            one(&mut recv)?;
        }
        let pure = (u.wtime() - t0) / iters as f64;
        let mut overlap = None;
        if matches!(args.test, Test::Ibcast | Test::Iallreduce) {
            // Start, compute as long as the pure communication took (ten
            // slices, a test between them), wait.
            world.barrier()?;
            let slice_ns = pure * 1e9 / args.slices.max(1) as f64;
            let simulated = u.is_simulated();
            // Wall time really spent computing (a sleep overshoots); on the
            // simulator it is exact, and reading the clock would cost a call.
            let mut computed = 0.0;
            let t1 = u.wtime();
            for _ in 0..iters {
                let mut req = Some(match args.test {
                    Test::Ibcast => root.immediate_broadcast_into(&mut recv[..])?,
                    _ => world.immediate_all_reduce_into(&send, &mut recv, Sum)?,
                });
                for _ in 0..args.slices.max(1) {
                    let c0 = (!simulated).then(std::time::Instant::now);
                    if args.sleep_compute && !simulated {
                        std::thread::sleep(std::time::Duration::from_nanos(slice_ns as u64));
                    } else {
                        compute(u, slice_ns)?;
                    }
                    computed += c0.map_or(0.0, |c0| c0.elapsed().as_secs_f64());
                    if args.slices == 0 {
                        continue;
                    }
                    if let Some(r) = req.take() {
                        req = r.test()?.err();
                    }
                }
                if let Some(r) = req {
                    r.wait()?;
                }
            }
            let total = (u.wtime() - t1) / iters as f64;
            let comp = if simulated { pure } else { computed / iters as f64 };
            overlap = Some((100.0 * (1.0 - (total - comp) / pure)).clamp(0.0, 100.0));
        }
        // The average over ranks, as OSU prints it.
        let mut sum = [0f64];
        world.all_reduce_into(&[pure], &mut sum, Sum)?;
        let avg_us = sum[0] / n as f64 * 1e6;
        let row = Row {
            size,
            latency_us: Some(avg_us),
            mbps: None,
            overlap_pct: overlap,
            protocol: test_name(args.test),
            iterations: iters,
        };
        if world.rank() == 0 && !args.json {
            println!("{}", row.text());
        }
        rows.push(row);
    }
    if world.rank() == 0 {
        if args.json {
            let text = serde_json::to_string(&rows).map_err(|e| mpi::MpiError::Internal { what: e.to_string() })?;
            println!("{text}");
        } else {
            let clock = if u.is_simulated() { "simulated" } else { "wall" };
            println!(
                "# {} on {n} ranks over {} ({clock} time, average per call over ranks)",
                test_name(args.test),
                u.backend().unwrap_or("?")
            );
        }
    }
    Ok(())
}

/// Floating-point operations per second assumed for the simulated host's
/// matrix products (the 2.6 GHz Pentium 4 of seed 004 Table 1 at about 0.4
/// of its SSE2 peak); an assumption, stated in docs/BENCHMARKS.md.
const SIM_FLOPS: f64 = 1e9;

/// One product of two m×m matrices into `c`: really computed, and on the
/// simulator charged as `2·m³` flops at [`SIM_FLOPS`].
fn product(u: &Universe, a: &[f64], b: &[f64], c: &mut [f64], m: usize) -> mpi::Result<()> {
    for i in 0..m {
        for j in 0..m {
            let mut s = 0.0;
            for k in 0..m {
                s += a[i * m + k] * b[k * m + j];
            }
            c[i * m + j] = s;
        }
    }
    std::hint::black_box(&c);
    if u.is_simulated() {
        u.compute(2.0 * (m * m * m) as f64 / SIM_FLOPS * 1e9)?;
    }
    Ok(())
}

/// Seed 002 §5's benchmark: broadcast from rank 0 while computing matrix
/// products, `test` after each; the share of the time spent outside
/// computation, averaged over the ranks, and the total time (the slowest
/// rank), for the blocking broadcast and the non-blocking one.
fn kacc(u: &Universe, args: &Args, sizes: &[usize]) -> mpi::Result<()> {
    use mpi::SystemOperation::{Max, Sum};
    let world = u.world();
    let n = world.size() as f64;
    let m = args.matrix.max(1);
    let (a, b) = (vec![1.0001f64; m * m], vec![0.9999f64; m * m]);
    let mut c = vec![0f64; m * m];
    // The time of one product with nothing else going on.
    let reps = 20;
    world.barrier()?;
    let t = u.wtime();
    for _ in 0..reps {
        product(u, &a, &b, &mut c, m)?;
    }
    let t_product = (u.wtime() - t) / reps as f64;
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        println!(
            "# kacc: broadcast from rank 0 on {} ranks while multiplying {m}x{m} matrices ({:.3} us each)",
            world.size(),
            t_product * 1e6
        );
        let mode = match u.progress_mode() {
            mpi::ProgressMode::Manual => "manual",
            mpi::ProgressMode::Offload => "offload",
            mpi::ProgressMode::Thread => "thread",
        };
        println!(
            "# {:>10} {:>14} {:>14} {:>16} {:>9} {:>14}",
            "size",
            "blocking (us)",
            format!("{mode} (us)"),
            "outside compute",
            "overlap",
            "products"
        );
    }
    for &size in sizes {
        let mut buf = vec![1u8; size];
        // Blocking: the broadcast, then nothing overlaps it.
        world.barrier()?;
        let t0 = u.wtime();
        root.broadcast_into(&mut buf[..])?;
        let blocking = u.wtime() - t0;
        // Manual progress: products with a test after each until done.
        world.barrier()?;
        let t0 = u.wtime();
        let mut products = 0u64;
        let mut req = Some(root.immediate_broadcast_into(&mut buf[..])?);
        while let Some(r) = req.take() {
            product(u, &a, &b, &mut c, m)?;
            products += 1;
            req = r.test()?.err();
        }
        let manual = u.wtime() - t0;
        let busy = products as f64 * t_product;
        let outside = if manual > 0.0 { (1.0 - busy / manual).max(0.0) } else { 0.0 };
        // OSU's overlap: how much of the communication time the computation
        // hid, 100% when the non-blocking run took no longer than its products.
        let overlap = if blocking > 0.0 { (1.0 - (manual - busy).max(0.0) / blocking).clamp(0.0, 1.0) } else { 1.0 };
        let (mut bmax, mut mmax, mut osum, mut psum, mut ovsum) = ([0f64], [0f64], [0f64], [0f64], [0f64]);
        world.all_reduce_into(&[overlap], &mut ovsum, Sum)?;
        world.all_reduce_into(&[blocking], &mut bmax, Max)?;
        world.all_reduce_into(&[manual], &mut mmax, Max)?;
        world.all_reduce_into(&[outside], &mut osum, Sum)?;
        world.all_reduce_into(&[products as f64], &mut psum, Sum)?;
        if world.rank() == 0 {
            println!(
                "  {:>10} {:>14.3} {:>14.3} {:>15.1}% {:>8.1}% {:>14.1}",
                size,
                bmax[0] * 1e6,
                mmax[0] * 1e6,
                100.0 * osum[0] / n,
                100.0 * ovsum[0] / n,
                psum[0] / n
            );
        }
    }
    if world.rank() == 0 {
        println!(
            "# blocking: nothing overlaps, 100% outside compute; the progress mode (DN_NBC_PROGRESS) runs both \
             columns' schedules"
        );
    }
    Ok(())
}

/// Host computation: simulated time on the simulator, a busy loop elsewhere.
fn compute(u: &Universe, ns: f64) -> mpi::Result<()> {
    if u.is_simulated() {
        return u.compute(ns);
    }
    let end = std::time::Instant::now() + std::time::Duration::from_nanos(ns as u64);
    while std::time::Instant::now() < end {
        std::hint::spin_loop();
    }
    Ok(())
}

fn test_name(t: Test) -> &'static str {
    match t {
        Test::Bcast => "bcast",
        Test::Reduce => "reduce",
        Test::Allreduce => "allreduce",
        Test::Allgather => "allgather",
        Test::Gather => "gather",
        Test::Scatter => "scatter",
        Test::Alltoall => "alltoall",
        Test::Barrier => "barrier",
        Test::Ibcast => "ibcast",
        Test::Iallreduce => "iallreduce",
        Test::Kacc => "kacc",
        Test::Latency => "latency",
        Test::Bw => "bw",
        Test::Bibw => "bibw",
        Test::Poll => "poll",
        Test::Put => "put",
        Test::Get => "get",
        Test::Acc => "acc",
        Test::Fop => "fop",
        Test::Cas => "cas",
        Test::PutBw => "put-bw",
        Test::GetBw => "get-bw",
    }
}

/// The `poll` benchmark: rank 0 iprobes until rank 1's late message is there.
/// `--delay-us`: a finite number of microseconds, not negative.
fn non_negative_us(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s} is not a non-negative number of microseconds")),
    }
}

fn poll(u: &Universe, delay_us: f64, json: bool) -> mpi::Result<()> {
    let world = u.world();
    world.barrier()?;
    let (wall0, sim0) = (std::time::Instant::now(), u.wtime());
    match world.rank() {
        0 => {
            let mut polls = 0u64;
            while world.process_at_rank(1).immediate_probe_with_tag(12)?.is_none() {
                polls += 1;
            }
            let (sim, wall) = (u.wtime() - sim0, wall0.elapsed().as_secs_f64());
            let _: (Vec<u8>, _) = world.process_at_rank(1).receive_vec_with_tag(12)?;
            let per_ms = if sim > 0.0 { wall / (sim * 1e3) } else { 0.0 };
            let poll_ns = if polls > 0 { sim * 1e9 / polls as f64 } else { 0.0 };
            if json {
                println!(
                    "{{\"polls\":{polls},\"simulated_s\":{sim},\"wall_s\":{wall},\"wall_s_per_simulated_ms\":{per_ms},\"ns_per_poll\":{poll_ns}}}"
                );
            } else {
                println!(
                    "poll: {polls} iprobes over {:.3} ms ({poll_ns:.1} ns each); {wall:.3} s wall, {per_ms:.4} s wall per simulated ms",
                    sim * 1e3
                );
            }
        }
        1 => {
            u.compute(delay_us * 1000.0)?;
            world.process_at_rank(0).send_with_tag(&b"hello"[..], 12)?;
        }
        _ => {}
    }
    world.barrier()
}

/// One-way latency in microseconds (rank 0's view).
fn latency(u: &Universe, layer: Layer, size: usize, iters: u32, warmup: u32) -> mpi::Result<f64> {
    let world = u.world();
    let rank = world.rank();
    let buf = vec![7u8; size];
    let mut rbuf = vec![0u8; size];
    world.barrier()?;
    let mut t0 = u.wtime();
    for i in 0..warmup + iters {
        if i == warmup {
            t0 = u.wtime();
        }
        match (layer, rank) {
            (Layer::Mpi, 0) => {
                world.process_at_rank(1).send(&buf[..])?;
                world.process_at_rank(1).receive_into(&mut rbuf[..])?;
            }
            (Layer::Mpi, 1) => {
                world.process_at_rank(0).receive_into(&mut rbuf[..])?;
                world.process_at_rank(0).send(&buf[..])?;
            }
            (Layer::Adi, 0) => u.with_engine(|e| -> Result<(), adi::AdiError> {
                e.send(1, 0, 0, &buf, false)?;
                e.recv(adi::Source::Rank(1), adi::TagSel::Tag(0), 0, size as u64)?;
                Ok(())
            })??,
            (Layer::Adi, 1) => u.with_engine(|e| -> Result<(), adi::AdiError> {
                e.recv(adi::Source::Rank(0), adi::TagSel::Tag(0), 0, size as u64)?;
                e.send(0, 0, 0, &buf, false)?;
                Ok(())
            })??,
            _ => {}
        }
    }
    let t = u.wtime() - t0;
    world.barrier()?;
    Ok(t * 1e6 / (2.0 * iters as f64))
}

/// Print host operations per round trip for ranks 0 and 1.
fn breakdown(u: &Universe, before: Option<Vec<u64>>, rounds: u32) -> mpi::Result<()> {
    let world = u.world();
    let (Some(before), Some(after), Some(table)) =
        (before, u.with_engine(|e| e.cost_counts())?, u.with_engine(|e| e.cost_table())?)
    else {
        return Ok(());
    };
    let mine: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    if world.rank() == 1 {
        world.process_at_rank(0).send_with_tag(&mine[..], 77)?;
    } else if world.rank() == 0 {
        let (other, _) = world.process_at_rank(1).receive_vec_with_tag::<u64>(77)?;
        println!("# host operations per round trip (including barriers/warm-up amortised over {rounds}):");
        println!("# {:<20} {:>10} {:>10} {:>12}", "cost", "rank 0", "rank 1", "each (ns)");
        for (i, c) in adi::HostCost::ALL.iter().enumerate() {
            let (a, b) = (mine[i] as f64 / rounds as f64, other.get(i).copied().unwrap_or(0) as f64 / rounds as f64);
            if a > 0.0 || b > 0.0 {
                let each = if c.per_byte() { table[i] as f64 / 1e6 } else { table[i] as f64 / 1e3 };
                println!("# {:<20} {:>10.2} {:>10.2} {:>12.3}", c.key(), a, b, each);
            }
        }
    }
    Ok(())
}

/// Bandwidth in MB/s (10^6 bytes per second).
fn bandwidth(u: &Universe, bidir: bool, size: usize, iters: u32, window: u32, warmup: u32) -> mpi::Result<f64> {
    let world = u.world();
    let rank = world.rank();
    let sbuf = vec![3u8; size];
    let mut rbufs: Vec<Vec<u8>> = (0..window).map(|_| vec![0u8; size]).collect();
    let mut ack = [0u32; 1];
    world.barrier()?;
    let mut t0 = u.wtime();
    for i in 0..warmup + iters {
        if i == warmup {
            t0 = u.wtime();
        }
        if rank > 1 {
            continue;
        }
        let peer = world.process_at_rank(1 - rank);
        let sending = rank == 0 || bidir;
        let receiving = rank == 1 || bidir;
        mpi::request::scope(|s| -> mpi::Result<()> {
            let mut reqs = Vec::new();
            if receiving {
                for b in rbufs.iter_mut() {
                    reqs.push(peer.immediate_receive_into_with_tag(s, &mut b[..], 1)?);
                }
            }
            if sending {
                for _ in 0..window {
                    reqs.push(peer.immediate_send_with_tag(s, &sbuf[..], 1)?);
                }
            }
            mpi::request::wait_all(reqs)?;
            Ok(())
        })?;
        if rank == 0 {
            peer.receive_into_with_tag(&mut ack, 2)?;
        } else {
            peer.send_with_tag(&ack, 2)?;
        }
    }
    let t = u.wtime() - t0;
    world.barrier()?;
    let bytes = size as f64 * window as f64 * iters as f64 * if bidir { 2.0 } else { 1.0 };
    Ok(bytes / t / 1e6)
}
