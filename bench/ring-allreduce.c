/*
 * The cluster-scale benchmark of issue 28, for any MPI library:
 *   ring-allreduce ITERS BYTES
 * Each iteration sends BYTES to the next rank and receives BYTES from the
 * previous one (MPI_Sendrecv), then sums 8 doubles over all ranks
 * (MPI_Allreduce). Rank 0 prints the MPI_Wtime of the loop and a checksum,
 * so two runs of a deterministic simulator can be compared line for line:
 *   ranks N iters I bytes B: T us, checksum C
 * Built with our mpicc and with SimGrid's smpicc by
 * scripts/bench-sim-scale.sh.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    int bytes = argc > 2 ? atoi(argv[2]) : 1024;
    if (iters < 0 || bytes < 0) {
        if (rank == 0) fprintf(stderr, "usage: ring-allreduce ITERS BYTES (both >= 0)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *out = malloc(bytes ? bytes : 1), *in = malloc(bytes ? bytes : 1);
    if (!out || !in) MPI_Abort(MPI_COMM_WORLD, 3);
    memset(out, rank & 0xff, bytes);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double mine[8], sum[8] = {0};
    long check = 0;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        MPI_Sendrecv(out, bytes, MPI_CHAR, next, 0, in, bytes, MPI_CHAR, prev, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (bytes > 0 && (unsigned char)in[0] != (prev & 0xff)) {
            fprintf(stderr, "rank %d: iteration %d received %d from %d\n", rank, i, in[0], prev);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int k = 0; k < 8; k++) mine[k] = rank + k + i;
        MPI_Allreduce(mine, sum, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        check += (long)sum[0];
    }
    double t1 = MPI_Wtime();
    if (rank == 0)
        printf("ranks %d iters %d bytes %d: %.6f us, checksum %ld\n", size, iters, bytes, (t1 - t0) * 1e6, check);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
