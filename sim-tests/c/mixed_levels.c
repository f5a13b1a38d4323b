/* Processes of one job may ask for different thread levels (MPI 4.1
 * §11.2.1): even ranks ask for MPI_THREAD_MULTIPLE, odd ones for
 * MPI_THREAD_SINGLE (the rank comes from the launcher's DN_RANK or
 * PMI_RANK: run it with ranks as processes), and all duplicate
 * MPI_COMM_WORLD, with and without info, use the duplicates and free them
 * (issue 47, break 8: the two ways of duplicating did not meet, and the
 * job hung). "OK c-mixed_levels on N ranks" from rank 0 when every rank
 * passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

int main(int argc, char **argv) {
    const char *r = getenv("DN_RANK");
    if (!r) r = getenv("PMI_RANK");
    int want = r && atoi(r) % 2 == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, provided = -1;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == want, "asked for thread level %d, got %d", want, provided);
    MPI_Comm a, b;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    for (int round = 0; round < 3; round++) {
        CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &a) == MPI_SUCCESS, "MPI_Comm_dup");
        CHECK(MPI_Comm_dup_with_info(a, info, &b) == MPI_SUCCESS, "MPI_Comm_dup_with_info");
        int sum = 0, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, b);
        CHECK(sum == size, "allreduce on the duplicate: %d", sum);
        int v = rank, got = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT, (rank + size - 1) % size, 0, a,
                     MPI_STATUS_IGNORE);
        CHECK(got == (rank + size - 1) % size, "ring on the duplicate: %d", got);
        MPI_Comm_free(&b);
        MPI_Comm_free(&a);
    }
    MPI_Info_free(&info);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-mixed_levels on %d ranks\n", size);
    MPI_Finalize();
    return all != 0;
}
