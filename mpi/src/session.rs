//! What a session offers before any communicator (MPI 4.1 §11.3): the
//! process sets a process may make groups of, what each holds, and the
//! thread level a session's info asks for. Opening and closing sessions,
//! and their handles, are the C library's.

use crate::comm::{Communicator, SimpleCommunicator};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::ThreadId;

use crate::error::{ArgError, InitError, MpiError, Result};
use crate::group::Group;
use crate::info::Info;

/// A thread support level (§11.2.3), ordered as the standard orders them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ThreadLevel {
    /// `MPI_THREAD_SINGLE`.
    Single,
    /// `MPI_THREAD_FUNNELED`.
    Funneled,
    /// `MPI_THREAD_SERIALIZED`.
    Serialized,
    /// `MPI_THREAD_MULTIPLE`.
    Multiple,
}

impl ThreadLevel {
    /// Every level, lowest first.
    pub const ALL: [ThreadLevel; 4] =
        [ThreadLevel::Single, ThreadLevel::Funneled, ThreadLevel::Serialized, ThreadLevel::Multiple];

    /// The level's name, as an info value gives it.
    pub const fn name(self) -> &'static str {
        match self {
            ThreadLevel::Single => "MPI_THREAD_SINGLE",
            ThreadLevel::Funneled => "MPI_THREAD_FUNNELED",
            ThreadLevel::Serialized => "MPI_THREAD_SERIALIZED",
            ThreadLevel::Multiple => "MPI_THREAD_MULTIPLE",
        }
    }

    /// The level's value in the MPI 5.0 ABI.
    pub const fn code(self) -> i32 {
        match self {
            ThreadLevel::Single => abi_def::MPI_THREAD_SINGLE,
            ThreadLevel::Funneled => abi_def::MPI_THREAD_FUNNELED,
            ThreadLevel::Serialized => abi_def::MPI_THREAD_SERIALIZED,
            ThreadLevel::Multiple => abi_def::MPI_THREAD_MULTIPLE,
        }
    }

    /// The level whose ABI value is `code`.
    pub fn from_code(code: i32) -> Result<ThreadLevel> {
        ThreadLevel::ALL
            .into_iter()
            .find(|l| l.code() == code)
            .ok_or_else(|| ArgError::ThreadLevel { level: code }.into())
    }

    /// The level granted to a program that asks for `required` (§11.2.3):
    /// every level as asked; below `MPI_THREAD_SINGLE`, that; above
    /// `MPI_THREAD_MULTIPLE`, that.
    pub fn granted(required: i32) -> ThreadLevel {
        ThreadLevel::ALL.into_iter().rev().find(|l| l.code() <= required).unwrap_or(ThreadLevel::Single)
    }

    /// The level a session's info asks for (`"thread_level"`, §11.3.1):
    /// `MPI_THREAD_SINGLE` when it asks none.
    pub fn asked_by(info: &Info) -> Result<ThreadLevel> {
        let Some(v) = info.get("thread_level")? else {
            return Ok(ThreadLevel::Single);
        };
        ThreadLevel::ALL.into_iter().find(|l| l.name() == v).ok_or_else(|| MpiError::InfoValue {
            key: "thread_level".into(),
            value: v.into(),
            takes: "MPI_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE".into(),
        })
    }
}

/// A process set a session offers (§11.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessSet {
    /// `mpi://WORLD`: every process of the job.
    World,
    /// `mpi://SELF`: this process.
    Myself,
}

impl ProcessSet {
    /// Every process set, in the order `MPI_Session_get_nth_pset` numbers them.
    pub const ALL: [ProcessSet; 2] = [ProcessSet::World, ProcessSet::Myself];

    /// The set's name.
    pub const fn name(self) -> &'static str {
        match self {
            ProcessSet::World => "mpi://WORLD",
            ProcessSet::Myself => "mpi://SELF",
        }
    }

    /// The set named `name`; names compare without regard to case.
    pub fn named(name: &str) -> Result<ProcessSet> {
        ProcessSet::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| ArgError::ProcessSet { name: name.into() }.into())
    }

    /// The `n`th set (from 0).
    pub fn nth(n: i32) -> Result<ProcessSet> {
        usize::try_from(n)
            .ok()
            .and_then(|i| ProcessSet::ALL.get(i))
            .copied()
            .ok_or_else(|| ArgError::ProcessSetNumber { n, sets: ProcessSet::ALL.len() }.into())
    }

    /// Its members, in the job whose world communicator is `world`.
    pub fn group(self, world: &SimpleCommunicator) -> Group {
        match self {
            ProcessSet::World => Group::of(world),
            ProcessSet::Myself => Group::from_job_ranks(vec![world.rank() as u32]),
        }
    }

    /// What `MPI_Session_get_pset_info` tells of it: its size (`mpi_size`).
    pub fn info(self, world: &SimpleCommunicator) -> Result<Info> {
        let size = match self {
            ProcessSet::World => world.size(),
            ProcessSet::Myself => 1,
        };
        let mut pairs = Info::new();
        pairs.set("mpi_size", &size.to_string())?;
        Ok(pairs)
    }
}

/// Which model asks for the library (MPI 4.1 §11.2, §11.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// `MPI_Init` or `MPI_Init_thread`, until `MPI_Finalize`.
    World,
    /// `MPI_Session_init`, until its `MPI_Session_finalize`.
    Session,
}

/// What to do for a model that asks for the library ([`Life::begin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begin {
    /// Make the library's state, then call [`Life::made`].
    Make,
    /// Use the state that exists (another model made it).
    Join,
}

/// Where a process is in the library's life (MPI 4.1 §11.2-11.3): the
/// world model and sessions each use the library; the first to ask makes
/// its state, it ends when neither uses it, and it is never made again.
/// Every query is lock-free: `MPI_Initialized` and `MPI_Finalized` may be
/// called from any thread at any time (§11.2.1). A process keeps one.
#[derive(Default)]
pub struct Life {
    /// `MPI_Init` has run (and stays so after `MPI_Finalize`).
    initialized: AtomicBool,
    /// `MPI_Finalize` has run.
    finalized: AtomicBool,
    /// The state exists.
    live: AtomicBool,
    /// The state was made and has ended.
    ended: AtomicBool,
    /// The world model uses the library now.
    world: AtomicBool,
    /// The thread level granted when the state was made, and the thread
    /// that made it (the main thread, §11.2.3).
    granted: OnceLock<(ThreadLevel, ThreadId)>,
}

impl Life {
    /// `MPI_Initialized` (§11.2.1).
    pub fn initialized(&self) -> bool {
        self.initialized.load(Ordering::SeqCst)
    }

    /// `MPI_Finalized` (§11.2.2).
    pub fn finalized(&self) -> bool {
        self.finalized.load(Ordering::SeqCst)
    }

    /// Whether the state exists (between its making and its end).
    pub fn live(&self) -> bool {
        self.live.load(Ordering::SeqCst)
    }

    /// Whether the state was made and has ended.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Whether the world model uses the library now.
    pub fn world(&self) -> bool {
        self.world.load(Ordering::SeqCst)
    }

    /// The thread level granted (`MPI_Query_thread`), once the state was
    /// made.
    pub fn thread_level(&self) -> Option<ThreadLevel> {
        self.granted.get().map(|&(l, _)| l)
    }

    /// Whether this is the thread that made the state
    /// (`MPI_Is_thread_main`, §11.2.3).
    pub fn is_main_thread(&self) -> bool {
        self.granted.get().is_some_and(|&(_, t)| t == std::thread::current().id())
    }

    /// `model` asks for the library: make its state, join the one
    /// another model made, or the error (`MPI_Init` twice; any model
    /// once the library has ended).
    pub fn begin(&self, model: Model) -> std::result::Result<Begin, InitError> {
        if self.live() {
            if model == Model::World {
                if self.world() || self.initialized() {
                    return Err(InitError::Twice);
                }
                self.world.store(true, Ordering::SeqCst);
                self.initialized.store(true, Ordering::SeqCst);
            }
            return Ok(Begin::Join);
        }
        if self.ended() {
            let at = if self.finalized() { "MPI_Finalize" } else { "the last MPI_Session_finalize" };
            return Err(InitError::Ended { at });
        }
        Ok(Begin::Make)
    }

    /// `model` made the state ([`Begin::Make`]) on this thread, granting
    /// `level`.
    pub fn made(&self, model: Model, level: ThreadLevel) {
        let _ = self.granted.set((level, std::thread::current().id()));
        self.live.store(true, Ordering::SeqCst);
        if model == Model::World {
            self.world.store(true, Ordering::SeqCst);
            self.initialized.store(true, Ordering::SeqCst);
        }
    }

    /// `MPI_Finalize`: the world model stops using the library; whether
    /// the library ends now (`sessions_open`: sessions still use it).
    pub fn finalize(&self, sessions_open: bool) -> std::result::Result<bool, InitError> {
        if !self.world() {
            return Err(InitError::NotInitialized);
        }
        self.finalized.store(true, Ordering::SeqCst);
        self.world.store(false, Ordering::SeqCst);
        Ok(!sessions_open)
    }

    /// Whether the library ends once the last session has ended
    /// (`sessions_open` false): when the world model does not use it.
    pub fn ends_without(&self, sessions_open: bool) -> bool {
        !sessions_open && !self.world()
    }

    /// The state has ended, for good.
    pub fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.live.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_library_is_made_once_and_ends_when_no_model_uses_it() {
        let life = Life::default();
        assert_eq!((life.begin(Model::Session).ok(), life.thread_level()), (Some(Begin::Make), None));
        life.made(Model::Session, ThreadLevel::Funneled);
        assert!(life.live() && !life.initialized());
        assert_eq!(life.thread_level(), Some(ThreadLevel::Funneled));
        assert!(life.is_main_thread());
        assert!(!std::thread::scope(|s| s.spawn(|| life.is_main_thread()).join().unwrap_or(true)));
        // MPI_Init joins the session's state, once.
        assert_eq!(life.begin(Model::World).ok(), Some(Begin::Join));
        assert!(life.initialized() && life.world());
        assert!(matches!(life.begin(Model::World), Err(InitError::Twice)));
        assert_eq!(life.begin(Model::Session).ok(), Some(Begin::Join));
        // The session ends first: the world model keeps the library.
        assert!(!life.ends_without(false));
        assert_eq!(life.finalize(false).ok(), Some(true));
        assert!(life.finalized() && matches!(life.finalize(false), Err(InitError::NotInitialized)));
        life.end();
        assert!(!life.live() && life.initialized(), "MPI_Initialized stays true");
        assert!(matches!(life.begin(Model::Session), Err(InitError::Ended { at: "MPI_Finalize" })));
    }

    #[test]
    fn every_level_is_granted_as_asked_and_others_clamped() {
        for l in ThreadLevel::ALL {
            assert_eq!(ThreadLevel::granted(l.code()), l);
        }
        assert_eq!(ThreadLevel::granted(i32::MIN), ThreadLevel::Single);
        assert_eq!(ThreadLevel::granted(i32::MAX), ThreadLevel::Multiple);
    }

    #[test]
    fn sessions_alone_end_at_the_last_and_never_start_again() {
        let life = Life::default();
        assert!(matches!(life.finalize(false), Err(InitError::NotInitialized)));
        life.made(Model::Session, ThreadLevel::Single);
        assert!(life.ends_without(false) && !life.ends_without(true));
        life.end();
        assert!(matches!(life.begin(Model::World), Err(InitError::Ended { at: "the last MPI_Session_finalize" })));
        assert!(!life.initialized() && !life.finalized());
    }

    use super::*;

    #[test]
    fn process_sets_by_name_and_number() {
        assert_eq!(ProcessSet::named("MPI://world").ok(), Some(ProcessSet::World));
        assert_eq!(ProcessSet::named("mpi://self").ok(), Some(ProcessSet::Myself));
        let e = ProcessSet::named("mpi://nodes").err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("mpi://WORLD and mpi://SELF")));
        assert_eq!(ProcessSet::nth(1).ok(), Some(ProcessSet::Myself));
        assert!(ProcessSet::nth(2).is_err() && ProcessSet::nth(-1).is_err());
    }

    #[test]
    fn thread_levels_by_info_and_value() {
        let mut info = Info::new();
        assert_eq!(ThreadLevel::asked_by(&info).ok(), Some(ThreadLevel::Single));
        info.set("thread_level", "MPI_THREAD_MULTIPLE").ok();
        assert_eq!(ThreadLevel::asked_by(&info).ok(), Some(ThreadLevel::Multiple));
        info.set("thread_level", "many").ok();
        let e = ThreadLevel::asked_by(&info).err().map(|e| e.class());
        assert_eq!(e, Some(crate::ErrorClass::InfoValue));
        assert_eq!(ThreadLevel::from_code(abi_def::MPI_THREAD_SERIALIZED).ok(), Some(ThreadLevel::Serialized));
        assert!(ThreadLevel::from_code(3).is_err());
        assert!(ThreadLevel::Single < ThreadLevel::Multiple);
    }
}
