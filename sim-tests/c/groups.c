/* Groups and the communicators built from them (MPI 4.1 §7.3-7.4), user
 * attributes (§7.7), buffered sends (§3.6), matched probes (§3.8.2),
 * Sendrecv_replace and the any/some completions; "OK c-groups on N
 * ranks" from rank 0 when every rank passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int copies = 0, deletes = 0;

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

/* A copy callback that refuses: the duplication fails with its code. */
static int refuse_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static int delete_fn(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm, (void)keyval, (void)val;
    deletes += *(int *)extra;
    return MPI_SUCCESS;
}

/* Delete callbacks that call MPI, as mpi4py's do: this one frees the
 * communicator cached in the attribute; the one being freed is still
 * valid inside it. */
static int free_cached(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)keyval, (void)extra;
    int n = -1;
    if (MPI_Comm_size(comm, &n) != MPI_SUCCESS || n < 1) return MPI_ERR_OTHER;
    int rc = MPI_Comm_free((MPI_Comm *)val);
    free(val);
    return rc;
}

/* Set on MPI_COMM_SELF: MPI_Finalize runs it first, with MPI still usable. */
static int self_deleted = 0;
static int at_finalize(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm, (void)keyval, (void)val, (void)extra;
    int finalized = 1, r = -1;
    MPI_Finalized(&finalized);
    if (!finalized && MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS && r >= 0) self_deleted = 1;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int n = 0, r = 0, rc;

    /* The world group, the even ranks, and set operations. */
    MPI_Group world, evens, odds, both, none, rev;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(world, &n);
    MPI_Group_rank(world, &r);
    CHECK(n == size && r == rank, "world group %d/%d", n, r);
    int ne = (size + 1) / 2, *ev = malloc(size * sizeof(int));
    for (int i = 0; i < ne; i++) ev[i] = 2 * i;
    MPI_Group_incl(world, ne, ev, &evens);
    MPI_Group_excl(world, ne, ev, &odds);
    MPI_Group_size(odds, &n);
    CHECK(n == size - ne, "odds size %d", n);
    MPI_Group_rank(evens, &r);
    CHECK(r == (rank % 2 ? MPI_UNDEFINED : rank / 2), "rank in evens %d", r);
    MPI_Group_union(evens, odds, &both);
    MPI_Group_compare(both, world, &r);
    CHECK(r == (size > 2 ? MPI_SIMILAR : MPI_IDENT), "union vs world %d", r);
    MPI_Group_intersection(evens, odds, &none);
    CHECK(none == MPI_GROUP_EMPTY, "disjoint intersection is not MPI_GROUP_EMPTY");
    int range[1][3] = {{size - 1, 0, -1}};
    MPI_Group_range_incl(world, 1, range, &rev);
    int t1[2] = {0, size - 1}, t2[2] = {-9, -9};
    MPI_Group_translate_ranks(world, 2, t1, rev, t2);
    CHECK(t2[0] == size - 1 && t2[1] == 0, "translate to reversed %d %d", t2[0], t2[1]);
    int bad = size;
    MPI_Group junk;
    rc = MPI_Group_incl(world, 1, &bad, &junk);
    CHECK(rc == MPI_ERR_RANK, "incl of an absent rank gave %d", rc);

    /* Comm_create over everyone; Comm_create_group by the odd ranks only. */
    MPI_Comm ec, oc, rc_comm;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &ec);
    if (rank % 2 == 0) {
        MPI_Comm_size(ec, &n);
        MPI_Comm_rank(ec, &r);
        CHECK(n == ne && r == rank / 2, "evens comm %d/%d", n, r);
        int sum = 0, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, ec);
        CHECK(sum == ne, "allreduce over evens %d", sum);
        MPI_Comm_free(&ec);
    } else {
        CHECK(ec == MPI_COMM_NULL, "an odd rank got an evens comm");
    }
    /* Disjoint groups in one call (§7.4.2): each parity gets its own. */
    MPI_Comm pc;
    MPI_Comm_create(MPI_COMM_WORLD, rank % 2 == 0 ? evens : odds, &pc);
    MPI_Comm_size(pc, &n);
    MPI_Comm_rank(pc, &r);
    CHECK(n == (rank % 2 == 0 ? ne : size - ne) && r == rank / 2, "parity comm %d/%d", n, r);
    int psum = 0;
    MPI_Allreduce(&rank, &psum, 1, MPI_INT, MPI_MAX, pc);
    CHECK(psum % 2 == rank % 2, "parity comm mixes the groups: max %d", psum);
    MPI_Comm_free(&pc);
    if (rank % 2 == 1) {
        MPI_Comm_create_group(MPI_COMM_WORLD, odds, 7, &oc);
        MPI_Comm_rank(oc, &r);
        CHECK(r == rank / 2, "odds comm rank %d", r);
        int b = rank == 1 ? 42 : 0;
        MPI_Bcast(&b, 1, MPI_INT, 0, oc);
        CHECK(b == 42, "bcast over odds %d", b);
        MPI_Comm_free(&oc);
    }
    MPI_Comm_create(MPI_COMM_WORLD, rev, &rc_comm);
    MPI_Comm_rank(rc_comm, &r);
    CHECK(r == size - 1 - rank, "reversed comm rank %d", r);
    MPI_Comm_compare(rc_comm, MPI_COMM_WORLD, &r);
    CHECK(r == (size > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "reversed vs world %d", r);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(dup, MPI_COMM_WORLD, &r);
    CHECK(r == MPI_CONGRUENT, "dup vs world %d", r);
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &r);
    CHECK(r == MPI_IDENT, "world vs world %d", r);
    MPI_Comm shared;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &n);
    CHECK(n >= 1 && n <= size, "shared comm of %d", n);
    MPI_Comm_free(&shared);
    MPI_Comm_free(&rc_comm);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&both);
    MPI_Group_free(&rev);
    MPI_Group_free(&world);
    CHECK(world == MPI_GROUP_NULL, "freed group not reset");
    rc = MPI_Group_size(world, &n);
    CHECK(rc == MPI_ERR_GROUP, "size of a freed group gave %d", rc);

    /* Attributes: copied on dup, deleted on free and on replacement. */
    int key = MPI_KEYVAL_INVALID, weight = 1, flag = 0;
    static char base[4];
    MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &weight);
    MPI_Comm_set_attr(dup, key, base);
    void *val = NULL;
    MPI_Comm_get_attr(dup, key, &val, &flag);
    CHECK(flag == 1 && val == base, "attribute read back");
    MPI_Comm dup2;
    MPI_Comm_dup(dup, &dup2);
    MPI_Comm_get_attr(dup2, key, &val, &flag);
    CHECK(copies == 1 && flag == 1 && val == base + 1, "copied attribute %d", copies);
    MPI_Comm_set_attr(dup, key, base + 2);
    CHECK(deletes == 1, "replacing did not delete the old value (%d)", deletes);
    MPI_Comm_free(&dup2);
    CHECK(deletes == 2, "free did not delete the attribute (%d)", deletes);
    MPI_Comm_delete_attr(dup, key);
    MPI_Comm_get_attr(dup, key, &val, &flag);
    CHECK(deletes == 3 && flag == 0, "delete_attr %d %d", deletes, flag);
    /* A copy callback's error is MPI_Comm_dup's (§7.7.2), the duplicate is
     * MPI_COMM_NULL, and the duplication is not left active: finalize
     * finds no request (sim-tests checks its output). */
    int rkey = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(refuse_copy, MPI_COMM_NULL_DELETE_FN, &rkey, NULL);
    MPI_Comm_set_attr(dup, rkey, base);
    MPI_Comm refused = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    rc = MPI_Comm_dup(dup, &refused);
    CHECK(rc == MPI_ERR_OTHER && refused == MPI_COMM_NULL, "a refused copy: rc %d", rc);
    MPI_Comm_delete_attr(dup, rkey);
    MPI_Comm_free_keyval(&rkey);
    int again = key;
    MPI_Comm_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "freed keyval not reset");
    /* Issue 30: freeing a freed keyval is an error, not a success. */
    int eclass = -1;
    MPI_Error_class(MPI_Comm_free_keyval(&again), &eclass);
    CHECK(eclass == MPI_ERR_KEYVAL, "freeing a freed keyval gave class %d", eclass);
    /* A keyval freed while an attribute uses it keeps its delete callback
     * until that attribute goes (§7.7.2); then it is gone for good. */
    int lkey = MPI_KEYVAL_INVALID, lweight = 10;
    MPI_Comm ldup;
    MPI_Comm_dup(MPI_COMM_WORLD, &ldup);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &lkey, &lweight);
    MPI_Comm_set_attr(ldup, lkey, base);
    int lkey_was = lkey, before = deletes;
    MPI_Comm_free_keyval(&lkey);
    MPI_Comm_free(&ldup);
    CHECK(deletes == before + 10, "a freed keyval's attribute was not deleted (%d)", deletes - before);
    MPI_Error_class(MPI_Comm_set_attr(MPI_COMM_WORLD, lkey_was, base), &eclass);
    CHECK(eclass == MPI_ERR_KEYVAL, "a freed keyval still set an attribute (class %d)", eclass);
    int ckey = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_cached, &ckey, NULL);
    MPI_Comm *cached = malloc(sizeof *cached);
    MPI_Comm_dup(MPI_COMM_WORLD, cached);
    MPI_Comm holder;
    MPI_Comm_dup(MPI_COMM_WORLD, &holder);
    MPI_Comm_set_attr(holder, ckey, cached);
    rc = MPI_Comm_free(&holder);
    CHECK(rc == MPI_SUCCESS && holder == MPI_COMM_NULL, "freeing through a callback that calls MPI gave %d", rc);
    int skey = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &skey, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, skey, NULL);
    int *tag_ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag == 1 && *tag_ub >= 32767, "MPI_TAG_UB");
    MPI_Comm_free(&dup);

    /* Info objects: ordered keys, a value replaced in place, dup, delete,
     * truncation reported through buflen; hints on a communicator kept as
     * given; MPI_INFO_ENV read-only. */
    MPI_Info inf, inf2, used;
    char ival[8], ikey[MPI_MAX_INFO_KEY];
    int vlen = sizeof ival, nkeys = -1;
    MPI_Info_create(&inf);
    MPI_Info_set(inf, "cb_nodes", "4");
    MPI_Info_set(inf, "striping", "a-long-value");
    MPI_Info_set(inf, "cb_nodes", "8");
    MPI_Info_get_nkeys(inf, &nkeys);
    MPI_Info_get_string(inf, "cb_nodes", &vlen, ival, &flag);
    CHECK(nkeys == 2 && flag && strcmp(ival, "8") == 0 && vlen == 2, "info %d keys, cb_nodes '%s' (%d)", nkeys, ival, vlen);
    vlen = 4;
    MPI_Info_get_string(inf, "striping", &vlen, ival, &flag);
    CHECK(flag && strcmp(ival, "a-l") == 0 && vlen == 13, "truncated value '%s', full length %d", ival, vlen);
    MPI_Info_get_nthkey(inf, 1, ikey);
    CHECK(strcmp(ikey, "striping") == 0, "second key '%s'", ikey);
    MPI_Info_dup(inf, &inf2);
    MPI_Info_delete(inf2, "striping");
    rc = MPI_Info_delete(inf2, "striping");
    CHECK(rc == MPI_ERR_INFO_NOKEY, "deleting a missing key gave %d", rc);
    MPI_Info_get_nkeys(inf, &nkeys);
    CHECK(nkeys == 2, "the dup's delete changed the original (%d keys)", nkeys);
    MPI_Comm hinted;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, inf, &hinted);
    MPI_Comm_get_info(hinted, &used);
    MPI_Info_get_nkeys(used, &nkeys);
    CHECK(nkeys == 2, "dup_with_info kept %d hints", nkeys);
    MPI_Info_free(&used);
    MPI_Comm_set_info(hinted, inf2);
    MPI_Comm_get_info(hinted, &used);
    MPI_Info_get_nkeys(used, &nkeys);
    CHECK(nkeys == 1, "set_info kept %d hints", nkeys);
    MPI_Info_free(&used);
    MPI_Comm_free(&hinted);
    char cname[MPI_MAX_OBJECT_NAME];
    int clen = 0;
    MPI_Comm_get_name(MPI_COMM_NULL, cname, &clen);
    CHECK(strcmp(cname, "MPI_COMM_NULL") == 0 && clen == 13, "MPI_COMM_NULL's name '%s'", cname);
    /* A communicator from a group alone (no parent), with its own
     * error handler: the reversed world. */
    MPI_Comm fg;
    MPI_Group wg, rg;
    int rrange[1][3] = {{size - 1, 0, -1}};
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_range_incl(wg, 1, rrange, &rg);
    MPI_Comm_create_from_group(rg, "dn.test.reversed", MPI_INFO_NULL, MPI_ERRORS_RETURN, &fg);
    MPI_Group_free(&wg);
    MPI_Group_free(&rg);
    MPI_Comm_rank(fg, &r);
    CHECK(r == size - 1 - rank, "create_from_group rank %d", r);
    MPI_Errhandler feh;
    MPI_Comm_get_errhandler(fg, &feh);
    CHECK(feh == MPI_ERRORS_RETURN, "create_from_group's error handler");
    MPI_Comm_free(&fg);
    /* Guided splits: MPI_COMM_NULL unless the info names a resource this
     * library knows (shared memory); an unguided one only strict subsets. */
    MPI_Comm g;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &g);
    CHECK(g == MPI_COMM_NULL, "hw_guided without a resource type gave a communicator");
    MPI_Info_set(inf2, "mpi_hw_resource_type", "mpi_shared_memory");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, inf2, &g);
    CHECK(g != MPI_COMM_NULL, "resource_guided on shared memory gave MPI_COMM_NULL");
    if (g != MPI_COMM_NULL) MPI_Comm_free(&g);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &g);
    if (g != MPI_COMM_NULL) {
        MPI_Comm_size(g, &n);
        CHECK(n < size, "an unguided split kept all %d ranks", n);
        MPI_Comm_free(&g);
    }
    MPI_Info_free(&inf);
    MPI_Info_free(&inf2);
    CHECK(inf == MPI_INFO_NULL, "freed info not reset");
    rc = MPI_Info_get_nkeys(inf, &nkeys);
    CHECK(rc == MPI_ERR_INFO, "MPI_INFO_NULL's keys gave %d", rc);
    vlen = sizeof ikey;
    MPI_Info_get_string(MPI_INFO_ENV, "command", &vlen, ikey, &flag);
    CHECK(flag && strstr(ikey, "c-groups") != NULL, "MPI_INFO_ENV command '%s'", ikey);
    MPI_Info env = MPI_INFO_ENV;
    rc = MPI_Info_free(&env);
    CHECK(rc == MPI_ERR_INFO, "freeing MPI_INFO_ENV gave %d", rc);

    /* Buffered sends within the attached buffer. */
    int bsize = 2 * (MPI_BSEND_OVERHEAD + 64 * (int)sizeof(int));
    char *bbuf = malloc(bsize);
    int big[64], got[64];
    for (int i = 0; i < 64; i++) big[i] = rank * 1000 + i;
    rc = MPI_Bsend(big, 64, MPI_INT, next, 8, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_BUFFER, "bsend without a buffer gave %d", rc);
    MPI_Buffer_attach(bbuf, bsize);
    MPI_Bsend(big, 64, MPI_INT, next, 8, MPI_COMM_WORLD);
    MPI_Request ib;
    MPI_Ibsend(big, 32, MPI_INT, next, 9, MPI_COMM_WORLD, &ib);
    rc = MPI_Bsend(bbuf, bsize, MPI_CHAR, next, 10, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_BUFFER, "a bsend larger than the buffer gave %d", rc);
    memset(big, 0, sizeof big); /* the buffered copies must not see this */
    MPI_Wait(&ib, MPI_STATUS_IGNORE);
    MPI_Recv(got, 64, MPI_INT, prev, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got[63] == prev * 1000 + 63, "bsend data %d", got[63]);
    MPI_Recv(got, 64, MPI_INT, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got[31] == prev * 1000 + 31, "ibsend data %d", got[31]);
    /* A persistent buffered send: copied at each start, so that changing
     * the buffer after the start does not change what arrives. */
    MPI_Request pb;
    MPI_Bsend_init(big, 16, MPI_INT, next, 12, MPI_COMM_WORLD, &pb);
    for (int round = 0; round < 3; round++) {
        big[0] = 100 * rank + round;
        MPI_Start(&pb);
        big[0] = -1;
        MPI_Wait(&pb, MPI_STATUS_IGNORE);
        CHECK(pb != MPI_REQUEST_NULL, "a persistent buffered request was freed by its wait");
        MPI_Recv(got, 16, MPI_INT, prev, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got[0] == 100 * prev + round, "bsend_init round %d got %d", round, got[0]);
    }
    MPI_Request_free(&pb);
    void *dbuf = NULL;
    int dsize = 0;
    MPI_Buffer_detach(&dbuf, &dsize);
    CHECK(dbuf == bbuf && dsize == bsize, "detach gave back %p/%d", dbuf, dsize);
    free(bbuf);

    /* A buffer attached to a communicator (MPI 4.1) serves the buffered
     * sends on it, and only those; flush and iflush; an automatic buffer. */
    MPI_Comm bc;
    MPI_Comm_dup(MPI_COMM_WORLD, &bc);
    char *cbuf = malloc(MPI_BSEND_OVERHEAD + 64);
    MPI_Comm_attach_buffer(bc, cbuf, MPI_BSEND_OVERHEAD + 64);
    rc = MPI_Bsend(big, 4, MPI_INT, next, 13, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_BUFFER, "a world bsend used the communicator's buffer (%d)", rc);
    MPI_Bsend(big, 4, MPI_INT, next, 13, bc);
    rc = MPI_Bsend(big, 4, MPI_INT, next, 14, bc);
    MPI_Comm_flush_buffer(bc);
    MPI_Recv(got, 4, MPI_INT, prev, 13, bc, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) MPI_Recv(got, 4, MPI_INT, prev, 14, bc, MPI_STATUS_IGNORE);
    MPI_Request fl;
    MPI_Bsend(big, 4, MPI_INT, next, 15, bc);
    MPI_Comm_iflush_buffer(bc, &fl);
    MPI_Recv(got, 4, MPI_INT, prev, 15, bc, MPI_STATUS_IGNORE);
    MPI_Wait(&fl, MPI_STATUS_IGNORE);
    void *cb = NULL;
    MPI_Count csz = 0;
    MPI_Comm_detach_buffer_c(bc, &cb, &csz);
    CHECK(cb == cbuf && csz == MPI_BSEND_OVERHEAD + 64, "comm detach gave back %p/%lld", cb, (long long)csz);
    free(cbuf);
    MPI_Comm_attach_buffer(bc, MPI_BUFFER_AUTOMATIC, 0);
    for (int i = 0; i < 4; i++) MPI_Bsend(big, 64, MPI_INT, next, 16, bc);
    for (int i = 0; i < 4; i++) MPI_Recv(got, 64, MPI_INT, prev, 16, bc, MPI_STATUS_IGNORE);
    MPI_Comm_detach_buffer(bc, &cb, &n);
    CHECK(cb == MPI_BUFFER_AUTOMATIC && n == 0, "automatic detach gave %p/%d", cb, n);
    MPI_Comm_free(&bc);

    /* Matched probe: the message found is received by its handle alone. */
    int v = rank, w = -1;
    MPI_Request sr;
    MPI_Isend(&v, 1, MPI_INT, next, 11, MPI_COMM_WORLD, &sr);
    MPI_Message msg;
    MPI_Status st;
    MPI_Mprobe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &msg, &st);
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 11, "mprobe status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    flag = 1;
    MPI_Message other;
    MPI_Improbe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &flag, &other, MPI_STATUS_IGNORE);
    CHECK(flag == 0, "a matched message was found again");
    MPI_Mrecv(&w, 1, MPI_INT, &msg, &st);
    CHECK(w == prev && msg == MPI_MESSAGE_NULL, "mrecv got %d", w);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);
    MPI_Isend(&v, 1, MPI_INT, next, 12, MPI_COMM_WORLD, &sr);
    flag = 0;
    while (!flag) MPI_Improbe(prev, 12, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
    MPI_Request mr;
    MPI_Imrecv(&w, 1, MPI_INT, &msg, &mr);
    MPI_Wait(&mr, &st);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);
    CHECK(w == prev && st.MPI_SOURCE == prev, "imrecv got %d", w);
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe of MPI_PROC_NULL");
    MPI_Mrecv(&w, 1, MPI_INT, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NULL, "mrecv of MPI_MESSAGE_NO_PROC");

    /* Sendrecv_replace around the ring. */
    int ring[3] = {rank, rank + 1, rank + 2};
    MPI_Sendrecv_replace(ring, 3, MPI_INT, next, 13, prev, 13, MPI_COMM_WORLD, &st);
    CHECK(ring[0] == prev && ring[2] == prev + 2, "sendrecv_replace %d %d", ring[0], ring[2]);

    /* Waitsome, Testsome and Testany over receives from everyone. */
    int *vals = malloc(size * sizeof(int)), *idx = malloc(size * sizeof(int));
    MPI_Request *rs = malloc(size * sizeof(MPI_Request)), *ss = malloc(size * sizeof(MPI_Request));
    for (int i = 0; i < size; i++) {
        vals[i] = -1;
        MPI_Irecv(&vals[i], 1, MPI_INT, i, 14, MPI_COMM_WORLD, &rs[i]);
    }
    for (int i = 0; i < size; i++) MPI_Isend(&rank, 1, MPI_INT, i, 14, MPI_COMM_WORLD, &ss[i]);
    int done = 0, out = 0;
    while (done < size) {
        MPI_Waitsome(size, rs, &out, idx, MPI_STATUSES_IGNORE);
        CHECK(out >= 1, "waitsome returned %d", out);
        for (int k = 0; k < out; k++) CHECK(rs[idx[k]] == MPI_REQUEST_NULL, "waitsome left a handle");
        done += out;
    }
    MPI_Waitsome(size, rs, &out, idx, MPI_STATUSES_IGNORE);
    CHECK(out == MPI_UNDEFINED, "waitsome over nothing gave %d", out);
    for (int i = 0; i < size; i++) CHECK(vals[i] == i, "waitsome value from %d: %d", i, vals[i]);
    int index = 0;
    flag = 0;
    while (1) {
        MPI_Testany(size, ss, &index, &flag, MPI_STATUS_IGNORE);
        if (flag && index == MPI_UNDEFINED) break;
    }
    MPI_Testsome(size, ss, &out, idx, MPI_STATUSES_IGNORE);
    CHECK(out == MPI_UNDEFINED, "testsome over nothing gave %d", out);
    free(ev), free(vals), free(idx), free(rs), free(ss);

    /* Ready and synchronous modes, non-blocking and persistent; the
     * communicator class queries mpi4py asks every communicator. */
    int rv = -1, sv = rank;
    MPI_Request pr[2];
    MPI_Irecv(&rv, 1, MPI_INT, prev, 15, MPI_COMM_WORLD, &pr[0]);
    MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted: ready mode is legal */
    MPI_Irsend(&sv, 1, MPI_INT, next, 15, MPI_COMM_WORLD, &pr[1]);
    MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
    CHECK(rv == prev, "irsend got %d", rv);
    MPI_Recv_init(&rv, 1, MPI_INT, prev, 16, MPI_COMM_WORLD, &pr[0]);
    MPI_Ssend_init(&sv, 1, MPI_INT, next, 16, MPI_COMM_WORLD, &pr[1]);
    for (int k = 0; k < 2; k++) {
        rv = -1;
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        CHECK(rv == prev, "ssend_init round %d got %d", k, rv);
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    CHECK(flag == 0, "MPI_COMM_WORLD is an intercommunicator?");
    MPI_Topo_test(MPI_COMM_WORLD, &r);
    CHECK(r == MPI_UNDEFINED, "topology of MPI_COMM_WORLD %d", r);

    int sum = 0;
    MPI_Allreduce(&errors, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && sum == 0) printf("OK c-groups on %d ranks\n", size);
    MPI_Finalize();
    if (!self_deleted) fprintf(stderr, "[%d] FAIL: MPI_Finalize did not delete MPI_COMM_SELF's attribute first\n", rank);
    return sum == 0 && self_deleted ? 0 : 1;
}
