//! MPI-IO through the Rust API (`mpi::io`, MPI 4.1 chapter 14): each rank
//! writes its block at an explicit offset, reads everyone's back, appends
//! in rank order through the shared pointer, and reports the simulated
//! time of one access, which the profile's `io_op_ns` and
//! `io_ns_per_byte` determine exactly.

use mpi::info::Info;
use mpi::io::{Access, AccessMode, File, Position};
use mpi::traits::*;
use mpi::{SimpleCommunicator, Universe};

use crate::{e, R};

/// `mpi-suite io DIR`.
pub(crate) fn io(u: &Universe, w: &SimpleCommunicator, dir: &str) -> R {
    let (me, n) = (w.rank() as u64, w.size() as u64);
    let path = format!("{dir}/mpi-suite-io.dat");
    let mut f = File::open(w, &path, AccessMode::new(Access::ReadWrite).create(), &Info::new()).map_err(e)?;
    const EACH: usize = 1024;
    let mine: Vec<u64> = (0..EACH as u64).map(|i| me << 32 | i).collect();
    f.set_size(0).map_err(e)?;
    let t0 = u.wtime();
    let s = f.write_at(me * EACH as u64 * 8, &mine).map_err(e)?;
    let took = u.wtime() - t0;
    if s.bytes() != (EACH * 8) as u64 {
        return Err(format!("rank {me}: wrote {} bytes", s.bytes()));
    }
    w.barrier().map_err(e)?;
    let mut all = vec![0u64; EACH * n as usize];
    let s = f.read_at_all(0, &mut all).map_err(e)?;
    if s.bytes() != (all.len() * 8) as u64 {
        return Err(format!("rank {me}: read {} bytes of {}", s.bytes(), all.len() * 8));
    }
    for (k, v) in all.iter().enumerate() {
        let want = ((k / EACH) as u64) << 32 | (k % EACH) as u64;
        if *v != want {
            return Err(format!("rank {me}: word {k} is {v:#x}, not {want:#x}"));
        }
    }
    // Rank r appends r + 1 words after everything, in rank order.
    f.seek_shared(0, mpi::io::Whence::End).map_err(e)?;
    let tail: Vec<u64> = vec![me + 100; me as usize + 1];
    f.write_ordered(&tail).map_err(e)?;
    w.barrier().map_err(e)?;
    if me == 0 {
        let total = n * (n + 1) / 2;
        let mut back = vec![0u64; total as usize];
        f.read_into(Position::At(EACH as u64 * 8 * n), &mut back).map_err(e)?;
        let want: Vec<u64> = (0..n).flat_map(|r| std::iter::repeat_n(r + 100, r as usize + 1)).collect();
        if back != want {
            return Err(format!("ordered tail {back:?}, not {want:?}"));
        }
        println!("io: one {}-byte write_at took {:.3} us simulated", EACH * 8, took * 1e6);
    }
    f.close().map_err(e)?;
    if me == 0 {
        File::delete(&path).map_err(e)?;
    }
    Ok(())
}
