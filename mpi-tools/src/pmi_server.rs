//! `dnrun`'s PMI-1 server: the process-manager side of the "simple" wire
//! protocol that [`adi::pmi`] speaks as a client, so that a program built
//! against another MPI (MPICH's `mpicc`, whose library finds its rank, its
//! peers and its node-mates through PMI-1) runs under `dnrun`/`mpiexec` as
//! it runs under `mpiexec.hydra`.
//!
//! Each rank gets one end of a socket pair as `PMI_FD`, with `PMI_RANK` and
//! `PMI_SIZE`; a thread per rank answers its commands, one reply line per
//! command: `init`, `get_maxes`, `get_appnum`, `get_my_kvsname`,
//! `get_universe_size`, `put`, `get`, `barrier_in` (answered when every
//! rank has entered it, so that the puts before it are visible to the gets
//! after it) and `finalize`, which also marks the rank as finalized for the
//! launcher. `abort` has no reply: the launcher stops the job with the
//! exit code it names ([`PmiServer::aborted`]). Our own library, which `dnrun`
//! also gives `DN_RANK`, closes the socket unused (`DN_PMI_SERVED`,
//! [`adi::pmi::release_unused`]).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The longest key and value the space takes (as hydra's `get_maxes`).
const KEYLEN_MAX: usize = 64;
const VALLEN_MAX: usize = 1024;
const KVSNAME_MAX: usize = 256;
/// The longest command line read: a `put` of the longest key and value,
/// with room to spare.
const LINE_MAX: u64 = 4096;
/// The most keys the space holds: an MPI library puts a few per rank, and
/// a program that puts without end must get an error, not grow the
/// launcher (400,000 puts once took `dnrun` to 460 MB). At the longest
/// key and value this is about 70 MB.
pub const KEYS_MAX: usize = 65_536;

/// The job's key-value space and its barrier.
#[derive(Default)]
struct Space {
    values: HashMap<String, String>,
    /// Ranks inside the current barrier.
    arrived: u32,
    /// Barriers completed so far.
    generation: u64,
    /// The first rank that finalized or closed its connection: no barrier
    /// can complete after that, and the ranks in one are told so.
    gone: Option<u32>,
}

struct Shared {
    np: u32,
    kvsname: String,
    /// Where `finalize` leaves `finalized.RANK` for the launcher.
    job_dir: PathBuf,
    space: Mutex<Space>,
    released: Condvar,
    /// The first `abort`: rank and exit code.
    aborted: Mutex<Option<(u32, i32)>>,
}

/// A PMI-1 process manager for one job of `np` ranks, all on this host.
#[derive(Clone)]
pub struct PmiServer(Arc<Shared>);

impl PmiServer {
    /// A server for `np` ranks; `job` names the key-value space, and
    /// `job_dir` is the directory where the launcher looks for
    /// `finalized.RANK`.
    pub fn new(np: u32, job: u32, job_dir: PathBuf) -> PmiServer {
        let mut space = Space::default();
        // Every rank runs on this host: one node holding all of them
        // (MPICH reads this to find the ranks it shares memory with).
        space.values.insert("PMI_process_mapping".into(), format!("(vector,(0,1,{np}))"));
        PmiServer(Arc::new(Shared {
            np,
            kvsname: format!("dnrun_{job:08x}"),
            job_dir,
            space: Mutex::new(space),
            released: Condvar::new(),
            aborted: Mutex::new(None),
        }))
    }

    /// The key-value space's name (`get_my_kvsname`).
    pub fn kvsname(&self) -> &str {
        &self.0.kvsname
    }

    /// The rank that sent `abort` first, and the exit code it asked for:
    /// the launcher stops the job with that code (an MPI library waits for
    /// its process manager to end it after `abort`).
    pub fn aborted(&self) -> Option<(u32, i32)> {
        *self.0.aborted.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serve `rank` over `stream` on a thread of its own, until the rank
    /// closes its end (it exits) or finalizes.
    pub fn serve(&self, rank: u32, stream: UnixStream) -> std::io::Result<std::thread::JoinHandle<()>> {
        let shared = Arc::clone(&self.0);
        std::thread::Builder::new().name(format!("pmi-{rank}")).spawn(move || {
            if let Err(e) = serve(&shared, rank, stream) {
                eprintln!("dnrun: PMI connection of rank {rank}: {e}");
            }
        })
    }
}

fn lock(s: &Shared) -> MutexGuard<'_, Space> {
    s.space.lock().unwrap_or_else(|p| p.into_inner())
}

/// One rank's connection: read a command line, write its reply.
fn serve(s: &Shared, rank: u32, stream: UnixStream) -> std::io::Result<()> {
    let mut w = stream.try_clone()?;
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if (&mut r).take(LINE_MAX).read_line(&mut line)? == 0 {
            leave(s, rank);
            return Ok(());
        }
        if !line.ends_with('\n') && line.len() as u64 == LINE_MAX {
            // No command of PMI-1 is this long (a value is at most
            // VALLEN_MAX): refuse it rather than buffer without end.
            w.write_all(b"cmd=error rc=-1 msg=line_too_long\n")?;
            return Err(std::io::Error::other(format!("a command line longer than {LINE_MAX} bytes")));
        }
        let words = adi::pmi::words(&line);
        let cmd = words.get("cmd").map(String::as_str).unwrap_or("");
        let Some(reply) = answer(s, rank, cmd, &words) else {
            continue;
        };
        w.write_all(reply.as_bytes())?;
        w.write_all(b"\n")?;
        if cmd == "finalize" {
            leave(s, rank);
            return Ok(());
        }
    }
}

/// The reply to one command (`None`: the command has none).
fn answer(s: &Shared, rank: u32, cmd: &str, words: &HashMap<String, String>) -> Option<String> {
    let arg = |k: &str| words.get(k).map(String::as_str).unwrap_or("");
    let wrong_space = || arg("kvsname") != s.kvsname;
    Some(match cmd {
        "init" if arg("pmi_version") == "1" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into(),
        "init" => format!(
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=dnrun_serves_PMI-1_only_not_version_{}",
            arg("pmi_version")
        ),
        "get_maxes" => {
            format!("cmd=maxes kvsname_max={KVSNAME_MAX} keylen_max={KEYLEN_MAX} vallen_max={VALLEN_MAX}")
        }
        "get_appnum" => "cmd=appnum appnum=0".into(),
        "get_my_kvsname" => format!("cmd=my_kvsname kvsname={}", s.kvsname),
        "get_universe_size" => format!("cmd=universe_size size={} rc=0", s.np),
        "put" if wrong_space() => "cmd=put_result rc=-1 msg=no_such_kvsname".into(),
        "put" if arg("key").is_empty() || arg("key").len() > KEYLEN_MAX => {
            "cmd=put_result rc=-1 msg=key_missing_or_too_long".into()
        }
        "put" if arg("value").len() > VALLEN_MAX => "cmd=put_result rc=-1 msg=value_too_long".into(),
        // PMI-1 separates words by spaces, so a value cannot hold one: a
        // word that is not `key=value` would otherwise be dropped and the
        // value stored cut short.
        "put" if words.contains_key(adi::pmi::STRAY) => "cmd=put_result rc=-1 msg=value_holds_a_space".into(),
        "put" => {
            let mut sp = lock(s);
            if sp.values.len() >= KEYS_MAX && !sp.values.contains_key(arg("key")) {
                return Some(format!("cmd=put_result rc=-1 msg=key_value_space_full_at_{KEYS_MAX}_keys"));
            }
            sp.values.insert(arg("key").into(), arg("value").into());
            "cmd=put_result rc=0 msg=success".into()
        }
        "get" if wrong_space() => "cmd=get_result rc=-1 msg=no_such_kvsname".into(),
        "get" => match lock(s).values.get(arg("key")) {
            Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
            None => "cmd=get_result rc=-1 msg=key_not_found".into(),
        },
        "barrier_in" => match barrier(s) {
            Ok(()) => "cmd=barrier_out".into(),
            Err(gone) => format!("cmd=barrier_out rc=-1 msg=rank_{gone}_has_left_the_job"),
        },
        "finalize" => {
            let _ = adi::job::write_private(&s.job_dir.join(format!("finalized.{rank}")), b"");
            "cmd=finalize_ack".into()
        }
        "abort" => {
            let code = arg("exitcode").parse().unwrap_or(1);
            s.aborted.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert((rank, code));
            return None;
        }
        other => {
            eprintln!(
                "dnrun: rank {rank} sent PMI command {other:?}, which dnrun does not serve (it serves PMI-1's init, \
                 get_maxes, get_appnum, get_my_kvsname, get_universe_size, put, get, barrier_in and finalize)"
            );
            format!("cmd={other}_result rc=-1 msg=unsupported_by_dnrun")
        }
    })
}

/// Wait until all `np` ranks have entered this barrier; the rank that has
/// left the job instead, if one has (finalized, or closed its connection),
/// since the barrier can then never complete.
fn barrier(s: &Shared) -> Result<(), u32> {
    let mut sp = lock(s);
    if let Some(r) = sp.gone {
        return Err(r);
    }
    let generation = sp.generation;
    sp.arrived += 1;
    if sp.arrived == s.np {
        sp.arrived = 0;
        sp.generation += 1;
        s.released.notify_all();
        return Ok(());
    }
    while sp.generation == generation {
        if let Some(r) = sp.gone {
            sp.arrived -= 1;
            return Err(r);
        }
        sp = s.released.wait(sp).unwrap_or_else(|p| p.into_inner());
    }
    Ok(())
}

/// `rank` has finalized or closed its connection: release the ranks in a
/// barrier (with an error; a rank that dies is also stopped by the
/// launcher, but one that finalized early is not).
fn leave(s: &Shared, rank: u32) {
    lock(s).gone.get_or_insert(rank);
    s.released.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's side of the protocol: send a line, read the reply.
    struct Client(BufReader<UnixStream>, UnixStream);

    impl Client {
        fn call(&mut self, line: &str) -> HashMap<String, String> {
            writeln!(self.1, "{line}").unwrap();
            let mut reply = String::new();
            self.0.read_line(&mut reply).unwrap();
            adi::pmi::words(&reply)
        }
    }

    /// A fresh directory for a test's `finalized.RANK` files.
    fn test_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pmi-server-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn connect(server: &PmiServer, rank: u32) -> Client {
        let (ours, theirs) = UnixStream::pair().unwrap();
        server.serve(rank, theirs).unwrap();
        Client(BufReader::new(ours.try_clone().unwrap()), ours)
    }

    #[test]
    fn three_ranks_exchange_through_put_barrier_get() {
        let dir = test_dir("test");
        let server = PmiServer::new(3, 0xabc, dir.clone());
        let kvs = server.kvsname().to_string();
        let ranks: Vec<_> = (0..3)
            .map(|rank| {
                let mut c = connect(&server, rank);
                let kvs = kvs.clone();
                std::thread::spawn(move || {
                    assert_eq!(c.call("cmd=init pmi_version=1 pmi_subversion=1")["rc"], "0");
                    assert_eq!(c.call("cmd=get_maxes")["vallen_max"], "1024");
                    assert_eq!(c.call("cmd=get_appnum")["appnum"], "0");
                    assert_eq!(c.call("cmd=get_my_kvsname")["kvsname"], kvs);
                    let m = c.call(&format!("cmd=get kvsname={kvs} key=PMI_process_mapping"));
                    assert_eq!(m["value"], "(vector,(0,1,3))");
                    let put = c.call(&format!("cmd=put kvsname={kvs} key=addr-{rank} value=card{rank}=x"));
                    assert_eq!(put["rc"], "0");
                    assert_eq!(c.call("cmd=barrier_in")["cmd"], "barrier_out");
                    // After the barrier every put is visible; values may hold '='.
                    for r in 0..3 {
                        let g = c.call(&format!("cmd=get kvsname={kvs} key=addr-{r}"));
                        assert_eq!((g["rc"].as_str(), g["value"].as_str()), ("0", format!("card{r}=x").as_str()));
                    }
                    // A second barrier works as the first.
                    assert_eq!(c.call("cmd=barrier_in")["cmd"], "barrier_out");
                    assert_eq!(c.call(&format!("cmd=get kvsname={kvs} key=nothing"))["rc"], "-1");
                    assert_eq!(c.call("cmd=get kvsname=other key=addr-0")["msg"], "no_such_kvsname");
                    assert_eq!(c.call("cmd=spawn")["rc"], "-1", "an unknown command gets an error, not silence");
                    assert_eq!(c.call("cmd=finalize")["cmd"], "finalize_ack");
                })
            })
            .collect();
        for r in ranks {
            r.join().unwrap();
        }
        for r in 0..3 {
            assert!(dir.join(format!("finalized.{r}")).exists(), "finalize marks rank {r} for the launcher");
        }
        let mut c = connect(&server, 0);
        assert_eq!(c.call("cmd=init pmi_version=2")["rc"], "-1", "only PMI-1 is served");
        assert_eq!(server.aborted(), None);
        writeln!(c.1, "cmd=abort exitcode=3").unwrap();
        assert_eq!(c.call("cmd=get_appnum")["appnum"], "0", "abort has no reply of its own");
        assert_eq!(server.aborted(), Some((0, 3)));
        let long = "v".repeat(VALLEN_MAX + 1);
        assert_eq!(c.call(&format!("cmd=put kvsname={kvs} key=k value={long}"))["rc"], "-1");
        // A line without end is refused, not buffered: the connection closes.
        // The server may close while the line is still being written, so
        // the write may fail with a broken pipe: the reply still arrives.
        let endless = "x".repeat(LINE_MAX as usize * 2);
        let _ = writeln!(c.1, "cmd=put {endless}");
        let mut reply = String::new();
        c.0.read_line(&mut reply).unwrap();
        assert_eq!(adi::pmi::words(&reply)["msg"], "line_too_long");
        // Closed: end of file, or a reset when the server dropped unread bytes.
        // (The timeout only keeps a server that wrongly stays open from
        // hanging the test.)
        reply.clear();
        c.0.get_ref().set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        let closed = match c.0.read_line(&mut reply) {
            Ok(n) => n == 0,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        assert!(closed, "the connection stays open after refusing: {reply}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 30: a barrier after a rank finalized answers with an error
    /// (it hung until --timeout); so does one already waiting when a rank
    /// closes its connection. A value with a space is refused, not cut,
    /// and the space holds at most KEYS_MAX keys.
    #[test]
    fn barriers_after_a_rank_left_fail_and_the_space_is_bounded() {
        let dir = test_dir("left");
        let server = PmiServer::new(3, 1, dir.clone());
        let kvs = server.kvsname().to_string();
        let (mut a, b, mut c) = (connect(&server, 0), connect(&server, 1), connect(&server, 2));
        let waiting = std::thread::spawn(move || a.call("cmd=barrier_in"));
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(b); // rank 1 exits without a word
        let w = waiting.join().unwrap();
        assert_eq!(
            (w["cmd"].as_str(), w["rc"].as_str(), w["msg"].as_str()),
            ("barrier_out", "-1", "rank_1_has_left_the_job")
        );
        assert_eq!(c.call("cmd=barrier_in")["rc"], "-1", "a later barrier fails at once");
        let put = c.call(&format!("cmd=put kvsname={kvs} key=k value=two words"));
        assert_eq!((put["rc"].as_str(), put["msg"].as_str()), ("-1", "value_holds_a_space"));
        let server = PmiServer::new(1, 2, dir.clone());
        let mut d = connect(&server, 0);
        let kvs = server.kvsname().to_string();
        for i in 1..KEYS_MAX {
            assert_eq!(d.call(&format!("cmd=put kvsname={kvs} key=k{i} value=v"))["rc"], "0");
        }
        let full = d.call(&format!("cmd=put kvsname={kvs} key=one-more value=v"));
        assert_eq!(full["msg"], format!("key_value_space_full_at_{KEYS_MAX}_keys"));
        assert_eq!(d.call(&format!("cmd=put kvsname={kvs} key=k1 value=w"))["rc"], "0", "replacing still works");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
