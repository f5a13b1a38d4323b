/* 0-byte ping-pong between ranks 0 and 1 of a job of any size (the other
 * ranks only meet the barriers): one-way latency, half the round trip,
 * after a warm-up round of the same length.
 *
 *   mpiexec -n 3 ./pair-latency 20000        (blocking receives)
 *   mpiexec -n 3 ./pair-latency 20000 poll   (MPI_Irecv, then MPI_Test until it completes)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, n = argc > 1 ? atoi(argv[1]) : 20000;
    int poll = argc > 2 && argv[2][0] == 'p';
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || n < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 (or more) pair-latency ITERS [poll]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char b[1];
    for (int round = 0; round < 2; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (int i = 0; rank < 2 && i < n; i++) {
            int peer = 1 - rank;
            if (rank == 0) MPI_Send(b, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            if (poll) {
                MPI_Request r;
                int done = 0;
                MPI_Irecv(b, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r);
                while (!done) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (rank == 1) MPI_Send(b, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
        t = MPI_Wtime() - t;
        if (rank == 0 && round == 1) printf("0-byte one-way latency between ranks 0 and 1%s: %.3f us\n", poll ? " (polling)" : "", t / n / 2 * 1e6);
    }
    MPI_Finalize();
    return 0;
}
