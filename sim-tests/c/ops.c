/* User-defined reduction operations (MPI 4.1 §6.9.5): MPI_Op_create and
 * its large-count form in blocking and non-blocking reductions, scans,
 * Reduce_local and intercommunicator-free reduce-scatter; a
 * non-commutative operation combined in rank order; Op_commutative,
 * Op_free, and the errors for a freed or predefined handle and for a
 * datatype the library does not reduce. "OK c-ops on N ranks" from rank 0
 * when every rank passed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static int calls = 0;

/* inout[i] = in[i] + inout[i] on ints; checks the datatype it is given. */
static void int_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    calls++;
    if (*dt != MPI_INT) CHECK(0, "int_sum got datatype %ld", (long)(intptr_t)*dt);
    /* A user function may query its datatype (§6.9.5), as mpi4py's does. */
    int sz = -1;
    MPI_Count lb = -1, ext = -1;
    MPI_Type_size(*dt, &sz);
    MPI_Type_get_extent_c(*dt, &lb, &ext);
    if (sz != 4 || lb != 0 || ext != 4) CHECK(0, "datatype queries in a user function: %d %lld %lld", sz, (long long)lb, (long long)ext);
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* The same on doubles, large-count form. */
static void dbl_sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    (void)dt;
    for (MPI_Count i = 0; i < *len; i++) ((double *)inout)[i] += ((double *)in)[i];
}

/* Affine maps x -> a*x + b as MPI_2INT pairs; inout = in o inout (apply
 * inout first, then in): composition does not commute. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *u = in, *v = inout;
    for (int i = 0; i < *len; i++) {
        int a = u[2 * i] * v[2 * i], b = u[2 * i] * v[2 * i + 1] + u[2 * i + 1];
        v[2 * i] = a, v[2 * i + 1] = b;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Op sum, dsum, comp;
    CHECK(MPI_Op_create(int_sum, 1, &sum) == MPI_SUCCESS, "Op_create");
    CHECK(MPI_Op_create_c(dbl_sum_c, 1, &dsum) == MPI_SUCCESS, "Op_create_c");
    CHECK(MPI_Op_create(compose, 0, &comp) == MPI_SUCCESS, "Op_create non-commutative");
    int flag = -1;
    MPI_Op_commutative(sum, &flag);
    CHECK(flag == 1, "sum commutative %d", flag);
    MPI_Op_commutative(comp, &flag);
    CHECK(flag == 0, "compose commutative %d", flag);
    MPI_Op_commutative(MPI_MAX, &flag);
    CHECK(flag == 1, "MPI_MAX commutative %d", flag);
    MPI_Op_commutative(MPI_REPLACE, &flag);
    CHECK(flag == 0, "MPI_REPLACE commutative %d", flag);

    /* Allreduce, small and large (the large one runs the ring or
     * Rabenseifner's algorithm, whose chunks start anywhere). */
    int n = 3000, *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) a[i] = i * (rank + 1);
    int scale = size * (size + 1) / 2;
    for (int k = 1; k <= n; k += n - 1) {
        for (int i = 0; i < k; i++) b[i] = -1;
        CHECK(MPI_Allreduce(a, b, k, MPI_INT, sum, MPI_COMM_WORLD) == MPI_SUCCESS, "user allreduce %d", k);
        for (int i = 0; i < k; i++)
            if (b[i] != scale * i) {
                CHECK(0, "user allreduce(%d) [%d] = %d, want %d", k, i, b[i], scale * i);
                break;
            }
    }
    CHECK(size == 1 || calls > 0, "the user function was never called");
    /* In place, and a root other than 0. */
    for (int i = 0; i < 4; i++) b[i] = rank + i;
    MPI_Allreduce(MPI_IN_PLACE, b, 4, MPI_INT, sum, MPI_COMM_WORLD);
    CHECK(b[0] == size * (size - 1) / 2 && b[3] == size * (size - 1) / 2 + 3 * size, "in-place user allreduce %d %d",
          b[0], b[3]);
    int root = size - 1, one = rank + 1, tot = -1;
    MPI_Reduce(&one, &tot, 1, MPI_INT, sum, root, MPI_COMM_WORLD);
    if (rank == root) CHECK(tot == scale, "user reduce at %d: %d", root, tot);

    /* Large-count form on doubles, non-blocking. */
    double d = 0.5 * rank, dr = -1;
    MPI_Request rq;
    MPI_Iallreduce(&d, &dr, 1, MPI_DOUBLE, dsum, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(dr == 0.25 * size * (size - 1), "user iallreduce on doubles %g", dr);

    /* Scan: the prefix sums. */
    int pre = -1;
    MPI_Scan(&one, &pre, 1, MPI_INT, sum, MPI_COMM_WORLD);
    CHECK(pre == (rank + 1) * (rank + 2) / 2, "user scan %d", pre);
    /* Reduce_scatter_block: two ints each. */
    int *rs = malloc(sizeof(int) * 2 * (size_t)size), got[2] = {-1, -1};
    for (int i = 0; i < 2 * size; i++) rs[i] = i;
    MPI_Reduce_scatter_block(rs, got, 2, MPI_INT, sum, MPI_COMM_WORLD);
    CHECK(got[0] == 2 * rank * size && got[1] == (2 * rank + 1) * size, "user reduce_scatter_block %d %d", got[0],
          got[1]);

    /* Non-commutative: rank order, x0 o x1 o ... o x(n-1), at every
     * process, and at a root other than 0. */
    int mine[2] = {rank % 2 + 1, rank + 1}, res[2] = {0, 0}, want[2] = {1, 0};
    for (int r = size - 1; r >= 0; r--) {
        /* want = x_r o want */
        int ar = r % 2 + 1, br = r + 1;
        want[1] = ar * want[1] + br, want[0] = ar * want[0];
    }
    MPI_Allreduce(mine, res, 1, MPI_2INT, comp, MPI_COMM_WORLD);
    CHECK(res[0] == want[0] && res[1] == want[1], "non-commutative allreduce (%d,%d), want (%d,%d)", res[0], res[1],
          want[0], want[1]);
    /* The same, non-blocking, completed by a polling loop: the user
     * function runs inside MPI_Test's progress. */
    res[0] = res[1] = 0;
    int done = 0;
    MPI_Iallreduce(mine, res, 1, MPI_2INT, comp, MPI_COMM_WORLD, &rq);
    while (!done) MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    CHECK(res[0] == want[0] && res[1] == want[1], "polled non-commutative iallreduce (%d,%d)", res[0], res[1]);
    res[0] = res[1] = 0;
    MPI_Reduce(mine, res, 1, MPI_2INT, comp, root, MPI_COMM_WORLD);
    if (rank == root)
        CHECK(res[0] == want[0] && res[1] == want[1], "non-commutative reduce (%d,%d)", res[0], res[1]);

    /* Reduce_local with a user operation. */
    int in[3] = {1, 2, 3}, io[3] = {10, 20, 30};
    MPI_Reduce_local(in, io, 3, MPI_INT, sum);
    CHECK(io[0] == 11 && io[2] == 33, "user reduce_local %d %d", io[0], io[2]);

    /* A derived type of one predefined type reduces with a predefined
     * operation, element by element (§6.9.2); a struct of two types does
     * not: an error, not a crash. */
    MPI_Datatype pair, mixed, parts[2] = {MPI_INT, MPI_FLOAT};
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int pv[2] = {1, rank}, ps[2] = {0, 0};
    CHECK(MPI_Allreduce(pv, ps, 1, pair, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && ps[0] == size &&
              ps[1] == size * (size - 1) / 2,
          "SUM on a contiguous pair: %d %d", ps[0], ps[1]);
    int bl[2] = {1, 1};
    MPI_Aint at[2] = {0, 4};
    MPI_Type_create_struct(2, bl, at, parts, &mixed);
    MPI_Type_commit(&mixed);
    CHECK(MPI_Allreduce(a, b, 1, mixed, MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_TYPE, "SUM on a struct of int and float accepted");
    MPI_Type_free(&pair);
    MPI_Type_free(&mixed);

    /* Free: the handle becomes MPI_OP_NULL; a stale copy and the
     * predefined operations are refused. */
    MPI_Op stale = sum;
    CHECK(MPI_Op_free(&sum) == MPI_SUCCESS && sum == MPI_OP_NULL, "Op_free");
    CHECK(MPI_Allreduce(&one, &tot, 1, MPI_INT, stale, MPI_COMM_WORLD) == MPI_ERR_OP, "a freed op accepted");
    CHECK(MPI_Op_free(&stale) == MPI_ERR_OP, "a freed op freed twice");
    MPI_Op mx = MPI_MAX;
    CHECK(MPI_Op_free(&mx) == MPI_ERR_OP && mx == MPI_MAX, "a predefined op freed");
    CHECK(MPI_Op_create(NULL, 1, &mx) == MPI_ERR_ARG, "a null user function accepted");
    MPI_Op_free(&dsum);
    MPI_Op_free(&comp);
    free(a), free(b), free(rs);

    /* The same buffer as send and receive argument is refused at every
     * rank (the reduction would read what it writes); MPI_IN_PLACE works. */
    int both[3] = {rank, rank, rank};
    CHECK(MPI_Allreduce(both, both, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_BUFFER, "aliased buffers accepted");
    CHECK(MPI_Allreduce(both, both + 1, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_BUFFER,
          "overlapping buffers accepted");
    CHECK(MPI_Allreduce(MPI_IN_PLACE, both, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
              both[2] == size * (size - 1) / 2,
          "in place: %d", both[2]);

    int bad_total = 0;
    MPI_Allreduce(&errors, &bad_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && bad_total == 0) printf("OK c-ops on %d ranks\n", size);
    MPI_Finalize();
    return bad_total == 0 ? 0 : 1;
}
