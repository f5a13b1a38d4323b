/* 0-byte ping-pong between ranks 0 and 1 of a job of any size (the other
 * ranks only meet the barriers): one-way latency, half the round trip,
 * after a warm-up round of the same length.
 *
 *   mpiexec -n 3 ./pair-latency 20000
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, n = argc > 1 ? atoi(argv[1]) : 20000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || n < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 (or more) pair-latency ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char b[1];
    for (int round = 0; round < 2; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (int i = 0; rank < 2 && i < n; i++) {
            if (rank == 0) {
                MPI_Send(b, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(b, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(b, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        t = MPI_Wtime() - t;
        if (rank == 0 && round == 1) printf("0-byte one-way latency between ranks 0 and 1: %.3f us\n", t / n / 2 * 1e6);
    }
    MPI_Finalize();
    return 0;
}
