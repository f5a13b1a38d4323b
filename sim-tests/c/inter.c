/* Intercommunicators (MPI 4.1 §7.6) between the even and the odd ranks
 * of MPI_COMM_WORLD: creation, the remote group, point-to-point across,
 * the blocking collectives with MPI_ROOT/MPI_PROC_NULL roots (§6.2.2),
 * Reduce_scatter(_block), Alltoallw, split, Comm_create, Intercomm_create_from_groups, merge
 * and dup, and the operations refused with an error; "OK c-inter on
 * N ranks" from rank 0 when every rank passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) {
        if (rank == 0) printf("OK c-inter on %d ranks\n", size);
        MPI_Finalize();
        return 0;
    }
    int color = rank % 2, n0 = (size + 1) / 2, n1 = size / 2;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    int lrank, lsize;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    /* The leaders are world ranks 0 (evens) and 1 (odds). */
    int rc = MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color ? 0 : 1, 77, &inter);
    CHECK(rc == MPI_SUCCESS, "Intercomm_create rc %d", rc);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int flag = 0, rsize = -1, isize = -1, irank = -1, gsize = -1;
    MPI_Comm_test_inter(inter, &flag);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &isize);
    MPI_Comm_rank(inter, &irank);
    CHECK(flag == 1 && rsize == (color ? n0 : n1) && isize == lsize && irank == lrank,
          "inter flag %d remote size %d size %d rank %d", flag, rsize, isize, irank);
    MPI_Group rg;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Group_size(rg, &gsize);
    CHECK(gsize == rsize, "remote group size %d", gsize);
    MPI_Group_free(&rg);
    MPI_Comm_test_inter(local, &flag);
    CHECK(flag == 0, "an intracommunicator tests as inter");

    /* Point-to-point across: local rank i of each group sends to remote
     * rank i mod rsize; every remote process receives what is meant for it. */
    int to = lrank % rsize, v = 1000 * color + lrank;
    MPI_Request sreq;
    MPI_Isend(&v, 1, MPI_INT, to, 5, inter, &sreq);
    for (int j = 0; j < rsize; j++) {
        /* Remote rank j sends to me if j % lsize == lrank. */
        if (j % lsize != lrank) continue;
        int got = -1;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &st);
        CHECK(got == 1000 * (1 - color) + st.MPI_SOURCE && st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize,
              "inter recv %d from %d", got, st.MPI_SOURCE);
    }
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    /* A polling loop: Iprobe until the remote leader's message is there;
     * its status names a remote rank. */
    if (lrank == 0) {
        int x = 7 + color, y = -1, found = 0;
        MPI_Status pst;
        MPI_Isend(&x, 1, MPI_INT, 0, 6, inter, &sreq);
        while (!found) MPI_Iprobe(MPI_ANY_SOURCE, 6, inter, &found, &pst);
        CHECK(pst.MPI_SOURCE == 0, "inter iprobe source %d", pst.MPI_SOURCE);
        MPI_Recv(&y, 1, MPI_INT, pst.MPI_SOURCE, 6, inter, MPI_STATUS_IGNORE);
        CHECK(y == 8 - color, "inter iprobe then recv %d", y);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    }
    CHECK(MPI_Barrier(inter) == MPI_SUCCESS, "inter barrier");
    /* Zero counts move nothing and still complete. */
    CHECK(MPI_Bcast(NULL, 0, MPI_INT, color ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL), inter) == MPI_SUCCESS,
          "zero-count inter bcast");
    CHECK(MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, inter) == MPI_SUCCESS, "zero-count inter allgather");

    /* Bcast from the evens' last rank to the odds. */
    int root0 = n0 - 1, b[3] = {0, 0, 0};
    if (color == 0) {
        if (lrank == root0) b[0] = 7, b[1] = 8, b[2] = 9;
        MPI_Bcast(b, 3, MPI_INT, lrank == root0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    } else {
        MPI_Bcast(b, 3, MPI_INT, root0, inter);
        CHECK(b[0] == 7 && b[1] == 8 && b[2] == 9, "inter bcast %d %d %d", b[0], b[1], b[2]);
    }

    /* Gather at the odds' rank 0 from the evens, then scatter back. */
    int *all = malloc(sizeof(int) * (size_t)size), one = 100 + lrank, back = -1;
    if (color == 1) {
        MPI_Gather(NULL, 0, MPI_INT, all, 1, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        if (lrank == 0)
            for (int i = 0; i < n0; i++) CHECK(all[i] == 100 + i, "inter gather [%d] = %d", i, all[i]);
        for (int i = 0; i < n0; i++) all[i] = 200 + i;
        MPI_Scatter(all, 1, MPI_INT, NULL, 0, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    } else {
        MPI_Gather(&one, 1, MPI_INT, NULL, 0, MPI_INT, 0, inter);
        MPI_Scatter(NULL, 0, MPI_INT, &back, 1, MPI_INT, 0, inter);
        CHECK(back == 200 + lrank, "inter scatter %d", back);
    }

    /* Allgather: each process gets every remote rank's value. */
    int me = 1000 * color + lrank;
    MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, inter);
    for (int i = 0; i < rsize; i++) CHECK(all[i] == 1000 * (1 - color) + i, "inter allgather [%d] = %d", i, all[i]);
    /* Alltoall: block j to remote rank j. */
    int *sb = malloc(sizeof(int) * (size_t)rsize);
    for (int j = 0; j < rsize; j++) sb[j] = 10000 * color + 100 * lrank + j;
    MPI_Alltoall(sb, 1, MPI_INT, all, 1, MPI_INT, inter);
    for (int i = 0; i < rsize; i++)
        CHECK(all[i] == 10000 * (1 - color) + 100 * i + lrank, "inter alltoall [%d] = %d", i, all[i]);

    /* Allreduce: the sum over the other group. */
    int sum = -1, want = 0;
    for (int i = 0; i < rsize; i++) want += 1000 * (1 - color) + i;
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(sum == want, "inter allreduce %d, want %d", sum, want);
    /* Reduce at the evens' rank 0 of the odds' values. */
    double d = lrank + 0.5, dr = -1;
    if (color == 0) {
        MPI_Reduce(NULL, &dr, 1, MPI_DOUBLE, MPI_MAX, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        if (lrank == 0) CHECK(dr == n1 - 0.5, "inter reduce %g", dr);
    } else {
        MPI_Reduce(&d, NULL, 1, MPI_DOUBLE, MPI_MAX, 0, inter);
    }

    /* Merge: the evens (high = 0) first. */
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, color, &merged);
    int mrank = -1, msize = -1;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size && mrank == (color ? n0 + lrank : lrank), "merged rank %d of %d", mrank, msize);
    int total = 0;
    MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, merged);
    CHECK(total == size * (size - 1) / 2, "merged allreduce %d", total);

    /* A duplicate carries its own traffic. */
    MPI_Comm dup;
    MPI_Comm_dup(inter, &dup);
    MPI_Comm_test_inter(dup, &flag);
    CHECK(flag == 1, "dup of an intercommunicator is not inter");
    if (lrank == 0) {
        int x = 40 + color, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, 0, 9, &y, 1, MPI_INT, 0, 9, dup, MPI_STATUS_IGNORE);
        CHECK(y == 41 - color, "dup sendrecv %d", y);
    }

    /* MPI_Comm_idup of the intercommunicator does not wait for the other
     * processes: every process but a group's rank 0 starts it, then sends
     * to the other group's rank 0, which receives all before starting its
     * own (MPICH's comm_idup pattern; a blocking agreement would hang). */
    {
        MPI_Comm idup;
        MPI_Request ir;
        int v = lrank;
        if (lrank == 0) {
            for (int i = 1; i < rsize; i++) MPI_Recv(&v, 1, MPI_INT, i, 31, inter, MPI_STATUS_IGNORE);
            CHECK(MPI_Comm_idup(inter, &idup, &ir) == MPI_SUCCESS, "inter idup");
        } else {
            CHECK(MPI_Comm_idup(inter, &idup, &ir) == MPI_SUCCESS, "inter idup");
            MPI_Ssend(&v, 1, MPI_INT, 0, 31, inter);
        }
        MPI_Wait(&ir, MPI_STATUS_IGNORE);
        MPI_Comm_test_inter(idup, &flag);
        int isz = -1;
        MPI_Comm_remote_size(idup, &isz);
        CHECK(flag == 1 && isz == rsize, "idup of an intercommunicator: inter %d, remote size %d", flag, isz);
        int got = -1;
        MPI_Allreduce(&lrank, &got, 1, MPI_INT, MPI_SUM, idup);
        CHECK(got == rsize * (rsize - 1) / 2, "allreduce on the inter idup %d", got);
        MPI_Comm_free(&idup);
    }

    /* Reduce_scatter(_block) (§6.11.2): each group sends lsize * rsize
     * elements (the same number on both sides) and each process gets
     * rsize of the other group's sum. */
    {
        int tot = lsize * rsize, *rs = malloc(sizeof(int) * (size_t)(tot + lsize)),
            *rr = malloc(sizeof(int) * (size_t)(rsize + 1));
        int *cnt = malloc(sizeof(int) * (size_t)lsize), qsum = rsize * (rsize - 1) / 2;
        for (int j = 0; j < tot; j++) rs[j] = 1000 * color + lrank + j;
        for (int r = 0; r < lsize; r++) cnt[r] = rsize;
        for (int block = 0; block < 2; block++) {
            for (int j = 0; j < rsize; j++) rr[j] = -1;
            rc = block ? MPI_Reduce_scatter_block(rs, rr, rsize, MPI_INT, MPI_SUM, inter)
                       : MPI_Reduce_scatter(rs, rr, cnt, MPI_INT, MPI_SUM, inter);
            CHECK(rc == MPI_SUCCESS, "inter reduce_scatter%s rc %d", block ? "_block" : "", rc);
            for (int j = 0; j < rsize; j++) {
                int at = lrank * rsize + j, want = rsize * 1000 * (1 - color) + qsum + rsize * at;
                CHECK(rr[j] == want, "inter reduce_scatter%s [%d] = %d, want %d", block ? "_block" : "", j, rr[j],
                      want);
            }
        }
        CHECK(MPI_Reduce_scatter(MPI_IN_PLACE, rr, cnt, MPI_INT, MPI_SUM, inter) != MPI_SUCCESS,
              "MPI_IN_PLACE accepted by an inter reduce_scatter");
        /* The groups disagree on the total: every process hears of it. */
        for (int j = tot; j < tot + lsize; j++) rs[j] = 0;
        CHECK(MPI_Reduce_scatter_block(rs, rr, rsize + color, MPI_INT, MPI_SUM, inter) != MPI_SUCCESS,
              "inter reduce_scatter_block with different totals accepted");
        free(rs), free(rr), free(cnt);
    }

    /* Alltoallw: two ints to each remote rank, received as one pair type,
     * the blocks in reverse order in the receive buffer. */
    {
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        int *ws = malloc(sizeof(int) * 2 * (size_t)rsize), *wr = malloc(sizeof(int) * 2 * (size_t)rsize);
        int *sc = malloc(sizeof(int) * 4 * (size_t)rsize), *sd = sc + rsize, *rn = sd + rsize, *rd = rn + rsize;
        MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * 2 * (size_t)rsize), *rt = types + rsize;
        for (int j = 0; j < rsize; j++) {
            ws[2 * j] = me, ws[2 * j + 1] = j;
            sc[j] = 2, sd[j] = 8 * j, types[j] = MPI_INT;
            rn[j] = 1, rd[j] = 8 * (rsize - 1 - j), rt[j] = pair;
        }
        CHECK(MPI_Alltoallw(ws, sc, sd, types, wr, rn, rd, rt, inter) == MPI_SUCCESS, "inter alltoallw");
        for (int j = 0; j < rsize; j++) {
            int *p = wr + 2 * (rsize - 1 - j);
            CHECK(p[0] == 1000 * (1 - color) + j && p[1] == lrank, "inter alltoallw from %d: %d %d", j, p[0], p[1]);
        }
        CHECK(MPI_Alltoallw(MPI_IN_PLACE, sc, sd, types, wr, rn, rd, rt, inter) != MPI_SUCCESS,
              "MPI_IN_PLACE accepted on an intercommunicator");
        MPI_Type_free(&pair);
        free(ws), free(wr), free(sc), free(types);
    }

    /* Split (§7.4.2): each group by the parity of its local rank, keys
     * reversing the order; a parity the other group lacks gives
     * MPI_COMM_NULL. */
    {
        MPI_Comm sp;
        int c = lrank % 2;
        CHECK(MPI_Comm_split(inter, c, -lrank, &sp) == MPI_SUCCESS, "inter split");
        int want_l = (lsize - c + 1) / 2, want_r = (rsize - c + 1) / 2;
        if (want_r == 0) {
            CHECK(sp == MPI_COMM_NULL, "inter split with no remote of color %d is not MPI_COMM_NULL", c);
        } else {
            int f = 0, sr = -1, ss = -1, rs = -1, tot = -1, exp = 0;
            MPI_Comm_test_inter(sp, &f);
            MPI_Comm_rank(sp, &sr);
            MPI_Comm_size(sp, &ss);
            MPI_Comm_remote_size(sp, &rs);
            CHECK(f == 1 && ss == want_l && rs == want_r && sr == (lsize - 1 - lrank) / 2,
                  "inter split: inter %d rank %d size %d remote %d", f, sr, ss, rs);
            /* The sum of the world ranks of the remote subgroup. */
            for (int j = c; j < rsize; j += 2) exp += 2 * j + (1 - color);
            MPI_Allreduce(&rank, &tot, 1, MPI_INT, MPI_SUM, sp);
            CHECK(tot == exp, "inter split allreduce %d, want %d", tot, exp);
            MPI_Comm_free(&sp);
        }
        /* One group's color undefined: nobody has a partner. */
        CHECK(MPI_Comm_split(inter, color ? MPI_UNDEFINED : 5, 0, &sp) == MPI_SUCCESS && sp == MPI_COMM_NULL,
              "inter split with the other group undefined is not MPI_COMM_NULL");
    }

    /* Comm_create (§7.4.2): each group's local rank 0 alone; an
     * intercommunicator of the two leaders. */
    {
        MPI_Group lg, first;
        MPI_Comm leaders;
        int zero = 0;
        MPI_Comm_group(inter, &lg);
        MPI_Group_incl(lg, 1, &zero, &first);
        CHECK(MPI_Comm_create(inter, first, &leaders) == MPI_SUCCESS, "inter Comm_create");
        if (lrank == 0) {
            int rs = -1, y = -1, x = 60 + color;
            MPI_Comm_remote_size(leaders, &rs);
            CHECK(rs == 1, "inter Comm_create remote size %d", rs);
            MPI_Sendrecv(&x, 1, MPI_INT, 0, 1, &y, 1, MPI_INT, 0, 1, leaders, MPI_STATUS_IGNORE);
            CHECK(y == 61 - color, "inter Comm_create sendrecv %d", y);
            MPI_Comm_free(&leaders);
        } else {
            CHECK(leaders == MPI_COMM_NULL, "a non-member got an intercommunicator from Comm_create");
        }
        MPI_Group_free(&first);
        MPI_Group_free(&lg);
    }

    /* Intercomm_create_from_groups (§7.6.2, MPI 4.0): the same two groups,
     * with no parent communicator. */
    {
        MPI_Group lg, rg2;
        MPI_Comm fg;
        int rs = -1, tot = -1, exp = 0;
        MPI_Comm_group(local, &lg);
        MPI_Comm_remote_group(inter, &rg2);
        rc = MPI_Intercomm_create_from_groups(lg, 0, rg2, 0, "c-inter", MPI_INFO_NULL, MPI_ERRORS_RETURN, &fg);
        CHECK(rc == MPI_SUCCESS, "Intercomm_create_from_groups rc %d", rc);
        MPI_Comm_remote_size(fg, &rs);
        CHECK(rs == rsize, "from_groups remote size %d", rs);
        for (int j = 0; j < rsize; j++) exp += 2 * j + (1 - color);
        MPI_Allreduce(&rank, &tot, 1, MPI_INT, MPI_SUM, fg);
        CHECK(tot == exp, "from_groups allreduce %d, want %d", tot, exp);
        MPI_Comm_free(&fg);
        CHECK(MPI_Intercomm_create_from_groups(lg, lsize, rg2, 0, "c-inter-bad", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                               &fg) == MPI_ERR_RANK,
              "a local leader outside the group accepted");
        MPI_Group_free(&lg);
        MPI_Group_free(&rg2);
    }

    /* What the library does not do on an intercommunicator: an error. */
    MPI_Request rq;
    /* Topologies are for intracommunicators (§8.2). */
    int tdims[1] = {1}, tper[1] = {0};
    MPI_Comm tcomm = MPI_COMM_NULL;
    CHECK(MPI_Cart_create(inter, 1, tdims, tper, 0, &tcomm) == MPI_ERR_COMM && tcomm == MPI_COMM_NULL, "Cart_create on an intercommunicator");
    CHECK(MPI_Dist_graph_create_adjacent(inter, 0, NULL, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &tcomm) == MPI_ERR_COMM,
          "Dist_graph_create_adjacent on an intercommunicator");
    /* Non-blocking collectives on an intercommunicator complete within
     * the call (they run the blocking algorithm); a persistent one is
     * refused. */
    int isum = -1, ib = color ? -1 : 99;
    CHECK(MPI_Iallreduce(&me, &isum, 1, MPI_INT, MPI_SUM, inter, &rq) == MPI_SUCCESS, "Iallreduce on an intercommunicator");
    CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE) == MPI_SUCCESS && rq == MPI_REQUEST_NULL && isum == sum,
          "Iallreduce on an intercommunicator: %d, the blocking one %d", isum, sum);
    CHECK(MPI_Ibcast(&ib, 1, MPI_INT, color ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL), inter, &rq) == MPI_SUCCESS,
          "Ibcast on an intercommunicator");
    CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE) == MPI_SUCCESS && ib == 99, "Ibcast on an intercommunicator: %d", ib);
    CHECK(MPI_Barrier_init(inter, MPI_INFO_NULL, &rq) == MPI_ERR_UNSUPPORTED_OPERATION,
          "Barrier_init on an intercommunicator did not say unsupported");
    MPI_Comm bad;
    CHECK(MPI_Bcast(b, 1, MPI_INT, size + 5, inter) == MPI_ERR_ROOT, "a bad inter root accepted");

    /* A process that would lead both groups is refused, not left waiting
     * (the error goes to the local communicator's handler). */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, rank, 3, &bad) == MPI_ERR_ARG,
          "an intercommunicator with itself accepted");
    /* The same with members: the leader fails and tells them, so every
     * process gets the error instead of waiting for the leader. */
    CHECK(MPI_Intercomm_create(MPI_COMM_WORLD, 0, MPI_COMM_WORLD, 0, 4, &bad) == MPI_ERR_ARG,
          "a member of a failed Intercomm_create did not get the error");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    free(all), free(sb);
    int bad_total = 0;
    MPI_Allreduce(&errors, &bad_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && bad_total == 0) printf("OK c-inter on %d ranks\n", size);
    MPI_Finalize();
    return bad_total == 0 ? 0 : 1;
}
