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
    /// `MPI_Init` a second time (§11.2.1: once per process).
    #[error("MPI is initialised once per process: MPI_Init was already called")]
    Twice,
    /// The library was asked for again once it had ended (§11.2.2).
    #[error("the library ended at {at} and cannot start again in this process (MPI 4.1 would allow it through sessions; this library does not)")]
    Ended {
        /// The call that ended it.
        at: &'static str,
    },
    /// `MPI_Finalize` with the world model not in use.
    #[error("MPI_Finalize without MPI_Init, or twice")]
    NotInitialized,
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

/// A call that needs an intercommunicator, or an intracommunicator, and
/// got the other (`MPI_ERR_COMM`: [`InterError::is_wrong_kind`]); or
/// groups that must be disjoint and are not, which are the arguments'
/// fault (`MPI_ERR_ARG`) (`MpiError::Inter`, MPI 4.1 §7.6).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterError {
    /// A call of intercommunicators on an intracommunicator.
    #[error("not an intercommunicator")]
    NotInter,
    /// A call this library provides on intracommunicators only.
    #[error("{what} is not available on an intercommunicator in this library")]
    IntraOnly {
        /// The call, or the argument.
        what: String,
    },
    /// `MPI_Intercomm_create` whose remote leader is this process.
    #[error("MPI_Intercomm_create: the remote leader is this process; the groups must be disjoint (§7.6.2)")]
    LeaderIsSelf,
    /// A process in both groups of a new intercommunicator.
    #[error("{call}: process {process} is in both groups; the groups must be disjoint (§7.6.2)")]
    NotDisjoint {
        /// The call.
        call: String,
        /// The process, by its rank in the job.
        process: u32,
    },
    /// The call failed at the group's leader, whose error names the cause.
    #[error("{call} failed at the local leader (its error names the cause)")]
    AtLeader {
        /// The call.
        call: String,
    },
    /// The root of a connection refused its own arguments.
    #[error("{call}: the root's arguments were refused")]
    RootRefused {
        /// The call.
        call: String,
    },
}

impl InterError {
    /// Whether the communicator is of the wrong kind for the call (rather
    /// than the groups or the arguments that make one).
    pub fn is_wrong_kind(&self) -> bool {
        matches!(self, InterError::NotInter | InterError::IntraOnly { .. })
    }
}

/// A communicator that cannot be made because no context id is left for
/// it, or whose id another process handed out wrongly (`MpiError::Context`,
/// `MPI_ERR_OTHER`; MPI 4.1 §7.1.2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// Every context id of the blocking agreements is taken.
    #[error(
        "no context id is left for a new communicator (agreed on {agreed}; {total} ids in all): free communicators \
         the program no longer uses"
    )]
    Exhausted {
        /// The id agreed on.
        agreed: u32,
        /// Ids in all.
        total: u32,
    },
    /// A leader that handed out every id it may give.
    #[error(
        "{call}: process {leader} has handed out all its {given} context ids for communicators it leads (every \
         MPI_Comm_dup and MPI_Comm_idup of the C API takes one, and so do, under MPI_THREAD_MULTIPLE, communicators \
         made from groups); they are not reused: duplicate once and keep the duplicate instead of duplicating in a loop"
    )]
    LeaderExhausted {
        /// The call.
        call: String,
        /// The leader, by its rank in the job.
        leader: u32,
        /// Ids it handed out.
        given: u32,
    },
    /// Calls under way at once on overlapping groups whose tags do not
    /// tell them apart.
    #[error(
        "{call}: the context id from process {leader} was for the call with tag {sent}, not this one's {tag}: calls \
         under way at once on overlapping groups must have tags that differ in their low 14 bits"
    )]
    OtherCall {
        /// The call.
        call: String,
        /// The leader, by its rank in the job.
        leader: u32,
        /// The tag of the call the id was for.
        sent: i32,
        /// This call's tag.
        tag: i32,
    },
    /// An id the leader may not hand out: a corrupt or forged message.
    #[error("{call}: context id {ctx} from its leader (process {leader}) is not one it may hand out")]
    NotTheLeaders {
        /// The call.
        call: String,
        /// The id.
        ctx: u32,
        /// The leader, by its rank in the job.
        leader: u32,
    },
    /// Members of a remote group that are repeated or not of the job.
    #[error(
        "intercommunicator agreement: remote member {member} is repeated or not one of the job's {size} processes"
    )]
    RemoteMember {
        /// The member.
        member: u32,
        /// Processes of the job.
        size: u32,
    },
}

/// What `MPI_Comm_join` could not do with its socket (`MpiError::Join`,
/// `MPI_ERR_ARG`; MPI 4.1 §11.10.4).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// The socket failed.
    #[error("MPI_Comm_join: {what} socket descriptor {fd} failed: {os} (it must be a connected stream socket)")]
    Socket {
        /// "writing to", "waiting on", "reading from".
        what: &'static str,
        /// The descriptor.
        fd: i32,
        /// The system's error.
        os: String,
    },
    /// The other end closed the socket before saying who it is.
    #[error("MPI_Comm_join: the other end of socket {fd} closed it before saying who it is")]
    Closed {
        /// The descriptor.
        fd: i32,
    },
    /// The other end is not another process of this job.
    #[error(
        "MPI_Comm_join: the process at the other end of the socket is not another process of this job (it said job \
         {their_job}, rank {them}; this is job {job}, rank {me}): this library joins processes of one job"
    )]
    NotThisJob {
        /// The job it named.
        their_job: u32,
        /// The rank it named.
        them: u32,
        /// This job.
        job: u32,
        /// This process's rank in the job.
        me: u32,
    },
}
