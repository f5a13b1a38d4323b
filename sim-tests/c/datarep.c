/* User data representations (MPI 4.1 §14.5.3): a representation that
 * stores ints big-endian, registered with conversion functions in both
 * the int and the large-count form; collective and independent accesses
 * through it, checked against the bytes of a native view; a short read;
 * MPI_File_get_type_extent; a representation that would change sizes
 * (refused); and a conversion that fails in one rank only of a
 * collective write (MPI_ERR_CONVERSION there, the others unharmed).
 *
 * usage: c-datarep DIR   (a directory every rank can write) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define N 16 /* ints per rank */

static char path[4096];

struct state {
    int calls;     /* conversion calls */
    int extents;   /* extent calls */
    int fail;      /* the write conversion fails */
    long long items; /* items converted */
};

static uint32_t swap(uint32_t v) {
    return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

/* Both directions are the same byte swap: from the (tiled) ints at item
 * `pos` of `user` to or from `count` contiguous ints in `file`. The type
 * query is one a conversion function may make. */
static int convert(void *user, MPI_Datatype t, MPI_Count count, void *file, MPI_Offset pos, void *extra, int reading) {
    struct state *s = extra;
    int sz;
    s->calls++;
    s->items += count;
    if (MPI_Type_size(t, &sz) != MPI_SUCCESS || sz != 4) return MPI_ERR_TYPE;
    if (!reading && s->fail) return MPI_ERR_OTHER;
    uint32_t *u = (uint32_t *)user + pos, *f = file;
    for (MPI_Count i = 0; i < count; i++) {
        if (reading) u[i] = swap(f[i]);
        else f[i] = swap(u[i]);
    }
    return MPI_SUCCESS;
}
static int read_int(void *u, MPI_Datatype t, int n, void *f, MPI_Offset p, void *x) { return convert(u, t, n, f, p, x, 1); }
static int write_int(void *u, MPI_Datatype t, int n, void *f, MPI_Offset p, void *x) { return convert(u, t, n, f, p, x, 0); }
static int read_c(void *u, MPI_Datatype t, MPI_Count n, void *f, MPI_Offset p, void *x) { return convert(u, t, n, f, p, x, 1); }
static int write_c(void *u, MPI_Datatype t, MPI_Count n, void *f, MPI_Offset p, void *x) { return convert(u, t, n, f, p, x, 0); }

static int same_extent(MPI_Datatype t, MPI_Aint *extent, void *extra) {
    MPI_Aint lb;
    ((struct state *)extra)->extents++;
    return MPI_Type_get_extent(t, &lb, extent);
}
static int double_extent(MPI_Datatype t, MPI_Aint *extent, void *extra) {
    int rc = same_extent(t, extent, extra);
    *extent *= 2;
    return rc;
}

static int class_of(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* Every rank writes its ints through `rep` collectively, reads them back
 * through it and, through a native view, finds them big-endian. */
static void round_trip(const char *rep, struct state *s) {
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_SUCCESS, "%s: open %d", rep, rc);
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, rep, MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "%s: set_view %d", rep, rc);
    int buf[N], back[N], raw[N], count;
    for (int i = 0; i < N; i++) buf[i] = rank * 1000 + i;
    s->calls = 0;
    MPI_Status st;
    rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == N, "%s: write_at_all %d, count %d", rep, rc, count);
    CHECK(s->calls == 1, "%s: %d write conversions", rep, s->calls);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    memset(back, 0, sizeof back);
    rc = MPI_File_read_at(fh, (MPI_Offset)rank * N, back, N, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == N && memcmp(back, buf, sizeof buf) == 0, "%s: read_at %d, count %d, [1] %d", rep,
          rc, count, back[1]);
    /* The bytes in the file are the file representation. */
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_read_at(fh, (MPI_Offset)rank * N, raw, N, MPI_INT, &st);
    int swapped = 1;
    for (int i = 0; i < N; i++) swapped &= (uint32_t)raw[i] == swap((uint32_t)buf[i]);
    CHECK(swapped, "%s: the file holds %#x for %#x", rep, (unsigned)raw[1], (unsigned)buf[1]);
    /* A read past the end converts the whole items there are. */
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, rep, MPI_INFO_NULL);
    s->items = 0;
    int last = size - 1, tail[N + 5];
    rc = MPI_File_read_at(fh, (MPI_Offset)last * N + 3, tail, N + 5, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == N - 3 && s->items == N - 3 && tail[0] == last * 1000 + 3,
          "%s: short read %d, count %d, %lld items, [0] %d", rep, rc, count, s->items, tail[0]);
    /* The individual pointer and a split collective. */
    MPI_File_seek(fh, (MPI_Offset)rank * N, MPI_SEEK_SET);
    memset(back, 0, sizeof back);
    MPI_File_read_all_begin(fh, back, N, MPI_INT);
    rc = MPI_File_read_all_end(fh, back, &st);
    CHECK(rc == MPI_SUCCESS && memcmp(back, buf, sizeof buf) == 0, "%s: split read %d", rep, rc);
    MPI_Offset at;
    MPI_File_get_position(fh, &at);
    CHECK(at == (MPI_Offset)(rank + 1) * N, "%s: pointer at %lld", rep, (long long)at);
    MPI_Aint x = 0;
    s->extents = 0;
    rc = MPI_File_get_type_extent(fh, MPI_INT, &x);
    CHECK(rc == MPI_SUCCESS && x == 4 && s->extents == 1, "%s: type extent %ld, %d calls", rep, (long)x, s->extents);
    MPI_File_close(&fh);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: c-datarep DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(path, sizeof path, "%s/c-datarep.dat", argv[1]);
    static struct state s, sc, wide;
    CHECK(MPI_Register_datarep("dn-big-endian", read_int, write_int, same_extent, &s) == MPI_SUCCESS, "register");
    CHECK(MPI_Register_datarep_c("dn-big-endian-c", read_c, write_c, same_extent, &sc) == MPI_SUCCESS, "register_c");
    CHECK(MPI_Register_datarep("dn-wide", read_int, write_int, double_extent, &wide) == MPI_SUCCESS, "register wide");
    round_trip("dn-big-endian", &s);
    round_trip("dn-big-endian-c", &sc);

    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    int rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "dn-wide", MPI_INFO_NULL);
    CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "a representation that doubles sizes: %d", class_of(rc));

    /* The last rank's conversion fails in a collective write: it gets
     * MPI_ERR_CONVERSION, the others write, nobody waits for ever. */
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "dn-big-endian", MPI_INFO_NULL);
    s.fail = rank == size - 1;
    int buf[N];
    for (int i = 0; i < N; i++) buf[i] = i;
    rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_INT, MPI_STATUS_IGNORE);
    if (rank == size - 1) CHECK(class_of(rc) == MPI_ERR_CONVERSION, "a failed conversion: class %d", class_of(rc));
    else CHECK(rc == MPI_SUCCESS, "write beside a failed conversion: %d", rc);
    rc = MPI_File_write_ordered(fh, buf, N, MPI_INT, MPI_STATUS_IGNORE);
    if (rank == size - 1) CHECK(class_of(rc) == MPI_ERR_CONVERSION, "a failed ordered conversion: class %d", class_of(rc));
    else CHECK(rc == MPI_SUCCESS, "ordered write beside a failed conversion: %d", rc);
    s.fail = 0;
    rc = MPI_File_write_at(fh, (MPI_Offset)rank * N, buf, N, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "a write after a failed one: %d", rc);
    MPI_File_close(&fh);

    int total;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("OK c-datarep on %d ranks\n", size);
    MPI_Finalize();
    return total != 0;
}
