//! The MPI library's settings for a job, read from the `DN_*` variables
//! once, at `MPI_Init` (issue 49, item 3), and kept with the state every
//! communicator shares: a collective asks which algorithm to use, a
//! window which memory model to take, without reading the environment
//! again (an allreduce used to read `DN_COLL_ALLREDUCE` at every call).
//! The enums of the settings live here too, below the modules that use
//! them (part of the crate's core: it imports none of them).

use adi::knobs::KnobError;

use crate::compute::ComputeMode;

/// Every setting of the MPI layer, each from its variable
/// (`dnrun --help-env` lists them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MpiConfig {
    /// The algorithms the `DN_COLL_*` variables force.
    pub algorithms: Algorithms,
    /// Who progresses non-blocking collectives (`DN_NBC_PROGRESS`), as
    /// asked: the universe falls back when the transport cannot.
    pub progress: ProgressMode,
    /// The default path of one-sided operations (`DN_RMA`), if set.
    pub rma: Option<RmaPath>,
    /// How computation between calls is charged (`DN_COMPUTE`).
    pub compute: ComputeMode,
}

impl Default for MpiConfig {
    /// What a job gets with no variable set.
    fn default() -> MpiConfig {
        MpiConfig {
            algorithms: Algorithms::default(),
            progress: ProgressMode::Manual,
            rma: None,
            compute: ComputeMode::None,
        }
    }
}

impl MpiConfig {
    /// The settings the environment asks for; a value a variable does not
    /// take is refused, naming the variable and what it takes.
    pub fn from_env() -> Result<MpiConfig, KnobError> {
        Ok(MpiConfig {
            algorithms: Algorithms::from_env()?,
            progress: adi::knobs::choice("DN_NBC_PROGRESS")?.unwrap_or(ProgressMode::Manual),
            rma: adi::knobs::choice("DN_RMA")?,
            compute: ComputeMode::from_env()?,
        })
    }
}

/// The words of `DN_NBC_PROGRESS`.
impl adi::knobs::Choice for ProgressMode {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("manual", ProgressMode::Manual), ("thread", ProgressMode::Thread), ("offload", ProgressMode::Offload)];
}

/// Who executes collective schedules (`DN_NBC_PROGRESS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// This process, inside MPI calls (LibNBC without a thread).
    Manual,
    /// The network device (the DIMMnet-2 collective engine), with the
    /// host only starting the schedule and collecting the result.
    Offload,
    /// A progress thread on a second core (LibNBC's thread, KACC's agent).
    /// On a real network (UDP) it is an operating-system thread, see
    /// `ProgressThread`. On the simulator the thread is simulated: while the application
    /// computes (`Universe::compute`), it wakes every
    /// `THREAD_POLL_NS` and makes a progress pass whose host costs it
    /// pays on its own core: the computation ends when it would alone, or
    /// when the thread's pass ends if that is later (a process has one
    /// simulated clock), and the next computations absorb the difference.
    /// Programs that compute for real, without `compute`, see no thread:
    /// their collectives progress inside MPI calls.
    Thread,
}

/// `DN_RMA`: the path one-sided operations take by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmaPath {
    /// Active messages, windows unified whatever their info says (`messages`).
    Messages,
    /// The card's remote accesses, windows separate unless their info
    /// names a model (`card`; `separate` is the same).
    Card,
    /// As `card`.
    Separate,
}

impl adi::knobs::Choice for RmaPath {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("messages", RmaPath::Messages), ("card", RmaPath::Card), ("separate", RmaPath::Separate)];
}

/// An algorithm a `DN_COLL_*` variable may force, or `Auto` (the choice
/// by size below).
macro_rules! algorithms {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            /// Chosen by size (`auto`).
            Auto,
            $($(#[$vdoc])* $variant),+
        }

        impl adi::knobs::Choice for $name {
            const CHOICES: &'static [(&'static str, Self)] = &[("auto", $name::Auto), $(($word, $name::$variant)),+];
        }
    };
}

algorithms! {
    /// `DN_COLL_GATHER` and `DN_COLL_SCATTER`.
    Tree {
        /// One message per rank to or from the root.
        Linear = "linear",
        /// The binomial tree.
        Binomial = "binomial",
    }
}

algorithms! {
    /// `DN_COLL_BCAST`.
    Bcast {
        /// The binomial tree.
        Binomial = "binomial",
        /// Scatter, then a ring allgather.
        ScatterAllgather = "scatter-allgather",
        /// A chain in chunks of `coll::choice::PIPELINE_CHUNK`.
        Pipeline = "pipeline",
    }
}

algorithms! {
    /// `DN_COLL_ALLTOALL`.
    Alltoall {
        /// n-1 pairwise exchanges.
        Pairwise = "pairwise",
        /// Bruck's ⌈log2 n⌉ steps.
        Bruck = "bruck",
    }
}

algorithms! {
    /// `DN_COLL_ALLREDUCE`.
    Allreduce {
        /// Recursive doubling.
        RecursiveDoubling = "recursive-doubling",
        /// Reduce-scatter and allgather in a ring.
        Ring = "ring",
        /// Rabenseifner's halving and doubling.
        Rabenseifner = "rabenseifner",
    }
}

/// The algorithm each `DN_COLL_*` variable forces (`Auto`: the choice by
/// size), read once at `MPI_Init` ([`crate::config::MpiConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Algorithms {
    /// `DN_COLL_GATHER`.
    pub gather: Tree,
    /// `DN_COLL_SCATTER`.
    pub scatter: Tree,
    /// `DN_COLL_BCAST`.
    pub bcast: Bcast,
    /// `DN_COLL_ALLTOALL`.
    pub alltoall: Alltoall,
    /// `DN_COLL_ALLREDUCE`.
    pub allreduce: Allreduce,
}

impl Default for Algorithms {
    /// Every choice by size.
    fn default() -> Algorithms {
        Algorithms {
            gather: Tree::Auto,
            scatter: Tree::Auto,
            bcast: Bcast::Auto,
            alltoall: Alltoall::Auto,
            allreduce: Allreduce::Auto,
        }
    }
}

impl Algorithms {
    /// What the `DN_COLL_*` variables force.
    pub fn from_env() -> std::result::Result<Algorithms, adi::knobs::KnobError> {
        use adi::knobs::choice;
        let d = Algorithms::default();
        Ok(Algorithms {
            gather: choice("DN_COLL_GATHER")?.unwrap_or(d.gather),
            scatter: choice("DN_COLL_SCATTER")?.unwrap_or(d.scatter),
            bcast: choice("DN_COLL_BCAST")?.unwrap_or(d.bcast),
            alltoall: choice("DN_COLL_ALLTOALL")?.unwrap_or(d.alltoall),
            allreduce: choice("DN_COLL_ALLREDUCE")?.unwrap_or(d.allreduce),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unset variables give the defaults (the test environment sets none
    /// of these; `dnrun`'s tests cover set ones end to end).
    #[test]
    fn no_variable_gives_the_defaults() {
        let set = |k: &str| k.starts_with("DN_COLL_") || matches!(k, "DN_RMA" | "DN_NBC_PROGRESS" | "DN_COMPUTE");
        if std::env::vars().any(|(k, _)| set(&k)) {
            return;
        }
        assert_eq!(MpiConfig::from_env(), Ok(MpiConfig::default()));
    }
}
