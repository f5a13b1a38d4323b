//! The simulator's control file (`sim.ctl`). **Not part of the hardware.**
//!
//! The model keeps the device's MMIO surface byte-identical to the hardware
//! layout; everything the simulation needs beyond it (who may run, simulated
//! clocks, the host-cost table, doorbell timestamps) lives in this separate
//! file beside the node files. A process that finds `sim.ctl` next to the
//! device file it opened knows it is simulated and attaches as an *actor*.
//!
//! Scheduling (DESIGN §3, after SimGrid's maestro): exactly one party runs at
//! a time, either the model or one actor. An actor runs until it *yields*:
//! `WAIT` (a poll found nothing; the actor sleeps until an event touches its
//! slot, and its clock jumps to that event) or `SYNC` (its clock passed the
//! horizon the model gave it; it resumes when it is again the lowest clock).
//! Hand-offs use one shared futex word per party (`go`): the granter bumps it
//! and wakes the sleeper if its `sleeping` flag is set.

use core::mem::size_of;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};

use fpga_regs::ur::CQ_DEPTH;

/// Magic at the start of the control file: "DNSIMCTL".
pub const MAGIC: u64 = u64::from_le_bytes(*b"DNSIMCTL");
/// Control-file layout version (11: the attach high mark, and records
/// sized for [`MAX_WATCH_PEERS`] watched rings).
pub const VERSION: u32 = 11;
/// Maximum number of actors (attached processes) per cluster.
pub const MAX_ACTORS: usize = fpga_regs::layout::MAX_SOURCES;
/// File name of the control file inside a cluster directory.
pub const FILE_NAME: &str = "sim.ctl";

/// File name of node `n`'s MMIO surface inside a cluster directory.
pub fn node_file_name(node: u16) -> String {
    format!("node{node}.mmio")
}

/// Simulated time is kept in picoseconds.
pub const PS_PER_NS: u64 = 1000;

pub use dn_host_cost::HostCost;

/// [`CtlHeader::cpu`] when the simulation is not pinned to a CPU.
pub const NO_CPU: u32 = u32::MAX;

/// Number of slots in the cost table.
pub const COST_SLOTS: usize = 16;
const _: () = assert!(HostCost::ALL.len() <= COST_SLOTS, "the control file's cost table has a slot per host cost");

/// Header flags.
pub mod flags {
    /// The model has initialised every file and accepts attaches.
    pub const READY: u32 = 1 << 0;
    /// The model is shutting down; actors get `RESULT_SHUTDOWN`.
    pub const SHUTDOWN: u32 = 1 << 1;
    /// The model found every live actor waiting with nothing in flight.
    pub const DEADLOCK: u32 = 1 << 2;
    /// With the last DEADLOCK: some IVS packets were waiting for ring space
    /// (backpressure that nobody will relieve, rather than a lost wake-up).
    pub const PACKETS_HELD: u32 = 1 << 3;
}

/// The state of an actor record. Written by both ends: the actor claims a
/// record (`Attaching`), runs while it holds the token (`Running`) and hands
/// it back (`Yielded`); the model admits (`Runnable`), parks (`Waiting`)
/// and retires (`Exited`, `Dead`) it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ActorState {
    /// Record unused.
    Free = 0,
    /// An actor has claimed the record and waits for the model to admit it.
    Attaching = 1,
    /// The actor holds the token.
    Running = 2,
    /// The actor handed the token back; its request says why.
    Yielded = 3,
    /// Admitted and runnable, waiting for its turn (model-side).
    Runnable = 4,
    /// Waiting for an event that touches its slot (model-side).
    Waiting = 5,
    /// Detached normally.
    Exited = 6,
    /// The process disappeared without detaching.
    Dead = 7,
}

/// Why an actor yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum YieldRequest {
    /// Resume me when I am again the lowest clock (my clock passed the horizon).
    Sync = 1,
    /// A poll found nothing: resume me when an event touches my slot.
    Wait = 2,
    /// I am leaving.
    Detach = 3,
}

/// What the model tells an actor when it grants the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum GrantResult {
    /// Carry on.
    Ok = 0,
    /// Nothing can ever wake you (every live actor waits and nothing is in
    /// flight), or the run is livelocked; see the header message.
    Deadlock = 1,
    /// The simulator is shutting down.
    Shutdown = 2,
    /// The attach was refused (slot in use or out of range); see the header message.
    Refused = 3,
}

macro_rules! raw_enum {
    ($t:ident: $($v:ident),*) => {
        impl $t {
            /// Decode the raw word (`None`: not a value this protocol version writes).
            pub fn from_raw(raw: u32) -> Option<$t> {
                [$($t::$v),*].into_iter().find(|v| *v as u32 == raw)
            }
        }
    };
}
raw_enum!(ActorState: Free, Attaching, Running, Yielded, Runnable, Waiting, Exited, Dead);
raw_enum!(YieldRequest: Sync, Wait, Detach);
raw_enum!(GrantResult: Ok, Deadlock, Shutdown, Refused);

/// The control file header (one page).
#[repr(C)]
pub struct CtlHeader {
    /// [`MAGIC`].
    pub magic: AtomicU64,
    /// [`VERSION`].
    pub version: AtomicU32,
    /// Nodes in the cluster.
    pub nodes: AtomicU32,
    /// Slots per node.
    pub slots: AtomicU32,
    /// Actor records in the file.
    pub max_actors: AtomicU32,
    /// Actors the job expects (0 = open-ended; deadlock detection needs a count).
    pub expected_actors: AtomicU32,
    /// [`flags`].
    pub flags: AtomicU32,
    /// Futex word the model sleeps on; actors bump it after yielding or attaching.
    pub model_go: AtomicU32,
    /// Non-zero while the model sleeps in the kernel.
    pub model_sleeping: AtomicU32,
    /// Serialises attaches between processes.
    pub attach_lock: AtomicU32,
    /// The model's process id.
    pub model_pid: AtomicU32,
    /// Bumped by every attaching actor, so the model rescans records only then.
    pub attach_seq: AtomicU32,
    /// The CPU the model runs on and every actor hands over on
    /// ([`crate::affinity`]); [`NO_CPU`] when nobody is pinned.
    pub cpu: AtomicU32,
    /// Bumped by every [`ActorRecord::poke`], so the model looks for poked
    /// actors only then.
    pub poke_seq: AtomicU32,
    /// One past the highest actor record ever claimed: the model looks at
    /// records below it only (16,384 records, most never used, would cost
    /// every attach a scan of them all).
    pub attach_high: AtomicU32,
    /// Latest simulated time the model has processed (ps), published as
    /// it runs, for a launcher's progress line.
    pub sim_time: AtomicU64,
    /// Device events processed so far, published likewise.
    pub events: AtomicU64,
    /// The clock (ps) actors admitted after the job started begin at: the
    /// clock of the actor that raised `expected_actors` for them (a rank
    /// spawning processes, MPI 4.1 §11.8), written while it held the token.
    pub admit_clock: AtomicU64,
    /// The device's lookahead (ps): no doorbell has any effect earlier than
    /// this long after it was rung (the command fetch time). An actor that
    /// rang a doorbell hands over before its clock reaches `rung + lookahead`.
    pub doorbell_lookahead: AtomicU64,
    /// Host costs, indexed by [`HostCost`].
    pub costs: [AtomicU64; COST_SLOTS],
    /// Host profile name, NUL-padded UTF-8.
    pub profile_name: [AtomicU64; 8],
    /// Last message from the model (deadlock report, refusal reason), NUL-padded UTF-8.
    pub message: [AtomicU64; 64],
    _pad: [u8; 4096 - 8 - 4 * 14 - 8 - 8 - 8 - 8 - 8 * COST_SLOTS - 64 - 512],
}

// SAFETY: `CtlHeader` is `#[repr(C)]` and made only of atomics (cells over
// `UnsafeCell`, valid for every bit pattern) and the `_pad` byte array,
// which is never read: what `MmioBlock` asks.
unsafe impl crate::mmio::MmioBlock for CtlHeader {}

/// One actor record.
#[repr(C)]
pub struct ActorRecord {
    /// Futex word the actor sleeps on; the model bumps it to grant the token.
    pub go: AtomicU32,
    /// Non-zero while the actor sleeps in the kernel.
    pub sleeping: AtomicU32,
    /// [`ActorState`] (through [`ActorRecord::state`]).
    state: AtomicU32,
    /// [`YieldRequest`] of the last yield (through [`ActorRecord::request`]).
    request: AtomicU32,
    /// The actor's simulated clock (ps): written by the actor when it yields, by the model when it grants.
    pub clock: AtomicU64,
    /// Run without yielding while the clock stays at or below this (ps): one
    /// picosecond before the earliest time any other party could change the
    /// slot (see `simlink::scheduler::horizon`).
    pub horizon: AtomicU64,
    /// Read UR only at or below this: `horizon`, or earlier if one of the
    /// slot's own pending events writes UR sooner.
    pub ur_horizon: AtomicU64,
    /// The same for LLCM (the ring pointers).
    pub llcm_horizon: AtomicU64,
    /// The same for PW, which nothing but the slot's own commands writes:
    /// no earlier than `horizon` demands while no remote read of the
    /// slot's is in flight.
    pub pw_horizon: AtomicU64,
    /// Node the actor drives.
    pub node: AtomicU32,
    /// Slot the actor drives.
    pub slot: AtomicU32,
    /// Process id.
    pub pid: AtomicU32,
    /// [`GrantResult`] of the last grant (through [`ActorRecord::result`]).
    result: AtomicU32,
    /// Number of grants (statistics).
    pub grants: AtomicU64,
    /// Written with each grant: the shortest time (ps) for anything at this
    /// actor's slot to reach another live actor's slot (loopback on a shared
    /// node, the network otherwise; `u64::MAX` when it is alone).
    pub reach: AtomicU64,
    /// Written with each grant: how many times the device has written this
    /// actor's slot so far (its *epoch*). The slot does not change while the
    /// actor holds the token, so every read made during a grant sees the
    /// slot as of the epoch that came with it.
    pub epoch: AtomicU64,
    /// With `watch_count` 0: the epoch of the oldest read the wait rests on.
    /// If the device wrote the slot after that epoch, the wait ends at once.
    pub watch_since: AtomicU64,
    /// Number of valid entries in `watch` (at most [`MAX_WATCH`]); 0 means
    /// "wake me on any change to my slot after epoch `watch_since`".
    pub watch_count: AtomicU32,
    _pad0: AtomicU32,
    /// Bumped by another thread of the actor's process that wants the
    /// process to run (it called the library while the thread inside it
    /// waits, `MPI_THREAD_MULTIPLE`). An *armed* `WAIT` (below) ends when
    /// it moves past `armed_at`, at the earliest simulated time at which the
    /// process can act without changing anybody's past
    /// (`crate::scheduler::poked_clock`), or does not begin if it already
    /// has.
    pub poke: AtomicU32,
    /// Non-zero when the actor's process lets several threads call the
    /// library (`MPI_THREAD_MULTIPLE`): while it has threads besides the
    /// one that waits, one of them may yet poke it, so a `WAIT` of this
    /// actor is not proof of a deadlock (the model counts them when the
    /// simulation stalls: `crate::process::threads`).
    pub threaded: AtomicU32,
    /// Non-zero: the actor's next `WAIT` may be ended by a poke (its
    /// thread can hand the library over to the poking one; a wait that
    /// cannot leaves it unarmed, and pokes do not end it). Set by the
    /// actor with `armed_at`; cleared by the model when the wait ends.
    pub armed: AtomicU32,
    /// The poke count when the actor armed its wait.
    pub armed_at: AtomicU32,
    /// Simulated time of the doorbell that posted command `seq`, at `seq % CQ_DEPTH`.
    pub db_time: [AtomicU64; CQ_DEPTH],
    /// The 64-bit words the actor's last unsuccessful poll read: a `WAIT`
    /// ends when the model writes one of them. Each entry holds the word's
    /// slot offset and the value the actor last read there (side by side,
    /// so a short list is a cache line or two): if a word already differs
    /// when the actor yields (it changed while the actor was busy
    /// elsewhere), the wait ends at once — no wake-up is lost.
    pub watch: [WatchEntry; MAX_WATCH],
    _pad: [u8; RECORD_SIZE - RECORD_FIXED - 16 * MAX_WATCH],
}

// SAFETY: `ActorRecord` is `#[repr(C)]` and made only of atomics (valid for
// every bit pattern) and unread padding: what `MmioBlock` asks.
unsafe impl crate::mmio::MmioBlock for ActorRecord {}

/// One watched word of an [`ActorRecord`].
#[repr(C)]
pub struct WatchEntry {
    /// Slot offset of the word.
    pub offset: AtomicU32,
    _pad: AtomicU32,
    /// The value the actor last read there.
    pub value: AtomicU64,
}

/// Bytes of an [`ActorRecord`] before its watch list.
const RECORD_FIXED: usize = 4 * 4 + 8 * 5 + 4 * 4 + 8 * 4 + 4 * 6 + 8 * CQ_DEPTH;

/// Size of one actor record: whole pages.
pub const RECORD_SIZE: usize = (RECORD_FIXED + 16 * MAX_WATCH).next_multiple_of(4096);

impl ActorRecord {
    /// The record's state (`None`: a value no party of this version writes).
    pub fn state(&self) -> Option<ActorState> {
        ActorState::from_raw(self.state.load(SeqCst))
    }

    /// Set the record's state.
    pub fn set_state(&self, s: ActorState) {
        self.state.store(s as u32, SeqCst);
    }

    /// Move from `from` to `to` if the record is in `from` (claiming a record).
    pub fn change_state(&self, from: ActorState, to: ActorState) -> bool {
        self.state.compare_exchange(from as u32, to as u32, SeqCst, SeqCst).is_ok()
    }

    /// Why the actor last yielded.
    pub fn request(&self) -> Option<YieldRequest> {
        YieldRequest::from_raw(self.request.load(SeqCst))
    }

    /// Say why the actor yields.
    pub fn set_request(&self, r: YieldRequest) {
        self.request.store(r as u32, SeqCst);
    }

    /// What the last grant said.
    pub fn result(&self) -> Option<GrantResult> {
        GrantResult::from_raw(self.result.load(SeqCst))
    }

    /// Set what the next grant says.
    pub fn set_result(&self, r: GrantResult) {
        self.result.store(r as u32, SeqCst);
    }
}

/// Most peers whose rings a rank may watch one by one in a wait; with
/// more, it watches the arrival queue (one word). Kept apart from
/// [`MAX_ACTORS`]: every actor record holds room for [`MAX_WATCH`] words,
/// and 16,384 of them per record would make each record 256 KiB.
pub const MAX_WATCH_PEERS: usize = 1024;

/// Most words an actor can name in one wait: one ring per peer it may
/// watch and every command-queue entry twice over, so that no wait the
/// stack builds is ever cut short. (A longer list is refused, never
/// degraded: a degraded "any change" wait that forgot the values it had
/// read lost wake-ups and deadlocked jobs of more than 17 ranks, issue 28.)
pub const MAX_WATCH: usize = MAX_WATCH_PEERS + 2 * CQ_DEPTH;

/// What a waiting actor waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch<'a> {
    /// These slot words, each with the value the actor last read there: the
    /// wait ends when the device writes one of them, and at once if one
    /// already differs. At most [`MAX_WATCH`] of them.
    Words(&'a [(u32, u64)]),
    /// Any device write to the slot after this epoch (see
    /// [`ActorRecord::epoch`]): the wait ends at once if the slot has
    /// changed since. For a round of reads too long to list: pass the epoch
    /// of its first read.
    ChangeSince(u64),
}

const _: () = assert!(size_of::<CtlHeader>() == 4096);
const _: () = assert!(size_of::<ActorRecord>() == RECORD_SIZE);
const _: () = assert!(core::mem::offset_of!(ActorRecord, watch) == RECORD_FIXED);

/// Byte offset of actor record `i`.
pub const fn actor_offset(i: usize) -> usize {
    size_of::<CtlHeader>() + i * size_of::<ActorRecord>()
}

/// Size of the control file.
pub const fn file_size(max_actors: usize) -> usize {
    actor_offset(max_actors)
}

/// Write a string into a NUL-padded word array (truncating at a char boundary).
pub fn store_str(dst: &[AtomicU64], s: &str) {
    use std::sync::atomic::Ordering::Relaxed;
    let cap = dst.len() * 8;
    let mut end = s.len().min(cap);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut bytes = vec![0u8; cap];
    bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
    for (w, chunk) in dst.iter().zip(bytes.chunks_exact(8)) {
        let mut a = [0u8; 8];
        a.copy_from_slice(chunk);
        w.store(u64::from_le_bytes(a), Relaxed);
    }
}

/// Read a string written by [`store_str`].
pub fn load_str(src: &[AtomicU64]) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let bytes: Vec<u8> = src.iter().flat_map(|w| w.load(Relaxed).to_le_bytes()).collect();
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip_and_unknown_ones_are_refused() {
        for s in [ActorState::Free, ActorState::Attaching, ActorState::Dead] {
            assert_eq!(ActorState::from_raw(s as u32), Some(s));
        }
        assert_eq!(ActorState::from_raw(8), None);
        assert_eq!(YieldRequest::from_raw(0), None);
        assert_eq!(GrantResult::from_raw(3), Some(GrantResult::Refused));
        assert_eq!(GrantResult::from_raw(4), None);
    }

    #[test]
    fn strings_round_trip_and_truncate() {
        let words: Vec<AtomicU64> = (0..2).map(|_| AtomicU64::new(0)).collect();
        store_str(&words, "hello");
        assert_eq!(load_str(&words), "hello");
        store_str(&words, "0123456789abcdefXYZ");
        assert_eq!(load_str(&words), "0123456789abcdef");
        store_str(&words, "0123456789abcdeé");
        assert_eq!(load_str(&words), "0123456789abcde");
    }
}

/// Hand-off primitives on the control file's futex words.
pub mod handoff {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    use std::time::{Duration, Instant};

    use linux_futex::{AsFutex, Shared};

    /// How long the model spins waiting for the running actor to hand
    /// control back before sleeping in the kernel, when the parties are not
    /// pinned to one CPU (pinned, nobody spins: see [`crate::affinity`]).
    pub const SPIN_MODEL: Duration = Duration::from_micros(200);

    /// How long an actor spins after yielding before sleeping in the
    /// kernel, when not pinned to the model's CPU.
    ///
    /// Unpinned, hand-offs cross CPUs. Measured on the 2-core CI machine
    /// (`cargo bench -p hw-tools --bench sim_speed`): waking a sleeping
    /// process costs ~14 us per hand-off, spinning while calling
    /// `sched_yield` ~5 us. Past the spin time
    /// the waiter sleeps, so an idle simulation costs nothing.
    pub const SPIN_ACTOR: Duration = Duration::from_micros(200);

    /// How long a party spins: nothing when the parties share one CPU.
    pub fn spin_for(pinned: bool, unpinned: Duration) -> Duration {
        if pinned {
            Duration::ZERO
        } else {
            unpinned
        }
    }

    /// Spin rounds between readings of the clock. Every round gives the
    /// CPU away (`sched_yield`): unpinned, the model and two or more actors
    /// share fewer CPUs than they are, and the one party with work to do
    /// must not wait for a spinner's time slice. Yielding every round
    /// instead of every 64 (a few microseconds of `pause`s) took the
    /// 2-rank 100,000 ping-pong from 1.16 s to 0.97 s (docs/BENCHMARKS.md).
    const CLOCK_EVERY: u32 = 16;

    /// Bump `word` and wake its sleeper, if any.
    pub fn wake(word: &AtomicU32, sleeping: &AtomicU32) {
        word.fetch_add(1, SeqCst);
        if sleeping.load(SeqCst) != 0 {
            let futex: &linux_futex::Futex<Shared> = word.as_futex();
            futex.wake(i32::MAX);
        }
    }

    /// Wait until `word` differs from `old`: spin for `spin`, then sleep.
    /// Returns `false` if `timeout` passed first.
    pub fn wait_change(
        word: &AtomicU32,
        sleeping: &AtomicU32,
        old: u32,
        spin: Duration,
        timeout: Option<Duration>,
    ) -> bool {
        // A rank that is a context of a host (crate::contexts) hands the
        // CPU to the host's scheduler instead of sleeping: whoever changes
        // the word (the model granting it the token) runs on the same
        // thread, and switches back to it.
        if crate::contexts::current_rank().is_some() {
            while word.load(SeqCst) == old {
                crate::contexts::suspend();
            }
            return true;
        }
        // The clock is read only when spinning: a pinned hand-off reads no
        // clock at all (a sleep interrupted early starts a full timeout
        // again; the timeouts are liveness checks, not deadlines).
        let start = (!spin.is_zero()).then(Instant::now);
        if let Some(t0) = start {
            let mut i = 0u32;
            while word.load(SeqCst) == old {
                i = i.wrapping_add(1);
                if i % CLOCK_EVERY == 0 && t0.elapsed() >= spin {
                    break;
                }
                std::thread::yield_now();
            }
        }
        loop {
            if word.load(SeqCst) != old {
                return true;
            }
            let remaining = match (timeout, start) {
                (Some(t), Some(t0)) => match t.checked_sub(t0.elapsed()) {
                    Some(r) if !r.is_zero() => Some(r),
                    _ => return false,
                },
                (t, _) => t,
            };
            sleeping.store(1, SeqCst);
            if word.load(SeqCst) != old {
                sleeping.store(0, SeqCst);
                return true;
            }
            let futex: &linux_futex::Futex<Shared> = word.as_futex();
            let timed_out = match remaining {
                Some(r) => matches!(futex.wait_for(old, r), Err(linux_futex::TimedWaitError::TimedOut)),
                None => {
                    let _ = futex.wait(old);
                    false
                }
            };
            sleeping.store(0, SeqCst);
            if timed_out {
                return word.load(SeqCst) != old;
            }
        }
    }
}
