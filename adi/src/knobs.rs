//! Every `DN_*` environment variable of the stack, declared once: its
//! name, what it takes, its default and what it does (issue 49, item 3).
//! `dnrun --help-env` prints this table, `docs/guide/environment.md` is
//! generated from it (`cargo run -p adi --bin gen-env-page`; a test keeps
//! the two the same), and a test fails on
//! a `DN_*` name in the sources that is not declared here, or a declared
//! one nothing uses.
//!
//! Parsing still happens where each value is used; each of those sites
//! names its variable and its accepted values in its error.

/// What a variable takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// An integer in an inclusive range.
    Integer(u64, u64),
    /// One of a few words.
    OneOf(&'static [&'static str]),
    /// Set (to anything, or `1`) or not.
    Flag,
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
    Knob { name: "DN_EAGER_THRESHOLD", takes: Takes::Integer(0, 1 << 30), default: "16 KiB on DIMMnet-2, 64,000 over UDP", reader: Reader::Rank, meaning: "bytes up to which a message goes eagerly; past it, rendezvous" },
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
    Knob { name: "DN_DPDK_TEST_POLL_BEFORE_LEAVING_MS", takes: Takes::Integer(0, u64::MAX), default: "-", reader: Reader::Tests, meaning: "a DPDK test's linger before leaving" },
];

/// The knob named `name`.
pub fn knob(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.name == name)
}

fn takes(t: Takes) -> String {
    match t {
        Takes::Integer(lo, hi) => format!("integer {lo}..={hi}"),
        Takes::OneOf(words) => words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", "),
        Takes::Flag => "flag".into(),
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
        "# Environment variables\n\n(Part of the [user guide](README.md). Generated from `adi/src/knobs.rs` by \
         `cargo run -p adi --bin gen-env-page`; `dnrun --help-env` prints the table.)\n\nEvery `DN_*` variable the stack reads. Give a job's with \
         `dnrun -x NAME=VALUE` (or `-genv NAME VALUE`); a value a checked variable does not take is refused at \
         startup with a message naming the variable and what it takes.\n\n{}",
        markdown()
    )
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
}
