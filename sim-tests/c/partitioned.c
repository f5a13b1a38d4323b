/* Partitioned communication (MPI 4.1 chapter 4) around a ring: requests
 * paired in the order of their initializations even when started in
 * another order, partitions marked ready one at a time, by range and by
 * list, Parrived polled until the data is there (a strided datatype
 * included), partitioned messages kept apart from ordinary ones with the
 * same tag, and the errors. "OK c-partitioned on N ranks" from rank 0
 * when every rank passed. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { PARTS = 4, COUNT = 3, N = PARTS * COUNT };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc > 1 && strcmp(argv[1], "unsent") == 0) {
        /* The program's error: a send started with a partition never
         * marked ready. MPI_Finalize must say so. */
        double x[2] = {0, 0};
        MPI_Request u;
        MPI_Psend_init(x, 2, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &u);
        MPI_Start(&u);
        MPI_Pready(0, u);
        MPI_Finalize();
        return 0;
    }
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* Two sends to the same peer with the same tag, and their two
     * receives, initialized in the same order on both sides. */
    int a[N], b[N], ra[N], rb[N];
    MPI_Request s[2], r[2];
    CHECK(MPI_Psend_init(a, PARTS, COUNT, MPI_INT, next, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &s[0]) == MPI_SUCCESS, "Psend_init a");
    MPI_Psend_init(b, PARTS, COUNT, MPI_INT, next, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &s[1]);
    CHECK(MPI_Precv_init(ra, PARTS, COUNT, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]) == MPI_SUCCESS, "Precv_init a");
    MPI_Precv_init(rb, PARTS, COUNT, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]);
    int flag = 0;
    CHECK(MPI_Parrived(r[0], 0, &flag) == MPI_SUCCESS && flag, "Parrived on an inactive receive");
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            a[i] = 1000 * rank + 10 * round + i;
            b[i] = -a[i];
            ra[i] = rb[i] = 7;
        }
        MPI_Startall(2, r);
        /* Started in the other order, partitions marked in reverse. */
        MPI_Start(&s[1]);
        MPI_Start(&s[0]);
        CHECK(MPI_Wait(&s[0], MPI_STATUS_IGNORE) == MPI_ERR_REQUEST && s[0] != MPI_REQUEST_NULL, "a wait on unready partitions was not refused");
        MPI_Test(&s[0], &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "a send with unready partitions tested complete");
        /* Both sends wait for partitions: active, not complete, and no
         * wait for any of them can end (not "no active request"). */
        int idx = -2;
        CHECK(MPI_Testany(2, s, &idx, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag && idx == MPI_UNDEFINED,
              "Testany of sends with unready partitions: flag %d, index %d", flag, idx);
        CHECK(MPI_Waitany(2, s, &idx, MPI_STATUS_IGNORE) == MPI_ERR_REQUEST, "a Waitany only unready partitions could end was not refused");
        CHECK(MPI_Request_free(&s[0]) == MPI_ERR_REQUEST, "a started send with unready partitions freed");
        CHECK(MPI_Pready(PARTS, s[1]) == MPI_ERR_ARG, "partition %d accepted", PARTS);
        MPI_Pready(3, s[1]);
        CHECK(MPI_Pready(3, s[1]) == MPI_ERR_ARG, "a partition made ready twice");
        MPI_Pready_range(0, 2, s[1]);
        /* A refused list or range marks none of its partitions: the
         * corrected call then succeeds. */
        int bad_list[] = {1, 9}, twice[] = {0, 0};
        CHECK(MPI_Pready_list(2, bad_list, s[0]) == MPI_ERR_ARG, "partition 9 accepted in a list");
        CHECK(MPI_Pready_list(2, twice, s[0]) == MPI_ERR_ARG, "a partition twice in one list accepted");
        CHECK(MPI_Pready_range(2, PARTS, s[0]) == MPI_ERR_ARG, "a range past the end accepted");
        int list[] = {2, 0, 3, 1};
        CHECK(MPI_Pready_list(4, list, s[0]) == MPI_SUCCESS, "a list after refused ones (marked in part?)");
        CHECK(MPI_Pready(0, r[0]) == MPI_ERR_REQUEST, "Pready on a receive accepted");
        /* Poll the receives' partitions: their data is in place once
         * they have arrived, before the wait. */
        for (int p = 0; p < PARTS; p++) {
            int got = 0;
            while (!got) MPI_Parrived(r[0], p, &got);
            CHECK(ra[p * COUNT] == 1000 * prev + 10 * round + p * COUNT, "round %d partition %d of a: %d", round, p, ra[p * COUNT]);
        }
        MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
        MPI_Status st[2];
        CHECK(MPI_Waitall(2, r, st) == MPI_SUCCESS, "Waitall of the receives");
        CHECK(st[0].MPI_SOURCE == prev && st[0].MPI_TAG == 5, "status %d/%d", st[0].MPI_SOURCE, st[0].MPI_TAG);
        for (int i = 0; i < N; i++) {
            CHECK(ra[i] == 1000 * prev + 10 * round + i, "round %d a[%d] = %d", round, i, ra[i]);
            CHECK(rb[i] == -(1000 * prev + 10 * round + i), "round %d b[%d] = %d (paired by start order?)", round, i, rb[i]);
        }
    }
    for (int i = 0; i < 2; i++) {
        MPI_Request_free(&s[i]);
        MPI_Request_free(&r[i]);
    }

    /* A strided receive (every other double, partition by partition), and
     * an ordinary message with the same tag, which only an ordinary
     * receive takes. */
    MPI_Datatype every_other, part_t;
    MPI_Type_vector(COUNT, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_create_resized(every_other, 0, 2 * COUNT * sizeof(double), &part_t);
    MPI_Type_commit(&part_t);
    double out[PARTS * COUNT], in[2 * PARTS * COUNT];
    for (int i = 0; i < PARTS * COUNT; i++) out[i] = rank + 0.5 * i;
    for (int i = 0; i < 2 * PARTS * COUNT; i++) in[i] = -1;
    MPI_Request ps, pr, plain;
    int ord_out = 4242 + rank, ord_in = 0;
    MPI_Precv_init(in, PARTS, 1, part_t, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
    MPI_Start(&pr);
    MPI_Irecv(&ord_in, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &plain);
    MPI_Send(&ord_out, 1, MPI_INT, next, 9, MPI_COMM_WORLD);
    MPI_Psend_init(out, PARTS, COUNT, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &ps);
    MPI_Start(&ps);
    MPI_Pready_range(0, PARTS - 1, ps);
    MPI_Wait(&plain, MPI_STATUS_IGNORE);
    CHECK(ord_in == 4242 + prev, "the ordinary message went to %d", ord_in);
    int got = 0;
    while (!got) MPI_Parrived(pr, PARTS - 1, &got);
    for (int i = 0; i < PARTS * COUNT; i++) {
        CHECK(in[2 * i] == prev + 0.5 * i && in[2 * i + 1] == -1, "strided [%d] = %g, gap %g", i, in[2 * i], in[2 * i + 1]);
    }
    MPI_Wait(&ps, MPI_STATUS_IGNORE);
    MPI_Wait(&pr, MPI_STATUS_IGNORE);
    MPI_Request_free(&ps);
    MPI_Request_free(&pr);
    MPI_Type_free(&part_t);
    MPI_Type_free(&every_other);

    MPI_Request bad;
    CHECK(MPI_Psend_init(out, 1, 1, MPI_DOUBLE, next, 1 << 20, MPI_COMM_WORLD, MPI_INFO_NULL, &bad) == MPI_ERR_TAG, "tag 2^20 accepted");
    CHECK(MPI_Precv_init(in, 1, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &bad) == MPI_ERR_RANK, "MPI_ANY_SOURCE accepted");

    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-partitioned on %d ranks\n", size);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
