//! Progress hooks (`adi::hooks`): work registered with the engine moves in
//! every blocking call of the engine, an idle hook costs nothing, a hook
//! runs with the hook list taken out (no re-entry), an ended hook is
//! dropped, and a served context is polled only when it has work.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use adi::backend::local::{default_caps, local_world};
use adi::{AdiError, Config, ContextHook, Engine, Polled, ProgressHook, Source, TagSel};

/// What a test learns of a hook it handed to the engine.
#[derive(Default)]
struct Seen {
    polls: AtomicU32,
    reentered: AtomicU32,
}

/// Sends `value` to `to` the first time it is polled, and says it ended.
struct SendOnce {
    to: u32,
    value: u8,
    seen: Arc<Seen>,
}

impl ProgressHook for SendOnce {
    fn busy(&self) -> bool {
        true
    }

    fn poll(&mut self, e: &mut Engine) -> Result<Polled, AdiError> {
        let n = self.seen.polls.fetch_add(1, Ordering::SeqCst);
        // The list is taken out while hooks run: a pass inside this one
        // must not poll this hook again.
        e.progress()?;
        if self.seen.polls.load(Ordering::SeqCst) != n + 1 {
            self.seen.reentered.fetch_add(1, Ordering::SeqCst);
        }
        e.send(self.to, 7, 0, &[self.value], false)?;
        Ok(Polled { moved: true, ended: true })
    }
}

/// Never busy: must never be polled.
struct Idle(Arc<Seen>);

impl ProgressHook for Idle {
    fn busy(&self) -> bool {
        false
    }

    fn poll(&mut self, _: &mut Engine) -> Result<Polled, AdiError> {
        self.0.polls.fetch_add(1, Ordering::SeqCst);
        Ok(Polled::default())
    }
}

#[test]
fn a_blocking_receive_runs_the_hooks_that_its_sender_waits_for() {
    let ts = local_world(2, None, default_caps());
    let handles: Vec<_> = ts
        .into_iter()
        .map(|t| {
            std::thread::spawn(move || {
                let rank = adi::Transport::rank(&t);
                let cfg = Config { eager_threshold: 1024, force_rendezvous: false, print_stats: false };
                let mut e = Engine::with_config(Box::new(t), cfg);
                let idle = Arc::new(Seen::default());
                e.add_hook(Box::new(Idle(idle.clone())));
                let mut buf = [0u8; 1];
                if rank == 1 {
                    // Rank 1 only receives; the message rank 0 waits for
                    // comes from its hook, which only a progress pass of
                    // this blocking receive can run.
                    let seen = Arc::new(Seen::default());
                    e.add_hook(Box::new(SendOnce { to: 0, value: 42, seen: seen.clone() }));
                    assert!(e.hooks_busy());
                    e.recv_into(Source::Rank(0), TagSel::Tag(7), 0, &mut buf).unwrap();
                    assert_eq!(buf[0], 43);
                    assert_eq!(seen.polls.load(Ordering::SeqCst), 1, "an ended hook was polled again");
                    assert_eq!(seen.reentered.load(Ordering::SeqCst), 0, "a pass inside a hook ran it");
                    assert!(!e.hooks_busy(), "the ended hook is still registered");
                } else {
                    e.recv_into(Source::Rank(1), TagSel::Tag(7), 0, &mut buf).unwrap();
                    assert_eq!(buf[0], 42);
                    e.send(1, 7, 0, &[43], false).unwrap();
                }
                assert_eq!(idle.polls.load(Ordering::SeqCst), 0, "an idle hook was polled");
                e.finalize().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// What a test keeps of each served context: its polls, what it got.
type Watched = Vec<(Arc<AtomicU32>, Arc<Mutex<Vec<u8>>>)>;

fn polls_of(i: usize, c: &Watched) -> u32 {
    c[i].0.load(Ordering::SeqCst)
}

/// The work of one context: keeps a receive posted on it and counts
/// what arrives; idle while the receive waits.
struct Counter {
    ctx: u32,
    recv: Option<adi::ReqId>,
    got: Arc<Mutex<Vec<u8>>>,
    polls: Arc<AtomicU32>,
    withdraw_on: Option<u8>,
}

impl ContextHook for Counter {
    fn poll(&mut self, e: &mut Engine) -> Result<bool, AdiError> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        let mut moved = false;
        if self.recv.is_none() {
            self.recv = Some(e.irecv(Source::Any, TagSel::Any, self.ctx, 64)?);
        }
        while let Some(r) = self.recv {
            let Some(adi::Done::Received { data, .. }) = e.test(r)? else { break };
            moved = true;
            self.got.lock().unwrap().extend_from_slice(&data);
            self.recv = Some(e.irecv(Source::Any, TagSel::Any, self.ctx, 64)?);
            if self.withdraw_on == data.first().copied() {
                e.stop_serving(self.ctx);
            }
        }
        Ok(moved)
    }

    fn idle(&self, e: &Engine) -> bool {
        self.recv.is_some_and(|r| e.is_posted(r))
    }
}

#[test]
fn a_served_context_is_polled_only_when_it_has_work() {
    let mut ts = local_world(2, None, default_caps()).into_iter();
    let mut e0 = Engine::new(Box::new(ts.next().unwrap())).unwrap();
    let mut e1 = Engine::new(Box::new(ts.next().unwrap())).unwrap();
    let mut counts: Watched = Vec::new();
    for ctx in 100..400u32 {
        let polls = Arc::new(AtomicU32::new(0));
        let got = Arc::new(Mutex::new(Vec::new()));
        let hook = Counter { ctx, recv: None, got: got.clone(), polls: polls.clone(), withdraw_on: Some(9) };
        e0.serve_context(ctx, Box::new(hook)).unwrap();
        counts.push((polls, got));
    }
    let again = Counter { ctx: 100, recv: None, got: Default::default(), polls: Default::default(), withdraw_on: None };
    assert!(matches!(e0.serve_context(100, Box::new(again)), Err(AdiError::ServedTwice { ctx: 100 })));
    assert_eq!(e0.attended().len(), 300);
    e0.progress().unwrap();
    assert!(e0.attended().is_empty(), "{} idle contexts still looked at", e0.attended().len());
    assert!(e0.hooks_busy(), "served contexts make the hooks busy");
    let before = polls_of(0, &counts);
    // A message to context 200 brings it, alone, back into sight.
    e1.send(0, 1, 200, &[5], false).unwrap();
    for _ in 0..3 {
        e0.progress().unwrap();
    }
    assert_eq!(*counts[100].1.lock().unwrap(), vec![5]);
    assert_eq!(polls_of(0, &counts), before, "an idle context was polled");
    // A call that touches a context brings it back too.
    e0.attend(150);
    e0.attend(99_999);
    assert_eq!(e0.attended(), vec![150], "an unserved context was attended");
    e0.progress().unwrap();
    assert!(e0.attended().is_empty());
    // A hook that withdraws itself during its poll is never polled again,
    // and its context is free for another.
    e1.send(0, 1, 300, &[9], false).unwrap();
    e0.progress().unwrap();
    e0.progress().unwrap();
    let after = polls_of(200, &counts);
    e1.send(0, 1, 300, &[7], false).unwrap();
    e0.progress().unwrap();
    assert_eq!(polls_of(200, &counts), after, "a withdrawn hook was polled");
    assert_eq!(*counts[200].1.lock().unwrap(), vec![9]);
    let again = Counter { ctx: 300, recv: None, got: Default::default(), polls: Default::default(), withdraw_on: None };
    e0.serve_context(300, Box::new(again)).unwrap();
    for ctx in 100..400u32 {
        e0.stop_serving(ctx);
    }
    assert!(!e0.hooks_busy());
}

/// Runs a pass of its own inside its poll, and notes how often the
/// served context was polled across that inner pass.
struct Nests {
    context_polls: Arc<AtomicU32>,
    inner_polls: Arc<AtomicU32>,
}

impl ProgressHook for Nests {
    fn busy(&self) -> bool {
        true
    }

    fn poll(&mut self, e: &mut Engine) -> Result<Polled, AdiError> {
        e.attend(500);
        let before = self.context_polls.load(Ordering::SeqCst);
        e.progress()?;
        let during = self.context_polls.load(Ordering::SeqCst) - before;
        self.inner_polls.fetch_add(during, Ordering::SeqCst);
        Ok(Polled { moved: false, ended: true })
    }
}

/// A pass inside any hook runs no hook, of either kind: a served context
/// is polled by the outer pass only.
#[test]
fn a_pass_inside_a_hook_runs_no_served_context() {
    let mut ts = local_world(1, None, default_caps()).into_iter();
    let mut e = Engine::new(Box::new(ts.next().unwrap())).unwrap();
    let context_polls = Arc::new(AtomicU32::new(0));
    let counter =
        Counter { ctx: 500, recv: None, got: Default::default(), polls: context_polls.clone(), withdraw_on: None };
    e.serve_context(500, Box::new(counter)).unwrap();
    e.progress().unwrap();
    let inner_polls = Arc::new(AtomicU32::new(0));
    e.add_hook(Box::new(Nests { context_polls: context_polls.clone(), inner_polls: inner_polls.clone() }));
    let before = context_polls.load(Ordering::SeqCst);
    e.progress().unwrap();
    assert_eq!(inner_polls.load(Ordering::SeqCst), 0, "a pass inside a hook polled a served context");
    assert!(context_polls.load(Ordering::SeqCst) > before, "the outer pass did not poll the attended context");
    e.stop_serving(500);
}
