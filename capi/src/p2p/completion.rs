//! Completion of requests of every kind (MPI 4.1 §3.7.3-3.7.5): wait,
//! test and their any/some/all forms, request status, free.

use mpi::request::{Need, Part, Settled};
use mpi::slot::Taken;

use super::*;

//
// Every completion call is one call of `mpi::request::settle`, the engine
// the Rust API's `wait_all`/`wait_any`/`wait_some` use: one MPI call
// charged, the engine's wait (which idles) when blocking, one progress pass
// when testing. What stays here is C's: handles, inactive persistent
// requests, arrays of statuses and indices, and error classes.

pub(crate) fn not_active(h: Handle) -> Fail {
    let what = if h == MPI_REQUEST_NULL { "MPI_REQUEST_NULL".to_string() } else { format!("{h:#x}") };
    Fail::new(MPI_ERR_REQUEST, format!("{what} is not an active request (completed and freed, or never started)"))
}

/// The part request `h` plays in a completion call (`Slot::part`): a
/// generalized request not yet complete and a partitioned send waiting
/// for its partitions are held (`Part::Held`).
pub(crate) fn part(st: &State, h: Handle) -> R<Part<'_, 'static>> {
    if h == MPI_REQUEST_NULL {
        return Ok(Part::Idle);
    }
    match st.requests.part(h) {
        Some(_) if !st.partitioned.is_empty() && crate::p2p::partitions::waiting(st, h) => {
            Ok(Part::Held(mpi::request::HeldBy::Partitions))
        }
        Some(p) => Ok(p),
        None => Err(not_active(h)),
    }
}

/// Settle requests `hs` as one call (`mpi::request::settle_shared`, with
/// this process's threads under `MPI_THREAD_MULTIPLE`): which have
/// ended, and which take no part.
pub(crate) fn settle(st: &State, hs: &[Handle], need: Need, block: bool, call: &str) -> R<(Vec<bool>, Vec<bool>)> {
    let parts = hs.iter().map(|&h| part(st, h)).collect::<R<Vec<_>>>()?;
    let ended = settled(st, &parts, need, block, call)?;
    Ok((ended, parts.iter().map(|p| matches!(p, Part::Idle)).collect()))
}

/// `mpi::request::settle_shared` of `parts`, giving the lock up to
/// another thread (`crate::threads::again`) when it says so.
fn settled(st: &State, parts: &[Part<'_, '_>], need: Need, block: bool, call: &str) -> R<Vec<bool>> {
    let others = crate::threads::others_exist;
    let threads = mpi::request::Threads { others_exist: &others, stop: &crate::threads::stop };
    let threads = crate::threads::multiple().then_some(&threads);
    match mpi::request::settle_shared(parts, need, block, call, threads)? {
        Settled::Ended(ended) => Ok(ended),
        Settled::Again { held } => Err(crate::threads::again(st, held)),
    }
}

/// Run completion call `call`'s body: blocking under
/// `MPI_THREAD_MULTIPLE`, again each time it lets another thread in
/// (`crate::threads::blocking_call`).
pub(crate) fn completion(call: &str, comm: Handle, block: bool, body: impl FnMut(&mut State) -> R<()>) -> c_int {
    if block && crate::threads::multiple() {
        return crate::threads::blocking_call(call, comm, body);
    }
    with_state(call, comm, body)
}

/// Settle one request (`MPI_Wait`, `MPI_Test`, `MPI_Request_get_status`):
/// whether it has ended or takes no part (then it completes at once, with
/// an empty status). The polling loop's call: one allocation, no more.
pub(crate) fn settle_one(st: &State, h: Handle, block: bool, call: &str) -> R<bool> {
    let p = part(st, h)?;
    let ended = settled(st, std::slice::from_ref(&p), Need::All, block, call)?[0];
    Ok(ended || matches!(p, Part::Idle))
}

/// Complete request `h`, which has ended or takes no part
/// (`Requests::take`): its outcome, and what its handle becomes. `out`
/// is where the call writes the status (a generalized request's
/// `query_fn` fills it in after), `in_array` whether the call reports on
/// an array of requests.
pub(crate) fn take(st: &mut State, h: Handle, out: *mut MpiStatus, in_array: bool) -> (R<MpiStatus>, Handle) {
    if h == MPI_REQUEST_NULL {
        return (Ok(MpiStatus::empty()), h);
    }
    match st.requests.take(h) {
        None => (Err(not_active(h)), h),
        Some(Taken::Generalized(g)) => (Ok(crate::greq::report(st, g, out, in_array, true)), MPI_REQUEST_NULL),
        Some(Taken::Outcome(mut s, stays)) => {
            if !st.idups.is_empty() {
                crate::comm_table::settle_idup(st, h, &mut s);
            }
            (outcome(s), if stays { h } else { MPI_REQUEST_NULL })
        }
    }
}

/// Keep the outcome of request `h`, found ended, without freeing or
/// deactivating it (`Requests::keep`, `MPI_Request_get_status`); `out`
/// and `in_array` as for [`take`].
pub(crate) fn keep(st: &mut State, h: Handle, out: *mut MpiStatus, in_array: bool) -> R<MpiStatus> {
    if h == MPI_REQUEST_NULL {
        return Ok(MpiStatus::empty());
    }
    match st.requests.keep(h) {
        None => Err(not_active(h)),
        Some(Taken::Generalized(g)) => Ok(crate::greq::report(st, g, out, in_array, false)),
        Some(Taken::Outcome(s, _)) => outcome(s),
    }
}

/// A status array's entry for a request that failed, in a call that
/// reports `MPI_ERR_IN_STATUS` (§3.2.5, §3.7.5).
pub(crate) fn failed_status(f: &Fail) -> MpiStatus {
    f.status()
}

/// The error of a call that completed several requests of which some
/// failed: `MPI_ERR_IN_STATUS`, naming the first.
pub(crate) fn in_status(failed: usize, first: &Fail) -> Fail {
    Fail::new(
        MPI_ERR_IN_STATUS,
        format!("{failed} of the requests failed (see each status's MPI_ERROR); the first: {}", first.msg),
    )
}

/// `MPI_Wait` and `MPI_Test` on one request.
///
/// # Safety
/// `request` is readable and writable; `flag` and `status` are null or
/// writable.
pub(crate) unsafe fn one(
    call: &str,
    block: bool,
    request: *mut Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: `request` is readable and writable for one handle, and `flag` and `status` are null or writable for one
    // `int` and one MPI_Status, for this call (`one`'s `# Safety`), which is `one_on`'s requirement.
    unsafe { one_on(call, MPI_COMM_WORLD, block, request, flag, status) }
}

/// Wait for request `*request` as `MPI_Wait` does (letting other threads
/// in under `MPI_THREAD_MULTIPLE`), its errors going to `comm`'s handler
/// under `call`'s name: the wait of a blocking call made of its
/// non-blocking form.
///
/// # Safety
/// `request` is readable and writable.
pub(crate) unsafe fn wait_request(call: &str, comm: Handle, request: *mut Handle) -> c_int {
    // SAFETY: `request` is readable and writable for one handle for this call (`wait_request`'s `# Safety`); `flag` and
    // `status` are null, which `one_on` accepts and never writes.
    unsafe { one_on(call, comm, true, request, std::ptr::null_mut(), std::ptr::null_mut()) }
}

/// [`one`], its errors going to `comm`'s handler (a blocking call made of
/// its non-blocking form and a wait, [`block_on`]).
///
/// # Safety
/// As [`one`].
pub(crate) unsafe fn one_on(
    call: &str,
    comm: Handle,
    block: bool,
    request: *mut Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    completion(call, comm, block, |st| {
        // SAFETY: `request` is readable for one handle for this call (`one_on`'s `# Safety`, from MPI_Wait's or
        // MPI_Test's caller, MPI 4.1 §3.7.3); `read_arg` refuses null.
        let h = unsafe { read_arg(request, "request")? };
        let done = settle_one(st, h, block, call)?;
        if !block {
            // SAFETY: `flag` is null or valid for writing one `int` for this call (`one_on`'s `# Safety`: MPI_Test's
            // out-argument); `put` refuses null.
            unsafe { put(flag, done as c_int, "flag")? };
        }
        if !done {
            return Ok(());
        }
        let (s, nh) = take(st, h, status, false);
        // SAFETY: `request` is not null (`read_arg` accepted it above) and writable for one handle, and `status` is
        // null or valid for writing one MPI_Status, for this call (`one_on`'s `# Safety`). A failed request is freed
        // too, so that a test loop on it ends.
        unsafe {
            request.write(nh);
            put_result(status, &s);
        }
        s.map(drop)
    })
}

/// The request handles of an array argument, read-only.
///
/// # Safety
/// `reqs` holds `count` handles.
pub(crate) unsafe fn handles_ref<'a>(count: c_int, reqs: *const Handle) -> R<&'a [Handle]> {
    if count < 0 {
        return Err(Fail::new(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    if count == 0 {
        return Ok(&[]);
    }
    if reqs.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "array_of_requests is a null pointer"));
    }
    // SAFETY: `reqs` is not null (checked above), `count` > 0, and `reqs` holds `count` handles, readable for this call
    // (`handles_ref`'s `# Safety`: the MPI call's `array_of_requests`); the slice is used within the call.
    Ok(unsafe { std::slice::from_raw_parts(reqs, count as usize) })
}

/// The request handles of an array argument, which the call rewrites.
///
/// # Safety
/// `reqs` holds `count` writable handles.
pub(crate) unsafe fn handles<'a>(count: c_int, reqs: *mut Handle) -> R<&'a mut [Handle]> {
    // SAFETY: `reqs` is null or holds `count` handles for this call (`handles`' `# Safety`), which covers
    // `handles_ref`'s requirement of readable handles; it checks the count and null.
    let n = unsafe { handles_ref(count, reqs)? }.len();
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: `reqs` is not null (`handles_ref` refused null when `count` > 0, and `n` is `count`) and holds `n`
    // handles, readable and writable for this call (`handles`' `# Safety`); nothing else reaches them during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(reqs, n) })
}

/// `MPI_Waitall` and `MPI_Testall`: all or nothing (§3.7.5). When some
/// fail, every status says how its request ended and the call returns
/// `MPI_ERR_IN_STATUS`.
///
/// # Safety
/// The arrays hold `count` entries; `flag` is null or writable.
pub(crate) unsafe fn all(
    call: &str,
    block: bool,
    count: c_int,
    reqs: *mut Handle,
    flag: *mut c_int,
    sts: *mut MpiStatus,
) -> c_int {
    completion(call, MPI_COMM_WORLD, block, |st| {
        // SAFETY: `reqs` holds `count` handles, readable and writable for this call (`all`'s `# Safety`, from
        // MPI_Waitall's or MPI_Testall's caller, MPI 4.1 §3.7.5): what `handles` requires.
        let reqs = unsafe { handles(count, reqs)? };
        let (ended, idle) = settle(st, reqs, Need::All, block, call)?;
        let done = ended.iter().zip(&idle).all(|(e, i)| *e || *i);
        if !block {
            // SAFETY: `flag` is null or valid for writing one `int` for this call (`all`'s `# Safety`: MPI_Testall's
            // out-argument); `put` refuses null.
            unsafe { put(flag, done as c_int, "flag")? };
        }
        if !done {
            return Ok(());
        }
        let outcomes = reqs
            .iter_mut()
            .enumerate()
            .map(|(i, h)| {
                // SAFETY: `sts` is null (MPI_STATUSES_IGNORE) or has `count` entries (`all`'s `# Safety`), and `i` <
                // `count`: what `status_at` requires.
                let (s, nh) = take(st, *h, unsafe { status_at(sts, i) }, true);
                *h = nh;
                (i, s)
            })
            .collect();
        // SAFETY: `sts` is null (MPI_STATUSES_IGNORE) or has room for `count` statuses (`all`'s `# Safety`), one per
        // outcome: what `put_outcomes` requires.
        unsafe { put_outcomes(outcomes, sts) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(request: Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    with_state("MPI_Request_get_status", MPI_COMM_WORLD, |st| {
        let done = settle_one(st, request, false, "MPI_Request_get_status")?;
        // SAFETY: `flag` is MPI_Request_get_status's out-argument (MPI 4.1 §3.7.6), valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(flag, done as c_int, "flag")? };
        if done {
            let s = keep(st, request, status, false);
            // SAFETY: `status` is MPI_Request_get_status's out-argument, null (MPI_STATUS_IGNORE) or valid for writing
            // one MPI_Status for this call (MPI 4.1 §3.7.6), which is `put_result`'s requirement.
            unsafe { put_result(status, &s) };
            s?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_all(
    count: c_int,
    array_of_requests: *const Handle,
    flag: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Request_get_status_all", MPI_COMM_WORLD, |st| {
        // SAFETY: `array_of_requests` holds `count` readable handles for this call (MPI_Request_get_status_all, MPI 4.1
        // §3.7.6), which is `handles_ref`'s requirement; nothing writes it here.
        let reqs = unsafe { handles_ref(count, array_of_requests)? };
        let call = "MPI_Request_get_status_all";
        let (ended, idle) = settle(st, reqs, Need::All, false, call)?;
        let all = ended.iter().zip(&idle).all(|(e, i)| *e || *i);
        // SAFETY: `flag` is MPI_Request_get_status_all's out-argument, valid for writing one `int` for this call; `put`
        // refuses null.
        unsafe { put(flag, all as c_int, "flag")? };
        if !all {
            return Ok(());
        }
        let sts = array_of_statuses;
        // SAFETY: `sts` is null (MPI_STATUSES_IGNORE) or has `count` entries (MPI_Request_get_status_all's
        // `array_of_statuses`, MPI 4.1 §3.7.6), and `i` < `count`: what `status_at` requires.
        let outcomes: Vec<R<MpiStatus>> =
            reqs.iter().enumerate().map(|(i, &h)| keep(st, h, unsafe { status_at(sts, i) }, true)).collect();
        // SAFETY: `array_of_statuses` is null (MPI_STATUSES_IGNORE) or has room for `count` statuses for this call (MPI
        // 4.1 §3.7.6), one per outcome: what `put_outcomes` requires.
        unsafe { put_outcomes(outcomes.into_iter().enumerate().collect(), array_of_statuses) }
    })
}

/// Entry `k` of a status array, or null for `MPI_STATUSES_IGNORE`.
///
/// # Safety
/// `sts` is null or has more than `k` entries.
pub(crate) unsafe fn status_at(sts: *mut MpiStatus, k: usize) -> *mut MpiStatus {
    if sts.is_null() {
        return sts;
    }
    // SAFETY: `sts` is not null (checked above), so it has more than `k` entries (`status_at`'s `# Safety`), and the
    // offset stays inside that array.
    unsafe { sts.add(k) }
}

/// Write the outcomes of completed requests to a status array, in order;
/// when some failed, every entry's `MPI_ERROR` says how its request ended
/// and the result is `MPI_ERR_IN_STATUS` (§3.7.5).
///
/// # Safety
/// `sts` is null or has room for every outcome.
pub(crate) unsafe fn put_outcomes(outcomes: Vec<(usize, R<MpiStatus>)>, sts: *mut MpiStatus) -> R<()> {
    let failed = outcomes.iter().filter(|(_, s)| s.is_err()).count();
    if !sts.is_null() {
        for (k, (_, s)) in outcomes.iter().enumerate() {
            let s = match s {
                Ok(s) if failed > 0 => MpiStatus { error: MPI_SUCCESS, ..*s },
                Ok(s) => *s,
                Err(f) => failed_status(f),
            };
            // SAFETY: `sts` is not null (checked above) and has room for every outcome (`put_outcomes`' `# Safety`), so
            // entry `k` < `outcomes.len()` is inside it and writable for this call.
            unsafe { sts.add(k).write(s) };
        }
    }
    match outcomes.into_iter().find_map(|(_, s)| s.err()) {
        Some(f) => Err(in_status(failed, &f)),
        None => Ok(()),
    }
}

/// The first request of `reqs` that takes part and has ended, settled as
/// one call (`Err(())`: none takes part).
pub(crate) fn settle_any(st: &State, reqs: &[Handle], block: bool, call: &str) -> R<Result<Option<usize>, ()>> {
    let (ended, idle) = settle(st, reqs, Need::One, block, call)?;
    if idle.iter().all(|&i| i) {
        return Ok(Err(()));
    }
    Ok(Ok(ended.iter().position(|&e| e)))
}

/// `MPI_Waitany`, `MPI_Testany` and `MPI_Request_get_status_any`
/// (`free`: complete the request found, else keep its outcome).
///
/// # Safety
/// The array holds `count` handles (writable when `free`); `index`,
/// `flag` and `status` are null or writable.
#[allow(clippy::too_many_arguments)] // the MPI calls' own arguments
pub(crate) unsafe fn any(
    call: &str,
    block: bool,
    free: bool,
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    completion(call, MPI_COMM_WORLD, block, |st| {
        let array = reqs;
        // SAFETY: `array` holds `count` readable handles for this call (`any`'s `# Safety`, from the caller of
        // MPI_Waitany, MPI_Testany or MPI_Request_get_status_any, MPI 4.1 §3.7.5-3.7.6): what `handles_ref` requires.
        let reqs = unsafe { handles_ref(count, array)? };
        let (i, f, s) = match settle_any(st, reqs, block, call)? {
            Err(()) => (MPI_UNDEFINED, 1, Some(Ok(MpiStatus::empty()))),
            Ok(None) => (MPI_UNDEFINED, 0, None),
            Ok(Some(i)) if free => {
                let (s, nh) = take(st, reqs[i], status, false);
                // SAFETY: the array holds `count` handles, writable when `free` (`any`'s `# Safety`: MPI_Waitany's and
                // MPI_Testany's in/out `array_of_requests`, MPI 4.1 §3.7.5), and `i` < `count`, so the entry is inside
                // it. The write goes through `array`, the caller's pointer, not through the shared slice `reqs` made
                // from it, which is not used after this write.
                unsafe { array.add(i).write(nh) };
                (i as c_int, 1, Some(s))
            }
            Ok(Some(i)) => (i as c_int, 1, Some(keep(st, reqs[i], status, false))),
        };
        // SAFETY: `index` is null or writable for one `int`, `flag` null or writable for one `int` (only written when
        // not blocking), and `status` null (MPI_STATUS_IGNORE) or writable for one MPI_Status, for this call (`any`'s
        // `# Safety`); `put` refuses null, and `status` is written directly only when not null.
        unsafe {
            put(index, i, "index")?;
            if !block {
                put(flag, f, "flag")?;
            }
            match &s {
                // No active request: the empty status, whole (MPI 4.1
                // §3.7.3: its error is MPI_SUCCESS too; mpi4py checks).
                Some(Ok(e)) if i == MPI_UNDEFINED && !status.is_null() => status.write(*e),
                Some(s) => put_result(status, s),
                None => {}
            }
        }
        s.transpose().map(drop)
    })
}

/// `MPI_Waitsome`, `MPI_Testsome` and `MPI_Request_get_status_some`
/// (`free`: complete the requests found, else keep their outcomes).
///
/// # Safety
/// The arrays hold `incount` entries (the requests writable when
/// `free`); `outcount` is null or writable.
#[allow(clippy::too_many_arguments)] // the MPI calls' own arguments
pub(crate) unsafe fn some(
    call: &str,
    block: bool,
    free: bool,
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    sts: *mut MpiStatus,
) -> c_int {
    completion(call, MPI_COMM_WORLD, block, |st| {
        // SAFETY: `reqs` holds `incount` readable handles for this call (`some`'s `# Safety`, from the caller of
        // MPI_Waitsome, MPI_Testsome or MPI_Request_get_status_some, MPI 4.1 §3.7.5-3.7.6): what `handles_ref`
        // requires.
        let hs = unsafe { handles_ref(incount, reqs)? };
        let (ended, idle) = settle(st, hs, Need::One, block, call)?;
        if idle.iter().all(|&i| i) {
            // SAFETY: `outcount` is null or valid for writing one `int` for this call (`some`'s `# Safety`); `put`
            // refuses null.
            return unsafe { put(outcount, MPI_UNDEFINED, "outcount") };
        }
        // The handles found, copied out: the loop below writes the array, so `hs`, a shared slice over it, must
        // not be read after the first write.
        let found: Vec<(usize, Handle)> = (0..hs.len()).filter(|&i| ended[i]).map(|i| (i, hs[i])).collect();
        if !found.is_empty() && indices.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "array_of_indices is a null pointer"));
        }
        let mut outcomes = Vec::with_capacity(found.len());
        for &(i, h) in &found {
            // SAFETY: `sts` is null (MPI_STATUSES_IGNORE) or has `incount` entries (`some`'s `# Safety`), and
            // `outcomes.len()` < `found.len()` <= `incount`: what `status_at` requires.
            let out = unsafe { status_at(sts, outcomes.len()) };
            let s = if free {
                let (s, nh) = take(st, h, out, true);
                // SAFETY: the array holds `incount` handles, writable when `free` (`some`'s `# Safety`: MPI_Waitsome's
                // and MPI_Testsome's in/out `array_of_requests`, MPI 4.1 §3.7.5), and `i` < `incount`, so the entry is
                // inside it. `hs`, the shared slice over the same handles, is not read after the first write (the
                // handles found were copied into `found`).
                unsafe { reqs.add(i).write(nh) };
                s
            } else {
                keep(st, h, out, true)
            };
            // SAFETY: `indices` is not null (checked above, as `found` is not empty) and has `incount` entries
            // (`some`'s `# Safety`), and `outcomes.len()` < `found.len()` <= `incount`: the entry is inside it and
            // writable.
            unsafe { indices.add(outcomes.len()).write(i as c_int) };
            outcomes.push((i, s));
        }
        // SAFETY: `outcount` is null or valid for writing one `int` for this call (`some`'s `# Safety`); `put` refuses
        // null.
        unsafe { put(outcount, found.len() as c_int, "outcount")? };
        // SAFETY: `sts` is null (MPI_STATUSES_IGNORE) or has `incount` entries (`some`'s `# Safety`), at least one per
        // outcome: what `put_outcomes` requires.
        unsafe { put_outcomes(outcomes, sts) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut Handle) -> c_int {
    with_state("MPI_Request_free", MPI_COMM_WORLD, |st| {
        // SAFETY: `request` is MPI_Request_free's in/out argument (MPI 4.1 §3.7.3), null or readable for one handle for
        // this call; `read_arg` refuses null.
        let h = unsafe { read_arg(request, "request")? };
        // An idup's duplicate is installed when its request completes: a
        // freed one would leave the new handle unusable for ever. Freeing
        // a non-blocking collective's request is erroneous (§6.12).
        if st.idups.iter().any(|&(r, _)| r == h) {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                "the request of an MPI_Comm_idup cannot be freed (MPI 4.1 §6.12): complete it with MPI_Wait or MPI_Test",
            ));
        }
        // The operation still completes (§3.7.3), with the buffer the
        // caller's to keep until then: the request is kept, progressed by
        // every later call, and waited for at MPI_Finalize at the latest.
        // MPI_REQUEST_NULL is no request to free (§3.7.3).
        if !st.partitioned.is_empty() {
            crate::p2p::partitions::free(st, h)?;
        }
        let Some(due) = st.requests.free(h) else {
            let what = if h == MPI_REQUEST_NULL { "MPI_REQUEST_NULL".to_string() } else { format!("{h:#x}") };
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                format!("{what} is not a request (completed and freed, or never started)"),
            ));
        };
        if let Some(g) = due {
            crate::greq::free(st, g);
        }
        // SAFETY: `request` is not null (`read_arg` accepted it above) and, as MPI_Request_free's in/out argument (MPI
        // 4.1 §3.7.3), writable for one handle for this call.
        unsafe { request.write(MPI_REQUEST_NULL) };
        Ok(())
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Wait(request: *mut Handle, status: *mut MpiStatus) -> c_int = one(true, request, std::ptr::null_mut(), status);
    pub unsafe extern "C" fn MPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int = one(false, request, flag, status);
    pub unsafe extern "C" fn MPI_Waitall(count: c_int, array_of_requests: *mut Handle, array_of_statuses: *mut MpiStatus) -> c_int = all(true, count, array_of_requests, std::ptr::null_mut(), array_of_statuses);
    pub unsafe extern "C" fn MPI_Testall(count: c_int, array_of_requests: *mut Handle, flag: *mut c_int, array_of_statuses: *mut MpiStatus) -> c_int = all(false, count, array_of_requests, flag, array_of_statuses);
    pub unsafe extern "C" fn MPI_Waitany(count: c_int, array_of_requests: *mut Handle, index: *mut c_int, status: *mut MpiStatus) -> c_int = any(true, true, count, array_of_requests, index, std::ptr::null_mut(), status);
    pub unsafe extern "C" fn MPI_Testany(count: c_int, array_of_requests: *mut Handle, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) -> c_int = any(false, true, count, array_of_requests, index, flag, status);
    pub unsafe extern "C" fn MPI_Request_get_status_any(count: c_int, array_of_requests: *const Handle, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) -> c_int = any(false, false, count, array_of_requests.cast_mut(), index, flag, status);
    pub unsafe extern "C" fn MPI_Waitsome(incount: c_int, array_of_requests: *mut Handle, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MpiStatus) -> c_int = some(true, true, incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    pub unsafe extern "C" fn MPI_Testsome(incount: c_int, array_of_requests: *mut Handle, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MpiStatus) -> c_int = some(false, true, incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    pub unsafe extern "C" fn MPI_Request_get_status_some(incount: c_int, array_of_requests: *const Handle, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MpiStatus) -> c_int = some(false, false, incount, array_of_requests.cast_mut(), outcount, array_of_indices, array_of_statuses);
}
