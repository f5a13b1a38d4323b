//! Process creation through the Rust API (`mpi::spawn`, MPI 4.1 §11.8):
//! the last rank spawns two copies of this program (`mpi-suite
//! spawn-child`), a message goes each way with each child, the children
//! see their own world of two and their parent, and a spawn of a program
//! that does not exist fails with `MpiError::Spawn` at every parent.

use mpi::spawn::SpawnCommand;
use mpi::traits::*;
use mpi::{MpiError, SimpleCommunicator, Universe};

use crate::{e, R};

/// `mpi-suite spawn`: run with `dnrun --universe-size NP+2` (or more).
pub(crate) fn spawn(u: &Universe, w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    if u.universe_size() < n as u32 + 2 {
        return Err(format!("run with dnrun --universe-size {} or more (it is {})", n + 2, u.universe_size()));
    }
    if u.parent().is_some() || u.appnum().is_some() {
        return Err(format!("rank {me}: a process dnrun started has a parent or an MPI_APPNUM"));
    }
    let exe = std::env::current_exe().map_err(e)?.to_string_lossy().into_owned();
    let root = n - 1;
    let child = SpawnCommand { program: exe, args: vec!["spawn-child".into()], maxprocs: 2, wdir: None, path: None };
    let spawned = w.spawn(root, std::slice::from_ref(&child)).map_err(e)?;
    if spawned.count != 2 {
        return Err(format!("rank {me}: {} processes spawned, not 2", spawned.count));
    }
    let inter = spawned.intercomm;
    if me == 0 {
        for c in 0..2 {
            inter.process_at_rank(c).send(&(100 + c)).map_err(e)?;
            let (back, _) = inter.process_at_rank(c).receive::<i32>().map_err(e)?;
            if back != (100 + c) * 10 + c {
                return Err(format!("child {c} answered {back}"));
            }
        }
    }
    inter.barrier().map_err(e)?;
    // Every parent hears of a spawn that failed at the root.
    let missing = SpawnCommand { program: "./no-such-program".into(), args: vec![], ..child };
    match w.spawn(0, &[missing]) {
        Err(MpiError::Spawn(_)) => {}
        Err(other) => return Err(format!("rank {me}: a missing program gave {other}, not a spawn error")),
        Ok(_) => return Err(format!("rank {me}: a missing program was spawned")),
    }
    w.barrier().map_err(e)?;
    if me == 0 {
        println!("OK spawn");
    }
    Ok(())
}

/// `mpi-suite spawn-child`: the other side.
pub(crate) fn child(u: &Universe, w: &SimpleCommunicator) -> R {
    let parent = u.parent().ok_or("spawn-child: not spawned (run mpi-suite spawn)")?;
    let me = w.rank();
    if w.size() != 2 || u.appnum() != Some(0) {
        return Err(format!("child {me}: a world of {} and MPI_APPNUM {:?}", w.size(), u.appnum()));
    }
    let (got, _) = parent.process_at_rank(0).receive::<i32>().map_err(e)?;
    if got != 100 + me {
        return Err(format!("child {me}: got {got}"));
    }
    parent.process_at_rank(0).send(&(got * 10 + me)).map_err(e)?;
    parent.barrier().map_err(e)?;
    Ok(())
}
