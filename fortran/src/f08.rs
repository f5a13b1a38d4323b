//! Module `mpi_f08` (MPI 4.1 §19.1.1, §19.2): handles as `TYPE(MPI_Comm)`
//! and the other handle types, each with its `MPI_VAL`, `==` and `/=`;
//! `TYPE(MPI_Status)`; optional `ierror`; the large-count `_c` forms under
//! the same generic names; `ASYNCHRONOUS` buffers of non-blocking calls.
//!
//! It needs no glue of its own. A `TYPE(MPI_Comm)` argument is passed by
//! reference, and its address is that of its one `INTEGER`, `MPI_VAL`,
//! which is the `mpif.h` handle (§19.3.4). A `TYPE(MPI_Status)` is the 8
//! `INTEGER`s of a Fortran status, a `TYPE(C_PTR)` the address an
//! address-kind integer holds, and an absent optional `ierror` a null
//! pointer, which the glue checks. The interfaces therefore name the same
//! glue functions `mpif.h` and `use mpi` call.
//!
//! Choice buffers are `TYPE(*), DIMENSION(*)` with gfortran's
//! `NO_ARG_CHECK`, as in module `mpi`: contiguous buffers only, so
//! `MPI_SUBARRAYS_SUPPORTED` is `.FALSE.` (§19.1.2 allows it).

use abi_def as abi;

use crate::arg::{Arg, Shape};
use crate::source::{constants, PROCEDURES};
use crate::Binding;

/// Whether `name`'s buffers are `ASYNCHRONOUS`: the standard's
/// non-blocking, persistent and one-sided calls, and memory MPI keeps
/// (attached buffers, windows).
fn asynchronous(name: &str) -> bool {
    let n = name.trim_start_matches("MPI_").trim_end_matches("_c");
    let nonblocking = n.starts_with('I')
        && n.as_bytes().get(1).is_some_and(|c| c.is_ascii_lowercase())
        && !["Info", "Init", "Intercomm", "Is_thread_main"].iter().any(|p| n.starts_with(p));
    nonblocking
        || n.ends_with("_init")
        || ["Rput", "Rget", "Raccumulate", "Rget_accumulate", "Put", "Get", "Accumulate", "Get_accumulate"].contains(&n)
        || ["Fetch_and_op", "Compare_and_swap", "Buffer_attach", "Win_create", "Win_attach"].contains(&n)
        || n.starts_with("File_i")
        || n.ends_with("_attach_buffer")
}

/// The `mpi_f08` declaration of one dummy argument.
fn declaration(name: &str, a: &Arg, async_buffers: bool) -> Vec<String> {
    let one = |t: &str| vec![format!("{t} :: {name}")];
    let handle = |ty: &str| ty.to_string();
    match a {
        Arg::Int => one("INTEGER, INTENT(IN)"),
        Arg::IntRef(Shape::Scalar) | Arg::IndexOut => one("INTEGER"),
        Arg::IntRef(Shape::Array) | Arg::IndicesOut | Arg::Weights => vec![format!("INTEGER :: {name}(*)")],
        Arg::IntRef(Shape::Triplets) => vec![format!("INTEGER :: {name}(3,*)")],
        Arg::Logical => one("LOGICAL, INTENT(IN)"),
        Arg::LogicalOut => one("LOGICAL"),
        Arg::LogicalArray { .. } => vec![format!("LOGICAL :: {name}(*)")],
        Arg::KindVal(k) => one(&format!("INTEGER(KIND={}), INTENT(IN)", k.fortran())),
        Arg::KindRef(k, Shape::Scalar) => one(&format!("INTEGER(KIND={})", k.fortran())),
        Arg::KindRef(k, _) => vec![format!("INTEGER(KIND={}) :: {name}(*)", k.fortran())],
        Arg::Handle(ty) => one(&format!("TYPE({}), INTENT(IN)", handle(ty))),
        Arg::HandleRef(ty) => one(&format!("TYPE({})", handle(ty))),
        Arg::HandleArray { ty, .. } => vec![format!("TYPE({}) :: {name}(*)", handle(ty))],
        Arg::AddressIn => one("INTEGER(KIND=MPI_ADDRESS_KIND)"),
        Arg::AddressOut => one("TYPE(C_PTR)"),
        Arg::Choice | Arg::Detached => {
            let attr = if async_buffers { ", ASYNCHRONOUS" } else { "" };
            vec![format!("!GCC$ ATTRIBUTES NO_ARG_CHECK :: {name}"), format!("TYPE(*), DIMENSION(*){attr} :: {name}")]
        }
        Arg::Status => one("TYPE(MPI_Status)"),
        Arg::StatusIn => one("TYPE(MPI_Status), INTENT(IN)"),
        Arg::Statuses => vec![format!("TYPE(MPI_Status) :: {name}(*)")],
        Arg::StrIn => one("CHARACTER(LEN=*), INTENT(IN)"),
        Arg::StrOut => one("CHARACTER(LEN=*)"),
        Arg::StrArray => vec![format!("CHARACTER(LEN=*), INTENT(IN) :: {name}(*)")],
        Arg::StrTable { rows } => vec![format!("CHARACTER(LEN=*), INTENT(IN) :: {name}({rows},*)")],
        Arg::Procedure => one("EXTERNAL"),
    }
}

/// The handle types, by their C (and `mpi_f08`) names.
fn handle_types() -> Vec<&'static str> {
    abi::HANDLES.iter().map(|(ty, _, _)| *ty).collect()
}

/// One interface body.
fn body(b: &Binding, name: &str) -> Vec<String> {
    let mut imports = vec!["MPI_ADDRESS_KIND", "MPI_OFFSET_KIND", "MPI_COUNT_KIND", "MPI_Status", "C_PTR"];
    imports.extend(handle_types());
    let asy = asynchronous(b.name());
    let declare = |n: &str, a: &Arg| declaration(n, a, asy);
    crate::source::interface_body(b, name, &imports.join(", "), declare, "INTEGER, OPTIONAL, INTENT(OUT) :: ierror")
}

/// Whether a generic could not tell `plain` from its large-count form
/// `large`: their dummies differ only where the kinds are the same (an
/// address and a count are both 8 bytes) or in a procedure's interface.
/// The large-count form is then only under its own `_c` name.
fn ambiguous(plain: &Binding, large: &Binding) -> bool {
    let key = |b: &Binding| -> Vec<String> {
        b.fortran_args()
            .map(|(args, _)| {
                args.iter()
                    .flat_map(|(_, a)| declaration("x", a, false))
                    .map(|d| {
                        d.replace("MPI_COUNT_KIND", "8")
                            .replace("MPI_ADDRESS_KIND", "8")
                            .replace("MPI_OFFSET_KIND", "8")
                    })
                    .map(|d| d.replace(", INTENT(IN)", ""))
                    .collect()
            })
            .unwrap_or_default()
    };
    key(plain) == key(large)
}

/// `mpi_f08.f90`.
/// The callback types of `mpi_f08` (MPI 4.1 §19.1.2, Annex A.4), so that a
/// program can declare its callbacks as `PROCEDURE(MPI_User_function)`.
/// The routines that take callbacks declare them `EXTERNAL`, which any of
/// these satisfies.
fn abstract_interfaces() -> String {
    let mut s = String::from("  ABSTRACT INTERFACE\n");
    let mut sub = |name: &str, args: &str, imports: &str, decls: &[&str]| {
        s += &format!("    SUBROUTINE {name}({args})\n      IMPORT :: {imports}\n");
        for d in decls {
            s += &format!("      {d}\n");
        }
        s += &format!("    END SUBROUTINE {name}\n");
    };
    for (suffix, len) in [("", "INTEGER :: len"), ("_c", "INTEGER(KIND=MPI_COUNT_KIND) :: len")] {
        sub(
            &format!("MPI_User_function{suffix}"),
            "invec, inoutvec, len, datatype",
            "C_PTR, MPI_Datatype, MPI_COUNT_KIND",
            &["TYPE(C_PTR), VALUE :: invec, inoutvec", len, "TYPE(MPI_Datatype) :: datatype"],
        );
    }
    // Attribute callbacks and error handlers, one of each per kind of object.
    for (kind, ty, obj, deleted) in [
        ("Comm", "MPI_Comm", "comm", "comm"),
        ("Win", "MPI_Win", "win", "win"),
        ("Type", "MPI_Datatype", "type", "datatype"),
    ] {
        let old = format!("TYPE({ty}) :: old{obj}");
        let imports = format!("{ty}, MPI_ADDRESS_KIND");
        let keyval = format!("INTEGER :: {obj}_keyval, ierror");
        sub(
            &format!("MPI_{kind}_copy_attr_function"),
            &format!(
                "old{obj}, {obj}_keyval, extra_state, attribute_val_in, &\n        & attribute_val_out, flag, ierror"
            ),
            &imports,
            &[
                &old,
                &keyval,
                "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out",
                "LOGICAL :: flag",
            ],
        );
        sub(
            &format!("MPI_{kind}_delete_attr_function"),
            &format!("{deleted}, {obj}_keyval, attribute_val, extra_state, ierror"),
            &imports,
            &[
                &format!("TYPE({ty}) :: {deleted}"),
                &keyval,
                "INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val, extra_state",
            ],
        );
    }
    for (kind, ty, obj) in [
        ("Comm", "MPI_Comm", "comm"),
        ("Win", "MPI_Win", "win"),
        ("File", "MPI_File", "file"),
        ("Session", "MPI_Session", "session"),
    ] {
        sub(
            &format!("MPI_{kind}_errhandler_function"),
            &format!("{obj}, error_code"),
            ty,
            &[&format!("TYPE({ty}) :: {obj}"), "INTEGER :: error_code"],
        );
    }
    let state = "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state";
    sub(
        "MPI_Grequest_query_function",
        "extra_state, status, ierror",
        "MPI_Status, MPI_ADDRESS_KIND",
        &[state, "TYPE(MPI_Status) :: status", "INTEGER :: ierror"],
    );
    sub("MPI_Grequest_free_function", "extra_state, ierror", "MPI_ADDRESS_KIND", &[state, "INTEGER :: ierror"]);
    sub(
        "MPI_Grequest_cancel_function",
        "extra_state, complete, ierror",
        "MPI_ADDRESS_KIND",
        &[state, "LOGICAL :: complete", "INTEGER :: ierror"],
    );
    s + "  END INTERFACE"
}

pub fn module_mpi_f08(bindings: &[Binding]) -> String {
    let mut s = String::new();
    let mut line = |l: &str| {
        s.push_str(l);
        s.push('\n');
    };
    line("! mpi_f08.f90: module mpi_f08 of the DIMMnet-2 stack's MPI over the MPI 5.0 standard ABI.");
    line("! Generated by `cargo run -p mpi-fortran --bin gen-fortran` from abi-def/src/lib.rs; do not edit.");
    line("module mpi_f08");
    line("  use, intrinsic :: iso_c_binding, only: C_PTR");
    line("  implicit none");
    line("  public");
    let types = handle_types();
    let handle_values: Vec<(&str, &str, usize)> = abi::HANDLES
        .iter()
        .flat_map(|(ty, _, vs)| vs.iter().map(move |(n, v)| (*n, *ty, *v)))
        .chain(abi::HANDLE_ALIASES.iter().filter_map(|(alias, of)| {
            abi::HANDLES.iter().find_map(|(ty, _, vs)| vs.iter().find(|(n, _)| n == of).map(|(_, v)| (*alias, *ty, *v)))
        }))
        .collect();
    for (n, ty, v) in constants() {
        if handle_values.iter().any(|(h, _, _)| *h == n) {
            continue;
        }
        line(&format!("  {ty}, PARAMETER :: {n} = {v}"));
    }
    line("  LOGICAL, PARAMETER :: MPI_SUBARRAYS_SUPPORTED = .FALSE.");
    line("  LOGICAL, PARAMETER :: MPI_ASYNC_PROTECTS_NONBLOCKING = .FALSE.");
    for ty in &types {
        line(&format!("  TYPE, BIND(C) :: {ty}"));
        line("    INTEGER :: MPI_VAL");
        line(&format!("  END TYPE {ty}"));
    }
    line("  TYPE :: MPI_Status");
    line("    SEQUENCE");
    line("    INTEGER :: MPI_SOURCE, MPI_TAG, MPI_ERROR");
    line("    INTEGER :: MPI_internal(5)");
    line("  END TYPE MPI_Status");
    for (n, ty, v) in &handle_values {
        line(&format!("  TYPE({ty}), PARAMETER :: {n} = {ty}({v})"));
    }
    // The sentinels: the same common blocks as mpif.h's, typed as mpi_f08 has them.
    let sentinels: &[(&str, &str, &str)] = &[
        ("MPI_BOTTOM", "INTEGER :: MPI_BOTTOM", "MPIF_BOTTOM"),
        ("MPI_IN_PLACE", "INTEGER :: MPI_IN_PLACE", "MPIF_IN_PLACE"),
        ("MPI_BUFFER_AUTOMATIC", "INTEGER :: MPI_BUFFER_AUTOMATIC", "MPIF_BUFFER_AUTOMATIC"),
        ("MPI_STATUS_IGNORE", "TYPE(MPI_Status) :: MPI_STATUS_IGNORE", "MPIF_STATUS_IGNORE"),
        ("MPI_STATUSES_IGNORE", "TYPE(MPI_Status) :: MPI_STATUSES_IGNORE(1)", "MPIF_STATUSES_IGNORE"),
        ("MPI_ERRCODES_IGNORE", "INTEGER :: MPI_ERRCODES_IGNORE(1)", "MPIF_ERRCODES_IGNORE"),
        ("MPI_UNWEIGHTED", "INTEGER :: MPI_UNWEIGHTED(1)", "MPIF_UNWEIGHTED"),
        ("MPI_WEIGHTS_EMPTY", "INTEGER :: MPI_WEIGHTS_EMPTY(1)", "MPIF_WEIGHTS_EMPTY"),
        ("MPI_ARGV_NULL", "CHARACTER(LEN=1) :: MPI_ARGV_NULL(1)", "MPIF_ARGV_NULL"),
        ("MPI_ARGVS_NULL", "CHARACTER(LEN=1) :: MPI_ARGVS_NULL(1,1)", "MPIF_ARGVS_NULL"),
    ];
    for (var, decl, block) in sentinels {
        line(&format!("  {decl}"));
        line(&format!("  COMMON /{block}/ {var}"));
        line(&format!("  SAVE /{block}/"));
    }
    for p in PROCEDURES {
        line(&format!("  EXTERNAL :: {p}"));
    }
    for l in abstract_interfaces().lines() {
        line(l);
    }
    for op in ["==", "/="] {
        line(&format!("  INTERFACE OPERATOR({op})"));
        for ty in &types {
            let suffix = if op == "==" { "eq" } else { "ne" };
            line(&format!("    MODULE PROCEDURE mpif_{}_{suffix}", ty.to_lowercase()));
        }
        line("  END INTERFACE");
    }
    // Each function is a generic of its name with the standard's specific
    // names (§19.1.5: MPI_Send_f08, and MPI_Send_c_f08 for its large-count
    // form, whose glue symbols are mpi_send_f08_ and mpi_send_c_f08_), and
    // likewise under PMPI_ for profiling libraries (§15.2). A large-count
    // form a generic could not tell from its plain form keeps its own name.
    let f08: Vec<&Binding> = bindings.iter().filter(|b| b.in_mpi_f08()).collect();
    for b in &f08 {
        let name = b.name();
        if b.is_large_count() {
            let plain = &name[..name.len() - 2];
            if f08.iter().any(|p| p.name() == plain && !ambiguous(p, b)) {
                continue; // in its plain form's generic
            }
        }
        let large =
            f08.iter().find(|c| c.is_large_count() && c.name() == format!("{name}_c")).filter(|c| !ambiguous(b, c));
        for prefix in ["", "P"] {
            let generic = format!("{prefix}{name}");
            line(&format!("  INTERFACE {generic}"));
            for l in body(b, &format!("{generic}_f08")) {
                line(&l);
            }
            if let Some(c) = large {
                for l in body(c, &format!("{prefix}{}_f08", c.name())) {
                    line(&l);
                }
            }
            line(&format!("  END INTERFACE {generic}"));
        }
    }
    line("  INTERFACE MPI_Sizeof");
    for (ty, kinds) in SIZEOF_KINDS {
        for k in *kinds {
            line(&format!("    MODULE PROCEDURE mpif_sizeof_{}{k}", ty.to_lowercase()));
        }
    }
    line("  END INTERFACE MPI_Sizeof");
    line("contains");
    for ty in &types {
        for (suffix, expr) in [("eq", "a%MPI_VAL == b%MPI_VAL"), ("ne", "a%MPI_VAL /= b%MPI_VAL")] {
            line(&format!("  ELEMENTAL LOGICAL FUNCTION mpif_{}_{suffix}(a, b)", ty.to_lowercase()));
            line(&format!("    TYPE({ty}), INTENT(IN) :: a, b"));
            line(&format!("    mpif_{}_{suffix} = {expr}", ty.to_lowercase()));
            line(&format!("  END FUNCTION mpif_{}_{suffix}", ty.to_lowercase()));
        }
    }
    line("  SUBROUTINE MPI_Status_f2f08(f_status, f08_status, ierror)");
    line("    INTEGER, INTENT(IN) :: f_status(MPI_STATUS_SIZE)");
    line("    TYPE(MPI_Status), INTENT(OUT) :: f08_status");
    line("    INTEGER, OPTIONAL, INTENT(OUT) :: ierror");
    line("    f08_status = MPI_Status(f_status(1), f_status(2), f_status(3), f_status(4:8))");
    line("    IF (PRESENT(ierror)) ierror = MPI_SUCCESS");
    line("  END SUBROUTINE MPI_Status_f2f08");
    line("  SUBROUTINE MPI_Status_f082f(f08_status, f_status, ierror)");
    line("    TYPE(MPI_Status), INTENT(IN) :: f08_status");
    line("    INTEGER, INTENT(OUT) :: f_status(MPI_STATUS_SIZE)");
    line("    INTEGER, OPTIONAL, INTENT(OUT) :: ierror");
    line("    f_status(1:3) = [f08_status%MPI_SOURCE, f08_status%MPI_TAG, f08_status%MPI_ERROR]");
    line("    f_status(4:8) = f08_status%MPI_internal");
    line("    IF (PRESENT(ierror)) ierror = MPI_SUCCESS");
    line("  END SUBROUTINE MPI_Status_f082f");
    line("  SUBROUTINE MPI_F_sync_reg(buf)");
    line("    !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf");
    line("    TYPE(*), DIMENSION(*) :: buf");
    line("  END SUBROUTINE MPI_F_sync_reg");
    for l in sizeof_procedures() {
        line(&l);
    }
    line("end module mpi_f08");
    s
}

/// The intrinsic types and kinds `MPI_SIZEOF` answers for (§19.1.9).
pub const SIZEOF_KINDS: &[(&str, &[u8])] = &[
    ("INTEGER", &[1, 2, 4, 8]),
    ("REAL", &[4, 8]),
    ("COMPLEX", &[4, 8]),
    ("LOGICAL", &[1, 2, 4, 8]),
    ("CHARACTER", &[1]),
];

/// `MPI_SIZEOF(x, size, ierror)`: the size of one element of `x`, of any
/// rank (an assumed-rank dummy), for each type and kind.
pub fn sizeof_procedures() -> Vec<String> {
    let mut out = Vec::new();
    for (ty, kinds) in SIZEOF_KINDS {
        for k in *kinds {
            let name = format!("mpif_sizeof_{}{k}", ty.to_lowercase());
            out.push(format!("  SUBROUTINE {name}(x, size, ierror)"));
            let len = if *ty == "CHARACTER" { ", LEN=*" } else { "" };
            out.push(format!("    {ty}(KIND={k}{len}), DIMENSION(..), INTENT(IN) :: x"));
            out.push("    INTEGER, INTENT(OUT) :: size".into());
            out.push("    INTEGER, OPTIONAL, INTENT(OUT) :: ierror".into());
            out.push("    size = STORAGE_SIZE(x) / 8".into());
            out.push("    IF (PRESENT(ierror)) ierror = 0".into());
            out.push(format!("  END SUBROUTINE {name}"));
        }
    }
    out
}
