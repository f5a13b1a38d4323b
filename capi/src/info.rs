//! Info objects (MPI 4.1 §10) over `mpi::info::Info`: handles, C strings
//! and `MPI_INFO_ENV`. The library takes no hint yet, so a communicator's info
//! (`MPI_Comm_set_info`, `MPI_Comm_dup_with_info`) is kept and handed back
//! by `MPI_Comm_get_info` as given, and changes nothing else.
//! `MPI_INFO_ENV` (§11.2.4) holds what this process was started with.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::process::Infos;
use crate::*;

pub(crate) use mpi::info::Info as Pairs;

/// A key or value argument: a NUL-terminated string.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn text(s: *const c_char, what: &str, class: c_int) -> R<String> {
    if s.is_null() {
        return Err(Fail::new(class, format!("the {what} is a null pointer")));
    }
    // SAFETY: `s` is not null (checked above) and points at a NUL-terminated string (§10: info keys
    // and values are C strings).
    Ok(unsafe { std::ffi::CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// Info handles: `FIRST_HANDLE + 16 k + 9`. The low bits tell them from
/// communicators (5) and from every other handle (0), which live in the
/// library's state and can be made only between `MPI_Init` and
/// `MPI_Finalize`.
const INFO_MARK: Handle = 0x9;

/// Run `f` on the info objects.
fn infos<T>(f: impl FnOnce(&mut Infos) -> T) -> T {
    let mut g = crate::process::process().infos.lock();
    f(g.get_or_insert_with(|| Infos { pairs: Table::default(), made: 0 }))
}

/// The pairs of info handle `h` (`MPI_INFO_ENV` included).
pub(crate) fn get(h: Handle) -> R<Pairs> {
    if h == MPI_INFO_ENV {
        return Ok(env_pairs());
    }
    infos(|t| t.pairs.get(&h).cloned()).ok_or_else(|| {
        let what = if h == MPI_INFO_NULL { "MPI_INFO_NULL".to_string() } else { format!("{h:#x}") };
        Fail::new(MPI_ERR_INFO, format!("{what} is not an info object (never created, or freed)"))
    })
}

/// Change the pairs of info handle `h` with `f`.
fn change<T>(h: Handle, f: impl FnOnce(&mut Pairs) -> R<T>) -> R<T> {
    if h == MPI_INFO_ENV {
        return Err(Fail::new(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed or freed"));
    }
    match infos(|t| t.pairs.get_mut(&h).map(f)) {
        Some(r) => r,
        None => Err(Fail::new(MPI_ERR_INFO, format!("{h:#x} is not an info object (never created, or freed)"))),
    }
}

/// A new info handle holding `pairs`.
pub(crate) fn add(pairs: Pairs) -> Handle {
    infos(|t| {
        let h = FIRST_HANDLE + (t.made << 4) + INFO_MARK;
        t.made += 1;
        t.pairs.insert(h, pairs);
        h
    })
}

/// Whether `h` is an info object the program made.
pub(crate) fn exists(h: Handle) -> bool {
    infos(|t| t.pairs.contains_key(&h))
}

impl State {
    /// The pairs of info handle `h` (`MPI_INFO_ENV` included).
    pub(crate) fn info(&self, h: Handle) -> R<Pairs> {
        get(h)
    }

    /// The pairs of an info argument that may be `MPI_INFO_NULL` (none).
    pub(crate) fn info_or_null(&self, h: Handle) -> R<Pairs> {
        if h == MPI_INFO_NULL {
            return Ok(Pairs::new());
        }
        get(h)
    }
}

/// An `MPI_Info_*` call, which works with or without the library's state.
fn info_call(call: &str, f: impl FnOnce() -> R<()>) -> c_int {
    crate::stateless_call(call, f)
}

/// `MPI_INFO_ENV`'s keys (§11.2.4): the command, its arguments, the
/// number of processes and this host.
fn env_pairs() -> Pairs {
    // A rank that is a context of a host is told its own by the host.
    let mut args = simlink::contexts::args().unwrap_or_else(|| std::env::args().collect()).into_iter();
    let mut p = Pairs::new();
    let mut add = |k: &str, v: &str| {
        // An empty or over-long value is left out rather than refused.
        let _ = p.set(k, v);
    };
    if let Some(cmd) = args.next() {
        add("command", &cmd);
    }
    add("argv", &args.collect::<Vec<String>>().join(" "));
    // The launcher's process count (`dnrun -n`, or MPICH's hydra through
    // PMI), the same before `MPI_Init` as after. `thread_level` is the
    // level asked for at the launch, which neither has an option for: left
    // out.
    if let Some(n) = adi::knobs::raw(adi::job::ENV_SIZE).or_else(|| std::env::var("PMI_SIZE").ok()) {
        add("maxprocs", n.trim());
    }
    add("host", &mpi::host::host_name());
    p
}

/// Write a new handle through `out`.
///
/// # Safety
/// `out` is null or writable.
pub(crate) unsafe fn hand_out(pairs: Pairs, out: *mut Handle, what: &str) -> R<()> {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    let h = add(pairs);
    // SAFETY: `out` is not null (checked above) and valid for writing one handle for this call, as `hand_out`'s
    // `# Safety` requires of its callers (each passes its MPI call's out-argument).
    unsafe { out.write(h) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(info: *mut Handle) -> c_int {
    // SAFETY: `info` is MPI_Info_create's out-argument (MPI 4.1 §10), null or valid for writing one info handle for
    // this call, and the closure runs within it; `hand_out` refuses null.
    info_call("MPI_Info_create", || unsafe { hand_out(Pairs::new(), info, "info") })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut Handle) -> c_int {
    // SAFETY: `info` is MPI_Info_create_env's out-argument, null or valid for writing one info handle for this call,
    // and the closure runs within it; `hand_out` refuses null. `_argv` is never read.
    info_call("MPI_Info_create_env", || unsafe { hand_out(env_pairs(), info, "info") })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(info: Handle, newinfo: *mut Handle) -> c_int {
    info_call("MPI_Info_dup", || {
        let pairs = get(info)?;
        // SAFETY: `newinfo` is MPI_Info_dup's out-argument (MPI 4.1 §10), null or valid for writing one info handle for
        // this call; `hand_out` refuses null.
        unsafe { hand_out(pairs, newinfo, "newinfo") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(info: *mut Handle) -> c_int {
    info_call("MPI_Info_free", || {
        // SAFETY: `info` is MPI_Info_free's in/out handle argument (MPI 4.1 §10), null or readable and writable for one
        // handle for this call; `read_arg` refuses null.
        let h = unsafe { read_arg(info, "info")? };
        change(h, |_| Ok(()))?;
        infos(|t| t.pairs.remove(&h));
        // SAFETY: `info` was read above, so it is not null; the standard makes it writable (§10.2).
        unsafe { info.write(MPI_INFO_NULL) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(info: Handle, key: *const c_char, value: *const c_char) -> c_int {
    info_call("MPI_Info_set", || {
        // SAFETY: `key` and `value` are MPI_Info_set's key and value (MPI 4.1 §10), NUL-terminated strings readable for
        // this call, or null, which `text` refuses; both are copied out at once.
        let (k, v) = unsafe { (text(key, "key", MPI_ERR_INFO_KEY)?, text(value, "value", MPI_ERR_INFO_VALUE)?) };
        change(info, |p| Ok(p.set(&k, &v)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(info: Handle, key: *const c_char) -> c_int {
    info_call("MPI_Info_delete", || {
        // SAFETY: `key` is MPI_Info_delete's key (MPI 4.1 §10), a NUL-terminated string readable for this call, or
        // null, which `text` refuses; it is copied out at once.
        let k = unsafe { text(key, "key", MPI_ERR_INFO_KEY)? };
        change(info, |p| Ok(p.delete(&k)?))
    })
}

/// `MPI_Info_get_string` (§10, MPI 4.0): the value of `key`, as much as
/// `*buflen` bytes hold (NUL included); `*buflen` becomes the full
/// value's length plus one.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_string(
    info: Handle,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    info_call("MPI_Info_get_string", || {
        // SAFETY: `key` is MPI_Info_get_string's key (MPI 4.1 §10), a NUL-terminated string readable for this call, or
        // null, which `text` refuses; it is copied out at once.
        let k = unsafe { text(key, "key", MPI_ERR_INFO_KEY)? };
        if buflen.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "buflen is a null pointer"));
        }
        let found = get(info)?.get(&k)?.map(str::to_string);
        // SAFETY: `flag` is null (refused by `put`) or points to one writable `int`; `buflen` is not null (checked
        // above) and points to one readable and writable `int`; `value`, when not null and `*buflen` > 0, has room for
        // `*buflen` characters; all for this call, as MPI 4.1 §10 requires of MPI_Info_get_string's caller. At most
        // `*buflen` - 1 bytes and a NUL are written to `value`.
        unsafe {
            put(flag, found.is_some() as c_int, "flag")?;
            if let Some(v) = found {
                let room = buflen.read();
                if room > 0 && !value.is_null() {
                    let n = v.len().min(room as usize - 1);
                    std::ptr::copy_nonoverlapping(v.as_ptr(), value.cast::<u8>(), n);
                    value.add(n).write(0);
                }
                buflen.write(v.len() as c_int + 1);
            }
        }
        Ok(())
    })
}

/// `MPI_Info_get` (deprecated since MPI 4.0, still in 5.0's ABI): up to
/// `valuelen` characters of the value.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(
    info: Handle,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    let mut room = valuelen.saturating_add(1);
    // SAFETY: `room` is a local, readable and writable; `key` is a NUL-terminated string and `flag` points to one
    // writable `int`, and `value` has room for `valuelen` + 1 characters (`room`), for this call, as MPI 4.1 §10
    // requires of MPI_Info_get's caller: what MPI_Info_get_string's arguments must be.
    unsafe { MPI_Info_get_string(info, key, &mut room, value, flag) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(
    info: Handle,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    let mut room = 0;
    // SAFETY: `room` is a local and `value` is null, so no value is written (`room` is 0); `key` is a NUL-terminated
    // string and `flag` points to one writable `int`, for this call, as MPI 4.1 §10 requires of MPI_Info_get_valuelen's
    // caller: what MPI_Info_get_string's arguments must be.
    let rc = unsafe { MPI_Info_get_string(info, key, &mut room, std::ptr::null_mut(), flag) };
    // SAFETY: `flag` and `valuelen` are MPI_Info_get_valuelen's out-arguments, each readable and writable for one `int`
    // for this call, and both are checked not null here; `flag` was written by the call above when it succeeded, so the
    // read sees an initialised `int`.
    unsafe {
        if rc == MPI_SUCCESS && !flag.is_null() && flag.read() != 0 && !valuelen.is_null() {
            valuelen.write(room - 1);
        }
    }
    rc
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: Handle, nkeys: *mut c_int) -> c_int {
    info_call("MPI_Info_get_nkeys", || {
        let n = get(info)?.len() as c_int;
        // SAFETY: `nkeys` is MPI_Info_get_nkeys' out-argument (MPI 4.1 §10), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(nkeys, n, "nkeys") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(info: Handle, n: c_int, key: *mut c_char) -> c_int {
    info_call("MPI_Info_get_nthkey", || {
        let pairs = get(info)?;
        let i = usize::try_from(n).map_err(|_| Fail::new(MPI_ERR_ARG, format!("key number {n} is negative")))?;
        let k = pairs.nth_key(i)?.to_string();
        let mut len = 0;
        // SAFETY: `key` has room for MPI_MAX_INFO_KEY characters, writable for this call, as MPI 4.1 §10 requires of
        // MPI_Info_get_nthkey's caller, and `len` is a local: `put_string`'s `# Safety` (it refuses a null `key`).
        unsafe { crate::strings::put_string(key, &mut len, &k, MPI_MAX_INFO_KEY) }
    })
}

#[no_mangle]
pub extern "C" fn MPI_Comm_set_info(comm: Handle, info: Handle) -> c_int {
    with_state("MPI_Comm_set_info", comm, |st| {
        let pairs = st.info(info)?;
        st.comm_mut(comm)?.info = pairs;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_info(comm: Handle, info_used: *mut Handle) -> c_int {
    with_state("MPI_Comm_get_info", comm, |st| {
        let pairs = st.comm(comm)?.info.clone();
        // SAFETY: `info_used` is MPI_Comm_get_info's out-argument (MPI 4.1 §7.4.4), null or valid for writing one info
        // handle for this call; `hand_out` refuses null.
        unsafe { hand_out(pairs, info_used, "info_used") }
    })
}
