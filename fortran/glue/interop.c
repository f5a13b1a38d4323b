/* interop.c: the C side of Fortran interoperability under the MPI 5.0 ABI
 * (mpi_abi_fort.h): handles through the C library's MPI_*_toint and
 * MPI_*_fromint, statuses copied (a Fortran status and a TYPE(MPI_Status)
 * are the C status's 8 ints, MPI 4.1 §19.3.5). */
#include "mpi_abi_fort.h"

#include <string.h>

#define HANDLE(T, Kind, Cvt)                                     \
    MPI_Fint MPI_##Kind##_c2f(T h) { return Cvt##_toint(h); }     \
    T MPI_##Kind##_f2c(MPI_Fint f) { return Cvt##_fromint(f); }
HANDLE(MPI_Comm, Comm, MPI_Comm)
HANDLE(MPI_Errhandler, Errhandler, MPI_Errhandler)
HANDLE(MPI_File, File, MPI_File)
HANDLE(MPI_Group, Group, MPI_Group)
HANDLE(MPI_Info, Info, MPI_Info)
HANDLE(MPI_Message, Message, MPI_Message)
HANDLE(MPI_Op, Op, MPI_Op)
HANDLE(MPI_Request, Request, MPI_Request)
HANDLE(MPI_Session, Session, MPI_Session)
HANDLE(MPI_Datatype, Type, MPI_Type)
HANDLE(MPI_Win, Win, MPI_Win)

_Static_assert(sizeof(MPI_Status) == 8 * sizeof(MPI_Fint), "a Fortran status is a C status");
_Static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "TYPE(MPI_Status) is a C status");

/* Copy a status; the ignore sentinels (C's null pointer, Fortran's common
 * block) are refused, as the standard makes them invalid here. */
static int copy_status(const void *from, void *to, const void *from_ignore, const void *to_ignore)
{
    if (!from || !to || from == from_ignore || to == to_ignore) return MPI_ERR_ARG;
    memmove(to, from, sizeof(MPI_Status));
    return MPI_SUCCESS;
}

int MPI_Status_c2f(const MPI_Status *c, MPI_Fint *f) { return copy_status(c, f, NULL, MPI_F_STATUS_IGNORE); }
int MPI_Status_f2c(const MPI_Fint *f, MPI_Status *c) { return copy_status(f, c, MPI_F_STATUS_IGNORE, NULL); }
int MPI_Status_c2f08(const MPI_Status *c, MPI_F08_status *f) { return copy_status(c, f, NULL, MPI_F08_STATUS_IGNORE); }
int MPI_Status_f082c(const MPI_F08_status *f, MPI_Status *c) { return copy_status(f, c, MPI_F08_STATUS_IGNORE, NULL); }
int MPI_Status_f2f08(const MPI_Fint *f, MPI_F08_status *g)
{
    return copy_status(f, g, MPI_F_STATUS_IGNORE, MPI_F08_STATUS_IGNORE);
}
int MPI_Status_f082f(const MPI_F08_status *g, MPI_Fint *f)
{
    return copy_status(g, f, MPI_F08_STATUS_IGNORE, MPI_F_STATUS_IGNORE);
}
