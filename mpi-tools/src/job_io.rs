//! One thread for every rank's output and exit (issue 28): `dnrun` used to
//! keep three threads per rank (a forwarder for stdout, one for stderr, a
//! waiter), which at 1,024 ranks is 3,072 threads that wake for nothing.
//! Here one epoll set holds each rank's two output pipes and a pidfd that
//! becomes readable when the rank exits; the launcher's loop waits on it.
//!
//! Output passes through a line at a time, so that two ranks' lines never
//! interleave, with `[rank] ` in front when tagging; a last line without a
//! newline gets one. A line longer than [`LINE_MAX`] is passed on in pieces
//! rather than held without bound.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::Duration;

/// The longest line held back waiting for its newline.
pub const LINE_MAX: usize = 64 * 1024;

/// What an epoll event is about, in its token's low two bits.
const OUT: u64 = 0;
const ERR: u64 = 1;
const EXIT: u64 = 2;

/// One output pipe of a rank.
struct Stream {
    fd: OwnedFd,
    /// The start of a line still waiting for its newline.
    pending: Vec<u8>,
    to_stderr: bool,
}

/// A rank being watched.
struct Watched {
    rank: u32,
    pid: libc::pid_t,
    out: Option<Stream>,
    err: Option<Stream>,
    /// Readable once the process has exited; `None` without pidfds (Linux
    /// before 5.3) or once reaped.
    pidfd: Option<OwnedFd>,
    exited: bool,
}

/// Every rank's output pipes and exit, behind one epoll set.
pub struct JobIo {
    epoll: OwnedFd,
    ranks: Vec<Watched>,
    tag: bool,
    /// Some rank has no pidfd: poll its exit with `waitpid` instead.
    polling_exits: bool,
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor this process owns; no memory involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(last_error());
    }
    Ok(())
}

/// A pidfd for `pid` (a child of this process), or `None` where the kernel
/// has none.
fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; it touches no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a descriptor the kernel just created for us, owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

impl JobIo {
    /// An empty set; `tag` prefixes each line with `[rank] `.
    pub fn new(tag: bool) -> std::io::Result<JobIo> {
        // SAFETY: epoll_create1 returns a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(last_error());
        }
        // SAFETY: a descriptor the kernel just created for us.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(JobIo { epoll, ranks: Vec::new(), tag, polling_exits: false })
    }

    fn watch_fd(&self, fd: RawFd, token: u64) -> std::io::Result<()> {
        let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLHUP) as u32, u64: token };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call;
        // both descriptors are open and ours.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(last_error());
        }
        Ok(())
    }

    /// Watch `child`, rank `rank`: take its stdout and stderr pipes (if
    /// piped) and open a pidfd for its exit. From now on it is reaped here,
    /// never through `Child::wait`.
    pub fn add(&mut self, rank: u32, child: &mut Child) -> std::io::Result<()> {
        let idx = self.ranks.len() as u64;
        let pid = child.id() as libc::pid_t;
        let stream = |fd: OwnedFd, to_stderr: bool| Stream { fd, pending: Vec::new(), to_stderr };
        let out = child.stdout.take().map(|o| stream(OwnedFd::from(o), false));
        let err = child.stderr.take().map(|e| stream(OwnedFd::from(e), true));
        for (s, kind) in [(&out, OUT), (&err, ERR)] {
            if let Some(s) = s {
                set_nonblocking(s.fd.as_raw_fd())?;
                self.watch_fd(s.fd.as_raw_fd(), (idx << 2) | kind)?;
            }
        }
        let pidfd = pidfd_open(pid);
        match &pidfd {
            Some(fd) => self.watch_fd(fd.as_raw_fd(), (idx << 2) | EXIT)?,
            None => self.polling_exits = true,
        }
        self.ranks.push(Watched { rank, pid, out, err, pidfd, exited: false });
        Ok(())
    }

    /// The process ids of the ranks that have not exited yet.
    pub fn running(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.ranks.iter().filter(|w| !w.exited).map(|w| (w.rank, w.pid as u32))
    }

    /// Whether some rank's output pipe is still open.
    pub fn output_open(&self) -> bool {
        self.ranks.iter().any(|w| w.out.is_some() || w.err.is_some())
    }

    /// Wait up to `timeout` for output or exits; pass complete lines on and
    /// return the ranks that exited meanwhile, in the order seen.
    pub fn poll(&mut self, timeout: Duration) -> std::io::Result<Vec<(u32, std::io::Result<ExitStatus>)>> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 64];
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: the buffer holds `events.len()` entries the kernel may fill.
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, ms) };
        if n < 0 {
            let e = last_error();
            return if e.kind() == std::io::ErrorKind::Interrupted { Ok(Vec::new()) } else { Err(e) };
        }
        let mut exited = Vec::new();
        for ev in &events[..n as usize] {
            let (idx, kind) = ((ev.u64 >> 2) as usize, ev.u64 & 3);
            match kind {
                OUT | ERR => self.read(idx, kind),
                _ => {
                    if let Some(r) = self.reap(idx) {
                        exited.push(r);
                    }
                }
            }
        }
        if self.polling_exits {
            for idx in 0..self.ranks.len() {
                if !self.ranks[idx].exited && self.ranks[idx].pidfd.is_none() {
                    if let Some(r) = self.reap(idx) {
                        exited.push(r);
                    }
                }
            }
        }
        Ok(exited)
    }

    /// Reap rank `idx` if it has exited.
    fn reap(&mut self, idx: usize) -> Option<(u32, std::io::Result<ExitStatus>)> {
        let w = self.ranks.get_mut(idx)?;
        if w.exited {
            return None;
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child; `status` outlives the call.
        let r = unsafe { libc::waitpid(w.pid, &mut status, libc::WNOHANG) };
        let result = match r {
            0 => return None,
            r if r < 0 => Err(last_error()),
            _ => Ok(ExitStatus::from_raw(status)),
        };
        w.exited = true;
        if let Some(fd) = w.pidfd.take() {
            // SAFETY: removing a descriptor we added; it stays open until dropped here.
            unsafe {
                libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd.as_raw_fd(), std::ptr::null_mut())
            };
        }
        Some((w.rank, result))
    }

    /// Read what `idx`'s pipe `kind` has and pass complete lines on; at the
    /// end of the stream, the rest with a newline.
    fn read(&mut self, idx: usize, kind: u64) {
        let tag = self.tag;
        let Some(w) = self.ranks.get_mut(idx) else { return };
        let rank = w.rank;
        let slot = if kind == OUT { &mut w.out } else { &mut w.err };
        let Some(s) = slot else { return };
        let mut buf = [0u8; 16 * 1024];
        // SAFETY: reading into a buffer we own, of its own length, from our
        // non-blocking pipe.
        let n = unsafe { libc::read(s.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = last_error();
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) {
                return;
            }
        }
        let to_stderr = s.to_stderr;
        if n <= 0 {
            // End of the stream (or a broken pipe): the rest, then close.
            take_lines(&mut s.pending, &[], true, |l| emit(rank, tag, to_stderr, l));
            *slot = None; // closes the pipe, which leaves the epoll set
            return;
        }
        take_lines(&mut s.pending, &buf[..n as usize], false, |l| emit(rank, tag, to_stderr, l));
    }
}

/// Append `data` to `pending` and hand every complete line (with its
/// newline) to `line`; at the end of the stream the rest, given a newline;
/// a line of [`LINE_MAX`] bytes without one goes out as it is.
pub(crate) fn take_lines(pending: &mut Vec<u8>, data: &[u8], end: bool, mut line: impl FnMut(&[u8])) {
    pending.extend_from_slice(data);
    let mut start = 0;
    while let Some(nl) = pending[start..].iter().position(|b| *b == b'\n') {
        line(&pending[start..start + nl + 1]);
        start += nl + 1;
    }
    pending.drain(..start);
    if end && !pending.is_empty() {
        pending.push(b'\n');
    }
    if (end && !pending.is_empty()) || pending.len() >= LINE_MAX {
        line(pending);
        pending.clear();
    }
}

/// Write one line (it ends with its newline) to our stdout or stderr in a
/// single write, with the rank's tag in front when asked.
fn emit(rank: u32, tag: bool, to_stderr: bool, line: &[u8]) {
    emit_raw(rank, tag, to_stderr, line)
}

/// [`emit`] by the `write` system call itself, never through a library's
/// buffer or `write` function (a rank that is a context writes through
/// `dnrun`'s own `write`, which comes here: see `crate::contexts::emulate`).
pub(crate) fn emit_raw(rank: u32, tag: bool, to_stderr: bool, line: &[u8]) {
    let mut out = if tag { format!("[{rank}] ").into_bytes() } else { Vec::with_capacity(line.len()) };
    out.extend_from_slice(line);
    let fd = if to_stderr { 2 } else { 1 };
    crate::progress::suspend(|| write_all_raw(fd, &out));
}

/// Write `out` to descriptor `fd` by the system call, whole unless the
/// descriptor is gone.
fn write_all_raw(fd: i32, out: &[u8]) {
    let mut done = 0;
    while done < out.len() {
        let rest = &out[done..];
        // SAFETY: the write system call on a buffer we own, of its length.
        let n = unsafe { libc::syscall(libc::SYS_write, fd, rest.as_ptr(), rest.len()) };
        if n > 0 {
            done += n as usize;
        } else if n < 0 && last_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else {
            break; // the output is gone (a closed pipe): drop the line
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn lines_are_passed_whole_and_the_last_one_gets_a_newline() {
        let mut pending = Vec::new();
        let mut got: Vec<String> = Vec::new();
        let mut take = |data: &[u8], end: bool, pending: &mut Vec<u8>| {
            take_lines(pending, data, end, |l| got.push(String::from_utf8_lossy(l).into_owned()));
        };
        take(b"one\ntw", false, &mut pending);
        take(b"o\nthr", false, &mut pending);
        take(b"ee", true, &mut pending);
        assert_eq!(got, ["one\n", "two\n", "three\n"]);
        got.clear();
        let long = vec![b'x'; LINE_MAX + 10];
        take_lines(&mut pending, &long, false, |l| got.push(format!("{}", l.len())));
        assert_eq!(got, [format!("{}", LINE_MAX + 10)], "an endless line is not held without bound");
        assert!(pending.is_empty());
    }

    #[test]
    fn exits_and_lines_of_several_processes_come_through_one_set() {
        let mut io = JobIo::new(true).unwrap();
        let mut kids = Vec::new();
        for (rank, script) in [(0u32, "echo a; echo b >&2; exit 3"), (1, "printf 'no newline'"), (2, "kill -9 $$")] {
            let mut c = Command::new("sh")
                .args(["-c", script])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            io.add(rank, &mut c).unwrap();
            kids.push(c);
        }
        let mut codes = std::collections::BTreeMap::new();
        // A hang guard only (the processes end at once). Not a count of
        // polls: once, in CI, 2,000 polls passed within 0.08 s with the
        // killed process not yet reaped, so polls can return at once
        // (likely a readable pidfd a moment before `waitpid` can reap it;
        // level-triggered epoll then reports it on every call).
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            for (rank, st) in io.poll(Duration::from_millis(10)).unwrap() {
                codes.insert(rank, st.unwrap());
            }
            if codes.len() == 3 && !io.output_open() {
                break;
            }
        }
        assert_eq!(codes[&0].code(), Some(3));
        assert_eq!(codes[&1].code(), Some(0));
        assert_eq!(codes[&2].signal(), Some(9));
        assert!(!io.output_open(), "every pipe reached its end");
        assert_eq!(io.running().count(), 0);
    }
}
