//! The launcher's side of process creation (MPI 4.1 §11.8): read the
//! spawn requests ranks leave in the job directory ([`adi::spawn`]),
//! decide which ranks of the universe the new processes take, find
//! their programs, and answer. Starting the processes is the
//! launcher's ([`crate::launcher`]), as for the first ranks.

use std::path::{Path, PathBuf};

use adi::spawn::{SpawnReply, SpawnRequest};

/// One process to start for a spawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Its job rank.
    pub rank: u32,
    /// The program, resolved.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (`wdir`), when the request gave one.
    pub wdir: Option<PathBuf>,
    /// Its command's index (`MPI_APPNUM`).
    pub appnum: u32,
}

/// A request taken from the directory, with where its answer goes.
pub struct Taken {
    /// Where the answer goes.
    pub reply: PathBuf,
    /// The request, or why it could not be read.
    pub request: Result<SpawnRequest, SpawnRefusal>,
}

/// Why the launcher starts none of a request's processes (the text goes
/// back to the spawning rank as its `MPI_ERR_SPAWN` message).
#[derive(Debug, thiserror::Error)]
pub enum SpawnRefusal {
    /// The request file could not be read.
    #[error("the launcher could not read the request: {0}")]
    Unreadable(#[from] std::io::Error),
    /// The request is not one this launcher reads.
    #[error(transparent)]
    Malformed(#[from] adi::spawn::SpawnCodecError),
    /// More processes than a `u32` counts.
    #[error("the request asks for more processes than there can be")]
    Overflow,
    /// More processes than the universe has room for.
    #[error(
        "{asked} process(es) asked for, but the universe has room for {room} more (--universe-size {universe}, \
         {taken} taken): start the job with a larger dnrun --universe-size"
    )]
    NoRoom {
        /// Processes asked for.
        asked: u32,
        /// Ranks of the universe left.
        room: u32,
        /// `--universe-size`.
        universe: u32,
        /// Ranks taken.
        taken: u32,
    },
    /// A `wdir` info value that is no directory.
    #[error("wdir {} of {program:?} is not a directory", wdir.display())]
    NoWdir {
        /// The directory.
        wdir: PathBuf,
        /// The command's program.
        program: String,
    },
    /// A program that cannot be run.
    #[error("{program:?} {why}")]
    Program {
        /// The program as the request names it.
        program: String,
        /// What is wrong with it.
        why: ProgramProblem,
    },
}

/// What is wrong with a spawned program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramProblem {
    /// The command is empty.
    #[error("is an empty command")]
    Empty,
    /// A path to something that is not an executable file.
    #[error("is not an executable file")]
    NotExecutable,
    /// A path to nothing.
    #[error("does not exist")]
    Missing,
    /// A name found on no path.
    #[error("was not found in the path info key nor on PATH")]
    NotFound,
}

/// The ranks of the universe not yet taken, and the requests' folder.
pub struct Spawner {
    dir: PathBuf,
    next: u32,
    universe: u32,
}

impl Spawner {
    /// Requests in `job_dir`'s spawn folder (made here, private), for a
    /// job of `np` ranks in a universe of `universe`.
    pub fn new(job_dir: &Path, np: u32, universe: u32) -> std::io::Result<Spawner> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = job_dir.join(adi::spawn::DIR);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Spawner { dir, next: np, universe })
    }

    /// The requests waiting, oldest name first (each is removed as it is
    /// taken; one that cannot be read is answered with why).
    pub fn take(&self) -> Vec<Taken> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut reqs: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "req")).collect();
        reqs.sort();
        reqs.into_iter()
            .map(|p| {
                let request = std::fs::read(&p).map_err(SpawnRefusal::from).and_then(|b| Ok(SpawnRequest::decode(&b)?));
                let _ = std::fs::remove_file(&p);
                Taken { reply: p.with_extension("rep"), request }
            })
            .collect()
    }

    /// The processes of `req`, as the next ranks of the universe, or why
    /// none can be started (nothing is taken then).
    pub fn plan(&mut self, req: &SpawnRequest) -> Result<Vec<Planned>, SpawnRefusal> {
        let total = req.total().ok_or(SpawnRefusal::Overflow)?;
        let room = self.universe - self.next;
        if total > room {
            return Err(SpawnRefusal::NoRoom { asked: total, room, universe: self.universe, taken: self.next });
        }
        let mut out = Vec::new();
        let mut rank = self.next;
        for (appnum, c) in req.commands.iter().enumerate() {
            let wdir = c.wdir.as_ref().map(PathBuf::from);
            if let Some(w) = &wdir {
                if !w.is_dir() {
                    return Err(SpawnRefusal::NoWdir { wdir: w.clone(), program: c.program.clone() });
                }
            }
            let program = resolve(&c.program, wdir.as_deref(), c.path.as_deref())
                .map_err(|why| SpawnRefusal::Program { program: c.program.clone(), why })?;
            for _ in 0..c.maxprocs {
                out.push(Planned {
                    rank,
                    program: program.clone(),
                    args: c.args.clone(),
                    wdir: wdir.clone(),
                    appnum: appnum as u32,
                });
                rank += 1;
            }
        }
        self.next = rank;
        Ok(out)
    }

    /// Answer a request (a rank that left gets nothing: it is not waiting).
    pub fn answer(reply: &Path, what: &SpawnReply) {
        let tmp = reply.with_extension("tmp-rep");
        if adi::job::write_private(&tmp, &what.encode()).is_ok() {
            let _ = std::fs::rename(&tmp, reply);
        }
    }
}

/// Find `program` as `execvp` would from the working directory `wdir`,
/// looking first in the request's `path` directories.
fn resolve(program: &str, wdir: Option<&Path>, path: Option<&str>) -> Result<PathBuf, ProgramProblem> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |c: &Path| std::fs::metadata(c).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.is_empty() {
        return Err(ProgramProblem::Empty);
    }
    let p = Path::new(program);
    if program.contains('/') {
        let full = match wdir {
            Some(w) if p.is_relative() => w.join(p),
            _ => p.to_path_buf(),
        };
        // Absolute, so that the working directory the process gets does
        // not change what runs.
        let full = std::path::absolute(&full).unwrap_or(full);
        return match (runnable(&full), full.exists()) {
            (true, _) => Ok(full),
            (false, true) => Err(ProgramProblem::NotExecutable),
            (false, false) => Err(ProgramProblem::Missing),
        };
    }
    let from_path = std::env::var("PATH").unwrap_or_default();
    path.into_iter()
        .chain(std::iter::once(from_path.as_str()))
        .flat_map(|dirs| dirs.split(':').filter(|d| !d.is_empty()).map(|d| Path::new(d).join(p)).collect::<Vec<_>>())
        .find(|c| runnable(c))
        .ok_or(ProgramProblem::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use adi::spawn::SpawnCommand;

    fn cmd(program: &str, maxprocs: u32) -> SpawnCommand {
        SpawnCommand { program: program.into(), args: vec!["a".into()], maxprocs, wdir: None, path: None }
    }

    #[test]
    fn requests_take_the_next_ranks_or_nothing() {
        let d = std::env::temp_dir().join(format!("dn-spawner-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let mut s = Spawner::new(&d, 2, 6).unwrap();
        let req = SpawnRequest { port: "p".into(), commands: vec![cmd("/bin/true", 2), cmd("true", 1)] };
        let plan = s.plan(&req).unwrap();
        assert_eq!(plan.iter().map(|p| (p.rank, p.appnum)).collect::<Vec<_>>(), [(2, 0), (3, 0), (4, 1)]);
        assert!(plan[2].program.is_absolute());
        // One left: two do not fit, and none is taken.
        let e = s.plan(&SpawnRequest { port: "p".into(), commands: vec![cmd("/bin/true", 2)] }).unwrap_err();
        assert!(matches!(e, SpawnRefusal::NoRoom { asked: 2, room: 1, universe: 6, taken: 5 }), "{e}");
        assert!(e.to_string().contains("room for 1 more"), "{e}");
        let e = s.plan(&SpawnRequest { port: "p".into(), commands: vec![cmd("./no-such-program", 1)] }).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = s.plan(&SpawnRequest { port: "p".into(), commands: vec![cmd("no-such-program-x", 1)] }).unwrap_err();
        assert!(matches!(e, SpawnRefusal::Program { why: ProgramProblem::NotFound, .. }), "{e}");
        assert_eq!(s.plan(&SpawnRequest { port: "p".into(), commands: vec![cmd("true", 1)] }).unwrap()[0].rank, 5);
        // A request file is read, removed, and answered next to it.
        std::fs::write(d.join("spawn/0.0.req"), b"junk").unwrap();
        let taken = s.take();
        assert_eq!(taken.len(), 1);
        assert!(matches!(taken[0].request, Err(SpawnRefusal::Malformed(_))));
        assert_eq!(taken[0].reply, d.join("spawn/0.0.rep"));
        assert!(s.take().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
