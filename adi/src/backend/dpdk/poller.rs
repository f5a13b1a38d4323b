//! The dedicated polling process of a node (seed 000 §4.1, the
//! "dedicated process" method; §4.2.1 for eager messages).
//!
//! The seed's reason for it: a rank polls its NIC queues only while it is
//! inside the MPI library, and a NIC queue is short, so frames that arrive
//! while the rank computes overflow it. A process that does nothing but
//! poll drains the NIC into shared memory that each rank reads when it
//! next makes progress.
//!
//! Here, on one host over memif:
//! - the poller of node `a` owns one memif interface per rank of `a` (the
//!   poller is the server; the rank's only interface) and one per other
//!   node `b` (the lower node is the server), with one queue pair per rank
//!   slot of a node;
//! - a frame from a rank is routed by its destination MAC ([`rank_mac`]):
//!   to the rank's interface when the destination is on `a`, else to the
//!   link to the destination's node, on the queue of the destination's
//!   slot. memif has no flow director, so the sending poller choosing the
//!   queue is how steering is emulated; the receiving poller forwards
//!   queue `q` to the rank in slot `q` without reading the frame;
//! - several queues per node link (seed 000: "several RX queues for eager
//!   messages") keep a flood to one rank from filling the ring that
//!   carries every other rank's frames;
//! - the memif rings to the ranks hold 2^[`RANK_RING_LOG2`] frames: the
//!   larger queue the seed asks of the poller.
//!
//! What differs from the seed: the seed's poller also acknowledges eager
//! packets, and its rendezvous data goes to the rank's own queue. Here the
//! reliable protocol (sequence numbers, ACKs, retransmission) stays in the
//! ranks, written once for every datagram backend, and every frame passes
//! the poller: without hugepages DPDK's multi-process mode is not
//! available, so a queue belongs to the one process that owns its port.
//! The measured cost of the extra hop and of the poller's core is in
//! docs/BENCHMARKS.md ("DPDK: a polling process per node").

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::*;

/// log2 of the frames each memif ring between a poller and a rank holds.
pub const RANK_RING_LOG2: u32 = 11;
/// log2 of the frames each queue of a link between two nodes holds.
pub const NODE_RING_LOG2: u32 = 10;
/// Frames a poller holds per destination queue while the queue is full.
pub const BACKLOG: usize = 4096;
/// Environment variable: how long (µs) the poller keeps spinning after the
/// last frame before it sleeps between passes (default 200; 0 never
/// sleeps, as the seed's poller).
pub const SPIN_ENV: &str = "DN_DPDK_POLLER_SPIN_US";
/// Default of [`SPIN_ENV`].
pub const DEFAULT_SPIN_US: u64 = 200;

/// What a poller serves.
#[derive(Clone, Debug)]
pub struct PollerOptions {
    /// Job id (names the memif sockets).
    pub job: u32,
    /// This node.
    pub node: u32,
    /// Where the ranks are.
    pub layout: NodeLayout,
    /// Frame size (bytes; as the ranks').
    pub frame: usize,
    /// The job directory (the ready files).
    pub dir: PathBuf,
    /// Spin this long after the last frame before sleeping between passes.
    pub spin: Duration,
    /// The ranks the job starts with (`0..started`); the others of the
    /// layout are processes it may spawn later (MPI 4.1 §11.8), whose
    /// interfaces wait for them. The poller is up once the starting
    /// ranks are connected.
    pub started: u32,
}

impl PollerOptions {
    /// The options for `node` of a job of `size` ranks on `nodes` nodes,
    /// with the frame size and spin from the environment.
    pub fn from_env(job: u32, node: u32, size: u32, nodes: u32, dir: PathBuf) -> Result<Self, TransportError> {
        let layout = NodeLayout::new(size, nodes);
        super::check_socket_dir(&dir)?;
        if size == 0 || node >= layout.nodes() {
            return Err(cfg_err(format!(
                "node {node} has no ranks in a job of {size} ranks on {nodes} nodes ({} slots each)",
                layout.slots
            )));
        }
        let spin = crate::knobs::integer(SPIN_ENV)?.unwrap_or(DEFAULT_SPIN_US);
        Ok(PollerOptions {
            job,
            node,
            layout,
            frame: frame_from_env()?,
            dir,
            spin: Duration::from_micros(spin),
            started: size,
        })
    }

    /// The same, for a job that starts with the first `started` ranks of
    /// the layout and may spawn the rest.
    pub fn starting_with(mut self, started: u32) -> Self {
        self.started = started.min(self.layout.size);
        self
    }

    /// The memif socket of the link between nodes `a` and `b`, in the
    /// job directory ([`super::socket_in`]).
    pub fn node_socket(&self, a: u32, b: u32) -> PathBuf {
        super::socket_in(&self.dir, &format!("n{}-n{}", a.min(b), a.max(b)))
    }

    #[cfg(feature = "dpdk")]
    fn node_args(&self, peer: u32) -> String {
        let role = if self.node < peer { "server" } else { "client" };
        format!(
            "role={role},socket={},socket-abstract=no,id=0,bsize={},rsize={NODE_RING_LOG2}",
            self.node_socket(self.node, peer).display(),
            self.frame
        )
    }
}

/// What a poller did, for `DN_STATS`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PollerStats {
    /// Frames handed to each local rank (by slot).
    pub to_rank: Vec<u64>,
    /// Frames sent to other nodes, by queue (the destination's slot).
    pub to_node_queue: Vec<u64>,
    /// Frames dropped because the destination queue and the poller's
    /// backlog for it were full (the ranks' protocol resends them).
    pub dropped_full: u64,
    /// Frames dropped because their destination had disconnected (a rank
    /// that finished: its peers' last ACKs find no one).
    pub dropped_down: u64,
    /// Frames dropped by [`route`]: naming no rank of the job, from a
    /// rank posing as another, or on a queue not their destination's.
    pub dropped_stray: u64,
    /// Passes over the queues, and passes that moved at least one frame.
    pub passes: u64,
    /// See `passes`.
    pub busy_passes: u64,
    /// Local ranks whose link went down before they said they had left
    /// ([`left_file`]): they crashed, or left while we could still have
    /// been reading the rings they share with us.
    pub gone_unannounced: u64,
}

impl std::fmt::Display for PollerStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "frames to local ranks by slot {:?}, to other nodes by queue {:?}; dropped: {} ring full, {} \
             disconnected, {} stray; {} of {} passes moved frames; {} ranks gone without leaving",
            self.to_rank,
            self.to_node_queue,
            self.dropped_full,
            self.dropped_down,
            self.dropped_stray,
            self.busy_passes,
            self.passes,
            self.gone_unannounced
        )
    }
}

/// Where a frame came into a poller from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ingress {
    /// The interface of the local rank in this slot.
    Rank(u32),
    /// A link from another node, on this queue.
    Node(u32),
}

/// Where a poller sends a frame on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// To the local rank in this slot.
    Rank(u32),
    /// To this node, on the queue of the destination's slot.
    Node {
        /// The destination's node.
        node: u32,
        /// The destination's slot there.
        queue: u32,
    },
}

/// Route a frame (its Ethernet header `head`) that came into `node`'s
/// poller from `from`. `None`: drop it as stray. A rank may send only as
/// itself (its source MAC must be its own: a rank that lies about who it
/// is would otherwise be believed by its peers, which take the sender from
/// the source MAC), and a frame from another node must name a rank of this
/// node in the slot of the queue it came on.
pub fn route(layout: NodeLayout, node: u32, from: Ingress, head: &[u8]) -> Option<Hop> {
    let dest = rank_of_mac(head.get(..6)?, layout.size)?;
    let (dest_node, dest_slot) = (layout.node_of(dest), layout.slot_of(dest));
    match from {
        Ingress::Rank(slot) => {
            let me = layout.ranks_of(node).nth(slot as usize)?;
            if head.get(6..12)? != rank_mac(me) {
                return None;
            }
        }
        Ingress::Node(queue) if dest_node != node || dest_slot != queue => return None,
        Ingress::Node(_) => {}
    }
    Some(if dest_node == node { Hop::Rank(dest_slot) } else { Hop::Node { node: dest_node, queue: dest_slot } })
}

/// Run the poller of `o.node` until `stop` is set.
#[cfg(not(feature = "dpdk"))]
pub fn run(_o: &PollerOptions, _stop: &AtomicBool) -> Result<PollerStats, TransportError> {
    Err(cfg_err("this build of adi has no `dpdk` feature".into()))
}

/// Run the poller of `o.node` until `stop` is set: start the interfaces,
/// write the ready file, connect to the lower nodes' pollers, then move
/// frames.
#[cfg(feature = "dpdk")]
pub fn run(o: &PollerOptions, stop: &AtomicBool) -> Result<PollerStats, TransportError> {
    imp::Poller::start(o)?.serve(stop, &poller_up_file(&o.dir, o.node))
}

#[cfg(feature = "dpdk")]
mod imp {
    use std::path::Path;
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    use dpdk_sys::{Mbuf, Port, PortConfig};

    use super::super::with_dpdk::{dpdk_err, start_eal_as, wait_for_file, wait_link, wait_released, START_TIMEOUT};
    use super::*;

    /// Where a port's frames go.
    enum Kind {
        /// The interface of the local rank in this slot.
        Rank(u32),
        /// The link to this node.
        Node(u32),
    }

    pub(super) struct Poller {
        _eal: dpdk_sys::Eal,
        layout: NodeLayout,
        node: u32,
        spin: Duration,
        ports: Vec<Port>,
        kinds: Vec<Kind>,
        /// Port of each local slot, and of each node's link.
        rank_port: Vec<usize>,
        node_port: Vec<Option<usize>>,
        /// Frames waiting to leave, per port and queue.
        out: Vec<Vec<Vec<Mbuf>>>,
        rx: Vec<Mbuf>,
        /// Frames in `out` after the last flush.
        waiting: usize,
        stats: PollerStats,
        /// The job directory (where ranks say they have left).
        dir: PathBuf,
        /// Per port: its rank has left and we no longer touch its rings.
        released: Vec<bool>,
        /// Per port: its link has been up (a rank spawned later has not
        /// connected yet until then).
        ever_up: Vec<bool>,
        /// Per port: needed before the poller says it is up (the links to
        /// other nodes and the starting ranks', not spawned ranks').
        needed: Vec<bool>,
    }

    impl Poller {
        pub(super) fn start(o: &PollerOptions) -> Result<Poller, TransportError> {
            let layout = o.layout;
            let slots = layout.slots;
            let locals: Vec<u32> = layout.ranks_of(o.node).collect();
            let mut vdevs: Vec<String> = locals
                .iter()
                .map(|&r| format!("net_memif_r{r},{}", poller_rank_args(&o.dir, o.node, r, o.frame, true)))
                .collect();
            let higher = (o.node + 1)..layout.nodes();
            vdevs.extend(higher.clone().map(|b| format!("net_memif_n{b},{}", o.node_args(b))));
            // Every ring full at once, plus bursts in hand.
            let rings =
                locals.len() as u32 * (1 << RANK_RING_LOG2) + (layout.nodes() - 1) * slots * (1 << NODE_RING_LOG2);
            let buffers = (rings + 4096).min(1 << 18);
            let (eal, pool) =
                start_eal_as("dn-poller", &format!("dn-{}-p{}", o.job, o.node), buffers, o.frame.max(2048), &vdevs)?;
            let mut p = Poller {
                _eal: eal,
                layout,
                node: o.node,
                spin: o.spin,
                ports: Vec::new(),
                kinds: Vec::new(),
                rank_port: Vec::new(),
                node_port: vec![None; layout.nodes() as usize],
                out: Vec::new(),
                rx: Vec::with_capacity(64),
                waiting: 0,
                dir: o.dir.clone(),
                released: Vec::new(),
                ever_up: Vec::new(),
                needed: Vec::new(),
                stats: PollerStats {
                    to_rank: vec![0; locals.len()],
                    to_node_queue: vec![0; slots as usize],
                    ..PollerStats::default()
                },
            };
            let rank_cfg = PortConfig { rx_queues: 1, tx_queues: 1, descriptors: 1 << RANK_RING_LOG2 };
            let node_cfg = PortConfig { rx_queues: slots as u16, tx_queues: slots as u16, descriptors: 1024 };
            for &r in &locals {
                let name = format!("net_memif_r{r}");
                let port = Port::start(&p._eal, &name, pool, rank_cfg)
                    .map_err(|e| dpdk_err(&format!("cannot start the interface to rank {r}"), e))?;
                p.add(port, Kind::Rank(layout.slot_of(r)), 1);
                p.needed[p.ports.len() - 1] = r < o.started;
            }
            for b in higher {
                let name = format!("net_memif_n{b}");
                let port = Port::start(&p._eal, &name, pool, node_cfg)
                    .map_err(|e| dpdk_err(&format!("cannot start the link to node {b}"), e))?;
                p.add(port, Kind::Node(b), slots);
            }
            let ready = poller_ready_file(&o.dir, o.node);
            crate::job::write_private(&ready, b"ready")
                .map_err(|e| cfg_err(format!("cannot write {}: {e}", ready.display())))?;
            let deadline = Instant::now() + START_TIMEOUT;
            for b in 0..o.node {
                wait_for_file(&poller_ready_file(&o.dir, b), deadline, || {
                    format!("the polling process of node {b} did not start")
                })?;
                let name = format!("net_memif_n{b}");
                p._eal
                    .add_vdev(&name, &o.node_args(b))
                    .map_err(|e| dpdk_err(&format!("cannot create the link to node {b}"), e))?;
                let port = Port::start(&p._eal, &name, pool, node_cfg)
                    .map_err(|e| dpdk_err(&format!("cannot start the link to node {b}"), e))?;
                p.add(port, Kind::Node(b), slots);
            }
            for (i, k) in p.kinds.iter().enumerate() {
                if let Kind::Node(b) = k {
                    wait_link(&p.ports[i], deadline, || format!("the memif link to the poller of node {b}"))?;
                }
            }
            Ok(p)
        }

        fn add(&mut self, port: Port, kind: Kind, queues: u32) {
            let i = self.ports.len();
            match kind {
                Kind::Rank(_) => self.rank_port.push(i),
                Kind::Node(b) => self.node_port[b as usize] = Some(i),
            }
            self.ports.push(port);
            self.kinds.push(kind);
            self.released.push(false);
            self.ever_up.push(false);
            self.needed.push(true);
            self.out.push((0..queues).map(|_| Vec::new()).collect());
        }

        /// One pass: every queue of every port once; returns frames moved.
        fn pass(&mut self) -> usize {
            let mut moved = 0;
            for i in 0..self.ports.len() {
                if self.released[i] {
                    continue;
                }
                let queues = self.out[i].len();
                for q in 0..queues {
                    if self.ports[i].rx_burst(q as u16, &mut self.rx, 64) == 0 {
                        continue;
                    }
                    let from = match self.kinds[i] {
                        Kind::Rank(slot) => Ingress::Rank(slot),
                        Kind::Node(_) => Ingress::Node(q as u32),
                    };
                    let mut rx = std::mem::take(&mut self.rx);
                    for m in rx.drain(..) {
                        let out = match route(self.layout, self.node, from, m.data()) {
                            Some(Hop::Rank(slot)) => self.rank_port.get(slot as usize).map(|&p| (p, 0)),
                            Some(Hop::Node { node, queue }) => {
                                self.node_port.get(node as usize).copied().flatten().map(|p| (p, queue as usize))
                            }
                            None => None,
                        };
                        match out {
                            Some((port, queue)) => self.out[port][queue].push(m),
                            None => self.stats.dropped_stray += 1,
                        }
                        moved += 1;
                    }
                    self.rx = rx;
                }
            }
            if moved > 0 || self.waiting > 0 {
                self.waiting = self.flush();
            }
            moved
        }

        /// Hand waiting frames to their queues. What a queue does not take
        /// waits for the next pass (a memif ring to a rank has room only
        /// once the rank has polled it), up to [`BACKLOG`] frames per
        /// queue; beyond that, or when the destination has disconnected,
        /// frames are dropped and counted (the ranks' protocol resends).
        /// Returns the frames still waiting.
        fn flush(&mut self) -> usize {
            let mut waiting = 0;
            for (i, port) in self.ports.iter_mut().enumerate() {
                for (q, out) in self.out[i].iter_mut().enumerate() {
                    if out.is_empty() {
                        continue;
                    }
                    if self.released[i] {
                        self.stats.dropped_down += out.len() as u64;
                        out.clear();
                        continue;
                    }
                    let sent = port.tx_burst(q as u16, out) as u64;
                    match self.kinds[i] {
                        Kind::Rank(slot) => self.stats.to_rank[slot as usize] += sent,
                        Kind::Node(_) => self.stats.to_node_queue[q] += sent,
                    }
                    if out.len() > BACKLOG {
                        self.stats.dropped_full += (out.len() - BACKLOG) as u64;
                        out.truncate(BACKLOG);
                    }
                    if sent == 0 && !out.is_empty() && !port.link_up() {
                        self.stats.dropped_down += out.len() as u64;
                        out.clear();
                    }
                    waiting += out.len();
                }
            }
            waiting
        }

        /// Let go of the rings of every local rank that has left
        /// ([`left_file`]): stop touching them, then tell the rank
        /// ([`poller_released_file`]), which may then exit. A rank whose
        /// link went down without that is counted and let go too.
        fn release_leavers(&mut self) -> Result<(), TransportError> {
            for i in 0..self.ports.len() {
                let Kind::Rank(slot) = self.kinds[i] else { continue };
                let rank = self.layout.ranks_of(self.node).start + slot;
                if self.released[i] {
                    continue;
                }
                if !left_file(&self.dir, rank).exists() {
                    match self.ports[i].link_up() {
                        true => self.ever_up[i] = true,
                        // A rank that never connected may be spawned yet.
                        false if self.ever_up[i] => {
                            self.released[i] = true;
                            self.stats.gone_unannounced += 1;
                        }
                        false => {}
                    }
                    continue;
                }
                self.released[i] = true;
                let f = poller_released_file(&self.dir, self.node, rank);
                crate::job::write_private(&f, b"released")
                    .map_err(|e| cfg_err(format!("cannot write {}: {e}", f.display())))?;
            }
            Ok(())
        }

        /// Move frames until `stop`: poll, yielding the core after a pass
        /// that moved nothing, and after [`SPIN_ENV`] without traffic
        /// sleep 20 µs between passes (1 ms while no rank of the node is
        /// connected). Every millisecond, let go of the
        /// ranks that have left. On `stop`, leave as the ranks do
        /// ([`Link::leave`]): stop touching the rings shared with the
        /// other nodes' pollers, say so, and return once they have too.
        pub(super) fn serve(mut self, stop: &AtomicBool, up_file: &Path) -> Result<PollerStats, TransportError> {
            let mut last = Instant::now();
            let mut all_up = false;
            let mut next_check = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                if all_up && now >= next_check {
                    self.release_leavers()?;
                    next_check = now + Duration::from_millis(1);
                }
                if !all_up && self.ports.iter().zip(&self.needed).all(|(p, &needed)| !needed || p.link_up()) {
                    all_up = true;
                    // The ranks start sending once every poller says so:
                    // before, a frame for a rank not yet connected would
                    // be lost and wait for a retransmission.
                    crate::job::write_private(up_file, b"up")
                        .map_err(|e| cfg_err(format!("cannot write {}: {e}", up_file.display())))?;
                }
                self.stats.passes += 1;
                if self.pass() > 0 {
                    self.stats.busy_passes += 1;
                    last = Instant::now();
                } else if !self.spin.is_zero() && last.elapsed() > self.spin {
                    // A node none of whose ranks is connected (in a job
                    // with room to spawn, most nodes wait for processes
                    // that may never come) sleeps longer: a few such
                    // pollers waking every 20 µs take a small host's cores.
                    let nobody = self.rank_port.iter().all(|&i| self.released[i] || !self.ports[i].link_up());
                    std::thread::sleep(Duration::from_micros(if nobody { 1000 } else { 20 }));
                } else {
                    // Nothing moved: let a rank that shares our core run
                    // (the ranks yield too while they wait on us).
                    std::thread::yield_now();
                }
            }
            let f = poller_stopped_file(&self.dir, self.node);
            crate::job::write_private(&f, b"stopped")
                .map_err(|e| cfg_err(format!("cannot write {}: {e}", f.display())))?;
            let holders = (self.kinds.iter().enumerate())
                .filter_map(|(i, k)| match k {
                    Kind::Node(b) => Some((i, poller_stopped_file(&self.dir, *b))),
                    Kind::Rank(_) => None,
                })
                .collect();
            wait_released(&self.ports, holders);
            let stats = std::mem::take(&mut self.stats);
            // As the ranks do: ports are left to the process exit
            // (stopping a memif port whose peer is gone can deadlock).
            for p in self.ports.drain(..) {
                std::mem::forget(p);
            }
            Ok(stats)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_placed_in_blocks_and_their_macs_name_them() {
        let l = NodeLayout::new(5, 2);
        assert_eq!((l.slots, l.nodes()), (3, 2));
        assert_eq!((l.node_of(4), l.slot_of(4)), (1, 1));
        assert_eq!(l.ranks_of(1), 3..5);
        // 4 ranks on 3 nodes: blocks of 2, the third node is empty.
        assert_eq!(NodeLayout::new(4, 3).nodes(), 2);
        for r in [0, 1, 255, 256, 70_000] {
            assert_eq!(rank_of_mac(&rank_mac(r), 70_001), Some(r));
        }
        assert_eq!(rank_of_mac(&rank_mac(5), 5), None, "rank 5 is not in a job of 5");
        assert_eq!(rank_of_mac(&[0xff; 6], 5), None);
        let args = poller_rank_args(std::path::Path::new("/j"), 1, 3, 9216, false);
        assert!(args.contains("mac=02:44:4e:00:00:03") && args.contains("socket=/j/memif-n1-r3,socket-abstract=no"));
    }

    /// A rank that lies about who it is, or a frame on the wrong queue,
    /// goes nowhere; the rest go to the destination's slot and queue.
    #[test]
    fn routing_steers_by_destination_and_drops_liars() {
        let l = NodeLayout::new(5, 2); // node 0: ranks 0-2, node 1: ranks 3-4
        let head = |dst: u32, src: u32| [rank_mac(dst), rank_mac(src)].concat();
        assert_eq!(route(l, 0, Ingress::Rank(1), &head(2, 1)), Some(Hop::Rank(2)));
        assert_eq!(route(l, 0, Ingress::Rank(1), &head(4, 1)), Some(Hop::Node { node: 1, queue: 1 }));
        assert_eq!(route(l, 0, Ingress::Rank(1), &head(4, 0)), None, "rank 1 posing as rank 0");
        assert_eq!(route(l, 1, Ingress::Node(0), &head(3, 0)), Some(Hop::Rank(0)));
        assert_eq!(route(l, 1, Ingress::Node(1), &head(3, 0)), None, "rank 3's frame on slot 1's queue");
        assert_eq!(route(l, 1, Ingress::Node(0), &head(0, 1)), None, "not a rank of node 1");
        assert_eq!(route(l, 0, Ingress::Rank(0), &head(5, 0)), None, "no rank 5 in the job");
        assert_eq!(route(l, 0, Ingress::Rank(0), &[0xff; 12]), None);
        assert_eq!(route(l, 0, Ingress::Rank(0), &head(1, 0)[..8]), None, "a runt frame");
    }

    #[test]
    fn a_poller_for_a_node_without_ranks_is_refused() {
        let e = PollerOptions::from_env(1, 2, 4, 3, PathBuf::from("/tmp")).unwrap_err();
        assert!(e.to_string().contains("node 2 has no ranks"), "{e}");
    }
}
