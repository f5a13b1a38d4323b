/* Process creation (MPI 4.1 §11.8), run as `dnrun -n N --universe-size
 * N+4 spawn`:
 *
 * 1. MPI_UNIVERSE_SIZE is N+4; MPI_Comm_get_parent is MPI_COMM_NULL.
 * 2. The last rank (a root other than 0) spawns 2 copies of this program
 *    ("child"): every errcode MPI_SUCCESS, an intercommunicator of N and
 *    2; the children's MPI_COMM_WORLD is the two of them, their parent
 *    the other side; a message each way per child, an allreduce across,
 *    and MPI_Intercomm_merge with the parents low: ranks and a sum.
 * 3. Rank 0 spawns with MPI_Comm_spawn_multiple two commands of one
 *    process each over MPI_COMM_SELF: MPI_APPNUM 0 and 1, one world of
 *    two.
 * 4. Spawns that cannot be satisfied fail with MPI_ERR_SPAWN at every
 *    parent, and every errcode says so: a program that does not exist,
 *    more processes than the universe has room for (none is left now),
 *    maxprocs 0 at the root; the job goes on (a barrier, and an
 *    allreduce of the errors).
 * "OK c-spawn on N ranks" from rank 0 when every process passed (the
 * children report to their parents). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static int error_class(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

/* What an error code says, for a failure's message. */
static const char *error_text(int rc) {
    static char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    text[0] = 0;
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &len);
    return text;
}

/* A child: the checks of its side; the failures go to the parents. */
static int child(MPI_Comm parent, const char *kind) {
    int remote = -1, appnum = -1, flag = 0, *v = NULL;
    MPI_Comm_remote_size(parent, &remote);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, &flag);
    if (flag) appnum = *v;
    CHECK(size == 2, "%s child: a world of %d, not 2", kind, size);
    if (strcmp(kind, "child") == 0) {
        CHECK(appnum == 0, "child: MPI_APPNUM %d (flag %d)", appnum, flag);
        /* From parent 0: its number; back: it times 10 plus my rank. */
        int got = -1;
        MPI_Recv(&got, 1, MPI_INT, 0, 7, parent, MPI_STATUS_IGNORE);
        CHECK(got == 100 + rank, "child %d got %d from its parent", rank, got);
        int back = got * 10 + rank;
        MPI_Send(&back, 1, MPI_INT, 0, 8, parent);
        int one = 1, sum = -1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, parent);
        CHECK(sum == remote, "child: allreduce across gave %d, not %d", sum, remote);
        MPI_Comm merged;
        MPI_Intercomm_merge(parent, 1, &merged);
        int mr = -1, ms = -1;
        MPI_Comm_rank(merged, &mr);
        MPI_Comm_size(merged, &ms);
        CHECK(mr == remote + rank && ms == remote + 2, "child: merged rank %d of %d", mr, ms);
        int total = -1;
        MPI_Allreduce(&mr, &total, 1, MPI_INT, MPI_SUM, merged);
        CHECK(total == ms * (ms - 1) / 2, "child: merged sum %d", total);
        MPI_Comm_free(&merged);
    } else {
        CHECK(appnum == rank, "multiple: MPI_APPNUM %d on world rank %d (flag %d)", appnum, rank, flag);
    }
    int all = 0;
    MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) MPI_Send(&all, 1, MPI_INT, 0, 9, parent);
    MPI_Comm_disconnect(&parent);
    /* A parent disconnected is gone (§11.8.2); a failure here fails the
     * job through this process's exit code. */
    MPI_Comm again = MPI_COMM_WORLD;
    MPI_Comm_get_parent(&again);
    CHECK(again == MPI_COMM_NULL, "%s child: a parent after MPI_Comm_disconnect", kind);
    MPI_Finalize();
    return errors != 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (argc > 1 && parent != MPI_COMM_NULL) return child(parent, argv[1]);
    CHECK(parent == MPI_COMM_NULL, "a process started by dnrun has a parent");
    CHECK(argc == 1, "the first processes have arguments");

    int *usize = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
    CHECK(flag && *usize == size + 4, "MPI_UNIVERSE_SIZE %d (flag %d), not %d", flag ? *usize : -1, flag, size + 4);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* 2. Two children from the last rank. */
    char *args[] = {"child", NULL};
    int codes[2] = {-1, -1};
    MPI_Comm inter;
    int root = size - 1;
    int rc = MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, root, MPI_COMM_WORLD, &inter, codes);
    CHECK(rc == MPI_SUCCESS && codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "spawn: %s, codes %d %d",
          error_text(rc), codes[0], codes[1]);
    int remote = -1, local = -1, child_errors = 0;
    MPI_Comm_remote_size(inter, &remote);
    MPI_Comm_size(inter, &local);
    CHECK(remote == 2 && local == size, "spawn: intercommunicator of %d and %d", local, remote);
    if (rank == 0) {
        for (int c = 0; c < 2; c++) {
            int v = 100 + c, back = -1;
            MPI_Send(&v, 1, MPI_INT, c, 7, inter);
            MPI_Recv(&back, 1, MPI_INT, c, 8, inter, MPI_STATUS_IGNORE);
            CHECK(back == v * 10 + c, "child %d answered %d", c, back);
        }
    }
    int one = 1, sum = -1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(sum == 2, "allreduce across the spawn gave %d", sum);
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, 0, &merged);
    int mr = -1, ms = -1, total = -1;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    CHECK(mr == rank && ms == size + 2, "merged rank %d of %d", mr, ms);
    MPI_Allreduce(&mr, &total, 1, MPI_INT, MPI_SUM, merged);
    CHECK(total == ms * (ms - 1) / 2, "merged sum %d", total);
    MPI_Comm_free(&merged);
    if (rank == 0) MPI_Recv(&child_errors, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE);
    errors += child_errors;
    MPI_Comm_disconnect(&inter);

    /* 3. Two commands from rank 0 alone. */
    if (rank == 0) {
        char *cmds[2] = {argv[0], argv[0]};
        char *a0[] = {"multiple", NULL};
        char **argvs[2] = {a0, a0};
        int np[2] = {1, 1}, mcodes[2] = {-1, -1};
        MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
        rc = MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 0, MPI_COMM_SELF, &inter, mcodes);
        CHECK(rc == MPI_SUCCESS && mcodes[0] == MPI_SUCCESS && mcodes[1] == MPI_SUCCESS, "spawn_multiple: %s",
              error_text(rc));
        if (rc == MPI_SUCCESS) {
            MPI_Comm_remote_size(inter, &remote);
            CHECK(remote == 2, "spawn_multiple: %d processes", remote);
            MPI_Recv(&child_errors, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE);
            errors += child_errors;
            MPI_Comm_disconnect(&inter);
        }
    }

    /* 4. Spawns that fail, at every parent; the job goes on. */
    int bad[3] = {-1, -1, -1};
    rc = MPI_Comm_spawn("./no-such-program", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, bad);
    CHECK(error_class(rc) == MPI_ERR_SPAWN && bad[0] == rc, "a missing program: %s (class %d), code %d",
          error_text(rc), error_class(rc), bad[0]);
    rc = MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, root, MPI_COMM_WORLD, &inter, bad);
    CHECK(error_class(rc) == MPI_ERR_SPAWN, "a full universe: %s", error_text(rc));
    rc = MPI_Comm_spawn(argv[0], args, rank == 0 ? 0 : 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                        MPI_ERRCODES_IGNORE);
    CHECK(rc != MPI_SUCCESS, "maxprocs 0 at the root was taken");
    MPI_Barrier(MPI_COMM_WORLD);

    double t = MPI_Wtime();
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-spawn on %d ranks at %.9f\n", size, t);
    MPI_Finalize();
    return all != 0;
}
