//! Every `DN_*` environment variable of the stack, declared once: its
//! name, what it takes, its default and what it does (issue 49, item 3);
//! and the only code of the stack that reads one.
//!
//! - `dnrun --help-env` prints the table, `docs/guide/environment.md` is
//!   generated from it (`cargo run -p adi --bin gen-env-page`; a test
//!   keeps the two the same), and a test fails on a `DN_*` name in the
//!   sources that is not declared here, or a declared one nothing uses.
//! - Code reads a variable through the typed readers here ([`flag`],
//!   [`integer`], [`bytes`], [`choice`], [`path`], [`text`]), which check the
//!   value against the declaration, so a bad value is refused with the
//!   same message wherever it is read: the variable, the value, what it
//!   takes and its default.
//! - [`check_environment`] checks every `DN_*` variable set at once: each
//!   rank's library runs it at `MPI_Init`, and `dnrun` before it starts
//!   anything, so a misspelt name or value stops the job at its start
//!   instead of being ignored, or failing only in the call that reads it.
//!
//! This crate depends on nothing of the stack, so the simulator, the
//! launcher, the build scripts and the tests read their variables here
//! too.

use std::path::PathBuf;

/// What a variable takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// An integer in an inclusive range.
    Integer(u64, u64),
    /// One of a few words.
    OneOf(&'static [&'static str]),
    /// On (`1`, `yes`, `true`, `on`) or off (unset, empty, `0`, `no`,
    /// `false`, `off`).
    Flag,
    /// A size in bytes in an inclusive range: `4096`, `16K`, `1M`, `2G`, or
    /// `max` (the range's top).
    Bytes(u64, u64),
    /// A file or directory.
    Path,
    /// Text with its own syntax, described in the meaning.
    Text,
}

/// Who reads a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// Each rank's MPI library, at `MPI_Init` or when the feature starts.
    Rank,
    /// `dnrun` (and `mpiexec`), before it starts anything.
    Launcher,
    /// The simulator (`dimmnet-sim serve`, or the model inside `dnrun`).
    Simulator,
    /// `dnrun` sets it for each rank; not for users to set.
    SetForRanks,
    /// The build (`cargo build`) or the project's scripts.
    Build,
    /// The project's own tests.
    Tests,
}

impl Reader {
    fn name(self) -> &'static str {
        match self {
            Reader::Rank => "each rank",
            Reader::Launcher => "dnrun",
            Reader::Simulator => "the simulator",
            Reader::SetForRanks => "set by dnrun",
            Reader::Build => "the build",
            Reader::Tests => "the tests",
        }
    }
}

/// One variable.
#[derive(Clone, Copy, Debug)]
pub struct Knob {
    /// `DN_...`.
    pub name: &'static str,
    /// What it takes.
    pub takes: Takes,
    /// Its value when unset, in words.
    pub default: &'static str,
    /// Who reads it.
    pub reader: Reader,
    /// What it does.
    pub meaning: &'static str,
}

const ALGORITHM: &str = "`auto`, or the algorithm's name";

/// Every variable.
#[rustfmt::skip]
pub const KNOBS: &[Knob] = &[
    // The job
    Knob { name: "DN_BACKEND", takes: Takes::OneOf(&["sim", "dimmnet", "udp", "dpdk", "local"]), default: "sim under dnrun; udp under a PMI launcher; local alone", reader: Reader::Rank, meaning: "the transport; `dnrun --backend` sets it" },
    Knob { name: "DN_RANK_MODE", takes: Takes::OneOf(&["auto", "contexts", "processes"]), default: "auto", reader: Reader::Launcher, meaning: "ranks as user-level contexts of dnrun or as processes (`--rank-mode`)" },
    Knob { name: "DN_STATS", takes: Takes::Flag, default: "off", reader: Reader::Rank, meaning: "`1`: print protocol and transport counters at finalize (and the DPDK node pollers' at their end)" },
    Knob { name: "DN_COMPUTE", takes: Takes::Text, default: "none", reader: Reader::Rank, meaning: "`none`, or `measured[:SCALE]`: charge each burst of computation's CPU time (`dnrun --compute`)" },
    Knob { name: "DN_SIM_BIN", takes: Takes::Path, default: "dimmnet-sim beside dnrun, else on PATH", reader: Reader::Launcher, meaning: "the simulator binary to start" },
    Knob { name: "DN_SIM_CPU", takes: Takes::Text, default: "auto", reader: Reader::Simulator, meaning: "`N`, `auto` or `none`: the CPU the simulator's parties share (`dimmnet-sim --cpu`)" },
    Knob { name: "DN_SIM_LOOKAHEAD", takes: Takes::OneOf(&["full", "hop", "none"]), default: "full", reader: Reader::Simulator, meaning: "how far a rank may run ahead (same simulated times; for testing)" },
    // The protocol and MPI
    Knob { name: "DN_EAGER_THRESHOLD", takes: Takes::Bytes(0, u64::MAX), default: "16 KiB on DIMMnet-2, 64,000 over UDP", reader: Reader::Rank, meaning: "bytes up to which a message goes eagerly; past it, rendezvous" },
    Knob { name: "DN_NBC_PROGRESS", takes: Takes::OneOf(&["manual", "thread", "offload"]), default: "manual", reader: Reader::Rank, meaning: "what moves non-blocking collectives forward between calls" },
    Knob { name: "DN_RMA", takes: Takes::OneOf(&["messages", "card", "separate"]), default: "windows unified (active messages)", reader: Reader::Rank, meaning: "`card`/`separate`: windows use the card's separate memory model unless their info names one; `messages`: always unified" },
    Knob { name: "DN_COLL_GATHER", takes: Takes::OneOf(&["auto", "linear", "binomial"]), default: "auto", reader: Reader::Rank, meaning: ALGORITHM },
    Knob { name: "DN_COLL_SCATTER", takes: Takes::OneOf(&["auto", "linear", "binomial"]), default: "auto", reader: Reader::Rank, meaning: ALGORITHM },
    Knob { name: "DN_COLL_BCAST", takes: Takes::OneOf(&["auto", "binomial", "scatter-allgather", "pipeline"]), default: "auto", reader: Reader::Rank, meaning: ALGORITHM },
    Knob { name: "DN_COLL_ALLTOALL", takes: Takes::OneOf(&["auto", "pairwise", "bruck"]), default: "auto", reader: Reader::Rank, meaning: ALGORITHM },
    Knob { name: "DN_COLL_ALLREDUCE", takes: Takes::OneOf(&["auto", "recursive-doubling", "ring", "rabenseifner"]), default: "auto", reader: Reader::Rank, meaning: ALGORITHM },
    // The DIMMnet-2 backend
    Knob { name: "DN_RING_KIB", takes: Takes::Integer(4, 1 << 20), default: "sized to the job", reader: Reader::Rank, meaning: "each IVS ring's size in KiB" },
    Knob { name: "DN_ZONE_KIB", takes: Takes::Integer(1, 1 << 20), default: "the backend's", reader: Reader::Rank, meaning: "each landing zone's size in KiB" },
    Knob { name: "DN_ZONES", takes: Takes::Integer(1, 1024), default: "the backend's", reader: Reader::Rank, meaning: "the number of landing zones" },
    Knob { name: "DN_RING_SCAN_PEERS", takes: Takes::Integer(0, u32::MAX as u64), default: "16", reader: Reader::Rank, meaning: "most peers whose rings a poll reads one by one; with more, the arrival queue" },
    Knob { name: "DN_DEVICE", takes: Takes::Path, default: "the simulator's slot file", reader: Reader::Rank, meaning: "the mapped device file of a real card" },
    Knob { name: "DN_RANKMAP", takes: Takes::Text, default: "ranks fill the nodes in blocks", reader: Reader::Rank, meaning: "each rank's node and slot" },
    // The UDP backend
    Knob { name: "DN_UDP_MTU", takes: Takes::Integer(256, 65_000), default: "64,000, or the path's", reader: Reader::Rank, meaning: "largest datagram payload in bytes" },
    Knob { name: "DN_UDP_WINDOW", takes: Takes::Integer(1, 65_535), default: "about 256 KiB of datagrams", reader: Reader::Rank, meaning: "datagrams in flight to a peer" },
    Knob { name: "DN_UDP_TIMEOUT_MS", takes: Takes::Integer(1, u32::MAX as u64), default: "10000", reader: Reader::Rank, meaning: "a peer silent this long ends the job with an error" },
    Knob { name: "DN_UDP_SPIN_US", takes: Takes::Integer(0, u32::MAX as u64), default: "100", reader: Reader::Rank, meaning: "busy-poll before sleeping" },
    Knob { name: "DN_UDP_OFFLOAD", takes: Takes::OneOf(&["1", "gso", "0"]), default: "1", reader: Reader::Rank, meaning: "UDP GSO and GRO where the kernel has them (`gso`: sending only)" },
    Knob { name: "DN_UDP_CONNECT", takes: Takes::OneOf(&["0", "1"]), default: "1", reader: Reader::Rank, meaning: "a rank with one peer connects its socket to it" },
    Knob { name: "DN_UDP_CHECKSUM", takes: Takes::OneOf(&["prefix", "full"]), default: "prefix", reader: Reader::Rank, meaning: "a CRC of each datagram's header, or of all of it" },
    Knob { name: "DN_UDP_AUTH", takes: Takes::OneOf(&["0", "1"]), default: "0", reader: Reader::Rank, meaning: "authenticate every datagram with the job's key" },
    Knob { name: "DN_UDP_KEY_FILE", takes: Takes::Path, default: "one per job", reader: Reader::Rank, meaning: "the key file of `DN_UDP_AUTH=1` (the same on every host)" },
    Knob { name: "DN_UDP_FAULTS", takes: Takes::Text, default: "none", reader: Reader::Rank, meaning: "`loss=P,dup=P,reorder=P,corrupt=P,seed=N`: faults injected on the way out" },
    Knob { name: "DN_UDP_BIND", takes: Takes::Text, default: "127.0.0.1", reader: Reader::Rank, meaning: "the address a rank binds" },
    Knob { name: "DN_UDP_SHM", takes: Takes::OneOf(&["auto", "off"]), default: "auto", reader: Reader::Rank, meaning: "`auto`: the ranks of a job on one host talk through shared memory, and UDP only with the ranks of other hosts (not with injected faults or room to spawn); `off`: through UDP" },
    Knob { name: "DN_UDP_HOSTFILE", takes: Takes::Path, default: "one host", reader: Reader::Rank, meaning: "one host:port per rank (`dnrun --hostfile`)" },
    // The DPDK backend
    Knob { name: "DN_DPDK_VDEV", takes: Takes::Text, default: "memif between the ranks", reader: Reader::Rank, meaning: "the DPDK virtual device (`dnrun --dpdk-vdev`)" },
    Knob { name: "DN_DPDK_FRAME", takes: Takes::Integer(256, 65_000), default: "9216", reader: Reader::Rank, meaning: "the frame size" },
    Knob { name: "DN_DPDK_POLLER", takes: Takes::OneOf(&["rank", "node"]), default: "rank", reader: Reader::Rank, meaning: "each rank polls, or one polling process per node" },
    Knob { name: "DN_DPDK_POLLER_SPIN_US", takes: Takes::Integer(0, u32::MAX as u64), default: "200", reader: Reader::Rank, meaning: "the node poller's busy-poll before sleeping" },
    // Set by dnrun for the ranks
    Knob { name: "DN_RANK", takes: Takes::Integer(0, u32::MAX as u64), default: "-", reader: Reader::SetForRanks, meaning: "the rank" },
    Knob { name: "DN_SIZE", takes: Takes::Integer(1, u32::MAX as u64), default: "-", reader: Reader::SetForRanks, meaning: "the job's size: its universe, with `dnrun --universe-size`" },
    Knob { name: "DN_WORLD", takes: Takes::Text, default: "all ranks", reader: Reader::SetForRanks, meaning: "`FIRST:COUNT`, the ranks of this process's `MPI_COMM_WORLD` (a job with room to spawn)" },
    Knob { name: "DN_HOST_RANKS", takes: Takes::Text, default: "all ranks", reader: Reader::SetForRanks, meaning: "`A,B-C,...`: the ranks this host's `dnrun` starts (`--ranks`), which share its job directory" },
    Knob { name: "DN_PARENT_PORT", takes: Takes::Text, default: "-", reader: Reader::SetForRanks, meaning: "in a spawned process: the port its parents accept on" },
    Knob { name: "DN_APPNUM", takes: Takes::Integer(0, i32::MAX as u64), default: "-", reader: Reader::SetForRanks, meaning: "in a spawned process: `MPI_APPNUM`" },
    Knob { name: "DN_JOB_ID", takes: Takes::Integer(0, u64::MAX), default: "-", reader: Reader::SetForRanks, meaning: "the job's id" },
    Knob { name: "DN_JOB_DIR", takes: Takes::Path, default: "-", reader: Reader::SetForRanks, meaning: "the job's directory" },
    Knob { name: "DN_NODES", takes: Takes::Integer(1, 65_535), default: "-", reader: Reader::SetForRanks, meaning: "the simulated nodes" },
    Knob { name: "DN_SIM_DIR", takes: Takes::Path, default: "-", reader: Reader::SetForRanks, meaning: "the simulator's files" },
    Knob { name: "DN_PMI_SERVED", takes: Takes::Flag, default: "-", reader: Reader::SetForRanks, meaning: "dnrun serves PMI-1 to the ranks" },
    // The build and the project's scripts and tests
    Knob { name: "DN_NO_DPDK", takes: Takes::Flag, default: "off", reader: Reader::Build, meaning: "build without DPDK even where it is installed" },
    Knob { name: "DN_DPDK_MISSING", takes: Takes::Text, default: "-", reader: Reader::Build, meaning: "why this build has no DPDK (the build script sets it)" },
    Knob { name: "DN_REQUIRE_DPDK", takes: Takes::Flag, default: "off", reader: Reader::Build, meaning: "scripts/test.sh fails instead of skipping the DPDK tests" },
    Knob { name: "DN_REQUIRE_BUILD_TOOLS", takes: Takes::Flag, default: "off", reader: Reader::Build, meaning: "the build-system and Fortran tests fail instead of skipping" },
    Knob { name: "DN_TEST_MARKER", takes: Takes::Text, default: "-", reader: Reader::Tests, meaning: "tags a test's processes, to find any left behind" },
    Knob { name: "DN_DPDK_TEST_ROLE", takes: Takes::Text, default: "-", reader: Reader::Tests, meaning: "a DPDK test's role" },
    Knob { name: "DN_DPDK_TEST_POLL_BEFORE_LEAVING_MS", takes: Takes::Text, default: "-", reader: Reader::Tests, meaning: "`RANK:MILLISECONDS`: a DPDK test's rank lingers this long before leaving" },
];

/// The knob named `name`.
pub fn knob(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.name == name)
}

fn takes(t: Takes) -> String {
    match t {
        Takes::Integer(lo, hi) => format!("integer {lo}..={hi}"),
        Takes::OneOf(words) => words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", "),
        Takes::Flag => "`1` or `0`".into(),
        Takes::Bytes(lo, hi) if hi == u64::MAX => format!("bytes, at least {lo} (`16K`, `1M`, `max`)"),
        Takes::Bytes(lo, hi) => format!("bytes {lo}..={hi} (`16K`, `1M`, `max`)"),
        Takes::Path => "path".into(),
        Takes::Text => "text".into(),
    }
}

/// The table `dnrun --help-env` prints, as Markdown.
pub fn markdown() -> String {
    let mut s = String::from("| variable | takes | default | read by | what it does |\n|---|---|---|---|---|\n");
    for k in KNOBS {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            k.name,
            takes(k.takes),
            k.default,
            k.reader.name(),
            k.meaning
        ));
    }
    s
}

/// `docs/guide/environment.md`.
pub fn guide_page() -> String {
    format!(
        "# Environment variables\n\n(Part of the [user guide](README.md). Generated from `knobs/src/lib.rs` (the `dn-knobs` crate) by \
         `cargo run -p adi --bin gen-env-page`; `dnrun --help-env` prints the table.)\n\nEvery `DN_*` variable the stack reads. Give a job's with \
         `dnrun -x NAME=VALUE` (or `-genv NAME VALUE`). Every `DN_*` variable set is checked at startup, by `dnrun` \
         before it starts anything and by each rank's `MPI_Init`: a name the stack does not read, or a value its \
         variable does not take, is refused with a message naming the variable, the value and what it takes. An \
         empty value is the default.\n\n{}",
        markdown()
    )
}

/// A variable set to what it does not take, or a `DN_*` name the stack
/// does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// The value is not one the variable takes.
    #[error("{name}={value:?}: {name} takes {takes} (unset, its default is {default}); `dnrun --help-env` lists every variable")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// What it was set to.
        value: String,
        /// What it takes, in words.
        takes: String,
        /// Its default, in words.
        default: &'static str,
    },
    /// A `DN_*` variable nothing reads: a misspelling, or one from another
    /// version.
    #[error(
        "{name} is set, but no part of this stack reads it{hint}; unset it (`dnrun --help-env` lists every variable)"
    )]
    Unknown {
        /// The name.
        name: String,
        /// ", did you mean X?" or empty.
        hint: String,
    },
}

/// The declaration of `name`, which the caller names as a literal: a name
/// not declared is a bug of the stack, caught by the tests (`knobs.rs`
/// checks every quoted `DN_*` name of the sources), and reads as unset.
fn declared(name: &'static str) -> Option<&'static Knob> {
    let k = knob(name);
    debug_assert!(k.is_some(), "{name} is read but not declared in dn_knobs::KNOBS");
    k
}

/// The value of `name` as set, without a check: for the variables that
/// take text or a path, and for code that must see what is there (the
/// launcher passing the environment on). This is the one read of a `DN_*`
/// variable in the stack.
pub fn raw(name: &'static str) -> Option<String> {
    declared(name)?;
    std::env::var(name).ok()
}

/// Whether `name` is set at all (even to an empty value).
pub fn is_set(name: &'static str) -> bool {
    declared(name).is_some() && std::env::var_os(name).is_some()
}

/// A variable of [`Takes::Flag`].
pub fn flag(name: &'static str) -> Result<bool, KnobError> {
    match raw(name) {
        None => Ok(false),
        Some(v) => parse_flag(&v).ok_or_else(|| invalid(name, &v)),
    }
}

/// The value of `name` for the typed readers: an empty (or blank) value
/// reads as unset, so `DN_X= prog` gives the default.
fn given(name: &'static str) -> Option<String> {
    raw(name).filter(|v| !v.trim().is_empty())
}

/// A variable of [`Takes::Integer`], checked against its range.
pub fn integer(name: &'static str) -> Result<Option<u64>, KnobError> {
    let Some(v) = given(name) else { return Ok(None) };
    match declared(name).map(|k| k.takes) {
        Some(Takes::Integer(lo, hi)) => match v.trim().parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(invalid(name, &v)),
        },
        _ => Err(invalid(name, &v)),
    }
}

/// A variable of [`Takes::Bytes`], checked against its range.
pub fn bytes(name: &'static str) -> Result<Option<u64>, KnobError> {
    let Some(v) = given(name) else { return Ok(None) };
    match declared(name).map(|k| k.takes) {
        Some(Takes::Bytes(lo, hi)) => match parse_bytes(&v, hi) {
            Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(invalid(name, &v)),
        },
        _ => Err(invalid(name, &v)),
    }
}

/// A variable of [`Takes::OneOf`]: the word it is set to, as declared.
pub fn word(name: &'static str) -> Result<Option<&'static str>, KnobError> {
    let Some(v) = given(name) else { return Ok(None) };
    match declared(name).map(|k| k.takes) {
        Some(Takes::OneOf(words)) => {
            words.iter().find(|w| **w == v.trim()).copied().map(Some).ok_or_else(|| invalid(name, &v))
        }
        _ => Err(invalid(name, &v)),
    }
}

/// An enum whose values are the words a [`Takes::OneOf`] variable takes:
/// code reads the variable as the enum ([`choice`]), never as a word to
/// compare, and [`words_match`] ties the enum to the declaration in a test.
pub trait Choice: Copy + 'static {
    /// Every value, with the word that names it.
    const CHOICES: &'static [(&'static str, Self)];
}

/// A [`Takes::OneOf`] variable as the enum its words name.
pub fn choice<T: Choice>(name: &'static str) -> Result<Option<T>, KnobError> {
    let Some(w) = word(name)? else { return Ok(None) };
    T::CHOICES.iter().find(|(x, _)| *x == w).map(|(_, v)| Some(*v)).ok_or_else(|| invalid(name, w))
}

/// Whether `T`'s words are exactly, in order, the words `name` is declared
/// to take (for the test of each [`Choice`]).
pub fn words_match<T: Choice>(name: &'static str) -> bool {
    match knob(name).map(|k| k.takes) {
        Some(Takes::OneOf(words)) => words.iter().copied().eq(T::CHOICES.iter().map(|(w, _)| *w)),
        _ => false,
    }
}

/// A word that names none of a [`Choice`]'s values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} {given:?}: give {}", takes.join(", "))]
pub struct UnknownWord {
    /// The option or setting.
    pub what: &'static str,
    /// The word given.
    pub given: String,
    /// The words it takes.
    pub takes: Vec<&'static str>,
}

/// The value of `T` that `given` names (for options and files that take
/// the same words as a variable); `what` names the option in the error.
pub fn parse_choice<T: Choice>(what: &'static str, given: &str) -> Result<T, UnknownWord> {
    let given = given.trim();
    T::CHOICES.iter().find(|(w, _)| *w == given).map(|(_, v)| *v).ok_or_else(|| UnknownWord {
        what,
        given: given.to_string(),
        takes: T::CHOICES.iter().map(|(w, _)| *w).collect(),
    })
}

/// A variable of [`Takes::Path`].
pub fn path(name: &'static str) -> Option<PathBuf> {
    given(name).map(PathBuf::from)
}

/// A variable of [`Takes::Text`], whose syntax its reader checks.
pub fn text(name: &'static str) -> Option<String> {
    given(name)
}

fn invalid(name: &'static str, value: &str) -> KnobError {
    let k = knob(name);
    KnobError::Invalid {
        name,
        value: value.to_string(),
        takes: k.map_or_else(|| "nothing (it is not declared)".into(), |k| takes(k.takes)),
        default: k.map_or("-", |k| k.default),
    }
}

fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Some(true),
        "" | "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// `4096`, `16K`, `1M`, `2G` or `max` (which is `top`).
fn parse_bytes(v: &str, top: u64) -> Option<u64> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("max") {
        return Some(top);
    }
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1u64 << 10),
        'm' | 'M' => (&t[..t.len() - 1], 1 << 20),
        'g' | 'G' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// Whether `value` is one `k` takes.
fn accepts(k: &Knob, value: &str) -> bool {
    if value.trim().is_empty() {
        return true;
    }
    match k.takes {
        Takes::Integer(lo, hi) => value.trim().parse::<u64>().is_ok_and(|n| (lo..=hi).contains(&n)),
        Takes::Bytes(lo, hi) => parse_bytes(value, hi).is_some_and(|n| (lo..=hi).contains(&n)),
        Takes::OneOf(words) => words.contains(&value.trim()),
        Takes::Flag => parse_flag(value).is_some(),
        Takes::Path | Takes::Text => true,
    }
}

/// Check every `DN_*` variable of `vars`: each must be declared, and take
/// the value it has. The first that does not is the error. Variables for
/// other programs (the build's, the tests') are checked too: a value of
/// theirs that is wrong is wrong everywhere.
pub fn check(vars: impl IntoIterator<Item = (String, String)>) -> Result<(), KnobError> {
    let mut vars: Vec<(String, String)> = vars.into_iter().filter(|(k, _)| k.starts_with("DN_")).collect();
    vars.sort();
    for (name, value) in vars {
        match knob(&name) {
            Some(k) if accepts(k, &value) => {}
            Some(k) => return Err(invalid(k.name, &value)),
            None => {
                let hint = closest(&name).map(|c| format!(" (did you mean {c}?)")).unwrap_or_default();
                return Err(KnobError::Unknown { name, hint });
            }
        }
    }
    Ok(())
}

/// [`check`] on this process's environment.
pub fn check_environment() -> Result<(), KnobError> {
    check(std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))))
}

/// The declared name nearest to `name`, if it is near (an edit distance
/// of at most a third of its length).
fn closest(name: &str) -> Option<&'static str> {
    let d = |a: &str, b: &str| -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for j in 0..b.len() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != b[j])).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    };
    KNOBS.iter().map(|k| (d(name, k.name), k.name)).filter(|(dist, _)| *dist <= name.len() / 3).min().map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut names: Vec<&str> = KNOBS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a variable is declared twice");
        assert!(KNOBS.iter().all(|k| k.name.starts_with("DN_") && !k.meaning.is_empty()));
    }

    #[test]
    fn values_are_checked_against_their_declaration() {
        let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(check(set("DN_ZONES", "16")), Ok(()));
        assert!(matches!(check(set("DN_ZONES", "0")), Err(KnobError::Invalid { name: "DN_ZONES", .. })));
        assert!(matches!(check(set("DN_ZONES", "many")), Err(KnobError::Invalid { .. })));
        assert_eq!(check(set("DN_EAGER_THRESHOLD", "16K")), Ok(()));
        assert_eq!(check(set("DN_EAGER_THRESHOLD", "max")), Ok(()));
        assert!(check(set("DN_EAGER_THRESHOLD", "16Q")).is_err());
        assert_eq!(check(set("DN_STATS", "1")), Ok(()));
        assert_eq!(check(set("DN_STATS", "")), Ok(()));
        assert!(check(set("DN_STATS", "verbose")).is_err());
        assert_eq!(check(set("DN_RMA", "card")), Ok(()));
        let e = check(set("DN_RMA", "cards")).unwrap_err().to_string();
        assert!(e.contains("DN_RMA=\"cards\"") && e.contains("`messages`, `card`, `separate`"), "{e}");
        assert_eq!(check(set("PATH", "/bin")), Ok(()), "only DN_* variables are checked");
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_nearest() {
        let e = check(vec![("DN_EAGER_THRESHOLDS".to_string(), "1".to_string())]).unwrap_err();
        assert_eq!(
            e,
            KnobError::Unknown {
                name: "DN_EAGER_THRESHOLDS".into(),
                hint: " (did you mean DN_EAGER_THRESHOLD?)".into()
            }
        );
        let e = check(vec![("DN_QWERTY".to_string(), "1".to_string())]).unwrap_err();
        assert_eq!(e, KnobError::Unknown { name: "DN_QWERTY".into(), hint: String::new() });
    }

    #[test]
    fn sizes_and_flags_parse() {
        assert_eq!(parse_bytes("16K", u64::MAX), Some(16384));
        assert_eq!(parse_bytes(" 2m ", u64::MAX), Some(2 << 20));
        assert_eq!(parse_bytes("max", 99), Some(99));
        assert_eq!(parse_bytes("99999999999G", u64::MAX), None);
        assert_eq!(parse_bytes("K", u64::MAX), None);
        assert_eq!(parse_flag("ON"), Some(true));
        assert_eq!(parse_flag("0"), Some(false));
        assert_eq!(parse_flag("2"), None);
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Lookahead {
        Full,
        Hop,
        None,
    }

    impl Choice for Lookahead {
        const CHOICES: &'static [(&'static str, Self)] =
            &[("full", Lookahead::Full), ("hop", Lookahead::Hop), ("none", Lookahead::None)];
    }

    #[test]
    fn a_choice_parses_to_its_value_and_names_its_words() {
        assert!(words_match::<Lookahead>("DN_SIM_LOOKAHEAD"));
        assert!(!words_match::<Lookahead>("DN_RMA"));
        assert_eq!(parse_choice::<Lookahead>("--lookahead", " hop"), Ok(Lookahead::Hop));
        let e = parse_choice::<Lookahead>("--lookahead", "far").unwrap_err();
        assert_eq!(e.to_string(), "--lookahead \"far\": give full, hop, none");
    }

    #[test]
    fn every_declared_value_range_is_well_formed() {
        for k in KNOBS {
            match k.takes {
                Takes::Integer(lo, hi) | Takes::Bytes(lo, hi) => assert!(lo <= hi, "{}", k.name),
                Takes::OneOf(words) => assert!(!words.is_empty(), "{}", k.name),
                _ => {}
            }
        }
    }
}
