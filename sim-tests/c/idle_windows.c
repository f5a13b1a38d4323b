/* Windows cost nothing while idle (issue 47, break 7): N windows are
 * made (N from argv[1], default 1,000), then ranks 0 and 1 ping-pong 0
 * bytes 100 times on MPI_COMM_WORLD and rank 0 prints the simulated round
 * trip, which must not depend on N. "OK c-idle_windows on N ranks" from
 * rank 0 when every rank passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    MPI_Win *wins = malloc(sizeof(MPI_Win) * (size_t)(n > 0 ? n : 1));
    int *mem = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
    for (int i = 0; i < n; i++)
        CHECK(MPI_Win_create(&mem[i], sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wins[i]) == MPI_SUCCESS, "window %d", i);
    MPI_Barrier(MPI_COMM_WORLD);
    enum { ROUNDS = 100 };
    double t0 = MPI_Wtime();
    for (int i = 0; i < ROUNDS && size > 1; i++) {
        if (rank == 0) {
            MPI_Send(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    double rtt = (MPI_Wtime() - t0) / ROUNDS * 1e6;
    for (int i = 0; i < n; i++) MPI_Win_free(&wins[i]);
    free(wins);
    free(mem);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("round trip with %d windows: %.4f us\n", n, rtt);
    if (rank == 0 && all == 0) printf("OK c-idle_windows on %d ranks\n", size);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
