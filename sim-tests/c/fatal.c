/* The default error handler, MPI_ERRORS_ARE_FATAL: rank 1 sends to a rank
 * that does not exist, and the job ends with an error naming the rank and
 * the call. Rank 0 waits in a receive that never completes. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, x = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1)
        MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
    else
        MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("not reached on rank %d\n", rank);
    MPI_Finalize();
    return 0;
}
