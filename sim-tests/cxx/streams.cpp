// A C++ MPI program (issue 46): iostreams, a static object with a
// destructor, the standard library's containers. Built with -fPIC it runs
// as contexts of dnrun; built as g++ builds by default it holds copies of
// std::cout and std::cerr (copy relocations) and runs as processes.
// Prints "OK cxx-streams on N ranks" from rank 0.
#include <mpi.h>

#include <iostream>
#include <numeric>
#include <string>
#include <vector>

static int my_rank = -1;

struct Farewell {
    std::string word{"farewell"};
    ~Farewell() { std::cout << word << " from rank " << my_rank << std::endl; }
};
static Farewell farewell;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> mine(8, my_rank), all(8 * size);
    MPI_Allgather(mine.data(), 8, MPI_INT, all.data(), 8, MPI_INT, MPI_COMM_WORLD);
    long sum = std::accumulate(all.begin(), all.end(), 0L);
    long want = 8L * size * (size - 1) / 2;
    std::cout << "rank " << my_rank << " sums " << sum << std::endl;
    std::cerr << "rank " << my_rank << " on std::cerr" << std::endl;
    int bad = sum != want, total = 0;
    MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    if (my_rank == 0 && total == 0) std::cout << "OK cxx-streams on " << size << " ranks" << std::endl;
    return total != 0;
}
