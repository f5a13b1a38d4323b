//! Completion of requests of every kind (MPI 4.1 §3.7.3-3.7.5): wait,
//! test and their any/some/all forms, request status, free.

use mpi::request::{Need, Part};

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

/// The part request `h` plays in a completion call (`Slot::part`).
pub(crate) fn part(st: &State, h: Handle) -> R<Part<'_, 'static>> {
    if h == MPI_REQUEST_NULL {
        return Ok(Part::Idle);
    }
    match st.requests.get(&h) {
        Some(r) => Ok(r.part()),
        None => crate::greq::part(st, h).ok_or_else(|| not_active(h)),
    }
}

/// Settle requests `hs` as one call (see `mpi::request::settle`): which
/// have ended, and which take no part. A generalized request not yet
/// complete takes part but cannot end here: a wait that only it could end
/// fails (`crate::greq`).
pub(crate) fn settle(st: &State, hs: &[Handle], need: Need, block: bool, call: &str) -> R<(Vec<bool>, Vec<bool>)> {
    let parts = hs.iter().map(|&h| part(st, h)).collect::<R<Vec<_>>>()?;
    let pending: Vec<bool> = if st.greqs.is_empty() && st.partitioned.is_empty() {
        Vec::new()
    } else {
        hs.iter().map(|&h| held(st, h)).collect()
    };
    let multiple = block && crate::threads::multiple();
    if let (true, Some(i)) = (block, pending.iter().position(|&p| p)) {
        let stuck = need == Need::All || parts.iter().all(|p| matches!(p, Part::Idle));
        if stuck && !(multiple && crate::threads::others_exist()) {
            return Err(wait_for_ever(st, call, hs[i]));
        }
    }
    let ended = if multiple {
        mpi::request::settle_until(&parts, need, call, &crate::threads::stop)?
    } else {
        mpi::request::settle(&parts, need, block, call)?
    };
    let idle: Vec<bool> =
        parts.iter().enumerate().map(|(i, p)| matches!(p, Part::Idle) && !pending.get(i).is_some_and(|&x| x)).collect();
    if multiple {
        let done = match need {
            Need::All => ended.iter().zip(&idle).all(|(e, i)| *e || *i),
            Need::One => idle.iter().all(|&i| i) || ended.iter().any(|&e| e),
        };
        if !done {
            return Err(crate::threads::again(st, pending.iter().any(|&p| p)));
        }
    }
    Ok((ended, idle))
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

/// Whether request `h` is active but cannot end while this process waits:
/// a generalized request not yet complete, or a partitioned send whose
/// partitions are not all ready.
pub(crate) fn held(st: &State, h: Handle) -> bool {
    crate::greq::pending(st, h) || crate::partitioned::waiting(st, h)
}

/// The error of a wait that only request `h`, [`held`], could end.
pub(crate) fn wait_for_ever(st: &State, call: &str, h: Handle) -> Fail {
    if crate::partitioned::waiting(st, h) {
        crate::partitioned::would_wait_for_ever(call, h)
    } else {
        crate::greq::would_wait_for_ever(call, h)
    }
}

/// Settle one request (`MPI_Wait`, `MPI_Test`, `MPI_Request_get_status`):
/// whether it has ended or takes no part (then it completes at once, with
/// an empty status). The polling loop's call: one allocation, no more.
pub(crate) fn settle_one(st: &State, h: Handle, block: bool, call: &str) -> R<bool> {
    let p = part(st, h)?;
    let idle = matches!(p, Part::Idle);
    let multiple = block && crate::threads::multiple();
    if idle && !(st.greqs.is_empty() && st.partitioned.is_empty()) && held(st, h) {
        return match block {
            false => Ok(false),
            true if multiple && crate::threads::others_exist() => Err(crate::threads::again(st, true)),
            true => Err(wait_for_ever(st, call, h)),
        };
    }
    if multiple {
        let done = mpi::request::settle_until(std::slice::from_ref(&p), Need::All, call, &crate::threads::stop)?[0];
        return if done || idle { Ok(true) } else { Err(crate::threads::again(st, false)) };
    }
    Ok(mpi::request::settle(std::slice::from_ref(&p), Need::All, block, call)?[0] || idle)
}

/// Complete request `h`, which has ended or takes no part
/// (`Slot::complete`): its outcome, and what its handle becomes. `out`
/// is where the call writes the status (a generalized request's
/// `query_fn` fills it in after), `in_array` whether the call reports on
/// an array of requests.
pub(crate) fn take(st: &mut State, h: Handle, out: *mut MpiStatus, in_array: bool) -> (R<MpiStatus>, Handle) {
    if h == MPI_REQUEST_NULL {
        return (Ok(MpiStatus::empty()), h);
    }
    let Some(slot) = st.requests.remove(&h) else {
        return crate::greq::report(st, h, out, in_array, true).unwrap_or_else(|| (Err(not_active(h)), h));
    };
    let (mut s, left) = slot.complete();
    if !st.idups.is_empty() {
        crate::env::settle_idup(st, h, &mut s);
    }
    let nh = match left {
        Some(slot) => {
            st.requests.insert(h, slot);
            h
        }
        None => MPI_REQUEST_NULL,
    };
    (outcome(s), nh)
}

/// Keep the outcome of request `h`, found ended, without freeing or
/// deactivating it (`Slot::keep`, `MPI_Request_get_status`); `out` and
/// `in_array` as for [`take`].
pub(crate) fn keep(st: &mut State, h: Handle, out: *mut MpiStatus, in_array: bool) -> R<MpiStatus> {
    if h == MPI_REQUEST_NULL {
        return Ok(MpiStatus::empty());
    }
    let Some(slot) = st.requests.remove(&h) else {
        return crate::greq::report(st, h, out, in_array, false).map_or_else(|| Err(not_active(h)), |(s, _)| s);
    };
    let (s, slot) = slot.keep();
    st.requests.insert(h, slot);
    outcome(s)
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
    // SAFETY: the caller's contract, passed on.
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
    // SAFETY: the caller's contract; no status is written.
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
        // SAFETY: the caller's contract on `request`.
        let h = unsafe { read_arg(request, "request")? };
        let done = settle_one(st, h, block, call)?;
        if !block {
            // SAFETY: the caller's contract on `flag`.
            unsafe { put(flag, done as c_int, "flag")? };
        }
        if !done {
            return Ok(());
        }
        let (s, nh) = take(st, h, status, false);
        // SAFETY: the caller's contract on `request` and `status`. A failed
        // request is freed too, so that a test loop on it ends.
        unsafe {
            request.write(nh);
            put_result(status, &s);
        }
        s.map(drop)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut Handle, status: *mut MpiStatus) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { one("MPI_Wait", true, request, std::ptr::null_mut(), status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { one("MPI_Test", false, request, flag, status) }
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
    // SAFETY: `reqs` is not null (checked) and holds `count` handles, as
    // the MPI call's `array_of_requests` (this function's contract).
    Ok(unsafe { std::slice::from_raw_parts(reqs, count as usize) })
}

/// The request handles of an array argument, which the call rewrites.
///
/// # Safety
/// `reqs` holds `count` writable handles.
pub(crate) unsafe fn handles<'a>(count: c_int, reqs: *mut Handle) -> R<&'a mut [Handle]> {
    // SAFETY: the caller's contract; checked as for reading.
    let n = unsafe { handles_ref(count, reqs)? }.len();
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: the caller's contract: `count` writable handles.
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
        // SAFETY: the caller's contract on the array.
        let reqs = unsafe { handles(count, reqs)? };
        let (ended, idle) = settle(st, reqs, Need::All, block, call)?;
        let done = ended.iter().zip(&idle).all(|(e, i)| *e || *i);
        if !block {
            // SAFETY: the caller's contract on `flag`.
            unsafe { put(flag, done as c_int, "flag")? };
        }
        if !done {
            return Ok(());
        }
        let outcomes = reqs
            .iter_mut()
            .enumerate()
            .map(|(i, h)| {
                // SAFETY: the caller's contract: `count` statuses, or none.
                let (s, nh) = take(st, *h, unsafe { status_at(sts, i) }, true);
                *h = nh;
                (i, s)
            })
            .collect();
        // SAFETY: the array has `count` statuses (the caller's contract).
        unsafe { put_outcomes(outcomes, sts) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut Handle,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    // SAFETY: the standard's contract on the arrays.
    unsafe { all("MPI_Waitall", true, count, array_of_requests, std::ptr::null_mut(), array_of_statuses) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut Handle,
    flag: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    // SAFETY: the standard's contract on the arrays.
    unsafe { all("MPI_Testall", false, count, array_of_requests, flag, array_of_statuses) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(request: Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    with_state("MPI_Request_get_status", MPI_COMM_WORLD, |st| {
        let done = settle_one(st, request, false, "MPI_Request_get_status")?;
        // SAFETY: the standard's contract on `flag`.
        unsafe { put(flag, done as c_int, "flag")? };
        if done {
            let s = keep(st, request, status, false);
            // SAFETY: the standard's contract on `status`.
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
        // SAFETY: the standard's contract on the array (only read here).
        let reqs = unsafe { handles_ref(count, array_of_requests)? };
        let call = "MPI_Request_get_status_all";
        let (ended, idle) = settle(st, reqs, Need::All, false, call)?;
        let all = ended.iter().zip(&idle).all(|(e, i)| *e || *i);
        // SAFETY: the standard's contract on `flag`.
        unsafe { put(flag, all as c_int, "flag")? };
        if !all {
            return Ok(());
        }
        let sts = array_of_statuses;
        // SAFETY: the standard's contract: `count` statuses, or none.
        let outcomes: Vec<R<MpiStatus>> =
            reqs.iter().enumerate().map(|(i, &h)| keep(st, h, unsafe { status_at(sts, i) }, true)).collect();
        // SAFETY: the array has `count` statuses (the standard's contract).
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
    // SAFETY: not null, so more than `k` entries (the caller's contract).
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
            // SAFETY: the caller's contract: room for every outcome.
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
        // SAFETY: the caller's contract on the array.
        let reqs = unsafe { handles_ref(count, reqs)? };
        let (i, f, s) = match settle_any(st, reqs, block, call)? {
            Err(()) => (MPI_UNDEFINED, 1, Some(Ok(MpiStatus::empty()))),
            Ok(None) => (MPI_UNDEFINED, 0, None),
            Ok(Some(i)) if free => {
                let (s, nh) = take(st, reqs[i], status, false);
                // SAFETY: the caller's contract: the array is writable when freeing.
                unsafe { reqs.as_ptr().cast_mut().add(i).write(nh) };
                (i as c_int, 1, Some(s))
            }
            Ok(Some(i)) => (i as c_int, 1, Some(keep(st, reqs[i], status, false))),
        };
        // SAFETY: the caller's contract on `index`, `flag` and `status`.
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut Handle,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let f = std::ptr::null_mut();
    // SAFETY: the standard's contract on the arguments.
    unsafe { any("MPI_Waitany", true, true, count, array_of_requests, index, f, status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { any("MPI_Testany", false, true, count, array_of_requests, index, flag, status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_any(
    count: c_int,
    array_of_requests: *const Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let reqs = array_of_requests.cast_mut();
    // SAFETY: the standard's contract on the arguments; the array is only read.
    unsafe { any("MPI_Request_get_status_any", false, false, count, reqs, index, flag, status) }
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
        // SAFETY: the caller's contract on the array.
        let hs = unsafe { handles_ref(incount, reqs)? };
        let (ended, idle) = settle(st, hs, Need::One, block, call)?;
        if idle.iter().all(|&i| i) {
            // SAFETY: the caller's contract on `outcount`.
            return unsafe { put(outcount, MPI_UNDEFINED, "outcount") };
        }
        let found: Vec<usize> = (0..hs.len()).filter(|&i| ended[i]).collect();
        if !found.is_empty() && indices.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "array_of_indices is a null pointer"));
        }
        let mut outcomes = Vec::with_capacity(found.len());
        for &i in &found {
            // SAFETY: the caller's contract: room for every request, or none.
            let out = unsafe { status_at(sts, outcomes.len()) };
            let s = if free {
                let (s, nh) = take(st, hs[i], out, true);
                // SAFETY: the caller's contract: the array is writable when freeing.
                unsafe { reqs.add(i).write(nh) };
                s
            } else {
                keep(st, hs[i], out, true)
            };
            // SAFETY: the caller's contract: room for every request.
            unsafe { indices.add(outcomes.len()).write(i as c_int) };
            outcomes.push((i, s));
        }
        // SAFETY: the caller's contract on `outcount`.
        unsafe { put(outcount, found.len() as c_int, "outcount")? };
        // SAFETY: the caller's contract on the status array.
        unsafe { put_outcomes(outcomes, sts) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_some(
    incount: c_int,
    array_of_requests: *const Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    let (r, o, i, s) = (array_of_requests.cast_mut(), outcount, array_of_indices, array_of_statuses);
    // SAFETY: the standard's contract on the arrays; the requests are only read.
    unsafe { some("MPI_Request_get_status_some", false, false, incount, r, o, i, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    let (r, o, i, s) = (array_of_requests, outcount, array_of_indices, array_of_statuses);
    // SAFETY: the standard's contract on the arrays.
    unsafe { some("MPI_Waitsome", true, true, incount, r, o, i, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    let (r, o, i, s) = (array_of_requests, outcount, array_of_indices, array_of_statuses);
    // SAFETY: the standard's contract on the arrays.
    unsafe { some("MPI_Testsome", false, true, incount, r, o, i, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut Handle) -> c_int {
    with_state("MPI_Request_free", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on `request`.
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
            crate::partitioned::free(st, h)?;
        }
        if !st.requests.contains_key(&h) && crate::greq::free(st, h).is_some() {
            // SAFETY: the standard's contract on `request` (INOUT).
            unsafe { request.write(MPI_REQUEST_NULL) };
            return Ok(());
        }
        let r = st.requests.remove(&h).ok_or_else(|| {
            let what = if h == MPI_REQUEST_NULL { "MPI_REQUEST_NULL".to_string() } else { format!("{h:#x}") };
            Fail::new(MPI_ERR_REQUEST, format!("{what} is not a request (completed and freed, or never started)"))
        })?;
        st.detached.extend(r.detach().map(Req::Op));
        // SAFETY: the standard's contract on `request` (INOUT, MPI 4.1
        // §3.7.3): readable above, and writable.
        unsafe { request.write(MPI_REQUEST_NULL) };
        Ok(())
    })
}
