//! Which algorithm a collective uses for its size (measured in
//! docs/BENCHMARKS.md, "Collectives"), and the `DN_COLL_*` variables
//! that force one.

use super::op::Operation;
use super::schedule::Schedule;
use super::{algo, even_blocks};
use crate::error::Result;

/// Broadcasts of at least this many bytes on more than two processes would
/// use scatter + allgather instead of the binomial tree. Measured on the
/// simulated DIMMnet-2 (8 ranks, 256 B to 1 MiB, docs/BENCHMARKS.md
/// "Collectives") it is slower at every size: a receiver's cost is its
/// uncached PW reads, the same for both, and the ring adds n-1 dependent
/// steps; so it is never chosen automatically (`None`).
/// `DN_COLL_BCAST=binomial|scatter-allgather` forces one.
pub const BCAST_LARGE: Option<u64> = None;
/// Allreduces of at least this many bytes with a commutative operation use
/// Rabenseifner's algorithm on a power of two of processes and the ring
/// (reduce-scatter + allgather) otherwise, instead of recursive doubling.
/// Measured on the simulated DIMMnet-2 (docs/BENCHMARKS.md "Collectives"):
/// on 8 ranks Rabenseifner wins from 1 KiB (64.8 vs 74.6 us) to 1 MiB (28.9
/// vs 53.1 ms); on 6 ranks, where its fold costs half the data, the ring
/// wins from 1 KiB (79.7 vs 91.8 us). `DN_COLL_ALLREDUCE=recursive-doubling|ring|rabenseifner`
/// forces one.
pub const ALLREDUCE_LARGE: u64 = 1024;

/// The algorithm forced by environment variable `var` (a `DN_COLL_*`
/// variable, whose algorithms `adi::knobs` declares and checks at
/// `MPI_Init`), if any: `auto` forces none.
pub(super) fn forced(var: &'static str) -> Result<Option<&'static str>> {
    Ok(adi::knobs::word(var)?.filter(|a| *a != "auto"))
}

/// Gathers of blocks in this range of bytes use the binomial tree instead
/// of the linear gather. Measured on 8 simulated ranks (docs/BENCHMARKS.md
/// "Collectives"): the tree wins from 1 KiB (45.9 vs 72.7 us) to 16 KiB
/// (987 vs 1,630 us); below, one message per rank is cheaper; above, the
/// root's receive volume dominates and forwarding adds to it.
/// `DN_COLL_GATHER=linear|binomial` forces one.
pub const GATHER_BINOMIAL: (u64, u64) = (1024, 16 * 1024);

/// Scatters of blocks in this range of bytes use the binomial tree instead
/// of the linear scatter. Measured on 8 simulated ranks (docs/BENCHMARKS.md
/// "Collectives"): the tree wins up to 64-byte blocks (5.9 vs 6.1 us) and
/// loses from 128 (9.4 vs 6.4 us): the root's sends are cheap (the device
/// moves the data), forwarding is not. `DN_COLL_SCATTER=linear|binomial` forces one.
pub const SCATTER_BINOMIAL: Option<(u64, u64)> = Some((1, 64));

/// Chunk size of the pipelined broadcast.
pub const PIPELINE_CHUNK: u64 = 16 * 1024;

pub(super) fn gather_schedule(n: u32, r: u32, root: u32, blk: u64) -> Result<Schedule> {
    Ok(match forced("DN_COLL_GATHER")? {
        Some("binomial") => algo::gather_binomial(n, r, root, blk),
        Some(_) => algo::gather_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
        None if (GATHER_BINOMIAL.0..=GATHER_BINOMIAL.1).contains(&blk) && n > 2 => {
            algo::gather_binomial(n, r, root, blk)
        }
        None => algo::gather_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
    })
}

pub(super) fn scatter_schedule(n: u32, r: u32, root: u32, blk: u64) -> Result<Schedule> {
    Ok(match forced("DN_COLL_SCATTER")? {
        Some("binomial") => algo::scatter_binomial(n, r, root, blk),
        Some(_) => algo::scatter_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
        None if SCATTER_BINOMIAL.is_some_and(|(lo, hi)| (lo..=hi).contains(&blk)) && n > 2 => {
            algo::scatter_binomial(n, r, root, blk)
        }
        None => algo::scatter_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
    })
}

pub(super) fn bcast_schedule(n: u32, r: u32, root: u32, len: u64) -> Result<Schedule> {
    Ok(match forced("DN_COLL_BCAST")? {
        Some("scatter-allgather") => algo::bcast_scatter_allgather(n, r, root, len),
        Some("pipeline") => algo::bcast_pipeline(n, r, root, len, PIPELINE_CHUNK),
        Some(_) => algo::bcast_binomial(n, r, root, len),
        None if BCAST_LARGE.is_some_and(|large| len >= large) && n > 2 => {
            algo::bcast_scatter_allgather(n, r, root, len)
        }
        None => algo::bcast_binomial(n, r, root, len),
    })
}

/// All-to-all blocks of at most this many bytes use Bruck's algorithm
/// (⌈log2 n⌉ steps) instead of pairwise exchange (n-1 steps), on more than
/// two processes; measured in docs/BENCHMARKS.md ("Collectives").
/// `DN_COLL_ALLTOALL=pairwise|bruck` forces one.
pub const ALLTOALL_SMALL: u64 = 128;

pub(super) fn alltoall_schedule(n: u32, r: u32, blk: u64) -> Result<Schedule> {
    let bruck = match forced("DN_COLL_ALLTOALL")? {
        Some(a) => a == "bruck",
        None => blk <= ALLTOALL_SMALL && n > 2,
    };
    Ok(if bruck {
        algo::alltoall_bruck(n, r, blk)
    } else {
        let b = even_blocks(n as usize, blk as usize);
        algo::alltoall_pairwise(n, r, &b, &b)
    })
}

pub(super) fn allreduce_schedule(n: u32, r: u32, len: u64, op: &Operation) -> Result<Schedule> {
    let elem = op.elem.max(1) as u64;
    let choice = match forced("DN_COLL_ALLREDUCE")? {
        Some(a) => a,
        None if len >= ALLREDUCE_LARGE && n > 2 && n.is_power_of_two() => "rabenseifner",
        None if len >= ALLREDUCE_LARGE && n > 2 => "ring",
        None => "recursive-doubling",
    };
    // The ring and Rabenseifner's combine out of rank order: commutative
    // operations only, and at least one element per chunk.
    Ok(match choice {
        "ring" if op.commutative && len / elem >= n as u64 => algo::allreduce_ring(n, r, len, elem),
        "rabenseifner" if op.commutative && len / elem >= n as u64 => algo::allreduce_rabenseifner(n, r, len, elem),
        _ => algo::allreduce_recursive_doubling(n, r, len),
    })
}

#[cfg(test)]
mod tests {
    /// Every algorithm a `DN_COLL_*` variable takes is one its schedule
    /// knows by name (the declaration and the code cannot drift apart).
    #[test]
    fn every_declared_algorithm_is_known() {
        let known: &[(&str, &[&str])] = &[
            ("DN_COLL_GATHER", &["linear", "binomial"]),
            ("DN_COLL_SCATTER", &["linear", "binomial"]),
            ("DN_COLL_BCAST", &["binomial", "scatter-allgather", "pipeline"]),
            ("DN_COLL_ALLTOALL", &["pairwise", "bruck"]),
            ("DN_COLL_ALLREDUCE", &["recursive-doubling", "ring", "rabenseifner"]),
        ];
        let declared: Vec<&str> =
            adi::knobs::KNOBS.iter().map(|k| k.name).filter(|n| n.starts_with("DN_COLL_")).collect();
        assert_eq!(declared, known.iter().map(|(n, _)| *n).collect::<Vec<_>>());
        for (name, algorithms) in known {
            let Some(adi::knobs::Knob { takes: adi::knobs::Takes::OneOf(words), .. }) = adi::knobs::knob(name) else {
                panic!("{name} is not declared as a choice of words");
            };
            let mut want = vec!["auto"];
            want.extend_from_slice(algorithms);
            assert_eq!(*words, &want[..], "{name}");
        }
    }
}
