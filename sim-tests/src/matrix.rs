//! The one test matrix of the `mpi-suite` programs: each case once, with
//! the backends it runs on. `mpi_sim.rs`, `mpi_udp.rs` and `mpi_dpdk.rs`
//! each expand it for their backend ([`crate::suite_matrix`]), so a case
//! is added (or a rank count changed) in one place for every backend.
//!
//! A case is `name: "program", ranks, nodes, [backends];`. The node count
//! is the simulator's (UDP and DPDK run every rank on this host).

/// Expand `$m!` over every case of the matrix.
#[macro_export]
macro_rules! suite_matrix {
    ($m:ident) => {
        $m! {
            pingpong_2r_1n: "pingpong", 2, 1, [sim udp dpdk];
            pingpong_2r_2n: "pingpong", 2, 2, [sim];
            pingpong_8r_4n: "pingpong", 8, 4, [sim udp];
            ring_4r_2n: "ring", 4, 2, [sim udp dpdk];
            ring_8r_1n: "ring", 8, 1, [sim];
            allpairs_2r_2n: "allpairs", 2, 2, [sim];
            allpairs_4r_1n: "allpairs", 4, 1, [sim udp dpdk];
            allpairs_8r_4n: "allpairs", 8, 4, [sim udp dpdk];
            wildcard_4r_2n: "wildcard", 4, 2, [sim udp dpdk];
            wildcard_8r_2n: "wildcard", 8, 2, [sim];
            unexpected_2r_2n: "unexpected", 2, 2, [sim udp dpdk];
            unexpected_4r_1n: "unexpected", 4, 1, [sim];
            many_requests_2r_1n: "many-requests", 2, 1, [sim];
            many_requests_4r_2n: "many-requests", 4, 2, [udp dpdk];
            many_requests_8r_4n: "many-requests", 8, 4, [sim];
            ordering_2r_2n: "ordering", 2, 2, [sim udp dpdk];
            rndv_large_2r_2n: "rndv-large", 2, 2, [sim udp dpdk];
            rndv_large_4r_1n: "rndv-large", 4, 1, [sim];
            mixed_4r_2n: "mixed", 4, 2, [sim udp dpdk];
            mixed_8r_4n: "mixed", 8, 4, [sim];
            lent_1r_1n: "lent", 1, 1, [sim];
            lent_3r_2n: "lent", 3, 2, [sim udp dpdk];
            probe_2r_1n: "probe", 2, 1, [sim udp dpdk];
            sync_2r_2n: "sync", 2, 2, [sim udp dpdk];
            comms_4r_2n: "comms", 4, 2, [sim udp dpdk];
            comms_8r_4n: "comms", 8, 4, [sim];
            topo_1r_1n: "topo", 1, 1, [sim];
            topo_2r_2n: "topo", 2, 2, [sim];
            topo_6r_3n: "topo", 6, 3, [sim];
            views_1r_1n: "views", 1, 1, [sim];
            views_3r_2n: "views", 3, 2, [sim udp dpdk];
            poll_iprobe_2r_2n: "poll-iprobe", 2, 2, [udp dpdk];
            poll_test_2r_2n: "poll-test", 2, 2, [udp dpdk];
            poll_testall_5r_3n: "poll-testall", 5, 3, [udp dpdk];
            poll_compute_2r_1n: "poll-compute", 2, 1, [udp];
            poll_wtime_2r_2n: "poll-wtime", 2, 2, [udp];
            collectives_1r_1n: "collectives", 1, 1, [udp dpdk];
            collectives_4r_2n: "collectives", 4, 2, [udp];
            collectives_5r_3n: "collectives", 5, 3, [dpdk];
            collectives_7r_4n: "collectives", 7, 4, [udp dpdk];
            nbc_3r_2n: "nbc", 3, 2, [udp dpdk];
            nbc_6r_3n: "nbc", 6, 3, [udp];
            persistent_1r_1n: "persistent", 1, 1, [sim];
            persistent_2r_2n: "persistent", 2, 2, [sim udp];
            persistent_5r_3n: "persistent", 5, 3, [sim udp];
            persistent_8r_4n: "persistent", 8, 4, [sim];
            partitioned_1r_1n: "partitioned", 1, 1, [sim udp];
            partitioned_3r_2n: "partitioned", 3, 2, [sim udp dpdk];
            partitioned_8r_4n: "partitioned", 8, 4, [sim];
            attrs_1r_1n: "attrs", 1, 1, [sim];
            attrs_5r_3n: "attrs", 5, 3, [sim udp];
            greq_1r_1n: "greq", 1, 1, [sim];
            greq_3r_2n: "greq", 3, 2, [sim udp];
            proc_null_1r_1n: "proc-null", 1, 1, [sim];
            proc_null_5r_3n: "proc-null", 5, 3, [sim udp];
            groups_1r_1n: "groups", 1, 1, [sim];
            groups_2r_2n: "groups", 2, 2, [sim];
            groups_5r_3n: "groups", 5, 3, [sim udp];
            rma_1r_1n: "rma", 1, 1, [sim udp];
            rma_2r_2n: "rma", 2, 2, [sim udp dpdk];
            rma_3r_2n: "rma", 3, 2, [sim udp dpdk];
            rma_5r_3n: "rma", 5, 3, [sim udp];
            rma_8r_4n: "rma", 8, 4, [sim udp dpdk];
            rma_passive_2r_2n: "rma-passive", 2, 2, [sim udp];
            rma_passive_3r_3n: "rma-passive", 3, 3, [sim];
        }
    };
}

/// `$item`s when `sim` is among the backends in brackets.
#[macro_export]
macro_rules! on_sim {
    ([sim $($rest:ident)*] $($item:item)*) => { $($item)* };
    ([$first:ident $($rest:ident)*] $($item:item)*) => { $crate::on_sim!([$($rest)*] $($item)*); };
    ([] $($item:item)*) => {};
}

/// `$item`s when `udp` is among the backends in brackets.
#[macro_export]
macro_rules! on_udp {
    ([udp $($rest:ident)*] $($item:item)*) => { $($item)* };
    ([$first:ident $($rest:ident)*] $($item:item)*) => { $crate::on_udp!([$($rest)*] $($item)*); };
    ([] $($item:item)*) => {};
}

/// `$item`s when `dpdk` is among the backends in brackets.
#[macro_export]
macro_rules! on_dpdk {
    ([dpdk $($rest:ident)*] $($item:item)*) => { $($item)* };
    ([$first:ident $($rest:ident)*] $($item:item)*) => { $crate::on_dpdk!([$($rest)*] $($item)*); };
    ([] $($item:item)*) => {};
}
