! f77.f: an F77-style program (INCLUDE 'mpif.h', implicit interfaces) that
! checks what a Fortran user meets first: point-to-point with statuses,
! non-blocking completion (1-based indices), a derived type, collectives
! with MPI_IN_PLACE and a reduction written in Fortran, one-sided with
! INTEGER(KIND=MPI_ADDRESS_KIND) displacements, error codes through IERROR,
! an error handler written in Fortran, attributes and strings. Any rank
! count of 2 or more. Rank 0 prints "No Errors" when every check passed.
      SUBROUTINE MYSUM(INV, INOUTV, LEN, DTYPE)
      INTEGER LEN, DTYPE, I
      INTEGER INV(LEN), INOUTV(LEN)
      DO I = 1, LEN
        INOUTV(I) = INOUTV(I) + INV(I)
      END DO
      END

      SUBROUTINE MYHANDLER(COMM, CODE)
      INTEGER COMM, CODE, CALLS
      COMMON /HANDLED/ CALLS
      CALLS = CALLS + 1
      END

      SUBROUTINE CHECK(OK, WHAT, ERRS)
      LOGICAL OK
      CHARACTER*(*) WHAT
      INTEGER ERRS
      IF (.NOT. OK) THEN
        ERRS = ERRS + 1
        PRINT *, 'FAILED: ', WHAT
      END IF
      END

      PROGRAM F77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      EXTERNAL MYSUM, MYHANDLER
      INTEGER IERR, RANK, NP, I, ERRS, TOTAL, NEXT, PREV, CALLS
      INTEGER BUF(10), RBUF(10), STATUS(MPI_STATUS_SIZE), COUNT
      INTEGER REQS(2), STATS(MPI_STATUS_SIZE, 2), IDX, VTYPE, OP
      INTEGER WIN, EH, KEY, CLS, DUP, LEN, VAL
      INTEGER(KIND=MPI_ADDRESS_KIND) DISP, WSIZE, ATTR, TAGUB
      LOGICAL FLAG, LV, LR
      CHARACTER*(MPI_MAX_PROCESSOR_NAME) PNAME
      CHARACTER*(MPI_MAX_OBJECT_NAME) CNAME
      COMMON /HANDLED/ CALLS
      ERRS = 0
      CALLS = 0
      CALL MPI_INIT(IERR)
      CALL CHECK(IERR .EQ. MPI_SUCCESS, 'MPI_INIT', ERRS)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      NEXT = MOD(RANK + 1, NP)
      PREV = MOD(RANK + NP - 1, NP)
! Point-to-point: a ring, with the status's fields and MPI_GET_COUNT.
      DO I = 1, 10
        BUF(I) = RANK * 100 + I
      END DO
      CALL MPI_SENDRECV(BUF, 7, MPI_INTEGER, NEXT, 5, RBUF, 10,
     &     MPI_INTEGER, PREV, 5, MPI_COMM_WORLD, STATUS, IERR)
      CALL MPI_GET_COUNT(STATUS, MPI_INTEGER, COUNT, IERR)
      CALL CHECK(STATUS(MPI_SOURCE) .EQ. PREV .AND.
     &     STATUS(MPI_TAG) .EQ. 5 .AND. COUNT .EQ. 7 .AND.
     &     RBUF(7) .EQ. PREV * 100 + 7, 'sendrecv status', ERRS)
! Non-blocking: WAITANY's index is 1-based, WAITALL fills statuses.
      CALL MPI_IRECV(RBUF, 10, MPI_INTEGER, PREV, 6, MPI_COMM_WORLD,
     &     REQS(1), IERR)
      CALL MPI_ISEND(BUF, 3, MPI_INTEGER, NEXT, 6, MPI_COMM_WORLD,
     &     REQS(2), IERR)
      CALL MPI_WAITANY(2, REQS, IDX, STATUS, IERR)
      CALL CHECK(IDX .EQ. 1 .OR. IDX .EQ. 2, 'waitany index', ERRS)
      CALL CHECK(REQS(IDX) .EQ. MPI_REQUEST_NULL, 'waitany null',
     &     ERRS)
      CALL MPI_WAITALL(2, REQS, STATS, IERR)
      CALL CHECK(REQS(1) .EQ. MPI_REQUEST_NULL .AND.
     &     REQS(2) .EQ. MPI_REQUEST_NULL, 'waitall nulls', ERRS)
      CALL MPI_WAITANY(2, REQS, IDX, MPI_STATUS_IGNORE, IERR)
      CALL CHECK(IDX .EQ. MPI_UNDEFINED, 'waitany undefined', ERRS)
! A derived type: every other integer of BUF.
      CALL MPI_TYPE_VECTOR(5, 1, 2, MPI_INTEGER, VTYPE, IERR)
      CALL MPI_TYPE_COMMIT(VTYPE, IERR)
      DO I = 1, 10
        RBUF(I) = -1
      END DO
      CALL MPI_SENDRECV(BUF, 1, VTYPE, NEXT, 8, RBUF, 5, MPI_INTEGER,
     &     PREV, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, IERR)
      CALL CHECK(RBUF(1) .EQ. PREV*100+1 .AND. RBUF(5) .EQ. PREV*100+9
     &     .AND. RBUF(6) .EQ. -1, 'vector type', ERRS)
      CALL MPI_TYPE_FREE(VTYPE, IERR)
      CALL CHECK(VTYPE .EQ. MPI_DATATYPE_NULL, 'type_free', ERRS)
! Collectives: MPI_IN_PLACE, and a reduction written in Fortran.
      VAL = RANK + 1
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, VAL, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, IERR)
      CALL CHECK(VAL .EQ. NP * (NP + 1) / 2, 'allreduce in place', ERRS)
      CALL MPI_OP_CREATE(MYSUM, .TRUE., OP, IERR)
      VAL = RANK * RANK
      CALL MPI_REDUCE(VAL, COUNT, 1, MPI_INTEGER, OP, NP - 1,
     &     MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. NP - 1) THEN
        CALL CHECK(COUNT .EQ. (NP-1) * NP * (2*NP-1) / 6, 'user op',
     &       ERRS)
      END IF
      CALL MPI_OP_FREE(OP, IERR)
! LOGICAL reductions: gfortran's .TRUE. and .FALSE. in and out.
      LV = RANK .EQ. 0
      CALL MPI_ALLREDUCE(LV, LR, 1, MPI_LOGICAL, MPI_LOR,
     &     MPI_COMM_WORLD, IERR)
      CALL CHECK(LR, 'logical or', ERRS)
      CALL MPI_ALLREDUCE(LV, LR, 1, MPI_LOGICAL, MPI_LAND,
     &     MPI_COMM_WORLD, IERR)
      CALL CHECK(.NOT. LR, 'logical and', ERRS)
      CALL MPI_ALLREDUCE(.TRUE., LR, 1, MPI_LOGICAL, MPI_LAND,
     &     MPI_COMM_WORLD, IERR)
      CALL CHECK(LR .EQV. .TRUE., 'logical and of trues', ERRS)
! One-sided: put into the next rank's window at an address-kind displacement.
      DO I = 1, 10
        RBUF(I) = 0
      END DO
      WSIZE = 40
      CALL MPI_WIN_CREATE(RBUF, WSIZE, 4, MPI_INFO_NULL,
     &     MPI_COMM_WORLD, WIN, IERR)
      CALL MPI_WIN_FENCE(0, WIN, IERR)
      DISP = 3
      CALL MPI_PUT(BUF, 2, MPI_INTEGER, NEXT, DISP, 2, MPI_INTEGER,
     &     WIN, IERR)
      CALL MPI_WIN_FENCE(0, WIN, IERR)
      CALL CHECK(RBUF(4) .EQ. PREV*100+1 .AND. RBUF(5) .EQ. PREV*100+2
     &     .AND. RBUF(3) .EQ. 0, 'put', ERRS)
      CALL MPI_WIN_GET_ATTR(WIN, MPI_WIN_SIZE, ATTR, FLAG, IERR)
      CALL CHECK(FLAG .AND. ATTR .EQ. 40, 'win size attribute', ERRS)
      CALL MPI_WIN_FREE(WIN, IERR)
! Errors through IERROR, then through a handler written in Fortran.
      CALL MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &     IERR)
      CALL MPI_SEND(BUF, 1, MPI_INTEGER, NP + 5, 0, MPI_COMM_WORLD,
     &     IERR)
      CALL MPI_ERROR_CLASS(IERR, CLS, I)
      CALL CHECK(CLS .EQ. MPI_ERR_RANK, 'error class', ERRS)
      CALL MPI_COMM_CREATE_ERRHANDLER(MYHANDLER, EH, IERR)
      CALL MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, EH, IERR)
      CALL MPI_SEND(BUF, 1, MPI_INTEGER, NP + 5, 0, MPI_COMM_WORLD,
     &     IERR)
      CALL CHECK(CALLS .EQ. 1, 'fortran error handler', ERRS)
      CALL MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD,
     &     MPI_ERRORS_ARE_FATAL, IERR)
      CALL MPI_ERRHANDLER_FREE(EH, IERR)
! Attributes: a key copied by MPI_COMM_DUP_FN, and MPI_TAG_UB's value.
      CALL MPI_COMM_CREATE_KEYVAL(MPI_COMM_DUP_FN,
     &     MPI_COMM_NULL_DELETE_FN, KEY, 0_MPI_ADDRESS_KIND, IERR)
      ATTR = 12345
      CALL MPI_COMM_SET_ATTR(MPI_COMM_WORLD, KEY, ATTR, IERR)
      CALL MPI_COMM_DUP(MPI_COMM_WORLD, DUP, IERR)
      ATTR = 0
      CALL MPI_COMM_GET_ATTR(DUP, KEY, ATTR, FLAG, IERR)
      CALL CHECK(FLAG .AND. ATTR .EQ. 12345, 'dup attribute', ERRS)
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, TAGUB, FLAG,
     &     IERR)
      CALL CHECK(FLAG .AND. TAGUB .GE. 32767, 'tag_ub', ERRS)
      CALL MPI_COMM_FREE(DUP, IERR)
      CALL CHECK(DUP .EQ. MPI_COMM_NULL, 'comm_free', ERRS)
      CALL MPI_COMM_FREE_KEYVAL(KEY, IERR)
! Strings both ways.
      CALL MPI_COMM_SET_NAME(MPI_COMM_WORLD, 'the world   ', IERR)
      CALL MPI_COMM_GET_NAME(MPI_COMM_WORLD, CNAME, LEN, IERR)
      CALL CHECK(CNAME .EQ. 'the world' .AND. LEN .EQ. 9, 'comm name',
     &     ERRS)
      CALL MPI_GET_PROCESSOR_NAME(PNAME, LEN, IERR)
      CALL CHECK(LEN .GT. 0 .AND. PNAME(LEN+1:LEN+1) .EQ. ' ',
     &     'processor name', ERRS)
      CALL MPI_REDUCE(ERRS, TOTAL, 1, MPI_INTEGER, MPI_SUM, 0,
     &     MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0 .AND. TOTAL .EQ. 0) PRINT *, 'No Errors'
      CALL MPI_FINALIZE(IERR)
      END
