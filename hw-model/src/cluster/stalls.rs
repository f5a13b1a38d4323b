//! When nothing can run: which waiting actors another thread may still
//! poke, and how a deadlock or a livelock is found and reported.

use super::*;

impl Cluster {
    /// The waiting actors whose processes let several threads call the
    /// library and have a thread besides the one that waits: it may still
    /// poke them. (Asked of /proc only when the simulation stalls.)
    pub(super) fn pokeable(&self) -> Vec<usize> {
        (0..self.actors.len())
            .filter(|&i| {
                let a = &self.actors[i];
                a.state == ActorState::Waiting
                    && self.ctl.threaded(i)
                    && simlink::process::threads(a.pid).is_some_and(|n| n > 1)
            })
            .collect()
    }

    pub(super) fn declare_deadlock(&mut self, pokeable: &[usize]) {
        self.deadlocks += 1;
        let mut waiting = Vec::new();
        let mut gone = Vec::new();
        for (i, a) in self.actors.iter().enumerate() {
            match a.state {
                ActorState::Waiting => waiting.push(format!("actor {i} (node {} slot {})", a.node, a.slot)),
                ActorState::Exited => gone.push(format!("actor {i} exited")),
                ActorState::Dead => gone.push(format!("actor {i} died")),
                _ => {}
            }
        }
        let held = if self.model.has_held_packets() { "; some IVS packets are held by full rings" } else { "" };
        let threads = if pokeable.is_empty() {
            String::new()
        } else {
            let who: Vec<String> = pokeable.iter().map(|i| format!("actor {i}")).collect();
            format!(
                "; the processes of {} have other threads, which called nothing for {} s (computing, or waiting for the thread that waits in MPI)",
                who.join(", "),
                scheduler::POKE_PATIENCE.as_secs()
            )
        };
        let msg = format!(
            "deadlock at {}: {} waiting and nothing is in flight{}{}{}",
            self.last_time,
            waiting.join(", "),
            if gone.is_empty() { String::new() } else { format!(" ({})", gone.join(", ")) },
            held,
            threads
        );
        self.ctl.report_deadlock(&msg, !held.is_empty());
        for i in 0..self.actors.len() {
            if self.actors[i].state == ActorState::Waiting {
                self.actors[i].pending_result = GrantResult::Deadlock;
                self.transition(i, ActorState::Runnable, self.actors[i].clock);
            }
        }
    }

    /// Declare a livelock when commands keep completing without moving a
    /// byte (see [`LIVELOCK_WINDOW`]): every actor gets the deadlock result
    /// at its next grant, with a message naming each actor's last command.
    pub(super) fn check_livelock(&mut self, t: SimTime) {
        let st = self.model.stats();
        let Some(stall) = self.progress.observe(st.commands, st.bytes, t.0) else {
            return;
        };
        self.deadlocks += 1;
        let mut who = Vec::new();
        for (i, a) in self.actors.iter().enumerate() {
            if matches!(a.state, ActorState::Free | ActorState::Exited | ActorState::Dead) {
                continue;
            }
            let last = match self.model.last_command(a.node, a.slot) {
                Some((op, code, b)) => {
                    format!("last command {} ended {} ({b} B)", op.map_or("(undecodable)", |o| o.name()), code.name())
                }
                None => "no command completed".into(),
            };
            let doing = if a.state == ActorState::Waiting { "waiting on the device" } else { "runnable" };
            who.push(format!("actor {i} (node {} slot {}, {doing}): {last}", a.node, a.slot));
        }
        let msg = format!(
            "livelock at {t}: {} commands completed over {} of simulated time and moved no data; {}",
            stall.commands,
            SimTime(stall.over_ps),
            who.join("; ")
        );
        self.ctl.report_deadlock(&msg, false);
        for i in 0..self.actors.len() {
            if matches!(self.actors[i].state, ActorState::Waiting | ActorState::Runnable) {
                self.actors[i].pending_result = GrantResult::Deadlock;
                self.transition(i, ActorState::Runnable, self.actors[i].clock);
            }
        }
    }
}
