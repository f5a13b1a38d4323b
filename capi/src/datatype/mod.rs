//! Datatypes (MPI 4.1 §5.1): the predefined ones, and derived datatypes
//! built by the type constructors (§5.1.2-5.1.7), committed, freed,
//! decoded (§5.1.13), and packed (§5.2).
//!
//! The typemaps themselves, their construction, packing and unpacking are
//! the mpi crate's (`mpi::datatype::typemap`, stored in the size of their
//! description); this module keeps what is C's: handles, the constructors'
//! arguments as `MPI_Type_get_contents` returns them, and the caller's
//! pointers. A send or receive of `count` elements is then an
//! `mpi::staged::Span`, which the mpi crate moves in place, packed, staged
//! or streamed.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use crate::abi::*;
use crate::*;

/// A datatype's typemap (MPI 4.1 §5.1.1): the mpi crate's datatype engine.
pub(crate) use mpi::datatype::typemap::addr;
pub(crate) use mpi::datatype::Typemap as Layout;
pub(crate) use mpi::staged::basis::Basis;
pub(crate) use mpi::staged::{incoming, near_null, Blocks, Span};

/// How a datatype was built (§5.1.13, `mpi::staged::recipe`), its old
/// types with their definitions (so that a decode still works after the
/// program freed them).
pub(crate) type Contents = mpi::staged::recipe::Contents<(Handle, Option<Arc<TypeDef>>)>;
pub(crate) use mpi::staged::recipe::{Args, Form};

/// A derived datatype's definition.
#[derive(Debug)]
pub(crate) struct TypeDef {
    pub(crate) layout: Arc<Layout>,
    contents: Contents,
    /// What it is made of: its signature and the element it reduces as
    /// (the mpi crate's rules, `mpi::staged::basis`).
    pub(crate) basis: Basis,
}

impl TypeDef {
    /// How it was built (`MPI_Type_get_contents`).
    pub(crate) fn contents(&self) -> &Contents {
        &self.contents
    }
}

/// A derived datatype handle's state.
pub(crate) struct TypeEntry {
    pub(crate) def: Arc<TypeDef>,
    /// `MPI_Type_commit` has run: it may be used in communication.
    pub(crate) committed: bool,
    /// `MPI_Type_set_name`'s name.
    name: String,
}

impl TypeEntry {
    /// A new, committed handle's entry for `def` (`MPI_File_get_view`
    /// hands out the view's types so, §14.3).
    pub(crate) fn committed_copy(def: Arc<TypeDef>) -> TypeEntry {
        TypeEntry { def, committed: true, name: String::new() }
    }
}

/// The size of a predefined datatype with a contiguous layout: the fast
/// path of every call, one load from [`CONTIGUOUS_SIZES`].
#[inline(always)]
fn contiguous_size(dt: Handle) -> Option<usize> {
    let size = *CONTIGUOUS_SIZES.get(dt.wrapping_sub(FIRST_DATATYPE))?;
    (size != 0).then_some(size as usize)
}

/// The ABI's predefined datatype handles are `0x200..0x300`.
const FIRST_DATATYPE: Handle = 0x200;

/// [`contiguous_size_of`] every handle from [`FIRST_DATATYPE`] (0: not
/// a contiguous predefined type), built at compile time.
static CONTIGUOUS_SIZES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = contiguous_size_of(FIRST_DATATYPE + i) as u8;
        i += 1;
    }
    t
};

/// The name of a predefined datatype, from the ABI tables.
fn predefined_name(dt: Handle) -> Option<&'static str> {
    HANDLES.iter().find(|h| h.0 == "MPI_Datatype")?.2.iter().find(|(_, v)| *v == dt).map(|(n, _)| *n)
}

fn bad_count(count: impl std::fmt::Display) -> Fail {
    Fail::new(MPI_ERR_COUNT, format!("count {count} is negative"))
}

impl State {
    /// The layout of any datatype, committed or not (for queries and
    /// constructors).
    pub(crate) fn layout(&self, dt: Handle) -> R<Arc<Layout>> {
        if let Some(e) = self.types.get(&dt) {
            return Ok(e.def.layout.clone());
        }
        layout_of(dt).map(Arc::new).ok_or_else(|| unknown_type(dt))
    }

    /// `count` elements of `dt`, which must be committed (§5.1.9).
    pub(crate) fn span(&self, count: impl crate::count::Int, dt: Handle) -> R<Span> {
        let count = count.int("count")?;
        if count < 0 {
            return Err(bad_count(count));
        }
        self.span_n(count as usize, dt)
    }

    /// `count * times` elements (a collective's buffer of one block per process).
    pub(crate) fn span_times(&self, count: impl crate::count::Int, times: c_int, dt: Handle) -> R<Span> {
        let count = count.int("count")?;
        if count < 0 {
            return Err(bad_count(count));
        }
        self.span_n(count as usize * times.max(0) as usize, dt)
    }

    /// `count` elements of `dt`. No elements of `MPI_DATATYPE_NULL` are no
    /// bytes, as in MPICH: programs pass it with a zero count (its recvnull
    /// test); any other count of it is `MPI_ERR_TYPE`.
    fn span_n(&self, count: usize, dt: Handle) -> R<Span> {
        if let Some(size) = contiguous_size(dt) {
            return Ok(Span::bytes(count.checked_mul(size).ok_or_else(|| too_many(count))?));
        }
        if count == 0 && dt == MPI_DATATYPE_NULL {
            return Ok(Span::bytes(0));
        }
        Ok(Span::of(self.committed(dt)?, count)?)
    }

    /// The layout of `dt`, which must be committed (§5.1.9).
    pub(crate) fn committed(&self, dt: Handle) -> R<Arc<Layout>> {
        match self.types.get(&dt) {
            Some(e) if !e.committed => Err(Fail::new(
                MPI_ERR_TYPE,
                format!("datatype {dt:#x} is not committed: call MPI_Type_commit before using it to communicate"),
            )),
            Some(e) => Ok(e.def.layout.clone()),
            None => Ok(Arc::new(layout_of(dt).ok_or_else(|| unknown_type(dt))?)),
        }
    }

    /// A v-collective's buffer (`mpi::staged::blocks`): block `i` of
    /// `counts[i]` elements of `dt` at `displs[i]` extents from `buf`.
    ///
    /// # Safety
    /// `buf` holds the blocks.
    pub(crate) unsafe fn blocks(
        &self,
        buf: *mut c_void,
        counts: &[c_int],
        displs: &[c_int],
        dt: Handle,
        fill: bool,
    ) -> R<Blocks> {
        let l = self.committed(dt)?;
        let cs: Vec<usize> = counts.iter().map(|&c| count_arg(c, "a count")).collect::<R<_>>()?;
        // SAFETY: `buf` holds the blocks `cs` and `displs` name (`State::blocks`' `# Safety`); its callers (the
        // v-collectives) also keep it readable when `fill` and leave it to the returned `Blocks` until the operation
        // completes, as MPI 4.1 §6.12 and §6.13 oblige their callers to: what `mpi::staged::blocks` requires.
        Ok(unsafe { mpi::staged::blocks(buf.cast(), &cs, displs, &l, fill) }?)
    }
}

fn too_many(count: usize) -> Fail {
    Fail::new(MPI_ERR_COUNT, format!("{count} elements overflow the address space"))
}

impl State {
    fn type_entry(&self, dt: Handle) -> R<&TypeEntry> {
        self.types.get(&dt).ok_or_else(|| {
            if layout_of(dt).is_some() {
                Fail::new(MPI_ERR_TYPE, format!("{} is predefined: it cannot be freed or renamed", name_of(dt)))
            } else {
                unknown_type(dt)
            }
        })
    }
}

fn name_of(dt: Handle) -> String {
    predefined_name(dt).map_or_else(|| format!("{dt:#x}"), str::to_string)
}

fn unknown_type(dt: Handle) -> Fail {
    if dt == MPI_DATATYPE_NULL {
        return Fail::new(MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a datatype");
    }
    Fail::new(MPI_ERR_TYPE, format!("{dt:#x} is not a datatype (never created, or freed)"))
}

/// The fast path of a send or receive: the bytes of `count` elements of a
/// predefined contiguous datatype, which move from and into the caller's
/// buffer as they are; `None` for anything else (a derived type, a bad
/// count or handle), which goes through [`State::span`] and its errors.
#[inline(always)] // on every send and receive; out of line it costs a call frame
pub(crate) fn direct_bytes(count: c_int, dt: Handle) -> Option<usize> {
    usize::try_from(count).ok()?.checked_mul(contiguous_size(dt)?)
}

// ---- the calls -------------------------------------------------------------------

/// A non-negative count argument (`int` or `MPI_Count`) as a `usize`.
fn count_arg(n: impl Into<i64>, what: &'static str) -> R<usize> {
    Ok(mpi::staged::recipe::count_arg(n.into(), what)?)
}

/// `n` values at `p` (an array argument).
///
/// # Safety
/// `p` holds `n` values.
pub(crate) unsafe fn array<'a, T>(p: *const T, n: usize, what: &str) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` is not null (checked) and holds `n` values of `T` (this
    // function's contract: the array argument's length is the MPI call's
    // count); nothing writes them during the call.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Register a new derived datatype (uncommitted) and write its handle.
///
/// # Safety
/// `out` is null or writable.
pub(crate) unsafe fn define(st: &mut State, layout: Layout, contents: Contents, out: *mut Handle) -> R<()> {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "newtype is a null pointer"));
    }
    let olds = contents.types.iter().map(|(h, d)| st.basis(*h, d.as_deref())).collect::<R<Vec<_>>>()?;
    let basis = contents.basis(layout.size, &olds)?;
    let h = st.new_handle();
    let def = Arc::new(TypeDef { layout: Arc::new(layout), contents, basis });
    st.types.insert(h, TypeEntry { def, committed: false, name: String::new() });
    // SAFETY: `out` is not null (checked above) and valid for writing one handle for this call, as `define`'s
    // `# Safety` requires of its callers (each passes its MPI call's `newtype`).
    unsafe { out.write(h) };
    Ok(())
}

impl State {
    /// What datatype `dt` is made of, whose definition is `def` if derived
    /// (kept by the types built from it, so this works after a free).
    pub(crate) fn basis(&self, dt: Handle, def: Option<&TypeDef>) -> R<Basis> {
        if let Some(d) = def.or_else(|| self.types.get(&dt).map(|e| &*e.def)) {
            return Ok(d.basis.clone());
        }
        let basics = basics(dt).ok_or_else(|| unknown_type(dt))?;
        Ok(Basis::predefined(basics, elem_of(dt).ok()))
    }

    /// The constructor argument `dt`, with its definition when derived.
    pub(crate) fn part(&self, dt: Handle) -> R<(Handle, Option<Arc<TypeDef>>)> {
        match self.types.get(&dt) {
            Some(e) => Ok((dt, Some(e.def.clone()))),
            None => layout_of(dt).map(|_| (dt, None)).ok_or_else(|| unknown_type(dt)),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(oldtype: Handle, newtype: *mut Handle) -> c_int {
    with_state("MPI_Type_dup", MPI_COMM_WORLD, |st| {
        let (l, args) = mpi::staged::recipe::dup(&*st.layout(oldtype)?);
        let committed = st.types.get(&oldtype).is_none_or(|e| e.committed);
        let contents = args.contents(vec![st.part(oldtype)?]);
        // SAFETY: `newtype` is MPI_Type_dup's out-argument, null or valid for writing one handle for this call, which
        // is what `define` requires; it refuses null.
        unsafe { define(st, l, contents, newtype)? };
        // A duplicate is committed if its original was (§5.1.10).
        // SAFETY: `define` wrote it.
        let h = unsafe { newtype.read() };
        if let Some(e) = st.types.get_mut(&h) {
            e.committed = committed;
        }
        crate::attr::copy_type_attrs(st, oldtype, h, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(datatype: *mut Handle) -> c_int {
    with_state("MPI_Type_commit", MPI_COMM_WORLD, |st| {
        // SAFETY: `datatype` is MPI_Type_commit's in/out handle argument, null or readable for one handle for this
        // call; `read_arg` refuses null.
        let dt = unsafe { read_arg(datatype, "datatype")? };
        match st.types.get_mut(&dt) {
            Some(e) => e.committed = true,
            // Committing a predefined datatype is allowed and does nothing.
            None => drop(st.layout(dt)?),
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(datatype: *mut Handle) -> c_int {
    with_state("MPI_Type_free", MPI_COMM_WORLD, |st| {
        // SAFETY: `datatype` is MPI_Type_free's in/out handle argument, null or readable and writable for one handle
        // for this call; `read_arg` refuses null.
        let dt = unsafe { read_arg(datatype, "datatype")? };
        if is_f90(st.type_entry(dt)?) {
            return Err(Fail::new(MPI_ERR_TYPE, "a type from MPI_Type_create_f90_* is predefined: it cannot be freed"));
        }
        // Its attributes go first, through their delete callbacks (§5.1.15).
        crate::attr::delete_type_attrs(st, dt)?;
        // Operations in progress and types built from it keep their own
        // copy of the layout (§5.1.10).
        st.types.remove(&dt);
        // SAFETY: `datatype` is not null (`read_arg` accepted it above) and, as MPI_Type_free's in/out handle argument,
        // writable for one handle for this call.
        unsafe { datatype.write(MPI_DATATYPE_NULL) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(datatype: Handle, size: *mut c_int) -> c_int {
    if let Some(l) = user_fn_layout(datatype) {
        // SAFETY: `size` is MPI_Type_size's out-argument (MPI 4.1 §5.1.5), null or valid for writing one `int` for this
        // call; `put` refuses null.
        return unsafe { put(size, l.size as c_int, "size") }.map_or(MPI_ERR_ARG, |_| MPI_SUCCESS);
    }
    with_state("MPI_Type_size", MPI_COMM_WORLD, |st| {
        let n = st.layout(datatype)?.size;
        let n = c_int::try_from(n).unwrap_or(MPI_UNDEFINED);
        // SAFETY: `size` is MPI_Type_size's out-argument (MPI 4.1 §5.1.5), null or valid for writing one `int` for this
        // call; `put` refuses null.
        unsafe { put(size, n, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_c(datatype: Handle, size: *mut i64) -> c_int {
    if let Some(l) = user_fn_layout(datatype) {
        // SAFETY: `size` is MPI_Type_size_c's out-argument (MPI 4.1 §5.1.5), null or valid for writing one `MPI_Count`
        // for this call; `put` refuses null.
        return unsafe { put(size, l.size as i64, "size") }.map_or(MPI_ERR_ARG, |_| MPI_SUCCESS);
    }
    with_state("MPI_Type_size_c", MPI_COMM_WORLD, |st| {
        let n = st.layout(datatype)?.size as i64;
        // SAFETY: `size` is MPI_Type_size_c's out-argument (MPI 4.1 §5.1.5), null or valid for writing one `MPI_Count`
        // for this call; `put` refuses null.
        unsafe { put(size, n, "size") }
    })
}

/// A predefined datatype's layout, or that of the derived datatype the
/// function was given, when a user-defined operation is running on this
/// thread (and so holds the state).
fn user_fn_layout(dt: Handle) -> Option<Layout> {
    if !crate::process::in_user_fn() {
        return None;
    }
    layout_of(dt).or_else(|| crate::process::user_fn_type(dt))
}

/// The bounds of a datatype (`true_`: of its data). `T` is `MPI_Aint`
/// (`isize`) or `MPI_Count` (`i64`).
///
/// # Safety
/// `lb` and `extent` are null or writable.
unsafe fn bounds<T>(
    call: &str,
    datatype: Handle,
    true_: bool,
    lb: *mut T,
    extent: *mut T,
    conv: fn(isize) -> T,
) -> c_int {
    // Inside a user-defined operation the state is held by the reduction
    // running it; the predefined datatypes, the only ones it is given,
    // need no state (§6.9.5 lets the function query its datatype).
    if let Some(l) = user_fn_layout(datatype) {
        let (lo, hi) = if true_ { (l.true_lb, l.true_ub) } else { (l.lb, l.ub) };
        // SAFETY: `lb` and `extent` are null or each valid for writing one `T` for this call (`bounds`' `# Safety`: the
        // MPI call's out-arguments); `put` refuses null.
        return unsafe { put(lb, conv(lo), "lb").and_then(|_| put(extent, conv(hi - lo), "extent")) }
            .map_or(MPI_ERR_ARG, |_| MPI_SUCCESS);
    }
    with_state(call, MPI_COMM_WORLD, |st| {
        let l = st.layout(datatype)?;
        let (lo, hi) = if true_ { (l.true_lb, l.true_ub) } else { (l.lb, l.ub) };
        // SAFETY: `lb` and `extent` are null or each valid for writing one `T` for this call (`bounds`' `# Safety`: the
        // MPI call's out-arguments); `put` refuses null.
        unsafe {
            put(lb, conv(lo), "lb")?;
            put(extent, conv(hi - lo), "extent")
        }
    })
}

/// Whole elements (`basic`: basic elements, §5.1.11) of `datatype` in a
/// status's byte count, or `MPI_UNDEFINED` when the bytes end inside one
/// (§3.2.5).
///
/// # Safety
/// `status` is null or readable.
unsafe fn elements(st: &State, status: *const MpiStatus, datatype: Handle, basic: bool) -> R<i64> {
    if status.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "status is a null pointer (MPI_STATUS_IGNORE has no count)"));
    }
    // SAFETY: `status` is not null (checked above) and readable for one MPI_Status for this call (`elements`'
    // `# Safety`: the status the program passes to MPI_Get_count or MPI_Get_elements).
    let bytes = unsafe { status.read() }.bytes();
    let l = st.layout(datatype)?;
    let n = if basic { l.elements_in(bytes) } else { l.count_in(bytes) };
    Ok(n.and_then(|n| i64::try_from(n).ok()).unwrap_or(i64::from(MPI_UNDEFINED)))
}

/// A count for an `int` result: `MPI_UNDEFINED` when it does not fit (§3.2.5).
fn as_int(n: i64) -> c_int {
    c_int::try_from(n).unwrap_or(MPI_UNDEFINED)
}

/// `MPI_Get_count` and `MPI_Get_elements`, as `int` or `MPI_Count`.
///
/// # Safety
/// `status` is null or readable; `count` is null or writable.
unsafe fn count_call<T>(
    call: &str,
    status: *const MpiStatus,
    datatype: Handle,
    basic: bool,
    count: *mut T,
    conv: fn(i64) -> T,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        // SAFETY: `status` is null or readable for one MPI_Status, and `count` null or valid for writing one `T`, for
        // this call (`count_call`'s `# Safety`): what `elements` requires, and `put`'s (it refuses null).
        unsafe { put(count, conv(elements(st, status, datatype, basic)?), "count") }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Type_get_extent(datatype: Handle, lb: *mut isize, extent: *mut isize) -> c_int = bounds(datatype, false, lb, extent, |v| v);
    pub unsafe extern "C" fn MPI_Type_get_extent_c(datatype: Handle, lb: *mut i64, extent: *mut i64) -> c_int = bounds(datatype, false, lb, extent, |v| v as i64);
    pub unsafe extern "C" fn MPI_Type_get_true_extent(datatype: Handle, lb: *mut isize, extent: *mut isize) -> c_int = bounds(datatype, true, lb, extent, |v| v);
    pub unsafe extern "C" fn MPI_Type_get_true_extent_c(datatype: Handle, lb: *mut i64, extent: *mut i64) -> c_int = bounds(datatype, true, lb, extent, |v| v as i64);
    pub unsafe extern "C" fn MPI_Get_count(status: *const MpiStatus, datatype: Handle, count: *mut c_int) -> c_int = count_call(status, datatype, false, count, as_int);
    pub unsafe extern "C" fn MPI_Get_count_c(status: *const MpiStatus, datatype: Handle, count: *mut i64) -> c_int = count_call(status, datatype, false, count, |n| n);
    pub unsafe extern "C" fn MPI_Get_elements(status: *const MpiStatus, datatype: Handle, count: *mut c_int) -> c_int = count_call(status, datatype, true, count, as_int);
    pub unsafe extern "C" fn MPI_Get_elements_c(status: *const MpiStatus, datatype: Handle, count: *mut i64) -> c_int = count_call(status, datatype, true, count, |n| n);
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut isize) -> c_int {
    with_state("MPI_Get_address", MPI_COMM_WORLD, |_| {
        // SAFETY: `address` is MPI_Get_address's out-argument (MPI 4.1 §5.1.5), null or valid for writing one
        // `MPI_Aint` for this call; `put` refuses null. `location` is never dereferenced.
        unsafe { put(address, location as isize, "address") }
    })
}

/// `MPI_Aint_add` (§5.1.5): `base + disp`, as address arithmetic.
#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
}

/// `MPI_Aint_diff` (§5.1.5): `addr1 - addr2`, as address arithmetic.
#[no_mangle]
pub extern "C" fn MPI_Aint_diff(addr1: isize, addr2: isize) -> isize {
    addr1.wrapping_sub(addr2)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(datatype: Handle, type_name: *const c_char) -> c_int {
    with_state("MPI_Type_set_name", MPI_COMM_WORLD, |st| {
        // SAFETY: `type_name` is MPI_Type_set_name's name argument (MPI 4.1 §7.8), a NUL-terminated string readable for
        // this call, or null, which `c_name` refuses.
        let name = unsafe { crate::strings::c_name(type_name)? };
        // A predefined type may be renamed too (§7.8), for this process.
        if predefined_name(datatype).is_some() && datatype != MPI_DATATYPE_NULL {
            st.predefined_names.insert(datatype, name);
            return Ok(());
        }
        st.type_entry(datatype)?;
        if let Some(e) = st.types.get_mut(&datatype) {
            e.name = name;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(datatype: Handle, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    with_state("MPI_Type_get_name", MPI_COMM_WORLD, |st| {
        let name = match (st.types.get(&datatype), st.predefined_names.get(&datatype)) {
            (Some(e), _) => e.name.clone(),
            (None, Some(n)) => n.clone(),
            (None, None) => predefined_name(datatype).ok_or_else(|| unknown_type(datatype))?.to_string(),
        };
        // SAFETY: `type_name` has room for MPI_MAX_OBJECT_NAME characters and `resultlen` for one `int`, for this call,
        // as MPI 4.1 §7.8 requires of MPI_Type_get_name's caller: `put_name`'s `# Safety` (null is refused).
        unsafe { crate::strings::put_name(&name, type_name, resultlen) }
    })
}

// ---- attributes on datatypes (§5.1.15): `crate::attr`'s, on a datatype handle ----

#[no_mangle]
pub extern "C" fn MPI_Type_set_attr(datatype: Handle, type_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    with_state("MPI_Type_set_attr", MPI_COMM_WORLD, |st| {
        st.layout(datatype)?;
        crate::attr::set_in(st, crate::attr::On::Type, datatype, type_keyval, attribute_val)
    })
}

#[no_mangle]
pub extern "C" fn MPI_Type_delete_attr(datatype: Handle, type_keyval: c_int) -> c_int {
    with_state("MPI_Type_delete_attr", MPI_COMM_WORLD, |st| {
        st.layout(datatype)?;
        crate::attr::delete_in(st, crate::attr::On::Type, datatype, type_keyval)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(
    datatype: Handle,
    type_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    with_state("MPI_Type_get_attr", MPI_COMM_WORLD, |st| {
        st.layout(datatype)?;
        // SAFETY: `attribute_val` is the address of one writable `void *` and `flag` of one `int`, for this call (MPI
        // 4.1 §5.1.15, as §7.7.2): `get_user_attr`'s `# Safety`.
        unsafe { crate::attr::get_user_attr(st, crate::attr::On::Type, datatype, type_keyval, attribute_val, flag) }
    })
}

mod constructors;
mod decoding; // MPI_Type_get_envelope and MPI_Type_get_contents: exported by name
mod packing;
mod predefined;

pub(crate) use self::constructors::*;
pub(crate) use self::packing::*;
pub(crate) use self::predefined::{basics, elem_of};
use self::predefined::{contiguous_size_of, layout_of};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_table_is_the_match_for_every_handle_and_nothing_else() {
        let datatypes = &HANDLES.iter().find(|h| h.0 == "MPI_Datatype").unwrap().2;
        let mut contiguous = 0;
        for &(name, dt) in datatypes.iter() {
            let want = contiguous_size_of(dt);
            assert_eq!(contiguous_size(dt), (want != 0).then_some(want), "{name}");
            contiguous += usize::from(want != 0);
        }
        assert!(contiguous > 60, "only {contiguous} contiguous predefined types");
        // Handles outside the table's range, or in it but not a datatype.
        for dt in [0, 0x1ff, 0x204, 0x2ff, 0x300, FIRST_HANDLE, usize::MAX, MPI_DATATYPE_NULL, MPI_DOUBLE_INT] {
            assert_eq!(contiguous_size(dt), None, "{dt:#x}");
        }
    }

    #[test]
    fn predefined_pair_types_are_c_structs() {
        let si = layout_of(MPI_SHORT_INT).unwrap();
        assert_eq!((si.size, si.extent()), (6, 8));
        assert_eq!(si.blocks().collect::<Vec<_>>(), vec![(0, 2), (4, 4)]);
        assert_eq!(layout_of(MPI_2INT).unwrap().basics, 2);
        let di = layout_of(MPI_LONG_DOUBLE_INT).unwrap();
        assert_eq!((di.size, di.extent()), (20, 32));
    }
}
