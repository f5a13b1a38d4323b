//! Info objects (MPI 4.1 §10) over `mpi::info::Info`: handles, C strings
//! and `MPI_INFO_ENV`. The library takes no hint yet, so a communicator's info
//! (`MPI_Comm_set_info`, `MPI_Comm_dup_with_info`) is kept and handed back
//! by `MPI_Comm_get_info` as given, and changes nothing else.
//! `MPI_INFO_ENV` (§11.2.4) holds what this process was started with.

use std::ffi::{c_char, c_int};

use crate::abi::*;
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

impl State {
    /// The pairs of info handle `h` (`MPI_INFO_ENV` included).
    pub(crate) fn info(&self, h: Handle) -> R<Pairs> {
        if h == MPI_INFO_ENV {
            return Ok(env_pairs(self));
        }
        self.infos.get(&h).cloned().ok_or_else(|| {
            let what = if h == MPI_INFO_NULL { "MPI_INFO_NULL".to_string() } else { format!("{h:#x}") };
            Fail::new(MPI_ERR_INFO, format!("{what} is not an info object (never created, or freed)"))
        })
    }

    /// The pairs of an info argument that may be `MPI_INFO_NULL` (none).
    pub(crate) fn info_or_null(&self, h: Handle) -> R<Pairs> {
        if h == MPI_INFO_NULL {
            return Ok(Pairs::new());
        }
        self.info(h)
    }

    fn info_mut(&mut self, h: Handle) -> R<&mut Pairs> {
        if h == MPI_INFO_ENV {
            return Err(Fail::new(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed or freed"));
        }
        self.infos.get_mut(&h).ok_or_else(|| Fail::new(MPI_ERR_INFO, format!("{h:#x} is not an info object")))
    }

    /// A new info handle holding `pairs`.
    pub(crate) fn new_info(&mut self, pairs: Pairs) -> Handle {
        let h = self.new_handle();
        self.infos.insert(h, pairs);
        h
    }
}

/// `MPI_INFO_ENV`'s keys (§11.2.4): the command, its arguments, the
/// number of processes and this host.
fn env_pairs(st: &State) -> Pairs {
    let mut args = std::env::args();
    let mut p = Pairs::new();
    let mut add = |k: &str, v: &str| {
        // An empty or over-long value is left out rather than refused.
        let _ = p.set(k, v);
    };
    if let Some(cmd) = args.next() {
        add("command", &cmd);
    }
    add("argv", &args.collect::<Vec<String>>().join(" "));
    if let Some(w) = st.comms.get(&MPI_COMM_WORLD) {
        add("maxprocs", &w.comm.size().to_string());
    }
    add("host", &crate::env::host_name());
    let level = match st.thread_level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        _ => "MPI_THREAD_SERIALIZED",
    };
    add("thread_level", level);
    p
}

/// Write a new handle through `out`.
///
/// # Safety
/// `out` is null or writable.
pub(crate) unsafe fn hand_out(st: &mut State, pairs: Pairs, out: *mut Handle, what: &str) -> R<()> {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    let h = st.new_info(pairs);
    // SAFETY: non-null; the caller's contract.
    unsafe { out.write(h) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(info: *mut Handle) -> c_int {
    // SAFETY: the standard's contract on `info`.
    with_state("MPI_Info_create", MPI_COMM_WORLD, |st| unsafe { hand_out(st, Pairs::new(), info, "info") })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut Handle) -> c_int {
    with_state("MPI_Info_create_env", MPI_COMM_WORLD, |st| {
        let pairs = env_pairs(st);
        // SAFETY: the standard's contract on `info`.
        unsafe { hand_out(st, pairs, info, "info") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(info: Handle, newinfo: *mut Handle) -> c_int {
    with_state("MPI_Info_dup", MPI_COMM_WORLD, |st| {
        let pairs = st.info(info)?;
        // SAFETY: the standard's contract on `newinfo`.
        unsafe { hand_out(st, pairs, newinfo, "newinfo") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(info: *mut Handle) -> c_int {
    with_state("MPI_Info_free", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on `info`.
        let h = unsafe { read_arg(info, "info")? };
        st.info_mut(h)?;
        st.infos.remove(&h);
        // SAFETY: `info` was read above, so it is not null; the standard makes it writable (§10.2).
        unsafe { info.write(MPI_INFO_NULL) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(info: Handle, key: *const c_char, value: *const c_char) -> c_int {
    with_state("MPI_Info_set", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract: NUL-terminated strings.
        let (k, v) = unsafe { (text(key, "key", MPI_ERR_INFO_KEY)?, text(value, "value", MPI_ERR_INFO_VALUE)?) };
        Ok(st.info_mut(info)?.set(&k, &v)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(info: Handle, key: *const c_char) -> c_int {
    with_state("MPI_Info_delete", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract: a NUL-terminated string.
        let k = unsafe { text(key, "key", MPI_ERR_INFO_KEY)? };
        Ok(st.info_mut(info)?.delete(&k)?)
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
    with_state("MPI_Info_get_string", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract: a NUL-terminated string.
        let k = unsafe { text(key, "key", MPI_ERR_INFO_KEY)? };
        if buflen.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "buflen is a null pointer"));
        }
        let found = st.info(info)?.get(&k)?.map(str::to_string);
        // SAFETY: the standard's contract on the pointers: `value` has
        // room for `*buflen` bytes.
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
    // SAFETY: the standard's contract: `value` holds `valuelen + 1` bytes.
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
    // SAFETY: the standard's contract; no value is written with room 0.
    let rc = unsafe { MPI_Info_get_string(info, key, &mut room, std::ptr::null_mut(), flag) };
    // SAFETY: the standard's contract: `flag` and `valuelen` are writable
    // (checked non-null here), and `flag` was just written.
    unsafe {
        if rc == MPI_SUCCESS && !flag.is_null() && flag.read() != 0 && !valuelen.is_null() {
            valuelen.write(room - 1);
        }
    }
    rc
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: Handle, nkeys: *mut c_int) -> c_int {
    with_state("MPI_Info_get_nkeys", MPI_COMM_WORLD, |st| {
        let n = st.info(info)?.len() as c_int;
        // SAFETY: the standard's contract on `nkeys`.
        unsafe { put(nkeys, n, "nkeys") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(info: Handle, n: c_int, key: *mut c_char) -> c_int {
    with_state("MPI_Info_get_nthkey", MPI_COMM_WORLD, |st| {
        let pairs = st.info(info)?;
        let i = usize::try_from(n).map_err(|_| Fail::new(MPI_ERR_ARG, format!("key number {n} is negative")))?;
        let k = pairs.nth_key(i)?.to_string();
        let mut len = 0;
        // SAFETY: the standard's contract: `key` has MPI_MAX_INFO_KEY bytes.
        unsafe { crate::env::put_string(key, &mut len, &k, MPI_MAX_INFO_KEY) }
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
        // SAFETY: the standard's contract on `info_used`.
        unsafe { hand_out(st, pairs, info_used, "info_used") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(comm: Handle, info: Handle, newcomm: *mut Handle) -> c_int {
    with_state("MPI_Comm_dup_with_info", comm, |st| {
        let pairs = st.info_or_null(info)?;
        // SAFETY: the standard's contract on `newcomm`.
        let h = unsafe { crate::env::dup(st, comm, newcomm)? };
        if let Some(e) = st.comms.get_mut(&h) {
            e.info = pairs;
        }
        Ok(())
    })
}
