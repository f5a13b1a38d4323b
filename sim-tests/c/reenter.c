/* A user-defined operation that calls MPI beyond its datatype queries and
 * MPI_Abort, which §6.9.5 does not allow:
 * the job ends with a message saying so rather than deadlocking on the
 * library's own lock. */
#include <mpi.h>
#include <stdio.h>

static void calls_mpi(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int r;
    (void)in, (void)inout, (void)len, (void)dt;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
}

int main(int argc, char **argv)
{
    int x = 1, y = 0;
    MPI_Op op;
    MPI_Init(&argc, &argv);
    MPI_Op_create(calls_mpi, 1, &op);
    MPI_Reduce_local(&x, &y, 1, MPI_INT, op);
    printf("not reached\n");
    MPI_Finalize();
    return 0;
}
