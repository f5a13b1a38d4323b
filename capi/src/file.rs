//! MPI-IO (MPI 4.1 chapter 14) over `mpi::io`: file handles, their
//! error handlers and the C arguments of every data-access routine.
//! What a file does — views, pointers, collective opening — is
//! `mpi::io::File`'s.
//!
//! Errors of a file call go to the file's error handler; those of
//! `MPI_File_open` and `MPI_File_delete`, and of calls on a handle that
//! names no file, to the handler of `MPI_FILE_NULL`, `MPI_ERRORS_RETURN`
//! unless the program set another (§9.3, §14.7).

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use mpi::datatype::external32::Signature;
use mpi::io::{AccessMode, Calling, DataRep, Direction, File, Position, View, Whence};

use crate::abi::*;
use crate::count::Int;
use crate::datatype::TypeDef;
use crate::*;

/// The low bits that mark a file handle, so that the error handler of a
/// file call is found even once the handle is gone.
pub(crate) const FILE_MARK: Handle = 0xB;

/// `MPI_DISPLACEMENT_CURRENT` (`(MPI_Offset)-1`).
const MPI_DISPLACEMENT_CURRENT: i64 = -1;

/// Whether `h` is shaped like a file handle (or is `MPI_FILE_NULL`).
pub(crate) fn is_file(h: Handle) -> bool {
    h == MPI_FILE_NULL || (h >= FIRST_HANDLE && h & 0xF == FILE_MARK)
}

/// A file handle's state.
pub(crate) struct FileEntry {
    pub(crate) file: File,
    pub(crate) errhandler: Handle,
    /// The view's etype and filetype as the program gave them: a
    /// predefined handle, or a derived type's definition, handed out
    /// again as a new handle by `MPI_File_get_view` (§14.3).
    etype: ViewType,
    filetype: ViewType,
}

#[derive(Clone)]
enum ViewType {
    Predefined(Handle),
    Derived(Arc<TypeDef>),
}

impl State {
    fn file(&self, h: Handle) -> R<&FileEntry> {
        self.files.get(&h).ok_or_else(|| bad_file(h))
    }

    fn file_mut(&mut self, h: Handle) -> R<&mut FileEntry> {
        self.files.get_mut(&h).ok_or_else(|| bad_file(h))
    }

    fn view_type(&self, h: Handle) -> R<ViewType> {
        match self.types.get(&h) {
            Some(e) => Ok(ViewType::Derived(e.def.clone())),
            None => self.committed(h).map(|_| ViewType::Predefined(h)),
        }
    }

    fn hand_out_type(&mut self, t: &ViewType) -> Handle {
        match t {
            ViewType::Predefined(h) => *h,
            ViewType::Derived(def) => {
                let h = self.new_handle();
                self.types.insert(h, crate::datatype::TypeEntry::committed_copy(def.clone()));
                h
            }
        }
    }
}

#[cold]
fn bad_file(h: Handle) -> Fail {
    let what = if h == MPI_FILE_NULL { "MPI_FILE_NULL".to_string() } else { format!("{h:#x}") };
    Fail::new(MPI_ERR_FILE, format!("{what} is not an open file (never opened, or closed)"))
}

/// A path argument.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn path_arg(p: *const c_char, what: &str) -> R<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` is not null (checked above) and is a NUL-terminated string readable for this call (`path_arg`'s
    // `# Safety`); the path is copied out before the call returns.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    if s.is_empty() {
        return Err(Fail::new(MPI_ERR_BAD_FILE, format!("{what} is empty")));
    }
    Ok(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(s.to_bytes())))
}

/// A non-negative offset argument.
fn offset_arg(o: i64) -> R<u64> {
    u64::try_from(o).map_err(|_| Fail::new(MPI_ERR_ARG, format!("offset {o} is negative")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_open(
    comm: Handle,
    filename: *const c_char,
    amode: c_int,
    info: Handle,
    fh: *mut Handle,
) -> c_int {
    with_state("MPI_File_open", MPI_FILE_NULL, |st| {
        if fh.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "fh is a null pointer"));
        }
        let mode = AccessMode::from_bits(amode)?;
        // SAFETY: `filename` is MPI_File_open's file name (MPI 4.1 §14.2.1), a NUL-terminated string readable for this
        // call, or null, which `path_arg` refuses.
        let path = unsafe { path_arg(filename, "filename")? };
        let pairs = st.info_or_null(info)?;
        let file = File::open(&st.comm(comm)?.comm, path, mode, &pairs)?;
        let h = st.new_handle() + FILE_MARK;
        let byte = ViewType::Predefined(MPI_BYTE);
        let errhandler = st.file_errhandler;
        st.files.insert(h, FileEntry { file, errhandler, etype: byte.clone(), filetype: byte });
        // SAFETY: `fh` is not null (checked above) and is MPI_File_open's out-argument (MPI 4.1 §14.2.1), valid for
        // writing one handle for this call.
        unsafe { fh.write(h) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_close(fh: *mut Handle) -> c_int {
    // SAFETY: `fh` is MPI_File_close's in/out handle argument (MPI 4.1 §14.2.2), null or readable and writable for one
    // handle for this call; `read_arg` refuses null.
    let h = match unsafe { read_arg(fh, "fh") } {
        Ok(h) => h,
        Err(f) => return with_state("MPI_File_close", MPI_FILE_NULL, |_| Err(f)),
    };
    with_state("MPI_File_close", h, |st| {
        st.file(h)?;
        let e = st.files.remove(&h).ok_or_else(|| bad_file(h))?;
        // The handle is gone whatever the outcome: errors after this go
        // to the handler it had, through the FILE_NULL default.
        let r = e.file.close();
        // SAFETY: `fh` was read above, so it is not null; the standard makes it writable.
        unsafe { put(fh, MPI_FILE_NULL, "fh")? };
        Ok(r?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_delete(filename: *const c_char, info: Handle) -> c_int {
    with_state("MPI_File_delete", MPI_FILE_NULL, |st| {
        // SAFETY: `filename` is MPI_File_delete's file name (MPI 4.1 §14.2.3), a NUL-terminated string readable for
        // this call, or null, which `path_arg` refuses.
        let path = unsafe { path_arg(filename, "filename")? };
        st.info_or_null(info)?;
        Ok(File::delete(path)?)
    })
}

/// A call on open file `fh` that changes it.
fn on_file(call: &str, fh: Handle, f: impl FnOnce(&mut File) -> mpi::Result<()>) -> c_int {
    with_state(call, fh, |st| Ok(f(&mut st.file_mut(fh)?.file)?))
}

/// A query on open file `fh` whose answer is written through `out`.
///
/// # Safety
/// `out` is null or writable.
unsafe fn query<T>(call: &str, fh: Handle, out: *mut T, f: impl FnOnce(&File) -> mpi::Result<T>) -> c_int {
    with_state(call, fh, |st| {
        let v = f(&st.file(fh)?.file)?;
        // SAFETY: `out` is null or valid for writing one `T` for this call (`query`'s `# Safety`, from the caller's
        // out-argument); `put` refuses null.
        unsafe { put(out, v, call) }
    })
}

fn to_offset(v: u64) -> mpi::Result<i64> {
    i64::try_from(v).map_err(|_| mpi::MpiError::TooLarge(mpi::Overflow::Offset { value: v }))
}

forward! {
    pub unsafe extern "C" fn MPI_File_get_amode(fh: Handle, amode: *mut c_int) -> c_int = query(fh, amode, |f| Ok(f.mode().bits()));
    pub unsafe extern "C" fn MPI_File_get_atomicity(fh: Handle, flag: *mut c_int) -> c_int = query(fh, flag, |f| Ok(c_int::from(f.atomicity())));
    pub unsafe extern "C" fn MPI_File_get_size(fh: Handle, size: *mut i64) -> c_int = query(fh, size, |f| to_offset(f.size()?));
    pub unsafe extern "C" fn MPI_File_get_position(fh: Handle, offset: *mut i64) -> c_int = query(fh, offset, |f| to_offset(f.position()));
    pub unsafe extern "C" fn MPI_File_get_position_shared(fh: Handle, offset: *mut i64) -> c_int = query(fh, offset, |f| to_offset(f.position_shared()?));
}

forward! {
    pub extern "C" fn MPI_File_set_atomicity(fh: Handle, flag: c_int) -> c_int = on_file(fh, |f| f.set_atomicity(flag != 0));
    pub extern "C" fn MPI_File_sync(fh: Handle) -> c_int = on_file(fh, File::sync);
}

#[no_mangle]
pub extern "C" fn MPI_File_set_size(fh: Handle, size: i64) -> c_int {
    with_state("MPI_File_set_size", fh, |st| {
        let size = u64::try_from(size).map_err(|_| Fail::new(MPI_ERR_ARG, format!("size {size} is negative")))?;
        Ok(st.file_mut(fh)?.file.set_size(size)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_File_preallocate(fh: Handle, size: i64) -> c_int {
    with_state("MPI_File_preallocate", fh, |st| {
        let size = u64::try_from(size).map_err(|_| Fail::new(MPI_ERR_ARG, format!("size {size} is negative")))?;
        Ok(st.file_mut(fh)?.file.preallocate(size)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_group(fh: Handle, group: *mut Handle) -> c_int {
    with_state("MPI_File_get_group", fh, |st| {
        let g = mpi::group::Group::of(st.file(fh)?.file.communicator());
        // SAFETY: `group` is MPI_File_get_group's out-argument (MPI 4.1 §14.2.7), null or valid for writing one group
        // handle for this call; `new_group` refuses null.
        unsafe { st.new_group(g, group) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_info(fh: Handle, info_used: *mut Handle) -> c_int {
    with_state("MPI_File_get_info", fh, |st| {
        let p = st.file(fh)?.file.info().clone();
        // SAFETY: `info_used` is MPI_File_get_info's out-argument (MPI 4.1 §14.2.8), null or valid for writing one info
        // handle for this call; `hand_out` refuses null.
        unsafe { crate::info::hand_out(p, info_used, "info_used") }
    })
}

#[no_mangle]
pub extern "C" fn MPI_File_set_info(fh: Handle, info: Handle) -> c_int {
    with_state("MPI_File_set_info", fh, |st| {
        let p = st.info_or_null(info)?;
        Ok(st.file_mut(fh)?.file.set_info(&p)?)
    })
}

// ---- views (§14.3) -------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_view(
    fh: Handle,
    disp: i64,
    etype: Handle,
    filetype: Handle,
    datarep: *const c_char,
    info: Handle,
) -> c_int {
    with_state("MPI_File_set_view", fh, |st| {
        if datarep.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "datarep is a null pointer"));
        }
        // SAFETY: `datarep` is not null (checked above) and is MPI_File_set_view's data representation name (MPI 4.1
        // §14.3), a NUL-terminated string readable for this call; it is copied out at once.
        let rep = unsafe { std::ffi::CStr::from_ptr(datarep) }.to_string_lossy().into_owned();
        let rep = DataRep::named(&rep, &st.datareps)?;
        st.info_or_null(info)?;
        let (et, ft) = (st.view_type(etype)?, st.view_type(filetype)?);
        if rep == DataRep::External32 {
            for t in [etype, filetype] {
                let sig = crate::external::signature_of(st, t)?;
                if sig.external_size() != sig.native_size() {
                    return Err(Fail::new(
                        MPI_ERR_UNSUPPORTED_DATAREP,
                        "an external32 view of a type with long, unsigned long or wchar_t elements (whose external32 size differs from their size here) is not provided",
                    ));
                }
            }
        }
        for t in [etype, filetype] {
            st.check_file_extents(&rep, t)?;
        }
        let (el, fl) = (st.committed(etype)?, st.committed(filetype)?);
        let e = st.file_mut(fh)?;
        let disp = e.file.view_start((disp != MPI_DISPLACEMENT_CURRENT).then_some(disp))?;
        e.file.set_view(View::new(disp, el, fl, rep)?)?;
        (e.etype, e.filetype) = (et, ft);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_view(
    fh: Handle,
    disp: *mut i64,
    etype: *mut Handle,
    filetype: *mut Handle,
    datarep: *mut c_char,
) -> c_int {
    with_state("MPI_File_get_view", fh, |st| {
        let e = st.file(fh)?;
        let (d, rep) = (to_offset(e.file.view().disp())?, e.file.view().rep().name().to_string());
        let (et, ft) = (e.etype.clone(), e.filetype.clone());
        if [etype.is_null(), filetype.is_null(), datarep.is_null()].contains(&true) {
            return Err(Fail::new(MPI_ERR_ARG, "an output argument of MPI_File_get_view is a null pointer"));
        }
        let (eh, fh2) = (st.hand_out_type(&et), st.hand_out_type(&ft));
        // SAFETY: `etype`, `filetype` and `datarep` are not null (checked above); `disp` is null (refused by `put`) or,
        // like `etype` and `filetype`, valid for writing one value for this call, and `datarep` has room for
        // MPI_MAX_DATAREP_STRING (128) characters, as MPI 4.1 §14.3 requires of MPI_File_get_view's out-arguments.
        // Every name here has at most 127 bytes (the registry refuses longer ones), so the name and its NUL fit.
        unsafe {
            put(disp, d, "disp")?;
            etype.write(eh);
            filetype.write(fh2);
            std::ptr::copy_nonoverlapping(rep.as_ptr(), datarep.cast::<u8>(), rep.len());
            datarep.add(rep.len()).write(0);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent(fh: Handle, datatype: Handle, extent: *mut isize) -> c_int {
    with_state("MPI_File_get_type_extent", fh, |st| {
        let rep = st.file(fh)?.file.view().rep().clone();
        let x = st.file_extent(&rep, datatype)?;
        // SAFETY: `extent` is MPI_File_get_type_extent's out-argument (MPI 4.1 §14.5.1), null or valid for writing one
        // `MPI_Aint` for this call; `put` refuses null.
        unsafe { put(extent, x, "extent") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent_c(fh: Handle, datatype: Handle, extent: *mut i64) -> c_int {
    with_state("MPI_File_get_type_extent_c", fh, |st| {
        let rep = st.file(fh)?.file.view().rep().clone();
        let x = st.file_extent(&rep, datatype)? as i64;
        // SAFETY: `extent` is MPI_File_get_type_extent_c's out-argument (MPI 4.1 §14.5.1), null or valid for writing
        // one `MPI_Count` for this call; `put` refuses null.
        unsafe { put(extent, x, "extent") }
    })
}

/// `MPI_Register_datarep` (§14.5.3): the name is registered with its
/// functions. `MPI_CONVERSION_FN_NULL` stores the data as it is in
/// memory; a conversion function converts each access's data items
/// (`crate::datarep`), for representations that keep every element's size.
///
/// # Safety
/// `datarep` is null or a C string; each function is null or of the
/// standard's type for its argument (`large`: the `_c` form's).
unsafe fn register_datarep(
    call: &str,
    datarep: *const c_char,
    (read_fn, write_fn, extent_fn): (usize, usize, usize),
    extra_state: *mut c_void,
    large: bool,
) -> c_int {
    with_state(call, MPI_FILE_NULL, |st| {
        if datarep.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "datarep is a null pointer"));
        }
        // SAFETY: each of `read_fn`, `write_fn` and `extent_fn` is 0 or a function of the type MPI 4.1 §14.5.3 gives
        // that argument (the `_c` form's when `large`), as `register_datarep`'s `# Safety` requires: what
        // `Functions::new` requires.
        let fns = unsafe { crate::datarep::Functions::new(read_fn, write_fn, extent_fn, extra_state, large)? };
        // SAFETY: `datarep` is not null (checked above) and is a NUL-terminated string readable for this call
        // (`register_datarep`'s `# Safety`); it is copied out at once.
        let name = unsafe { std::ffi::CStr::from_ptr(datarep) }.to_string_lossy().into_owned();
        st.datareps.register(&name)?;
        st.datarep_fns.insert(name, fns);
        Ok(())
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Register_datarep(datarep: *const c_char, read_conversion_fn: usize, write_conversion_fn: usize, dtype_file_extent_fn: usize, extra_state: *mut c_void) -> c_int = register_datarep(datarep, (read_conversion_fn, write_conversion_fn, dtype_file_extent_fn), extra_state, false);
    pub unsafe extern "C" fn MPI_Register_datarep_c(datarep: *const c_char, read_conversion_fn: usize, write_conversion_fn: usize, dtype_file_extent_fn: usize, extra_state: *mut c_void) -> c_int = register_datarep(datarep, (read_conversion_fn, write_conversion_fn, dtype_file_extent_fn), extra_state, true);
}

// ---- pointers (§14.4.3, §14.4.4) --------------------------------------------------

fn whence_arg(w: c_int) -> R<Whence> {
    match w {
        MPI_SEEK_SET => Ok(Whence::Set),
        MPI_SEEK_CUR => Ok(Whence::Current),
        MPI_SEEK_END => Ok(Whence::End),
        _ => Err(Fail::new(MPI_ERR_ARG, format!("whence {w} is none of MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END"))),
    }
}

#[no_mangle]
pub extern "C" fn MPI_File_seek(fh: Handle, offset: i64, whence: c_int) -> c_int {
    with_state("MPI_File_seek", fh, |st| {
        let w = whence_arg(whence)?;
        Ok(st.file_mut(fh)?.file.seek(offset, w)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_File_seek_shared(fh: Handle, offset: i64, whence: c_int) -> c_int {
    with_state("MPI_File_seek_shared", fh, |st| {
        let w = whence_arg(whence)?;
        Ok(st.file_mut(fh)?.file.seek_shared(offset, w)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_byte_offset(fh: Handle, offset: i64, disp: *mut i64) -> c_int {
    with_state("MPI_File_get_byte_offset", fh, |st| {
        let o = offset_arg(offset)?;
        let d = to_offset(st.file(fh)?.file.byte_offset(o)?)?;
        // SAFETY: `disp` is MPI_File_get_byte_offset's out-argument (MPI 4.1 §14.4.3), null or valid for writing one
        // `MPI_Offset` for this call; `put` refuses null.
        unsafe { put(disp, d, "disp") }
    })
}

// ---- data access (§14.4) ---------------------------------------------------------

/// Where a C data-access call starts.
#[derive(Clone, Copy)]
enum At {
    Offset(i64),
    Individual,
    Shared,
    Ordered,
}

impl At {
    fn position(self) -> R<Position> {
        Ok(match self {
            At::Offset(o) => Position::At(offset_arg(o)?),
            At::Individual => Position::Individual,
            At::Shared => Position::Shared,
            At::Ordered => Position::Ordered,
        })
    }
}

/// A C call's elements: `count` of `datatype` at `buf`.
struct Elements<C> {
    buf: *const c_void,
    count: C,
    datatype: Handle,
}

/// What an access needs besides the file: the elements as bytes, where
/// they go, and, for an `external32` view, the memory type's signature.
fn prepare(
    st: &State,
    fh: Handle,
    at: At,
    count: impl Int,
    datatype: Handle,
) -> R<(mpi::staged::Span, Position, Option<Arc<Signature>>)> {
    let span = st.span(count, datatype)?;
    let position = at.position()?;
    let sig = match *st.file(fh)?.file.view().rep() {
        DataRep::External32 => Some(crate::external::signature_of(st, datatype)?),
        _ => None,
    };
    Ok((span, position, sig))
}

/// The conversion of an access of `e` through the file's view, when its
/// data representation converts that way (§14.5.3).
fn converting(
    st: &State,
    fh: Handle,
    direction: Direction,
    e: &Elements<impl Int>,
) -> R<Option<crate::datarep::Converting>> {
    let rep = st.file(fh)?.file.view().rep();
    st.conversion(rep, direction, e.buf.cast_mut(), e.datatype)
}

/// Access `count` elements of `datatype` at `buf`.
///
/// # Safety
/// `buf` holds the elements: readable for a write, writable for a read.
/// `call` names it: the `_all` forms are collective (`File::access_all_raw`).
unsafe fn access(
    st: &mut State,
    call: &str,
    fh: Handle,
    at: At,
    direction: Direction,
    e: Elements<impl Int>,
) -> R<mpi::Status> {
    let (span, position, sig) = prepare(st, fh, at, e.count, e.datatype)?;
    let together = call.contains("_all");
    if let Some(conv) = converting(st, fh, direction, &e)? {
        let calling = if together { Calling::Together } else { Calling::Alone };
        return Ok(st.file_mut(fh)?.file.access_converted(position, direction, span.len(), &conv, calling)?);
    }
    let file = &mut st.file_mut(fh)?.file;
    let buf = e.buf.cast_mut().cast();
    // SAFETY: `buf` holds `e.count` elements of `e.datatype` (`span`), readable for a write and writable for a read,
    // for this call (`access`'s `# Safety`, from the data-access call's caller, MPI 4.1 §14.4): what `File::access_raw`
    // and `File::access_all_raw` require; both complete before returning.
    Ok(unsafe {
        match together {
            true => file.access_all_raw(position, direction, buf, &span, sig.as_deref())?,
            false => file.access_raw(position, direction, buf, &span, sig.as_deref())?,
        }
    })
}

/// A blocking access: its status written through `status`.
///
/// # Safety
/// As [`access`]; `status` is null, `MPI_STATUS_IGNORE` or writable.
unsafe fn blocking(
    call: &str,
    fh: Handle,
    at: At,
    direction: Direction,
    e: Elements<impl Int>,
    status: *mut MpiStatus,
) -> c_int {
    with_state(call, fh, |st| {
        // SAFETY: `e.buf` holds its elements, readable for a write and writable for a read, for this call (`blocking`'s
        // `# Safety`, from a blocking data-access call's caller): `access`'s requirement.
        let s = unsafe { access(st, call, fh, at, direction, e)? };
        // SAFETY: `status` is the blocking data-access call's out-argument, null (MPI_STATUS_IGNORE) or valid for
        // writing one MPI_Status for this call (`blocking`'s `# Safety`): `put_status`'s requirement.
        unsafe { put_status(status, c_status(&s)) };
        Ok(())
    })
}

/// A non-blocking access: done now, its request complete (§14.4.5 lets
/// it complete at once).
///
/// # Safety
/// As [`access`]; `request` is null or writable.
unsafe fn immediate(
    call: &str,
    fh: Handle,
    at: At,
    direction: Direction,
    e: Elements<impl Int>,
    request: *mut Handle,
) -> c_int {
    with_state(call, fh, |st| {
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: `e.buf` holds its elements, readable for a write and writable for a read, for this call
        // (`immediate`'s `# Safety`; MPI 4.1 §14.4 keeps the buffer the request's until it completes, which is later),
        // and `access` completes the access before returning: `access`'s requirement.
        let s = unsafe { access(st, call, fh, at, direction, e)? };
        // SAFETY: `request` is not null (checked above) and valid for writing one handle for this call (`immediate`'s
        // `# Safety`, from the non-blocking data-access call's caller).
        unsafe { new_request(st, mpi::slot::Slot::Done(Ok(s)), request) }
    })
}

/// A split collective's `_begin`.
///
/// # Safety
/// As [`access`].
unsafe fn begin(call: &str, fh: Handle, at: At, direction: Direction, e: Elements<impl Int>) -> c_int {
    with_state(call, fh, |st| {
        let (span, position, sig) = prepare(st, fh, at, e.count, e.datatype)?;
        if let Some(conv) = converting(st, fh, direction, &e)? {
            return Ok(st.file_mut(fh)?.file.begin_converted(position, direction, span.len(), &conv)?);
        }
        let file = &mut st.file_mut(fh)?.file;
        // SAFETY: `e.buf` holds its elements, readable for a write and writable for a read, for this call (`begin`'s
        // `# Safety`; MPI 4.1 §14.4.5 keeps it the operation's until the matching `_end`, which is later), and
        // `begin_raw` does the access before returning: what `File::begin_raw` requires.
        unsafe { file.begin_raw(position, direction, e.buf.cast_mut().cast(), &span, sig.as_deref())? };
        Ok(())
    })
}

/// A split collective's `_end`.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or writable.
unsafe fn end(
    call: &str,
    fh: Handle,
    _buf: *const c_void,
    at: At,
    direction: Direction,
    status: *mut MpiStatus,
) -> c_int {
    with_state(call, fh, |st| {
        let position = match at {
            At::Offset(_) => Position::At(0),
            other => other.position()?,
        };
        let s = st.file_mut(fh)?.file.end(position, direction)?;
        // SAFETY: `status` is the `_end` call's out-argument, null (MPI_STATUS_IGNORE) or valid for writing one
        // MPI_Status for this call (`end`'s `# Safety`): `put_status`'s requirement.
        unsafe { put_status(status, c_status(&s)) };
        Ok(())
    })
}

forward! {
    pub unsafe extern "C" fn MPI_File_read_at(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_at_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_at_all(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_at_all_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_at(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_at_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_at_all(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_at_all_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_all(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_all_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_all(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_all_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_shared(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Shared, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_shared_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Shared, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_shared(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Shared, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_shared_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Shared, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_ordered(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Ordered, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_read_ordered_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Ordered, Direction::Read, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_ordered(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Ordered, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_write_ordered_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int = blocking(fh, At::Ordered, Direction::Write, Elements { buf, count, datatype }, status);
    pub unsafe extern "C" fn MPI_File_iread_at(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_at_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_at_all(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_at_all_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_at(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_at_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_at_all(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_at_all_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_all(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_all_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_all(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_all_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Individual, Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_shared(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Shared, Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iread_shared_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Shared, Direction::Read, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_shared(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Shared, Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_iwrite_shared_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int = immediate(fh, At::Shared, Direction::Write, Elements { buf, count, datatype }, request);
    pub unsafe extern "C" fn MPI_File_read_at_all_begin(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int = begin(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_read_at_all_begin_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle) -> c_int = begin(fh, At::Offset(offset), Direction::Read, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_write_at_all_begin(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle) -> c_int = begin(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_write_at_all_begin_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle) -> c_int = begin(fh, At::Offset(offset), Direction::Write, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_read_all_begin(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int = begin(fh, At::Individual, Direction::Read, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_read_all_begin_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle) -> c_int = begin(fh, At::Individual, Direction::Read, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_write_all_begin(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle) -> c_int = begin(fh, At::Individual, Direction::Write, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_write_all_begin_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle) -> c_int = begin(fh, At::Individual, Direction::Write, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_read_ordered_begin(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int = begin(fh, At::Ordered, Direction::Read, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_read_ordered_begin_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle) -> c_int = begin(fh, At::Ordered, Direction::Read, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_write_ordered_begin(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle) -> c_int = begin(fh, At::Ordered, Direction::Write, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_write_ordered_begin_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle) -> c_int = begin(fh, At::Ordered, Direction::Write, Elements { buf, count, datatype });
    pub unsafe extern "C" fn MPI_File_read_at_all_end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int = end(fh, buf, At::Offset(0), Direction::Read, status);
    pub unsafe extern "C" fn MPI_File_write_at_all_end(fh: Handle, buf: *const c_void, status: *mut MpiStatus) -> c_int = end(fh, buf, At::Offset(0), Direction::Write, status);
    pub unsafe extern "C" fn MPI_File_read_all_end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int = end(fh, buf, At::Individual, Direction::Read, status);
    pub unsafe extern "C" fn MPI_File_write_all_end(fh: Handle, buf: *const c_void, status: *mut MpiStatus) -> c_int = end(fh, buf, At::Individual, Direction::Write, status);
    pub unsafe extern "C" fn MPI_File_read_ordered_end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int = end(fh, buf, At::Ordered, Direction::Read, status);
    pub unsafe extern "C" fn MPI_File_write_ordered_end(fh: Handle, buf: *const c_void, status: *mut MpiStatus) -> c_int = end(fh, buf, At::Ordered, Direction::Write, status);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_handles_are_recognised_by_shape() {
        assert!(is_file(MPI_FILE_NULL));
        assert!(is_file(FIRST_HANDLE + 0x30 + FILE_MARK));
        assert!(!is_file(FIRST_HANDLE + 0x30));
        assert!(!is_file(MPI_COMM_WORLD));
    }
}
