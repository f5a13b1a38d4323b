//! Counters a user can print (`DN_STATS=1` prints them at finalize).

use std::fmt;

/// Protocol engine counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Eager messages sent.
    pub eager_sent: u64,
    /// Payload bytes sent eagerly.
    pub eager_bytes_sent: u64,
    /// Rendezvous messages sent.
    pub rndv_sent: u64,
    /// Payload bytes sent by rendezvous.
    pub rndv_bytes_sent: u64,
    /// Eager messages received.
    pub eager_recv: u64,
    /// Payload bytes received eagerly.
    pub eager_bytes_recv: u64,
    /// Rendezvous messages received.
    pub rndv_recv: u64,
    /// Payload bytes received by rendezvous.
    pub rndv_bytes_recv: u64,
    /// Messages to self.
    pub self_msgs: u64,
    /// Control packets (RTS/CTS/FTS/DATA) sent.
    pub control_sent: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected_total: u64,
    /// Unexpected-queue depth when the counters were taken.
    pub unexpected_depth: u64,
    /// Largest unexpected-queue depth.
    pub unexpected_max: u64,
    /// Posted-receive-queue depth when the counters were taken.
    pub posted_depth: u64,
    /// Largest posted-receive-queue depth.
    pub posted_max: u64,
    /// Searches of the posted queue (one per arriving envelope).
    pub posted_searches: u64,
    /// Posted-queue elements examined in total.
    pub posted_steps: u64,
    /// Searches of the unexpected queue (one per posted receive or probe).
    pub unexpected_searches: u64,
    /// Unexpected-queue elements examined in total.
    pub unexpected_steps: u64,
    /// Times a message waited in a per-connection send queue (flow control).
    pub send_queued: u64,
    /// Largest per-connection send-queue depth.
    pub send_queue_max: u64,
    /// Progress-engine passes.
    pub progress_passes: u64,
    /// Passes that found nothing and idled.
    pub idle_waits: u64,
    /// Received messages whose bytes the engine copied once more than into
    /// their final buffer: an eager message that waited in the unexpected
    /// queue and went into a caller's buffer, or a message to self (empty
    /// messages are not counted: they have no bytes to copy).
    pub recv_copies: u64,
    /// Bytes of those extra copies.
    pub recv_copy_bytes: u64,
    /// Eager messages the transport handed over in parts whose payload went
    /// from the device straight into the posted receive's buffer (DIMMnet-2:
    /// PW read into the user's buffer), with no transport buffer between.
    pub recv_direct: u64,
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let avg = |steps: u64, n: u64| if n == 0 { 0.0 } else { steps as f64 / n as f64 };
        writeln!(
            f,
            "messages sent:     eager {} ({} B), rendezvous {} ({} B), to self {}",
            self.eager_sent, self.eager_bytes_sent, self.rndv_sent, self.rndv_bytes_sent, self.self_msgs
        )?;
        writeln!(
            f,
            "messages received: eager {} ({} B), rendezvous {} ({} B); control packets sent {}",
            self.eager_recv, self.eager_bytes_recv, self.rndv_recv, self.rndv_bytes_recv, self.control_sent
        )?;
        writeln!(
            f,
            "unexpected queue:  {} arrivals unexpected, depth now {} max {}; {} searches, {:.2} examined per search",
            self.unexpected_total,
            self.unexpected_depth,
            self.unexpected_max,
            self.unexpected_searches,
            avg(self.unexpected_steps, self.unexpected_searches)
        )?;
        writeln!(
            f,
            "posted queue:      depth now {} max {}; {} searches, {:.2} examined per search",
            self.posted_depth,
            self.posted_max,
            self.posted_searches,
            avg(self.posted_steps, self.posted_searches)
        )?;
        writeln!(
            f,
            "send queues:       {} messages waited for flow control, max depth {}; progress passes {}, idle waits {}",
            self.send_queued, self.send_queue_max, self.progress_passes, self.idle_waits
        )?;
        write!(
            f,
            "extra copies:      {} received messages copied twice ({} B); {} eager payloads read straight into the posted buffer",
            self.recv_copies, self.recv_copy_bytes, self.recv_direct
        )
    }
}
