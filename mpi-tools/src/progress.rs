//! The live line `dnrun` shows on a terminal while a simulated job runs
//! (issue 46: a 1,024-rank job used to print nothing for 40 s): how far
//! simulated time has come, how many device events the model processes
//! per second, and how many ranks run, wait for the device, or are done
//! (cut to the terminal's width).
//!
//! It reads the simulator's control file (`simlink::simctl`: the model
//! publishes its time and event count in the header, each rank's state is
//! in its record), the same for ranks as processes and as contexts, from a
//! thread of its own, a few times a second. Nothing is drawn when standard
//! error is not a terminal, or under `--quiet`. A rank's line of output
//! clears the progress line first and it is drawn again after it
//! ([`suspend`]), so the two never share a line.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use simlink::mmio::Mapping;
use simlink::simctl::{self, ActorRecord, ActorState, CtlHeader, MAX_ACTORS};

/// The line being drawn, for [`suspend`].
static BAR: OnceLock<ProgressBar> = OnceLock::new();

/// Run `f` (which writes a rank's line of output) with the progress line
/// out of the way.
pub fn suspend<T>(f: impl FnOnce() -> T) -> T {
    match BAR.get() {
        Some(bar) if !bar.is_hidden() => bar.suspend(f),
        _ => f(),
    }
}

/// A running progress line; it goes away when dropped.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the control file says now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Reading {
    sim_ps: u64,
    events: u64,
    running: u32,
    waiting: u32,
    left: u32,
}

fn read(ctl: &Mapping, np: u32) -> Option<Reading> {
    let h = ctl.block::<CtlHeader>(0).ok()?;
    let mut r = Reading {
        sim_ps: h.sim_time.load(Ordering::Relaxed),
        events: h.events.load(Ordering::Relaxed),
        ..Reading::default()
    };
    for i in 0..(np as usize).min(MAX_ACTORS) {
        match ctl.block::<ActorRecord>(simctl::actor_offset(i)).ok()?.state() {
            Some(ActorState::Runnable | ActorState::Running | ActorState::Yielded | ActorState::Attaching) => {
                r.running += 1
            }
            Some(ActorState::Waiting) => r.waiting += 1,
            Some(ActorState::Exited | ActorState::Dead) => r.left += 1,
            _ => {}
        }
    }
    Some(r)
}

/// Simulated time as a person reads it.
fn sim_time(ps: u64) -> String {
    match ps {
        p if p < 1_000_000_000 => format!("{:.3} us", p as f64 / 1e6),
        p if p < 1_000_000_000_000 => format!("{:.3} ms", p as f64 / 1e9),
        p => format!("{:.3} s", p as f64 / 1e12),
    }
}

fn line(r: &Reading, rate: f64, np: u32) -> String {
    format!(
        "{} simulated, {:.0}k events/s; {np} ranks: {} run, {} wait, {} done",
        sim_time(r.sim_ps),
        rate / 1e3,
        r.running,
        r.waiting,
        r.left
    )
}

impl Progress {
    /// Start the line for a job of `np` ranks whose simulator is in
    /// `sim_dir`, unless `quiet` or standard error is not a terminal.
    pub fn start(sim_dir: &Path, np: u32, quiet: bool) -> Option<Progress> {
        let target = ProgressDrawTarget::stderr_with_hz(4);
        if quiet || target.is_hidden() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(ProgressStyle::with_template("dnrun: {spinner} {wide_msg}").ok()?);
        let bar = BAR.get_or_init(|| bar).clone();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let path: PathBuf = sim_dir.join(simctl::FILE_NAME);
        let thread = std::thread::Builder::new()
            .name("dnrun-progress".into())
            .spawn(move || {
                let mut ctl = None;
                let mut last: Option<(Instant, u64)> = None;
                while !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(250));
                    if ctl.is_none() {
                        ctl = Mapping::open(&path, 0, simctl::file_size(MAX_ACTORS)).ok();
                    }
                    let Some(r) = ctl.as_ref().and_then(|c| read(c, np)) else { continue };
                    let now = Instant::now();
                    let rate = match last {
                        Some((t, e)) if now > t => (r.events.saturating_sub(e)) as f64 / (now - t).as_secs_f64(),
                        _ => 0.0,
                    };
                    last = Some((now, r.events));
                    bar.set_message(line(&r, rate, np));
                    bar.tick();
                }
                bar.finish_and_clear();
            })
            .ok()?;
        Some(Progress { stop, thread: Some(thread) })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_as_a_person_would_say_it() {
        let r = Reading { sim_ps: 2_973_037_500, events: 5, running: 3, waiting: 60, left: 1 };
        assert_eq!(line(&r, 123_456.0, 64), "2.973 ms simulated, 123k events/s; 64 ranks: 3 run, 60 wait, 1 done");
        assert_eq!(sim_time(5_120_000), "5.120 us");
        assert_eq!(sim_time(12_000_000_000_000), "12.000 s");
    }

    /// Under a test harness standard error is a pipe: nothing is drawn.
    #[test]
    fn nothing_is_drawn_off_a_terminal_or_when_quiet() {
        assert!(Progress::start(Path::new("/nonexistent"), 2, true).is_none());
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            assert!(Progress::start(Path::new("/nonexistent"), 2, false).is_none());
        }
    }
}
