! The mpif.h program of the build-system tests.
      PROGRAM HELLO77
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NP, TOTAL
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      CALL MPI_REDUCE(1, TOTAL, 1, MPI_INTEGER, MPI_SUM, 0,
     &                MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0 .AND. TOTAL .EQ. NP) PRINT '(A,I0,A)',
     &    'OK buildsys F77 on ', NP, ' ranks'
      CALL MPI_FINALIZE(IERR)
      END
