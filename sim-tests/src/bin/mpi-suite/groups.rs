//! Communicators from groups through the Rust API (MPI 4.1 §7.4): how two
//! communicators compare (`SimpleCommunicator::compare`), and
//! `MPI_Comm_create` as `SimpleCommunicator::create`, with groups that
//! differ between processes when they are disjoint (since MPI 2.2); a
//! negative split color in one rank only; `split_type`.

use mpi::group::{string_tag, CommRelation};
use mpi::traits::*;
use mpi::{Color, SimpleCommunicator};

use crate::{e, R};

pub fn groups(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    check!(w.compare(w) == CommRelation::Identical, "a communicator is not identical to itself");
    let dup = w.duplicate().map_err(e)?;
    check!(w.compare(&dup) == CommRelation::Congruent, "a duplicate: {:?}", w.compare(&dup));
    let reversed = w.split_by_color_with_key(Color::With(0), n - me).map_err(e)?.ok_or("no reversed split")?;
    let want = if n > 1 { CommRelation::Similar } else { CommRelation::Congruent };
    check!(w.compare(&reversed) == want, "reversed order: {:?}", w.compare(&reversed));

    // Evens and odds each make their own communicator, in reverse order.
    let mine: Vec<i32> = (0..n).rev().filter(|r| r % 2 == me % 2).collect();
    let c = w.create(&mine).map_err(e)?.ok_or("not in the group it named")?;
    check!(c.size() as usize == mine.len(), "created {} of {}", c.size(), mine.len());
    let at = mine.iter().position(|&r| r == me).ok_or("not in its own group")?;
    check!(c.rank() as usize == at, "rank {} in the created communicator, not {at}", c.rank());
    let want = if n > 1 { CommRelation::Unequal } else { CommRelation::Congruent };
    check!(w.compare(&c) == want, "the halves against the world: {:?}", w.compare(&c));
    let mut sum = [0i32];
    c.all_reduce_into(&[me][..], &mut sum[..], mpi::SystemOperation::Sum).map_err(e)?;
    let sum = sum[0];
    check!(sum == mine.iter().sum::<i32>(), "the created communicator's sum {sum}");
    // A group that leaves this process out: no communicator here.
    let others: Vec<i32> = (0..n).filter(|&r| r != 0).collect();
    let made = w.create(if me == 0 { &[] } else { &others }).map_err(e)?;
    check!(made.is_some() == (me != 0), "rank {me}: the communicator of the others: {}", made.is_some());
    check!(string_tag(b"a") != string_tag(b"b"), "two strings, one tag");
    negative_color(w)?;
    split_type(w)?;
    process_sets(w)
}

/// A session's process sets (§11.3.2): the world's members and this one.
fn process_sets(w: &SimpleCommunicator) -> R {
    use mpi::session::ProcessSet;
    let world = ProcessSet::named("MPI://World").map_err(e)?.group(w);
    check!(world == mpi::group::Group::of(w), "mpi://WORLD is not the world's group");
    let me = ProcessSet::Myself.group(w);
    let mine = me.ranks_in(w).map_err(e)?;
    check!(mine == [w.rank()], "mpi://SELF is ranks {mine:?} of the world");
    let info = ProcessSet::World.info(w).map_err(e)?;
    check!(info.says("mpi_size", &w.size().to_string()), "mpi://WORLD's info: {:?}", info.pairs().collect::<Vec<_>>());
    Ok(())
}

/// `split_type` (§7.4.2): the processes that share memory are those of one
/// shared-memory domain; an unguided split never gives the whole world; a
/// guided split by a resource this library does not know gives nothing.
fn split_type(w: &SimpleCommunicator) -> R {
    use mpi::host::SplitType;
    let none = mpi::info::Info::new();
    let mine = w.shared_domain().map_err(e)?;
    let mut all = vec![0i32; w.size() as usize];
    w.all_gather_into(&[mine][..], &mut all[..]).map_err(e)?;
    let near = all.iter().filter(|&&d| d == mine).count();
    let shared = w.split_type(SplitType::Shared, 0, &none).map_err(e)?.ok_or("no shared-memory communicator")?;
    check!(shared.size() as usize == near, "{} share memory, not {near}", shared.size());
    let unguided = w.split_type(SplitType::HwUnguided, 0, &none).map_err(e)?;
    let want = near < w.size() as usize;
    check!(unguided.is_some() == want, "an unguided split of {near} of {}: {}", w.size(), unguided.is_some());
    let mut gpu = mpi::info::Info::new();
    gpu.set("mpi_hw_resource_type", "gpu").map_err(e)?;
    check!(w.split_type(SplitType::HwGuided, 0, &gpu).map_err(e)?.is_none(), "a split by an unknown resource");
    Ok(())
}

/// A negative split color in the last rank only (§7.4.2): that rank gets
/// its error, and the others, which gave valid colors, get their
/// communicator instead of waiting for ever; then the world still works.
fn negative_color(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let last = me == n - 1;
    let got = w.split_by_color(Color::With(if last { -5 } else { 1 }));
    match got {
        Err(mpi::MpiError::Arg(mpi::ArgError::SplitColor { color: -5 })) if last => {}
        Ok(Some(c)) if !last => {
            check!(c.size() == n - 1, "{} in the split without the last rank", c.size());
        }
        other => {
            let what = other.map(|c| c.map(|c| c.size()));
            return Err(format!("rank {me}: a split with a negative color on rank {}: {what:?}", n - 1));
        }
    }
    let mut sum = [0i32];
    w.all_reduce_into(&[1][..], &mut sum[..], mpi::SystemOperation::Sum).map_err(e)?;
    check!(sum[0] == n, "the world after a refused split sums {}", sum[0]);
    Ok(())
}
