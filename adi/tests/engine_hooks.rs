//! Progress hooks (`adi::hooks`): work registered with the engine moves in
//! every blocking call of the engine, an idle hook costs nothing, and a
//! hook runs with the hook list taken out (no re-entry).

use std::any::Any;

use adi::backend::local::{default_caps, local_world};
use adi::{AdiError, Config, Engine, ProgressHook, Source, TagSel};

/// Sends `value` to `to` the first time it is polled.
struct SendOnce {
    to: u32,
    value: u8,
    sent: bool,
    polls: u32,
    saw_itself: bool,
}

impl ProgressHook for SendOnce {
    fn busy(&self) -> bool {
        !self.sent
    }

    fn poll(&mut self, e: &mut Engine) -> Result<bool, AdiError> {
        self.polls += 1;
        // The list is taken out while hooks run: no hook is reachable.
        self.saw_itself |= e.hook_mut::<SendOnce>().is_some();
        e.send(self.to, 7, 0, &[self.value], false)?;
        self.sent = true;
        Ok(true)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Never busy: must never be polled.
#[derive(Default)]
struct Idle {
    polls: u32,
}

impl ProgressHook for Idle {
    fn busy(&self) -> bool {
        false
    }

    fn poll(&mut self, _: &mut Engine) -> Result<bool, AdiError> {
        self.polls += 1;
        Ok(false)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
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
                e.add_hook(Box::<Idle>::default());
                let mut buf = [0u8; 1];
                if rank == 1 {
                    // Rank 1 only receives; the message rank 0 waits for
                    // comes from its hook, which only a progress pass of
                    // this blocking receive can run.
                    e.add_hook(Box::new(SendOnce { to: 0, value: 42, sent: false, polls: 0, saw_itself: false }));
                    assert!(e.hooks_busy());
                    e.recv_into(Source::Rank(0), TagSel::Tag(7), 0, &mut buf).unwrap();
                    assert_eq!(buf[0], 43);
                    let h = e.hook_mut::<SendOnce>().expect("the hook is registered");
                    assert_eq!((h.polls, h.sent, h.saw_itself), (1, true, false));
                    assert!(!e.hooks_busy());
                } else {
                    e.recv_into(Source::Rank(1), TagSel::Tag(7), 0, &mut buf).unwrap();
                    assert_eq!(buf[0], 42);
                    e.send(1, 7, 0, &[43], false).unwrap();
                }
                assert_eq!(e.hook_mut::<Idle>().expect("registered").polls, 0, "an idle hook was polled");
                e.finalize().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
