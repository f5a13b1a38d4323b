/* A program that is right on MPICH and Open MPI (issue 47): windows from
 * MPI_Win_allocate behave as MPI_WIN_UNIFIED by default.
 *
 *   1. every rank fills its window with plain stores, MPI_Barrier, then
 *      reads its right neighbour's window with MPI_Rget under a shared
 *      lock: every value must be the neighbour's;
 *   2. every rank puts into its right neighbour under an exclusive lock,
 *      MPI_Barrier, then locks its own window and loads: it must see its
 *      left neighbour's values.
 *
 * With argv[1] = "separate" the window asks for the separate model (info
 * dimmnet_memory_model=separate: the card's public copy on the simulator).
 * Part 1 is then erroneous by §12.7 (no MPI_Win_sync after the stores):
 * the rank prints how many values came back stale, and the library must
 * say so on the error output (checked by the Rust test). A third part
 * makes a conflict the library can see (a local store and a remote put
 * of one location with no synchronisation between) and checks that the
 * owner's next synchronisation returns MPI_ERR_RMA_CONFLICT.
 *
 * In both models, a fifth part accumulates padded pair types, and a
 * fourth reads a window made over read-only memory.
 *
 * argv[2]: doubles per rank (default 131072). "OK c-unified on N ranks"
 * from rank 0 when every rank passed. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static double value(int owner, long i) { return owner * 1e7 + (double)i; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int separate = argc > 1 && strcmp(argv[1], "separate") == 0;
    long n = argc > 2 ? atol(argv[2]) : 131072;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* A model this library does not know is refused, not ignored. */
    MPI_Info bad;
    MPI_Info_create(&bad);
    MPI_Info_set(bad, "dimmnet_memory_model", "sideways");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double *nothing = NULL;
    MPI_Win none;
    int rc = MPI_Win_allocate(64, 8, bad, MPI_COMM_WORLD, &nothing, &none), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_INFO_VALUE, "dimmnet_memory_model=sideways gave class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Info_free(&bad);

    MPI_Info info = MPI_INFO_NULL;
    if (separate) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "dimmnet_memory_model", "separate");
    }
    double *base = NULL;
    MPI_Win win;
    CHECK(MPI_Win_allocate((MPI_Aint)(n * (long)sizeof(double)), sizeof(double), info, MPI_COMM_WORLD, &base, &win) ==
              MPI_SUCCESS,
          "MPI_Win_allocate");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int *model = NULL, flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    int is_separate = flag && *model == MPI_WIN_SEPARATE;
    if (!separate) CHECK(flag && *model == MPI_WIN_UNIFIED, "the default model is %d, not MPI_WIN_UNIFIED", flag ? *model : -1);

    /* 1: local stores, barrier, a neighbour's MPI_Rget under a shared lock. */
    for (long i = 0; i < n; i++) base[i] = value(rank, i);
    MPI_Barrier(MPI_COMM_WORLD);
    double *got = malloc(sizeof(double) * (size_t)n);
    for (long i = 0; i < n; i++) got[i] = -1.0;
    MPI_Request req;
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win) == MPI_SUCCESS, "lock %d", right);
    CHECK(MPI_Rget(got, (int)n, MPI_DOUBLE, right, 0, (int)n, MPI_DOUBLE, win, &req) == MPI_SUCCESS, "rget");
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(MPI_Win_unlock(right, win) == MPI_SUCCESS, "unlock %d", right);
    long stale = 0;
    for (long i = 0; i < n; i++) stale += got[i] != value(right, i);
    if (is_separate)
        printf("rank %d: %ld of %ld values stale in the separate model\n", rank, stale, n);
    else
        CHECK(stale == 0, "%ld of %ld values read from rank %d are stale (first: %g, expected %g)", stale, n, right, got[0],
              value(right, 0));

    /* 2: a neighbour's put under an exclusive lock; the owner locks its own window and loads. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (is_separate) {
        /* Separate model: the owner's stores of part 1 become public first. */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        MPI_Win_unlock(rank, win);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    long k = n < 1024 ? n : 1024;
    for (long i = 0; i < k; i++) got[i] = value(100 + rank, i);
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win) == MPI_SUCCESS, "lock %d", right);
    CHECK(MPI_Put(got, (int)k, MPI_DOUBLE, right, 0, (int)k, MPI_DOUBLE, win) == MPI_SUCCESS, "put");
    CHECK(MPI_Win_unlock(right, win) == MPI_SUCCESS, "unlock %d", right);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win) == MPI_SUCCESS, "lock own");
    long wrong = 0;
    for (long i = 0; i < k; i++) wrong += base[i] != value(100 + left, i);
    for (long i = k; i < n; i++) wrong += base[i] != value(rank, i);
    CHECK(MPI_Win_unlock(rank, win) == MPI_SUCCESS, "unlock own");
    CHECK(wrong == 0, "%ld of %ld values of my window are wrong after rank %d's put (base[0] = %g, expected %g)", wrong,
          n, left, base[0], value(100 + left, 0));

    /* 3 (separate only): a conflict the library sees. Rank 1 puts into
     * rank 0's element 0 while rank 0 has stored to it locally. */
    if (is_separate && size > 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) base[0] = -7.0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            double v = 42.0;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Put(&v, 1, MPI_DOUBLE, 0, 0, 1, MPI_DOUBLE, win);
            MPI_Win_unlock(0, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            int rc = MPI_Win_sync(win);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_RMA_CONFLICT, "MPI_Win_sync after a conflicting store and put gave class %d", cls);
            if (cls == MPI_ERR_RMA_CONFLICT) printf("rank 0: conflict reported\n");
            /* The window is still usable. */
            CHECK(MPI_Win_sync(win) == MPI_SUCCESS, "a second MPI_Win_sync");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    CHECK(MPI_Win_free(&win) == MPI_SUCCESS, "free");

    /* 5: accumulates of padded pair types (issue 47): their data is packed
     * (a double or short, then the int), their structs are padded; a
     * MAXLOC of every rank's pairs lands whole, and MPI_Get_accumulate of
     * MPI_LONG_DOUBLE_INT with MPI_NO_OP reads one back. */
    {
        typedef struct { double v; int i; } di_t;
        typedef struct { short v; int i; } si_t;
        typedef struct { long double v; int i; } li_t;
        di_t *d;
        si_t *sh;
        li_t *ld;
        MPI_Win wd, ws, wl;
        MPI_Win_allocate(4 * sizeof(di_t), sizeof(di_t), info, MPI_COMM_WORLD, &d, &wd);
        MPI_Win_allocate(4 * sizeof(si_t), sizeof(si_t), info, MPI_COMM_WORLD, &sh, &ws);
        MPI_Win_allocate(sizeof(li_t), sizeof(li_t), info, MPI_COMM_WORLD, &ld, &wl);
        for (int j = 0; j < 4; j++) {
            d[j].v = -1.0; d[j].i = -1; sh[j].v = -1; sh[j].i = -1;
        }
        ld->v = 1.5L * rank; ld->i = rank;
        di_t md[4];
        si_t ms[4];
        for (int j = 0; j < 4; j++) {
            md[j].v = (rank * 7 + j) % size; md[j].i = rank; ms[j].v = (short)((rank * 7 + j) % size); ms[j].i = rank;
        }
        MPI_Win_fence(0, wd); MPI_Win_fence(0, ws); MPI_Win_fence(0, wl);
        CHECK(MPI_Accumulate(md, 4, MPI_DOUBLE_INT, 0, 0, 4, MPI_DOUBLE_INT, MPI_MAXLOC, wd) == MPI_SUCCESS, "MAXLOC of MPI_DOUBLE_INT");
        CHECK(MPI_Accumulate(ms, 4, MPI_SHORT_INT, 0, 0, 4, MPI_SHORT_INT, MPI_MAXLOC, ws) == MPI_SUCCESS, "MAXLOC of MPI_SHORT_INT");
        li_t back = {0.0L, -1};
        CHECK(MPI_Get_accumulate(NULL, 0, MPI_LONG_DOUBLE_INT, &back, 1, MPI_LONG_DOUBLE_INT, right, 0, 1, MPI_LONG_DOUBLE_INT,
                                 MPI_NO_OP, wl) == MPI_SUCCESS,
              "MPI_NO_OP of MPI_LONG_DOUBLE_INT");
        MPI_Win_fence(0, wd); MPI_Win_fence(0, ws); MPI_Win_fence(0, wl);
        CHECK(back.v == 1.5L * right && back.i == right, "MPI_LONG_DOUBLE_INT from %d: %Lg %d", right, back.v, back.i);
        if (rank == 0)
            for (int j = 0; j < 4; j++) {
                /* The largest (rank * 7 + j) % size, at the lowest rank that has it (§6.9.4). */
                int best = -1, at = -1;
                for (int r = 0; r < size; r++)
                    if ((r * 7 + j) % size > best) { best = (r * 7 + j) % size; at = r; }
                CHECK(d[j].v == best && d[j].i == at, "MPI_DOUBLE_INT %d: %g at %d, expected %d at %d", j, d[j].v, d[j].i, best, at);
                CHECK(sh[j].v == best && sh[j].i == at, "MPI_SHORT_INT %d: %d at %d, expected %d at %d", j, sh[j].v, sh[j].i, best, at);
            }
        MPI_Win_free(&wd); MPI_Win_free(&ws); MPI_Win_free(&wl);
    }

    /* 4: a window over memory the program may only read (issue 47, break
     * 2): others get from it between fences; nothing may store to it (on
     * the old separate default, the fence wrote the whole window back and
     * its owner died of SIGSEGV). */
    long pg = sysconf(_SC_PAGESIZE);
    int *ro = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED, "mmap");
    for (int i = 0; i < 4; i++) ro[i] = rank * 1000 + i;
    CHECK(mprotect(ro, (size_t)pg, PROT_READ) == 0, "mprotect");
    MPI_Win rw;
    CHECK(MPI_Win_create(ro, pg, sizeof(int), info, MPI_COMM_WORLD, &rw) == MPI_SUCCESS, "a read-only window");
    int four[4] = {-1, -1, -1, -1};
    MPI_Win_fence(0, rw);
    MPI_Get(four, 4, MPI_INT, right, 0, 4, MPI_INT, rw);
    MPI_Win_fence(0, rw);
    for (int i = 0; i < 4; i++) CHECK(four[i] == right * 1000 + i, "read-only window: element %d is %d", i, four[i]);
    CHECK(MPI_Win_free(&rw) == MPI_SUCCESS, "free the read-only window");
    munmap(ro, (size_t)pg);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    free(got);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-unified on %d ranks (%s)\n", size, is_separate ? "separate" : "unified");
    MPI_Finalize();
    return 0;
}
