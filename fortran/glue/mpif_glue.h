/* mpif_glue.h: what the Fortran glue of the DIMMnet-2 stack's MPI shares
 * between its generated part (mpif_glue.c) and its hand-written part
 * (special.c). The glue calls only C functions of the MPI 5.0 standard ABI
 * (mpi.h, libmpi_abi.so.1); it is compiled for gfortran's conventions:
 * lower-case symbols with one trailing underscore, every argument by
 * reference, CHARACTER lengths as hidden size_t arguments at the end,
 * LOGICAL .TRUE. = 1 and .FALSE. = 0, default INTEGER of 4 bytes. */
#ifndef MPIF_GLUE_H
#define MPIF_GLUE_H

#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>

typedef int MPI_Fint;

/* gfortran's LOGICAL values (MPI_Abi_set_fortran_booleans tells the library). */
#define MPIF_TRUE 1
#define MPIF_FALSE 0
#define MPIF_L2C(x) ((x) != MPIF_FALSE)
#define MPIF_C2L(x) ((x) ? MPIF_TRUE : MPIF_FALSE)

/* Set IERROR, which mpi_f08 makes optional (a null pointer when absent). */
#define MPIF_SET(ierror, rc) do { if (ierror) *(ierror) = (rc); } while (0)

/* The glue function `body` under the names of MPI_<base>: its Fortran
 * name and mpi_f08's specific name (MPI 4.1 §19.1.5: MPI_Send_f08), both
 * weak, so that a profiling library's own takes their place (§15.2), and
 * the PMPI names, which the profiling library calls. */
#define MPIF_NAMES(body, base)                                                     \
    extern __typeof__(body) mpi_##base##_ __attribute__((weak, alias(#body)));     \
    extern __typeof__(body) mpi_##base##_f08_ __attribute__((weak, alias(#body))); \
    extern __typeof__(body) pmpi_##base##_ __attribute__((alias(#body)));          \
    extern __typeof__(body) pmpi_##base##_f08_ __attribute__((alias(#body)));

/* The same, split: `body` for mpif.h and module mpi (mpi_<base>_), or for
 * module mpi_f08 (mpi_<base>_f08_), where the two differ (a Fortran
 * argument's leading blanks, in MPI_Comm_spawn). */
#define MPIF_NAMES_OLD(body, base)                                             \
    extern __typeof__(body) mpi_##base##_ __attribute__((weak, alias(#body))); \
    extern __typeof__(body) pmpi_##base##_ __attribute__((alias(#body)));
#define MPIF_NAMES_F08(body, base)                                                 \
    extern __typeof__(body) mpi_##base##_f08_ __attribute__((weak, alias(#body))); \
    extern __typeof__(body) pmpi_##base##_f08_ __attribute__((alias(#body)));

/* Whether a completion call's outputs are valid. */
#define MPIF_OK(rc) ((rc) == MPI_SUCCESS || (rc) == MPI_ERR_IN_STATUS)

/* The common blocks of mpif.h and module mpi whose addresses stand for
 * MPI_BOTTOM, MPI_IN_PLACE, ... (special.c defines them). */
extern MPI_Fint mpif_bottom_;
extern MPI_Fint mpif_in_place_;
extern MPI_Fint mpif_buffer_automatic_;
extern MPI_Fint mpif_status_ignore_[8];
extern MPI_Fint mpif_statuses_ignore_[8];
extern MPI_Fint mpif_errcodes_ignore_[1];
extern MPI_Fint mpif_unweighted_[1];
extern MPI_Fint mpif_weights_empty_[1];

static inline void *MPIF_BUF(const void *p)
{
    if (p == (const void *)&mpif_bottom_) return MPI_BOTTOM;
    if (p == (const void *)&mpif_in_place_) return MPI_IN_PLACE;
    if (p == (const void *)&mpif_buffer_automatic_) return MPI_BUFFER_AUTOMATIC;
    return (void *)p;
}

static inline MPI_Status *MPIF_STATUS(MPI_Fint *p)
{
    return p == mpif_status_ignore_ ? MPI_STATUS_IGNORE : (MPI_Status *)p;
}

static inline MPI_Status *MPIF_STATUSES(MPI_Fint *p)
{
    return p == mpif_statuses_ignore_ ? MPI_STATUSES_IGNORE : (MPI_Status *)p;
}

static inline int *mpif_weights(MPI_Fint *p)
{
    if (p == mpif_unweighted_) return MPI_UNWEIGHTED;
    if (p == mpif_weights_empty_) return MPI_WEIGHTS_EMPTY;
    return p;
}

static inline int mpif_len(int n) { return n < 0 ? 0 : n; }

/* Memory for a converted array or string; a failure ends the job with a
 * message (there is no way to report it through the call's ierror after
 * the caller's arguments were half converted). */
void *mpif_alloc(size_t bytes);
/* A Fortran CHARACTER argument as a C string, trailing blanks dropped. */
char *mpif_cstr(const char *f, size_t len);
/* A zeroed C buffer for a string result a Fortran CHARACTER of len takes. */
char *mpif_strbuf(size_t len);
/* Copy a C string result into a Fortran CHARACTER, blank-padded. */
void mpif_fstr(char *f, size_t len, const char *c);

/* Array lengths the C call implies: a Cartesian communicator's dimensions,
 * the group (remote group) size, the neighbourhood's in or out degree. */
enum { MPIF_IN, MPIF_OUT };
int mpif_cartdim(MPI_Comm comm);
int mpif_alltoallw_len(MPI_Comm comm);
int mpif_neighbors(MPI_Comm comm, int direction);

#endif
