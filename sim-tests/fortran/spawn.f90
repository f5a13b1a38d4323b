! Process creation from Fortran (MPI 4.1 §11.8, issue 50), with module
! mpi_f08: MPI_Comm_spawn with an argv ended by a blank entry (whose
! entries lose their trailing blanks; mpi_f08 keeps leading ones), from the
! last rank (whose arguments only are read); MPI_Comm_spawn_multiple with
! a table of arguments, ARRAY_OF_ARGV(COUNT,*), and MPI_APPNUM; the
! children check what they were given and answer over the
! intercommunicator. Rank 0 prints "No Errors" and its MPI_Wtime.
program spawn
  use mpi_f08
  implicit none
  type(MPI_Comm) :: parent, inter
  type(MPI_Info) :: infos(2)
  integer :: rank, size, errs, total, i, root, codes(3), codes2(3), n, got
  integer :: maxprocs(2), remote
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  logical :: flag
  character(len=256) :: self, arg
  character(len=16) :: argv(3)
  character(len=256) :: cmds(2)
  character(len=16) :: table(2, 3)

  errs = 0
  call MPI_Init()
  call MPI_Comm_get_parent(parent)
  call get_command_argument(0, self)

  if (parent == MPI_COMM_NULL) then
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    root = size - 1
    ! Only the root's arguments are read: the others pass the null ones.
    if (rank == root) then
      argv(1) = 'single'
      argv(2) = ' two words'
      argv(3) = ' '
      call MPI_Comm_spawn(self, argv, 2, MPI_INFO_NULL, root, MPI_COMM_WORLD, inter, codes)
      do i = 1, 2
        if (codes(i) /= MPI_SUCCESS) errs = errs + 1
      end do
    else
      call MPI_Comm_spawn(' ', MPI_ARGV_NULL, 0, MPI_INFO_NULL, root, MPI_COMM_WORLD, inter, MPI_ERRCODES_IGNORE)
    end if
    call MPI_Comm_remote_size(inter, remote)
    if (remote /= 2) then
      errs = errs + 1
      print *, 'spawn: remote size ', remote
    end if
    ! Each child sends 1000 times its count of arguments plus its appnum.
    if (rank == 0) then
      do i = 0, 1
        call MPI_Recv(got, 1, MPI_INTEGER, i, 7, inter, MPI_STATUS_IGNORE)
        if (got /= 2 * 1000) then
          errs = errs + 1
          print *, 'spawn: child ', i, ' said ', got
        end if
      end do
    end if
    call MPI_Comm_disconnect(inter)

    ! Two commands, the second with no arguments (a blank first entry).
    if (rank == root) then
      cmds(1) = self
      cmds(2) = self
      table(1, 1) = 'multiple'
      table(1, 2) = ' '
      table(1, 3) = ' '
      table(2, 1) = ' '
      table(2, 2) = ' '
      table(2, 3) = ' '
      maxprocs = (/ 1, 2 /)
      infos = MPI_INFO_NULL
      call MPI_Comm_spawn_multiple(2, cmds, table, maxprocs, infos, root, MPI_COMM_WORLD, inter, codes2)
      do i = 1, 3
        if (codes2(i) /= MPI_SUCCESS) errs = errs + 1
      end do
    else
      call MPI_Comm_spawn_multiple(0, cmds, MPI_ARGVS_NULL, maxprocs, infos, root, MPI_COMM_WORLD, inter, &
                                   MPI_ERRCODES_IGNORE)
    end if
    if (rank == 0) then
      do i = 0, 2
        call MPI_Recv(got, 1, MPI_INTEGER, i, 7, inter, MPI_STATUS_IGNORE)
        ! Command 1 (appnum 0) has one argument, command 2 (appnum 1) none.
        if ((i == 0 .and. got /= 1000 * 1 + 0) .or. (i > 0 .and. got /= 1000 * 0 + 1)) then
          errs = errs + 1
          print *, 'spawn_multiple: child ', i, ' said ', got
        end if
      end do
    end if
    call MPI_Comm_disconnect(inter)

    call MPI_Allreduce(errs, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    ! The simulated time it ends at: the same in every run.
    if (rank == 0 .and. total == 0) print '(A,F0.9)', ' No Errors at ', MPI_Wtime()
  else
    ! A child: its arguments, and which command it is.
    n = command_argument_count()
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag)
    if (.not. flag) appnum = 0
    call get_command_argument(1, arg)
    if (n == 2) then
      call get_command_argument(2, arg)
      if (arg /= ' two words') n = -100
    else if (n == 1) then
      if (arg /= 'multiple') n = -100
    end if
    got = 1000 * n + int(appnum)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Send(got, 1, MPI_INTEGER, 0, 7, parent)
    call MPI_Comm_disconnect(parent)
  end if
  call MPI_Finalize()
end program spawn
