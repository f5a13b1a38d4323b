//! The MPI standard ABI (MPI 5.0, the ABI chapter; ABI version 1.0): the
//! handle values, constants, C types and function prototypes that a
//! program compiled against any standard-ABI `mpi.h` expects. This crate
//! is their one definition, as `fpga-regs` is the register map's: the
//! constants `libmpi_abi` (capi) uses, `capi/include/mpi.h` ([`header`],
//! written by `cargo run -p capi --bin gen-mpi-h`; a capi test checks the
//! committed copy) and the Fortran bindings (`mpi-fortran`) all come from
//! these tables. It holds data only: no MPI semantics, no library to link,
//! so the Fortran generator builds without the MPI library.

mod prototypes;
pub use prototypes::FUNCTIONS;

/// `MPI_VERSION`, `MPI_SUBVERSION`.
pub const VERSION: (i32, i32) = (5, 0);
/// `MPI_ABI_VERSION`, `MPI_ABI_SUBVERSION`.
pub const ABI_VERSION: (i32, i32) = (1, 0);

/// Defines each handle constant (`pub const NAME: usize`) and a table of
/// `(C type, its ABI struct, [(name, value)])` for the header.
macro_rules! handles {
    ($table:ident: $( $ty:literal / $st:literal { $($name:ident = $v:expr),* $(,)? } )*) => {
        $( $( #[doc = concat!("`", stringify!($name), "`")] pub const $name: usize = $v; )* )*
        /// Every handle type, its ABI struct and its predefined values.
        pub const $table: &[(&str, &str, &[(&str, usize)])] = &[
            $( ($ty, $st, &[ $( (stringify!($name), $v) ),* ]) ),*
        ];
    };
}

handles! { HANDLES:
    "MPI_Op" / "MPI_ABI_Op" {
        MPI_OP_NULL = 0x20, MPI_SUM = 0x21, MPI_MIN = 0x22, MPI_MAX = 0x23, MPI_PROD = 0x24,
        MPI_BAND = 0x28, MPI_BOR = 0x29, MPI_BXOR = 0x2a, MPI_LAND = 0x30, MPI_LOR = 0x31,
        MPI_LXOR = 0x32, MPI_MINLOC = 0x38, MPI_MAXLOC = 0x39, MPI_REPLACE = 0x3c, MPI_NO_OP = 0x3d,
    }
    "MPI_Comm" / "MPI_ABI_Comm" { MPI_COMM_NULL = 0x100, MPI_COMM_WORLD = 0x101, MPI_COMM_SELF = 0x102 }
    "MPI_Group" / "MPI_ABI_Group" { MPI_GROUP_NULL = 0x108, MPI_GROUP_EMPTY = 0x109 }
    "MPI_Win" / "MPI_ABI_Win" { MPI_WIN_NULL = 0x110 }
    "MPI_File" / "MPI_ABI_File" { MPI_FILE_NULL = 0x118 }
    "MPI_Session" / "MPI_ABI_Session" { MPI_SESSION_NULL = 0x120 }
    "MPI_Message" / "MPI_ABI_Message" { MPI_MESSAGE_NULL = 0x128, MPI_MESSAGE_NO_PROC = 0x129 }
    "MPI_Info" / "MPI_ABI_Info" { MPI_INFO_NULL = 0x130, MPI_INFO_ENV = 0x131 }
    "MPI_Errhandler" / "MPI_ABI_Errhandler" {
        MPI_ERRHANDLER_NULL = 0x140, MPI_ERRORS_ARE_FATAL = 0x141, MPI_ERRORS_RETURN = 0x142,
        MPI_ERRORS_ABORT = 0x143,
    }
    "MPI_Request" / "MPI_ABI_Request" { MPI_REQUEST_NULL = 0x180 }
    "MPI_Datatype" / "MPI_ABI_Datatype" {
        MPI_DATATYPE_NULL = 0x200, MPI_AINT = 0x201, MPI_COUNT = 0x202, MPI_OFFSET = 0x203,
        MPI_PACKED = 0x207, MPI_SHORT = 0x208, MPI_INT = 0x209, MPI_LONG = 0x20a, MPI_LONG_LONG = 0x20b,
        MPI_UNSIGNED_SHORT = 0x20c, MPI_UNSIGNED = 0x20d, MPI_UNSIGNED_LONG = 0x20e,
        MPI_UNSIGNED_LONG_LONG = 0x20f, MPI_FLOAT = 0x210, MPI_C_FLOAT_COMPLEX = 0x212,
        MPI_CXX_FLOAT_COMPLEX = 0x213, MPI_DOUBLE = 0x214, MPI_C_DOUBLE_COMPLEX = 0x216,
        MPI_CXX_DOUBLE_COMPLEX = 0x217, MPI_LOGICAL = 0x218, MPI_INTEGER = 0x219, MPI_REAL = 0x21a,
        MPI_COMPLEX = 0x21b, MPI_DOUBLE_PRECISION = 0x21c, MPI_DOUBLE_COMPLEX = 0x21d,
        MPI_CHARACTER = 0x21e, MPI_LONG_DOUBLE = 0x220, MPI_C_LONG_DOUBLE_COMPLEX = 0x224,
        MPI_CXX_LONG_DOUBLE_COMPLEX = 0x225, MPI_FLOAT_INT = 0x228, MPI_DOUBLE_INT = 0x229,
        MPI_LONG_INT = 0x22a, MPI_2INT = 0x22b, MPI_SHORT_INT = 0x22c, MPI_LONG_DOUBLE_INT = 0x22d,
        MPI_2REAL = 0x230, MPI_2DOUBLE_PRECISION = 0x231, MPI_2INTEGER = 0x232, MPI_C_BOOL = 0x238,
        MPI_CXX_BOOL = 0x239, MPI_WCHAR = 0x23c, MPI_INT8_T = 0x240, MPI_UINT8_T = 0x241,
        MPI_CHAR = 0x243, MPI_SIGNED_CHAR = 0x244, MPI_UNSIGNED_CHAR = 0x245, MPI_BYTE = 0x247,
        MPI_INT16_T = 0x248, MPI_UINT16_T = 0x249, MPI_INT32_T = 0x250, MPI_UINT32_T = 0x251,
        MPI_INT64_T = 0x258, MPI_UINT64_T = 0x259, MPI_LOGICAL1 = 0x2c0, MPI_INTEGER1 = 0x2c1,
        MPI_LOGICAL2 = 0x2c8, MPI_INTEGER2 = 0x2c9, MPI_REAL2 = 0x2ca, MPI_LOGICAL4 = 0x2d0,
        MPI_INTEGER4 = 0x2d1, MPI_REAL4 = 0x2d2, MPI_COMPLEX4 = 0x2d3, MPI_LOGICAL8 = 0x2d8,
        MPI_INTEGER8 = 0x2d9, MPI_REAL8 = 0x2da, MPI_COMPLEX8 = 0x2db, MPI_LOGICAL16 = 0x2e0,
        MPI_INTEGER16 = 0x2e1, MPI_REAL16 = 0x2e2, MPI_COMPLEX16 = 0x2e3, MPI_COMPLEX32 = 0x2eb,
    }
}

/// Names that the standard defines as another handle (`MPI_LONG_LONG_INT`).
pub const HANDLE_ALIASES: &[(&str, &str)] =
    &[("MPI_LONG_LONG_INT", "MPI_LONG_LONG"), ("MPI_C_COMPLEX", "MPI_C_FLOAT_COMPLEX")];

/// Defines each integer constant (`pub const NAME: i32`) and a table of
/// `(group comment, [(name, value)])` for the header's enums.
macro_rules! ints {
    ($table:ident: $( $group:literal { $($name:ident = $v:expr),* $(,)? } )*) => {
        $( $( #[doc = concat!("`", stringify!($name), "`")] pub const $name: i32 = $v; )* )*
        /// Every integer constant, by group.
        pub const $table: &[(&str, &[(&str, i32)])] = &[
            $( ($group, &[ $( (stringify!($name), $v) ),* ]) ),*
        ];
    };
}

ints! { INTS:
    "Error classes" {
        MPI_SUCCESS = 0, MPI_ERR_BUFFER = 1, MPI_ERR_COUNT = 2, MPI_ERR_TYPE = 3, MPI_ERR_TAG = 4,
        MPI_ERR_COMM = 5, MPI_ERR_RANK = 6, MPI_ERR_REQUEST = 7, MPI_ERR_ROOT = 8, MPI_ERR_GROUP = 9,
        MPI_ERR_OP = 10, MPI_ERR_TOPOLOGY = 11, MPI_ERR_DIMS = 12, MPI_ERR_ARG = 13,
        MPI_ERR_UNKNOWN = 14, MPI_ERR_TRUNCATE = 15, MPI_ERR_OTHER = 16, MPI_ERR_INTERN = 17,
        MPI_ERR_PENDING = 18, MPI_ERR_IN_STATUS = 19, MPI_ERR_ACCESS = 20, MPI_ERR_AMODE = 21,
        MPI_ERR_ASSERT = 22, MPI_ERR_BAD_FILE = 23, MPI_ERR_BASE = 24, MPI_ERR_CONVERSION = 25,
        MPI_ERR_DISP = 26, MPI_ERR_DUP_DATAREP = 27, MPI_ERR_FILE_EXISTS = 28,
        MPI_ERR_FILE_IN_USE = 29, MPI_ERR_FILE = 30, MPI_ERR_INFO_KEY = 31, MPI_ERR_INFO_NOKEY = 32,
        MPI_ERR_INFO_VALUE = 33, MPI_ERR_INFO = 34, MPI_ERR_IO = 35, MPI_ERR_KEYVAL = 36,
        MPI_ERR_LOCKTYPE = 37, MPI_ERR_NAME = 38, MPI_ERR_NO_MEM = 39, MPI_ERR_NOT_SAME = 40,
        MPI_ERR_NO_SPACE = 41, MPI_ERR_NO_SUCH_FILE = 42, MPI_ERR_PORT = 43, MPI_ERR_QUOTA = 44,
        MPI_ERR_READ_ONLY = 45, MPI_ERR_RMA_ATTACH = 46, MPI_ERR_RMA_CONFLICT = 47,
        MPI_ERR_RMA_RANGE = 48, MPI_ERR_RMA_SHARED = 49, MPI_ERR_RMA_SYNC = 50, MPI_ERR_SERVICE = 51,
        MPI_ERR_SIZE = 52, MPI_ERR_SPAWN = 53, MPI_ERR_UNSUPPORTED_DATAREP = 54,
        MPI_ERR_UNSUPPORTED_OPERATION = 55, MPI_ERR_WIN = 56, MPI_ERR_RMA_FLAVOR = 57,
        MPI_ERR_PROC_ABORTED = 58, MPI_ERR_VALUE_TOO_LARGE = 59, MPI_ERR_SESSION = 60,
        MPI_ERR_ERRHANDLER = 61, MPI_ERR_ABI = 62, MPI_ERR_LASTCODE = 0x3fff,
    }
    "Wildcards and sentinels (negative)" {
        MPI_ANY_SOURCE = -1, MPI_ANY_TAG = -2, MPI_PROC_NULL = -3, MPI_ROOT = -4, MPI_UNDEFINED = -32766,
    }
    "Thread support levels (monotonic)" {
        MPI_THREAD_SINGLE = 0, MPI_THREAD_FUNNELED = 1024, MPI_THREAD_SERIALIZED = 2048,
        MPI_THREAD_MULTIPLE = 4096,
    }
    "Communicator and group comparisons" {
        MPI_IDENT = 201, MPI_CONGRUENT = 202, MPI_SIMILAR = 203, MPI_UNEQUAL = 204,
    }
    "Communicator split types" {
        MPI_COMM_TYPE_SHARED = 221, MPI_COMM_TYPE_HW_UNGUIDED = 222, MPI_COMM_TYPE_HW_GUIDED = 223,
        MPI_COMM_TYPE_RESOURCE_GUIDED = 224,
    }
    "Predefined attribute keys" {
        MPI_KEYVAL_INVALID = 0, MPI_TAG_UB = 501, MPI_IO = 502, MPI_HOST = 503,
        MPI_WTIME_IS_GLOBAL = 504, MPI_UNIVERSE_SIZE = 505, MPI_APPNUM = 506, MPI_LASTUSEDCODE = 507,
    }
    "Fortran status size and indices" {
        MPI_F_STATUS_SIZE = 8, MPI_F_SOURCE = 0, MPI_F_TAG = 1, MPI_F_ERROR = 2,
    }
    "File open modes and window assertions (powers of 2)" {
        MPI_MODE_APPEND = 1, MPI_MODE_CREATE = 2, MPI_MODE_DELETE_ON_CLOSE = 4, MPI_MODE_EXCL = 8,
        MPI_MODE_RDONLY = 16, MPI_MODE_RDWR = 32, MPI_MODE_SEQUENTIAL = 64, MPI_MODE_UNIQUE_OPEN = 128,
        MPI_MODE_WRONLY = 256, MPI_MODE_NOCHECK = 1024, MPI_MODE_NOPRECEDE = 2048, MPI_MODE_NOPUT = 4096,
        MPI_MODE_NOSTORE = 8192, MPI_MODE_NOSUCCEED = 16384,
    }
    "Array order and distribution" {
        MPI_ORDER_C = 12, MPI_ORDER_FORTRAN = 15, MPI_DISTRIBUTE_NONE = 16, MPI_DISTRIBUTE_BLOCK = 17,
        MPI_DISTRIBUTE_CYCLIC = 18, MPI_DISTRIBUTE_DFLT_DARG = 19,
    }
    "Datatype combiners" {
        MPI_COMBINER_NAMED = 101, MPI_COMBINER_DUP = 102, MPI_COMBINER_CONTIGUOUS = 103,
        MPI_COMBINER_VECTOR = 104, MPI_COMBINER_HVECTOR = 105, MPI_COMBINER_INDEXED = 106,
        MPI_COMBINER_HINDEXED = 107, MPI_COMBINER_INDEXED_BLOCK = 108, MPI_COMBINER_HINDEXED_BLOCK = 109,
        MPI_COMBINER_STRUCT = 110, MPI_COMBINER_SUBARRAY = 111, MPI_COMBINER_DARRAY = 112,
        MPI_COMBINER_F90_INTEGER = 113, MPI_COMBINER_F90_REAL = 114, MPI_COMBINER_F90_COMPLEX = 115,
        MPI_COMBINER_RESIZED = 116, MPI_COMBINER_VALUE_INDEX = 117,
    }
    "Fortran datatype matching" {
        MPIX_TYPECLASS_LOGICAL = 191, MPI_TYPECLASS_INTEGER = 192, MPI_TYPECLASS_REAL = 193,
        MPI_TYPECLASS_COMPLEX = 194,
    }
    "Topologies, window locks, flavors and models, file positioning" {
        MPI_CART = 211, MPI_GRAPH = 212, MPI_DIST_GRAPH = 213, MPI_LOCK_EXCLUSIVE = 301,
        MPI_LOCK_SHARED = 302, MPI_WIN_FLAVOR_CREATE = 311, MPI_WIN_FLAVOR_ALLOCATE = 312,
        MPI_WIN_FLAVOR_DYNAMIC = 313, MPI_WIN_FLAVOR_SHARED = 314, MPI_WIN_UNIFIED = 321,
        MPI_WIN_SEPARATE = 322, MPI_SEEK_SET = 401, MPI_SEEK_CUR = 402, MPI_SEEK_END = 403,
    }
    "Window attribute keys" {
        MPI_WIN_BASE = 601, MPI_WIN_DISP_UNIT = 602, MPI_WIN_SIZE = 603, MPI_WIN_CREATE_FLAVOR = 604,
        MPI_WIN_MODEL = 605,
    }
    "MPI_T verbosity, binding, scope and performance-variable classes" {
        MPI_T_VERBOSITY_USER_BASIC = 0x09, MPI_T_VERBOSITY_USER_DETAIL = 0x0a,
        MPI_T_VERBOSITY_USER_ALL = 0x0c, MPI_T_VERBOSITY_TUNER_BASIC = 0x11,
        MPI_T_VERBOSITY_TUNER_DETAIL = 0x12, MPI_T_VERBOSITY_TUNER_ALL = 0x14,
        MPI_T_VERBOSITY_MPIDEV_BASIC = 0x21, MPI_T_VERBOSITY_MPIDEV_DETAIL = 0x22,
        MPI_T_VERBOSITY_MPIDEV_ALL = 0x24, MPI_T_BIND_NO_OBJECT = 1, MPI_T_BIND_MPI_COMM = 2,
        MPI_T_BIND_MPI_DATATYPE = 3, MPI_T_BIND_MPI_ERRHANDLER = 4, MPI_T_BIND_MPI_FILE = 5,
        MPI_T_BIND_MPI_GROUP = 6, MPI_T_BIND_MPI_OP = 7, MPI_T_BIND_MPI_REQUEST = 8,
        MPI_T_BIND_MPI_WIN = 9, MPI_T_BIND_MPI_MESSAGE = 10, MPI_T_BIND_MPI_INFO = 11,
        MPI_T_BIND_MPI_SESSION = 12, MPI_T_SCOPE_CONSTANT = 1, MPI_T_SCOPE_READONLY = 2,
        MPI_T_SCOPE_LOCAL = 3, MPI_T_SCOPE_GROUP = 4, MPI_T_SCOPE_GROUP_EQ = 5, MPI_T_SCOPE_ALL = 6,
        MPI_T_SCOPE_ALL_EQ = 7, MPI_T_PVAR_CLASS_STATE = 1, MPI_T_PVAR_CLASS_LEVEL = 2,
        MPI_T_PVAR_CLASS_SIZE = 3, MPI_T_PVAR_CLASS_PERCENTAGE = 4, MPI_T_PVAR_CLASS_HIGHWATERMARK = 5,
        MPI_T_PVAR_CLASS_LOWWATERMARK = 6, MPI_T_PVAR_CLASS_COUNTER = 7, MPI_T_PVAR_CLASS_AGGREGATE = 8,
        MPI_T_PVAR_CLASS_TIMER = 9, MPI_T_PVAR_CLASS_GENERIC = 10,
    }
    "MPI_T error classes" {
        MPI_T_ERR_CANNOT_INIT = 1001, MPI_T_ERR_NOT_ACCESSIBLE = 1002, MPI_T_ERR_NOT_INITIALIZED = 1003,
        MPI_T_ERR_NOT_SUPPORTED = 1004, MPI_T_ERR_MEMORY = 1005, MPI_T_ERR_INVALID = 1006,
        MPI_T_ERR_INVALID_INDEX = 1007, MPI_T_ERR_INVALID_ITEM = 1008, MPI_T_ERR_INVALID_SESSION = 1009,
        MPI_T_ERR_INVALID_HANDLE = 1010, MPI_T_ERR_INVALID_NAME = 1011, MPI_T_ERR_OUT_OF_HANDLES = 1012,
        MPI_T_ERR_OUT_OF_SESSIONS = 1013, MPI_T_ERR_CVAR_SET_NOT_NOW = 1014,
        MPI_T_ERR_CVAR_SET_NEVER = 1015, MPI_T_ERR_PVAR_NO_WRITE = 1016,
        MPI_T_ERR_PVAR_NO_STARTSTOP = 1017, MPI_T_ERR_PVAR_NO_ATOMIC = 1018,
    }
}

/// The standard's callback types and the handle types of the tool
/// interface, as C declarations: every standard-ABI header has them,
/// whether or not the functions that take them are implemented (a
/// program's own code names them).
pub const TYPEDEFS: &[&str] = &[
    "typedef void (MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);",
    "typedef void (MPI_User_function_c)(void *invec, void *inoutvec, MPI_Count *len, MPI_Datatype *datatype);",
    "typedef int (MPI_Grequest_query_function)(void *extra_state, MPI_Status *status);",
    "typedef int (MPI_Grequest_free_function)(void *extra_state);",
    "typedef int (MPI_Grequest_cancel_function)(void *extra_state, int complete);",
    "typedef int (MPI_Copy_function)(MPI_Comm comm, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);",
    "typedef int (MPI_Delete_function)(MPI_Comm comm, int keyval, void *attribute_val, void *extra_state);",
    "typedef int (MPI_Comm_copy_attr_function)(MPI_Comm comm, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);",
    "typedef int (MPI_Comm_delete_attr_function)(MPI_Comm comm, int keyval, void *attribute_val, void *extra_state);",
    "typedef int (MPI_Type_copy_attr_function)(MPI_Datatype datatype, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);",
    "typedef int (MPI_Type_delete_attr_function)(MPI_Datatype datatype, int keyval, void *attribute_val, void *extra_state);",
    "typedef int (MPI_Win_copy_attr_function)(MPI_Win win, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);",
    "typedef int (MPI_Win_delete_attr_function)(MPI_Win win, int keyval, void *attribute_val, void *extra_state);",
    "typedef int (MPI_Datarep_extent_function)(MPI_Datatype datatype, MPI_Aint *extent, void *extra_state);",
    "typedef int (MPI_Datarep_conversion_function)(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position, void *extra_state);",
    "typedef int (MPI_Datarep_conversion_function_c)(void *userbuf, MPI_Datatype datatype, MPI_Count count, void *filebuf, MPI_Offset position, void *extra_state);",
    "typedef void (MPI_Comm_errhandler_function)(MPI_Comm *comm, int *error_code, ...);",
    "typedef void (MPI_File_errhandler_function)(MPI_File *file, int *error_code, ...);",
    "typedef void (MPI_Win_errhandler_function)(MPI_Win *win, int *error_code, ...);",
    "typedef void (MPI_Session_errhandler_function)(MPI_Session *session, int *error_code, ...);",
    "typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;",
    "typedef MPI_File_errhandler_function MPI_File_errhandler_fn;",
    "typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;",
    "typedef MPI_Session_errhandler_function MPI_Session_errhandler_fn;",
    "#define MPI_NULL_COPY_FN               ((MPI_Copy_function*)0x0)",
    "#define MPI_DUP_FN                     ((MPI_Copy_function*)0x1)",
    "#define MPI_NULL_DELETE_FN             ((MPI_Delete_function*)0x0)",
    "#define MPI_COMM_NULL_COPY_FN          ((MPI_Comm_copy_attr_function*)0x0)",
    "#define MPI_COMM_DUP_FN                ((MPI_Comm_copy_attr_function*)0x1)",
    "#define MPI_COMM_NULL_DELETE_FN        ((MPI_Comm_delete_attr_function*)0x0)",
    "#define MPI_TYPE_NULL_COPY_FN          ((MPI_Type_copy_attr_function*)0x0)",
    "#define MPI_TYPE_DUP_FN                ((MPI_Type_copy_attr_function*)0x1)",
    "#define MPI_TYPE_NULL_DELETE_FN        ((MPI_Type_delete_attr_function*)0x0)",
    "#define MPI_WIN_NULL_COPY_FN           ((MPI_Win_copy_attr_function*)0x0)",
    "#define MPI_WIN_DUP_FN                 ((MPI_Win_copy_attr_function*)0x1)",
    "#define MPI_WIN_NULL_DELETE_FN         ((MPI_Win_delete_attr_function*)0x0)",
    "#define MPI_CONVERSION_FN_NULL         ((MPI_Datarep_conversion_function*)0x0)",
    "#define MPI_CONVERSION_FN_NULL_C       ((MPI_Datarep_conversion_function_c*)0x0)",
    "#define MPI_DISPLACEMENT_CURRENT       ((MPI_Offset)-1)",
    "/* ROMIO's request names, which MPI-IO programs written for MPICH and Open MPI use. */",
    "#define MPIO_USES_MPI_REQUEST",
    "#define MPIO_Request                   MPI_Request",
    "#define MPIO_REQUEST_NULL              MPI_REQUEST_NULL",
    "#define MPIO_Wait                      MPI_Wait",
    "#define MPIO_Test                      MPI_Test",
    "typedef struct MPI_T_enum_t* MPI_T_enum;",
    "typedef struct MPI_T_cvar_handle_t* MPI_T_cvar_handle;",
    "typedef struct MPI_T_pvar_handle_t* MPI_T_pvar_handle;",
    "typedef struct MPI_T_pvar_session_t* MPI_T_pvar_session;",
    "typedef struct MPI_T_event_registration_t* MPI_T_event_registration;",
    "typedef struct MPI_T_event_instance_t* MPI_T_event_instance;",
    "#define MPI_T_ENUM_NULL                ((MPI_T_enum)0)",
    "#define MPI_T_CVAR_HANDLE_NULL         ((MPI_T_cvar_handle)0)",
    "#define MPI_T_PVAR_SESSION_NULL        ((MPI_T_pvar_session)0)",
    "#define MPI_T_PVAR_HANDLE_NULL         ((MPI_T_pvar_handle)0)",
    "#define MPI_T_PVAR_ALL_HANDLES         ((MPI_T_pvar_handle)1)",
    "typedef enum MPI_T_cb_safety { MPI_T_CB_REQUIRE_NONE = 0x00, MPI_T_CB_REQUIRE_MPI_RESTRICTED = 0x03, MPI_T_CB_REQUIRE_THREAD_SAFE = 0x0F, MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE = 0x3F } MPI_T_cb_safety;",
    "typedef enum MPI_T_source_order { MPI_T_SOURCE_ORDERED = 1, MPI_T_SOURCE_UNORDERED = 2 } MPI_T_source_order;",
    "typedef void (MPI_T_event_cb_function)(MPI_T_event_instance event_instance, MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, void *user_data);",
    "typedef void (MPI_T_event_free_cb_function)(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, void *user_data);",
    "typedef void (MPI_T_event_dropped_cb_function)(MPI_Count count, MPI_T_event_registration event_registration, int source_index, MPI_T_cb_safety cb_safety, void *user_data);",
];

/// `#define`d sizes: `(name, value)`.
pub const SIZES: &[(&str, i32)] = &[
    ("MPI_MAX_DATAREP_STRING", 128),
    ("MPI_MAX_ERROR_STRING", MPI_MAX_ERROR_STRING),
    ("MPI_MAX_INFO_KEY", MPI_MAX_INFO_KEY),
    ("MPI_MAX_INFO_VAL", MPI_MAX_INFO_VAL),
    ("MPI_MAX_LIBRARY_VERSION_STRING", MPI_MAX_LIBRARY_VERSION_STRING),
    ("MPI_MAX_OBJECT_NAME", MPI_MAX_OBJECT_NAME),
    ("MPI_MAX_PORT_NAME", MPI_MAX_PORT_NAME),
    ("MPI_MAX_PROCESSOR_NAME", MPI_MAX_PROCESSOR_NAME),
    ("MPI_MAX_STRINGTAG_LEN", 1024),
    ("MPI_MAX_PSET_NAME_LEN", 1024),
    ("MPI_BSEND_OVERHEAD", 512),
];
/// `MPI_MAX_ERROR_STRING`.
pub const MPI_MAX_ERROR_STRING: i32 = 512;
/// `MPI_MAX_LIBRARY_VERSION_STRING`.
pub const MPI_MAX_LIBRARY_VERSION_STRING: i32 = 8192;
/// `MPI_MAX_OBJECT_NAME`.
pub const MPI_MAX_OBJECT_NAME: i32 = 128;
/// `MPI_MAX_PORT_NAME`.
pub const MPI_MAX_PORT_NAME: i32 = 1024;
/// `MPI_MAX_INFO_KEY`.
pub const MPI_MAX_INFO_KEY: i32 = 256;
/// `MPI_MAX_INFO_VAL`.
pub const MPI_MAX_INFO_VAL: i32 = 1024;
/// `MPI_MAX_PROCESSOR_NAME`.
pub const MPI_MAX_PROCESSOR_NAME: i32 = 256;

/// Address and "ignore" constants: `(name, C pointer type, value)`.
pub const POINTERS: &[(&str, &str, usize)] = &[
    ("MPI_BOTTOM", "void*", MPI_BOTTOM),
    ("MPI_IN_PLACE", "void*", MPI_IN_PLACE),
    ("MPI_BUFFER_AUTOMATIC", "void*", 2),
    ("MPI_ARGV_NULL", "char**", 0),
    ("MPI_ARGVS_NULL", "char***", 0),
    ("MPI_ERRCODES_IGNORE", "int*", 0),
    ("MPI_STATUS_IGNORE", "MPI_Status*", 0),
    ("MPI_STATUSES_IGNORE", "MPI_Status*", 0),
    ("MPI_UNWEIGHTED", "int*", 10),
    ("MPI_WEIGHTS_EMPTY", "int*", 11),
];
/// `MPI_BOTTOM`.
pub const MPI_BOTTOM: usize = 0;
/// `MPI_IN_PLACE`.
pub const MPI_IN_PLACE: usize = 1;

/// `mpi.h`, generated from the tables above.
pub fn header() -> String {
    let mut h = String::new();
    let mut line = |s: &str| {
        h.push_str(s);
        h.push('\n');
    };
    line("/* mpi.h: the MPI standard ABI (MPI 5.0, ABI version 1.0) of the DIMMnet-2 stack's");
    line(" * libmpi_abi. Generated by `cargo run -p capi --bin gen-mpi-h` from abi-def/src/lib.rs;");
    line(" * do not edit. Every function of the MPI 5.0 ABI is declared; those the library does not");
    line(" * provide return MPI_ERR_UNSUPPORTED_OPERATION (docs/guide/not-supported.md). */");
    line("#ifndef MPI_H_ABI");
    line("#define MPI_H_ABI");
    line("");
    line("#include <stdint.h>");
    line("");
    line("#if defined(__cplusplus)");
    line("extern \"C\" {");
    line("#endif");
    line("");
    line(&format!("#define MPI_VERSION    {}", VERSION.0));
    line(&format!("#define MPI_SUBVERSION {}", VERSION.1));
    line(&format!("#define MPI_ABI_VERSION    {}", ABI_VERSION.0));
    line(&format!("#define MPI_ABI_SUBVERSION {}", ABI_VERSION.1));
    line("");
    line("typedef intptr_t MPI_Aint;");
    line("typedef int64_t MPI_Offset;");
    line("typedef MPI_Offset MPI_Count;");
    line("");
    line("typedef struct {");
    line("    int MPI_SOURCE;");
    line("    int MPI_TAG;");
    line("    int MPI_ERROR;");
    line("    int MPI_internal[5];");
    line("} MPI_Status;");
    for (ty, st, values) in HANDLES {
        line("");
        line(&format!("typedef struct {st}* {ty};"));
        for (name, v) in values.iter() {
            line(&format!("#define {name:<30} (({ty})0x{v:08x})"));
        }
    }
    line("");
    for (alias, of) in HANDLE_ALIASES {
        line(&format!("#define {alias:<30} {of}"));
    }
    for (group, values) in INTS {
        line("");
        line(&format!("/* {group} */"));
        line("enum {");
        for (i, (name, v)) in values.iter().enumerate() {
            let comma = if i + 1 < values.len() { "," } else { "" };
            line(&format!("    {name:<30} = {v}{comma}"));
        }
        line("};");
    }
    line("");
    for (name, ty, v) in POINTERS {
        line(&format!("#define {name:<30} (({ty}){v})"));
    }
    line("");
    for (name, v) in SIZES {
        line(&format!("#define {name:<30} {v}"));
    }
    line("");
    for t in TYPEDEFS {
        line(t);
    }
    line("");
    for f in FUNCTIONS {
        line(&format!("{f};"));
    }
    line("");
    line("#if defined(__cplusplus)");
    line("}");
    line("#endif");
    line("");
    line("#endif /* MPI_H_ABI */");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from the MPI 5.0 standard's ABI tables (spot checks across
    /// every kind, typed in from the standard, not from our tables).
    #[test]
    fn handle_and_constant_values_are_the_standards() {
        let want: &[(&str, usize)] = &[
            ("MPI_SUM", 0x21),
            ("MPI_MAXLOC", 0x39),
            ("MPI_COMM_NULL", 0x100),
            ("MPI_COMM_WORLD", 0x101),
            ("MPI_COMM_SELF", 0x102),
            ("MPI_GROUP_EMPTY", 0x109),
            ("MPI_ERRORS_ARE_FATAL", 0x141),
            ("MPI_ERRORS_RETURN", 0x142),
            ("MPI_ERRORS_ABORT", 0x143),
            ("MPI_REQUEST_NULL", 0x180),
            ("MPI_INT", 0x209),
            ("MPI_DOUBLE", 0x214),
            ("MPI_CHAR", 0x243),
            ("MPI_BYTE", 0x247),
            ("MPI_UINT64_T", 0x259),
            ("MPI_COMPLEX32", 0x2eb),
        ];
        for (name, v) in want {
            let found = HANDLES.iter().flat_map(|(_, _, vs)| vs.iter()).find(|(n, _)| n == name);
            assert_eq!(found.map(|f| f.1), Some(*v), "{name}");
        }
        assert_eq!((MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_PROC_NULL, MPI_ROOT), (-1, -2, -3, -4));
        assert_eq!(MPI_UNDEFINED, -32766);
        assert_eq!((MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE), (1024, 2048, 4096));
        assert_eq!((MPI_ERR_TRUNCATE, MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_LASTCODE), (15, 55, 16383));
        assert_eq!((MPI_TAG_UB, MPI_IN_PLACE), (501, 1));
    }

    /// No two handles of one type share a value, and handle values are
    /// below 0x400, where the library's own handles never are.
    #[test]
    fn handle_values_are_distinct_and_small() {
        for (ty, _, values) in HANDLES {
            let mut v: Vec<usize> = values.iter().map(|x| x.1).collect();
            v.sort_unstable();
            v.dedup();
            assert_eq!(v.len(), values.len(), "{ty}");
            assert!(v.iter().all(|&x| x < 0x400), "{ty}");
        }
    }
}
