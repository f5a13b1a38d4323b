//! Groups (MPI 4.1 §7.3) and the communicator calls built on them:
//! `MPI_Comm_create`, `MPI_Comm_create_group`, `MPI_Comm_compare`,
//! `MPI_Comm_split_type` (§7.4).
//!
//! A group is the `MPI_COMM_WORLD` ranks of its members, in group order.

use std::ffi::c_int;

use mpi::group::{Group, GroupRelation};
use mpi::{Color, Communicator};

use crate::abi::*;
use crate::*;

impl State {
    /// Group `g`.
    pub(crate) fn group(&self, g: Handle) -> R<&Group> {
        static EMPTY: Group = Group::EMPTY;
        if g == MPI_GROUP_EMPTY {
            return Ok(&EMPTY);
        }
        self.groups.get(&g).ok_or_else(|| {
            let what = if g == MPI_GROUP_NULL { "MPI_GROUP_NULL".to_string() } else { format!("{g:#x}") };
            Fail::new(MPI_ERR_GROUP, format!("{what} is not a valid group (never created, or freed)"))
        })
    }

    /// Register a group and write its handle (`MPI_GROUP_EMPTY` when empty).
    ///
    /// # Safety
    /// `out` is null or writable.
    pub(crate) unsafe fn new_group(&mut self, g: Group, out: *mut Handle) -> R<()> {
        let h = if g.is_empty() {
            MPI_GROUP_EMPTY
        } else {
            let h = self.new_handle();
            self.groups.insert(h, g);
            h
        };
        // SAFETY: `out` is null or valid for writing one group handle for this call (`new_group`'s `# Safety`: each
        // caller hands over its MPI call's out-argument); `put` refuses null.
        unsafe { put(out, h, "newgroup") }
    }
}

/// The C value of a relation (`MPI_Group_compare`).
fn relation(r: GroupRelation) -> c_int {
    match r {
        GroupRelation::Identical => MPI_IDENT,
        GroupRelation::Similar => MPI_SIMILAR,
        GroupRelation::Unequal => MPI_UNEQUAL,
    }
}

/// `n` values at `p`.
///
/// # Safety
/// `p` holds `n` values.
unsafe fn ints<'a, T>(p: *const T, n: c_int, what: &str) -> R<&'a [T]> {
    // SAFETY: `p` holds `n` values of `T`, readable for this call (`ints`' `# Safety`), which meets `array_arg`'s
    // requirement; it refuses a negative `n` and, when `n` > 0, a null `p`.
    unsafe { array_arg(p, n, what) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(comm: Handle, group: *mut Handle) -> c_int {
    with_state("MPI_Comm_group", comm, |st| {
        let g = Group::of(&st.comm(comm)?.comm);
        // SAFETY: `group` is MPI_Comm_group's out-argument (MPI 4.1 §7.3.2), null or valid for writing one group handle
        // for this call; `new_group` refuses null.
        unsafe { st.new_group(g, group) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(group: Handle, size: *mut c_int) -> c_int {
    with_state("MPI_Group_size", MPI_COMM_WORLD, |st| {
        let n = st.group(group)?.size();
        // SAFETY: `size` is MPI_Group_size's out-argument (MPI 4.1 §7.3.1), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(size, n, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(group: Handle, rank: *mut c_int) -> c_int {
    with_state("MPI_Group_rank", MPI_COMM_WORLD, |st| {
        let me = st.comm(MPI_COMM_WORLD)?.comm.rank() as u32;
        let r = st.group(group)?.rank_of(me).unwrap_or(MPI_UNDEFINED);
        // SAFETY: `rank` is MPI_Group_rank's out-argument (MPI 4.1 §7.3.1), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(rank, r, "rank") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(group: *mut Handle) -> c_int {
    with_state("MPI_Group_free", MPI_COMM_WORLD, |st| {
        // SAFETY: `group` is MPI_Group_free's in/out handle argument (MPI 4.1 §7.3.3), null or readable for one handle
        // for this call; `read_arg` refuses null.
        let g = unsafe { read_arg(group, "group")? };
        // Freeing MPI_GROUP_EMPTY (which group calls hand out) is allowed.
        if g != MPI_GROUP_EMPTY {
            st.group(g)?;
            st.groups.remove(&g);
            st.session_groups.remove(&g);
        }
        // SAFETY: `group` was read above, so it is not null; the standard makes it writable
        // (§7.3.3).
        unsafe { group.write(MPI_GROUP_NULL) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(group1: Handle, group2: Handle, result: *mut c_int) -> c_int {
    with_state("MPI_Group_compare", MPI_COMM_WORLD, |st| {
        let r = relation(st.group(group1)?.compare(st.group(group2)?));
        // SAFETY: `result` is MPI_Group_compare's out-argument (MPI 4.1 §7.3.1), null or valid for writing one `int`
        // for this call; `put` refuses null.
        unsafe { put(result, r, "result") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    group1: Handle,
    n: c_int,
    ranks1: *const c_int,
    group2: Handle,
    ranks2: *mut c_int,
) -> c_int {
    with_state("MPI_Group_translate_ranks", MPI_COMM_WORLD, |st| {
        // SAFETY: `ranks1` holds `n` ranks, readable for this call, as MPI 4.1 §7.3.1 requires of
        // MPI_Group_translate_ranks' caller: `ints`' requirement (it refuses a negative `n` and a null array).
        let r1 = unsafe { ints(ranks1, n, "ranks1")? };
        let out = st.group(group1)?.translate(r1, st.group(group2)?)?;
        if !out.is_empty() {
            if ranks2.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "ranks2 is a null pointer"));
            }
            for (i, r) in out.into_iter().enumerate() {
                // SAFETY: `ranks2` is not null (checked above) and has room for `n` ints (§7.3.1);
                // `out` holds `n` (one per rank of `ranks1`).
                unsafe { ranks2.add(i).write(r.unwrap_or(MPI_UNDEFINED)) };
            }
        }
        Ok(())
    })
}

/// Register the group `make` builds from groups `g1` and `g2`
/// (`MPI_Group_union`, ...: §7.3.2).
///
/// # Safety
/// `newgroup` is null or writable.
unsafe fn set_op(
    call: &str,
    g1: Handle,
    g2: Handle,
    newgroup: *mut Handle,
    make: fn(&Group, &Group) -> Group,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let v = make(st.group(g1)?, st.group(g2)?);
        // SAFETY: `newgroup` is null or valid for writing one group handle for this call (`set_op`'s `# Safety`, from
        // the caller's out-argument, MPI 4.1 §7.3.2); `new_group` refuses null.
        unsafe { st.new_group(v, newgroup) }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Group_union(group1: Handle, group2: Handle, newgroup: *mut Handle) -> c_int = set_op(group1, group2, newgroup, Group::union);
    pub unsafe extern "C" fn MPI_Group_intersection(group1: Handle, group2: Handle, newgroup: *mut Handle) -> c_int = set_op(group1, group2, newgroup, Group::intersection);
    pub unsafe extern "C" fn MPI_Group_difference(group1: Handle, group2: Handle, newgroup: *mut Handle) -> c_int = set_op(group1, group2, newgroup, Group::difference);
    pub unsafe extern "C" fn MPI_Group_incl(group: Handle, n: c_int, ranks: *const c_int, newgroup: *mut Handle) -> c_int = subset(group, n, ranks, false, true, newgroup);
    pub unsafe extern "C" fn MPI_Group_excl(group: Handle, n: c_int, ranks: *const c_int, newgroup: *mut Handle) -> c_int = subset(group, n, ranks, false, false, newgroup);
    pub unsafe extern "C" fn MPI_Group_range_incl(group: Handle, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Handle) -> c_int = subset(group, n, ranges.cast(), true, true, newgroup);
    pub unsafe extern "C" fn MPI_Group_range_excl(group: Handle, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Handle) -> c_int = subset(group, n, ranges.cast(), true, false, newgroup);
}

/// `MPI_Group_incl`/`_excl` (`incl`) and their range forms (`ranges`):
/// the group of the ranks named, or of the rest.
///
/// # Safety
/// `ranks` holds `n` ranks, or `n` triplets when `ranges`; `newgroup` is
/// null or writable.
unsafe fn subset(
    call: &str,
    group: Handle,
    n: c_int,
    ranks: *const c_int,
    ranges: bool,
    incl: bool,
    newgroup: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let g = st.group(group)?;
        let picked = if ranges {
            // SAFETY: with `ranges`, `ranks` holds `n` triplets of `int`s (`[c_int; 3]` has the alignment of `c_int`),
            // readable for this call (`subset`'s `# Safety`): `ints`' requirement.
            g.ranges(unsafe { ints(ranks.cast::<[c_int; 3]>(), n, "ranges")? })?
        } else {
            // SAFETY: without `ranges`, `ranks` holds `n` ranks, readable for this call (`subset`'s `# Safety`):
            // `ints`' requirement.
            unsafe { ints(ranks, n, "ranks")? }.to_vec()
        };
        let made = if incl { g.include(&picked) } else { g.exclude(&picked) };
        let made = made.map_err(|e| Fail::new(Fail::from(e.clone()).class, format!("{call}: {e}")))?;
        // SAFETY: `newgroup` is null or valid for writing one group handle for this call (`subset`'s `# Safety`);
        // `new_group` refuses null.
        unsafe { st.new_group(made, newgroup) }
    })
}

/// The ranks in `comm` of `group`'s members, which must all belong to it.
pub(crate) fn ranks_in(st: &State, comm: Handle, group: Handle) -> R<Vec<c_int>> {
    Ok(st.group(group)?.ranks_in(&st.comm(comm)?.comm)?)
}

/// How a communicator-making call under `MPI_THREAD_MULTIPLE` goes on.
enum Making {
    /// Made at the call, holding the library (`None`: not a member).
    Now(Option<mpi::SimpleCommunicator>),
    /// Being made: its context id comes from a leader, as an idup's.
    Later(mpi::dup::Creating),
}

/// A communicator made under `MPI_THREAD_MULTIPLE` without holding the
/// library while the other members come: `start` begins it, a wait lets
/// other threads in (`p2p::wait_request`), and the new handle, with
/// `finish` applied to it, goes to `newcomm`. Threads may then make
/// communicators from different parents, or with different tags, in
/// different orders on different processes (MPICH's threads/comm tests).
/// Every process of the job must ask for `MPI_THREAD_MULTIPLE`, or none:
/// the blocking agreement and this do not meet (docs/guide/threads.md).
///
/// # Safety
/// `newcomm` is null or writable.
unsafe fn create_multiple(
    call: &str,
    comm: Handle,
    newcomm: *mut Handle,
    start: impl FnOnce(&mut State) -> R<Making>,
    finish: impl Fn(&mut State, Handle) -> R<()>,
) -> c_int {
    let cell = std::cell::RefCell::new(None);
    let mut r = MPI_REQUEST_NULL;
    let rc = with_state(call, comm, |st| {
        if newcomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "newcomm is a null pointer"));
        }
        match start(st)? {
            Making::Now(c) => {
                let h = crate::comm_table::register(st, c, comm)?;
                finish(st, h)?;
                // SAFETY: `newcomm` is not null (checked above) and valid for writing one handle for this call
                // (`create_multiple`'s `# Safety`).
                unsafe { put(newcomm, h, "newcomm") }
            }
            Making::Later(c) => {
                let (op, made) = c.into_parts();
                *cell.borrow_mut() = Some(made);
                // SAFETY: `r` is a local.
                unsafe { crate::new_request(st, Req::Op(op), &mut r) }
            }
        }
    });
    if rc != MPI_SUCCESS || cell.borrow().is_none() {
        return rc;
    }
    // SAFETY: `r` is a local.
    let rc = unsafe { crate::p2p::wait_request(call, comm, &mut r) };
    if rc != MPI_SUCCESS {
        return rc;
    }
    with_state(call, comm, |st| {
        let made = cell.borrow_mut().take().and_then(|m| m.take());
        let c = made.unwrap_or_else(|| {
            Err(mpi::MpiError::Internal { what: "the new communicator's operation completed without it".into() })
        })?;
        let h = crate::comm_table::register(st, c, comm)?;
        finish(st, h)?;
        // SAFETY: `newcomm` is not null (checked in the first locked section; it is the same pointer) and valid for
        // writing one handle for this call (`create_multiple`'s `# Safety`).
        unsafe { put(newcomm, h, "newcomm") }
    })
}

/// `MPI_Comm_split` under `MPI_THREAD_MULTIPLE`: the gather of colors and
/// keys, then the making of the caller's part, each waited for without
/// holding the library (`mpi::dup`), so that threads splitting different
/// communicators in different orders on different processes do not wait
/// for each other (issue 47, break 8). An intercommunicator's split stays
/// whole, as its `MPI_Comm_create` does.
///
/// # Safety
/// `newcomm` is null or writable.
pub(crate) unsafe fn split_multiple(comm: Handle, color: mpi::Color, key: c_int, newcomm: *mut Handle) -> c_int {
    let call = "MPI_Comm_split";
    let votes = std::cell::RefCell::new(None);
    let mut r = MPI_REQUEST_NULL;
    let rc = with_state(call, comm, |st| {
        if newcomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "newcomm is a null pointer"));
        }
        let c = &st.comm(comm)?.comm;
        if c.is_inter() {
            let made = c.split_by_color_with_key(color, key)?;
            let h = crate::comm_table::register(st, made, comm)?;
            // SAFETY: `newcomm` is not null (checked above) and valid for writing one handle for this call
            // (`split_multiple`'s `# Safety`).
            return unsafe { put(newcomm, h, "newcomm") };
        }
        let (op, cell) = c.immediate_split(color, key)?.into_parts();
        *votes.borrow_mut() = Some(cell);
        // SAFETY: `r` is a local.
        unsafe { crate::new_request(st, Req::Op(op), &mut r) }
    });
    if rc != MPI_SUCCESS || votes.borrow().is_none() {
        return rc;
    }
    // SAFETY: `r` is a local.
    let rc = unsafe { crate::p2p::wait_request(call, comm, &mut r) };
    if rc != MPI_SUCCESS {
        return rc;
    }
    let cell = votes.borrow_mut().take();
    let start = |_: &mut State| match cell {
        Some(cell) => Ok(Making::Later(cell.create()?)),
        None => Ok(Making::Now(None)),
    };
    // SAFETY: `newcomm` is null or valid for writing one handle for this call (`split_multiple`'s `# Safety`), which is
    // `create_multiple`'s requirement.
    unsafe { create_multiple(call, comm, newcomm, start, |_, _| Ok(())) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(comm: Handle, group: Handle, newcomm: *mut Handle) -> c_int {
    if crate::threads::multiple() {
        let start = |st: &mut State| {
            let ranks = ranks_in(st, comm, group)?;
            let c = &st.comm(comm)?.comm;
            Ok(if c.is_inter() {
                // An intercommunicator's stays whole (docs/guide/threads.md).
                Making::Now(c.create(&ranks)?)
            } else {
                Making::Later(c.immediate_create(&ranks)?)
            })
        };
        // SAFETY: `newcomm` is MPI_Comm_create's out-argument (MPI 4.1 §7.4.2), null or valid for writing one handle
        // for this call: `create_multiple`'s `# Safety`.
        return unsafe { create_multiple("MPI_Comm_create", comm, newcomm, start, |_, _| Ok(())) };
    }
    with_state("MPI_Comm_create", comm, |st| {
        let ranks = ranks_in(st, comm, group)?;
        let c = st.comm(comm)?.comm.create(&ranks)?;
        let h = crate::comm_table::register(st, c, comm)?;
        // SAFETY: `newcomm` is MPI_Comm_create's out-argument (MPI 4.1 §7.4.2), null or valid for writing one handle
        // for this call; `put` refuses null.
        unsafe { put(newcomm, h, "newcomm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_group(comm: Handle, group: Handle, tag: c_int, newcomm: *mut Handle) -> c_int {
    if crate::threads::multiple() {
        let start = |st: &mut State| {
            let ranks = ranks_in(st, comm, group)?;
            let c = &st.comm(comm)?.comm;
            Ok(if c.is_inter() {
                // Refused there, as without threads.
                Making::Now(c.create_from_ranks(&ranks, tag)?)
            } else {
                match c.immediate_create_from_ranks(&ranks, tag)? {
                    Some(x) => Making::Later(x),
                    None => Making::Now(None),
                }
            })
        };
        // SAFETY: `newcomm` is MPI_Comm_create_group's out-argument (MPI 4.1 §7.4.2), null or valid for writing one
        // handle for this call: `create_multiple`'s `# Safety`.
        return unsafe { create_multiple("MPI_Comm_create_group", comm, newcomm, start, |_, _| Ok(())) };
    }
    with_state("MPI_Comm_create_group", comm, |st| {
        let ranks = ranks_in(st, comm, group)?;
        let c = st.comm(comm)?.comm.create_from_ranks(&ranks, tag)?;
        let h = crate::comm_table::register(st, c, comm)?;
        // SAFETY: `newcomm` is MPI_Comm_create_group's out-argument (MPI 4.1 §7.4.2), null or valid for writing one
        // handle for this call; `put` refuses null.
        unsafe { put(newcomm, h, "newcomm") }
    })
}

/// The checks of the `*_from_group(s)` calls' `stringtag`, `info` and
/// `errhandler` (MPI 4.0), and the tag the string stands for
/// (`mpi::group::string_tag`).
///
/// # Safety
/// `stringtag` is null or a NUL-terminated string.
pub(crate) unsafe fn from_group_args(
    st: &State,
    stringtag: *const std::ffi::c_char,
    info: Handle,
    errhandler: Handle,
) -> R<c_int> {
    if stringtag.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "stringtag is a null pointer"));
    }
    // SAFETY: `stringtag` is not null (checked above) and is a NUL-terminated string, readable for this call
    // (`from_group_args`' `# Safety`); the bytes are used before the call returns.
    let text = unsafe { std::ffi::CStr::from_ptr(stringtag) }.to_bytes();
    crate::errh::check(errhandler, crate::process::Kind::Comm)?;
    st.info_or_null(info)?;
    Ok(mpi::group::string_tag(text))
}

/// `MPI_Comm_create_from_group` (§7.4.2, MPI 4.0): a communicator of a
/// group's members, made by the members alone, told apart from others
/// being made at the same time by `stringtag`. Groups here name
/// `MPI_COMM_WORLD`'s processes, so the members agree through it, as
/// `MPI_Comm_create_group` does, with the tag derived from the string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_from_group(
    group: Handle,
    stringtag: *const std::ffi::c_char,
    info: Handle,
    errhandler: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let call = "MPI_Comm_create_from_group";
    let finish = |st: &mut State, h: Handle| {
        let session = st.session_groups.get(&group).copied();
        if let Some(e) = st.comms.get_mut(&h) {
            e.errhandler = errhandler;
            e.session = session;
        }
        Ok(())
    };
    if crate::threads::multiple() {
        let start = |st: &mut State| {
            // SAFETY: `stringtag` is MPI_Comm_create_from_group's string argument (MPI 4.1 §7.4.2), null or
            // NUL-terminated and readable for the call, and `start` runs within it: `from_group_args`' `# Safety`.
            let tag = unsafe { from_group_args(st, stringtag, info, errhandler)? };
            let ranks = ranks_in(st, MPI_COMM_WORLD, group)?;
            Ok(match st.comm(MPI_COMM_WORLD)?.comm.immediate_create_from_ranks(&ranks, tag)? {
                Some(x) => Making::Later(x),
                None => Making::Now(None),
            })
        };
        // SAFETY: `newcomm` is MPI_Comm_create_from_group's out-argument (MPI 4.1 §7.4.2), null or valid for writing
        // one handle for this call: `create_multiple`'s `# Safety`.
        return unsafe { create_multiple(call, MPI_COMM_WORLD, newcomm, start, finish) };
    }
    with_state(call, MPI_COMM_WORLD, |st| {
        // SAFETY: `stringtag` is MPI_Comm_create_from_group's string argument (MPI 4.1 §7.4.2), null or NUL-terminated
        // and readable for this call: `from_group_args`' `# Safety`.
        let tag = unsafe { from_group_args(st, stringtag, info, errhandler)? };
        let ranks = ranks_in(st, MPI_COMM_WORLD, group)?;
        let c = st.comm(MPI_COMM_WORLD)?.comm.create_from_ranks(&ranks, tag)?;
        let h = crate::comm_table::register(st, c, MPI_COMM_WORLD)?;
        finish(st, h)?;
        // SAFETY: `newcomm` is MPI_Comm_create_from_group's out-argument (MPI 4.1 §7.4.2), null or valid for writing
        // one handle for this call; `put` refuses null.
        unsafe { put(newcomm, h, "newcomm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(comm1: Handle, comm2: Handle, result: *mut c_int) -> c_int {
    with_state("MPI_Comm_compare", comm1, |st| {
        let r = match st.comm(comm1)?.comm.compare(&st.comm(comm2)?.comm) {
            mpi::group::CommRelation::Identical => MPI_IDENT,
            mpi::group::CommRelation::Congruent => MPI_CONGRUENT,
            mpi::group::CommRelation::Similar => MPI_SIMILAR,
            mpi::group::CommRelation::Unequal => MPI_UNEQUAL,
        };
        // SAFETY: `result` is MPI_Comm_compare's out-argument (MPI 4.1 §7.4.1), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(result, r, "result") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: Handle,
    split_type: c_int,
    key: c_int,
    info: Handle,
    newcomm: *mut Handle,
) -> c_int {
    with_state("MPI_Comm_split_type", comm, |st| {
        let kind = mpi::host::SplitType::from_code(split_type)?;
        let c = st.comm(comm)?.comm.split_type(kind, key, &st.info_or_null(info)?)?;
        let h = crate::comm_table::register(st, c, comm)?;
        // SAFETY: `newcomm` is MPI_Comm_split_type's out-argument (MPI 4.1 §7.4.2), null or valid for writing one
        // handle for this call; `put` refuses null.
        unsafe { put(newcomm, h, "newcomm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: Handle, flag: *mut c_int) -> c_int {
    with_state("MPI_Comm_test_inter", comm, |st| {
        let inter = st.comm(comm)?.comm.is_inter();
        // SAFETY: `flag` is MPI_Comm_test_inter's out-argument (MPI 4.1 §7.6.1), null or valid for writing one `int`
        // for this call; `put` refuses null.
        unsafe { put(flag, c_int::from(inter), "flag") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(comm: Handle, color: c_int, key: c_int, newcomm: *mut Handle) -> c_int {
    // A negative color is refused after the split, in which this rank
    // takes part as MPI_UNDEFINED (`mpi::Color`).
    let color = if color == MPI_UNDEFINED { Color::Undefined } else { Color::With(color) };
    if crate::threads::multiple() {
        // SAFETY: `newcomm` is MPI_Comm_split's out-argument (MPI 4.1 §7.4.2), null or valid for writing one handle for
        // this call: `split_multiple`'s `# Safety`.
        return unsafe { crate::group::split_multiple(comm, color, key, newcomm) };
    }
    with_state("MPI_Comm_split", comm, |st| {
        let c = st.comm(comm)?.comm.split_by_color_with_key(color, key)?;
        let h = crate::comm_table::register(st, c, comm)?;
        // SAFETY: `newcomm` is MPI_Comm_split's out-argument (MPI 4.1 §7.4.2), null or valid for writing one handle for
        // this call; `put` refuses null.
        unsafe { put(newcomm, h, "newcomm") }
    })
}
