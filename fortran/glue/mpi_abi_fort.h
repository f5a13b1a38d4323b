/* mpi_abi_fort.h: the Fortran-interoperability part of the MPI C API under
 * the MPI 5.0 standard ABI, which a Fortran binding provides rather than
 * the C library: MPI_Fint, the handle conversions MPI_*_c2f / MPI_*_f2c
 * (MPI 4.1 §19.3.4) and the status conversions (§19.3.5). Installed by
 * scripts/install.sh with the DIMMnet-2 stack's Fortran bindings; the
 * functions are in lib/libmpi_abi_f.a, which mpifort links. A C file of a
 * mixed C and Fortran program includes it after mpi.h. */
#ifndef MPI_ABI_FORT_H
#define MPI_ABI_FORT_H

#include <mpi.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* gfortran's default INTEGER. */
typedef int MPI_Fint;

/* TYPE(MPI_Status) of mpi_f08: the same 8 INTEGERs as a Fortran status. */
typedef struct {
    MPI_Fint MPI_SOURCE;
    MPI_Fint MPI_TAG;
    MPI_Fint MPI_ERROR;
    MPI_Fint MPI_internal[5];
} MPI_F08_status;

/* The Fortran MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE, as C sees them. */
extern MPI_Fint mpif_status_ignore_[8];
extern MPI_Fint mpif_statuses_ignore_[8];
#define MPI_F_STATUS_IGNORE ((MPI_Fint *)mpif_status_ignore_)
#define MPI_F_STATUSES_IGNORE ((MPI_Fint *)mpif_statuses_ignore_)
#define MPI_F08_STATUS_IGNORE ((MPI_F08_status *)mpif_status_ignore_)
#define MPI_F08_STATUSES_IGNORE ((MPI_F08_status *)mpif_statuses_ignore_)

MPI_Fint MPI_Comm_c2f(MPI_Comm comm);
MPI_Comm MPI_Comm_f2c(MPI_Fint comm);
MPI_Fint MPI_Errhandler_c2f(MPI_Errhandler errhandler);
MPI_Errhandler MPI_Errhandler_f2c(MPI_Fint errhandler);
MPI_Fint MPI_File_c2f(MPI_File file);
MPI_File MPI_File_f2c(MPI_Fint file);
MPI_Fint MPI_Group_c2f(MPI_Group group);
MPI_Group MPI_Group_f2c(MPI_Fint group);
MPI_Fint MPI_Info_c2f(MPI_Info info);
MPI_Info MPI_Info_f2c(MPI_Fint info);
MPI_Fint MPI_Message_c2f(MPI_Message message);
MPI_Message MPI_Message_f2c(MPI_Fint message);
MPI_Fint MPI_Op_c2f(MPI_Op op);
MPI_Op MPI_Op_f2c(MPI_Fint op);
MPI_Fint MPI_Request_c2f(MPI_Request request);
MPI_Request MPI_Request_f2c(MPI_Fint request);
MPI_Fint MPI_Session_c2f(MPI_Session session);
MPI_Session MPI_Session_f2c(MPI_Fint session);
MPI_Fint MPI_Type_c2f(MPI_Datatype datatype);
MPI_Datatype MPI_Type_f2c(MPI_Fint datatype);
MPI_Fint MPI_Win_c2f(MPI_Win win);
MPI_Win MPI_Win_f2c(MPI_Fint win);

int MPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status);
int MPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status);
int MPI_Status_c2f08(const MPI_Status *c_status, MPI_F08_status *f08_status);
int MPI_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status);
int MPI_Status_f2f08(const MPI_Fint *f_status, MPI_F08_status *f08_status);
int MPI_Status_f082f(const MPI_F08_status *f08_status, MPI_Fint *f_status);

#if defined(__cplusplus)
}
#endif

#endif
