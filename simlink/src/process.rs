//! Whether a process still lives: the model asks it of actors, an actor
//! asks it of the model.

/// Whether process `pid` exists and has not exited. A zombie (exited, not
/// yet reaped by its parent) still answers `kill(pid, 0)`, so /proc is asked
/// for its state first; without /proc, `kill(pid, 0)` decides.
pub fn alive(pid: u32) -> bool {
    if let Some(s) = state(pid) {
        return !matches!(s, 'Z' | 'X' | 'x');
    }
    // SAFETY: kill with signal 0 performs only the existence/permission
    // check and sends nothing.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The state letter of `pid` from `/proc/PID/stat` (`'X'` when the process
/// is gone but /proc exists, `'?'` when the line is unreadable), or `None`
/// where there is no /proc.
pub fn state(pid: u32) -> Option<char> {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The command name may contain spaces and parentheses: the state is
        // the first field after the last ')'.
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()).or(Some('?')),
        Err(_) if std::path::Path::new("/proc/self/stat").exists() => Some('X'),
        Err(_) => None,
    }
}
