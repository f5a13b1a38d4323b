/* The C ABI end to end: environment, point-to-point in its blocking and
 * non-blocking forms, wildcards and MPI_PROC_NULL, probes and counts, the
 * basic collectives with roots other than 0 and MPI_IN_PLACE, communicator
 * split and dup, and MPI_ERRORS_RETURN. Every check can fail; rank 0
 * prints "OK c-basic on N ranks" only when every rank passed them all.
 * Built with our mpicc; run with dnrun on any backend. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv)
{
    int provided = -1, flag = 0, v, sv;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 2;
    CHECK(provided == MPI_THREAD_FUNNELED, "provided %d", provided);
    MPI_Initialized(&flag);
    CHECK(flag == 1, "initialized");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_version(&v, &sv);
    CHECK(v == 5 && sv == 0, "version %d.%d", v, sv);
    MPI_Abi_get_version(&v, &sv);
    CHECK(v == 1 && sv == 0, "abi version %d.%d", v, sv);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    CHECK(len > 0 && (int)strlen(name) == len, "processor name");
    /* The profiling hook takes any level and extra arguments (§15.2.4). */
    CHECK(MPI_Pcontrol(2) == MPI_SUCCESS && MPI_Pcontrol(0, "extra", 3) == MPI_SUCCESS, "Pcontrol");
    /* The hardware info names the resource Comm_split_type recognizes. */
    MPI_Info hw = MPI_INFO_NULL;
    char hv[64] = "";
    int hflag = 0;
    CHECK(MPI_Get_hw_resource_info(&hw) == MPI_SUCCESS && hw != MPI_INFO_NULL, "Get_hw_resource_info");
    MPI_Info_get_string(hw, "mpi_hw_resource_type", &(int){sizeof hv}, hv, &hflag);
    CHECK(hflag && strcmp(hv, "mpi_shared_memory") == 0, "hw resource type '%s'", hv);
    MPI_Info_free(&hw);
    double t0 = MPI_Wtime();

    /* A ring: each rank sends its rank to the next, blocking. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, got = -1;
    MPI_Status st;
    if (rank % 2 == 0) {
        MPI_Send(&rank, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
        MPI_Recv(&got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(&got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &st);
        MPI_Send(&rank, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
    }
    CHECK(got == prev && st.MPI_SOURCE == prev && st.MPI_TAG == 7, "ring got %d from %d", got, st.MPI_SOURCE);

    /* Non-blocking both ways with a large message (rendezvous) and wildcards. */
    enum { N = 100000 };
    static double out[N], in[N];
    for (int i = 0; i < N; i++) out[i] = rank * 1e6 + i;
    MPI_Request rq[2];
    MPI_Irecv(in, N, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(out, N, MPI_DOUBLE, next, 11, MPI_COMM_WORLD, &rq[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "requests not reset");
    CHECK(sts[0].MPI_SOURCE == prev && sts[0].MPI_TAG == 11, "wildcard status %d/%d", sts[0].MPI_SOURCE, sts[0].MPI_TAG);
    int count = -1;
    MPI_Get_count(&sts[0], MPI_DOUBLE, &count);
    CHECK(count == N, "count %d", count);
    for (int i = 0; i < N; i++)
        if (in[i] != prev * 1e6 + i) { CHECK(0, "byte %d wrong", i); break; }

    /* Sendrecv, and MPI_PROC_NULL on either side. */
    int a = rank * 3, b = -1;
    MPI_Sendrecv(&a, 1, MPI_INT, next, 3, &b, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(b == prev * 3, "sendrecv %d", b);
    b = 42;
    MPI_Recv(&b, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    CHECK(b == 42 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "recv from PROC_NULL");
    MPI_Send(&a, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD);

    /* Probe then receive a message of unknown length; Test until done.
     * (A synchronous send to oneself would deadlock: not on one rank.) */
    if (rank == 0 && size > 1) {
        char msg[37];
        memset(msg, 'x', sizeof msg);
        MPI_Ssend(msg, sizeof msg, MPI_CHAR, size - 1, 5, MPI_COMM_WORLD);
    }
    if (rank == size - 1 && size > 1) {
        MPI_Probe(0, 5, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &count);
        CHECK(count == 37, "probed count %d", count);
        char buf[64];
        MPI_Request r;
        MPI_Irecv(buf, count, MPI_CHAR, 0, 5, MPI_COMM_WORLD, &r);
        flag = 0;
        while (!flag) MPI_Test(&r, &flag, &st);
        CHECK(buf[36] == 'x' && r == MPI_REQUEST_NULL, "tested receive");
    }

    /* Collectives with roots other than 0. */
    int root = size - 1;
    int bc[3] = {0, 0, 0};
    if (rank == root) { bc[0] = 5; bc[1] = 6; bc[2] = 7; }
    MPI_Bcast(bc, 3, MPI_INT, root, MPI_COMM_WORLD);
    CHECK(bc[0] == 5 && bc[2] == 7, "bcast");
    int one = rank + 1, sum = 0;
    int rroot = size > 1 ? 1 : 0;
    MPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, rroot, MPI_COMM_WORLD);
    if (rank == rroot) CHECK(sum == size * (size + 1) / 2, "reduce %d", sum);
    double mx = rank, all = -1;
    MPI_Allreduce(&mx, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(all == size - 1, "allreduce max %g", all);
    long inplace[2] = {rank, 1};
    MPI_Allreduce(MPI_IN_PLACE, inplace, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(inplace[1] == size && inplace[0] == (long)size * (size - 1) / 2, "in-place allreduce");
    struct { int v, i; } mine = {100 - rank, rank}, loc;
    MPI_Allreduce(&mine, &loc, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(loc.v == 100 - (size - 1) && loc.i == size - 1, "minloc %d@%d", loc.v, loc.i);
    int gat[64], sc[64], ag[64], a2a_s[64], a2a_r[64], piece = -1;
    MPI_Gather(&rank, 1, MPI_INT, gat, 1, MPI_INT, root, MPI_COMM_WORLD);
    if (rank == root) for (int i = 0; i < size; i++) CHECK(gat[i] == i, "gather[%d]", i);
    for (int i = 0; i < size; i++) sc[i] = 10 * i;
    MPI_Scatter(sc, 1, MPI_INT, &piece, 1, MPI_INT, root, MPI_COMM_WORLD);
    CHECK(piece == 10 * rank, "scatter %d", piece);
    ag[rank] = rank * rank;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(ag[i] == i * i, "allgather[%d]", i);
    for (int i = 0; i < size; i++) a2a_s[i] = rank * 100 + i;
    MPI_Alltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(a2a_r[i] == i * 100 + rank, "alltoall[%d]", i);

    /* Split into odd and even ranks, reversed; dup; free. */
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    CHECK(hs == (size + 1 - rank % 2) / 2, "split size %d", hs);
    int hsum = 0;
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
    int want = 0;
    for (int r = rank % 2; r < size; r += 2) want += r;
    CHECK(hsum == want, "split allreduce %d != %d", hsum, want);
    CHECK(hr == hs - 1 - rank / 2, "split key order: rank %d in half", hr);
    MPI_Comm_dup(half, &dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    CHECK(dup == MPI_COMM_NULL, "freed comm not reset");
    MPI_Comm_free(&half);
    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &none);
    CHECK(none == MPI_COMM_NULL, "MPI_UNDEFINED split");
    int self_size = 0;
    MPI_Comm_size(MPI_COMM_SELF, &self_size);
    CHECK(self_size == 1, "self size");

    /* Errors come back with MPI_ERRORS_RETURN, with their class. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Send(&a, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "bad rank gave class %d", cls);
    rc = MPI_Send(&a, -1, MPI_INT, next, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_COUNT, "negative count gave %d", rc);
    rc = MPI_Send(&a, 1, MPI_INT, next, 0, MPI_COMM_NULL);
    CHECK(rc == MPI_ERR_COMM, "MPI_COMM_NULL gave %d", rc);
    rc = MPI_Send(&a, 1, (MPI_Datatype)0x12345, next, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE, "a garbage datatype gave %d", rc);
    char es[MPI_MAX_ERROR_STRING];
    MPI_Error_string(rc, es, &len);
    CHECK(len > 0 && strstr(es, "datatype") != NULL, "error string '%s'", es);
    CHECK(MPI_Wtime() >= t0, "time went backwards");

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("OK c-basic on %d ranks\n", size);
    MPI_Finalize();
    MPI_Finalized(&flag);
    return total == 0 && flag ? 0 : 1;
}
