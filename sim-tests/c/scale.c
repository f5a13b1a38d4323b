/* A cluster-sized job (issue 28): the ring exchange and allreduce of the
 * issue's report, a barrier, a broadcast from the last rank, and a
 * receive completed by an MPI_Test polling loop, all checked against
 * values each rank computes for itself. Rank 0 prints the simulated time
 * the loop took, so that two runs can be compared to the picosecond.
 *
 *   scale [ITERS [BYTES]]      (defaults: 4 iterations of 1 KiB) */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 4;
    int bytes = argc > 2 ? atoi(argv[2]) : 1024;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out = malloc(bytes > 0 ? bytes : 1), *in = malloc(bytes > 0 ? bytes : 1);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < bytes; k++) out[k] = (unsigned char)(rank * 7 + it + k);
        memset(in, 0xee, bytes > 0 ? bytes : 1);
        MPI_Status st;
        MPI_Sendrecv(out, bytes, MPI_BYTE, right, it, in, bytes, MPI_BYTE, left, it, MPI_COMM_WORLD, &st);
        int got;
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == it && got == bytes, "ring status %d/%d/%d", st.MPI_SOURCE,
              st.MPI_TAG, got);
        for (int k = 0; k < bytes; k++) {
            if (in[k] != (unsigned char)(left * 7 + it + k)) {
                CHECK(0, "ring byte %d of iteration %d is %d", k, it, in[k]);
                break;
            }
        }
        double v[8], w[8];
        for (int k = 0; k < 8; k++) v[k] = rank + k + it;
        MPI_Allreduce(v, w, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int k = 0; k < 8; k++) {
            double want = (double)size * (size - 1) / 2 + (double)size * (k + it);
            CHECK(w[k] == want, "allreduce element %d of iteration %d: %g, want %g", k, it, w[k], want);
        }
    }
    double t1 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);

    /* A broadcast from the last rank. */
    int b[4] = {0, 0, 0, 0};
    if (rank == size - 1)
        for (int k = 0; k < 4; k++) b[k] = 1000 + k;
    MPI_Bcast(b, 4, MPI_INT, size - 1, MPI_COMM_WORLD);
    for (int k = 0; k < 4; k++) CHECK(b[k] == 1000 + k, "bcast element %d is %d", k, b[k]);

    /* Every rank polls for its left neighbour's message with MPI_Test:
     * a polling program must end as a blocking one does. */
    int token = -1, mine = rank * 3 + 1, flag = 0;
    MPI_Request r;
    MPI_Irecv(&token, 1, MPI_INT, left, 99, MPI_COMM_WORLD, &r);
    MPI_Send(&mine, 1, MPI_INT, right, 99, MPI_COMM_WORLD);
    long polls = 0;
    while (!flag) {
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        polls++;
    }
    CHECK(token == left * 3 + 1, "polled token %d", token);
    CHECK(polls >= 1, "no poll");

    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("OK c-scale on %d ranks: %.6f us simulated\n", size, (t1 - t0) * 1e6);
    free(out);
    free(in);
    MPI_Finalize();
    return all != 0;
}
