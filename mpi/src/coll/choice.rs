//! Which algorithm a collective uses for its size (measured in
//! docs/BENCHMARKS.md, "Collectives"), and the `DN_COLL_*` variables
//! that force one.

use super::op::Operation;
use super::schedule::Schedule;
use super::{algo, even_blocks};

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

pub use crate::config::{Algorithms, Allreduce, Alltoall, Bcast, Tree};

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

pub(super) fn gather_schedule(alg: Tree, n: u32, r: u32, root: u32, blk: u64) -> Schedule {
    match alg {
        Tree::Binomial => algo::gather_binomial(n, r, root, blk),
        Tree::Linear => algo::gather_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
        Tree::Auto if (GATHER_BINOMIAL.0..=GATHER_BINOMIAL.1).contains(&blk) && n > 2 => {
            algo::gather_binomial(n, r, root, blk)
        }
        Tree::Auto => algo::gather_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
    }
}

pub(super) fn scatter_schedule(alg: Tree, n: u32, r: u32, root: u32, blk: u64) -> Schedule {
    match alg {
        Tree::Binomial => algo::scatter_binomial(n, r, root, blk),
        Tree::Linear => algo::scatter_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
        Tree::Auto if SCATTER_BINOMIAL.is_some_and(|(lo, hi)| (lo..=hi).contains(&blk)) && n > 2 => {
            algo::scatter_binomial(n, r, root, blk)
        }
        Tree::Auto => algo::scatter_linear(n, r, root, blk, &even_blocks(n as usize, blk as usize)),
    }
}

pub(super) fn bcast_schedule(alg: Bcast, n: u32, r: u32, root: u32, len: u64) -> Schedule {
    match alg {
        Bcast::ScatterAllgather => algo::bcast_scatter_allgather(n, r, root, len),
        Bcast::Pipeline => algo::bcast_pipeline(n, r, root, len, PIPELINE_CHUNK),
        Bcast::Binomial => algo::bcast_binomial(n, r, root, len),
        Bcast::Auto if BCAST_LARGE.is_some_and(|large| len >= large) && n > 2 => {
            algo::bcast_scatter_allgather(n, r, root, len)
        }
        Bcast::Auto => algo::bcast_binomial(n, r, root, len),
    }
}

/// All-to-all blocks of at most this many bytes use Bruck's algorithm
/// (⌈log2 n⌉ steps) instead of pairwise exchange (n-1 steps), on more than
/// two processes; measured in docs/BENCHMARKS.md ("Collectives").
/// `DN_COLL_ALLTOALL=pairwise|bruck` forces one.
pub const ALLTOALL_SMALL: u64 = 128;

pub(super) fn alltoall_schedule(alg: Alltoall, n: u32, r: u32, blk: u64) -> Schedule {
    let bruck = match alg {
        Alltoall::Bruck => true,
        Alltoall::Pairwise => false,
        Alltoall::Auto => blk <= ALLTOALL_SMALL && n > 2,
    };
    if bruck {
        algo::alltoall_bruck(n, r, blk)
    } else {
        let b = even_blocks(n as usize, blk as usize);
        algo::alltoall_pairwise(n, r, &b, &b)
    }
}

pub(super) fn allreduce_schedule(alg: Allreduce, n: u32, r: u32, len: u64, op: &Operation) -> Schedule {
    let elem = op.elem.max(1) as u64;
    let choice = match alg {
        Allreduce::Auto if len >= ALLREDUCE_LARGE && n > 2 && n.is_power_of_two() => Allreduce::Rabenseifner,
        Allreduce::Auto if len >= ALLREDUCE_LARGE && n > 2 => Allreduce::Ring,
        Allreduce::Auto => Allreduce::RecursiveDoubling,
        forced => forced,
    };
    // The ring and Rabenseifner's combine out of rank order: commutative
    // operations only, and at least one element per chunk.
    let splits = op.commutative && len / elem >= n as u64;
    match choice {
        Allreduce::Ring if splits => algo::allreduce_ring(n, r, len, elem),
        Allreduce::Rabenseifner if splits => algo::allreduce_rabenseifner(n, r, len, elem),
        _ => algo::allreduce_recursive_doubling(n, r, len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adi::knobs::words_match;

    /// Every `DN_COLL_*` variable takes exactly the words of its
    /// algorithm enum (the declaration and the code cannot drift apart),
    /// and every such variable has one.
    #[test]
    fn every_declared_algorithm_is_known() {
        let tied = [
            ("DN_COLL_GATHER", words_match::<Tree>("DN_COLL_GATHER")),
            ("DN_COLL_SCATTER", words_match::<Tree>("DN_COLL_SCATTER")),
            ("DN_COLL_BCAST", words_match::<Bcast>("DN_COLL_BCAST")),
            ("DN_COLL_ALLTOALL", words_match::<Alltoall>("DN_COLL_ALLTOALL")),
            ("DN_COLL_ALLREDUCE", words_match::<Allreduce>("DN_COLL_ALLREDUCE")),
        ];
        for (name, ok) in tied {
            assert!(ok, "{name}'s declared words are not its enum's");
        }
        let declared: Vec<&str> =
            adi::knobs::KNOBS.iter().map(|k| k.name).filter(|n| n.starts_with("DN_COLL_")).collect();
        assert_eq!(declared, tied.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    }

    /// The other variables mpi reads as enums.
    #[test]
    fn progress_and_rma_take_their_variables_words() {
        assert!(words_match::<crate::config::ProgressMode>("DN_NBC_PROGRESS"));
        assert!(words_match::<crate::rma::RmaPath>("DN_RMA"));
    }
}
