/* A ping-pong between ranks 0 and 1 (the others wait at the barrier):
 * `pingpong [ITERS [BYTES [multiple]]]`, dnbench latency's pattern in C.
 * Prints the one-way latency in microseconds (simulated time on the
 * simulator) and checks every byte of the last message. With "multiple"
 * it asks for MPI_THREAD_MULTIPLE (one thread still makes every call):
 * what that level costs on the latency path. Used by the callgrind
 * comparison of the C ABI with the Rust API (docs/BENCHMARKS.md). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 1000, bytes = argc > 2 ? atoi(argv[2]) : 0;
    int multiple = argc > 3 && strcmp(argv[3], "multiple") == 0, provided = -1;
    if (multiple) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || iters < 1 || bytes < 0) {
        if (rank == 0) fprintf(stderr, "pingpong needs 2 ranks, ITERS >= 1, BYTES >= 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = calloc((size_t)bytes + 1, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            buf[0] = (char)i;
            MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    int ok = bytes == 0 || buf[0] == (char)(iters - 1);
    if (multiple && provided != MPI_THREAD_MULTIPLE) ok = 0;
    if (rank == 0) printf("%s pingpong %d B: %.3f us one way%s\n", ok ? "OK" : "FAIL", bytes, t / iters / 2 * 1e6, multiple ? " (MPI_THREAD_MULTIPLE)" : "");
    free(buf);
    MPI_Finalize();
    return ok ? 0 : 1;
}
