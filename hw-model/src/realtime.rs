//! The model as a device, in real time (issue 51).
//!
//! In a simulated job every process joins the scheduler ([`crate::cluster`]):
//! the model runs only when a process hands it the token, and a process
//! runs only when granted. A real card does neither: it watches its
//! doorbells and executes commands as they come, while the host runs
//! freely. [`Realtime`] is that card. No control file is written and the
//! `SIMULATED` capability is cleared, so the driver opens its node file as
//! it opens a card's BAR (`Platform::Hardware`: wall-clock timeouts, no
//! grants), and the same file can be a virtual machine's PCI BAR
//! (`ivshmem-plain` with this file as its memory backend;
//! `scripts/vm-test.sh`).
//!
//! Everything else is the same model: the register map, the command
//! engines, the error codes and the invariants `dimmnet-sim fuzz` checks.
//! Only time differs: each pass of [`Realtime::poll`] reads every slot's
//! doorbell and host-written words (ring read pointers, error
//! acknowledgements) at the current time, then executes the events that
//! are due. With [`Pace::Wall`] simulated time is wall time since start,
//! so a command takes about as long as on the card (at the profile's
//! clock); with [`Pace::Fast`] the model runs every pending event at once,
//! as fast as it can, and simulated time only orders the events.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fpga_regs::ur::{self, Caps};

use crate::model::{Model, ModelConfig, ModelError, Stats, Touch};
use crate::time::SimTime;

/// How simulated time follows wall time in [`Realtime`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Simulated time is wall time since the device started: an event runs
    /// when its time has come (or as soon after as the model gets to it).
    Wall,
    /// Every pending event runs at once: the device is as fast as this
    /// process can make it, and its simulated clock only orders events.
    Fast,
}

/// The words of `--realtime`: `wall` (paced to wall time) or `fast` (as
/// fast as it can).
impl dn_knobs::Choice for Pace {
    const CHOICES: &'static [(&'static str, Self)] = &[("wall", Pace::Wall), ("fast", Pace::Fast)];
}

impl std::str::FromStr for Pace {
    type Err = dn_knobs::UnknownWord;
    fn from_str(s: &str) -> Result<Pace, dn_knobs::UnknownWord> {
        dn_knobs::parse_choice("--realtime", s)
    }
}

impl std::fmt::Display for Pace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Pace::Wall => "wall",
            Pace::Fast => "fast",
        })
    }
}

/// How a [`Realtime`] device ran.
#[derive(Clone, Debug)]
pub struct RealtimeReport {
    /// The model's counters.
    pub stats: Stats,
    /// Passes over the slots.
    pub passes: u64,
    /// Doorbell values the device saw change.
    pub doorbells: u64,
    /// Wall time it ran.
    pub wall: Duration,
}

impl RealtimeReport {
    /// One line for a log.
    pub fn summary(&self) -> String {
        format!(
            "ran {:.3} s in real time: {} commands ({} refused), {} events, {} packets, {} doorbells, {} passes",
            self.wall.as_secs_f64(),
            self.stats.commands,
            self.stats.errors,
            self.stats.events,
            self.stats.packets,
            self.doorbells,
            self.passes
        )
    }
}

/// Passes without anything to do before the device sleeps between passes.
const SPIN_PASSES: u32 = 2_000;
/// The sleep between idle passes: a doorbell waits at most about this long
/// to be seen once the device has gone idle.
const IDLE_SLEEP: Duration = Duration::from_micros(50);

/// A cluster's device model answering its slots in real time.
pub struct Realtime {
    model: Model,
    dir: PathBuf,
    pace: Pace,
    start: Instant,
    /// The doorbell value of each slot at the last pass (by source index).
    doorbells: Vec<u64>,
    seen_doorbells: u64,
    passes: u64,
    idle_passes: u32,
    touched: Vec<Touch>,
    changed: Vec<fpga_regs::Peer>,
    /// Whether `create` made `dir` (removed again on drop, with the node files).
    created_dir: bool,
}

impl Realtime {
    /// Create the node files in `dir` (one per node, laid out as the
    /// register map says) and the device behind them.
    /// `dir` is created (owner only) when it does not exist; the node
    /// files, and `dir` if it was created here, are removed on drop, as a
    /// [`crate::Cluster`] does with its files.
    pub fn create(cfg: ModelConfig, dir: &Path, pace: Pace) -> Result<Realtime, ModelError> {
        let slots = cfg.nodes as usize * cfg.slots as usize;
        let created_dir = !dir.exists();
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| ModelError::Io { path: dir.display().to_string(), source })?;
        }
        let model = Model::create(cfg, dir);
        if model.is_err() && created_dir {
            let _ = std::fs::remove_dir(dir);
        }
        let mut model = model?;
        model.present_as_device();
        Ok(Realtime {
            model,
            dir: dir.to_path_buf(),
            pace,
            start: Instant::now(),
            doorbells: vec![0; slots],
            seen_doorbells: 0,
            passes: 0,
            idle_passes: 0,
            touched: Vec::new(),
            changed: Vec::new(),
            created_dir,
        })
    }

    /// The node file of node `n` (what a driver opens, or a VM's BAR).
    pub fn node_path(&self, n: u16) -> PathBuf {
        self.dir.join(simlink::simctl::node_file_name(n))
    }

    /// The model (for inspection).
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Mutable access to the model (test set-up: planting faults).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    fn now(&self) -> SimTime {
        match self.pace {
            Pace::Wall => SimTime((self.start.elapsed().as_nanos() as u64).saturating_mul(1000)).max(self.model.now()),
            Pace::Fast => self.model.now(),
        }
    }

    /// One pass: look at every slot's doorbell and host-written words, then
    /// run the events that are due. Returns whether anything happened.
    pub fn poll(&mut self) -> bool {
        self.passes += 1;
        let now = self.now();
        let (nodes, slots) = (self.model.config().nodes, self.model.config().slots);
        let mut busy = false;
        for n in 0..nodes {
            for s in 0..slots {
                let k = n as usize * slots as usize + s as usize;
                let db = self.model.read_ur(n, s, ur::off::DOORBELL);
                if db != self.doorbells[k] {
                    self.doorbells[k] = db;
                    self.seen_doorbells += 1;
                    self.model.doorbell(n, s, now, |_| now);
                    busy = true;
                }
                self.model.host_activity(n, s, now);
            }
        }
        let due = match self.pace {
            Pace::Wall => now,
            Pace::Fast => SimTime(u64::MAX),
        };
        while self.model.next_event_time().is_some_and(|t| t <= due) {
            self.model.step();
            busy = true;
        }
        // Nobody schedules from these here; keep them from growing.
        self.model.swap_touched(&mut self.touched);
        self.model.take_changed_slots(&mut self.changed);
        busy
    }

    /// Answer the slots until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) -> RealtimeReport {
        while !stop.load(Ordering::SeqCst) {
            if self.poll() {
                self.idle_passes = 0;
                continue;
            }
            self.idle_passes = self.idle_passes.saturating_add(1);
            if self.idle_passes < SPIN_PASSES {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(IDLE_SLEEP);
            }
        }
        self.report()
    }

    /// The counters so far.
    pub fn report(&self) -> RealtimeReport {
        RealtimeReport {
            stats: self.model.stats().clone(),
            passes: self.passes,
            doorbells: self.seen_doorbells,
            wall: self.start.elapsed(),
        }
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        for n in 0..self.model.config().nodes {
            let _ = std::fs::remove_file(self.node_path(n));
        }
        if self.created_dir {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

impl Model {
    /// Present this model as a card rather than a simulator: clear the
    /// `SIMULATED` capability in every slot, so that a driver never looks
    /// for a scheduler to join.
    pub(crate) fn present_as_device(&mut self) {
        let flags = Caps::from_bits_truncate(ur::caps::FLAGS.get(self.constant_caps()) as u32) - Caps::SIMULATED;
        self.set_constant_caps(ur::caps::FLAGS.set(self.constant_caps(), flags.bits() as u64));
    }
}
