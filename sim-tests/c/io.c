/* MPI-IO (MPI 4.1 chapter 14) from C: every way to say where data goes
 * (explicit offsets, the individual pointer, the shared pointer, ordered),
 * blocking, non-blocking and split collective, through a strided view,
 * and the errors of §14.7 on the files' error handler.
 *
 * usage: c-io DIR   (a directory every rank can write; the files are removed) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define N 8 /* ints per rank */

static char path[4096];
static int handler_calls = 0, handler_code = 0;

static void on_file_error(MPI_File *fh, int *code, ...) {
    (void)fh;
    handler_calls++;
    handler_code = *code;
}

static int class_of(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* Each rank writes its N ints at its own explicit offset; all read all. */
static void explicit_offsets(void) {
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_SUCCESS, "open: %d", rc);
    int buf[N];
    for (int i = 0; i < N; i++) buf[i] = rank * 100 + i;
    MPI_Status st;
    rc = MPI_File_write_at(fh, (MPI_Offset)rank * N * sizeof(int), buf, N, MPI_INT, &st);
    int count;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == N, "write_at: rc %d count %d", rc, count);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int *all = malloc(sizeof(int) * N * size);
    rc = MPI_File_read_at_all(fh, 0, all, N * size, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == N * size, "read_at_all: rc %d count %d", rc, count);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(all[r * N + i] == r * 100 + i, "read %d at [%d][%d]", all[r * N + i], r, i);
    /* Reading past the end gives what is there: a short count. */
    rc = MPI_File_read_at(fh, (MPI_Offset)(N * size - 2) * sizeof(int), all, 5, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == 2, "read at the end: rc %d count %d", rc, count);
    MPI_Offset sz;
    MPI_File_get_size(fh, &sz);
    CHECK(sz == (MPI_Offset)(N * size * sizeof(int)), "size %lld", (long long)sz);
    free(all);
    MPI_File_close(&fh);
    CHECK(fh == MPI_FILE_NULL, "close did not set MPI_FILE_NULL");
}

/* A view where rank r sees every size-th int starting at its own: the
 * ranks' data interleaves; collective writes, then each reads its own
 * view and rank 0 reads the whole file as bytes. */
static void strided_view(void) {
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_size(fh, 0);
    MPI_Datatype one, filetype;
    MPI_Type_create_indexed_block(1, 1, (int[]){rank}, MPI_INT, &one);
    MPI_Type_create_resized(one, 0, (MPI_Aint)(size * sizeof(int)), &filetype);
    MPI_Type_commit(&filetype);
    int rc = MPI_File_set_view(fh, 16, MPI_INT, filetype, "native", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "set_view: %d", rc);
    int buf[N];
    for (int i = 0; i < N; i++) buf[i] = rank + size * i;
    /* Half with the individual pointer, half non-blocking. */
    MPI_Status st;
    rc = MPI_File_write_all(fh, buf, N / 2, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_all: %d", rc);
    MPI_Offset pos;
    MPI_File_get_position(fh, &pos);
    CHECK(pos == N / 2, "position %lld after %d ints", (long long)pos, N / 2);
    MPI_Offset byte;
    MPI_File_get_byte_offset(fh, pos, &byte);
    CHECK(byte == 16 + (MPI_Offset)((N / 2) * size + rank) * 4, "byte offset %lld", (long long)byte);
    MPI_Request req;
    rc = MPI_File_iwrite(fh, buf + N / 2, N / 2, MPI_INT, &req);
    CHECK(rc == MPI_SUCCESS, "iwrite: %d", rc);
    MPI_Wait(&req, &st);
    int count;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == N / 2, "iwrite count %d", count);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);

    int back[N] = {0};
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    rc = MPI_File_read_all_begin(fh, back, N, MPI_INT);
    CHECK(rc == MPI_SUCCESS, "read_all_begin: %d", rc);
    rc = MPI_File_read_all_end(fh, back, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == N, "read_all_end: rc %d count %d", rc, count);
    for (int i = 0; i < N; i++) CHECK(back[i] == buf[i], "view read %d at %d", back[i], i);
    /* An _end with no _begin is an error, and the file stays usable. */
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    rc = MPI_File_write_all_end(fh, buf, &st);
    CHECK(rc != MPI_SUCCESS, "an _end without a _begin succeeded");

    MPI_Offset disp;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_File_get_view(fh, &disp, &et, &ft, rep);
    CHECK(disp == 16 && et == MPI_INT && strcmp(rep, "native") == 0, "view %lld %s", (long long)disp, rep);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(ft, &lb, &ext);
    CHECK(ext == (MPI_Aint)(size * sizeof(int)), "view filetype extent %ld", (long)ext);
    MPI_Type_free(&ft);

    /* SEEK_END: the view's end, in etypes. */
    MPI_File_seek(fh, 0, MPI_SEEK_END);
    MPI_File_get_position(fh, &pos);
    CHECK(pos == N, "end of the view at %lld, not %d", (long long)pos, N);

    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    if (rank == 0) {
        int *whole = malloc(sizeof(int) * N * size);
        MPI_File_read_at(fh, 16, whole, N * size, MPI_INT, &st);
        for (int i = 0; i < N * size; i++) CHECK(whole[i] == i, "interleaved file has %d at %d", whole[i], i);
        free(whole);
    }
    MPI_Type_free(&one);
    MPI_Type_free(&filetype);
    MPI_File_close(&fh);
}

/* The shared pointer: every rank appends with write_shared; then
 * write_ordered puts the ranks' blocks in rank order after them. */
static void shared_pointer(void) {
    MPI_File fh;
    MPI_File_delete(path, MPI_INFO_NULL);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    int mine[2] = {rank, rank};
    MPI_Status st;
    int rc = MPI_File_write_shared(fh, mine, 2, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_shared: %d", rc);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset sp;
    MPI_File_get_position_shared(fh, &sp);
    CHECK(sp == (MPI_Offset)(2 * size * sizeof(int)), "shared position %lld", (long long)sp);
    int block[3] = {rank, rank + 1000, rank + 2000};
    rc = MPI_File_write_ordered(fh, block, 3, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_ordered: %d", rc);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    if (rank == 0) {
        int n = 2 * size + 3 * size;
        int *all = malloc(sizeof(int) * n);
        MPI_File_read_at(fh, 0, all, n, MPI_INT, &st);
        int seen[64] = {0};
        for (int i = 0; i < 2 * size; i += 2) {
            CHECK(all[i] == all[i + 1] && all[i] >= 0 && all[i] < size, "shared block %d: %d %d", i, all[i], all[i + 1]);
            if (all[i] >= 0 && all[i] < 64) seen[all[i]]++;
        }
        for (int r = 0; r < size && r < 64; r++) CHECK(seen[r] == 1, "rank %d's shared block seen %d times", r, seen[r]);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < 3; k++)
                CHECK(all[2 * size + 3 * r + k] == r + 1000 * k, "ordered [%d][%d] = %d", r, k, all[2 * size + 3 * r + k]);
        free(all);
    }
    /* read_ordered reads them back in the same order. */
    MPI_File_seek_shared(fh, (MPI_Offset)(2 * size * sizeof(int)), MPI_SEEK_SET);
    int back[3] = {-1, -1, -1};
    MPI_File_read_ordered(fh, back, 3, MPI_INT, &st);
    CHECK(back[0] == rank && back[2] == rank + 2000, "read_ordered %d %d", back[0], back[2]);
    MPI_File_close(&fh);
}

/* Errors of §14.7, on the files' handler: MPI_ERRORS_RETURN by default,
 * a user's handler once set on MPI_FILE_NULL. */
static void errors_are_classed(void) {
    MPI_File fh;
    char missing[4200];
    snprintf(missing, sizeof missing, "%s.missing", path);
    int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE, "opening a missing file: class %d", class_of(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(class_of(rc) == MPI_ERR_AMODE, "RDONLY|CREATE: class %d", class_of(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &fh);
    CHECK(class_of(rc) == MPI_ERR_FILE_EXISTS, "EXCL on an existing file: class %d", class_of(rc));
    /* Different modes on different ranks: every rank hears of it. */
    rc = MPI_File_open(MPI_COMM_WORLD, path, rank == size - 1 ? MPI_MODE_RDONLY : MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(size == 1 || class_of(rc) == MPI_ERR_NOT_SAME, "different modes: class %d", class_of(rc));
    if (rc == MPI_SUCCESS) MPI_File_close(&fh);
    rc = MPI_File_delete(missing, MPI_INFO_NULL);
    CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE, "deleting a missing file: class %d", class_of(rc));

    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_SUCCESS, "open read-only: %d", rc);
    int x = 1;
    rc = MPI_File_write(fh, &x, 1, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_READ_ONLY, "writing a read-only file: class %d", class_of(rc));
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external99", MPI_INFO_NULL);
    CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown datarep: class %d", class_of(rc));
    /* A view's start (§14.3): not negative, and MPI_DISPLACEMENT_CURRENT
     * only on a file opened MPI_MODE_SEQUENTIAL. */
    rc = MPI_File_set_view(fh, -8, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "a negative displacement: class %d", class_of(rc));
    rc = MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_DISPLACEMENT_CURRENT on a file not sequential: class %d", class_of(rc));
    int amode;
    MPI_File_get_amode(fh, &amode);
    CHECK(amode == MPI_MODE_RDONLY, "amode %d", amode);
    MPI_File_close(&fh);

    MPI_Errhandler eh;
    MPI_File_create_errhandler(on_file_error, &eh);
    MPI_File_set_errhandler(MPI_FILE_NULL, eh);
    rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(handler_calls == 1 && class_of(handler_code) == MPI_ERR_NO_SUCH_FILE, "user handler: %d calls, code %d",
          handler_calls, handler_code);
    /* A file opened now inherits it. */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_File_write(fh, &x, 1, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(handler_calls == 2 && class_of(handler_code) == MPI_ERR_READ_ONLY, "inherited handler: %d calls", handler_calls);
    MPI_File_close(&fh);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
}

/* MPI_MODE_DELETE_ON_CLOSE and MPI_MODE_APPEND. */
static void modes(void) {
    MPI_File fh;
    MPI_Status st;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh);
    MPI_Offset pos, sz;
    MPI_File_get_position(fh, &pos);
    MPI_File_get_size(fh, &sz);
    CHECK(pos == sz && sz > 0, "append: position %lld, size %lld", (long long)pos, (long long)sz);
    int y = 7;
    int rc = MPI_File_read(fh, &y, 1, MPI_INT, &st);
    CHECK(class_of(rc) == MPI_ERR_ACCESS, "reading a write-only file: class %d", class_of(rc));
    MPI_File_close(&fh);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    MPI_File_set_atomicity(fh, 1);
    int flag;
    MPI_File_get_atomicity(fh, &flag);
    CHECK(flag == 1, "atomicity %d", flag);
    MPI_File_preallocate(fh, 1 << 16);
    MPI_File_get_size(fh, &sz);
    CHECK(sz >= (1 << 16), "preallocated size %lld", (long long)sz);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    FILE *f = fopen(path, "r");
    CHECK(f == NULL, "the file is still there after a close with DELETE_ON_CLOSE");
    if (f) fclose(f);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: c-io DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(path, sizeof path, "%s/c-io.dat", argv[1]);
    explicit_offsets();
    strided_view();
    shared_pointer();
    errors_are_classed();
    modes();
    int total;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("OK c-io on %d ranks\n", size);
    /* A file left open at MPI_Finalize (the program's error): finalize
     * says so and leaves nothing but the data file behind. */
    MPI_File left;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &left);
    MPI_Finalize();
    return total != 0;
}
