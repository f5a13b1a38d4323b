//! The MPI library's settings for a job, read from the `DN_*` variables
//! once, at `MPI_Init` (issue 49, item 3), and kept with the state every
//! communicator shares: a collective asks which algorithm to use, a
//! window which memory model to take, without reading the environment
//! again (an allreduce used to read `DN_COLL_ALLREDUCE` at every call).

use adi::knobs::KnobError;

use crate::coll::choice::Algorithms;
use crate::compute::ComputeMode;
use crate::rma::RmaPath;
use crate::universe::ProgressMode;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Unset variables give the defaults (the test environment sets none
    /// of these; `dnrun`'s tests cover set ones end to end).
    #[test]
    fn no_variable_gives_the_defaults() {
        if std::env::vars().any(|(k, _)| k.starts_with("DN_COLL_") || k == "DN_RMA" || k == "DN_NBC_PROGRESS") {
            return;
        }
        assert_eq!(MpiConfig::from_env(), Ok(MpiConfig::default()));
    }
}
