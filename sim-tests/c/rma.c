/* One-sided communication (MPI 4.1 chapter 12), every call of it:
 * windows of the four flavours and their attributes, put/get/accumulate/
 * get_accumulate/fetch_and_op/compare_and_swap in plain, request and
 * large-count forms with derived datatypes on both sides, the three
 * synchronisation styles, and the errors (MPI_ERR_RMA_RANGE writes
 * nothing, MPI_ERR_RMA_SYNC for epochs out of order). "OK c-rma on N
 * ranks" from rank 0 when every rank passed. */
#include <mpi.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>

#include "check.h"

#define N 16

static int class_of(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}

static int deleted = 0;
static int on_delete(MPI_Win w, int k, void *v, void *extra)
{
    (void)w; (void)k; (void)extra;
    deleted += *(int *)v;
    return MPI_SUCCESS;
}

/* Attributes, name, group and info of a window made over `buf`. */
static void attributes(MPI_Win win, int *buf)
{
    void *base; MPI_Aint *sz; int *unit, *flavor, *model, flag;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == buf, "MPI_WIN_BASE %p, not %p", base, (void *)buf);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag);
    CHECK(flag && *sz == N * (MPI_Aint)sizeof(int), "MPI_WIN_SIZE %ld", (long)*sz);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
    CHECK(flag && *unit == (int)sizeof(int), "MPI_WIN_DISP_UNIT %d", *unit);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "flavor %d", *flavor);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE), "model %d", *model);
    /* The values stay where the pointers say while more windows are made
     * (the library's table of windows grows and moves its entries). */
    MPI_Aint size_was = *sz; int model_was = *model;
    MPI_Win more[33];
    for (int i = 0; i < 33; i++) MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &more[i]);
    CHECK(*sz == size_was && *unit == (int)sizeof(int) && *flavor == MPI_WIN_FLAVOR_CREATE && *model == model_was,
          "the attribute values moved: size %ld unit %d flavor %d", (long)*sz, *unit, *flavor);
    for (int i = 0; i < 33; i++) MPI_Win_free(&more[i]);

    char name[MPI_MAX_OBJECT_NAME]; int len;
    MPI_Win_set_name(win, "halo");
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 4 && strcmp(name, "halo") == 0, "name %s", name);

    MPI_Group g, wg; int cmp;
    MPI_Win_get_group(win, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "the window's group compares %d", cmp);
    MPI_Group_free(&g); MPI_Group_free(&wg);

    MPI_Info info, used; char v[16];
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "false");
    MPI_Win_set_info(win, info);
    MPI_Win_get_info(win, &used);
    len = sizeof v;
    MPI_Info_get_string(used, "no_locks", &len, v, &flag);
    CHECK(flag && strcmp(v, "false") == 0, "info no_locks %s", v);
    MPI_Info_free(&info); MPI_Info_free(&used);

    int key, one = 1, *got;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, &key, NULL);
    MPI_Win_set_attr(win, key, &one);
    MPI_Win_get_attr(win, key, &got, &flag);
    CHECK(flag && got == &one, "user attribute");
    MPI_Win_delete_attr(win, key);
    CHECK(deleted == 1, "the delete callback ran %d times", deleted);
    MPI_Win_get_attr(win, key, &got, &flag);
    CHECK(!flag, "the attribute is still there after delete");
    MPI_Win_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "keyval not reset");
    MPI_Errhandler eh;
    MPI_Win_get_errhandler(win, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "a window's first error handler is MPI_ERRORS_ARE_FATAL");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    /* The handler ran (MPI_ERRORS_RETURN does nothing): MPI_SUCCESS, as
     * MPI_Comm_call_errhandler (MPI 4.1 §9.3). A freed window is an error. */
    CHECK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER) == MPI_SUCCESS, "call_errhandler under ERRORS_RETURN");
    CHECK(MPI_Win_call_errhandler(MPI_WIN_NULL, MPI_ERR_OTHER) == MPI_ERR_WIN, "call_errhandler on MPI_WIN_NULL");
}

/* Fence epochs: puts, gets and accumulates, derived types on both sides. */
static void fences(MPI_Win win, int *buf)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++) buf[i] = -1;
    MPI_Win_fence(0, win);
    int mine[4] = {rank * 100, rank * 100 + 1, rank * 100 + 2, rank * 100 + 3};
    /* Into the right neighbour's elements 0, 2, 4, 6 (a strided target). */
    MPI_Datatype every2;
    MPI_Type_vector(4, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    MPI_Put(mine, 4, MPI_INT, right, 0, 1, every2, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 4; i++)
        CHECK(buf[2 * i] == left * 100 + i && buf[2 * i + 1] == -1, "strided put: buf[%d]=%d", 2 * i, buf[2 * i]);

    /* Gather the neighbour's strided elements back contiguous, and the same with _c. */
    int back[4] = {0}, back_c[4] = {0};
    MPI_Win_fence(0, win);
    MPI_Get(back, 4, MPI_INT, right, 0, 1, every2, win);
    MPI_Get_c(back_c, 4, MPI_INT, right, 0, 1, every2, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 4; i++)
        CHECK(back[i] == rank * 100 + i && back_c[i] == back[i], "strided get: %d %d", back[i], back_c[i]);

    /* Everyone adds its rank+1 to element 8 of everyone, twice (once by _c). */
    buf[8] = 0;
    MPI_Win_fence(0, win);
    for (int t = 0; t < size; t++) {
        int v = rank + 1;
        MPI_Accumulate(&v, 1, MPI_INT, t, 8, 1, MPI_INT, MPI_SUM, win);
        MPI_Accumulate_c(&v, 1, MPI_INT, t, 8, 1, MPI_INT, MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    CHECK(buf[8] == size * (size + 1), "accumulate: %d, not %d", buf[8], size * (size + 1));

    /* Get_accumulate of MPI_MAX and MPI_NO_OP; Put of 0 elements; MPI_PROC_NULL. */
    int old = -7, mx = 1000 + rank, peek = -7;
    MPI_Win_fence(0, win);
    MPI_Get_accumulate(&mx, 1, MPI_INT, &old, 1, MPI_INT, 0, 9, 1, MPI_INT, MPI_MAX, win);
    MPI_Put(mine, 0, MPI_INT, right, 0, 0, MPI_INT, win);
    MPI_Put(mine, 4, MPI_INT, MPI_PROC_NULL, 0, 4, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Get_accumulate_c(NULL, 0, MPI_INT, &peek, 1, MPI_INT, 0, 9, 1, MPI_INT, MPI_NO_OP, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    CHECK(old != -7, "get_accumulate returned nothing");
    CHECK(peek == 1000 + size - 1, "MPI_MAX over everyone: %d", peek);
    MPI_Type_free(&every2);
}

/* Post/start/complete/wait around a ring, then again with MPI_Win_test. */
static void pscw(MPI_Win win, int *buf)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Group world, from, to;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &from);
    MPI_Group_incl(world, 1, &right, &to);
    for (int round = 0; round < 2; round++) {
        buf[10] = -1;
        MPI_Win_post(from, 0, win);
        MPI_Win_start(to, 0, win);
        int v = rank * 10 + round;
        MPI_Put(&v, 1, MPI_INT, right, 10, 1, MPI_INT, win);
        MPI_Win_complete(win);
        if (round == 0) {
            MPI_Win_wait(win);
        } else {
            int flag = 0, polls = 0;
            while (!flag) {
                MPI_Win_test(win, &flag);
                polls++;
            }
            CHECK(polls >= 1, "test");
        }
        CHECK(buf[10] == left * 10 + round, "pscw round %d: %d", round, buf[10]);
    }
    MPI_Group_free(&world); MPI_Group_free(&from); MPI_Group_free(&to);
}

/* Passive target: tickets, a swap, exclusive read-modify-write, flushes,
 * lock_all and the request forms. */
static void passive(MPI_Win win, int *buf)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { buf[11] = 0; buf[12] = 0; buf[13] = 0; }
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    int one = 1, ticket = -1, me = rank + 1, was = -1, zero = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&one, &ticket, MPI_INT, 0, 11, MPI_SUM, win);
    MPI_Win_flush(0, win);
    MPI_Compare_and_swap(&me, &zero, &was, MPI_INT, 0, 12, win);
    MPI_Win_flush_local(0, win);
    MPI_Win_unlock(0, win);
    CHECK(ticket >= 0 && ticket < size, "ticket %d", ticket);
    int winners = 0, won = (was == 0), tickets = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&ticket, &tickets, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "%d ranks won the compare-and-swap", winners);
    CHECK(tickets == size * (size - 1) / 2, "tickets sum to %d", tickets);

    for (int i = 0; i < 3; i++) {
        int v;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&v, 1, MPI_INT, 0, 13, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
        v++;
        MPI_Put(&v, 1, MPI_INT, 0, 13, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Win_sync(win);
        CHECK(buf[13] == 3 * size, "exclusive increments: %d", buf[13]);
        CHECK(buf[11] == size, "fetch_and_op counter %d", buf[11]);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Request forms in lock_all epochs: writes, then reads of what was written. */
    int right = (rank + 1) % size;
    int src[2] = {rank, -rank}, dst[2] = {0, 0}, acc = 5, res[2] = {0, 0}, res_c[2] = {0, 0};
    MPI_Request r[6];
    MPI_Win_lock_all(0, win);
    MPI_Rput_c(src, 2, MPI_INT, right, 14, 2, MPI_INT, win, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    CHECK(r[0] == MPI_REQUEST_NULL, "Rput_c's request not freed");
    MPI_Win_flush(right, win);
    MPI_Rput(src, 2, MPI_INT, right, 14, 2, MPI_INT, win, &r[0]);
    MPI_Win_flush_all(win);
    MPI_Rget(dst, 2, MPI_INT, right, 14, 2, MPI_INT, win, &r[1]);
    MPI_Rget_accumulate(src, 2, MPI_INT, res, 2, MPI_INT, right, 14, 2, MPI_INT, MPI_NO_OP, win, &r[2]);
    MPI_Rget_c(res_c, 2, MPI_INT, right, 14, 2, MPI_INT, win, &r[3]);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    MPI_Win_flush_local_all(win);
    MPI_Win_unlock_all(win);
    CHECK(dst[0] == rank && dst[1] == -rank, "Rget %d %d", dst[0], dst[1]);
    CHECK(res[0] == rank && res[1] == -rank, "Rget_accumulate %d %d", res[0], res[1]);
    CHECK(res_c[0] == rank && res_c[1] == -rank, "Rget_c %d %d", res_c[0], res_c[1]);
    /* Accumulates to one element are ordered and atomic: 5, +5, +5 (fetching 10). */
    int fetched = -1;
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Raccumulate(&acc, 1, MPI_INT, right, 15, 1, MPI_INT, MPI_REPLACE, win, &r[0]);
    MPI_Raccumulate_c(&acc, 1, MPI_INT, right, 15, 1, MPI_INT, MPI_SUM, win, &r[1]);
    MPI_Rget_accumulate_c(&acc, 1, MPI_INT, &fetched, 1, MPI_INT, right, 15, 1, MPI_INT, MPI_SUM, win, &r[2]);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* In the separate model (the simulator's card), the window's own memory
     * shows others' updates after a synchronisation: a lock of one's own
     * window and MPI_Win_sync (§12.4, §12.5.4). */
    int model_is_separate = 0;
    {
        int *model, flag;
        MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
        model_is_separate = *model == MPI_WIN_SEPARATE;
    }
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Win_sync(win);
    CHECK(fetched == 10, "Rget_accumulate_c fetched %d", fetched);
    CHECK(buf[15] == 15, "element 15 after a replace and two sums: %d (separate model: %d)", buf[15], model_is_separate);
    MPI_Win_unlock(rank, win);
}

/* The errors: each call fails with its class and leaves things as they were. */
static void errors_of(MPI_Win win, int *buf)
{
    int right = (rank + 1) % size, v[4] = {1, 2, 3, 4};
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = MPI_Put(v, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "a put outside an epoch: class %d", class_of(rc));
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    rc = MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "locking twice: class %d", class_of(rc));
    buf[N - 1] = 77;
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_Put(v, 4, MPI_INT, right, N - 2, 4, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "a put past the end: class %d", class_of(rc));
    rc = MPI_Get(v, 1, MPI_INT, right, -1, 1, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "a get before the start: class %d", class_of(rc));
    rc = MPI_Win_fence(0, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "a fence inside a lock epoch: class %d", class_of(rc));
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[N - 1] == 77, "the refused put wrote %d", buf[N - 1]);
    /* Out of order on one rank only: its fence fails, the others' fence
     * completes (the failing rank still takes part in its barrier). */
    if (rank == 0) MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    rc = MPI_Win_fence(0, win);
    CHECK(rank == 0 ? class_of(rc) == MPI_ERR_RMA_SYNC : rc == MPI_SUCCESS,
          "a fence out of order on rank 0 only: class %d", class_of(rc));
    if (rank == 0) MPI_Win_unlock(right, win);
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win) == MPI_SUCCESS, "the fence after it");
    rc = MPI_Win_unlock(right, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "unlocking twice: class %d", class_of(rc));
    rc = MPI_Win_lock(12345, right, 0, win);
    CHECK(class_of(rc) == MPI_ERR_LOCKTYPE, "a bad lock type: class %d", class_of(rc));
    rc = MPI_Win_lock(MPI_LOCK_SHARED, size, 0, win);
    CHECK(class_of(rc) == MPI_ERR_RANK, "lock of rank %d: class %d", size, class_of(rc));
    rc = MPI_Win_fence(1 << 20, win);
    CHECK(class_of(rc) == MPI_ERR_ASSERT, "a bad assert: class %d", class_of(rc));
    MPI_Win_lock_all(0, win);
    float f = 1.0f;
    rc = MPI_Accumulate(&f, 1, MPI_FLOAT, right, 0, 1, MPI_FLOAT, MPI_BAND, win);
    CHECK(class_of(rc) == MPI_ERR_OP, "MPI_BAND on floats: class %d", class_of(rc));
    rc = MPI_Win_free(&win);
    CHECK(class_of(rc) == MPI_ERR_RMA_SYNC && win != MPI_WIN_NULL, "free inside an epoch: class %d", class_of(rc));
    MPI_Win_unlock_all(win);
}

/* MPI_Win_allocate(_c), _allocate_shared with direct loads and stores, dynamic windows. */
static void flavours(void)
{
    int right = (rank + 1) % size;
    int64_t *mem; MPI_Win w;
    MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    for (int i = 0; i < 8; i++) mem[i] = 0;
    MPI_Win_fence(0, w);
    int64_t x = 1000 + rank;
    MPI_Put(&x, 1, MPI_INT64_T, right, 3, 1, MPI_INT64_T, w);
    MPI_Win_fence(0, w);
    CHECK(mem[3] == 1000 + (rank + size - 1) % size, "allocate: %ld", (long)mem[3]);
    /* Operations that move no bytes, with NULL buffers and basic types
     * that differ (MPICH's badrma): accepted, and nothing changes. */
    MPI_Datatype none;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    CHECK(MPI_Accumulate(NULL, 1, none, right, 0, 0, MPI_DOUBLE, MPI_SUM, w) == MPI_SUCCESS, "a 0-byte accumulate of two basic types refused");
    CHECK(MPI_Accumulate(NULL, 0, MPI_DOUBLE, right, 0, 3, none, MPI_SUM, w) == MPI_SUCCESS, "a 0-count accumulate refused");
    CHECK(MPI_Get_accumulate(NULL, 1, none, NULL, 0, MPI_DOUBLE, right, 0, 2, none, MPI_SUM, w) == MPI_SUCCESS, "a 0-byte get_accumulate refused");
    CHECK(MPI_Put(NULL, 1, none, right, 0, 0, MPI_DOUBLE, w) == MPI_SUCCESS, "a 0-byte put refused");
    CHECK(MPI_Get(NULL, 0, MPI_DOUBLE, right, 0, 1, none, w) == MPI_SUCCESS, "a 0-byte get refused");
    MPI_Win_fence(0, w);
    CHECK(mem[3] == 1000 + (rank + size - 1) % size && mem[0] == 0, "0-byte operations changed %ld %ld", (long)mem[3], (long)mem[0]);
    /* A parameterized Fortran type (§19.2.5) is a predefined type: an
     * accumulate adds its reals. */
    MPI_Datatype real8;
    MPI_Type_create_f90_real(15, MPI_UNDEFINED, &real8);
    double half = 1.5, sum = -1;
    CHECK(MPI_Accumulate(&half, 1, real8, right, 5, 1, real8, MPI_SUM, w) == MPI_SUCCESS, "an accumulate of a Fortran real(8) refused");
    MPI_Win_fence(0, w);
    memcpy(&sum, &mem[5], sizeof sum);
    CHECK(sum == 1.5, "an accumulate of a Fortran real(8) left %g", sum);
    /* Data of two basic types (§12.3.4): refused with MPI_ERR_TYPE, except
     * under MPI_NO_OP, which does not read the origin. */
    int one = 1;
    double fetched = -1;
    int arc = MPI_Accumulate(&one, 1, MPI_INT, right, 5, 1, MPI_DOUBLE, MPI_SUM, w);
    CHECK(arc == MPI_ERR_TYPE, "an accumulate of an int into a double gave %d", arc);
    arc = MPI_Get_accumulate(&one, 1, MPI_INT, &fetched, 1, MPI_DOUBLE, right, 5, 1, MPI_DOUBLE, MPI_NO_OP, w);
    CHECK(arc == MPI_SUCCESS, "a fetch (MPI_NO_OP) with an int origin refused: %d", arc);
    /* Its origin is not looked at: MPI_DATATYPE_NULL and a null buffer do
     * (as MPICH's get_accumulate tests pass them). */
    double fetched2 = -1;
    arc = MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, &fetched2, 1, MPI_DOUBLE, right, 5, 1, MPI_DOUBLE, MPI_NO_OP, w);
    CHECK(arc == MPI_SUCCESS, "a fetch (MPI_NO_OP) with an MPI_DATATYPE_NULL origin refused: %d", arc);
    MPI_Win_fence(0, w);
    CHECK(fetched == 1.5 && fetched2 == 1.5, "the fetches read %g and %g", fetched, fetched2);
    MPI_Type_free(&none);
    MPI_Win_free(&w);

    /* Atomics on elements not aligned to their size (MPI puts no rule on
     * displacements): a long at byte 4 and an int at byte 18 of rank 0's
     * window, displacement unit 1. Every rank adds 1 (accumulate), 10
     * (fetch-and-op) and 100 (get-accumulate) to each. */
    unsigned char *odd; MPI_Win wo;
    MPI_Win_allocate(32, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &odd, &wo);
    MPI_Win_set_errhandler(wo, MPI_ERRORS_RETURN);
    memset(odd, 0, 32);
    MPI_Win_fence(0, wo);
    long l1 = 1, l10 = 10, l100 = 100, lold = -1, lres = -1;
    int i1 = 1, i10 = 10, i100 = 100, iold = -1, ires = -1;
    CHECK(MPI_Accumulate(&l1, 1, MPI_LONG, 0, 4, 1, MPI_LONG, MPI_SUM, wo) == MPI_SUCCESS, "accumulate of a long at byte 4");
    CHECK(MPI_Fetch_and_op(&l10, &lold, MPI_LONG, 0, 4, MPI_SUM, wo) == MPI_SUCCESS, "fetch_and_op of a long at byte 4");
    CHECK(MPI_Get_accumulate(&l100, 1, MPI_LONG, &lres, 1, MPI_LONG, 0, 4, 1, MPI_LONG, MPI_SUM, wo) == MPI_SUCCESS, "get_accumulate of a long at byte 4");
    CHECK(MPI_Accumulate(&i1, 1, MPI_INT, 0, 18, 1, MPI_INT, MPI_SUM, wo) == MPI_SUCCESS, "accumulate of an int at byte 18");
    CHECK(MPI_Fetch_and_op(&i10, &iold, MPI_INT, 0, 18, MPI_SUM, wo) == MPI_SUCCESS, "fetch_and_op of an int at byte 18");
    CHECK(MPI_Get_accumulate(&i100, 1, MPI_INT, &ires, 1, MPI_INT, 0, 18, 1, MPI_INT, MPI_SUM, wo) == MPI_SUCCESS, "get_accumulate of an int at byte 18");
    MPI_Win_fence(0, wo);
    CHECK(lold >= 0 && lres >= 0 && iold >= 0 && ires >= 0, "fetched %ld %ld %d %d", lold, lres, iold, ires);
    if (rank == 0) {
        long lv; int iv;
        memcpy(&lv, odd + 4, sizeof lv);
        memcpy(&iv, odd + 18, sizeof iv);
        CHECK(lv == 111L * size && iv == 111 * size, "misaligned sums: long %ld int %d, expected %d", lv, iv, 111 * size);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* rank 0's loads before anyone's next update */
    /* Compare-and-swap there: exactly one rank swaps 111 * size for its rank + 1. */
    long want = 111L * size, mine2 = rank + 1, got2 = -1;
    CHECK(MPI_Compare_and_swap(&mine2, &want, &got2, MPI_LONG, 0, 4, wo) == MPI_SUCCESS, "compare_and_swap of a long at byte 4");
    MPI_Win_fence(0, wo); /* the result is there once the epoch ends */
    int won = got2 == want, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "%d ranks won the misaligned compare-and-swap (rank %d saw %ld)", winners, rank, got2);
    MPI_Win_free(&wo);
    CHECK(w == MPI_WIN_NULL, "free sets MPI_WIN_NULL");

    double *d; MPI_Win wc;
    MPI_Win_allocate_c(4 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &d, &wc);
    int *flavor, flag;
    MPI_Win_get_attr(wc, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(*flavor == MPI_WIN_FLAVOR_ALLOCATE, "allocate's flavor %d", *flavor);
    MPI_Win_free(&wc);

    MPI_Comm node; int nr, ns;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nr); MPI_Comm_size(node, &ns);
    int *sh; MPI_Win ws;
    MPI_Win_allocate_shared((nr + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &sh, &ws);
    for (int i = 0; i <= nr; i++) sh[i] = nr * 100 + i;
    MPI_Win_fence(0, ws);
    for (int r = 0; r < ns; r++) {
        MPI_Aint qs; int qu; int *qb;
        MPI_Win_shared_query(ws, r, &qs, &qu, &qb);
        CHECK(qs == (MPI_Aint)((r + 1) * sizeof(int)) && qu == (int)sizeof(int), "shared_query %d: %ld %d", r, (long)qs, qu);
        CHECK(qb[r] == r * 100 + r, "a direct load of rank %d's part: %d", r, qb[r]);
    }
    MPI_Aint qs; MPI_Aint qu; int *qb;
    MPI_Win_shared_query_c(ws, MPI_PROC_NULL, &qs, &qu, &qb);
    CHECK(qb[0] == 0, "shared_query_c(MPI_PROC_NULL) gives rank 0's part");
    MPI_Win_fence(0, ws);
    MPI_Win_free(&ws);
    /* Odd ranks give no memory: their part has size 0 and a null base. */
    int *zs; MPI_Win wz;
    MPI_Win_allocate_shared(nr % 2 ? 0 : sizeof(int), sizeof(int), MPI_INFO_NULL, node, &zs, &wz);
    for (int r = 0; r < ns; r++) {
        MPI_Aint zq; int zu; int *zb;
        MPI_Win_shared_query(wz, r, &zq, &zu, &zb);
        CHECK(r % 2 ? zq == 0 && zb == NULL : zq == (MPI_Aint)sizeof(int) && zb != NULL,
              "shared_query of rank %d's part of size %d: %ld, base %p", r, r % 2 ? 0 : 4, (long)zq, (void *)zb);
    }
    MPI_Win_free(&wz);
    /* A shared window over the ranks of several nodes is refused, on
     * every rank (MPI 4.1 §12.2.3); on one node it is made. */
    int *ww; MPI_Win wsw;
    int rc0 = MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &ww, &wsw);
    if (ns < size) {
        CHECK(class_of(rc0) == MPI_ERR_RMA_SHARED, "a shared window across nodes: class %d", class_of(rc0));
    } else {
        CHECK(rc0 == MPI_SUCCESS, "a shared window of one node's ranks: %d", rc0);
        MPI_Win_free(&wsw);
    }
    MPI_Comm_free(&node);

    /* Dynamic: each rank attaches an array and publishes its address. */
    MPI_Win wd; int region[4] = {rank, rank, rank, rank};
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &wd);
    MPI_Win_set_errhandler(wd, MPI_ERRORS_RETURN);
    MPI_Win_attach(wd, region, sizeof region);
    int rc = MPI_Win_attach(wd, region + 1, sizeof(int));
    CHECK(class_of(rc) == MPI_ERR_RMA_ATTACH, "overlapping attach: class %d", class_of(rc));
    MPI_Aint mine, theirs;
    MPI_Get_address(region, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, (rank + size - 1) % size, 0, &theirs, 1, MPI_AINT, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int got = -1, v = 42;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, wd);
    MPI_Get(&got, 1, MPI_INT, right, theirs + sizeof(int), 1, MPI_INT, wd);
    MPI_Win_flush(right, wd);
    MPI_Put(&v, 1, MPI_INT, right, theirs, 1, MPI_INT, wd);
    MPI_Put(&v, 1, MPI_INT, right, theirs + 64, 1, MPI_INT, wd);
    rc = MPI_Win_unlock(right, wd);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "a put outside every attached region: class %d at unlock", class_of(rc));
    CHECK(got == right, "dynamic get: %d", got);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(region[0] == 42 && region[1] == rank, "dynamic put: %d %d", region[0], region[1]);
    /* The same error reported by a fence: only rank 0 makes it, every
     * rank's fence still ends (it used to return before its barrier, and
     * the others waited for ever), and the window works on. */
    MPI_Win_fence(0, wd);
    if (rank == 0) MPI_Put(&v, 1, MPI_INT, right, theirs + 64, 1, MPI_INT, wd);
    rc = MPI_Win_fence(0, wd);
    CHECK(rank == 0 ? class_of(rc) == MPI_ERR_RMA_RANGE : rc == MPI_SUCCESS, "a fence after a put out of range: class %d", class_of(rc));
    int w7 = 7;
    MPI_Put(&w7, 1, MPI_INT, right, theirs + sizeof(int), 1, MPI_INT, wd);
    CHECK(MPI_Win_fence(0, wd) == MPI_SUCCESS, "a fence after a failed one");
    CHECK(region[1] == 7, "a put after a failed fence: %d", region[1]);
    MPI_Win_detach(wd, region);
    rc = MPI_Win_detach(wd, region);
    CHECK(class_of(rc) == MPI_ERR_RMA_ATTACH, "detach twice: class %d", class_of(rc));
    /* Two halves of one array attached one after the other: a get across
     * the seam reads both (MPICH's win_dynamic_rma_flush_get). */
    int halves[8];
    for (int i = 0; i < 8; i++) halves[i] = 100 * rank + i;
    MPI_Win_attach(wd, halves, 4 * sizeof(int));
    MPI_Win_attach(wd, halves + 4, 4 * sizeof(int));
    MPI_Get_address(halves, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, (rank + size - 1) % size, 1, &theirs, 1, MPI_AINT, right, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int across[6] = {-1, -1, -1, -1, -1, -1};
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, wd);
    MPI_Get(across, 6, MPI_INT, right, theirs + sizeof(int), 6, MPI_INT, wd);
    rc = MPI_Win_unlock(right, wd);
    CHECK(rc == MPI_SUCCESS, "a get across two regions attached end to end: class %d", class_of(rc));
    for (int i = 0; i < 6; i++)
        CHECK(across[i] == 100 * right + i + 1, "across[%d] = %d", i, across[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_detach(wd, halves);
    MPI_Win_detach(wd, halves + 4);
    MPI_Win_free(&wd);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Initialised: the separate model merges what changed since the last
     * synchronisation, so garbage in the window would change the traffic
     * (and the simulated time) from run to run. */
    int buf[N] = {0};
    MPI_Win win, win_c;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    attributes(win, buf);
    fences(win, buf);
    pscw(win, buf);
    passive(win, buf);
    errors_of(win, buf);
    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "free sets MPI_WIN_NULL");
    int rc = MPI_Win_fence(0, win);
    CHECK(class_of(rc) == MPI_ERR_WIN, "a call on MPI_WIN_NULL: class %d", class_of(rc));
    /* A window over MPI_Alloc_mem's memory; freeing what it did not give is MPI_ERR_BASE. */
    int *mem = NULL;
    MPI_Alloc_mem(N * sizeof(int), MPI_INFO_NULL, &mem);
    CHECK(mem != NULL && ((uintptr_t)mem % 64) == 0, "MPI_Alloc_mem gave %p", (void *)mem);
    MPI_Win_create_c(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win_c);
    MPI_Win_fence(0, win_c);
    int me = rank;
    MPI_Put(&me, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, win_c);
    MPI_Win_fence(0, win_c);
    CHECK(mem[0] == (rank + size - 1) % size, "a put into MPI_Alloc_mem memory: %d", mem[0]);
    MPI_Win_free(&win_c);
    rc = MPI_Free_mem(buf);
    CHECK(class_of(rc) == MPI_ERR_BASE, "MPI_Free_mem of a stack array: class %d", class_of(rc));
    CHECK(MPI_Free_mem(mem) == MPI_SUCCESS, "MPI_Free_mem");
    rc = MPI_Free_mem(mem);
    CHECK(class_of(rc) == MPI_ERR_BASE, "MPI_Free_mem twice: class %d", class_of(rc));
    flavours();

    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("OK c-rma on %d ranks\n", size);
    MPI_Finalize();
    return total != 0;
}
