/* A program for another MPI: compiled with MPICH's own mpicc.mpich, it
 * finds its rank, its peers and its node-mates through PMI-1, so it runs
 * under dnrun only because dnrun serves PMI-1 as hydra does. A ring, a
 * reduction and a gather, with checks that can fail; "OK foreign on N
 * ranks" from rank 0. With the argument "abort", rank 1 calls MPI_Abort. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "abort") == 0 && rank == 1) MPI_Abort(MPI_COMM_WORLD, 3);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, got = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (got != prev) errors++;
    long v = rank + 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) errors++;
    int *all = malloc(sizeof(int) * size);
    MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        for (int i = 0; i < size; i++) errors += all[i] != i;
    free(all);
    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("OK foreign on %d ranks\n", size);
    MPI_Finalize();
    return errors ? 1 : 0;
}
