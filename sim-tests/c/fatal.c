/* The default error handler, MPI_ERRORS_ARE_FATAL: rank 1 sends to a rank
 * that does not exist, and the job ends with an error naming the rank and
 * the call. Rank 0 waits in a receive that never completes.
 * With the argument "abort CODE", the last rank calls MPI_Abort(CODE). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, x = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 2 && strcmp(argv[1], "abort") == 0) {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (rank == size - 1) MPI_Abort(MPI_COMM_WORLD, atoi(argv[2]));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 1)
        MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
    else
        MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("not reached on rank %d\n", rank);
    MPI_Finalize();
    return 0;
}
