/* Issue 30: a message of a non-contiguous datatype is packed and unpacked
 * one chunk at a time, never whole. Rank 0 sends rank 1 a vector of N ints
 * (every other int of a 2N-int buffer), blocking and then non-blocking;
 * the data must arrive in place, the gaps untouched, and neither rank's
 * peak memory may grow during the transfers by more than a quarter of the
 * message (the old path packed the whole message on the sender and staged
 * it whole on the receiver). Argument: N (default 32M: a 128 MiB message;
 * the UDP transport alone may hold some 20 MiB of datagrams in its window
 * and queue, whatever the message's size). Then a receive of half the
 * message (truncated, nothing written past it) and a send to oneself. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* A field of /proc/self/status in KiB, or -1. */
static long status_kib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) {
            v = atol(line + n);
            break;
        }
    fclose(f);
    return v;
}

/* Reset the peak resident size to the current one (Linux: clear_refs 5). */
static int reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int ok;
    if (!f)
        return 0;
    ok = fputs("5", f) >= 0;
    return (fclose(f) == 0) && ok;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 32L << 20, i, bad = 0;
    int *buf, mode, measured, total = 0;
    long before, peak;
    MPI_Datatype vec;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    buf = malloc(2 * n * sizeof(int));
    CHECK(buf != NULL, "no memory for %ld ints", 2 * n);
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (mode = 0; buf && mode < 2 && size >= 2; mode++) {
        for (i = 0; i < 2 * n; i++)
            buf[i] = rank == 0 ? (int)(i * 3 + mode) : -1;
        MPI_Barrier(MPI_COMM_WORLD);
        measured = reset_peak();
        before = status_kib("VmRSS:");
        if (rank > 1) {
            /* Only ranks 0 and 1 take part. */
        } else if (rank == 0) {
            MPI_Request r;
            if (mode == 0)
                MPI_Send(buf, 1, vec, 1, 5, MPI_COMM_WORLD);
            else {
                MPI_Isend(buf, 1, vec, 1, 5, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
        } else {
            MPI_Status st;
            int count = -1;
            if (mode == 0)
                MPI_Recv(buf, 1, vec, 0, 5, MPI_COMM_WORLD, &st);
            else {
                MPI_Request r;
                MPI_Irecv(buf, 1, vec, 0, 5, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, &st);
            }
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(count == n, "mode %d: received %d ints, not %ld", mode, count, n);
            for (i = 0, bad = 0; i < 2 * n; i++)
                bad += buf[i] != (i % 2 ? -1 : (int)(i * 3 + mode));
            CHECK(bad == 0, "mode %d: %ld ints wrong or written in a gap", mode, bad);
        }
        peak = status_kib("VmHWM:");
        if (measured && before > 0 && peak > 0) {
            CHECK(peak - before < n / 1024, "mode %d: peak memory grew by %ld KiB while a %ld KiB message went", mode,
                  peak - before, n * 4 / 1024);
            if (rank == 1 && mode == 1)
                printf("memory: peak grew by %ld KiB for a %ld KiB message\n", peak - before, n * 4 / 1024);
        } else if (rank == 0 && mode == 0)
            printf("memory: not measured here (no /proc/self/clear_refs)\n");
    }
    /* A receive of half the message: the first half lands, nothing past
     * it is written, and the call says MPI_ERR_TRUNCATE with the count of
     * what fit. Then rank 0 sends the whole to itself. */
    if (buf && size >= 2 && rank < 2) {
        MPI_Datatype half;
        MPI_Type_vector((int)(n / 2), 1, 2, MPI_INT, &half);
        MPI_Type_commit(&half);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        for (i = 0; i < 2 * n; i++)
            buf[i] = rank == 0 ? (int)(i * 5) : -1;
        if (rank == 0) {
            MPI_Send(buf, 1, vec, 1, 6, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            int count = -1, rc = MPI_Recv(buf, 1, half, 0, 6, MPI_COMM_WORLD, &st), eclass = -1;
            MPI_Error_class(rc, &eclass);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(eclass == MPI_ERR_TRUNCATE, "a receive of half the message gave class %d", eclass);
            CHECK(count == n / 2, "the truncated receive counted %d ints, not %ld", count, n / 2);
            for (i = 0, bad = 0; i < 2 * n; i++)
                bad += buf[i] != ((i % 2 || i >= n) ? -1 : (int)(i * 5));
            CHECK(bad == 0, "truncated: %ld ints wrong, or written past the receive", bad);
        }
        if (rank == 0) {
            int *copy = malloc(2 * n * sizeof(int));
            MPI_Request r;
            CHECK(copy != NULL, "no memory for the copy");
            if (copy) {
                for (i = 0; i < 2 * n; i++)
                    copy[i] = -1;
                MPI_Isend(buf, 1, vec, 0, 7, MPI_COMM_WORLD, &r);
                MPI_Recv(copy, 1, vec, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                for (i = 0, bad = 0; i < 2 * n; i++)
                    bad += copy[i] != (i % 2 ? -1 : (int)(i * 5));
                CHECK(bad == 0, "to itself: %ld ints wrong", bad);
                free(copy);
            }
        }
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        MPI_Type_free(&half);
    }
    MPI_Type_free(&vec);
    free(buf);
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf("OK bigtype\n");
    MPI_Finalize();
    return total != 0;
}
