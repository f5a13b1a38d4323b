/* Array datatypes and the large-count constructors: subarrays (MPI 4.1
 * §5.1.3) sent and received, distributed arrays (§5.1.4) over the grid
 * MPI_Dims_create (§8.5.2) chooses, decoding with get_envelope_c and
 * get_contents_c (§5.1.13), and the Fortran kind types (§19.2.5);
 * "OK c-arrays on N ranks" from rank 0 when every rank passed. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define ROWS 6
#define COLS 5

/* Pack the global ROWS x COLS array (values: their C-order index) with a
 * distributed-array type and check the piece: indices in increasing
 * typemap order, and, summed over the ranks, every index exactly once. */
static void check_darray(int order, const int *psizes, int dist0, int darg0)
{
    int g[ROWS * COLS], gsizes[2] = {ROWS, COLS};
    int distribs[2] = {dist0, MPI_DISTRIBUTE_BLOCK};
    int dargs[2] = {darg0, MPI_DISTRIBUTE_DFLT_DARG};
    for (int i = 0; i < ROWS * COLS; i++) g[i] = i;
    MPI_Datatype da;
    int rc = MPI_Type_create_darray(size, rank, 2, gsizes, distribs, dargs, psizes, order, MPI_INT, &da);
    CHECK(rc == MPI_SUCCESS, "darray rc %d", rc);
    if (rc != MPI_SUCCESS) return;
    MPI_Type_commit(&da);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(da, &lb, &ext);
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof g, "darray lb %ld extent %ld", (long)lb, (long)ext);
    int bytes = 0, pos = 0;
    MPI_Type_size(da, &bytes);
    int n = bytes / (int)sizeof(int);
    int *mine = malloc(sizeof g);
    MPI_Pack(g, 1, da, mine, (int)sizeof g, &pos, MPI_COMM_WORLD);
    CHECK(pos == bytes, "packed %d of %d bytes", pos, bytes);
    int seen[ROWS * COLS] = {0}, all[ROWS * COLS];
    for (int k = 0; k < n; k++) {
        int v = mine[k];
        CHECK(v >= 0 && v < ROWS * COLS, "darray element %d = %d", k, v);
        if (v < 0 || v >= ROWS * COLS) continue;
        seen[v]++;
        /* In either order, the typemap runs through the array's memory
         * in increasing offsets (the value is the offset). */
        if (k > 0) CHECK(mine[k - 1] < v, "darray order: %d before %d", mine[k - 1], v);
    }
    MPI_Allreduce(seen, all, ROWS * COLS, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < ROWS * COLS; i++)
        CHECK(all[i] == 1, "element %d is in %d pieces (order %d dist %d darg %d)", i, all[i], order, dist0, darg0);
    /* Decoding gives back the arguments (§5.1.13). */
    int ni, na, nd, comb, ints[4 * 2 + 4];
    MPI_Aint aints[1];
    MPI_Datatype types[1];
    MPI_Type_get_envelope(da, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_DARRAY && ni == 12 && na == 0 && nd == 1, "darray envelope %d %d %d %d", comb, ni,
          na, nd);
    MPI_Type_get_contents(da, 12, 0, 1, ints, aints, types);
    CHECK(ints[0] == size && ints[1] == rank && ints[2] == 2 && ints[3] == ROWS && ints[5] == dist0 &&
              ints[10] == psizes[1] && ints[11] == order,
          "darray contents");
    CHECK(types[0] == MPI_INT, "darray contents type");
    free(mine);
    MPI_Type_free(&da);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* A 2x3 block at (1, 2) of a 4x5 array, C order, sent to a
     * contiguous receive; and back into a Fortran-order view. */
    int a[4][5], got[6];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) a[i][j] = rank * 100 + i * 10 + j;
    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_commit(&sub);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(sub, &lb, &ext);
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof a, "subarray lb %ld extent %ld", (long)lb, (long)ext);
    MPI_Sendrecv(a, 1, sub, next, 1, got, 6, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int k = 0; k < 6; k++) {
        int want = prev * 100 + (1 + k / 3) * 10 + 2 + k % 3;
        CHECK(got[k] == want, "subarray element %d = %d, want %d", k, got[k], want);
    }
    /* The large-count form makes the same type, and records its sizes as
     * large counts (§5.1.13). */
    MPI_Count csizes[2] = {4, 5}, csubs[2] = {2, 3}, cstarts[2] = {1, 2};
    MPI_Datatype subc;
    MPI_Type_create_subarray_c(2, csizes, csubs, cstarts, MPI_ORDER_C, MPI_INT, &subc);
    MPI_Count subsize = -1, cni, cna, cnc, cnd;
    int ccomb;
    MPI_Type_size_c(subc, &subsize);
    MPI_Type_get_envelope_c(subc, &cni, &cna, &cnc, &cnd, &ccomb);
    CHECK(subsize == 6 * (MPI_Count)sizeof(int) && ccomb == MPI_COMBINER_SUBARRAY && cni == 2 && cnc == 6 && cnd == 1,
          "subarray_c: size %ld, envelope %ld %ld %ld %ld", (long)subsize, (long)cni, (long)cna, (long)cnc, (long)cnd);
    MPI_Type_free(&subc);
    /* Fortran order: the same memory seen as a 5x4 column-major array,
     * block (2, 1) of 3x2: a[1..3][2..5] again. */
    int fsizes[2] = {5, 4}, fsubs[2] = {3, 2}, fstarts[2] = {2, 1}, back[4][5];
    MPI_Datatype fsub;
    MPI_Type_create_subarray(2, fsizes, fsubs, fstarts, MPI_ORDER_FORTRAN, MPI_INT, &fsub);
    MPI_Type_commit(&fsub);
    memset(back, 0xff, sizeof back);
    MPI_Sendrecv(got, 6, MPI_INT, prev, 2, back, 1, fsub, next, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) {
            int inside = i >= 1 && i < 3 && j >= 2;
            CHECK(back[i][j] == (inside ? a[i][j] : -1), "fortran subarray [%d][%d] = %d", i, j, back[i][j]);
        }
    /* Bad arguments come back as errors. */
    MPI_Datatype bad = MPI_DATATYPE_NULL;
    int big[2] = {5, 3};
    CHECK(MPI_Type_create_subarray(2, sizes, big, starts, MPI_ORDER_C, MPI_INT, &bad) != MPI_SUCCESS,
          "subsize > size accepted");
    CHECK(MPI_Type_create_subarray(2, sizes, subs, starts, 99, MPI_INT, &bad) != MPI_SUCCESS, "order 99 accepted");

    /* Dims_create: balanced, largest first, fixed entries kept. */
    int d3[3] = {0, 0, 0}, d2[2] = {0, 3}, d1[2] = {0, 0};
    MPI_Dims_create(24, 3, d3);
    CHECK(d3[0] == 4 && d3[1] == 3 && d3[2] == 2, "dims(24, 3) = %d %d %d", d3[0], d3[1], d3[2]);
    MPI_Dims_create(12, 2, d2);
    CHECK(d2[0] == 4 && d2[1] == 3, "dims(12, {0,3}) = %d %d", d2[0], d2[1]);
    int d5[2] = {0, 3};
    CHECK(MPI_Dims_create(10, 2, d5) == MPI_ERR_DIMS, "dims(10, {0,3}) accepted");

    /* Distributed arrays over the grid Dims_create picks. */
    MPI_Dims_create(size, 2, d1);
    for (int order = 0; order < 2; order++) {
        int o = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
        check_darray(o, d1, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG);
        check_darray(o, d1, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG);
        check_darray(o, d1, MPI_DISTRIBUTE_CYCLIC, 2);
    }
    int wrong[2] = {size + 1, 1};
    int gs[2] = {ROWS, COLS}, ds[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK};
    int dg[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
    CHECK(MPI_Type_create_darray(size, rank, 2, gs, ds, dg, wrong, MPI_ORDER_C, MPI_INT, &bad) != MPI_SUCCESS,
          "a grid of the wrong size accepted");

    /* Large counts: a type of more than INT_MAX bytes, decoded. */
    MPI_Count huge = (MPI_Count)INT_MAX + 1000, csize = 0, nc[4];
    MPI_Datatype big_t;
    MPI_Type_contiguous_c(huge, MPI_BYTE, &big_t);
    MPI_Type_size_c(big_t, &csize);
    CHECK(csize == huge, "contiguous_c size %lld", (long long)csize);
    int isize = 0, comb = 0;
    MPI_Type_size(big_t, &isize);
    CHECK(isize == MPI_UNDEFINED, "int size of a huge type %d", isize);
    MPI_Type_get_envelope_c(big_t, &nc[0], &nc[1], &nc[2], &nc[3], &comb);
    CHECK(comb == MPI_COMBINER_CONTIGUOUS && nc[0] == 0 && nc[1] == 0 && nc[2] == 1 && nc[3] == 1,
          "contiguous_c envelope");
    MPI_Count counts[1] = {0};
    MPI_Datatype base = MPI_DATATYPE_NULL;
    MPI_Type_get_contents_c(big_t, 0, 0, 1, 1, NULL, NULL, counts, &base);
    CHECK(counts[0] == huge && base == MPI_BYTE, "contiguous_c contents %lld", (long long)counts[0]);
    int ni, na, nd;
    CHECK(MPI_Type_get_envelope(big_t, &ni, &na, &nd, &comb) == MPI_ERR_TYPE,
          "the int envelope of a large-count type does not say MPI_ERR_TYPE");
    MPI_Type_free(&big_t);
    /* The int form decodes as before, also through the _c calls. */
    MPI_Datatype v;
    MPI_Type_vector(3, 2, 4, MPI_INT, &v);
    MPI_Type_get_envelope_c(v, &nc[0], &nc[1], &nc[2], &nc[3], &comb);
    CHECK(comb == MPI_COMBINER_VECTOR && nc[0] == 3 && nc[2] == 0, "vector envelope_c");
    MPI_Type_free(&v);
    /* A large-count vector sends like the int one. */
    MPI_Type_vector_c(2, 3, 5, MPI_INT, &v);
    MPI_Type_commit(&v);
    int row[10], col[6];
    for (int k = 0; k < 10; k++) row[k] = rank * 10 + k;
    MPI_Sendrecv(row, 1, v, next, 3, col, 6, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int k = 0; k < 6; k++)
        CHECK(col[k] == prev * 10 + (k / 3) * 5 + k % 3, "vector_c element %d = %d", k, col[k]);
    MPI_Type_free(&v);

    /* A type is stored in the size of its description: a vector of 2^40
     * blocks, and a subarray of a 2^20 x 2^20 array nested in it, build
     * and answer queries at once (flattened into blocks they would need
     * terabytes), and a 2^20-block vector carries data. */
    MPI_Datatype vast, vast2, wide;
    MPI_Type_vector_c((MPI_Count)1 << 40, 1, 2, MPI_INT, &vast);
    MPI_Type_contiguous(4, vast, &vast2);
    MPI_Type_commit(&vast2);
    MPI_Count hs = 0, hlb = -1, hext = 0;
    MPI_Type_size_c(vast2, &hs);
    MPI_Type_get_extent_c(vast2, &hlb, &hext);
    CHECK(hs == ((MPI_Count)16 << 40), "huge vector size %lld", (long long)hs);
    CHECK(hlb == 0 && hext == 4 * (((MPI_Count)8 << 40) - 4), "huge vector extent %lld", (long long)hext);
    MPI_Type_free(&vast);
    MPI_Type_free(&vast2);
    int wsizes[2] = {1 << 20, 1 << 20}, wsub[2] = {1 << 19, 1 << 19}, wstart[2] = {1, 2};
    MPI_Type_create_subarray(2, wsizes, wsub, wstart, MPI_ORDER_C, MPI_CHAR, &wide);
    MPI_Type_commit(&wide);
    MPI_Type_size_c(wide, &hs);
    CHECK(hs == ((MPI_Count)1 << 38), "wide subarray size %lld", (long long)hs);
    MPI_Type_free(&wide);
    /* Blocks of no elements: an empty type, extent 0 whatever the stride. */
    MPI_Datatype hollow;
    MPI_Type_vector(3, 0, 2, MPI_INT, &hollow);
    MPI_Type_size_c(hollow, &hs);
    MPI_Type_get_extent_c(hollow, &hlb, &hext);
    CHECK(hs == 0 && hlb == 0 && hext == 0, "vector of empty blocks: size %lld lb %lld extent %lld", (long long)hs,
          (long long)hlb, (long long)hext);
    MPI_Type_free(&hollow);
    MPI_Datatype spread;
    int n20 = 1 << 20;
    MPI_Type_vector(n20, 1, 2, MPI_INT, &spread);
    MPI_Type_commit(&spread);
    static int sparse[2 << 20], dense[1 << 20];
    for (int k = 0; k < 2 * n20; k++) sparse[k] = k;
    MPI_Sendrecv(sparse, 1, spread, next, 4, dense, n20, MPI_INT, prev, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(dense[0] == 0 && dense[n20 - 1] == 2 * (n20 - 1), "a 2^20-block vector moved %d .. %d", dense[0],
          dense[n20 - 1]);
    MPI_Type_free(&spread);

    /* Issue 30: sizes that cannot be served are refused with an error
     * class, never an abort. Bounds beyond the address space: */
    int two[2] = {1, 1}, eclass = -1;
    MPI_Aint far[2] = {(MPI_Aint)1 << 62, -((MPI_Aint)1 << 62)};
    MPI_Datatype ints2[2] = {MPI_INT, MPI_INT}, wild = MPI_DATATYPE_NULL;
    MPI_Error_class(MPI_Type_create_struct(2, two, far, ints2, &wild), &eclass);
    CHECK(eclass == MPI_ERR_COUNT && wild == MPI_DATATYPE_NULL, "a struct of extent 2^63 gave class %d", eclass);
    /* INT_MAX elements of 1000 doubles each (16 TB): it used to ask for a
     * 16 TB staging buffer (an abort, then MPI_ERR_NO_MEM); a message of
     * a derived type is now unpacked a chunk at a time as it arrives, so
     * the receive is posted with no staging at all, and cancelled. */
    MPI_Datatype kilo;
    MPI_Type_vector(1000, 1, 2, MPI_DOUBLE, &kilo);
    MPI_Type_commit(&kilo);
    MPI_Request never = MPI_REQUEST_NULL;
    double one = 0;
    MPI_Error_class(MPI_Irecv(&one, INT_MAX, kilo, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &never), &eclass);
    CHECK(eclass == MPI_SUCCESS && never != MPI_REQUEST_NULL, "a 16 TB receive gave class %d", eclass);
    if (never != MPI_REQUEST_NULL) {
        MPI_Status cs;
        int cancelled = 0;
        MPI_Cancel(&never);
        MPI_Wait(&never, &cs);
        MPI_Test_cancelled(&cs, &cancelled);
        CHECK(cancelled, "the 16 TB receive was not cancelled");
    }
    MPI_Type_free(&kilo);
    /* A subarray of INT_MAX x INT_MAX ints: refused at once. */
    int isz[2] = {INT_MAX, INT_MAX}, ione[2] = {1, 1}, izero[2] = {0, 0};
    MPI_Error_class(MPI_Type_create_subarray(2, isz, ione, izero, MPI_ORDER_C, MPI_INT, &wild), &eclass);
    CHECK(eclass == MPI_ERR_COUNT, "an INT_MAX x INT_MAX subarray gave class %d", eclass);

    /* Fortran kinds: predefined, the same handle each time, never freed. */
    MPI_Datatype i4, i4b, r8;
    MPI_Type_create_f90_integer(9, &i4);
    MPI_Type_create_f90_integer(9, &i4b);
    MPI_Type_create_f90_real(15, 300, &r8);
    CHECK(i4 == i4b, "f90 integer handles differ");
    MPI_Type_size(i4, &isize);
    CHECK(isize == 4, "f90 integer(9) size %d", isize);
    MPI_Type_size(r8, &isize);
    CHECK(isize == 8, "f90 real(15, 300) size %d", isize);
    MPI_Type_get_envelope(r8, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_F90_REAL && ni == 2, "f90 real envelope %d %d", comb, ni);
    CHECK(MPI_Type_free(&i4) == MPI_ERR_TYPE, "an f90 type was freed");
    CHECK(MPI_Type_create_f90_integer(40, &i4) != MPI_SUCCESS, "integer(40) accepted");

    MPI_Type_free(&sub);
    MPI_Type_free(&fsub);
    int sum = 0;
    MPI_Allreduce(&errors, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && sum == 0) printf("OK c-arrays on %d ranks\n", size);
    MPI_Finalize();
    return sum == 0 ? 0 : 1;
}
