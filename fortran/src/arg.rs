//! What each C parameter is to a Fortran caller (MPI 4.1 §19.1, the
//! `mpif.h` and `use mpi` bindings), and so how the glue converts it.
//!
//! Every Fortran argument arrives by reference. `INTEGER` is C's `int`
//! (the default kind, 4 bytes: the only one supported), handles are
//! `INTEGER`s converted with the ABI's `MPI_*_fromint`/`_toint`, and the
//! address, offset and count kinds are 8 bytes as the ABI's C types are.

use crate::proto::Param;

/// The integer kind of an 8-byte argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `MPI_Aint`: `INTEGER(KIND=MPI_ADDRESS_KIND)`.
    Address,
    /// `MPI_Count`: `INTEGER(KIND=MPI_COUNT_KIND)`.
    Count,
    /// `MPI_Offset`: `INTEGER(KIND=MPI_OFFSET_KIND)`.
    Offset,
}

impl Kind {
    /// The Fortran kind parameter's name.
    pub fn fortran(self) -> &'static str {
        match self {
            Kind::Address => "MPI_ADDRESS_KIND",
            Kind::Count => "MPI_COUNT_KIND",
            Kind::Offset => "MPI_OFFSET_KIND",
        }
    }

    /// The C type.
    pub fn c(self) -> &'static str {
        match self {
            Kind::Address => "MPI_Aint",
            Kind::Count => "MPI_Count",
            Kind::Offset => "MPI_Offset",
        }
    }
}

/// The shape of an `INTEGER` (or kind) argument the glue passes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One value.
    Scalar,
    /// `X(*)`.
    Array,
    /// `X(3,*)`: `MPI_Group_range_incl`'s triplets.
    Triplets,
}

/// What a parameter is to Fortran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// `int x`: `INTEGER`, read.
    Int,
    /// `int x` that the standard makes `LOGICAL` (`reorder`, `high`, ...).
    Logical,
    /// `int *x`, `int x[]`: `INTEGER` passed through.
    IntRef(Shape),
    /// `int *flag`: a `LOGICAL` result.
    LogicalOut,
    /// A `LOGICAL` array of the given length (C code).
    LogicalArray {
        /// The length, as C code over the glue's names.
        len: String,
        /// Whether the call writes it.
        out: bool,
    },
    /// `int *index`: a 0-based index, 1-based in Fortran.
    IndexOut,
    /// `int array_of_indices[]`: 0-based indices, `*outcount` of them.
    IndicesOut,
    /// `weights` arrays, which may be `MPI_UNWEIGHTED` or `MPI_WEIGHTS_EMPTY`.
    Weights,
    /// An address, count or offset by value: read.
    KindVal(Kind),
    /// An address, count or offset array or result: passed through.
    KindRef(Kind, Shape),
    /// A handle by value.
    Handle(String),
    /// A handle the call reads or writes (`MPI_Request *request`).
    HandleRef(String),
    /// An array of handles of the given length (C code).
    HandleArray {
        /// The C handle type.
        ty: String,
        /// The length, as C code over the glue's names.
        len: String,
        /// Whether the call writes it (a `const` array is only read, and
        /// may be a Fortran constant in read-only memory).
        out: bool,
    },
    /// A choice buffer (`void *buf`): `MPI_BOTTOM` and `MPI_IN_PLACE` mapped.
    Choice,
    /// `void *extra_state`, `void *attribute_val` given as an address-kind integer.
    AddressIn,
    /// `void *baseptr`: the call writes an address, Fortran gets it as an integer.
    AddressOut,
    /// `void *buffer_addr` of a detach: an address Fortran has no use for.
    Detached,
    /// `MPI_Status *`: `INTEGER STATUS(MPI_STATUS_SIZE)`, or `MPI_STATUS_IGNORE`.
    Status,
    /// `const MPI_Status *`.
    StatusIn,
    /// `MPI_Status []`, or `MPI_STATUSES_IGNORE`.
    Statuses,
    /// `const char *`: `CHARACTER*(*)`, trailing blanks dropped.
    StrIn,
    /// `char *`: `CHARACTER*(*)`, blank-padded.
    StrOut,
    /// A procedure (a user callback): only in hand-written glue.
    Procedure,
    /// `CHARACTER*(*) x(*)`: an array of strings (`argv` of
    /// `MPI_COMM_SPAWN`, ended by a blank one): only in hand-written glue.
    StrArray,
    /// `CHARACTER*(*) x(rows, *)`: a table of strings, `rows` (another
    /// dummy) to a column (`array_of_argv` of `MPI_COMM_SPAWN_MULTIPLE`):
    /// only in hand-written glue.
    StrTable {
        /// The dummy that gives the first dimension.
        rows: String,
    },
}

/// Names of `int` parameters that are `LOGICAL` in Fortran.
const LOGICALS: &[&str] = &["flag", "reorder", "high", "commute", "weighted"];

/// `(function, parameter, length as C code)` for arrays whose length is
/// another argument or a query.
const LENGTHS: &[(&str, &str, &str)] = &[
    ("MPI_Waitall", "array_of_requests", "*count"),
    ("MPI_Testall", "array_of_requests", "*count"),
    ("MPI_Startall", "array_of_requests", "*count"),
    ("MPI_Waitany", "array_of_requests", "*count"),
    ("MPI_Testany", "array_of_requests", "*count"),
    ("MPI_Waitsome", "array_of_requests", "*incount"),
    ("MPI_Testsome", "array_of_requests", "*incount"),
    ("MPI_Request_get_status_all", "array_of_requests", "*count"),
    ("MPI_Request_get_status_any", "array_of_requests", "*count"),
    ("MPI_Request_get_status_some", "array_of_requests", "*incount"),
    ("MPI_Type_create_struct", "array_of_types", "*count"),
    ("MPI_Type_get_contents", "array_of_datatypes", "*max_datatypes"),
    ("MPI_Cart_create", "periods", "*ndims"),
    ("MPI_Cart_map", "periods", "*ndims"),
    ("MPI_Cart_get", "periods", "*maxdims"),
    ("MPI_Cart_sub", "remain_dims", "mpif_cartdim(c_comm)"),
];

/// The length of `func`'s array `param`: from [`LENGTHS`], or for the
/// `w` collectives the group (or neighbourhood) size.
fn length(func: &str, param: &str) -> Option<String> {
    // A large-count form's array has the length its plain form's has.
    let plain = func.strip_suffix("_c").unwrap_or(func);
    if let Some((_, _, len)) = LENGTHS.iter().find(|(f, p, _)| *f == plain && *p == param) {
        return Some(len.to_string());
    }
    let lower = func.to_lowercase();
    if lower.contains("alltoallw") && (param == "sendtypes" || param == "recvtypes") {
        let side = if param == "sendtypes" { "out" } else { "in" };
        return Some(if lower.contains("neighbor") {
            format!("mpif_neighbors(c_comm, MPIF_{})", side.to_uppercase())
        } else {
            "mpif_alltoallw_len(c_comm)".to_string()
        });
    }
    None
}

/// Why the generator cannot bind a C function by itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unbindable {
    /// An array whose length the generator does not know.
    #[error("no length for {func}'s array {param}")]
    ArrayLength {
        /// The function.
        func: String,
        /// The parameter.
        param: String,
    },
    /// A pointer to a pointer to a handle.
    #[error("{func}'s {param}: a pointer to a pointer to a handle")]
    HandlePointer {
        /// The function.
        func: String,
        /// The parameter.
        param: String,
    },
    /// A parameter type the generator does not bind.
    #[error("{func}'s {param}: a {ty} the generator does not bind")]
    Type {
        /// The function.
        func: String,
        /// The parameter.
        param: String,
        /// Its type, in words.
        ty: String,
    },
    /// A procedure argument (a callback needs a trampoline).
    #[error("{func}: takes a procedure ({param})")]
    Procedure {
        /// The function.
        func: String,
        /// The parameter.
        param: String,
    },
    /// A return type other than `int`, `double` or `MPI_Aint`, or a
    /// variadic function.
    #[error("{func}: returns {ret} or is variadic")]
    Return {
        /// The function.
        func: String,
        /// Its return type.
        ret: String,
    },
}

/// What parameter `p` of `func` is to Fortran, or why the generator
/// cannot say (the function then needs hand-written glue, or is not bound).
pub fn classify(func: &str, p: &Param) -> Result<Arg, Unbindable> {
    let name = p.name.as_str();
    let base = p.base.as_str();
    let shape = match (&p.array, p.pointers) {
        (Some(d), 0) if d.is_empty() => Shape::Array,
        (Some(d), 0) if d == "3" => Shape::Triplets,
        (None, 1) => Shape::Scalar,
        _ => Shape::Scalar,
    };
    let arg = match base {
        "int" if !p.is_pointer() => {
            if LOGICALS.contains(&name) {
                Arg::Logical
            } else {
                Arg::Int
            }
        }
        "int" if p.pointers <= 1 => {
            if name.contains("weights") {
                Arg::Weights
            } else if name == "periods" || name == "remain_dims" {
                let len = length(func, name)
                    .ok_or_else(|| Unbindable::ArrayLength { func: func.into(), param: name.into() })?;
                Arg::LogicalArray { len, out: !p.constant }
            } else if LOGICALS.contains(&name) && p.pointers == 1 {
                Arg::LogicalOut
            } else if name == "index" && p.pointers == 1 {
                Arg::IndexOut
            } else if name == "array_of_indices" && !p.constant {
                Arg::IndicesOut
            } else if p.pointers == 1 && p.array.is_none() && !p.constant {
                Arg::IntRef(Shape::Scalar)
            } else {
                Arg::IntRef(if p.pointers == 1 && p.constant { Shape::Array } else { shape })
            }
        }
        "MPI_Aint" | "MPI_Count" | "MPI_Offset" => {
            let k = match base {
                "MPI_Aint" => Kind::Address,
                "MPI_Count" => Kind::Count,
                _ => Kind::Offset,
            };
            if p.is_pointer() {
                Arg::KindRef(k, shape)
            } else {
                Arg::KindVal(k)
            }
        }
        "MPI_Status" if p.array.is_some() => Arg::Statuses,
        "MPI_Status" if p.constant => Arg::StatusIn,
        "MPI_Status" => Arg::Status,
        "void" if p.pointers == 1 => match name {
            "extra_state" | "attribute_val" => Arg::AddressIn,
            "baseptr" => Arg::AddressOut,
            "buffer_addr" => Arg::Detached,
            _ => Arg::Choice,
        },
        "char" if p.pointers == 1 && p.array.is_none() && p.constant => Arg::StrIn,
        "char" if p.pointers == 0 && p.array.as_deref() == Some("") && p.constant => Arg::StrIn,
        "char" if p.pointers == 1 && p.array.is_none() => Arg::StrOut,
        t if t.starts_with("MPI_") && t.ends_with("_function") => Arg::Procedure,
        t if is_handle(t) => {
            if p.array.is_some() {
                let len = length(func, name)
                    .ok_or_else(|| Unbindable::ArrayLength { func: func.into(), param: name.into() })?;
                Arg::HandleArray { ty: t.to_string(), len, out: !p.constant }
            } else if p.pointers == 1 {
                Arg::HandleRef(t.to_string())
            } else if p.pointers == 0 {
                Arg::Handle(t.to_string())
            } else {
                return Err(Unbindable::HandlePointer { func: func.into(), param: name.into() });
            }
        }
        _ => return Err(Unbindable::Type { func: func.into(), param: name.into(), ty: describe(p) }),
    };
    Ok(arg)
}

/// Whether `ty` is a handle type (`MPI_Comm`, ...): one of the ABI's.
fn is_handle(ty: &str) -> bool {
    abi_def::HANDLES.iter().any(|(t, _, _)| *t == ty)
}

/// `MPI_Comm` → `MPI_Comm`, `MPI_Datatype` → `MPI_Type`: the prefix of
/// the type's `_toint`/`_fromint`.
pub fn conversion_prefix(ty: &str) -> &str {
    if ty == "MPI_Datatype" {
        "MPI_Type"
    } else {
        ty
    }
}

fn describe(p: &Param) -> String {
    format!(
        "{}{}{}{}",
        if p.constant { "const " } else { "" },
        p.base,
        "*".repeat(p.pointers),
        p.array.as_ref().map_or(String::new(), |d| if d.is_empty() { "[]".into() } else { format!("[][{d}]") })
    )
}
