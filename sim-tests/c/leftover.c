/* A receive nothing will ever match, left active at MPI_Finalize (the
 * program's error, MPI 4.1 §11.2.2): finalize must not hang on it. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, x = 0;
    MPI_Request r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &r);
    MPI_Finalize();
    if (rank == 0) printf("OK leftover\n");
    return 0;
}
