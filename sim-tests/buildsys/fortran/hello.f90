! The Fortran program of the build-system tests (sim-tests/tests/build_systems.rs).
program hello
  use mpi_f08
  implicit none
  integer :: rank, np, total
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  call MPI_Reduce(1, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0 .and. total == np) print '(a,i0,a)', 'OK buildsys Fortran on ', np, ' ranks'
  call MPI_Finalize()
end program hello
