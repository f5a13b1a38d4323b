/* Two threads in MPI at once under MPI_THREAD_SERIALIZED: erroneous, and
 * it must end the job with a message rather than hang (issue 30); the
 * same program under MPI_THREAD_MULTIPLE is multiple.c's first case. Rank 0's main thread
 * blocks in a receive that only its second thread's send would satisfy
 * (through rank 1, which echoes). MPI_Initialized stays callable from any
 * thread at any time. With the argument "serial", the two threads take
 * turns (a join in between): that is allowed and must work. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int value = 41;

static void *sender(void *arg)
{
    (void)arg;
    int flag = 0;
    MPI_Initialized(&flag);
    if (!flag) printf("MPI_Initialized said 0 in a second thread\n");
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL); /* let the main thread block in MPI_Recv first */
    MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1, rank, size, got = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int serial = argc > 1 && strcmp(argv[1], "serial") == 0;
    if (provided != MPI_THREAD_SERIALIZED) printf("provided %d, not MPI_THREAD_SERIALIZED\n", provided);
    if (size >= 2 && rank == 0) {
        pthread_t t;
        pthread_create(&t, NULL, sender, NULL);
        if (serial) pthread_join(t, NULL);
        MPI_Recv(&got, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!serial) pthread_join(t, NULL);
    } else if (size >= 2 && rank == 1) {
        MPI_Recv(&got, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&got, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("%s threads on %d ranks: got %d\n", got == 41 ? "OK" : "WRONG", size, got);
    MPI_Finalize();
    return 0;
}
