/*
 * Issue 50's collective write, for any MPI library:
 *   io-strided FILE MIB BLOCK [check] [KEY=VALUE ...]
 * MIB MiB in all, in blocks of BLOCK bytes dealt round-robin: rank r owns
 * blocks r, r + size, r + 2 size, ... Each rank describes its blocks with
 * a strided filetype, sets it as its view and writes them with one
 * MPI_File_write_all. With "check", every rank then reads the whole file
 * back in MiB pieces (a plain byte view) and compares every byte with
 * what its writer put there. KEY=VALUE pairs are hints for the open
 * (romio_cb_write=disable, cb_nodes=N, cb_buffer_size=BYTES). Rank 0 prints
 *   ranks N MiB M block B: write T s[, checked]
 * Built with our mpicc and with Debian MPICH's by scripts/bench-io.sh.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The byte at file offset `at`: its block's number and its place in it. */
static unsigned char expected(long long at, int block) {
    long long b = at / block;
    return (unsigned char)(b * 131 + (at % block) * 7 + 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: io-strided FILE MIB BLOCK [check] [KEY=VALUE ...]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long long total = atoll(argv[2]) << 20;
    int block = atoi(argv[3]);
    int check = 0;
    MPI_Info hints;
    MPI_Info_create(&hints);
    for (int a = 4; a < argc; a++) {
        char *eq = strchr(argv[a], '=');
        if (strcmp(argv[a], "check") == 0) {
            check = 1;
        } else if (eq) {
            *eq = 0;
            MPI_Info_set(hints, argv[a], eq + 1);
        }
    }
    if (block <= 0 || total <= 0 || total % ((long long)block * size) != 0) {
        if (rank == 0) fprintf(stderr, "io-strided: MIB MiB must be a whole number of BLOCK-byte blocks per rank\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int mine = (int)(total / block / size);
    unsigned char *buf = malloc((size_t)mine * block);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int k = 0; k < mine; k++)
        for (int i = 0; i < block; i++)
            buf[(size_t)k * block + i] = expected(((long long)k * size + rank) * block + i, block);

    MPI_Datatype filetype;
    MPI_Type_vector(mine, block, block * size, MPI_BYTE, &filetype);
    MPI_Type_commit(&filetype);
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, hints, &fh);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "io-strided: rank %d cannot open %s\n", rank, argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_File_set_size(fh, 0);
    MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, filetype, "native", MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Status st;
    rc = MPI_File_write_all(fh, buf, mine * block, MPI_BYTE, &st);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    double took = MPI_Wtime() - t0;
    int count = -1, bad = rc != MPI_SUCCESS;
    MPI_Get_count(&st, MPI_BYTE, &count);
    bad |= count != mine * block;

    if (check && !bad) {
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
        MPI_Offset sz;
        MPI_File_get_size(fh, &sz);
        bad |= sz != total;
        unsigned char *piece = malloc(1 << 20);
        for (long long at = 0; at < total && !bad; at += 1 << 20) {
            MPI_File_read_at(fh, at, piece, 1 << 20, MPI_BYTE, MPI_STATUS_IGNORE);
            for (int i = 0; i < (1 << 20); i++)
                if (piece[i] != expected(at + i, block)) {
                    fprintf(stderr, "io-strided: rank %d: byte %lld is %d, not %d\n", rank, at + i, piece[i],
                            expected(at + i, block));
                    bad = 1;
                    break;
                }
        }
        free(piece);
    }
    int anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (rank == 0) {
        if (anybad)
            printf("io-strided: WRONG\n");
        else
            printf("ranks %d MiB %lld block %d: write %.3f s%s\n", size, total >> 20, block, took, check ? ", checked" : "");
    }
    MPI_Type_free(&filetype);
    free(buf);
    MPI_Finalize();
    return anybad;
}
