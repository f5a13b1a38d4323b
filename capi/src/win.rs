//! One-sided communication (MPI 4.1 chapter 12): window handles over
//! `mpi::rma::RawWindow`, C arguments translated — datatypes to layouts,
//! `MPI_Op` to the accumulate operation, `MPI_MODE_*` bits to
//! assertions, groups to window ranks — and nothing else: the epochs,
//! the range checks and the data movement are the mpi crate's.
//!
//! Errors go to the window's error handler (`MPI_ERRORS_ARE_FATAL`
//! until `MPI_Win_set_errhandler`), §9.3.

use std::ffi::{c_char, c_int, c_void};

use mpi::rma::{AccOp, Assert, Flavor, Issued, LockType, Model, RawWindow, Target, Waiting};
use mpi::slot::Slot;
use mpi::staged::reduce::Elem;
use mpi::staged::Span;

use crate::abi::*;
use crate::count::Int;
use crate::*;

mod attr;

mod sync;

/// A window handle's state.
pub(crate) struct WinEntry {
    pub(crate) win: RawWindow,
    pub(crate) errhandler: Handle,
    /// User attributes: keyval and value, in the order they were set.
    pub(crate) attrs: crate::attr::Values,
    info: info::Pairs,
    base: *mut c_void,
    /// The predefined attributes' values, which `MPI_Win_get_attr` hands
    /// out by address (§12.2.6): boxed, so the address stays valid while
    /// the table of windows grows and moves its entries.
    predefined: Box<Predefined>,
}

/// A window's predefined attributes other than its base.
struct Predefined {
    size: isize,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

impl State {
    fn win(&self, h: Handle) -> R<&WinEntry> {
        self.wins.get(&h).ok_or_else(|| unknown_win(h))
    }
}

fn assert_of(a: c_int) -> R<Assert> {
    let all = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;
    if a & !all != 0 {
        return Err(Fail::new(MPI_ERR_ASSERT, format!("assert {a:#x} has bits no MPI_MODE_* constant of §12.5.5 has")));
    }
    Ok(Assert {
        nocheck: a & MPI_MODE_NOCHECK != 0,
        nostore: a & MPI_MODE_NOSTORE != 0,
        noput: a & MPI_MODE_NOPUT != 0,
        noprecede: a & MPI_MODE_NOPRECEDE != 0,
        nosucceed: a & MPI_MODE_NOSUCCEED != 0,
    })
}

fn count(n: i64) -> R<usize> {
    Ok(mpi::staged::recipe::count_arg(n, "count")?)
}

fn size_arg(n: isize) -> R<u64> {
    u64::try_from(n).map_err(|_| Fail::new(MPI_ERR_SIZE, format!("window size {n} is negative")))
}

fn disp_unit_arg(n: i64) -> R<u32> {
    u32::try_from(n)
        .ok()
        .filter(|u| *u > 0)
        .ok_or_else(|| Fail::new(MPI_ERR_DISP, format!("displacement unit {n} is not positive")))
}

impl State {
    /// `count` elements of `dt` as a span.
    fn span_c(&self, n: i64, dt: Handle) -> R<Span> {
        let n = count(n)?;
        Ok(Span::of(self.committed(dt)?, n)?)
    }
}

fn acc_op(op: Handle) -> R<AccOp> {
    match op {
        MPI_REPLACE => Ok(AccOp::Replace),
        MPI_NO_OP => Ok(AccOp::NoOp),
        other => crate::op::system_op(other).map(AccOp::System).map_err(|f| {
            Fail::new(MPI_ERR_OP, format!("{}; one-sided accumulates take predefined operations only (§12.3.4)", f.msg))
        }),
    }
}

/// Register `win` as a new handle, writing it to `out`.
///
/// # Safety
/// `out` is null or writable.
unsafe fn new_win(st: &mut State, win: RawWindow, info: Handle, out: *mut Handle) -> R<()> {
    let info = st.info_or_null(info)?;
    let h = st.new_handle();
    let entry = WinEntry {
        base: win.base().cast(),
        predefined: Box::new(Predefined {
            size: win.size() as isize,
            disp_unit: win.disp_unit() as c_int,
            flavor: match win.flavor() {
                Flavor::Create => MPI_WIN_FLAVOR_CREATE,
                Flavor::Allocate => MPI_WIN_FLAVOR_ALLOCATE,
                Flavor::Dynamic => MPI_WIN_FLAVOR_DYNAMIC,
                Flavor::Shared => MPI_WIN_FLAVOR_SHARED,
            },
            model: match win.model() {
                Model::Unified => MPI_WIN_UNIFIED,
                Model::Separate => MPI_WIN_SEPARATE,
            },
        }),
        win,
        errhandler: MPI_ERRORS_ARE_FATAL,
        attrs: Default::default(),
        info,
    };
    st.wins.insert(h, entry);
    // SAFETY: `out` is null or valid for writing one window handle for this call, as `new_win`'s `# Safety` requires of
    // its callers (each hands over the `win` out-argument of its MPI_Win_create* call); `put` refuses null.
    unsafe { put(out, h, "win") }
}

// ---- windows (§12.2) ----------------------------------------------------------

/// # Safety
/// `base` is valid for `size` bytes until the window is freed, and accessed outside MPI only as MPI 4.1
/// §12.7 allows; `win` is null or valid for writing one handle for the call.
unsafe fn create(
    call: &str,
    base: *mut c_void,
    size: isize,
    unit: i64,
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    with_state(call, comm, |st| {
        let (size, unit) = (size_arg(size)?, disp_unit_arg(unit)?);
        let c = st.comm(comm)?.comm.clone();
        let model = Model::requested(&st.info_or_null(info)?)?;
        // SAFETY: `base` is MPI_Win_create's window memory of `size` bytes, which the program must keep allocated until
        // MPI_Win_free and access only as the semantics of MPI 4.1 §12.7 allow (`create`'s `# Safety`): exactly what
        // `RawWindow::create_with` requires.
        let w = unsafe { RawWindow::create_with(&c, base.cast(), size, unit, model)? };
        // SAFETY: `win` is MPI_Win_create(_c)'s out-argument, null or valid for writing one handle for this call
        // (`create`'s `# Safety`), which is what `new_win` needs; `new_win` refuses null.
        unsafe { new_win(st, w, info, win) }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Win_create(base: *mut c_void, size: isize, disp_unit: c_int, info: Handle, comm: Handle, win: *mut Handle) -> c_int = create(base, size, disp_unit.into(), info, comm, win);
    pub unsafe extern "C" fn MPI_Win_create_c(base: *mut c_void, size: isize, disp_unit: isize, info: Handle, comm: Handle, win: *mut Handle) -> c_int = create(base, size, disp_unit as i64, info, comm, win);
    pub unsafe extern "C" fn MPI_Win_allocate(size: isize, disp_unit: c_int, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int = allocate(false, size, disp_unit.into(), info, comm, baseptr, win);
    pub unsafe extern "C" fn MPI_Win_allocate_c(size: isize, disp_unit: isize, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int = allocate(false, size, disp_unit as i64, info, comm, baseptr, win);
    pub unsafe extern "C" fn MPI_Win_allocate_shared(size: isize, disp_unit: c_int, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int = allocate(true, size, disp_unit.into(), info, comm, baseptr, win);
    pub unsafe extern "C" fn MPI_Win_allocate_shared_c(size: isize, disp_unit: isize, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int = allocate(true, size, disp_unit as i64, info, comm, baseptr, win);
    pub unsafe extern "C" fn MPI_Win_shared_query(win: Handle, rank: c_int, size: *mut isize, disp_unit: *mut c_int, baseptr: *mut c_void) -> c_int = shared_query(win, rank, size, disp_unit.cast(), false, baseptr);
    pub unsafe extern "C" fn MPI_Win_shared_query_c(win: Handle, rank: c_int, size: *mut isize, disp_unit: *mut isize, baseptr: *mut c_void) -> c_int = shared_query(win, rank, size, disp_unit.cast(), true, baseptr);
}

/// # Safety
/// `baseptr` is null or the address of one writable `void *`, and `win` is null or valid for writing one
/// handle, for the call (MPI 4.1 §12.2.2, §12.2.3).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn allocate(
    call: &str,
    shared: bool,
    size: isize,
    unit: i64,
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    with_state(call, comm, |st| {
        let (size, unit) = (size_arg(size)?, disp_unit_arg(unit)?);
        if baseptr.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "baseptr is a null pointer"));
        }
        let c = st.comm(comm)?.comm.clone();
        let model = Model::requested(&st.info_or_null(info)?)?;
        let w = if shared {
            RawWindow::allocate_shared(&c, size, unit)?
        } else {
            RawWindow::allocate_with(&c, size, unit, model)?
        };
        let base = w.base();
        // SAFETY: `baseptr` is not null (checked above) and is MPI_Win_allocate(_shared)'s out-argument, which MPI 4.1
        // §12.2.2 and §12.2.3 declare `void *` but define as the address of a `void *`: valid and aligned for writing
        // one pointer for this call.
        unsafe { baseptr.cast::<*mut u8>().write(base) };
        // SAFETY: `win` is MPI_Win_allocate(_shared)'s out-argument, null or valid for writing one handle for this call
        // (`allocate`'s `# Safety`), which is what `new_win` needs; `new_win` refuses null.
        unsafe { new_win(st, w, info, win) }
    })
}

/// # Safety
/// Each of `size` (an `MPI_Aint`), `unit` (an `MPI_Aint` if `large`, else an `int`) and `baseptr` (the
/// address of a `void *`) is null or valid for writing one value for the call.
unsafe fn shared_query(
    call: &str,
    win: Handle,
    rank: c_int,
    size: *mut isize,
    unit: *mut c_void,
    large: bool,
    baseptr: *mut c_void,
) -> c_int {
    with_state(call, win, |st| {
        let (s, u, b) = st.win(win)?.win.shared_query(rank)?;
        // SAFETY: `size`, `unit` and `baseptr` are MPI_Win_shared_query(_c)'s out-arguments (MPI 4.1 §12.2.3), each
        // null or valid for writing one value for this call (`shared_query`'s `# Safety`): an `MPI_Aint`; an `int`, or
        // an `MPI_Aint` in the `_c` form, which `large` says; and a `void *`, `baseptr` being the address of a pointer.
        // `put` refuses null.
        unsafe {
            put(size, s as isize, "size")?;
            if large {
                put(unit.cast::<isize>(), u as isize, "disp_unit")?;
            } else {
                put(unit.cast::<c_int>(), u as c_int, "disp_unit")?;
            }
            put(baseptr.cast::<*mut u8>(), b, "baseptr")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(info: Handle, comm: Handle, win: *mut Handle) -> c_int {
    with_state("MPI_Win_create_dynamic", comm, |st| {
        let c = st.comm(comm)?.comm.clone();
        let w = RawWindow::create_dynamic(&c)?;
        // SAFETY: `win` is MPI_Win_create_dynamic's out-argument (MPI 4.1 §12.2.4), null or valid for writing one
        // handle for this call, which is what `new_win` needs; `new_win` refuses null.
        unsafe { new_win(st, w, info, win) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(win: Handle, base: *mut c_void, size: isize) -> c_int {
    with_state("MPI_Win_attach", win, |st| {
        let size = size_arg(size)?;
        // SAFETY: `base` and `size` are the memory MPI_Win_attach exposes (MPI 4.1 §12.2.4), which the program keeps
        // allocated while it is attached, until MPI_Win_detach or MPI_Win_free: what `RawWindow::attach` requires.
        unsafe { st.win_mut(win)?.win.attach(base.cast(), size)? };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_detach(win: Handle, base: *const c_void) -> c_int {
    with_state("MPI_Win_detach", win, |st| Ok(st.win_mut(win)?.win.detach(base.cast())?))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut Handle) -> c_int {
    // SAFETY: `win` is MPI_Win_free's in/out handle argument (MPI 4.1 §12.2.5), null or valid for reading and writing
    // one handle for this call; `read_arg` refuses null.
    let h = match unsafe { read_arg(win, "win") } {
        Ok(h) => h,
        Err(f) => return with_state("MPI_Win_free", MPI_COMM_WORLD, |_| Err(f)),
    };
    with_state("MPI_Win_free", h, |st| {
        // Refused while an epoch is open: the handle stays valid.
        st.win_mut(h)?.win.check_free()?;
        let e = st.wins.remove(&h).ok_or_else(|| unknown_win(h))?;
        let (w, mut attrs) = (e.win, e.attrs);
        w.free()?;
        for (k, v) in attrs.take_all() {
            crate::attr::delete_value(st, h, k, v)?;
        }
        // SAFETY: `win` was read above, so it is not null; the standard makes it writable.
        unsafe { put(win, MPI_WIN_NULL, "win") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_group(win: Handle, group: *mut Handle) -> c_int {
    with_state("MPI_Win_get_group", win, |st| {
        let g = mpi::group::Group::of(st.win(win)?.win.communicator());
        // SAFETY: `group` is MPI_Win_get_group's out-argument, null or valid for writing one group handle for this
        // call, which is what `new_group` needs; `put` within it refuses null.
        unsafe { st.new_group(g, group) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_info(win: Handle, info: Handle) -> c_int {
    with_state("MPI_Win_set_info", win, |st| {
        let p = st.info_or_null(info)?;
        st.win_mut(win)?.info = p;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(win: Handle, info_used: *mut Handle) -> c_int {
    with_state("MPI_Win_get_info", win, |st| {
        let p = st.win(win)?.info.clone();
        // SAFETY: `info_used` is MPI_Win_get_info's out-argument (MPI 4.1 §12.2.7), null or valid for writing one info
        // handle for this call; `hand_out` refuses null.
        unsafe { crate::info::hand_out(p, info_used, "info_used") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(win: Handle, win_name: *const c_char) -> c_int {
    with_state("MPI_Win_set_name", win, |st| {
        // SAFETY: `win_name` is MPI_Win_set_name's name argument (MPI 4.1 §7.8), a NUL-terminated string readable for
        // this call, or null, which `c_name` refuses.
        let name = unsafe { crate::strings::c_name(win_name)? };
        st.win_mut(win)?.win.set_name(&name);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(win: Handle, win_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    with_state("MPI_Win_get_name", win, |st| {
        // The null handle has a name too, as the null communicator does.
        let name = if win == MPI_WIN_NULL { "MPI_WIN_NULL".to_string() } else { st.win(win)?.win.name().to_string() };
        // SAFETY: `win_name` has room for MPI_MAX_OBJECT_NAME characters and `resultlen` for one `int`, for this call,
        // as MPI 4.1 §7.8 requires of MPI_Win_get_name's out-arguments: `put_name`'s `# Safety` (null is refused).
        unsafe { crate::strings::put_name(&name, win_name, resultlen) }
    })
}

// ---- communication (§12.3) ------------------------------------------------------

/// An operation's target as the mpi crate takes it.
struct TargetArgs {
    rank: c_int,
    disp: isize,
    count: i64,
    dt: Handle,
}

impl TargetArgs {
    fn layout(&self, st: &State) -> R<std::sync::Arc<mpi::datatype::Typemap>> {
        count(self.count)?;
        st.committed(self.dt)
    }
}

/// What an operation does.
enum Op {
    Put,
    Get,
    Acc(Handle),
    GetAcc(Handle),
}

/// `MPI_Put`, `MPI_Get`, `MPI_Accumulate`, `MPI_Get_accumulate` and their
/// request (`R`) and large-count (`_c`) forms: the request, for those
/// that make one.
///
/// # Safety
/// `origin` holds `ocount` elements of `otype` for the call; a get's `origin` and a get-accumulate's
/// `result` have room for their elements and are not accessed by the program until the operation
/// completes (MPI 4.1 §12.3).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn communicate(
    st: &mut State,
    op: Op,
    origin: *mut c_void,
    ocount: i64,
    otype: Handle,
    result: (*mut c_void, i64, Handle),
    t: TargetArgs,
    win: Handle,
) -> R<Option<Issued>> {
    let layout = t.layout(st)?;
    let target = Target { rank: t.rank, disp: t.disp as i64, layout: &layout, count: count(t.count)? };
    // An accumulate that moves no data on either side (a count of 0 or a
    // type of size 0) compares no basic types (MPICH's badrma makes them
    // all kinds of different ones).
    let moves_nothing = |st: &State| -> R<bool> {
        let ob = count(ocount)? as u64 * st.committed(otype)?.size as u64;
        Ok(ob == 0 && target.count as u64 * layout.size as u64 == 0)
    };
    // The element an accumulate combines (`Basis::accumulated`, §12.3.4);
    // a get-accumulate under MPI_NO_OP does not read its origin, whose
    // datatype is then not looked at (it may be MPI_DATATYPE_NULL).
    let elem = |st: &State, reads_origin: bool| -> R<Elem> {
        let target = st.basis(t.dt, None)?;
        let (origin, moves) = match reads_origin {
            false => (None, false),
            true => (Some(st.basis(otype, None)?), !moves_nothing(st)?),
        };
        Ok(mpi::staged::basis::Basis::accumulated(origin.as_ref(), &target, moves).map_err(MpiError::from)?)
    };
    st.win(win)?;
    match op {
        Op::Put => {
            let span = st.span_c(ocount, otype)?;
            let w = &mut st.win_mut(win)?.win;
            // SAFETY: `origin` holds `ocount` elements of `otype` (`span`), readable for this call, as MPI 4.1 §12.3.1
            // requires of MPI_Put's origin buffer (`communicate`'s `# Safety`); `RawWindow::put` copies them before it
            // returns, so that is all it requires.
            unsafe { w.put(origin.cast(), &span, &target)? };
            Ok(None)
        }
        Op::Get => {
            let span = st.span_c(ocount, otype)?;
            let w = &mut st.win_mut(win)?.win;
            // SAFETY: `origin` has room for `ocount` elements of `otype` (`span`), and MPI 4.1 §12.3.2 forbids the
            // program to access it until the get completes (at the epoch's end, a flush, or its request's completion,
            // §12.5): `communicate`'s `# Safety`, and what `RawWindow::get` requires until the returned operation
            // completes.
            Ok(Some(unsafe { w.get(origin.cast(), &span, &target)? }))
        }
        Op::Acc(h) => {
            let a = acc_op(h)?;
            let (e, span) = (elem(st, true)?, st.span_c(ocount, otype)?);
            let w = &mut st.win_mut(win)?.win;
            // SAFETY: `origin` holds `ocount` elements of `otype` (`span`), readable for this call, as MPI 4.1 §12.3.4
            // requires of MPI_Accumulate's origin buffer (`communicate`'s `# Safety`); `RawWindow::accumulate` copies
            // them before it returns.
            unsafe { w.accumulate(origin.cast(), &span, &target, e, a)? };
            Ok(None)
        }
        Op::GetAcc(h) => {
            let a = acc_op(h)?;
            let e = elem(st, a != AccOp::NoOp)?;
            let span = if a == AccOp::NoOp { Span::bytes(0) } else { st.span_c(ocount, otype)? };
            let rspan = st.span_c(result.1, result.2)?;
            let w = &mut st.win_mut(win)?.win;
            // SAFETY: `origin` holds `ocount` elements of `otype` for this call (under MPI_NO_OP `span` is empty and
            // nothing is read), and `result.0` has room for `result.1` elements of `result.2` (`rspan`), which MPI 4.1
            // §12.3.4 forbids the program to access until the operation completes: `communicate`'s `# Safety`, and
            // `RawWindow::get_accumulate`'s.
            Ok(Some(unsafe { w.get_accumulate(origin.cast(), &span, result.0.cast(), &rspan, &target, e, a)? }))
        }
    }
}

/// Run a communication call; with `request`, hand its request out.
///
/// # Safety
/// The buffers as [`communicate`] requires; `request`, when given, is null or valid for writing one handle
/// for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn call(
    name: &str,
    op: Op,
    origin: *mut c_void,
    ocount: i64,
    otype: Handle,
    result: (*mut c_void, i64, Handle),
    t: TargetArgs,
    win: Handle,
    request: Option<*mut Handle>,
) -> c_int {
    with_state(name, win, |st| {
        // SAFETY: `origin`, `result`, their counts and types are this function's own arguments, unchanged, so
        // `communicate`'s `# Safety` (origin readable for the call; a get's origin or a get-accumulate's result
        // writable and untouched until the operation completes, MPI 4.1 §12.3) is `call`'s own.
        let issued = unsafe { communicate(st, op, origin, ocount, otype, result, t, win)? };
        // Without a request, the operation completes at the epoch's end or
        // a flush (§12.3).
        let Some(out) = request else { return Ok(()) };
        let w = &st.win(win)?.win;
        let r = match issued {
            Some(op) => w.request(op),
            None => w.done(),
        };
        // SAFETY: `out` is the `request` out-argument of an MPI_R* call (MPI 4.1 §12.3.5), valid for writing one handle
        // for this call (`call`'s `# Safety`); `new_request` refuses null as well.
        unsafe { new_request(st, Slot::Op(mpi::staged::Staged::plain(r)), out) }
    })
}

const NO_RESULT: (*mut c_void, i64, Handle) = (std::ptr::null_mut(), 0, MPI_DATATYPE_NULL);

/// A target's arguments.
fn at(rank: c_int, disp: isize, count: impl Int, dt: Handle) -> TargetArgs {
    TargetArgs { rank, disp, count: count.wide(), dt }
}

forward! {
    pub unsafe extern "C" fn MPI_Put(o: *const c_void, oc: c_int, ot: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, win: Handle) -> c_int = call(Op::Put, o.cast_mut(), oc.wide(), ot, NO_RESULT, at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Put_c(o: *const c_void, oc: i64, ot: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, win: Handle) -> c_int = call(Op::Put, o.cast_mut(), oc, ot, NO_RESULT, at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Rput(o: *const c_void, oc: c_int, ot: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::Put, o.cast_mut(), oc.wide(), ot, NO_RESULT, at(rank, disp, tc, tt), win, Some(request));
    pub unsafe extern "C" fn MPI_Rput_c(o: *const c_void, oc: i64, ot: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::Put, o.cast_mut(), oc, ot, NO_RESULT, at(rank, disp, tc, tt), win, Some(request));
    pub unsafe extern "C" fn MPI_Get(o: *mut c_void, oc: c_int, ot: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, win: Handle) -> c_int = call(Op::Get, o, oc.wide(), ot, NO_RESULT, at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Get_c(o: *mut c_void, oc: i64, ot: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, win: Handle) -> c_int = call(Op::Get, o, oc, ot, NO_RESULT, at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Rget(o: *mut c_void, oc: c_int, ot: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::Get, o, oc.wide(), ot, NO_RESULT, at(rank, disp, tc, tt), win, Some(request));
    pub unsafe extern "C" fn MPI_Rget_c(o: *mut c_void, oc: i64, ot: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::Get, o, oc, ot, NO_RESULT, at(rank, disp, tc, tt), win, Some(request));
    pub unsafe extern "C" fn MPI_Accumulate(o: *const c_void, oc: c_int, ot: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, op: Handle, win: Handle) -> c_int = call(Op::Acc(op), o.cast_mut(), oc.wide(), ot, NO_RESULT, at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Accumulate_c(o: *const c_void, oc: i64, ot: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, op: Handle, win: Handle) -> c_int = call(Op::Acc(op), o.cast_mut(), oc, ot, NO_RESULT, at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Raccumulate(o: *const c_void, oc: c_int, ot: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::Acc(op), o.cast_mut(), oc.wide(), ot, NO_RESULT, at(rank, disp, tc, tt), win, Some(request));
    pub unsafe extern "C" fn MPI_Raccumulate_c(o: *const c_void, oc: i64, ot: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::Acc(op), o.cast_mut(), oc, ot, NO_RESULT, at(rank, disp, tc, tt), win, Some(request));
    pub unsafe extern "C" fn MPI_Get_accumulate(o: *const c_void, oc: c_int, ot: Handle, r: *mut c_void, rc: c_int, rt: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, op: Handle, win: Handle) -> c_int = call(Op::GetAcc(op), o.cast_mut(), oc.wide(), ot, (r, rc.wide(), rt), at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Get_accumulate_c(o: *const c_void, oc: i64, ot: Handle, r: *mut c_void, rc: i64, rt: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, op: Handle, win: Handle) -> c_int = call(Op::GetAcc(op), o.cast_mut(), oc, ot, (r, rc, rt), at(rank, disp, tc, tt), win, None);
    pub unsafe extern "C" fn MPI_Rget_accumulate(o: *const c_void, oc: c_int, ot: Handle, r: *mut c_void, rc: c_int, rt: Handle, rank: c_int, disp: isize, tc: c_int, tt: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::GetAcc(op), o.cast_mut(), oc.wide(), ot, (r, rc.wide(), rt), at(rank, disp, tc, tt), win, Some(request));
    pub unsafe extern "C" fn MPI_Rget_accumulate_c(o: *const c_void, oc: i64, ot: Handle, r: *mut c_void, rc: i64, rt: Handle, rank: c_int, disp: isize, tc: i64, tt: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int = call(Op::GetAcc(op), o.cast_mut(), oc, ot, (r, rc, rt), at(rank, disp, tc, tt), win, Some(request));
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    o: *const c_void,
    r: *mut c_void,
    dt: Handle,
    rank: c_int,
    disp: isize,
    op: Handle,
    win: Handle,
) -> c_int {
    let t = TargetArgs { rank, disp, count: 1, dt };
    // SAFETY: `o` holds one element of `dt`, readable for this call, and `r` has room for one, which the program does
    // not access until the operation completes, as MPI 4.1 §12.3.4 requires of MPI_Fetch_and_op's buffers; no request:
    // `call`'s `# Safety` with counts of 1.
    unsafe { call("MPI_Fetch_and_op", Op::GetAcc(op), o as *mut c_void, 1, dt, (r, 1, dt), t, win, None) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    o: *const c_void,
    c: *const c_void,
    r: *mut c_void,
    dt: Handle,
    rank: c_int,
    disp: isize,
    win: Handle,
) -> c_int {
    with_state("MPI_Compare_and_swap", win, |st| {
        let e = crate::datatype::elem_of(dt)?;
        let w = &mut st.win_mut(win)?.win;
        // SAFETY: `o` and `c` each hold one element of `dt`, readable for this call, and `r` has room for one, which
        // the program does not access until the operation completes (MPI_Compare_and_swap, MPI 4.1 §12.3.4): what
        // `RawWindow::compare_and_swap` requires.
        unsafe { w.compare_and_swap(o.cast(), c.cast(), r.cast(), e, rank, disp as i64)? };
        Ok(())
    })
}

// ---- synchronisation (§12.5) ---------------------------------------------------
