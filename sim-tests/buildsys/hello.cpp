// Built by CMake and Meson in sim-tests/tests/build_systems.rs: C++ with
// iostreams and the standard library over the C bindings of our mpi.h.
#include <mpi.h>

#include <iostream>
#include <numeric>
#include <vector>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> all(static_cast<size_t>(size));
    MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int sum = std::accumulate(all.begin(), all.end(), 0);
    if (sum != size * (size - 1) / 2) {
        std::cerr << "rank " << rank << ": sum " << sum << std::endl;
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        std::cout << "OK buildsys C++ on " << size << " ranks" << std::endl;
    MPI_Finalize();
    return 0;
}
