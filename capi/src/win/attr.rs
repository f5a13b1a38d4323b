//! Window attributes (MPI 4.1 §12.2.6, §7.7.3) and the memory
//! `MPI_Alloc_mem` gives for windows (§9.2).

use super::*;

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: Handle,
    win_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    with_state("MPI_Win_get_attr", win, |st| {
        let e = st.win(win)?;
        let p: *const c_void = match win_keyval {
            MPI_WIN_BASE => {
                // The base itself, not its address (§12.2.6).
                let b = e.base;
                // SAFETY: `attribute_val` is MPI_Win_get_attr's out-argument, declared `void *` but, as MPI 4.1 §7.7.3
                // and §12.2.6 define it, the address of one writable `void *` (MPI_WIN_BASE's value is the base
                // itself); `flag` points to one writable `int`; both for this call. `put` refuses null.
                return unsafe {
                    put(attribute_val.cast::<*mut c_void>(), b, "attribute_val")?;
                    put(flag, 1, "flag")
                };
            }
            MPI_WIN_SIZE => (&e.predefined.size as *const isize).cast(),
            MPI_WIN_DISP_UNIT => (&e.predefined.disp_unit as *const c_int).cast(),
            MPI_WIN_CREATE_FLAVOR => (&e.predefined.flavor as *const c_int).cast(),
            MPI_WIN_MODEL => (&e.predefined.model as *const c_int).cast(),
            // SAFETY: `attribute_val` is the address of one writable `void *` and `flag` of one `int`, for this call
            // (MPI 4.1 §7.7.3): `get_user_attr`'s `# Safety`.
            k => return unsafe { crate::attr::get_user_attr(st, crate::attr::On::Win, win, k, attribute_val, flag) },
        };
        // SAFETY: `attribute_val` is MPI_Win_get_attr's out-argument, the address of one writable `void *` (MPI 4.1
        // §7.7.3), and `flag` points to one writable `int`, both for this call; `put` refuses null. The pointer written
        // is the address of the value in the window's boxed `Predefined`, which the program reads after this call
        // (§12.2.6); the box does not move when `st.wins` grows, and lives until MPI_Win_free drops the entry.
        unsafe {
            put(attribute_val.cast::<*const c_void>(), p, "attribute_val")?;
            put(flag, 1, "flag")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    copy_fn: usize,
    delete_fn: usize,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the same contract as `MPI_Comm_create_keyval`'s (windows are never copied).
    unsafe { crate::attr::MPI_Comm_create_keyval(copy_fn, delete_fn, win_keyval, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free_keyval(win_keyval: *mut c_int) -> c_int {
    // SAFETY: the same contract as `MPI_Comm_free_keyval`'s.
    unsafe { crate::attr::MPI_Comm_free_keyval(win_keyval) }
}

/// `MPI_Alloc_mem`: `size` bytes, 64-byte aligned (any datatype fits, and
/// a cache line starts it), for windows or anything else; the info is
/// taken and ignored.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alloc_mem(size: isize, info: Handle, baseptr: *mut c_void) -> c_int {
    with_state("MPI_Alloc_mem", MPI_COMM_WORLD, |st| {
        st.info_or_null(info)?;
        let n = usize::try_from(size).map_err(|_| Fail::new(MPI_ERR_SIZE, format!("size {size} is negative")))?;
        if baseptr.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "baseptr is a null pointer"));
        }
        let layout = std::alloc::Layout::from_size_align(n.max(1), 64)
            .map_err(|_| Fail::new(MPI_ERR_NO_MEM, format!("{size} bytes cannot be allocated")))?;
        // SAFETY: the layout's size is not zero.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(Fail::new(MPI_ERR_NO_MEM, format!("MPI_Alloc_mem of {size} bytes: out of memory")));
        }
        st.mems.insert(p as Handle, layout);
        // SAFETY: `baseptr` is not null (checked above) and is MPI_Alloc_mem's out-argument, which MPI 4.1 §9.2
        // declares `void *` but defines as the address of one `void *`, valid and aligned for writing one pointer for
        // this call.
        unsafe { baseptr.cast::<*mut u8>().write(p) };
        Ok(())
    })
}

/// `MPI_Free_mem`: gives back what `MPI_Alloc_mem` gave (a null pointer is
/// nothing to free); any other address is `MPI_ERR_BASE`, and nothing is
/// freed.
#[no_mangle]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    with_state("MPI_Free_mem", MPI_COMM_WORLD, |st| {
        if base.is_null() {
            return Ok(());
        }
        let layout = st.mems.remove(&(base as Handle)).ok_or_else(|| {
            Fail::new(MPI_ERR_BASE, format!("{base:p} was not returned by MPI_Alloc_mem (or was freed already)"))
        })?;
        // SAFETY: `base` came from `alloc_zeroed` with this layout (the table says so) and is freed once.
        unsafe { std::alloc::dealloc(base.cast(), layout) };
        Ok(())
    })
}
