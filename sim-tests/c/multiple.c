/* MPI_THREAD_MULTIPLE (MPI 4.1 §11.6): any thread calls MPI at any time,
 * and a blocking call blocks only its own thread.
 *
 * 1. Every rank's main thread blocks in a receive that only another
 *    thread's send satisfies (around a ring), that thread sleeping first:
 *    the wait must let it in, and the simulator must not call the wait a
 *    deadlock while a thread outside MPI may still end it.
 * 2. Two threads per rank at once, each on its own communicator: one
 *    does blocking point-to-point around a ring (Send, Recv, Sendrecv,
 *    Probe) with an allreduce per round, the other collectives with roots
 *    other than 0, blocking and non-blocking, and a probe of a message to
 *    itself.
 * 3. A generalized request completed by another thread while the main
 *    thread waits for it.
 * 4. A partitioned send whose partitions two other threads mark ready
 *    while the main thread waits for it.
 * 5. Two threads per rank making communicators at once (MPI_Comm_create
 *    on their own parents, MPI_Comm_create_group with their own tags,
 *    MPI_Comm_create_from_group with their own string tags, MPI_Comm_split
 *    of their own parents into two colors ordered by descending rank, one
 *    rank left out), in one order on even ranks and the other on odd ones:
 *    a call that held the library until every member came would wait for
 *    ever (MPICH's threads/comm; issue 47, break 8).
 * 6. Every rank holds the lock of its own window, and its main thread
 *    waits in MPI_Win_lock for the next rank's, which that rank's other
 *    thread gives up only after a token from this rank's other thread:
 *    MPI_Win_lock must not hold the library while it waits (issue 47,
 *    break 8).
 * 7. Two threads per rank, each on its own window, in opposite orders on
 *    neighboring ranks: puts to the next rank between fences, then
 *    between post/start and complete/wait with both neighbors. A fence,
 *    start or wait that held the library while the other ranks came
 *    would wait for ever (issue 47, break 8).
 * "OK c-multiple on N ranks" from rank 0 when every rank passed. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

enum { ROUNDS = 30 };

static MPI_Comm ca, cb, cc;
static pthread_mutex_t errors_lock = PTHREAD_MUTEX_INITIALIZER;

/* CHECK from a thread: `errors` is shared. `cond` (often an MPI call) is
 * evaluated before the lock is taken: evaluated under it, one thread's
 * blocking call would keep the other thread out of MPI, and two threads
 * whose calls need each other would hang in this test, not in MPI. */
#define TCHECK(cond, ...)                          \
    do {                                           \
        int tcheck_ok = (cond);                    \
        pthread_mutex_lock(&errors_lock);          \
        CHECK(tcheck_ok, __VA_ARGS__);             \
        pthread_mutex_unlock(&errors_lock);        \
    } while (0)

static void pause_ms(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int next_rank(void) { return (rank + 1) % size; }
static int prev_rank(void) { return (rank + size - 1) % size; }

/* Case 1: sleep, then send what the main thread's neighbor waits for. */
static void *late_sender(void *arg) {
    (void)arg;
    int flag = 1;
    MPI_Is_thread_main(&flag);
    TCHECK(!flag, "MPI_Is_thread_main said yes in a second thread");
    pause_ms(150);
    int v = 100 + rank;
    TCHECK(MPI_Send(&v, 1, MPI_INT, next_rank(), 1, cc) == MPI_SUCCESS, "the late send");
    return NULL;
}

/* Case 2, first thread: blocking point-to-point around a ring on `ca`. */
static void *ring(void *arg) {
    (void)arg;
    int next = next_rank(), prev = prev_rank();
    for (int r = 0; r < ROUNDS; r++) {
        int out = rank * 1000 + r, in = -1;
        if (rank % 2 == 0) {
            MPI_Send(&out, 1, MPI_INT, next, r, ca);
            MPI_Recv(&in, 1, MPI_INT, prev, r, ca, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&in, 1, MPI_INT, prev, r, ca, MPI_STATUS_IGNORE);
            MPI_Send(&out, 1, MPI_INT, next, r, ca);
        }
        TCHECK(in == prev * 1000 + r, "ring round %d got %d", r, in);
        int back = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, prev, 1000 + r, &back, 1, MPI_INT, next, 1000 + r, ca, MPI_STATUS_IGNORE);
        TCHECK(back == next * 1000 + r, "sendrecv round %d got %d", r, back);
        if (r % 5 == 0) {
            MPI_Status st;
            MPI_Request q;
            MPI_Isend(&out, 1, MPI_INT, next, 2000, ca, &q);
            MPI_Probe(MPI_ANY_SOURCE, 2000, ca, &st);
            TCHECK(st.MPI_SOURCE == prev, "probe found source %d", st.MPI_SOURCE);
            MPI_Recv(&in, 1, MPI_INT, st.MPI_SOURCE, 2000, ca, MPI_STATUS_IGNORE);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            TCHECK(in == prev * 1000 + r, "probed message %d", in);
        }
        int sum = -1;
        MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, ca);
        TCHECK(sum == r * size, "ring allreduce round %d: %d", r, sum);
    }
    return NULL;
}

/* Case 2, second thread: collectives on `cb`, roots other than 0. */
static void *collectives(void *arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        int root = (r + size - 1) % size;
        int v = rank == root ? 7 * r : -1;
        MPI_Bcast(&v, 1, MPI_INT, root, cb);
        TCHECK(v == 7 * r, "bcast round %d from %d: %d", r, root, v);
        MPI_Barrier(cb);
        long mine = rank + r, total = -1;
        MPI_Reduce(&mine, &total, 1, MPI_LONG, MPI_SUM, root, cb);
        if (rank == root) {
            long want = (long)size * r + (long)size * (size - 1) / 2;
            TCHECK(total == want, "reduce round %d at %d: %ld, not %ld", r, root, total, want);
        }
        int x = rank + r, y = -1, g[64];
        MPI_Request q[2];
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_MAX, cb, &q[0]);
        MPI_Iallgather(&x, 1, MPI_INT, g, 1, MPI_INT, cb, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        TCHECK(y == size - 1 + r, "iallreduce round %d: %d", r, y);
        for (int i = 0; i < size && i < 64; i++) TCHECK(g[i] == i + r, "iallgather round %d [%d]: %d", r, i, g[i]);
        /* A message to itself, found by a blocking probe. */
        int self = 31 * r, got = -1;
        MPI_Request s;
        MPI_Status st;
        MPI_Isend(&self, 1, MPI_INT, rank, 9, cb, &s);
        MPI_Probe(MPI_ANY_SOURCE, 9, cb, &st);
        MPI_Recv(&got, 1, MPI_INT, st.MPI_SOURCE, 9, cb, MPI_STATUS_IGNORE);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        TCHECK(got == self && st.MPI_SOURCE == rank, "self message %d from %d", got, st.MPI_SOURCE);
    }
    return NULL;
}

/* Case 5: the communicator `made` is over `want` processes and works. */
static void check_made(MPI_Comm made, int want, const char *what, int k) {
    if (want == 0) {
        TCHECK(made == MPI_COMM_NULL, "%s in thread %d: a communicator outside the group", what, k);
        return;
    }
    int n = -1, sum = -1, one = 1;
    TCHECK(made != MPI_COMM_NULL, "%s in thread %d: MPI_COMM_NULL", what, k);
    if (made == MPI_COMM_NULL) return;
    MPI_Comm_size(made, &n);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, made);
    TCHECK(n == want && sum == want, "%s in thread %d: size %d, allreduce %d, not %d", what, k, n, sum, want);
    MPI_Comm_free(&made);
}

/* Case 5's split of round `round`: colors by parity, key descending with
 * the rank, rank `round % size` left out when there are more than two. */
static void check_split(MPI_Comm made, int round, int k) {
    int out = size > 2 ? round % size : -1;
    if (rank == out) {
        TCHECK(made == MPI_COMM_NULL, "MPI_Comm_split in thread %d: a communicator for MPI_UNDEFINED", k);
        return;
    }
    int want = 0, above = 0;
    for (int r = 0; r < size; r++) {
        if (r % 2 != rank % 2 || r == out) continue;
        want++;
        above += r > rank;
    }
    int n = -1, me = -1, sum = -1, one = 1;
    TCHECK(made != MPI_COMM_NULL, "MPI_Comm_split in thread %d: MPI_COMM_NULL", k);
    if (made == MPI_COMM_NULL) return;
    MPI_Comm_size(made, &n);
    MPI_Comm_rank(made, &me);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, made);
    TCHECK(n == want && sum == want && me == above, "MPI_Comm_split in thread %d: size %d, rank %d, allreduce %d, not %d, %d",
           k, n, me, sum, want, above);
    MPI_Comm_free(&made);
}

/* Case 5: thread `k` makes communicators, the thread whose number is the
 * rank's parity pausing before each call, so that the two threads enter
 * in opposite orders on neighboring ranks. */
static void *maker(void *arg) {
    int k = *(int *)arg;
    MPI_Comm parent = k ? cb : ca, made = MPI_COMM_NULL;
    MPI_Group all, most;
    MPI_Comm_group(parent, &all);
    int last = size - 1, in_most = size > 1 && rank != last;
    MPI_Group_excl(all, size > 1 ? 1 : 0, &last, &most);
    for (int round = 0; round < 3; round++) {
        if (k == rank % 2) pause_ms(30);
        TCHECK(MPI_Comm_create(parent, most, &made) == MPI_SUCCESS, "MPI_Comm_create in thread %d", k);
        check_made(made, size > 1 ? (in_most ? size - 1 : 0) : 1, "MPI_Comm_create", k);
        if (k == rank % 2) pause_ms(30);
        TCHECK(MPI_Comm_create_group(MPI_COMM_WORLD, all, 40 + k, &made) == MPI_SUCCESS,
               "MPI_Comm_create_group in thread %d", k);
        check_made(made, size, "MPI_Comm_create_group", k);
        if (k == rank % 2) pause_ms(30);
        TCHECK(MPI_Comm_create_from_group(all, k ? "multiple.c b" : "multiple.c a", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                          &made) == MPI_SUCCESS,
               "MPI_Comm_create_from_group in thread %d", k);
        check_made(made, size, "MPI_Comm_create_from_group", k);
        if (k == rank % 2) pause_ms(30);
        int color = size > 2 && rank == round % size ? MPI_UNDEFINED : rank % 2;
        TCHECK(MPI_Comm_split(parent, color, size - rank, &made) == MPI_SUCCESS, "MPI_Comm_split in thread %d", k);
        check_split(made, round, k);
    }
    /* A bad color on rank 0 only: it gets MPI_ERR_ARG, the others their
     * communicator, nobody waits. */
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_split(parent, rank == 0 ? -5 : 0, rank, &made);
    if (rank == 0) {
        int cls = -1;
        MPI_Error_class(rc, &cls);
        TCHECK(cls == MPI_ERR_ARG, "a split with color -5 in thread %d: class %d", k, cls);
    } else {
        int n = -1;
        TCHECK(rc == MPI_SUCCESS && made != MPI_COMM_NULL, "the others' split in thread %d", k);
        if (made != MPI_COMM_NULL) MPI_Comm_size(made, &n);
        TCHECK(n == size - 1, "the others' split in thread %d: size %d", k, n);
        if (made != MPI_COMM_NULL) MPI_Comm_free(&made);
    }
    MPI_Group_free(&most);
    MPI_Group_free(&all);
    return NULL;
}

/* Case 7: thread `k`'s synchronizations on its own window. */
static MPI_Win sync_win[2];
static int *sync_mem[2];
static void *synchronizer(void *arg) {
    int k = *(int *)arg;
    MPI_Win w = sync_win[k];
    for (int round = 0; round < 4; round++) {
        int v = 1000 * round + 100 * k + rank;
        if (k == rank % 2) pause_ms(20);
        TCHECK(MPI_Win_fence(0, w) == MPI_SUCCESS, "MPI_Win_fence in thread %d", k);
        TCHECK(MPI_Put(&v, 1, MPI_INT, next_rank(), 0, 1, MPI_INT, w) == MPI_SUCCESS, "MPI_Put in thread %d", k);
        TCHECK(MPI_Win_fence(0, w) == MPI_SUCCESS, "closing MPI_Win_fence in thread %d", k);
        int want = 1000 * round + 100 * k + prev_rank();
        TCHECK(sync_mem[k][0] == want, "fence round %d in thread %d: %d, not %d", round, k, sync_mem[k][0], want);
    }
    MPI_Group wg, pair;
    MPI_Win_get_group(w, &wg);
    int two[2] = {prev_rank(), next_rank()};
    MPI_Group_incl(wg, size > 2 ? 2 : 1, two, &pair);
    for (int round = 0; round < 4; round++) {
        int v = 1000 * round + 100 * k + rank;
        if (k == rank % 2) pause_ms(20);
        TCHECK(MPI_Win_post(pair, 0, w) == MPI_SUCCESS, "MPI_Win_post in thread %d", k);
        TCHECK(MPI_Win_start(pair, 0, w) == MPI_SUCCESS, "MPI_Win_start in thread %d", k);
        TCHECK(MPI_Put(&v, 1, MPI_INT, next_rank(), 1, 1, MPI_INT, w) == MPI_SUCCESS, "MPI_Put in thread %d", k);
        TCHECK(MPI_Win_complete(w) == MPI_SUCCESS, "MPI_Win_complete in thread %d", k);
        TCHECK(MPI_Win_wait(w) == MPI_SUCCESS, "MPI_Win_wait in thread %d", k);
        int want = 1000 * round + 100 * k + prev_rank();
        TCHECK(sync_mem[k][1] == want, "PSCW round %d in thread %d: %d, not %d", round, k, sync_mem[k][1], want);
    }
    MPI_Group_free(&pair);
    MPI_Group_free(&wg);
    return NULL;
}

/* Case 3: a generalized request another thread completes. */
struct greq {
    MPI_Request r;
    int queries;
};
static int query(void *extra, MPI_Status *st) {
    struct greq *g = extra;
    g->queries++;
    MPI_Status_set_elements(st, MPI_INT, 2);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int release(void *extra) {
    (void)extra;
    return MPI_SUCCESS;
}
static int cancel(void *extra, int complete) {
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}
static void *completer(void *arg) {
    struct greq *g = arg;
    pause_ms(50);
    TCHECK(MPI_Grequest_complete(g->r) == MPI_SUCCESS, "Grequest_complete from a thread");
    return NULL;
}

/* Case 4: mark one partition ready. */
struct part {
    MPI_Request r;
    int p;
};
/* 6: passes a token on and then gives up this rank's lock of its own
 * window, which the previous rank's main thread waits for in MPI_Win_lock. */
static MPI_Win lock_win;
static void *unlocker(void *arg) {
    (void)arg;
    int v = rank;
    pause_ms(100);
    TCHECK(MPI_Send(&v, 1, MPI_INT, next_rank(), 6, cc) == MPI_SUCCESS, "the token to the next rank");
    TCHECK(MPI_Recv(&v, 1, MPI_INT, prev_rank(), 6, cc, MPI_STATUS_IGNORE) == MPI_SUCCESS, "the token");
    TCHECK(MPI_Win_unlock(rank, lock_win) == MPI_SUCCESS, "unlock of my own window");
    return NULL;
}

static void *ready(void *arg) {
    struct part *p = arg;
    pause_ms(20 * (p->p + 1));
    TCHECK(MPI_Pready(p->p, p->r) == MPI_SUCCESS, "Pready %d from a thread", p->p);
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1, level = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, not MPI_THREAD_MULTIPLE", provided);
    MPI_Query_thread(&level);
    CHECK(level == MPI_THREAD_MULTIPLE, "MPI_Query_thread: %d", level);
    MPI_Comm_dup(MPI_COMM_WORLD, &ca);
    MPI_Comm_dup(MPI_COMM_WORLD, &cb);
    MPI_Comm_dup(MPI_COMM_WORLD, &cc);
    pthread_t t[2];

    /* 1 */
    int got = -1;
    pthread_create(&t[0], NULL, late_sender, NULL);
    CHECK(MPI_Recv(&got, 1, MPI_INT, prev_rank(), 1, cc, MPI_STATUS_IGNORE) == MPI_SUCCESS, "the main thread's receive");
    CHECK(got == 100 + prev_rank(), "case 1 got %d", got);
    pthread_join(t[0], NULL);

    /* 2 */
    pthread_create(&t[0], NULL, ring, NULL);
    pthread_create(&t[1], NULL, collectives, NULL);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);

    /* 3 */
    struct greq g = {MPI_REQUEST_NULL, 0};
    MPI_Status st;
    int count = -1;
    MPI_Grequest_start(query, release, cancel, &g, &g.r);
    MPI_Request mine = g.r;
    pthread_create(&t[0], NULL, completer, &g);
    CHECK(MPI_Wait(&mine, &st) == MPI_SUCCESS && mine == MPI_REQUEST_NULL, "a wait for another thread's Grequest_complete");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(g.queries == 1 && count == 2, "query_fn: %d calls, count %d", g.queries, count);
    pthread_join(t[0], NULL);

    /* 4 */
    int out[4], in[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 4; i++) out[i] = 10 * rank + i;
    MPI_Request ps, pr;
    MPI_Psend_init(out, 2, 2, MPI_INT, next_rank(), 3, MPI_COMM_WORLD, MPI_INFO_NULL, &ps);
    MPI_Precv_init(in, 2, 2, MPI_INT, prev_rank(), 3, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
    MPI_Start(&pr);
    MPI_Start(&ps);
    struct part parts[2] = {{ps, 0}, {ps, 1}};
    pthread_create(&t[0], NULL, ready, &parts[0]);
    pthread_create(&t[1], NULL, ready, &parts[1]);
    CHECK(MPI_Wait(&ps, MPI_STATUS_IGNORE) == MPI_SUCCESS, "a wait for partitions other threads mark");
    CHECK(MPI_Wait(&pr, MPI_STATUS_IGNORE) == MPI_SUCCESS, "the partitioned receive");
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    for (int i = 0; i < 4; i++) CHECK(in[i] == 10 * prev_rank() + i, "partition data [%d]: %d", i, in[i]);
    MPI_Request_free(&ps);
    MPI_Request_free(&pr);

    /* 5 */
    int which[2] = {0, 1};
    pthread_create(&t[0], NULL, maker, &which[0]);
    pthread_create(&t[1], NULL, maker, &which[1]);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);

    /* 6 */
    if (size > 1) {
        int *mem;
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &lock_win);
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, lock_win) == MPI_SUCCESS, "lock of my own window");
        MPI_Barrier(MPI_COMM_WORLD);
        pthread_create(&t[0], NULL, unlocker, NULL);
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next_rank(), 0, lock_win) == MPI_SUCCESS, "lock of rank %d", next_rank());
        CHECK(MPI_Win_unlock(next_rank(), lock_win) == MPI_SUCCESS, "unlock of rank %d", next_rank());
        pthread_join(t[0], NULL);
        MPI_Win_free(&lock_win);
    }

    /* 7 */
    MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, ca, &sync_mem[0], &sync_win[0]);
    MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, cb, &sync_mem[1], &sync_win[1]);
    pthread_create(&t[0], NULL, synchronizer, &which[0]);
    pthread_create(&t[1], NULL, synchronizer, &which[1]);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    MPI_Win_free(&sync_win[0]);
    MPI_Win_free(&sync_win[1]);

    MPI_Comm_free(&ca);
    MPI_Comm_free(&cb);
    MPI_Comm_free(&cc);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-multiple on %d ranks\n", size);
    MPI_Finalize();
    return all != 0;
}
