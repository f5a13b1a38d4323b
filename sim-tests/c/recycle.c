/* Handles are recycled: creating and freeing a million user-defined
 * operations, datatypes, communicators and requests leaves memory where
 * it was after the first hundred thousand (issue 47). The resident set is read from
 * /proc/self/statm after 100,000 rounds and after N (default 1,000,000);
 * it may not grow by more than 2 MiB in between (a slot of 8 bytes kept
 * per freed communicator grew it by 7 MiB). "OK c-recycle on N
 * ranks" from rank 0 when every rank passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

static void noop(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)in; (void)inout; (void)len; (void)dt;
}

static long resident_kib(void) {
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = -1;
    fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long rounds = argc > 1 ? atol(argv[1]) : 1000000;
    /* Which kinds (bits: 1 operations, 2 datatypes, 4 communicators,
     * 8 requests); all by default. */
    int kinds = argc > 2 ? atoi(argv[2]) : 15;
    long warm = rounds / 10, at_warm = 0;
    for (long i = 0; i < rounds; i++) {
        if (i == warm) at_warm = resident_kib();
        if (kinds & 1) {
        MPI_Op op;
        CHECK(MPI_Op_create(noop, 1, &op) == MPI_SUCCESS, "Op_create %ld", i);
        MPI_Op_free(&op);
        }
        if (kinds & 2) {
        MPI_Datatype t;
        CHECK(MPI_Type_vector(2, 1, 3, MPI_INT, &t) == MPI_SUCCESS, "Type_vector %ld", i);
        MPI_Type_commit(&t);
        MPI_Type_free(&t);
        }
        if (kinds & 4) {
        MPI_Comm c;
        CHECK(MPI_Comm_dup(MPI_COMM_SELF, &c) == MPI_SUCCESS, "Comm_dup %ld", i);
        MPI_Comm_free(&c);
        }
        if (kinds & 8) {
        MPI_Request r[2];
        int x = (int)i, y = -1;
        MPI_Irecv(&y, 1, MPI_INT, 0, 0, MPI_COMM_SELF, &r[0]);
        MPI_Isend(&x, 1, MPI_INT, 0, 0, MPI_COMM_SELF, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        CHECK(y == (int)i, "round %ld received %d", i, y);
        }
        if (errors) break;
    }
    long at_end = resident_kib();
    CHECK(at_warm > 0 && at_end - at_warm <= 2 * 1024,
          "resident set grew from %ld KiB to %ld KiB between round %ld and %ld", at_warm, at_end, warm, rounds);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-recycle on %d ranks (%ld rounds, %ld -> %ld KiB)\n", size, rounds, at_warm, at_end);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
