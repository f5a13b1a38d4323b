/* Sessions (MPI 4.1 §11.3): a program that never calls MPI_Init opens a
 * session, finds its process sets, makes communicators from their groups,
 * uses the session's error handler and buffer, closes it, opens another
 * (re-initialization), and at the end starts the world model too. "OK
 * c-session on N ranks" from rank 0 when every rank passed. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int handled = 0, handled_code = 0;
static MPI_Session handled_on = MPI_SESSION_NULL;
static void on_session_error(MPI_Session *s, int *code, ...) {
    handled++;
    handled_code = *code;
    handled_on = *s;
}

/* One session's life: psets, a communicator of the world set, errors,
 * a buffered send through the session's buffer. Returns the errors
 * summed over the ranks. */
static int one_session(int round, MPI_Errhandler eh) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_SERIALIZED");
    MPI_Session s = MPI_SESSION_NULL;
    CHECK(MPI_Session_init(info, eh, &s) == MPI_SUCCESS && s != MPI_SESSION_NULL, "Session_init round %d", round);
    MPI_Info_free(&info);
    int flag = -1;
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized is %d in a session-only program", flag);

    int n = -1;
    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    CHECK(n == 2, "%d process sets", n);
    char name[64];
    int len = 0;
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 0, &len, NULL);
    CHECK(len == (int)strlen("mpi://WORLD") + 1, "length of pset 0: %d", len);
    len = sizeof name;
    CHECK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 1, &len, name) == MPI_SUCCESS, "get_nth_pset with a buffer");
    CHECK(strcmp(name, "mpi://SELF") == 0 && len == (int)strlen("mpi://SELF") + 1, "pset 1 is '%s' (%d)", name, len);
    MPI_Info pi;
    char v[16];
    MPI_Session_get_pset_info(s, "mpi://world", &pi);
    MPI_Info_get_string(pi, "mpi_size", &(int){sizeof v}, v, &flag);
    MPI_Info_free(&pi);
    MPI_Session_get_info(s, &pi);
    char lvl[32];
    MPI_Info_get_string(pi, "thread_level", &(int){sizeof lvl}, lvl, &flag);
    CHECK(flag && strcmp(lvl, "MPI_THREAD_SERIALIZED") == 0, "session thread_level '%s'", flag ? lvl : "");
    MPI_Info_free(&pi);

    MPI_Group wg, sg;
    CHECK(MPI_Group_from_session_pset(s, "mpi://WORLD", &wg) == MPI_SUCCESS, "group of mpi://WORLD");
    MPI_Group_from_session_pset(s, "mpi://SELF", &sg);
    MPI_Comm w, me;
    CHECK(MPI_Comm_create_from_group(wg, "dn.session.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &w) == MPI_SUCCESS, "Comm_create_from_group");
    MPI_Comm_create_from_group(sg, "dn.session.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &me);
    MPI_Comm_rank(w, &rank);
    MPI_Comm_size(w, &size);
    CHECK(atoi(v) == size, "mpi_size '%s' of %d processes", v, size);
    int one = 1, sum = 0, self_size = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, w);
    CHECK(sum == size, "allreduce over the session's world: %d", sum);
    MPI_Comm_size(me, &self_size);
    CHECK(self_size == 1, "mpi://SELF has %d processes", self_size);

    /* The session's handler: called by Session_call_errhandler, and by
     * a call on the session that fails. */
    handled = 0;
    CHECK(MPI_Session_call_errhandler(s, MPI_ERR_OTHER) == MPI_SUCCESS, "Session_call_errhandler");
    CHECK(handled == 1 && handled_code == MPI_ERR_OTHER && handled_on == s, "handler: %d calls, code %d", handled, handled_code);
    MPI_Group bad;
    int rc = MPI_Group_from_session_pset(s, "mpi://nowhere", &bad);
    CHECK(rc == MPI_ERR_ARG && handled == 2, "unknown pset gave %d after %d handler calls", rc, handled);

    /* A buffer attached to the session serves the communicators made
     * from its groups. */
    int bsz = 4 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    void *bbuf = malloc(bsz);
    MPI_Session_attach_buffer(s, bbuf, bsz);
    int out[4] = {rank, round, 3, 4}, in[4] = {0};
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    CHECK(MPI_Bsend(out, 4, MPI_INT, next, 7, w) == MPI_SUCCESS, "Bsend through the session's buffer");
    MPI_Recv(in, 4, MPI_INT, prev, 7, w, MPI_STATUS_IGNORE);
    CHECK(in[0] == prev && in[1] == round, "buffered message %d %d", in[0], in[1]);
    void *back;
    int back_size = 0;
    MPI_Session_detach_buffer(s, &back, &back_size);
    CHECK(back == bbuf && back_size == bsz, "detached %p/%d", back, back_size);
    free(back);

    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, w);
    MPI_Group_free(&wg);
    MPI_Group_free(&sg);
    MPI_Comm_free(&w);
    MPI_Comm_free(&me);
    CHECK(MPI_Session_finalize(&s) == MPI_SUCCESS && s == MPI_SESSION_NULL, "Session_finalize round %d", round);
    return all;
}

int main(void) {
    /* The handler is made before any initialization (§11.4.1). */
    MPI_Errhandler eh;
    int pre = MPI_Session_create_errhandler(on_session_error, &eh) == MPI_SUCCESS;
    int bad = 0;
    for (int round = 0; round < 2; round++) bad += one_session(round, eh);
    CHECK(pre, "Session_create_errhandler before Session_init");
    /* The world model after the sessions. */
    MPI_Init(NULL, NULL);
    int flag = 0;
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized after MPI_Init");
    MPI_Errhandler_free(&eh);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && all == 0 && bad == 0) printf("OK c-session on %d ranks\n", size);
    MPI_Finalize();
    return all == 0 && bad == 0 ? 0 : 1;
}
