//! The environment (MPI 4.1 §11: init, finalize, abort, versions, time),
//! error classes and strings (§9.4-9.5), and the ABI chapter's
//! `MPI_Abi_get_version`. Communicators are `crate::communicator`.

use mpi::session::{Begin, Model, ThreadLevel};
use std::ffi::{c_char, c_int};

use mpi::Communicator;

use crate::abi::*;
use crate::comm_table::ParentHandle;
use crate::strings::put_string;
use crate::*;
use mpi::host::host_name;

#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_version(abi_major: *mut c_int, abi_minor: *mut c_int) -> c_int {
    if abi_major.is_null() || abi_minor.is_null() {
        return MPI_ERR_ARG;
    }
    // SAFETY: `abi_major` and `abi_minor` are not null (checked above) and are MPI_Abi_get_version's out-arguments,
    // each valid for writing one `int` for this call.
    unsafe {
        abi_major.write(ABI_VERSION.0);
        abi_minor.write(ABI_VERSION.1);
    }
    MPI_SUCCESS
}

/// Start the library for the world model (`MPI_Init`) or a session
/// (`MPI_Session_init`, MPI 4.1 §11.3): the state is made by the first
/// of them and shared by the others; the world model starts once.
pub(crate) fn init(required: c_int, by_session: bool) -> R<c_int> {
    let mut guard = lock();
    let life = &crate::process::process().life;
    let model = if by_session { Model::Session } else { Model::World };
    if life.begin(model).map_err(mpi::MpiError::from)? == Begin::Join {
        return Ok(life.thread_level().unwrap_or(ThreadLevel::Single).code());
    }
    let universe = mpi::initialize()?;
    let provided = ThreadLevel::granted(required);
    if provided == ThreadLevel::Multiple {
        crate::threads::grant(universe.waker()?);
    }
    let entry = |comm, name: &str| CommEntry {
        comm,
        errhandler: MPI_ERRORS_ARE_FATAL,
        name: name.into(),
        attrs: Default::default(),
        info: Default::default(),
        buffered: Default::default(),
        pending: None,
        session: None,
    };
    let comms = crate::comm_table::CommTable::predefined(
        entry(universe.world(), "MPI_COMM_WORLD"),
        entry(universe.self_communicator(), "MPI_COMM_SELF"),
    );
    let measuring = universe.measuring();
    universe.measure_calls();
    *guard = Some(State {
        measuring,
        universe,
        parent: ParentHandle::Unasked,
        comms,
        requests: Default::default(),
        types: Table::default(),
        wins: Table::default(),
        files: Table::default(),
        file_errhandler: MPI_ERRORS_RETURN,
        datareps: mpi::io::Registry::default(),
        datarep_fns: Default::default(),
        groups: Table::default(),
        keyvals: mpi::attr::Keyvals::new(crate::attr::FIRST_KEYVAL),
        // The end-of-call mark of DN_COMPUTE=measured (see finish_call).
        // A standing mark every call ends with, when something must happen
        // at each call's end (`finish_call`).
        deferred: if measuring || provided == ThreadLevel::Multiple {
            vec![crate::attr::Deferred::CallEnds]
        } else {
            Vec::new()
        },
        predefined_names: Default::default(),
        messages: Table::default(),
        mems: Table::default(),
        ops: Table::default(),
        type_attrs: Table::default(),
        buffered: Default::default(),
        bsent: Table::default(),
        idups: Vec::new(),
        partitioned: Table::default(),
        next_handle: FIRST_HANDLE,
        sessions: Table::default(),
        session_groups: Table::default(),
    });
    life.made(model, provided);
    Ok(provided.code())
}

fn init_call(call: &str, required: c_int, provided: *mut c_int) -> c_int {
    match init(required, false) {
        Ok(p) => {
            if !provided.is_null() {
                // SAFETY: `provided` is not null (checked above) and is MPI_Init_thread's out-argument, valid for
                // writing one `int` for this call (MPI_Init passes null). Note: `init_call` is a safe function, so this
                // rests on its two callers passing only null or that argument.
                unsafe { provided.write(p) };
            }
            MPI_SUCCESS
        }
        Err(f) => report(call, errh::InForce::Fatal, MPI_COMM_WORLD, None, f),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init_call("MPI_Init", MPI_THREAD_SINGLE, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    if let Err(e) = mpi::session::ThreadLevel::from_code(required) {
        return report("MPI_Init_thread", errh::InForce::Fatal, MPI_COMM_WORLD, None, e.into());
    }
    init_call("MPI_Init_thread", required, provided)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    // Without the lock: MPI_Initialized may be called from any thread at
    // any time (MPI 4.1 §11.2.1), even while another thread is in MPI.
    let v = crate::process::process().life.initialized();
    // SAFETY: `flag` is MPI_Initialized's out-argument, null or valid for writing one `int` for this call; `put`
    // refuses null.
    match unsafe { put(flag, v as c_int, "flag") } {
        Ok(()) => MPI_SUCCESS,
        Err(f) => f.class,
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    let v = crate::process::process().life.finalized();
    // SAFETY: `flag` is MPI_Finalized's out-argument, null or valid for writing one `int` for this call; `put` refuses
    // null.
    match unsafe { put(flag, v as c_int, "flag") } {
        Ok(()) => MPI_SUCCESS,
        Err(f) => f.class,
    }
}

#[no_mangle]
pub extern "C" fn MPI_Finalize() -> c_int {
    // First, as if MPI_COMM_SELF were freed: its attributes' delete
    // callbacks run, and may still call MPI (§11.2.2).
    if lock().is_some() {
        let rc = with_state("MPI_Finalize", MPI_COMM_SELF, |st| crate::attr::delete_all(st, MPI_COMM_SELF));
        if rc != MPI_SUCCESS {
            return rc;
        }
    }
    let mut guard = lock();
    let sessions_open = guard.as_ref().is_some_and(|st| !st.sessions.is_empty());
    // Sessions still open keep the library going; the last one's
    // MPI_Session_finalize ends it (MPI 4.1 §11.3.1).
    match crate::process::process().life.finalize(sessions_open) {
        Ok(true) => {}
        Ok(false) => return MPI_SUCCESS,
        Err(e) => {
            drop(guard);
            return report("MPI_Finalize", errh::InForce::Fatal, MPI_COMM_WORLD, None, mpi::MpiError::from(e).into());
        }
    }
    let Some(st) = guard.take() else { return MPI_SUCCESS };
    drop(guard);
    teardown(st, "MPI_Finalize")
}

/// End the library: what `MPI_Finalize` (or the last
/// `MPI_Session_finalize`) does once no model uses it.
pub(crate) fn teardown(mut st: State, call: &str) -> c_int {
    crate::process::process().life.end();
    let rank = st.universe.world().rank();
    // Requests still active are the program's error (§11.2.2): receives
    // are cancelled, the rest waited for (dropping a request waits), so
    // that no buffer is used after we return. An inactive persistent
    // request is not active: it is only freed here, silently.
    let left = st.requests.cancel_receives();
    if left > 0 {
        eprintln!(
            "{call} on rank {rank}: {left} requests still active (never waited for); receives among them cancelled"
        );
    }
    // Files the program did not close (§14.2.2 makes it erroneous): each
    // is dropped, which removes what only a close would (mpi::io::File's
    // Drop).
    let files = std::mem::take(&mut st.files);
    if !files.is_empty() {
        let n = files.len();
        let s = if n == 1 { "" } else { "s" };
        eprintln!(
            "{call} on rank {rank}: {n} file{s} still open (never closed with MPI_File_close); closed here, each on its own"
        );
    }
    drop(files);
    let unsent = crate::p2p::partitions::never_sent(&st);
    if unsent > 0 {
        eprintln!(
            "{call} on rank {rank}: {unsent} started partitioned sends never went (not every partition was marked \
             with MPI_Pready); their receivers will not complete"
        );
    }
    // The sends among them, and the buffered sends still in flight, go out
    // before the engine stops (dropping a request waits for it) — once
    // every rank is in finalize and has drained what it never received, so
    // that a rendezvous send nobody received ends too (it waits for its
    // receiver, which would otherwise wait in finalize's barrier for it).
    let pending = (std::mem::take(&mut st.requests), std::mem::take(&mut st.buffered));
    let comms = std::mem::take(&mut st.comms);
    // Windows still alive (the program's error, §11.2.2) stop being served.
    drop(std::mem::take(&mut st.wins));
    match st.universe.finalize_with((pending, comms)) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => report(call, errh::InForce::Fatal, MPI_COMM_WORLD, Some(rank), e.into()),
    }
}

#[no_mangle]
pub extern "C" fn MPI_Abort(comm: Handle, errorcode: c_int) -> c_int {
    // Inside a user-defined operation the running reduction holds the
    // state (§6.9.5 allows MPI_Abort there): no rank in the message then.
    let guard = (!crate::process::in_user_fn()).then(lock);
    let rank =
        guard.as_ref().and_then(|g| g.as_ref()).and_then(|s| s.comms.get(&MPI_COMM_WORLD)).map(|e| e.comm.rank());
    let on = if comm == MPI_COMM_WORLD { String::new() } else { format!(" (communicator {comm:#x})") };
    match rank {
        Some(r) => eprintln!("MPI_Abort on rank {r} with error code {errorcode}{on}"),
        None => eprintln!("MPI_Abort with error code {errorcode}{on}"),
    }
    // The launcher sees a rank leave with this code and stops the others.
    std::process::exit(mpi::abort_status(errorcode))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    with_state("MPI_Query_thread", MPI_COMM_WORLD, |_| {
        let level = crate::process::process().life.thread_level().unwrap_or(ThreadLevel::Single);
        // SAFETY: `provided` is MPI_Query_thread's out-argument, null or valid for writing one `int` for this call;
        // `put` refuses null.
        unsafe { put(provided, level.code(), "provided") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    with_state("MPI_Is_thread_main", MPI_COMM_WORLD, |_| {
        let main = crate::process::process().life.is_main_thread() as c_int;
        // SAFETY: `flag` is MPI_Is_thread_main's out-argument, null or valid for writing one `int` for this call; `put`
        // refuses null.
        unsafe { put(flag, main, "flag") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let host = host_name();
    // SAFETY: `name` has room for MPI_MAX_PROCESSOR_NAME characters and `resultlen` for one `int`, for this call, as
    // MPI 4.1 §9.1.2 requires of MPI_Get_processor_name's caller: `put_string`'s `# Safety` (it refuses null).
    match unsafe { put_string(name, resultlen, &host, MPI_MAX_PROCESSOR_NAME) } {
        Ok(()) => MPI_SUCCESS,
        Err(f) => f.class,
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    if version.is_null() || subversion.is_null() {
        return MPI_ERR_ARG;
    }
    // SAFETY: `version` and `subversion` are not null (checked above) and are MPI_Get_version's out-arguments (MPI 4.1
    // §9.1.1), each valid for writing one `int` for this call.
    unsafe {
        version.write(VERSION.0);
        subversion.write(VERSION.1);
    }
    MPI_SUCCESS
}

/// `MPI_Get_library_version`'s text.
pub fn library_version() -> String {
    format!(
        "DIMMnet-2 stack libmpi_abi {} (MPI {}.{} standard ABI {}.{}; backends: dimmnet simulator, udp, dpdk)",
        env!("CARGO_PKG_VERSION"),
        VERSION.0,
        VERSION.1,
        ABI_VERSION.0,
        ABI_VERSION.1
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    // SAFETY: `version` has room for MPI_MAX_LIBRARY_VERSION_STRING characters and `resultlen` for one `int`, for this
    // call, as MPI 4.1 §9.1.1 requires of MPI_Get_library_version's caller: `put_string`'s `# Safety` (it refuses
    // null).
    match unsafe { put_string(version, resultlen, &library_version(), MPI_MAX_LIBRARY_VERSION_STRING) } {
        Ok(()) => MPI_SUCCESS,
        Err(f) => f.class,
    }
}

#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 {
    // Simulated time on the simulator, the host's clock elsewhere.
    lock().as_ref().map_or(0.0, |st| {
        // A call like the others: the computation before it counts (the
        // mpi crate charges it), and its end starts the next burst.
        let t = st.universe.wtime();
        if st.measuring {
            st.universe.call_ends();
        }
        t
    })
}

#[no_mangle]
pub extern "C" fn MPI_Wtick() -> f64 {
    1e-9
}

/// `MPI_Pcontrol` (§15.2.4): a hook for profiling libraries, which the
/// library itself ignores, at every level. The header declares it
/// variadic, as the standard does; the arguments after `level` are never
/// read, which the C calling convention allows.
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(_level: c_int) -> c_int {
    MPI_SUCCESS
}

/// `MPI_Get_hw_resource_info` (§11.4.1, MPI 4.1): what this process runs
/// on (`mpi::host::hw_resource_info`), as an info object the caller frees.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_hw_resource_info(hw_info: *mut Handle) -> c_int {
    with_state("MPI_Get_hw_resource_info", MPI_COMM_WORLD, |st| {
        let pairs = mpi::host::hw_resource_info(st.universe.backend().ok())?;
        // SAFETY: `hw_info` is MPI_Get_hw_resource_info's out-argument, null or valid for writing one info handle for
        // this call; `hand_out` refuses null.
        unsafe { crate::info::hand_out(pairs, hw_info, "hw_info") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    let last = crate::process::with_thread(|t| t.last_error.borrow().clone());
    // A code or class the program added has the string it gave (empty
    // until it gives one, §9.5).
    let text = match (crate::errh::added_string(errorcode), last) {
        (Some(s), _) => s,
        (None, Some((c, msg))) if c == errorcode => format!("{}: {msg}", mpi::ErrorClass::text_of(errorcode)),
        (None, _) => mpi::ErrorClass::text_of(errorcode).to_string(),
    };
    // SAFETY: `string` has room for MPI_MAX_ERROR_STRING characters and `resultlen` for one `int`, for this call, as
    // MPI 4.1 §9.4 requires of MPI_Error_string's caller: `put_string`'s `# Safety` (it refuses null).
    match unsafe { put_string(string, resultlen, &text, MPI_MAX_ERROR_STRING) } {
        Ok(()) => MPI_SUCCESS,
        Err(f) => f.class,
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    // The library's codes are its classes; an added code has the class
    // it was added to (§9.5).
    let Some(class) = crate::errh::class_of(errorcode) else {
        return MPI_ERR_ARG;
    };
    // SAFETY: `errorclass` is MPI_Error_class's out-argument (MPI 4.1 §9.4), null or valid for writing one `int` for
    // this call; `put` refuses null.
    match unsafe { put(errorclass, class, "errorclass") } {
        Ok(()) => MPI_SUCCESS,
        Err(f) => f.class,
    }
}
