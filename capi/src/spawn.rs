//! Process creation (MPI 4.1 §11.8): the C arguments of `mpi::spawn`.
//! The commands, arguments and info are read at the root only (§11.8.2);
//! an argument the root refuses still takes the group through the call,
//! so that the others hear of it instead of waiting.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::*;
use mpi::spawn::SpawnCommand;

use crate::port::str_arg as string;

/// The arguments of one command: `MPI_ARGV_NULL` (none), or strings up
/// to a null pointer (§11.8.2). At most this many are read, so that an
/// array without its null is refused instead of read past.
const MAX_ARGS: usize = 1 << 16;

/// # Safety
/// `argv` is null or a null-terminated array of NUL-terminated strings.
unsafe fn arguments(argv: *mut *mut c_char, what: &str) -> R<Vec<String>> {
    let mut args = Vec::new();
    if argv.is_null() {
        return Ok(args);
    }
    for i in 0..MAX_ARGS {
        // SAFETY: the array holds the strings and then a null pointer (this
        // function's contract), and every element before that null was not it.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            return Ok(args);
        }
        // SAFETY: an element before the terminating null: a string.
        args.push(unsafe { string(p, what)? });
    }
    Err(Fail::new(MPI_ERR_ARG, format!("{what} has more than {MAX_ARGS} entries: is its last one a null pointer?")))
}

/// One command from the root's arguments, with the reserved info keys
/// this library reads (`wdir`, `path`; §11.8.4: others are ignored, as the
/// standard lets an implementation).
fn command(st: &State, program: String, args: Vec<String>, maxprocs: c_int, info: Handle) -> R<SpawnCommand> {
    let info = st.info_or_null(info)?;
    let maxprocs = u32::try_from(maxprocs).ok().filter(|m| *m > 0).ok_or_else(|| {
        Fail::new(MPI_ERR_ARG, format!("maxprocs {maxprocs} for {program:?}: ask for at least one process"))
    })?;
    let wdir = info.get("wdir")?.map(str::to_string);
    let path = info.get("path")?.map(str::to_string);
    Ok(SpawnCommand { program, args, maxprocs, wdir, path })
}

/// The spawn proper: `commands` is the root's reading of its arguments
/// (ignored elsewhere); the new intercommunicator and every process's
/// error code are written after the collective part.
///
/// # Safety
/// `intercomm` is null or writable; `errcodes` is null
/// (`MPI_ERRCODES_IGNORE`) or has room for a code per process: those a
/// spawn that succeeds starts, and, when it fails, those asked for as
/// `asked` says: at the root (`asked.0`, which may read the root's
/// arrays), and elsewhere (`asked.1`, a value of the caller's that reads
/// no memory, §11.8.2).
unsafe fn spawn(
    call: &str,
    comm: Handle,
    root: c_int,
    commands: impl FnOnce(&State) -> R<Vec<SpawnCommand>>,
    asked: (impl FnOnce() -> usize, usize),
    intercomm: *mut Handle,
    errcodes: *mut c_int,
) -> c_int {
    with_state(call, comm, |st| {
        let c = &st.comm(comm)?.comm;
        // The commands, their counts and infos are the root's only
        // (§11.8.2): elsewhere they may be anything, and are not read.
        let at_root = c.rank() == root;
        let (cmds, asked) = match at_root {
            true => (commands(st), (asked.0)()),
            false => (Ok(Vec::new()), asked.1),
        };
        let outcome = match cmds {
            Ok(cmds) => c.spawn(root, &cmds).map_err(Fail::from),
            Err(f) => {
                // The group is told, not left waiting for this root.
                c.meet_refused(root, false)?;
                Err(f)
            }
        };
        // One code per process: those started, or (none was) those asked for.
        let (code, n) = match &outcome {
            Ok(s) => (MPI_SUCCESS, s.count as usize),
            Err(f) => (f.class, asked),
        };
        if !errcodes.is_null() {
            for i in 0..n {
                // SAFETY: `errcodes` is not null (checked above) and has room for one code per process (`spawn`'s
                // `# Safety`): for a spawn that succeeded, the `n` processes it started; for one that failed, the `n` =
                // `asked` codes the caller asked for; so entry `i` < `n` is inside it and writable for this call.
                unsafe { errcodes.add(i).write(code) };
            }
        }
        let made = outcome?;
        if intercomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "intercomm is a null pointer"));
        }
        let h = crate::comm_table::register(st, Some(made.intercomm), comm)?;
        // SAFETY: `intercomm` is not null (checked above) and valid for writing one handle for this call (`spawn`'s
        // `# Safety`, the MPI call's out-argument).
        unsafe { put(intercomm, h, "intercomm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: Handle,
    root: c_int,
    comm: Handle,
    intercomm: *mut Handle,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let read = |st: &State| {
        // SAFETY: at the root, `command` is a string and `argv`
        // `MPI_ARGV_NULL` or a null-terminated array of strings (§11.8.2).
        let (program, args) = unsafe { (string(command, "command")?, arguments(argv, "argv")?) };
        Ok(vec![self::command(st, program, args, maxprocs, info)?])
    };
    let asked = maxprocs.max(0) as usize;
    // SAFETY: `array_of_errcodes` has room for a code per process or is
    // MPI_ERRCODES_IGNORE; `intercomm` is writable (§11.8.2).
    unsafe { spawn("MPI_Comm_spawn", comm, root, read, (|| asked, asked), intercomm, array_of_errcodes) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const Handle,
    root: c_int,
    comm: Handle,
    intercomm: *mut Handle,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let n = count.max(0) as usize;
    let read = |st: &State| {
        if count <= 0 || array_of_commands.is_null() || array_of_maxprocs.is_null() || array_of_info.is_null() {
            return Err(Fail::new(
                MPI_ERR_ARG,
                format!("count {count} must be positive and the arrays of commands, maxprocs and info not null"),
            ));
        }
        let mut cmds = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: at the root the arrays have `count` elements, and
            // `array_of_argv` is MPI_ARGVS_NULL or has `count` argument
            // arrays (§11.8.3); each string and argument array as in
            // MPI_Comm_spawn.
            let (program, args, maxprocs, info) = unsafe {
                let argv = if array_of_argv.is_null() { std::ptr::null_mut() } else { *array_of_argv.add(i) };
                (
                    string(*array_of_commands.add(i), "array_of_commands[i]")?,
                    arguments(argv, "array_of_argv[i]")?,
                    *array_of_maxprocs.add(i),
                    *array_of_info.add(i),
                )
            };
            cmds.push(command(st, program, args, maxprocs, info)?);
        }
        Ok(cmds)
    };
    // The codes array has room for the sum of maxprocs (§11.8.3), which
    // the root's arguments give.
    let asked = || match array_of_maxprocs.is_null() {
        true => 0,
        // SAFETY: at the root, `count` elements (§11.8.3).
        false => (0..n).map(|i| unsafe { *array_of_maxprocs.add(i) }.max(0) as usize).sum(),
    };
    // SAFETY: at the root, `array_of_maxprocs` has `count` entries, read by `asked` (`spawn`'s `asked.0`), and
    // `array_of_errcodes` is MPI_ERRCODES_IGNORE or has room for their sum; elsewhere the arrays are not read and a
    // failed spawn writes no code (`asked.1` is 0); `intercomm` is null or points to one writable handle for this call
    // (MPI_Comm_spawn_multiple, MPI 4.1 §11.8.3): `spawn`'s `# Safety`.
    unsafe { spawn("MPI_Comm_spawn_multiple", comm, root, read, (asked, 0), intercomm, array_of_errcodes) }
}
