//! Whether a process still lives: the model asks it of actors, an actor
//! asks it of the model; and how many threads it has.

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

/// How many threads process `pid` has (`/proc/PID/stat`'s `num_threads`);
/// `None` where that cannot be read.
pub fn threads(pid: u32) -> Option<u32> {
    threads_in_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 20 of a `/proc/PID/stat` line, `num_threads` (counted after the
/// command name's closing parenthesis, since the name may hold spaces and
/// parentheses itself).
fn threads_in_stat(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(17)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_count_is_the_twentieth_field_whatever_the_name() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 12345 1000 100";
        assert_eq!(threads_in_stat(line), Some(7));
        assert_eq!(threads_in_stat("4242 (x) S 1"), None);
        assert_eq!(threads_in_stat("garbage"), None);
        assert!(threads(std::process::id()).is_some_and(|n| n >= 1));
        assert_eq!(threads(u32::MAX), None);
    }
}
