//! A PMI-1 client (the "simple" wire protocol of MPICH's process managers),
//! so that standard launchers start our ranks: MPICH's hydra
//! (`mpiexec.hydra -n 4 ./prog`) hands each process `PMI_FD` (a connected
//! socket), `PMI_RANK` and `PMI_SIZE`, or `PMI_PORT` (`host:port`) and
//! `PMI_ID`. The ranks then exchange their addresses through the launcher's
//! key-value space (`put`, `barrier_in`, `get`) instead of `dnrun`'s job
//! directory.
//!
//! Each command is one line of `key=value` words starting with `cmd=`, and
//! each has one reply line: `init` → `response_to_init`, `get_maxes` →
//! `maxes`, `get_appnum` → `appnum`, `get_my_kvsname` → `my_kvsname`,
//! `put` → `put_result`, `barrier_in` → `barrier_out`, `get` →
//! `get_result`, `finalize` → `finalize_ack`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::error::TransportError;

/// The connection to the process manager, and what it told us.
pub struct Pmi {
    reader: BufReader<File>,
    writer: File,
    /// This process's rank.
    pub rank: u32,
    /// The number of processes.
    pub size: u32,
    /// The job's key-value space.
    pub kvsname: String,
    /// Longest value the space takes.
    pub vallen_max: usize,
}

fn err(msg: String) -> TransportError {
    TransportError::Config(format!("PMI: {msg}"))
}

/// The key under which [`words`] keeps a word that is not `key=value`.
pub const STRAY: &str = "";

/// The `key=value` words of a line; a word without `=` (the rest of a
/// value that held a space, which the protocol cannot carry) is kept
/// under [`STRAY`], so that a server can refuse the line rather than
/// store a value cut short.
pub fn words(line: &str) -> HashMap<String, String> {
    line.split_whitespace()
        .map(|w| match w.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (STRAY.to_string(), w.to_string()),
        })
        .collect()
}

/// The connection is taken once per process.
static TAKEN: AtomicBool = AtomicBool::new(false);
/// The connection after the address exchange, kept for `finalize`.
static KEPT: Mutex<Option<Pmi>> = Mutex::new(None);

/// Set by `dnrun` next to the PMI-1 socket it gives every rank (for
/// programs built against another MPI), to say that our own library,
/// which `dnrun` starts through `DN_RANK`, may close it.
pub const SERVED_BY_DNRUN: &str = "DN_PMI_SERVED";

/// Close the PMI-1 socket `dnrun` gave this process if the process does not
/// use it (it was started through `DN_RANK`), so that the rank holds no
/// descriptor it does not use; the server's thread for it ends.
pub fn release_unused() {
    if !crate::knobs::is_set(crate::job::ENV_RANK) || !crate::knobs::is_set(SERVED_BY_DNRUN) {
        return;
    }
    let Some(fd) = std::env::var("PMI_FD").ok().and_then(|v| v.trim().parse::<i32>().ok()) else { return };
    if TAKEN.swap(true, Ordering::SeqCst) {
        return;
    }
    // SAFETY: dnrun opened this descriptor for this process and named it
    // in PMI_FD (with DN_PMI_SERVED); nothing else in the process uses
    // it, and TAKEN makes this the only owner. Dropping the File closes it.
    drop(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
}

/// Whether a PMI process manager started this process.
pub fn launched_by_pmi() -> bool {
    std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some()
}

fn env_u32(k: &str) -> Result<u32, TransportError> {
    let v = std::env::var(k).map_err(|_| err(format!("{k} is not set")))?;
    v.trim().parse().map_err(|_| err(format!("{k}={v:?} is not a number")))
}

impl Pmi {
    /// Connect to the process manager that started this process (`None`
    /// when none did) and run `init`, `get_maxes` and `get_my_kvsname`.
    pub fn from_env() -> Result<Option<Pmi>, TransportError> {
        if !launched_by_pmi() {
            return Ok(None);
        }
        if TAKEN.swap(true, Ordering::SeqCst) {
            return Err(err("the connection to the process manager was already taken".into()));
        }
        let (file, rank, size) = if let Ok(fd) = std::env::var("PMI_FD") {
            let fd: i32 = fd.trim().parse().map_err(|_| err(format!("PMI_FD={fd:?} is not a descriptor")))?;
            // SAFETY: the process manager opened this descriptor for us and
            // told us its number; nothing else in the process uses it, and
            // TAKEN makes this the only File that owns it.
            let f = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
            if f.metadata().is_err() {
                return Err(err(format!("PMI_FD={fd} is not an open descriptor")));
            }
            (f, env_u32("PMI_RANK")?, env_u32("PMI_SIZE")?)
        } else {
            Self::connect_port()?
        };
        let writer = file.try_clone().map_err(|e| err(format!("cannot use the PMI connection: {e}")))?;
        let mut p = Pmi { reader: BufReader::new(file), writer, rank, size, kvsname: String::new(), vallen_max: 256 };
        let r = p.call("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init")?;
        if r.get("rc").is_some_and(|rc| rc != "0") {
            return Err(err(format!("the process manager refused PMI version 1.1: {r:?}")));
        }
        let m = p.call("cmd=get_maxes", "maxes")?;
        p.vallen_max = m.get("vallen_max").and_then(|v| v.parse().ok()).unwrap_or(256);
        let k = p.call("cmd=get_my_kvsname", "my_kvsname")?;
        p.kvsname = k.get("kvsname").cloned().ok_or_else(|| err(format!("no kvsname in {k:?}")))?;
        if p.rank >= p.size {
            return Err(err(format!("rank {} is not below size {}", p.rank, p.size)));
        }
        Ok(Some(p))
    }

    /// `PMI_PORT=host:port` and `PMI_ID`: connect, and learn rank and size
    /// from the `initack` exchange.
    fn connect_port() -> Result<(File, u32, u32), TransportError> {
        let port = std::env::var("PMI_PORT").map_err(|_| err("neither PMI_FD nor PMI_PORT is set".into()))?;
        let id = env_u32("PMI_ID")?;
        let s =
            std::net::TcpStream::connect(&port).map_err(|e| err(format!("cannot connect to PMI_PORT={port}: {e}")))?;
        let file = File::from(std::os::fd::OwnedFd::from(s));
        let mut w = file.try_clone().map_err(|e| err(format!("{e}")))?;
        let mut r = BufReader::new(file.try_clone().map_err(|e| err(format!("{e}")))?);
        writeln!(w, "cmd=initack pmiid={id}").map_err(|e| err(format!("cannot write to the process manager: {e}")))?;
        // The manager answers `initack`, then `set size`, `set rank` and
        // `set debug` (as MPICH's client reads them): all four are read
        // here, so that none is left to be taken for the reply to `init`.
        let (mut rank, mut size, mut acked, mut debug) = (None, None, false, false);
        while !(acked && rank.is_some() && size.is_some() && debug) {
            let mut line = String::new();
            if r.read_line(&mut line).map_err(|e| err(format!("{e}")))? == 0 {
                return Err(err("the process manager closed the connection during initack".into()));
            }
            let w = words(&line);
            match (w.get("cmd").map(String::as_str), w.get("size"), w.get("rank")) {
                (Some("initack"), _, _) => acked = true,
                (Some("set"), Some(s), _) => size = s.parse().ok(),
                (Some("set"), _, Some(x)) => rank = x.parse().ok(),
                (Some("set"), None, None) if w.contains_key("debug") => debug = true,
                _ => {}
            }
        }
        Ok((file, rank.unwrap_or(0), size.unwrap_or(1)))
    }

    /// Send one command line and read the reply, which must be `want`.
    fn call(&mut self, line: &str, want: &str) -> Result<HashMap<String, String>, TransportError> {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| err(format!("cannot write to the process manager: {e}")))?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply).map_err(|e| err(format!("cannot read from the process manager: {e}")))?
            == 0
        {
            return Err(err(format!("the process manager closed the connection (after {line:?})")));
        }
        let w = words(&reply);
        if w.get("cmd").map(String::as_str) != Some(want) {
            return Err(err(format!("expected cmd={want} after {line:?}, got {:?}", reply.trim())));
        }
        Ok(w)
    }

    /// Publish `key` = `value` in the job's space (visible after a barrier).
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), TransportError> {
        if value.len() > self.vallen_max || value.contains(char::is_whitespace) {
            return Err(err(format!("value {value:?} does not fit the key-value space")));
        }
        let r = self.call(&format!("cmd=put kvsname={} key={key} value={value}", self.kvsname), "put_result")?;
        match r.get("rc").map(String::as_str) {
            Some("0") | None => Ok(()),
            _ => Err(err(format!("put {key} refused: {r:?}"))),
        }
    }

    /// Wait until every process has reached the barrier (and its puts are visible).
    pub fn barrier(&mut self) -> Result<(), TransportError> {
        self.call("cmd=barrier_in", "barrier_out").map(|_| ())
    }

    /// The value of `key` in the job's space.
    pub fn get(&mut self, key: &str) -> Result<String, TransportError> {
        let r = self.call(&format!("cmd=get kvsname={} key={key}", self.kvsname), "get_result")?;
        match (r.get("rc").map(String::as_str), r.get("value")) {
            (Some("0") | None, Some(v)) => Ok(v.clone()),
            _ => Err(err(format!("no {key} in the key-value space: {r:?}"))),
        }
    }

    /// Keep the connection until [`finalize`], and watch it: a process
    /// manager that goes away before then (`mpiexec.hydra` and its proxy
    /// killed with `kill -9`) has left this rank nothing to finish for, so
    /// the rank ends, saying why, instead of running on alone
    /// ([`watch_hangup`]).
    pub fn keep(self) {
        use std::os::fd::AsRawFd;
        watch_hangup(self.writer.as_raw_fd());
        *KEPT.lock().unwrap_or_else(|p| p.into_inner()) = Some(self);
    }
}

/// Set once this process has sent `finalize`: the process manager may then
/// close the connection.
static FINALIZING: AtomicBool = AtomicBool::new(false);

/// A thread that waits for the process manager to hang up the connection
/// `fd` (poll for `POLLRDHUP`, which replies do not wake) and ends the
/// process when it does before [`finalize`]. It reads nothing, so the
/// calls on the connection are undisturbed.
fn watch_hangup(fd: std::os::fd::RawFd) {
    let spawned = std::thread::Builder::new().name("pmi-watch".into()).spawn(move || loop {
        let mut p = libc::pollfd { fd, events: libc::POLLRDHUP, revents: 0 };
        // SAFETY: `p` is one valid pollfd for the call; `fd` stays open
        // while the process runs before finalize (the kept connection owns
        // it), and after finalize this thread only returns.
        let n = unsafe { libc::poll(&mut p, 1, -1) };
        if FINALIZING.load(Ordering::SeqCst) {
            return;
        }
        if n < 0 {
            continue; // EINTR
        }
        if p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            eprintln!(
                "MPI: the process manager that started this rank (PMI) closed its connection before MPI_Finalize: \
                 the launcher is gone; ending this rank"
            );
            std::process::exit(1);
        }
    });
    if let Err(e) = spawned {
        eprintln!("MPI: cannot watch the PMI connection ({e}); this rank will not notice its launcher dying");
    }
}

/// Tell the process manager this process is done (`cmd=finalize`), if one
/// started it.
pub fn finalize() -> Result<(), TransportError> {
    FINALIZING.store(true, Ordering::SeqCst);
    let p = KEPT.lock().unwrap_or_else(|p| p.into_inner()).take();
    match p {
        Some(mut p) => {
            let r = p.call("cmd=finalize", "finalize_ack").map(|_| ());
            // Shut the connection down before closing it: the watcher
            // thread's poll holds a reference to the socket, so a close
            // alone would not end it, nor tell the manager we are gone.
            // SAFETY: `shutdown` on the descriptor `p` owns and keeps open
            // until it is dropped below; it touches no memory.
            unsafe { libc::shutdown(std::os::fd::AsRawFd::as_raw_fd(&p.writer), libc::SHUT_RDWR) };
            r
        }
        None => Ok(()),
    }
}

/// A job id all ranks derive alike from the key-value space's name.
pub fn job_id(kvsname: &str) -> u32 {
    fnv1a(kvsname.as_bytes())
}

/// The 32-bit FNV-1a hash of `bytes`: the same on every process, for the
/// identifiers ranks must derive alike without talking (job ids, string
/// tags, host names).
pub fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    /// A process manager of our own over a socket pair, answering as hydra
    /// does; the client's side goes through the same code as PMI_FD.
    #[test]
    fn a_client_speaks_pmi_1_to_a_process_manager() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let pm = std::thread::spawn(move || {
            let mut r = BufReader::new(theirs.try_clone().unwrap());
            let mut w = theirs;
            let mut kv = HashMap::new();
            let mut log = Vec::new();
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap() == 0 {
                    break;
                }
                let m = words(&line);
                let reply = match m["cmd"].as_str() {
                    "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".to_string(),
                    "get_maxes" => "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024".into(),
                    "get_my_kvsname" => "cmd=my_kvsname kvsname=kvs_7_0".into(),
                    "put" => {
                        kv.insert(m["key"].clone(), m["value"].clone());
                        "cmd=put_result rc=0 msg=success".into()
                    }
                    "barrier_in" => "cmd=barrier_out".into(),
                    "get" => match kv.get(&m["key"]) {
                        Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
                        None => "cmd=get_result rc=-1 msg=key_not_found".into(),
                    },
                    "finalize" => "cmd=finalize_ack".into(),
                    other => panic!("unexpected {other}"),
                };
                log.push(m["cmd"].clone());
                writeln!(w, "{reply}").unwrap();
            }
            log
        });
        let file = File::from(std::os::fd::OwnedFd::from(ours));
        let writer = file.try_clone().unwrap();
        let mut p =
            Pmi { reader: BufReader::new(file), writer, rank: 0, size: 1, kvsname: String::new(), vallen_max: 0 };
        p.call("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init").unwrap();
        p.vallen_max = p.call("cmd=get_maxes", "maxes").unwrap()["vallen_max"].parse().unwrap();
        p.kvsname = p.call("cmd=get_my_kvsname", "my_kvsname").unwrap()["kvsname"].clone();
        p.put("dn-udp-0", "127.0.0.1:4000").unwrap();
        p.barrier().unwrap();
        assert_eq!(p.get("dn-udp-0").unwrap(), "127.0.0.1:4000");
        let e = p.get("missing").unwrap_err().to_string();
        assert!(e.contains("no missing"), "{e}");
        assert!(p.put("k", "has space").is_err(), "a value with a space would corrupt the line");
        p.keep();
        finalize().unwrap();
        assert!(KEPT.lock().unwrap().is_none());
        // Dropping the connection ends the manager's loop.
        let log = pm.join().unwrap();
        assert_eq!(log, ["init", "get_maxes", "get_my_kvsname", "put", "barrier_in", "get", "get", "finalize"]);
        assert_eq!(job_id("kvs_7_0"), job_id("kvs_7_0"));
        assert_ne!(job_id("kvs_7_0"), job_id("kvs_8_0"));
    }
}
