/* mixed.c: the C half of mixed.f90. Under the MPI 5.0 ABI, MPI_Fint and the
 * MPI_*_c2f / MPI_*_f2c conversions come from the Fortran binding's
 * mpi_abi_fort.h. Called from Fortran as CHECK_FROM_C(COMM, TYPE, STATUS,
 * NEWCOMM, ERRS). */
#include <mpi.h>
#include <mpi_abi_fort.h>
#include <stdio.h>

void check_from_c_(MPI_Fint *fcomm, MPI_Fint *ftype, MPI_Fint *fstatus, MPI_Fint *fnew, MPI_Fint *keyval,
                   MPI_Fint *errs)
{
    MPI_Comm comm = MPI_Comm_f2c(*fcomm);
    int size = 0, wsize = 0, count = -1;
    MPI_Comm_size(comm, &size);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (size != wsize) { printf("C: the Fortran communicator has %d ranks, not %d\n", size, wsize); (*errs)++; }
    if (MPI_Type_f2c(*ftype) != MPI_INTEGER) { printf("C: MPI_INTEGER does not convert\n"); (*errs)++; }
    MPI_Status st;
    if (MPI_Status_f2c(fstatus, &st) != MPI_SUCCESS) { printf("C: MPI_Status_f2c failed\n"); (*errs)++; }
    MPI_Get_count(&st, MPI_INTEGER, &count);
    if (count != 2 || st.MPI_TAG != 9) { printf("C: status has count %d tag %d\n", count, st.MPI_TAG); (*errs)++; }
    if (MPI_Status_f2c(MPI_F_STATUS_IGNORE, &st) != MPI_ERR_ARG) { printf("C: MPI_F_STATUS_IGNORE converted\n"); (*errs)++; }
    MPI_Aint *val = NULL;
    int flag = 0;
    MPI_Comm_get_attr(comm, *keyval, &val, &flag);
    if (!flag || *val != 4242) { printf("C: the attribute Fortran set is not a pointer to 4242\n"); (*errs)++; }
    MPI_Comm dup;
    MPI_Comm_dup(comm, &dup);
    *fnew = MPI_Comm_c2f(dup);
}
