//! Collectives (MPI 4.1 §6), blocking and non-blocking (§6.12), with
//! `MPI_IN_PLACE` (§6.1.2), roots other than 0, and any committed
//! datatype: data the datatype lays out contiguously moves from and into
//! the caller's buffers as they are; scattered data is packed, or staged
//! and unpacked at completion ([`crate::datatype`]). Reductions run on the
//! element type a predefined datatype names (`MPI_INT` is `i32`,
//! `MPI_2INT` a value-index pair, ...), through the mpi crate's
//! algorithms, which the simulator may offload to the device.
//!
//! Each collective is written once, as the start of a non-blocking
//! operation; the blocking call waits for it (the mpi crate's blocking
//! collectives do the same), so the two forms cannot drift apart.

use std::ffi::{c_int, c_void};

use mpi::{Communicator, CommunicatorCollectives};

use crate::abi::*;
use crate::datatype::Blocks;
use crate::*;
use mpi::staged::coll::{self as sc, Recv, Send, WBlock, Wblocks};
use mpi::staged::reduce::{self as red, Everyone, Input};
use mpi::staged::reduction::{ReduceType, Reduction};

use crate::count::{Int, Ints};
use crate::op::OpChoice;

/// Run a collective to completion; on an intercommunicator, run `inter`
/// (its intercommunicator form), or refuse.
pub(crate) fn blocking(
    call: &str,
    comm: Handle,
    start: impl FnOnce(&mut State) -> R<Staged>,
    inter: Option<impl FnOnce(&mut State) -> R<()>>,
) -> c_int {
    if crate::threads::multiple() {
        // Started, then waited for as MPI_Wait waits, letting other threads
        // in (`crate::threads`); an intercommunicator's form runs whole.
        // SAFETY: no buffer of the caller's outlives the call (it waits).
        return unsafe {
            crate::p2p::block_on(call, comm, std::ptr::null_mut(), |st| {
                if crate::inter::is_inter(st, comm) {
                    match inter {
                        Some(f) => f(st)?,
                        None => crate::inter::refuse_inter(st, comm, call)?,
                    }
                    return Ok(Req::Done(Ok(mpi::Status::empty())));
                }
                Ok(Req::Op(start(st)?))
            })
        };
    }
    with_state(call, comm, |st| {
        if crate::inter::is_inter(st, comm) {
            return match inter {
                Some(f) => f(st),
                None => crate::inter::refuse_inter(st, comm, call),
            };
        }
        start(st)?.wait()?;
        Ok(())
    })
}

/// Start a collective and hand out its request. On an
/// intercommunicator, run `inter` (the blocking form's body) and hand out
/// a completed request: the non-blocking intercommunicator collectives
/// complete within the call (docs/guide/not-supported.md): right for
/// a program that waits for them, but one that starts two on different
/// communicators in different orders on different processes waits for
/// ever.
///
/// # Safety
/// `request` is null or writable.
pub(crate) unsafe fn nonblocking(
    call: &str,
    comm: Handle,
    request: *mut Handle,
    start: impl FnOnce(&mut State) -> R<Staged>,
    inter: Option<impl FnOnce(&mut State) -> R<()>>,
) -> c_int {
    with_state(call, comm, |st| {
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
        }
        if let (true, Some(f)) = (crate::inter::is_inter(st, comm), inter) {
            f(st)?;
            // SAFETY: `request` is not null (checked above) and valid for writing one handle for this call
            // (`nonblocking`'s `# Safety`, from the I-collective's caller).
            return unsafe { new_request(st, Req::Done(Ok(mpi::Status::empty())), request) };
        }
        crate::inter::refuse_inter(st, comm, call)?;
        let a = start(st)?;
        // SAFETY: `request` is not null (checked above) and valid for writing one handle for this call (`nonblocking`'s
        // `# Safety`, from the I-collective's caller).
        unsafe { new_request(st, Req::Op(a), request) }
    })
}

/// What each start of a persistent collective does: start the
/// operation with the arguments given at its initialization (MPI 4.1
/// §6.13), its arrays of counts, displacements and datatypes copied at
/// the initialization (`crate::keep`). The rest is checked and the
/// schedule built at each start, against the state then (a datatype freed
/// after the initialization is the standard's erroneous case, found here
/// instead of used).
pub(crate) type CollStart = std::rc::Rc<dyn Fn(&mut State) -> R<Staged>>;

/// A persistent collective's initialization (`MPI_Bcast_init`, ...): an
/// inactive persistent request that `MPI_Start` starts as many times as
/// the program wants, each time as the non-blocking form would (§6.13).
///
/// # Safety
/// `request` is null or writable.
pub(crate) unsafe fn persistent(
    call: &str,
    comm: Handle,
    info: Handle,
    request: *mut Handle,
    make: impl FnOnce(&State) -> R<CollStart>,
) -> c_int {
    with_state(call, comm, |st| {
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
        }
        crate::inter::refuse_inter(st, comm, call)?;
        if info != MPI_INFO_NULL && !crate::info::exists(info) {
            return Err(Fail::new(
                MPI_ERR_INFO,
                format!("{info:#x} is not a valid info object (never created, or freed)"),
            ));
        }
        let start = make(st)?;
        let c = st.comm(comm)?.comm.clone();
        let place = std::rc::Rc::new(mpi::staged::coll::Persistent::new(&c));
        let recipe = Recipe { comm: c, handle: comm, op: PersistentOp::Coll(start, place) };
        // SAFETY: `request` is not null (checked above) and valid for writing one handle for this call (`persistent`'s
        // `# Safety`, from the caller of the MPI_*_init call).
        unsafe { new_request(st, Req::persistent(recipe), request) }
    })
}

/// The blocking, non-blocking and persistent entry points of one collective, from
/// the function that starts it, and on an intercommunicator the blocking
/// form's body (`inter = |st| ...`), if it has one.
macro_rules! collective {
    (@inter) => { None::<fn(&mut State) -> R<()>> };
    (@inter |$st:ident| $e:expr) => {
        // SAFETY: `$e` is the intercommunicator form of the collective, which completes within the MPI call that runs
        // it; the buffers and arrays it reads are that call's arguments, valid for its duration as MPI 4.1 §6 requires
        // of the collective's caller (and, for an I-form, until its request completes, later still).
        Some(|$st: &mut State| -> R<()> { unsafe { $e } })
    };
    ($name:ident / $iname:ident / $pname:ident = $start:ident $(::<$kind:ident>)? ($($arg:ident: $ty:ty),*) on $comm:ident $(, inter = |$st:ident| $inter:expr)?) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            let inter = collective!(@inter $(|$st| $inter)?);
            // SAFETY: the buffers and arrays are this blocking collective's arguments, valid as MPI 4.1 §6 requires for
            // the duration of the call, and `blocking` waits for the operation `$start` starts to complete before it
            // returns, so they outlive it.
            blocking(stringify!($name), $comm, |st| unsafe { $start $(::<$kind>)? (st, $($arg),*) }, inter)
        }

        #[no_mangle]
        pub unsafe extern "C" fn $iname($($arg: $ty,)* request: *mut Handle) -> c_int {
            // SAFETY: the intercommunicator form, if any, runs to completion inside `nonblocking`, within this call,
            // while the buffers and arrays are valid (MPI 4.1 §6.12 keeps them the request's until it completes).
            let inter = collective!(@inter $(|$st| $inter)?);
            // SAFETY: the buffers and arrays stay valid, and the program leaves them alone, until the request
            // completes, as MPI 4.1 §6.12 requires of a non-blocking collective's caller, which covers the operation
            // `$start` starts; `request` is null or valid for writing one handle for this call: `nonblocking`'s
            // `# Safety`.
            unsafe { nonblocking(stringify!($iname), $comm, request, |st| $start $(::<$kind>)? (st, $($arg),*), inter) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty,)* info: Handle, request: *mut Handle) -> c_int {
            let make = |st: &State| -> R<$crate::coll::CollStart> {
                use $crate::keep::{Keep, Kept, Note};
                let mut ctx = $crate::keep::Ctx::new(st, $comm, stringify!($start).starts_with("neighbor"))?;
                $( Note::note(&$arg, stringify!($arg), &mut ctx); )*
                // SAFETY: each array significant here holds the entries `ctx` gives it (one per process of `$comm`, or
                // per neighbour of a neighborhood collective) for this call, as MPI 4.1 §6.13 requires of the
                // initialization's arguments; `keep` copies them now and reads no other: `Keep::keep`'s `# Safety`.
                $( let $arg = unsafe { Keep::keep($arg, stringify!($arg), &ctx) }?; )*
                // SAFETY: the arrays are the copies `Keep` made, owned by this closure; the buffers are the request's:
                // each start runs in MPI_Start(all), from which until the operation completes MPI 4.1 §6.13 (as §3.9)
                // requires the program to keep them valid and leave them alone, which covers what `$start` needs.
                Ok(std::rc::Rc::new(move |st: &mut State| unsafe { $start $(::<$kind>)? (st, $(Kept::arg(&$arg)),*) }))
            };
            // SAFETY: `request` is the MPI_*_init call's out-argument (MPI 4.1 §6.13), null or valid for writing one
            // handle for this call: `persistent`'s `# Safety`.
            unsafe { $crate::coll::persistent(stringify!($pname), $comm, info, request, make) }
        }
    };
}
pub(crate) use collective;

pub(crate) fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

/// A reduction's arguments (§6.9.2), as the mpi crate takes them
/// (`mpi::staged::reduction`): the datatype's element type, or its layout
/// and what it is built from; the operation; the send argument.
fn reduction(st: &State, sendbuf: *const c_void, dt: Handle, op: Handle) -> R<Reduction<OpChoice>> {
    let send = if in_place(sendbuf) { Input::InPlace } else { Input::At(sendbuf.cast()) };
    let op = crate::op::op_of(st, op, dt)?;
    let Some(entry) = st.types.get(&dt) else {
        return Ok(Reduction::new(ReduceType::Predefined(crate::datatype::elem_of(dt)?), op, send)?);
    };
    let layout = st.committed(dt)?;
    Ok(Reduction::new(ReduceType::Derived(&layout, entry.def.basis.reduces()), op, send)?)
}

pub(crate) fn count_of(count: impl Int) -> R<usize> {
    Ok(mpi::staged::recipe::count_arg(count.int("count")?.into(), "count")?)
}

/// One `int` per process (`recvcounts`, `displs`, ...).
///
/// # Safety
/// `p` holds `n` values.
unsafe fn per_rank(p: impl Into<Ints>, n: c_int, what: &str) -> R<Vec<c_int>> {
    let p = p.into();
    let null = match p {
        Ints::Int(p) => p.is_null(),
        Ints::Count(p) => p.is_null(),
        Ints::Aint(p) => p.is_null(),
    };
    if null {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` holds `n` values: one count or displacement per process (MPI 4.1 §6.5).
    unsafe { p.read(n, what) }
}

unsafe fn barrier(st: &mut State, comm: Handle) -> R<Staged> {
    Ok(Staged::plain(st.comm(comm)?.comm.immediate_barrier()?))
}

#[no_mangle]
pub extern "C" fn MPI_Barrier(comm: Handle) -> c_int {
    // SAFETY: no pointer arguments.
    blocking(
        "MPI_Barrier",
        comm,
        |st| unsafe { barrier(st, comm) },
        Some(|st: &mut State| crate::inter::barrier(st, comm)),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibarrier(comm: Handle, request: *mut Handle) -> c_int {
    // SAFETY: `request` is MPI_Ibarrier's out-argument (MPI 4.1 §6.12), null or valid for writing one handle for this
    // call; a barrier has no buffer: `nonblocking`'s `# Safety`.
    unsafe {
        nonblocking(
            "MPI_Ibarrier",
            comm,
            request,
            |st| barrier(st, comm),
            Some(|st: &mut State| crate::inter::barrier(st, comm)),
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier_init(comm: Handle, info: Handle, request: *mut Handle) -> c_int {
    // SAFETY: no pointer argument is kept.
    let make = |_: &State| -> R<CollStart> { Ok(std::rc::Rc::new(move |st: &mut State| unsafe { barrier(st, comm) })) };
    // SAFETY: `request` is MPI_Barrier_init's out-argument (MPI 4.1 §6.13), null or valid for writing one handle for
    // this call: `persistent`'s `# Safety`.
    unsafe { persistent("MPI_Barrier_init", comm, info, request, make) }
}

unsafe fn bcast(
    st: &mut State,
    buffer: *mut c_void,
    count: impl Int,
    datatype: Handle,
    root: c_int,
    comm: Handle,
) -> R<Staged> {
    // SAFETY: `buffer` holds `count` elements of `datatype` (read at the root, written elsewhere) until the operation
    // completes: the blocking form waits for it, and MPI 4.1 §6.12 and §6.13 keep it the request's until then, as the
    // `collective!` entry points rely on. That is `sc::ibcast`'s requirement.
    Ok(unsafe { sc::ibcast(&st.comm(comm)?.comm, root, buffer.cast(), &st.span(count, datatype)?) }?)
}
collective!(MPI_Bcast / MPI_Ibcast / MPI_Bcast_init = bcast(buffer: *mut c_void, count: c_int, datatype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::bcast(st, buffer, count, datatype, root, comm));
collective!(MPI_Bcast_c / MPI_Ibcast_c / MPI_Bcast_init_c = bcast(buffer: *mut c_void, count: i64, datatype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::bcast(st, buffer, count, datatype, root, comm));

/// A send argument: `MPI_IN_PLACE`, or `count` elements of `dt`.
fn send_arg(st: &State, buf: *const c_void, count: impl Int, dt: Handle) -> R<Send> {
    Ok(if in_place(buf) { Send::InPlace } else { Send::From(buf.cast(), st.span(count, dt)?) })
}

/// A receive argument: `MPI_IN_PLACE`, or `count` elements of `dt`.
fn recv_arg(st: &State, buf: *mut c_void, count: impl Int, dt: Handle) -> R<Recv> {
    Ok(if in_place(buf) { Recv::InPlace } else { Recv::Into(buf.cast(), st.span(count, dt)?) })
}

/// The communicator and whether this process is the root of a rooted
/// collective (the arguments significant here follow from it, §6.1).
fn rooted(st: &State, comm: Handle, root: c_int) -> R<(&SimpleCommunicator, bool)> {
    let c = &st.comm(comm)?.comm;
    Ok((c, sc::root_of(c, root)? == c.rank()))
}

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn gather(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<Staged> {
    let (c, at_root) = rooted(st, comm, root)?;
    // SAFETY: only the buffers significant here (MPI 4.1 §6.5) are used: off the root, `sendbuf` holds `sendcount`
    // elements of `sendtype`; at the root, `recvbuf` has room for `recvcount` elements of `recvtype` per process and
    // `sendbuf` is MPI_IN_PLACE or holds its elements. Each stays valid until the operation completes (the blocking
    // form waits; §6.12, §6.13 otherwise): what `sc::igather` and `sc::igather_root` require.
    Ok(unsafe {
        if !at_root {
            sc::igather(c, root, sendbuf.cast(), &st.span(sendcount, sendtype)?, false)
        } else {
            let recv = st.span_times(recvcount, c.size(), recvtype)?;
            sc::igather_root(c, send_arg(st, sendbuf, sendcount, sendtype)?, recvbuf.cast(), &recv)
        }
    }?)
}
collective!(MPI_Gather / MPI_Igather / MPI_Gather_init = gather(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::gather(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, None, recvtype, root, comm));
collective!(MPI_Gather_c / MPI_Igather_c / MPI_Gather_init_c = gather(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::gather(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, None, recvtype, root, comm));

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn scatter(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<Staged> {
    let (c, at_root) = rooted(st, comm, root)?;
    // SAFETY: only the buffers significant here (MPI 4.1 §6.6) are used: off the root, `recvbuf` has room for
    // `recvcount` elements of `recvtype`; at the root, `sendbuf` holds `sendcount` elements of `sendtype` per process
    // and `recvbuf` is MPI_IN_PLACE or has room for its elements. Each stays valid until the operation completes (the
    // blocking form waits; §6.12, §6.13 otherwise): what `sc::iscatter` and `sc::iscatter_root` require.
    Ok(unsafe {
        if !at_root {
            sc::iscatter(c, root, recvbuf.cast(), &st.span(recvcount, recvtype)?, false)
        } else {
            let send = st.span_times(sendcount, c.size(), sendtype)?;
            sc::iscatter_root(c, sendbuf.cast(), &send, recv_arg(st, recvbuf, recvcount, recvtype)?)
        }
    }?)
}
collective!(MPI_Scatter / MPI_Iscatter / MPI_Scatter_init = scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::scatter(st, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root, comm));
collective!(MPI_Scatter_c / MPI_Iscatter_c / MPI_Scatter_init_c = scatter(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::scatter(st, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root, comm));

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn allgather(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    comm: Handle,
) -> R<Staged> {
    let c = &st.comm(comm)?.comm;
    let recv = st.span_times(recvcount, c.size(), recvtype)?;
    // SAFETY: `sendbuf` is MPI_IN_PLACE or holds `sendcount` elements of `sendtype`, and `recvbuf` has room for
    // `recvcount` elements of `recvtype` per process (MPI 4.1 §6.7), both valid until the operation completes (the
    // blocking form waits; §6.12, §6.13 otherwise): what `sc::iallgather` requires.
    Ok(unsafe { sc::iallgather(c, send_arg(st, sendbuf, sendcount, sendtype)?, recvbuf.cast(), &recv) }?)
}
collective!(MPI_Allgather / MPI_Iallgather / MPI_Allgather_init = allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::allgather(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, None, recvtype, comm));
collective!(MPI_Allgather_c / MPI_Iallgather_c / MPI_Allgather_init_c = allgather(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::allgather(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, None, recvtype, comm));

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn alltoall(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    comm: Handle,
) -> R<Staged> {
    let c = &st.comm(comm)?.comm;
    let n = c.size();
    let recv = st.span_times(recvcount, n, recvtype)?;
    let send = if in_place(sendbuf) {
        Send::InPlace
    } else {
        Send::From(sendbuf.cast(), st.span_times(sendcount, n, sendtype)?)
    };
    // SAFETY: `sendbuf` is MPI_IN_PLACE or holds `sendcount` elements of `sendtype` per process, and `recvbuf` has room
    // for `recvcount` elements of `recvtype` per process (MPI 4.1 §6.8), both valid until the operation completes (the
    // blocking form waits; §6.12, §6.13 otherwise): what `sc::ialltoall` requires.
    Ok(unsafe { sc::ialltoall(c, send, recvbuf.cast(), &recv) }?)
}
collective!(MPI_Alltoall / MPI_Ialltoall / MPI_Alltoall_init = alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::alltoall(st, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, None, recvtype, comm));
collective!(MPI_Alltoall_c / MPI_Ialltoall_c / MPI_Alltoall_init_c = alltoall(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::alltoall(st, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, None, recvtype, comm));

// The v-collectives, after the `collective!` macro they use.
mod vector;
pub(crate) use vector::wblock;

// ---- reductions (§6.9-6.11) --------------------------------------------------

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn reduce(
    st: &mut State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Int,
    datatype: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
) -> R<Staged> {
    let r = reduction(st, sendbuf, datatype, op)?;
    let (n, c) = (count_of(count)?, &st.comm(comm)?.comm);
    let at_root = root == c.rank();
    // SAFETY: `sendbuf` is MPI_IN_PLACE or holds `count` elements of `datatype`, and at the root `recvbuf` holds room
    // for `count` (read too under MPI_IN_PLACE); off the root `recvbuf` is not significant and `recv_n` is 0 (MPI 4.1
    // §6.9.1). They stay valid until the operation completes (the blocking form waits; §6.12, §6.13 otherwise): what
    // `Reduction::run` and `red::ireduce` require.
    Ok(unsafe {
        r.run(n, recvbuf.cast(), if at_root { n } else { 0 }, |send, recv| {
            red::ireduce(c, root, r.elem(), send, recv, r.n(n), r.op())
        })
    }?)
}
collective!(MPI_Reduce / MPI_Ireduce / MPI_Reduce_init = reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle, root: c_int, comm: Handle) on comm, inter = |st| inter_reduce(st, sendbuf, recvbuf, count, datatype, op, Some(root), comm));
collective!(MPI_Reduce_c / MPI_Ireduce_c / MPI_Reduce_init_c = reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: Handle, op: Handle, root: c_int, comm: Handle) on comm, inter = |st| inter_reduce(st, sendbuf, recvbuf, count, datatype, op, Some(root), comm));

/// `MPI_Reduce_local` (§6.9.7): `inoutbuf = inbuf op inoutbuf`, here.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
) -> c_int {
    with_state("MPI_Reduce_local", MPI_COMM_WORLD, |st| {
        let r = reduction(st, inbuf, datatype, op)?;
        let n = count_of(count)?;
        // SAFETY: `inbuf` holds `count` elements of `datatype`, and `inoutbuf` holds `count` elements, readable and
        // writable, for this call, as MPI 4.1 §6.9.7 requires of MPI_Reduce_local's caller: what `Reduction::run_now`
        // and `red::reduce_local` require.
        Ok(unsafe {
            r.run_now(n, inoutbuf.cast(), n, |input, inout| {
                let Input::At(input) = input else {
                    return Err(mpi::BufferError::InPlace { place: "as MPI_Reduce_local's inbuf" }.into());
                };
                red::reduce_local(r.elem(), input, inout, r.n(n), r.op())
            })
        }?)
    })
}

/// `MPI_Reduce` (`root` given) and `MPI_Allreduce` on an
/// intercommunicator (§6.9.1, §6.9.6): the result is the other group's.
///
/// # Safety
/// The buffers significant here hold `count` elements of `datatype` (room for them, for `recvbuf`) for
/// the call (MPI 4.1 §6.9.1, §6.9.6).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn inter_reduce(
    st: &mut State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Int,
    datatype: Handle,
    op: Handle,
    root: Option<c_int>,
    comm: Handle,
) -> R<()> {
    let c = &st.comm(comm)?.comm;
    let r = reduction(st, sendbuf, datatype, op)?;
    let n = count_of(count)?;
    let root = root.map(|r| crate::inter::root_arg(c, r)).transpose()?;
    use mpi::inter::InterRoot;
    let (send_n, recv_n) = match root {
        Some(InterRoot::Here) => (0, n),
        Some(InterRoot::Idle) => (0, 0),
        Some(_) => (n, 0),
        None => (n, n),
    };
    // SAFETY: the buffers significant here (`sendbuf` with `send_n` elements in the sending group, `recvbuf` with room
    // for `recv_n` at the root, or everywhere for MPI_Allreduce) hold them for this call (`inter_reduce`'s `# Safety`,
    // MPI 4.1 §6.9.1, §6.9.6), and the operation completes within it: what `Reduction::run_now` and `red::inter_reduce`
    // require.
    Ok(unsafe {
        r.run_now(send_n, recvbuf.cast(), recv_n, |send, recv| {
            let send = match send {
                Input::At(p) => p,
                Input::InPlace => {
                    return Err(mpi::BufferError::InPlace { place: "on an intercommunicator (§6.9.1)" }.into())
                }
            };
            red::inter_reduce(c, root, r.elem(), send, recv, r.n(n), r.op())
        })
    }?)
}

/// `MPI_Allreduce`, `MPI_Scan` and `MPI_Exscan` (`KIND`: [`ALLREDUCE`],
/// [`SCAN`], [`EXSCAN`]), in every form (§6.9.6, §6.11).
///
/// # Safety
/// `sendbuf` (unless MPI_IN_PLACE) and `recvbuf` hold `count` elements of
/// `datatype` until the operation completes.
unsafe fn everyone<const KIND: u8>(
    st: &mut State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> R<Staged> {
    let kind = match KIND {
        ALLREDUCE => Everyone::Allreduce,
        SCAN => Everyone::Scan,
        _ => Everyone::Exscan,
    };
    let r = reduction(st, sendbuf, datatype, op)?;
    let (n, c) = (count_of(count)?, &st.comm(comm)?.comm);
    // SAFETY: `sendbuf` (unless MPI_IN_PLACE) and `recvbuf` hold `count` elements of `datatype` until the operation
    // completes (`everyone`'s `# Safety`, which the `collective!` entry points keep as MPI 4.1 §6.9.6 and §6.11
    // require of the caller: the blocking form waits; §6.12, §6.13 otherwise): what `Reduction::run` and
    // `red::ieveryone` require.
    Ok(unsafe {
        r.run(n, recvbuf.cast(), n, |send, recv| red::ieveryone(c, kind, r.elem(), send, recv, r.n(n), r.op()))
    }?)
}
/// [`everyone`]'s kinds.
const ALLREDUCE: u8 = 0;
const SCAN: u8 = 1;
const EXSCAN: u8 = 2;
collective!(MPI_Allreduce / MPI_Iallreduce / MPI_Allreduce_init = everyone::<ALLREDUCE>(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle, comm: Handle) on comm, inter = |st| inter_reduce(st, sendbuf, recvbuf, count, datatype, op, None, comm));
collective!(MPI_Allreduce_c / MPI_Iallreduce_c / MPI_Allreduce_init_c = everyone::<ALLREDUCE>(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: Handle, op: Handle, comm: Handle) on comm, inter = |st| inter_reduce(st, sendbuf, recvbuf, count, datatype, op, None, comm));
collective!(MPI_Scan / MPI_Iscan / MPI_Scan_init = everyone::<SCAN>(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle, comm: Handle) on comm);
collective!(MPI_Scan_c / MPI_Iscan_c / MPI_Scan_init_c = everyone::<SCAN>(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: Handle, op: Handle, comm: Handle) on comm);
collective!(MPI_Exscan / MPI_Iexscan / MPI_Exscan_init = everyone::<EXSCAN>(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle, comm: Handle) on comm);
collective!(MPI_Exscan_c / MPI_Iexscan_c / MPI_Exscan_init_c = everyone::<EXSCAN>(sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: Handle, op: Handle, comm: Handle) on comm);

unsafe fn reduce_scatter_block(
    st: &mut State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> R<Staged> {
    let r = reduction(st, sendbuf, datatype, op)?;
    let (n, c) = (count_of(recvcount)?, &st.comm(comm)?.comm);
    let total = n * c.size() as usize;
    let recv_n = if in_place(sendbuf) { total } else { n };
    // SAFETY: `sendbuf` holds `recvcount` elements of `datatype` per process (`total`) and `recvbuf` has room for
    // `recvcount`, or under MPI_IN_PLACE `recvbuf` holds the `total` (MPI 4.1 §6.10.1); they stay valid until the
    // operation completes (the blocking form waits; §6.12, §6.13 otherwise): what `Reduction::run` and
    // `red::ireduce_scatter_block` require.
    Ok(unsafe {
        r.run(total, recvbuf.cast(), recv_n, |send, recv| {
            red::ireduce_scatter_block(c, r.elem(), send, recv, r.n(n), r.op())
        })
    }?)
}
collective!(MPI_Reduce_scatter_block / MPI_Ireduce_scatter_block / MPI_Reduce_scatter_block_init = reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Handle, op: Handle, comm: Handle) on comm, inter = |st| inter_reduce_scatter(st, sendbuf, recvbuf, None, recvcount, datatype, op, comm));
collective!(MPI_Reduce_scatter_block_c / MPI_Ireduce_scatter_block_c / MPI_Reduce_scatter_block_init_c = reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: i64, datatype: Handle, op: Handle, comm: Handle) on comm, inter = |st| inter_reduce_scatter(st, sendbuf, recvbuf, None, recvcount, datatype, op, comm));

/// The counts of a reduce-scatter: `recvcounts[i]` for each process, or
/// `recvcount` each.
///
/// # Safety
/// `recvcounts` holds one count per process of `c`.
unsafe fn scatter_counts(c: &SimpleCommunicator, recvcounts: Option<Ints>, recvcount: impl Int) -> R<Vec<usize>> {
    match recvcounts {
        // SAFETY: `p` holds one count per process of `c` (`scatter_counts`' `# Safety`), which is `per_rank`'s
        // requirement with `n` = `c.size()`.
        Some(p) => unsafe { per_rank(p, c.size(), "recvcounts")? }.iter().map(|&k| count_of(k)).collect(),
        None => Ok(vec![count_of(recvcount)?; c.size() as usize]),
    }
}

/// `MPI_Reduce_scatter` (§6.10.1).
unsafe fn reduce_scatter(
    st: &mut State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> R<Staged> {
    let c = &st.comm(comm)?.comm;
    let r = reduction(st, sendbuf, datatype, op)?;
    // SAFETY: `recvcounts` is MPI_Reduce_scatter's array of one count per process of `comm` (MPI 4.1 §6.10.2), readable
    // for this call: `scatter_counts`' `# Safety`.
    let counts = unsafe { scatter_counts(c, Some(recvcounts.into()), 0) }?;
    let (total, mine) = (counts.iter().sum::<usize>(), counts[c.rank() as usize]);
    let recv_n = if in_place(sendbuf) { total } else { mine };
    let scaled: Vec<usize> = counts.iter().map(|&k| r.n(k)).collect();
    // SAFETY: `sendbuf` holds the sum of `recvcounts` elements of `datatype` and `recvbuf` has room for this process's
    // count, or under MPI_IN_PLACE `recvbuf` holds the sum (MPI 4.1 §6.10.2); they stay valid until the operation
    // completes (the blocking form waits; §6.12, §6.13 otherwise): what `Reduction::run` and `red::ireduce_scatter`
    // require.
    Ok(unsafe {
        r.run(total, recvbuf.cast(), recv_n, |send, recv| {
            red::ireduce_scatter(c, r.elem(), send, recv, &scaled, r.op())
        })
    }?)
}
collective!(MPI_Reduce_scatter / MPI_Ireduce_scatter / MPI_Reduce_scatter_init = reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Handle, op: Handle, comm: Handle) on comm, inter = |st| inter_reduce_scatter(st, sendbuf, recvbuf, Some(recvcounts.into()), 0, datatype, op, comm));
collective!(MPI_Reduce_scatter_c / MPI_Ireduce_scatter_c / MPI_Reduce_scatter_init_c = reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const i64, datatype: Handle, op: Handle, comm: Handle) on comm, inter = |st| inter_reduce_scatter(st, sendbuf, recvbuf, Some(recvcounts.into()), 0, datatype, op, comm));

/// `MPI_Reduce_scatter` (`recvcounts`) and `MPI_Reduce_scatter_block`
/// (`recvcount` each) on an intercommunicator: this group's blocks of the
/// other group's reduction (§6.11.2). `MPI_IN_PLACE` is not valid there.
///
/// # Safety
/// `recvcounts`, when given, holds one count per process of the local group; `sendbuf` holds the counts'
/// sum of elements of `datatype` and `recvbuf` has room for this process's count, for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn inter_reduce_scatter(
    st: &mut State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: Option<Ints>,
    recvcount: impl Int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> R<()> {
    if in_place(sendbuf) {
        return Err(Fail::new(MPI_ERR_BUFFER, "MPI_IN_PLACE is not valid on an intercommunicator (§6.11.2)"));
    }
    let c = &st.comm(comm)?.comm;
    let r = reduction(st, sendbuf, datatype, op)?;
    // SAFETY: `recvcounts`, when given, holds one count per process of the local group of `comm`, readable for this
    // call (`inter_reduce_scatter`'s `# Safety`): `scatter_counts`' requirement.
    let counts = unsafe { scatter_counts(c, recvcounts, recvcount) }?;
    let (total, mine) = (counts.iter().sum::<usize>(), counts[c.rank() as usize]);
    let scaled: Vec<usize> = counts.iter().map(|&k| r.n(k)).collect();
    // SAFETY: `sendbuf` holds `total` elements of `datatype` and `recvbuf` has room for this process's count, for this
    // call (`inter_reduce_scatter`'s `# Safety`, MPI 4.1 §6.10), and the operation completes within it: what
    // `Reduction::run_now` and `red::inter_reduce_scatter` require.
    Ok(unsafe {
        r.run_now(total, recvbuf.cast(), mine, |send, recv| {
            let Input::At(send) = send else { return Ok(()) };
            red::inter_reduce_scatter(c, r.elem(), send, recv, &scaled, r.op())
        })
    }?)
}
