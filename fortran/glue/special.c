/* special.c: the hand-written part of the Fortran glue of the DIMMnet-2
 * stack's MPI (fortran/src/lib.rs, HAND_WRITTEN, lists what is here and
 * why): MPI_INIT and the library's Fortran facts, the sentinels' common
 * blocks, procedures the user passes (reduction operations, error
 * handlers, attribute copy and delete functions, generalized requests),
 * the attribute getters, and process creation's arrays of strings. Like the generated part it calls only C
 * functions of the MPI 5.0 standard ABI. */
#include "mpif_glue.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- The common blocks of mpif.h and module mpi (MPI 4.1 §19.1.2) ----
 * Aligned as gfortran aligns a common block it makes itself, so that the
 * program's and these definitions agree (the linker warns otherwise). */
#define MPIF_COMMON __attribute__((aligned(32)))

MPI_Fint mpif_bottom_ MPIF_COMMON;
MPI_Fint mpif_in_place_ MPIF_COMMON;
MPI_Fint mpif_buffer_automatic_ MPIF_COMMON;
MPI_Fint mpif_status_ignore_[8] MPIF_COMMON;
MPI_Fint mpif_statuses_ignore_[8] MPIF_COMMON;
MPI_Fint mpif_errcodes_ignore_[1] MPIF_COMMON;
MPI_Fint mpif_unweighted_[1] MPIF_COMMON;
MPI_Fint mpif_weights_empty_[1] MPIF_COMMON;
char mpif_argv_null_[1] MPIF_COMMON;
char mpif_argvs_null_[1] MPIF_COMMON;

/* ---- Helpers of the generated glue ---- */

void *mpif_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "MPI (Fortran glue): out of memory converting %zu bytes of arguments\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    }
    return p;
}

char *mpif_cstr(const char *f, size_t len)
{
    while (len > 0 && f[len - 1] == ' ') len--;
    char *c = mpif_alloc(len + 1);
    memcpy(c, f, len);
    c[len] = '\0';
    return c;
}

char *mpif_strbuf(size_t len)
{
    size_t n = len > MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING;
    char *c = mpif_alloc(n + 1);
    memset(c, 0, n + 1);
    return c;
}

void mpif_fstr(char *f, size_t len, const char *c)
{
    size_t n = strlen(c);
    if (n > len) n = len;
    memcpy(f, c, n);
    memset(f + n, ' ', len - n);
}

int mpif_cartdim(MPI_Comm comm)
{
    int n = 0;
    if (MPI_Cartdim_get(comm, &n) != MPI_SUCCESS) return 0;
    return n;
}

int mpif_alltoallw_len(MPI_Comm comm)
{
    int inter = 0, n = 0;
    if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    if ((inter ? MPI_Comm_remote_size(comm, &n) : MPI_Comm_size(comm, &n)) != MPI_SUCCESS) return 0;
    return n;
}

int mpif_neighbors(MPI_Comm comm, int direction)
{
    int kind = MPI_UNDEFINED, in = 0, out = 0, weighted = 0, rank = 0;
    if (MPI_Topo_test(comm, &kind) != MPI_SUCCESS) return 0;
    switch (kind) {
    case MPI_CART:
        return 2 * mpif_cartdim(comm);
    case MPI_GRAPH:
        if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Graph_neighbors_count(comm, rank, &in) != MPI_SUCCESS)
            return 0;
        return in;
    case MPI_DIST_GRAPH:
        if (MPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted) != MPI_SUCCESS) return 0;
        return direction == MPIF_IN ? in : out;
    default:
        return 0;
    }
}

/* ---- MPI_INIT: the library learns the Fortran facts (MPI 5.0, ABI chapter) ---- */

/* The ABI fixes the predefined handles' values, and mpif.h's constants are
 * them: a library whose MPI_*_toint says otherwise would mistake every
 * handle, so the glue checks a few of every kind and stops. */
static int mpif_check_handles(void)
{
    struct { const char *name; int got, want; } v[] = {
        {"MPI_COMM_WORLD", MPI_Comm_toint(MPI_COMM_WORLD), 0x101},
        {"MPI_COMM_SELF", MPI_Comm_toint(MPI_COMM_SELF), 0x102},
        {"MPI_INTEGER", MPI_Type_toint(MPI_INTEGER), 0x219},
        {"MPI_DOUBLE_PRECISION", MPI_Type_toint(MPI_DOUBLE_PRECISION), 0x21c},
        {"MPI_SUM", MPI_Op_toint(MPI_SUM), 0x21},
        {"MPI_REQUEST_NULL", MPI_Request_toint(MPI_REQUEST_NULL), 0x180},
        {"MPI_INFO_NULL", MPI_Info_toint(MPI_INFO_NULL), 0x130},
        {"MPI_ERRORS_RETURN", MPI_Errhandler_toint(MPI_ERRORS_RETURN), 0x142},
        {"MPI_GROUP_EMPTY", MPI_Group_toint(MPI_GROUP_EMPTY), 0x109},
        {"MPI_WIN_NULL", MPI_Win_toint(MPI_WIN_NULL), 0x110},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        if (v[i].got != v[i].want) {
            fprintf(stderr,
                    "MPI (Fortran glue): this MPI library's %s is %d as an integer, where the MPI 5.0 ABI and "
                    "mpif.h have %d; the Fortran bindings cannot run on it\n",
                    v[i].name, v[i].got, v[i].want);
            return MPI_ERR_ABI;
        }
    }
    return MPI_SUCCESS;
}

/* Tell the library the Fortran sizes and LOGICAL values, once per process
 * (a library that knew them already keeps its own). */
static int mpif_setup(void)
{
    int rc = mpif_check_handles();
    if (rc != MPI_SUCCESS) return rc;
    MPI_Info info = MPI_INFO_NULL;
    if (MPI_Abi_get_fortran_info(&info) == MPI_SUCCESS && info != MPI_INFO_NULL) {
        MPI_Info_free(&info);
        return MPI_SUCCESS;
    }
    if ((rc = MPI_Info_create(&info)) != MPI_SUCCESS) return rc;
    MPI_Info_set(info, "mpi_logical_size", "4");
    MPI_Info_set(info, "mpi_integer_size", "4");
    MPI_Info_set(info, "mpi_real_size", "4");
    MPI_Info_set(info, "mpi_double_precision_size", "8");
    MPI_Info_set(info, "mpi_address_kind", "8");
    MPI_Info_set(info, "mpi_offset_kind", "8");
    MPI_Info_set(info, "mpi_count_kind", "8");
    MPI_Abi_set_fortran_info(info);
    MPI_Info_free(&info);
    MPI_Fint t = MPIF_TRUE, f = MPIF_FALSE;
    MPI_Abi_set_fortran_booleans((int)sizeof(MPI_Fint), &t, &f);
    return MPI_SUCCESS;
}

static void glue_init(MPI_Fint *ierror)
{
    int rc = MPI_Init(NULL, NULL);
    if (rc == MPI_SUCCESS) rc = mpif_setup();
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_init, init)

static void glue_init_thread(const MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror)
{
    int rc = MPI_Init_thread(NULL, NULL, *required, provided);
    if (rc == MPI_SUCCESS) rc = mpif_setup();
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_init_thread, init_thread)

static void glue_info_create_env(MPI_Fint *info, MPI_Fint *ierror)
{
    MPI_Info c = MPI_INFO_NULL;
    int rc = MPI_Info_create_env(0, NULL, &c);
    *info = MPI_Info_toint(c);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_info_create_env, info_create_env)

static void glue_pcontrol(const MPI_Fint *level)
{
    MPI_Pcontrol(*level);
}
MPIF_NAMES(glue_pcontrol, pcontrol)

/* ---- Procedures without a state argument: trampolines ----
 *
 * A C reduction operation or error handler gets no pointer of the user's,
 * so each Fortran procedure gets a C trampoline of its own from a fixed
 * pool. A procedure registered twice reuses its trampoline; the pool holds
 * MPIF_SLOTS procedures of each kind per program. */

#define MPIF_SLOTS 64
typedef void (*mpif_proc)(void);

/* The slot of `fn` in `table`, or -1 when the table is full. */
static int mpif_slot(mpif_proc *table, mpif_proc fn)
{
    for (int i = 0; i < MPIF_SLOTS; i++) {
        mpif_proc had = __atomic_load_n(&table[i], __ATOMIC_ACQUIRE);
        if (had == fn) return i;
        if (had == NULL) {
            mpif_proc expected = NULL;
            if (__atomic_compare_exchange_n(&table[i], &expected, fn, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return i;
            if (expected == fn) return i;
        }
    }
    return -1;
}

static int mpif_full(const char *what)
{
    fprintf(stderr,
            "MPI (Fortran glue): more than %d different Fortran %s in one program; the glue has a trampoline "
            "for %d of them\n",
            MPIF_SLOTS, what, MPIF_SLOTS);
    return MPI_ERR_INTERN;
}

/* M(a, b) for a, b in 0..8: 64 instances, the slot being 8 * a + b. */
#define MPIF_REPEAT8(M, a) M(a, 0) M(a, 1) M(a, 2) M(a, 3) M(a, 4) M(a, 5) M(a, 6) M(a, 7)
#define MPIF_REPEAT64(M) \
    MPIF_REPEAT8(M, 0) MPIF_REPEAT8(M, 1) MPIF_REPEAT8(M, 2) MPIF_REPEAT8(M, 3) \
    MPIF_REPEAT8(M, 4) MPIF_REPEAT8(M, 5) MPIF_REPEAT8(M, 6) MPIF_REPEAT8(M, 7)

/* Reduction operations (§6.9.5): SUBROUTINE USER_FUNCTION(INVEC, INOUTVEC,
 * LEN, DATATYPE); for mpi_f08's MPI_Op_create_c, LEN is
 * INTEGER(KIND=MPI_COUNT_KIND). One pool per form. */
#define OP_TRAMP(pool, Len, a, b)                                                   \
    static void pool##_tramp_##a##b(void *in, void *inout, Len *len, MPI_Datatype *t) \
    {                                                                               \
        MPI_Fint ft = MPI_Type_toint(*t);                                           \
        ((void (*)(void *, void *, Len *, MPI_Fint *))pool##_fns[8 * a + b])(in, inout, len, &ft); \
    }
#define OP_POOL(pool, CUserFn, create, what)                                                 \
    static mpif_proc pool##_fns[MPIF_SLOTS];                                                 \
    MPIF_REPEAT64(pool##_TRAMP)                                                              \
    static CUserFn *const pool##_tramps[MPIF_SLOTS] = {MPIF_REPEAT64(pool##_ENTRY)};         \
    static void glue_##pool(mpif_proc user_fn, const MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierror) \
    {                                                                                        \
        int slot = mpif_slot(pool##_fns, user_fn);                                           \
        if (slot < 0) {                                                                      \
            MPIF_SET(ierror, mpif_full(what));                                               \
            return;                                                                          \
        }                                                                                    \
        MPI_Op c = MPI_OP_NULL;                                                              \
        int rc = create(pool##_tramps[slot], MPIF_L2C(*commute), &c);                         \
        *op = MPI_Op_toint(c);                                                               \
        MPIF_SET(ierror, rc);                                                                \
    }
#define op_create_TRAMP(a, b) OP_TRAMP(op_create, int, a, b)
#define op_create_ENTRY(a, b) op_create_tramp_##a##b,
#define op_create_c_TRAMP(a, b) OP_TRAMP(op_create_c, MPI_Count, a, b)
#define op_create_c_ENTRY(a, b) op_create_c_tramp_##a##b,
OP_POOL(op_create, MPI_User_function, MPI_Op_create, "reduction operations")
MPIF_NAMES(glue_op_create, op_create)
OP_POOL(op_create_c, MPI_User_function_c, MPI_Op_create_c, "large-count reduction operations")
MPIF_NAMES(glue_op_create_c, op_create_c)

/* Error handlers (§9.3): SUBROUTINE HANDLER(OBJECT, ERROR_CODE), one pool per
 * kind of object, as the C prototypes differ. */
typedef void (*mpif_handler_fn)(MPI_Fint *, MPI_Fint *);
#define ERRHANDLER_KIND(kind, Ctype, Cvt)                                                       \
    static mpif_proc kind##_eh_fns[MPIF_SLOTS];                                                 \
    MPIF_REPEAT64(kind##_EH_TRAMP)                                                              \
    static kind##_errhandler_function *const kind##_eh_tramps[MPIF_SLOTS] = {MPIF_REPEAT64(kind##_EH_ENTRY)};

#define EH_TRAMP(kind, Ctype, Cvt, a, b)                                 \
    static void kind##_eh_tramp_##a##b(Ctype *obj, int *code, ...)       \
    {                                                                    \
        MPI_Fint fobj = Cvt##_toint(*obj);                               \
        ((mpif_handler_fn)kind##_eh_fns[8 * a + b])(&fobj, code);        \
    }

#define MPI_Comm_EH_TRAMP(a, b) EH_TRAMP(MPI_Comm, MPI_Comm, MPI_Comm, a, b)
#define MPI_Comm_EH_ENTRY(a, b) MPI_Comm_eh_tramp_##a##b,
#define MPI_Win_EH_TRAMP(a, b) EH_TRAMP(MPI_Win, MPI_Win, MPI_Win, a, b)
#define MPI_Win_EH_ENTRY(a, b) MPI_Win_eh_tramp_##a##b,
#define MPI_File_EH_TRAMP(a, b) EH_TRAMP(MPI_File, MPI_File, MPI_File, a, b)
#define MPI_File_EH_ENTRY(a, b) MPI_File_eh_tramp_##a##b,
#define MPI_Session_EH_TRAMP(a, b) EH_TRAMP(MPI_Session, MPI_Session, MPI_Session, a, b)
#define MPI_Session_EH_ENTRY(a, b) MPI_Session_eh_tramp_##a##b,
ERRHANDLER_KIND(MPI_Comm, MPI_Comm, MPI_Comm)
ERRHANDLER_KIND(MPI_Win, MPI_Win, MPI_Win)
ERRHANDLER_KIND(MPI_File, MPI_File, MPI_File)
ERRHANDLER_KIND(MPI_Session, MPI_Session, MPI_Session)

#define CREATE_ERRHANDLER(name, kind)                                             \
    static void glue_##name(mpif_proc fn, MPI_Fint *errhandler, MPI_Fint *ierror) \
    {                                                                             \
        int slot = mpif_slot(kind##_eh_fns, fn);                                  \
        if (slot < 0) {                                                           \
            MPIF_SET(ierror, mpif_full("error handlers"));                                \
            return;                                                               \
        }                                                                         \
        MPI_Errhandler c = MPI_ERRHANDLER_NULL;                                   \
        int rc = kind##_create_errhandler(kind##_eh_tramps[slot], &c);            \
        *errhandler = MPI_Errhandler_toint(c);                                    \
        MPIF_SET(ierror, rc);                                                             \
    }
CREATE_ERRHANDLER(comm_create_errhandler, MPI_Comm)
MPIF_NAMES(glue_comm_create_errhandler, comm_create_errhandler)
CREATE_ERRHANDLER(win_create_errhandler, MPI_Win)
MPIF_NAMES(glue_win_create_errhandler, win_create_errhandler)
CREATE_ERRHANDLER(file_create_errhandler, MPI_File)
MPIF_NAMES(glue_file_create_errhandler, file_create_errhandler)
CREATE_ERRHANDLER(session_create_errhandler, MPI_Session)
MPIF_NAMES(glue_session_create_errhandler, session_create_errhandler)

/* ---- Procedures with a state argument: attribute keys (§7.7) ----
 *
 * The C copy and delete functions get the keyval's extra_state, which the
 * glue makes a record of the Fortran procedures and the user's own
 * EXTRA_STATE. Fortran's attribute values are INTEGER(KIND=MPI_ADDRESS_KIND)
 * values, stored in C's void * as they are. */

typedef void (*mpif_copy_fn)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Aint *, MPI_Fint *, MPI_Fint *);
typedef void (*mpif_delete_fn)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);
typedef void (*mpif_copy_int_fn)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*mpif_delete_int_fn)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);

struct mpif_keyval {
    mpif_proc copy, del;
    MPI_Aint extra;
    /* MPI_KEYVAL_CREATE's procedures take INTEGER values and state. */
    int integer;
};

static struct mpif_keyval *mpif_keyval_new(mpif_proc copy, mpif_proc del, MPI_Aint extra, int integer)
{
    struct mpif_keyval *k = mpif_alloc(sizeof *k);
    k->copy = copy;
    k->del = del;
    k->extra = extra;
    k->integer = integer;
    return k;
}

/* ---- Attribute values set from Fortran (§19.3.7) ----
 * A Fortran attribute value is an integer, and C code that reads one gets
 * a pointer to it (the standard's example: MPI_Aint *val;
 * MPI_Comm_get_attr(comm, key, &val, &flag); then *val). So the glue
 * stores a box holding the value, and keeps the boxes it made, to tell
 * them from values C code stored (which Fortran reads as the address they
 * are). A box is freed when the keyval's Fortran delete procedure has run
 * on it; one set on a keyval C code made is not (C's delete function gets
 * the pointer). */
static struct {
    MPI_Aint **v;
    size_t n, cap;
    int lock;
} boxes;

static void boxes_lock(void)
{
    while (__atomic_exchange_n(&boxes.lock, 1, __ATOMIC_ACQUIRE)) {
    }
}

static void boxes_unlock(void) { __atomic_store_n(&boxes.lock, 0, __ATOMIC_RELEASE); }

static MPI_Aint *mpif_box(MPI_Aint value)
{
    MPI_Aint *b = mpif_alloc(sizeof *b);
    *b = value;
    boxes_lock();
    if (boxes.n == boxes.cap) {
        size_t cap = boxes.cap ? 2 * boxes.cap : 16;
        MPI_Aint **v = realloc(boxes.v, cap * sizeof *v);
        if (!v) {
            boxes_unlock();
            fprintf(stderr, "MPI (Fortran glue): out of memory for attribute values\n");
            MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
        }
        boxes.v = v;
        boxes.cap = cap;
    }
    boxes.v[boxes.n++] = b;
    boxes_unlock();
    return b;
}

/* The value in `p` if it is a box the glue made, else `p` itself. */
static MPI_Aint mpif_unbox(void *p)
{
    MPI_Aint value = (MPI_Aint)p;
    boxes_lock();
    for (size_t i = 0; i < boxes.n; i++) {
        if (boxes.v[i] == p) {
            value = *boxes.v[i];
            break;
        }
    }
    boxes_unlock();
    return value;
}

/* Free `p` if it is a box the glue made. */
static void mpif_box_free(void *p)
{
    boxes_lock();
    for (size_t i = 0; i < boxes.n; i++) {
        if (boxes.v[i] == p) {
            boxes.v[i] = boxes.v[--boxes.n];
            free(p);
            break;
        }
    }
    boxes_unlock();
}

/* Call the Fortran copy procedure of `k` on the object `fobj`. */
static int mpif_copy(MPI_Fint fobj, int keyval, struct mpif_keyval *k, void *in, void *out, int *flag)
{
    MPI_Fint fkey = keyval, fflag = MPIF_FALSE, ierr = MPI_SUCCESS;
    MPI_Aint value = mpif_unbox(in), copy = 0;
    if (k->integer) {
        MPI_Fint fin = (MPI_Fint)value, fout = 0, fextra = (MPI_Fint)k->extra;
        ((mpif_copy_int_fn)k->copy)(&fobj, &fkey, &fextra, &fin, &fout, &fflag, &ierr);
        copy = fout;
    } else {
        ((mpif_copy_fn)k->copy)(&fobj, &fkey, &k->extra, &value, &copy, &fflag, &ierr);
    }
    *flag = MPIF_L2C(fflag);
    if (*flag) *(void **)out = mpif_box(copy);
    return ierr;
}

static int mpif_delete(MPI_Fint fobj, int keyval, struct mpif_keyval *k, void *val)
{
    MPI_Fint fkey = keyval, ierr = MPI_SUCCESS;
    MPI_Aint value = mpif_unbox(val);
    if (k->integer) {
        MPI_Fint fval = (MPI_Fint)value, fextra = (MPI_Fint)k->extra;
        ((mpif_delete_int_fn)k->del)(&fobj, &fkey, &fval, &fextra, &ierr);
    } else {
        ((mpif_delete_fn)k->del)(&fobj, &fkey, &value, &k->extra, &ierr);
    }
    if (ierr == MPI_SUCCESS) mpif_box_free(val);
    return ierr;
}

static int comm_copy(MPI_Comm c, int keyval, void *extra, void *in, void *out, int *flag)
{
    return mpif_copy(MPI_Comm_toint(c), keyval, extra, in, out, flag);
}
static int comm_delete(MPI_Comm c, int keyval, void *val, void *extra)
{
    return mpif_delete(MPI_Comm_toint(c), keyval, extra, val);
}
static int type_copy(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
    return mpif_copy(MPI_Type_toint(t), keyval, extra, in, out, flag);
}
static int type_delete(MPI_Datatype t, int keyval, void *val, void *extra)
{
    return mpif_delete(MPI_Type_toint(t), keyval, extra, val);
}
static int win_copy(MPI_Win w, int keyval, void *extra, void *in, void *out, int *flag)
{
    return mpif_copy(MPI_Win_toint(w), keyval, extra, in, out, flag);
}
static int win_delete(MPI_Win w, int keyval, void *val, void *extra)
{
    return mpif_delete(MPI_Win_toint(w), keyval, extra, val);
}

static void glue_comm_create_keyval(mpif_proc copy, mpif_proc del, MPI_Fint *keyval, const MPI_Aint *extra_state,
                             MPI_Fint *ierror)
{
    MPIF_SET(ierror, MPI_Comm_create_keyval(comm_copy, comm_delete, keyval, mpif_keyval_new(copy, del, *extra_state, 0)));
}
MPIF_NAMES(glue_comm_create_keyval, comm_create_keyval)

static void glue_type_create_keyval(mpif_proc copy, mpif_proc del, MPI_Fint *keyval, const MPI_Aint *extra_state,
                             MPI_Fint *ierror)
{
    MPIF_SET(ierror, MPI_Type_create_keyval(type_copy, type_delete, keyval, mpif_keyval_new(copy, del, *extra_state, 0)));
}
MPIF_NAMES(glue_type_create_keyval, type_create_keyval)

static void glue_win_create_keyval(mpif_proc copy, mpif_proc del, MPI_Fint *keyval, const MPI_Aint *extra_state,
                            MPI_Fint *ierror)
{
    MPIF_SET(ierror, MPI_Win_create_keyval(win_copy, win_delete, keyval, mpif_keyval_new(copy, del, *extra_state, 0)));
}
MPIF_NAMES(glue_win_create_keyval, win_create_keyval)

static void glue_keyval_create(mpif_proc copy, mpif_proc del, MPI_Fint *keyval, const MPI_Fint *extra_state,
                        MPI_Fint *ierror)
{
    MPIF_SET(ierror, MPI_Comm_create_keyval(comm_copy, comm_delete, keyval, mpif_keyval_new(copy, del, *extra_state, 1)));
}
MPIF_NAMES(glue_keyval_create, keyval_create)

/* The predefined copy and delete procedures (§7.7.2), callable from Fortran. */
#define NULL_COPY(sym, T)                                                                          \
    void sym(MPI_Fint *o, MPI_Fint *k, T *e, T *in, T *out, MPI_Fint *flag, MPI_Fint *ierr)        \
    {                                                                                              \
        (void)o, (void)k, (void)e, (void)in, (void)out;                                            \
        *flag = MPIF_FALSE;                                                                        \
        *ierr = MPI_SUCCESS;                                                                       \
    }
#define DUP(sym, T)                                                                                \
    void sym(MPI_Fint *o, MPI_Fint *k, T *e, T *in, T *out, MPI_Fint *flag, MPI_Fint *ierr)        \
    {                                                                                              \
        (void)o, (void)k, (void)e;                                                                 \
        *out = *in;                                                                                \
        *flag = MPIF_TRUE;                                                                         \
        *ierr = MPI_SUCCESS;                                                                       \
    }
#define NULL_DELETE(sym, T)                                                                        \
    void sym(MPI_Fint *o, MPI_Fint *k, T *v, T *e, MPI_Fint *ierr)                                 \
    {                                                                                              \
        (void)o, (void)k, (void)v, (void)e;                                                        \
        *ierr = MPI_SUCCESS;                                                                       \
    }
NULL_COPY(mpi_null_copy_fn_, MPI_Fint)
DUP(mpi_dup_fn_, MPI_Fint)
NULL_DELETE(mpi_null_delete_fn_, MPI_Fint)
NULL_COPY(mpi_comm_null_copy_fn_, MPI_Aint)
DUP(mpi_comm_dup_fn_, MPI_Aint)
NULL_DELETE(mpi_comm_null_delete_fn_, MPI_Aint)
NULL_COPY(mpi_type_null_copy_fn_, MPI_Aint)
DUP(mpi_type_dup_fn_, MPI_Aint)
NULL_DELETE(mpi_type_null_delete_fn_, MPI_Aint)
NULL_COPY(mpi_win_null_copy_fn_, MPI_Aint)
DUP(mpi_win_dup_fn_, MPI_Aint)
NULL_DELETE(mpi_win_null_delete_fn_, MPI_Aint)

/* ---- Attribute getters: a predefined attribute is a pointer in C and its
 * value in Fortran (§7.7.2, §12.2.6) ---- */

static MPI_Aint comm_attr_value(int keyval, void *p)
{
    switch (keyval) {
    case MPI_TAG_UB: case MPI_HOST: case MPI_IO: case MPI_WTIME_IS_GLOBAL:
    case MPI_UNIVERSE_SIZE: case MPI_APPNUM: case MPI_LASTUSEDCODE:
        return *(int *)p;
    default:
        return mpif_unbox(p);
    }
}

static MPI_Aint win_attr_value(int keyval, void *p)
{
    switch (keyval) {
    case MPI_WIN_SIZE:
        return *(MPI_Aint *)p;
    case MPI_WIN_DISP_UNIT: case MPI_WIN_CREATE_FLAVOR: case MPI_WIN_MODEL:
        return *(int *)p;
    case MPI_WIN_BASE: /* the base address itself */
        return (MPI_Aint)p;
    default:
        return mpif_unbox(p);
    }
}

static void glue_comm_get_attr(const MPI_Fint *comm, const MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag,
                        MPI_Fint *ierror)
{
    void *p = NULL;
    int found = 0;
    int rc = MPI_Comm_get_attr(MPI_Comm_fromint(*comm), *keyval, &p, &found);
    if (rc == MPI_SUCCESS && found) *value = comm_attr_value(*keyval, p);
    *flag = MPIF_C2L(rc == MPI_SUCCESS && found);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_comm_get_attr, comm_get_attr)

static void glue_type_get_attr(const MPI_Fint *type, const MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag,
                        MPI_Fint *ierror)
{
    void *p = NULL;
    int found = 0;
    int rc = MPI_Type_get_attr(MPI_Type_fromint(*type), *keyval, &p, &found);
    if (rc == MPI_SUCCESS && found) *value = mpif_unbox(p);
    *flag = MPIF_C2L(rc == MPI_SUCCESS && found);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_type_get_attr, type_get_attr)

static void glue_win_get_attr(const MPI_Fint *win, const MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag,
                       MPI_Fint *ierror)
{
    void *p = NULL;
    int found = 0;
    int rc = MPI_Win_get_attr(MPI_Win_fromint(*win), *keyval, &p, &found);
    if (rc == MPI_SUCCESS && found) *value = win_attr_value(*keyval, p);
    *flag = MPIF_C2L(rc == MPI_SUCCESS && found);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_win_get_attr, win_get_attr)

static void glue_attr_get(const MPI_Fint *comm, const MPI_Fint *keyval, MPI_Fint *value, MPI_Fint *flag,
                   MPI_Fint *ierror)
{
    void *p = NULL;
    int found = 0;
    int rc = MPI_Attr_get(MPI_Comm_fromint(*comm), *keyval, &p, &found);
    if (rc == MPI_SUCCESS && found) *value = (MPI_Fint)comm_attr_value(*keyval, p);
    *flag = MPIF_C2L(rc == MPI_SUCCESS && found);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_attr_get, attr_get)

static void glue_attr_put(const MPI_Fint *comm, const MPI_Fint *keyval, const MPI_Fint *value, MPI_Fint *ierror)
{
    MPI_Aint *b = mpif_box(*value);
    int rc = MPI_Attr_put(MPI_Comm_fromint(*comm), *keyval, b);
    if (rc != MPI_SUCCESS) mpif_box_free(b);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_attr_put, attr_put)

/* MPI_*_SET_ATTR: the value goes in a box (above). */
#define SET_ATTR(name, Cvt)                                                                      \
    static void glue_##name(const MPI_Fint *obj, const MPI_Fint *keyval, const MPI_Aint *value,   \
                            MPI_Fint *ierror)                                                    \
    {                                                                                            \
        MPI_Aint *b = mpif_box(*value);                                                          \
        int rc = Cvt##_set_attr(Cvt##_fromint(*obj), *keyval, b);                                \
        if (rc != MPI_SUCCESS) mpif_box_free(b);                                                 \
        MPIF_SET(ierror, rc);                                                                    \
    }
SET_ATTR(comm_set_attr, MPI_Comm)
MPIF_NAMES(glue_comm_set_attr, comm_set_attr)
SET_ATTR(type_set_attr, MPI_Type)
MPIF_NAMES(glue_type_set_attr, type_set_attr)
SET_ATTR(win_set_attr, MPI_Win)
MPIF_NAMES(glue_win_set_attr, win_set_attr)

/* ---- Generalized requests (§13.2) ----
 * The callbacks get the caller's own EXTRA_STATE variable, by reference,
 * as MPICH's and Open MPI's Fortran bindings give it: what the free
 * function writes there, the caller sees (MPICH's f77/pt2pt/greqf relies on
 * it). The variable must therefore live until the request is freed. */

typedef void (*mpif_query_fn)(MPI_Aint *, MPI_Fint *, MPI_Fint *);
typedef void (*mpif_free_fn)(MPI_Aint *, MPI_Fint *);
typedef void (*mpif_cancel_fn)(MPI_Aint *, MPI_Fint *, MPI_Fint *);

struct mpif_grequest {
    mpif_proc query, free, cancel;
    MPI_Aint *extra;
};

static int greq_query(void *extra, MPI_Status *status)
{
    struct mpif_grequest *g = extra;
    MPI_Fint ierr = MPI_SUCCESS;
    ((mpif_query_fn)g->query)(g->extra, (MPI_Fint *)status, &ierr);
    return ierr;
}

static int greq_free(void *extra)
{
    struct mpif_grequest *g = extra;
    MPI_Fint ierr = MPI_SUCCESS;
    ((mpif_free_fn)g->free)(g->extra, &ierr);
    free(g);
    return ierr;
}

static int greq_cancel(void *extra, int complete)
{
    struct mpif_grequest *g = extra;
    MPI_Fint ierr = MPI_SUCCESS, fcomplete = MPIF_C2L(complete);
    ((mpif_cancel_fn)g->cancel)(g->extra, &fcomplete, &ierr);
    return ierr;
}

static void glue_grequest_start(mpif_proc query, mpif_proc free_fn, mpif_proc cancel, MPI_Aint *extra_state,
                         MPI_Fint *request, MPI_Fint *ierror)
{
    struct mpif_grequest *g = mpif_alloc(sizeof *g);
    g->query = query;
    g->free = free_fn;
    g->cancel = cancel;
    g->extra = extra_state;
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Grequest_start(greq_query, greq_free, greq_cancel, g, &c);
    if (rc != MPI_SUCCESS) free(g);
    *request = MPI_Request_toint(c);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_grequest_start, grequest_start)

/* ---- MPI_INFO_GET_STRING (§10.2): Fortran's BUFLEN counts characters,
 * not C's terminating NUL, both ways; a BUFLEN of 0 asks for the length
 * only and leaves VALUE as it was, as does a key that is not there. ---- */
static void glue_info_get_string(const MPI_Fint *info, const char *key, MPI_Fint *buflen, char *value,
                                 MPI_Fint *flag, MPI_Fint *ierror, size_t lkey, size_t lvalue)
{
    char *ckey = mpif_cstr(key, lkey);
    int room = *buflen < 0 ? 0 : *buflen;
    if ((size_t)room > lvalue) room = (int)lvalue;
    char *cvalue = mpif_alloc((size_t)room + 1);
    cvalue[0] = '\0';
    int cbuflen = room + 1, found = 0;
    int rc = MPI_Info_get_string(MPI_Info_fromint(*info), ckey, &cbuflen, cvalue, &found);
    if (rc == MPI_SUCCESS && found) {
        *buflen = cbuflen - 1;
        if (room > 0) mpif_fstr(value, lvalue, cvalue);
    }
    *flag = MPIF_C2L(rc == MPI_SUCCESS && found);
    free(ckey);
    free(cvalue);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_info_get_string, info_get_string)

/* ---- Process creation (MPI 4.1 §11.8): CHARACTER arrays of arguments ----
 * A Fortran argv is an array of CHARACTER*(*) ended by a blank entry
 * (§11.8.2); MPI_COMM_SPAWN_MULTIPLE's is a table, ARRAY_OF_ARGV(COUNT,*),
 * whose column i is command i's arguments. Only the root reads them: the
 * other processes may pass anything there.
 *
 * The standard does not say what becomes of an argument's blanks. As
 * MPICH does (its f77, f90 and f08 spawnargv tests check it), mpif.h and
 * module mpi drop leading and trailing blanks (" Ss" is "Ss"), and
 * mpi_f08 trailing ones only (" Ss" stays " Ss"): mpi_f08 has its own
 * entry points below. */

static int mpif_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ') return 0;
    return 1;
}

/* A command or argument as a C string: trailing blanks dropped, and
 * leading ones unless `keep_leading`. */
static char *mpif_word(const char *f, size_t len, int keep_leading)
{
    while (!keep_leading && len > 0 && f[0] == ' ') f++, len--;
    return mpif_cstr(f, len);
}

/* The NULL-terminated C argv of the Fortran one at `f`: entries of `len`
 * characters, `stride` entries apart, up to the first blank one. */
static char **mpif_argv(const char *f, size_t len, size_t stride, int keep_leading)
{
    size_t n = 0;
    while (len > 0 && !mpif_blank(f + n * stride * len, len)) n++;
    char **argv = mpif_alloc((n + 1) * sizeof(char *));
    for (size_t i = 0; i < n; i++) argv[i] = mpif_word(f + i * stride * len, len, keep_leading);
    argv[n] = NULL;
    return argv;
}

static void mpif_argv_free(char **argv)
{
    if (!argv) return;
    for (char **p = argv; *p; p++) free(*p);
    free(argv);
}

/* Whether this process is `root` of `comm` (a bad communicator: no, and the
 * C call reports it). */
static int mpif_at_root(MPI_Comm comm, int root)
{
    int r = -1;
    return MPI_Comm_rank(comm, &r) == MPI_SUCCESS && r == root;
}

static int *mpif_errcodes(MPI_Fint *p) { return p == mpif_errcodes_ignore_ ? MPI_ERRCODES_IGNORE : p; }

static void comm_spawn(const char *command, const char *argv, const MPI_Fint *maxprocs, const MPI_Fint *info,
                       const MPI_Fint *root, const MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes,
                       MPI_Fint *ierror, size_t lcommand, size_t largv, int keep)
{
    MPI_Comm c = MPI_Comm_fromint(*comm);
    int at_root = mpif_at_root(c, *root);
    char *cmd = at_root ? mpif_word(command, lcommand, keep) : NULL;
    char **args = at_root && argv != mpif_argv_null_ ? mpif_argv(argv, largv, 1, keep) : NULL;
    MPI_Comm inter = MPI_COMM_NULL;
    int rc = MPI_Comm_spawn(cmd ? cmd : "", args ? args : MPI_ARGV_NULL, *maxprocs, MPI_Info_fromint(*info), *root, c,
                            &inter, mpif_errcodes(errcodes));
    *intercomm = MPI_Comm_toint(inter);
    free(cmd);
    mpif_argv_free(args);
    MPIF_SET(ierror, rc);
}

static void comm_spawn_multiple(const MPI_Fint *count, const char *commands, const char *argvs,
                                const MPI_Fint *maxprocs, const MPI_Fint *infos, const MPI_Fint *root,
                                const MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes, MPI_Fint *ierror,
                                size_t lcommands, size_t largvs, int keep)
{
    MPI_Comm c = MPI_Comm_fromint(*comm);
    int n = mpif_at_root(c, *root) ? mpif_len(*count) : 0;
    char **cmds = mpif_alloc((size_t)n * sizeof(char *));
    char ***args = argvs == mpif_argvs_null_ ? NULL : mpif_alloc((size_t)n * sizeof(char **));
    MPI_Info *info = mpif_alloc((size_t)n * sizeof(MPI_Info));
    for (int i = 0; i < n; i++) {
        cmds[i] = mpif_word(commands + (size_t)i * lcommands, lcommands, keep);
        if (args) args[i] = mpif_argv(argvs + (size_t)i * largvs, largvs, (size_t)n, keep);
        info[i] = MPI_Info_fromint(infos[i]);
    }
    MPI_Comm inter = MPI_COMM_NULL;
    int rc = MPI_Comm_spawn_multiple(*count, cmds, args ? args : MPI_ARGVS_NULL, (int *)maxprocs, info, *root, c,
                                     &inter, mpif_errcodes(errcodes));
    *intercomm = MPI_Comm_toint(inter);
    for (int i = 0; i < n; i++) {
        free(cmds[i]);
        if (args) mpif_argv_free(args[i]);
    }
    free(cmds);
    free(args);
    free(info);
    MPIF_SET(ierror, rc);
}

static void glue_comm_spawn(const char *command, const char *argv, const MPI_Fint *maxprocs, const MPI_Fint *info,
                            const MPI_Fint *root, const MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes,
                            MPI_Fint *ierror, size_t lcommand, size_t largv)
{
    comm_spawn(command, argv, maxprocs, info, root, comm, intercomm, errcodes, ierror, lcommand, largv, 0);
}
MPIF_NAMES_OLD(glue_comm_spawn, comm_spawn)

static void glue_comm_spawn_f08(const char *command, const char *argv, const MPI_Fint *maxprocs, const MPI_Fint *info,
                                const MPI_Fint *root, const MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes,
                                MPI_Fint *ierror, size_t lcommand, size_t largv)
{
    comm_spawn(command, argv, maxprocs, info, root, comm, intercomm, errcodes, ierror, lcommand, largv, 1);
}
MPIF_NAMES_F08(glue_comm_spawn_f08, comm_spawn)

static void glue_comm_spawn_multiple(const MPI_Fint *count, const char *commands, const char *argvs,
                                     const MPI_Fint *maxprocs, const MPI_Fint *infos, const MPI_Fint *root,
                                     const MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes, MPI_Fint *ierror,
                                     size_t lcommands, size_t largvs)
{
    comm_spawn_multiple(count, commands, argvs, maxprocs, infos, root, comm, intercomm, errcodes, ierror, lcommands,
                        largvs, 0);
}
MPIF_NAMES_OLD(glue_comm_spawn_multiple, comm_spawn_multiple)

static void glue_comm_spawn_multiple_f08(const MPI_Fint *count, const char *commands, const char *argvs,
                                         const MPI_Fint *maxprocs, const MPI_Fint *infos, const MPI_Fint *root,
                                         const MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes,
                                         MPI_Fint *ierror, size_t lcommands, size_t largvs)
{
    comm_spawn_multiple(count, commands, argvs, maxprocs, infos, root, comm, intercomm, errcodes, ierror, lcommands,
                        largvs, 1);
}
MPIF_NAMES_F08(glue_comm_spawn_multiple_f08, comm_spawn_multiple)

/* ---- MPI-1's Fortran routines that MPI 3.0 removed, kept for old code:
 * their address-sized arguments are default INTEGERs, which fail with a
 * message when an address or extent does not fit. ---- */

static int mpif_narrow(MPI_Aint v, MPI_Fint *out, const char *what)
{
    if (v < -2147483647 - 1 || v > 2147483647) {
        fprintf(stderr, "MPI (Fortran glue): %s %lld does not fit the INTEGER of this MPI-1 routine; use its "
                        "MPI-2 form with INTEGER(KIND=MPI_ADDRESS_KIND)\n", what, (long long)v);
        return MPI_ERR_ARG;
    }
    *out = (MPI_Fint)v;
    return MPI_SUCCESS;
}

static void glue_type_extent(const MPI_Fint *type, MPI_Fint *extent, MPI_Fint *ierror)
{
    MPI_Aint lb = 0, ext = 0;
    int rc = MPI_Type_get_extent(MPI_Type_fromint(*type), &lb, &ext);
    if (rc == MPI_SUCCESS) rc = mpif_narrow(ext, extent, "the extent");
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_type_extent, type_extent)

static void glue_type_lb(const MPI_Fint *type, MPI_Fint *lb, MPI_Fint *ierror)
{
    MPI_Aint l = 0, ext = 0;
    int rc = MPI_Type_get_extent(MPI_Type_fromint(*type), &l, &ext);
    if (rc == MPI_SUCCESS) rc = mpif_narrow(l, lb, "the lower bound");
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_type_lb, type_lb)

static void glue_type_ub(const MPI_Fint *type, MPI_Fint *ub, MPI_Fint *ierror)
{
    MPI_Aint l = 0, ext = 0;
    int rc = MPI_Type_get_extent(MPI_Type_fromint(*type), &l, &ext);
    if (rc == MPI_SUCCESS) rc = mpif_narrow(l + ext, ub, "the upper bound");
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_type_ub, type_ub)

static void glue_address(void *location, MPI_Fint *address, MPI_Fint *ierror)
{
    MPI_Aint a = 0;
    int rc = MPI_Get_address(MPIF_BUF(location), &a);
    if (rc == MPI_SUCCESS) rc = mpif_narrow(a, address, "the address");
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_address, address)

static void glue_type_hvector(const MPI_Fint *count, const MPI_Fint *blocklength, const MPI_Fint *stride,
                              const MPI_Fint *oldtype, MPI_Fint *newtype, MPI_Fint *ierror)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = MPI_Type_create_hvector(*count, *blocklength, *stride, MPI_Type_fromint(*oldtype), &t);
    *newtype = MPI_Type_toint(t);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_type_hvector, type_hvector)

static void glue_type_hindexed(const MPI_Fint *count, MPI_Fint *blocklengths, const MPI_Fint *displs,
                               const MPI_Fint *oldtype, MPI_Fint *newtype, MPI_Fint *ierror)
{
    int n = mpif_len(*count);
    MPI_Aint *d = mpif_alloc((size_t)n * sizeof(MPI_Aint));
    for (int i = 0; i < n; i++) d[i] = displs[i];
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = MPI_Type_create_hindexed(*count, blocklengths, d, MPI_Type_fromint(*oldtype), &t);
    free(d);
    *newtype = MPI_Type_toint(t);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_type_hindexed, type_hindexed)

static void glue_type_struct(const MPI_Fint *count, MPI_Fint *blocklengths, const MPI_Fint *displs,
                             const MPI_Fint *types, MPI_Fint *newtype, MPI_Fint *ierror)
{
    int n = mpif_len(*count);
    MPI_Aint *d = mpif_alloc((size_t)n * sizeof(MPI_Aint));
    MPI_Datatype *ts = mpif_alloc((size_t)n * sizeof(MPI_Datatype));
    for (int i = 0; i < n; i++) {
        d[i] = displs[i];
        ts[i] = MPI_Type_fromint(types[i]);
    }
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = MPI_Type_create_struct(*count, blocklengths, d, ts, &t);
    free(d);
    free(ts);
    *newtype = MPI_Type_toint(t);
    MPIF_SET(ierror, rc);
}
MPIF_NAMES(glue_type_struct, type_struct)
