//! One-sided benchmarks for `dnbench` (the OSU one-sided set:
//! osu_put_latency, osu_get_latency, osu_acc_latency, osu_fop_latency,
//! osu_cas_latency, osu_put_bw, osu_get_bw), between ranks 0 and 1 of a
//! window of 8-byte elements that rank 0 accesses and rank 1 exposes.
//!
//! * `--sync lock` (OSU's `flush`, the default): rank 0 locks rank 1 once,
//!   then each iteration is the operation and `MPI_Win_flush`; rank 1 is
//!   in `MPI_Barrier` meanwhile (a target that makes no one-sided call).
//! * `--sync fence`: each iteration is the operation and `MPI_Win_fence`
//!   on both ranks (rank 1 issues nothing).
//!
//! Latency is the time per iteration; bandwidth moves a window of
//! operations per flush (or fence).

use mpi::datatype::typemap::Typemap;
use mpi::rma::{AccOp, Assert, LockType, RawWindow, Target};
use mpi::staged::reduce::Elem;
use mpi::staged::Span;
use mpi::traits::*;
use mpi::{SystemOperation, Universe};

use crate::bench::Row;

/// The operation measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmaTest {
    /// `MPI_Put` latency.
    Put,
    /// `MPI_Get` latency.
    Get,
    /// `MPI_Accumulate` (sum of `u64`) latency.
    Acc,
    /// `MPI_Fetch_and_op` (sum of one `u64`) latency; sizes ignored.
    Fop,
    /// `MPI_Compare_and_swap` (one `u64`) latency; sizes ignored.
    Cas,
    /// `MPI_Put` bandwidth (a window of puts per flush).
    PutBw,
    /// `MPI_Get` bandwidth (a window of gets per flush).
    GetBw,
}

/// How each iteration completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// Passive target: one lock, a flush per iteration.
    Lock,
    /// Active target: a fence per iteration.
    Fence,
}

/// The figure of one size.
struct Timed {
    us: f64,
}

/// Run `test` for each size; rows for rank 0 to print (every rank returns
/// them, only rank 0's are meaningful).
pub fn run(
    u: &Universe,
    test: RmaTest,
    sync: Sync,
    sizes: &[usize],
    iters: u32,
    warmup: u32,
    window: u32,
) -> mpi::Result<Vec<Row>> {
    let world = u.world();
    let max = sizes.iter().copied().max().unwrap_or(8).max(8);
    let bw = matches!(test, RmaTest::PutBw | RmaTest::GetBw);
    let room = if bw { max * window as usize } else { max };
    let mut win = RawWindow::allocate(&world, room as u64, 1)?;
    let mut rows = Vec::new();
    let sizes: Vec<usize> =
        if matches!(test, RmaTest::Fop | RmaTest::Cas) { vec![8] } else { sizes.iter().map(|s| s / 8 * 8).collect() };
    let mut origin = vec![1u8; room];
    let mut result = vec![0u8; room];
    if sync == Sync::Lock && world.rank() == 0 {
        win.lock(LockType::Shared, 1, Assert::default())?;
    }
    if sync == Sync::Fence {
        win.fence(Assert::default())?;
    }
    for size in sizes {
        let iters = crate::bench::iterations_for(size, iters);
        let iters = if bw { iters.min(crate::bench::BW_MAX_ITERATIONS) } else { iters };
        world.barrier()?;
        let mut t0 = u.wtime();
        for i in 0..warmup + iters {
            if i == warmup {
                t0 = u.wtime();
            }
            if world.rank() == 0 {
                let ops = if bw { window as usize } else { 1 };
                for k in 0..ops {
                    // SAFETY: `origin` and `result` hold `room` bytes, which
                    // every operation's span (at most `size` bytes at
                    // `k * size`) fits, and they live until the flush or
                    // fence below completes the operation.
                    unsafe { one(&mut win, test, &mut origin[k * size..], &mut result[k * size..], size, k * size)? };
                }
            }
            match sync {
                Sync::Lock if world.rank() == 0 => win.flush(Some(1))?,
                Sync::Lock => {}
                Sync::Fence => win.fence(Assert::default())?,
            }
        }
        let t = u.wtime() - t0;
        // Rank 1 waits here while rank 0 measures (a target making no call).
        world.barrier()?;
        let timed = Timed { us: t * 1e6 / iters as f64 };
        let row = if bw {
            let mbps = (size * window as usize) as f64 / timed.us;
            Row { size, latency_us: None, mbps: Some(mbps), overlap_pct: None, protocol: "rma", iterations: iters }
        } else {
            Row { size, latency_us: Some(timed.us), mbps: None, overlap_pct: None, protocol: "rma", iterations: iters }
        };
        rows.push(row);
    }
    if sync == Sync::Lock && world.rank() == 0 {
        win.unlock(1)?;
    }
    if sync == Sync::Fence {
        win.fence(Assert { nosucceed: true, ..Assert::default() })?;
    }
    win.free()?;
    Ok(rows)
}

/// `count` elements of `layout` at byte `at` of rank 1's window.
fn target(layout: &Typemap, at: usize, count: usize) -> Target<'_> {
    Target { rank: 1, disp: at as i64, layout, count }
}

/// One operation of `size` bytes at byte `at` of rank 1's window.
///
/// # Safety
/// `origin` and `result` hold `size` bytes each and stay valid until the
/// operation completes (a flush or a fence).
unsafe fn one(
    w: &mut RawWindow,
    test: RmaTest,
    origin: &mut [u8],
    result: &mut [u8],
    size: usize,
    at: usize,
) -> mpi::Result<()> {
    let bytes = Typemap::basic(1, 1, 1);
    let words = Typemap::basic(8, 8, 1);
    let span = Span::bytes(size);
    let (o, r) = (origin.as_mut_ptr(), result.as_mut_ptr());
    // SAFETY: this function's contract.
    unsafe {
        match test {
            RmaTest::Put | RmaTest::PutBw => w.put(o, &span, &target(&bytes, at, size)),
            RmaTest::Get | RmaTest::GetBw => w.get(r, &span, &target(&bytes, at, size)).map(drop),
            RmaTest::Acc => {
                w.accumulate(o, &span, &target(&words, at, size / 8), Elem::U64, AccOp::System(SystemOperation::Sum))
            }
            RmaTest::Fop => w
                .get_accumulate(
                    o,
                    &Span::bytes(8),
                    r,
                    &Span::bytes(8),
                    &target(&words, at, 1),
                    Elem::U64,
                    AccOp::System(SystemOperation::Sum),
                )
                .map(drop),
            RmaTest::Cas => w.compare_and_swap(o, r, r, Elem::U64, 1, at as i64).map(drop),
        }
    }
}
