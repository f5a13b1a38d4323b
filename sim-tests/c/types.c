/* Derived datatypes (MPI 4.1 §5.1) in point-to-point and collectives,
 * packing (§5.2) and external32 (§5.2.3), the v-collectives, scans and
 * reduce-scatters, with roots other than 0 and MPI_IN_PLACE; "OK c-types
 * on N ranks" from rank 0 when every rank passed. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct particle {
    int id;
    double mass;
    char tag;
};

/* external32 (§5.2.3, §13.5.2): big-endian, the standard's sizes (a long
 * in 4 bytes, a long double in IEEE quad), no gaps; packed on one rank,
 * sent as bytes, unpacked on the next. */
static void external32(int next, int prev) {
    char ext32[] = "external32";
    MPI_Aint sz = -1;
    MPI_Pack_external_size(ext32, 1, MPI_LONG, &sz);
    CHECK(sz == 4, "external32 long: %ld bytes", (long)sz);
    MPI_Pack_external_size(ext32, 3, MPI_DOUBLE_INT, &sz);
    CHECK(sz == 36, "external32 3 double_int: %ld bytes", (long)sz);
    MPI_Count szc = -1;
    MPI_Pack_external_size_c(ext32, 2, MPI_LONG_DOUBLE, &szc);
    CHECK(szc == 32, "external32 2 long double: %lld bytes", (long long)szc);

    int two[2] = {1, -2};
    unsigned char out[64];
    MPI_Aint pos = 0;
    CHECK(MPI_Pack_external(ext32, two, 2, MPI_INT, out, sizeof out, &pos) == MPI_SUCCESS && pos == 8, "Pack_external ints");
    unsigned char want[8] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe};
    CHECK(memcmp(out, want, 8) == 0, "ints not big-endian: %02x %02x %02x %02x", out[0], out[1], out[2], out[3]);
    long double ld = 1.0L;
    pos = 0;
    MPI_Pack_external(ext32, &ld, 1, MPI_LONG_DOUBLE, out, sizeof out, &pos);
    CHECK(pos == 16 && out[0] == 0x3f && out[1] == 0xff && out[2] == 0 && out[15] == 0, "long double 1.0 as quad: %02x%02x", out[0], out[1]);
    ld = 0;
    pos = 0;
    MPI_Unpack_external(ext32, out, 16, &pos, &ld, 1, MPI_LONG_DOUBLE);
    CHECK(ld == 1.0L && pos == 16, "quad back to long double: %Lg", ld);

    /* A struct with gaps, two of them with a stride of longs between. */
    struct particle ps[2] = {{7 + rank, 0.5 * rank, 'a'}, {-3, -1e300, 'z'}};
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(struct particle, id), offsetof(struct particle, mass), offsetof(struct particle, tag)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, pt;
    MPI_Type_create_struct(3, bl, disp, types, &pt);
    MPI_Type_commit(&pt);
    MPI_Pack_external_size(ext32, 2, pt, &sz);
    CHECK(sz == 26, "external32 of two particles: %ld bytes", (long)sz);
    long longs[6] = {1L + rank, -1, -2L * rank, -1, 40000, -1};
    MPI_Datatype every_other;
    MPI_Type_vector(3, 1, 2, MPI_LONG, &every_other);
    MPI_Type_commit(&every_other);
    pos = 0;
    CHECK(MPI_Pack_external(ext32, ps, 2, pt, out, sizeof out, &pos) == MPI_SUCCESS && pos == 26, "pack particles: %ld", (long)pos);
    CHECK(out[0] == 0 && out[3] == 7 + rank && out[12] == 'a', "particle bytes %d %d %c", out[0], out[3], out[12]);
    CHECK(MPI_Pack_external(ext32, longs, 1, every_other, out, sizeof out, &pos) == MPI_SUCCESS && pos == 38, "pack longs: %ld", (long)pos);
    unsigned char in[64];
    MPI_Sendrecv(out, 38, MPI_BYTE, next, 50, in, 38, MPI_BYTE, prev, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    struct particle got[2];
    long gl[6] = {0, 9, 0, 9, 0, 9};
    memset(got, 0, sizeof got);
    pos = 0;
    MPI_Unpack_external(ext32, in, 38, &pos, got, 2, pt);
    MPI_Unpack_external(ext32, in, 38, &pos, gl, 1, every_other);
    CHECK(pos == 38, "unpacked to %ld", (long)pos);
    CHECK(got[0].id == 7 + prev && got[0].mass == 0.5 * prev && got[0].tag == 'a', "particle 0 from %d: %d %g %c", prev, got[0].id, got[0].mass, got[0].tag);
    CHECK(got[1].id == -3 && got[1].mass == -1e300 && got[1].tag == 'z', "particle 1: %d %g %c", got[1].id, got[1].mass, got[1].tag);
    CHECK(gl[0] == 1 + prev && gl[2] == -2L * prev && gl[4] == 40000 && gl[1] == 9 && gl[5] == 9, "longs %ld %ld %ld", gl[0], gl[2], gl[4]);

    /* What external32 cannot hold, a representation it does not know,
     * and too small a buffer. */
    long huge = 1L << 40;
    pos = 0;
    CHECK(MPI_Pack_external(ext32, &huge, 1, MPI_LONG, out, sizeof out, &pos) == MPI_ERR_CONVERSION && pos == 0, "a long past 32 bits packed");
    char native[] = "native";
    CHECK(MPI_Pack_external(native, two, 2, MPI_INT, out, sizeof out, &pos) == MPI_ERR_ARG, "datarep native accepted");
    CHECK(MPI_Pack_external(ext32, two, 2, MPI_INT, out, 7, &pos) == MPI_ERR_TRUNCATE && pos == 0, "7 bytes held 8");
    CHECK(MPI_Unpack_external(ext32, want, 7, &pos, two, 2, MPI_INT) == MPI_ERR_TRUNCATE, "7 bytes unpacked to 8");
    MPI_Type_free(&pt);
    MPI_Type_free(&every_other);
}

/* Predefined reductions on derived datatypes (§6.9.2): a type built from
 * one predefined type reduces as that type, including the padded pairs of
 * MPI_MINLOC/MAXLOC, whose data holds the value and the int without the
 * C struct's padding; a type mixing predefined types is MPI_ERR_TYPE. */
static void derived_reductions(void) {
    struct { double v; int i; } in[4], out[4];
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_DOUBLE_INT, &four);
    MPI_Type_commit(&four);
    for (int k = 0; k < 4; k++) {
        in[k].v = rank == k % size ? -1.0 - k : rank + k;
        in[k].i = rank;
    }
    CHECK(MPI_Allreduce(in, out, 1, four, MPI_MINLOC, MPI_COMM_WORLD) == MPI_SUCCESS, "minloc on 4 double_int");
    for (int k = 0; k < 4; k++)
        CHECK(out[k].v == -1.0 - k && out[k].i == k % size, "minloc pair %d: (%g, %d)", k, out[k].v, out[k].i);
    /* The same, non-blocking, to the last rank, completed by polling. */
    int root = size - 1, done = 0, polls = 0;
    MPI_Request rq;
    for (int k = 0; k < 4; k++) out[k].v = 99, out[k].i = -1;
    CHECK(MPI_Ireduce(in, out, 1, four, MPI_MINLOC, root, MPI_COMM_WORLD, &rq) == MPI_SUCCESS, "ireduce minloc");
    while (!done && polls++ < 100000000) MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    CHECK(done, "ireduce minloc never completed");
    for (int k = 0; rank == root && k < 4; k++)
        CHECK(out[k].v == -1.0 - k && out[k].i == k % size, "ireduce minloc pair %d: (%g, %d)", k, out[k].v, out[k].i);
    MPI_Type_free(&four);

    struct { short v; int i; } s_in[2] = {{3, 7}, {-2, 8}}, s_io[2] = {{5, 1}, {-9, 2}};
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_SHORT_INT, &two);
    MPI_Type_commit(&two);
    CHECK(MPI_Reduce_local(s_in, s_io, 1, two, MPI_MAXLOC) == MPI_SUCCESS, "maxloc on 2 short_int");
    CHECK(s_io[0].v == 5 && s_io[0].i == 1 && s_io[1].v == -2 && s_io[1].i == 8, "maxloc pairs (%d,%d) (%d,%d)",
          s_io[0].v, s_io[0].i, s_io[1].v, s_io[1].i);
    MPI_Type_free(&two);

    int lens[2] = {1, 1};
    MPI_Aint disps[2] = {0, 8};
    MPI_Datatype kinds[2] = {MPI_INT, MPI_DOUBLE}, mixed;
    MPI_Type_create_struct(2, lens, disps, kinds, &mixed);
    MPI_Type_commit(&mixed);
    double m_in[2] = {0, 1}, m_io[2] = {0, 2};
    int rc = MPI_Reduce_local(m_in, m_io, 1, mixed, MPI_SUM), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "a struct of int and double reduced by MPI_SUM: class %d", cls);
    MPI_Type_free(&mixed);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Status st;
    int n = 0;

    /* A vector: 3 blocks of 2 ints, stride 4. */
    MPI_Datatype vec;
    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int sz = 0;
    MPI_Aint lb = -1, ext = -1;
    MPI_Type_size(vec, &sz);
    MPI_Type_get_extent(vec, &lb, &ext);
    CHECK(sz == 24 && lb == 0 && ext == 40, "vector size/lb/extent %d/%ld/%ld", sz, (long)lb, (long)ext);
    int grid[12], flat[6];
    for (int i = 0; i < 12; i++) grid[i] = rank * 100 + i;
    MPI_Sendrecv(grid, 1, vec, next, 1, flat, 6, MPI_INT, prev, 1, MPI_COMM_WORLD, &st);
    int want[6] = {0, 1, 4, 5, 8, 9};
    for (int i = 0; i < 6; i++) CHECK(flat[i] == prev * 100 + want[i], "vector as ints [%d] = %d", i, flat[i]);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 6, "count of ints %d", n);
    MPI_Get_count(&st, vec, &n);
    CHECK(n == 1, "count of vectors %d", n);

    /* Received into a vector, non-blocking: the gaps stay as they were. */
    int into[12];
    for (int i = 0; i < 12; i++) into[i] = -1;
    MPI_Request rq[2];
    MPI_Irecv(into, 1, vec, prev, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(flat, 6, MPI_INT, next, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 12; i++) {
        int in_block = (i % 4) < 2;
        int expect = in_block ? (rank + size - 2 + size) % size * 100 + i : -1;
        CHECK(into[i] == expect, "vector receive [%d] = %d, want %d", i, into[i], expect);
    }

    /* A short message into a vector: Get_elements counts the ints. */
    if (size > 1) {
        if (rank == 0) MPI_Send(grid, 3, MPI_INT, 1, 3, MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Recv(into, 1, vec, 0, 3, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, vec, &n);
            CHECK(n == MPI_UNDEFINED, "count of a partial vector %d", n);
            MPI_Get_elements(&st, vec, &n);
            CHECK(n == 3, "elements of a partial vector %d", n);
            CHECK(into[0] == 0 && into[1] == 1 && into[4] == 2, "partial vector %d %d %d", into[0], into[1], into[4]);
        }
    }

    /* A struct laid out as the C compiler lays it out. */
    MPI_Datatype part;
    int lens[3] = {1, 1, 1};
    MPI_Aint disps[3] = {offsetof(struct particle, id), offsetof(struct particle, mass), offsetof(struct particle, tag)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(3, lens, disps, types, &part);
    MPI_Type_commit(&part);
    MPI_Type_get_extent(part, &lb, &ext);
    MPI_Type_size(part, &sz);
    CHECK(ext == (MPI_Aint)sizeof(struct particle) && sz == 13, "struct extent %ld size %d", (long)ext, sz);
    struct particle ps[3], pr[3];
    memset(pr, 0, sizeof pr);
    for (int i = 0; i < 3; i++) {
        ps[i].id = rank * 10 + i;
        ps[i].mass = rank + i / 4.0;
        ps[i].tag = (char)('a' + i);
    }
    MPI_Sendrecv(ps, 2, part, next, 4, pr, 3, part, prev, 4, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, part, &n);
    CHECK(n == 2, "count of structs %d", n);
    MPI_Get_elements(&st, part, &n);
    CHECK(n == 6, "elements of structs %d", n);
    for (int i = 0; i < 2; i++)
        CHECK(pr[i].id == prev * 10 + i && pr[i].mass == prev + i / 4.0 && pr[i].tag == 'a' + i,
              "struct %d: %d %g %c", i, pr[i].id, pr[i].mass, pr[i].tag);
    CHECK(pr[2].id == 0, "a struct beyond the message was written");

    /* Decoding: envelope and contents. */
    int ni, na, nd, comb;
    MPI_Type_get_envelope(vec, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nd == 1, "vector envelope %d %d %d %d", comb, ni, na, nd);
    int ints[3];
    MPI_Aint addrs[1];
    MPI_Datatype olds[1];
    MPI_Type_get_contents(vec, 3, 0, 1, ints, addrs, olds);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && olds[0] == MPI_INT, "vector contents");
    MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_NAMED, "MPI_INT combiner %d", comb);
    char name[MPI_MAX_OBJECT_NAME];
    int namelen = 0;
    MPI_Type_get_name(MPI_DOUBLE, name, &namelen);
    CHECK(strcmp(name, "MPI_DOUBLE") == 0, "name of MPI_DOUBLE: %s", name);
    MPI_Type_set_name(part, "particle");
    MPI_Type_get_name(part, name, &namelen);
    CHECK(strcmp(name, "particle") == 0 && namelen == 8, "set name: %s", name);

    /* Pack and unpack an indexed type. */
    MPI_Datatype idx;
    int bl[2] = {1, 2}, dp[2] = {0, 3};
    MPI_Type_indexed(2, bl, dp, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    int src[5] = {10, 11, 12, 13, 14}, dst[5] = {0, 0, 0, 0, 0};
    char packed[64];
    int pos = 0, psize = 0;
    MPI_Pack_size(1, idx, MPI_COMM_WORLD, &psize);
    CHECK(psize == 12, "pack size %d", psize);
    MPI_Pack(src, 1, idx, packed, sizeof packed, &pos, MPI_COMM_WORLD);
    CHECK(pos == 12, "pack position %d", pos);
    int three[3];
    memcpy(three, packed, 12);
    CHECK(three[0] == 10 && three[1] == 13 && three[2] == 14, "packed %d %d %d", three[0], three[1], three[2]);
    pos = 0;
    MPI_Unpack(packed, 12, &pos, dst, 1, idx, MPI_COMM_WORLD);
    CHECK(pos == 12 && dst[0] == 10 && dst[1] == 0 && dst[3] == 13 && dst[4] == 14, "unpacked");
    pos = 8;
    int rc = MPI_Pack(src, 1, idx, packed, 16, &pos, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TRUNCATE, "pack past the buffer gave %d", rc);

    /* Bad datatypes come back as MPI_ERR_TYPE. */
    MPI_Datatype loose, gone;
    MPI_Type_contiguous(2, MPI_INT, &loose);
    rc = MPI_Send(src, 1, loose, next, 5, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE, "send of an uncommitted type gave %d", rc);
    MPI_Type_dup(vec, &gone);
    MPI_Datatype copy = gone;
    MPI_Type_free(&gone);
    CHECK(gone == MPI_DATATYPE_NULL, "freed handle not reset");
    rc = MPI_Send(src, 1, copy, next, 5, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE, "send of a freed type gave %d", rc);
    MPI_Datatype pre = MPI_INT;
    rc = MPI_Type_free(&pre);
    CHECK(rc == MPI_ERR_TYPE, "freeing MPI_INT gave %d", rc);
    rc = MPI_Type_contiguous(-1, MPI_INT, &gone);
    CHECK(rc == MPI_ERR_COUNT, "negative count gave %d", rc);
    MPI_Type_free(&loose);

    /* A resized column type broadcast from the last rank. */
    MPI_Datatype col, col1;
    MPI_Type_vector(3, 1, 4, MPI_INT, &col);
    MPI_Type_create_resized(col, 0, sizeof(int), &col1);
    MPI_Type_commit(&col1);
    int m[12];
    for (int i = 0; i < 12; i++) m[i] = rank == size - 1 ? i : -1;
    MPI_Bcast(m, 2, col1, size - 1, MPI_COMM_WORLD); /* columns 0 and 1 */
    for (int i = 0; i < 12; i++) {
        int expect = (i % 4) < 2 ? i : (rank == size - 1 ? i : -1);
        CHECK(m[i] == expect, "column bcast [%d] = %d", i, m[i]);
    }

    /* Gatherv to the last rank: rank i sends i+1 ints of value i, with
     * gaps of one between the blocks. */
    int root = size - 1;
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    int total = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1;
        displs[i] = total + i;
        total += i + 1;
    }
    int span = total + size;
    int *gv = malloc(span * sizeof(int)), mine[64];
    for (int i = 0; i < span; i++) gv[i] = -7;
    for (int i = 0; i <= rank; i++) mine[i] = rank;
    MPI_Gatherv(mine, rank + 1, MPI_INT, gv, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int i = 0; i < size; i++) {
            for (int k = 0; k < counts[i]; k++) CHECK(gv[displs[i] + k] == i, "gatherv block %d[%d]", i, k);
            CHECK(gv[displs[i] + counts[i]] == -7, "gatherv wrote a gap after block %d", i);
        }

    /* Scatterv back from rank 0, then Allgatherv in place. */
    for (int i = 0; i < span; i++) gv[i] = rank == 0 ? i : -1;
    int back[64];
    MPI_Scatterv(gv, counts, displs, MPI_INT, back, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int k = 0; k <= rank; k++) CHECK(back[k] == displs[rank] + k, "scatterv [%d] = %d", k, back[k]);
    for (int i = 0; i < span; i++) gv[i] = -1;
    for (int k = 0; k <= rank; k++) gv[displs[rank] + k] = rank * 3;
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gv, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < counts[i]; k++) CHECK(gv[displs[i] + k] == i * 3, "allgatherv in place %d[%d]", i, k);

    /* Alltoallv: (j + 1) ints of rank * 100 + j to rank j. */
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc_ = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int sn = 0, rn = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = j + 1;
        sd[j] = sn;
        sn += j + 1;
        rc_[j] = rank + 1;
        rd[j] = rn;
        rn += rank + 1;
    }
    int *sbuf = malloc(sn * sizeof(int)), *rbuf = malloc(rn * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++) sbuf[sd[j] + k] = rank * 100 + j;
    MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc_, rd, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < rc_[j]; k++) CHECK(rbuf[rd[j] + k] == j * 100 + rank, "alltoallv from %d", j);

    /* Non-blocking Ialltoallv and Igatherv give the same. */
    for (int i = 0; i < rn; i++) rbuf[i] = -1;
    MPI_Request nb;
    MPI_Ialltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc_, rd, MPI_INT, MPI_COMM_WORLD, &nb);
    MPI_Wait(&nb, MPI_STATUS_IGNORE);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < rc_[j]; k++) CHECK(rbuf[rd[j] + k] == j * 100 + rank, "ialltoallv from %d", j);

    /* Scans and reduce-scatters. */
    int v = rank + 1, s = 0, ex = -5;
    MPI_Scan(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(s == (rank + 1) * (rank + 2) / 2, "scan %d", s);
    MPI_Exscan(&v, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0) CHECK(ex == rank * (rank + 1) / 2, "exscan %d", ex);
    MPI_Iscan(&v, &s, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &nb);
    MPI_Wait(&nb, MPI_STATUS_IGNORE);
    CHECK(s == rank + 1, "iscan max %d", s);
    int *blk = malloc(2 * size * sizeof(int)), two[2];
    for (int i = 0; i < 2 * size; i++) blk[i] = i;
    MPI_Reduce_scatter_block(blk, two, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(two[0] == 2 * rank * size && two[1] == (2 * rank + 1) * size, "reduce_scatter_block %d %d", two[0], two[1]);
    int *all = malloc(total * sizeof(int)), part_[64];
    for (int i = 0; i < total; i++) all[i] = 1;
    MPI_Reduce_scatter(all, part_, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k <= rank; k++) CHECK(part_[k] == size, "reduce_scatter [%d] = %d", k, part_[k]);
    /* Its non-blocking form, in place: rank r's block (r + 1 elements)
     * starts at r(r+1)/2; every rank contributes its index there. */
    for (int i = 0; i < total; i++) all[i] = rank + i;
    MPI_Ireduce_scatter(MPI_IN_PLACE, all, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &nb);
    MPI_Wait(&nb, MPI_STATUS_IGNORE);
    for (int k = 0; k <= rank; k++) {
        int at = rank * (rank + 1) / 2 + k;
        CHECK(all[k] == size * at + size * (size - 1) / 2, "ireduce_scatter [%d] = %d", k, all[k]);
    }

    /* Alltoallw: to peer i, i + 1 ints at a byte displacement, sent as
     * MPI_INT, or as pairs of ints when i + 1 is even; its I form. */
    {
        int wtot = size * (size + 1) / 2, *wsend = malloc(wtot * sizeof(int));
        int *wrecv = malloc(size * (rank + 1) * sizeof(int));
        int *wsc = malloc(4 * size * sizeof(int)), *wsd = wsc + size, *wrc = wsc + 2 * size, *wrd = wsc + 3 * size;
        MPI_Datatype *wst = malloc(2 * size * sizeof(MPI_Datatype)), *wrt = wst + size, wpair;
        MPI_Type_contiguous(2, MPI_INT, &wpair);
        MPI_Type_commit(&wpair);
        for (int i = 0, at = 0; i < size; at += i + 1, i++) {
            for (int k = 0; k <= i; k++) wsend[at + k] = rank * 1000 + i * 10 + k;
            wst[i] = (i + 1) % 2 == 0 ? wpair : MPI_INT;
            wsc[i] = (i + 1) % 2 == 0 ? (i + 1) / 2 : i + 1;
            wsd[i] = at * (int)sizeof(int);
            wrt[i] = MPI_INT;
            wrc[i] = rank + 1;
            wrd[i] = i * (rank + 1) * (int)sizeof(int);
        }
        for (int round = 0; round < 2; round++) {
            for (int k = 0; k < size * (rank + 1); k++) wrecv[k] = -1;
            if (round == 0) {
                MPI_Alltoallw(wsend, wsc, wsd, wst, wrecv, wrc, wrd, wrt, MPI_COMM_WORLD);
            } else {
                MPI_Ialltoallw(wsend, wsc, wsd, wst, wrecv, wrc, wrd, wrt, MPI_COMM_WORLD, &nb);
                MPI_Wait(&nb, MPI_STATUS_IGNORE);
            }
            for (int j = 0; j < size; j++)
                for (int k = 0; k <= rank; k++)
                    CHECK(wrecv[j * (rank + 1) + k] == j * 1000 + rank * 10 + k, "alltoallw round %d from %d [%d] = %d", round, j, k, wrecv[j * (rank + 1) + k]);
        }
        /* Zero counts everywhere, with null buffers: nothing moves, no error. */
        for (int i = 0; i < size; i++) wsc[i] = wsd[i] = wrc[i] = wrd[i] = 0;
        rc = MPI_Alltoallw(NULL, wsc, wsd, wst, NULL, wrc, wrd, wrt, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "a zero-count alltoallw gave %d", rc);
        MPI_Type_free(&wpair);
        free(wsend), free(wrecv), free(wsc), free(wst);
    }

    /* Fortran-sized types by class and size. */
    MPI_Datatype matched = MPI_DATATYPE_NULL;
    int msz = 0;
    MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &matched);
    MPI_Type_size(matched, &msz);
    CHECK(matched == MPI_REAL8 && msz == 8, "match_size real 8 gave size %d", msz);
    rc = MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &matched);
    CHECK(rc == MPI_ERR_ARG, "a 3-byte integer class gave %d", rc);

    /* Absolute addresses: a type whose displacement is an address, sent
     * from MPI_BOTTOM to oneself. */
    double arr[4] = {rank, rank + 0.25, rank + 0.5, rank + 0.75}, dback[4] = {0};
    MPI_Aint a0, a3;
    MPI_Get_address(&arr[0], &a0);
    MPI_Get_address(&arr[3], &a3);
    CHECK(MPI_Aint_diff(a3, a0) == 3 * (MPI_Aint)sizeof(double) && MPI_Aint_add(a0, 24) == a3, "address arithmetic");
    int four = 4;
    MPI_Datatype absolute;
    MPI_Type_create_hindexed(1, &four, &a0, MPI_DOUBLE, &absolute);
    MPI_Type_commit(&absolute);
    MPI_Sendrecv(MPI_BOTTOM, 1, absolute, rank, 77, dback, 4, MPI_DOUBLE, rank, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(dback[3] == rank + 0.75 && dback[0] == rank, "send from MPI_BOTTOM %g", dback[3]);
    MPI_Type_free(&absolute);

    /* Iallgather of a contiguous derived type, and zero counts of one. */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int my2[2] = {rank, -rank}, *ag = malloc(2 * size * sizeof(int));
    MPI_Iallgather(my2, 1, pair, ag, 1, pair, MPI_COMM_WORLD, &nb);
    MPI_Wait(&nb, MPI_STATUS_IGNORE);
    for (int i = 0; i < size; i++) CHECK(ag[2 * i] == i && ag[2 * i + 1] == -i, "iallgather pair %d", i);
    int untouched = 42;
    MPI_Allgather(&untouched, 0, vec, &untouched, 0, vec, MPI_COMM_WORLD);
    CHECK(untouched == 42, "zero-count allgather wrote %d", untouched);

    /* Alltoall of columns: a transpose through a strided receive type. */
    int *rows = malloc(size * sizeof(int)), *cols = malloc(size * 2 * sizeof(int));
    for (int j = 0; j < size; j++) rows[j] = rank * size + j;
    for (int j = 0; j < 2 * size; j++) cols[j] = -1;
    MPI_Datatype every2, every2r;
    MPI_Type_vector(1, 1, 2, MPI_INT, &every2);
    MPI_Type_create_resized(every2, 0, 2 * sizeof(int), &every2r);
    MPI_Type_commit(&every2r);
    MPI_Alltoall(rows, 1, MPI_INT, cols, 1, every2r, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        CHECK(cols[2 * j] == j * size + rank && cols[2 * j + 1] == -1, "strided alltoall [%d] = %d", j, cols[2 * j]);

    MPI_Type_free(&vec);
    MPI_Type_free(&part);
    MPI_Type_free(&idx);
    MPI_Type_free(&col);
    MPI_Type_free(&col1);
    MPI_Type_free(&pair);
    MPI_Type_free(&every2);
    MPI_Type_free(&every2r);
    free(counts), free(displs), free(gv), free(sc), free(sd), free(rc_), free(rd), free(sbuf), free(rbuf);
    free(blk), free(all), free(ag), free(rows), free(cols);

    /* Reduce_local (§6.9.7): no communication, inout = in op inout. */
    double din[3] = {1.5, -2, 4}, dio[3] = {2, 5, -1};
    MPI_Reduce_local(din, dio, 3, MPI_DOUBLE, MPI_MAX);
    CHECK(dio[0] == 2 && dio[1] == 5 && dio[2] == 4, "reduce_local max %g %g %g", dio[0], dio[1], dio[2]);
    int iin[2] = {3, 4}, iio[2] = {5, 6};
    MPI_Reduce_local(iin, iio, 2, MPI_INT, MPI_PROD);
    CHECK(iio[0] == 15 && iio[1] == 24, "reduce_local prod %d %d", iio[0], iio[1]);
    CHECK(MPI_Reduce_local(iio, iio, 2, MPI_INT, MPI_SUM) == MPI_ERR_BUFFER, "overlapping reduce_local accepted");

    external32(next, prev);
    derived_reductions();

    int sum = 0;
    MPI_Allreduce(&errors, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && sum == 0) printf("OK c-types on %d ranks\n", size);
    MPI_Finalize();
    return sum == 0 ? 0 : 1;
}
