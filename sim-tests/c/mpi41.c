/* What MPI 4.1 and the 5.0 ABI add beyond the classic calls: persistent
 * collectives started many times, the large-count (_c) forms of
 * point-to-point, collectives and packing (and MPI_ERR_COUNT past what the
 * library moves), handles as ints, the tool interface with no variables,
 * the MPI-1 attribute names, MPI_Comm_get_parent/disconnect, user error
 * handlers and error classes, attributes on datatypes, MPI_Comm_idup,
 * generalized requests, the ABI queries, and the functions the library
 * does not provide failing by name. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static void persistent_collectives(void) {
    int root = size - 1;
    /* Bcast_init from the last rank, started three times with new data:
     * each start uses the buffer's contents at that start. */
    int v[4];
    MPI_Request bc;
    CHECK(MPI_Bcast_init(v, 4, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &bc) == MPI_SUCCESS, "Bcast_init");
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 4; i++) v[i] = rank == root ? 100 * round + i : -1;
        CHECK(MPI_Start(&bc) == MPI_SUCCESS, "Start bcast round %d", round);
        /* A second start while active is an error, and leaves it running. */
        CHECK(MPI_Start(&bc) == MPI_ERR_REQUEST, "a start of an active persistent collective accepted");
        MPI_Status st;
        CHECK(MPI_Wait(&bc, &st) == MPI_SUCCESS && bc != MPI_REQUEST_NULL, "Wait keeps the persistent request");
        for (int i = 0; i < 4; i++) CHECK(v[i] == 100 * round + i, "bcast round %d v[%d] = %d", round, i, v[i]);
    }
    CHECK(MPI_Request_free(&bc) == MPI_SUCCESS && bc == MPI_REQUEST_NULL, "free an inactive persistent collective");

    /* Allreduce_init, Reduce_init to rank 1 % size, Barrier_init and a
     * persistent point-to-point pair, all started together by Startall. */
    int x = 0, sum = 0, red = 0, token = 0, got = -1;
    MPI_Request rs[5];
    CHECK(MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]) == MPI_SUCCESS, "Allreduce_init");
    CHECK(MPI_Reduce_init(&x, &red, 1, MPI_INT, MPI_MAX, 1 % size, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]) == MPI_SUCCESS, "Reduce_init");
    CHECK(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rs[2]) == MPI_SUCCESS, "Barrier_init");
    CHECK(MPI_Send_init_c(&token, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &rs[3]) == MPI_SUCCESS, "Send_init_c");
    CHECK(MPI_Recv_init_c(&got, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &rs[4]) == MPI_SUCCESS, "Recv_init_c");
    for (int round = 1; round <= 4; round++) {
        x = rank * round;
        token = 1000 * round + rank;
        CHECK(MPI_Startall(5, rs) == MPI_SUCCESS, "Startall round %d", round);
        CHECK(MPI_Waitall(5, rs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall round %d", round);
        CHECK(sum == round * size * (size - 1) / 2, "allreduce round %d: %d", round, sum);
        if (rank == 1 % size) CHECK(red == (size - 1) * round, "reduce round %d: %d", round, red);
        CHECK(got == 1000 * round + (rank + size - 1) % size, "persistent ring round %d: %d", round, got);
    }
    /* A polling loop instead of a wait: MPI_Test until the persistent
     * allreduce completes, then start it again. */
    for (int round = 5; round <= 6; round++) {
        x = rank * round;
        MPI_Start(&rs[0]);
        int done = 0, polls = 0;
        while (!done) {
            CHECK(MPI_Test(&rs[0], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "Test of a persistent collective");
            polls++;
        }
        CHECK(rs[0] != MPI_REQUEST_NULL && sum == round * size * (size - 1) / 2, "polled allreduce round %d: %d after %d polls", round, sum, polls);
    }
    for (int i = 0; i < 5; i++) MPI_Request_free(&rs[i]);

    /* Persistent collectives match in the order of their initializations,
     * not of their starts (§6.13): odd ranks start the broadcast, then the
     * allreduce, then an ordinary Iallreduce; even ranks the other way
     * round. Twice, so the second starts meet the first's places. */
    int b[2], s1 = 0, s2 = 0, unit = 1;
    MPI_Request pr[3];
    CHECK(MPI_Bcast_init(b, 2, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[0]) == MPI_SUCCESS, "Bcast_init (order)");
    CHECK(MPI_Allreduce_init(&unit, &s1, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[1]) == MPI_SUCCESS, "Allreduce_init (order)");
    for (int round = 0; round < 2; round++) {
        b[0] = rank == root ? 7 + round : -1;
        b[1] = rank == root ? 70 + round : -1;
        s1 = s2 = -1;
        if (rank % 2) {
            MPI_Start(&pr[0]);
            MPI_Start(&pr[1]);
            MPI_Iallreduce(&rank, &s2, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &pr[2]);
        } else {
            MPI_Iallreduce(&rank, &s2, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &pr[2]);
            MPI_Start(&pr[1]);
            MPI_Start(&pr[0]);
        }
        CHECK(MPI_Waitall(3, pr, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall of persistent collectives started out of order, round %d", round);
        CHECK(b[0] == 7 + round && b[1] == 70 + round, "out-of-order bcast round %d: %d %d", round, b[0], b[1]);
        CHECK(s1 == size && s2 == size - 1, "out-of-order allreduces round %d: %d %d", round, s1, s2);
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);

    /* A persistent v-collective in its large-count form: rank i gives i+1
     * values; every rank gathers them all. */
    MPI_Count *counts = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * size);
    MPI_Count total = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1;
        displs[i] = total;
        total += i + 1;
    }
    int mine[64], all[64 * 65 / 2];
    MPI_Request ag;
    CHECK(MPI_Allgatherv_init_c(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &ag) == MPI_SUCCESS, "Allgatherv_init_c");
    /* The arrays of counts and displacements are the caller's to reuse
     * once the initialization returns (mpi4py frees them): overwrite
     * them, then free them. */
    for (int i = 0; i < size; i++) counts[i] = -1, displs[i] = -1;
    free(counts);
    free(displs);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i <= rank; i++) mine[i] = 10 * rank + i + round;
        MPI_Start(&ag);
        MPI_Wait(&ag, MPI_STATUS_IGNORE);
        for (int r = 0, at = 0; r < size; at += r + 1, r++)
            for (int i = 0; i <= r; i++)
                CHECK(all[at + i] == 10 * r + i + round, "allgatherv_init_c round %d [%d][%d]", round, r, i);
    }
    MPI_Request_free(&ag);

    /* Gatherv_init to the last rank: only the root passes arrays (the
     * others pass NULL, which is never read). */
    int *rc = NULL, *rd = NULL, one = 7 + rank, gathered[64];
    if (rank == root) {
        rc = malloc(sizeof(int) * size);
        rd = malloc(sizeof(int) * size);
        for (int i = 0; i < size; i++) rc[i] = 1, rd[i] = size - 1 - i;
    }
    MPI_Request gv;
    CHECK(MPI_Gatherv_init(&one, 1, MPI_INT, gathered, rc, rd, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &gv) == MPI_SUCCESS, "Gatherv_init");
    free(rc);
    free(rd);
    MPI_Start(&gv);
    MPI_Wait(&gv, MPI_STATUS_IGNORE);
    if (rank == root)
        for (int i = 0; i < size; i++) CHECK(gathered[size - 1 - i] == 7 + i, "gatherv_init from %d: %d", i, gathered[size - 1 - i]);
    MPI_Request_free(&gv);
}

static void large_counts(void) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double out[3] = {rank, rank + 0.5, -rank}, in[3] = {0};
    MPI_Status st;
    CHECK(MPI_Sendrecv_c(out, 3, MPI_DOUBLE, next, 1, in, 3, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "Sendrecv_c");
    MPI_Count n = -1;
    CHECK(MPI_Get_count_c(&st, MPI_DOUBLE, &n) == MPI_SUCCESS && n == 3, "Get_count_c %lld", (long long)n);
    CHECK(in[0] == prev && in[1] == prev + 0.5, "Sendrecv_c data %g %g", in[0], in[1]);
    MPI_Request r[2];
    CHECK(MPI_Irecv_c(in, 3, MPI_DOUBLE, prev, 2, MPI_COMM_WORLD, &r[0]) == MPI_SUCCESS, "Irecv_c");
    CHECK(MPI_Isend_c(out, 3, MPI_DOUBLE, next, 2, MPI_COMM_WORLD, &r[1]) == MPI_SUCCESS, "Isend_c");
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(in[2] == -prev, "Isend_c/Irecv_c data");

    /* Past what the library moves in one call: MPI_ERR_COUNT, nothing sent
     * (the buffer is never read: it is far too small). */
    char small[1];
    CHECK(MPI_Send_c(small, (MPI_Count)1 << 32, MPI_BYTE, next, 3, MPI_COMM_WORLD) == MPI_ERR_COUNT, "a 4 GiB Send_c accepted");
    CHECK(MPI_Bcast_c(small, (MPI_Count)1 << 40, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT, "a 1 TiB Bcast_c accepted");

    long long b = rank == 0 ? 42 : 0, s = 0;
    CHECK(MPI_Bcast_c(&b, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD) == MPI_SUCCESS && b == 42, "Bcast_c");
    CHECK(MPI_Allreduce_c(&b, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && s == 42LL * size, "Allreduce_c");

    /* Alltoallv_c: rank i sends j+1 ints to rank j. */
    MPI_Count *sc = malloc(sizeof(MPI_Count) * size), *rc = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *sd = malloc(sizeof(MPI_Aint) * size), *rd = malloc(sizeof(MPI_Aint) * size);
    int *sb = malloc(sizeof(int) * size * size), *rb = malloc(sizeof(int) * size * size);
    MPI_Aint at = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = j + 1;
        sd[j] = at;
        for (int k = 0; k <= j; k++) sb[at + k] = 100 * rank + j;
        at += j + 1;
        rc[j] = rank + 1;
        rd[j] = (MPI_Aint)j * (rank + 1);
    }
    CHECK(MPI_Alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS, "Alltoallv_c");
    for (int j = 0; j < size; j++)
        for (int k = 0; k <= rank; k++) CHECK(rb[rd[j] + k] == 100 * j + rank, "Alltoallv_c from %d", j);
    /* Reduce_scatter_c: block j has j+1 elements. */
    for (int j = 0; j < size; j++) rc[j] = j + 1;
    for (int i = 0; i < at; i++) sb[i] = 1;
    CHECK(MPI_Reduce_scatter_c(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "Reduce_scatter_c");
    for (int k = 0; k <= rank; k++) CHECK(rb[k] == size, "Reduce_scatter_c [%d] = %d", k, rb[k]);
    free(sc), free(rc), free(sd), free(rd), free(sb), free(rb);

    /* Packing in MPI_Count positions. */
    char packed[64];
    MPI_Count pos = 0, psize = 0;
    int three[3] = {7, 8, 9}, back[3] = {0};
    CHECK(MPI_Pack_size_c(3, MPI_INT, MPI_COMM_WORLD, &psize) == MPI_SUCCESS && psize == 12, "Pack_size_c %lld", (long long)psize);
    CHECK(MPI_Pack_c(three, 3, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 12, "Pack_c");
    pos = 0;
    CHECK(MPI_Unpack_c(packed, 12, &pos, back, 3, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 12 && back[2] == 9, "Unpack_c");
    MPI_Count tsize = 0, lb = -1, ext = 0;
    CHECK(MPI_Type_size_x(MPI_DOUBLE, &tsize) == MPI_SUCCESS && tsize == 8, "Type_size_x");
    CHECK(MPI_Type_get_extent_x(MPI_INT, &lb, &ext) == MPI_SUCCESS && lb == 0 && ext == 4, "Type_get_extent_x");
}

static void pair_and_complex_reductions(void) {
    /* MAXLOC/MINLOC on the padded pair types, the value of the last rank
     * largest, ties going to the smaller index. */
    struct { double v; int i; } d = {rank % 2 ? 1.5 : 2.5, rank}, dmax;
    struct { long v; int i; } l = {-rank, rank}, lmin;
    struct { short v; int i; } s = {(short)(rank / 2), rank}, smax;
    CHECK(MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD) == MPI_SUCCESS, "DOUBLE_INT");
    CHECK(dmax.v == 2.5 && dmax.i == 0, "DOUBLE_INT MAXLOC: %g at %d", dmax.v, dmax.i);
    CHECK(MPI_Allreduce(&l, &lmin, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD) == MPI_SUCCESS, "LONG_INT");
    CHECK(lmin.v == -(size - 1) && lmin.i == size - 1, "LONG_INT MINLOC: %ld at %d", lmin.v, lmin.i);
    CHECK(MPI_Reduce(&s, &smax, 1, MPI_SHORT_INT, MPI_MAXLOC, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS, "SHORT_INT");
    if (rank == size - 1) CHECK(smax.v == (size - 1) / 2 && smax.i == ((size - 1) / 2) * 2, "SHORT_INT MAXLOC: %d at %d", smax.v, smax.i);
    /* Complex sum and product: each rank gives (1 + i). */
    double z[2] = {1.0, 1.0}, zs[2], zp[2];
    CHECK(MPI_Allreduce(z, zs, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "complex sum");
    CHECK(zs[0] == size && zs[1] == size, "complex sum %g%+gi", zs[0], zs[1]);
    CHECK(MPI_Allreduce(z, zp, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD) == MPI_SUCCESS, "complex product");
    /* (1+i)^n = 2^(n/2) (cos(n pi/4) + i sin(n pi/4)): 1+i, 2i, -2+2i, -4, -4-4i. */
    static const double want[6][2] = {{0, 0}, {1, 1}, {0, 2}, {-2, 2}, {-4, 0}, {-4, -4}};
    if (size <= 5) CHECK(zp[0] == want[size][0] && zp[1] == want[size][1], "complex product %g%+gi", zp[0], zp[1]);
    CHECK(MPI_Allreduce(z, zp, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS, "MAX on complex numbers accepted");
}

/* A user operation that adds ints, on elements laid out as the datatype
 * it is given says (a vector of 2 blocks of one int, stride 2, resized to
 * 4 ints), which it may query. */
static int user_extent_ok = 1;
static void add_strided(void *in, void *inout, int *len, MPI_Datatype *dt) {
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*dt, &lb, &extent);
    if (extent != 4 * sizeof(int)) user_extent_ok = 0;
    int *a = in, *b = inout;
    for (int e = 0; e < *len; e++) {
        int *x = a + 4 * e, *y = b + 4 * e; /* resized to 4 ints */
        y[0] += x[0];
        y[2] += x[2];
    }
}

static void derived_and_long_double_reductions(void) {
    /* A predefined operation on a contiguous type of one predefined type. */
    MPI_Datatype three, vec, vec4;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    int t[6] = {rank, 1, -rank, 2 * rank, 2, 0}, ts[6];
    CHECK(MPI_Allreduce(t, ts, 2, three, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "SUM on a contiguous type");
    int tri = size * (size - 1) / 2;
    CHECK(ts[0] == tri && ts[1] == size && ts[2] == -tri && ts[3] == 2 * tri && ts[4] == 2 * size && ts[5] == 0,
          "SUM on a contiguous type: %d %d %d %d %d %d", ts[0], ts[1], ts[2], ts[3], ts[4], ts[5]);
    /* MAX on a vector with gaps, at a root other than 0: the gaps of the
     * result stay as they were. */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 4 * sizeof(int), &vec4);
    MPI_Type_commit(&vec4);
    int v[8] = {rank, -1, -rank, -1, 10 + rank, -1, 7, -1}, vm[8];
    for (int i = 0; i < 8; i++) vm[i] = -1;
    int root = size - 1;
    CHECK(MPI_Reduce(v, vm, 2, vec4, MPI_MAX, root, MPI_COMM_WORLD) == MPI_SUCCESS, "MAX on a vector");
    if (rank == root)
        CHECK(vm[0] == size - 1 && vm[1] == -1 && vm[2] == 0 && vm[3] == -1 && vm[4] == 10 + size - 1 && vm[6] == 7 && vm[7] == -1,
              "MAX on a vector: %d %d %d %d %d %d %d %d", vm[0], vm[1], vm[2], vm[3], vm[4], vm[5], vm[6], vm[7]);
    /* A user operation on the same vector, in place, non-blocking: it
     * gets the elements laid out as the type says, and may query it. */
    MPI_Op op;
    MPI_Op_create(add_strided, 1, &op);
    MPI_Request r;
    int u[8] = {1, -1, rank, -1, 2, -1, 3, -1};
    CHECK(MPI_Iallreduce(MPI_IN_PLACE, u, 2, vec4, op, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "Iallreduce, user op, vector");
    /* Polled, not waited for: the result is unpacked when a test completes it. */
    int udone = 0;
    while (!udone) CHECK(MPI_Test(&r, &udone, MPI_STATUS_IGNORE) == MPI_SUCCESS, "Test");
    CHECK(u[0] == size && u[1] == -1 && u[2] == tri && u[4] == 2 * size && u[6] == 3 * size && u[7] == -1,
          "user op on a vector: %d %d %d %d %d %d %d %d", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]);
    CHECK(user_extent_ok, "the user function's datatype has the wrong extent");
    /* A predefined operation on a struct of two predefined types: refused. */
    MPI_Datatype mixed, parts[2] = {MPI_INT, MPI_DOUBLE};
    int bl[2] = {1, 1};
    MPI_Aint at[2] = {0, 8};
    MPI_Type_create_struct(2, bl, at, parts, &mixed);
    MPI_Type_commit(&mixed);
    char buf[32], out[32];
    memset(buf, 0, sizeof buf);
    int rc = MPI_Allreduce(buf, out, 1, mixed, MPI_SUM, MPI_COMM_WORLD), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "SUM on a struct of int and double gave class %d", cls);
    MPI_Type_free(&mixed);
    MPI_Type_free(&three);
    MPI_Type_free(&vec);
    MPI_Type_free(&vec4);
    MPI_Op_free(&op);
    /* A parameterized Fortran type is predefined (§19.2.5): it reduces. */
    MPI_Datatype f90;
    CHECK(MPI_Type_create_f90_real(15, MPI_UNDEFINED, &f90) == MPI_SUCCESS, "Type_create_f90_real");
    double fd = 0.25 * rank, fs = -1;
    CHECK(MPI_Allreduce(&fd, &fs, 1, f90, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && fs == 0.25 * tri,
          "SUM on a Fortran real kind: %g", fs);
    /* long double: a sum that needs the 64-bit significand (in double,
     * 2^55 + 1 rounds to 2^55) and stays exact in it up to 256 ranks, so
     * that no order of combining changes it; MAX; MINLOC on
     * LONG_DOUBLE_INT. */
    long double x = 36028797018963968.0L + 1.0L + rank, xs, xm;
    CHECK(MPI_Allreduce(&x, &xs, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "long double SUM");
    long double want = 0;
    for (int i = 0; i < size; i++) want += 36028797018963968.0L + 1.0L + i;
    CHECK(xs == want, "long double SUM: %.0Lf, not %.0Lf", xs, want);
    CHECK(MPI_Allreduce(&x, &xm, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS && xm == 36028797018963968.0L + size,
          "long double MAX: %.0Lf", xm);
    /* Values apart by less than a double's precision: in double they tie
     * and the smallest index would win. */
    struct { long double v; int i; } p = {rank == 0 ? 1.0L : 0.5L - 1e-19L * rank, rank}, pm;
    CHECK(MPI_Allreduce(&p, &pm, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD) == MPI_SUCCESS, "LONG_DOUBLE_INT");
    if (size > 1) CHECK(pm.i == size - 1 && pm.v == 0.5L - 1e-19L * (size - 1), "LONG_DOUBLE_INT MINLOC: %.21Lg at %d", pm.v, pm.i);
}


/* A data representation's functions, for MPI_Register_datarep. */
static int convert(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset pos, void *extra) {
    (void)userbuf, (void)t, (void)count, (void)filebuf, (void)pos, (void)extra;
    return MPI_SUCCESS;
}
static int file_extent(MPI_Datatype t, MPI_Aint *extent, void *extra) {
    (void)extra;
    MPI_Aint lb;
    return MPI_Type_get_extent(t, &lb, extent);
}

static void handles_tool_and_absent(void) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(dup)) == dup, "a communicator through an int");
    CHECK(MPI_Type_fromint(MPI_Type_toint(MPI_DOUBLE)) == MPI_DOUBLE, "a datatype through an int");
    CHECK(MPI_Comm_fromint(-1) == MPI_COMM_NULL, "an impossible int is the null handle");

    /* MPI-1 attribute names. */
    int key = MPI_KEYVAL_INVALID, flag = 0;
    void *val = NULL;
    static int payload = 77;
    CHECK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &key, NULL) == MPI_SUCCESS, "Keyval_create");
    CHECK(MPI_Attr_put(dup, key, &payload) == MPI_SUCCESS, "Attr_put");
    CHECK(MPI_Attr_get(dup, key, &val, &flag) == MPI_SUCCESS && flag && *(int *)val == 77, "Attr_get");
    CHECK(MPI_Attr_delete(dup, key) == MPI_SUCCESS, "Attr_delete");
    CHECK(MPI_Attr_get(dup, key, &val, &flag) == MPI_SUCCESS && !flag, "Attr_get after delete");
    CHECK(MPI_Keyval_free(&key) == MPI_SUCCESS && key == MPI_KEYVAL_INVALID, "Keyval_free");

    MPI_Comm parent = MPI_COMM_WORLD;
    CHECK(MPI_Comm_get_parent(&parent) == MPI_SUCCESS && parent == MPI_COMM_NULL, "Comm_get_parent");
    CHECK(MPI_Comm_disconnect(&dup) == MPI_SUCCESS && dup == MPI_COMM_NULL, "Comm_disconnect");

    /* The tool interface: it nests, has no variables, makes sessions. */
    int provided = -1, num = -1;
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS && provided == MPI_THREAD_SINGLE, "T_init_thread");
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "T_init_thread nested");
    CHECK(MPI_T_cvar_get_num(&num) == MPI_SUCCESS && num == 0, "cvars: %d", num);
    CHECK(MPI_T_pvar_get_num(&num) == MPI_SUCCESS && num == 0, "pvars: %d", num);
    CHECK(MPI_T_cvar_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == MPI_T_ERR_INVALID_INDEX, "cvar 0 exists");
    MPI_T_pvar_session ses;
    CHECK(MPI_T_pvar_session_create(&ses) == MPI_SUCCESS, "pvar session");
    CHECK(MPI_T_pvar_session_free(&ses) == MPI_SUCCESS && ses == MPI_T_PVAR_SESSION_NULL, "pvar session free");
    CHECK(MPI_T_finalize() == MPI_SUCCESS && MPI_T_finalize() == MPI_SUCCESS, "T_finalize twice");
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "a third T_finalize accepted");
    CHECK(MPI_T_cvar_get_num(&num) == MPI_T_ERR_NOT_INITIALIZED, "T after finalize");

    /* A file call's error goes to the files' handler (MPI_ERRORS_RETURN);
     * a data representation is registered once. A
     * spawn in a job without room for it (no dnrun --universe-size) fails
     * with MPI_ERR_SPAWN through its communicator's handler, saying so. */
    MPI_File fh;
    CHECK(MPI_File_open(MPI_COMM_SELF, "dn-mpi41-no-such-file", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_ERR_NO_SUCH_FILE,
          "File_open of a missing file");
    CHECK(MPI_Register_datarep("dn-mpi41-rep", convert, convert, file_extent, NULL) == MPI_SUCCESS,
          "Register_datarep with conversion functions");
    CHECK(MPI_Register_datarep("dn-mpi41-native", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, file_extent, NULL) == MPI_SUCCESS,
          "Register_datarep");
    CHECK(MPI_Register_datarep("dn-mpi41-rep", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, file_extent, NULL) == MPI_ERR_DUP_DATAREP,
          "Register_datarep twice");
    CHECK(MPI_Register_datarep("dn-mpi41-other", convert, convert, NULL, NULL) == MPI_ERR_ARG,
          "Register_datarep without an extent function");
    MPI_Comm child;
    MPI_Errhandler was;
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &was);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_spawn("x", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &child, MPI_ERRCODES_IGNORE);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SPAWN, "Comm_spawn: %d", rc);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Comm_spawn") != NULL && strstr(msg, "--universe-size") != NULL,
          "the message names the function and the way out: %s", msg);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, was);
    MPI_Errhandler_free(&was);
}

static int handler_calls = 0, handler_code = 0;
static MPI_Comm handler_comm = MPI_COMM_NULL;
static void on_error(MPI_Comm *comm, int *code, ...) {
    handler_calls++;
    handler_code = *code;
    handler_comm = *comm;
}

static int deleted = 0;
static int count_delete(MPI_Datatype t, int k, void *v, void *extra) {
    (void)t, (void)k, (void)v, (void)extra;
    deleted++;
    return MPI_SUCCESS;
}

static void errors_attributes_and_queries(void) {
    /* A user error handler runs with the communicator and the code, then
     * the call returns the code; a window handler cannot go on a
     * communicator. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Errhandler eh, weh, got;
    CHECK(MPI_Comm_create_errhandler(on_error, &eh) == MPI_SUCCESS, "Comm_create_errhandler");
    CHECK(MPI_Comm_set_errhandler(dup, eh) == MPI_SUCCESS, "set a user handler");
    CHECK(MPI_Comm_get_errhandler(dup, &got) == MPI_SUCCESS && got == eh, "get it back");
    int z = 0;
    int rc = MPI_Send(&z, 1, MPI_INT, size, 0, dup);
    CHECK(rc == MPI_ERR_RANK && handler_calls == 1 && handler_code == MPI_ERR_RANK && handler_comm == dup,
          "the user handler: rc %d, %d calls, code %d", rc, handler_calls, handler_code);
    CHECK(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER) == MPI_SUCCESS && handler_calls == 2 && handler_code == MPI_ERR_OTHER,
          "Comm_call_errhandler runs the user's handler: %d calls, code %d", handler_calls, handler_code);
    CHECK(MPI_Errhandler_free(&eh) == MPI_SUCCESS && eh == MPI_ERRHANDLER_NULL, "Errhandler_free");
    /* What MPI_Comm_get_errhandler returned is a handle of its own to free (§9.3). */
    CHECK(MPI_Errhandler_free(&got) == MPI_SUCCESS && got == MPI_ERRHANDLER_NULL, "free the handle get_errhandler gave");
    rc = MPI_Send(&z, 1, MPI_INT, -7, 0, dup);
    CHECK(handler_calls == 3, "a freed handler stays in force where it is set");
    CHECK(MPI_Win_create_errhandler((MPI_Win_errhandler_function *)on_error, &weh) == MPI_SUCCESS, "Win_create_errhandler");
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, weh) == MPI_ERR_ERRHANDLER, "a window handler on a communicator accepted");
    MPI_Errhandler_free(&weh);
    MPI_Comm_free(&dup);

    /* Error classes, codes and strings of the program's own. */
    int cls = -1, code = -1, c2 = -1, last = 0, flag = 0, *lastp = NULL, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    CHECK(MPI_Add_error_class(&cls) == MPI_SUCCESS && cls > MPI_ERR_LASTCODE, "Add_error_class: %d", cls);
    CHECK(MPI_Add_error_code(cls, &code) == MPI_SUCCESS && code > cls, "Add_error_code: %d", code);
    CHECK(MPI_Add_error_string(code, "the sky fell") == MPI_SUCCESS, "Add_error_string");
    CHECK(MPI_Error_class(code, &c2) == MPI_SUCCESS && c2 == cls, "Error_class of an added code: %d", c2);
    CHECK(MPI_Error_string(code, text, &len) == MPI_SUCCESS && strcmp(text, "the sky fell") == 0, "Error_string: %s", text);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastp, &flag) == MPI_SUCCESS && flag && *lastp == code, "MPI_LASTUSEDCODE");
    (void)last;
    CHECK(MPI_Add_error_string(MPI_ERR_RANK, "mine") == MPI_ERR_ARG, "a predefined class's string changed");
    CHECK(MPI_Remove_error_class(cls) == MPI_ERR_ARG, "a class with codes removed");
    CHECK(MPI_Remove_error_code(code) == MPI_ERR_ARG, "a code with a string removed");
    CHECK(MPI_Remove_error_string(code) == MPI_SUCCESS && MPI_Remove_error_code(code) == MPI_SUCCESS, "Remove_error_code");
    CHECK(MPI_Remove_error_class(cls) == MPI_SUCCESS, "Remove_error_class");
    CHECK(MPI_Error_class(code, &c2) == MPI_ERR_ARG, "a removed code has a class");

    /* Attributes on datatypes: set, get, copied by Type_dup with
     * MPI_TYPE_DUP_FN, deleted through the callback on Type_free. */
    int tkey = MPI_KEYVAL_INVALID;
    static int tv = 5;
    void *out = NULL;
    CHECK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, count_delete, &tkey, NULL) == MPI_SUCCESS, "Type_create_keyval");
    MPI_Datatype vec, vec2;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    CHECK(MPI_Type_set_attr(vec, tkey, &tv) == MPI_SUCCESS, "Type_set_attr");
    CHECK(MPI_Type_get_attr(vec, tkey, &out, &flag) == MPI_SUCCESS && flag && out == &tv, "Type_get_attr");
    MPI_Type_dup(vec, &vec2);
    out = NULL;
    CHECK(MPI_Type_get_attr(vec2, tkey, &out, &flag) == MPI_SUCCESS && flag && out == &tv, "the attribute copied by Type_dup");
    MPI_Type_free(&vec);
    CHECK(deleted == 1, "Type_free ran the delete callback %d times", deleted);
    CHECK(MPI_Type_delete_attr(vec2, tkey) == MPI_SUCCESS && deleted == 2, "Type_delete_attr");
    CHECK(MPI_Type_get_attr(vec2, tkey, &out, &flag) == MPI_SUCCESS && !flag, "deleted, still there");
    CHECK(MPI_Type_set_attr(MPI_INT, tkey, &tv) == MPI_SUCCESS && MPI_Type_delete_attr(MPI_INT, tkey) == MPI_SUCCESS, "an attribute on a predefined type");
    MPI_Type_free(&vec2);
    CHECK(MPI_Type_free_keyval(&tkey) == MPI_SUCCESS, "Type_free_keyval");

    /* Pair types, the ABI queries, Comm_idup. */
    MPI_Datatype pair;
    CHECK(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &pair) == MPI_SUCCESS && pair == MPI_DOUBLE_INT, "value_index double/int");
    CHECK(MPI_Type_get_value_index(MPI_CHAR, MPI_DOUBLE, &pair) == MPI_SUCCESS && pair == MPI_DATATYPE_NULL, "value_index of no pair");
    MPI_Info abi;
    char val[16];
    CHECK(MPI_Abi_get_info(&abi) == MPI_SUCCESS, "Abi_get_info");
    CHECK(MPI_Info_get(abi, "mpi_aint_size", sizeof val - 1, val, &flag) == MPI_SUCCESS && flag && strcmp(val, "8") == 0, "mpi_aint_size");
    MPI_Info_free(&abi);
    CHECK(MPI_Abi_get_fortran_info(&abi) == MPI_SUCCESS && abi == MPI_INFO_NULL, "no Fortran details");
    MPI_Comm idup;
    MPI_Request ir;
    CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &idup, &ir) == MPI_SUCCESS, "Comm_idup");
    MPI_Wait(&ir, MPI_STATUS_IGNORE);
    int n = 0, sum = 0;
    MPI_Comm_size(idup, &n);
    MPI_Allreduce(&n, &sum, 1, MPI_INT, MPI_SUM, idup);
    CHECK(n == size && sum == size * size, "the idup communicator works");
    MPI_Comm_free(&idup);
    CHECK(MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &idup, &ir) == MPI_SUCCESS, "idup_with_info(MPI_INFO_NULL)");
    MPI_Wait(&ir, MPI_STATUS_IGNORE);
    MPI_Comm_free(&idup);

    /* Idups of two communicators started in opposite orders on odd and
     * even ranks (allowed for non-blocking collectives, §6.12), with a
     * message between them before the wait: no agreement to hang on. Until
     * its request completes, the new handle is not a communicator. */
    MPI_Comm a, b, da, db;
    MPI_Request dr[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    if (rank % 2 == 0) {
        MPI_Comm_idup(a, &da, &dr[0]);
        MPI_Comm_idup(b, &db, &dr[1]);
    } else {
        MPI_Comm_idup(b, &db, &dr[1]);
        MPI_Comm_idup(a, &da, &dr[0]);
    }
    int early = -1, ecls = -1;
    int erc = MPI_Comm_size(da, &early);
    MPI_Error_class(erc, &ecls);
    CHECK(ecls == MPI_ERR_COMM && early == -1, "a pending idup's handle used: class %d", ecls);
    /* Its own handle-level properties may be set while it is pending (as
     * MPICH and Open MPI allow, and mpi4py does after every Idup). */
    MPI_Errhandler peh = MPI_ERRHANDLER_NULL;
    char nm[MPI_MAX_OBJECT_NAME];
    int nlen = 0;
    CHECK(MPI_Comm_set_errhandler(da, MPI_ERRORS_RETURN) == MPI_SUCCESS, "set_errhandler on a pending idup");
    CHECK(MPI_Comm_get_errhandler(da, &peh) == MPI_SUCCESS && peh == MPI_ERRORS_RETURN, "get_errhandler on a pending idup");
    CHECK(MPI_Comm_set_name(da, "pending") == MPI_SUCCESS, "set_name on a pending idup");
    CHECK(MPI_Comm_get_name(da, nm, &nlen) == MPI_SUCCESS && strcmp(nm, "pending") == 0, "get_name on a pending idup");
    int token = rank, from = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 5, &from, 1, MPI_INT, (rank + size - 1) % size, 5, a,
                 MPI_STATUS_IGNORE);
    CHECK(from == (rank + size - 1) % size, "a message while idups are pending: %d", from);
    MPI_Waitall(2, dr, MPI_STATUSES_IGNORE);
    /* Each duplicate is its own context: the same tag sent on one is not
     * received on the other. */
    int x = 100 + rank, y = -1, zz = -1;
    MPI_Request sr[2];
    MPI_Isend(&x, 1, MPI_INT, (rank + 1) % size, 7, da, &sr[0]);
    MPI_Isend(&x, 1, MPI_INT, (rank + 1) % size, 7, db, &sr[1]);
    MPI_Recv(&y, 1, MPI_INT, (rank + size - 1) % size, 7, db, MPI_STATUS_IGNORE);
    MPI_Recv(&zz, 1, MPI_INT, (rank + size - 1) % size, 7, da, MPI_STATUS_IGNORE);
    MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);
    CHECK(y == 100 + (rank + size - 1) % size && zz == y, "traffic on the idups %d %d", y, zz);
    int s1 = 0;
    MPI_Allreduce(&rank, &s1, 1, MPI_INT, MPI_SUM, db);
    CHECK(s1 == size * (size - 1) / 2, "allreduce on the second idup %d", s1);
    MPI_Comm_free(&da);
    MPI_Comm_free(&db);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);

    /* An idup completed by a polling loop; its request cannot be freed. */
    MPI_Comm polled;
    MPI_Request pr;
    MPI_Comm_idup(MPI_COMM_WORLD, &polled, &pr);
    MPI_Request keep = pr;
    erc = MPI_Request_free(&keep);
    MPI_Error_class(erc, &ecls);
    CHECK(ecls == MPI_ERR_REQUEST && keep == pr, "MPI_Request_free of an idup's request: class %d", ecls);
    int done = 0, polls = 0;
    while (!done) {
        MPI_Test(&pr, &done, MPI_STATUS_IGNORE);
        polls++;
    }
    int psize = -1;
    CHECK(MPI_Comm_size(polled, &psize) == MPI_SUCCESS && psize == size && pr == MPI_REQUEST_NULL,
          "a polled idup: size %d after %d tests", psize, polls);
    MPI_Comm_free(&polled);
}

/* Callbacks that fail until told not to (MPI 4.1 §7.7.2). */
static int callbacks_fail = 1, bomb_deletes = 0;
static int copy_bomb(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c, (void)k, (void)extra, (void)in;
    *(void **)out = in;
    *flag = 1;
    return callbacks_fail ? MPI_ERR_OTHER : MPI_SUCCESS;
}
static int delete_bomb(MPI_Comm c, int k, void *v, void *extra) {
    (void)c, (void)k, (void)v, (void)extra;
    bomb_deletes++;
    return callbacks_fail ? MPI_ERR_OTHER : MPI_SUCCESS;
}
static int type_copy_bomb(MPI_Datatype t, int k, void *extra, void *in, void *out, int *flag) {
    (void)t;
    return copy_bomb(MPI_COMM_NULL, k, extra, in, out, flag);
}
static int type_delete_bomb(MPI_Datatype t, int k, void *v, void *extra) {
    (void)t;
    return delete_bomb(MPI_COMM_NULL, k, v, extra);
}

/* A failing delete callback leaves the attribute (or the old value) set;
 * a failing copy callback fails the duplication, which gives no object. A
 * keyval freed while attributes use it may be freed again until the last
 * one goes. */
static void failing_attribute_callbacks(void) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int key, one = 1, two = 2, flag = 0, *got = NULL, cls = -1;
    MPI_Comm_create_keyval(copy_bomb, delete_bomb, &key, NULL);
    CHECK(MPI_Comm_set_attr(c, key, &one) == MPI_SUCCESS, "first set");
    int rc = MPI_Comm_set_attr(c, key, &two);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "a set over a value whose delete fails: class %d", cls);
    MPI_Comm_get_attr(c, key, &got, &flag);
    CHECK(flag && got == &one, "the old value stays after a failed set");
    rc = MPI_Comm_delete_attr(c, key);
    MPI_Comm_get_attr(c, key, &got, &flag);
    CHECK(rc != MPI_SUCCESS && flag && got == &one, "a failed delete leaves the attribute (rc %d, flag %d)", rc, flag);
    MPI_Comm d = MPI_COMM_WORLD;
    rc = MPI_Comm_dup(c, &d);
    CHECK(rc != MPI_SUCCESS && d == MPI_COMM_NULL, "a failing copy callback: rc %d, newcomm null %d", rc,
          d == MPI_COMM_NULL);
    callbacks_fail = 0;
    CHECK(MPI_Comm_dup(c, &d) == MPI_SUCCESS && d != MPI_COMM_NULL, "dup once the callback succeeds");
    MPI_Comm_get_attr(d, key, &got, &flag);
    CHECK(flag && got == &one, "the copied attribute");
    MPI_Comm_free(&d);
    CHECK(MPI_Comm_free_keyval(&key) == MPI_SUCCESS && key == MPI_KEYVAL_INVALID, "free_keyval");
    MPI_Comm_free(&c);

    /* The same on a datatype. */
    callbacks_fail = 1;
    MPI_Datatype t, t2 = MPI_INT;
    MPI_Type_contiguous(2, MPI_INT, &t);
    int tkey;
    MPI_Type_create_keyval(type_copy_bomb, type_delete_bomb, &tkey, NULL);
    MPI_Type_set_attr(t, tkey, &one);
    rc = MPI_Type_delete_attr(t, tkey);
    MPI_Type_get_attr(t, tkey, &got, &flag);
    CHECK(rc != MPI_SUCCESS && flag && got == &one, "a failed Type_delete_attr leaves the attribute");
    rc = MPI_Type_dup(t, &t2);
    CHECK(rc != MPI_SUCCESS && t2 == MPI_DATATYPE_NULL, "a failing type copy callback: rc %d", rc);
    callbacks_fail = 0;
    bomb_deletes = 0;
    MPI_Type_free(&t);
    CHECK(bomb_deletes == 1, "Type_free ran the delete callback %d times", bomb_deletes);

    /* A keyval in use, freed through two copies of its handle. */
    MPI_Comm e;
    MPI_Comm_dup(MPI_COMM_WORLD, &e);
    int k2, k2copy;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k2, NULL);
    k2copy = k2;
    MPI_Comm_set_attr(e, k2, &one);
    CHECK(MPI_Comm_free_keyval(&k2) == MPI_SUCCESS, "free of a keyval in use");
    CHECK(MPI_Comm_free_keyval(&k2copy) == MPI_SUCCESS, "a second free while still in use");
    MPI_Comm_free(&e);
    int tcopy = tkey;
    CHECK(MPI_Type_free_keyval(&tkey) == MPI_SUCCESS, "Type_free_keyval");
    rc = MPI_Type_free_keyval(&tcopy);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "a free of a keyval gone: class %d", cls);
}

/* Generalized requests (§13.2): the callbacks run when the standard
 * says, query_fn fills the status the completion call returns, and may
 * itself call MPI; a wait that only an incomplete one could end fails
 * instead of waiting for ever. */
struct greq_state { int queries, frees, cancels, cancel_complete, query_rc, free_rc; };
static int greq_query(void *extra, MPI_Status *st) {
    struct greq_state *g = extra;
    g->queries++;
    st->MPI_SOURCE = 4;
    st->MPI_TAG = 44;
    MPI_Status_set_elements(st, MPI_INT, 3);
    MPI_Status_set_cancelled(st, 0);
    return g->query_rc;
}
static int greq_free(void *extra) {
    struct greq_state *g = extra;
    g->frees++;
    return g->free_rc;
}
static int greq_cancel(void *extra, int complete) {
    struct greq_state *g = extra;
    g->cancels++;
    g->cancel_complete = complete;
    return MPI_SUCCESS;
}

static void generalized_requests(void) {
    struct greq_state g = {0};
    MPI_Request r;
    MPI_Status st;
    int flag = -1, count = -1;
    CHECK(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &g, &r) == MPI_SUCCESS, "Grequest_start");
    CHECK(MPI_Test(&r, &flag, &st) == MPI_SUCCESS && !flag && r != MPI_REQUEST_NULL, "an incomplete greq tested complete");
    CHECK(MPI_Wait(&r, &st) == MPI_ERR_REQUEST && r != MPI_REQUEST_NULL, "a wait that could never end was not refused");
    CHECK(MPI_Cancel(&r) == MPI_SUCCESS && g.cancels == 1 && g.cancel_complete == 0, "cancel_fn before completion");
    CHECK(g.queries == 0 && g.frees == 0, "callbacks ran early: %d queries, %d frees", g.queries, g.frees);
    CHECK(MPI_Grequest_complete(r) == MPI_SUCCESS, "Grequest_complete");
    CHECK(MPI_Grequest_complete(r) == MPI_ERR_REQUEST, "a second Grequest_complete accepted");
    CHECK(MPI_Request_get_status(r, &flag, &st) == MPI_SUCCESS && flag && st.MPI_TAG == 44, "get_status of a complete greq");
    CHECK(g.queries == 1 && g.frees == 0 && r != MPI_REQUEST_NULL, "get_status freed it");
    st.MPI_SOURCE = st.MPI_TAG = -7;
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && r == MPI_REQUEST_NULL, "Wait of a complete greq");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == 4 && st.MPI_TAG == 44 && count == 3, "query_fn's status: %d %d %d", st.MPI_SOURCE, st.MPI_TAG, count);
    CHECK(g.queries == 2 && g.frees == 1, "after Wait: %d queries, %d frees", g.queries, g.frees);

    /* Freed before it completes: free_fn runs at the completion. */
    struct greq_state h = {0};
    CHECK(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &h, &r) == MPI_SUCCESS, "Grequest_start 2");
    MPI_Request keep = r;
    CHECK(MPI_Request_free(&r) == MPI_SUCCESS && r == MPI_REQUEST_NULL && h.frees == 0, "free of an incomplete greq");
    CHECK(MPI_Grequest_complete(keep) == MPI_SUCCESS && h.frees == 1 && h.queries == 0, "free_fn at completion after a free: %d", h.frees);

    /* Among others: Waitany passes over an incomplete greq to a message
     * to self; Waitall reports the complete greq in its place. */
    struct greq_state k = {0};
    int out = 5, in = -1;
    MPI_Request rs[2];
    MPI_Status sts[2];
    MPI_Grequest_start(greq_query, greq_free, greq_cancel, &k, &rs[0]);
    MPI_Irecv(&in, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &rs[1]);
    MPI_Send(&out, 1, MPI_INT, rank, 9, MPI_COMM_WORLD);
    int idx = -1;
    CHECK(MPI_Waitany(2, rs, &idx, &st) == MPI_SUCCESS && idx == 1 && in == 5, "Waitany beside a greq: %d", idx);
    CHECK(MPI_Waitany(2, rs, &idx, &st) == MPI_ERR_REQUEST, "Waitany on an incomplete greq alone not refused");
    CHECK(MPI_Testall(2, rs, &flag, sts) == MPI_SUCCESS && !flag, "Testall with an incomplete greq");
    MPI_Irecv(&in, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &rs[1]);
    MPI_Send(&out, 1, MPI_INT, rank, 9, MPI_COMM_WORLD);
    CHECK(MPI_Waitall(2, rs, sts) == MPI_ERR_REQUEST, "Waitall on an incomplete greq not refused");
    MPI_Grequest_complete(rs[0]);
    sts[0].MPI_TAG = sts[1].MPI_TAG = -1;
    CHECK(MPI_Waitall(2, rs, sts) == MPI_SUCCESS && sts[0].MPI_TAG == 44 && sts[1].MPI_TAG == 9, "Waitall: %d %d", sts[0].MPI_TAG, sts[1].MPI_TAG);
    CHECK(k.queries == 1 && k.frees == 1 && rs[0] == MPI_REQUEST_NULL, "Waitall's greq: %d queries, %d frees", k.queries, k.frees);

    /* query_fn's error is the call's; in an array, MPI_ERR_IN_STATUS. */
    struct greq_state bad = {0, 0, 0, 0, MPI_ERR_OTHER, 0};
    MPI_Grequest_start(greq_query, greq_free, greq_cancel, &bad, &r);
    MPI_Grequest_complete(r);
    CHECK(MPI_Wait(&r, &st) == MPI_ERR_OTHER && r == MPI_REQUEST_NULL && bad.frees == 1, "query_fn's error from Wait");
    MPI_Grequest_start(greq_query, greq_free, greq_cancel, &bad, &rs[0]);
    rs[1] = MPI_REQUEST_NULL;
    MPI_Grequest_complete(rs[0]);
    CHECK(MPI_Waitall(2, rs, sts) == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_ERR_OTHER, "query_fn's error in Waitall: %d", sts[0].MPI_ERROR);
    CHECK(MPI_Grequest_complete(r) == MPI_ERR_REQUEST, "Grequest_complete of a freed request accepted");
}

int main(int argc, char **argv) {
    /* Info objects before MPI_Init and after MPI_Finalize (MPI 4.1
     * §11.4.1): made before, used during, freed after. */
    MPI_Info early, env_before;
    int pre = MPI_Info_create(&early) == MPI_SUCCESS && MPI_Info_set(early, "made", "before init") == MPI_SUCCESS &&
              MPI_Info_create_env(argc, argv, &env_before) == MPI_SUCCESS;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    persistent_collectives();
    large_counts();
    pair_and_complex_reductions();
    derived_and_long_double_reductions();
    handles_tool_and_absent();
    errors_attributes_and_queries();
    failing_attribute_callbacks();
    generalized_requests();
    {
        char v[64];
        int vlen = sizeof v, flag = 0, n = 0;
        CHECK(pre, "MPI_Info_* before MPI_Init");
        MPI_Info_get_string(early, "made", &vlen, v, &flag);
        CHECK(flag && strcmp(v, "before init") == 0, "an info made before MPI_Init: '%s'", flag ? v : "");
        vlen = sizeof v;
        MPI_Info_get_string(env_before, "maxprocs", &vlen, v, &flag);
        CHECK(flag && atoi(v) == size, "MPI_Info_create_env before MPI_Init: maxprocs '%s'", flag ? v : "");
        MPI_Info_get_nkeys(env_before, &n);
        CHECK(n >= 3, "MPI_Info_create_env gave %d keys", n);
    }
    int bad_total = 0;
    MPI_Allreduce(&errors, &bad_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && bad_total == 0) printf("OK c-mpi41 on %d ranks\n", size);
    MPI_Finalize();
    MPI_Info later;
    int post = MPI_Info_free(&early) == MPI_SUCCESS && early == MPI_INFO_NULL &&
               MPI_Info_free(&env_before) == MPI_SUCCESS && MPI_Info_create(&later) == MPI_SUCCESS &&
               MPI_Info_free(&later) == MPI_SUCCESS;
    if (!post) fprintf(stderr, "[%d] FAIL: MPI_Info_* after MPI_Finalize\n", rank);
    return bad_total == 0 && post ? 0 : 1;
}
