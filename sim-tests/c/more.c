/* Persistent requests, cancellation, attributes and names, and the
 * non-blocking collectives; checks that can fail, "OK c-more on N ranks"
 * from rank 0 when every rank passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* Persistent requests: the same pair started three times. */
    int out = 0, in = -1;
    MPI_Request pr[2];
    MPI_Recv_init(&in, 1, MPI_INT, prev, 4, MPI_COMM_WORLD, &pr[0]);
    MPI_Send_init(&out, 1, MPI_INT, next, 4, MPI_COMM_WORLD, &pr[1]);
    for (int round = 0; round < 3; round++) {
        out = rank * 10 + round;
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        CHECK(in == prev * 10 + round, "persistent round %d got %d", round, in);
        CHECK(pr[0] != MPI_REQUEST_NULL && pr[1] != MPI_REQUEST_NULL, "a persistent handle was freed by Waitall");
    }
    /* An inactive persistent request completes at once; Waitany ignores it. */
    MPI_Status st;
    MPI_Wait(&pr[0], &st);
    /* An inactive request completes at once with an empty status (§3.9). */
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "inactive wait status %d", st.MPI_SOURCE);
    int idx = 5;
    MPI_Waitany(2, pr, &idx, &st);
    CHECK(idx == MPI_UNDEFINED, "waitany over inactive requests gave %d", idx);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Start(&pr[0]);
    int rc = MPI_Start(&pr[0]);
    CHECK(rc == MPI_ERR_REQUEST, "starting an active request gave %d", rc);
    MPI_Cancel(&pr[0]);
    MPI_Wait(&pr[0], &st);
    int flag = 0;
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1, "the persistent receive was not cancelled");
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    CHECK(pr[0] == MPI_REQUEST_NULL, "freed handle not reset");
    /* MPI_REQUEST_NULL and MPI_ERRHANDLER_NULL are nothing to free. */
    CHECK(MPI_Request_free(&pr[0]) == MPI_ERR_REQUEST, "MPI_REQUEST_NULL freed");
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    CHECK(MPI_Errhandler_free(&eh) == MPI_ERR_ERRHANDLER, "MPI_ERRHANDLER_NULL freed");

    /* Cancel a receive nothing matches. */
    MPI_Request r;
    MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1 && r == MPI_REQUEST_NULL, "cancelled receive");

    /* Datatype queries on the predefined types. */
    MPI_Aint lb = -1, ext = -1;
    MPI_Type_get_extent(MPI_DOUBLE, &lb, &ext);
    CHECK(lb == 0 && ext == 8, "extent of MPI_DOUBLE %ld/%ld", (long)lb, (long)ext);
    MPI_Count clb = -1, cext = -1, csize = -1;
    MPI_Type_get_true_extent_c(MPI_SHORT, &clb, &cext);
    MPI_Type_size_c(MPI_2INT, &csize);
    CHECK(clb == 0 && cext == 2 && csize == 8, "true extent %lld, size %lld", (long long)cext, (long long)csize);
    short sh[3] = {1, 2, 3}, sh2[3] = {0, 0, 0};
    MPI_Sendrecv(sh, 3, MPI_SHORT, rank, 8, sh2, 3, MPI_SHORT, rank, 8, MPI_COMM_WORLD, &st);
    CHECK(sh2[2] == 3, "sendrecv to self");
    /* Halves to MPI_PROC_NULL (§3.10): their datatypes are not looked at;
     * a receive from it reports MPI_PROC_NULL's status. */
    int rc_null = MPI_Sendrecv(NULL, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 8, sh2, 3, MPI_SHORT, MPI_PROC_NULL, 8,
                               MPI_COMM_WORLD, &st);
    CHECK(rc_null == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG,
          "sendrecv with MPI_PROC_NULL on both sides: %d, source %d", rc_null, st.MPI_SOURCE);
    MPI_Sendrecv(sh, 3, MPI_SHORT, rank, 8, sh2, 3, MPI_SHORT, rank, 8, MPI_COMM_WORLD, &st);
    MPI_Count cc = -1;
    MPI_Get_count_c(&st, MPI_SHORT, &cc);
    int ec = -1, odd = -1;
    MPI_Get_elements(&st, MPI_SHORT, &ec);
    MPI_Get_count(&st, MPI_INT, &odd);
    CHECK(cc == 3 && ec == 3 && odd == MPI_UNDEFINED, "counts %lld %d %d", (long long)cc, ec, odd);

    /* Attributes and names. */
    int *ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    CHECK(flag && ub && *ub >= 32767, "MPI_TAG_UB");
    int *usize = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
    CHECK(flag && usize && *usize == size, "MPI_UNIVERSE_SIZE");
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, 12345, &ub, &flag);
    CHECK(rc == MPI_ERR_KEYVAL, "unknown keyval gave %d", rc);
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world's name '%s'", name);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_name(dup, "mine");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "mine") == 0, "dup's name '%s'", name);

    /* Non-blocking collectives, overlapped with point-to-point. */
    MPI_Request c[4];
    int bc = rank == size - 1 ? 77 : 0;
    long sum[2] = {rank, 1};
    double mine = rank + 0.5, red = 0;
    MPI_Ibarrier(dup, &c[0]);
    MPI_Ibcast(&bc, 1, MPI_INT, size - 1, dup, &c[1]);
    MPI_Iallreduce(MPI_IN_PLACE, sum, 2, MPI_LONG, MPI_SUM, dup, &c[2]);
    MPI_Ireduce(&mine, &red, 1, MPI_DOUBLE, MPI_MAX, size > 1 ? 1 : 0, dup, &c[3]);
    MPI_Waitall(4, c, MPI_STATUSES_IGNORE);
    CHECK(bc == 77, "ibcast %d", bc);
    CHECK(sum[0] == (long)size * (size - 1) / 2 && sum[1] == size, "iallreduce");
    if (rank == (size > 1 ? 1 : 0)) CHECK(red == size - 0.5, "ireduce %g", red);
    MPI_Comm_free(&dup);

    /* Zero counts everywhere, from a root other than 0. */
    int zr = size - 1, dummy = 5, other = 6;
    MPI_Bcast(&dummy, 0, MPI_INT, zr, MPI_COMM_WORLD);
    MPI_Allreduce(&dummy, &other, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&dummy, &other, 0, MPI_DOUBLE, MPI_MAX, zr, MPI_COMM_WORLD);
    MPI_Gather(&dummy, 0, MPI_INT, &other, 0, MPI_INT, zr, MPI_COMM_WORLD);
    MPI_Alltoall(&dummy, 0, MPI_INT, &other, 0, MPI_INT, MPI_COMM_WORLD);
    CHECK(dummy == 5 && other == 6, "a zero-count collective wrote %d/%d", dummy, other);

    /* Polling loops: Iprobe until a message is there, Testall until done. */
    int token = rank, got = -1;
    MPI_Request pq[2];
    MPI_Isend(&token, 1, MPI_INT, next, 21, MPI_COMM_WORLD, &pq[0]);
    flag = 0;
    while (!flag) MPI_Iprobe(prev, 21, MPI_COMM_WORLD, &flag, &st);
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 21, "iprobe status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    MPI_Irecv(&got, 1, MPI_INT, prev, 21, MPI_COMM_WORLD, &pq[1]);
    flag = 0;
    while (!flag) MPI_Testall(2, pq, &flag, MPI_STATUSES_IGNORE);
    CHECK(got == prev && pq[0] == MPI_REQUEST_NULL && pq[1] == MPI_REQUEST_NULL, "polled exchange %d", got);

    /* Non-blocking send-receive around the ring, and its in-place form,
     * polled; then with MPI_PROC_NULL on either side. */
    int sv[3] = {rank, rank + 1, rank + 2}, rv[3] = {-1, -1, -1};
    MPI_Request q;
    MPI_Isendrecv(sv, 3, MPI_INT, next, 31, rv, 3, MPI_INT, prev, 31, MPI_COMM_WORLD, &q);
    flag = 0;
    while (!flag) MPI_Test(&q, &flag, &st);
    CHECK(rv[2] == prev + 2 && st.MPI_SOURCE == prev && st.MPI_TAG == 31, "isendrecv %d from %d", rv[2], st.MPI_SOURCE);
    int cnt = -1;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 3 && q == MPI_REQUEST_NULL, "isendrecv count %d", cnt);
    int ring = rank;
    MPI_Isendrecv_replace(&ring, 1, MPI_INT, next, 32, prev, 32, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, &st);
    CHECK(ring == prev && st.MPI_SOURCE == prev, "isendrecv_replace %d", ring);
    rv[0] = -7;
    MPI_Isendrecv(sv, 3, MPI_INT, MPI_PROC_NULL, 33, rv, 3, MPI_INT, MPI_PROC_NULL, 33, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, &st);
    CHECK(rv[0] == -7 && st.MPI_SOURCE == MPI_PROC_NULL, "isendrecv with MPI_PROC_NULL");
    /* Send to the next, receive from no one; then the reverse. */
    MPI_Isendrecv(sv, 1, MPI_INT, next, 34, rv, 1, MPI_INT, MPI_PROC_NULL, 34, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "half-null isendrecv status %d", st.MPI_SOURCE);
    MPI_Isendrecv(sv, 1, MPI_INT, MPI_PROC_NULL, 34, rv, 1, MPI_INT, prev, 34, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, &st);
    CHECK(rv[0] == prev && st.MPI_SOURCE == prev, "other half-null isendrecv %d", rv[0]);
    rc = MPI_Isendrecv(sv, 1, MPI_INT, next, -3, rv, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, &q);
    CHECK(rc == MPI_ERR_TAG, "a negative send tag gave %d", rc);
    /* A receive refuses a negative tag before it waits: a predefined type
     * (the fast path), and from MPI_PROC_NULL. */
    rc = MPI_Recv(rv, 1, MPI_INT, prev, -3, MPI_COMM_WORLD, &st);
    CHECK(rc == MPI_ERR_TAG, "a negative receive tag gave %d", rc);
    rc = MPI_Recv(rv, 1, MPI_INT, MPI_PROC_NULL, -3, MPI_COMM_WORLD, &st);
    CHECK(rc == MPI_ERR_TAG, "a negative receive tag from MPI_PROC_NULL gave %d", rc);

    /* MPI_Request_get_status* observe completion without freeing: the
     * wait after them reports the same status. Then null requests. */
    int a = rank, b = -1, outc = -5, inds[2];
    idx = -5;
    MPI_Request g[2];
    MPI_Status sts[2];
    MPI_Irecv(&b, 1, MPI_INT, prev, 41, MPI_COMM_WORLD, &g[1]);
    MPI_Isend(&a, 1, MPI_INT, next, 41, MPI_COMM_WORLD, &g[0]);
    flag = 0;
    while (!flag) MPI_Request_get_status_all(2, g, &flag, MPI_STATUSES_IGNORE);
    CHECK(g[0] != MPI_REQUEST_NULL && g[1] != MPI_REQUEST_NULL && b == prev, "get_status_all freed or missed %d", b);
    MPI_Request_get_status(g[1], &flag, &st);
    CHECK(flag && st.MPI_SOURCE == prev && st.MPI_TAG == 41, "get_status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    MPI_Request_get_status_any(2, g, &idx, &flag, &st);
    CHECK(flag && idx == 0, "get_status_any %d", idx);
    MPI_Request_get_status_some(2, g, &outc, inds, sts);
    CHECK(outc == 2 && sts[1].MPI_SOURCE == prev, "get_status_some %d", outc);
    MPI_Waitall(2, g, sts);
    CHECK(sts[1].MPI_SOURCE == prev && g[1] == MPI_REQUEST_NULL, "wait after get_status %d", sts[1].MPI_SOURCE);
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "null request's status %d", st.MPI_SOURCE);
    /* No active request among them: the empty status, its error included
     * (mpi4py's test_request checks it). */
    st.MPI_ERROR = MPI_ERR_OTHER;
    MPI_Request_get_status_any(2, g, &idx, &flag, &st);
    CHECK(flag && idx == MPI_UNDEFINED && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_ERROR == MPI_SUCCESS,
          "get_status_any of null requests: %d %d %d", idx, st.MPI_SOURCE, st.MPI_ERROR);
    MPI_Request_get_status_any(2, g, &idx, &flag, &st);
    CHECK(flag && idx == MPI_UNDEFINED, "get_status_any over null requests %d", idx);
    MPI_Request_get_status_some(2, g, &outc, inds, sts);
    CHECK(outc == MPI_UNDEFINED, "get_status_some over null requests %d", outc);
    /* Cancelling a send (§3.8.4): one no receive has matched is withdrawn
     * and never received; one already matched completes as usual. */
    MPI_Issend(&a, 1, MPI_INT, next, 42, MPI_COMM_WORLD, &g[0]);
    rc = MPI_Cancel(&g[0]);
    CHECK(rc == MPI_SUCCESS, "cancel of a send gave %d", rc);
    MPI_Wait(&g[0], &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1, "an unmatched send was not cancelled");
    int theirs = -1;
    MPI_Sendrecv(&flag, 1, MPI_INT, next, 43, &theirs, 1, MPI_INT, prev, 43, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (!theirs) MPI_Recv(&b, 1, MPI_INT, prev, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Iprobe(prev, 42, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "a cancelled send's message arrived");
    b = -1;
    MPI_Irecv(&b, 1, MPI_INT, prev, 44, MPI_COMM_WORLD, &g[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Issend(&a, 1, MPI_INT, next, 44, MPI_COMM_WORLD, &g[0]);
    MPI_Wait(&g[1], MPI_STATUS_IGNORE);
    MPI_Cancel(&g[0]);
    MPI_Wait(&g[0], &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag && b == prev, "a matched send reported cancelled (%d); received %d", flag, b);

    /* Buffered sends complete at their start, but their message can still
     * be withdrawn: an Ibsend's, and a started Bsend_init's, which then
     * starts again and is received. The withdrawn message's space in the
     * attached buffer (room for one) is free at once. */
    {
        int bsz = 64 * (int)sizeof(int) + MPI_BSEND_OVERHEAD, big[64], got[64];
        char *bbuf = malloc(bsz);
        for (int i = 0; i < 64; i++) big[i] = i;
        MPI_Buffer_attach(bbuf, bsz);
        MPI_Ibsend(big, 64, MPI_INT, next, 45, MPI_COMM_WORLD, &g[0]);
        CHECK(MPI_Cancel(&g[0]) == MPI_SUCCESS, "cancel of an Ibsend");
        MPI_Wait(&g[0], &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag == 1, "an unmatched Ibsend was not cancelled");
        MPI_Request pb;
        MPI_Bsend_init(big, 64, MPI_INT, next, 46, MPI_COMM_WORLD, &pb);
        CHECK(MPI_Start(&pb) == MPI_SUCCESS, "no room after a cancelled Ibsend");
        MPI_Cancel(&pb);
        MPI_Wait(&pb, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag == 1 && pb != MPI_REQUEST_NULL, "an unmatched persistent buffered send was not cancelled");
        MPI_Barrier(MPI_COMM_WORLD);
        big[0] = 99;
        CHECK(MPI_Start(&pb) == MPI_SUCCESS, "a cancelled Bsend_init started again");
        MPI_Wait(&pb, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(!flag, "a buffered send left alone reported cancelled");
        MPI_Recv(got, 64, MPI_INT, prev, 46, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got[0] == 99 && got[63] == 63, "the buffered send started again: %d %d", got[0], got[63]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Iprobe(prev, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag, "a withdrawn buffered message arrived (tag %d)", st.MPI_TAG);
        MPI_Request_free(&pb);
        void *back;
        MPI_Buffer_detach(&back, &bsz);
        free(back);
    }

    /* The program raises an error through the handler (MPI_ERRORS_RETURN
     * here: the call succeeds), and names a predefined datatype. */
    rc = MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_ROOT);
    CHECK(rc == MPI_SUCCESS, "call_errhandler under MPI_ERRORS_RETURN gave %d", rc);
    rc = MPI_Comm_call_errhandler(MPI_COMM_NULL, MPI_ERR_ROOT);
    CHECK(rc == MPI_ERR_COMM, "call_errhandler on MPI_COMM_NULL gave %d", rc);
    char tname[MPI_MAX_OBJECT_NAME];
    int tlen = 0;
    MPI_Type_set_name(MPI_INT, "my int");
    MPI_Type_get_name(MPI_INT, tname, &tlen);
    CHECK(strcmp(tname, "my int") == 0 && tlen == 6, "renamed MPI_INT is '%s'", tname);
    MPI_Type_set_name(MPI_INT, "MPI_INT");

    /* Filling in a status, as a generalized request or a layered library
     * does: the counts read back through Get_count/Get_elements. */
    MPI_Status made;
    MPI_Status_set_source(&made, 5);
    MPI_Status_set_tag(&made, 6);
    MPI_Status_set_error(&made, MPI_ERR_OTHER);
    MPI_Status_set_elements(&made, MPI_DOUBLE, 7);
    MPI_Status_set_cancelled(&made, 1);
    int src = -1, tg = -1, er = -1, el = -1;
    MPI_Status_get_source(&made, &src);
    MPI_Status_get_tag(&made, &tg);
    MPI_Status_get_error(&made, &er);
    MPI_Get_count(&made, MPI_DOUBLE, &el);
    MPI_Test_cancelled(&made, &flag);
    CHECK(src == 5 && tg == 6 && er == MPI_ERR_OTHER && el == 7 && flag, "status fields %d %d %d %d %d", src, tg, er, el, flag);
    /* The getters only read: a status in read-only storage will do. */
    static const MPI_Status fixed = {.MPI_SOURCE = 3, .MPI_TAG = 4, .MPI_ERROR = MPI_SUCCESS};
    MPI_Status_get_source(&fixed, &src);
    MPI_Status_get_tag(&fixed, &tg);
    MPI_Status_get_error(&fixed, &er);
    CHECK(src == 3 && tg == 4 && er == MPI_SUCCESS, "a const status read %d %d %d", src, tg, er);
    CHECK(MPI_Status_get_tag(NULL, &tg) == MPI_ERR_ARG, "a null status accepted");
    MPI_Count bytes = -1;
    MPI_Status_set_elements_c(&made, MPI_2INT, 3);
    MPI_Get_elements_c(&made, MPI_INT, &bytes);
    CHECK(bytes == 3, "elements of 3 basic ints %lld", (long long)bytes);
    MPI_Get_count(&made, MPI_2INT, &el);
    CHECK(el == MPI_UNDEFINED, "3 ints as MPI_2INT pairs gave %d", el);
    rc = MPI_Status_set_elements(&made, MPI_INT, -1);
    CHECK(rc == MPI_ERR_COUNT, "a negative element count gave %d", rc);
    rc = MPI_Status_set_tag(MPI_STATUS_IGNORE, 1);
    CHECK(rc == MPI_ERR_ARG, "setting MPI_STATUS_IGNORE gave %d", rc);

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("OK c-more on %d ranks\n", size);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
