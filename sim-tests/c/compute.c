/* Computation between MPI calls (issue 28): the program computes for a
 * while between two MPI_Wtime calls and reports how long that took in
 * simulated time, and how much CPU time the loop itself used on this
 * machine. With dnrun's default (--compute none) computation costs no
 * simulated time; with --compute measured[:SCALE] it costs its measured
 * CPU time times the scale. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#include "check.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double t0 = MPI_Wtime();
    double c0 = cpu_now();
    volatile double x = 0;
    for (long i = 0; i < 20 * 1000 * 1000; i++) x += i * 0.5;
    double c1 = cpu_now();
    double t1 = MPI_Wtime();
    CHECK(t1 >= t0, "time went backwards");
    MPI_Barrier(MPI_COMM_WORLD);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("OK c-compute on %d ranks: burst %.6f us simulated, loop %.6f us CPU\n", size, (t1 - t0) * 1e6,
               (c1 - c0) * 1e6);
    MPI_Finalize();
    return all != 0;
}
