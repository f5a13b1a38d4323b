//! The errors of a process joining its job and of processes meeting:
//! initialisation (§11.2), ports (§11.10), names (§11.10.4), spawning
//! (§11.8).

use super::MpiError;
use adi::AdiError;

/// Why a process could not join its job (`MpiError::Init`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InitError {
    /// A thread the library needs could not be made.
    #[error("cannot start {what}: {why}")]
    Thread {
        /// The thread.
        what: String,
        /// The system's reason.
        why: String,
    },
    /// A `DN_*` setting that is wrong (its variable and allowed values).
    #[error(transparent)]
    Setting(#[from] adi::knobs::KnobError),
    /// The transport could not be opened.
    #[error(transparent)]
    Engine(#[from] AdiError),
    /// The PMI service of a standard launcher failed.
    #[error("PMI: {0}")]
    Pmi(adi::TransportError),
    /// A spawned process could not connect to its parents (§11.8.2).
    #[error("a spawned process could not reach the processes that spawned it: {0}")]
    Parent(Box<MpiError>),
}

/// A port that is not one, not open, or could not be used
/// (`MpiError::Port`, MPI 4.1 §11.10).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// Not a name `MPI_Open_port` gives.
    #[error("{name:?} is not a port name of this library (they look like \"{prefix}:JOB:RANK:N\", as MPI_Open_port gives them)")]
    NotAName {
        /// The name given.
        name: String,
        /// The names' prefix.
        prefix: &'static str,
    },
    /// Every port number is taken.
    #[error("this process has opened {max} ports, all it may: close ports with MPI_Close_port and reuse them")]
    TooMany {
        /// How many a process may have open.
        max: u64,
    },
    /// A port the process does not have open.
    #[error("{call}: {name:?} is not a port this process (rank {rank} of the job) has open: open it with MPI_Open_port on the process that accepts on it")]
    NotOpenHere {
        /// The call.
        call: &'static str,
        /// The port.
        name: String,
        /// This process's job rank.
        rank: u32,
    },
    /// A port of another job.
    #[error("MPI_Comm_connect: port {name:?} is not of this job (job {job}, {size} processes): this library connects groups of one job")]
    OtherJob {
        /// The port.
        name: String,
        /// This job's number.
        job: u32,
        /// Its processes.
        size: u32,
    },
    /// A port opened by a process of the connecting group.
    #[error(
        "MPI_Comm_connect: port {name:?} was opened by a process of the connecting group; the groups must be disjoint"
    )]
    SameGroup {
        /// The port.
        name: String,
    },
    /// A connection message that does not parse.
    #[error("corrupt connection message")]
    Corrupt,
    /// The root's own arguments were refused before the call could start;
    /// its error names them.
    #[error("the call: the root's arguments were refused")]
    RootRefused,
    /// The connection failed at the group's leader, whose error names the
    /// cause.
    #[error("{call} failed at the local leader (its error names the cause)")]
    AtLeader {
        /// The call.
        call: String,
    },
}

/// Processes that could not be spawned (`MpiError::Spawn`, §11.8.2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// No command to start.
    #[error("MPI_Comm_spawn: no command to start")]
    NoCommand,
    /// A command asked for no process.
    #[error("MPI_Comm_spawn: maxprocs of {program:?} is 0; ask for at least one process")]
    NoProcesses {
        /// The command.
        program: String,
    },
    /// The job has no room for more processes.
    #[error("MPI_Comm_spawn: this job has no room for more processes: start it with `dnrun --universe-size N` (N above -n), on the simulator (docs/guide/spawn.md)")]
    NoRoom,
    /// The launcher refused, or could not be reached: its reason.
    #[error("MPI_Comm_spawn: {why}")]
    Launcher {
        /// Why.
        why: String,
    },
    /// The spawn failed at the parents' root, whose error names the cause.
    #[error("{call} failed at the local leader (its error names the cause)")]
    AtLeader {
        /// The call.
        call: String,
    },
}

/// A service name that cannot be published or unpublished
/// (`MpiError::Service`, MPI 4.1 §11.10.5).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// An empty service name.
    #[error("a service name must not be empty")]
    Empty,
    /// The name service's files could not be written or removed.
    #[error("{call}: {service:?}: {why}")]
    Io {
        /// `MPI_Publish_name` or `MPI_Unpublish_name`.
        call: &'static str,
        /// The service.
        service: String,
        /// The system's error.
        why: String,
    },
    /// A service published already.
    #[error("MPI_Publish_name: {service:?} is published already; unpublish it first")]
    Published {
        /// The service.
        service: String,
    },
    /// Unpublishing a service that names another port.
    #[error("MPI_Unpublish_name: {service:?} names port {names:?}, not {port:?}")]
    OtherPort {
        /// The service.
        service: String,
        /// The port it names.
        names: String,
        /// The port given.
        port: String,
    },
    /// Unpublishing a service that is not published.
    #[error("MPI_Unpublish_name: no service {service:?} is published")]
    NotPublished {
        /// The service.
        service: String,
    },
}
