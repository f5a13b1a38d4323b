/* Completion after an error (MPI 4.1 §3.2.5, §3.7.3-3.7.5): a truncated
 * receive among others in Waitall, Waitsome, Testany, Wait and
 * Request_get_status. The calls that complete several requests return
 * MPI_ERR_IN_STATUS with each status's MPI_ERROR set; every completed
 * handle, failed or not, becomes MPI_REQUEST_NULL, so that a test loop
 * on it ends. "OK c-complete on N ranks" from rank 0 when every rank passed. */
#include <mpi.h>
#include <string.h>
#include <stdio.h>

#include "check.h"

static int class_of(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}

/* Four ints to `peer` with `tag`, not waited for here. */
static void send4(int peer, int tag, MPI_Request *r)
{
    static int data[64][4];
    int *d = data[tag % 64];
    for (int i = 0; i < 4; i++) d[i] = tag * 10 + i;
    MPI_Isend(d, 4, MPI_INT, peer, tag, MPI_COMM_WORLD, r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Pairs (0,1), (2,3), ...; a rank without a partner talks to itself. */
    int peer = rank ^ 1;
    if (peer >= size) peer = rank;
    MPI_Request sends[16];
    int ns = 0;

    /* Waitall: the middle receive is too small for its message. */
    int a[4] = {0}, b[2] = {0}, c[4] = {0};
    MPI_Request rr[3];
    MPI_Status sts[3];
    MPI_Irecv(a, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, &rr[0]);
    MPI_Irecv(b, 2, MPI_INT, peer, 2, MPI_COMM_WORLD, &rr[1]);
    MPI_Irecv(c, 4, MPI_INT, peer, 3, MPI_COMM_WORLD, &rr[2]);
    for (int t = 1; t <= 3; t++) send4(peer, t, &sends[ns++]);
    for (int i = 0; i < 3; i++) sts[i].MPI_ERROR = -1;
    int rc = MPI_Waitall(3, rr, sts);
    CHECK(class_of(rc) == MPI_ERR_IN_STATUS, "Waitall with a truncated receive gave class %d", class_of(rc));
    CHECK(sts[0].MPI_ERROR == MPI_SUCCESS && sts[2].MPI_ERROR == MPI_SUCCESS, "Waitall: the good receives' MPI_ERROR %d %d",
          sts[0].MPI_ERROR, sts[2].MPI_ERROR);
    CHECK(class_of(sts[1].MPI_ERROR) == MPI_ERR_TRUNCATE, "Waitall: the truncated receive's MPI_ERROR is %d",
          sts[1].MPI_ERROR);
    CHECK(sts[1].MPI_SOURCE == peer && sts[1].MPI_TAG == 2, "Waitall: the truncated receive's status says %d/%d",
          sts[1].MPI_SOURCE, sts[1].MPI_TAG);
    CHECK(sts[0].MPI_SOURCE == peer && sts[0].MPI_TAG == 1 && sts[2].MPI_TAG == 3, "Waitall: statuses %d/%d %d",
          sts[0].MPI_SOURCE, sts[0].MPI_TAG, sts[2].MPI_TAG);
    CHECK(a[3] == 13 && c[0] == 30 && c[3] == 33, "Waitall: data of the good receives lost: %d %d", a[3], c[3]);
    CHECK(rr[0] == MPI_REQUEST_NULL && rr[1] == MPI_REQUEST_NULL && rr[2] == MPI_REQUEST_NULL,
          "Waitall left a handle live");

    /* Wait: the failed request is freed, so a test loop on it ends. */
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(b, 2, MPI_INT, peer, 4, MPI_COMM_WORLD, &r);
    send4(peer, 4, &sends[ns++]);
    rc = MPI_Wait(&r, &st);
    CHECK(class_of(rc) == MPI_ERR_TRUNCATE, "Wait on a truncated receive gave class %d", class_of(rc));
    CHECK(r == MPI_REQUEST_NULL, "a failed Wait left its handle live");
    int flag = 0;
    rc = MPI_Test(&r, &flag, &st);
    CHECK(rc == MPI_SUCCESS && flag == 1, "Test after a failed Wait: rc %d flag %d", rc, flag);

    /* Waitsome until everything is in: one truncated among two. */
    int d5[4] = {0};
    MPI_Request rs[2];
    MPI_Irecv(d5, 4, MPI_INT, peer, 5, MPI_COMM_WORLD, &rs[0]);
    MPI_Irecv(b, 2, MPI_INT, peer, 6, MPI_COMM_WORLD, &rs[1]);
    send4(peer, 5, &sends[ns++]);
    send4(peer, 6, &sends[ns++]);
    int seen = 0, truncated = 0, rounds = 0, out = 0, idx[2];
    MPI_Status ss[2];
    while (rounds++ < 100) {
        ss[0].MPI_ERROR = ss[1].MPI_ERROR = -1;
        rc = MPI_Waitsome(2, rs, &out, idx, ss);
        if (out == MPI_UNDEFINED) break;
        CHECK(out >= 1 && out <= 2, "Waitsome outcount %d", out);
        int bad = 0;
        for (int k = 0; k < out && k < 2; k++) bad |= idx[k] == 1;
        for (int k = 0; k < out && k < 2; k++) {
            seen++;
            if (idx[k] == 1) {
                truncated++;
                CHECK(class_of(ss[k].MPI_ERROR) == MPI_ERR_TRUNCATE, "Waitsome: truncated status %d", ss[k].MPI_ERROR);
            } else {
                CHECK(!bad || ss[k].MPI_ERROR == MPI_SUCCESS, "Waitsome: good status %d", ss[k].MPI_ERROR);
                CHECK(d5[2] == 52, "Waitsome: data %d", d5[2]);
            }
        }
        CHECK(class_of(rc) == (bad ? MPI_ERR_IN_STATUS : MPI_SUCCESS), "Waitsome gave class %d (truncated: %d)",
              class_of(rc), bad);
    }
    CHECK(seen == 2 && truncated == 1 && out == MPI_UNDEFINED, "Waitsome saw %d, %d truncated, ended with %d", seen,
          truncated, out);

    /* Testany in a polling loop: the error, the index, a freed handle. */
    MPI_Irecv(b, 2, MPI_INT, peer, 7, MPI_COMM_WORLD, &r);
    send4(peer, 7, &sends[ns++]);
    int index = -1;
    flag = 0;
    for (int polls = 0; !flag && polls < 1000000; polls++) rc = MPI_Testany(1, &r, &index, &flag, &st);
    CHECK(flag == 1 && class_of(rc) == MPI_ERR_TRUNCATE && index == 0 && r == MPI_REQUEST_NULL,
          "Testany: flag %d class %d index %d", flag, class_of(rc), index);

    /* Request_get_status reports the failure and keeps the request;
     * the Wait that completes it reports it again. */
    MPI_Irecv(b, 2, MPI_INT, peer, 8, MPI_COMM_WORLD, &r);
    send4(peer, 8, &sends[ns++]);
    flag = 0;
    for (int polls = 0; !flag && polls < 1000000; polls++) rc = MPI_Request_get_status(r, &flag, &st);
    CHECK(flag == 1 && class_of(rc) == MPI_ERR_TRUNCATE && r != MPI_REQUEST_NULL, "Request_get_status: flag %d class %d",
          flag, class_of(rc));
    rc = MPI_Wait(&r, &st);
    CHECK(class_of(rc) == MPI_ERR_TRUNCATE && r == MPI_REQUEST_NULL, "Wait after Request_get_status: class %d",
          class_of(rc));

    /* A truncated MPI_Recv fills its status: whose message, which tag,
     * the bytes that fit, MPI_ERROR (issue 30; MPICH does the same). */
    send4(peer, 5, &sends[ns++]);
    memset(&st, 0x55, sizeof st);
    rc = MPI_Recv(b, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(class_of(rc) == MPI_ERR_TRUNCATE && st.MPI_SOURCE == peer && st.MPI_TAG == 5 && got == 2 &&
              class_of(st.MPI_ERROR) == MPI_ERR_TRUNCATE,
          "truncated MPI_Recv: class %d, status source %d tag %d count %d error %d", class_of(rc), st.MPI_SOURCE,
          st.MPI_TAG, got, st.MPI_ERROR);

    /* So does a truncated MPI_Sendrecv. */
    send4(peer, 7, &sends[ns++]);
    memset(&st, 0x55, sizeof st);
    rc = MPI_Sendrecv(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, b, 2, MPI_INT, peer, 7, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(class_of(rc) == MPI_ERR_TRUNCATE && st.MPI_SOURCE == peer && st.MPI_TAG == 7 && got == 2,
          "truncated MPI_Sendrecv: class %d, status source %d tag %d count %d", class_of(rc), st.MPI_SOURCE,
          st.MPI_TAG, got);

    /* A truncated receive of a non-contiguous type (staged, then unpacked)
     * still holds the elements that fit, blocking and non-blocking alike:
     * 2 elements of every other int receive 2 of the 4 sent. */
    MPI_Datatype every_other;
    MPI_Type_vector(2, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    for (int nb = 0; nb < 2; nb++) {
        int v[4] = {-1, -1, -1, -1};
        send4(peer, 10 + nb, &sends[ns++]);
        if (nb) {
            MPI_Irecv(v, 1, every_other, peer, 11, MPI_COMM_WORLD, &r);
            rc = MPI_Wait(&r, &st);
        } else {
            rc = MPI_Recv(v, 1, every_other, peer, 10, MPI_COMM_WORLD, &st);
        }
        CHECK(class_of(rc) == MPI_ERR_TRUNCATE && v[0] == (10 + nb) * 10 && v[1] == -1 && v[2] == (10 + nb) * 10 + 1,
              "truncated %s of a vector type: class %d, elements %d %d %d", nb ? "MPI_Irecv" : "MPI_Recv",
              class_of(rc), v[0], v[1], v[2]);
    }
    MPI_Type_free(&every_other);

    /* The sends all completed: nothing failed on their side. */
    MPI_Status sst[16];
    rc = MPI_Waitall(ns, sends, sst);
    CHECK(rc == MPI_SUCCESS, "the sends failed: %d", rc);

    /* A null request's status is empty (MPI 4.1 §3.7.3): MPI_ERROR too is
     * MPI_SUCCESS, whatever the status held before (MPICH's rqstatus). */
    MPI_Status empty;
    int eflag = 0;
    empty.MPI_ERROR = 12345;
    empty.MPI_SOURCE = 7;
    MPI_Request_get_status(MPI_REQUEST_NULL, &eflag, &empty);
    CHECK(eflag && empty.MPI_SOURCE == MPI_ANY_SOURCE && empty.MPI_TAG == MPI_ANY_TAG && empty.MPI_ERROR == MPI_SUCCESS,
          "MPI_Request_get_status(MPI_REQUEST_NULL): flag %d source %d tag %d error %d", eflag, empty.MPI_SOURCE,
          empty.MPI_TAG, empty.MPI_ERROR);
    MPI_Request nul = MPI_REQUEST_NULL;
    empty.MPI_ERROR = 12345;
    MPI_Wait(&nul, &empty);
    CHECK(empty.MPI_ERROR == MPI_SUCCESS, "MPI_Wait(MPI_REQUEST_NULL): error %d", empty.MPI_ERROR);

    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("OK c-complete on %d ranks\n", size);
    MPI_Finalize();
    return total != 0;
}
