/* Process topologies and neighborhood collectives (MPI 4.1 chapter 8):
 * Dims_create; a Cartesian grid with one periodic dimension (rank/coords,
 * shift, get, sub, map) and a ring whose periodic dimension has 1 or 2
 * processes at small rank counts, where both neighbors are the same
 * process; a graph with parallel edges; distributed graphs, adjacent and
 * not, weighted; the five neighborhood collectives blocking and
 * non-blocking (one completed by an MPI_Test polling loop), with a
 * derived receive type; dup keeps the topology, split does not; the
 * errors. Every expectation is computed from the standard's definitions,
 * not from the library's own answers. "OK c-topo on N ranks" from rank 0
 * when every rank passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The rank at `c` of a row-major grid, or MPI_PROC_NULL off a
 * non-periodic edge. */
static int grid_rank(int nd, const int *dims, const int *per, const int *c)
{
    int r = 0;
    for (int d = 0; d < nd; d++) {
        int x = c[d];
        if (per[d]) x = ((x % dims[d]) + dims[d]) % dims[d];
        else if (x < 0 || x >= dims[d]) return MPI_PROC_NULL;
        r = r * dims[d] + x;
    }
    return r;
}

static void grid_coords(int nd, const int *dims, int r, int *c)
{
    for (int d = nd - 1; d >= 0; d--) c[d] = r % dims[d], r /= dims[d];
}

/* The neighbor `disp` steps along dimension `d` from rank `r`. */
static int step(int nd, const int *dims, const int *per, int r, int d, int disp)
{
    int c[8];
    grid_coords(nd, dims, r, c);
    c[d] += disp;
    return grid_rank(nd, dims, per, c);
}

/* Cartesian neighborhood collectives: allgather and alltoall, checked
 * block by block (§8.6: per dimension, the neighbor below then above;
 * what travels up lands in the receiver's "below" block). */
static void cart_exchange(MPI_Comm cart, int nd, const int *dims, const int *per, const char *what)
{
    int me, n = 2 * nd;
    MPI_Comm_rank(cart, &me);
    int *got = malloc(sizeof(int) * (n + 1)), *out = malloc(sizeof(int) * (n + 1));
    for (int i = 0; i < n; i++) got[i] = -7;
    CHECK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, cart) == MPI_SUCCESS, "%s allgather", what);
    for (int d = 0; d < nd; d++) {
        int lo = step(nd, dims, per, me, d, -1), hi = step(nd, dims, per, me, d, 1);
        int want_lo = lo == MPI_PROC_NULL ? -7 : lo, want_hi = hi == MPI_PROC_NULL ? -7 : hi;
        CHECK(got[2 * d] == want_lo, "%s allgather dim %d below: %d, want %d", what, d, got[2 * d], want_lo);
        CHECK(got[2 * d + 1] == want_hi, "%s allgather dim %d above: %d, want %d", what, d, got[2 * d + 1], want_hi);
    }
    for (int j = 0; j < n; j++) out[j] = me * 100 + j, got[j] = -7;
    CHECK(MPI_Neighbor_alltoall(out, 1, MPI_INT, got, 1, MPI_INT, cart) == MPI_SUCCESS, "%s alltoall", what);
    for (int d = 0; d < nd; d++) {
        int lo = step(nd, dims, per, me, d, -1), hi = step(nd, dims, per, me, d, 1);
        /* The one below sent me its "above" block, the one above its "below" block. */
        int want_lo = lo == MPI_PROC_NULL ? -7 : lo * 100 + 2 * d + 1;
        int want_hi = hi == MPI_PROC_NULL ? -7 : hi * 100 + 2 * d;
        CHECK(got[2 * d] == want_lo, "%s alltoall dim %d below: %d, want %d", what, d, got[2 * d], want_lo);
        CHECK(got[2 * d + 1] == want_hi, "%s alltoall dim %d above: %d, want %d", what, d, got[2 * d + 1], want_hi);
    }
    free(got), free(out);
}

/* The ring graph of `n` nodes: node i's neighbors are i-1 and i+1 (the
 * same node twice when n is 2, itself twice when n is 1). */
static void ring_neighbors(int n, int i, int *nb)
{
    nb[0] = (i + n - 1) % n, nb[1] = (i + 1) % n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Dims_create: balanced, largest first, given entries kept. */
    int dd[3] = {0, 0, 0};
    CHECK(MPI_Dims_create(24, 3, dd) == MPI_SUCCESS && dd[0] == 4 && dd[1] == 3 && dd[2] == 2, "Dims_create 24: %d %d %d", dd[0], dd[1], dd[2]);
    int dg[2] = {0, 3};
    CHECK(MPI_Dims_create(12, 2, dg) == MPI_SUCCESS && dg[0] == 4 && dg[1] == 3, "Dims_create with a given dim");
    int bad[2] = {3, 0};
    CHECK(MPI_Dims_create(7, 2, bad) == MPI_ERR_DIMS, "Dims_create 7 on a dim of 3 accepted");

    int topo = -1;
    CHECK(MPI_Topo_test(MPI_COMM_WORLD, &topo) == MPI_SUCCESS && topo == MPI_UNDEFINED, "world has a topology");

    /* A 2-D grid of every process, periodic in dimension 0 only. */
    int dims[2] = {0, 0}, per[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 1, &cart) == MPI_SUCCESS, "Cart_create");
    CHECK(MPI_Topo_test(cart, &topo) == MPI_SUCCESS && topo == MPI_CART, "Topo_test on a grid: %d", topo);
    int nd = -1, gd[2], gp[2], gc[2], me;
    MPI_Comm_rank(cart, &me);
    CHECK(me == rank, "ranks are not reordered");
    CHECK(MPI_Cartdim_get(cart, &nd) == MPI_SUCCESS && nd == 2, "Cartdim_get %d", nd);
    CHECK(MPI_Cart_get(cart, 2, gd, gp, gc) == MPI_SUCCESS, "Cart_get");
    int want_c[2];
    grid_coords(2, dims, me, want_c);
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0, "Cart_get dims/periods");
    CHECK(gc[0] == want_c[0] && gc[1] == want_c[1], "Cart_get coords (%d,%d)", gc[0], gc[1]);
    for (int r = 0; r < size; r++) {
        int c[2], back = -1;
        CHECK(MPI_Cart_coords(cart, r, 2, c) == MPI_SUCCESS, "Cart_coords %d", r);
        CHECK(MPI_Cart_rank(cart, c, &back) == MPI_SUCCESS && back == r, "Cart_rank(Cart_coords(%d)) = %d", r, back);
    }
    /* Periodic coordinates wrap; non-periodic ones out of range are errors. */
    int wrap[2] = {want_c[0] - dims[0], want_c[1]}, got_r = -1;
    CHECK(MPI_Cart_rank(cart, wrap, &got_r) == MPI_SUCCESS && got_r == me, "Cart_rank wraps a periodic coordinate");
    int off[2] = {0, dims[1]};
    CHECK(MPI_Cart_rank(cart, off, &got_r) == MPI_ERR_ARG, "Cart_rank off a non-periodic edge accepted");
    CHECK(MPI_Cart_coords(cart, size, 2, gc) == MPI_ERR_RANK, "Cart_coords of rank %d accepted", size);
    for (int d = 0; d < 2; d++)
        for (int disp = -2; disp <= 2; disp++) {
            int src = -9, dst = -9;
            CHECK(MPI_Cart_shift(cart, d, disp, &src, &dst) == MPI_SUCCESS, "Cart_shift");
            CHECK(src == step(2, dims, per, me, d, -disp) && dst == step(2, dims, per, me, d, disp),
                  "Cart_shift dim %d by %d: (%d, %d)", d, disp, src, dst);
        }
    int src, dst;
    CHECK(MPI_Cart_shift(cart, 2, 1, &src, &dst) == MPI_ERR_DIMS, "Cart_shift along a missing dimension accepted");
    cart_exchange(cart, 2, dims, per, "grid");

    /* Sub-grids along dimension 1: its rank is the coordinate there. */
    int keep[2] = {0, 1};
    MPI_Comm row;
    CHECK(MPI_Cart_sub(cart, keep, &row) == MPI_SUCCESS, "Cart_sub");
    int rs = -1, rr = -1, rnd = -1;
    MPI_Comm_size(row, &rs), MPI_Comm_rank(row, &rr);
    CHECK(rs == dims[1] && rr == want_c[1], "Cart_sub row: size %d rank %d", rs, rr);
    CHECK(MPI_Cartdim_get(row, &rnd) == MPI_SUCCESS && rnd == 1, "a sub-grid has %d dims", rnd);
    int rowsum = 0;
    MPI_Allreduce(&me, &rowsum, 1, MPI_INT, MPI_SUM, row);
    int want_sum = 0;
    for (int j = 0; j < dims[1]; j++) want_sum += want_c[0] * dims[1] + j;
    CHECK(rowsum == want_sum, "a row's ranks sum to %d, want %d", rowsum, want_sum);
    MPI_Comm_free(&row);

    /* Dup keeps the topology; split does not. */
    MPI_Comm dup, split;
    MPI_Comm_dup(cart, &dup);
    CHECK(MPI_Topo_test(dup, &topo) == MPI_SUCCESS && topo == MPI_CART, "a dup lost the topology");
    cart_exchange(dup, 2, dims, per, "dup of the grid");
    MPI_Comm_split(cart, 0, rank, &split);
    CHECK(MPI_Topo_test(split, &topo) == MPI_SUCCESS && topo == MPI_UNDEFINED, "a split kept the topology");
    MPI_Comm_free(&dup), MPI_Comm_free(&split);

    /* A ring of every process: at 1 and 2 ranks both neighbors are the
     * same process, and the blocks must still land in their own places. */
    int rdims[1] = {size}, rper[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, rdims, rper, 0, &ring);
    cart_exchange(ring, 1, rdims, rper, "ring");
    /* A non-blocking alltoall on it, completed by a polling loop. */
    int rout[2] = {rank * 100, rank * 100 + 1}, rin[2] = {-7, -7}, done = 0, polls = 0;
    MPI_Request req;
    CHECK(MPI_Ineighbor_alltoall(rout, 1, MPI_INT, rin, 1, MPI_INT, ring, &req) == MPI_SUCCESS, "Ineighbor_alltoall");
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        polls++;
    }
    int lo = (rank + size - 1) % size, hi = (rank + 1) % size;
    CHECK(rin[0] == lo * 100 + 1 && rin[1] == hi * 100, "Ineighbor_alltoall on the ring: %d %d after %d polls", rin[0], rin[1], polls);
    /* Zero counts move nothing and leave the receive blocks alone. */
    rin[0] = rin[1] = -7;
    CHECK(MPI_Neighbor_alltoall(rout, 0, MPI_INT, rin, 0, MPI_INT, ring) == MPI_SUCCESS && rin[0] == -7 && rin[1] == -7,
          "a zero-count neighbor alltoall: %d %d", rin[0], rin[1]);
    MPI_Comm_free(&ring);

    /* A grid smaller than the communicator: the rest get MPI_COMM_NULL,
     * as Cart_map says. */
    if (size > 1) {
        int sd[1] = {size - 1}, sp[1] = {0}, mapped = -5;
        MPI_Comm small;
        CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, sd, sp, 0, &small) == MPI_SUCCESS, "a smaller grid");
        CHECK((rank < size - 1) == (small != MPI_COMM_NULL), "rank %d on a grid of %d: %s", rank, size - 1, small == MPI_COMM_NULL ? "null" : "member");
        CHECK(MPI_Cart_map(MPI_COMM_WORLD, 1, sd, sp, &mapped) == MPI_SUCCESS && mapped == (rank < size - 1 ? rank : MPI_UNDEFINED), "Cart_map %d", mapped);
        if (small != MPI_COMM_NULL) MPI_Comm_free(&small);
    }
    int big[1] = {size + 1}, bp[1] = {0};
    MPI_Comm none = MPI_COMM_NULL;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, big, bp, 0, &none) != MPI_SUCCESS, "a grid larger than the communicator accepted");

    /* A graph: the ring again, with parallel edges at 2 ranks and self
     * loops at 1. Block i arrives from neighbor i; several edges between
     * two processes match in order (§8.6). */
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size);
    for (int i = 0; i < size; i++) index[i] = 2 * (i + 1), ring_neighbors(size, i, edges + 2 * i);
    MPI_Comm graph;
    CHECK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph) == MPI_SUCCESS, "Graph_create");
    CHECK(MPI_Topo_test(graph, &topo) == MPI_SUCCESS && topo == MPI_GRAPH, "Topo_test on a graph");
    int nn = -1, ne = -1, cnt = -1, nb[2] = {-1, -1};
    CHECK(MPI_Graphdims_get(graph, &nn, &ne) == MPI_SUCCESS && nn == size && ne == 2 * size, "Graphdims_get");
    int *gi = malloc(sizeof(int) * size), *ge = malloc(sizeof(int) * 2 * size);
    CHECK(MPI_Graph_get(graph, size, 2 * size, gi, ge) == MPI_SUCCESS, "Graph_get");
    CHECK(memcmp(gi, index, sizeof(int) * size) == 0 && memcmp(ge, edges, sizeof(int) * 2 * size) == 0, "Graph_get differs");
    CHECK(MPI_Graph_neighbors_count(graph, rank, &cnt) == MPI_SUCCESS && cnt == 2, "Graph_neighbors_count %d", cnt);
    CHECK(MPI_Graph_neighbors(graph, rank, 2, nb) == MPI_SUCCESS && nb[0] == lo && nb[1] == hi, "Graph_neighbors");
    CHECK(MPI_Graph_neighbors_count(graph, size, &cnt) == MPI_ERR_RANK, "Graph_neighbors_count of rank %d accepted", size);
    int gout[2] = {rank * 100, rank * 100 + 1}, gin[2] = {-7, -7};
    CHECK(MPI_Neighbor_alltoall(gout, 1, MPI_INT, gin, 1, MPI_INT, graph) == MPI_SUCCESS, "graph alltoall");
    for (int i = 0; i < 2; i++) {
        int p = nb[i], k = 0, pn[2], j = -1;
        for (int q = 0; q < i; q++) k += nb[q] == p;
        ring_neighbors(size, p, pn);
        for (int q = 0, seen = 0; q < 2; q++)
            if (pn[q] == rank && seen++ == k) j = q;
        CHECK(gin[i] == p * 100 + j, "graph alltoall block %d: %d, want %d", i, gin[i], p * 100 + j);
    }
    int bad_index[2] = {2, 1}, bad_edges[2] = {0, 0};
    MPI_Comm bg = MPI_COMM_NULL;
    if (size >= 2) CHECK(MPI_Graph_create(MPI_COMM_WORLD, 2, bad_index, bad_edges, 0, &bg) == MPI_ERR_ARG, "a decreasing index accepted");
    MPI_Comm_free(&graph);
    free(index), free(edges), free(gi), free(ge);

    /* A weighted distributed graph: from r-1 and r+2, to r+1 and r-2. */
    int srcs[2] = {(rank + size - 1) % size, (rank + 2) % size}, sw[2] = {rank, rank + 1};
    int dsts[2] = {(rank + 1) % size, (rank + size * 2 - 2) % size}, dw[2] = {10 + rank, 20 + rank};
    MPI_Comm dg2;
    CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, dsts, dw, MPI_INFO_NULL, 0, &dg2) == MPI_SUCCESS, "Dist_graph_create_adjacent");
    CHECK(MPI_Topo_test(dg2, &topo) == MPI_SUCCESS && topo == MPI_DIST_GRAPH, "Topo_test on a dist graph");
    int indeg = -1, outdeg = -1, weighted = -1;
    CHECK(MPI_Dist_graph_neighbors_count(dg2, &indeg, &outdeg, &weighted) == MPI_SUCCESS && indeg == 2 && outdeg == 2 && weighted == 1, "Dist_graph_neighbors_count");
    int s2[2], sw2[2], d2[2], dw2[2];
    CHECK(MPI_Dist_graph_neighbors(dg2, 2, s2, sw2, 2, d2, dw2) == MPI_SUCCESS, "Dist_graph_neighbors");
    CHECK(!memcmp(s2, srcs, sizeof s2) && !memcmp(sw2, sw, sizeof sw2) && !memcmp(d2, dsts, sizeof d2) && !memcmp(dw2, dw, sizeof dw2), "Dist_graph_neighbors differ");
    /* Alltoallv: destination j gets j+1 ints of rank*100+j; the source at
     * r-1 sends me its block 0, the one at r+2 its block 1. */
    int vout[3] = {rank * 100, rank * 100 + 1, rank * 100 + 1}, scounts[2] = {1, 2}, sdis[2] = {0, 1};
    int vin[5] = {-7, -7, -7, -7, -7}, rcounts[2] = {1, 2}, rdis[2] = {0, 3};
    CHECK(MPI_Neighbor_alltoallv(vout, scounts, sdis, MPI_INT, vin, rcounts, rdis, MPI_INT, dg2) == MPI_SUCCESS, "dist graph alltoallv");
    CHECK(vin[0] == srcs[0] * 100 && vin[1] == -7 && vin[2] == -7 && vin[3] == srcs[1] * 100 + 1 && vin[4] == srcs[1] * 100 + 1,
          "dist graph alltoallv: %d %d %d %d %d", vin[0], vin[1], vin[2], vin[3], vin[4]);
    /* Allgatherv into a derived receive type: two ints 2 apart per block. */
    MPI_Datatype spaced;
    MPI_Type_vector(2, 1, 2, MPI_INT, &spaced);
    MPI_Type_commit(&spaced);
    int pair[2] = {rank, -rank}, wide[8], rc1[2] = {1, 1}, rd1[2] = {0, 1};
    for (int i = 0; i < 8; i++) wide[i] = -7;
    /* The type's extent is 3 ints: block 1 starts at int 3. */
    CHECK(MPI_Neighbor_allgatherv(pair, 2, MPI_INT, wide, rc1, rd1, spaced, dg2) == MPI_SUCCESS, "allgatherv into a vector type");
    CHECK(wide[0] == srcs[0] && wide[1] == -7 && wide[2] == -srcs[0] && wide[3] == srcs[1] && wide[4] == -7 && wide[5] == -srcs[1] && wide[6] == -7,
          "allgatherv into a vector type: %d %d %d %d %d %d %d", wide[0], wide[1], wide[2], wide[3], wide[4], wide[5], wide[6]);
    /* Ineighbor_alltoallw: a double to each destination, byte displacements. */
    double wout[2] = {rank + 0.5, rank + 0.25}, win[2] = {-1, -1};
    int wc[2] = {1, 1};
    MPI_Aint wsd[2] = {0, sizeof(double)}, wrd[2] = {sizeof(double), 0};
    MPI_Datatype wt[2] = {MPI_DOUBLE, MPI_DOUBLE};
    CHECK(MPI_Ineighbor_alltoallw(wout, wc, wsd, wt, win, wc, wrd, wt, dg2, &req) == MPI_SUCCESS, "Ineighbor_alltoallw");
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(win[1] == srcs[0] + 0.5 && win[0] == srcs[1] + 0.25, "alltoallw: %g %g", win[0], win[1]);
    MPI_Type_free(&spaced);
    MPI_Comm_free(&dg2);

    /* Dist_graph_create: rank 0 names every edge i -> i+1 with weight i;
     * the others name none. Unweighted neighbors_count says weighted. */
    int *es = NULL, *ed = NULL, *ew = NULL, *deg = NULL, n0 = rank == 0 ? size : 0;
    if (rank == 0) {
        es = malloc(sizeof(int) * size), ed = malloc(sizeof(int) * size), ew = malloc(sizeof(int) * size), deg = malloc(sizeof(int) * size);
        for (int i = 0; i < size; i++) es[i] = i, deg[i] = 1, ed[i] = (i + 1) % size, ew[i] = i;
    }
    MPI_Comm dg3;
    CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, n0, es, deg, ed, rank == 0 ? ew : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg3) == MPI_SUCCESS, "Dist_graph_create");
    CHECK(MPI_Dist_graph_neighbors_count(dg3, &indeg, &outdeg, &weighted) == MPI_SUCCESS && indeg == 1 && outdeg == 1 && weighted == 1, "Dist_graph_create degrees %d %d %d", indeg, outdeg, weighted);
    int s3 = -1, w3 = -1, d3 = -1, dw3 = -1;
    MPI_Dist_graph_neighbors(dg3, 1, &s3, &w3, 1, &d3, &dw3);
    CHECK(s3 == lo && w3 == lo && d3 == hi && dw3 == rank, "Dist_graph_create edges: from %d (%d) to %d (%d)", s3, w3, d3, dw3);
    int token = rank, from = -1;
    MPI_Neighbor_allgather(&token, 1, MPI_INT, &from, 1, MPI_INT, dg3);
    CHECK(from == lo, "dist graph allgather: %d, want %d", from, lo);
    MPI_Comm_free(&dg3);
    free(es), free(ed), free(ew), free(deg);

    /* One process's bad edges (a rank past the end; then a null array)
     * are an error on every process, not a wait for the one that gave up. */
    int bsrc = 0, bdeg = 1, bdst = size;
    MPI_Comm bad_dg = MPI_COMM_NULL;
    int rcb1 = MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0, &bsrc, &bdeg, &bdst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad_dg);
    CHECK(rcb1 != MPI_SUCCESS && bad_dg == MPI_COMM_NULL, "a bad edge on rank 0: rank %d got %d", rank, rcb1);
    if (rank == 0) CHECK(rcb1 == MPI_ERR_RANK, "a bad edge's rank: %d", rcb1);
    int rcb2 = MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0, rank == 0 ? NULL : &bsrc, &bdeg, &bdst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad_dg);
    CHECK(rcb2 != MPI_SUCCESS && bad_dg == MPI_COMM_NULL, "a null sources array on rank 0: rank %d got %d", rank, rcb2);

    /* An unweighted adjacent graph with no edges at all. */
    MPI_Comm empty;
    CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &empty) == MPI_SUCCESS, "an empty dist graph");
    CHECK(MPI_Dist_graph_neighbors_count(empty, &indeg, &outdeg, &weighted) == MPI_SUCCESS && indeg == 0 && outdeg == 0 && weighted == 0, "empty dist graph counts");
    CHECK(MPI_Neighbor_allgather(&token, 1, MPI_INT, NULL, 1, MPI_INT, empty) == MPI_SUCCESS, "allgather with no neighbors");
    MPI_Comm_free(&empty);

    /* Errors: no topology, the wrong kind, MPI_IN_PLACE. */
    CHECK(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst) == MPI_ERR_TOPOLOGY, "Cart_shift on world accepted");
    CHECK(MPI_Neighbor_allgather(&token, 1, MPI_INT, &from, 1, MPI_INT, MPI_COMM_WORLD) == MPI_ERR_TOPOLOGY, "a neighborhood collective on world accepted");
    CHECK(MPI_Graphdims_get(cart, &nn, &ne) == MPI_ERR_TOPOLOGY, "Graphdims_get on a grid accepted");
    int inplace[4];
    CHECK(MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, inplace, 1, MPI_INT, cart) == MPI_ERR_BUFFER, "MPI_IN_PLACE accepted");
    MPI_Comm_free(&cart);

    int bad_total = 0;
    MPI_Allreduce(&errors, &bad_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && bad_total == 0) printf("OK c-topo on %d ranks\n", size);
    MPI_Finalize();
    return bad_total == 0 ? 0 : 1;
}
