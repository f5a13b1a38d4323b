! usempi.f90: a `use mpi` program (explicit interfaces) with what a Fortran
! 90 user writes: point-to-point with statuses, non-blocking completion
! with 1-based indices, a derived type, collectives with MPI_IN_PLACE and
! a reduction written in Fortran, one-sided with address-kind
! displacements, error codes through ierror, a Fortran error handler,
! attribute copy and delete functions and a generalized request written in
! Fortran, Cartesian topologies with LOGICAL arrays, and MPI_Wtime. Any rank count
! of 2 or more; rank 0 prints "No Errors" when every check passed.
module checks
  use mpi
  implicit none
  integer :: errs = 0, handled = 0, copied = 0, deleted = 0, freed = 0
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      errs = errs + 1
      print *, 'FAILED: ', what
    end if
  end subroutine check

  subroutine maxabs(invec, inoutvec, len, datatype)
    integer :: len, datatype, i
    double precision :: invec(len), inoutvec(len)
    if (datatype == 0) return
    do i = 1, len
      inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
    end do
  end subroutine maxabs

  subroutine copy_fn(oldcomm, keyval, extra_state, val_in, val_out, flag, ierr)
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, val_in, val_out
    logical :: flag
    if (oldcomm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID) return
    copied = copied + 1
    val_out = val_in + extra_state
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine copy_fn

  subroutine delete_fn(comm, keyval, val, extra_state, ierr)
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra_state
    if (comm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID .or. extra_state /= 1000) return
    if (val == 1005 .or. val == 2005) deleted = deleted + 1
    ierr = MPI_SUCCESS
  end subroutine delete_fn

  subroutine query_fn(extra_state, status, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: status(MPI_STATUS_SIZE), ierr
    call MPI_Status_set_elements(status, MPI_INTEGER, 3, ierr)
    call MPI_Status_set_cancelled(status, .false., ierr)
    status(MPI_SOURCE) = MPI_UNDEFINED
    status(MPI_TAG) = int(extra_state)
    ierr = MPI_SUCCESS
  end subroutine query_fn

  subroutine free_fn(extra_state, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: ierr
    if (extra_state == 77) freed = freed + 1
    extra_state = extra_state + 1
    ierr = MPI_SUCCESS
  end subroutine free_fn

  subroutine cancel_fn(extra_state, complete, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    logical :: complete
    integer :: ierr
    if (complete .and. extra_state == 0) print *, 'cancelled'
    ierr = MPI_SUCCESS
  end subroutine cancel_fn

  subroutine handler(comm, code)
    integer :: comm, code
    if (comm /= 0 .and. code /= 0) handled = handled + 1
  end subroutine handler
end module checks

program usempi
  use mpi
  use checks
  implicit none
  integer :: ierr, rank, np, next, prev, i, count, op, win, eh, cart, total
  integer :: status(MPI_STATUS_SIZE), reqs(4), stats(MPI_STATUS_SIZE, 4)
  integer :: indices(4), outcount, rowtype, dims(2), coords(2), cls, key, dup, greq
  logical :: periods(2), remain(2), flag
  double precision :: a(8), b(8), t0, t1
  integer(kind=MPI_ADDRESS_KIND) :: disp, wsize, lb, extent, val, gstate
  integer :: sendbuf(4), recvbuf(4), structtype, blens(2)
  integer(kind=MPI_ADDRESS_KIND) :: disps(2)
  ! A constant array of handles: the glue must only read it (it lives in
  ! read-only memory).
  integer, parameter :: types(2) = [MPI_INTEGER, MPI_DOUBLE_PRECISION]

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  next = mod(rank + 1, np)
  prev = mod(rank + np - 1, np)
  t0 = MPI_Wtime()

  ! Point-to-point with a status, and MPI_Get_count on it.
  a = [(dble(rank * 10 + i), i = 1, 8)]
  call MPI_Sendrecv(a, 5, MPI_DOUBLE_PRECISION, next, 1, b, 8, MPI_DOUBLE_PRECISION, prev, 1, &
                    MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, count, ierr)
  call check(count == 5 .and. status(MPI_SOURCE) == prev .and. b(5) == dble(prev * 10 + 5), 'sendrecv')

  ! Four requests; Waitsome's indices are 1-based.
  sendbuf = rank
  call MPI_Irecv(recvbuf(1), 1, MPI_INTEGER, prev, 2, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Irecv(recvbuf(2), 1, MPI_INTEGER, next, 3, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(sendbuf(1), 1, MPI_INTEGER, next, 2, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Isend(sendbuf(2), 1, MPI_INTEGER, prev, 3, MPI_COMM_WORLD, reqs(4), ierr)
  total = 0
  do while (total < 4)
    call MPI_Waitsome(4, reqs, outcount, indices, stats, ierr)
    do i = 1, outcount
      call check(indices(i) >= 1 .and. indices(i) <= 4, 'waitsome index')
    end do
    total = total + outcount
  end do
  call check(recvbuf(1) == prev .and. recvbuf(2) == next, 'waitsome data')
  call check(all(reqs == MPI_REQUEST_NULL), 'waitsome nulls')
  call MPI_Testall(4, reqs, flag, stats, ierr)
  call check(flag, 'testall on nulls')

  ! A resized type of one double with an extent of two.
  call MPI_Type_create_resized(MPI_DOUBLE_PRECISION, 0_MPI_ADDRESS_KIND, 16_MPI_ADDRESS_KIND, rowtype, ierr)
  call MPI_Type_commit(rowtype, ierr)
  call MPI_Type_get_extent(rowtype, lb, extent, ierr)
  call check(lb == 0 .and. extent == 16, 'resized extent')
  b = -1
  call MPI_Sendrecv(a, 4, rowtype, next, 4, b, 4, MPI_DOUBLE_PRECISION, prev, 4, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(b(2) == dble(prev * 10 + 3) .and. b(4) == dble(prev * 10 + 7) .and. b(5) == -1, 'resized type')
  call MPI_Type_free(rowtype, ierr)

  ! A struct type from a constant array of types; a zero-count message
  ! completed by polling MPI_Test.
  blens = [1, 1]
  disps = [0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND]
  call MPI_Type_create_struct(2, blens, disps, types, structtype, ierr)
  call MPI_Type_commit(structtype, ierr)
  call MPI_Type_size(structtype, count, ierr)
  call check(count == 12 .and. types(1) == MPI_INTEGER, 'struct type from a constant array')
  call MPI_Type_free(structtype, ierr)
  call MPI_Irecv(recvbuf, 0, MPI_INTEGER, prev, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Send(sendbuf, 0, MPI_INTEGER, next, 5, MPI_COMM_WORLD, ierr)
  flag = .false.
  i = 0
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, status, ierr)
    i = i + 1
  end do
  call MPI_Get_count(status, MPI_INTEGER, count, ierr)
  call check(count == 0 .and. status(MPI_SOURCE) == prev .and. reqs(1) == MPI_REQUEST_NULL, 'polled zero-count receive')

  ! A reduction written in Fortran on doubles, then MPI_IN_PLACE.
  call MPI_Op_create(maxabs, .true., op, ierr)
  a = dble(-rank)
  call MPI_Allreduce(a, b, 8, MPI_DOUBLE_PRECISION, op, MPI_COMM_WORLD, ierr)
  call check(all(b == dble(np - 1)), 'user op on doubles')
  call MPI_Op_free(op, ierr)
  call check(op == MPI_OP_NULL, 'op_free')
  a = 1
  call MPI_Allreduce(MPI_IN_PLACE, a, 8, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(a == dble(np)), 'allreduce in place')

  ! One-sided: lock, put at an address-kind displacement, unlock.
  b = 0
  wsize = 8 * 8
  call MPI_Win_create(b, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  disp = 2
  a = dble(rank)
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win, ierr)
  call MPI_Put(a, 3, MPI_DOUBLE_PRECISION, next, disp, 3, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_Win_unlock(next, win, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win, ierr)
  call check(b(3) == dble(prev) .and. b(5) == dble(prev) .and. b(2) == 0 .and. b(6) == 0, 'passive put')
  call MPI_Win_unlock(rank, win, ierr)
  call MPI_Win_free(win, ierr)

  ! A Cartesian grid: LOGICAL periods in, out, and a sub-grid.
  dims = 0
  call MPI_Dims_create(np, 2, dims, ierr)
  periods = [.true., .false.]
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  periods = .false.
  call MPI_Cart_get(cart, 2, dims, periods, coords, ierr)
  call check(periods(1) .and. .not. periods(2), 'cart_get periods')
  remain = [.false., .true.]
  call MPI_Cart_sub(cart, remain, i, ierr)
  call MPI_Comm_size(i, count, ierr)
  call check(count == dims(2), 'cart_sub')
  call MPI_Comm_free(i, ierr)
  call MPI_Comm_free(cart, ierr)

  ! Errors: a code through ierror, then a handler written in Fortran.
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(sendbuf, 1, MPI_INTEGER, -7, 0, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, cls, i)
  call check(cls == MPI_ERR_RANK, 'error class')
  call MPI_Comm_create_errhandler(handler, eh, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh, ierr)
  call MPI_Send(sendbuf, 1, MPI_INTEGER, -7, 0, MPI_COMM_WORLD, ierr)
  call check(handled == 1, 'fortran error handler')
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  call MPI_Errhandler_free(eh, ierr)

  ! Attribute copy and delete functions written in Fortran, with their
  ! extra_state: dup copies (1005 -> 2005), both frees delete.
  call MPI_Comm_create_keyval(copy_fn, delete_fn, key, 1000_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, i, ierr)
  call MPI_Comm_set_attr(i, key, 1005_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(i, dup, ierr)
  call MPI_Comm_get_attr(dup, key, val, flag, ierr)
  call check(flag .and. val == 2005 .and. copied == 1, 'fortran copy function')
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_free(i, ierr)
  call check(deleted == 2, 'fortran delete function')
  call MPI_Comm_free_keyval(key, ierr)

  ! A generalized request whose callbacks are Fortran; they get gstate
  ! itself, and what the free function writes there is seen here.
  gstate = 77
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, gstate, greq, ierr)
  call MPI_Grequest_complete(greq, ierr)
  call MPI_Wait(greq, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, count, ierr)
  call check(greq == MPI_REQUEST_NULL .and. status(MPI_TAG) == 77 .and. count == 3 .and. freed == 1 &
             .and. gstate == 78, 'generalized request')

  ! MPI_Sizeof on an array and a scalar.
  call MPI_Sizeof(a, i, ierr)
  call MPI_Sizeof(count, outcount, ierr)
  call check(i == 8 .and. outcount == 4, 'sizeof')

  t1 = MPI_Wtime()
  call check(t1 > t0, 'wtime advances')
  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. total == 0) print *, 'No Errors'
  call MPI_Finalize(ierr)
end program usempi
