//! User attributes on communicators (MPI 4.1 §7.7.2): keyvals with copy
//! and delete callbacks, run on `MPI_Comm_dup`, `MPI_Comm_set_attr` over
//! an existing value, `MPI_Comm_delete_attr` and `MPI_Comm_free`.
//!
//! The callbacks run after the call has done its part and released the
//! library's lock ([`Deferred`], run by [`with_state`]), so that they may
//! call MPI themselves — mpi4py's delete callbacks free the communicators
//! they cached. A communicator being freed stays valid until its delete
//! callbacks have run.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

use crate::abi::*;
use crate::*;

/// Keyvals the library hands out start here, above the predefined ones.
pub(crate) const FIRST_KEYVAL: c_int = 1000;

/// `MPI_Comm_copy_attr_function`.
type CopyFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function`.
type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// `MPI_COMM_DUP_FN`: the ABI's value for "copy the value as it is".
const DUP_FN: usize = 1;

/// A keyval's callbacks (null: none) and extra state; which keyvals exist,
/// and which are freed, is `mpi::attr::Keyvals`'s.
pub(crate) struct Keyval {
    copy: usize,
    delete: usize,
    extra: *mut c_void,
}

/// The values set on one object (a communicator, window or datatype).
pub(crate) type Values = mpi::attr::Attrs<*mut c_void>;

/// Work a call leaves for after its lock is released: user callbacks, and
/// what must wait for them.
pub(crate) enum Deferred {
    /// Run a delete callback on a value set on `comm` (a communicator,
    /// datatype or window). If it fails and `keep`, the value is set again
    /// (§7.7.2: a failed `MPI_Comm_delete_attr` leaves the attribute, and
    /// a failed `MPI_Comm_set_attr` the old value).
    Delete { comm: Handle, k: c_int, v: *mut c_void, f: DeleteFn, extra: *mut c_void, keep: bool },
    /// Run a copy callback on `from`'s value, setting the copy on `to`
    /// (a communicator, or a datatype when `on_type`). If it fails, the
    /// duplicate is freed and the program's handle `out` becomes null
    /// (the call fails, with no new object).
    Copy {
        from: Handle,
        to: Handle,
        k: c_int,
        v: *mut c_void,
        f: CopyFn,
        extra: *mut c_void,
        on_type: bool,
        out: *mut Handle,
    },
    /// A change to the state once the callbacks before it have run (the
    /// communicator `MPI_Comm_free` frees, its delete callbacks done:
    /// `crate::comm_table::free`).
    Then(Box<dyn FnOnce(&mut State)>),
    /// A program's callback that needs nothing of the state but to run
    /// without the lock (a generalized request's, `crate::greq`), and its
    /// error.
    Callback(Box<dyn FnOnce() -> R<()>>),
    /// `DN_COMPUTE=measured` or `MPI_THREAD_MULTIPLE`: a standing mark
    /// that every call ends with (`finish_call` runs it after the others
    /// and keeps it): the end of a computed burst, the news for threads
    /// waiting inside the library (`crate::threads::ended`).
    CallEnds,
}

impl Deferred {
    /// Run it, without the lock (`relock` takes it for the parts that
    /// change the library's state).
    pub(crate) fn run(self, relock: impl Fn(&mut dyn FnMut(&mut State))) -> R<()> {
        match self {
            Deferred::Delete { comm, k, v, f, extra, keep } => {
                // SAFETY: `f` is the delete callback the program registered for keyval `k` (MPI_Comm_create_keyval, or
                // the window or datatype form), of the MPI_*_delete_attr_function type MPI 4.1 §7.7 gives it (the same
                // C signature for each object kind, its handle first); it is called with that signature: the object's
                // handle, the keyval, the attribute value and the keyval's `extra_state`.
                let rc = unsafe { f(comm, k, v, extra) };
                if rc != MPI_SUCCESS {
                    if keep {
                        relock(&mut |st| st.restore_attr(comm, k, v));
                    }
                    return Err(Fail::new(rc, format!("the delete callback of keyval {k} returned {rc}")));
                }
            }
            Deferred::Copy { from, to, k, v, f, extra, on_type, out: handle } => {
                let (mut out, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
                let out_p: *mut *mut c_void = &mut out;
                // SAFETY: the program registered `f` as an
                // `MPI_Comm_copy_attr_function`; the arguments are the
                // standard's, `out_p` and `flag` valid for the call.
                let rc = unsafe { f(from, k, extra, v, out_p.cast(), &mut flag) };
                if rc != MPI_SUCCESS {
                    relock(&mut |st| {
                        if on_type {
                            st.type_attrs.remove(&to);
                            st.types.remove(&to);
                        } else {
                            st.comms.remove(&to);
                            st.idups.retain(|&(_, c)| c != to);
                        }
                    });
                    // SAFETY: `handle` is the program's output argument of
                    // the call that runs this (it ends after its deferred
                    // work), written by that call already.
                    unsafe { handle.write(if on_type { MPI_DATATYPE_NULL } else { MPI_COMM_NULL }) };
                    return Err(Fail::new(rc, format!("the copy callback of keyval {k} returned {rc}")));
                }
                if flag != 0 {
                    relock(&mut |st| {
                        if on_type {
                            if st.types.contains_key(&to) {
                                st.type_attrs.entry(to).or_default().set(k, out);
                            }
                        } else if let Some(e) = st.comms.get_mut(&to) {
                            e.attrs.set(k, out);
                        }
                    });
                }
            }
            Deferred::CallEnds => {}
            Deferred::Callback(c) => c()?,
            Deferred::Then(f) => {
                let mut f = Some(f);
                relock(&mut |st| {
                    if let Some(f) = f.take() {
                        f(st)
                    }
                })
            }
        }
        Ok(())
    }
}

impl State {
    pub(crate) fn keyval_of(&self, k: c_int) -> R<&Keyval> {
        Ok(self.keyvals.get(k).map_err(MpiError::from)?)
    }

    /// `k`'s callbacks, to set a value under it: refused once freed.
    pub(crate) fn settable_keyval(&self, k: c_int) -> R<&Keyval> {
        Ok(self.keyvals.settable(k).map_err(MpiError::from)?)
    }

    /// Set `k`'s value `v` on `obj` again, after its delete callback
    /// failed: the object is a communicator, a window or a datatype.
    fn restore_attr(&mut self, obj: Handle, k: c_int, v: *mut c_void) {
        let attrs = if let Some(e) = self.comms.get_mut(&obj) {
            &mut e.attrs
        } else if let Some(w) = self.wins.get_mut(&obj) {
            &mut w.attrs
        } else {
            self.type_attrs.entry(obj).or_default()
        };
        attrs.set(k, v);
    }

    /// Forget the freed keyvals no attribute uses any more: their records
    /// are kept only for the delete callbacks of values still set (§7.7.2),
    /// so a program creating and freeing keyvals in a loop holds none.
    pub(crate) fn sweep_keyvals(&mut self) {
        let (comms, types, wins) = (&self.comms, &self.type_attrs, &self.wins);
        self.keyvals.sweep(|k| {
            comms.values().any(|e| e.attrs.uses(k))
                || types.values().any(|a| a.uses(k))
                || wins.values().any(|w| w.attrs.uses(k))
        });
    }
}

/// Have `k`'s delete callback run on `v`, set on `comm`, once the lock is
/// released, as the object is freed: a failure is reported, and the value
/// is gone all the same.
pub(crate) fn delete_value(st: &mut State, comm: Handle, k: c_int, v: *mut c_void) -> R<()> {
    delete_or_keep(st, comm, k, v, false)
}

/// Have `k`'s delete callback run on `v`, set on `obj`, once the lock is
/// released, for `MPI_*_delete_attr` or `MPI_*_set_attr` over an old
/// value: if the callback fails, `v` is set on `obj` again (§7.7.2).
pub(crate) fn delete_attr(st: &mut State, obj: Handle, k: c_int, v: *mut c_void) -> R<()> {
    delete_or_keep(st, obj, k, v, true)
}

fn delete_or_keep(st: &mut State, comm: Handle, k: c_int, v: *mut c_void, keep: bool) -> R<()> {
    let kv = st.keyval_of(k)?;
    if kv.delete != 0 {
        // SAFETY: `kv.delete` is not 0 (checked above) and is the delete callback the program passed when it created
        // keyval `k`, a function of the MPI_*_delete_attr_function type MPI 4.1 §7.7 gives that argument (communicator,
        // window and datatype forms share the signature); a function pointer and a `usize` have the same size here.
        let f: DeleteFn = unsafe { std::mem::transmute::<usize, DeleteFn>(kv.delete) };
        let extra = kv.extra;
        st.deferred.push(Deferred::Delete { comm, k, v, f, extra, keep });
    }
    Ok(())
}

/// Copy `from`'s attributes to its duplicate `to`, through their copy
/// callbacks (§7.4.2, `MPI_Comm_dup`), which run once the lock is released.
pub(crate) fn copy_all(st: &mut State, from: Handle, to: Handle, out: *mut Handle) -> R<()> {
    let attrs = st.comm(from)?.attrs.clone();
    let copied = copies(st, attrs, from, to, false, out)?;
    if let Some(e) = st.comms.get_mut(&to) {
        e.attrs = copied;
    }
    Ok(())
}

/// The attributes `attrs` of `from` that its duplicate `to` gets at once
/// (`MPI_*_DUP_FN`); the copy callbacks of the others are deferred.
fn copies(st: &mut State, attrs: Values, from: Handle, to: Handle, on_type: bool, out: *mut Handle) -> R<Values> {
    let mut copied = Values::default();
    for (k, &v) in attrs.iter() {
        let kv = st.keyval_of(k)?;
        match kv.copy {
            0 => {}
            DUP_FN => {
                copied.set(k, v);
            }
            f => {
                // SAFETY: `f` is neither 0 nor MPI_*_DUP_FN (matched above) and is the copy callback the program passed
                // when it created keyval `k`, a function of the MPI_*_copy_attr_function type MPI 4.1 §7.7 gives that
                // argument; a function pointer and a `usize` have the same size here.
                let f: CopyFn = unsafe { std::mem::transmute::<usize, CopyFn>(f) };
                let extra = kv.extra;
                st.deferred.push(Deferred::Copy { from, to, k, v, f, extra, on_type, out });
            }
        }
    }
    Ok(copied)
}

/// Delete every attribute of `comm` (`MPI_Comm_free`, and `MPI_Finalize`
/// on `MPI_COMM_SELF`, §11.2.2), last set first.
pub(crate) fn delete_all(st: &mut State, comm: Handle) -> R<()> {
    let attrs = st.comms.get_mut(&comm).map(|e| e.attrs.take_all()).unwrap_or_default();
    for (k, v) in attrs {
        delete_value(st, comm, k, v)?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: usize,
    comm_delete_attr_fn: usize,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    with_state("MPI_Comm_create_keyval", MPI_COMM_WORLD, |st| {
        if comm_keyval.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "comm_keyval is a null pointer"));
        }
        let kv = Keyval { copy: comm_copy_attr_fn, delete: comm_delete_attr_fn, extra: extra_state };
        let k = st.keyvals.create(kv).map_err(MpiError::from)?;
        // SAFETY: `comm_keyval` is MPI_Comm_create_keyval's out-argument (MPI 4.1 §7.7.2), not null (checked above),
        // valid for writing one `int` for this call.
        unsafe { comm_keyval.write(k) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free_keyval(comm_keyval: *mut c_int) -> c_int {
    with_state("MPI_Comm_free_keyval", MPI_COMM_WORLD, |st| {
        // SAFETY: `comm_keyval` is MPI_Comm_free_keyval's in/out argument (MPI 4.1 §7.7.2), null or readable and
        // writable for one `int` for this call; `read_arg` refuses null.
        let k = unsafe { read_arg(comm_keyval, "comm_keyval")? };
        // A keyval freed already but still in use by attributes (so still
        // extant, §7.7.2) may be freed again, as a delete callback freeing
        // its own keyval does: nothing changes. Once the last attribute
        // goes, it is gone, and a free is `MPI_ERR_KEYVAL`.
        st.keyvals.free(k, |_| true).map_err(MpiError::from)?;
        st.sweep_keyvals();
        // SAFETY: `comm_keyval` was read above, so it is not null; the standard makes it writable
        // (MPI 4.1 §7.7.2).
        unsafe { comm_keyval.write(MPI_KEYVAL_INVALID) };
        Ok(())
    })
}

/// The kinds of object attributes are set on: communicators (§7.7.2),
/// windows (§12.2.6) and datatypes (§5.1.15), with one space of keyvals.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum On {
    Comm,
    Win,
    Type,
}

impl State {
    /// The attributes set on `h`, an object of kind `on`.
    pub(crate) fn attrs_mut(&mut self, on: On, h: Handle) -> R<&mut Values> {
        Ok(match on {
            On::Comm => &mut self.comm_mut(h)?.attrs,
            On::Win => &mut self.win_mut(h)?.attrs,
            // The datatype calls check the handle (`crate::datatype`).
            On::Type => self.type_attrs.entry(h).or_default(),
        })
    }
}

/// `MPI_*_set_attr`: `v` under keyval `k` on `h`; a value already set is
/// deleted first (§7.7.2), and set again if its delete callback fails.
pub(crate) fn set_in(st: &mut State, on: On, h: Handle, k: c_int, v: *mut c_void) -> R<()> {
    if on == On::Win && (MPI_WIN_BASE..=MPI_WIN_MODEL).contains(&k) {
        return Err(Fail::new(MPI_ERR_KEYVAL, "the predefined window attributes cannot be set"));
    }
    st.attrs_mut(on, h)?;
    st.settable_keyval(k)?;
    if let Some(old) = st.attrs_mut(on, h)?.set(k, v) {
        delete_attr(st, h, k, old)?;
    }
    Ok(())
}

/// `MPI_*_delete_attr`: the value under keyval `k` on `h` goes, through
/// the keyval's delete callback (§7.7.2: kept if it fails).
pub(crate) fn delete_in(st: &mut State, on: On, h: Handle, k: c_int) -> R<()> {
    st.attrs_mut(on, h)?;
    st.keyval_of(k)?;
    let v = st.attrs_mut(on, h)?.remove(k);
    let v = v.ok_or(mpi::KeyvalError::NotSet { keyval: k }).map_err(MpiError::from)?;
    delete_attr(st, h, k, v)?;
    st.sweep_keyvals();
    Ok(())
}

/// [`set_in`] as a call on a communicator or window.
fn set_attr(call: &str, on: On, h: Handle, k: c_int, v: *mut c_void) -> c_int {
    with_state(call, h, |st| set_in(st, on, h, k, v))
}

/// [`delete_in`] as a call on a communicator or window.
fn delete_attr_call(call: &str, on: On, h: Handle, k: c_int) -> c_int {
    with_state(call, h, |st| delete_in(st, on, h, k))
}

/// `MPI_*_get_attr` of user keyval `k` on `h`: its value, if set, to
/// `attribute_val`, and whether it is to `flag`.
///
/// # Safety
/// `attribute_val` is null or the address of one writable `void *`, and
/// `flag` null or writable, for the call.
pub(crate) unsafe fn get_user_attr(
    st: &mut State,
    on: On,
    h: Handle,
    k: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> R<()> {
    st.attrs_mut(on, h)?;
    st.keyval_of(k)?;
    let v = st.attrs_mut(on, h)?.get(k).copied();
    // SAFETY: `attribute_val`, declared `void *` but defined by MPI 4.1 §7.7.2 as the address of one writable
    // `void *`, and `flag` are null or writable for this call (`get_user_attr`'s `# Safety`); `put` refuses null.
    unsafe {
        if let Some(v) = v {
            put(attribute_val.cast::<*mut c_void>(), v, "attribute_val")?;
        }
        put(flag, v.is_some() as c_int, "flag")
    }
}

forward! {
    pub extern "C" fn MPI_Comm_set_attr(comm: Handle, comm_keyval: c_int, attribute_val: *mut c_void) -> c_int = set_attr(On::Comm, comm, comm_keyval, attribute_val);
    pub extern "C" fn MPI_Win_set_attr(win: Handle, win_keyval: c_int, attribute_val: *mut c_void) -> c_int = set_attr(On::Win, win, win_keyval, attribute_val);
    pub extern "C" fn MPI_Comm_delete_attr(comm: Handle, comm_keyval: c_int) -> c_int = delete_attr_call(On::Comm, comm, comm_keyval);
    pub extern "C" fn MPI_Win_delete_attr(win: Handle, win_keyval: c_int) -> c_int = delete_attr_call(On::Win, win, win_keyval);
}

// ---- the MPI-1 names the 5.0 ABI keeps (deprecated since MPI 2.0, §19.3) ----

/// `MPI_Keyval_create`: `MPI_Comm_create_keyval` under its MPI-1 name (the
/// callbacks have the same signatures).
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy_fn: usize,
    delete_fn: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the same arguments as the MPI-2 form's.
    unsafe { MPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state) }
}

/// `MPI_Keyval_free`: `MPI_Comm_free_keyval`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    // SAFETY: the same arguments as the MPI-2 form's.
    unsafe { MPI_Comm_free_keyval(keyval) }
}

/// `MPI_Attr_put`: `MPI_Comm_set_attr`.
#[no_mangle]
pub extern "C" fn MPI_Attr_put(comm: Handle, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    MPI_Comm_set_attr(comm, keyval, attribute_val)
}

/// `MPI_Attr_get`: `MPI_Comm_get_attr`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the same arguments as the MPI-2 form's.
    unsafe { MPI_Comm_get_attr(comm, keyval, attribute_val, flag) }
}

/// `MPI_Attr_delete`: `MPI_Comm_delete_attr`.
#[no_mangle]
pub extern "C" fn MPI_Attr_delete(comm: Handle, keyval: c_int) -> c_int {
    MPI_Comm_delete_attr(comm, keyval)
}

// ---- attributes on datatypes (§5.1.15) ----------------------------------------

/// Copy datatype `from`'s attributes to its duplicate `to` (`MPI_Type_dup`).
pub(crate) fn copy_type_attrs(st: &mut State, from: Handle, to: Handle, out: *mut Handle) -> R<()> {
    let attrs = st.type_attrs.get(&from).cloned().unwrap_or_default();
    let copied = copies(st, attrs, from, to, true, out)?;
    if !copied.is_empty() {
        st.type_attrs.insert(to, copied);
    }
    Ok(())
}

/// Delete every attribute of datatype `dt` (`MPI_Type_free`), last set first.
pub(crate) fn delete_type_attrs(st: &mut State, dt: Handle) -> R<()> {
    for (k, v) in st.type_attrs.remove(&dt).unwrap_or_default().take_all() {
        delete_value(st, dt, k, v)?;
    }
    Ok(())
}

/// A datatype keyval is a keyval like any other here: one space of
/// keyvals, the callbacks' types differing only in the handle's C type.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    type_copy_attr_fn: usize,
    type_delete_attr_fn: usize,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the same contract as `MPI_Comm_create_keyval`'s.
    unsafe { MPI_Comm_create_keyval(type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int {
    // SAFETY: the same contract as `MPI_Comm_free_keyval`'s.
    unsafe { MPI_Comm_free_keyval(type_keyval) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: Handle,
    comm_keyval: c_int,
    attribute_val: *mut std::ffi::c_void,
    flag: *mut c_int,
) -> c_int {
    with_state("MPI_Comm_get_attr", comm, |st| {
        st.comm(comm)?;
        let a = &crate::process::process().attrs;
        a.universe_size.store(c_int::try_from(st.universe.universe_size()).unwrap_or(c_int::MAX), Ordering::Relaxed);
        let appnum = st.universe.appnum();
        // Simulated time is one clock for every rank.
        a.wtime_is_global.store(st.universe.is_simulated() as c_int, Ordering::Relaxed);
        a.lastusedcode.store(crate::errh::last_used(), Ordering::Relaxed);
        let v: &'static std::sync::atomic::AtomicI32 = match comm_keyval {
            MPI_TAG_UB => &a.tag_ub,
            MPI_HOST => &a.host,
            MPI_IO => &a.io,
            MPI_WTIME_IS_GLOBAL => &a.wtime_is_global,
            MPI_UNIVERSE_SIZE => &a.universe_size,
            // The command's index in a spawned process; 0, the one
            // command dnrun runs, in the others (as hydra has it, §11.10.3).
            MPI_APPNUM => {
                a.appnum.store(appnum.map_or(0, |n| n as c_int), Ordering::Relaxed);
                &a.appnum
            }
            MPI_LASTUSEDCODE => &a.lastusedcode,
            // SAFETY: `attribute_val` is the address of one writable `void *` and `flag` of one `int`, for this call
            // (MPI 4.1 §7.7.2): `get_user_attr`'s `# Safety`.
            k => return unsafe { get_user_attr(st, On::Comm, comm, k, attribute_val, flag) },
        };
        // SAFETY: `attribute_val` is MPI_Comm_get_attr's out-argument, the address of one writable `void *` (MPI 4.1
        // §7.7.2), and `flag` points to one writable `int`, both for this call; `put` refuses null. The address written
        // is of a field of the process's static `Attrs`, which stays valid for the rest of the process, so the program
        // may read the value through it later.
        unsafe {
            put(attribute_val.cast::<*const std::sync::atomic::AtomicI32>(), v as *const _, "attribute_val")?;
            put(flag, 1, "flag")
        }
    })
}
