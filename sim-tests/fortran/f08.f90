! f08.f90: a `use mpi_f08` program: typed handles with == and /=, optional
! ierror, TYPE(MPI_Status) fields, non-blocking completion, a large-count
! call through the generic name, a reduction and an error handler with
! mpi_f08's interfaces, MPI_Win_allocate's TYPE(C_PTR), a broadcast from
! the last rank, a split, status conversion and MPI_Sizeof, procedure
! pointers typed by mpi_f08's callback interfaces, and MPI-IO (explicit
! offsets, a collective read, a file error handler). Any rank count of 2
! or more; rank 0 prints "No Errors" when every check passed.
module f08_checks
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: errs = 0, handled = 0, file_errors = 0
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      errs = errs + 1
      print *, 'FAILED: ', what
    end if
  end subroutine check

  subroutine prod(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    if (datatype /= MPI_INTEGER) return
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    b = a * b
  end subroutine prod

  subroutine prod_c(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer(kind=MPI_COUNT_KIND) :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    if (datatype /= MPI_INTEGER) return
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    b = a * b
  end subroutine prod_c

  subroutine handler(comm, code)
    type(MPI_Comm) :: comm
    integer :: code
    if (comm == MPI_COMM_WORLD .and. code /= MPI_SUCCESS) handled = handled + 1
  end subroutine handler

  subroutine on_file(file, code)
    type(MPI_File) :: file
    integer :: code
    if (code /= MPI_SUCCESS) file_errors = file_errors + 1
  end subroutine on_file
end module f08_checks

program f08
  use mpi_f08
  use f08_checks
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: rank, np, next, prev, count, total, ierr, cls, i, sz, fstat(MPI_STATUS_SIZE)
  type(MPI_Comm) :: half, dup
  type(MPI_Request) :: reqs(2)
  type(MPI_Status) :: status, stats(2), back
  type(MPI_Op) :: op
  type(MPI_Errhandler) :: eh
  type(MPI_Win) :: win
  type(c_ptr) :: base
  integer, pointer :: wbuf(:)
  integer :: sendbuf(6), recvbuf(6), v
  integer(kind=MPI_COUNT_KIND) :: bigcount
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp
  real(kind=8) :: r8(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  next = mod(rank + 1, np)
  prev = mod(rank + np - 1, np)
  call check(MPI_COMM_WORLD /= MPI_COMM_SELF .and. MPI_COMM_WORLD%MPI_VAL /= MPI_COMM_NULL%MPI_VAL, 'handle compare')

  ! Non-blocking with TYPE(MPI_Status) results.
  sendbuf = [(rank * 10 + i, i = 1, 6)]
  call MPI_Irecv(recvbuf, 6, MPI_INTEGER, prev, 3, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(sendbuf, 4, MPI_INTEGER, next, 3, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, stats)
  call MPI_Get_count(stats(1), MPI_INTEGER, count)
  call check(stats(1)%MPI_SOURCE == prev .and. stats(1)%MPI_TAG == 3 .and. count == 4, 'waitall status')
  call check(all(reqs == MPI_REQUEST_NULL) .and. recvbuf(4) == prev * 10 + 4, 'waitall data')

  ! A large count through the generic name.
  bigcount = 5
  call MPI_Sendrecv(sendbuf, bigcount, MPI_INTEGER, next, 4, recvbuf, 6_MPI_COUNT_KIND, MPI_INTEGER, prev, 4, &
                    MPI_COMM_WORLD, status)
  call MPI_Get_count(status, MPI_INTEGER, bigcount)
  call check(bigcount == 5 .and. recvbuf(5) == prev * 10 + 5, 'large-count sendrecv')

  ! A reduction with mpi_f08's callback interface.
  call MPI_Op_create(prod, .true., op)
  v = 2
  call MPI_Allreduce(v, total, 1, MPI_INTEGER, op, MPI_COMM_WORLD)
  call check(total == 2**np, 'user op')
  call MPI_Op_free(op)
  call check(op == MPI_OP_NULL, 'op_free')
  call MPI_Op_create_c(prod_c, .true., op)
  v = 3
  call MPI_Allreduce(v, total, 1, MPI_INTEGER, op, MPI_COMM_WORLD)
  call check(total == 3**np, 'large-count user op')
  call MPI_Op_free(op)

  ! A broadcast from the last rank, and a split into halves.
  v = merge(42, -1, rank == np - 1)
  call MPI_Bcast(v, 1, MPI_INTEGER, np - 1, MPI_COMM_WORLD)
  call check(v == 42, 'bcast from the last rank')
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half)
  call MPI_Comm_size(half, sz)
  call check(sz == (np + 1 - mod(rank, 2)) / 2, 'split size')
  call MPI_Comm_rank(half, i)
  call check(i == (np - 1 - rank) / 2, 'split order')
  call MPI_Comm_dup(half, dup)
  call MPI_Comm_free(dup)
  call check(dup == MPI_COMM_NULL, 'comm_free')
  call MPI_Comm_free(half)

  ! MPI_Win_allocate gives the memory as a TYPE(C_PTR).
  wsize = 4 * 4
  call MPI_Win_allocate(wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, base, win)
  call c_f_pointer(base, wbuf, [4])
  wbuf = -1
  call MPI_Win_fence(0, win)
  disp = 1
  call MPI_Put(rank, 1, MPI_INTEGER, next, disp, 1, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call check(wbuf(2) == prev .and. wbuf(1) == -1, 'put into allocated window')
  call MPI_Win_free(win)

  ! Errors: through ierror, then a handler with mpi_f08's interface.
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Send(v, 1, MPI_INTEGER, np + 3, 0, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, cls)
  call check(cls == MPI_ERR_RANK, 'error class')
  call MPI_Comm_create_errhandler(handler, eh)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh)
  call MPI_Send(v, 1, MPI_INTEGER, np + 3, 0, MPI_COMM_WORLD, ierr)
  call check(handled == 1 .and. ierr /= MPI_SUCCESS, 'fortran error handler')
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL)
  call MPI_Errhandler_free(eh)

  ! Callbacks typed by mpi_f08's abstract interfaces (§19.1.2).
  block
    procedure(MPI_User_function), pointer :: pf
    procedure(MPI_Comm_errhandler_function), pointer :: ph
    procedure(MPI_File_errhandler_function), pointer :: pfile
    type(MPI_File) :: fh
    type(MPI_Errhandler) :: feh
    integer(kind=MPI_OFFSET_KIND) :: off
    integer :: got(64), ranks(64)
    pf => prod
    ph => handler
    pfile => on_file
    call check(associated(pf) .and. associated(ph), 'procedure pointers to callbacks')
    ! MPI-IO: each rank writes its rank at its own offset; all read all.
    call MPI_File_open(MPI_COMM_WORLD, 'f08-io.dat', ior(MPI_MODE_CREATE, ior(MPI_MODE_RDWR, &
        & MPI_MODE_DELETE_ON_CLOSE)), MPI_INFO_NULL, fh, ierr)
    call check(ierr == MPI_SUCCESS, 'file open')
    off = rank * 4
    call MPI_File_write_at_all(fh, off, rank, 1, MPI_INTEGER, status)
    call MPI_Get_count(status, MPI_INTEGER, count)
    call check(count == 1, 'write_at_all count')
    call MPI_Barrier(MPI_COMM_WORLD)
    off = 0
    got = -1
    call MPI_File_read_at_all(fh, off, got, min(np, 64), MPI_INTEGER, MPI_STATUS_IGNORE)
    ranks = [(i, i = 0, 63)]
    call check(all(got(1:min(np, 64)) == ranks(1:min(np, 64))), 'read_at_all of every rank')
    call MPI_File_create_errhandler(pfile, feh)
    call MPI_File_set_errhandler(fh, feh)
    off = -4
    call MPI_File_read_at(fh, off, got, 1, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
    call check(file_errors == 1 .and. ierr /= MPI_SUCCESS, 'file error handler')
    call MPI_Errhandler_free(feh)
    call MPI_File_close(fh)
    call check(fh == MPI_FILE_NULL, 'file closed')
  end block

  ! Ports and names (MPI 4.1 §11.10): every rank publishes a port of its
  ! own and finds it again; rank 0 accepts on its own, rank 1 connects.
  block
    character(len=MPI_MAX_PORT_NAME) :: port, found
    character(len=32) :: service
    type(MPI_Comm) :: inter
    integer :: v2
    call MPI_Open_port(MPI_INFO_NULL, port)
    write (service, '(a,i0)') 'f08 service ', rank
    call MPI_Publish_name(service, MPI_INFO_NULL, port)
    call MPI_Lookup_name(service, MPI_INFO_NULL, found)
    call check(trim(found) == trim(port), 'lookup of a published port')
    call MPI_Unpublish_name(service, MPI_INFO_NULL, port)
    if (np >= 2 .and. rank < 2) then
      if (rank == 0) then
        call MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHARACTER, 1, 7, MPI_COMM_WORLD)
        call MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, inter)
        v2 = -1
        call MPI_Recv(v2, 1, MPI_INTEGER, 0, 8, inter, MPI_STATUS_IGNORE)
        call check(v2 == 42, 'a message across an accepted intercommunicator')
      else
        call MPI_Recv(found, MPI_MAX_PORT_NAME, MPI_CHARACTER, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
        call MPI_Comm_connect(found, MPI_INFO_NULL, 0, MPI_COMM_SELF, inter)
        v2 = 42
        call MPI_Send(v2, 1, MPI_INTEGER, 0, 8, inter)
      end if
      call MPI_Comm_free(inter)
    end if
    call MPI_Close_port(port)
  end block

  ! Status conversion both ways, and MPI_Sizeof.
  call MPI_Status_f082f(stats(1), fstat)
  call MPI_Status_f2f08(fstat, back)
  call check(fstat(MPI_SOURCE) == prev .and. back%MPI_TAG == 3, 'status conversion')
  call MPI_Sizeof(r8, sz)
  call check(sz == 8, 'sizeof real(8) array')
  call MPI_Sizeof(v, sz)
  call check(sz == 4, 'sizeof integer')

  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print *, 'No Errors'
  call MPI_Finalize()
end program f08
