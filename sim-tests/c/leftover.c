/* Operations left unfinished at MPI_Finalize (the program's error, MPI 4.1
 * §11.2.2); finalize must end, warning what it abandons, on every backend:
 * - a receive nothing will ever match, left active;
 * - with the argument "sends": rank 0 also sends rank 1 a rendezvous-sized
 *   message (1 MiB) that rank 1 never receives, once freed with
 *   MPI_Request_free and once left active. A rendezvous send waits for its
 *   receiver, so finalize used to hang on it over UDP and DPDK (and end in
 *   a deadlock error on the simulator). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, x = 0;
    MPI_Request r, s1, s2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &r);
    char *big = calloc(1 << 20, 1);
    if (argc > 1 && strcmp(argv[1], "sends") == 0 && rank == 0 && size > 1) {
        MPI_Isend(big, 1 << 20, MPI_CHAR, 1, 5, MPI_COMM_WORLD, &s1);
        MPI_Request_free(&s1);
        MPI_Isend(big, 1 << 20, MPI_CHAR, 1, 6, MPI_COMM_WORLD, &s2);
    }
    MPI_Finalize();
    free(big);
    if (rank == 0) printf("OK leftover\n");
    return 0;
}
