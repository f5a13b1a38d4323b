/*
 * The dnbench pattern for any MPI library, as an outside reference (issue 8):
 *   mpibench latency ITERS WARMUP   ping-pong, half the round trip, sizes 0..4 MiB
 *   mpibench bw ITERS               windows of 64 non-blocking sends answered by
 *                                   a 4-byte message (osu_bw), sizes 1..4 MiB
 * Sizes of 64 KiB and more use a tenth of ITERS (at least 10), as dnbench;
 * bw times at most 100 windows after 3 warm-up windows. Prints one JSON
 * array in dnbench's format: [{"size":..,"latency_us"|"MBps":..}, ...].
 * Built with the library's own mpicc by scripts/bench-udp-vs-tcp.sh.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX (4 << 20)
#define WINDOW 64

static int iters_for(int size, int iters) {
    if (size >= 64 * 1024) {
        int t = iters / 10;
        return t < 10 ? 10 : t;
    }
    return iters;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 3 || n != 2 || (strcmp(argv[1], "latency") && strcmp(argv[1], "bw"))) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 mpibench latency ITERS WARMUP | bw ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int lat = strcmp(argv[1], "latency") == 0;
    int iters = atoi(argv[2]);
    int warmup = argc > 3 ? atoi(argv[3]) : 200;
    char *sbuf = malloc(MAX), *rbufs = malloc((size_t)MAX * (lat ? 1 : WINDOW));
    if (!sbuf || !rbufs) MPI_Abort(MPI_COMM_WORLD, 3);
    memset(sbuf, 3, MAX);
    memset(rbufs, 0, (size_t)MAX * (lat ? 1 : WINDOW));
    int peer = 1 - rank, first = 1;
    if (rank == 0) printf("[");
    for (int size = lat ? 0 : 1; size <= MAX; size = size ? size * 2 : 1) {
        int it = iters_for(size, iters);
        double t0 = 0, t;
        MPI_Barrier(MPI_COMM_WORLD);
        if (lat) {
            for (int i = 0; i < it + warmup; i++) {
                if (i == warmup) t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbufs, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbufs, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                }
            }
            t = MPI_Wtime() - t0;
            if (rank == 0)
                printf("%s{\"size\":%d,\"latency_us\":%.3f,\"protocol\":\"mpich\"}", first ? "" : ",", size,
                       t * 1e6 / (2.0 * it));
        } else {
            MPI_Request reqs[WINDOW];
            int ack = 0, windows = it < 100 ? it : 100;
            for (int i = 0; i < windows + 3; i++) {
                if (i == 3) t0 = MPI_Wtime();
                for (int w = 0; w < WINDOW; w++) {
                    if (rank == 0)
                        MPI_Isend(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[w]);
                    else
                        MPI_Irecv(rbufs + (size_t)w * size, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[w]);
                }
                MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
                if (rank == 0)
                    MPI_Recv(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                else
                    MPI_Send(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
            }
            t = MPI_Wtime() - t0;
            if (rank == 0)
                printf("%s{\"size\":%d,\"MBps\":%.2f,\"protocol\":\"mpich\"}", first ? "" : ",", size,
                       (double)size * WINDOW * windows / t / 1e6);
        }
        first = 0;
    }
    if (rank == 0) printf("]\n");
    free(sbuf);
    free(rbufs);
    MPI_Finalize();
    return 0;
}
