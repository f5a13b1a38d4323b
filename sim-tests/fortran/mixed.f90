! mixed.f90: a Fortran program with a C part (mixed.c) that converts its
! handles and status with mpi_abi_fort.h's MPI_*_f2c / MPI_*_c2f, and
! hands back a communicator it made, and reads an attribute set here as a
! pointer to its value. Rank 0 prints "No Errors".
program mixed
  use mpi
  implicit none
  integer :: ierr, rank, np, errs, total, newcomm, size, buf(2), status(MPI_STATUS_SIZE), key
  integer(kind=MPI_ADDRESS_KIND) :: val
  logical :: flag
  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  buf = rank
  call MPI_Sendrecv(buf, 2, MPI_INTEGER, mod(rank + 1, np), 9, buf, 2, MPI_INTEGER, &
                    mod(rank + np - 1, np), 9, MPI_COMM_WORLD, status, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, 4242_MPI_ADDRESS_KIND, ierr)
  call check_from_c(MPI_COMM_WORLD, MPI_INTEGER, status, newcomm, key, errs)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, key, val, flag, ierr)
  if (.not. flag .or. val /= 4242) errs = errs + 1
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key, ierr)
  call MPI_Comm_free_keyval(key, ierr)
  call MPI_Comm_size(newcomm, size, ierr)
  if (size /= np) errs = errs + 1
  call MPI_Comm_free(newcomm, ierr)
  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. total == 0) print *, 'No Errors'
  call MPI_Finalize(ierr)
end program mixed
