//! Process creation (MPI 4.1 §11.8): `MPI_Comm_spawn`,
//! `MPI_Comm_spawn_multiple`, `MPI_Comm_get_parent`, and the universe
//! they draw on (`MPI_UNIVERSE_SIZE`, `MPI_APPNUM`).
//!
//! A job's *universe* is every process it may ever have: `dnrun
//! --universe-size N` leaves room for `N - np` processes after the first
//! `MPI_COMM_WORLD`. A spawn is collective over the parents'
//! communicator; its root
//!
//! 1. opens a port, and asks the launcher for the processes
//!    ([`adi::spawn`]): the launcher starts all of them or none, as the
//!    next ranks of the universe, each told its world (the new processes,
//!    `MPI_COMM_WORLD` of their own, §11.8.2), its `MPI_APPNUM` and the
//!    parents' port;
//! 2. on the simulator, has the schedule expect them, starting at the
//!    root's simulated clock: nothing is simulated until all have joined,
//!    so the run stays deterministic whatever the host does;
//! 3. accepts on the port, collectively with the other parents
//!    ([`SimpleCommunicator::accept_on`]), while the new processes connect
//!    to it from `MPI_Init`: the intercommunicator both sides get is made
//!    exactly as `MPI_Comm_accept`/`MPI_Comm_connect` make theirs.
//!
//! A spawn that cannot be satisfied (no room left in the universe, a
//! program that is not there) starts nothing, and fails at every parent
//! with `MPI_ERR_SPAWN`; the job goes on.

use std::time::{Duration, Instant};

pub use adi::spawn::SpawnCommand;
use adi::spawn::{SpawnReply, SpawnRequest};

use crate::comm::SimpleCommunicator;
use crate::error::SpawnError;
use crate::{MpiError, Rank, Result};

/// How long a spawning root waits for the launcher to start the
/// processes before it gives up (the launcher answers once every
/// process is started, not once it runs).
const LAUNCHER_PATIENCE: Duration = Duration::from_secs(120);

/// The sequence number of this process's next spawn request.
static NEXT_REQUEST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What a spawn gave: the intercommunicator with the new processes, and
/// an error code per process asked for (`MPI_SUCCESS` for every one, as a
/// spawn starts all or none).
pub struct Spawned {
    /// The parents' group local, the new processes remote.
    pub intercomm: SimpleCommunicator,
    /// How many processes were started.
    pub count: u32,
}

/// Ask the launcher for the processes of `commands`, which will connect to
/// `port`: the first new job rank and how many, or why none was started.
fn ask_launcher(port: &str, commands: &[SpawnCommand]) -> Result<(u32, u32)> {
    let refuse = |why: String| MpiError::Spawn(SpawnError::Launcher { why });
    if commands.is_empty() {
        return Err(SpawnError::NoCommand.into());
    }
    if let Some(c) = commands.iter().find(|c| c.maxprocs == 0) {
        return Err(SpawnError::NoProcesses { program: c.program.clone() }.into());
    }
    let job = adi::JobEnv::from_env().map_err(|e| refuse(e.to_string()))?;
    let no_launcher = || MpiError::Spawn(SpawnError::NoRoom);
    let Some(job) = job else { return Err(no_launcher()) };
    let Some(dir) = job.dir.clone() else { return Err(no_launcher()) };
    if !dir.join(adi::spawn::DIR).is_dir() {
        return Err(no_launcher());
    }
    let request = SpawnRequest { port: port.to_string(), commands: commands.to_vec() };
    let bytes = request.encode().map_err(|e| refuse(e.to_string()))?;
    let seq = NEXT_REQUEST.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (req, rep) = adi::spawn::request_paths(&dir, job.rank, seq);
    let tmp = req.with_extension("tmp");
    let io = |e: std::io::Error| refuse(format!("cannot hand the request to the launcher ({}): {e}", req.display()));
    adi::job::write_private(&tmp, &bytes).map_err(io)?;
    std::fs::rename(&tmp, &req).map_err(io)?;
    // Wall time: on the simulator this process holds the schedule while it
    // waits, so nothing simulated happens meanwhile.
    let start = Instant::now();
    let answer = loop {
        match std::fs::read(&rep) {
            Ok(b) => break b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(refuse(format!("cannot read the launcher's answer ({}): {e}", rep.display()))),
        }
        if start.elapsed() > LAUNCHER_PATIENCE {
            let _ = std::fs::remove_file(&req);
            return Err(refuse(format!(
                "the launcher did not answer within {} s (is dnrun still running?)",
                LAUNCHER_PATIENCE.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let _ = std::fs::remove_file(&rep);
    match SpawnReply::decode(&answer).map_err(|e| refuse(e.to_string()))? {
        SpawnReply::Started { first, count } => {
            let asked = request.total().unwrap_or(u32::MAX);
            if count != asked || first.checked_add(count).is_none_or(|end| end > job.size) {
                return Err(refuse(format!(
                    "the launcher's answer (ranks {first}.. {count} of them) does not fit the {asked} asked for in a \
                     universe of {}",
                    job.size
                )));
            }
            Ok((first, count))
        }
        SpawnReply::Refused(why) => Err(refuse(why)),
    }
}

impl SimpleCommunicator {
    /// `MPI_Comm_spawn_multiple` (§11.8.3), and `MPI_Comm_spawn` with one
    /// command: start the processes of `commands` (significant at
    /// `root` only), collectively over this communicator, and return the
    /// intercommunicator with them. They are `MPI_COMM_WORLD` of their
    /// own, ranked in the order of the commands; their
    /// `MPI_Comm_get_parent` ([`crate::Universe::parent`]) is this
    /// intercommunicator's other side.
    pub fn spawn(&self, root: Rank, commands: &[SpawnCommand]) -> Result<Spawned> {
        self.intra_only("MPI_Comm_spawn")?;
        let call = "MPI_Comm_spawn";
        let intercomm = self.intercomm_with(root, crate::port::MEMBERS_TAG, call, |ctx| {
            let port = self.open_port()?;
            let outcome = ask_launcher(&port, commands).and_then(|(_, count)| {
                self.shared.borrow_mut().engine()?.expect_ranks(count);
                self.accept_on(&port, ctx, call)
            });
            let _ = self.close_port(&port);
            outcome
        })?;
        let count = intercomm.remote_members().map_or(0, |m| m.len() as u32);
        Ok(Spawned { intercomm, count })
    }
}
