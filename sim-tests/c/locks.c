/* Passive-target locks that are fair and visible (issue 47, breaks 4 and 5),
 * in the default (unified) model.
 *
 * Fairness: ranks 2.. take ROUNDS shared locks on rank 0 one after the
 * other, each adding 1 to a counter there; rank 1 asks for an exclusive
 * lock on rank 0 once the stream runs (rank 2 tells it after a tenth of its
 * rounds) and reads the counter once it holds it. It prints how many shared epochs came first: a lock granted in
 * arrival order comes long before the stream ends (on the card's retried
 * lock word it came only after all of them).
 *
 * argv[1] = "deadlock": rank 0 takes an exclusive lock on rank 1, tells
 * rank 1 so, and waits in MPI_Recv for rank 1, which first locks its own
 * window: a deadlock the
 * simulator must report at once (on the card's lock word the waiting rank
 * retried atomics until --timeout).
 *
 * argv[2]: ROUNDS (default 200). "OK c-locks on N ranks" from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int deadlock = argc > 1 && strcmp(argv[1], "deadlock") == 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    int *counter = NULL;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &counter, &win);
    *counter = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    if (deadlock && size >= 2) {
        int v = 1;
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
            MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD); /* "I hold your lock" */
            MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Win_unlock(1, win);
        } else if (rank == 1) {
            MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
            MPI_Win_unlock(1, win);
            MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        }
        printf("rank %d: the deadlock did not happen\n", rank);
    } else if (size >= 3) {
        int one = 1, before = -1;
        if (rank == 1) {
            /* Asked for once the stream runs: rank 2 says when. */
            MPI_Recv(&before, 1, MPI_INT, 2, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Get(&before, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
            MPI_Win_unlock(0, win);
        } else if (rank >= 2) {
            for (int i = 0; i < rounds; i++) {
                if (rank == 2 && i == rounds / 10) MPI_Send(&i, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
                MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
                MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
                MPI_Win_unlock(0, win);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        int total = -1;
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            total = *counter;
            MPI_Win_unlock(0, win);
            CHECK(total == rounds * (size - 2), "the counter is %d, expected %d", total, rounds * (size - 2));
        }
        MPI_Bcast(&total, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 1) {
            printf("exclusive lock granted after %d of %d shared epochs\n", before, total);
            /* Where the exclusive request falls in the stream is simulated
             * time on the simulator, exact and repeatable; over a real
             * network it is the OS scheduler's (a loaded machine may run
             * rank 1 late), so "unbounded" checks only that it is granted. */
            int bounded = !(argc > 3 && strcmp(argv[3], "unbounded") == 0);
            CHECK(before >= 0 && (!bounded || before < total / 2), "the exclusive lock waited for %d of %d shared epochs",
                  before, total);
        }
    }

    MPI_Win_free(&win);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-locks on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
