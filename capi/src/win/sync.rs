//! Synchronisation calls on windows (MPI 4.1 §12.5): fences, general
//! active target, locks and flushes, each the blocking form of the mpi
//! crate's `_begin` step.

use super::*;

/// The window ranks of `group`'s members.
fn group_ranks(st: &State, group: Handle, win: Handle) -> R<Vec<c_int>> {
    let g = st.group(group)?;
    Ok(g.ranks_in(st.win(win)?.win.communicator())?)
}

#[no_mangle]
pub extern "C" fn MPI_Win_fence(assert: c_int, win: Handle) -> c_int {
    sync_call("MPI_Win_fence", win, |st| {
        let a = assert_of(assert)?;
        Ok(st.win_mut(win)?.win.fence_begin(a)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_Win_start(group: Handle, assert: c_int, win: Handle) -> c_int {
    sync_call("MPI_Win_start", win, |st| {
        let (g, a) = (group_ranks(st, group, win)?, assert_of(assert)?);
        Ok(st.win_mut(win)?.win.start_begin(&g, a)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_Win_complete(win: Handle) -> c_int {
    sync_call("MPI_Win_complete", win, |st| Ok(st.win_mut(win)?.win.complete_begin()?))
}

#[no_mangle]
pub extern "C" fn MPI_Win_post(group: Handle, assert: c_int, win: Handle) -> c_int {
    with_state("MPI_Win_post", win, |st| {
        let (g, a) = (group_ranks(st, group, win)?, assert_of(assert)?);
        Ok(st.win_mut(win)?.win.post(&g, a)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_Win_wait(win: Handle) -> c_int {
    sync_call("MPI_Win_wait", win, |st| Ok(st.win_mut(win)?.win.wait_exposure_begin()?))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_test(win: Handle, flag: *mut c_int) -> c_int {
    with_state("MPI_Win_test", win, |st| {
        let done = st.win_mut(win)?.win.test_exposure()?;
        // SAFETY: `flag` is MPI_Win_test's out-argument, null or valid for writing one `int` for this call; `put`
        // refuses null.
        unsafe { put(flag, c_int::from(done), "flag") }
    })
}

/// A synchronisation (§12.5): `begin` under the library's lock, then its
/// wait. Under `MPI_THREAD_MULTIPLE` the wait lets other threads in, as
/// `MPI_Wait` does (`threads::blocking_call`): a thread waiting for a
/// lock another process holds, for a post, a completion or a fence's
/// barrier must not stop this process's other threads — one of them may
/// be what ends the wait (issue 47, break 8).
fn sync_call(call: &str, win: Handle, begin: impl FnOnce(&mut State) -> R<Waiting>) -> c_int {
    if !crate::threads::multiple() {
        return with_state(call, win, |st| {
            let w = begin(st)?;
            Ok(st.win_mut(win)?.win.finish(w)?)
        });
    }
    let mut waiting = Waiting::Nothing;
    let rc = with_state(call, win, |st| {
        waiting = begin(st)?;
        Ok(())
    });
    if rc != MPI_SUCCESS || waiting == Waiting::Nothing {
        return rc;
    }
    crate::threads::blocking_call(call, win, |st| {
        match st.win_mut(win)?.win.finish_or(waiting, &crate::threads::stop)? {
            true => Ok(()),
            false => Err(crate::threads::again(st, false)),
        }
    })
}

#[no_mangle]
pub extern "C" fn MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: Handle) -> c_int {
    sync_call("MPI_Win_lock", win, |st| {
        let kind = match lock_type {
            MPI_LOCK_EXCLUSIVE => LockType::Exclusive,
            MPI_LOCK_SHARED => LockType::Shared,
            other => {
                return Err(Fail::new(
                    MPI_ERR_LOCKTYPE,
                    format!("{other} is not MPI_LOCK_EXCLUSIVE or MPI_LOCK_SHARED"),
                ))
            }
        };
        let a = assert_of(assert)?;
        Ok(st.win_mut(win)?.win.lock_begin(kind, rank, a)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_Win_unlock(rank: c_int, win: Handle) -> c_int {
    sync_call("MPI_Win_unlock", win, |st| Ok(st.win_mut(win)?.win.unlock_begin(rank)?))
}

#[no_mangle]
pub extern "C" fn MPI_Win_lock_all(assert: c_int, win: Handle) -> c_int {
    sync_call("MPI_Win_lock_all", win, |st| {
        let a = assert_of(assert)?;
        Ok(st.win_mut(win)?.win.lock_all_begin(a)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_Win_unlock_all(win: Handle) -> c_int {
    sync_call("MPI_Win_unlock_all", win, |st| Ok(st.win_mut(win)?.win.unlock_all_begin()?))
}

#[no_mangle]
pub extern "C" fn MPI_Win_flush(rank: c_int, win: Handle) -> c_int {
    sync_call("MPI_Win_flush", win, |st| Ok(st.win_mut(win)?.win.flush_begin(Some(rank))?))
}

#[no_mangle]
pub extern "C" fn MPI_Win_flush_all(win: Handle) -> c_int {
    sync_call("MPI_Win_flush_all", win, |st| Ok(st.win_mut(win)?.win.flush_begin(None)?))
}

#[no_mangle]
pub extern "C" fn MPI_Win_flush_local(rank: c_int, win: Handle) -> c_int {
    with_state("MPI_Win_flush_local", win, |st| Ok(st.win_mut(win)?.win.flush_local(Some(rank))?))
}

#[no_mangle]
pub extern "C" fn MPI_Win_flush_local_all(win: Handle) -> c_int {
    with_state("MPI_Win_flush_local_all", win, |st| Ok(st.win_mut(win)?.win.flush_local(None)?))
}

#[no_mangle]
pub extern "C" fn MPI_Win_sync(win: Handle) -> c_int {
    with_state("MPI_Win_sync", win, |st| Ok(st.win_mut(win)?.win.sync()?))
}
