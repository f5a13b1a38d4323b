//! What the engine's integration tests share.

use adi::backend::local::{default_caps, local_world, LocalTransport};
use adi::{Config, Engine};

/// Run `f(rank, engine)` on `n` threads over the in-process backend (send
/// queues of `queue` messages, eager up to `threshold` bytes), finalizing
/// each engine; the results in rank order.
pub fn run<R: Send + 'static>(n: u32, queue: Option<usize>, threshold: usize, f: fn(u32, &mut Engine) -> R) -> Vec<R> {
    let ts: Vec<LocalTransport> = local_world(n, queue, default_caps());
    let handles: Vec<_> = ts
        .into_iter()
        .map(|t| {
            std::thread::spawn(move || {
                let rank = adi::Transport::rank(&t);
                let cfg = Config { eager_threshold: threshold, force_rendezvous: false, print_stats: false };
                let mut e = Engine::with_config(Box::new(t), cfg);
                let r = f(rank, &mut e);
                e.finalize().unwrap();
                r
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}
