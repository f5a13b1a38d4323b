/* Client/server connections within a job (MPI 4.1 §11.10), as mpi4py's
 * test_dynproc and MPICH's spawn/ tests that do not spawn use them:
 *
 * 1. The name service: a port published under a service is what a
 *    lookup finds, from every rank; a second publish of the service is
 *    MPI_ERR_SERVICE, a lookup of an unpublished one MPI_ERR_NAME, an
 *    unpublish of one not published MPI_ERR_SERVICE.
 * 2. Bad ports: closing or accepting on a port this process did not
 *    open (or closed), connecting to a name that is not a port (at every
 *    rank of the connecting group, though only the root reads the name)
 *    or to a port of the connecting group: MPI_ERR_PORT, on the
 *    communicator's error handler, the job going on.
 * 3. Rank 0 accepts on MPI_COMM_SELF; the other ranks connect as one
 *    group whose root is its last rank: an intercommunicator of 1 and
 *    size-1, a broadcast from rank 0 across it, and an allreduce.
 * 4. The other way round: the other ranks accept (their root is their
 *    rank 0, which opened the port), rank 0 connects.
 * 5. Two groups (odd and even ranks but 0) connect one after the other
 *    to one port of rank 0, which accepts twice.
 * 6. MPI_Comm_join over a TCP connection between ranks 0 and 1 (when
 *    argv[1] is "join"; with "join-blocking" rank 0 blocks in accept()
 *    before rank 1 has connected, which only processes can: a context
 *    blocked in the operating system blocks its whole host).
 * "OK c-ports on N ranks" from rank 0 when every rank passed. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

static int error_class(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

/* A broadcast of 42 from the accepting or connecting rank 0 (`root_side`
 * says which side it is on) across `inter`, and the sizes checked. */
static void use(MPI_Comm inter, int local, int remote, int on_root_side, const char *what) {
    int l = -1, r = -1, v = on_root_side ? 42 : -1;
    MPI_Comm_size(inter, &l);
    MPI_Comm_remote_size(inter, &r);
    CHECK(l == local && r == remote, "%s: sizes %d/%d, not %d/%d", what, l, r, local, remote);
    int me = -1;
    MPI_Comm_rank(inter, &me);
    int root = on_root_side ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK(MPI_Bcast(&v, 1, MPI_INT, root, inter) == MPI_SUCCESS, "%s: bcast", what);
    if (!on_root_side) CHECK(v == 42, "%s: bcast gave %d", what, v);
    int one = 1, sum = -1;
    CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter) == MPI_SUCCESS, "%s: allreduce", what);
    CHECK(sum == remote, "%s: allreduce gave %d, not %d", what, sum, remote);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME], service[64];

    /* 1 */
    CHECK(MPI_Open_port(MPI_INFO_NULL, port) == MPI_SUCCESS, "MPI_Open_port");
    snprintf(service, sizeof service, "ports.c service %d", rank);
    CHECK(MPI_Publish_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS, "MPI_Publish_name");
    CHECK(error_class(MPI_Publish_name(service, MPI_INFO_NULL, port)) == MPI_ERR_SERVICE, "a second publish");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        char other[64];
        snprintf(other, sizeof other, "ports.c service %d", r);
        CHECK(MPI_Lookup_name(other, MPI_INFO_NULL, found) == MPI_SUCCESS, "lookup of rank %d's service", r);
        if (r == rank) CHECK(strcmp(found, port) == 0, "lookup found %s, not %s", found, port);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Unpublish_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS, "MPI_Unpublish_name");
    CHECK(error_class(MPI_Lookup_name(service, MPI_INFO_NULL, found)) == MPI_ERR_NAME, "lookup after unpublish");
    CHECK(error_class(MPI_Unpublish_name(service, MPI_INFO_NULL, port)) == MPI_ERR_SERVICE, "a second unpublish");

    /* 2 */
    MPI_Comm bad = MPI_COMM_NULL;
    CHECK(error_class(MPI_Comm_connect("tcp://nowhere:1", MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad)) == MPI_ERR_PORT,
          "connect to a name that is not a port");
    /* The port matters at the root only; every rank hears what was wrong. */
    CHECK(error_class(MPI_Comm_connect(rank == 0 ? "tcp://nowhere:1" : NULL, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                                       &bad)) == MPI_ERR_PORT,
          "a group's connect to a name that is not a port");
    /* A root whose own argument is bad (a null name): it says so, and the
     * rest of its group fails too instead of waiting for it. */
    int rc = MPI_Comm_connect(NULL, MPI_INFO_NULL, size - 1, MPI_COMM_WORLD, &bad);
    CHECK(rank == size - 1 ? error_class(rc) == MPI_ERR_ARG : rc != MPI_SUCCESS,
          "a group's connect whose root passed a null name: class %d", error_class(rc));
    CHECK(error_class(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad)) == MPI_ERR_PORT,
          "a connect to a port of the connecting group");
    CHECK(MPI_Close_port(port) == MPI_SUCCESS, "MPI_Close_port");
    CHECK(error_class(MPI_Close_port(port)) == MPI_ERR_PORT, "a second close");
    CHECK(error_class(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad)) == MPI_ERR_PORT,
          "accept on a closed port");
    CHECK(bad == MPI_COMM_NULL, "a failed call made a communicator");

    if (size > 1) {
        /* The ranks but 0, as mpi4py's test makes them. */
        MPI_Group world, rest;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        int zero = 0;
        MPI_Group_excl(world, 1, &zero, &rest);
        MPI_Comm others;
        MPI_Comm_create(MPI_COMM_WORLD, rest, &others);
        MPI_Comm inter = MPI_COMM_NULL;

        /* 3 */
        if (rank == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, size - 1, 0, MPI_COMM_WORLD);
            CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter) == MPI_SUCCESS, "accept");
            use(inter, 1, size - 1, 1, "accept on COMM_SELF");
            MPI_Close_port(port);
        } else {
            if (rank == size - 1) MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(MPI_Comm_connect(rank == size - 1 ? port : NULL, MPI_INFO_NULL, size - 2, others, &inter) ==
                      MPI_SUCCESS,
                  "connect");
            use(inter, size - 1, 1, 0, "connect of the others");
        }
        MPI_Comm_free(&inter);

        /* 4 */
        if (rank == 1) {
            MPI_Open_port(MPI_INFO_NULL, port);
            MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
        if (rank == 0) {
            MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter) == MPI_SUCCESS, "connect of 0");
            use(inter, 1, size - 1, 1, "connect of rank 0");
        } else {
            CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, others, &inter) == MPI_SUCCESS, "accept of the others");
            use(inter, size - 1, 1, 0, "accept of the others");
            if (rank == 1) MPI_Close_port(port);
        }
        MPI_Comm_free(&inter);

        /* 5 */
        if (size > 2) {
            if (rank == 0) {
                MPI_Open_port(MPI_INFO_NULL, port);
                MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
                int seen = 0;
                for (int k = 0; k < 2; k++) {
                    int n = -1;
                    CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter) == MPI_SUCCESS,
                          "accept %d", k);
                    MPI_Comm_remote_size(inter, &n);
                    seen += n;
                    use(inter, 1, n, 1, "one of two accepts");
                    MPI_Comm_free(&inter);
                }
                CHECK(seen == size - 1, "two accepts met %d processes, not %d", seen, size - 1);
                MPI_Close_port(port);
            } else {
                MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
                MPI_Comm half;
                MPI_Comm_split(others, rank % 2, rank, &half);
                int n = -1;
                MPI_Comm_size(half, &n);
                CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter) == MPI_SUCCESS, "connect of a half");
                use(inter, n, 1, 0, "connect of a half");
                MPI_Comm_free(&inter);
                MPI_Comm_free(&half);
            }
        }

        /* 6 */
        int blocking = argc > 1 && strcmp(argv[1], "join-blocking") == 0;
        if (argc > 1 && (strcmp(argv[1], "join") == 0 || blocking) && rank < 2) {
            int fd = -1;
            if (rank == 0) {
                int l = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                socklen_t len = sizeof a;
                CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0 &&
                          getsockname(l, (struct sockaddr *)&a, &len) == 0,
                      "a listening socket");
                MPI_Send(&a.sin_port, sizeof a.sin_port, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
                /* Rank 1 has connected once this comes: accept() does not
                 * block. With join-blocking it does, holding the
                 * simulation until the library stands in for this rank. */
                if (!blocking) MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                fd = accept(l, NULL, NULL);
                close(l);
            } else {
                struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                MPI_Recv(&a.sin_port, sizeof a.sin_port, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                fd = socket(AF_INET, SOCK_STREAM, 0);
                CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect to rank 0's socket");
                if (!blocking) MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
            }
            CHECK(MPI_Comm_join(fd, &inter) == MPI_SUCCESS, "MPI_Comm_join");
            use(inter, 1, 1, rank == 0, "join");
            MPI_Comm_free(&inter);
            close(fd);
        }
        if (others != MPI_COMM_NULL) MPI_Comm_free(&others);
        MPI_Group_free(&rest);
        MPI_Group_free(&world);
    }

    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK c-ports on %d ranks\n", size);
    MPI_Finalize();
    return all != 0;
}
