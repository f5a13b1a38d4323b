/* What a process gives a program for free, which a rank that is a context
 * of dnrun must have too (issue 46): its own globals, environment, errno,
 * exit handlers and output; an exit, a crash or an abort that ends it (and
 * the job, as for a process) naming it; and MPI state of its own. The same
 * checks pass when ranks are processes. Run as
 *   process MODE
 * MODE "state" (the default) checks everything that must hold and prints
 * "OK c-process on N ranks"; the others end the job on purpose:
 *   exit N      rank 1 calls exit(N) before MPI_Finalize
 *   exit0       rank 1 calls exit(0) before MPI_Finalize
 *   segv        rank 1 writes through a null pointer
 *   fpe         rank 1 divides an integer by zero
 *   overflow    rank 1 recurses until its stack runs out
 *   abort N     rank 1 calls MPI_Abort(N)
 *   cabort      rank 1 calls abort()
 *   lateexit N  every rank finalizes, then rank 1 calls exit(N) */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* One per rank, or the checks below fail. */
static int counter;
static char scratch[64];

static void bye(void) { printf("exit handler of rank %d, counter %d\n", rank, counter); }

static int depth(volatile char *p, long n) {
    volatile char buf[4096];
    buf[0] = (char)n;
    buf[4095] = p ? p[0] : 0;
    if (n < 0) return 0; /* never: only the stack ends this */
    return depth(buf, n + 1) + buf[100];
}

static int errh_calls;
static void on_error(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    (void)code;
    errh_calls++;
}

static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c, (void)k, (void)extra;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

/* Per-rank MPI state that a library loaded once for all ranks must keep
 * apart: each rank sets its own, lets every other rank run (a barrier),
 * and finds its own. */
static void state_of_its_own(void) {
    char name[MPI_MAX_OBJECT_NAME], want[64], value[64];
    int len, flag;
    /* A communicator's name. */
    snprintf(want, sizeof want, "world of rank %d", rank);
    MPI_Comm_set_name(MPI_COMM_WORLD, want);
    /* An error handler: even ranks return errors, odd ranks count them. */
    MPI_Errhandler eh;
    if (rank % 2) {
        MPI_Comm_create_errhandler(on_error, &eh);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    } else {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    /* Keyvals: rank r makes r + 1 of them and sets each. */
    int keys[16];
    static int vals[16];
    for (int k = 0; k <= rank && k < 16; k++) {
        MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &keys[k], NULL);
        vals[k] = 1000 * rank + k;
        MPI_Comm_set_attr(MPI_COMM_WORLD, keys[k], &vals[k]);
    }
    /* An info object and an added error class. */
    MPI_Info info;
    MPI_Info_create(&info);
    snprintf(value, sizeof value, "%d", rank * 7);
    MPI_Info_set(info, "mine", value);
    int cls;
    for (int k = 0; k <= rank; k++) MPI_Add_error_class(&cls);
    /* A buffered-send buffer of a size of its own. */
    int bsize = 4096 * (rank + 1);
    void *buf = malloc(bsize);
    MPI_Buffer_attach(buf, bsize);

    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, want) == 0, "the world's name is \"%s\", not \"%s\"", name, want);
    int rc = MPI_Send(NULL, 0, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "a send to rank %d succeeded", size + 5);
    CHECK(errh_calls == (rank % 2), "the error handler ran %d times", errh_calls);
    for (int k = 0; k <= rank && k < 16; k++) {
        int *v;
        MPI_Comm_get_attr(MPI_COMM_WORLD, keys[k], &v, &flag);
        CHECK(flag && v == &vals[k] && *v == 1000 * rank + k, "keyval %d: flag %d", k, flag);
    }
    MPI_Info_get_string(info, "mine", &(int){sizeof value}, value, &flag);
    CHECK(flag && atoi(value) == rank * 7, "info value %s", value);
    int last, *lastp;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastp, &flag);
    last = flag ? *lastp : -1;
    CHECK(cls == last, "the last added class %d is not MPI_LASTUSEDCODE %d", cls, last);
    void *back;
    int bback;
    MPI_Buffer_detach(&back, &bback);
    CHECK(back == buf && bback == bsize, "detached %d bytes, attached %d", bback, bsize);
    free(buf);
    MPI_Info_free(&info);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "state";
    int code = argc > 2 ? atoi(argv[2]) : 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (strcmp(mode, "state") == 0) {
        /* Globals: each rank counts to its rank. */
        for (int i = 0; i < rank; i++) counter++;
        snprintf(scratch, sizeof scratch, "rank %d", rank);
        /* Environment: dnrun's per-rank variables, -x, and a rank's own setenv. */
        const char *r = getenv("DN_RANK");
        CHECK(r && atoi(r) == rank, "DN_RANK is %s", r ? r : "(unset)");
        const char *x = getenv("PROCESS_TEST");
        CHECK(x && strcmp(x, "yes") == 0, "PROCESS_TEST is %s", x ? x : "(unset)");
        char mine[16];
        snprintf(mine, sizeof mine, "%d", rank * 11);
        setenv("PROCESS_MINE", mine, 1);
        errno = 100 + rank;
        /* Output: a line written in pieces around a call that lets the
         * others run stays whole. */
        printf("rank %d says: ", rank);
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
        printf("hello\n");
        fprintf(stderr, "rank %d on stderr\n", rank);
        CHECK(errno == 100 + rank, "errno is %d, not %d", errno, 100 + rank);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(counter == rank, "the global counter is %d", counter);
        snprintf(mine, sizeof mine, "rank %d", rank);
        CHECK(strcmp(scratch, mine) == 0, "a global string reads \"%s\"", scratch);
        const char *m = getenv("PROCESS_MINE");
        CHECK(m && atoi(m) == rank * 11, "PROCESS_MINE is %s", m ? m : "(unset)");
        double t = MPI_Wtime();
        CHECK(t > 0, "MPI_Wtime %f", t);
        state_of_its_own();
        atexit(bye);
        int sum = 0, one = errors;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Finalize();
        if (rank == 0 && sum == 0) printf("OK c-process on %d ranks\n", size);
        return sum != 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        if (strcmp(mode, "exit") == 0 || strcmp(mode, "exit0") == 0) {
            atexit(bye);
            exit(code);
        } else if (strcmp(mode, "segv") == 0) {
            *(volatile int *)0 = 1;
        } else if (strcmp(mode, "fpe") == 0) {
            volatile int zero = 0, seven = 7;
            printf("%d\n", seven / zero);
        } else if (strcmp(mode, "overflow") == 0) {
            printf("%d\n", depth(NULL, 0));
        } else if (strcmp(mode, "abort") == 0) {
            MPI_Abort(MPI_COMM_WORLD, code);
        } else if (strcmp(mode, "cabort") == 0) {
            abort();
        }
    }
    if (strcmp(mode, "lateexit") == 0) {
        MPI_Finalize();
        if (rank == 1) {
            atexit(bye);
            exit(code);
        }
        return 0;
    }
    /* Rank 1 is gone: the others wait for it, and the job must end. */
    MPI_Barrier(MPI_COMM_WORLD);
    printf("not reached on rank %d\n", rank);
    MPI_Finalize();
    return 0;
}
